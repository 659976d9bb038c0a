//! The two flow views (RFC 0002 §6): the Operator Workflow strip of the selected task and the
//! state machine view (`m`), as insta snapshots at 120x40 and 80x24, and the requests the view
//! sends: `Explain` when it opens and closes, and for an allowed Leader transition the same
//! confirmation dialog and request as its key; nothing for a refused one or on the read-only
//! screen.

use crossterm::event::KeyCode;
use valp_tui::Mode;
use valp_view::flow::{StageRow, StageState, TransitionRow, TransitionVerdict};
use valp_view::{ConsoleView, MachineView, Request, Workflow};

use crate::support::{
    BUILD, MIGRATE, REVIEW, Scripted, press, screen_text, snapshots, start, type_keys, working,
    working_read_only,
};

fn stage(state: StageState, note: &str) -> StageRow {
    StageRow {
        state,
        note: note.to_owned(),
    }
}

/// The strips of the working view's tasks: the build executing (dispatch done with 3/5
/// submissions proven), the fenced migration, the docs in review.
fn workflows() -> Vec<Workflow> {
    use StageState::{Blocked, Current, Done, NotReached};
    let common = |authority: StageRow| {
        vec![
            authority,
            stage(Done, "published, 5 work items frozen"),
            stage(Done, "5 work items, 4 dependencies"),
            stage(Done, "routing validated"),
        ]
    };
    let mut build = common(stage(Done, "Leader epoch 2"));
    build.extend([
        stage(Done, "3/5 submissions proven"),
        stage(Current, "1/5 completed, 1 running"),
        stage(NotReached, ""),
        stage(NotReached, ""),
    ]);
    let mut migrate = common(stage(
        Blocked,
        "epoch 1 fenced (active 2): hand the task off",
    ));
    migrate.extend([
        stage(Done, "2/2 submissions proven"),
        stage(Blocked, "blocked work items: copy-entries"),
        stage(NotReached, ""),
        stage(NotReached, ""),
    ]);
    let mut review = common(stage(Done, "Leader epoch 2"));
    review.extend([
        stage(Done, "3/3 submissions proven"),
        stage(Done, "3/3 settled, 3 completed"),
        stage(Current, "waiting for the Leader's review"),
        stage(NotReached, ""),
    ]);
    [(BUILD, build), (MIGRATE, migrate), (REVIEW, review)]
        .into_iter()
        .map(|(task, stages)| Workflow {
            task_id: task.to_owned(),
            stages,
        })
        .collect()
}

fn allowed(
    kind: &str,
    target: &str,
    actor: &str,
    next: &str,
    action: Option<Request>,
) -> TransitionRow {
    TransitionRow {
        kind: kind.to_owned(),
        target: target.to_owned(),
        work_item: target.strip_prefix("item ").map(str::to_owned),
        actor: actor.to_owned(),
        guard: "task in reviewing".to_owned(),
        evidence: "none required".to_owned(),
        verdict: TransitionVerdict::Allowed {
            next_status: next.to_owned(),
            effect: format!("accepted:event:explain-31-{kind}-task"),
        },
        action,
    }
}

fn refused(kind: &str, target: &str, code: &str, reason: &str) -> TransitionRow {
    TransitionRow {
        kind: kind.to_owned(),
        target: target.to_owned(),
        work_item: target.strip_prefix("item ").map(str::to_owned),
        actor: "Leader".to_owned(),
        guard: "task in recording".to_owned(),
        evidence: "frozen Done policy and one Done closure that passes the Done gate".to_owned(),
        verdict: TransitionVerdict::Refused {
            code: code.to_owned(),
            reasons: vec![reason.to_owned()],
        },
        action: None,
    }
}

