//! The Leader's task controls on the main screen (cancel, interrupt, resume, redirect, review,
//! approval, retry, recover),
//! pane focus and selection, and the read-only screen sending none of them: key flows through
//! `App::handle` and `dispatch` against the scripted backend.

use crossterm::event::{KeyCode, KeyEvent};
use valp_tui::{App, Config, Effect, Event, Keymap, MAX_INTENT, Mode, Notice, Pane, dispatch};
use valp_view::Request;

use crate::support::{
    BUILD, MIGRATE, REVIEW, Scripted, TUNE, epoch_refusal, observation, press, screen_text, start,
    type_keys, working, working_read_only,
};

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::from(code))
}

fn send(request: Request) -> Vec<Effect> {
    vec![Effect::Send {
        request,
        quiet: false,
    }]
}

/// The hint row(s) at the bottom of an 120x40 screen.
fn footer(app: &App) -> String {
    let text = screen_text(app, 120, 40);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len() - 2..].join("\n")
}

#[test]
fn x_on_the_tasks_pane_cancels_the_selected_task_only_after_confirmation() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    assert_eq!((app.mode(), app.focus()), (Mode::Main, Pane::Tasks));
    let cancel = Request::Cancel {
        task_id: BUILD.to_owned(),
        work_item_id: None,
    };

    // The pure step: `x` opens the dialog and asks for nothing.
    assert_eq!(app.handle(key(KeyCode::Char('x'))), []);
    assert_eq!(app.mode(), Mode::Dialog);
    assert_eq!(app.pending(), Some(&cancel));
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("Cancel task task-build-index?"), "{text}");
    assert!(text.contains("It is executing, with 1 of 5 work items completed."));

    // n and Esc close it without sending anything.
    for close in [KeyCode::Char('n'), KeyCode::Esc] {
        press(&mut app, &mut backend, close);
        assert_eq!(app.mode(), Mode::Main);
        press(&mut app, &mut backend, KeyCode::Char('x'));
    }
    assert!(backend.requests.is_empty());

    // y sends exactly the request, once, and the view is read again.
    assert_eq!(app.handle(key(KeyCode::Char('y'))), send(cancel.clone()));
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "xyy");
    assert_eq!(backend.requests, [cancel]);
    assert_eq!(backend.views_read, 2);
    assert_eq!(
        app.notice(),
        Some(&Notice::Done("observed again".to_owned()))
    );
}

#[test]
fn x_on_the_work_items_pane_cancels_the_selected_work_item() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.focus(), Pane::Items);
    type_keys(&mut app, &mut backend, "j");
    assert_eq!(app.selected_item(), Some("index"));
    type_keys(&mut app, &mut backend, "x");
    let cancel = Request::Cancel {
        task_id: BUILD.to_owned(),
        work_item_id: Some("index".to_owned()),
    };
    assert_eq!(app.pending(), Some(&cancel));
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("Cancel work item index of task task-build-index?"));
    assert!(text.contains("Its attempt att-index-1 g1 running is stopped."));
    assert!(backend.requests.is_empty());
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(backend.requests, [cancel]);
    assert_eq!(app.mode(), Mode::Main);
}

#[test]
fn x_means_nothing_in_the_log_panes() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    for pane in [Pane::Observations, Pane::Rejections, Pane::Activity] {
        while app.focus() != pane {
            press(&mut app, &mut backend, KeyCode::Tab);
        }
        for code in ['x', 'i', 'u', 'R', 'p', 'f'] {
            assert_eq!(app.handle(key(KeyCode::Char(code))), [], "{pane:?} {code}");
            assert_eq!(app.mode(), Mode::Main);
        }
        assert!(!footer(&app).contains("cancel"), "{pane:?}");
    }
}

