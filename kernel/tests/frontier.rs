//! The dependency frontier (protocol digest §8.4): the position of every work item in hand-built
//! States, and, along seeded walks, agreement with what `reduce` does with
//! `work_item_eligible`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
mod walks;

use valp_kernel::frontier::{FrontierItem, Lock, Position, frontier};
use valp_kernel::{
    Attempt, AttemptStatus, ControlStatus, ErrorCode, Event, EventKind, Identity, IdentityKind,
    Outcome, Requirement, State, StateBody, WorkItem, WorkItemStatus, reduce,
};

use support::{attempt_record, genesis_with, id, wi, work_item};
use walks::{Recorded, SHAPES, config, corpus};

use Requirement::{Optional, Required, Soft};
use WorkItemStatus as W;

/// A required work item in `status` with the given dependency edges.
fn item(name: &str, status: WorkItemStatus, deps: &[(&str, Requirement)]) -> WorkItem {
    WorkItem {
        status,
        ..work_item(name, Required, deps)
    }
}

/// The item with a current attempt `att-<name>` in `status`.
fn with_attempt(mut item: WorkItem, status: AttemptStatus) -> WorkItem {
    let name = item.work_item_id.value().to_owned();
    item.current_attempt = Some(attempt(&name, status));
    item
}

fn attempt(item: &str, status: AttemptStatus) -> Attempt {
    attempt_record(item, &format!("att-{item}"), 1, status)
}

/// The items every hand-built State starts with: one completed, one pending, one running, one
/// failed, none of them with dependencies.
fn base_items() -> Vec<WorkItem> {
    vec![
        item("done", W::Completed, &[]),
        item("waiting", W::Pending, &[]),
        with_attempt(item("busy", W::Running, &[]), AttemptStatus::Running),
        item("broken", W::Failed, &[]),
    ]
}

/// A State with the base items followed by `items`.
fn state_with(items: Vec<WorkItem>) -> State {
    let mut all = base_items();
    all.extend(items);
    genesis_with(all)
}

/// The frontier position of `name`.
fn position(body: &StateBody, name: &str) -> Position {
    frontier(body)
        .into_iter()
        .find(|entry| entry.work_item_id == wi(name))
        .unwrap_or_else(|| panic!("{name} is not on the frontier"))
        .position
}

/// A `work_item_eligible` event for `work_item_id` at the State's revision.
fn eligible_event(body: &StateBody, work_item_id: &Identity) -> Event {
    let mut event = Event::new(
        id(
            IdentityKind::Event,
            &format!("eligible-{}", work_item_id.value()),
        ),
        body.installation_id.clone(),
        body.leader_epoch,
        body.task_id.clone(),
        EventKind::WorkItemEligible,
        body.revision,
    );
    event.work_item_id = Some(work_item_id.clone());
    event
}

/// The audit facts `work_item_eligible` adds for the unmet soft dependencies the frontier lists.
fn soft_facts(item: &Identity, soft_unmet: &[Identity]) -> Vec<String> {
    soft_unmet
        .iter()
        .map(|dependency| {
            format!(
                "soft_dependency_unmet:{}:{}",
                item.value(),
                dependency.value()
            )
        })
        .collect()
}

/// Checks `reduce` against the frontier for one item of an active (not interrupted) State:
/// `work_item_eligible` is accepted exactly when the item is unlocked, with one audit fact per
/// listed soft dependency. Returns whether it was accepted.
fn assert_agrees(state: &State, entry: &FrontierItem) -> bool {
    let event = eligible_event(&state.body, &entry.work_item_id);
    let outcome = reduce(state, &event, &[]);
    match (&entry.position, &outcome) {
        (Position::Unlocked { soft_unmet }, Outcome::Accepted(accepted)) => {
            assert_eq!(
                accepted.audit_facts[1..],
                soft_facts(&entry.work_item_id, soft_unmet)
            );
            let next = accepted.state.body.work_item(&entry.work_item_id).unwrap();
            assert_eq!(next.status, W::Eligible);
            true
        }
        (position, Outcome::Rejected(rejected)) => {
            assert!(
                !matches!(position, Position::Unlocked { .. }),
                "{entry:?} is unlocked but work_item_eligible is rejected"
            );
            assert_eq!(rejected.error_code, ErrorCode::StateConflict);
            false
        }
        (position, outcome) => panic!("{position:?} but {:?}", outcome.variant()),
    }
}

