//! The Done gate: RFC 0002 §10's default-deny Done matrix, evaluated from typed closure evidence.
//!
//! The reference kernel accepts `recording_completed -> done` with no evidence at all, and the
//! task reducer keeps that byte for byte (conformance). The gate is therefore a separate pure
//! function the System runs before it proposes `recording_completed` and the store runs before
//! it writes one and again when it verifies a journal (`kernel/DEVIATIONS.md`, D2).
//!
//! Its inputs:
//!
//! - the [`DonePolicy`], frozen before execution: stored as evidence `done-policy-…` in the
//!   EvidenceSet of the task's first accepted entry (revision 1);
//! - the [`DoneClosure`]: the completion claim and one result per criterion, stored as evidence
//!   `done-closure-…` in the `recording_completed` EvidenceSet, next to the frozen policy's
//!   evidence;
//! - the Task State before `recording_completed`: work items, their requirement and status,
//!   and their dependency edges.
//!
//! [`evaluate`] denies Done unless every check below passes. Each failed check adds one
//! blocking reason, in this order:
//!
//! | check | reason |
//! |---|---|
//! | the task is `recording` | `task_status:<status>` |
//! | the closure names the policy's digest | `policy_digest_mismatch` |
//! | policy criterion ids are unique | `duplicate_policy_criterion:<id>` |
//! | every degradable item is a soft work item of the task | `degradable_not_soft:<id>` |
//! | the top-level completion claim is `pass` | `completion_claim:<result>` |
//! | every required criterion has a result (policy order) | `criterion_missing:<id>` |
//! | a required criterion's result is `pass` … | `criterion:<id>:<result>` |
//! | … or `not_applicable`, allowed by the policy … | `not_applicable_not_allowed:<id>` |
//! | … and supported by evidence | `not_applicable_without_evidence:<id>` |
//! | closure criterion ids are unique | `duplicate_criterion:<id>` |
//! | every closure criterion is one of the policy's | `unknown_criterion:<id>` |
//! | no work item is still pending, eligible, submitted or running | `item_not_settled:<id>:<status>` |
//! | a required work item is `completed` | `required_item:<id>:<status>` |
//! | an optional item is completed, or skipped/failed/cancelled with `skippable_optional_items` | `optional_item:<id>:<status>` |
//! | a soft item is completed, or degraded and listed in `degradable_soft_items` | `soft_item:<id>:<status>` |
//! | every hard (`required`) dependency of a completed or degraded item is completed | `hard_dependency:<item>-><dependency>:<status or missing>` |
//!
//! [`evaluate_bound`] adds `criterion_evidence_not_bound:<criterion>:<evidence id>` for every
//! evidence id a criterion cites that is not in the `recording_completed` EvidenceSet, and
//! [`locate`] finds the policy and closure evidence in that set (`done_policy_missing`,
//! `done_policy_ambiguous`, `done_policy_not_bound:<id>`, `done_policy_changed:<id>`,
//! `done_closure_missing`, `done_closure_ambiguous`).
//!
//! Allowed exceptions are kept as notes, for the synthesis to show: `not_applicable:<id>`,
//! `advisory_criterion:<id>:<result or missing>` (a criterion that is not required),
//! `optional_skipped:<id>`, `soft_degraded:<id>`.
//!
//! **Dimension gates** (§10.1, [`crate::dimension`]). A v2 policy carries a dimension section and
//! its closure the System's measurement; the four gates are evaluated after the criteria:
//!
//! | check | reason |
//! |---|---|
//! | a v2 policy's closure carries a measurement | `dimension_measures_missing` |
//! | a v1 policy's closure carries none | `dimension_measures_unexpected` |
//! | a required gate is `pass` | `dimension_gate:<dimension>:<fail or unverifiable>` |
//!
//! A gate that is not required and not `pass` is a note,
//! `advisory_dimension:<dimension>:<verdict>`. The gate's own reasons are in
//! [`dimension_gates`]. A v1 policy keeps the rule it was frozen under: no dimension gate.
//!
//! **Correction cycle** (seed 003, [`correction`]). A v3 policy (`correction_cycle`) also needs,
//! when the task's history holds a correction signal, a bound `correction-cycle-…` evidence that
//! satisfies the seed's audit rule; its reasons (`correction_cycle_…`) follow the matrix's.
//! The store supplies the signals, the decoded cycle and the presence of its refs
//! ([`correction::locate`], [`correction::judge`]). A v1 or v2 policy keeps the rule it was
//! frozen under.

