//! Checking a journal's digests on other threads while its entries are applied: a verify's
//! applying thread leaves the result and State digests of each entry (the two SHA-256 passes
//! over the State body, the protocol's floor) to a [`DigestChain`] run by whichever thread is
//! free ([`Machine::apply_recorded_deferring`](crate::machine::Machine::apply_recorded_deferring)).
//!
//! **Batches that stand alone.** A chain carries the State digest from one entry to the next,
//! but it can start at any entry from the State before it
//! ([`Machine::digest_chain`](crate::machine::Machine::digest_chain): a copy of the encoded
//! body; the chain pays that State's digest, one body pass, with its checks' own passes). So every
//! batch of [`BATCH`] checks (the first [`FIRST_BATCH`], so that checking starts early) carries
//! its own chain, and any thread may run any batch: the [`CHECKERS`] checking threads take them
//! from one queue of at most [`QUEUED`], and the applying thread runs a batch itself when that
//! queue is full and, at the end, runs what is still queued instead of waiting. No thread waits
//! for the scheduler to move another: on 2 cores a short verify had left one core to the reading
//! thread while the applying thread and both checkers shared the other (issue 20).
//!
//! **Contract.** Each batch's checks run in entry order and stop at the first failure; a
//! checking thread runs no batch after one that failed (the queue is in entry order, so they
//! are later). Every error is reported only after every check queued before it has run
//! ([`Checks::settle`]): the failure of the earliest line wins, and a failed check wins over
//! the applying side's error at the same or a later line (it is of an earlier line, or that
//! line's first check), so the error is exactly the one applying inline gives. A verify that
//! ends settles too, so it succeeds only when every check passed. Fail closed: a checking
//! thread that panics reports it and fails the verify. Memory is bounded: at most [`QUEUED`]
//! batches queued and one running per checker, and the checks' buffers (~1-3 KB each at 20
//! work items: the preimage and what the entry changed) come back to be filled again.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use crossbeam_channel::{Receiver, Sender, TrySendError, bounded, unbounded};
use valp_kernel::live::{DigestChain, DigestCheck};
use valp_kernel::replay::ReplayError;

use crate::error::StoreError;

/// Bytes left to read from which a verify reads ahead and checks the digests aside: ~250 lines
/// at 20 work items (measured with `cargo bench -p valp-store --bench verify -- read_ahead`
/// run as `SCHED_FIFO`: at 256 lines the three threads took 12 % less time than one, at 64
/// lines 22 % more; see ARCHITECTURE.md).
pub(crate) const MIN_BYTES: u64 = 256 << 10;

/// Checks per batch, each batch with its own chain: sixteen is one pass of the sixteen AVX-512
/// lanes for the batch's State digests (the chain's owed one and each entry's but the last) and
/// one for its result digests ([`DigestChain::check_all`]); a chain's start costs the applying
/// thread a copy of the encoded body. The last batch is what is left to check after the last
/// entry is applied.
const BATCH: usize = 16;
/// Checks in the first batch: the checkers start as soon as a few entries are applied.
const FIRST_BATCH: usize = 2;
/// Batches queued for the checking threads (with one running per checker, ~160 checks held at
/// most: ~1.6 MB at 20 work items).
const QUEUED: usize = 8;
/// Checking threads.
const CHECKERS: usize = 2;

thread_local! {
    /// [`set_digest_checks_aside`] for this thread.
    static ASIDE: Cell<bool> = const { Cell::new(true) };
}

/// Sets, for the calling thread only, whether a verify that reads a journal ahead also checks
/// its digests on other threads (`true`, the default) or as it applies. For tests and
/// benchmarks that compare the two ways; what a journal gives is the same either way.
#[doc(hidden)]
pub fn set_digest_checks_aside(aside: bool) {
    ASIDE.with(|cell| cell.set(aside));
}

/// Whether this thread checks digests aside ([`set_digest_checks_aside`]).
pub(crate) fn aside() -> bool {
    ASIDE.with(Cell::get)
}

/// A check of the line at `seq` (its first byte at `start`, for the error).
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub(crate) check: DigestCheck,
    seq: u64,
    start: u64,
}

/// Checks in entry order with the chain from the State before the first of them.
struct Batch {
    chain: DigestChain,
    checks: Vec<Pending>,
}

/// What a checking thread sends back.
enum Checked {
    /// A batch ran (its buffers come back, to reuse): the line and error of the first check
    /// that failed, if one did.
    Ran {
        checks: Vec<Pending>,
        failure: Option<(u64, StoreError)>,
    },
    /// A checking thread panicked: the batch it ran will not come back.
    Died,
}