/// A pending item's name, its dependency edges and the position it must have.
type PendingCase<'a> = (&'a str, &'a [(&'a str, Requirement)], Position);

#[test]
fn pending_items_are_unlocked_or_locked_by_their_hard_dependencies() {
    let unlocked = |soft: &[&str]| Position::Unlocked {
        soft_unmet: soft.iter().map(|name| wi(name)).collect(),
    };
    let locked = |locks: &[(&str, Option<WorkItemStatus>)]| Position::Locked {
        by: locks
            .iter()
            .map(|&(name, status)| Lock {
                work_item_id: wi(name),
                status,
            })
            .collect(),
    };
    let cases: [PendingCase; 8] = [
        ("after-done", &[("done", Required)], unlocked(&[])),
        // Unmet soft dependencies in declared order; optional ones are not listed.
        (
            "mixed",
            &[
                ("broken", Soft),
                ("done", Required),
                ("waiting", Soft),
                ("busy", Optional),
            ],
            unlocked(&["broken", "waiting"]),
        ),
        ("soft-done", &[("done", Soft)], unlocked(&[])),
        (
            "optional-only",
            &[("waiting", Optional), ("broken", Optional)],
            unlocked(&[]),
        ),
        ("free", &[], unlocked(&[])),
        (
            "needs-ghost",
            &[("ghost", Required)],
            locked(&[("ghost", None)]),
        ),
        // Every incomplete or missing hard dependency, in declared order.
        (
            "needs-many",
            &[
                ("waiting", Required),
                ("done", Required),
                ("busy", Required),
                ("ghost", Required),
                ("broken", Soft),
            ],
            locked(&[
                ("waiting", Some(W::Pending)),
                ("busy", Some(W::Running)),
                ("ghost", None),
            ]),
        ),
        (
            "needs-broken",
            &[("broken", Required)],
            locked(&[("broken", Some(W::Failed))]),
        ),
    ];
    let state = state_with(
        cases
            .iter()
            .map(|(name, deps, _)| item(name, W::Pending, deps))
            .collect(),
    );
    assert_eq!(position(&state.body, "waiting"), unlocked(&[]));
    for (name, _, expected) in &cases {
        assert_eq!(position(&state.body, name), *expected, "{name}");
    }
    for entry in frontier(&state.body) {
        if entry.status == W::Pending {
            let unlocked = matches!(entry.position, Position::Unlocked { .. });
            assert_eq!(assert_agrees(&state, &entry), unlocked, "{entry:?}");
        }
    }
}

/// The reducer (like the reference) refuses eligibility while any dependency, of any kind,
/// names an item that does not exist. The frontier reports such an item as `Locked` but names
/// nothing that locks it when the missing dependency is soft or optional.
#[test]
fn a_missing_soft_or_optional_dependency_is_named_as_the_lock() {
    for requirement in [Soft, Optional] {
        let state = state_with(vec![item(
            "needs-ghost",
            W::Pending,
            &[("done", Required), ("ghost", requirement)],
        )]);
        let entry = frontier(&state.body).pop().unwrap();
        assert!(!assert_agrees(&state, &entry));
        assert_eq!(
            entry.position,
            Position::Locked {
                by: vec![Lock {
                    work_item_id: wi("ghost"),
                    status: None,
                }]
            },
            "{requirement}"
        );
    }
}

/// An in-flight position with `attempt`.
fn in_flight(attempt: Option<Attempt>) -> Position {
    Position::InFlight { attempt }
}

