//! The epoch fence, enforced by the store on task journals (defence in depth).
//!
//! A task journal is bound for life to the Leader epoch of its genesis; a rotation in the
//! installation ledger fences that epoch (ARCHITECTURE.md, "Task handoff across epochs"). The
//! console's runtime driver and every Leader operation already refuse to propose on a fenced
//! task; the store refuses too, so a caller that forgets to check cannot extend one.
//!
//! **Rule.** An append to a task journal opened through [`ControlRoot`](crate::ControlRoot)
//! that the kernel would accept ([`LiveState::preview`] = accepted) is refused, before anything
//! is written, when the ledger's active epoch is ≥ 1 and differs from the task State's
//! `leader_epoch`. Active epoch 0 (no Leader was ever activated) fences nothing. Proposals the
//! kernel refuses or answers as duplicates are left to the kernel, as with the Done gate. A
//! refusal is logged to `rejections.jsonl` with `VALP-E-EPOCH-FENCED` and returned as
//! [`StoreError::EpochFenced`].
//!
//! **Not on open.** Opening or verifying a journal does not re-check the fence: its history
//! legitimately holds entries of epochs that were active when they were written.
//!
//! **Reading the ledger.** The fence keeps one read-only ledger handle, opened (and verified by
//! replay) on first use and shared by every clone of the fence, so all task journals of one
//! [`ControlRoot`](crate::ControlRoot) value share it. Each check catches up with
//! [`Journal::refresh`], which reads and verifies only the bytes appended since. A ledger that
//! cannot be opened or read (missing, damaged, unreadable) fails the append with that error:
//! the fence fails closed. After such an error the handle is dropped and the next check reopens
//! and re-verifies the ledger from its start.
//!
//! **Batches.** A batch of appends ([`Journal::append_batch`]) reads the ledger once, when it
//! starts under the task's lock, and judges each of its proposals against that active epoch
//! (reading it again for every proposal cost a bulk writer an open and a read of the ledger per
//! entry, issue 20). The batch is one append for the race below.
//!
//! **Race.** The fence is checked under the task journal's lock, at append time, against the
//! ledger as it stands then. A rotation takes the ledger's lock, not the task's, so one that
//! lands in the ledger between the check and the write cannot be excluded without a lock
//! spanning both journals: that entry (or batch) is written at the epoch that was active an
//! instant before, as if it had been appended just before the rotation (and a handoff reading the
//! predecessor in that instant may not carry it over). The console's own checks, made before
//! proposing, have a wider window of the same kind; the fence narrows it to one append.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use valp_kernel::installation::InstallationLive;
use valp_kernel::live::LiveState;
use valp_kernel::{Event, Evidence, Int, Variant};

use crate::error::StoreError;
use crate::io::Storage;
use crate::journal::{Access, Journal};
use crate::machine::Refusal;

/// The installation ledger's active epoch, as the store's fence on task appends reads it.
/// Clones share one ledger handle.
#[derive(Clone)]
pub struct EpochFence {
    /// The ledger's folder (`installation/`).
    dir: PathBuf,
    /// Where a writer would quarantine a torn tail (never used: the handle is read-only).
    quarantine: PathBuf,
    storage: Arc<dyn Storage>,
    /// The read-only ledger, once opened; `None` before the first check and after a failure.
    ledger: Arc<Mutex<Option<Journal<InstallationLive>>>>,
}

impl std::fmt::Debug for EpochFence {
    // Not the ledger handle: its State would fill every debug print of a control root.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EpochFence")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl EpochFence {
    /// A fence over the ledger in `dir` (opened lazily, on the first check).
    pub fn new(dir: PathBuf, quarantine: PathBuf, storage: Arc<dyn Storage>) -> Self {
        Self {
            dir,
            quarantine,
            storage,
            ledger: Arc::new(Mutex::new(None)),
        }
    }

    /// The ledger's active epoch now: opens the ledger on first use, otherwise reads only what
    /// was appended since the last call.
    pub fn active_epoch(&self) -> Result<Int, StoreError> {
        // A panic while the lock was held cannot leave a half-read handle behind: the handle is
        // taken out of the slot while it is read and put back only when it verified.
        let mut slot = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        let ledger = match slot.take() {
            Some(mut ledger) => {
                ledger.refresh()?;
                ledger
            }
            None => Journal::open(
                &self.dir,
                &self.quarantine,
                Arc::clone(&self.storage),
                Access::ReadOnly,
            )?,
        };
        let active = ledger.live().state().active_epoch;
        *slot = Some(ledger);
        Ok(active)
    }

    /// Checks a proposal to the task whose State (before it) is `live`: refused when the kernel
    /// would accept it and the task's epoch is fenced (see the module documentation).
    pub fn admit(
        &self,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        let active_epoch = self.active_epoch().map_err(Refusal::Store)?;
        Self::admit_at(active_epoch, live, event, evidence_set)
    }

    /// [`EpochFence::admit`] against an active epoch read before (once for a whole batch, see
    /// the module documentation).
    pub fn admit_at(
        active_epoch: Int,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        let task_epoch = live.body().leader_epoch;
        // The ledger first: it is one read of the bytes appended since the last check, while a
        // preview runs the kernel's checks; only a fenced task needs both.
        if active_epoch < 1
            || active_epoch == task_epoch
            || live.preview(event, evidence_set) != Variant::Accepted
        {
            return Ok(());
        }
        Err(Refusal::EpochFenced {
            task_epoch,
            active_epoch,
        })
    }
}
