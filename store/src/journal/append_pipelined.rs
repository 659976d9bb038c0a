//! Pipelined bulk append to a task journal ([`Journal::append_pipelined`]): the calling thread
//! runs the guard and the kernel over batch K+1 while a writer thread computes batch K's owed
//! digests, encodes its lines (and their entry digests), writes them with one `write`,
//! `fdatasync`s them, rewrites the head and, when one was due at K's end, writes the snapshot of
//! the State there (taken by the calling thread before it went on). Each batch's answers are
//! handed to the caller only after the writer reported that batch durable, so the
//! acknowledgement is exactly that of [`Journal::append_batch`], batch by batch. At most two
//! batches are in flight: the one the writer holds and the one being judged.
//!
//! **Owed digests.** The calling thread applies with [`LiveState::apply_owing`]: the verdicts are
//! the kernel's, but the two SHA-256 passes over the State body per accepted entry (its result
//! digest and the next State digest, a chain from one entry to the next) are left to the
//! writer's [`DigestRun`], which puts each result digest into its entry's record before the line
//! is encoded. The writer reports a batch's result digests with its acknowledgement and the
//! calling thread pays them into its State ([`LiveState::pay_results`]); a snapshot taken while
//! digests are owed is paid by the writer before it is written, and at the end the State takes
//! the writer's history hash ([`LiveState::pay_history`]), so the journal, head, snapshots and
//! State are byte for byte those of `append_batch`. A duplicate (or idempotency conflict) of an
//! entry whose digest is still owed ([`Owing::Unsettled`], rare: `valp demo`'s walk makes none)
//! waits for the batches in flight, computes the current batch's owed digests itself and is
//! applied again.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use valp_kernel::Evidence;
use valp_kernel::live::{DigestCheck, DigestRun, LiveState, Owing, Verdict};
use valp_kernel::replay::CompactEntry;

use crate::clock::Timestamp;
use crate::error::StoreError;
use crate::head::Anchor;
use crate::io::Storage;
use crate::journal::append::{Appended, Batch, Judged, ensure_writable};
use crate::journal::{Journal, LOCK_FILE, Tip, Warning};
use crate::lock::LockGuard;
use crate::machine::{Guard, Machine};
use crate::snapshot_open::{self, Pending};

/// A proposal given away to [`Journal::append_pipelined`]: the event and its EvidenceSet.
pub type Proposal = (valp_kernel::Event, Vec<Evidence>);

/// A batch's buffers, handed back and forth to be reused (a batch's entries take a few hundred
/// kilobytes: allocated afresh each time, their pages would be zeroed by the operating system
/// again and again).
#[derive(Default)]
struct Buffers {
    /// The accepted entries (with the time each was accepted), their result digests owed.
    entries: Vec<(Timestamp, CompactEntry)>,
    /// What each entry's owed digests need, in order (at least as many as `entries`; the
    /// checks after them are spare).
    checks: Vec<DigestCheck>,
    /// The entries' result digests, raw, once the writer computed them.
    results: Vec<[u8; 32]>,
}

/// One batch handed to the writer: its entries, every proposal's answer in order (`None` for
/// an accepted one: the writer answers it once its result digest is known), and the snapshot
/// due at its end.
struct Job {
    /// The seq of the first entry (the writer checks it continues its tip).
    first_seq: u64,
    buffers: Buffers,
    answers: Vec<Option<Appended>>,
    snapshot: Option<Pending>,
}

/// The writer's report on a job once its entries are durable: the answers, whether a snapshot
/// due with it was not written, the entries' result digests (from history position `first`),
/// where its digest run got to, and the buffers for a later job.
struct Done {
    answers: Vec<Appended>,
    snapshot_missed: bool,
    first: usize,
    run: DigestRun,
    buffers: Buffers,
}

/// The writer's report on a job, or why its entries may not be durable.
type Ack = Result<Done, StoreError>;

/// The writer thread's share of the handle for one pipelined append; handed back at the end.
struct Writer {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    file: File,
    anchor: Anchor,
    warnings: Vec<Warning>,
    /// After the last durable line.
    tip: Tip,
    /// The lines' buffer, kept from batch to batch.
    lines: Vec<u8>,
    /// The owed digests computed so far: the State after the last entry encoded.
    run: DigestRun,
    /// The history position of the previous job's first entry and its entries' result digests
    /// (still owed in a snapshot taken at the end of the job after it).
    previous: (usize, Vec<[u8; 32]>),
    /// Set when a write failed: the handle is to be poisoned and the file dropped.
    failed: bool,
}

