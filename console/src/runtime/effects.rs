//! Obligations → effects: every `adapter_cancel:` obligation an accepted event raised is
//! carried out once through the attempt's adapter, and its outcome recorded in the task's effect
//! ledger `tasks/<task>/effects.jsonl` (`valp-kernel-effect-record.v1`, shaped after the
//! reference kernel store's): fulfilled with the adapter's final observation as proof, or
//! blocked with the reason.
//!
//! - A **process** attempt is cancelled by its supervisor (SIGTERM, SIGKILL after the grace
//!   period); the effect waits for the supervisor's final observation.
//! - An **external** attempt (its folder is `runtime/external/attempts/<H>/`) gets a cancel
//!   request, `control/cancel.json`, and that is all valp can do: it cannot see or stop an
//!   outside runtime. The effect is recorded at once, without waiting: `fulfilled` when the
//!   inbox already holds the attempt's final observation (the proof is that inbox file and the
//!   observation's digest), else `blocked` with the reason "an external runtime was asked to
//!   stop at `<path>`; valp cannot prove it did". A record is final, so a `cancelled` report
//!   that arrives later does not change it; the kernel has already cancelled the attempt, and
//!   the runtime ignores whatever it reports afterwards.
//!
//! The ledger is append-only and hash-chained (`prior_record_digest` → `record_digest`,
//! `ledger_revision` 1, 2, …). [`reconcile`] compares the obligations in the task journal with
//! the ledger and carries out the ones without a record, so a restart (or a console that was
//! closed while a cancel was pending) finishes what was accepted. Replay never runs an adapter:
//! only this path does.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, form_digest, sha256_digest};
use valp_kernel::json::write::Fields;
use valp_store::ControlRoot;
use valp_store::chain::ChainReader;
use valp_store::journal::JOURNAL_FILE;
use valp_store::lock::LockGuard;

use crate::adapter::external;
use crate::adapter::process::{self, SupervisorState};

/// The effect ledger's file name in the task folder.
pub const EFFECTS_FILE: &str = "effects.jsonl";
/// `valp-kernel-effect-record.v1`
pub const EFFECT_SCHEMA: &str = "valp-kernel-effect-record.v1";
const OBLIGATION_PREFIX: &str = "adapter_cancel:";

/// How an obligation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The adapter confirmed (proof: its final observation).
    Fulfilled {
        /// The proof file, relative to the control root.
        proof_ref: String,
        /// Its digest.
        proof_digest: String,
    },
    /// It could not be carried out.
    Blocked {
        /// Why.
        reason: String,
    },
}

/// One record of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectRecord {
    /// [`EFFECT_SCHEMA`]
    pub schema_version: String,
    /// `sha256:` of `{"obligation":…,"schema_version":"valp-kernel-effect-identity.v1"}`.
    pub effect_id: String,
    /// The obligation.
    pub obligation: String,
    /// `fulfilled` or `blocked`.
    pub status: String,
    /// The proof (fulfilled) or empty.
    pub proof_ref: String,
    /// Its digest (fulfilled) or empty.
    pub proof_digest: String,
    /// Why (blocked) or empty.
    pub reason: String,
    /// 1, 2, … in ledger order.
    pub ledger_revision: u64,
    /// The previous record's digest (the empty ledger's digest for the first).
    pub prior_record_digest: String,
    /// `sha256:` of this record without this member.
    pub record_digest: String,
}

/// `status: obligation (reason)`, as every listing shows a record; the text comes from the
/// ledger file, so it is stripped of control sequences.
impl std::fmt::Display for EffectRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::doctor::sanitize::display_text;
        write!(
            f,
            "{}: {}",
            display_text(&self.status),
            display_text(&self.obligation)
        )?;
        if !self.reason.is_empty() {
            write!(f, " ({})", display_text(&self.reason))?;
        }
        Ok(())
    }
}

impl EffectRecord {
    fn write_members(&self, out: &mut Vec<u8>, with_digest: bool) {
        let mut fields = Fields::begin(out);
        fields.str("effect_id", &self.effect_id);
        fields.int("ledger_revision", i128::from(self.ledger_revision));
        fields.str("obligation", &self.obligation);
        fields.str("prior_record_digest", &self.prior_record_digest);
        fields.str("proof_digest", &self.proof_digest);
        fields.str("proof_ref", &self.proof_ref);
        fields.str("reason", &self.reason);
        if with_digest {
            fields.str("record_digest", &self.record_digest);
        }
        fields.str("schema_version", &self.schema_version);
        fields.str("status", &self.status);
        fields.end();
    }

    fn own_digest(&self) -> String {
        form_digest(|out| self.write_members(out, false))
    }
}

impl Canonical for EffectRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_members(out, true);
    }
}

