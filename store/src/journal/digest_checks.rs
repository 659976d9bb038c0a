//! Checking a journal's digests on a second thread while its entries are applied: a verify's
//! applying thread leaves the result and State digests of each entry (the two SHA-256 passes
//! over the State body, the protocol's floor) to a [`DigestChain`] running on its own thread
//! ([`Machine::apply_recorded_deferring`](crate::machine::Machine::apply_recorded_deferring)).
//!
//! **Contract.** The checks run in entry order; the chain stops at its first failure and
//! reports it (as the error the inline path gives for that line). Every error the applying side
//! meets at a line is reported only after the checks queued before it have run
//! ([`Checks::settle`]), and a failed check always wins: it is of an earlier line (or of the
//! same line, when that line's check goes first), so the earliest error is reported, exactly
//! as applying inline would. A verify that ends settles too, so it succeeds only when every
//! check passed. Fail closed: a checking thread that stops without a result fails the verify.
//! Memory is bounded: batches of [`BATCH`] checks, at most [`IN_FLIGHT`] queued, and the
//! checks' buffers (~10 KB each at 20 work items) come back to be filled again.

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

/// Checks per batch (with [`IN_FLIGHT`], ~100 checks held at most: ~1 MB at 20 work items;
/// 32 per batch measured 4 MiB more peak RSS at 10^6 entries than reading ahead alone).
const BATCH: usize = 16;
/// Batches queued for the checking thread.
const IN_FLIGHT: usize = 4;

thread_local! {
    /// [`set_digest_checks_aside`] for this thread.
    static ASIDE: Cell<bool> = const { Cell::new(true) };
}

/// Sets, for the calling thread only, whether a verify that reads a journal ahead also checks
/// its digests on a second thread (`true`, the default) or as it applies. For tests and
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

/// What the checking thread sends back: a batch that passed (its buffers, to reuse), or the
/// first failure (after which it stops).
enum Checked {
    Passed(Vec<Pending>),
    Failed(StoreError),
}

/// The applying side's end of the checks.
pub(crate) struct Checks {
    path: PathBuf,
    /// `None` once the checking thread was found stopped.
    to_check: Option<SyncSender<Vec<Pending>>>,
    checked: Receiver<Checked>,
    /// Filled checks not sent yet.
    batch: Vec<Pending>,
    /// Checks to fill again, and batch vectors to send again.
    spare: Vec<Pending>,
    spare_batches: Vec<Vec<Pending>>,
    /// Batches sent and not back yet.
    in_flight: usize,
    failed: Option<StoreError>,
    /// A failure was handed out: nothing more will be checked or reported.
    reported: bool,
}

/// Runs `apply` with a [`Checks`] whose checks `chain` runs on a second thread (for the journal
/// at `path`); gives what `apply` returned, which must have settled the checks it relies on.
pub(crate) fn check_aside<T>(
    path: &Path,
    chain: DigestChain,
    apply: impl FnOnce(&mut Checks) -> T,
) -> Result<T, StoreError> {
    std::thread::scope(|scope| {
        let (to_check, queued) = sync_channel::<Vec<Pending>>(IN_FLIGHT);
        let (report, checked) = channel();
        let reported_path = path.to_owned();
        let checking = std::thread::Builder::new()
            .name("journal-digest-check".to_owned())
            .spawn_scoped(scope, move || {
                run_checks(chain, &queued, &report, &reported_path);
            })
            .map_err(|source| StoreError::io(path, "start a digest-checking thread", source))?;
        let mut checks = Checks {
            path: path.to_owned(),
            to_check: Some(to_check),
            checked,
            batch: Vec::with_capacity(BATCH),
            spare: Vec::new(),
            spare_batches: Vec::new(),
            in_flight: 0,
            failed: None,
            reported: false,
        };
        let applied = apply(&mut checks);
        // Stops the checking thread once it has run what it was sent.
        drop(checks);
        checking.join().map_err(|_| stopped(path))?;
        Ok(applied)
    })
}

/// The checking thread: runs the checks in order until the first failure or the end.
fn run_checks(
    mut chain: DigestChain,
    queued: &Receiver<Vec<Pending>>,
    report: &Sender<Checked>,
    path: &Path,
) {
    for batch in queued {
        for pending in &batch {
            if let Err(error) = chain.check(&pending.check) {
                let failure = super::replay_failure_at(path, pending.seq, pending.start, &error);
                // Nobody left to tell if the applying side is gone.
                let _ = report.send(Checked::Failed(failure));
                return;
            }
        }
        if report.send(Checked::Passed(batch)).is_err() {
            return;
        }
    }
}

fn stopped(path: &Path) -> StoreError {
    StoreError::Invalid(format!(
        "{}: the thread checking the journal's digests stopped unexpectedly",
        path.display()
    ))
}

impl Checks {
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
        if self.batch.len() >= BATCH {
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
        let batch = std::mem::replace(&mut self.batch, next);
        match &self.to_check {
            Some(to_check) if to_check.send(batch).is_ok() => self.in_flight += 1,
            // The thread has stopped: its failure (or nothing, if it died) is in `checked`.
            _ => self.to_check = None,
        }
    }

    fn take_checked(&mut self, checked: Checked) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match checked {
            Checked::Passed(mut batch) => {
                self.spare.append(&mut batch);
                self.spare_batches.push(batch);
            }
            Checked::Failed(error) => {
                self.failed.get_or_insert(error);
            }
        }
    }

    /// The first failure among the checks that have run, without waiting for the others (it is
    /// of a line before any not applied yet).
    pub(crate) fn poll(&mut self) -> Result<(), StoreError> {
        while let Ok(checked) = self.checked.try_recv() {
            self.take_checked(checked);
        }
        self.report()
    }

    /// The failure found, once.
    fn report(&mut self) -> Result<(), StoreError> {
        match self.failed.take() {
            Some(error) => {
                self.reported = true;
                Err(error)
            }
            None => Ok(()),
        }
    }

    /// Runs every check queued so far and waits for them: the first failure, if any.
    pub(crate) fn settle(&mut self) -> Result<(), StoreError> {
        if self.reported {
            return Ok(());
        }
        self.send();
        while self.failed.is_none() && (self.in_flight > 0 || self.to_check.is_none()) {
            match self.checked.recv() {
                Ok(checked) => self.take_checked(checked),
                // Gone without a failure while checks were due: fail closed.
                Err(_) => self.failed = Some(stopped(&self.path)),
            }
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
