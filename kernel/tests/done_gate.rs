//! The Done gate (RFC 0002 §10, `kernel/DEVIATIONS.md` D2): every row of the default-deny Done
//! matrix with its exact reason or note, the evidence binding rules, and the canonical forms and
//! strict decoders of the policy, closure and gate records.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::canonical::{Canonical, decode_canonical, sha256_digest};
use valp_kernel::decode::{DecodeError, DecodeErrorKind};
use valp_kernel::done::{
    ClosureCriterion, DoneClosure, DoneGate, DonePolicy, PolicyCriterion, decode_done_closure,
    decode_done_gate, decode_done_policy, evaluate, evaluate_bound, locate,
};
use valp_kernel::json::{self, Value};
use valp_kernel::{
    ClaimResult, Dependency, ErrorCode, Evidence, Identity, IdentityKind, Open, Requirement, State,
    StateBody, TaskStatus, WorkItem, WorkItemStatus,
};

use ClaimResult as C;
use Requirement as R;
use WorkItemStatus as S;

// ---------------------------------------------------------------------------------------------
// Fixtures

fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

fn item(value: &str, requirement: Requirement, status: WorkItemStatus) -> WorkItem {
    WorkItem {
        task_id: id(IdentityKind::Task, "task-1"),
        work_item_id: id(IdentityKind::WorkItem, value),
        requirement,
        status,
        dependencies: Vec::new(),
        current_attempt: None,
    }
}

fn depends(mut item: WorkItem, target: &str, requirement: Requirement) -> WorkItem {
    item.dependencies.push(Dependency {
        work_item_id: id(IdentityKind::WorkItem, target),
        requirement,
    });
    item
}

/// A task in `recording` with the given work items.
fn recording(items: Vec<WorkItem>) -> StateBody {
    let mut state = State::genesis(
        id(IdentityKind::Installation, "inst-1"),
        1,
        id(IdentityKind::Task, "task-1"),
        items,
    )
    .body;
    state.status = Open::Known(TaskStatus::Recording);
    state.revision = 9;
    state
}

/// Three completed items: `wi-req` (required), `wi-opt` (optional, hard edge to `wi-req`),
/// `wi-soft` (soft, soft edge to `wi-opt`).
fn items() -> Vec<WorkItem> {
    vec![
        item("wi-req", R::Required, S::Completed),
        depends(
            item("wi-opt", R::Optional, S::Completed),
            "wi-req",
            R::Required,
        ),
        depends(item("wi-soft", R::Soft, S::Completed), "wi-opt", R::Soft),
    ]
}

fn state() -> StateBody {
    recording(items())
}

/// The state with one item's status replaced.
fn with_status(value: &str, status: WorkItemStatus) -> StateBody {
    let mut state = state();
    for item in &mut state.work_items {
        if item.work_item_id.value() == value {
            item.status = status;
        }
    }
    state
}

fn criterion(criterion_id: &str, required: bool, not_applicable_allowed: bool) -> PolicyCriterion {
    PolicyCriterion {
        criterion_id: criterion_id.to_owned(),
        required,
        not_applicable_allowed,
    }
}

/// `tests` (required), `docs` (required, may be `not_applicable`), `lint` (advisory); optional
/// items may be skipped; `wi-soft` may end degraded.
fn policy() -> DonePolicy {
    DonePolicy {
        criteria: vec![
            criterion("tests", true, false),
            criterion("docs", true, true),
            criterion("lint", false, false),
        ],
        skippable_optional_items: true,
        degradable_soft_items: vec!["wi-soft".to_owned()],
        dimensions: None,
        correction_cycle: false,
    }
}

fn claimed(criterion_id: &str, result: ClaimResult, evidence: &[&str]) -> ClosureCriterion {
    ClosureCriterion {
        criterion_id: criterion_id.to_owned(),
        result,
        evidence_ids: evidence.iter().map(|&id| id.to_owned()).collect(),
    }
}

/// A closure of `policy` where everything passes.
fn closure(policy: &DonePolicy) -> DoneClosure {
    DoneClosure {
        policy_digest: policy.digest(),
        completion_claim: C::Pass,
        criteria: vec![
            claimed("tests", C::Pass, &["ev-tests"]),
            claimed("docs", C::Pass, &["ev-docs"]),
            claimed("lint", C::Pass, &[]),
        ],
        measures: None,
    }
}

/// The passing closure with criterion `criterion_id`'s claim replaced.
fn closure_with(criterion_id: &str, result: ClaimResult, evidence: &[&str]) -> DoneClosure {
    let mut closure = closure(&policy());
    for claim in &mut closure.criteria {
        if claim.criterion_id == criterion_id {
            *claim = claimed(criterion_id, result, evidence);
        }
    }
    closure
}

