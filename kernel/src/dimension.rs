//! The four dimension gates of RFC 0002 §10.1 (Quality, Experience, Cost, Stability), evaluated
//! purely and independently from a frozen [`DimensionPolicy`] and the System's
//! [`DimensionMeasures`].
//!
//! The System canonicalizes the plan's authorized dimension section into the policy (part of the
//! frozen Done policy `valp-kernel-done-policy.v2`, so its digest is bound as evidence before
//! execution) and, at closure, measures what the journal shows (verification results, review
//! verdicts, retries, timeouts…) into a measurement naming the policy's id and digest. The
//! kernel decides each gate; the reference kernel has no dimension gates (`kernel/DEVIATIONS.md`,
//! "beyond the reference").
//!
//! A rule is `measure operator threshold` over integers; the operators are a closed set
//! ([`Operator`]: `eq ne lt le gt ge`). An operator outside it is kept by the decoder, so that an
//! unsupported policy fails closed here, at the gate, instead of being unreadable.
//!
//! [`evaluate`] gives one [`GateResult`] per dimension, in [`Dimension::ALL`] order. A gate reads
//! only its own rules, so one dimension's rules never change another's verdict. Its reasons:
//!
//! | condition | reason | verdict |
//! |---|---|---|
//! | the policy's version is not [`POLICY_VERSION`] | `VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION:<version>` | unverifiable |
//! | the policy's scope is not the task | `dimension_policy_scope:<scope>` | unverifiable |
//! | the measurement names another policy id | `dimension_policy_id_mismatch:<id>` | unverifiable |
//! | the measurement names another policy digest (the policy changed after it was frozen) | `dimension_policy_digest_mismatch` | unverifiable |
//! | a rule's operator is not supported | `VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:<rule>:<operator>` | unverifiable |
//! | a rule's measure was not measured | `measure_unavailable:<rule>:<measure>` | unverifiable |
//! | a rule does not hold | `rule_failed:<rule>:<measure>=<value>:<operator>:<threshold>` | fail |
//!
//! The first four refuse the whole policy (every gate). A gate with any unverifiable rule is
//! `unverifiable` (code [`GATE_UNVERIFIABLE`]) even when another rule failed: the gate as a
//! whole cannot be evaluated, and both kinds of reason are listed. A gate whose rules all hold,
//! or that has none, is `pass`.

pub(crate) mod decode;

pub use decode::{decode_dimension_measures, decode_dimension_policy};

use std::collections::BTreeMap;

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::model::Int;
use crate::model::vocabulary::closed_vocabulary;

/// The only dimension policy version this kernel evaluates.
pub const POLICY_VERSION: &str = "valp-kernel-dimension-policy.v1";
/// `schema_version` of a dimension measurement.
pub const MEASURES_SCHEMA: &str = "valp-kernel-dimension-measures.v1";
/// RFC 0002 §10.1: a rule's operator is not supported.
pub const UNSUPPORTED_OPERATOR: &str = "VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR";
/// RFC 0002 §10.1: the policy's version is not supported.
pub const UNSUPPORTED_VERSION: &str = "VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION";
/// RFC 0002 §10.1: the gate-level code of a gate that cannot be evaluated.
pub const GATE_UNVERIFIABLE: &str = "VALP-E-DIMENSION-GATE-UNVERIFIABLE";

closed_vocabulary! {
    /// The four evaluation dimensions (RFC 0002 §10.1).
    Dimension {
        Quality => "quality",
        Experience => "experience",
        Cost => "cost",
        Stability => "stability",
    }
}

closed_vocabulary! {
    /// The comparison operators a rule may use: `measured <operator> threshold`.
    Operator {
        Eq => "eq",
        Ne => "ne",
        Lt => "lt",
        Le => "le",
        Gt => "gt",
        Ge => "ge",
    }
}

closed_vocabulary! {
    /// A dimension gate's verdict.
    GateVerdict {
        Pass => "pass",
        Fail => "fail",
        Unverifiable => "unverifiable",
    }
}

impl Operator {
    /// Whether `measured <self> threshold` holds.
    pub fn holds(self, measured: Int, threshold: Int) -> bool {
        match self {
            Self::Eq => measured == threshold,
            Self::Ne => measured != threshold,
            Self::Lt => measured < threshold,
            Self::Le => measured <= threshold,
            Self::Gt => measured > threshold,
            Self::Ge => measured >= threshold,
        }
    }
}