impl Writer {
    /// Writes each job as it comes and reports it; stops at the first failure.
    fn run(mut self, jobs: Receiver<Job>, acks: &Sender<Ack>) -> Self {
        for mut job in jobs {
            let first = self.run.history_len();
            let written = self.write(job.first_seq, &mut job.buffers);
            self.failed = written.is_err();
            let done = written.map(|()| {
                let snapshot_missed = job
                    .snapshot
                    .is_some_and(|pending| !self.write_snapshot(pending, first, &job.buffers));
                self.previous.0 = first;
                self.previous.1.clone_from(&job.buffers.results);
                Done {
                    answers: answers(job.answers, job.first_seq, &job.buffers.entries),
                    snapshot_missed,
                    first,
                    run: self.run.clone(),
                    buffers: job.buffers,
                }
            });
            if acks.send(done).is_err() || self.failed {
                break;
            }
        }
        self
    }

    /// Computes the entries' owed digests, encodes them after the tip, writes and syncs them,
    /// and rewrites the head.
    fn write(&mut self, first_seq: u64, buffers: &mut Buffers) -> Result<(), StoreError> {
        buffers.results.clear();
        if buffers.entries.is_empty() {
            return Ok(());
        }
        if first_seq != self.tip.next_seq {
            return Err(StoreError::Invalid(format!(
                "{}: a pipelined batch starting at entry {first_seq} does not follow entry {}",
                self.path.display(),
                self.tip.next_seq - 1
            )));
        }
        let mut batch = Batch::reusing(self.tip.clone(), std::mem::take(&mut self.lines));
        for ((recorded_at, entry), check) in buffers.entries.iter_mut().zip(&buffers.checks) {
            let result = self
                .run
                .run(check, &entry.event.event_id, &mut entry.result)
                .ok_or_else(|| out_of_order(&self.path))?;
            buffers.results.push(result);
            batch.push(*recorded_at, entry);
        }
        batch.write_synced(
            self.storage.as_ref(),
            &mut self.file,
            &self.path,
            &mut self.anchor,
            &mut self.warnings,
        )?;
        (self.tip, self.lines) = batch.into_buffer();
        Ok(())
    }

    /// Pays the digests a snapshot taken at the last durable line owed (the job's, whose
    /// first entry is at history position `first`, and the previous job's: the calling thread
    /// had paid every earlier one) and writes it if the head names that line (a snapshot is
    /// never ahead of the head); whether it was written. A failed write is a warning, as after
    /// any append.
    fn write_snapshot(&mut self, mut pending: Pending, first: usize, job: &Buffers) -> bool {
        let seq = pending.seq();
        let anchored = self.anchor.head().is_some_and(|head| head.seq >= seq);
        let parts = pending.parts_mut();
        let (previous_first, previous) = &self.previous;
        let paid = parts.pay(&self.run, *previous_first, previous)
            && parts.pay(&self.run, first, &job.results);
        if !anchored || !paid || seq + 1 != self.tip.next_seq {
            return false;
        }
        match pending.write(&self.tip.digest, self.tip.offset) {
            Ok(_) => true,
            Err(error) => {
                self.warnings.push(Warning::SnapshotNotWritten {
                    seq,
                    error: error.to_string(),
                });
                false
            }
        }
    }
}

/// A job's answers, each accepted one (`None`, in order) answered with its entry (numbered from
/// `first_seq`), whose result digest is now known.
fn answers(
    answers: Vec<Option<Appended>>,
    first_seq: u64,
    entries: &[(Timestamp, CompactEntry)],
) -> Vec<Appended> {
    let mut accepted = (first_seq..).zip(entries);
    answers
        .into_iter()
        .filter_map(|answer| {
            answer.or_else(|| {
                accepted.next().map(|(seq, (_, entry))| Appended::Accepted {
                    seq,
                    record: entry.result.clone(),
                })
            })
        })
        .collect()
}

/// The error when owed digests are given to a run out of order (a bug, never the input's).
fn out_of_order(path: &std::path::Path) -> StoreError {
    StoreError::Invalid(format!(
        "{}: a pipelined append's owed digests came out of order",
        path.display()
    ))
}

/// The calling thread's end of the pipeline.
struct Pipe<'p> {
    jobs: &'p SyncSender<Job>,
    acks: &'p Receiver<Ack>,
    acknowledge: &'p mut dyn FnMut(Vec<Appended>),
    /// Jobs sent and not yet reported.
    in_flight: usize,
    /// Where the writer's digest run got to at its last report (the start before any).
    run: DigestRun,
    /// Buffers the writer handed back.
    spare: Buffers,
}

