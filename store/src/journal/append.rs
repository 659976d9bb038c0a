//! Appending proposals under the lock: one, or a batch made durable with one `fdatasync`.

use std::fs::File;
use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_kernel::live::{AcceptedRecord, Verdict};
use valp_kernel::{ErrorCode, Evidence, Identity};

use crate::chain::encode_line_into;
use crate::clock::Timestamp;
use crate::error::{StoreCode, StoreError};
use crate::head::Anchor;
use crate::io::Storage;
use crate::journal::rejections::{self, Rejection};
use crate::journal::{Access, Journal, LOCK_FILE, REJECTIONS_FILE, Tip, Warning};
use crate::lock::LockGuard;
use crate::machine::{Guard, Machine, Refusal};

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Appended {
    /// The kernel accepted the event; its entry is durable at sequence `seq` (= the new
    /// revision).
    Accepted {
        /// Line number of the entry (1-based, equals the revision it produced).
        seq: u64,
        /// The accepted Result without its State.
        record: AcceptedRecord,
    },
    /// The same event was accepted before with the same input; nothing was written.
    Duplicate {
        /// The earlier acceptance.
        prior_result_id: Identity,
        /// Its result digest.
        prior_result_digest: String,
    },
    /// The kernel refused the event; nothing was written to the journal and the refusal was
    /// logged to `rejections.jsonl`. (A refusal by the store's own rules is logged the same way
    /// and returned as an error: [`StoreError::DoneGate`], [`StoreError::EpochFenced`].)
    Rejected {
        /// The kernel's code.
        error_code: ErrorCode,
        /// Why, in words.
        reason: String,
    },
}

/// The lines of a batch accepted in memory and not yet written: their bytes and the tip after
/// the last of them.
pub(super) struct Batch {
    lines: Vec<u8>,
    first_seq: u64,
    pub(super) tip: Tip,
}

impl Batch {
    /// An empty batch after `tip`, with room for about `entries` lines.
    pub(super) fn after(tip: Tip, entries: usize) -> Self {
        // About a kilobyte per line (a task of 20 work items), so one batch of `valp demo`
        // grows its buffer a few times at most.
        Self::reusing(tip, Vec::with_capacity(entries.saturating_mul(1024)))
    }

    /// An empty batch after `tip` whose lines go to `lines` (emptied first; a buffer kept
    /// from an earlier batch, see [`Batch::into_buffer`]).
    pub(super) fn reusing(tip: Tip, mut lines: Vec<u8>) -> Self {
        lines.clear();
        Self {
            lines,
            first_seq: tip.next_seq,
            tip,
        }
    }

    /// The tip after the batch's last line, and its buffer for the next batch.
    pub(super) fn into_buffer(self) -> (Tip, Vec<u8>) {
        (self.tip, self.lines)
    }

    /// Encodes `entry`, recorded at `recorded_at`, as the next line, chained to the tip.
    pub(super) fn push(&mut self, recorded_at: Timestamp, entry: &impl Canonical) {
        let seq = self.tip.next_seq;
        let start = self.lines.len();
        let digest = encode_line_into(
            &mut self.lines,
            seq,
            Some(&self.tip.digest),
            Some(recorded_at),
            entry,
        );
        self.tip = Tip {
            next_seq: seq + 1,
            digest,
            offset: self.tip.offset + (self.lines.len() - start) as u64,
            recorded_at: Some(recorded_at),
        };
    }

    /// Whether no line was added.
    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Writes the lines at the end of `file` (`path`) with one `write` and one `fdatasync`,
    /// then rewrites the head at the last of them (a failed head rewrite is a warning: the
    /// entries are durable and acknowledged). The error of a failed write or sync is the
    /// append's ([`StoreError::UnknownOrCommitted`]).
    pub(super) fn write_synced(
        &self,
        storage: &dyn Storage,
        file: &mut File,
        path: &Path,
        anchor: &mut Anchor,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), StoreError> {
        crate::io::append_line(storage, file, path, self.first_seq, &self.lines)?;
        // The entries are durable: from here on they are acknowledged whatever happens to the
        // head.
        anchor.advance_after_append(
            storage,
            self.tip.next_seq - 1,
            &self.tip.digest,
            self.tip.offset,
            warnings,
        );
        Ok(())
    }
}

/// What the guard and the kernel made of one proposal.
pub(super) enum Judged {
    /// Accepted at `seq`: the State advanced and the guard observed it.
    Accepted {
        /// Its line's sequence number.
        seq: u64,
        /// The accepted Result without its State.
        record: AcceptedRecord,
    },
    /// Answered without an entry: a duplicate or the kernel's refusal (logged).
    Answered(Appended),
}

impl<M: Machine> Journal<M> {
    /// Proposes one event. See the module documentation for the protocol; it is a batch of one
    /// ([`Journal::append_batch`]).
    pub fn append(
        &mut self,
        event: &M::Event,
        evidence_set: &[Evidence],
    ) -> Result<Appended, StoreError> {
        self.append_batch([(event, evidence_set)])?
            .pop()
            .ok_or_else(|| StoreError::Invalid("an append of one proposal answered none".into()))
    }