#[test]
fn interrupt_and_resume_are_sent_at_once_for_the_selected_task() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    assert!(footer(&app).contains("i interrupt"));
    assert!(!footer(&app).contains("u resume"));
    // task-build-index is not interrupted: `u` means nothing, `i` is sent without a dialog.
    assert_eq!(app.handle(key(KeyCode::Char('u'))), []);
    assert_eq!(
        app.handle(key(KeyCode::Char('i'))),
        send(Request::Interrupt {
            task_id: BUILD.to_owned()
        })
    );
    assert_eq!(app.mode(), Mode::Main);

    // task-tune-bench is interrupted: `i` means nothing, `u` resumes it.
    type_keys(&mut app, &mut backend, "jjj");
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(TUNE)
    );
    assert!(footer(&app).contains("u resume"));
    assert!(!footer(&app).contains("i interrupt"));
    type_keys(&mut app, &mut backend, "iu");
    assert_eq!(
        backend.requests,
        [Request::Resume {
            task_id: TUNE.to_owned()
        }]
    );
    assert_eq!(backend.views_read, 2, "the answer is followed by a re-read");
    // From the Work items pane too (the selected task is named in its title).
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "u");
    assert_eq!(backend.requests.len(), 2);
}

#[test]
fn redirect_takes_a_typed_intent_and_marked_items_then_asks_to_confirm() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "R");
    assert_eq!(app.mode(), Mode::Redirect);

    // Enter with nothing typed says so and opens nothing.
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Redirect);
    assert!(screen_text(&app, 120, 40).contains("Type the new intent first."));

    // Keys that mean something elsewhere (q, x, j, k, y, R, space, ?) are typed.
    type_keys(
        &mut app,
        &mut backend,
        "Index only the kernel; skip docs? yes, quickly!!",
    );
    press(&mut app, &mut backend, KeyCode::Backspace);
    assert_eq!(app.mode(), Mode::Redirect);
    assert!(backend.requests.is_empty());

    // Tab to the list; j/k move, Space marks and unmarks.
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j j "); // index and lint marked
    type_keys(&mut app, &mut backend, "jj "); // publish marked
    press(&mut app, &mut backend, KeyCode::Down); // stays on publish, the last
    type_keys(&mut app, &mut backend, "k k "); // docs marked, lint unmarked
    assert_eq!(app.mode(), Mode::Redirect);
    assert!(backend.requests.is_empty());

    let redirect = Request::Redirect {
        task_id: BUILD.to_owned(),
        superseded: vec!["index".to_owned(), "docs".to_owned(), "publish".to_owned()],
        intent: "Index only the kernel; skip docs? yes, quickly!".to_owned(),
    };
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.mode(), Mode::Dialog);
    assert_eq!(app.pending(), Some(&redirect));
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("Redirect task task-build-index to this intent?"));
    assert!(text.contains("Superseded work items: index, docs, publish."));

    // Esc goes back to the redirect dialog with everything kept; Enter and y send it.
    press(&mut app, &mut backend, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Redirect);
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(app.pending(), Some(&redirect));
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(backend.requests, [redirect]);
    assert_eq!(app.mode(), Mode::Main);

    // Esc in the redirect dialog closes it, sending nothing.
    type_keys(&mut app, &mut backend, "Rabc");
    press(&mut app, &mut backend, KeyCode::Esc);
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(backend.requests.len(), 1);
}

#[test]
fn the_intent_is_bounded_and_takes_no_control_characters() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "R");
    type_keys(&mut app, &mut backend, "a\u{1b}b\u{7}\u{202e}c");
    type_keys(&mut app, &mut backend, &"z".repeat(MAX_INTENT));
    press(&mut app, &mut backend, KeyCode::Enter);
    let Some(Request::Redirect { intent, .. }) = app.pending() else {
        panic!("no redirect pending");
    };
    assert!(intent.starts_with("abc"));
    assert_eq!(intent.chars().count(), MAX_INTENT);
}

