//! The closed vocabularies of protocol 0.3.0 (protocol digest §3.1): exact wire spellings, and
//! how an unknown value is answered — `VALP-E-UNKNOWN-ENUM-VALUE` from `reduce` in the five open
//! slots, a decode error naming the member everywhere else.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use valp_kernel::decode::{
    DecodeError, DecodeErrorKind, decode_event, decode_evidence, decode_evidence_set,
    decode_outcome, decode_state,
};
use valp_kernel::json::Value;
use valp_kernel::{
    AttemptStatus, CancellationScope, ClaimResult, ControlReason, ControlStatus, ErrorCode, Event,
    EventKind, IdentityKind, InstallationEventKind, InstallationStatus, Open, Outcome,
    PrincipalKind, Requirement, State, SuspensionStatus, TaskStatus, Variant, WakeReason,
    WorkItemStatus,
};

use support::{
    Driver, bytes, event, evidence, genesis, member_mut, reduce_both, rich_event, rich_state,
    string, to_value, two_items, wi,
};

/// Variants of a wire spelling that must not be accepted.
fn near_misses(wire: &str) -> Vec<String> {
    let case_swapped = if wire.to_uppercase() == wire {
        wire.to_lowercase()
    } else {
        wire.to_uppercase()
    };
    let mut capitalised = wire.to_owned();
    capitalised[..1].make_ascii_uppercase();
    vec![
        case_swapped,
        format!(" {wire}"),
        format!("{wire} "),
        format!("{wire}\n"),
        wire[..wire.len() - 1].to_owned(),
        format!("{wire}s"),
        wire.replace('_', "-"),
        capitalised,
    ]
    .into_iter()
    .filter(|candidate| candidate != wire)
    .collect()
}

/// Checks one closed vocabulary: size, exact spellings in declaration order, `Display`,
/// round trip, and refusal of unknown, empty and near-miss spellings.
macro_rules! closed_vocabulary {
    ($test:ident, $vocabulary:ty, $name:literal, [$($wire:literal),+ $(,)?]) => {
        #[test]
        fn $test() {
            let expected: &[&str] = &[$($wire),+];
            assert_eq!(<$vocabulary>::ALL.len(), expected.len());
            assert_eq!(<$vocabulary>::NAME, $name);
            let wires: Vec<&str> = <$vocabulary>::ALL.iter().map(|value| value.as_str()).collect();
            assert_eq!(wires, expected);
            for &value in <$vocabulary>::ALL {
                assert_eq!(<$vocabulary>::from_wire(value.as_str()), Some(value));
                assert_eq!(value.to_string(), value.as_str());
            }
            for unknown in ["", "unknown_value", "null", "0"] {
                assert_eq!(<$vocabulary>::from_wire(unknown), None, "{unknown:?}");
            }
            for wire in expected {
                for miss in near_misses(wire) {
                    if !expected.contains(&miss.as_str()) {
                        assert_eq!(<$vocabulary>::from_wire(&miss), None, "{miss:?}");
                    }
                }
            }
        }
    };
}

closed_vocabulary!(
    identity_kind,
    IdentityKind,
    "IdentityKind",
    [
        "installation",
        "task",
        "work_item",
        "attempt",
        "dispatch",
        "event",
        "evidence",
        "receipt",
        "claim",
        "result",
        "suspension",
        "wait_policy",
        "wake",
        "principal",
        "interrupt",
        "redirect",
    ]
);

closed_vocabulary!(
    task_status,
    TaskStatus,
    "TaskStatus",
    [
        "published",
        "routing_validation",
        "dispatching",
        "executing",
        "verifying",
        "reviewing",
        "fixing",
        "approval_required",
        "recording",
        "done",
        "blocked",
        "failed",
        "cancelled",
    ]
);

closed_vocabulary!(
    work_item_status,
    WorkItemStatus,
    "WorkItemStatus",
    [
        "pending",
        "eligible",
        "submitted",
        "running",
        "completed",
        "partial",
        "degraded",
        "blocked",
        "failed",
        "cancelled",
        "skipped",
    ]
);

closed_vocabulary!(
    requirement,
    Requirement,
    "Requirement",
    ["required", "optional", "soft"]
);