/// One rule of a dimension gate: `measure operator threshold`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionRule {
    /// The rule's id (unique within the policy).
    pub rule_id: String,
    /// The measure's name (the System's vocabulary, e.g. `quality.verification_failed`).
    pub measure: String,
    /// The operator as written: an unsupported one fails the gate closed, not the decoder.
    pub operator: String,
    /// The threshold.
    pub threshold: Int,
}

/// The policy of one dimension's gate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatePolicy {
    /// Whether Done needs this gate to pass (RFC 0002 §10: a required Quality gate that is not
    /// pass denies Done; valp reads `required` the same way for every dimension).
    pub required: bool,
    /// The rules, in declared order.
    pub rules: Vec<DimensionRule>,
}

/// The Dimension Policy (`valp-kernel-dimension-policy.v1`), frozen before execution inside
/// the Done policy v2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionPolicy {
    /// The policy's id, which a measurement names.
    pub policy_id: String,
    /// The policy's version, as written (see [`POLICY_VERSION`]).
    pub version: String,
    /// The task the policy applies to (its scope).
    pub scope_task_id: String,
    /// One gate per dimension.
    pub gates: DimensionGates,
}

/// The four gate policies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DimensionGates {
    /// Quality.
    pub quality: GatePolicy,
    /// Experience.
    pub experience: GatePolicy,
    /// Cost.
    pub cost: GatePolicy,
    /// Stability.
    pub stability: GatePolicy,
}

impl DimensionGates {
    /// The gate policy of `dimension`.
    pub fn get(&self, dimension: Dimension) -> &GatePolicy {
        match dimension {
            Dimension::Quality => &self.quality,
            Dimension::Experience => &self.experience,
            Dimension::Cost => &self.cost,
            Dimension::Stability => &self.stability,
        }
    }

    /// The gate policy of `dimension`, to change.
    pub fn get_mut(&mut self, dimension: Dimension) -> &mut GatePolicy {
        match dimension {
            Dimension::Quality => &mut self.quality,
            Dimension::Experience => &mut self.experience,
            Dimension::Cost => &mut self.cost,
            Dimension::Stability => &mut self.stability,
        }
    }
}

/// What the System measured at closure (`valp-kernel-dimension-measures.v1`), for the policy
/// it names. A measure the System could not take is absent, never zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DimensionMeasures {
    /// The id of the policy measured for.
    pub policy_id: String,
    /// The `sha256:` digest of that policy's canonical bytes.
    pub policy_digest: String,
    /// Measured values by measure name.
    pub values: BTreeMap<String, Int>,
}

/// One dimension gate's verdict and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateResult {
    /// The dimension.
    pub dimension: Dimension,
    /// Whether Done needs it to pass.
    pub required: bool,
    /// The verdict.
    pub verdict: GateVerdict,
    /// Why it is not `pass` (empty when it passes), in rule order.
    pub reasons: Vec<String>,
}

impl GateResult {
    /// The gate-level code: [`GATE_UNVERIFIABLE`] for an unverifiable gate.
    pub fn code(&self) -> Option<&'static str> {
        (self.verdict == GateVerdict::Unverifiable).then_some(GATE_UNVERIFIABLE)
    }
}

/// Evaluates the four gates of `policy` for task `task_id` from `measures`, in
/// [`Dimension::ALL`] order. Pure and total; see the module documentation for every reason.
pub fn evaluate(
    policy: &DimensionPolicy,
    task_id: &str,
    measures: &DimensionMeasures,
) -> Vec<GateResult> {
    let refusal = policy_refusal(policy, task_id, measures);
    Dimension::ALL
        .iter()
        .map(|&dimension| {
            let gate = policy.gates.get(dimension);
            let (verdict, reasons) = match &refusal {
                Some(reason) => (GateVerdict::Unverifiable, vec![reason.clone()]),
                None => rules(gate, measures),
            };
            GateResult {
                dimension,
                required: gate.required,
                verdict,
                reasons,
            }
        })
        .collect()
}