/// The applying side's end of the checks.
pub(crate) struct Checks {
    path: PathBuf,
    to_check: Sender<Batch>,
    /// The queue's other end, to run what is queued at the end.
    queued: Receiver<Batch>,
    checked: Receiver<Checked>,
    /// Batches sent and not back yet.
    in_flight: usize,
    /// Filled checks not sent yet, and the chain they are checked with.
    batch: Vec<Pending>,
    chain: Option<DigestChain>,
    /// Checks from which `batch` is full ([`FIRST_BATCH`] for the first, then [`BATCH`]).
    batch_size: usize,
    /// Checks to fill again, and batch vectors to send again.
    spare: Vec<Pending>,
    spare_batches: Vec<Vec<Pending>>,
    /// The earliest failure found so far: its line's seq and the error.
    failed: Option<(u64, StoreError)>,
    /// A failure was handed out: nothing more will be checked or reported.
    reported: bool,
}

/// Runs `apply` with a [`Checks`] whose checks run on [`CHECKERS`] other threads (and on the
/// calling thread when they are behind), the first batch's with `chain` (for the journal at
/// `path`); gives what `apply` returned, which must have settled the checks it relies on.
pub(crate) fn check_aside<T>(
    path: &Path,
    chain: DigestChain,
    apply: impl FnOnce(&mut Checks) -> T,
) -> Result<T, StoreError> {
    std::thread::scope(|scope| {
        let (report, checked) = unbounded();
        let (to_check, queued) = bounded::<Batch>(QUEUED);
        let mut threads = Vec::with_capacity(CHECKERS);
        for index in 0..CHECKERS {
            let (queued, report, reported_path) = (queued.clone(), report.clone(), path.to_owned());
            let checking = std::thread::Builder::new()
                .name(format!("journal-check-{index}"))
                .spawn_scoped(scope, move || run_checks(&queued, &report, &reported_path))
                .map_err(|source| StoreError::io(path, "start a digest-checking thread", source))?;
            threads.push(checking);
        }
        // Only the checking threads report: a receive fails once they are all gone.
        drop(report);
        let mut checks = Checks {
            path: path.to_owned(),
            to_check,
            queued,
            checked,
            in_flight: 0,
            batch: Vec::with_capacity(BATCH),
            chain: Some(chain),
            batch_size: FIRST_BATCH,
            spare: Vec::new(),
            spare_batches: Vec::new(),
            failed: None,
            reported: false,
        };
        let applied = apply(&mut checks);
        // Stops the checking threads once the queue is empty.
        drop(checks);
        for checking in threads {
            checking.join().map_err(|_| stopped(path))?;
        }
        Ok(applied)
    })
}

/// Tells the applying side that a checking thread panicked, as it unwinds.
struct Alive<'a> {
    report: &'a Sender<Checked>,
}

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Nobody left to tell if the applying side is gone.
            let _ = self.report.send(Checked::Died);
        }
    }
}

/// A checking thread: runs the batches it takes until the queue is closed, none after one that
/// failed; sends every batch back.
fn run_checks(queued: &Receiver<Batch>, report: &Sender<Checked>, path: &Path) {
    let alive = Alive { report };
    let mut failed = false;
    for mut batch in queued {
        let mut failure = None;
        if !failed {
            failure = run_batch(&mut batch, path);
            failed = failure.is_some();
        }
        let ran = Checked::Ran {
            checks: batch.checks,
            failure,
        };
        if alive.report.send(ran).is_err() {
            return;
        }
    }
}

/// Runs `batch`'s checks in order with its chain: the line and error of the first that fails.
fn run_batch(batch: &mut Batch, path: &Path) -> Option<(u64, StoreError)> {
    let checks = batch.checks.iter().map(|pending| &pending.check);
    let error = batch.chain.check_all(checks).err()?;
    // The chain fails only on a mismatch, at a check of this batch.
    let failed = match &error {
        ReplayError::Mismatch { index, .. } => batch
            .checks
            .iter()
            .find(|pending| pending.check.index() == *index),
        _ => None,
    };
    Some(match failed.or(batch.checks.first()) {
        Some(pending) => (
            pending.seq,
            super::replay_failure_at(path, pending.seq, pending.start, &error),
        ),
        None => (0, stopped(path)),
    })
}

fn stopped(path: &Path) -> StoreError {
    StoreError::Invalid(format!(
        "{}: the thread checking the journal's digests stopped unexpectedly",
        path.display()
    ))
}