/// The state machine of the task in review, as the runtime lists it (allowed first).
fn review_machine() -> MachineView {
    let task_id = REVIEW.to_owned();
    let leader = "Leader, with authority principal and evidence";
    MachineView {
        task_id: task_id.clone(),
        status: "reviewing".to_owned(),
        revision: 31,
        epoch: 2,
        transitions: vec![
            allowed(
                "review_passed",
                "task",
                "Leader",
                "recording",
                Some(Request::Review {
                    task_id: task_id.clone(),
                    pass: true,
                }),
            ),
            allowed(
                "review_rejected",
                "task",
                "Leader",
                "fixing",
                Some(Request::Review {
                    task_id: task_id.clone(),
                    pass: false,
                }),
            ),
            allowed(
                "approval_required_raised",
                "task",
                "Leader",
                "approval_required",
                None,
            ),
            allowed(
                "task_cancelled",
                "task",
                leader,
                "cancelled",
                Some(Request::Cancel {
                    task_id: task_id.clone(),
                    work_item_id: None,
                }),
            ),
            allowed(
                "interrupt_requested",
                "task",
                leader,
                "reviewing",
                Some(Request::Interrupt {
                    task_id: task_id.clone(),
                }),
            ),
            allowed(
                "work_item_skipped",
                "item outline",
                "System",
                "reviewing",
                None,
            ),
            refused(
                "routing_validation_started",
                "task",
                "VALP-E-STATE-CONFLICT",
                "the transition table has no edge reviewing --routing_validation_started--> \
                 (allowed from: published)",
            ),
            refused(
                "recording_completed",
                "task",
                "VALP-E-STATE-CONFLICT",
                "the transition table has no edge reviewing --recording_completed--> \
                 (allowed from: recording)",
            ),
            refused(
                "attempt_created",
                "item outline",
                "VALP-E-STATE-CONFLICT",
                "the attempt_created rule refuses it while the task is reviewing",
            ),
        ],
    }
}

/// The working view with the strips and the review task's state machine.
fn flowing() -> ConsoleView {
    let mut view = working();
    view.workflows = workflows();
    view.machine = Some(review_machine());
    view
}

#[test]
fn the_strip_shows_the_selected_tasks_stages_with_proofs_and_reasons() {
    let mut backend = Scripted::new(flowing());
    let mut app = start(&mut backend);
    snapshots!("workflow_executing", &app);
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("dispatch: 3/5 submissions proven"), "{text}");
    // The fenced, blocked task: both reasons on the strip.
    type_keys(&mut app, &mut backend, "j");
    snapshots!("workflow_fenced_blocked", &app);
    let text = screen_text(&app, 120, 40);
    assert!(
        text.contains("Doctor and Leader authority: epoch 1 fenced"),
        "{text}"
    );
    assert!(
        text.contains("Execute / Wait / Wake: blocked work items"),
        "{text}"
    );
    // A task without a workflow in the view draws no strip.
    let mut bare = working();
    bare.workflows.clear();
    let app = start(&mut Scripted::new(bare));
    assert!(!screen_text(&app, 120, 40).contains("Workflow"));
}

#[test]
fn the_state_machine_view_lists_allowed_then_refused_transitions_and_explains_the_cursor() {
    let mut backend = Scripted::new(flowing());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjm");
    assert_eq!(app.mode(), Mode::Machine);
    assert_eq!(
        backend.requests,
        [Request::Explain {
            task_id: Some(REVIEW.to_owned())
        }]
    );
    snapshots!("machine_reviewing", &app);
    // Down to recording_completed: its refusal in words below the list.
    type_keys(&mut app, &mut backend, "jjjjjjj");
    snapshots!("machine_refused", &app);
    let text = screen_text(&app, 120, 40);
    assert!(
        text.contains(
            "refused VALP-E-STATE-CONFLICT: the transition table has no edge reviewing \
             --recording_completed--> (allowed from:"
        ),
        "{text}"
    );
    // Enter on a refused transition proposes nothing.
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Machine);
    assert_eq!(backend.requests.len(), 1);
    // Esc closes the view and tells the backend to stop.
    press(&mut app, &mut backend, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Explain { task_id: None })
    );
}