closed_vocabulary!(
    attempt_status,
    AttemptStatus,
    "AttemptStatus",
    [
        "created",
        "submitted",
        "running",
        "completed",
        "failed",
        "cancelled",
        "fenced",
    ]
);

closed_vocabulary!(
    suspension_status,
    SuspensionStatus,
    "SuspensionStatus",
    ["waiting", "resumed"]
);

closed_vocabulary!(wake_reason, WakeReason, "WakeReason", ["dependency_ready"]);

closed_vocabulary!(
    control_status,
    ControlStatus,
    "ControlStatus",
    ["active", "interrupted"]
);

closed_vocabulary!(
    control_reason,
    ControlReason,
    "ControlReason",
    [
        "user_requested",
        "runtime_failed",
        "policy_enforced",
        "superseded_by_redirect",
    ]
);

closed_vocabulary!(
    cancellation_scope,
    CancellationScope,
    "CancellationScope",
    ["task", "work_item", "attempt",]
);

closed_vocabulary!(
    claim_result,
    ClaimResult,
    "ClaimResult",
    [
        "pass",
        "fail",
        "unknown",
        "partial",
        "degraded",
        "not_applicable",
    ]
);

closed_vocabulary!(
    variant,
    Variant,
    "Variant",
    ["accepted", "no_op", "rejected"]
);

closed_vocabulary!(
    event_kind,
    EventKind,
    "EventKind",
    [
        "routing_validation_started",
        "routing_validation_passed",
        "dispatch_accepted",
        "work_completed",
        "verification_passed",
        "verification_failed",
        "review_passed",
        "review_rejected",
        "approval_required_raised",
        "fix_dispatch_requested",
        "approval_granted",
        "approval_denied",
        "recording_completed",
        "task_blocked",
        "blocked_recovery_to_fixing",
        "task_failed",
        "task_cancelled",
        "work_item_eligible",
        "attempt_created",
        "attempt_completed",
        "attempt_fenced",
        "attempt_submitted",
        "attempt_running",
        "attempt_failed",
        "attempt_cancelled",
        "work_item_partial",
        "work_item_degraded",
        "work_item_blocked",
        "work_item_failed",
        "work_item_cancelled",
        "work_item_skipped",
        "suspension_started",
        "wake_accepted",
        "interrupt_requested",
        "interrupt_resumed",
        "redirect_authorized",
    ]
);

closed_vocabulary!(
    error_code,
    ErrorCode,
    "ErrorCode",
    [
        "VALP-E-UNKNOWN-ENUM-VALUE",
        "VALP-E-STATE-CONFLICT",
        "VALP-E-IDEMPOTENCY-CONFLICT",
        "VALP-E-LEADER-EPOCH",
        "VALP-E-PERMISSION-DENIED",
        "VALP-E-LEADER-ROTATING",
    ]
);

closed_vocabulary!(
    installation_status,
    InstallationStatus,
    "InstallationStatus",
    [
        "uninitialized",
        "bootstrapping",
        "discovering_leader_candidates",
        "awaiting_leader_selection",
        "activating_leader",
        "active",
        "reconciling_capabilities",
        "rotating_leader",
        "migrating",
        "rollback_required",
        "degraded",
        "blocked",
        "retired",
    ]
);

closed_vocabulary!(
    installation_event_kind,
    InstallationEventKind,
    "InstallationEventKind",
    [
        "installation_initialized",
        "bootstrap_discovery_started",
        "leader_candidate_discovery_completed",
        "leader_candidates_observed",
        "leader_selection_approved",
        "leader_activated",
        "leader_activation_failed",
        "leader_session_reopened",
        "leader_health_failed",
        "leader_rotation_approved",
        "leader_rotation_completed",
        "leader_rotation_failed",
        "bootstrap_failed",
        "task_handed_over",
    ]
);

closed_vocabulary!(
    principal_kind,
    PrincipalKind,
    "PrincipalKind",
    ["human", "tmux_pane"]
);

