//! Pipelined bulk append to a task journal ([`Journal::append_pipelined`]): the calling thread
//! runs the guard and the kernel over batch K+1 while a digest thread computes batch K's owed
//! digests and a writer thread encodes its lines (and their entry digests) as they come, in
//! chunks, then writes them with one `write`, `fdatasync`s them, rewrites the head and, when
//! one was due at K's end, writes the snapshot of the State there (taken by the calling thread
//! before it went on). Each batch's answers are handed to the caller only after the writer
//! reported that batch durable, so the acknowledgement is exactly that of
//! [`Journal::append_batch`], batch by batch. At most two batches are in flight: the one the
//! digest and writer threads hold and the one being judged.
//!
//! **Owed digests.** The calling thread applies with [`LiveState::apply_owing`]: the verdicts are
//! the kernel's, but the two SHA-256 passes over the State body per accepted entry (its result
//! digest and the next State digest, a chain from one entry to the next, ~60 % of the kernel's
//! work at 20 work items) are left to the digest thread's [`DigestRun`], which puts each result
//! digest into its entry's record before the writer encodes the line. The writer reports a
//! batch's result digests with its acknowledgement and the calling thread pays them into its
//! State ([`LiveState::pay_results`]); a snapshot taken while digests are owed is paid by the
//! digest thread before it goes to the writer, and at the end the State takes the run's history
//! hash ([`LiveState::pay_history`]), so the journal, head, snapshots and State are byte for
//! byte those of `append_batch`. A duplicate (or idempotency conflict) of an entry whose digest
//! is still owed ([`Owing::Unsettled`], rare: `valp demo`'s walk makes none) waits for the
//! batches in flight, computes the current batch's owed digests itself and is applied again.

use std::fs::File;
use std::path::{Path, PathBuf};
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

/// Accepted entries per chunk: the digest thread hands a batch's entries to the writer a chunk
/// at a time, so that the writer encodes them while the digests of the next are computed.
const CHUNK: usize = 64;

/// Up to [`CHUNK`] accepted entries of a batch, in order, and their buffers (reused from batch
/// to batch: a batch's entries take a few hundred kilobytes, and allocated afresh each time
/// their pages would be zeroed by the operating system again and again).
#[derive(Default)]
struct Chunk {
    /// The entries (with the time each was accepted), their result digests owed until the
    /// digest thread has run them.
    entries: Vec<(Timestamp, CompactEntry)>,
    /// What each entry's owed digests need, in order (at least as many as `entries`; the
    /// checks after them are spare).
    checks: Vec<DigestCheck>,
    /// The entries' result digests, raw, once computed.
    results: Vec<[u8; 32]>,
}

/// One batch, judged: its chunks of accepted entries, every proposal's answer in order (`None`
/// for an accepted one: the writer answers it once its result digest is known), and the
/// snapshot due at its end.
struct Job {
    /// The seq of the first entry (the writer checks it continues its tip).
    first_seq: u64,
    chunks: Vec<Chunk>,
    answers: Vec<Option<Appended>>,
    snapshot: Option<Pending>,
}

/// What the digest thread hands the writer: a batch's chunks one by one, then its end (boxed:
/// once per batch, and ~1 KB beside a chunk's few words).
enum Piece {
    Chunk(Chunk),
    End(Box<End>),
}

/// The end of a batch for the writer, once every digest of it is computed.
struct End {
    first_seq: u64,
    answers: Vec<Option<Appended>>,
    /// The snapshot due at its end, its owed digests paid.
    snapshot: Option<Pending>,
    /// Whether a snapshot was due but could not be paid (never written then).
    snapshot_unpaid: bool,
    /// The history position of the batch's first entry.
    first: usize,
    /// Where the digest run got to after the batch.
    run: DigestRun,
}

/// The writer's report on a batch once its entries are durable: the answers, whether a snapshot
/// due with an earlier batch was not written (a batch's own is written after its report), the
/// entries' result digests (from history position `first`, in the chunks), where the digest run
/// got to, and the chunks' buffers for a later batch.
struct Done {
    answers: Vec<Appended>,
    snapshot_missed: bool,
    first: usize,
    run: DigestRun,
    chunks: Vec<Chunk>,
}

/// The writer's report on a batch, or why its entries may not be durable.
type Ack = Result<Done, StoreError>;

