//! The needs-you queue: the pane and its count, `n` jumping to the next need with its task
//! selected so the answering key applies, `s` acknowledging through the backend, the bell or
//! OSC 9 announcement after the configured delay, and the read-only refusal in words.

use crossterm::event::KeyCode;
use valp_tui::{App, Config, Event, Pane, dispatch};
use valp_view::{Request, SessionCheck};

use crate::support::{
    BUILD, NOW_MS, REVIEW, Scripted, press, screen_text, snapshots, start, type_keys, working,
    working_read_only,
};

/// The screen's text as one line: the quotes around each row dropped, whitespace collapsed.
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

#[test]
fn the_queue_lists_what_waits_with_ages_and_answering_keys() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    let screen = flat(&screen_text(&app, 120, 40));
    assert!(screen.contains("valp 2 need you"), "{screen}");
    assert!(screen.contains("Needs you (2)"), "{screen}");
    assert!(
        screen.contains("7m failed attempt task-build-index / lint lint is blocked"),
        "{screen}"
    );
    assert!(
        screen.contains(
            "42m review task-review-docs the work is verified: revie… p pass review · f reject \
             review"
        ),
        "{screen}"
    );
    assert!(!screen.contains("valp review"), "hints name keys: {screen}");
    // Focused (at 80x24 the panes are tabs: the Needs tab is the last).
    press(&mut app, &mut backend, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Needs);
    snapshots!("needs_queue", &app);
}

#[test]
fn n_jumps_to_each_need_and_its_key_answers_it() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    // The first press goes to the first need: the failed attempt, its work item selected.
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(app.focus(), Pane::Items);
    assert_eq!(app.cursor(Pane::Needs), 0);
    assert_eq!(app.view().tasks[app.cursor(Pane::Tasks)].task_id, BUILD);
    assert_eq!(
        app.cursor(Pane::Items),
        2,
        "lint is the third item of {BUILD}"
    );
    // The next: the review, its task selected in the Tasks pane; `p` passes it.
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(app.focus(), Pane::Tasks);
    assert_eq!(app.cursor(Pane::Needs), 1);
    assert_eq!(app.view().tasks[app.cursor(Pane::Tasks)].task_id, REVIEW);
    type_keys(&mut app, &mut backend, "p");
    snapshots!("needs_jump_review", &app);
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Review {
            task_id: REVIEW.to_owned(),
            pass: true
        })
    );
    // And around again.
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(app.cursor(Pane::Needs), 0);
}

#[test]
fn m_acknowledges_the_need_and_n_skips_acknowledged_ones() {
    let mut acknowledged = working();
    acknowledged.needs[0].acknowledged = true;
    acknowledged.needs.rotate_left(1);
    let mut backend = Scripted::new(working());
    backend.after = Some(acknowledged);
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "ns");
    assert_eq!(
        backend.requests,
        [Request::Acknowledge {
            key: "failed_attempt:task-build-index:att-lint-2".to_owned(),
            seen: true
        }]
    );
    let screen = flat(&screen_text(&app, 120, 40));
    assert!(screen.contains("valp 1 needs you"), "{screen}");
    assert!(screen.contains("Needs you (1)"), "{screen}");
    assert!(
        screen.contains("✓ failed attempt task-build-index / lint lint is blocked"),
        "{screen}"
    );
    // The cursor stayed on the acknowledged need, now second; `n` goes to the review.
    assert_eq!(app.cursor(Pane::Needs), 1);
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(app.cursor(Pane::Needs), 0);
    assert_eq!(app.view().tasks[app.cursor(Pane::Tasks)].task_id, REVIEW);
    type_keys(&mut app, &mut backend, "n");
    assert_eq!(app.cursor(Pane::Needs), 0, "the only unacknowledged need");
    // `s` on an acknowledged need takes it back.
    app.update(valp_tui::Action::NextPane);
    for _ in 0..4 {
        app.update(valp_tui::Action::NextPane);
    }
    assert_eq!(app.focus(), Pane::Needs);
    app.update(valp_tui::Action::Down);
    type_keys(&mut app, &mut backend, "s");
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Acknowledge {
            key: "failed_attempt:task-build-index:att-lint-2".to_owned(),
            seen: false
        })
    );
}

fn config(text: &str) -> Config {
    Config::resolve(&valp_tui::Sources {
        user: Some((std::path::Path::new("config.toml"), text)),
        ..valp_tui::Sources::default()
    })
    .unwrap()
}

#[test]
fn a_need_that_still_waits_after_the_delay_is_announced_once() {
    let mut view = working();
    // The review waited 42 minutes, the failed attempt 7.
    let mut app = App::new(
        config("[console]\nnotify = \"osc9\"\nnotify_after_seconds = 900\n"),
        view.clone(),
    );
    assert_eq!(
        app.take_alert().unwrap(),
        "\u{1b}]9;valp: review task-review-docs waits for you\u{7}"
    );
    assert_eq!(app.take_alert(), None);
    // Ten minutes later the failed attempt is due too; the review is not announced again.
    view.now_ms = NOW_MS + 10 * 60 * 1000;
    app.handle(Event::Loaded(Box::new(view.clone())));
    assert_eq!(
        app.take_alert().unwrap(),
        "\u{1b}]9;valp: failed attempt task-build-index waits for you\u{7}"
    );
    view.now_ms += 60_000;
    app.handle(Event::Loaded(Box::new(view.clone())));
    assert_eq!(app.take_alert(), None);

    // A bell, and nothing for an acknowledged need or with announcing off (the default).
    let mut seen = working();
    for need in &mut seen.needs {
        need.acknowledged = true;
    }
    let mut quiet = App::new(config("[console]\nnotify = \"bell\"\n"), seen);
    assert_eq!(quiet.take_alert(), None);
    let mut bell = App::new(config("[console]\nnotify = \"bell\"\n"), working());
    assert_eq!(bell.take_alert().unwrap(), "\u{7}");
    let mut off = App::new(Config::builtin().unwrap(), working());
    assert_eq!(off.take_alert(), None);
}

#[test]
fn a_task_key_in_read_only_mode_says_why_and_the_two_ways_on() {
    let mut backend = Scripted::new(working_read_only());
    let mut app = start(&mut backend);
    let before = screen_text(&app, 120, 40);
    assert!(before.contains("READ-ONLY"), "{before}");
    type_keys(&mut app, &mut backend, "nx");
    assert!(backend.requests.is_empty(), "nothing is proposed");
    let screen = screen_text(&app, 120, 40);
    let SessionCheck::Unproven { reason } = &app.view().lane.session else {
        panic!("read-only");
    };
    let flat = flat(&screen);
    assert!(
        flat.contains(&format!(
            "VALP-CONSOLE-READ-ONLY: cancel: refused, the console is read-only because the \
             Leader session is not re-proven ({reason}). Ways on: r rebind the same principal \
             to a newly observed session; or s select another candidate"
        )),
        "{screen}"
    );
    snapshots!("read_only_refusal", &app);
    // Keys no screen binds still do nothing.
    let flow = dispatch(
        &mut app,
        &mut backend,
        Event::Key(crossterm::event::KeyEvent::from(KeyCode::Char('Z'))),
    );
    assert_eq!(flow, valp_tui::Flow::Continue);
    press(&mut app, &mut backend, KeyCode::Char('p'));
    assert!(backend.requests.is_empty());
}