/// Why effects could not be reconciled.
#[derive(Debug, thiserror::Error)]
pub enum EffectError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] valp_store::StoreError),
    /// The ledger is damaged (file, line, rule).
    #[error("{path}:{line}: {rule}")]
    Damaged {
        /// The ledger.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        rule: String,
    },
    /// Writing the ledger failed.
    #[error("{path}: {source}")]
    Io {
        /// The ledger.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The digest the first record chains from.
pub fn empty_ledger_digest() -> String {
    form_digest(|out| {
        let mut fields = Fields::begin(out);
        fields.strs("records", &[]);
        fields.str("schema_version", "valp-kernel-effect-ledger.v1");
        fields.end();
    })
}

/// The effect id of an obligation.
pub fn effect_id(obligation: &str) -> String {
    form_digest(|out| {
        let mut fields = Fields::begin(out);
        fields.str("obligation", obligation);
        fields.str("schema_version", "valp-kernel-effect-identity.v1");
        fields.end();
    })
}

/// Reads and verifies a task's effect ledger (missing = empty).
pub fn read_ledger(path: &Path) -> Result<Vec<EffectRecord>, EffectError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(EffectError::Io {
                path: path.to_owned(),
                source,
            });
        }
    };
    let mut records: Vec<EffectRecord> = Vec::new();
    let damaged = |line: usize, rule: String| EffectError::Damaged {
        path: path.to_owned(),
        line,
        rule,
    };
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        if !line.ends_with('\n') {
            return Err(damaged(number, "incomplete last line".to_owned()));
        }
        let record: EffectRecord = serde_json::from_str(line)
            .map_err(|error| damaged(number, format!("not an effect record: {error}")))?;
        if record.canonical_bytes() != line.as_bytes() {
            return Err(damaged(number, "not canonical JSON".to_owned()));
        }
        let prior = records
            .last()
            .map_or_else(empty_ledger_digest, |last| last.record_digest.clone());
        let checks = [
            (record.schema_version == EFFECT_SCHEMA, "schema_version"),
            (record.ledger_revision == number as u64, "ledger_revision"),
            (record.prior_record_digest == prior, "prior_record_digest"),
            (record.record_digest == record.own_digest(), "record_digest"),
            (
                record.effect_id == effect_id(&record.obligation),
                "effect_id",
            ),
            (
                matches!(record.status.as_str(), "fulfilled" | "blocked"),
                "status",
            ),
        ];
        if let Some((_, member)) = checks.iter().find(|(ok, _)| !ok) {
            return Err(damaged(number, format!("{member} does not verify")));
        }
        records.push(record);
    }
    Ok(records)
}

/// Calls `each` with every accepted entry of the task journal, in order.
fn entries(
    root: &ControlRoot,
    task_id: &str,
    mut each: impl FnMut(valp_kernel::replay::CompactEntry),
) -> Result<(), EffectError> {
    let path = root.layout().task_dir(task_id).join(JOURNAL_FILE);
    let mut reader = ChainReader::open(&path)?;
    while let Some(line) = reader.next_line()? {
        if line.seq == 0 {
            continue;
        }
        let entry = valp_kernel::decode::decode_compact_entry(&line.entry).map_err(|error| {
            EffectError::Damaged {
                path: path.clone(),
                line: usize::try_from(line.seq + 1).unwrap_or(usize::MAX),
                rule: error.to_string(),
            }
        })?;
        each(entry);
    }
    Ok(())
}

/// Every `adapter_cancel:` obligation the task journal's accepted entries raised, in order.
pub fn obligations(root: &ControlRoot, task_id: &str) -> Result<Vec<String>, EffectError> {
    let mut found = Vec::new();
    entries(root, task_id, |entry| {
        found.extend(
            entry
                .result
                .obligations
                .into_iter()
                .filter(|obligation| obligation.starts_with(OBLIGATION_PREFIX)),
        );
    })?;
    Ok(found)
}