/// The digest thread: computes the owed digests of each batch's chunks in order, hands each
/// chunk on as soon as it is done, and pays the snapshot due at a batch's end.
struct Digester {
    run: DigestRun,
    /// The history position of the current batch's first entry and its result digests so far.
    current: (usize, Vec<[u8; 32]>),
    /// The same for the batch before (still owed in a snapshot taken at the current one's end:
    /// the calling thread had paid every earlier one).
    previous: (usize, Vec<[u8; 32]>),
}

impl Digester {
    /// Runs each job as it comes; stops at the first failure (reported on `acks`) or when the
    /// writer stopped.
    fn run(
        mut self,
        jobs: Receiver<Job>,
        pieces: &SyncSender<Piece>,
        acks: &Sender<Ack>,
        path: &Path,
    ) {
        for job in jobs {
            let first = self.run.history_len();
            self.current.0 = first;
            self.current.1.clear();
            for mut chunk in job.chunks {
                if !self.digest(&mut chunk) {
                    // A bug, never the input's: the run's order was lost.
                    let _ = acks.send(Err(out_of_order(path)));
                    return;
                }
                if pieces.send(Piece::Chunk(chunk)).is_err() {
                    return;
                }
            }
            let mut snapshot = job.snapshot;
            let snapshot_unpaid = snapshot.as_mut().is_some_and(|pending| !self.pay(pending));
            let end = End {
                first_seq: job.first_seq,
                answers: job.answers,
                snapshot: snapshot.filter(|_| !snapshot_unpaid),
                snapshot_unpaid,
                first,
                run: self.run.clone(),
            };
            if pieces.send(Piece::End(Box::new(end))).is_err() {
                return;
            }
            std::mem::swap(&mut self.previous, &mut self.current);
        }
    }

    /// Computes the owed digests of a chunk's entries, writing each result digest into its
    /// record; `false` when the run refused one (out of order).
    fn digest(&mut self, chunk: &mut Chunk) -> bool {
        chunk.results.clear();
        for ((_, entry), check) in chunk.entries.iter_mut().zip(&chunk.checks) {
            let Some(result) = self
                .run
                .run(check, &entry.event.event_id, &mut entry.result)
            else {
                return false;
            };
            chunk.results.push(result);
        }
        self.current.1.extend_from_slice(&chunk.results);
        true
    }

    /// Pays the digests a snapshot taken at the current batch's end owed; whether it could.
    fn pay(&self, pending: &mut Pending) -> bool {
        let parts = pending.parts_mut();
        let (previous_first, previous) = &self.previous;
        let (first, current) = &self.current;
        parts.pay(&self.run, *previous_first, previous) && parts.pay(&self.run, *first, current)
    }
}

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
    /// Set when a snapshot due was not written, until the next report says so.
    snapshot_missed: bool,
}

impl Writer {
    /// Encodes each batch's chunks as they come, writes and reports each batch at its end;
    /// stops at the first failure.
    fn run(mut self, pieces: Receiver<Piece>, acks: &Sender<Ack>) -> Self {
        let mut batch = Batch::reusing(self.tip.clone(), std::mem::take(&mut self.lines));
        let mut chunks = Vec::new();
        for piece in pieces {
            let end = match piece {
                Piece::Chunk(chunk) => {
                    for (recorded_at, entry) in &chunk.entries {
                        batch.push(*recorded_at, entry);
                    }
                    chunks.push(chunk);
                    continue;
                }
                Piece::End(end) => *end,
            };
            let written = self.write(batch, end.first_seq);
            self.failed = written.is_err();
            let done = written.map(|()| Done {
                answers: answers(end.answers, end.first_seq, &chunks),
                snapshot_missed: std::mem::take(&mut self.snapshot_missed),
                first: end.first,
                run: end.run,
                chunks: std::mem::take(&mut chunks),
            });
            if acks.send(done).is_err() || self.failed {
                break;
            }
            // After the report: the entries are durable whatever becomes of the snapshot, and
            // writing one (the whole index, synced) does not hold the next batches back.
            self.snapshot_missed |= end.snapshot_unpaid
                || end
                    .snapshot
                    .is_some_and(|pending| !self.write_snapshot(pending));
            batch = Batch::reusing(self.tip.clone(), std::mem::take(&mut self.lines));
        }
        self
    }