    /// Proposes events in order under one lock and makes every accepted entry durable with one
    /// `write` and one `fdatasync` (and one head rewrite) at the end: the bulk writes of
    /// `valp demo`. Each proposal is answered as [`Journal::append`] answers it, against the
    /// State the earlier ones left; refusals are logged to `rejections.jsonl` as they come.
    ///
    /// **Durability.** Nothing of a batch is acknowledged before this returns `Ok`; then all of
    /// its accepted entries are durable. A crash (or a failed write) in between leaves on disk
    /// a prefix of the batch's bytes after the last acknowledged line: its complete lines are
    /// entries the kernel accepted, chained to what precedes them, and are kept by the next
    /// open; a torn last line is quarantined and cut as after a single append; the head still
    /// names an acknowledged line or a later one. So a crash loses at most the unacknowledged
    /// batch in flight, never an acknowledged entry, and never leaves a line that was not
    /// accepted. A failed write poisons the handle like a failed single append.
    ///
    /// A refusal by the store's own rules (the Done gate, the epoch fence) ends the batch: the
    /// entries accepted before it are written and synced, then the refusal is returned
    /// ([`Journal::len`] says how far the batch got).
    pub fn append_batch<'a>(
        &mut self,
        proposals: impl IntoIterator<Item = (&'a M::Event, &'a [Evidence])>,
    ) -> Result<Vec<Appended>, StoreError>
    where
        M::Event: 'a,
    {
        ensure_writable(&self.path, self.access, self.poisoned.as_deref())?;
        let lock = LockGuard::acquire(&self.dir.join(LOCK_FILE), self.lock_timeout)?;
        self.check_not_shortened()?;
        self.follow(self.reader()?, Some(&lock))?;
        self.guard.start_batch()?;
        let answers = self.propose_all(proposals);
        self.guard.end_batch();
        drop(lock);
        answers
    }

    /// The body of [`Journal::append_batch`] under the lock: judges every proposal, then
    /// writes what was accepted.
    fn propose_all<'a>(
        &mut self,
        proposals: impl IntoIterator<Item = (&'a M::Event, &'a [Evidence])>,
    ) -> Result<Vec<Appended>, StoreError>
    where
        M::Event: 'a,
    {
        let proposals = proposals.into_iter();
        let mut batch = Batch::after(self.tip.clone(), proposals.size_hint().0);
        let mut answers = Vec::with_capacity(proposals.size_hint().0);
        for (event, evidence_set) in proposals {
            match self.propose(event, evidence_set, &mut batch) {
                Ok(appended) => answers.push(appended),
                Err(refusal) => {
                    self.write(batch)?;
                    return Err(refusal);
                }
            }
        }
        self.write(batch)?;
        Ok(answers)
    }

    /// Judges one proposal and, when accepted, adds its line to `batch`.
    fn propose(
        &mut self,
        event: &M::Event,
        evidence_set: &[Evidence],
        batch: &mut Batch,
    ) -> Result<Appended, StoreError> {
        Ok(match self.judge(event, evidence_set, batch.tip.next_seq)? {
            Judged::Accepted { seq, record } => {
                let entry = M::entry(event, evidence_set, record.clone());
                batch.push(self.clock.now(), &entry);
                Appended::Accepted { seq, record }
            }
            Judged::Answered(answer) => answer,
        })
    }

    /// Judges one proposal (the guard, then the kernel) as the entry at `seq` if accepted.
    /// A refusal by the guard is logged and returned as the error.
    pub(super) fn judge(
        &mut self,
        event: &M::Event,
        evidence_set: &[Evidence],
        seq: u64,
    ) -> Result<Judged, StoreError> {
        self.judge_with(event, evidence_set, seq, |journal| {
            Ok(journal.live.apply(event, evidence_set))
        })
    }

    /// [`Journal::judge`] with the kernel's part given: `apply` applies the proposal to the
    /// handle's State (as [`Machine::apply`] does) once the guard admitted it.
    pub(super) fn judge_with(
        &mut self,
        event: &M::Event,
        evidence_set: &[Evidence],
        seq: u64,
        apply: impl FnOnce(&mut Self) -> Result<Verdict, StoreError>,
    ) -> Result<Judged, StoreError> {
        let revision = self.live.revision();
        if let Err(refusal) = self.guard.admit(&self.live, event, evidence_set) {
            // A refusal by the store's own rules writes nothing to the journal and is logged
            // like the kernel's refusals; an error while checking is returned as it is.
            let (code, reason, error) = match refusal {
                Refusal::Store(error) => return Err(error),
                Refusal::DoneGate(reasons) => (
                    StoreCode::DoneGate,
                    format!("refused by the Done gate: {}", reasons.join("; ")),
                    StoreError::DoneGate {
                        path: self.path.clone(),
                        reasons,
                    },
                ),
                Refusal::EpochFenced {
                    task_epoch,
                    active_epoch,
                } => (
                    StoreCode::EpochFenced,
                    format!(
                        "the task is bound to Leader epoch {task_epoch}, the active epoch is \
                         {active_epoch} (hand the task over with `valp task handoff`)"
                    ),
                    StoreError::EpochFenced {
                        path: self.path.clone(),
                        task_epoch,
                        active_epoch,
                    },
                ),
            };
            rejections::record(
                &self.dir.join(REJECTIONS_FILE),
                &Rejection {
                    revision,
                    event: event.clone(),
                    evidence_set: evidence_set.to_vec(),
                    error_code: code.as_str(),
                    reason,
                },
            )?;
            return Err(error);
        }
        Ok(match apply(self)? {
            Verdict::Accepted(record) => {
                self.guard.observe(seq, event, evidence_set);
                Judged::Accepted { seq, record }
            }
            Verdict::NoOp {
                prior_result_id,
                prior_result_digest,
                ..
            } => Judged::Answered(Appended::Duplicate {
                prior_result_id,
                prior_result_digest,
            }),
            Verdict::Rejected {
                error_code, prior, ..
            } => {
                let reason = explain(
                    error_code,
                    M::event_id(event),
                    M::expected_revision(event),
                    revision,
                    prior.as_ref().map(|(id, _)| id),
                );
                rejections::record(
                    &self.dir.join(REJECTIONS_FILE),
                    &Rejection {
                        revision,
                        event: event.clone(),
                        evidence_set: evidence_set.to_vec(),
                        error_code: error_code.as_str(),
                        reason: reason.clone(),
                    },
                )?;
                Judged::Answered(Appended::Rejected { error_code, reason })
            }
        })
    }

    /// Writes and syncs the lines of a batch (one `write`, one `fdatasync`), then rewrites the
    /// head at its last line. Any failure poisons the handle: the kernel already advanced the
    /// in-memory State.
    fn write(&mut self, batch: Batch) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut file = self.take_append_file()?;
        let written = batch.write_synced(
            self.storage.as_ref(),
            &mut file,
            &self.path,
            &mut self.anchor,
            &mut self.warnings,
        );
        if let Err(error) = written {
            self.poisoned = Some(error.to_string());
            return Err(error);
        }
        self.appender = Some(file);
        self.tip = batch.tip;
        M::settled(self);
        Ok(())
    }

    /// Refuses to append when the file is shorter than what this handle verified: it was cut
    /// under us, and a line appended now would not chain to what is left.
    pub(super) fn check_not_shortened(&mut self) -> Result<(), StoreError> {
        let checked = self
            .anchor
            .check_not_shortened(self.tip.offset, self.tip.next_seq - 1);
        if let Err(error) = &checked {
            self.poisoned = Some(error.to_string());
        }
        checked
    }
}

