//! The dimension gates (RFC 0002 §10.1, `kernel/src/dimension.rs`): every operator, every
//! reason and failure code, the Done policy v2 rule (a required gate that is not pass denies
//! Done, v1 policies keep the old rule), frozen-policy violations, the canonical forms and strict
//! decoders, and the independence of the four gates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::decode::DecodeErrorKind;
use valp_kernel::dimension::{
    Dimension, DimensionGates, DimensionMeasures, DimensionPolicy, DimensionRule,
    GATE_UNVERIFIABLE, GatePolicy, GateResult, GateVerdict, Operator, POLICY_VERSION,
    decode_dimension_measures, decode_dimension_policy, evaluate, unsupported,
};
use valp_kernel::done::{
    self, ClosureCriterion, DoneClosure, DonePolicy, PolicyCriterion, decode_done_closure,
    decode_done_policy,
};
use valp_kernel::json::{self, Value};
use valp_kernel::{
    ClaimResult, Identity, IdentityKind, Int, Open, Requirement, State, StateBody, TaskStatus,
    WorkItem, WorkItemStatus,
};

// ---------------------------------------------------------------------------------------------
// Fixtures

const TASK: &str = "task-1";

fn rule(rule_id: &str, measure: &str, operator: &str, threshold: Int) -> DimensionRule {
    DimensionRule {
        rule_id: rule_id.to_owned(),
        measure: measure.to_owned(),
        operator: operator.to_owned(),
        threshold,
    }
}

fn gate(required: bool, rules: Vec<DimensionRule>) -> GatePolicy {
    GatePolicy { required, rules }
}

/// Quality required (no failed check, every check passed); Experience advisory (at least one
/// accepted review); Cost advisory over tokens (never measured); Stability advisory (at most 2
/// retries).
fn policy() -> DimensionPolicy {
    DimensionPolicy {
        policy_id: "task-1:dimensions".to_owned(),
        version: POLICY_VERSION.to_owned(),
        scope_task_id: TASK.to_owned(),
        gates: DimensionGates {
            quality: gate(
                true,
                vec![
                    rule("q-failed", "quality.verification_failed", "eq", 0),
                    rule("q-percent", "quality.verification_percent", "ge", 100),
                ],
            ),
            experience: gate(
                false,
                vec![rule("x-review", "experience.review_passed", "ge", 1)],
            ),
            cost: gate(false, vec![rule("c-tokens", "cost.tokens", "le", 100_000)]),
            stability: gate(false, vec![rule("s-retries", "stability.retries", "le", 2)]),
        },
    }
}

fn values(pairs: &[(&str, Int)]) -> BTreeMap<String, Int> {
    pairs
        .iter()
        .map(|&(name, value)| (name.to_owned(), value))
        .collect()
}

/// A measurement of `policy` where every measured rule holds (tokens are not measured).
fn measures(policy: &DimensionPolicy) -> DimensionMeasures {
    DimensionMeasures {
        policy_id: policy.policy_id.clone(),
        policy_digest: policy.digest(),
        values: values(&[
            ("experience.review_passed", 1),
            ("quality.verification_failed", 0),
            ("quality.verification_percent", 100),
            ("stability.retries", 0),
        ]),
    }
}

fn with_value(mut measures: DimensionMeasures, name: &str, value: Int) -> DimensionMeasures {
    measures.values.insert(name.to_owned(), value);
    measures
}