/// What in `policy` this kernel does not support: its version, else every rule whose operator
/// is unsupported, with the gate's reasons. The store refuses to freeze such a policy (no
/// closure could ever pass its gates); [`evaluate`] fails them closed if one is met anyway.
pub fn unsupported(policy: &DimensionPolicy) -> Vec<String> {
    if policy.version != POLICY_VERSION {
        return vec![unsupported_version(policy)];
    }
    Dimension::ALL
        .iter()
        .flat_map(|&dimension| &policy.gates.get(dimension).rules)
        .filter(|rule| Operator::from_wire(&rule.operator).is_none())
        .map(unsupported_operator)
        .collect()
}

fn unsupported_version(policy: &DimensionPolicy) -> String {
    format!("{UNSUPPORTED_VERSION}:{}", policy.version)
}

fn unsupported_operator(rule: &DimensionRule) -> String {
    format!("{UNSUPPORTED_OPERATOR}:{}:{}", rule.rule_id, rule.operator)
}

/// Why the policy as a whole cannot be evaluated against `measures`, if it cannot.
fn policy_refusal(
    policy: &DimensionPolicy,
    task_id: &str,
    measures: &DimensionMeasures,
) -> Option<String> {
    if policy.version != POLICY_VERSION {
        Some(unsupported_version(policy))
    } else if policy.scope_task_id != task_id {
        Some(format!("dimension_policy_scope:{}", policy.scope_task_id))
    } else if measures.policy_id != policy.policy_id {
        Some(format!(
            "dimension_policy_id_mismatch:{}",
            measures.policy_id
        ))
    } else if measures.policy_digest != policy.digest() {
        Some("dimension_policy_digest_mismatch".to_owned())
    } else {
        None
    }
}

/// One gate's verdict from its own rules only.
fn rules(gate: &GatePolicy, measures: &DimensionMeasures) -> (GateVerdict, Vec<String>) {
    let mut reasons = Vec::new();
    let mut unverifiable = false;
    for rule in &gate.rules {
        let id = &rule.rule_id;
        let Some(operator) = Operator::from_wire(&rule.operator) else {
            unverifiable = true;
            reasons.push(unsupported_operator(rule));
            continue;
        };
        match measures.values.get(&rule.measure) {
            None => {
                unverifiable = true;
                reasons.push(format!("measure_unavailable:{id}:{}", rule.measure));
            }
            Some(&value) if operator.holds(value, rule.threshold) => {}
            Some(value) => reasons.push(format!(
                "rule_failed:{id}:{}={value}:{operator}:{}",
                rule.measure, rule.threshold
            )),
        }
    }
    let verdict = if unverifiable {
        GateVerdict::Unverifiable
    } else if reasons.is_empty() {
        GateVerdict::Pass
    } else {
        GateVerdict::Fail
    };
    (verdict, reasons)
}

impl Canonical for DimensionRule {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("measure", &self.measure);
        fields.str("operator", &self.operator);
        fields.str("rule_id", &self.rule_id);
        fields.int("threshold", self.threshold);
        fields.end();
    }
}

impl Canonical for GatePolicy {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.bool("required", self.required);
        fields.list("rules", &self.rules);
        fields.end();
    }
}

impl Canonical for DimensionGates {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("cost", &self.cost);
        fields.canonical("experience", &self.experience);
        fields.canonical("quality", &self.quality);
        fields.canonical("stability", &self.stability);
        fields.end();
    }
}

impl Canonical for DimensionPolicy {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("gates", &self.gates);
        fields.str("policy_id", &self.policy_id);
        fields.str("scope_task_id", &self.scope_task_id);
        fields.str("version", &self.version);
        fields.end();
    }
}

/// One measured value, as written in a measurement's `values` list.
struct Measured<'a>(&'a str, Int);

impl Canonical for Measured<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("measure", self.0);
        fields.int("value", self.1);
        fields.end();
    }
}

impl Canonical for DimensionMeasures {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let values: Vec<Measured<'_>> = self
            .values
            .iter()
            .map(|(measure, value)| Measured(measure, *value))
            .collect();
        let mut fields = Fields::begin(out);
        fields.str("policy_digest", &self.policy_digest);
        fields.str("policy_id", &self.policy_id);
        fields.str("schema_version", MEASURES_SCHEMA);
        fields.list("values", &values);
        fields.end();
    }
}