/// Refuses an append through a handle of the chained file `path` that was opened read-only, or
/// that an earlier failed write poisoned (`poisoned`: that failure).
pub(crate) fn ensure_writable(
    path: &std::path::Path,
    access: Access,
    poisoned: Option<&str>,
) -> Result<(), StoreError> {
    if access != Access::Write {
        return Err(StoreError::Invalid(format!(
            "{}: opened read-only; open it for writing to append",
            path.display()
        )));
    }
    match poisoned {
        Some(cause) => Err(StoreError::Poisoned {
            path: path.to_owned(),
            cause: cause.to_owned(),
        }),
        None => Ok(()),
    }
}

/// A sentence for a refusal. The kernel returns only a code; the one case the store can name
/// precisely is the compare-and-swap on the revision.
fn explain(
    code: ErrorCode,
    event_id: &Identity,
    expected: i128,
    revision: i128,
    prior: Option<&Identity>,
) -> String {
    match code {
        ErrorCode::IdempotencyConflict => format!(
            "event {} was already accepted with different content (as {})",
            event_id.value(),
            prior.map_or("an earlier result", Identity::value)
        ),
        ErrorCode::StateConflict if expected < revision => {
            format!("stale expected_revision {expected}: the journal is at revision {revision}")
        }
        ErrorCode::StateConflict if expected > revision => format!(
            "expected_revision {expected} is ahead of the journal, which is at revision {revision}"
        ),
        ErrorCode::StateConflict => {
            "the kernel refused the event in the current state (VALP-E-STATE-CONFLICT)".to_owned()
        }
        ErrorCode::UnknownEnumValue => "a value outside a closed vocabulary".to_owned(),
        ErrorCode::LeaderEpoch => "the event's Leader epoch is not the active one".to_owned(),
        ErrorCode::PermissionDenied => "the principal may not do this".to_owned(),
        ErrorCode::LeaderRotating => {
            "the Leader is rotating; the current epoch is frozen".to_owned()
        }
    }
}
