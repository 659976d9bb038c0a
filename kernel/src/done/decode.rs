//! Strict decoders for the Done gate's records.
//!
//! Exact shape (every member required, no unknown member, JSON types checked), closed
//! vocabularies (a claim result outside `ClaimResult` is `VALP-E-UNKNOWN-ENUM-VALUE`), and the
//! records' own rules: ids are non-empty and unique, and a gate verdict's `passed` agrees with
//! its reasons. These records are System inputs, never echoed in a Result, so nothing outside
//! their rules is kept for a later answer.

use std::collections::BTreeSet;

use crate::decode::DecodeErrorKind;
use crate::decode::reader::{DecodeError, ObjectReader, Path, string, vocabulary};
use crate::dimension::decode::{measures_at, policy_at};
use crate::done::correction::CYCLE_SCHEMA;
use crate::done::model::{
    CLOSURE_SCHEMA, CLOSURE_SCHEMA_V2, ClosureCriterion, DoneClosure, DoneGate, DonePolicy,
    GATE_SCHEMA, POLICY_SCHEMA, POLICY_SCHEMA_V2, POLICY_SCHEMA_V3, PolicyCriterion,
};
use crate::json::Value;
use crate::model::ClaimResult;

/// Decodes a Done policy: `valp-kernel-done-policy.v1`, `.v2` with its `dimensions`, or `.v3`
/// with `correction_cycle` (`valp-correction-cycle.v1`) and optional `dimensions`.
pub fn decode_done_policy(value: &Value) -> Result<DonePolicy, DecodeError> {
    let path = Path::Root("policy");
    let mut policy = ObjectReader::new(value, &path)?;
    let found = policy.string("schema_version")?;
    let version = [POLICY_SCHEMA, POLICY_SCHEMA_V2, POLICY_SCHEMA_V3]
        .iter()
        .position(|schema| *schema == found)
        .ok_or_else(|| DecodeError {
            path: path.key("schema_version").to_string(),
            kind: DecodeErrorKind::WrongSchema {
                expected: "valp-kernel-done-policy.v1, .v2 or .v3",
                found,
            },
        })?;
    let dimensions = match version {
        0 => None,
        1 => Some(policy.required("dimensions")?),
        _ => policy.optional("dimensions"),
    };
    let correction_cycle = version == 2;
    if correction_cycle {
        let cycle = policy.string("correction_cycle")?;
        if cycle != CYCLE_SCHEMA {
            return Err(DecodeError {
                path: path.key("correction_cycle").to_string(),
                kind: DecodeErrorKind::WrongSchema {
                    expected: CYCLE_SCHEMA,
                    found: cycle,
                },
            });
        }
    }
    let decoded = DonePolicy {
        criteria: policy.required_list("criteria", policy_criterion_at)?,
        skippable_optional_items: policy.bool("skippable_optional_items")?,
        degradable_soft_items: policy.required_list("degradable_soft_items", id_at)?,
        dimensions: dimensions
            .map(|value| policy_at(value, &path.key("dimensions")))
            .transpose()?,
        correction_cycle,
    };
    policy.finish()?;
    unique_criteria(
        decoded.criteria.iter().map(|c| c.criterion_id.as_str()),
        &path.key("criteria"),
    )?;
    unique_ids(
        &decoded.degradable_soft_items,
        &path.key("degradable_soft_items"),
        "duplicate work item id",
    )?;
    Ok(decoded)
}

/// Decodes a Done closure: `valp-kernel-done-closure.v1`, or `.v2` with its `measures`.
pub fn decode_done_closure(value: &Value) -> Result<DoneClosure, DecodeError> {
    let path = Path::Root("closure");
    let mut closure = ObjectReader::new(value, &path)?;
    let v2 = versioned(
        &mut closure,
        &path,
        [CLOSURE_SCHEMA, CLOSURE_SCHEMA_V2],
        "valp-kernel-done-closure.v1 or .v2",
    )?;
    let claim = closure.required("completion_claim")?;
    let decoded = DoneClosure {
        policy_digest: closure.string("policy_digest")?,
        completion_claim: claim_at(claim, &path.key("completion_claim"))?,
        criteria: closure.required_list("criteria", closure_criterion_at)?,
        measures: if v2 {
            Some(measures_at(
                closure.required("measures")?,
                &path.key("measures"),
            )?)
        } else {
            None
        },
    };
    closure.finish()?;
    unique_criteria(
        decoded.criteria.iter().map(|c| c.criterion_id.as_str()),
        &path.key("criteria"),
    )?;
    Ok(decoded)
}

