//! The detail view (Enter on a row) and the footer notices that expire by the view's clock.

use crossterm::event::KeyCode;
use valp_tui::{Event, Notice, dispatch};

use crate::support::{
    NOW_MS, Scripted, popup, press, screen_text, snapshots, start, type_keys, working,
};

#[test]
fn enter_on_a_work_item_shows_why_its_needs_and_its_observations_with_provenance() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    // The lint item of the running task: Work items pane, third row.
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Enter);
    let screen = popup(&app);
    assert!(
        screen.contains("Work item lint of task-build-index"),
        "{screen}"
    );
    assert!(screen.contains("status blocked why blocked"), "{screen}");
    assert!(
        screen.contains("failed attempt lint is blocked"),
        "{screen}"
    );
    assert!(
        screen.contains("since 7m ago (2026-11-30T11:53:00.000Z)"),
        "{screen}"
    );
    assert!(screen.contains("answer t retry · x cancel"), "{screen}");
    assert!(
        screen.contains("read 2m ago (2026-11-30T11:58:00.000Z)"),
        "{screen}"
    );
    assert!(
        screen.contains("from runtime/process/attempts/att-lint-2/observations/000002.json"),
        "{screen}"
    );
    assert!(
        screen.contains("provenance valp-process-adapter (process_bound) → valp-process-adapter"),
        "{screen}"
    );
    snapshots!("detail_item", &app);
    // At 80x24 it wraps to fit (End scrolls when it does not), and Esc closes it.
    press(&mut app, &mut backend, KeyCode::End);
    assert!(screen_text(&app, 80, 24).contains("touches anything"));
    press(&mut app, &mut backend, KeyCode::Esc);
    assert!(!screen_text(&app, 120, 40).contains("Work item lint of"));
}

#[test]
fn enter_on_a_task_shows_its_state_in_words() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Enter);
    let screen = popup(&app);
    assert!(screen.contains("Task task-review-docs"), "{screen}");
    assert!(
        screen.contains("why review: p pass review · f reject review"),
        "{screen}"
    );
    assert!(screen.contains("since 42m ago"), "{screen}");
    snapshots!("detail_task", &app);
}

#[test]
fn a_confirmation_expires_after_its_time_a_pending_request_never() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Char('i'));
    assert_eq!(
        app.notice(),
        Some(&Notice::Done("observed again".to_owned()))
    );
    let mut later = working();
    later.now_ms = NOW_MS + valp_tui::NOTICE_MS - 1;
    dispatch(
        &mut app,
        &mut backend,
        Event::Loaded(Box::new(later.clone())),
    );
    assert!(app.notice().is_some(), "not yet");
    later.now_ms = NOW_MS + valp_tui::NOTICE_MS;
    dispatch(
        &mut app,
        &mut backend,
        Event::Loaded(Box::new(later.clone())),
    );
    assert_eq!(app.notice(), None);
    // A refusal lasts longer.
    backend
        .answers
        .push_back(Err(crate::support::permission_denied()));
    press(&mut app, &mut backend, KeyCode::Char('i'));
    assert!(matches!(app.notice(), Some(Notice::Refused(_))));
    later.now_ms += valp_tui::NOTICE_MS;
    dispatch(
        &mut app,
        &mut backend,
        Event::Loaded(Box::new(later.clone())),
    );
    assert!(app.notice().is_some());
    later.now_ms += valp_tui::REFUSAL_MS;
    dispatch(&mut app, &mut backend, Event::Loaded(Box::new(later)));
    assert_eq!(app.notice(), None);
}
