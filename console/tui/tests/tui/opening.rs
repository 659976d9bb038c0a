//! The console while the backend is still opening the control root: the first frame comes
//! before any task is open, tasks fill in as they open, the footer shows the progress once the
//! open has taken more than `OPENING_SHOWN_MS`, and the keys (`q` first of all) are answered
//! meanwhile.

use crossterm::event::{KeyCode, KeyEvent};
use valp_tui::{App, Event, Flow, OPENING_SHOWN_MS, dispatch};
use valp_view::{ConsoleView, Opening};

use crate::support::{Scripted, draw, screen_text, start, working};

/// The working view as the backend shows it after opening its first task of four, the next
/// one (a large journal) on its way.
fn half_open() -> ConsoleView {
    let mut view = working();
    let first = view.tasks[0].task_id.clone();
    view.tasks.truncate(1);
    view.items.retain(|item| item.task_id == first);
    view.workflows.retain(|workflow| workflow.task_id == first);
    view.needs.retain(|need| need.task_id == first);
    view.opening = Some(Opening {
        tasks_open: 1,
        tasks_total: 4,
        entries: 12,
        next: "migrate-db".to_owned(),
        next_bytes: 48_213_004,
    });
    view
}

fn elapsed(app: &mut App, backend: &mut Scripted, elapsed_ms: u64) {
    dispatch(app, backend, Event::Opening { elapsed_ms });
}

#[test]
fn the_opening_screen_fills_in_tasks_and_shows_its_progress_after_a_moment() {
    let mut backend = Scripted::new(half_open());
    let mut app = start(&mut backend);
    assert!(app.opening());
    // A quick open says nothing about itself.
    elapsed(&mut app, &mut backend, OPENING_SHOWN_MS - 1);
    assert!(app.take_dirty(), "the first frame");
    assert!(!screen_text(&app, 120, 40).contains("opening task"));
    elapsed(&mut app, &mut backend, 1_250);
    assert!(app.take_dirty(), "the progress appears");
    for (width, height) in [(120, 40), (80, 24)] {
        insta::assert_snapshot!(
            format!("opening_{width}x{height}"),
            draw(&app, width, height).backend()
        );
    }
    assert!(
        screen_text(&app, 120, 40)
            .contains("opening task 2 of 4: migrate-db (48.2 MB) · 12 entries verified · 1.2 s")
    );
    // The full view ends the opening: no progress, no more opening events wanted.
    dispatch(&mut app, &mut backend, Event::Loaded(Box::new(working())));
    assert!(!app.opening());
    elapsed(&mut app, &mut backend, 1_350);
    assert!(!screen_text(&app, 120, 40).contains("opening task"));
}

#[test]
fn q_quits_while_the_backend_is_still_opening() {
    let mut backend = Scripted::new(half_open());
    let mut app = start(&mut backend);
    elapsed(&mut app, &mut backend, 5_000);
    assert_eq!(
        dispatch(
            &mut app,
            &mut backend,
            Event::Key(KeyEvent::from(KeyCode::Char('q')))
        ),
        Flow::Quit
    );
    assert!(backend.requests.is_empty(), "{:?}", backend.requests);
}