#[test]
fn review_decisions_need_a_task_in_review_and_a_confirmation() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    // task-build-index is executing: p and f mean nothing and are not offered.
    assert_eq!(app.handle(key(KeyCode::Char('p'))), []);
    assert_eq!(app.handle(key(KeyCode::Char('f'))), []);
    assert!(!footer(&app).contains("review"));

    type_keys(&mut app, &mut backend, "jj");
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(REVIEW)
    );
    assert!(footer(&app).contains("p pass review…"));
    assert!(footer(&app).contains("f reject review…"));
    for (code, pass, question) in [
        ('p', true, "Pass the review of task task-review-docs?"),
        ('f', false, "Reject the review of task task-review-docs?"),
    ] {
        press(&mut app, &mut backend, KeyCode::Char(code));
        let review = Request::Review {
            task_id: REVIEW.to_owned(),
            pass,
        };
        assert_eq!(app.pending(), Some(&review));
        assert!(screen_text(&app, 120, 40).contains(question));
        type_keys(&mut app, &mut backend, "y");
        assert_eq!(backend.requests.last(), Some(&review));
    }
    assert_eq!(backend.requests.len(), 2);
}

#[test]
fn approval_decisions_need_a_task_waiting_for_approval_and_a_confirmation() {
    let mut view = working();
    view.tasks[2].status = "approval_required".to_owned();
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    // task-build-index is executing: a and d mean nothing and are not offered.
    assert_eq!(app.handle(key(KeyCode::Char('a'))), []);
    assert_eq!(app.handle(key(KeyCode::Char('d'))), []);
    assert!(!footer(&app).contains("approval"));
    type_keys(&mut app, &mut backend, "jj");
    assert!(footer(&app).contains("a grant approval…"));
    assert!(footer(&app).contains("d deny approval…"));
    for (code, grant, question) in [
        ('a', true, "Grant the approval of task task-review-docs?"),
        ('d', false, "Deny the approval of task task-review-docs?"),
    ] {
        press(&mut app, &mut backend, KeyCode::Char(code));
        let approve = Request::Approve {
            task_id: REVIEW.to_owned(),
            grant,
        };
        assert_eq!(app.pending(), Some(&approve));
        assert!(screen_text(&app, 120, 40).contains(question));
        type_keys(&mut app, &mut backend, "y");
        assert_eq!(backend.requests.last(), Some(&approve));
    }
    assert_eq!(backend.requests.len(), 2);
}

#[test]
fn retry_needs_a_blocked_work_item_and_recover_a_blocked_or_fixing_task() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    // task-build-index is executing: no recovery offered.
    assert_eq!(app.handle(key(KeyCode::Char('o'))), []);
    assert!(!footer(&app).contains("recover"));
    // In the Work items pane, only the blocked `lint` can be retried.
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.handle(key(KeyCode::Char('t'))), [], "scan is completed");
    assert!(!footer(&app).contains("retry"));
    type_keys(&mut app, &mut backend, "jj");
    assert!(footer(&app).contains("t retry…"), "{}", footer(&app));
    press(&mut app, &mut backend, KeyCode::Char('t'));
    let retry = Request::Retry {
        task_id: BUILD.to_owned(),
        work_item_id: "lint".to_owned(),
    };
    assert_eq!(app.pending(), Some(&retry));
    assert!(screen_text(&app, 120, 40).contains("Retry work item lint of task task-build-index?"));
    type_keys(&mut app, &mut backend, "y");
    assert_eq!(backend.requests.last(), Some(&retry));
    // The blocked and the fixing task can be recovered, after a confirmation.
    press(&mut app, &mut backend, KeyCode::BackTab);
    for (keys, task) in [("j", MIGRATE), ("jj", TUNE)] {
        type_keys(&mut app, &mut backend, keys);
        assert!(footer(&app).contains("o recover…"), "{}", footer(&app));
        press(&mut app, &mut backend, KeyCode::Char('o'));
        let recover = Request::Recover {
            task_id: task.to_owned(),
        };
        assert_eq!(app.pending(), Some(&recover));
        type_keys(&mut app, &mut backend, "y");
        assert_eq!(backend.requests.last(), Some(&recover));
    }
    assert_eq!(backend.requests.len(), 3);
}

