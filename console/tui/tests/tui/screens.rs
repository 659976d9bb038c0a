//! Every screen as insta snapshots at 120x40 (the main layout) and 80x24 (the smallest supported
//! size), tiny terminals, and hostile text.

use crossterm::event::KeyCode;
use ratatui::style::{Color, Modifier};
use valp_view::{ConsoleView, Refusal, SessionCheck};

use crate::support::{
    Scripted, draw, epoch_refusal, first_run, permission_denied, press, reopened, snapshots, start,
    type_keys, unproven, working, working_read_only,
};

/// Snapshots `app` at both sizes as `<name>_120x40` and `<name>_80x24`.
#[test]
fn first_run_lists_the_candidates() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    snapshots!("first_run", &app);
}

#[test]
fn the_confirmation_dialog_names_principal_session_and_epoch() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    press(&mut app, &mut backend, KeyCode::Enter);
    snapshots!("confirm_select", &app);
}

#[test]
fn the_main_screen_shows_leader_epochs_and_fenced_tasks() {
    let mut backend = Scripted::new(reopened());
    let app = start(&mut backend);
    snapshots!("main_reopened", &app);
}

#[test]
fn the_main_screen_shows_tasks_work_items_observations_rejections_and_activity() {
    let mut backend = Scripted::new(working());
    let app = start(&mut backend);
    snapshots!("main_working", &app);
}

#[test]
fn the_work_items_pane_shows_the_selected_tasks_dimension_gates_and_what_it_waits_for() {
    let mut view = working();
    "quality* fail (rule_failed:two-checks:quality.verification_passed=1:ge:2) · experience \
     pass · cost unverifiable (measure_unavailable:tokens:cost.tokens) · stability pass"
        .clone_into(&mut view.tasks[0].gates);
    "the Done gate: dimension_gate:quality:fail".clone_into(&mut view.tasks[0].waiting);
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    snapshots!("main_gates", &app);
}

/// The cell at the start of the first occurrence of `text` on screen.
fn cell_of<'b>(buffer: &'b ratatui::buffer::Buffer, text: &str) -> &'b ratatui::buffer::Cell {
    let width = usize::from(buffer.area.width);
    let lines: Vec<String> = buffer
        .content()
        .chunks(width)
        .map(|row| row.iter().map(ratatui::buffer::Cell::symbol).collect())
        .collect();
    for (y, line) in lines.iter().enumerate() {
        if let Some(byte) = line.find(text) {
            let x = line[..byte].chars().count();
            return &buffer[(u16::try_from(x).unwrap(), u16::try_from(y).unwrap())];
        }
    }
    panic!("{text:?} is not on screen");
}

#[test]
fn statuses_flags_and_focus_are_drawn_in_their_theme_slots() {
    let mut backend = Scripted::new(working());
    let app = start(&mut backend);
    // Tall enough for every work item under the Needs-you pane.
    let terminal = draw(&app, 120, 44);
    let buffer = terminal.backend().buffer();
    for (text, color) in [
        ("completed settled", Color::Green),
        ("running   in flight", Color::LightBlue),
        ("blocked   blocked", Color::Yellow),
        ("eligible", Color::LightCyan),
        ("pending   locked", Color::Gray),
        ("executing", Color::LightBlue),
        ("reviewing", Color::Yellow),
        ("FENCED   ", Color::Magenta),
        ("INTERRUPTED", Color::Yellow),
        ("inbox/obs-17.json", Color::Yellow),
    ] {
        assert_eq!(cell_of(buffer, text).fg, color, "{text}");
    }
    assert!(
        cell_of(buffer, "INTERRUPTED")
            .modifier
            .contains(Modifier::BOLD)
    );
    // The focused pane (Tasks) has the focus border, the others the plain one.
    assert_eq!(cell_of(buffer, "┌ Tasks").fg, Color::Cyan);
    assert_eq!(cell_of(buffer, "┌ Work items").fg, Color::DarkGray);
    // Its selected row is drawn reversed; the Work items cursor is marked but not reversed.
    assert!(
        cell_of(buffer, "› task-build-index")
            .modifier
            .contains(Modifier::REVERSED)
    );
    assert!(
        !cell_of(buffer, "› scan")
            .modifier
            .contains(Modifier::REVERSED)
    );
}

#[test]
fn the_focused_work_items_pane_shows_the_frontier_of_the_selected_task() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j");
    snapshots!("main_work_items", &app);
}

#[test]
fn the_focused_observation_shows_its_whole_detail() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j");
    snapshots!("main_observations", &app);
}

