#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use valp_kernel::dimension::{Dimension, GateResult, GateVerdict};
use valp_kernel::{
    Attempt, AttemptStatus, Identity, IdentityKind, Open, Requirement, State, StateBody,
    TaskStatus, WorkItem, WorkItemStatus,
};
use valp_store::ControlRoot;
use valp_store::io::OsStorage;
use valp_view::NeedKind;

use super::{Found, Queue, TaskFacts, find};
use crate::clock::{FixedClock, Timestamp};

fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

fn item(name: &str, status: WorkItemStatus, attempt: Option<AttemptStatus>) -> WorkItem {
    WorkItem {
        task_id: id(IdentityKind::Task, "T"),
        work_item_id: id(IdentityKind::WorkItem, name),
        requirement: Requirement::Required,
        status,
        dependencies: Vec::new(),
        current_attempt: attempt.map(|status| Attempt {
            task_id: id(IdentityKind::Task, "T"),
            work_item_id: id(IdentityKind::WorkItem, name),
            attempt_id: id(IdentityKind::Attempt, &format!("T:{name}:a2")),
            dispatch_id: id(IdentityKind::Dispatch, &format!("T:{name}:d2")),
            dispatch_generation: 2,
            status,
        }),
    }
}

fn body(status: TaskStatus, revision: i128, items: Vec<WorkItem>) -> StateBody {
    let mut state = State::genesis(
        id(IdentityKind::Installation, "inst"),
        1,
        id(IdentityKind::Task, "T"),
        items,
    );
    state.body.status = Open::Known(status);
    state.body.revision = revision;
    state.body
}

fn kinds(found: &[Found]) -> Vec<(NeedKind, String)> {
    found
        .iter()
        .map(|need| (need.kind, need.occurrence.clone()))
        .collect()
}

fn facts_find(body: &StateBody, gates: &[GateResult]) -> Vec<Found> {
    find(&TaskFacts {
        body,
        gates,
        last_recorded_ms: None,
        outside: &super::Outside::default(),
    })
}

#[test]
fn each_source_finds_its_need_and_nothing_else() {
    let executing = body(
        TaskStatus::Executing,
        7,
        vec![
            item("a", WorkItemStatus::Running, Some(AttemptStatus::Running)),
            item("b", WorkItemStatus::Blocked, Some(AttemptStatus::Failed)),
        ],
    );
    assert_eq!(
        kinds(&facts_find(&executing, &[])),
        [(NeedKind::FailedAttempt, "T:b:a2".to_owned())]
    );
    assert_eq!(
        facts_find(&executing, &[])[0].summary,
        "b is blocked: attempt T:b:a2 did not complete and the System retries no more"
    );

    let done_items = vec![item(
        "a",
        WorkItemStatus::Completed,
        Some(AttemptStatus::Completed),
    )];
    let reviewing = body(TaskStatus::Reviewing, 9, done_items.clone());
    assert_eq!(
        kinds(&facts_find(&reviewing, &[])),
        [(NeedKind::Review, "r9".to_owned())]
    );
    let approval = body(TaskStatus::ApprovalRequired, 10, done_items.clone());
    assert_eq!(
        kinds(&facts_find(&approval, &[])),
        [(NeedKind::Approval, "r10".to_owned())]
    );
    // Fixing with something still running is not stalled; with nothing left it is.
    let fixing = body(
        TaskStatus::Fixing,
        11,
        vec![item(
            "a",
            WorkItemStatus::Running,
            Some(AttemptStatus::Running),
        )],
    );
    assert_eq!(kinds(&facts_find(&fixing, &[])), []);
    let stalled = body(TaskStatus::Fixing, 12, done_items.clone());
    assert_eq!(
        kinds(&facts_find(&stalled, &[])),
        [(NeedKind::NothingToRun, "r12".to_owned())]
    );

    // A required gate without its evidence counts once the work is done, not before.
    let gates = [
        GateResult {
            dimension: Dimension::Cost,
            required: true,
            verdict: GateVerdict::Unverifiable,
            reasons: vec!["measure_unavailable:tokens".to_owned()],
        },
        GateResult {
            dimension: Dimension::Quality,
            required: false,
            verdict: GateVerdict::Unverifiable,
            reasons: vec!["measure_unavailable:lint".to_owned()],
        },
    ];
    let found = facts_find(&reviewing, &gates);
    assert_eq!(
        kinds(&found),
        [
            (NeedKind::EvidenceMissing, "cost@r9".to_owned()),
            (NeedKind::Review, "r9".to_owned())
        ]
    );
    assert_eq!(
        found[0].summary,
        "the required cost gate cannot be judged: measure_unavailable:tokens"
    );
    assert_eq!(kinds(&facts_find(&executing, &gates)).len(), 1);
}