impl Checks {
    /// Whether the next entry starts a new batch (the last is full, or was sent to settle):
    /// then the caller gives the chain of the State before it ([`Checks::start_batch`]) before
    /// applying it.
    pub(crate) fn batch_full(&self) -> bool {
        self.chain.is_none() || self.batch.len() >= self.batch_size
    }

    /// Sends the full batch and starts the next, whose checks `chain` (from the State before
    /// its first entry) runs.
    pub(crate) fn start_batch(&mut self, chain: DigestChain) {
        self.send();
        self.batch_size = BATCH;
        self.chain = Some(chain);
    }

    /// A check to fill (its buffers reused from one that passed).
    pub(crate) fn take(&mut self) -> Pending {
        self.spare.pop().unwrap_or_default()
    }

    /// Queues `pending` as the check of the line at `seq` (starting at byte `start`) if the
    /// machine filled it, or keeps it to fill again.
    pub(crate) fn queue(&mut self, mut pending: Pending, seq: u64, start: u64) {
        if !pending.check.is_filled() {
            self.spare.push(pending);
            return;
        }
        pending.seq = seq;
        pending.start = start;
        self.batch.push(pending);
    }

    /// Hands the batch to the checking threads, or runs it here when their queue is full (they
    /// are behind: this thread would otherwise wait for them).
    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let next = self
            .spare_batches
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BATCH));
        let checks = std::mem::replace(&mut self.batch, next);
        let Some(chain) = self.chain.take() else {
            // A batch is always started with its chain: fail closed if not.
            let seq = checks.first().map_or(0, |first| first.seq);
            self.take_ran(checks, Some((seq, stopped(&self.path))));
            return;
        };
        match self.to_check.try_send(Batch { chain, checks }) {
            Ok(()) => self.in_flight += 1,
            // This side holds the queue's other end, so it is never disconnected; were it, the
            // batch would still be run here.
            Err(TrySendError::Full(batch) | TrySendError::Disconnected(batch)) => {
                self.run_here(batch);
            }
        }
    }

    /// Runs `batch` on the applying thread.
    fn run_here(&mut self, mut batch: Batch) {
        let failure = run_batch(&mut batch, &self.path);
        self.take_ran(batch.checks, failure);
    }

    /// Keeps `error`, of the line at `seq`, if it is the earliest failure so far.
    fn fail(&mut self, seq: u64, error: StoreError) {
        if self
            .failed
            .as_ref()
            .is_none_or(|(earliest, _)| seq < *earliest)
        {
            self.failed = Some((seq, error));
        }
    }

    fn take_ran(&mut self, mut checks: Vec<Pending>, failure: Option<(u64, StoreError)>) {
        self.spare.append(&mut checks);
        self.spare_batches.push(checks);
        if let Some((seq, error)) = failure {
            self.fail(seq, error);
        }
    }

    fn take_checked(&mut self, checked: Checked) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match checked {
            Checked::Ran { checks, failure } => self.take_ran(checks, failure),
            Checked::Died => self.fail(0, stopped(&self.path)),
        }
    }

    /// The earliest failure, once a check has failed: the lines applied so far are after it
    /// (a batch still queued or running may fail at an earlier line, so every check queued is
    /// run first).
    pub(crate) fn poll(&mut self) -> Result<(), StoreError> {
        while let Ok(checked) = self.checked.try_recv() {
            self.take_checked(checked);
        }
        if self.failed.is_some() {
            return self.settle();
        }
        Ok(())
    }

    /// The failure found, once.
    fn report(&mut self) -> Result<(), StoreError> {
        match self.failed.take() {
            Some((_, error)) => {
                self.reported = true;
                Err(error)
            }
            None => Ok(()),
        }
    }

    /// Runs every check queued so far (what is still queued on this thread) and waits for the
    /// rest: the earliest failure, if any.
    pub(crate) fn settle(&mut self) -> Result<(), StoreError> {
        if self.reported {
            return Ok(());
        }
        self.send();
        while self.in_flight > 0 {
            if let Ok(batch) = self.queued.try_recv() {
                self.in_flight -= 1;
                self.run_here(batch);
                continue;
            }
            let Ok(checked) = self.checked.recv() else {
                // Every thread gone with checks due: fail closed.
                self.fail(0, stopped(&self.path));
                break;
            };
            self.take_checked(checked);
        }
        self.report()
    }

    /// `error`, found by the applying side at a line every queued check is before (or is that
    /// line's first check), unless one of those checks fails: the earliest error (`error`
    /// itself when it is the failure these checks reported).
    pub(crate) fn earliest(&mut self, error: StoreError) -> StoreError {
        self.settle().err().unwrap_or(error)
    }
}