pub mod correction;
pub(crate) mod decode;
mod model;

use std::collections::BTreeSet;

pub use decode::{decode_done_closure, decode_done_gate, decode_done_policy};
pub use model::{
    CLOSURE_SCHEMA, CLOSURE_SCHEMA_V2, ClosureCriterion, DoneClosure, DoneGate, DonePolicy,
    GATE_SCHEMA, POLICY_SCHEMA, POLICY_SCHEMA_V2, POLICY_SCHEMA_V3, PolicyCriterion,
};

use crate::canonical::Canonical;
use crate::dimension::{self, GateResult, GateVerdict};
use crate::model::{
    ClaimResult, Evidence, Requirement, StateBody, TaskStatus, WorkItem, WorkItemStatus,
};

/// Evidence ids of a frozen Done policy start with this.
pub const POLICY_EVIDENCE_PREFIX: &str = "done-policy-";
/// Evidence ids of a Done closure start with this.
pub const CLOSURE_EVIDENCE_PREFIX: &str = "done-closure-";

/// Evaluates the Done matrix for `closure` against the frozen `policy` and the State before
/// `recording_completed`. Pure and total; see the module documentation for every reason.
pub fn evaluate(state: &StateBody, policy: &DonePolicy, closure: &DoneClosure) -> DoneGate {
    let mut findings = Findings::default();
    findings.task(state);
    findings.policy(state, policy, closure);
    findings.claim(closure);
    findings.criteria(policy, closure);
    findings.dimensions(state, policy, closure);
    for item in &state.work_items {
        findings.item(state, policy, item);
    }
    DoneGate::from_findings(findings.reasons, findings.notes)
}

/// The four dimension gates of a v2 `policy` for `closure`'s measurement (`None` for a v1
/// policy or a closure without a measurement).
pub fn dimension_gates(
    state: &StateBody,
    policy: &DonePolicy,
    closure: &DoneClosure,
) -> Option<Vec<GateResult>> {
    let dimensions = policy.dimensions.as_ref()?;
    let measures = closure.measures.as_ref()?;
    Some(dimension::evaluate(
        dimensions,
        state.task_id.value(),
        measures,
    ))
}

/// [`evaluate`], and every evidence id a closure criterion cites must be in `evidence_set` (the
/// `recording_completed` EvidenceSet, whose digests the event's input digest binds).
pub fn evaluate_bound(
    state: &StateBody,
    evidence_set: &[Evidence],
    policy: &DonePolicy,
    closure: &DoneClosure,
) -> DoneGate {
    let gate = evaluate(state, policy, closure);
    let bound: BTreeSet<&str> = evidence_set
        .iter()
        .map(|evidence| evidence.evidence_id.value())
        .collect();
    let mut reasons = gate.reasons;
    for criterion in &closure.criteria {
        for id in &criterion.evidence_ids {
            if !bound.contains(id.as_str()) {
                reasons.push(format!(
                    "criterion_evidence_not_bound:{}:{id}",
                    criterion.criterion_id
                ));
            }
        }
    }
    DoneGate::from_findings(reasons, gate.notes)
}

/// The Evidence of an EvidenceSet whose id starts with `prefix`, in the set's order.
pub fn evidence_with_prefix<'a>(evidence_set: &'a [Evidence], prefix: &str) -> Vec<&'a Evidence> {
    evidence_set
        .iter()
        .filter(|evidence| evidence.evidence_id.value().starts_with(prefix))
        .collect()
}