#[test]
fn a_refused_cancel_shows_its_code_and_nothing_else_changes() {
    let mut backend = Scripted::new(working());
    backend.answers.push_back(Err(epoch_refusal()));
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jxy");
    assert_eq!(
        backend.requests,
        [Request::Cancel {
            task_id: MIGRATE.to_owned(),
            work_item_id: None
        }]
    );
    assert_eq!(app.notice(), Some(&Notice::Refused(epoch_refusal())));
    assert_eq!(app.view(), &working(), "the re-read view is the same");
    assert_eq!(app.mode(), Mode::Main);
    assert_eq!(app.focus(), Pane::Tasks);
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(MIGRATE)
    );
    let text = screen_text(&app, 120, 40);
    assert!(
        text.contains("VALP-E-LEADER-EPOCH: task task-migrate-store-to-compact-entries is bound"),
        "{text}"
    );
    // The next request clears the notice.
    type_keys(&mut app, &mut backend, "i");
    assert_eq!(
        app.notice(),
        Some(&Notice::Done("observed again".to_owned()))
    );
}

#[test]
fn read_only_mode_sends_nothing_from_the_task_keys() {
    let mut backend = Scripted::new(working_read_only());
    let mut app = start(&mut backend);
    assert_eq!(app.mode(), Mode::ReadOnly);
    let footer_text = footer(&app);
    for absent in ["cancel", "interrupt", "resume", "redirect", "review"] {
        assert!(!footer_text.contains(absent), "{absent}: {footer_text}");
    }
    assert!(footer_text.contains("r rebind"));
    for pane in Pane::ALL {
        assert_eq!(app.focus(), pane, "Tab still looks around");
        for _ in 0..3 {
            for code in [
                KeyCode::Char('x'),
                KeyCode::Char('i'),
                KeyCode::Char('u'),
                KeyCode::Char('R'),
                KeyCode::Char('p'),
                KeyCode::Char('f'),
                KeyCode::Char('y'),
                KeyCode::Char(' '),
                KeyCode::Esc,
            ] {
                assert_eq!(app.handle(key(code)), [], "{pane:?} {code:?}");
                assert_eq!(app.mode(), Mode::ReadOnly, "{pane:?} {code:?}");
            }
            // Enter opens the detail view of the row (looking only); Esc closes it.
            assert_eq!(app.handle(key(KeyCode::Enter)), [], "{pane:?}");
            assert_eq!(app.handle(key(KeyCode::Esc)), [], "{pane:?}");
            assert_eq!(app.mode(), Mode::ReadOnly, "{pane:?}");
            press(&mut app, &mut backend, KeyCode::Char('j'));
        }
        press(&mut app, &mut backend, KeyCode::Tab);
    }
    assert!(backend.requests.is_empty());

    // Even a keymap that binds the task keys on the read-only screen sends nothing.
    let mut config = Config::builtin().unwrap();
    config.keymap = Keymap::from_toml(
        "[read_only]\nx = \"cancel_selected\"\ni = \"interrupt\"\nu = \"resume\"\n\
         R = \"redirect\"\np = \"pass_review\"\nf = \"reject_review\"\ny = \"confirm\"\n",
    )
    .unwrap();
    let mut app = App::new(config, working_read_only());
    for code in ['x', 'y', 'i', 'u', 'R', 'y', 'p', 'y', 'f', 'y'] {
        assert_eq!(app.handle(key(KeyCode::Char(code))), [], "{code}");
        assert_eq!(app.mode(), Mode::ReadOnly);
    }
}

#[test]
fn a_dialog_or_redirect_opened_on_the_main_screen_closes_when_it_turns_read_only() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "x");
    app.handle(Event::Loaded(Box::new(working_read_only())));
    assert_eq!(app.mode(), Mode::ReadOnly);
    assert_eq!(app.handle(key(KeyCode::Char('y'))), []);

    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "Rintent");
    press(&mut app, &mut backend, KeyCode::Enter);
    app.handle(Event::Loaded(Box::new(working_read_only())));
    assert_eq!(app.mode(), Mode::ReadOnly);
    assert_eq!(app.handle(key(KeyCode::Char('y'))), []);
    assert_eq!(app.handle(key(KeyCode::Enter)), []);
    assert!(backend.requests.is_empty());
}