#[test]
fn choosing_an_allowed_leader_transition_asks_as_its_key_does_then_sends_the_same_request() {
    let mut backend = Scripted::new(flowing());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjm");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Dialog);
    let from_view = app.pending().cloned();
    let dialog = screen_text(&app, 120, 40);
    assert!(
        dialog.contains("Pass the review of task task-review-docs?"),
        "{dialog}"
    );
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Review {
            task_id: REVIEW.to_owned(),
            pass: true
        })
    );
    // The key `p` on the task opens the very same dialog.
    let mut keyed = Scripted::new(flowing());
    let mut app = start(&mut keyed);
    type_keys(&mut app, &mut keyed, "jjp");
    assert_eq!(app.pending().cloned(), from_view);

    // Interrupt needs no dialog from its key, nor from the view.
    let mut backend = Scripted::new(flowing());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjmjjjj");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Interrupt {
            task_id: REVIEW.to_owned()
        })
    );
    // The System's transitions are shown, not offered.
    type_keys(&mut app, &mut backend, "j");
    let before = backend.requests.len();
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(backend.requests.len(), before);
    assert_eq!(app.mode(), Mode::Machine);
}

#[test]
fn from_the_work_items_pane_the_view_lists_that_items_transitions_only() {
    let mut view = flowing();
    view.items.push(valp_view::ItemRow {
        task_id: REVIEW.to_owned(),
        work_item_id: "outline".to_owned(),
        requirement: "optional".to_owned(),
        status: "pending".to_owned(),
        position: "ready".to_owned(),
        attempt: String::new(),
        attempt_since_ms: 0,
    });
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Tab);
    let item_rows = valp_tui::Pane::Items;
    assert_eq!(app.focus(), item_rows);
    let rows: usize = app
        .view()
        .items
        .iter()
        .filter(|item| item.task_id == REVIEW)
        .count();
    for _ in 1..rows {
        type_keys(&mut app, &mut backend, "j");
    }
    assert_eq!(app.selected_item(), Some("outline"));
    type_keys(&mut app, &mut backend, "m");
    let text = screen_text(&app, 120, 40);
    assert!(
        text.contains("State machine · task task-review-docs · item outline"),
        "{text}"
    );
    assert!(text.contains("work_item_skipped"), "{text}");
    assert!(text.contains("attempt_created"), "{text}");
    assert!(!text.contains("review_passed"), "{text}");
}

#[test]
fn the_read_only_screen_shows_the_view_but_proposes_nothing() {
    let mut view = working_read_only();
    view.workflows = workflows();
    view.machine = Some(review_machine());
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjm");
    assert_eq!(app.mode(), Mode::Machine);
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Machine);
    assert_eq!(
        backend.requests,
        [Request::Explain {
            task_id: Some(REVIEW.to_owned())
        }]
    );
}

#[test]
fn hostile_text_in_the_flow_views_never_reaches_the_terminal() {
    let mut view = flowing();
    let hostile = "evil\u{1b}[2J\u{1b}]0;owned\u{7}\u{202e}txt";
    view.workflows[2].stages[6].note = hostile.to_owned();
    if let Some(machine) = &mut view.machine {
        machine.transitions[0].guard = hostile.to_owned();
        machine.transitions[7].verdict = TransitionVerdict::Refused {
            code: "VALP-E-STATE-CONFLICT".to_owned(),
            reasons: vec![hostile.to_owned()],
        };
    }
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    for keys in ["", "m", "jjjjjjj"] {
        type_keys(&mut app, &mut backend, keys);
        for (width, height) in [(120, 40), (80, 24)] {
            let text = screen_text(&app, width, height);
            assert!(text.contains("evil"), "{text}");
            assert!(
                !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
                "{keys:?} at {width}x{height}: {text:?}"
            );
        }
    }
}