impl Pipe<'_> {
    /// Waits for the writer's reports until at most `keep` jobs are in flight: pays each
    /// batch's result digests into the State and acknowledges its answers.
    fn drain(&mut self, journal: &mut Journal<LiveState>, keep: usize) -> Result<(), StoreError> {
        while self.in_flight > keep {
            let done = match self.acks.recv() {
                Ok(Ok(done)) => done,
                Ok(Err(error)) => return Err(error),
                Err(_) => return Err(journal.writer_stopped()),
            };
            self.in_flight -= 1;
            journal.snapshots.rebuild |= done.snapshot_missed;
            journal.live.pay_results(done.first, &done.buffers.results);
            self.run = done.run;
            self.spare = done.buffers;
            if !done.answers.is_empty() {
                (self.acknowledge)(done.answers);
            }
        }
        Ok(())
    }
}

impl Journal<LiveState> {
    /// Proposes `proposals` in order in batches of `batch` (at least one) under one lock held
    /// throughout, as [`Journal::append_batch`] would batch by batch, overlapping the writing
    /// and `fdatasync` of each batch (and of a snapshot due at its end) with the kernel's work
    /// on the next (see the module documentation): the bulk writes of `valp demo`. The
    /// proposals are moved into their entries, not copied.
    ///
    /// `acknowledge` is called with each batch's answers (when it has any), in order, once
    /// every accepted entry of that batch (and of the batches before it) is durable, and never
    /// before.
    ///
    /// **Durability.** As for [`Journal::append_batch`], per batch: when a write or sync fails,
    /// its error is returned, nothing of the failed batch or of the one judged after it is
    /// acknowledged, and the handle is poisoned (its State is ahead of the file). A crash
    /// keeps every acknowledged entry; beyond them the file may hold at most two batches, the
    /// one whose acknowledgement was on its way and a prefix of the one being written after
    /// it, whose complete lines are entries the kernel accepted: kept by the next open, a torn
    /// last line quarantined and cut; the head names an acknowledged line or a later one. A
    /// refusal by the store's own rules ends the run: the entries accepted before it are
    /// written, synced and acknowledged, then the refusal is returned.
    pub fn append_pipelined(
        &mut self,
        proposals: impl IntoIterator<Item = Proposal>,
        batch: usize,
        mut acknowledge: impl FnMut(Vec<Appended>),
    ) -> Result<(), StoreError> {
        ensure_writable(&self.path, self.access, self.poisoned.as_deref())?;
        let lock = LockGuard::acquire(&self.dir.join(LOCK_FILE), self.lock_timeout)?;
        self.check_not_shortened()?;
        self.follow(self.reader()?, Some(&lock))?;
        self.guard.start_batch()?;
        let outcome = self.run_pipeline(proposals.into_iter(), batch.max(1), &mut acknowledge);
        // As after `append_batch`, also after a refusal (a poisoned handle writes nothing).
        LiveState::settled(self);
        self.guard.end_batch();
        drop(lock);
        outcome
    }

    /// Runs the writer thread beside [`Journal::drive`], then takes back from it the file,
    /// head, warnings and durable tip, and pays the State its history hash.
    fn run_pipeline(
        &mut self,
        proposals: impl Iterator<Item = Proposal>,
        batch: usize,
        acknowledge: &mut impl FnMut(Vec<Appended>),
    ) -> Result<(), StoreError> {
        let run = self.live.digest_run();
        let writer = Writer {
            storage: Arc::clone(&self.storage),
            path: self.path.clone(),
            file: self.take_append_file()?,
            anchor: self.anchor.clone(),
            warnings: std::mem::take(&mut self.warnings),
            tip: self.tip.clone(),
            lines: Vec::new(),
            run: run.clone(),
            previous: (0, Vec::new()),
            failed: false,
        };
        let (jobs, inbox) = sync_channel::<Job>(1);
        let (report, acks) = channel();
        let (driven, writer) = std::thread::scope(|scope| {
            let worker = scope.spawn(move || writer.run(inbox, &report));
            let mut pipe = Pipe {
                jobs: &jobs,
                acks: &acks,
                acknowledge,
                in_flight: 0,
                run,
                spare: Buffers::default(),
            };
            let driven = self.drive(proposals, batch, &mut pipe);
            // No more jobs: the writer ends once it has written what it holds.
            drop(jobs);
            (driven, worker.join())
        });
        let Ok(writer) = writer else {
            let error = self.writer_stopped();
            self.poisoned = Some(error.to_string());
            return Err(error);
        };
        self.anchor = writer.anchor;
        self.warnings = writer.warnings;
        self.tip = writer.tip;
        // Every job was reported (its result digests paid): the State owes only its history
        // hash, the writer's after the last entry.
        if !writer.failed && self.live.pay_history(&writer.run) {
            self.appender = Some(writer.file);
            return driven;
        }
        let error = match driven {
            Err(error) => error,
            Ok(()) if writer.failed => self.writer_stopped(),
            Ok(()) => out_of_order(&self.path),
        };
        self.poisoned = Some(error.to_string());
        Err(error)
    }

