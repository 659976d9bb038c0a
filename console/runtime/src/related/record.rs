//! Foreign observations kept in a task: a foreign file's exact bytes as evidence, a descriptor
//! of what was read from it, and one `valp-store-foreign-observation.v1` record in the task's
//! foreign-observation journal ([`valp_store::foreign`]).
//!
//! [`keep`] is the one way both related-loop readers record: it stores the file's bytes in the
//! control root's blob store under `foreign-<source>-<16 hex>` (the same content-addressed
//! evidence every proposer uses, [`crate::evidence`]), stores the descriptor (canonical JSON
//! plus LF) as a blob, and appends the record (idempotent per observation id). Nothing is
//! proposed to the kernel: a foreign pass is never a `review_passed` and never Done.
//!
//! [`record_agentops`] maps an AgentOps report onto records for the task (and work item) the
//! caller named, never a guessed one: one `review` record per verdict (Evidence = the verdict
//! file, Claim = "subject `<manifest digest>` satisfies acceptance `<digest>`" with the
//! outcome's claim result, Review = its verdict), rejected files are not recorded.
//! [`record_agentops_by_plan`] places each verdict by the task plan's `[related]` mapping
//! instead ([`crate::plan::related`]); a verdict it does not place is returned, not recorded.

use valp_kernel::{Evidence, Identity, IdentityKind};
use valp_store::foreign::{
    ClaimResult, ForeignJournal, ForeignKind, ForeignRecord, ReviewVerdict, Source,
};
use valp_store::{Access, ControlRoot, StoreError};

use super::agentops::{self, Independence, Ingested, Outcome, Report};
use crate::evidence;
use crate::plan::related::{Related, Target};

/// Why foreign observations could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The store refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A work item the caller named is not one of the task's.
    #[error("task {task} has no work item {item:?} (the mapping is never guessed)")]
    UnknownWorkItem {
        /// The task.
        task: String,
        /// The item named.
        item: String,
    },
    /// An id could not be made an identity.
    #[error("{0:?} is not an identity")]
    Identity(String),
}

/// One foreign observation to keep.
#[derive(Debug, Clone)]
pub struct Observation<'a> {
    /// The foreign system.
    pub source: Source,
    /// What was observed.
    pub kind: ForeignKind,
    /// `<source>:<foreign id>`, unique in the task.
    pub observation_id: String,
    /// The work item it speaks for (checked to exist), `None` for the task.
    pub work_item_id: Option<String>,
    /// The foreign file's exact bytes.
    pub bytes: &'a [u8],
    /// What was read from it.
    pub descriptor: serde_json::Value,
    /// The claim and its review.
    pub claim: Option<(ClaimResult, ReviewVerdict)>,
    /// Short description (sanitized and cut here).
    pub summary: String,
}

/// What [`keep`] did.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The record, as in the journal.
    pub record: ForeignRecord,
    /// The foreign file's evidence.
    pub evidence: Evidence,
    /// `false` when the same record was already there (nothing written).
    pub written: bool,
}

/// The work items of `task` (refusing a missing task).
pub fn work_items(root: &ControlRoot, task: &str) -> Result<Vec<String>, RecordError> {
    let journal = root.open_task(task, Access::ReadOnly)?;
    Ok(journal
        .live()
        .body()
        .work_items
        .iter()
        .map(|item| item.work_item_id.value().to_owned())
        .collect())
}

/// Keeps one foreign observation in `journal` (see the module documentation).
pub fn keep(
    root: &ControlRoot,
    journal: &mut ForeignJournal,
    observation: Observation<'_>,
) -> Result<Kept, RecordError> {
    let prefix = format!("foreign-{}-", observation.source.as_str());
    let evidence = evidence::store(root, &prefix, observation.bytes, |kind, value| {
        identity(kind, &value)
    })?;
    let mut descriptor = serde_json::to_vec(&observation.descriptor)
        .map_err(|error| StoreError::Invalid(format!("descriptor: {error}")))?;
    descriptor.push(b'\n');
    let descriptor = root.blobs().put(&descriptor)?;
    let summary: String = valp_view::sanitize::display_line(&observation.summary)
        .chars()
        .filter(|c| !c.is_control())
        .take(valp_store::foreign::MAX_SUMMARY_CHARS)
        .collect();
    let record = ForeignRecord {
        observation_id: observation.observation_id,
        source: observation.source,
        kind: observation.kind,
        work_item_id: observation.work_item_id,
        evidence_id: evidence.evidence_id.value().to_owned(),
        content_digest: evidence.content_digest.clone(),
        descriptor_digest: descriptor.digest,
        claim: observation.claim,
        summary,
    };
    let written = journal.append(&record)?;
    Ok(Kept {
        record,
        evidence,
        written,
    })
}

