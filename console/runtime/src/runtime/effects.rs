//! Obligations → effects: every `adapter_cancel:` obligation an accepted event raised is
//! carried out once through the attempt's adapter, and its outcome recorded in the task's effect
//! ledger (the store's [`valp_store::effects`], `tasks/<task>/effect-ledger.jsonl`,
//! `valp-kernel-effect-record.v1` records): fulfilled with the adapter's final observation as
//! proof, or blocked with the reason.
//!
//! - A **process** attempt is cancelled by its supervisor (SIGTERM, SIGKILL after the grace
//!   period); the effect waits for the supervisor's final observation.
//! - A **tmux** attempt is cancelled the same way by its supervisor (C-c, the agent profile's
//!   exit keys, then SIGKILL to the pane's process group), confirmed by the pane being gone.
//! - An **external** attempt (its folder is `runtime/external/attempts/<H>/`) gets a cancel
//!   request, `control/cancel.json`, and that is all valp can do: it cannot see or stop an
//!   outside runtime. The effect is recorded at once, without waiting: `fulfilled` when the
//!   inbox already holds the attempt's final observation (the proof is that inbox file and the
//!   observation's digest), else `blocked` with the reason "an external runtime was asked to
//!   stop at `<path>`; valp cannot prove it did". A record is final, so a `cancelled` report
//!   that arrives later does not change it; the kernel has already cancelled the attempt, and
//!   the runtime ignores whatever it reports afterwards.
//!
//! This module is the policy (which adapter to ask, how long to wait); the ledger's format,
//! lock, torn-tail repair and verification are the store's. [`reconcile`] compares the
//! obligations in the task journal with the ledger and carries out the ones without a record,
//! so a restart (or a console that was closed while a cancel was pending, or a crash in the
//! middle of an append, whose torn line the store quarantines) finishes what was accepted.
//! Reconcilers of one task take turns (`effects.lock`, held while adapters are asked), so an
//! adapter is not asked twice by two of them; the store refuses a second record for an
//! obligation in any case. Replay never runs an adapter: only this path does.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_store::effects::{EffectAppended, EffectLedger};
use valp_store::lock::LockGuard;
use valp_store::{Access, ControlRoot};

pub use valp_store::effects::{EffectRecord, Outcome};

use crate::adapter::process::{self, SupervisorState};
use crate::adapter::{external, tmux};

/// The reconcilers' lock file in the task folder: held while obligations are carried out.
const RECONCILE_LOCK: &str = "effects.lock";
const OBLIGATION_PREFIX: &str = valp_kernel::reduce::ADAPTER_CANCEL_PREFIX;

/// Effects fail only as the store does (a damaged ledger or journal, a lock, an I/O error).
pub type EffectError = valp_store::StoreError;

/// A record as every listing shows it: `status: obligation (reason)`; the text comes from the
/// ledger file, so it is stripped of control sequences.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(pub &'a EffectRecord);

impl std::fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use valp_view::sanitize::display_text;
        let record = self.0;
        write!(
            f,
            "{}: {}",
            display_text(&record.status),
            display_text(&record.obligation)
        )?;
        if !record.reason.is_empty() {
            write!(f, " ({})", display_text(&record.reason))?;
        }
        Ok(())
    }
}

/// The records of a task's effect ledger, verified (read-only: a torn tail is left for the
/// next writer).
pub fn read_ledger(root: &ControlRoot, task_id: &str) -> Result<Vec<EffectRecord>, EffectError> {
    Ok(EffectLedger::of_task(root, task_id, Access::ReadOnly)?
        .records()
        .to_vec())
}

/// The content digests of the evidence the task journal's accepted attempt events carry: the
/// observations (and other files) the kernel has already acted on.
pub fn recorded_evidence(
    root: &ControlRoot,
    task_id: &str,
) -> Result<BTreeSet<String>, EffectError> {
    let mut found = BTreeSet::new();
    valp_store::effects::journal_entries(&root.layout().task_dir(task_id), |entry| {
        if entry.event.attempt_id.is_some() {
            found.extend(
                entry
                    .evidence_set
                    .into_iter()
                    .map(|evidence| evidence.content_digest),
            );
        }
    })?;
    Ok(found)
}

/// The attempt an `adapter_cancel:` obligation names.
#[derive(Debug, Deserialize)]
struct Target {
    attempt_id: String,
    task_id: String,
}

