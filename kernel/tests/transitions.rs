//! The closed task transition graph (protocol digest §7), checked as a table and exhaustively
//! through `reduce` over all 13 task statuses x 36 event kinds on a bare State.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use valp_kernel::reduce::transitions::task_transition;
use valp_kernel::{Control, ErrorCode, EventKind, Open, Outcome, TaskStatus};

use support::{Driver, PRINCIPAL, TASK, assert_rejected, reduce_both, task_event};

/// The 18 explicit edges of the MVP-B graph, written out independently of the kernel's table.
const EXPLICIT_EDGES: [(TaskStatus, EventKind, TaskStatus); 18] = {
    use EventKind as K;
    use TaskStatus as S;
    [
        (
            S::Published,
            K::RoutingValidationStarted,
            S::RoutingValidation,
        ),
        (
            S::RoutingValidation,
            K::RoutingValidationPassed,
            S::Dispatching,
        ),
        (S::Dispatching, K::DispatchAccepted, S::Executing),
        (S::Executing, K::WorkCompleted, S::Verifying),
        (S::Verifying, K::VerificationPassed, S::Reviewing),
        (S::Verifying, K::VerificationFailed, S::Fixing),
        (S::Reviewing, K::ReviewPassed, S::Recording),
        (S::Reviewing, K::ReviewRejected, S::Fixing),
        (S::Reviewing, K::ApprovalRequiredRaised, S::ApprovalRequired),
        (S::Fixing, K::FixDispatchRequested, S::Dispatching),
        (S::ApprovalRequired, K::ApprovalGranted, S::Recording),
        (S::ApprovalRequired, K::ApprovalDenied, S::Fixing),
        (S::Recording, K::RecordingCompleted, S::Done),
        (S::Executing, K::TaskBlocked, S::Blocked),
        (S::Verifying, K::TaskBlocked, S::Blocked),
        (S::Reviewing, K::TaskBlocked, S::Blocked),
        (S::Fixing, K::TaskBlocked, S::Blocked),
        (S::Blocked, K::BlockedRecoveryToFixing, S::Fixing),
    ]
};

const TERMINAL: [TaskStatus; 3] = [TaskStatus::Done, TaskStatus::Failed, TaskStatus::Cancelled];

/// The expected edge from `from` under `kind`.
fn expected_edge(from: TaskStatus, kind: EventKind) -> Option<TaskStatus> {
    if TERMINAL.contains(&from) {
        return None;
    }
    match kind {
        EventKind::TaskFailed => return Some(TaskStatus::Failed),
        EventKind::TaskCancelled => return Some(TaskStatus::Cancelled),
        _ => {}
    }
    EXPLICIT_EDGES
        .iter()
        .find(|&&(edge_from, edge_kind, _)| edge_from == from && edge_kind == kind)
        .map(|&(_, _, to)| to)
}

fn all_pairs() -> impl Iterator<Item = (TaskStatus, EventKind)> {
    TaskStatus::ALL
        .iter()
        .flat_map(|&status| EventKind::ALL.iter().map(move |&kind| (status, kind)))
}

#[test]
fn table_matches_the_independent_edge_list_on_every_pair() {
    assert_eq!(all_pairs().count(), 13 * 36);
    for (from, kind) in all_pairs() {
        assert_eq!(
            task_transition(from, kind),
            expected_edge(from, kind),
            "{from} x {kind}"
        );
    }
}

#[test]
fn table_has_18_explicit_edges_plus_failure_and_cancel_from_10_statuses() {
    let edges: Vec<_> = all_pairs()
        .filter_map(|(from, kind)| task_transition(from, kind).map(|to| (from, kind, to)))
        .collect();
    assert_eq!(edges.len(), 18 + 10 + 10);
    let explicit: Vec<_> = edges
        .iter()
        .copied()
        .filter(|&(_, kind, _)| !matches!(kind, EventKind::TaskFailed | EventKind::TaskCancelled))
        .collect();
    assert_eq!(explicit.len(), 18);
    for edge in EXPLICIT_EDGES {
        assert!(explicit.contains(&edge), "missing {edge:?}");
    }
    let non_terminal: Vec<_> = TaskStatus::ALL
        .iter()
        .copied()
        .filter(|status| !status.is_terminal())
        .collect();
    assert_eq!(non_terminal.len(), 10);
    for &from in &non_terminal {
        assert_eq!(
            task_transition(from, EventKind::TaskFailed),
            Some(TaskStatus::Failed)
        );
        assert_eq!(
            task_transition(from, EventKind::TaskCancelled),
            Some(TaskStatus::Cancelled)
        );
    }
}