/// The policy and closure evidence a `recording_completed` carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GateEvidence<'a> {
    /// The frozen policy's evidence (its digest is the digest of the policy's canonical bytes).
    pub policy: &'a Evidence,
    /// The closure's evidence.
    pub closure: &'a Evidence,
}

/// Finds the policy and closure evidence in a `recording_completed` EvidenceSet.
///
/// `frozen` is the `done-policy-…` evidence of the task's first accepted entry. The set must
/// carry exactly that evidence (same id and digest), no other `done-policy-…` evidence, and
/// exactly one `done-closure-…` evidence; otherwise the blocking reasons are returned.
pub fn locate<'a>(
    frozen: &[Evidence],
    evidence_set: &'a [Evidence],
) -> Result<GateEvidence<'a>, Vec<String>> {
    let mut reasons = Vec::new();
    let policies = evidence_with_prefix(evidence_set, POLICY_EVIDENCE_PREFIX);
    let policy = match frozen {
        [] => {
            reasons.push("done_policy_missing".to_owned());
            None
        }
        [frozen] => {
            let bound = policies
                .iter()
                .copied()
                .find(|evidence| *evidence == frozen);
            if bound.is_none() {
                reasons.push(format!(
                    "done_policy_not_bound:{}",
                    frozen.evidence_id.value()
                ));
            }
            for other in policies.iter().filter(|evidence| **evidence != frozen) {
                reasons.push(format!("done_policy_changed:{}", other.evidence_id.value()));
            }
            bound
        }
        _ => {
            reasons.push("done_policy_ambiguous".to_owned());
            None
        }
    };
    let closures = evidence_with_prefix(evidence_set, CLOSURE_EVIDENCE_PREFIX);
    let closure = match closures.as_slice() {
        [] => {
            reasons.push("done_closure_missing".to_owned());
            None
        }
        [closure] => Some(*closure),
        _ => {
            reasons.push("done_closure_ambiguous".to_owned());
            None
        }
    };
    match (policy, closure) {
        (Some(policy), Some(closure)) if reasons.is_empty() => Ok(GateEvidence { policy, closure }),
        _ => Err(reasons),
    }
}

/// Reasons and notes, in the order the checks run.
#[derive(Default)]
struct Findings {
    reasons: Vec<String>,
    notes: Vec<String>,
}

impl Findings {
    fn task(&mut self, state: &StateBody) {
        if state.status.known() != Some(TaskStatus::Recording) {
            self.reasons
                .push(format!("task_status:{}", state.status.as_str()));
        }
    }

    fn policy(&mut self, state: &StateBody, policy: &DonePolicy, closure: &DoneClosure) {
        if closure.policy_digest != policy.digest() {
            self.reasons.push("policy_digest_mismatch".to_owned());
        }
        for id in duplicates(policy.criteria.iter().map(|c| c.criterion_id.as_str())) {
            self.reasons
                .push(format!("duplicate_policy_criterion:{id}"));
        }
        for id in &policy.degradable_soft_items {
            let soft = state.work_items.iter().any(|item| {
                item.work_item_id.value() == id && item.requirement == Requirement::Soft
            });
            if !soft {
                self.reasons.push(format!("degradable_not_soft:{id}"));
            }
        }
    }

    fn claim(&mut self, closure: &DoneClosure) {
        if closure.completion_claim != ClaimResult::Pass {
            self.reasons
                .push(format!("completion_claim:{}", closure.completion_claim));
        }
    }

