//! Checking a journal's digests on other threads while its entries are applied: a verify's
//! applying thread leaves the result and State digests of each entry (the two SHA-256 passes
//! over the State body, the protocol's floor) to a [`DigestChain`] running on a checking thread
//! ([`Machine::apply_recorded_deferring`](crate::machine::Machine::apply_recorded_deferring)).
//!
//! **Two checkers.** A chain carries the State digest from one entry to the next, but that
//! digest is also the applying side's own State's: a chain can start at any entry from the
//! State before it ([`Machine::digest_chain`](crate::machine::Machine::digest_chain), one State
//! digest). So the entries are cut into segments of [`SEGMENT`] checks, each run by its own
//! chain, started by the applying thread at the segment's first entry, on [`CHECKERS`] threads
//! in turn: the floor's work, the longest chain of a verify, is shared by two threads instead
//! of holding one core while the others wait (issue 20: at 1,000 entries a single checking
//! thread was the critical path).
//!
//! **Contract.** Each checker runs its segments' checks in entry order and, after a failure,
//! runs no more (what it would find is later). Every error is reported only after every check
//! queued before it has run ([`Checks::settle`]): the failure of the earliest line wins, and a
//! failed check wins over the applying side's error at the same or a later line (it is of an
//! earlier line, or that line's first check), so the error is exactly the one applying inline
//! gives. A verify that ends settles too, so it succeeds only when every check passed. Fail
//! closed: a checking thread that panics reports it and fails the verify. Memory is bounded:
//! batches of [`BATCH`] checks, at most [`IN_FLIGHT`] queued per checker, and the checks'
//! buffers (~1-3 KB each at 20 work items: the preimage and what the entry changed) come back
//! to be filled again.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use valp_kernel::live::{DigestChain, DigestCheck};

use crate::error::StoreError;

/// Bytes left to read from which a verify reads ahead and checks the digests aside: ~250 lines
/// at 20 work items (measured with `cargo bench -p valp-store --bench verify -- read_ahead`
/// run as `SCHED_FIFO`: at 256 lines the three threads took 12 % less time than one, at 64
/// lines 22 % more; see ARCHITECTURE.md).
pub(crate) const MIN_BYTES: u64 = 256 << 10;

/// Checks per batch (with [`IN_FLIGHT`] and [`CHECKERS`], ~160 checks held at most: ~1.6 MB at
/// 20 work items; 32 per batch measured 4 MiB more peak RSS at 10^6 entries than reading ahead
/// alone).
const BATCH: usize = 16;
/// Checks in the first batch of a segment: its checker starts as soon as a few entries of it
/// are applied instead of after a whole batch.
const FIRST_BATCH: usize = 2;
/// Batches queued per checking thread.
const IN_FLIGHT: usize = 4;
/// Checking threads.
const CHECKERS: usize = 2;
/// Checks per segment (one chain, on one checker): each new segment costs the applying thread
/// one State digest (~one body pass, under 1 % of the checks' work at this length).
const SEGMENT: usize = 128;

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

/// Checks sent to a checker: the chain to run them with when they start a segment, and the
/// checks.
struct Batch {
    chain: Option<DigestChain>,
    checks: Vec<Pending>,
}

/// What a checking thread sends back.
enum Checked {
    /// Checker `checker` ran a batch (its buffers come back, to reuse): the line and error of
    /// the first check that failed, if one did (the checker runs nothing after it).
    Ran {
        checker: usize,
        checks: Vec<Pending>,
        failure: Option<(u64, StoreError)>,
    },
    /// Checker `checker` panicked: the batches it holds will not come back.
    Died { checker: usize },
}

/// The applying side's end of one checking thread.
struct Checker {
    /// `None` once the thread was found gone.
    to_check: Option<SyncSender<Batch>>,
    /// Batches sent and not back yet.
    in_flight: usize,
}

/// The applying side's end of the checks.
pub(crate) struct Checks {
    path: PathBuf,
    checkers: Vec<Checker>,
    checked: Receiver<Checked>,
    /// Filled checks not sent yet (of the segment `segment`).
    batch: Vec<Pending>,
    /// Checks from which `batch` is sent ([`FIRST_BATCH`] at a segment's start, then [`BATCH`]).
    batch_size: usize,
    /// The chain the next batch sent starts its segment with.
    chain: Option<DigestChain>,
    /// The current segment (its checker is `segment % CHECKERS`) and the checks queued in it.
    segment: usize,
    in_segment: usize,
    /// Checks to fill again, and batch vectors to send again.
    spare: Vec<Pending>,
    spare_batches: Vec<Vec<Pending>>,
    /// The earliest failure found so far: its line's seq and the error.
    failed: Option<(u64, StoreError)>,
    /// A failure was handed out: nothing more will be checked or reported.
    reported: bool,
}