    /// Writes and syncs a batch's lines (encoded after the tip) and rewrites the head.
    fn write(&mut self, batch: Batch, first_seq: u64) -> Result<(), StoreError> {
        if batch.is_empty() {
            (_, self.lines) = batch.into_buffer();
            return Ok(());
        }
        if first_seq != self.tip.next_seq {
            return Err(StoreError::Invalid(format!(
                "{}: a pipelined batch starting at entry {first_seq} does not follow entry {}",
                self.path.display(),
                self.tip.next_seq - 1
            )));
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

/// A batch's answers, each accepted one (`None`, in order) answered with its entry (numbered
/// from `first_seq`), whose result digest is now known.
fn answers(answers: Vec<Option<Appended>>, first_seq: u64, chunks: &[Chunk]) -> Vec<Appended> {
    let entries = chunks.iter().flat_map(|chunk| &chunk.entries);
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
fn out_of_order(path: &Path) -> StoreError {
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
    /// Where the digest run got to at the writer's last report (the start before any).
    run: DigestRun,
    /// Chunks the writer handed back.
    spare: Vec<Chunk>,
}

impl Pipe<'_> {
    /// Waits for the writer's reports until at most `keep` jobs are in flight: pays each
    /// batch's result digests into the State and acknowledges its answers.
    fn drain(&mut self, journal: &mut Journal<LiveState>, keep: usize) -> Result<(), StoreError> {
        while self.in_flight > keep {
            let done = match self.acks.recv() {
                Ok(Ok(done)) => done,
                // The threads stop at a failure: nothing more will be reported (a later drain,
                // after a refusal that was this very failure, has nothing to wait for).
                Ok(Err(error)) => {
                    self.in_flight = 0;
                    return Err(error);
                }
                Err(_) => {
                    self.in_flight = 0;
                    return Err(journal.writer_stopped());
                }
            };
            self.in_flight -= 1;
            journal.snapshots.rebuild |= done.snapshot_missed;
            let mut first = done.first;
            for chunk in done.chunks {
                journal.live.pay_results(first, &chunk.results);
                first += chunk.results.len();
                self.spare.push(chunk);
            }
            self.run = done.run;
            if !done.answers.is_empty() {
                (self.acknowledge)(done.answers);
            }
        }
        Ok(())
    }

    /// An empty chunk, reusing a spare one's buffers.
    fn chunk(&mut self) -> Chunk {
        let mut chunk = self.spare.pop().unwrap_or_default();
        chunk.entries.clear();
        chunk.entries.reserve(CHUNK);
        chunk
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

    /// Runs the digest and writer threads beside [`Journal::drive`], then takes back from the
    /// writer the file, head, warnings and durable tip, and pays the State its history hash.
    fn run_pipeline(
        &mut self,
        proposals: impl Iterator<Item = Proposal>,
        batch: usize,
        acknowledge: &mut impl FnMut(Vec<Appended>),
    ) -> Result<(), StoreError> {
        let run = self.live.digest_run();
        let digester = Digester {
            run: run.clone(),
            current: (0, Vec::new()),
            previous: (0, Vec::new()),
        };
        let writer = Writer {
            storage: Arc::clone(&self.storage),
            path: self.path.clone(),
            file: self.take_append_file()?,
            anchor: self.anchor.clone(),
            warnings: std::mem::take(&mut self.warnings),
            tip: self.tip.clone(),
            lines: Vec::new(),
            failed: false,
            snapshot_missed: false,
        };
        let (jobs, inbox) = sync_channel::<Job>(1);
        let (pieces, chunks_in) = sync_channel::<Piece>(2 * batch.div_ceil(CHUNK));
        let (report, acks) = channel();
        let path = self.path.clone();
        let threads = std::thread::scope(|scope| {
            let digest_report = report.clone();
            let spawn = |name: &str| std::thread::Builder::new().name(name.to_owned());
            let started = spawn("journal-digest")
                .spawn_scoped(scope, move || {
                    digester.run(inbox, &pieces, &digest_report, &path);
                })
                .and_then(|_| {
                    spawn("journal-write")
                        .spawn_scoped(scope, move || writer.run(chunks_in, &report))
                });
            let worker = started?;
            let mut pipe = Pipe {
                jobs: &jobs,
                acks: &acks,
                acknowledge,
                in_flight: 0,
                run,
                spare: Vec::new(),
            };
            let driven = self.drive(proposals, batch, &mut pipe);
            let run = pipe.run;
            // No more jobs: the threads end once they have written what they hold.
            drop(jobs);
            Ok((driven, worker.join(), run))
        });
        let (driven, writer, run) = match threads {
            Ok(threads) => threads,
            // Nothing was judged; the file is opened again by the next append.
            Err(source) => {
                return Err(StoreError::io(&self.path, "start a writing thread", source));
            }
        };
        let Ok(writer) = writer else {
            let error = self.writer_stopped();
            self.poisoned = Some(error.to_string());
            return Err(error);
        };
        self.anchor = writer.anchor;
        self.warnings = writer.warnings;
        self.tip = writer.tip;
        self.snapshots.rebuild |= writer.snapshot_missed;
        // Every job was reported (its result digests paid), also before a refusal: the State
        // owes only its history hash, the run's after the last entry.
        if !writer.failed && self.live.pay_history(&run) {
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
    /// collecting them in chunks (the pipe's spare buffers); stops at a refusal by the store's
    /// rules (returned beside what was judged before it).
    fn judge_batch(
        &mut self,
        proposals: &mut impl Iterator<Item = Proposal>,
        batch: usize,
        next_seq: &mut u64,
        pipe: &mut Pipe<'_>,
    ) -> (Job, Option<StoreError>) {
        let mut job = Job {
            first_seq: *next_seq,
            chunks: vec![pipe.chunk()],
            answers: Vec::with_capacity(batch),
            snapshot: None,
        };
        for (event, evidence_set) in proposals.take(batch) {
            if job
                .chunks
                .last()
                .is_some_and(|chunk| chunk.entries.len() == CHUNK)
            {
                job.chunks.push(pipe.chunk());
            }
            let judged = self.judge_with(&event, &evidence_set, *next_seq, |journal| {
                journal.apply_owing(&event, &evidence_set, &mut job.chunks, pipe)
            });
            match judged {
                Ok(Judged::Accepted { record, .. }) => {
                    let entry = CompactEntry {
                        event,
                        evidence_set,
                        result: record,
                    };
                    let recorded_at = self.clock.now();
                    if let Some(chunk) = job.chunks.last_mut() {
                        chunk.entries.push((recorded_at, entry));
                    }
                    job.answers.push(None);
                    *next_seq += 1;
                }
                Ok(Judged::Answered(answer)) => job.answers.push(Some(answer)),
                Err(refusal) => return (job, Some(refusal)),
            }
        }
        (job, None)
    }

    /// Applies a proposal leaving its digests owed (the check after the last chunk's entries).
    /// When its verdict needs a digest still owed, pays everything owed first: waits for the
    /// batches in flight, computes the owed digests of this batch's entries (`chunks`) from
    /// where the digest run got to, and applies it again.
    fn apply_owing(
        &mut self,
        event: &valp_kernel::Event,
        evidence_set: &[Evidence],
        chunks: &mut [Chunk],
        pipe: &mut Pipe<'_>,
    ) -> Result<Verdict, StoreError> {
        let Some((chunk, earlier)) = chunks.split_last_mut() else {
            return Err(out_of_order(&self.path));
        };
        let at = chunk.entries.len();
        if chunk.checks.len() <= at {
            chunk.checks.resize_with(at + 1, DigestCheck::default);
        }
        let Some(check) = chunk.checks.get_mut(at) else {
            return Err(out_of_order(&self.path));
        };
        if let Owing::Judged(verdict) = self.live.apply_owing(event, evidence_set, check) {
            return Ok(verdict);
        }
        pipe.drain(self, 0)?;
        let mut digester = Digester {
            run: pipe.run.clone(),
            current: (0, Vec::new()),
            previous: (0, Vec::new()),
        };
        let first = digester.run.history_len();
        for chunk in earlier.iter_mut().chain(std::iter::once(&mut *chunk)) {
            if !digester.digest(chunk) {
                return Err(out_of_order(&self.path));
            }
        }
        self.live.pay_results(first, &digester.current.1);
        if !self.live.pay_history(&digester.run) {
            return Err(out_of_order(&self.path));
        }
        let Some(check) = chunk.checks.get_mut(at) else {
            return Err(out_of_order(&self.path));
        };
        match self.live.apply_owing(event, evidence_set, check) {
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