#[test]
fn the_focused_rejected_file_shows_its_whole_reason() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::BackTab);
    press(&mut app, &mut backend, KeyCode::BackTab);
    type_keys(&mut app, &mut backend, "j");
    snapshots!("main_rejected", &app);
}

#[test]
fn the_cancel_dialog_names_the_work_item_its_task_and_attempt() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "jx");
    snapshots!("confirm_cancel_item", &app);
}

#[test]
fn the_retry_recover_and_approval_dialogs_say_what_happens() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "jjt");
    snapshots!("confirm_retry", &app);
    press(&mut app, &mut backend, KeyCode::Esc);
    press(&mut app, &mut backend, KeyCode::BackTab);
    type_keys(&mut app, &mut backend, "jo");
    snapshots!("confirm_recover", &app);
    let mut view = working();
    view.tasks[2].status = "approval_required".to_owned();
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjd");
    snapshots!("confirm_deny_approval", &app);
}

#[test]
fn the_redirect_dialog_shows_the_typed_intent_and_the_marked_items() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(
        &mut app,
        &mut backend,
        "RIndex only the kernel; leave the docs for later",
    );
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j jj j");
    snapshots!("redirect", &app);
    press(&mut app, &mut backend, KeyCode::Enter);
    snapshots!("confirm_redirect", &app);
}

#[test]
fn a_refused_cancel_is_shown_with_its_code() {
    let mut backend = Scripted::new(working());
    backend.answers.push_back(Err(epoch_refusal()));
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jxy");
    snapshots!("refusal_cancel", &app);
}

#[test]
fn the_read_only_screen_shows_the_task_panes_and_offers_no_task_keys() {
    let mut backend = Scripted::new(working_read_only());
    let app = start(&mut backend);
    snapshots!("read_only_working", &app);
}

#[test]
fn the_read_only_banner_offers_the_two_ways_out() {
    let mut backend = Scripted::new(unproven());
    let app = start(&mut backend);
    snapshots!("read_only", &app);
}

#[test]
fn the_rebind_list_holds_only_new_sessions_of_the_principal() {
    let mut backend = Scripted::new(unproven());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "r");
    snapshots!("read_only_rebind", &app);
}

#[test]
fn a_refusal_is_shown_with_its_code_in_the_error_style() {
    let mut backend = Scripted::new(first_run());
    backend.answers.push_back(Err(permission_denied()));
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    snapshots!("refusal", &app);

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
    snapshots!("help", &app);
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
        (working(), ""),
        (working(), "?"),
        (working(), "x"),
        (working(), "jjp"),
        (working(), "Rsome intent"),
        (working(), "Rsome intent\tj "),
        (working(), "Rsome intent\n"),
        (working_read_only(), ""),
    ] {
        let mut backend = Scripted::new(view);
        let mut app = start(&mut backend);
        for key in keys.chars() {
            let code = match key {
                '\t' => KeyCode::Tab,
                '\n' => KeyCode::Enter,
                other => KeyCode::Char(other),
            };
            press(&mut app, &mut backend, code);
        }
        states.push(app);
    }
    // Every pane focused, with its cursor moved.
    for tabs in 1..5 {
        let mut backend = Scripted::new(working());
        let mut app = start(&mut backend);
        for _ in 0..tabs {
            press(&mut app, &mut backend, KeyCode::Tab);
        }
        type_keys(&mut app, &mut backend, "j");
        states.push(app);
    }
    let mut backend = Scripted::new(first_run());
    let mut dialog = start(&mut backend);
    press(&mut dialog, &mut backend, KeyCode::Enter);
    states.push(dialog);
    for app in &states {
        for (width, height) in [
            (20, 5),
            (10, 3),
            (1, 1),
            (0, 0),
            (200, 2),
            (3, 60),
            (99, 35),
            (100, 36),
            (40, 12),
            (80, 10),
        ] {
            draw(app, width, height);
        }
    }
}

