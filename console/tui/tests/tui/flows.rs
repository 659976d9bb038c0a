//! Key flows through `App::handle`/`update` and `dispatch`, without a terminal.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use valp_tui::{Effect, Event, Flow, Mode, Notice, dispatch};
use valp_view::Request;

use crate::support::{
    HUMAN, NOW_MS, PANE_3, PANE_5, PANE_8, Scripted, first_run, permission_denied, press, reopened,
    screen_text, start, type_keys, unproven, working,
};

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::from(code))
}

#[test]
fn select_then_confirm_sends_select_exactly_once_and_rereads_the_view() {
    let mut backend = Scripted::new(first_run());
    backend.after = Some(reopened());
    let mut app = start(&mut backend);
    assert_eq!(app.mode(), Mode::FirstRun);

    press(&mut app, &mut backend, KeyCode::Down);
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Dialog);
    assert!(
        backend.requests.is_empty(),
        "opening the dialog sends nothing"
    );

    let select = Request::Select {
        candidate_id: PANE_3.to_owned(),
    };
    // The pure step: confirming closes the dialog and asks for exactly one request.
    assert_eq!(
        app.handle(key(KeyCode::Char('y'))),
        [Effect::Send {
            request: select.clone(),
            quiet: false
        }]
    );
    assert_eq!(app.handle(key(KeyCode::Char('y'))), []);

    // Through dispatch: the request goes out once, and the view is read again.
    let mut backend = Scripted::new(first_run());
    backend.after = Some(reopened());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "yy");
    assert_eq!(backend.requests, [select]);
    assert_eq!(backend.views_read, 2);
    assert_eq!(app.view(), &reopened());
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(
        app.notice(),
        Some(&Notice::Done("observed again".to_owned()))
    );
}

#[test]
fn escape_and_n_cancel_the_dialog_and_send_nothing() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    for cancel in [KeyCode::Esc, KeyCode::Char('n')] {
        press(&mut app, &mut backend, KeyCode::Enter);
        assert_eq!(app.mode(), Mode::Dialog);
        press(&mut app, &mut backend, cancel);
        assert_eq!(app.mode(), Mode::FirstRun);
    }
    // `y` outside the dialog means nothing.
    type_keys(&mut app, &mut backend, "y");
    assert!(backend.requests.is_empty());
    assert_eq!(backend.views_read, 1);
}

#[test]
fn a_refusal_is_shown_with_its_code_and_nothing_else_changes() {
    let mut backend = Scripted::new(first_run());
    backend.answers.push_back(Err(permission_denied()));
    backend.after = Some(reopened());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests,
        [Request::Select {
            candidate_id: HUMAN.to_owned()
        }]
    );
    assert_eq!(app.notice(), Some(&Notice::Refused(permission_denied())));
    assert_eq!(
        backend.views_read, 2,
        "the view is read again after a refusal"
    );
    assert_eq!(app.view(), &first_run(), "and nothing changed");
    assert_eq!(app.mode(), Mode::FirstRun);
    assert!(screen_text(&app, 120, 40).contains(
        "VALP-E-PERMISSION-DENIED: the OS user running valp (uid 1001) may not select a session"
    ));
}

#[test]
fn read_only_mode_sends_nothing_but_refresh_and_the_rebind_and_select_flows() {
    let mut backend = Scripted::new(unproven());
    let mut app = start(&mut backend);
    assert_eq!(app.mode(), Mode::ReadOnly);
    for code in [
        KeyCode::Char('y'),
        KeyCode::Char('j'),
        KeyCode::Char('k'),
        KeyCode::Down,
        KeyCode::Char('n'),
        KeyCode::Esc,
        KeyCode::Char(' '),
        KeyCode::Char('x'),
    ] {
        assert_eq!(app.handle(key(code)), [], "{code:?}");
        assert_eq!(app.mode(), Mode::ReadOnly, "{code:?}");
    }
    // Enter only looks: the detail view of the selected row, if there is one.
    let enter = app.handle(key(KeyCode::Enter));
    assert_eq!(enter, []);
    if app.mode() == Mode::Detail {
        assert_eq!(app.handle(key(KeyCode::Esc)), []);
    }
    assert_eq!(app.mode(), Mode::ReadOnly);

    // r: new sessions of tmux:alice only, then a Rotate after confirmation.
    type_keys(&mut app, &mut backend, "r");
    assert_eq!(app.mode(), Mode::Picker);
    press(&mut app, &mut backend, KeyCode::Down); // one row: the cursor stays
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Dialog);
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("Rebind tmux:alice to the session tmux:/tmp/tmux-1000/default:%8?"));
    assert!(text.contains("Epoch 1 will be fenced and epoch 2 starts."));
    assert!(backend.requests.is_empty());
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests,
        [Request::Rotate {
            candidate_id: PANE_8.to_owned()
        }]
    );

    // s: every candidate but the bound session; Esc goes back without sending anything.
    let mut backend = Scripted::new(unproven());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "s");
    press(&mut app, &mut backend, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::ReadOnly);
    type_keys(&mut app, &mut backend, "sjj");
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests,
        [Request::Rotate {
            candidate_id: PANE_5.to_owned()
        }]
    );
    assert_eq!(
        app.mode(),
        Mode::ReadOnly,
        "the picker closes after a rotation"
    );
}