/// The content digests of the evidence the task journal's accepted attempt events carry: the
/// observations (and other files) the kernel has already acted on.
pub fn recorded_evidence(
    root: &ControlRoot,
    task_id: &str,
) -> Result<BTreeSet<String>, EffectError> {
    let mut found = BTreeSet::new();
    entries(root, task_id, |entry| {
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
    let relative = process::attempt_ref(&target.attempt_id);
    let dir = root.layout().root().join(&relative);
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
                return match process::terminate_orphan(&dir) {
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
    let path = dir.join(EFFECTS_FILE);
    let _lock = LockGuard::acquire(&dir.join("effects.lock"), Duration::from_secs(30))?;
    let mut records = read_ledger(&path)?;
    let done: BTreeSet<String> = records
        .iter()
        .map(|record| record.obligation.clone())
        .collect();
    let mut added = Vec::new();
    let mut seen = BTreeSet::new();
    for obligation in obligations(root, task_id)? {
        if done.contains(&obligation) || !seen.insert(obligation.clone()) {
            continue;
        }
        let outcome = execute(root, &obligation, patience);
        let (status, proof_ref, proof_digest, reason) = match outcome {
            Outcome::Fulfilled {
                proof_ref,
                proof_digest,
            } => ("fulfilled", proof_ref, proof_digest, String::new()),
            Outcome::Blocked { reason } => ("blocked", String::new(), String::new(), reason),
        };
        let mut record = EffectRecord {
            schema_version: EFFECT_SCHEMA.to_owned(),
            effect_id: effect_id(&obligation),
            obligation,
            status: status.to_owned(),
            proof_ref,
            proof_digest,
            reason,
            ledger_revision: records.len() as u64 + 1,
            prior_record_digest: records
                .last()
                .map_or_else(empty_ledger_digest, |last| last.record_digest.clone()),
            record_digest: String::new(),
        };
        record.record_digest = record.own_digest();
        append(&path, &record)?;
        records.push(record.clone());
        added.push(record);
    }
    Ok(added)
}

fn append(path: &Path, record: &EffectRecord) -> Result<(), EffectError> {
    let io = |source| EffectError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.write_all(&record.canonical_bytes()).map_err(io)?;
    file.sync_data().map_err(io)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn record(obligation: &str, prior: &str, revision: u64) -> EffectRecord {
        let mut record = EffectRecord {
            schema_version: EFFECT_SCHEMA.to_owned(),
            effect_id: effect_id(obligation),
            obligation: obligation.to_owned(),
            status: "blocked".to_owned(),
            proof_ref: String::new(),
            proof_digest: String::new(),
            reason: "test".to_owned(),
            ledger_revision: revision,
            prior_record_digest: prior.to_owned(),
            record_digest: String::new(),
        };
        record.record_digest = record.own_digest();
        record
    }

    fn ledger(records: &[EffectRecord]) -> Vec<u8> {
        records
            .iter()
            .flat_map(Canonical::canonical_bytes)
            .collect()
    }

    #[test]
    fn a_chained_ledger_reads_back_and_every_break_is_named() {
        let first = record("adapter_cancel:a", &empty_ledger_digest(), 1);
        let second = record("adapter_cancel:b", &first.record_digest, 2);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EFFECTS_FILE);
        assert_eq!(read_ledger(&path).unwrap(), vec![], "missing is empty");
        std::fs::write(&path, ledger(&[first.clone(), second.clone()])).unwrap();
        assert_eq!(
            read_ledger(&path).unwrap(),
            vec![first.clone(), second.clone()]
        );

        let damaged = |bytes: Vec<u8>| {
            std::fs::write(&path, bytes).unwrap();
            match read_ledger(&path).unwrap_err() {
                EffectError::Damaged { line, rule, .. } => (line, rule),
                other => panic!("{other}"),
            }
        };
        // Reordered: the chain breaks at line 1.
        assert_eq!(
            damaged(ledger(&[second.clone(), first.clone()])),
            (1, "ledger_revision does not verify".to_owned())
        );
        // A record rewritten without fixing its digest.
        let mut forged = second.clone();
        forged.status = "fulfilled".to_owned();
        assert_eq!(
            damaged(ledger(&[first.clone(), forged])),
            (2, "record_digest does not verify".to_owned())
        );
        // Rewritten with a fresh digest: the next record's chain no longer holds.
        let mut rehashed = first.clone();
        rehashed.reason = "changed".to_owned();
        rehashed.record_digest = rehashed.own_digest();
        assert_eq!(
            damaged(ledger(&[rehashed, second.clone()])),
            (2, "prior_record_digest does not verify".to_owned())
        );
        // A torn last line and a non-canonical line.
        let mut torn = ledger(&[first.clone(), second.clone()]);
        torn.pop();
        assert_eq!(damaged(torn), (2, "incomplete last line".to_owned()));
        let spaced = String::from_utf8(ledger(&[first]))
            .unwrap()
            .replace(':', ": ");
        assert_eq!(
            damaged(spaced.into_bytes()),
            (1, "not canonical JSON".to_owned())
        );
    }

    #[test]
    fn effect_ids_bind_the_obligation() {
        assert_ne!(effect_id("adapter_cancel:a"), effect_id("adapter_cancel:b"));
        assert_eq!(
            effect_id("x"),
            sha256_digest(
                b"{\"obligation\":\"x\",\"schema_version\":\"valp-kernel-effect-identity.v1\"}\n"
            )
        );
    }
}