#[test]
fn near_misses_are_really_different() {
    assert_eq!(
        near_misses("work_item"),
        [
            "WORK_ITEM",
            " work_item",
            "work_item ",
            "work_item\n",
            "work_ite",
            "work_items",
            "work-item",
            "Work_item"
        ]
    );
    // Spellings equal to the wire itself are dropped (no `_` to replace, already capitalised).
    assert_eq!(
        near_misses("VALP-E-STATE-CONFLICT"),
        [
            "valp-e-state-conflict",
            " VALP-E-STATE-CONFLICT",
            "VALP-E-STATE-CONFLICT ",
            "VALP-E-STATE-CONFLICT\n",
            "VALP-E-STATE-CONFLIC",
            "VALP-E-STATE-CONFLICTs"
        ]
    );
}

/// The members of a vocabulary for which `keep` holds, in declaration order.
fn members<T: Copy>(all: &[T], keep: fn(T) -> bool) -> Vec<T> {
    all.iter().copied().filter(|&value| keep(value)).collect()
}

#[test]
fn vocabulary_predicates() {
    use AttemptStatus as A;
    use EventKind as K;
    use WorkItemStatus as W;
    assert_eq!(
        members(TaskStatus::ALL, TaskStatus::is_terminal),
        [TaskStatus::Done, TaskStatus::Failed, TaskStatus::Cancelled]
    );
    assert_eq!(
        members(W::ALL, W::is_terminal),
        [
            W::Completed,
            W::Partial,
            W::Degraded,
            W::Failed,
            W::Cancelled,
            W::Skipped
        ]
    );
    assert_eq!(
        members(A::ALL, A::is_live),
        [A::Created, A::Submitted, A::Running]
    );
    assert_eq!(
        members(K::ALL, K::is_authority_bound),
        [
            K::TaskCancelled,
            K::AttemptCancelled,
            K::WorkItemCancelled,
            K::InterruptRequested,
            K::InterruptResumed,
            K::RedirectAuthorized
        ]
    );
    assert_eq!(
        members(K::ALL, K::is_attempt_scoped),
        [
            K::AttemptCreated,
            K::AttemptCompleted,
            K::AttemptFenced,
            K::AttemptSubmitted,
            K::AttemptRunning,
            K::AttemptFailed,
            K::AttemptCancelled
        ]
    );
}

#[test]
fn open_slots_keep_unknown_text_verbatim() {
    assert_eq!(
        Open::<TaskStatus>::from_wire("paused"),
        Open::Unknown("paused".to_owned())
    );
    assert_eq!(
        Open::<TaskStatus>::from_wire("done"),
        Open::Known(TaskStatus::Done)
    );
    assert_eq!(Open::<EventKind>::from_wire("Done").as_str(), "Done");
    assert_eq!(Open::<WakeReason>::from_wire("").as_str(), "");
    assert_eq!(Open::<ControlReason>::from_wire("x").known(), None);
    assert_eq!(
        Open::<CancellationScope>::from_wire("task").known(),
        Some(CancellationScope::Task)
    );
    assert_eq!(Open::from(EventKind::TaskFailed).as_str(), "task_failed");
}

// ---------------------------------------------------------------------------------------------
// The five open slots: an unknown value is a rejected Result that echoes the input.

/// Reduces and asserts `VALP-E-UNKNOWN-ENUM-VALUE` with the input State echoed byte for byte.
fn assert_unknown_enum(state: &State, event: &Event, evidence_set: &[valp_kernel::Evidence]) {
    support::assert_rejects(state, event, evidence_set, ErrorCode::UnknownEnumValue);
}

#[test]
fn unknown_task_status_is_rejected_with_the_state_echoed() {
    let mut json = to_value(&genesis());
    *member_mut(&mut json, &["status"]) = string("paused");
    let state = decode_state(&json).expect("an unknown status decodes");
    assert_eq!(state.body.status, Open::Unknown("paused".to_owned()));
    assert_eq!(
        bytes(&state),
        valp_kernel::json::write::canonical_bytes(&json).unwrap()
    );
    for &kind in EventKind::ALL {
        let (event, evidence_set) = support::task_event("probe", kind, 0);
        assert_unknown_enum(&state, &event, &evidence_set);
    }
}