#[test]
fn focus_cycles_and_the_selected_task_drives_the_work_items() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    let mut seen = Vec::new();
    for _ in 0..Pane::ALL.len() {
        seen.push(app.focus());
        press(&mut app, &mut backend, KeyCode::Tab);
    }
    assert_eq!(seen, Pane::ALL);
    assert_eq!(app.focus(), Pane::Tasks, "Tab wraps");
    press(&mut app, &mut backend, KeyCode::BackTab);
    assert_eq!(app.focus(), Pane::Needs);
    press(&mut app, &mut backend, KeyCode::Tab);

    // k on the first row and j on the last stay put.
    type_keys(&mut app, &mut backend, "k");
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(BUILD)
    );
    type_keys(&mut app, &mut backend, "jjjjjj");
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(TUNE)
    );
    press(&mut app, &mut backend, KeyCode::Up);
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(REVIEW)
    );
    assert!(screen_text(&app, 120, 40).contains("Work items · task-review-docs (3)"));

    // The Work items cursor starts on the task's first item and moves within its items.
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.selected_item(), Some("outline"));
    type_keys(&mut app, &mut backend, "jjjj");
    assert_eq!(app.selected_item(), Some("proofread"));
    press(&mut app, &mut backend, KeyCode::BackTab);
    type_keys(&mut app, &mut backend, "k");
    assert_eq!(
        app.selected_item(),
        Some("convert"),
        "another task: its first item"
    );
    assert!(backend.requests.is_empty());
}

#[test]
fn cursors_follow_their_rows_when_the_view_changes() {
    let mut backend = Scripted::new(working());
    let mut app = start(&mut backend);
    type_keys(&mut app, &mut backend, "jj");
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j");
    assert_eq!(app.selected_item(), Some("draft"));

    // A task appears before the selected one: the selection stays on task-review-docs.
    let mut changed = working();
    let mut early = changed.tasks[0].clone();
    early.task_id = "task-aaa".to_owned();
    changed.tasks.insert(0, early);
    app.handle(Event::Loaded(Box::new(changed.clone())));
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(REVIEW)
    );
    assert_eq!(app.selected_item(), Some("draft"));

    // The selected task goes away: the cursor stays within the list, on another task's first
    // item.
    changed.tasks.retain(|task| task.task_id != REVIEW);
    app.handle(Event::Loaded(Box::new(changed)));
    assert_eq!(
        app.selected_task().map(|task| task.task_id.as_str()),
        Some(TUNE)
    );
    assert_eq!(app.selected_item(), Some("measure"));

    // Log panes follow the newest row until scrolled, then stay on their row.
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.focus(), Pane::Observations);
    let mut newer = working();
    newer.observations.insert(
        0,
        observation(BUILD, "index", "att-index-1", 4, "completed", "exit 0"),
    );
    app.handle(Event::Loaded(Box::new(newer.clone())));
    assert_eq!(app.cursor(Pane::Observations), 0);
    type_keys(&mut app, &mut backend, "j");
    newer.observations.insert(
        0,
        observation(BUILD, "docs", "att-docs-1", 1, "accepted", ""),
    );
    app.handle(Event::Loaded(Box::new(newer)));
    assert_eq!(app.cursor(Pane::Observations), 2);
}

#[test]
fn the_task_keys_need_a_task() {
    let mut view = working();
    view.tasks.clear();
    view.items.clear();
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    for code in ['x', 'i', 'u', 'R', 'p', 'f', 'j', 'k'] {
        assert_eq!(app.handle(key(KeyCode::Char(code))), [], "{code}");
        assert_eq!(app.mode(), Mode::Main);
    }
    press(&mut app, &mut backend, KeyCode::Tab);
    assert_eq!(app.handle(key(KeyCode::Char('x'))), []);
    assert_eq!(
        dispatch(&mut app, &mut backend, key(KeyCode::Char('g'))),
        valp_tui::Flow::Continue
    );
    assert_eq!(backend.requests, [Request::Refresh]);
}