    /// The calling thread's side: judges batch after batch, handing each to the writer (with
    /// the snapshot due at its end, taken now), and acknowledges each once the writer reports
    /// it durable.
    fn drive(
        &mut self,
        proposals: impl Iterator<Item = Proposal>,
        batch: usize,
        pipe: &mut Pipe<'_>,
    ) -> Result<(), StoreError> {
        let mut proposals = proposals.peekable();
        let mut next_seq = self.tip.next_seq;
        loop {
            let (mut job, refusal) = self.judge_batch(&mut proposals, batch, &mut next_seq, pipe);
            let last = refusal.is_some() || proposals.peek().is_none();
            if !last {
                // The last batch's is left to `settled`, once everything is durable.
                job.snapshot = snapshot_open::take_due(self, next_seq - 1);
            }
            // A failed send means the writer stopped after a failure, which it reports.
            if pipe.jobs.send(job).is_ok() {
                pipe.in_flight += 1;
            }
            // Keep one batch in the writer's hands while judging the next; at the end, none.
            pipe.drain(self, usize::from(!last))?;
            if let Some(refusal) = refusal {
                return Err(refusal);
            }
            if last {
                return Ok(());
            }
        }
    }

    /// Judges up to `batch` proposals, numbering the accepted ones from `next_seq` and
    /// collecting them in the pipe's spare buffers; stops at a refusal by the store's rules
    /// (returned beside what was judged before it).
    fn judge_batch(
        &mut self,
        proposals: &mut impl Iterator<Item = Proposal>,
        batch: usize,
        next_seq: &mut u64,
        pipe: &mut Pipe<'_>,
    ) -> (Job, Option<StoreError>) {
        let mut buffers = std::mem::take(&mut pipe.spare);
        buffers.entries.clear();
        buffers.entries.reserve(batch);
        let mut job = Job {
            first_seq: *next_seq,
            buffers,
            answers: Vec::with_capacity(batch),
            snapshot: None,
        };
        for (event, evidence_set) in proposals.take(batch) {
            let judged = self.judge_with(&event, &evidence_set, *next_seq, |journal| {
                journal.apply_owing(&event, &evidence_set, &mut job.buffers, pipe)
            });
            match judged {
                Ok(Judged::Accepted { record, .. }) => {
                    let entry = CompactEntry {
                        event,
                        evidence_set,
                        result: record,
                    };
                    job.buffers.entries.push((self.clock.now(), entry));
                    job.answers.push(None);
                    *next_seq += 1;
                }
                Ok(Judged::Answered(answer)) => job.answers.push(Some(answer)),
                Err(refusal) => return (job, Some(refusal)),
            }
        }
        (job, None)
    }

    /// Applies a proposal leaving its digests owed (the check after the batch's entries). When
    /// its verdict needs a digest still owed, pays everything owed first: waits for the batches
    /// in flight, computes the owed digests of this batch's entries (`batch`) from where the
    /// writer's run got to, and applies it again.
    fn apply_owing(
        &mut self,
        event: &valp_kernel::Event,
        evidence_set: &[Evidence],
        batch: &mut Buffers,
        pipe: &mut Pipe<'_>,
    ) -> Result<Verdict, StoreError> {
        let at = batch.entries.len();
        if batch.checks.len() == at {
            batch.checks.push(DigestCheck::default());
        }
        if let Owing::Judged(verdict) =
            self.live
                .apply_owing(event, evidence_set, &mut batch.checks[at])
        {
            return Ok(verdict);
        }
        pipe.drain(self, 0)?;
        let mut run = pipe.run.clone();
        let first = run.history_len();
        let mut results = Vec::with_capacity(at);
        for ((_, entry), check) in batch.entries.iter_mut().zip(&batch.checks) {
            let result = run
                .run(check, &entry.event.event_id, &mut entry.result)
                .ok_or_else(|| out_of_order(&self.path))?;
            results.push(result);
        }
        self.live.pay_results(first, &results);
        if !self.live.pay_history(&run) {
            return Err(out_of_order(&self.path));
        }
        match self
            .live
            .apply_owing(event, evidence_set, &mut batch.checks[at])
        {
            Owing::Judged(verdict) => Ok(verdict),
            Owing::Unsettled => Err(out_of_order(&self.path)),
        }
    }

    /// The error when the writer thread ended without reporting why.
    fn writer_stopped(&self) -> StoreError {
        StoreError::Invalid(format!(
            "{}: the journal's writer thread stopped",
            self.path.display()
        ))
    }
}