#[test]
fn unknown_event_kind_is_rejected_with_the_state_echoed() {
    let state = Driver::at(TaskStatus::Executing, two_items()).state();
    let mut json = to_value(&event("evt-x", EventKind::WorkCompleted, 3));
    *member_mut(&mut json, &["kind"]) = string("teleported");
    let teleported = decode_event(&json).expect("an unknown kind decodes");
    assert_eq!(teleported.kind, Open::Unknown("teleported".to_owned()));
    assert_eq!(
        bytes(&teleported),
        valp_kernel::json::write::canonical_bytes(&json).unwrap()
    );
    assert_unknown_enum(&state, &teleported, &[]);
    // The known kind is accepted, so the rejection is the kind's doing.
    let mut known = teleported.clone();
    known.kind = Open::Known(EventKind::WorkCompleted);
    support::assert_accepts(&state, &known, &[]);
    // Spellings close to a known kind are unknown too.
    for text in ["WORK_COMPLETED", "work-completed", "work_completed ", ""] {
        let mut near = teleported.clone();
        near.kind = Open::Unknown(text.to_owned());
        assert_unknown_enum(&state, &near, &[]);
    }
}

/// The three optional open slots of an Event, each with a known value that `routing_validation_
/// started` ignores and therefore accepts.
#[test]
fn unknown_wake_reason_control_reason_and_scope_are_rejected() {
    type Setter = fn(&mut Event, Option<&str>);
    let state = genesis();
    let slots: [(&str, &str, Setter); 3] = [
        ("wake_reason", "dependency_ready", |event, text| {
            event.wake_reason = text.map(Open::<WakeReason>::from_wire);
        }),
        ("control_reason", "user_requested", |event, text| {
            event.control_reason = text.map(Open::<ControlReason>::from_wire);
        }),
        ("cancellation_scope", "task", |event, text| {
            event.cancellation_scope = text.map(Open::<CancellationScope>::from_wire);
        }),
    ];
    for (member, known, set) in slots {
        let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
        set(&mut event, Some(known));
        support::assert_accepts(&state, &event, &[]);
        for unknown in ["timeout", "", "DEPENDENCY_READY", "Task"] {
            set(&mut event, Some(unknown));
            let json = to_value(&event);
            assert_eq!(member_mut(&mut json.clone(), &[member]), &string(unknown));
            let decoded = decode_event(&json).expect("unknown open text decodes");
            assert_eq!(decoded, event);
            assert_unknown_enum(&state, &decoded, &[]);
        }
    }
}

#[test]
fn unknown_control_reason_wins_over_missing_authority() {
    let state = genesis();
    let mut event = event("evt-1", EventKind::TaskCancelled, 0);
    event.cancellation_scope = Some(Open::Known(CancellationScope::Task));
    event.control_reason = Some(Open::Unknown("because".to_owned()));
    assert_unknown_enum(&state, &event, &[]);
}

// ---------------------------------------------------------------------------------------------
// Every other closed slot: decoding fails with a path to the member.

/// The member path below the document root, from a decode error path:
/// `state.work_items[0].status` -> `["work_items", "0", "status"]`.
fn segments(path: &str) -> Vec<String> {
    path.replace('[', ".")
        .replace(']', "")
        .split('.')
        .skip(1)
        .map(str::to_owned)
        .collect()
}

/// Replaces the member at `expected_path` in `json` with unknown spellings and checks the
/// decode error: code, exact path, vocabulary and the offending text.
fn assert_closed_slot<T: std::fmt::Debug>(
    json: &Value,
    decode: fn(&Value) -> Result<T, DecodeError>,
    expected_path: &str,
    vocabulary: &'static str,
) {
    let owned = segments(expected_path);
    let path: Vec<&str> = owned.iter().map(String::as_str).collect();
    let known = member_mut(&mut json.clone(), &path).clone();
    let known = known
        .as_str()
        .expect("a closed slot is a string")
        .to_owned();
    for unknown in ["bogus", "", &known.to_uppercase(), &format!("{known}_")] {
        if unknown == known {
            continue;
        }
        let mut mutated = json.clone();
        *member_mut(&mut mutated, &path) = string(unknown);
        let error = decode(&mutated).expect_err(expected_path);
        assert_eq!(
            error,
            DecodeError {
                path: expected_path.to_owned(),
                kind: DecodeErrorKind::UnknownEnumValue {
                    vocabulary,
                    value: unknown.to_owned()
                }
            }
        );
        assert_eq!(error.code(), ErrorCode::UnknownEnumValue);
    }
}