#[test]
fn non_pending_items_are_ready_in_flight_blocked_or_settled() {
    let submitted = with_attempt(item("submitted", W::Submitted, &[]), AttemptStatus::Created);
    let blocked = with_attempt(item("blocked", W::Blocked, &[]), AttemptStatus::Fenced);
    let mut items = vec![
        item("eligible", W::Eligible, &[("ghost", Required)]),
        submitted,
        item("submitted-bare", W::Submitted, &[]),
        blocked,
        item("blocked-bare", W::Blocked, &[]),
    ];
    let settled = [
        W::Completed,
        W::Partial,
        W::Degraded,
        W::Failed,
        W::Cancelled,
        W::Skipped,
    ];
    for status in settled {
        items.push(item(
            &format!("settled-{status}"),
            status,
            &[("ghost", Required)],
        ));
    }
    let state = state_with(items);
    let body = &state.body;
    let cases = [
        ("eligible", Position::Ready),
        (
            "busy",
            in_flight(Some(attempt("busy", AttemptStatus::Running))),
        ),
        (
            "submitted",
            in_flight(Some(attempt("submitted", AttemptStatus::Created))),
        ),
        ("submitted-bare", in_flight(None)),
        (
            "blocked",
            Position::Blocked {
                attempt: Some(attempt("blocked", AttemptStatus::Fenced)),
            },
        ),
        ("blocked-bare", Position::Blocked { attempt: None }),
    ];
    for (name, expected) in cases {
        assert_eq!(position(body, name), expected, "{name}");
    }
    for status in settled {
        assert_eq!(
            position(body, &format!("settled-{status}")),
            Position::Settled(status)
        );
    }
    // Only pending items can become eligible.
    for entry in frontier(body) {
        if entry.status != W::Pending {
            assert!(!assert_agrees(&state, &entry), "{entry:?}");
        }
    }
}

#[test]
fn the_frontier_lists_every_item_in_table_order() {
    let mut items = base_items();
    items.push(WorkItem {
        requirement: Soft,
        ..item("soft-one", W::Eligible, &[])
    });
    items.push(WorkItem {
        requirement: Optional,
        ..item("optional-one", W::Skipped, &[])
    });
    let state = genesis_with(items.clone());
    let listed = frontier(&state.body);
    assert_eq!(listed.len(), items.len());
    for (entry, item) in listed.iter().zip(&items) {
        assert_eq!(entry.work_item_id, item.work_item_id);
        assert_eq!(entry.requirement, item.requirement);
        assert_eq!(entry.status, item.status);
    }
    assert!(frontier(&support::genesis().body).is_empty());
}

/// Counts of what the walk property saw.
#[derive(Debug, Default)]
struct Seen {
    unlocked: usize,
    soft_unmet: usize,
    locked: usize,
    other: usize,
    interrupted: usize,
}

/// Along a walk, every item's position agrees with `reduce` on `work_item_eligible`. While the
/// task is interrupted the reducer refuses the event whatever the frontier says (the frontier
/// is derived from dependencies alone).
fn check_walk(recorded: &Recorded, seen: &mut Seen) {
    for at in 0..=recorded.len() {
        let state = recorded.state_before(at);
        let interrupted = state
            .body
            .control
            .as_ref()
            .is_some_and(|control| control.status == ControlStatus::Interrupted);
        for entry in frontier(&state.body) {
            if interrupted {
                let event = eligible_event(&state.body, &entry.work_item_id);
                let outcome = reduce(state, &event, &[]);
                assert_eq!(outcome.error_code(), Some(ErrorCode::StateConflict));
                seen.interrupted += 1;
                continue;
            }
            let accepted = assert_agrees(state, &entry);
            match &entry.position {
                Position::Unlocked { soft_unmet } => {
                    assert!(accepted);
                    seen.unlocked += 1;
                    seen.soft_unmet += soft_unmet.len();
                }
                Position::Locked { by } => {
                    assert!(!by.is_empty(), "{entry:?}");
                    seen.locked += 1;
                }
                _ => seen.other += 1,
            }
        }
    }
}

#[test]
fn unlocked_exactly_when_reduce_accepts_eligibility_along_walks() {
    let mut seen = Seen::default();
    for recorded in corpus() {
        check_walk(recorded, &mut seen);
    }
    for seed in 20..24 {
        check_walk(&Recorded::walk(config(seed, SHAPES[4]), 80), &mut seen);
    }
    assert!(seen.unlocked > 200, "{seen:?}");
    assert!(seen.soft_unmet > 50, "{seen:?}");
    assert!(seen.locked > 1000, "{seen:?}");
    assert!(seen.other > 1000, "{seen:?}");
    assert!(seen.interrupted > 50, "{seen:?}");
}