#[test]
fn hostile_text_never_reaches_the_terminal_as_control_characters() {
    let mut screens = Vec::new();
    let mut backend = Scripted::new(hostile_view(unproven()));
    backend.answers.push_back(Err(hostile_refusal()));
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "s");
    screens.push(draw(&app, 120, 40));
    press(&mut app, &mut backend, KeyCode::Enter);
    screens.push(draw(&app, 120, 40));
    type_keys(&mut app, &mut backend, "y");
    screens.push(draw(&app, 120, 40));
    screens.push(draw(&app, 80, 24));

    // The task panes, every one focused (its cursor row shown whole), at both sizes; the
    // cancel and redirect dialogs; a refusal.
    let mut view = hostile_view(working());
    view.tasks[1].interrupted = true;
    let mut backend = Scripted::new(view.clone());
    backend.answers.push_back(Err(hostile_refusal()));
    let mut app = start(&mut backend);
    for _ in 0..5 {
        type_keys(&mut app, &mut backend, "j");
        screens.push(draw(&app, 120, 40));
        screens.push(draw(&app, 80, 24));
        press(&mut app, &mut backend, KeyCode::Tab);
    }
    type_keys(&mut app, &mut backend, "x");
    screens.push(draw(&app, 120, 40));
    press(&mut app, &mut backend, KeyCode::Esc);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "x");
    screens.push(draw(&app, 80, 24));
    type_keys(&mut app, &mut backend, "y");
    screens.push(draw(&app, 120, 40));
    type_keys(&mut app, &mut backend, "Rintent");
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, " ");
    screens.push(draw(&app, 120, 40));
    press(&mut app, &mut backend, KeyCode::Enter);
    screens.push(draw(&app, 80, 24));
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jjp");
    assert!(app.pending().is_some(), "the review dialog is open");
    screens.push(draw(&app, 120, 40));

    for terminal in &screens {
        let buffer = terminal.backend().buffer();
        let text: String = buffer
            .content()
            .iter()
            .map(ratatui::buffer::Cell::symbol)
            .collect();
        let unsafe_chars: Vec<char> = text
            .chars()
            .filter(|ch| {
                ch.is_control()
                    || ('\u{202a}'..='\u{202e}').contains(ch)
                    || ('\u{2066}'..='\u{2069}').contains(ch)
            })
            .collect();
        assert_eq!(unsafe_chars, [], "{}", terminal.backend());
        assert!(
            text.contains('\u{fffd}'),
            "the filter marks what it replaced: {}",
            terminal.backend()
        );
    }
}

const HOSTILE: &str =
    "evil\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{85}\u{202e}txt\u{2066}\r\n\t\u{0}\u{7f}";

fn hostile_refusal() -> Refusal {
    Refusal {
        code: HOSTILE.to_owned(),
        message: HOSTILE.to_owned(),
    }
}

/// `view` with every display string replaced by [`HOSTILE`] (task ids keep a distinguishing
/// prefix so that selection still works).
fn hostile_view(mut view: ConsoleView) -> ConsoleView {
    let hostile = || HOSTILE.to_owned();
    view.installation_id = hostile();
    view.root = hostile();
    view.lane.status = hostile();
    if let SessionCheck::Unproven { reason } = &mut view.lane.session {
        *reason = hostile();
    }
    if let SessionCheck::Reopened { at, .. } = &mut view.lane.session {
        *at = hostile();
    }
    for candidate in &mut view.lane.candidates {
        candidate.candidate_id = hostile();
        candidate.principal_id = hostile();
        candidate.health = hostile();
        candidate.labels = vec![hostile()];
        candidate.summary = hostile();
    }
    if let Some(leader) = &mut view.lane.leader {
        leader.principal_id = hostile();
        leader.principal_kind = hostile();
        leader.candidate_id = hostile();
        leader.session_summary = hostile();
    }
    for epoch in &mut view.lane.epochs {
        epoch.principal_id = hostile();
        epoch.candidate_id = hostile();
        epoch.how = hostile();
    }
    for task in &mut view.tasks {
        // Keeps each task's items attached.
        for item in &mut view.items {
            if item.task_id == task.task_id {
                item.task_id = format!("{}{HOSTILE}", task.task_id);
            }
        }
        task.task_id = format!("{}{HOSTILE}", task.task_id);
        task.waiting = hostile();
        if task.status != "reviewing" {
            task.status = hostile();
        }
    }
    for item in &mut view.items {
        item.work_item_id = hostile();
        item.requirement = hostile();
        item.status = hostile();
        item.position = hostile();
        item.attempt = hostile();
    }
    for observation in &mut view.observations {
        observation.task_id = hostile();
        observation.work_item_id = hostile();
        observation.attempt_id = hostile();
        observation.status = hostile();
        observation.detail = format!("{HOSTILE} {HOSTILE} {HOSTILE} {HOSTILE} {HOSTILE}");
    }
    for rejection in &mut view.rejections {
        rejection.path = hostile();
        rejection.reason = format!("{HOSTILE} {HOSTILE} {HOSTILE} {HOSTILE}");
    }
    for line in &mut view.activity {
        *line = format!("{HOSTILE} {HOSTILE} {HOSTILE} {HOSTILE}");
    }
    view
}