/// Runs `apply` with a [`Checks`] whose checks run on [`CHECKERS`] other threads, the first
/// segment's with `chain` (for the journal at `path`); gives what `apply` returned, which must
/// have settled the checks it relies on.
pub(crate) fn check_aside<T>(
    path: &Path,
    chain: DigestChain,
    apply: impl FnOnce(&mut Checks) -> T,
) -> Result<T, StoreError> {
    std::thread::scope(|scope| {
        let (report, checked) = channel();
        let mut threads = Vec::with_capacity(CHECKERS);
        let mut checkers = Vec::with_capacity(CHECKERS);
        let mut first = Some(chain);
        for index in 0..CHECKERS {
            let (to_check, queued) = sync_channel::<Batch>(IN_FLIGHT);
            let (report, reported_path, chain) = (report.clone(), path.to_owned(), first.take());
            let checking = std::thread::Builder::new()
                .name(format!("journal-check-{index}"))
                .spawn_scoped(scope, move || {
                    run_checks(index, chain, &queued, &report, &reported_path);
                })
                .map_err(|source| StoreError::io(path, "start a digest-checking thread", source))?;
            threads.push(checking);
            checkers.push(Checker {
                to_check: Some(to_check),
                in_flight: 0,
            });
        }
        let mut checks = Checks {
            path: path.to_owned(),
            checkers,
            checked,
            batch: Vec::with_capacity(BATCH),
            batch_size: FIRST_BATCH,
            chain: None,
            segment: 0,
            in_segment: 0,
            spare: Vec::new(),
            spare_batches: Vec::new(),
            failed: None,
            reported: false,
        };
        let applied = apply(&mut checks);
        // Stops the checking threads once they have run what they were sent.
        drop(checks);
        for checking in threads {
            checking.join().map_err(|_| stopped(path))?;
        }
        Ok(applied)
    })
}

/// Tells the applying side that a checking thread panicked, as it unwinds.
struct Alive<'a> {
    checker: usize,
    report: &'a Sender<Checked>,
}

impl Drop for Alive<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Nobody left to tell if the applying side is gone.
            let _ = self.report.send(Checked::Died {
                checker: self.checker,
            });
        }
    }
}

/// Checking thread `checker`: runs each batch's checks in order, with the chain of the segment
/// they are of (`chain` for its first), until the first failure; sends every batch back.
fn run_checks(
    checker: usize,
    mut chain: Option<DigestChain>,
    queued: &Receiver<Batch>,
    report: &Sender<Checked>,
    path: &Path,
) {
    let _alive = Alive { checker, report };
    let mut failed = false;
    for batch in queued {
        if batch.chain.is_some() {
            chain = batch.chain;
        }
        let mut failure = None;
        if !failed {
            failure = run_batch(chain.as_mut(), &batch.checks, path);
            failed = failure.is_some();
        }
        let ran = Checked::Ran {
            checker,
            checks: batch.checks,
            failure,
        };
        if report.send(ran).is_err() {
            return;
        }
    }
}

/// Runs `checks` in order with `chain`: the line and error of the first that fails.
fn run_batch(
    chain: Option<&mut DigestChain>,
    checks: &[Pending],
    path: &Path,
) -> Option<(u64, StoreError)> {
    let Some(chain) = chain else {
        // A segment is always sent with its chain: fail closed if not.
        return checks.first().map(|first| (first.seq, stopped(path)));
    };
    checks.iter().find_map(|pending| {
        chain.check(&pending.check).err().map(|error| {
            let failure = super::replay_failure_at(path, pending.seq, pending.start, &error);
            (pending.seq, failure)
        })
    })
}

fn stopped(path: &Path) -> StoreError {
    StoreError::Invalid(format!(
        "{}: the thread checking the journal's digests stopped unexpectedly",
        path.display()
    ))
}

impl Checks {
    /// Whether the next entry starts a new segment: then the caller gives the chain of the
    /// State before it ([`Checks::start_segment`]) before applying it.
    pub(crate) fn segment_full(&self) -> bool {
        self.in_segment >= SEGMENT
    }

    /// Starts the next segment, whose checks `chain` (from the State before its first entry)
    /// runs, on the next checker.
    pub(crate) fn start_segment(&mut self, chain: DigestChain) {
        self.send();
        self.segment += 1;
        self.in_segment = 0;
        self.batch_size = FIRST_BATCH;
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
        self.in_segment += 1;
        if self.batch.len() >= self.batch_size {
            self.batch_size = BATCH;
            self.send();
        }
    }

    fn send(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let next = self
            .spare_batches
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(BATCH));
        let batch = Batch {
            chain: self.chain.take(),
            checks: std::mem::replace(&mut self.batch, next),
        };
        let seq = batch.checks.first().map_or(0, |first| first.seq);
        let Some(checker) = self.checkers.get_mut(self.segment % CHECKERS) else {
            return;
        };
        match &checker.to_check {
            Some(to_check) if to_check.send(batch).is_ok() => checker.in_flight += 1,
            // The thread is gone (it panicked: `Died` is in `checked`); fail closed anyway.
            _ => {
                checker.to_check = None;
                self.fail(seq, stopped(&self.path));
            }
        }
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

    fn take_checked(&mut self, checked: Checked) {
        match checked {
            Checked::Ran {
                checker,
                mut checks,
                failure,
            } => {
                if let Some(checker) = self.checkers.get_mut(checker) {
                    checker.in_flight = checker.in_flight.saturating_sub(1);
                }
                self.spare.append(&mut checks);
                self.spare_batches.push(checks);
                if let Some((seq, error)) = failure {
                    self.fail(seq, error);
                }
            }
            Checked::Died { checker } => {
                if let Some(checker) = self.checkers.get_mut(checker) {
                    checker.in_flight = 0;
                    checker.to_check = None;
                }
                self.fail(0, stopped(&self.path));
            }
        }
    }

    /// The earliest failure, once a check has failed: the lines applied so far are after it
    /// (the other checker may still fail at an earlier line, so every check queued is run
    /// first).
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

    /// Runs every check queued so far and waits for them: the earliest failure, if any.
    pub(crate) fn settle(&mut self) -> Result<(), StoreError> {
        if self.reported {
            return Ok(());
        }
        self.send();
        while self.checkers.iter().any(|checker| checker.in_flight > 0) {
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
