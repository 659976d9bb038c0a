//! `valp audit`'s gates over a task of the control root (beside [`super::audit_folder`] for
//! reference-layout folders), each pass, fail or skip with its reason:
//!
//! - `journal_integrity`: the journal opens and verifies (chain, head anchor, replay by the
//!   kernel, the Done gate of every recorded `recording_completed`); a failure skips the rest;
//! - `done_matrix`: a `done` task's Done passed the gate of its frozen policy (named with its
//!   `schema_version`) when it was verified just now; a task not `done` skips it, as does a Done
//!   recorded without a policy (the reference's rule);
//! - `correction_cycle`: skipped without a correction signal in the journal
//!   ([`valp_kernel::done::correction::signal`]); otherwise the seed 003 audit rule
//!   ([`correction::judge`]) over the task folder's `correction-cycle.json`, its refs looked up
//!   in the task folder;
//! - `evidence`: every evidence the journal binds is in the evidence store and matches its
//!   digest.

use std::collections::BTreeMap;
use std::path::Path;

use valp_kernel::canonical::decode_canonical;
use valp_kernel::done::decode_done_policy;
use valp_kernel::live::LiveState;
use valp_kernel::model::TaskStatus;
use valp_store::journal::{JOURNAL_FILE, read_entries};
use valp_store::{Access, ControlRoot, Journal, StoreError};

use super::correction::{self, FILE_NAME, Verdict};
use super::{FolderAudit, GateResult};

fn gate(
    gate: &'static str,
    verdict: Verdict,
    category: &'static str,
    detail: String,
) -> GateResult {
    GateResult {
        gate,
        verdict,
        category,
        detail,
    }
}

/// Audits the task `task_id` of `root`.
pub fn audit_task(root: &ControlRoot, task_id: &str) -> FolderAudit {
    audit_task_dir(root, &root.layout().task_dir(task_id))
}

/// Audits the task whose folder is `dir` (as [`ControlRoot::task_dirs`] lists them).
pub fn audit_task_dir(root: &ControlRoot, dir: &Path) -> FolderAudit {
    let dir = dir.to_path_buf();
    let journal = match root.open_task_dir(&dir, Access::ReadOnly) {
        Ok(journal) => journal,
        Err(error) => {
            let skipped = |name| {
                gate(
                    name,
                    Verdict::Skip,
                    "journal_unverified",
                    "the journal does not verify".to_owned(),
                )
            };
            return FolderAudit {
                dir,
                gates: vec![
                    skipped("done_matrix"),
                    skipped("correction_cycle"),
                    gate(
                        "journal_integrity",
                        Verdict::Fail,
                        "journal_corrupt",
                        error.to_string(),
                    ),
                    skipped("evidence"),
                ],
            };
        }
    };
    let gates = vec![
        done_matrix(root, &journal),
        correction_cycle(&journal),
        gate(
            "journal_integrity",
            Verdict::Pass,
            "verified",
            format!(
                "{} entries verified (chain, replay, Done gate)",
                journal.len()
            ),
        ),
        evidence(root, &journal),
    ];
    FolderAudit {
        dir: journal.dir().to_path_buf(),
        gates,
    }
}

fn done_matrix(root: &ControlRoot, journal: &Journal) -> GateResult {
    let body = journal.live().body();
    if body.status.known() != Some(TaskStatus::Done) {
        return gate(
            "done_matrix",
            Verdict::Skip,
            "not_done",
            format!("the task is {}", body.status.as_str()),
        );
    }
    let done = journal.guard().done();
    if let Some(revision) = done.ungated_done() {
        return gate(
            "done_matrix",
            Verdict::Skip,
            "reference_rule",
            format!("done at revision {revision} without a frozen Done policy (reference rule)"),
        );
    }
    let version = done
        .frozen_policy()
        .first()
        .and_then(|policy| root.blobs().get(&policy.content_digest).ok())
        .and_then(|bytes| decode_canonical(&bytes).ok())
        .and_then(|value| decode_done_policy(&value).ok())
        .map_or("unknown", |policy| {
            if policy.correction_cycle {
                "v3"
            } else if policy.dimensions.is_some() {
                "v2"
            } else {
                "v1"
            }
        });
    gate(
        "done_matrix",
        Verdict::Pass,
        "gated",
        format!("recording_completed passed the Done gate of its frozen policy ({version})"),
    )
}

fn correction_cycle(journal: &Journal) -> GateResult {
    let signals = journal.guard().done().correction_signals();
    let dir = journal.dir();
    let cycle = std::fs::read(dir.join(FILE_NAME))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    let finding = correction::judge(
        &correction::Inputs {
            signals,
            declared: false,
            cycle: cycle.as_ref(),
        },
        &|reference| dir.join(reference.trim()).exists(),
    );
    gate(
        "correction_cycle",
        finding.reason.verdict(),
        finding.reason.as_str(),
        finding.detail,
    )
}

fn evidence(root: &ControlRoot, journal: &Journal) -> GateResult {
    let mut bound = BTreeMap::new();
    let read = read_entries::<LiveState>(&journal.dir().join(JOURNAL_FILE), |recorded| {
        for evidence in recorded.entry.evidence_set {
            bound.insert(
                evidence.evidence_id.value().to_owned(),
                evidence.content_digest,
            );
        }
    });
    if let Err(error) = read {
        return gate(
            "evidence",
            Verdict::Fail,
            "journal_unreadable",
            error.to_string(),
        );
    }
    if bound.is_empty() {
        return gate(
            "evidence",
            Verdict::Skip,
            "no_evidence",
            "the journal binds no evidence".to_owned(),
        );
    }
    let blobs = root.blobs();
    let mut missing = Vec::new();
    let mut damaged = Vec::new();
    for (id, digest) in &bound {
        match blobs.get(digest) {
            Ok(_) => {}
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                missing.push(id.as_str());
            }
            Err(_) => damaged.push(id.as_str()),
        }
    }
    if !missing.is_empty() || !damaged.is_empty() {
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("missing: {}", missing.join(", ")));
        }
        if !damaged.is_empty() {
            parts.push(format!("not matching their digest: {}", damaged.join(", ")));
        }
        return gate(
            "evidence",
            Verdict::Fail,
            "missing_evidence",
            parts.join("; "),
        );
    }
    gate(
        "evidence",
        Verdict::Pass,
        "present",
        format!(
            "all {} evidence the journal binds are stored and match their digests",
            bound.len()
        ),
    )
}
