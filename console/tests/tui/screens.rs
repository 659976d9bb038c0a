//! Every screen as insta snapshots at 120x40 (the main layout) and 80x24 (the smallest supported
//! size), tiny terminals, and hostile text.

use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};
use valp_console::tui::App;

use crate::support::{
    Scripted, draw, first_run, permission_denied, press, reopened, start, type_keys, unproven,
};

/// Snapshots `app` at both sizes as `<name>_120x40` and `<name>_80x24`.
fn snapshots(name: &str, app: &App) {
    for (width, height) in [(120, 40), (80, 24)] {
        insta::assert_snapshot!(
            format!("{name}_{width}x{height}"),
            draw(app, width, height).backend()
        );
    }
}

#[test]
fn first_run_lists_the_candidates() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    snapshots("first_run", &app);
}

#[test]
fn the_confirmation_dialog_names_principal_session_and_epoch() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    press(&mut app, &mut backend, KeyCode::Enter);
    snapshots("confirm_select", &app);
}

#[test]
fn the_main_screen_shows_leader_epochs_and_fenced_tasks() {
    let mut backend = Scripted::new(reopened());
    let app = start(&mut backend);
    snapshots("main_reopened", &app);
}

#[test]
fn the_read_only_banner_offers_the_two_ways_out() {
    let mut backend = Scripted::new(unproven());
    let app = start(&mut backend);
    snapshots("read_only", &app);
}

#[test]
fn the_rebind_list_holds_only_new_sessions_of_the_principal() {
    let mut backend = Scripted::new(unproven());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "r");
    snapshots("read_only_rebind", &app);
}

#[test]
fn a_refusal_is_shown_with_its_code_in_the_error_style() {
    let mut backend = Scripted::new(first_run());
    backend.answers.push_back(Err(permission_denied()));
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    snapshots("refusal", &app);

    let terminal = draw(&app, 80, 24);
    let buffer = terminal.backend().buffer();
    let cell = &buffer[(0, 21)];
    assert_eq!(cell.symbol(), "V");
    assert_eq!(cell.fg, Color::LightRed);
    assert!(cell.modifier.contains(Modifier::BOLD));
}

#[test]
fn the_help_overlay_lists_the_keymap() {
    let mut backend = Scripted::new(reopened());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "?");
    snapshots("help", &app);
}

#[test]
fn tiny_terminals_never_panic() {
    let mut states = Vec::new();
    for (view, keys) in [
        (first_run(), ""),
        (first_run(), "?"),
        (reopened(), ""),
        (unproven(), ""),
        (unproven(), "r"),
        (unproven(), "s"),
    ] {
        let mut backend = Scripted::new(view);
        let mut app = start(&mut backend);
        type_keys(&mut app, &mut backend, keys);
        states.push(app);
    }
    let mut backend = Scripted::new(first_run());
    let mut dialog = start(&mut backend);
    press(&mut dialog, &mut backend, KeyCode::Enter);
    states.push(dialog);
    for app in &states {
        for (width, height) in [(20, 5), (10, 3), (1, 1), (0, 0), (200, 2), (3, 60)] {
            draw(app, width, height);
        }
    }
}

#[test]
fn hostile_text_never_reaches_the_terminal_as_control_characters() {
    let hostile = "evil\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{85}\u{202e}txt\r\n\t\u{0}\u{7f}";
    let mut view = unproven();
    view.installation_id = hostile.to_owned();
    view.root = hostile.to_owned();
    view.lane.status = hostile.to_owned();
    if let valp_console::view::SessionCheck::Unproven { reason } = &mut view.lane.session {
        *reason = hostile.to_owned();
    }
    for candidate in &mut view.lane.candidates {
        candidate.candidate_id = hostile.to_owned();
        candidate.principal_id = hostile.to_owned();
        candidate.health = hostile.to_owned();
        candidate.labels = vec![hostile.to_owned()];
        candidate.summary = hostile.to_owned();
    }
    if let Some(leader) = &mut view.lane.leader {
        leader.principal_id = hostile.to_owned();
        leader.principal_kind = hostile.to_owned();
        leader.candidate_id = hostile.to_owned();
        leader.session_summary = hostile.to_owned();
    }
    for task in &mut view.tasks {
        task.task_id = hostile.to_owned();
        task.status = hostile.to_owned();
    }
    let mut backend = Scripted::new(view);
    backend.answers.push_back(Err(valp_console::view::Refusal {
        code: hostile.to_owned(),
        message: hostile.to_owned(),
    }));
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "s");
    let mut screens = vec![draw(&app, 120, 40)];
    press(&mut app, &mut backend, KeyCode::Enter);
    screens.push(draw(&app, 120, 40));
    type_keys(&mut app, &mut backend, "y");
    screens.push(draw(&app, 120, 40));
    screens.push(draw(&app, 80, 24));
    for terminal in &screens {
        let buffer = terminal.backend().buffer();
        let text: String = buffer
            .content()
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        let unsafe_chars: Vec<char> = text
            .chars()
            .filter(|ch| ch.is_control() || ('\u{202a}'..='\u{202e}').contains(ch))
            .collect();
        assert_eq!(unsafe_chars, [], "{}", terminal.backend());
        assert!(
            text.contains('\u{fffd}'),
            "the filter marks what it replaced"
        );
    }
}
