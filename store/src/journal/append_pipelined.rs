//! Pipelined bulk append to a task journal ([`Journal::append_pipelined`]): the calling thread
//! runs the guard and the kernel over batch K+1 while a writer thread encodes batch K's lines
//! (and their entry digests), writes them with one `write`, `fdatasync`s them, rewrites the head
//! and, when one was due at K's end, writes the snapshot of the State there (taken by the
//! calling thread before it went on). Each batch's answers are handed to the caller only after
//! the writer reported that batch durable, so the acknowledgement is exactly that of
//! [`Journal::append_batch`], batch by batch. At most two batches are in flight: the one the
//! writer holds and the one being judged.

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use valp_kernel::Evidence;
use valp_kernel::live::LiveState;
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

/// One batch handed to the writer: the accepted entries (with the time each was accepted),
/// every proposal's answer in order, and the snapshot due at its end.
struct Job {
    /// The seq of the first entry (the writer checks it continues its tip).
    first_seq: u64,
    entries: Vec<(Timestamp, CompactEntry)>,
    answers: Vec<Appended>,
    snapshot: Option<Pending>,
}

/// The writer's report on a job once its entries are durable: the answers, whether a snapshot
/// due with it was not written, and the emptied entries' buffer for a later job (a batch's
/// entries take a few hundred kilobytes: allocated afresh each time, their pages would be
/// zeroed by the operating system again and again).
struct Done {
    answers: Vec<Appended>,
    snapshot_missed: bool,
    entries: Vec<(Timestamp, CompactEntry)>,
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
    /// Set when a write failed: the handle is to be poisoned and the file dropped.
    failed: bool,
}

impl Writer {
    /// Writes each job as it comes and reports it; stops at the first failure.
    fn run(mut self, jobs: Receiver<Job>, acks: &Sender<Ack>) -> Self {
        for mut job in jobs {
            let written = self.write(job.first_seq, &job.entries);
            self.failed = written.is_err();
            job.entries.clear();
            let done = written.map(|()| Done {
                answers: job.answers,
                snapshot_missed: job
                    .snapshot
                    .is_some_and(|pending| !self.write_snapshot(pending)),
                entries: job.entries,
            });
            if acks.send(done).is_err() || self.failed {
                break;
            }
        }
        self
    }

    /// Encodes the entries after the tip, writes and syncs them, and rewrites the head.
    fn write(
        &mut self,
        first_seq: u64,
        entries: &[(Timestamp, CompactEntry)],
    ) -> Result<(), StoreError> {
        if entries.is_empty() {
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
        for (recorded_at, entry) in entries {
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

    /// Writes a snapshot taken at the last durable line if the head names that line (a
    /// snapshot is never ahead of the head); whether it was written. A failed write is a
    /// warning, as after any append.
    fn write_snapshot(&mut self, pending: Pending) -> bool {
        let seq = pending.seq();
        let anchored = self.anchor.head().is_some_and(|head| head.seq >= seq);
        if !anchored || seq + 1 != self.tip.next_seq {
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
    /// head, warnings and durable tip.
    fn run_pipeline(
        &mut self,
        proposals: impl Iterator<Item = Proposal>,
        batch: usize,
        acknowledge: &mut impl FnMut(Vec<Appended>),
    ) -> Result<(), StoreError> {
        let writer = Writer {
            storage: Arc::clone(&self.storage),
            path: self.path.clone(),
            file: self.take_append_file()?,
            anchor: self.anchor.clone(),
            warnings: std::mem::take(&mut self.warnings),
            tip: self.tip.clone(),
            lines: Vec::new(),
            failed: false,
        };
        let (jobs, inbox) = sync_channel::<Job>(1);
        let (report, acks) = channel();
        let (driven, writer) = std::thread::scope(|scope| {
            let worker = scope.spawn(move || writer.run(inbox, &report));
            let driven = self.drive(proposals, batch, &jobs, &acks, acknowledge);
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
        if !writer.failed {
            self.appender = Some(writer.file);
            return driven;
        }
        let error = driven.err().unwrap_or_else(|| self.writer_stopped());
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
        jobs: &SyncSender<Job>,
        acks: &Receiver<Ack>,
        acknowledge: &mut impl FnMut(Vec<Appended>),
    ) -> Result<(), StoreError> {
        let mut proposals = proposals.peekable();
        let mut next_seq = self.tip.next_seq;
        let mut in_flight = 0_usize;
        let mut spare = Vec::new();
        loop {
            let (mut job, refusal) = self.judge_batch(
                &mut proposals,
                batch,
                &mut next_seq,
                std::mem::take(&mut spare),
            );
            let last = refusal.is_some() || proposals.peek().is_none();
            if !last {
                // The last batch's is left to `settled`, once everything is durable.
                job.snapshot = snapshot_open::take_due(self, next_seq - 1);
            }
            // A failed send means the writer stopped after a failure, which it reports.
            if jobs.send(job).is_ok() {
                in_flight += 1;
            }
            // Keep one batch in the writer's hands while judging the next; at the end, none.
            while in_flight > usize::from(!last) {
                match acks.recv() {
                    Ok(Ok(done)) => {
                        self.snapshots.rebuild |= done.snapshot_missed;
                        spare = done.entries;
                        if !done.answers.is_empty() {
                            acknowledge(done.answers);
                        }
                    }
                    Ok(Err(error)) => return Err(error),
                    Err(_) => return Err(self.writer_stopped()),
                }
                in_flight -= 1;
            }
            if let Some(refusal) = refusal {
                return Err(refusal);
            }
            if last {
                return Ok(());
            }
        }
    }

    /// Judges up to `batch` proposals, numbering the accepted ones from `next_seq` and
    /// collecting them in `entries` (an empty buffer, reused); stops at a refusal by the
    /// store's rules (returned beside what was judged before it).
    fn judge_batch(
        &mut self,
        proposals: &mut impl Iterator<Item = Proposal>,
        batch: usize,
        next_seq: &mut u64,
        mut entries: Vec<(Timestamp, CompactEntry)>,
    ) -> (Job, Option<StoreError>) {
        entries.reserve(batch);
        let mut job = Job {
            first_seq: *next_seq,
            entries,
            answers: Vec::with_capacity(batch),
            snapshot: None,
        };
        for (event, evidence_set) in proposals.take(batch) {
            match self.judge(&event, &evidence_set, *next_seq) {
                Ok(Judged::Accepted { seq, record }) => {
                    job.answers.push(Appended::Accepted {
                        seq,
                        record: record.clone(),
                    });
                    let entry = CompactEntry {
                        event,
                        evidence_set,
                        result: record,
                    };
                    job.entries.push((self.clock.now(), entry));
                    *next_seq += 1;
                }
                Ok(Judged::Answered(answer)) => job.answers.push(answer),
                Err(refusal) => return (job, Some(refusal)),
            }
        }
        (job, None)
    }

    /// The error when the writer thread ended without reporting why.
    fn writer_stopped(&self) -> StoreError {
        StoreError::Invalid(format!(
            "{}: the journal's writer thread stopped",
            self.path.display()
        ))
    }
}