#[test]
fn refresh_is_a_request_from_g_f5_and_the_slow_tick_which_stays_quiet_unless_refused() {
    let mut backend = Scripted::new(reopened());
    let mut app = start(&mut backend);
    let refresh = |quiet| Effect::Send {
        request: Request::Refresh,
        quiet,
    };
    assert_eq!(app.handle(key(KeyCode::Char('g'))), [refresh(false)]);
    assert_eq!(app.handle(key(KeyCode::F(5))), [refresh(false)]);
    assert_eq!(app.handle(Event::Tick), [refresh(true)]);
    // The user's refresh shows as pending until its own answer comes; the tick's is quiet.
    assert_eq!(app.notice(), Some(&Notice::Pending(Request::Refresh)));

    app.take_dirty();
    assert_eq!(
        app.handle(Event::Answered {
            request: Request::Refresh,
            quiet: true,
            outcome: Ok("observed again".to_owned()),
        }),
        [Effect::Reload]
    );
    assert_eq!(app.notice(), Some(&Notice::Pending(Request::Refresh)));
    assert!(
        !app.take_dirty(),
        "a quiet refresh with nothing new draws nothing"
    );
    app.handle(Event::Answered {
        request: Request::Refresh,
        quiet: true,
        outcome: Err(permission_denied()),
    });
    assert_eq!(app.notice(), Some(&Notice::Refused(permission_denied())));

    press(&mut app, &mut backend, KeyCode::Char('g'));
    assert_eq!(backend.requests, [Request::Refresh]);
    assert_eq!(
        app.notice(),
        Some(&Notice::Done("observed again".to_owned()))
    );
}

#[test]
fn a_change_on_disk_rereads_the_view_and_draws_only_if_it_differs() {
    let mut backend = Scripted::new(reopened());
    let mut app = start(&mut backend);
    assert!(app.take_dirty(), "the first frame is drawn");
    assert_eq!(app.handle(Event::Changed), [Effect::Reload]);
    app.handle(Event::Loaded(Box::new(reopened())));
    assert!(!app.take_dirty());
    let mut changed = reopened();
    changed.tasks.pop();
    app.handle(Event::Loaded(Box::new(changed.clone())));
    assert!(app.take_dirty());
    assert_eq!(app.view(), &changed);
    app.handle(Event::Resize);
    assert!(app.take_dirty());
}

#[test]
fn a_view_that_differs_only_in_its_clock_is_drawn_only_when_an_age_on_screen_reads_differently() {
    // Attempts in flight started 4 minutes ago; no need and no observation shows an age.
    let mut quiet = working();
    quiet.needs.clear();
    quiet.observations.clear();
    let mut backend = Scripted::new(quiet.clone());
    let mut app = start(&mut backend);
    assert!(app.take_dirty(), "the first frame is drawn");
    let at = |now_ms: i64| {
        let mut view = quiet.clone();
        view.now_ms = now_ms;
        Box::new(view)
    };
    app.handle(Event::Loaded(at(NOW_MS + 5_000)));
    assert!(!app.take_dirty(), "4m still reads 4m: nothing to draw");
    assert_eq!(app.view().now_ms, NOW_MS + 5_000, "the clock is kept");
    app.handle(Event::Loaded(at(NOW_MS + 60_000)));
    assert!(app.take_dirty(), "4m now reads 5m");
    let mut settled = quiet.clone();
    for item in &mut settled.items {
        item.attempt = item.attempt.replace("running", "completed");
    }
    settled.now_ms = NOW_MS + 60_000;
    app.handle(Event::Loaded(Box::new(settled.clone())));
    assert!(app.take_dirty(), "another view is drawn");
    settled.now_ms = NOW_MS + 10 * 60_000;
    app.handle(Event::Loaded(Box::new(settled)));
    assert!(!app.take_dirty(), "a settled attempt shows no age");
}

#[test]
fn the_cursor_follows_its_candidate_when_the_list_changes() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "j");
    let mut reordered = first_run();
    reordered.lane.candidates.reverse();
    backend.view = reordered;
    assert_eq!(
        dispatch(&mut app, &mut backend, Event::Changed),
        Flow::Continue
    );
    press(&mut app, &mut backend, KeyCode::Enter);
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Select {
            candidate_id: PANE_3.to_owned()
        })
    );
}

#[test]
fn a_dialog_for_another_screen_closes_when_the_screen_changes() {
    let mut backend = Scripted::new(first_run());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Dialog);
    // Someone else selected a Leader meanwhile.
    app.handle(Event::Loaded(Box::new(reopened())));
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(app.handle(key(KeyCode::Char('y'))), []);
}

#[test]
fn help_opens_and_closes_and_q_quits_everywhere_but_overlays() {
    let mut backend = Scripted::new(reopened());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "?");
    assert_eq!(app.mode(), Mode::Help);
    assert_eq!(
        press(&mut app, &mut backend, KeyCode::Char('q')),
        Flow::Continue
    );
    press(&mut app, &mut backend, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(
        press(&mut app, &mut backend, KeyCode::Char('q')),
        Flow::Quit
    );
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    assert_eq!(app.handle(ctrl_c), [Effect::Quit]);
    assert!(backend.requests.is_empty());
}