#[test]
fn terminal_statuses_have_no_outgoing_edge() {
    for from in TERMINAL {
        assert!(from.is_terminal());
        for &kind in EventKind::ALL {
            assert_eq!(task_transition(from, kind), None, "{from} x {kind}");
        }
    }
    let terminal: Vec<_> = TaskStatus::ALL
        .iter()
        .copied()
        .filter(|status| status.is_terminal())
        .collect();
    assert_eq!(terminal, TERMINAL);
}

#[test]
fn task_blocked_only_from_executing_verifying_reviewing_fixing() {
    let sources: Vec<_> = TaskStatus::ALL
        .iter()
        .copied()
        .filter(|&from| task_transition(from, EventKind::TaskBlocked).is_some())
        .collect();
    assert_eq!(
        sources,
        [
            TaskStatus::Executing,
            TaskStatus::Verifying,
            TaskStatus::Reviewing,
            TaskStatus::Fixing
        ]
    );
    for from in [
        TaskStatus::Published,
        TaskStatus::RoutingValidation,
        TaskStatus::Dispatching,
        TaskStatus::ApprovalRequired,
        TaskStatus::Recording,
    ] {
        assert_eq!(task_transition(from, EventKind::TaskBlocked), None);
    }
}

#[test]
fn only_recording_completed_from_recording_leads_to_done() {
    let into_done: Vec<_> = all_pairs()
        .filter(|&(from, kind)| task_transition(from, kind) == Some(TaskStatus::Done))
        .collect();
    assert_eq!(
        into_done,
        [(TaskStatus::Recording, EventKind::RecordingCompleted)]
    );
}

#[test]
fn blocked_exits_only_to_fixing_failed_or_cancelled() {
    let exits: Vec<_> = EventKind::ALL
        .iter()
        .filter_map(|&kind| task_transition(TaskStatus::Blocked, kind).map(|to| (kind, to)))
        .collect();
    assert_eq!(
        exits,
        [
            (EventKind::BlockedRecoveryToFixing, TaskStatus::Fixing),
            (EventKind::TaskFailed, TaskStatus::Failed),
            (EventKind::TaskCancelled, TaskStatus::Cancelled),
        ]
    );
}

#[test]
fn non_task_kinds_never_move_the_table() {
    // Work-item, attempt, suspension and control kinds are not edges of the task table.
    let task_kinds = [
        EventKind::RoutingValidationStarted,
        EventKind::RoutingValidationPassed,
        EventKind::DispatchAccepted,
        EventKind::WorkCompleted,
        EventKind::VerificationPassed,
        EventKind::VerificationFailed,
        EventKind::ReviewPassed,
        EventKind::ReviewRejected,
        EventKind::ApprovalRequiredRaised,
        EventKind::FixDispatchRequested,
        EventKind::ApprovalGranted,
        EventKind::ApprovalDenied,
        EventKind::RecordingCompleted,
        EventKind::TaskBlocked,
        EventKind::BlockedRecoveryToFixing,
        EventKind::TaskFailed,
        EventKind::TaskCancelled,
    ];
    for (from, kind) in all_pairs() {
        if !task_kinds.contains(&kind) {
            assert_eq!(task_transition(from, kind), None, "{from} x {kind}");
        }
    }
}