/// Carries out `obligation` through the attempt's adapter: for a process attempt, waiting at
/// most `patience` for the supervisor to confirm; for an external one, asking once (see the
/// module documentation).
pub fn execute(root: &ControlRoot, obligation: &str, patience: Duration) -> Outcome {
    let Some(target) = obligation
        .strip_prefix(OBLIGATION_PREFIX)
        .and_then(|json| serde_json::from_str::<Target>(json).ok())
    else {
        return Outcome::Blocked {
            reason: "the obligation does not name an attempt".to_owned(),
        };
    };
    let external_ref = external::attempt_ref(&target.attempt_id);
    let external_dir = root.layout().root().join(&external_ref);
    if external::launched(&external_dir) {
        return cancel_external(root, &target, &external_dir, &external_ref);
    }
    // A supervised attempt's folder is the tmux adapter's when it holds a request there.
    let tmux_ref = tmux::attempt_ref(&target.attempt_id);
    let tmux_dir = root.layout().root().join(&tmux_ref);
    let on_tmux = tmux_dir.join(process::REQUEST_FILE).is_file();
    let (relative, dir) = if on_tmux {
        (tmux_ref, tmux_dir)
    } else {
        let relative = process::attempt_ref(&target.attempt_id);
        let dir = root.layout().root().join(&relative);
        (relative, dir)
    };
    let deadline = Instant::now() + patience;
    let mut asked = false;
    loop {
        match process::supervisor_state(&dir) {
            SupervisorState::Finished { .. } => return fulfilled(&dir, &relative),
            SupervisorState::NotLaunched => {
                return Outcome::Blocked {
                    reason: "the attempt never reached its adapter".to_owned(),
                };
            }
            SupervisorState::Dead { .. } => {
                let terminated = if on_tmux {
                    tmux::terminate_orphan(&dir)
                } else {
                    process::terminate_orphan(&dir)
                };
                return match terminated {
                    Ok(_) if on_tmux => Outcome::Blocked {
                        reason: "the supervisor had died; the agent's window was closed".to_owned(),
                    },
                    Ok(_) => Outcome::Blocked {
                        reason: "the supervisor had died; its process group was killed".to_owned(),
                    },
                    Err(error) => Outcome::Blocked {
                        reason: format!("the supervisor had died: {error}"),
                    },
                };
            }
            SupervisorState::Unreadable(reason) => return Outcome::Blocked { reason },
            SupervisorState::Running { .. } => {
                if !asked {
                    if let Err(error) = process::request_cancel(&dir, "cancelled by the Leader") {
                        return Outcome::Blocked {
                            reason: error.to_string(),
                        };
                    }
                    asked = true;
                }
                if Instant::now() >= deadline {
                    return Outcome::Blocked {
                        reason: format!(
                            "the supervisor did not confirm within {} ms",
                            patience.as_millis()
                        ),
                    };
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// Writes the external attempt's cancel request, then looks once for its final observation.
fn cancel_external(root: &ControlRoot, target: &Target, dir: &Path, relative: &str) -> Outcome {
    let request = match external::read_request(dir) {
        Ok(request) => request,
        Err(error) => {
            return Outcome::Blocked {
                reason: error.to_string(),
            };
        }
    };
    if let Err(error) = external::request_cancel(dir, "cancelled by the Leader") {
        return Outcome::Blocked {
            reason: error.to_string(),
        };
    }
    let recorded = match recorded_evidence(root, &target.task_id) {
        Ok(recorded) => recorded,
        Err(error) => {
            return Outcome::Blocked {
                reason: error.to_string(),
            };
        }
    };
    let mut inbox = external::Inbox::new(root.layout().root(), &target.task_id);
    inbox.refresh();
    match inbox.classify(&request, &recorded).final_observation() {
        Some((location, observation)) => Outcome::Fulfilled {
            proof_ref: location.file.to_string_lossy().into_owned(),
            proof_digest: sha256_digest(&observation.canonical_bytes()),
        },
        None => Outcome::Blocked {
            reason: format!(
                "an external runtime was asked to stop at {relative}/{}; valp cannot prove it \
                 did",
                external::CANCEL_FILE
            ),
        },
    }
}

fn fulfilled(dir: &Path, relative: &str) -> Outcome {
    match process::read_observations(dir) {
        Ok(read) => match read.observations.last() {
            Some(last) => Outcome::Fulfilled {
                proof_ref: format!("{relative}/{}", process::observation_file(last.sequence)),
                proof_digest: sha256_digest(&last.canonical_bytes()),
            },
            None => Outcome::Blocked {
                reason: "the attempt folder has no observation".to_owned(),
            },
        },
        Err(error) => Outcome::Blocked {
            reason: error.to_string(),
        },
    }
}

/// Carries out every obligation of the task that has no effect record yet and records it.
/// Returns the new records.
pub fn reconcile(
    root: &ControlRoot,
    task_id: &str,
    patience: Duration,
) -> Result<Vec<EffectRecord>, EffectError> {
    let dir = root.layout().task_dir(task_id);
    let _turn = LockGuard::acquire(&dir.join(RECONCILE_LOCK), Duration::from_secs(30))?;
    let mut ledger = EffectLedger::of_task(root, task_id, Access::Write)?;
    let mut added = Vec::new();
    let mut seen = BTreeSet::new();
    for obligation in valp_store::effects::obligations(&dir)? {
        if ledger.record_of(&obligation).is_some() || !seen.insert(obligation.clone()) {
            continue;
        }
        let outcome = execute(root, &obligation, patience);
        // Another writer that does not take turns (none in valp; the store allows it) may have
        // recorded it meanwhile: its record stands.
        if let EffectAppended::Recorded(record) = ledger.append(&obligation, &outcome)? {
            added.push(record);
        }
    }
    Ok(added)
}