fn identity(kind: IdentityKind, value: &str) -> Result<Identity, RecordError> {
    Identity::new(kind, value).map_err(|_| RecordError::Identity(value.to_owned()))
}

/// The foreign claim result and review verdict of an AgentOps outcome (the one mapping,
/// [`agentops::map_outcome`], in the store's words).
pub const fn agentops_claim(outcome: Outcome) -> (ClaimResult, ReviewVerdict) {
    let mapped = agentops::map_outcome(outcome);
    (
        match mapped.claim {
            agentops::ClaimResult::Pass => ClaimResult::Pass,
            agentops::ClaimResult::Fail => ClaimResult::Fail,
            agentops::ClaimResult::Unknown => ClaimResult::Unknown,
        },
        match mapped.review {
            agentops::ReviewVerdict::Pass => ReviewVerdict::Pass,
            agentops::ReviewVerdict::Fail => ReviewVerdict::Fail,
            agentops::ReviewVerdict::Blocked => ReviewVerdict::Blocked,
        },
    )
}

/// Records every verdict of `report` for `task` (and `work_item`, when named; it must be one
/// of the task's) in the task's foreign-observation journal. Rejected files are not recorded.
pub fn record_agentops(
    root: &ControlRoot,
    task: &str,
    work_item: Option<&str>,
    report: &Report,
) -> Result<Vec<Kept>, RecordError> {
    let placed = report
        .verdicts
        .iter()
        .map(|ingested| (ingested, work_item.map(str::to_owned)))
        .collect();
    record_placed(root, task, placed)
}

/// A verdict the plan's mapping did not place, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    /// The verdict file.
    pub file: String,
    /// Unmapped or ambiguous.
    pub target: Target,
}

/// Records the verdicts of `report` that the plan's `[related]` mapping places (on the task or
/// one of its work items); the others are returned, not recorded: nothing is guessed.
pub fn record_agentops_by_plan(
    root: &ControlRoot,
    task: &str,
    related: &Related,
    report: &Report,
) -> Result<(Vec<Kept>, Vec<Unplaced>), RecordError> {
    let mut placed = Vec::new();
    let mut unplaced = Vec::new();
    for ingested in &report.verdicts {
        let verdict = &ingested.verdict;
        match related.target(&verdict.artifact_digest, &verdict.subject_manifest_digest) {
            Target::Mapped(item) => placed.push((ingested, item)),
            target => unplaced.push(Unplaced {
                file: ingested.file.clone(),
                target,
            }),
        }
    }
    Ok((record_placed(root, task, placed)?, unplaced))
}

/// Records each verdict for its work item (checked to be one of the task's) or the task.
fn record_placed(
    root: &ControlRoot,
    task: &str,
    placed: Vec<(&Ingested, Option<String>)>,
) -> Result<Vec<Kept>, RecordError> {
    if placed.iter().any(|(_, item)| item.is_some()) {
        let known = work_items(root, task)?;
        if let Some(item) = placed
            .iter()
            .filter_map(|(_, item)| item.as_ref())
            .find(|item| !known.contains(item))
        {
            return Err(RecordError::UnknownWorkItem {
                task: task.to_owned(),
                item: item.clone(),
            });
        }
    }
    let mut journal = ForeignJournal::of_task(root, task, Access::Write)?;
    placed
        .into_iter()
        .map(|(ingested, work_item)| {
            keep(
                root,
                &mut journal,
                Observation {
                    source: Source::Agentops,
                    kind: ForeignKind::Review,
                    observation_id: format!(
                        "agentops:verdict:{}",
                        ingested.verdict.artifact_digest
                    ),
                    work_item_id: work_item,
                    bytes: &ingested.bytes,
                    descriptor: agentops_descriptor(ingested),
                    claim: Some(agentops_claim(ingested.verdict.verdict)),
                    summary: format!(
                        "agentops {} {} on subject {}",
                        ingested.verdict.schema_version,
                        match ingested.verdict.verdict {
                            Outcome::Pass => "PASS",
                            Outcome::Fail => "FAIL",
                            Outcome::NotProven => "NOT_PROVEN",
                        },
                        &ingested.verdict.subject_manifest_digest[..16]
                    ),
                },
            )
        })
        .collect()
}

