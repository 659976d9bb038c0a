//! The Done gate's records and their canonical forms: the frozen Done policy, the closure a
//! System submits with `recording_completed`, and the gate's verdict.

use crate::canonical::Canonical;
use crate::dimension::{DimensionMeasures, DimensionPolicy};
use crate::json::write::Fields;
use crate::model::ClaimResult;

/// `schema_version` of a Done policy without dimension gates.
pub const POLICY_SCHEMA: &str = "valp-kernel-done-policy.v1";
/// `schema_version` of a Done policy with a dimension section (RFC 0002 §10.1).
pub const POLICY_SCHEMA_V2: &str = "valp-kernel-done-policy.v2";
/// `schema_version` of a Done policy whose Done also needs the correction cycle (seed 003) when
/// a correction signal exists; it may carry a dimension section.
pub const POLICY_SCHEMA_V3: &str = "valp-kernel-done-policy.v3";
/// `schema_version` of a Done closure for a v1 policy.
pub const CLOSURE_SCHEMA: &str = "valp-kernel-done-closure.v1";
/// `schema_version` of a Done closure for a v2 policy: it carries the dimension measurement.
pub const CLOSURE_SCHEMA_V2: &str = "valp-kernel-done-closure.v2";
/// `schema_version` of a Done gate verdict.
pub const GATE_SCHEMA: &str = "valp-kernel-done-gate.v1";

/// One acceptance criterion of a Done policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyCriterion {
    /// The criterion's id (unique within the policy).
    pub criterion_id: String,
    /// Whether Done needs this criterion (`false`: advisory; its result is only noted).
    pub required: bool,
    /// The predeclared applicability rule: whether `not_applicable` may close the criterion
    /// (it still needs supporting evidence).
    pub not_applicable_allowed: bool,
}

/// The Done policy, frozen before execution: the task's criteria, whether optional work items
/// may be skipped, which soft work items may end degraded (RFC 0002 §10) and, from version 2
/// on, the dimension gates (§10.1). Without `dimensions` it is `valp-kernel-done-policy.v1`,
/// byte for byte as before; with them, `valp-kernel-done-policy.v2`. With `correction_cycle`
/// it is `valp-kernel-done-policy.v3` (dimensions optional), whose Done also needs the
/// correction cycle ([`super::correction`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DonePolicy {
    /// The criteria, in declared order.
    pub criteria: Vec<PolicyCriterion>,
    /// Whether an optional work item may end `skipped`, `failed` or `cancelled`.
    pub skippable_optional_items: bool,
    /// Work item ids (values of `work_item` identities) of soft items that may end `degraded`:
    /// the degradation floor. Only soft items may be listed.
    pub degradable_soft_items: Vec<String>,
    /// The dimension gates (v2, optional in v3).
    pub dimensions: Option<DimensionPolicy>,
    /// Whether Done needs the correction cycle when a correction signal exists (v3 only).
    pub correction_cycle: bool,
}

/// The result claimed for one criterion at closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosureCriterion {
    /// The criterion (an id of the policy).
    pub criterion_id: String,
    /// The claimed result.
    pub result: ClaimResult,
    /// Evidence ids (values of `evidence` identities) supporting the result.
    pub evidence_ids: Vec<String>,
}

/// The closure of a task: the top-level completion claim and one result per criterion, against
/// the policy whose digest it names; for a v2 policy also the dimension measurement
/// (`valp-kernel-done-closure.v2`, else `valp-kernel-done-closure.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneClosure {
    /// `sha256:` digest of the frozen [`DonePolicy`]'s canonical bytes.
    pub policy_digest: String,
    /// The task's top-level completion claim; only `pass` can mean Done.
    pub completion_claim: ClaimResult,
    /// Criterion results, in any order.
    pub criteria: Vec<ClosureCriterion>,
    /// What the System measured for the dimension gates (v2 only).
    pub measures: Option<DimensionMeasures>,
}

/// The Done gate's verdict (`valp-kernel-done-gate.v1`).
///
/// `passed` is true exactly when `reasons` is empty. `notes` list the exceptions the policy
/// allowed, which a synthesis must show (`optional_skipped:<id>`, `soft_degraded:<id>`,
/// `not_applicable:<id>`, `advisory_criterion:<id>:<result>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneGate {
    /// Whether Done is allowed.
    pub passed: bool,
    /// Why not, in the order the checks run (empty when passed).
    pub reasons: Vec<String>,
    /// Allowed exceptions, in the order the checks run.
    pub notes: Vec<String>,
}

impl DoneGate {
    /// A verdict from its findings: passed exactly when there is no blocking reason.
    pub fn from_findings(reasons: Vec<String>, notes: Vec<String>) -> Self {
        Self {
            passed: reasons.is_empty(),
            reasons,
            notes,
        }
    }

    /// A refusal for reasons found before the matrix could be evaluated (missing or unreadable
    /// policy or closure).
    pub fn refused(reasons: Vec<String>) -> Self {
        Self::from_findings(reasons, Vec::new())
    }
}

impl Canonical for PolicyCriterion {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("criterion_id", &self.criterion_id);
        fields.bool("not_applicable_allowed", self.not_applicable_allowed);
        fields.bool("required", self.required);
        fields.end();
    }
}

impl Canonical for DonePolicy {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        if self.correction_cycle {
            fields.str("correction_cycle", super::correction::CYCLE_SCHEMA);
        }
        fields.list("criteria", &self.criteria);
        fields.strs("degradable_soft_items", &self.degradable_soft_items);
        fields.optional("dimensions", self.dimensions.as_ref());
        let schema = if self.correction_cycle {
            POLICY_SCHEMA_V3
        } else if self.dimensions.is_some() {
            POLICY_SCHEMA_V2
        } else {
            POLICY_SCHEMA
        };
        fields.str("schema_version", schema);
        fields.bool("skippable_optional_items", self.skippable_optional_items);
        fields.end();
    }
}

impl Canonical for ClosureCriterion {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("criterion_id", &self.criterion_id);
        fields.strs("evidence_ids", &self.evidence_ids);
        fields.str("result", self.result.as_str());
        fields.end();
    }
}

impl Canonical for DoneClosure {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("completion_claim", self.completion_claim.as_str());
        fields.list("criteria", &self.criteria);
        fields.optional("measures", self.measures.as_ref());
        fields.str("policy_digest", &self.policy_digest);
        let schema = if self.measures.is_some() {
            CLOSURE_SCHEMA_V2
        } else {
            CLOSURE_SCHEMA
        };
        fields.str("schema_version", schema);
        fields.end();
    }
}

impl Canonical for DoneGate {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("notes", &self.notes);
        fields.bool("passed", self.passed);
        fields.strs("reasons", &self.reasons);
        fields.str("schema_version", GATE_SCHEMA);
        fields.end();
    }
}
