//! Strict decoders for the dimension policy and a dimension measurement.
//!
//! Exact shape (every member required, no unknown member, JSON types checked), the four gates
//! all present, rule ids non-empty and unique across the policy, measure names non-empty and
//! sorted and unique in a measurement. The policy's `version` and each rule's `operator` are kept as
//! written: an unsupported one is a gate verdict ([`super::evaluate`]), not a decode error.

use std::collections::BTreeMap;

use crate::decode::reader::{DecodeError, ObjectReader, Path, int};
use crate::dimension::{
    DimensionGates, DimensionMeasures, DimensionPolicy, DimensionRule, GatePolicy, MEASURES_SCHEMA,
};
use crate::done::decode::{non_empty, unique};
use crate::json::Value;

/// Decodes a dimension policy (the `dimensions` member of a Done policy v2).
pub fn decode_dimension_policy(value: &Value) -> Result<DimensionPolicy, DecodeError> {
    policy_at(value, &Path::Root("dimensions"))
}

/// Decodes a dimension measurement (`valp-kernel-dimension-measures.v1`).
pub fn decode_dimension_measures(value: &Value) -> Result<DimensionMeasures, DecodeError> {
    measures_at(value, &Path::Root("measures"))
}

pub(crate) fn policy_at(value: &Value, path: &Path<'_>) -> Result<DimensionPolicy, DecodeError> {
    let mut policy = ObjectReader::new(value, path)?;
    let gates_value = policy.required("gates")?;
    let gates_path = path.key("gates");
    let mut gates = ObjectReader::new(gates_value, &gates_path)?;
    let decoded_gates = DimensionGates {
        cost: gate_at(gates.required("cost")?, &gates_path.key("cost"))?,
        experience: gate_at(gates.required("experience")?, &gates_path.key("experience"))?,
        quality: gate_at(gates.required("quality")?, &gates_path.key("quality"))?,
        stability: gate_at(gates.required("stability")?, &gates_path.key("stability"))?,
    };
    gates.finish()?;
    let decoded = DimensionPolicy {
        policy_id: non_empty(policy.string("policy_id")?, &path.key("policy_id"))?,
        scope_task_id: non_empty(policy.string("scope_task_id")?, &path.key("scope_task_id"))?,
        version: non_empty(policy.string("version")?, &path.key("version"))?,
        gates: decoded_gates,
    };
    policy.finish()?;
    // Rule ids are unique across the whole policy, so a reason names one rule.
    let gates = &decoded.gates;
    let ids = [
        &gates.cost,
        &gates.experience,
        &gates.quality,
        &gates.stability,
    ]
    .into_iter()
    .flat_map(|gate| gate.rules.iter().map(|rule| rule.rule_id.as_str()));
    unique(
        ids,
        |index| format!("{gates_path}: rule {index}"),
        "duplicate rule_id",
    )?;
    Ok(decoded)
}

fn gate_at(value: &Value, path: &Path<'_>) -> Result<GatePolicy, DecodeError> {
    let mut gate = ObjectReader::new(value, path)?;
    let decoded = GatePolicy {
        required: gate.bool("required")?,
        rules: gate.required_list("rules", rule_at)?,
    };
    gate.finish()?;
    if decoded.required && decoded.rules.is_empty() {
        return Err(DecodeError::invalid(
            &path.key("rules"),
            "a required gate needs at least one rule",
        ));
    }
    Ok(decoded)
}

fn rule_at(value: &Value, path: &Path<'_>) -> Result<DimensionRule, DecodeError> {
    let mut rule = ObjectReader::new(value, path)?;
    let decoded = DimensionRule {
        measure: non_empty(rule.string("measure")?, &path.key("measure"))?,
        operator: non_empty(rule.string("operator")?, &path.key("operator"))?,
        rule_id: non_empty(rule.string("rule_id")?, &path.key("rule_id"))?,
        threshold: rule.int("threshold")?,
    };
    rule.finish()?;
    Ok(decoded)
}

pub(crate) fn measures_at(
    value: &Value,
    path: &Path<'_>,
) -> Result<DimensionMeasures, DecodeError> {
    let mut measures = ObjectReader::new(value, path)?;
    measures.schema(MEASURES_SCHEMA)?;
    let decoded = DimensionMeasures {
        policy_digest: measures.string("policy_digest")?,
        policy_id: measures.string("policy_id")?,
        values: BTreeMap::new(),
    };
    let values = measures.required_list("values", measured_at)?;
    measures.finish()?;
    // One canonical form: the values in ascending measure order, each once.
    if let Some(index) = values.windows(2).position(|pair| pair[0].0 >= pair[1].0) {
        return Err(DecodeError::invalid(
            &path.key("values").index(index + 1).key("measure"),
            "values must be sorted by measure, each measure once",
        ));
    }
    Ok(DimensionMeasures {
        values: values.into_iter().collect(),
        ..decoded
    })
}

fn measured_at(value: &Value, path: &Path<'_>) -> Result<(String, crate::model::Int), DecodeError> {
    let mut measured = ObjectReader::new(value, path)?;
    let name = non_empty(measured.string("measure")?, &path.key("measure"))?;
    let number = int(measured.required("value")?, &path.key("value"))?;
    measured.finish()?;
    Ok((name, number))
}