/// Every status x kind through `reduce` (and `LiveState`) on a bare State: accepted exactly on
/// the edges, with the generic accepted shape; every other pair is `VALP-E-STATE-CONFLICT` with
/// the input echoed.
#[test]
fn reduce_accepts_exactly_the_edges_on_a_bare_state() {
    let mut accepted_pairs = 0;
    for &from in TaskStatus::ALL {
        let driver = Driver::at(from, Vec::new());
        let state = driver.state();
        assert!(state.body.work_items.is_empty());
        for &kind in EventKind::ALL {
            let (event, evidence_set) = task_event("probe", kind, state.body.revision);
            let outcome = reduce_both(&state, &event, &evidence_set);
            match expected_edge(from, kind) {
                Some(to) => {
                    accepted_pairs += 1;
                    let Outcome::Accepted(accepted) = &outcome else {
                        panic!("{from} x {kind} should be accepted: {outcome:?}");
                    };
                    support::check_accepted(accepted, &state, &event);
                    assert_eq!(accepted.result_id.value(), "probe:accepted");
                    assert_eq!(accepted.audit_facts[0], "accepted:event:probe");
                    assert!(accepted.obligations.is_empty());
                    let mut expected_body = state.body.clone();
                    expected_body.revision += 1;
                    expected_body.status = Open::Known(to);
                    if kind == EventKind::TaskCancelled {
                        expected_body.control = Some(Control::INITIAL);
                        assert_eq!(
                            accepted.audit_facts,
                            [
                                "accepted:event:probe".to_owned(),
                                format!("cancelled:task:{TASK}:{PRINCIPAL}")
                            ]
                        );
                    } else {
                        assert_eq!(accepted.audit_facts.len(), 1);
                    }
                    assert_eq!(accepted.state.body, expected_body, "{from} x {kind}");
                }
                None => {
                    assert_rejected(&outcome, &state, ErrorCode::StateConflict);
                }
            }
        }
    }
    assert_eq!(accepted_pairs, 38);
}

#[test]
fn terminal_states_refuse_every_kind_even_with_authority() {
    for from in TERMINAL {
        let state = Driver::at(from, Vec::new()).state();
        for &kind in EventKind::ALL {
            let (mut event, _) = task_event("late", kind, state.body.revision);
            let evidence_set = support::authorize(&mut event);
            support::assert_conflict(&state, &event, &evidence_set);
        }
    }
}

/// The path fixtures themselves: each status is reached by a chain of accepted edges whose
/// revisions count up from 1.
#[test]
fn path_fixtures_reach_each_status_at_the_expected_revision() {
    for &status in TaskStatus::ALL {
        let driver = Driver::at(status, Vec::new());
        let path = support::path_to(status);
        assert_eq!(driver.revision(), i128::try_from(path.len()).unwrap());
        let state = driver.state();
        assert_eq!(state.body.status, Open::Known(status));
        let ids: Vec<_> = state
            .accepted_events
            .iter()
            .map(|entry| entry.event_id.value().to_owned())
            .collect();
        let expected: Vec<_> = (1..=path.len()).map(|n| format!("e-{n}")).collect();
        assert_eq!(ids, expected);
    }
}

/// While interrupted, the only task edges that pass are failure and cancellation: every other
/// status x kind pair on a bare, interrupted State is refused. Failure leaves the interrupt in
/// force; cancellation resets control to active.
#[test]
fn an_interrupted_task_only_fails_or_is_cancelled() {
    let mut accepted_pairs = 0;
    for &from in TaskStatus::ALL
        .iter()
        .filter(|status| !status.is_terminal())
    {
        let mut driver = Driver::at(from, Vec::new());
        driver.interrupt("int-1");
        let state = driver.state();
        let interrupted = state.body.control.clone();
        for &kind in EventKind::ALL {
            let (event, evidence_set) = task_event("probe", kind, state.body.revision);
            let outcome = reduce_both(&state, &event, &evidence_set);
            match kind {
                EventKind::TaskFailed | EventKind::TaskCancelled => {
                    accepted_pairs += 1;
                    let Outcome::Accepted(accepted) = &outcome else {
                        panic!("{from} x {kind} should pass the interrupt gate: {outcome:?}");
                    };
                    support::check_accepted(accepted, &state, &event);
                    assert_eq!(
                        accepted.state.body.status,
                        Open::Known(expected_edge(from, kind).unwrap())
                    );
                    let control = if kind == EventKind::TaskFailed {
                        interrupted.clone()
                    } else {
                        Some(Control::INITIAL)
                    };
                    assert_eq!(accepted.state.body.control, control);
                }
                _ => {
                    assert_rejected(&outcome, &state, ErrorCode::StateConflict);
                }
            }
        }
    }
    assert_eq!(accepted_pairs, 20);
}