/// `valp-foreign-agentops-review.v1`: the Claim and the Review read from one verdict, with its
/// foreign digests tagged by scheme, its levels and independence as declared.
fn agentops_descriptor(ingested: &Ingested) -> serde_json::Value {
    let verdict = &ingested.verdict;
    let (claim, review) = agentops_claim(verdict.verdict);
    let outcome = |outcome: Outcome| match outcome {
        Outcome::Pass => "pass",
        Outcome::Fail => "fail",
        Outcome::NotProven => "unknown",
    };
    let independence = match &ingested.independence {
        Independence::Declared { .. } => serde_json::json!({"declared": true, "why": null}),
        Independence::NotEstablished(why) => serde_json::json!({"declared": false, "why": why}),
    };
    serde_json::json!({
        "schema_version": "valp-foreign-agentops-review.v1",
        "origin": {"system": "agentops", "format": verdict.schema_version, "file": ingested.file},
        "v3": verdict.v3.as_ref().map(|v3| serde_json::json!({
            "invocation_id": v3.invocation_id,
            "judgment_id": v3.judgment_id,
            "intent_ref": v3.intent_ref,
            "proof_epoch": v3.proof_identity.epoch,
            "contract_digest": format!("agentops-c14n-nolf:{}", v3.proof_identity.contract_digest),
            "before_manifest_digest": format!("agentops-c14n-nolf:{}", v3.before_manifest_digest),
            "scope_index_digest": format!("agentops-c14n-nolf:{}", v3.scope_index_digest),
            "effect_receipt_digest": format!("agentops-c14n-nolf:{}", v3.effect_receipt_digest),
            "excluded": v3.excluded,
        })),
        "artifact_digest": format!("agentops-c14n-nolf:{}", verdict.artifact_digest),
        "levels": ingested.levels.names(),
        "claim": {
            "subject": format!("agentops-c14n-nolf:{}", verdict.subject_manifest_digest),
            "acceptance": format!("file-sha256:{}", verdict.acceptance_digest),
            "claimant": verdict.author_context_id,
            "result": claim.as_str(),
            "criteria": verdict.criteria.iter().map(|criterion| serde_json::json!({
                "id": criterion.id,
                "result": outcome(criterion.result),
                "reason": criterion.reason,
            })).collect::<Vec<_>>(),
        },
        "review": {
            "reviewer": verdict.validator_context_id,
            "verdict": review.as_str(),
            "findings": verdict.findings.iter().map(|finding| serde_json::json!({
                "id": finding.id,
                "class": finding.class,
                "summary": finding.summary,
                "writer_generated": matches!(finding.id.as_str(), "validate.integrity" | "validate.scope"),
            })).collect::<Vec<_>>(),
            "checked": verdict.checked,
            "not_checked": verdict.not_checked,
            "validated_at": verdict.validated_at,
        },
        "independence": independence,
        "freshness": verdict.freshness_attestation.as_ref().map(|fresh| serde_json::json!({
            "source": match fresh.source {
                agentops::FreshnessSource::Runtime => "runtime",
                agentops::FreshnessSource::Caller => "caller",
            },
            "attester_identity": fresh.attester_identity,
        })),
        "evidence_refs": {"bound": false, "labels": verdict.evidence_refs},
    })
}
