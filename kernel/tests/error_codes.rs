//! Every way each kernel error code arises (protocol digest §4 and §6.4), with the State left
//! unchanged, and the precedence between the checks.
//!
//! Most tests first show that a baseline input is accepted and then change one thing, so each
//! rejection is attributable to that one change.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use valp_kernel::decode::{
    DecodeError, DecodeErrorKind, decode_event, decode_evidence, decode_state,
};
use valp_kernel::json::{Number, Value};
use valp_kernel::{
    Attempt, AttemptStatus, CancellationScope, Control, ControlReason, ControlStatus, Dependency,
    ErrorCode, Event, EventKind, Evidence, Identity, IdentityKind, Int, Open, State,
    SuspensionStatus, TaskStatus, WakeReason,
};

use support::{
    Driver, assert_accepts, assert_conflict, assert_no_op, assert_rejects, attempt_record,
    authorize, event, evidence, genesis, genesis_with, id, member_mut, object_mut, rich_event,
    rich_state, set_attempt_tuple, string, task_event, to_value, two_items, wi,
};

type Mutation<T> = (&'static str, fn(&mut T));

/// The next task edge from `dispatching` for `state`, named `probe`.
fn probe(state: &State) -> Event {
    event("probe", EventKind::DispatchAccepted, state.body.revision)
}

/// `dispatching` at revision 2 with two work items (history of two entries).
fn dispatching() -> State {
    Driver::at(TaskStatus::Dispatching, two_items()).state()
}

// ---------------------------------------------------------------------------------------------
// VALP-E-UNKNOWN-ENUM-VALUE precedence

#[test]
fn unknown_enum_value_wins_over_an_invalid_state() {
    let mut state = genesis();
    state.body.protocol_version = "9.9.9".to_owned();
    let mut known = event("evt-1", EventKind::RoutingValidationStarted, 0);
    assert_conflict(&state, &known, &[]);
    known.kind = Open::Unknown("teleported".to_owned());
    assert_rejects(&state, &known, &[], ErrorCode::UnknownEnumValue);

    // An unknown task status in a State that is invalid in other ways as well.
    let mut state = genesis_with(vec![
        support::work_item("wi-1", valp_kernel::Requirement::Required, &[]),
        support::work_item("wi-1", valp_kernel::Requirement::Required, &[]),
    ]);
    state.body.revision = 7;
    let event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    assert_conflict(&state, &event, &[]);
    state.body.status = Open::Unknown("paused".to_owned());
    assert_rejects(&state, &event, &[], ErrorCode::UnknownEnumValue);
}

#[test]
fn unknown_enum_value_wins_over_every_event_check() {
    let state = genesis();
    let mut event = event("evt-1", EventKind::RoutingValidationStarted, 99);
    event.installation_id = id(IdentityKind::Installation, "inst-2");
    event.leader_epoch = -4;
    event.task_id = id(IdentityKind::Task, "TASK-002");
    event.attempt_id = Some(id(IdentityKind::Receipt, "r"));
    let bad_evidence = [Evidence {
        evidence_id: id(IdentityKind::Receipt, "r"),
        content_digest: "nope".to_owned(),
    }];
    assert_conflict(&state, &event, &bad_evidence);
    event.cancellation_scope = Some(Open::Unknown("galaxy".to_owned()));
    assert_rejects(&state, &event, &bad_evidence, ErrorCode::UnknownEnumValue);
}

#[test]
fn unknown_enum_value_wins_over_idempotency() {
    let mut driver = Driver::new(genesis());
    let first = driver.event(EventKind::RoutingValidationStarted);
    driver.accept(&first, &[]);
    let mut again = first;
    again.wake_reason = Some(Open::Unknown("timeout".to_owned()));
    assert_rejects(&driver.state(), &again, &[], ErrorCode::UnknownEnumValue);
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: invalid State

/// Applies each mutation to a copy of `base` and asserts that `probe` of the result is a
/// `VALP-E-STATE-CONFLICT` with the mutated State echoed.
fn assert_invalid(base: &State, mutations: &[Mutation<State>], probe: impl Fn(&State) -> Event) {
    for (name, mutate) in mutations {
        let mut state = base.clone();
        mutate(&mut state);
        assert_ne!(&state, base, "{name}");
        assert_conflict(&state, &probe(&state), &[]);
    }
}

/// The `dispatching` probe with its revision and epoch following the State where they are
/// non-negative, so only the State's invalidity can refuse it.
fn following_probe(state: &State) -> Event {
    let mut event = probe(state);
    event.expected_revision = state.body.revision.max(0);
    event.leader_epoch = state.body.leader_epoch.max(0);
    event
}

#[test]
fn valid_state_variations_are_accepted() {
    let base = dispatching();
    assert_eq!(base.body.revision, 2);
    assert_accepts(&base, &probe(&base), &[]);
    let valid: [Mutation<State>; 4] = [
        ("attempt on wi-1", |s| with_attempt(s, |_| {})),
        ("initial control", |s| {
            s.body.control = Some(Control::INITIAL);
        }),
        ("control at intent 5", |s| {
            s.body.control = Some(Control {
                intent_version: 5,
                ..Control::INITIAL
            });
        }),
        ("leader epoch 0", |s| s.body.leader_epoch = 0),
    ];
    for (name, mutate) in valid {
        let mut state = base.clone();
        mutate(&mut state);
        assert_ne!(state, base, "{name}");
        assert_accepts(&state, &following_probe(&state), &[]);
    }
}

/// Invalid members of the State itself.
#[test]
fn invalid_state_bodies_are_state_conflicts() {
    let mutations: [Mutation<State>; 8] = [
        ("protocol 0.2.0", |s| {
            s.body.protocol_version = "0.2.0".to_owned();
        }),
        ("protocol empty", |s| {
            s.body.protocol_version = String::new();
        }),
        ("revision ahead of history", |s| s.body.revision = 3),
        ("revision behind history", |s| s.body.revision = 1),
        ("negative revision", |s| s.body.revision = -1),
        ("negative leader epoch", |s| s.body.leader_epoch = -1),
        ("installation of kind task", |s| {
            s.body.installation_id = id(IdentityKind::Task, support::INSTALLATION);
        }),
        ("task of kind installation", |s| {
            s.body.task_id = id(IdentityKind::Installation, support::TASK);
        }),
    ];
    assert_invalid(&dispatching(), &mutations, following_probe);
}

/// An invalid accepted-event history.
#[test]
fn invalid_histories_are_state_conflicts() {
    let mutations: [Mutation<State>; 6] = [
        ("duplicate history event id", |s| {
            s.accepted_events[1].event_id = s.accepted_events[0].event_id.clone();
        }),
        ("duplicate history result id", |s| {
            s.accepted_events[1].result_id = s.accepted_events[0].result_id.clone();
        }),
        ("history event id of kind receipt", |s| {
            s.accepted_events[0].event_id = id(IdentityKind::Receipt, "e-1");
        }),
        ("history result id of kind event", |s| {
            s.accepted_events[0].result_id = id(IdentityKind::Event, "e-1:accepted");
        }),
        ("history input digest malformed", |s| {
            s.accepted_events[0].input_digest = "sha256:00".to_owned();
        }),
        ("history result digest uppercase", |s| {
            s.accepted_events[1].result_digest = s.accepted_events[1].result_digest.to_uppercase();
        }),
    ];
    assert_invalid(&dispatching(), &mutations, following_probe);
}

/// An invalid work-item table or dependency edge.
#[test]
fn invalid_work_item_tables_are_state_conflicts() {
    let mutations: [Mutation<State>; 6] = [
        ("duplicate work item ids", |s| {
            s.body.work_items[1].work_item_id = wi("wi-1");
            s.body.work_items[1].dependencies.clear();
        }),
        ("work item of another task", |s| {
            s.body.work_items[0].task_id = id(IdentityKind::Task, "TASK-002");
        }),
        ("work item id of kind attempt", |s| {
            s.body.work_items[0].work_item_id = id(IdentityKind::Attempt, "wi-1");
        }),
        ("dependency on itself", |s| {
            s.body.work_items[1].dependencies[0].work_item_id = wi("wi-2");
        }),
        ("dependency id of kind task", |s| {
            s.body.work_items[1].dependencies[0].work_item_id = id(IdentityKind::Task, "wi-1");
        }),
        ("duplicate dependency", |s| {
            let dependency: Dependency = s.body.work_items[1].dependencies[0].clone();
            s.body.work_items[1].dependencies.push(dependency);
        }),
    ];
    assert_invalid(&dispatching(), &mutations, following_probe);
}

/// Gives `wi-1` a created attempt changed by `change`.
fn with_attempt(state: &mut State, change: fn(&mut Attempt)) {
    let mut attempt = attempt_record("wi-1", "att-1", 1, AttemptStatus::Created);
    change(&mut attempt);
    state.body.work_items[0].current_attempt = Some(attempt);
}

/// An invalid current attempt.
#[test]
fn invalid_attempts_are_state_conflicts() {
    let mutations: [Mutation<State>; 5] = [
        ("attempt of another task", |s| {
            with_attempt(s, |a| a.task_id = id(IdentityKind::Task, "TASK-002"));
        }),
        ("attempt of another item", |s| {
            with_attempt(s, |a| a.work_item_id = wi("wi-2"));
        }),
        ("attempt id of kind dispatch", |s| {
            with_attempt(s, |a| a.attempt_id = id(IdentityKind::Dispatch, "att-1"));
        }),
        ("dispatch id of kind attempt", |s| {
            with_attempt(s, |a| {
                a.dispatch_id = id(IdentityKind::Attempt, "disp-att-1");
            });
        }),
        ("negative dispatch generation", |s| {
            with_attempt(s, |a| a.dispatch_generation = -1);
        }),
    ];
    assert_invalid(&dispatching(), &mutations, following_probe);
}

/// An invalid control state.
#[test]
fn invalid_controls_are_state_conflicts() {
    let mutations: [Mutation<State>; 3] = [
        ("interrupted without interrupt id", |s| {
            s.body.control = Some(Control {
                status: ControlStatus::Interrupted,
                ..Control::INITIAL
            });
        }),
        ("active with an interrupt id", |s| {
            s.body.control = Some(Control {
                active_interrupt_id: Some(id(IdentityKind::Interrupt, "int-1")),
                ..Control::INITIAL
            });
        }),
        ("negative intent version", |s| {
            s.body.control = Some(Control {
                intent_version: -1,
                ..Control::INITIAL
            });
        }),
    ];
    assert_invalid(&dispatching(), &mutations, following_probe);
}

#[test]
fn interrupted_control_needs_an_interrupt_identity() {
    let mut driver = Driver::new(genesis());
    driver.interrupt("int-1");
    let base = driver.state();
    let failed = task_event("probe", EventKind::TaskFailed, 1).0;
    assert_accepts(&base, &failed, &[]);
    let mut wrong_kind = base.clone();
    wrong_kind.body.control = Some(Control {
        active_interrupt_id: Some(id(IdentityKind::Wake, "int-1")),
        ..base.body.control.clone().unwrap()
    });
    assert_conflict(&wrong_kind, &failed, &[]);
}

#[test]
fn revision_zero_must_be_published() {
    let state = genesis();
    assert_accepts(&state, &event("probe", EventKind::TaskFailed, 0), &[]);
    for &status in TaskStatus::ALL {
        if status == TaskStatus::Published {
            continue;
        }
        let mut state = genesis();
        state.body.status = Open::Known(status);
        assert_conflict(&state, &event("probe", EventKind::TaskFailed, 0), &[]);
    }
    // Only revision 0 is tied to `published`: a published State at revision 2 is valid.
    let mut later = dispatching();
    later.body.status = Open::Known(TaskStatus::Published);
    assert_accepts(
        &later,
        &event("probe", EventKind::RoutingValidationStarted, 2),
        &[],
    );
}

/// Executing with two items and a waiting suspension on `wi-1` (revision 4).
fn suspended() -> Driver {
    let mut driver = Driver::at(TaskStatus::Executing, two_items());
    let start = driver.suspension_event(EventKind::SuspensionStarted, &["wi-1"]);
    driver.accept(&start, &[]);
    driver
}

#[test]
fn invalid_suspensions_are_state_conflicts() {
    let base = suspended().state();
    let mut probe = event("probe", EventKind::WorkItemEligible, base.body.revision);
    probe.work_item_id = Some(wi("wi-1"));
    assert_accepts(&base, &probe, &[]);
    let mut resumed = base.clone();
    if let Some(suspension) = &mut resumed.body.suspension {
        suspension.status = SuspensionStatus::Resumed;
        suspension.accepted_wake_id = Some(id(IdentityKind::Wake, "wake-1"));
        suspension.wake_reason = Some(WakeReason::DependencyReady);
    }
    assert_accepts(&resumed, &probe, &[]);
    let invalid: [Mutation<State>; 15] = [
        ("outside executing", |s| {
            s.body.status = Open::Known(TaskStatus::Verifying);
        }),
        ("resumed without a wake", |s| {
            suspension(s).status = SuspensionStatus::Resumed;
        }),
        ("resumed without a reason", |s| {
            let suspension = suspension(s);
            suspension.status = SuspensionStatus::Resumed;
            suspension.accepted_wake_id = Some(id(IdentityKind::Wake, "wake-1"));
        }),
        ("resumed with a wake of kind event", |s| {
            let suspension = suspension(s);
            suspension.status = SuspensionStatus::Resumed;
            suspension.accepted_wake_id = Some(id(IdentityKind::Event, "wake-1"));
            suspension.wake_reason = Some(WakeReason::DependencyReady);
        }),
        ("waiting with a wake", |s| {
            suspension(s).accepted_wake_id = Some(id(IdentityKind::Wake, "wake-1"));
        }),
        ("waiting with a reason", |s| {
            suspension(s).wake_reason = Some(WakeReason::DependencyReady);
        }),
        ("no required items", |s| {
            suspension(s).required_work_item_ids.clear();
        }),
        ("required item missing", |s| {
            suspension(s).required_work_item_ids = vec![wi("wi-404")];
        }),
        ("required item twice", |s| {
            suspension(s).required_work_item_ids = vec![wi("wi-1"), wi("wi-1")];
        }),
        ("required item of kind task", |s| {
            suspension(s).required_work_item_ids = vec![id(IdentityKind::Task, "wi-1")];
        }),
        ("malformed policy digest", |s| {
            suspension(s).wait_policy_digest = "sha256:".to_owned();
        }),
        ("suspension id of kind wake", |s| {
            suspension(s).suspension_id = id(IdentityKind::Wake, "susp-1");
        }),
        ("policy id of kind suspension", |s| {
            suspension(s).wait_policy_id = id(IdentityKind::Suspension, "policy-1");
        }),
        ("suspension of another task", |s| {
            suspension(s).task_id = id(IdentityKind::Task, "TASK-002");
        }),
        ("negative epoch", |s| suspension(s).suspension_epoch = -1),
    ];
    assert_invalid(&base, &invalid, |_| probe.clone());
}

fn suspension(state: &mut State) -> &mut valp_kernel::Suspension {
    state
        .body
        .suspension
        .as_mut()
        .expect("fixture has a suspension")
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: invalid Event

/// Every identity slot of an Event with the kind it must hold. `…[1]` names the second element
/// of a list whose first element is valid.
const IDENTITY_SLOTS: [(&str, IdentityKind); 17] = [
    ("event_id", IdentityKind::Event),
    ("installation_id", IdentityKind::Installation),
    ("task_id", IdentityKind::Task),
    ("work_item_id", IdentityKind::WorkItem),
    ("attempt_id", IdentityKind::Attempt),
    ("dispatch_id", IdentityKind::Dispatch),
    ("suspension_id", IdentityKind::Suspension),
    ("wait_policy_id", IdentityKind::WaitPolicy),
    ("required_work_item_ids", IdentityKind::WorkItem),
    ("required_work_item_ids[1]", IdentityKind::WorkItem),
    ("wake_id", IdentityKind::Wake),
    ("authority_principal_id", IdentityKind::Principal),
    ("authority_evidence_id", IdentityKind::Evidence),
    ("interrupt_id", IdentityKind::Interrupt),
    ("redirect_id", IdentityKind::Redirect),
    ("superseded_work_item_ids", IdentityKind::WorkItem),
    ("superseded_work_item_ids[1]", IdentityKind::WorkItem),
];

fn set_identity_slot(event: &mut Event, slot: &str, identity: Identity) {
    match slot {
        "event_id" => event.event_id = identity,
        "installation_id" => event.installation_id = identity,
        "task_id" => event.task_id = identity,
        "work_item_id" => event.work_item_id = Some(identity),
        "attempt_id" => event.attempt_id = Some(identity),
        "dispatch_id" => event.dispatch_id = Some(identity),
        "suspension_id" => event.suspension_id = Some(identity),
        "wait_policy_id" => event.wait_policy_id = Some(identity),
        "required_work_item_ids" => event.required_work_item_ids = vec![identity],
        "required_work_item_ids[1]" => event.required_work_item_ids = vec![wi("wi-0"), identity],
        "wake_id" => event.wake_id = Some(identity),
        "authority_principal_id" => event.authority_principal_id = Some(identity),
        "authority_evidence_id" => event.authority_evidence_id = Some(identity),
        "interrupt_id" => event.interrupt_id = Some(identity),
        "redirect_id" => event.redirect_id = Some(identity),
        "superseded_work_item_ids" => event.superseded_work_item_ids = vec![identity],
        "superseded_work_item_ids[1]" => {
            event.superseded_work_item_ids = vec![wi("wi-0"), identity];
        }
        other => panic!("no identity slot {other}"),
    }
}

/// Each identity slot, with each of the 16 kinds: `routing_validation_started` ignores the slot
/// and is accepted exactly when the kind is the slot's own.
#[test]
fn every_identity_slot_checks_its_kind() {
    let state = genesis();
    for (slot, expected) in IDENTITY_SLOTS {
        for &kind in IdentityKind::ALL {
            let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
            let value = match slot {
                "event_id" => "evt-1",
                "installation_id" => support::INSTALLATION,
                "task_id" => support::TASK,
                _ => "x-1",
            };
            set_identity_slot(&mut event, slot, id(kind, value));
            if kind == expected {
                assert_accepts(&state, &event, &[]);
            } else {
                assert_conflict(&state, &event, &[]);
            }
        }
    }
}

type IntSlot = fn(&mut Event, Int);

#[test]
fn negative_integers_in_events_are_state_conflicts() {
    let state = genesis();
    let optional: [IntSlot; 4] = [
        |e, n| e.dispatch_generation = Some(n),
        |e, n| e.suspension_epoch = Some(n),
        |e, n| e.intent_version = Some(n),
        |e, n| e.next_intent_version = Some(n),
    ];
    for set in optional {
        for value in [0, 1, Int::from(i64::MAX), Int::MAX] {
            let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
            set(&mut event, value);
            assert_accepts(&state, &event, &[]);
        }
        for value in [-1, Int::from(i64::MIN), Int::MIN] {
            let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
            set(&mut event, value);
            assert_conflict(&state, &event, &[]);
        }
    }
    let mut negative_revision = event("evt-1", EventKind::RoutingValidationStarted, -1);
    assert_conflict(&state, &negative_revision, &[]);
    negative_revision.expected_revision = 0;
    negative_revision.leader_epoch = -1;
    assert_conflict(&state, &negative_revision, &[]);
}

#[test]
fn malformed_wait_policy_digest_is_a_state_conflict() {
    let state = genesis();
    let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    event.wait_policy_digest = Some(valp_kernel::canonical::sha256_digest(b"policy"));
    assert_accepts(&state, &event, &[]);
    let good = event.wait_policy_digest.clone().unwrap();
    for bad in [
        String::new(),
        "sha256:".to_owned(),
        good.to_uppercase(),
        good.replace("sha256:", "sha512:"),
        format!("{good}0"),
        good[..70].to_owned(),
    ] {
        event.wait_policy_digest = Some(bad);
        assert_conflict(&state, &event, &[]);
    }
}

#[test]
fn duplicate_superseded_ids_are_a_state_conflict() {
    let state = genesis();
    let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    event.superseded_work_item_ids = vec![wi("wi-1"), wi("wi-2")];
    assert_accepts(&state, &event, &[]);
    event.superseded_work_item_ids = vec![wi("wi-1"), wi("wi-2"), wi("wi-1")];
    assert_conflict(&state, &event, &[]);
    // Required ids are only checked for duplicates by `suspension_started` itself.
    let mut required = event.clone();
    required.superseded_work_item_ids.clear();
    required.required_work_item_ids = vec![wi("wi-1"), wi("wi-1")];
    assert_accepts(&state, &required, &[]);
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: invalid EvidenceSet, installation and epoch

#[test]
fn invalid_evidence_sets_are_state_conflicts() {
    let state = genesis();
    let event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    assert_accepts(&state, &event, &[evidence("ev-1"), evidence("ev-2")]);
    let digest = evidence("ev-1").content_digest;
    let invalid: Vec<Vec<Evidence>> = vec![
        vec![Evidence {
            content_digest: digest.to_uppercase(),
            ..evidence("ev-1")
        }],
        vec![Evidence {
            content_digest: String::new(),
            ..evidence("ev-1")
        }],
        vec![Evidence {
            content_digest: digest.trim_start_matches("sha256:").to_owned(),
            ..evidence("ev-1")
        }],
        vec![Evidence {
            evidence_id: id(IdentityKind::Receipt, "ev-1"),
            ..evidence("ev-1")
        }],
        vec![evidence("ev-1"), evidence("ev-1")],
        vec![
            evidence("ev-1"),
            evidence("ev-2"),
            Evidence {
                content_digest: evidence("other").content_digest,
                ..evidence("ev-1")
            },
        ],
    ];
    for evidence_set in invalid {
        assert_conflict(&state, &event, &evidence_set);
    }
}

#[test]
fn installation_and_epoch_mismatches_are_state_conflicts() {
    let state = genesis();
    let base = event("evt-1", EventKind::RoutingValidationStarted, 0);
    assert_accepts(&state, &base, &[]);
    let mut other_installation = base.clone();
    other_installation.installation_id = id(IdentityKind::Installation, "inst-2");
    assert_conflict(&state, &other_installation, &[]);
    for epoch in [0, 2, Int::from(i64::MAX)] {
        let mut other_epoch = base.clone();
        other_epoch.leader_epoch = epoch;
        assert_conflict(&state, &other_epoch, &[]);
    }
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: missing authority

/// For each authority-bound kind, a State and an unauthorised event that full authority makes
/// acceptable.
fn authority_cases() -> Vec<(State, Event)> {
    let published = genesis_with(two_items());

    let mut task_cancelled = event("probe", EventKind::TaskCancelled, 0);
    task_cancelled.cancellation_scope = Some(Open::Known(CancellationScope::Task));

    let mut item_cancelled = event("probe", EventKind::WorkItemCancelled, 0);
    item_cancelled.work_item_id = Some(wi("wi-1"));
    item_cancelled.cancellation_scope = Some(Open::Known(CancellationScope::WorkItem));

    let mut attempting = Driver::at(TaskStatus::Executing, two_items());
    attempting.eligible("wi-1");
    attempting.attempt(EventKind::AttemptCreated, "wi-1", "att-1", 1);
    let mut attempt_cancelled = event("probe", EventKind::AttemptCancelled, attempting.revision());
    set_attempt_tuple(&mut attempt_cancelled, "wi-1", "att-1", "disp-att-1", 1);
    attempt_cancelled.cancellation_scope = Some(Open::Known(CancellationScope::Attempt));

    let mut interrupt_requested = event("probe", EventKind::InterruptRequested, 0);
    interrupt_requested.interrupt_id = Some(id(IdentityKind::Interrupt, "int-1"));
    interrupt_requested.intent_version = Some(0);

    let mut interrupted = Driver::new(published.clone());
    interrupted.interrupt("int-1");
    let mut interrupt_resumed = event("probe", EventKind::InterruptResumed, 1);
    interrupt_resumed.interrupt_id = Some(id(IdentityKind::Interrupt, "int-1"));
    interrupt_resumed.intent_version = Some(0);

    let mut redirect = event("probe", EventKind::RedirectAuthorized, 0);
    redirect.redirect_id = Some(id(IdentityKind::Redirect, "redir-1"));
    redirect.intent_version = Some(0);
    redirect.next_intent_version = Some(1);

    vec![
        (published.clone(), task_cancelled),
        (published.clone(), item_cancelled),
        (attempting.state(), attempt_cancelled),
        (published.clone(), interrupt_requested),
        (interrupted.state(), interrupt_resumed),
        (published, redirect),
    ]
}

#[test]
fn authority_cases_cover_the_six_authority_bound_kinds() {
    let kinds: Vec<_> = authority_cases()
        .iter()
        .map(|(_, event)| event.kind.known().unwrap())
        .collect();
    let bound: Vec<_> = EventKind::ALL
        .iter()
        .copied()
        .filter(|kind| kind.is_authority_bound())
        .collect();
    assert_eq!(kinds.len(), 6);
    for kind in bound {
        assert!(kinds.contains(&kind), "{kind}");
    }
}

#[test]
fn authority_bound_kinds_are_accepted_with_full_authority_and_any_reason() {
    for (state, unauthorised) in authority_cases() {
        for &reason in ControlReason::ALL {
            let mut event = unauthorised.clone();
            let evidence_set = authorize(&mut event);
            event.control_reason = Some(Open::Known(reason));
            assert_accepts(&state, &event, &evidence_set);
        }
    }
}

#[test]
fn authority_bound_kinds_without_authority_are_state_conflicts() {
    type Strip = fn(&mut Event, &mut Vec<Evidence>);
    let strips: [(&str, Strip); 8] = [
        ("nothing at all", |e, set| {
            e.authority_principal_id = None;
            e.authority_evidence_id = None;
            e.control_reason = None;
            set.clear();
        }),
        ("no principal", |e, _| e.authority_principal_id = None),
        ("principal of kind evidence", |e, _| {
            e.authority_principal_id = Some(id(IdentityKind::Evidence, support::PRINCIPAL));
        }),
        ("no evidence id", |e, _| e.authority_evidence_id = None),
        ("evidence id not in the set", |e, _| {
            e.authority_evidence_id = Some(id(IdentityKind::Evidence, "ev-elsewhere"));
        }),
        ("empty evidence set", |_, set| set.clear()),
        ("other evidence only", |_, set| {
            *set = vec![evidence("ev-other")];
        }),
        ("no control reason", |e, _| e.control_reason = None),
    ];
    for (state, unauthorised) in authority_cases() {
        for (name, strip) in strips {
            let mut event = unauthorised.clone();
            let mut evidence_set = authorize(&mut event);
            strip(&mut event, &mut evidence_set);
            let outcome = support::reduce_both(&state, &event, &evidence_set);
            assert_eq!(
                outcome.error_code(),
                Some(ErrorCode::StateConflict),
                "{} / {name}",
                event.kind.as_str()
            );
            assert_conflict(&state, &event, &evidence_set);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: stale attempt events

/// Executing, `wi-1` eligible with attempt `att-1` (`disp-att-1`, generation 1) created.
fn attempt_created() -> Driver {
    let mut driver = Driver::at(TaskStatus::Executing, two_items());
    driver.eligible("wi-1");
    driver.attempt(EventKind::AttemptCreated, "wi-1", "att-1", 1);
    driver
}

/// An attempt-scoped event on the fixture tuple, authorised and scoped when it is a cancel.
fn attempt_event(kind: EventKind, revision: Int) -> (Event, Vec<Evidence>) {
    let mut event = event("probe", kind, revision);
    set_attempt_tuple(&mut event, "wi-1", "att-1", "disp-att-1", 1);
    let mut evidence_set = Vec::new();
    if kind == EventKind::AttemptCancelled {
        evidence_set = authorize(&mut event);
        event.cancellation_scope = Some(Open::Known(CancellationScope::Attempt));
    }
    (event, evidence_set)
}

const ATTEMPT_KINDS: [EventKind; 7] = [
    EventKind::AttemptCreated,
    EventKind::AttemptSubmitted,
    EventKind::AttemptRunning,
    EventKind::AttemptCompleted,
    EventKind::AttemptFailed,
    EventKind::AttemptCancelled,
    EventKind::AttemptFenced,
];

#[test]
fn attempt_events_with_another_tuple_are_stale() {
    let state = attempt_created().state();
    let revision = state.body.revision;
    assert_accepts(
        &state,
        &attempt_event(EventKind::AttemptSubmitted, revision).0,
        &[],
    );
    let changes: [Mutation<Event>; 9] = [
        ("other attempt", |e| {
            e.attempt_id = Some(id(IdentityKind::Attempt, "att-2"));
        }),
        ("other dispatch", |e| {
            e.dispatch_id = Some(id(IdentityKind::Dispatch, "disp-other"));
        }),
        ("higher generation", |e| e.dispatch_generation = Some(2)),
        ("lower generation", |e| e.dispatch_generation = Some(0)),
        ("no generation", |e| e.dispatch_generation = None),
        ("no attempt", |e| e.attempt_id = None),
        ("no work item", |e| e.work_item_id = None),
        ("missing work item", |e| e.work_item_id = Some(wi("wi-404"))),
        ("item without attempt", |e| {
            e.work_item_id = Some(wi("wi-2"));
        }),
    ];
    for kind in ATTEMPT_KINDS {
        for (name, change) in changes {
            let (mut event, evidence_set) = attempt_event(kind, revision);
            change(&mut event);
            let outcome = support::reduce_both(&state, &event, &evidence_set);
            assert_eq!(
                outcome.error_code(),
                Some(ErrorCode::StateConflict),
                "{kind} / {name}"
            );
            assert_conflict(&state, &event, &evidence_set);
        }
    }
}

#[test]
fn a_fenced_attempt_refuses_every_attempt_event() {
    let mut driver = attempt_created();
    let (mut fence, _) = attempt_event(EventKind::AttemptFenced, driver.revision());
    fence.event_id = id(IdentityKind::Event, "e-fence");
    let fenced = driver.accept(&fence, &[]);
    assert_eq!(
        fenced.state.body.work_items[0]
            .current_attempt
            .as_ref()
            .map(|attempt| attempt.status),
        Some(AttemptStatus::Fenced)
    );
    let state = driver.state();
    for kind in ATTEMPT_KINDS {
        let (event, evidence_set) = attempt_event(kind, state.body.revision);
        assert_conflict(&state, &event, &evidence_set);
    }
    // Progress needs work_item_blocked and a new attempt id with a strictly higher generation.
    let blocked = driver.item_event(EventKind::WorkItemBlocked, "wi-1");
    driver.accept(&blocked, &[]);
    let state = driver.state();
    let retry = |attempt: &str, generation: Int| {
        let mut event = event("retry", EventKind::AttemptCreated, state.body.revision);
        set_attempt_tuple(&mut event, "wi-1", attempt, "disp-2", generation);
        event
    };
    assert_conflict(&state, &retry("att-1", 2), &[]);
    assert_conflict(&state, &retry("att-2", 1), &[]);
    assert_conflict(&state, &retry("att-2", 0), &[]);
    // A non-retry reusing an accepted event id is stale before it is a duplicate.
    let mut reused = retry("att-2", 1);
    reused.event_id = state.accepted_events[0].event_id.clone();
    assert_conflict(&state, &reused, &[]);
    assert_accepts(&state, &retry("att-2", 2), &[]);
}

#[test]
fn attempt_created_for_a_missing_item_is_stale() {
    let state = Driver::at(TaskStatus::Executing, two_items()).state();
    let mut event = event("probe", EventKind::AttemptCreated, state.body.revision);
    set_attempt_tuple(&mut event, "wi-404", "att-1", "disp-1", 1);
    assert_conflict(&state, &event, &[]);
}

// ---------------------------------------------------------------------------------------------
// VALP-E-STATE-CONFLICT: task id, revision, interrupt gate, transitions, suspension gate

#[test]
fn task_id_mismatch_is_a_state_conflict() {
    let state = genesis();
    let mut event = event("evt-1", EventKind::RoutingValidationStarted, 0);
    assert_accepts(&state, &event, &[]);
    event.task_id = id(IdentityKind::Task, "TASK-002");
    assert_conflict(&state, &event, &[]);
}

#[test]
fn stale_expected_revision_is_a_state_conflict() {
    let state = genesis();
    assert_conflict(
        &state,
        &event("evt-1", EventKind::RoutingValidationStarted, 1),
        &[],
    );
    let state = dispatching();
    for revision in [0, 1, 3, 100] {
        let mut event = probe(&state);
        event.expected_revision = revision;
        assert_conflict(&state, &event, &[]);
    }
    assert_accepts(&state, &probe(&state), &[]);
}

#[test]
fn the_interrupt_gate_lets_only_four_kinds_through() {
    let base = Driver::new(genesis_with(two_items()));
    let mut interrupted = Driver::new(genesis_with(two_items()));
    let (interrupt, evidence_set) = interrupted.interrupt_event("int-1");
    interrupted.accept(&interrupt, &evidence_set);
    let before = base.state();
    let after = interrupted.state();

    // Accepted before the interrupt, refused while it holds.
    let routing = event("probe", EventKind::RoutingValidationStarted, 0);
    let mut eligible = event("probe", EventKind::WorkItemEligible, 0);
    eligible.work_item_id = Some(wi("wi-1"));
    let mut item_cancelled = eligible.clone();
    item_cancelled.kind = Open::Known(EventKind::WorkItemCancelled);
    item_cancelled.cancellation_scope = Some(Open::Known(CancellationScope::WorkItem));
    let item_evidence = authorize(&mut item_cancelled);
    for (event, evidence_set) in [
        (routing, Vec::new()),
        (eligible, Vec::new()),
        (item_cancelled, item_evidence),
    ] {
        assert_accepts(&before, &event, &evidence_set);
        let mut late = event.clone();
        late.expected_revision = 1;
        assert_conflict(&after, &late, &evidence_set);
    }
    // A second interrupt is refused too.
    let mut second = interrupt.clone();
    second.event_id = id(IdentityKind::Event, "probe");
    second.expected_revision = 1;
    second.interrupt_id = Some(id(IdentityKind::Interrupt, "int-2"));
    assert_conflict(&after, &second, &evidence_set);

    // The four kinds that pass.
    let failed = assert_accepts(&after, &event("probe", EventKind::TaskFailed, 1), &[]);
    assert_eq!(failed.state.body.control, after.body.control);
    let (cancel, cancel_evidence) = task_event("probe", EventKind::TaskCancelled, 1);
    let cancelled = assert_accepts(&after, &cancel, &cancel_evidence);
    assert_eq!(cancelled.state.body.control, Some(Control::INITIAL));
    let mut resume = event("probe", EventKind::InterruptResumed, 1);
    resume.interrupt_id = Some(id(IdentityKind::Interrupt, "int-1"));
    resume.intent_version = Some(0);
    let resume_evidence = authorize(&mut resume);
    let resumed = assert_accepts(&after, &resume, &resume_evidence);
    assert_eq!(resumed.state.body.control, Some(Control::INITIAL));
    let mut redirect = event("probe", EventKind::RedirectAuthorized, 1);
    redirect.redirect_id = Some(id(IdentityKind::Redirect, "redir-1"));
    redirect.intent_version = Some(0);
    redirect.next_intent_version = Some(1);
    let redirect_evidence = authorize(&mut redirect);
    let redirected = assert_accepts(&after, &redirect, &redirect_evidence);
    assert_eq!(
        redirected.state.body.control,
        Some(Control {
            intent_version: 1,
            status: ControlStatus::Active,
            active_interrupt_id: None
        })
    );
    assert_eq!(
        redirected.state.body.status,
        Open::Known(TaskStatus::Fixing)
    );
}

#[test]
fn an_illegal_task_transition_is_a_state_conflict() {
    let state = genesis();
    assert_conflict(&state, &event("evt-1", EventKind::DispatchAccepted, 0), &[]);
    let done = Driver::at(TaskStatus::Done, Vec::new()).state();
    assert_conflict(&done, &event("evt-1", EventKind::TaskFailed, 7), &[]);
}

/// Executing with `wi-1` completed (revision 8).
fn item_completed() -> Driver {
    let mut driver = Driver::at(TaskStatus::Executing, two_items());
    driver.run_first_attempt("wi-1");
    driver.attempt(EventKind::AttemptCompleted, "wi-1", "att-1", 1);
    driver
}

#[test]
fn a_waiting_suspension_refuses_other_status_changes() {
    let mut driver = item_completed();
    let before = driver.state();
    let work_completed = |revision| event("probe", EventKind::WorkCompleted, revision);
    assert_accepts(&before, &work_completed(before.body.revision), &[]);
    let start = driver.suspension_event(EventKind::SuspensionStarted, &["wi-1"]);
    driver.accept(&start, &[]);
    let waiting = driver.state();
    let revision = waiting.body.revision;
    assert_conflict(&waiting, &work_completed(revision), &[]);
    for kind in [EventKind::TaskBlocked, EventKind::TaskFailed] {
        let accepted = assert_accepts(&waiting, &event("probe", kind, revision), &[]);
        assert_eq!(accepted.state.body.suspension, None, "{kind}");
    }
    // task_cancelled must name the live suspension's epoch.
    let (mut cancel, evidence_set) = task_event("probe", EventKind::TaskCancelled, revision);
    assert_conflict(&waiting, &cancel, &evidence_set);
    cancel.suspension_epoch = Some(1);
    assert_conflict(&waiting, &cancel, &evidence_set);
    cancel.suspension_epoch = Some(0);
    let cancelled = assert_accepts(&waiting, &cancel, &evidence_set);
    assert_eq!(cancelled.state.body.suspension, None);

    // After the wake the suspension no longer holds the task, and the status change clears it.
    let wake = wake_event(&mut driver, &["wi-1"]);
    let resumed = driver.accept(&wake, &[]);
    let suspension = resumed.state.body.suspension.as_ref().unwrap();
    assert_eq!(suspension.status, SuspensionStatus::Resumed);
    assert_eq!(
        suspension.accepted_wake_id,
        Some(id(IdentityKind::Wake, "wake-1"))
    );
    let state = driver.state();
    let accepted = assert_accepts(&state, &work_completed(state.body.revision), &[]);
    assert_eq!(accepted.state.body.suspension, None);
    assert_eq!(
        accepted.state.body.status,
        Open::Known(TaskStatus::Verifying)
    );
}

fn wake_event(driver: &mut Driver, items: &[&str]) -> Event {
    let mut wake = driver.suspension_event(EventKind::WakeAccepted, items);
    wake.wake_id = Some(id(IdentityKind::Wake, "wake-1"));
    wake.wake_reason = Some(Open::Known(WakeReason::DependencyReady));
    wake
}

#[test]
fn a_wake_must_restate_the_suspension_and_wait_for_completion() {
    let mut driver = item_completed();
    let start = driver.suspension_event(EventKind::SuspensionStarted, &["wi-1"]);
    driver.accept(&start, &[]);
    let state = driver.state();
    let wake = wake_event(&mut driver, &["wi-1"]);
    assert_accepts(&state, &wake, &[]);
    let changes: [Mutation<Event>; 8] = [
        ("other suspension", |e| {
            e.suspension_id = Some(id(IdentityKind::Suspension, "susp-2"));
        }),
        ("other epoch", |e| e.suspension_epoch = Some(1)),
        ("other policy", |e| {
            e.wait_policy_id = Some(id(IdentityKind::WaitPolicy, "policy-2"));
        }),
        ("other policy digest", |e| {
            e.wait_policy_digest = Some(valp_kernel::canonical::sha256_digest(b"policy-2"));
        }),
        ("other required items", |e| {
            e.required_work_item_ids = vec![wi("wi-1"), wi("wi-2")];
        }),
        ("no wake id", |e| e.wake_id = None),
        ("no wake reason", |e| e.wake_reason = None),
        ("no suspension id", |e| e.suspension_id = None),
    ];
    for (name, change) in changes {
        let mut event = wake.clone();
        change(&mut event);
        assert_ne!(event, wake, "{name}");
        assert_conflict(&state, &event, &[]);
    }

    // Waiting for an item that is not completed: the wake is refused.
    let mut driver = Driver::at(TaskStatus::Executing, two_items());
    let start = driver.suspension_event(EventKind::SuspensionStarted, &["wi-2"]);
    driver.accept(&start, &[]);
    let state = driver.state();
    assert_conflict(&state, &wake_event(&mut driver, &["wi-2"]), &[]);
}

// ---------------------------------------------------------------------------------------------
// Idempotency: no_op and VALP-E-IDEMPOTENCY-CONFLICT

#[test]
fn an_old_duplicate_is_a_no_op_after_later_revisions() {
    let mut driver = Driver::new(genesis());
    let first = driver.event(EventKind::RoutingValidationStarted);
    let evidence_set = [evidence("ev-a"), evidence("ev-b")];
    let first_result = driver.accept(&first, &evidence_set);
    let second = driver.event(EventKind::RoutingValidationPassed);
    let second_result = driver.accept(&second, &[]);
    driver.step(EventKind::DispatchAccepted);
    let state = driver.state();
    assert_eq!(state.body.revision, 3);
    let reordered = [evidence("ev-b"), evidence("ev-a")];
    let no_op = assert_no_op(&state, &first, &reordered, &first_result);
    assert_eq!(
        no_op.prior_result_id,
        id(IdentityKind::Result, "e-1:accepted")
    );
    assert_no_op(&state, &second, &[], &second_result);

    // Even on a terminal State, a duplicate is a no_op rather than an illegal transition.
    let mut recording = Driver::at(TaskStatus::Recording, Vec::new());
    let (last, _) = task_event("last", EventKind::RecordingCompleted, recording.revision());
    let prior = recording.accept(&last, &[]);
    let done = recording.state();
    assert_eq!(done.body.status, Open::Known(TaskStatus::Done));
    assert_no_op(&done, &last, &[], &prior);
}

#[test]
fn a_changed_duplicate_is_an_idempotency_conflict_with_the_prior_result() {
    let mut driver = Driver::new(genesis());
    let first = driver.event(EventKind::RoutingValidationStarted);
    let prior = driver.accept(&first, &[]);
    let state = driver.state();
    let changes: [Mutation<Event>; 5] = [
        ("extra slot", |e| {
            e.wake_id = Some(id(IdentityKind::Wake, "w"));
        }),
        ("other kind", |e| {
            e.kind = Open::Known(EventKind::RoutingValidationPassed);
        }),
        ("current revision", |e| e.expected_revision = 1),
        ("other task", |e| {
            e.task_id = id(IdentityKind::Task, "TASK-002");
        }),
        ("far future revision", |e| e.expected_revision = 50),
    ];
    for (name, change) in changes {
        let mut event = first.clone();
        change(&mut event);
        assert_ne!(event, first, "{name}");
        let rejected = assert_rejects(&state, &event, &[], ErrorCode::IdempotencyConflict);
        assert_eq!(
            rejected.prior_result_id,
            Some(id(IdentityKind::Result, "e-1:accepted"))
        );
        assert_eq!(
            rejected.prior_result_digest.as_deref(),
            Some(prior.result_digest.as_str())
        );
        assert_ne!(rejected.input_digest, prior.input_digest);
    }
    // A different EvidenceSet is different content too.
    let rejected = assert_rejects(
        &state,
        &first,
        &[evidence("ev-1")],
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(rejected.prior_result_id, Some(prior.result_id.clone()));
    assert_eq!(rejected.prior_result_digest, Some(prior.result_digest));
}

#[test]
fn a_stale_attempt_duplicate_is_refused_before_idempotency() {
    let mut driver = attempt_created();
    let (submitted, _) = attempt_event(EventKind::AttemptSubmitted, driver.revision());
    let mut submitted = submitted;
    submitted.event_id = id(IdentityKind::Event, "e-sub");
    let prior = driver.accept(&submitted, &[]);
    // Before the fence, the duplicate is a no_op ...
    assert_no_op(&driver.state(), &submitted, &[], &prior);
    let (mut fence, _) = attempt_event(EventKind::AttemptFenced, driver.revision());
    fence.event_id = id(IdentityKind::Event, "e-fence");
    driver.accept(&fence, &[]);
    // ... after it, the same bytes are a stale attempt event.
    assert_conflict(&driver.state(), &submitted, &[]);
    // A changed duplicate is stale as well, not an idempotency conflict.
    let mut changed = submitted.clone();
    changed.wake_id = Some(id(IdentityKind::Wake, "w"));
    assert_conflict(&driver.state(), &changed, &[]);
}

#[test]
fn an_invalid_duplicate_is_refused_before_idempotency() {
    let mut driver = Driver::new(genesis());
    let first = driver.event(EventKind::RoutingValidationStarted);
    driver.accept(&first, &[]);
    let state = driver.state();
    let mut other_installation = first.clone();
    other_installation.installation_id = id(IdentityKind::Installation, "inst-2");
    assert_conflict(&state, &other_installation, &[]);
    let mut other_epoch = first.clone();
    other_epoch.leader_epoch = 2;
    assert_conflict(&state, &other_epoch, &[]);
    let bad = Evidence {
        content_digest: "sha256:bad".to_owned(),
        ..evidence("ev-1")
    };
    assert_conflict(&state, &first, &[bad]);
}

#[test]
fn idempotency_is_checked_before_the_revision_and_transition() {
    // The duplicate names revision 0 while the State is at 2, and its edge is no longer legal:
    // still a no_op.
    let mut driver = Driver::new(genesis());
    let first = driver.event(EventKind::RoutingValidationStarted);
    let prior = driver.accept(&first, &[]);
    driver.step(EventKind::RoutingValidationPassed);
    let state = driver.state();
    assert_conflict(
        &state,
        &event("fresh", EventKind::RoutingValidationStarted, 0),
        &[],
    );
    assert_no_op(&state, &first, &[], &prior);
}

// ---------------------------------------------------------------------------------------------
// Decode-level refusals: shape errors carry the STATE-CONFLICT code and a path

fn assert_decode_error<T: std::fmt::Debug>(
    result: Result<T, DecodeError>,
    path: &str,
    kind: DecodeErrorKind,
) {
    let error = result.expect_err(path);
    assert_eq!(
        error,
        DecodeError {
            path: path.to_owned(),
            kind
        }
    );
    assert_eq!(error.code(), ErrorCode::StateConflict);
}

fn wrong_type(expected: &'static str, found: &'static str) -> DecodeErrorKind {
    DecodeErrorKind::WrongType { expected, found }
}

fn float(text: &str) -> Value {
    Value::Number(Number::Other(text.to_owned()))
}

#[test]
fn booleans_and_floats_where_integers_belong_are_wrong_types() {
    let state = to_value(&rich_state());
    let event = to_value(&rich_event());
    let state_cases: [(&[&str], Value, &str, &str); 6] = [
        (
            &["leader_epoch"],
            Value::Bool(true),
            "state.leader_epoch",
            "boolean",
        ),
        (
            &["revision"],
            float("1.0"),
            "state.revision",
            "non-integer or out-of-range number",
        ),
        (&["revision"], string("1"), "state.revision", "string"),
        (
            &["work_items", "0", "current_attempt", "dispatch_generation"],
            Value::Bool(false),
            "state.work_items[0].current_attempt.dispatch_generation",
            "boolean",
        ),
        (
            &["suspension", "suspension_epoch"],
            float("0e0"),
            "state.suspension.suspension_epoch",
            "non-integer or out-of-range number",
        ),
        (
            &["control", "intent_version"],
            Value::Null,
            "state.control.intent_version",
            "null",
        ),
    ];
    for (path, replacement, expected_path, found) in state_cases {
        let mut json = state.clone();
        *member_mut(&mut json, path) = replacement;
        assert_decode_error(
            decode_state(&json),
            expected_path,
            wrong_type("integer", found),
        );
    }
    let event_cases: [(&str, Value, &str); 5] = [
        (
            "expected_revision",
            float("0.5"),
            "non-integer or out-of-range number",
        ),
        ("leader_epoch", Value::Bool(true), "boolean"),
        (
            "dispatch_generation",
            float("1.0"),
            "non-integer or out-of-range number",
        ),
        ("intent_version", Value::Bool(false), "boolean"),
        ("next_intent_version", Value::Array(Vec::new()), "array"),
    ];
    for (member, replacement, found) in event_cases {
        let mut json = event.clone();
        object_mut(&mut json, &[]).insert(member.to_owned(), replacement);
        assert_decode_error(
            decode_event(&json),
            &format!("event.{member}"),
            wrong_type("integer", found),
        );
    }
}

#[test]
fn empty_identity_values_are_refused() {
    let mut event = to_value(&rich_event());
    *member_mut(&mut event, &["event_id", "value"]) = string("");
    assert_decode_error(
        decode_event(&event),
        "event.event_id.value",
        DecodeErrorKind::EmptyIdentity,
    );
    let mut state = to_value(&rich_state());
    *member_mut(
        &mut state,
        &[
            "work_items",
            "1",
            "dependencies",
            "0",
            "work_item_id",
            "value",
        ],
    ) = string("");
    assert_decode_error(
        decode_state(&state),
        "state.work_items[1].dependencies[0].work_item_id.value",
        DecodeErrorKind::EmptyIdentity,
    );
    let mut evidence_json = to_value(&evidence("ev-1"));
    *member_mut(&mut evidence_json, &["evidence_id", "value"]) = string("");
    assert_decode_error(
        decode_evidence(&evidence_json),
        "evidence.evidence_id.value",
        DecodeErrorKind::EmptyIdentity,
    );
    // The typed constructor refuses it as well; a single space is a value.
    assert!(Identity::new(IdentityKind::Event, "").is_err());
    assert_eq!(
        Identity::new(IdentityKind::Event, " ").unwrap().value(),
        " "
    );
    // A non-string value is a type error.
    let mut numeric = to_value(&rich_event());
    *member_mut(&mut numeric, &["task_id", "value"]) = Value::Number(Number::Int(1));
    assert_decode_error(
        decode_event(&numeric),
        "event.task_id.value",
        wrong_type("string", "integer"),
    );
}

#[test]
fn unknown_members_are_reported_on_their_object() {
    let cases: [(&[&str], &str); 4] = [
        (&[], "state"),
        (&["work_items", "0"], "state.work_items[0]"),
        (
            &["work_items", "0", "current_attempt"],
            "state.work_items[0].current_attempt",
        ),
        (&["task_id"], "state.task_id"),
    ];
    for (path, expected_path) in cases {
        let mut json = to_value(&rich_state());
        object_mut(&mut json, path).insert("bogus".to_owned(), Value::Null);
        assert_decode_error(
            decode_state(&json),
            expected_path,
            DecodeErrorKind::UnknownMember("bogus".to_owned()),
        );
    }
    let mut event = to_value(&rich_event());
    object_mut(&mut event, &[]).insert("zzz".to_owned(), Value::Bool(true));
    assert_decode_error(
        decode_event(&event),
        "event",
        DecodeErrorKind::UnknownMember("zzz".to_owned()),
    );
}

#[test]
fn missing_members_are_reported_with_their_path() {
    let cases: [(&[&str], &str, &str); 6] = [
        (&[], "revision", "state.revision"),
        (&[], "accepted_events", "state.accepted_events"),
        (
            &["work_items", "0"],
            "dependencies",
            "state.work_items[0].dependencies",
        ),
        (
            &["work_items", "1"],
            "current_attempt",
            "state.work_items[1].current_attempt",
        ),
        (
            &["suspension"],
            "wait_policy_digest",
            "state.suspension.wait_policy_digest",
        ),
        (&["installation_id"], "value", "state.installation_id.value"),
    ];
    for (object, member, expected_path) in cases {
        let mut json = to_value(&rich_state());
        assert!(object_mut(&mut json, object).remove(member).is_some());
        assert_decode_error(decode_state(&json), expected_path, DecodeErrorKind::Missing);
    }
    for member in ["kind", "schema_version", "event_id", "expected_revision"] {
        let mut json = to_value(&rich_event());
        object_mut(&mut json, &[]).remove(member);
        assert_decode_error(
            decode_event(&json),
            &format!("event.{member}"),
            DecodeErrorKind::Missing,
        );
    }
}

#[test]
fn wrong_schema_versions_and_shapes_are_refused() {
    let mut json = to_value(&rich_event());
    *member_mut(&mut json, &["schema_version"]) = string("valp-kernel-state.v1");
    assert_decode_error(
        decode_event(&json),
        "event.schema_version",
        DecodeErrorKind::WrongSchema {
            expected: "valp-kernel-event.v1",
            found: "valp-kernel-state.v1".to_owned(),
        },
    );
    assert_decode_error(
        decode_state(&Value::Array(Vec::new())),
        "state",
        wrong_type("object", "array"),
    );
    let mut kind = to_value(&rich_event());
    *member_mut(&mut kind, &["kind"]) = Value::Number(Number::Int(3));
    assert_decode_error(
        decode_event(&kind),
        "event.kind",
        wrong_type("string", "integer"),
    );
    let mut items = to_value(&rich_state());
    *member_mut(&mut items, &["work_items"]) = Value::Object(std::collections::BTreeMap::default());
    assert_decode_error(
        decode_state(&items),
        "state.work_items",
        wrong_type("array", "object"),
    );
}

#[test]
fn null_optional_event_slots_decode_as_absent() {
    let mut json = to_value(&event("evt-1", EventKind::RoutingValidationStarted, 0));
    object_mut(&mut json, &[]).insert("attempt_id".to_owned(), Value::Null);
    object_mut(&mut json, &[]).insert("wake_reason".to_owned(), Value::Null);
    let decoded = decode_event(&json).expect("null counts as absent");
    assert_eq!(
        decoded,
        event("evt-1", EventKind::RoutingValidationStarted, 0)
    );
}