#[test]
fn segments_follow_the_error_path_syntax() {
    assert_eq!(
        segments("state.work_items[1].dependencies[0].requirement"),
        ["work_items", "1", "dependencies", "0", "requirement"]
    );
    assert_eq!(
        segments("evidence_set[1].evidence_id.kind"),
        ["1", "evidence_id", "kind"]
    );
    assert!(segments("result").is_empty());
}

#[test]
fn rich_fixtures_round_trip() {
    let state = rich_state();
    assert_eq!(decode_state(&to_value(&state)), Ok(state));
    let event = rich_event();
    assert_eq!(decode_event(&to_value(&event)), Ok(event));
}

#[test]
fn unknown_values_in_closed_state_slots_fail_decoding_with_their_path() {
    let json = to_value(&rich_state());
    let cases = [
        ("state.installation_id.kind", "IdentityKind"),
        ("state.task_id.kind", "IdentityKind"),
        ("state.accepted_events[0].event_id.kind", "IdentityKind"),
        ("state.accepted_events[0].result_id.kind", "IdentityKind"),
        ("state.work_items[0].status", "WorkItemStatus"),
        ("state.work_items[1].status", "WorkItemStatus"),
        ("state.work_items[1].requirement", "Requirement"),
        ("state.work_items[0].task_id.kind", "IdentityKind"),
        ("state.work_items[0].work_item_id.kind", "IdentityKind"),
        (
            "state.work_items[1].dependencies[0].requirement",
            "Requirement",
        ),
        (
            "state.work_items[1].dependencies[0].work_item_id.kind",
            "IdentityKind",
        ),
        (
            "state.work_items[0].current_attempt.status",
            "AttemptStatus",
        ),
        (
            "state.work_items[0].current_attempt.attempt_id.kind",
            "IdentityKind",
        ),
        (
            "state.work_items[0].current_attempt.dispatch_id.kind",
            "IdentityKind",
        ),
        ("state.suspension.status", "SuspensionStatus"),
        ("state.suspension.wake_reason", "WakeReason"),
        ("state.suspension.suspension_id.kind", "IdentityKind"),
        ("state.suspension.wait_policy_id.kind", "IdentityKind"),
        (
            "state.suspension.required_work_item_ids[0].kind",
            "IdentityKind",
        ),
        ("state.suspension.accepted_wake_id.kind", "IdentityKind"),
        ("state.control.status", "ControlStatus"),
        ("state.control.active_interrupt_id.kind", "IdentityKind"),
    ];
    for (expected_path, vocabulary) in cases {
        assert_closed_slot(&json, decode_state, expected_path, vocabulary);
    }
}

#[test]
fn unknown_identity_kinds_in_event_slots_fail_decoding_with_their_path() {
    let json = to_value(&rich_event());
    let slots = [
        "event_id",
        "installation_id",
        "task_id",
        "work_item_id",
        "attempt_id",
        "dispatch_id",
        "suspension_id",
        "wait_policy_id",
        "required_work_item_ids[0]",
        "wake_id",
        "authority_principal_id",
        "authority_evidence_id",
        "interrupt_id",
        "redirect_id",
        "superseded_work_item_ids[0]",
    ];
    for slot in slots {
        let expected_path = format!("event.{slot}.kind");
        assert_closed_slot(&json, decode_event, &expected_path, "IdentityKind");
    }
}

#[test]
fn unknown_identity_kind_in_evidence_fails_decoding_with_its_path() {
    let single = to_value(&evidence("ev-1"));
    assert_closed_slot(
        &single,
        decode_evidence,
        "evidence.evidence_id.kind",
        "IdentityKind",
    );
    let set = Value::Array(vec![
        to_value(&evidence("ev-1")),
        to_value(&evidence("ev-2")),
    ]);
    assert_eq!(
        decode_evidence_set(&set),
        Ok(vec![evidence("ev-1"), evidence("ev-2")])
    );
    assert_closed_slot(
        &set,
        decode_evidence_set,
        "evidence_set[1].evidence_id.kind",
        "IdentityKind",
    );
}