/// Decodes a Done gate verdict (`valp-kernel-done-gate.v1`).
pub fn decode_done_gate(value: &Value) -> Result<DoneGate, DecodeError> {
    let path = Path::Root("gate");
    let mut gate = ObjectReader::new(value, &path)?;
    gate.schema(GATE_SCHEMA)?;
    let decoded = DoneGate {
        passed: gate.bool("passed")?,
        reasons: gate.required_list("reasons", id_at)?,
        notes: gate.required_list("notes", id_at)?,
    };
    gate.finish()?;
    if decoded.passed != decoded.reasons.is_empty() {
        return Err(DecodeError::invalid(
            &path.key("passed"),
            "passed must be true exactly when reasons is empty",
        ));
    }
    Ok(decoded)
}

/// Reads `schema_version`, which must be one of `[v1, v2]` (`expected` names both in the
/// error); whether it is `v2`.
fn versioned(
    record: &mut ObjectReader<'_, '_>,
    path: &Path<'_>,
    [v1, v2]: [&'static str; 2],
    expected: &'static str,
) -> Result<bool, DecodeError> {
    let found = record.string("schema_version")?;
    if found == v1 || found == v2 {
        Ok(found == v2)
    } else {
        Err(DecodeError {
            path: path.key("schema_version").to_string(),
            kind: DecodeErrorKind::WrongSchema { expected, found },
        })
    }
}

fn policy_criterion_at(value: &Value, path: &Path<'_>) -> Result<PolicyCriterion, DecodeError> {
    let mut criterion = ObjectReader::new(value, path)?;
    let decoded = PolicyCriterion {
        criterion_id: non_empty(criterion.string("criterion_id")?, &path.key("criterion_id"))?,
        required: criterion.bool("required")?,
        not_applicable_allowed: criterion.bool("not_applicable_allowed")?,
    };
    criterion.finish()?;
    Ok(decoded)
}

fn closure_criterion_at(value: &Value, path: &Path<'_>) -> Result<ClosureCriterion, DecodeError> {
    let mut criterion = ObjectReader::new(value, path)?;
    let result = criterion.required("result")?;
    let decoded = ClosureCriterion {
        criterion_id: non_empty(criterion.string("criterion_id")?, &path.key("criterion_id"))?,
        result: claim_at(result, &path.key("result"))?,
        evidence_ids: criterion.required_list("evidence_ids", id_at)?,
    };
    criterion.finish()?;
    unique_ids(
        &decoded.evidence_ids,
        &path.key("evidence_ids"),
        "duplicate evidence id",
    )?;
    Ok(decoded)
}

fn claim_at(value: &Value, path: &Path<'_>) -> Result<ClaimResult, DecodeError> {
    vocabulary(value, path, ClaimResult::from_wire, ClaimResult::NAME)
}

/// A non-empty string element.
fn id_at(value: &Value, path: &Path<'_>) -> Result<String, DecodeError> {
    non_empty(string(value, path)?.to_owned(), path)
}

pub(crate) fn non_empty(text: String, path: &Path<'_>) -> Result<String, DecodeError> {
    if text.is_empty() {
        return Err(DecodeError::invalid(path, "must be a non-empty string"));
    }
    Ok(text)
}

/// Refuses a second criterion with the same id, at `<criteria>[i].criterion_id` (a policy and a
/// closure list their criteria alike).
fn unique_criteria<'a>(
    ids: impl Iterator<Item = &'a str>,
    criteria: &Path<'_>,
) -> Result<(), DecodeError> {
    unique(
        ids,
        |index| criteria.index(index).key("criterion_id").to_string(),
        "duplicate criterion_id",
    )
}

/// Refuses a repeated id in a list of plain ids, at `<list>[i]`.
fn unique_ids(ids: &[String], list: &Path<'_>, rule: &'static str) -> Result<(), DecodeError> {
    unique(
        ids.iter().map(String::as_str),
        |index| list.index(index).to_string(),
        rule,
    )
}

/// Refuses the second occurrence of an id, at the path `at(index)` names.
pub(crate) fn unique<'a>(
    ids: impl Iterator<Item = &'a str>,
    at: impl Fn(usize) -> String,
    rule: &'static str,
) -> Result<(), DecodeError> {
    let mut seen = BTreeSet::new();
    for (index, id) in ids.enumerate() {
        if !seen.insert(id) {
            return Err(DecodeError {
                path: at(index),
                kind: crate::decode::DecodeErrorKind::Invalid(rule),
            });
        }
    }
    Ok(())
}