#[test]
fn the_queue_keeps_first_seen_times_and_acknowledgements_across_restarts() {
    let temp = tempfile::tempdir().unwrap();
    let root = ControlRoot::init(
        temp.path(),
        id(IdentityKind::Installation, "inst"),
        Arc::new(OsStorage),
    )
    .unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(1_000_000));
    let reviewing = body(TaskStatus::Reviewing, 9, Vec::new());
    let blocked = body(
        TaskStatus::Executing,
        4,
        vec![item(
            "b",
            WorkItemStatus::Blocked,
            Some(AttemptStatus::Failed),
        )],
    );
    let found = || {
        vec![
            ("review-me".to_owned(), facts_find(&reviewing, &[])),
            ("broken".to_owned(), facts_find(&blocked, &[])),
        ]
    };
    let mut queue = Queue::new(&root);
    let (rows, problem) = queue.rows(found(), &clock);
    assert_eq!(problem, None);
    // The failure first (severity), both seen now.
    assert_eq!(
        rows.iter().map(|row| row.key.as_str()).collect::<Vec<_>>(),
        ["failed_attempt:broken:T:b:a2", "review:review-me:r9"]
    );
    assert!(rows.iter().all(|row| row.since_ms == 1_000_000));

    clock.advance(5_000);
    queue
        .acknowledge("failed_attempt:broken:T:b:a2", true, &rows, &clock)
        .unwrap();
    let (rows, _) = queue.rows(found(), &clock);
    assert_eq!(rows[0].key, "review:review-me:r9");
    assert_eq!(rows[0].since_ms, 1_000_000, "the age runs from first sight");
    assert!(rows[1].acknowledged);

    // A new console (a restart) reads the acknowledgement back.
    let mut restarted = Queue::new(&root);
    let (rows, _) = restarted.rows(found(), &clock);
    assert!(rows[1].acknowledged);
    assert_eq!(rows[1].key, "failed_attempt:broken:T:b:a2");
    assert_eq!(rows[1].since_ms, 1_005_000);

    // Taking it back, and acknowledging only keeps the needs still there.
    restarted
        .acknowledge("failed_attempt:broken:T:b:a2", false, &rows, &clock)
        .unwrap();
    let (rows, _) = restarted.rows(found(), &clock);
    assert!(rows.iter().all(|row| !row.acknowledged));
    restarted
        .acknowledge("review:review-me:r9", true, &rows[1..], &clock)
        .unwrap();
    let text = std::fs::read_to_string(root.console_file(super::acks::FILE)).unwrap();
    assert!(!text.contains("failed_attempt"), "{text}");
    assert!(text.contains("review:review-me:r9"), "{text}");
}

#[test]
fn a_malformed_acknowledgements_file_is_listed_and_never_overwritten() {
    let temp = tempfile::tempdir().unwrap();
    let root = ControlRoot::init(
        temp.path(),
        id(IdentityKind::Installation, "inst"),
        Arc::new(OsStorage),
    )
    .unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(0));
    let file = root.console_file(super::acks::FILE);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "{\"schema_version\":\"nope\",\"acknowledged\":[]}\n").unwrap();
    let reviewing = body(TaskStatus::Reviewing, 9, Vec::new());
    let mut queue = Queue::new(&root);
    let (rows, problem) = queue.rows(vec![("t".to_owned(), facts_find(&reviewing, &[]))], &clock);
    assert!(!rows[0].acknowledged);
    let problem = problem.unwrap();
    assert_eq!(problem.path, file.display().to_string());
    assert_eq!(
        problem.reason,
        "schema_version: must be \"valp-console-acknowledgements.v1\""
    );
    let refused = queue
        .acknowledge(&rows[0].key, true, &rows, &clock)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        format!(
            "{}: schema_version: must be \"valp-console-acknowledgements.v1\"",
            file.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "{\"schema_version\":\"nope\",\"acknowledged\":[]}\n"
    );
}

#[test]
fn a_need_of_the_current_revision_is_as_old_as_its_journal_line() {
    let temp = tempfile::tempdir().unwrap();
    let root = ControlRoot::init(
        temp.path(),
        id(IdentityKind::Installation, "inst"),
        Arc::new(OsStorage),
    )
    .unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(1_000_000));
    let reviewing = body(
        TaskStatus::Reviewing,
        9,
        vec![item(
            "b",
            WorkItemStatus::Blocked,
            Some(AttemptStatus::Failed),
        )],
    );
    let found = find(&TaskFacts {
        body: &reviewing,
        gates: &[],
        last_recorded_ms: Some(400_000),
        outside: &super::Outside::default(),
    });
    let (rows, _) = Queue::new(&root).rows(vec![("t".to_owned(), found)], &clock);
    let since = |kind| rows.iter().find(|row| row.kind == kind).unwrap().since_ms;
    // The review came with the last line; the failure's line is not known to be the last.
    assert_eq!(since(NeedKind::Review), 400_000);
    assert_eq!(since(NeedKind::FailedAttempt), 1_000_000);
    assert_eq!(
        rows.iter()
            .find(|row| row.kind == NeedKind::Review)
            .unwrap()
            .since_at,
        "1970-01-01T00:06:40.000Z"
    );
}
