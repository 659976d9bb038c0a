//! Moving around: page keys and the ends in every list, and the help overlay that wraps and
//! scrolls at 80x24.

use crossterm::event::KeyCode;
use valp_tui::Pane;

use crate::support::{
    BUILD, Scripted, draw, first_run, press, screen_text, start, type_keys, working,
};

#[test]
fn page_keys_and_the_ends_move_in_every_list() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::End);
    assert_eq!(app.cursor(Pane::Tasks), 3);
    press(&mut app, &mut backend, KeyCode::Home);
    assert_eq!(app.cursor(Pane::Tasks), 0);
    press(&mut app, &mut backend, KeyCode::PageDown);
    assert_eq!(
        app.cursor(Pane::Tasks),
        3,
        "a page past the end stops at the last row"
    );
    press(&mut app, &mut backend, KeyCode::PageUp);
    assert_eq!(app.cursor(Pane::Tasks), 0);
    press(&mut app, &mut backend, KeyCode::Tab);
    press(&mut app, &mut backend, KeyCode::End);
    assert_eq!(app.cursor(Pane::Items), 4);

    // The first-run candidate list too.
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::End);
    let screen = screen_text(&app, 120, 40);
    let marked: Vec<&str> = screen.lines().filter(|line| line.contains('›')).collect();
    assert_eq!(marked.len(), 1, "{screen}");
    assert!(
        marked[0].contains("%8") || marked[0].contains("%7"),
        "{screen}"
    );
}

#[test]
fn help_wraps_and_scrolls_at_80x24() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "?");
    let top = screen_text(&app, 80, 24);
    assert!(top.contains("Everywhere"), "{top}");
    assert!(top.contains("↓/j scroll · 1–22 of"), "{top}");
    // Nothing is cut: a long description goes on under itself.
    assert!(!top.contains('…'), "{top}");
    insta::assert_snapshot!("help_top_80x24", draw(&app, 80, 24).backend());
    press(&mut app, &mut backend, KeyCode::End);
    let bottom = screen_text(&app, 80, 24);
    assert!(bottom.contains("Help"), "{bottom}");
    assert!(!bottom.contains("Everywhere"), "{bottom}");
    insta::assert_snapshot!("help_bottom_80x24", draw(&app, 80, 24).backend());
    // Up from the bottom moves at once (the scroll stops at the end of the text).
    press(&mut app, &mut backend, KeyCode::Up);
    assert_ne!(screen_text(&app, 80, 24), bottom);
    press(&mut app, &mut backend, KeyCode::Esc);
    assert!(!screen_text(&app, 80, 24).contains("Everywhere"));
}

#[test]
fn attempts_are_labelled_without_the_task_and_item_their_row_names() {
    let mut view = working();
    view.items[2].attempt = format!("{BUILD}:lint:a2 g2 failed");
    view.observations[1].attempt_id = format!("{BUILD}:lint:a2");
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    let items = screen_text(&app, 80, 24);
    assert!(items.contains("a2 g2 failed"), "{items}");
    assert!(!items.contains("task-build-index:lint"), "{items}");
    press(&mut app, &mut backend, KeyCode::Tab);
    let observations = screen_text(&app, 80, 24);
    assert!(observations.contains(" lint:a2 "), "{observations}");
}

fn mouse(kind: crossterm::event::MouseEventKind, column: u16, row: u16) -> valp_tui::Event {
    valp_tui::Event::Mouse(crossterm::event::MouseEvent {
        kind,
        column,
        row,
        modifiers: crossterm::event::KeyModifiers::NONE,
    })
}

#[test]
fn the_wheel_moves_the_focused_list_and_a_click_focuses_a_pane_or_selects_a_row() {
    use crossterm::event::{MouseButton, MouseEventKind};

    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    // Clicks need a drawn screen: 120x40, where the Work items pane starts below the Tasks pane.
    let screen = screen_text(&app, 120, 40);
    let items_row = screen
        .lines()
        .position(|line| line.contains("┌ Work items"))
        .unwrap();
    app.handle(mouse(
        MouseEventKind::Down(MouseButton::Left),
        10,
        u16::try_from(items_row + 2).unwrap(),
    ));
    assert_eq!(app.focus(), Pane::Items);
    app.handle(mouse(MouseEventKind::ScrollDown, 10, 10));
    assert_eq!(app.cursor(Pane::Items), 3, "three rows a step");
    app.handle(mouse(MouseEventKind::ScrollUp, 10, 10));
    assert_eq!(app.cursor(Pane::Items), 0);
    // A click on a row selects it: the review task, in the Tasks pane.
    let screen = screen_text(&app, 120, 40);
    let review_row = screen
        .lines()
        .position(|line| line.contains("│  task-review-docs  "))
        .unwrap();
    app.handle(mouse(
        MouseEventKind::Down(MouseButton::Left),
        10,
        u16::try_from(review_row).unwrap(),
    ));
    assert_eq!(app.focus(), Pane::Tasks);
    assert_eq!(
        app.view().tasks[app.cursor(Pane::Tasks)].task_id,
        "task-review-docs"
    );
    assert!(backend.requests.is_empty());
}
