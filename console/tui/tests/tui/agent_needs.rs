//! The needs kinds other issues add: an agent's permission request (allowed or denied through
//! the same confirmation dialog, refused in read-only mode), a blocked agent, an unconfirmed
//! submission and an open correction round; the request's detail view; the task detail's
//! correction rounds and channel cost.

use crossterm::event::KeyCode;
use valp_tui::Pane;
use valp_view::{AgentAsk, ConsoleView, CorrectionView, NeedKind, Request, RoundView, UsageRow};

use crate::support::{
    BUILD, NOW_MS, REVIEW, Scripted, need, press, screen_text, snapshots, start, type_keys,
    working, working_read_only,
};

const REQUEST: &str = "perm-3f2a9c1d0b7e4a55";

fn flat(screen: &str) -> String {
    screen
        .lines()
        .map(|line| line.trim_matches('"'))
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`working`] with one need of each new kind; the agent's request first (urgent).
fn asking(mut view: ConsoleView) -> ConsoleView {
    let mut request = need(
        NeedKind::AgentRequest,
        BUILD,
        Some("index"),
        REQUEST,
        "claude asks to use Bash on the command cargo test --workspace",
        20,
    );
    "2026-11-30T11:59:40.000Z".clone_into(&mut request.since_at);
    request.ask = Some(AgentAsk {
        request_id: REQUEST.to_owned(),
        attempt_id: "att-index-1".to_owned(),
        agent: "claude".to_owned(),
        tool: "Bash".to_owned(),
        subject: ("command".to_owned(), "cargo test --workspace".to_owned()),
        deadline_ms: NOW_MS + 40_000,
        deadline_at: "2026-11-30T12:00:40.000Z".to_owned(),
    });
    let mut needs = vec![
        request,
        need(
            NeedKind::UnconfirmedSubmission,
            BUILD,
            Some("docs"),
            "att-docs-1",
            "the prompt of att-docs-1 was typed but its delivery is not proven (the agent stayed \
             idle after Enter), and the agent did not acknowledge it: look at the agent; valp \
             never submits it again",
            3 * 60,
        ),
        need(
            NeedKind::AgentBlocked,
            BUILD,
            Some("publish"),
            "att-publish-1:blocked@1",
            "the agent of att-publish-1 is blocked (permission prompt on line 12): attach to \
             answer it, interrupt it, or cancel the item",
            2 * 60,
        ),
        need(
            NeedKind::CorrectionRound,
            REVIEW,
            None,
            "round-1",
            "correction round 1 (review_finding) is open, no fix dispatched: review_rejected at \
             revision 30",
            9 * 60,
        ),
    ];
    needs.extend(view.needs);
    view.needs = needs;
    view
}

#[test]
fn the_new_kinds_are_listed_by_severity_with_the_keys_that_answer_them() {
    let mut backend = Scripted::new(asking(working()));
    let mut app = start(&mut backend);
    let screen = flat(&screen_text(&app, 120, 40));
    assert!(screen.contains("Needs you (6)"), "{screen}");
    assert!(
        screen.contains("20s agent asks task-build-index / index claude asks to use Bash"),
        "{screen}"
    );
    assert!(screen.contains("y allow agent · N deny agent"), "{screen}");
    press(&mut app, &mut backend, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Needs);
    snapshots!("needs_agent_kinds", &app);
}

#[test]
fn the_request_detail_shows_what_is_asked_and_y_allows_it_through_the_dialog() {
    let mut backend = Scripted::new(asking(working()));
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::BackTab);
    press(&mut app, &mut backend, KeyCode::Enter);
    let detail = flat(&screen_text(&app, 120, 40));
    for shown in [
        "Needs you: agent asks",
        "tool Bash",
        "command cargo test --workspace",
        &format!("request {REQUEST}"),
        "deadline in 40s (2026-11-30T12:00:40.000Z): then the hook answers without you, never \
         allow",
    ] {
        assert!(detail.contains(shown), "{shown:?} in {detail}");
    }
    snapshots!("needs_agent_request_detail", &app);
    // `y` from the detail view: the same confirmation dialog, then the request.
    type_keys(&mut app, &mut backend, "y");
    let dialog = flat(&screen_text(&app, 120, 40));
    assert!(
        dialog.contains("Allow claude to use Bash on task task-build-index?"),
        "{dialog}"
    );
    assert!(backend.requests.is_empty(), "nothing before confirming");
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests,
        [Request::DecideAgentRequest {
            task_id: BUILD.to_owned(),
            request_id: REQUEST.to_owned(),
            allow: true,
        }]
    );
    // `N` from the Tasks pane on the task acts on its first request; `n` in the dialog backs out.
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.focus(), Pane::Tasks);
    type_keys(&mut app, &mut backend, "N");
    let dialog = flat(&screen_text(&app, 120, 40));
    assert!(
        dialog.contains("Deny claude the use of Bash on task task-build-index?"),
        "{dialog}"
    );
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(backend.requests.len(), 1);
}

#[test]
fn a_request_key_in_read_only_mode_is_refused_in_words() {
    let mut backend = Scripted::new(asking(working_read_only()));
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::BackTab);
    type_keys(&mut app, &mut backend, "y");
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "N");
    assert!(backend.requests.is_empty(), "nothing is decided");
    let screen = flat(&screen_text(&app, 120, 40));
    assert!(
        screen.contains("VALP-CONSOLE-READ-ONLY: deny agent: refused, the console is read-only"),
        "{screen}"
    );
}

#[test]
fn the_task_detail_shows_its_correction_rounds_and_channel_cost() {
    let mut view = working();
    view.corrections = vec![CorrectionView {
        task_id: BUILD.to_owned(),
        outcome: "fixing".to_owned(),
        rounds: vec![RoundView {
            round: 1,
            trigger: "runtime_failed".to_owned(),
            status: "fixing".to_owned(),
            work_item_id: Some("lint".to_owned()),
            started_at: Some("2026-11-30T11:50:00.000Z".to_owned()),
            ended_at: None,
            reason: "attempt_failed at revision 12 (work item lint, attempt att-lint-1)".to_owned(),
        }],
    }]
    .into();
    view.usage = vec![UsageRow {
        task_id: BUILD.to_owned(),
        work_item_id: "index".to_owned(),
        attempt_id: "att-index-1".to_owned(),
        cost_micro_usd: Some(12_346),
        input_tokens: Some(300),
        output_tokens: None,
    }];
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Enter);
    let detail = flat(&screen_text(&app, 120, 40));
    for shown in [
        "Correction cycle: fixing (1 rounds)",
        "round 1 fixing · runtime_failed · work item lint · attempt_failed at revision 12",
        "index att-index-1 · cost 0.012346 USD · tokens 300 in, unknown out",
    ] {
        assert!(detail.contains(shown), "{shown:?} in {detail}");
    }
}
