//! Foreign evidence (AgentOps verdicts, SuperLoop records) in the task and work-item detail:
//! origin, scheme-tagged digest, levels, claim and declared independence, and never a request:
//! a foreign PASS is evidence, it proposes no `review_passed`.

use crossterm::event::{KeyCode, KeyEvent};
use valp_tui::Event;
use valp_view::{ConsoleView, ForeignRow};

use crate::support::{
    BUILD, REVIEW, Scripted, popup, press, screen_text, snapshots, start, type_keys, working,
};

fn verdict(task: &str, item: Option<&str>, claim: (&str, &str), file: &str) -> ForeignRow {
    ForeignRow {
        task_id: task.to_owned(),
        work_item_id: item.map(str::to_owned),
        observation_id: format!("agentops:verdict:{file}"),
        source: "agentops".to_owned(),
        kind: "review".to_owned(),
        origin: format!("agentops verdict.v2 file {file}.json"),
        foreign_digest: format!("agentops-c14n-nolf:{file}{}", "0".repeat(56)),
        content_digest: format!("sha256:{}", "1b90".repeat(16)),
        levels: vec![
            "structurally_valid".to_owned(),
            "digest_bound".to_owned(),
            "subject_resolved".to_owned(),
        ],
        applicable_levels: valp_view::foreign::LEVELS
            .iter()
            .map(|level| (*level).to_owned())
            .collect(),
        claim: Some((claim.0.to_owned(), claim.1.to_owned())),
        independence: "declared: author t0rs-impl, validator t0rs-judge (as declared, not \
                       isolation)"
            .to_owned(),
        validated_at: "2026-11-28T10:00:00Z".to_owned(),
        summary: format!("agentops verdict.v2 on subject {file}"),
    }
}

/// The working view with a foreign PASS on the task in review (on its `draft` item) and on the
/// executing task, and a `NOT_PROVEN` on the task in review.
fn with_foreign() -> ConsoleView {
    let mut view = working();
    view.foreign = vec![
        verdict(BUILD, None, ("pass", "pass"), "aaaaaaaa"),
        verdict(REVIEW, Some("draft"), ("pass", "pass"), "b4d8bd3b"),
        verdict(REVIEW, None, ("unknown", "blocked"), "42554461"),
    ];
    view
}

#[test]
fn the_task_detail_shows_foreign_evidence_with_origin_levels_and_claim() {
    let mut backend = Scripted::new(with_foreign());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Enter);
    let screen = popup(&app);
    for shown in [
        "Foreign evidence: agentops review (work item draft)",
        "Foreign evidence: agentops review (the task)",
        "pass, foreign review pass: evidence only (not a VALP review, not Done)",
        "unknown, foreign review blocked: not proven (neither pass nor fail)",
        "agentops verdict.v2 file b4d8bd3b.json",
        "structurally valid yes · digest bound yes · subject resolved yes · intent resolved no",
    ] {
        assert!(screen.contains(shown), "{shown}\n{screen}");
    }
    snapshots!("foreign_task", &app);
    press(&mut app, &mut backend, KeyCode::End);
    press(&mut app, &mut backend, KeyCode::Esc);
    // Looking at it sent nothing: no review, no Done.
    assert_eq!(backend.requests, []);
}

#[test]
fn the_work_item_detail_shows_only_that_items_foreign_evidence() {
    let mut backend = Scripted::new(with_foreign());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Tab);
    // The review task's items: outline, draft, proofread.
    type_keys(&mut app, &mut backend, "j");
    press(&mut app, &mut backend, KeyCode::Enter);
    let screen = screen_text(&app, 120, 40);
    assert!(
        screen.contains("Work item draft of task-review-docs"),
        "{screen}"
    );
    assert!(
        screen.contains("Foreign evidence: agentops review (work item draft)"),
        "{screen}"
    );
    assert!(!screen.contains("(the task)"), "{screen}");
    snapshots!("foreign_item", &app);
    assert_eq!(backend.requests, []);
}

#[test]
fn a_foreign_pass_proposes_no_review() {
    let mut backend = Scripted::new(with_foreign());
    let mut app = start(&mut backend);
    // The executing task has a foreign PASS: p and f still mean nothing there.
    assert_eq!(
        app.handle(Event::Key(KeyEvent::from(KeyCode::Char('p')))),
        []
    );
    assert_eq!(
        app.handle(Event::Key(KeyEvent::from(KeyCode::Char('f')))),
        []
    );
    // The task in review still waits for the Leader's own review; the need stays.
    assert!(
        app.view()
            .needs
            .iter()
            .any(|need| need.task_id == REVIEW && need.summary.contains("review it"))
    );
    for code in [KeyCode::Enter, KeyCode::Down, KeyCode::Esc, KeyCode::Tab] {
        press(&mut app, &mut backend, code);
    }
    assert_eq!(backend.requests, []);
}