    fn criteria(&mut self, policy: &DonePolicy, closure: &DoneClosure) {
        for criterion in &policy.criteria {
            let id = &criterion.criterion_id;
            let claimed = closure.criteria.iter().find(|c| &c.criterion_id == id);
            let Some(claimed) = claimed else {
                if criterion.required {
                    self.reasons.push(format!("criterion_missing:{id}"));
                } else {
                    self.notes.push(format!("advisory_criterion:{id}:missing"));
                }
                continue;
            };
            let result = claimed.result;
            let supported = criterion.not_applicable_allowed && !claimed.evidence_ids.is_empty();
            match result {
                ClaimResult::Pass => {}
                ClaimResult::NotApplicable if supported => {
                    self.notes.push(format!("not_applicable:{id}"));
                }
                _ if !criterion.required => {
                    self.notes.push(format!("advisory_criterion:{id}:{result}"));
                }
                ClaimResult::NotApplicable if !criterion.not_applicable_allowed => {
                    self.reasons
                        .push(format!("not_applicable_not_allowed:{id}"));
                }
                ClaimResult::NotApplicable => {
                    self.reasons
                        .push(format!("not_applicable_without_evidence:{id}"));
                }
                _ => self.reasons.push(format!("criterion:{id}:{result}")),
            }
        }
        for id in duplicates(closure.criteria.iter().map(|c| c.criterion_id.as_str())) {
            self.reasons.push(format!("duplicate_criterion:{id}"));
        }
        for claimed in &closure.criteria {
            let known = policy
                .criteria
                .iter()
                .any(|criterion| criterion.criterion_id == claimed.criterion_id);
            if !known {
                self.reasons
                    .push(format!("unknown_criterion:{}", claimed.criterion_id));
            }
        }
    }

    fn dimensions(&mut self, state: &StateBody, policy: &DonePolicy, closure: &DoneClosure) {
        match (&policy.dimensions, &closure.measures) {
            (Some(_), None) => self.reasons.push("dimension_measures_missing".to_owned()),
            (None, Some(_)) => self
                .reasons
                .push("dimension_measures_unexpected".to_owned()),
            _ => {}
        }
        for gate in dimension_gates(state, policy, closure).unwrap_or_default() {
            if gate.verdict == GateVerdict::Pass {
                continue;
            }
            let named = format!("{}:{}", gate.dimension, gate.verdict);
            if gate.required {
                self.reasons.push(format!("dimension_gate:{named}"));
            } else {
                self.notes.push(format!("advisory_dimension:{named}"));
            }
        }
    }

    fn item(&mut self, state: &StateBody, policy: &DonePolicy, item: &WorkItem) {
        use WorkItemStatus as S;
        let id = item.work_item_id.value();
        let status = item.status;
        match (status, item.requirement) {
            (S::Completed, _) => {}
            (S::Pending | S::Eligible | S::Submitted | S::Running, _) => {
                self.reasons.push(format!("item_not_settled:{id}:{status}"));
            }
            (_, Requirement::Required) => {
                self.reasons.push(format!("required_item:{id}:{status}"));
            }
            (S::Skipped | S::Failed | S::Cancelled, Requirement::Optional)
                if policy.skippable_optional_items =>
            {
                self.notes.push(format!("optional_skipped:{id}"));
            }
            (_, Requirement::Optional) => {
                self.reasons.push(format!("optional_item:{id}:{status}"));
            }
            (S::Degraded, Requirement::Soft)
                if policy
                    .degradable_soft_items
                    .iter()
                    .any(|listed| listed == id) =>
            {
                self.notes.push(format!("soft_degraded:{id}"));
            }
            (_, Requirement::Soft) => {
                self.reasons.push(format!("soft_item:{id}:{status}"));
            }
        }
        if matches!(status, S::Completed | S::Degraded) {
            for dependency in &item.dependencies {
                if dependency.requirement != Requirement::Required {
                    continue;
                }
                let target = dependency.work_item_id.value();
                match state.work_item(&dependency.work_item_id).map(|t| t.status) {
                    Some(S::Completed) => {}
                    Some(other) => self
                        .reasons
                        .push(format!("hard_dependency:{id}->{target}:{other}")),
                    None => self
                        .reasons
                        .push(format!("hard_dependency:{id}->{target}:missing")),
                }
            }
        }
    }
}

/// Each id that occurs more than once, once, in order of its second occurrence.
fn duplicates<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = BTreeSet::new();
    let mut repeated = Vec::new();
    for id in ids {
        if !seen.insert(id) && !repeated.contains(&id) {
            repeated.push(id);
        }
    }
    repeated
}