#[test]
fn unknown_variant_and_error_code_fail_result_decoding() {
    // An idempotency conflict carries every member a rejected Result can have.
    let mut driver = Driver::at(TaskStatus::Executing, two_items());
    let mut first = driver.event(EventKind::WorkItemEligible);
    first.work_item_id = Some(wi("wi-1"));
    driver.accept(&first, &[]);
    let mut conflicting = first.clone();
    conflicting.work_item_id = Some(wi("wi-2"));
    let state = driver.state();
    let outcome = reduce_both(&state, &conflicting, &[]);
    assert_eq!(outcome.error_code(), Some(ErrorCode::IdempotencyConflict));
    let json = to_value(&outcome);
    assert_eq!(decode_outcome(&json), Ok(outcome));
    for (expected_path, vocabulary) in [
        ("result.variant", "Variant"),
        ("result.error_code", "ErrorCode"),
        ("result.prior_result_id.kind", "IdentityKind"),
        ("result.state.work_items[0].status", "WorkItemStatus"),
        (
            "result.state.accepted_events[0].result_id.kind",
            "IdentityKind",
        ),
    ] {
        assert_closed_slot(&json, decode_outcome, expected_path, vocabulary);
    }
    // A real VALP code that the kernel never returns is outside the kernel's vocabulary.
    let mut foreign = json.clone();
    *member_mut(&mut foreign, &["error_code"]) = string("VALP-E-MESSAGE-SCHEMA");
    assert_eq!(
        decode_outcome(&foreign).map_err(|error| error.code()),
        Err(ErrorCode::UnknownEnumValue)
    );
    // The open task status inside a Result's State decodes.
    let mut paused = json.clone();
    *member_mut(&mut paused, &["state", "status"]) = string("paused");
    let decoded = decode_outcome(&paused).expect("open slot");
    assert_eq!(
        decoded.state().body.status,
        Open::Unknown("paused".to_owned())
    );
}

#[test]
fn unknown_result_id_kind_fails_accepted_result_decoding() {
    let state = genesis();
    let outcome = reduce_both(
        &state,
        &event("evt-1", EventKind::RoutingValidationStarted, 0),
        &[],
    );
    assert!(matches!(outcome, Outcome::Accepted(_)));
    let json = to_value(&outcome);
    assert_eq!(decode_outcome(&json), Ok(outcome));
    for expected_path in [
        "result.result_id.kind",
        "result.state.accepted_events[0].event_id.kind",
        "result.state.task_id.kind",
    ] {
        assert_closed_slot(&json, decode_outcome, expected_path, "IdentityKind");
    }
}

/// `Open::Unknown` holding a known spelling cannot come out of the decoder, but the variant is
/// public: such a State or Event has the same canonical bytes (and, by `Open`'s `PartialEq`, is
/// equal) to the one holding `Open::Known`, so by the kernel's purity contract ("equal canonical
/// inputs give byte-identical outputs") `reduce` must answer both alike.
#[test]
fn unknown_text_with_a_known_spelling_reduces_like_the_known_value() {
    let known_state = genesis();
    let mut spelled_state = genesis();
    spelled_state.body.status = Open::Unknown("published".to_owned());
    assert_eq!(bytes(&known_state), bytes(&spelled_state));
    let known_event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    let mut spelled_event = known_event.clone();
    spelled_event.kind = Open::Unknown("routing_validation_started".to_owned());
    assert_eq!(bytes(&known_event), bytes(&spelled_event));
    let text = |outcome: &Outcome| String::from_utf8(bytes(outcome)).unwrap();
    let expected = text(&reduce_both(&known_state, &known_event, &[]));
    for (state, event) in [
        (&spelled_state, &known_event),
        (&known_state, &spelled_event),
    ] {
        assert_eq!(text(&reduce_both(state, event, &[])), expected);
    }
}