/// `(reasons, notes)`, checking that `passed` agrees with them.
fn run(
    state: &StateBody,
    policy: &DonePolicy,
    closure: &DoneClosure,
) -> (Vec<String>, Vec<String>) {
    let gate = evaluate(state, policy, closure);
    assert_eq!(gate.passed, gate.reasons.is_empty(), "{gate:?}");
    (gate.reasons, gate.notes)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

/// Asserts that the gate refuses with exactly `reasons` (notes not checked).
#[track_caller]
fn refuses(state: &StateBody, policy: &DonePolicy, closure: &DoneClosure, reasons: &[&str]) {
    assert_eq!(run(state, policy, closure).0, strings(reasons));
}

/// Asserts that the gate passes with exactly `notes`.
#[track_caller]
fn passes(state: &StateBody, policy: &DonePolicy, closure: &DoneClosure, notes: &[&str]) {
    assert_eq!(run(state, policy, closure), (Vec::new(), strings(notes)));
}

fn evidence(value: &str, digest_of: &str) -> Evidence {
    Evidence {
        evidence_id: id(IdentityKind::Evidence, value),
        content_digest: sha256_digest(digest_of.as_bytes()),
    }
}

// ---------------------------------------------------------------------------------------------
// The matrix

#[test]
fn everything_completed_and_passing_is_done_with_no_notes() {
    passes(&state(), &policy(), &closure(&policy()), &[]);
}

#[test]
fn a_task_outside_recording_is_never_done() {
    for status in TaskStatus::ALL {
        let mut state = state();
        state.status = Open::Known(*status);
        let (reasons, _) = run(&state, &policy(), &closure(&policy()));
        if *status == TaskStatus::Recording {
            assert_eq!(reasons, Vec::<String>::new());
        } else {
            assert_eq!(reasons, [format!("task_status:{status}")]);
        }
    }
    let mut unknown = state();
    unknown.status = Open::Unknown("paused".to_owned());
    refuses(
        &unknown,
        &policy(),
        &closure(&policy()),
        &["task_status:paused"],
    );
}

#[test]
fn the_top_level_completion_claim_must_be_pass() {
    for result in ClaimResult::ALL {
        let mut closure = closure(&policy());
        closure.completion_claim = *result;
        let (reasons, _) = run(&state(), &policy(), &closure);
        if *result == C::Pass {
            assert!(reasons.is_empty());
        } else {
            assert_eq!(reasons, [format!("completion_claim:{result}")], "{result}");
        }
    }
}

#[test]
fn the_closure_must_name_the_frozen_policy() {
    let mut other = policy();
    other.skippable_optional_items = false;
    let closure = closure(&policy());
    refuses(&state(), &other, &closure, &["policy_digest_mismatch"]);
    let mut malformed = closure.clone();
    malformed.policy_digest = "sha256:abc".to_owned();
    refuses(&state(), &policy(), &malformed, &["policy_digest_mismatch"]);
}

#[test]
fn a_required_criterion_must_pass() {
    for result in [C::Fail, C::Unknown, C::Partial, C::Degraded] {
        refuses(
            &state(),
            &policy(),
            &closure_with("tests", result, &["ev-tests"]),
            &[&format!("criterion:tests:{result}")],
        );
    }
    let mut missing = closure(&policy());
    missing
        .criteria
        .retain(|claim| claim.criterion_id != "tests");
    refuses(&state(), &policy(), &missing, &["criterion_missing:tests"]);
}

#[test]
fn not_applicable_needs_the_predeclared_rule_and_supporting_evidence() {
    // docs: not_applicable_allowed, with evidence: allowed, and noted.
    passes(
        &state(),
        &policy(),
        &closure_with("docs", C::NotApplicable, &["ev-no-docs"]),
        &["not_applicable:docs"],
    );
    // docs without evidence.
    refuses(
        &state(),
        &policy(),
        &closure_with("docs", C::NotApplicable, &[]),
        &["not_applicable_without_evidence:docs"],
    );
    // tests: no applicability rule, evidence or not.
    refuses(
        &state(),
        &policy(),
        &closure_with("tests", C::NotApplicable, &["ev-why"]),
        &["not_applicable_not_allowed:tests"],
    );
    refuses(
        &state(),
        &policy(),
        &closure_with("tests", C::NotApplicable, &[]),
        &["not_applicable_not_allowed:tests"],
    );
}

#[test]
fn an_advisory_criterion_never_blocks_but_is_noted() {
    for result in [
        C::Fail,
        C::Unknown,
        C::Partial,
        C::Degraded,
        C::NotApplicable,
    ] {
        passes(
            &state(),
            &policy(),
            &closure_with("lint", result, &[]),
            &[&format!("advisory_criterion:lint:{result}")],
        );
    }
    let mut missing = closure(&policy());
    missing
        .criteria
        .retain(|claim| claim.criterion_id != "lint");
    passes(
        &state(),
        &policy(),
        &missing,
        &["advisory_criterion:lint:missing"],
    );
    // A supported not_applicable is noted as such, advisory or not.
    let mut policy = policy();
    policy.criteria[2].not_applicable_allowed = true;
    let mut closure = closure(&policy);
    closure.criteria[2] = claimed("lint", C::NotApplicable, &["ev-no-lint"]);
    passes(&state(), &policy, &closure, &["not_applicable:lint"]);
}

#[test]
fn closure_criteria_must_be_the_policys_and_unique() {
    let mut unknown = closure(&policy());
    unknown.criteria.push(claimed("perf", C::Pass, &[]));
    refuses(&state(), &policy(), &unknown, &["unknown_criterion:perf"]);

    let mut duplicate = closure(&policy());
    duplicate.criteria.push(claimed("tests", C::Fail, &[]));
    refuses(
        &state(),
        &policy(),
        &duplicate,
        &["duplicate_criterion:tests"],
    );

    let mut policy = policy();
    policy.criteria.push(criterion("docs", false, false));
    let closure = closure(&policy);
    refuses(
        &state(),
        &policy,
        &closure,
        &["duplicate_policy_criterion:docs"],
    );
}

#[test]
fn no_work_item_may_be_unsettled_whatever_its_requirement() {
    for value in ["wi-req", "wi-opt", "wi-soft"] {
        for status in [S::Pending, S::Eligible, S::Submitted, S::Running] {
            let state = with_status(value, status);
            let mut expected = vec![format!("item_not_settled:{value}:{status}")];
            if value == "wi-req" {
                // wi-opt is completed and hard-depends on wi-req.
                expected.push(format!("hard_dependency:wi-opt->wi-req:{status}"));
            }
            assert_eq!(run(&state, &policy(), &closure(&policy())).0, expected);
        }
    }
}

#[test]
fn a_required_work_item_must_be_completed() {
    let policy = policy();
    for status in [
        S::Partial,
        S::Degraded,
        S::Blocked,
        S::Failed,
        S::Cancelled,
        S::Skipped,
    ] {
        // wi-req alone, so no dependency reason follows.
        let state = recording(vec![item("wi-req", R::Required, status)]);
        let mut policy = policy.clone();
        policy.degradable_soft_items.clear();
        refuses(
            &state,
            &policy,
            &closure(&policy),
            &[&format!("required_item:wi-req:{status}")],
        );
    }
}

#[test]
fn an_optional_work_item_may_be_skipped_only_under_the_policy() {
    for status in [S::Skipped, S::Failed, S::Cancelled] {
        passes(
            &with_status("wi-opt", status),
            &policy(),
            &closure(&policy()),
            &["optional_skipped:wi-opt"],
        );
        let mut strict = policy();
        strict.skippable_optional_items = false;
        refuses(
            &with_status("wi-opt", status),
            &strict,
            &closure(&strict),
            &[&format!("optional_item:wi-opt:{status}")],
        );
    }
    // Partial, degraded and blocked are not skips: default deny, whatever the policy.
    for status in [S::Partial, S::Degraded, S::Blocked] {
        refuses(
            &with_status("wi-opt", status),
            &policy(),
            &closure(&policy()),
            &[&format!("optional_item:wi-opt:{status}")],
        );
    }
}

#[test]
fn a_soft_work_item_may_be_degraded_only_within_the_floor() {
    passes(
        &with_status("wi-soft", S::Degraded),
        &policy(),
        &closure(&policy()),
        &["soft_degraded:wi-soft"],
    );
    let mut no_floor = policy();
    no_floor.degradable_soft_items.clear();
    refuses(
        &with_status("wi-soft", S::Degraded),
        &no_floor,
        &closure(&no_floor),
        &["soft_item:wi-soft:degraded"],
    );
    for status in [S::Partial, S::Blocked, S::Failed, S::Cancelled, S::Skipped] {
        refuses(
            &with_status("wi-soft", status),
            &policy(),
            &closure(&policy()),
            &[&format!("soft_item:wi-soft:{status}")],
        );
    }
}

#[test]
fn only_soft_work_items_may_be_in_the_degradation_floor() {
    let mut policy = policy();
    policy.degradable_soft_items = strings(&["wi-soft", "wi-req", "wi-opt", "wi-ghost"]);
    refuses(
        &state(),
        &policy,
        &closure(&policy),
        &[
            "degradable_not_soft:wi-req",
            "degradable_not_soft:wi-opt",
            "degradable_not_soft:wi-ghost",
        ],
    );
}

#[test]
fn a_hard_dependency_of_a_delivered_item_must_be_completed() {
    // wi-opt (completed) hard-depends on wi-ghost, which does not exist.
    let state = recording(vec![
        item("wi-req", R::Required, S::Completed),
        depends(
            item("wi-opt", R::Optional, S::Completed),
            "wi-ghost",
            R::Required,
        ),
    ]);
    let mut policy = policy();
    policy.degradable_soft_items.clear();
    refuses(
        &state,
        &policy,
        &closure(&policy),
        &["hard_dependency:wi-opt->wi-ghost:missing"],
    );

    // A completed required item hard-depending on a skipped optional one: the skip is allowed,
    // the dependent's result is not.
    let state = recording(vec![
        item("wi-a", R::Optional, S::Skipped),
        depends(item("wi-b", R::Required, S::Completed), "wi-a", R::Required),
    ]);
    let (reasons, notes) = run(&state, &policy, &closure(&policy));
    assert_eq!(reasons, ["hard_dependency:wi-b->wi-a:skipped"]);
    assert_eq!(notes, ["optional_skipped:wi-a"]);

    // A degraded soft item counts as delivered: its hard dependencies are checked too.
    let state = recording(vec![
        item("wi-a", R::Optional, S::Cancelled),
        depends(item("wi-s", R::Soft, S::Degraded), "wi-a", R::Required),
    ]);
    let mut floor = policy.clone();
    floor.degradable_soft_items = strings(&["wi-s"]);
    let (reasons, notes) = run(&state, &floor, &closure(&floor));
    assert_eq!(reasons, ["hard_dependency:wi-s->wi-a:cancelled"]);
    assert_eq!(notes, ["optional_skipped:wi-a", "soft_degraded:wi-s"]);

    // Soft and optional edges never block (the target's own row decides).
    let state = recording(vec![
        item("wi-a", R::Optional, S::Skipped),
        depends(
            depends(item("wi-b", R::Required, S::Completed), "wi-a", R::Soft),
            "wi-a",
            R::Optional,
        ),
    ]);
    passes(
        &state,
        &policy,
        &closure(&policy),
        &["optional_skipped:wi-a"],
    );

    // A skipped item's own hard dependencies do not matter: it produced nothing.
    let state = recording(vec![
        item("wi-a", R::Optional, S::Skipped),
        depends(item("wi-b", R::Optional, S::Skipped), "wi-a", R::Required),
    ]);
    passes(
        &state,
        &policy,
        &closure(&policy),
        &["optional_skipped:wi-a", "optional_skipped:wi-b"],
    );
}

#[test]
fn a_task_without_work_items_or_criteria_needs_only_the_claim() {
    let policy = DonePolicy {
        criteria: Vec::new(),
        skippable_optional_items: false,
        degradable_soft_items: Vec::new(),
        correction_cycle: false,
        dimensions: None,
    };
    let closure = DoneClosure {
        policy_digest: policy.digest(),
        completion_claim: C::Pass,
        criteria: Vec::new(),
        measures: None,
    };
    passes(&recording(Vec::new()), &policy, &closure, &[]);
}

#[test]
fn every_reason_is_reported_in_check_order() {
    let mut state = recording(vec![
        item("wi-1", R::Required, S::Failed),
        item("wi-2", R::Optional, S::Running),
        depends(item("wi-3", R::Soft, S::Degraded), "wi-1", R::Required),
    ]);
    state.status = Open::Known(TaskStatus::Reviewing);
    let mut policy = policy();
    policy.degradable_soft_items = strings(&["wi-1"]);
    let closure = DoneClosure {
        policy_digest: "sha256:0".to_owned(),
        completion_claim: C::Partial,
        criteria: vec![
            claimed("perf", C::Pass, &[]),
            claimed("docs", C::NotApplicable, &[]),
            claimed("lint", C::Fail, &[]),
        ],
        measures: None,
    };
    assert_eq!(
        run(&state, &policy, &closure),
        (
            strings(&[
                "task_status:reviewing",
                "policy_digest_mismatch",
                "degradable_not_soft:wi-1",
                "completion_claim:partial",
                "criterion_missing:tests",
                "not_applicable_without_evidence:docs",
                "unknown_criterion:perf",
                "required_item:wi-1:failed",
                "item_not_settled:wi-2:running",
                "soft_item:wi-3:degraded",
                "hard_dependency:wi-3->wi-1:failed",
            ]),
            strings(&["advisory_criterion:lint:fail"])
        )
    );
}

#[test]
fn evaluation_is_deterministic_and_pure() {
    let state = with_status("wi-opt", S::Skipped);
    let first = evaluate(&state, &policy(), &closure(&policy()));
    for _ in 0..3 {
        let again = evaluate(&state, &policy(), &closure(&policy()));
        assert_eq!(again.canonical_bytes(), first.canonical_bytes());
    }
}

// ---------------------------------------------------------------------------------------------
// Evidence binding

#[test]
fn cited_evidence_must_be_in_the_recording_completed_evidence_set() {
    let set = vec![evidence("ev-tests", "t"), evidence("ev-docs", "d")];
    let gate = evaluate_bound(&state(), &set, &policy(), &closure(&policy()));
    assert!(gate.passed, "{gate:?}");

    let gate = evaluate_bound(&state(), &set[..1], &policy(), &closure(&policy()));
    assert_eq!(
        gate,
        DoneGate {
            passed: false,
            reasons: strings(&["criterion_evidence_not_bound:docs:ev-docs"]),
            notes: Vec::new(),
        }
    );
    // Reasons of the matrix come first.
    let mut failing = closure(&policy());
    failing.completion_claim = C::Fail;
    let gate = evaluate_bound(&state(), &[], &policy(), &failing);
    assert_eq!(
        gate.reasons,
        [
            "completion_claim:fail",
            "criterion_evidence_not_bound:tests:ev-tests",
            "criterion_evidence_not_bound:docs:ev-docs",
        ]
    );
}

#[test]
fn locate_finds_exactly_the_frozen_policy_and_one_closure() {
    let policy = evidence("done-policy-1111222233334444", "policy");
    let closure = evidence("done-closure-aaaabbbbccccdddd", "closure");
    let other = evidence("ev-tests", "t");
    let frozen = [policy.clone()];
    let two = [policy.clone(), evidence("done-policy-2", "p2")];

    let set = vec![other.clone(), closure.clone(), policy.clone()];
    let located = locate(&frozen, &set).unwrap();
    assert_eq!((located.policy, located.closure), (&policy, &closure));

    let cases: Vec<(&[Evidence], Vec<Evidence>, &[&str])> = vec![
        (&[], set.clone(), &["done_policy_missing"]),
        (
            &[],
            vec![other.clone()],
            &["done_policy_missing", "done_closure_missing"],
        ),
        (&two, set.clone(), &["done_policy_ambiguous"]),
        (
            &frozen,
            vec![closure.clone()],
            &["done_policy_not_bound:done-policy-1111222233334444"],
        ),
        (
            &frozen,
            // Same id, another digest: not the frozen policy.
            vec![
                evidence("done-policy-1111222233334444", "relaxed"),
                closure.clone(),
            ],
            &[
                "done_policy_not_bound:done-policy-1111222233334444",
                "done_policy_changed:done-policy-1111222233334444",
            ],
        ),
        (
            &frozen,
            vec![
                policy.clone(),
                evidence("done-policy-9", "new"),
                closure.clone(),
            ],
            &["done_policy_changed:done-policy-9"],
        ),
        (&frozen, vec![policy.clone()], &["done_closure_missing"]),
        (
            &frozen,
            vec![
                policy.clone(),
                closure.clone(),
                evidence("done-closure-2", "c2"),
            ],
            &["done_closure_ambiguous"],
        ),
    ];
    for (frozen, set, reasons) in cases {
        assert_eq!(locate(frozen, &set), Err(strings(reasons)), "{set:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Canonical forms

const POLICY_BYTES: &str = concat!(
    r#"{"criteria":[{"criterion_id":"tests","not_applicable_allowed":false,"required":true},"#,
    r#"{"criterion_id":"docs","not_applicable_allowed":true,"required":true},"#,
    r#"{"criterion_id":"lint","not_applicable_allowed":false,"required":false}],"#,
    r#""degradable_soft_items":["wi-soft"],"schema_version":"valp-kernel-done-policy.v1","#,
    r#""skippable_optional_items":true}"#,
    "\n"
);

/// SHA-256 of [`POLICY_BYTES`], computed independently (Python `hashlib`).
const POLICY_DIGEST: &str =
    "sha256:bf5f7b63049beec41639daa09835cdb18f6e9759d2868ba97603983654c6b21c";

fn closure_bytes() -> String {
    format!(
        concat!(
            r#"{{"completion_claim":"pass","criteria":["#,
            r#"{{"criterion_id":"tests","evidence_ids":["ev-tests"],"result":"pass"}},"#,
            r#"{{"criterion_id":"docs","evidence_ids":["ev-docs"],"result":"pass"}},"#,
            r#"{{"criterion_id":"lint","evidence_ids":[],"result":"pass"}}],"#,
            r#""policy_digest":"{}","schema_version":"valp-kernel-done-closure.v1"}}"#,
            "\n"
        ),
        POLICY_DIGEST
    )
}

const GATE_BYTES: &str = concat!(
    r#"{"notes":["optional_skipped:wi-opt"],"passed":false,"#,
    r#""reasons":["completion_claim:fail"],"schema_version":"valp-kernel-done-gate.v1"}"#,
    "\n"
);

fn value(text: &str) -> Value {
    decode_canonical(text.as_bytes()).unwrap()
}

#[test]
fn canonical_forms_are_exact_and_round_trip() {
    let policy = policy();
    assert_eq!(
        String::from_utf8(policy.canonical_bytes()).unwrap(),
        POLICY_BYTES
    );
    assert_eq!(policy.digest(), POLICY_DIGEST);
    assert_eq!(sha256_digest(POLICY_BYTES.as_bytes()), POLICY_DIGEST);
    assert_eq!(decode_done_policy(&value(POLICY_BYTES)).unwrap(), policy);

    let closure = closure(&policy);
    assert_eq!(
        String::from_utf8(closure.canonical_bytes()).unwrap(),
        closure_bytes()
    );
    assert_eq!(
        decode_done_closure(&value(&closure_bytes())).unwrap(),
        closure
    );

    let gate = DoneGate::from_findings(
        strings(&["completion_claim:fail"]),
        strings(&["optional_skipped:wi-opt"]),
    );
    assert_eq!(
        String::from_utf8(gate.canonical_bytes()).unwrap(),
        GATE_BYTES
    );
    assert_eq!(decode_done_gate(&value(GATE_BYTES)).unwrap(), gate);

    // Every gate the matrix produces round-trips.
    for status in [S::Skipped, S::Degraded, S::Failed, S::Running] {
        let gate = evaluate(&with_status("wi-soft", status), &policy, &closure);
        let bytes = gate.canonical_bytes();
        let decoded = decode_done_gate(&decode_canonical(&bytes).unwrap()).unwrap();
        assert_eq!(decoded, gate);
        assert_eq!(decoded.canonical_bytes(), bytes);
    }
}

// ---------------------------------------------------------------------------------------------
// Strict decoding

/// `text` (JSON, not necessarily canonical) parsed.
fn parsed(text: &str) -> Value {
    json::parse(text).unwrap()
}

fn policy_error(text: &str) -> DecodeError {
    decode_done_policy(&parsed(text)).unwrap_err()
}

fn closure_error(text: &str) -> DecodeError {
    decode_done_closure(&parsed(text)).unwrap_err()
}

fn gate_error(text: &str) -> DecodeError {
    decode_done_gate(&parsed(text)).unwrap_err()
}

fn error(path: &str, kind: DecodeErrorKind) -> DecodeError {
    DecodeError {
        path: path.to_owned(),
        kind,
    }
}

const P: &str = r#""schema_version":"valp-kernel-done-policy.v1""#;
const K: &str = r#""schema_version":"valp-kernel-done-closure.v1""#;
const G: &str = r#""schema_version":"valp-kernel-done-gate.v1""#;
const CRITERION: &str = r#"{"criterion_id":"t","required":true,"not_applicable_allowed":false}"#;

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn the_policy_decoder_is_strict() {
    let ok = format!(
        r#"{{{P},"criteria":[{CRITERION}],"skippable_optional_items":false,"degradable_soft_items":[]}}"#
    );
    assert!(decode_done_policy(&parsed(&ok)).is_ok());
    let cases = [
        (
            format!(
                r#"{{{P},"criteria":[],"skippable_optional_items":false,"degradable_soft_items":[],"floor":1}}"#
            ),
            error("policy", DecodeErrorKind::UnknownMember("floor".to_owned())),
        ),
        (
            format!(
                r#"{{{P},"criteria":[{{"criterion_id":"t","required":true,"not_applicable_allowed":false,"weight":2}}],"skippable_optional_items":false,"degradable_soft_items":[]}}"#
            ),
            error(
                "policy.criteria[0]",
                DecodeErrorKind::UnknownMember("weight".to_owned()),
            ),
        ),
        (
            format!(r#"{{{P},"criteria":[],"skippable_optional_items":false}}"#),
            error("policy.degradable_soft_items", DecodeErrorKind::Missing),
        ),
        (
            format!(r#"{{{P},"skippable_optional_items":false,"degradable_soft_items":[]}}"#),
            error("policy.criteria", DecodeErrorKind::Missing),
        ),
        (
            r#"{"schema_version":"valp-kernel-done-policy.v4","criteria":[],"skippable_optional_items":false,"degradable_soft_items":[]}"#
                .to_owned(),
            error(
                "policy.schema_version",
                DecodeErrorKind::WrongSchema {
                    expected: "valp-kernel-done-policy.v1, .v2 or .v3",
                    found: "valp-kernel-done-policy.v4".to_owned(),
                },
            ),
        ),
        (
            // v3 names the correction cycle Done needs after a signal.
            r#"{"schema_version":"valp-kernel-done-policy.v3","criteria":[],"skippable_optional_items":false,"degradable_soft_items":[]}"#
                .to_owned(),
            error("policy.correction_cycle", DecodeErrorKind::Missing),
        ),
        (
            // v2 carries the dimension gates (tests/dimension_gates.rs).
            r#"{"schema_version":"valp-kernel-done-policy.v2","criteria":[],"skippable_optional_items":false,"degradable_soft_items":[]}"#
                .to_owned(),
            error("policy.dimensions", DecodeErrorKind::Missing),
        ),
        (
            format!(r#"{{{P},"criteria":[],"skippable_optional_items":1,"degradable_soft_items":[]}}"#),
            error(
                "policy.skippable_optional_items",
                DecodeErrorKind::WrongType {
                    expected: "boolean",
                    found: "integer",
                },
            ),
        ),
        (
            format!(
                r#"{{{P},"criteria":[{{"criterion_id":"t","required":"yes","not_applicable_allowed":false}}],"skippable_optional_items":false,"degradable_soft_items":[]}}"#
            ),
            error(
                "policy.criteria[0].required",
                DecodeErrorKind::WrongType {
                    expected: "boolean",
                    found: "string",
                },
            ),
        ),
        (
            format!(
                r#"{{{P},"criteria":[{CRITERION},{CRITERION}],"skippable_optional_items":false,"degradable_soft_items":[]}}"#
            ),
            error(
                "policy.criteria[1].criterion_id",
                DecodeErrorKind::Invalid("duplicate criterion_id"),
            ),
        ),
        (
            format!(
                r#"{{{P},"criteria":[{{"criterion_id":"","required":true,"not_applicable_allowed":false}}],"skippable_optional_items":false,"degradable_soft_items":[]}}"#
            ),
            error(
                "policy.criteria[0].criterion_id",
                DecodeErrorKind::Invalid("must be a non-empty string"),
            ),
        ),
        (
            format!(
                r#"{{{P},"criteria":[],"skippable_optional_items":false,"degradable_soft_items":["a","a"]}}"#
            ),
            error(
                "policy.degradable_soft_items[1]",
                DecodeErrorKind::Invalid("duplicate work item id"),
            ),
        ),
        (
            format!(
                r#"{{{P},"criteria":[],"skippable_optional_items":false,"degradable_soft_items":[7]}}"#
            ),
            error(
                "policy.degradable_soft_items[0]",
                DecodeErrorKind::WrongType {
                    expected: "string",
                    found: "integer",
                },
            ),
        ),
    ];
    for (text, expected) in cases {
        let found = policy_error(&text);
        assert_eq!(found, expected, "{text}");
        assert_eq!(found.code(), ErrorCode::StateConflict, "{text}");
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn the_closure_decoder_is_strict_and_its_claims_closed() {
    let digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let with = |claim: &str, criteria: &str, extra: &str| {
        format!(
            r#"{{{K},"policy_digest":"{digest}","completion_claim":{claim},"criteria":[{criteria}]{extra}}}"#
        )
    };
    let good = r#"{"criterion_id":"t","result":"pass","evidence_ids":["e1"]}"#;
    assert!(decode_done_closure(&parsed(&with(r#""pass""#, good, ""))).is_ok());

    // A claim result outside the vocabulary: VALP-E-UNKNOWN-ENUM-VALUE, naming the member.
    for (text, path, bad) in [
        (
            with(r#""passed""#, good, ""),
            "closure.completion_claim",
            "passed",
        ),
        (
            with(r#""PASS""#, good, ""),
            "closure.completion_claim",
            "PASS",
        ),
        (
            with(
                r#""pass""#,
                r#"{"criterion_id":"t","result":"n/a","evidence_ids":[]}"#,
                "",
            ),
            "closure.criteria[0].result",
            "n/a",
        ),
    ] {
        let found = closure_error(&text);
        assert_eq!(
            found,
            error(
                path,
                DecodeErrorKind::UnknownEnumValue {
                    vocabulary: "ClaimResult",
                    value: bad.to_owned(),
                },
            ),
            "{text}"
        );
        assert_eq!(found.code(), ErrorCode::UnknownEnumValue);
    }

    let cases = [
        (
            with(r#""pass""#, good, r#","gate":true"#),
            error("closure", DecodeErrorKind::UnknownMember("gate".to_owned())),
        ),
        (
            with(
                r#""pass""#,
                r#"{"criterion_id":"t","result":"pass","evidence_ids":[],"note":"x"}"#,
                "",
            ),
            error(
                "closure.criteria[0]",
                DecodeErrorKind::UnknownMember("note".to_owned()),
            ),
        ),
        (
            with(r#""pass""#, r#"{"criterion_id":"t","result":"pass"}"#, ""),
            error("closure.criteria[0].evidence_ids", DecodeErrorKind::Missing),
        ),
        (
            format!(r#"{{{K},"completion_claim":"pass","criteria":[]}}"#),
            error("closure.policy_digest", DecodeErrorKind::Missing),
        ),
        (
            with("true", good, ""),
            error(
                "closure.completion_claim",
                DecodeErrorKind::WrongType {
                    expected: "string",
                    found: "boolean",
                },
            ),
        ),
        (
            with(r#""pass""#, &format!("{good},{good}"), ""),
            error(
                "closure.criteria[1].criterion_id",
                DecodeErrorKind::Invalid("duplicate criterion_id"),
            ),
        ),
        (
            with(
                r#""pass""#,
                r#"{"criterion_id":"t","result":"pass","evidence_ids":["e","e"]}"#,
                "",
            ),
            error(
                "closure.criteria[0].evidence_ids[1]",
                DecodeErrorKind::Invalid("duplicate evidence id"),
            ),
        ),
        (
            with(
                r#""pass""#,
                r#"{"criterion_id":"t","result":"pass","evidence_ids":[""]}"#,
                "",
            ),
            error(
                "closure.criteria[0].evidence_ids[0]",
                DecodeErrorKind::Invalid("must be a non-empty string"),
            ),
        ),
        (
            r#"{"schema_version":"valp-kernel-done-policy.v1","policy_digest":"x","completion_claim":"pass","criteria":[]}"#
                .to_owned(),
            error(
                "closure.schema_version",
                DecodeErrorKind::WrongSchema {
                    expected: "valp-kernel-done-closure.v1 or .v2",
                    found: "valp-kernel-done-policy.v1".to_owned(),
                },
            ),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(closure_error(&text), expected, "{text}");
    }
}

#[test]
fn the_gate_decoder_is_strict_and_consistent() {
    assert!(
        decode_done_gate(&parsed(&format!(
            r#"{{{G},"passed":true,"reasons":[],"notes":["optional_skipped:a"]}}"#
        )))
        .is_ok()
    );
    let cases = [
        (
            format!(r#"{{{G},"passed":true,"reasons":["task_status:done"],"notes":[]}}"#),
            error(
                "gate.passed",
                DecodeErrorKind::Invalid("passed must be true exactly when reasons is empty"),
            ),
        ),
        (
            format!(r#"{{{G},"passed":false,"reasons":[],"notes":[]}}"#),
            error(
                "gate.passed",
                DecodeErrorKind::Invalid("passed must be true exactly when reasons is empty"),
            ),
        ),
        (
            format!(r#"{{{G},"passed":true,"reasons":[],"notes":[],"policy":"x"}}"#),
            error("gate", DecodeErrorKind::UnknownMember("policy".to_owned())),
        ),
        (
            format!(r#"{{{G},"passed":true,"reasons":[]}}"#),
            error("gate.notes", DecodeErrorKind::Missing),
        ),
        (
            format!(r#"{{{G},"passed":"true","reasons":[],"notes":[]}}"#),
            error(
                "gate.passed",
                DecodeErrorKind::WrongType {
                    expected: "boolean",
                    found: "string",
                },
            ),
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(gate_error(&text), expected, "{text}");
    }
}

// ---------------------------------------------------------------------------------------------
// `LiveState::preview`, which the store uses to judge only what the kernel would accept

#[test]
fn preview_answers_as_apply_would_without_applying() {
    use valp_kernel::Variant;
    use valp_kernel::live::{LiveState, Verdict};
    use valp_kernel::walk::{Walk, WalkConfig};

    fn check(live: &LiveState, event: &valp_kernel::Event, evidence_set: &[Evidence]) -> Variant {
        let before = live.to_state();
        let previewed = live.preview(event, evidence_set);
        assert_eq!(live.to_state(), before, "preview changes nothing");
        let applied = match live.clone().apply(event, evidence_set) {
            Verdict::Accepted(_) => Variant::Accepted,
            Verdict::NoOp { .. } => Variant::NoOp,
            Verdict::Rejected { .. } => Variant::Rejected,
        };
        assert_eq!(previewed, applied, "{event:?}");
        previewed
    }

    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..=12 {
        let mut walk = Walk::new(WalkConfig {
            seed,
            work_items: 4,
            may_terminate: true,
        });
        let mut live = LiveState::new(walk.genesis().state.clone());
        for step in walk.by_ref().take(80) {
            assert_eq!(
                check(&live, &step.event, &step.evidence_set),
                Variant::Accepted
            );
            live.apply(&step.event, &step.evidence_set);
            seen.insert(check(&live, &step.event, &step.evidence_set));
            let mut other = step.event.clone();
            other.event_id = id(IdentityKind::Event, "never-seen");
            seen.insert(check(&live, &other, &step.evidence_set));
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [Variant::NoOp, Variant::Rejected],
        "duplicates and stale proposals were both previewed"
    );
}