/// The verdict and reasons of one dimension.
fn of(results: &[GateResult], dimension: Dimension) -> (GateVerdict, Vec<String>) {
    let found = results
        .iter()
        .find(|result| result.dimension == dimension)
        .unwrap();
    (found.verdict, found.reasons.clone())
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

fn recording() -> StateBody {
    let mut item = WorkItem {
        task_id: Identity::new(IdentityKind::Task, TASK).unwrap(),
        work_item_id: Identity::new(IdentityKind::WorkItem, "wi-1").unwrap(),
        requirement: Requirement::Required,
        status: WorkItemStatus::Completed,
        dependencies: Vec::new(),
        current_attempt: None,
    };
    item.status = WorkItemStatus::Completed;
    let mut state = State::genesis(
        Identity::new(IdentityKind::Installation, "inst-1").unwrap(),
        1,
        Identity::new(IdentityKind::Task, TASK).unwrap(),
        vec![item],
    )
    .body;
    state.status = Open::Known(TaskStatus::Recording);
    state.revision = 9;
    state
}

/// A v2 Done policy: one required criterion and the dimension policy.
fn done_policy(dimensions: DimensionPolicy) -> DonePolicy {
    DonePolicy {
        criteria: vec![PolicyCriterion {
            criterion_id: "tests".to_owned(),
            required: true,
            not_applicable_allowed: false,
        }],
        skippable_optional_items: false,
        degradable_soft_items: Vec::new(),
        dimensions: Some(dimensions),
        correction_cycle: false,
    }
}

fn done_closure(policy: &DonePolicy, measures: Option<DimensionMeasures>) -> DoneClosure {
    DoneClosure {
        policy_digest: policy.digest(),
        completion_claim: ClaimResult::Pass,
        criteria: vec![ClosureCriterion {
            criterion_id: "tests".to_owned(),
            result: ClaimResult::Pass,
            evidence_ids: Vec::new(),
        }],
        measures,
    }
}

/// The Done gate's reasons and notes.
fn done_gate(policy: &DonePolicy, closure: &DoneClosure) -> (Vec<String>, Vec<String>) {
    let gate = done::evaluate(&recording(), policy, closure);
    assert_eq!(gate.passed, gate.reasons.is_empty());
    (gate.reasons, gate.notes)
}

// ---------------------------------------------------------------------------------------------
// Operators and rules

#[test]
fn every_operator_compares_measured_with_threshold() {
    // (operator, holds for 1 vs 2, 2 vs 2, 3 vs 2)
    let table = [
        (Operator::Eq, [false, true, false]),
        (Operator::Ne, [true, false, true]),
        (Operator::Lt, [true, false, false]),
        (Operator::Le, [true, true, false]),
        (Operator::Gt, [false, false, true]),
        (Operator::Ge, [false, true, true]),
    ];
    assert_eq!(table.len(), Operator::ALL.len());
    for (operator, expected) in table {
        let held: Vec<bool> = [1, 2, 3].iter().map(|&m| operator.holds(m, 2)).collect();
        assert_eq!(held, expected, "{operator}");
        // Through a gate: the rule passes exactly when the operator holds.
        for (measured, holds) in [1, 2, 3].into_iter().zip(expected) {
            let mut policy = policy();
            policy.gates.quality = gate(
                true,
                vec![rule(
                    "r",
                    "quality.verification_failed",
                    operator.as_str(),
                    2,
                )],
            );
            let measures = with_value(measures(&policy), "quality.verification_failed", measured);
            let (verdict, reasons) = of(&evaluate(&policy, TASK, &measures), Dimension::Quality);
            if holds {
                assert_eq!((verdict, reasons), (GateVerdict::Pass, Vec::new()));
            } else {
                assert_eq!(
                    (verdict, reasons),
                    (
                        GateVerdict::Fail,
                        vec![format!(
                            "rule_failed:r:quality.verification_failed={measured}:{operator}:2"
                        )]
                    )
                );
            }
        }
    }
}

#[test]
fn all_four_gates_are_evaluated_in_order_with_their_required_flags() {
    let policy = policy();
    let results = evaluate(&policy, TASK, &measures(&policy));
    let summary: Vec<(Dimension, bool, GateVerdict)> = results
        .iter()
        .map(|result| (result.dimension, result.required, result.verdict))
        .collect();
    assert_eq!(
        summary,
        vec![
            (Dimension::Quality, true, GateVerdict::Pass),
            (Dimension::Experience, false, GateVerdict::Pass),
            (Dimension::Cost, false, GateVerdict::Unverifiable),
            (Dimension::Stability, false, GateVerdict::Pass),
        ]
    );
    assert_eq!(results[0].code(), None);
    assert_eq!(results[2].code(), Some(GATE_UNVERIFIABLE));
}

#[test]
fn a_rule_over_a_measure_never_taken_is_unverifiable_and_says_which() {
    let policy = policy();
    let results = evaluate(&policy, TASK, &measures(&policy));
    assert_eq!(
        of(&results, Dimension::Cost),
        (
            GateVerdict::Unverifiable,
            strings(&["measure_unavailable:c-tokens:cost.tokens"])
        )
    );
    assert_eq!(
        results[2].code(),
        Some("VALP-E-DIMENSION-GATE-UNVERIFIABLE")
    );
}

#[test]
fn each_failing_rule_of_a_gate_is_named_in_rule_order() {
    let policy = policy();
    let measures = with_value(
        with_value(measures(&policy), "quality.verification_failed", 1),
        "quality.verification_percent",
        50,
    );
    assert_eq!(
        of(&evaluate(&policy, TASK, &measures), Dimension::Quality),
        (
            GateVerdict::Fail,
            strings(&[
                "rule_failed:q-failed:quality.verification_failed=1:eq:0",
                "rule_failed:q-percent:quality.verification_percent=50:ge:100",
            ])
        )
    );
}

#[test]
fn an_unsupported_operator_fails_its_gate_closed_with_its_code() {
    let mut policy = policy();
    policy.gates.quality.rules[0].operator = "approx".to_owned();
    let results = evaluate(&policy, TASK, &measures(&policy));
    assert_eq!(
        of(&results, Dimension::Quality),
        (
            GateVerdict::Unverifiable,
            strings(&["VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:q-failed:approx"])
        )
    );
    assert_eq!(
        results[0].code(),
        Some("VALP-E-DIMENSION-GATE-UNVERIFIABLE")
    );
    // The other gates are untouched.
    assert_eq!(of(&results, Dimension::Stability).0, GateVerdict::Pass);
}

#[test]
fn unverifiable_wins_over_fail_and_both_reasons_are_listed() {
    let mut policy = policy();
    policy.gates.quality.rules[1].operator = "≈".to_owned();
    let measures = with_value(measures(&policy), "quality.verification_failed", 3);
    assert_eq!(
        of(&evaluate(&policy, TASK, &measures), Dimension::Quality),
        (
            GateVerdict::Unverifiable,
            strings(&[
                "rule_failed:q-failed:quality.verification_failed=3:eq:0",
                "VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:q-percent:≈",
            ])
        )
    );
}

#[test]
fn an_unsupported_version_makes_every_gate_unverifiable() {
    let mut policy = policy();
    policy.version = "valp-kernel-dimension-policy.v9".to_owned();
    let results = evaluate(&policy, TASK, &measures(&policy));
    for result in &results {
        assert_eq!(result.verdict, GateVerdict::Unverifiable);
        assert_eq!(
            result.reasons,
            strings(&[
                "VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION:valp-kernel-dimension-policy.v9"
            ])
        );
        assert_eq!(result.code(), Some(GATE_UNVERIFIABLE));
    }
}

#[test]
fn unsupported_names_the_version_or_every_unsupported_operator() {
    assert_eq!(unsupported(&policy()), Vec::<String>::new());
    let mut operators = policy();
    operators.gates.quality.rules[0].operator = "approx".to_owned();
    operators.gates.cost.rules[0].operator = "≤".to_owned();
    assert_eq!(
        unsupported(&operators),
        strings(&[
            "VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:q-failed:approx",
            "VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:c-tokens:≤",
        ])
    );
    // An unsupported version says nothing about its rules: they may mean something else.
    operators.version = "v0".to_owned();
    assert_eq!(
        unsupported(&operators),
        strings(&["VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION:v0"])
    );
}

#[test]
fn a_policy_for_another_task_is_out_of_scope() {
    let mut policy = policy();
    policy.scope_task_id = "task-2".to_owned();
    let results = evaluate(&policy, TASK, &measures(&policy));
    for result in &results {
        assert_eq!(
            (result.verdict, result.reasons.clone()),
            (
                GateVerdict::Unverifiable,
                strings(&["dimension_policy_scope:task-2"])
            )
        );
    }
}

#[test]
fn a_measurement_for_another_policy_id_is_refused() {
    let policy = policy();
    let mut measures = measures(&policy);
    measures.policy_id = "other".to_owned();
    for result in evaluate(&policy, TASK, &measures) {
        assert_eq!(
            (result.verdict, result.reasons),
            (
                GateVerdict::Unverifiable,
                strings(&["dimension_policy_id_mismatch:other"])
            )
        );
    }
}

#[test]
fn a_policy_changed_after_freezing_does_not_match_the_measurement() {
    // The measurement was taken for the frozen policy; a relaxed policy (the Quality floor
    // lowered after a failure) has another digest, so none of its gates can pass.
    let frozen = policy();
    let measures = measures(&frozen);
    let mut relaxed = frozen.clone();
    relaxed.gates.quality.rules[1].threshold = 50;
    for result in evaluate(&relaxed, TASK, &measures) {
        assert_eq!(
            (result.verdict, result.reasons),
            (
                GateVerdict::Unverifiable,
                strings(&["dimension_policy_digest_mismatch"])
            )
        );
    }
}

#[test]
fn a_gate_without_rules_passes() {
    let mut policy = policy();
    policy.gates.cost = GatePolicy::default();
    let results = evaluate(&policy, TASK, &measures(&policy));
    assert_eq!(
        of(&results, Dimension::Cost),
        (GateVerdict::Pass, Vec::new())
    );
}

// ---------------------------------------------------------------------------------------------
// The Done gate with a v2 policy

#[test]
fn a_v2_policy_whose_gates_hold_is_done_with_advisory_notes() {
    let policy = done_policy(policy());
    let closure = done_closure(&policy, Some(measures(policy.dimensions.as_ref().unwrap())));
    assert_eq!(
        done_gate(&policy, &closure),
        (
            Vec::new(),
            strings(&["advisory_dimension:cost:unverifiable"])
        )
    );
}

#[test]
fn a_failing_required_quality_gate_denies_done_and_names_the_dimension() {
    let policy = done_policy(policy());
    let measures = with_value(
        measures(policy.dimensions.as_ref().unwrap()),
        "quality.verification_failed",
        1,
    );
    let closure = done_closure(&policy, Some(measures));
    assert_eq!(
        done_gate(&policy, &closure),
        (
            strings(&["dimension_gate:quality:fail"]),
            strings(&["advisory_dimension:cost:unverifiable"])
        )
    );
    let gates = done::dimension_gates(&recording(), &policy, &closure).unwrap();
    assert_eq!(
        gates[0].reasons,
        strings(&["rule_failed:q-failed:quality.verification_failed=1:eq:0"])
    );
}

#[test]
fn an_unverifiable_required_gate_denies_done() {
    let mut dimensions = policy();
    dimensions.gates.quality.rules[0].operator = "like".to_owned();
    let policy = done_policy(dimensions);
    let closure = done_closure(&policy, Some(measures(policy.dimensions.as_ref().unwrap())));
    assert_eq!(
        done_gate(&policy, &closure).0,
        strings(&["dimension_gate:quality:unverifiable"])
    );
}

#[test]
fn any_required_dimension_gate_that_is_not_pass_denies_done() {
    let mut dimensions = policy();
    dimensions.gates.cost.required = true;
    dimensions.gates.stability.required = true;
    let policy = done_policy(dimensions);
    let measures = with_value(
        measures(policy.dimensions.as_ref().unwrap()),
        "stability.retries",
        5,
    );
    let closure = done_closure(&policy, Some(measures));
    assert_eq!(
        done_gate(&policy, &closure).0,
        strings(&[
            "dimension_gate:cost:unverifiable",
            "dimension_gate:stability:fail"
        ])
    );
}

#[test]
fn a_v2_policy_needs_a_measurement_and_a_v1_policy_refuses_one() {
    let policy = done_policy(policy());
    assert_eq!(
        done_gate(&policy, &done_closure(&policy, None)).0,
        strings(&["dimension_measures_missing"])
    );
    let mut v1 = policy.clone();
    v1.dimensions = None;
    let measures = measures(policy.dimensions.as_ref().unwrap());
    assert_eq!(
        done_gate(&v1, &done_closure(&v1, Some(measures))).0,
        strings(&["dimension_measures_unexpected"])
    );
    // A v1 policy keeps the old rule: no dimension gate at all.
    assert_eq!(
        done_gate(&v1, &done_closure(&v1, None)),
        (Vec::new(), Vec::new())
    );
    assert!(done::dimension_gates(&recording(), &v1, &done_closure(&v1, None)).is_none());
}

#[test]
fn a_closure_for_the_frozen_policy_does_not_close_a_relaxed_one() {
    let frozen = done_policy(policy());
    let measures = with_value(
        measures(frozen.dimensions.as_ref().unwrap()),
        "quality.verification_percent",
        60,
    );
    let closure = done_closure(&frozen, Some(measures.clone()));
    assert_eq!(
        done_gate(&frozen, &closure).0,
        strings(&["dimension_gate:quality:fail"])
    );
    // Lowering the floor after the failure changes the Done policy's digest.
    let mut relaxed = frozen.clone();
    relaxed.dimensions.as_mut().unwrap().gates.quality.rules[1].threshold = 50;
    assert_eq!(
        done_gate(&relaxed, &closure).0,
        strings(&[
            "policy_digest_mismatch",
            "dimension_gate:quality:unverifiable"
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// Canonical forms and decoders

const POLICY_BYTES: &str = concat!(
    r#"{"criteria":[{"criterion_id":"tests","not_applicable_allowed":false,"required":true}],"#,
    r#""degradable_soft_items":[],"dimensions":{"gates":{"#,
    r#""cost":{"required":false,"rules":[{"measure":"cost.tokens","operator":"le","rule_id":"c-tokens","threshold":100000}]},"#,
    r#""experience":{"required":false,"rules":[{"measure":"experience.review_passed","operator":"ge","rule_id":"x-review","threshold":1}]},"#,
    r#""quality":{"required":true,"rules":[{"measure":"quality.verification_failed","operator":"eq","rule_id":"q-failed","threshold":0},"#,
    r#"{"measure":"quality.verification_percent","operator":"ge","rule_id":"q-percent","threshold":100}]},"#,
    r#""stability":{"required":false,"rules":[{"measure":"stability.retries","operator":"le","rule_id":"s-retries","threshold":2}]}},"#,
    r#""policy_id":"task-1:dimensions","scope_task_id":"task-1","version":"valp-kernel-dimension-policy.v1"},"#,
    r#""schema_version":"valp-kernel-done-policy.v2","skippable_optional_items":false}"#,
    "\n"
);

#[test]
fn a_v2_policy_and_closure_have_one_canonical_form_and_round_trip() {
    let policy = done_policy(policy());
    assert_eq!(
        String::from_utf8(policy.canonical_bytes()).unwrap(),
        POLICY_BYTES
    );
    let decoded = decode_done_policy(&decode_canonical(POLICY_BYTES.as_bytes()).unwrap());
    assert_eq!(decoded.unwrap(), policy);
    let closure = done_closure(&policy, Some(measures(policy.dimensions.as_ref().unwrap())));
    let bytes = closure.canonical_bytes();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""schema_version":"valp-kernel-done-closure.v2""#));
    assert!(text.contains(concat!(
        r#""values":[{"measure":"experience.review_passed","value":1},"#,
        r#"{"measure":"quality.verification_failed","value":0},"#
    )));
    let decoded = decode_done_closure(&decode_canonical(&bytes).unwrap()).unwrap();
    assert_eq!(decoded, closure);
}

#[test]
fn a_v1_policy_is_written_exactly_as_before() {
    let mut policy = done_policy(policy());
    policy.dimensions = None;
    assert_eq!(
        String::from_utf8(policy.canonical_bytes()).unwrap(),
        concat!(
            r#"{"criteria":[{"criterion_id":"tests","not_applicable_allowed":false,"required":true}],"#,
            r#""degradable_soft_items":[],"schema_version":"valp-kernel-done-policy.v1","#,
            r#""skippable_optional_items":false}"#,
            "\n"
        )
    );
}

fn parsed(text: &str) -> Value {
    json::parse(text).unwrap()
}

/// The policy's JSON with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> Value {
    assert!(POLICY_BYTES.contains(from), "{from}");
    parsed(&POLICY_BYTES.replacen(from, to, 1))
}

#[track_caller]
fn policy_refused(value: &Value, path: &str, kind: &DecodeErrorKind) {
    let error = decode_done_policy(value).unwrap_err();
    assert_eq!((error.path.as_str(), &error.kind), (path, kind), "{error}");
}

#[test]
fn the_policy_decoder_refuses_every_malformed_shape() {
    // A v1 policy with a dimension section: the member is unknown to v1.
    policy_refused(
        &edited("done-policy.v2", "done-policy.v1"),
        "policy",
        &DecodeErrorKind::UnknownMember("dimensions".to_owned()),
    );
    // A v2 policy without one.
    let mut value = parsed(POLICY_BYTES);
    if let Value::Object(map) = &mut value {
        map.remove("dimensions");
    }
    policy_refused(&value, "policy.dimensions", &DecodeErrorKind::Missing);
    policy_refused(
        &edited("done-policy.v2", "done-policy.v4"),
        "policy.schema_version",
        &DecodeErrorKind::WrongSchema {
            expected: "valp-kernel-done-policy.v1, .v2 or .v3",
            found: "valp-kernel-done-policy.v4".to_owned(),
        },
    );
    // v3 may carry the section, and must name its correction cycle.
    policy_refused(
        &edited("done-policy.v2", "done-policy.v3"),
        "policy.correction_cycle",
        &DecodeErrorKind::Missing,
    );
    policy_refused(
        &edited(
            r#""cost":{"required":false,"rules":[{"measure":"cost.tokens","operator":"le","rule_id":"c-tokens","threshold":100000}]},"#,
            "",
        ),
        "policy.dimensions.gates.cost",
        &DecodeErrorKind::Missing,
    );
    policy_refused(
        &edited(r#""threshold":100000"#, r#""threshold":"many""#),
        "policy.dimensions.gates.cost.rules[0].threshold",
        &DecodeErrorKind::WrongType {
            expected: "integer",
            found: "string",
        },
    );
    policy_refused(
        &edited(r#""rule_id":"c-tokens""#, r#""rule_id":"""#),
        "policy.dimensions.gates.cost.rules[0].rule_id",
        &DecodeErrorKind::Invalid("must be a non-empty string"),
    );
    policy_refused(
        &edited(r#""rule_id":"x-review""#, r#""rule_id":"c-tokens""#),
        "policy.dimensions.gates: rule 1",
        &DecodeErrorKind::Invalid("duplicate rule_id"),
    );
    policy_refused(
        &edited(
            r#""required":false,"rules":[{"measure":"stability.retries","operator":"le","rule_id":"s-retries","threshold":2}]"#,
            r#""required":true,"rules":[]"#,
        ),
        "policy.dimensions.gates.stability.rules",
        &DecodeErrorKind::Invalid("a required gate needs at least one rule"),
    );
    policy_refused(
        &edited(
            r#""scope_task_id":"task-1","#,
            r#""scope_task_id":"task-1","extra":1,"#,
        ),
        "policy.dimensions",
        &DecodeErrorKind::UnknownMember("extra".to_owned()),
    );
}

#[test]
fn an_unsupported_operator_or_version_decodes_so_the_gate_can_refuse_it() {
    let value = edited(r#""operator":"eq""#, r#""operator":"approx""#);
    let decoded = decode_done_policy(&value).unwrap();
    assert_eq!(
        decoded.dimensions.unwrap().gates.quality.rules[0].operator,
        "approx"
    );
    let value = edited("dimension-policy.v1", "dimension-policy.v2");
    let dimensions = decode_done_policy(&value).unwrap().dimensions.unwrap();
    assert_eq!(dimensions.version, "valp-kernel-dimension-policy.v2");
    // The section alone decodes the same way.
    let Value::Object(map) = parsed(POLICY_BYTES) else {
        panic!("an object")
    };
    assert_eq!(
        decode_dimension_policy(&map["dimensions"]).unwrap(),
        policy()
    );
}

#[test]
fn the_measurement_decoder_wants_sorted_unique_integer_values() {
    let good = concat!(
        r#"{"policy_digest":"sha256:00","policy_id":"p","schema_version":"valp-kernel-dimension-measures.v1","#,
        r#""values":[{"measure":"a","value":1},{"measure":"b","value":-2}]}"#
    );
    let decoded = decode_dimension_measures(&parsed(good)).unwrap();
    assert_eq!(decoded.values, values(&[("a", 1), ("b", -2)]));
    for (text, path, kind) in [
        (
            good.replace(r#""measure":"b""#, r#""measure":"a""#),
            "measures.values[1].measure",
            DecodeErrorKind::Invalid("values must be sorted by measure, each measure once"),
        ),
        (
            good.replace(r#""value":-2"#, r#""value":2.5"#),
            "measures.values[1].value",
            DecodeErrorKind::WrongType {
                expected: "integer",
                found: "non-integer or out-of-range number",
            },
        ),
        (
            good.replace("measures.v1", "measures.v2"),
            "measures.schema_version",
            DecodeErrorKind::WrongSchema {
                expected: "valp-kernel-dimension-measures.v1",
                found: "valp-kernel-dimension-measures.v2".to_owned(),
            },
        ),
    ] {
        let error = decode_dimension_measures(&parsed(&text)).unwrap_err();
        assert_eq!((error.path.as_str(), error.kind), (path, kind), "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Independence

const MEASURES: &[&str] = &["m.a", "m.b", "m.c"];
const OPERATORS: &[&str] = &["eq", "ne", "lt", "le", "gt", "ge", "approx"];

fn arb_rule() -> impl Strategy<Value = DimensionRule> {
    (
        0usize..MEASURES.len(),
        0usize..OPERATORS.len(),
        -3i64..4,
        0u32..1000,
    )
        .prop_map(|(measure, operator, threshold, id)| DimensionRule {
            rule_id: format!("r{id}"),
            measure: MEASURES[measure].to_owned(),
            operator: OPERATORS[operator].to_owned(),
            threshold: Int::from(threshold),
        })
}

fn arb_gate() -> impl Strategy<Value = GatePolicy> {
    (any::<bool>(), prop::collection::vec(arb_rule(), 0..4))
        .prop_map(|(required, rules)| GatePolicy { required, rules })
}

fn arb_values() -> impl Strategy<Value = BTreeMap<String, Int>> {
    prop::collection::btree_map(
        prop::sample::select(MEASURES).prop_map(str::to_owned),
        (-3i64..4).prop_map(Int::from),
        0..=MEASURES.len(),
    )
}

fn with_gates(gates: DimensionGates) -> (DimensionPolicy, DimensionMeasures) {
    let policy = DimensionPolicy {
        policy_id: "p".to_owned(),
        version: POLICY_VERSION.to_owned(),
        scope_task_id: TASK.to_owned(),
        gates,
    };
    let measures = DimensionMeasures {
        policy_id: "p".to_owned(),
        policy_digest: policy.digest(),
        values: BTreeMap::new(),
    };
    (policy, measures)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Each gate's result depends only on its own gate policy and the measured values: it is
    /// the same whatever the other three dimensions declare.
    #[test]
    fn each_gate_is_independent_of_the_other_dimensions(
        gates in prop::array::uniform4(arb_gate()),
        others in prop::array::uniform4(arb_gate()),
        values in arb_values(),
    ) {
        let [quality, experience, cost, stability] = gates;
        let (policy, mut measures) = with_gates(DimensionGates {
            quality, experience, cost, stability,
        });
        measures.values = values.clone();
        let results = evaluate(&policy, TASK, &measures);
        for (index, &dimension) in Dimension::ALL.iter().enumerate() {
            // Replace every other gate; keep this one.
            let [q, x, c, s] = others.clone();
            let mut changed = DimensionGates { quality: q, experience: x, cost: c, stability: s };
            *changed.get_mut(dimension) = policy.gates.get(dimension).clone();
            let (changed, mut changed_measures) = with_gates(changed);
            changed_measures.values = values.clone();
            let again = evaluate(&changed, TASK, &changed_measures);
            prop_assert_eq!(&again[index], &results[index]);
        }
    }
}
