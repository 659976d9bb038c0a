//! The Agent pane of a work item's terminal agent: snapshots of a working, a blocked and an
//! exited agent at 120x40 and 80x24 with hostile text in the screen tail (shown sanitized), and
//! its keys: scroll and follow, a message typed and sent, interrupt, attach, cancel, close.

use crossterm::event::KeyCode;
use valp_tui::App;
use valp_view::{AgentView, ConsoleView, Request};

use crate::support::{BUILD, Scripted, draw, press, screen_text, start, type_keys, working};

/// Escape sequences (OSC title, CSI clear, C1 CSI), a NEL, bidi overrides and isolates, CR LF,
/// NUL and DEL: what a hostile agent could print.
const HOSTILE: &str =
    "evil\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{85}\u{202e}txt\u{2066}\r\n\t\u{0}\u{7f}";

/// The agent of `build / index` (the second work item of the first task) in `state`.
fn agent(state: &str, rule: Option<(&str, Option<u64>)>, note: Option<&str>) -> AgentView {
    let mut tail: Vec<String> = (1..=30)
        .map(|at| format!("line {at} of the agent's screen"))
        .collect();
    tail.push(format!("tool output: {HOSTILE} end"));
    tail.push("> ".to_owned());
    AgentView {
        task_id: BUILD.to_owned(),
        work_item_id: "index".to_owned(),
        attempt_id: "att-index-1".to_owned(),
        state: state.to_owned(),
        rule: rule.map(|(rule, line)| (rule.to_owned(), line)),
        for_ms: 8_400,
        sample_age_ms: 2_300,
        note: note.map(str::to_owned),
        tail,
        attach: "tmux -S '/home/alice/work/.valp/runtime/tmux/.server.sock' attach -t %7"
            .to_owned(),
    }
}

fn view_with(agent: AgentView) -> ConsoleView {
    let mut view = working();
    view.agents = vec![agent];
    view
}

/// The app with the Agent pane of `build / index` open.
fn opened(view: ConsoleView) -> (App, Scripted) {
    let mut backend = Scripted::new(view);
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    type_keys(&mut app, &mut backend, "j");
    assert_eq!(app.selected_item(), Some("index"));
    type_keys(&mut app, &mut backend, "A");
    (app, backend)
}

fn snapshots(name: &str, app: &App) {
    for (width, height) in [(120, 40), (80, 24)] {
        let text = screen_text(app, width, height);
        for bad in [
            '\u{1b}', '\u{9b}', '\u{85}', '\u{202e}', '\u{2066}', '\u{0}', '\u{7f}',
        ] {
            assert!(
                !text.contains(bad),
                "{name} {width}x{height}: {bad:?} on screen"
            );
        }
        insta::assert_snapshot!(
            format!("{name}_{width}x{height}"),
            draw(app, width, height).backend()
        );
    }
}

#[test]
fn a_working_agent_shows_its_state_rule_and_the_end_of_its_screen() {
    let (app, _) = opened(view_with(agent(
        "working",
        Some(("spinner", Some(3))),
        None,
    )));
    let text = screen_text(&app, 120, 40);
    assert!(
        text.contains("working: spinner (line 3) matched 2 s ago"),
        "{text}"
    );
    assert!(text.contains("following"), "{text}");
    // Following: the last line is on screen, the first is scrolled off.
    assert!(text.contains("tool output: evil"), "{text}");
    assert!(!text.contains("line 1 of the agent's screen"), "{text}");
    snapshots("agent_working", &app);
}

#[test]
fn a_blocked_agent_shows_the_prompt_rule_and_the_supervisors_note() {
    let (app, _) = opened(view_with(agent(
        "blocked",
        Some(("permission prompt", Some(12))),
        Some("waiting for the Leader"),
    )));
    let text = screen_text(&app, 80, 24);
    assert!(
        text.contains("blocked: permission prompt (line 12) matched 2 s ago"),
        "{text}"
    );
    snapshots("agent_blocked", &app);
}

#[test]
fn an_exited_agent_takes_no_message_or_interrupt() {
    let (mut app, mut backend) = opened(view_with(agent("exited", None, None)));
    type_keys(&mut app, &mut backend, "mi");
    assert!(
        backend
            .requests
            .iter()
            .all(|request| matches!(request, Request::Refresh))
    );
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("exited (sampled 2 s ago)"), "{text}");
    snapshots("agent_exited", &app);
}

#[test]
fn scrolling_up_leaves_follow_mode_and_follow_goes_back_to_the_end() {
    let (mut app, mut backend) = opened(view_with(agent("working", None, None)));
    for _ in 0..40 {
        type_keys(&mut app, &mut backend, "k");
    }
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("line 1 of the agent's screen"), "{text}");
    assert!(text.contains("31 of 32 lines up"), "{text}");
    type_keys(&mut app, &mut backend, "F");
    let text = screen_text(&app, 120, 40);
    assert!(text.contains("following"), "{text}");
    assert!(!text.contains("line 1 of the agent's screen"), "{text}");
}

#[test]
fn a_typed_message_is_sent_to_the_agent_with_enter_and_dropped_with_esc() {
    let (mut app, mut backend) = opened(view_with(agent("idle", None, None)));
    type_keys(&mut app, &mut backend, "m");
    // While typing, keys are text: q does not quit, j does not scroll.
    type_keys(&mut app, &mut backend, "use jq");
    assert!(screen_text(&app, 80, 24).contains("message › use jq"));
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(
        backend.requests.last(),
        Some(&Request::Message {
            task_id: BUILD.to_owned(),
            attempt_id: "att-index-1".to_owned(),
            text: "use jq".to_owned(),
        })
    );
    let sent = backend.requests.len();
    type_keys(&mut app, &mut backend, "mnever");
    press(&mut app, &mut backend, KeyCode::Esc);
    // An empty message is not sent either.
    type_keys(&mut app, &mut backend, "m");
    press(&mut app, &mut backend, KeyCode::Enter);
    assert_eq!(backend.requests.len(), sent);
    // Esc with nothing typed closes the pane: the body is back.
    press(&mut app, &mut backend, KeyCode::Esc);
    assert!(!screen_text(&app, 120, 40).contains("Agent ·"));
}

#[test]
fn interrupt_attach_and_cancel_go_to_the_agent_and_its_work_item() {
    let (mut app, mut backend) = opened(view_with(agent("working", None, None)));
    type_keys(&mut app, &mut backend, "ia");
    let agent_requests: Vec<_> = backend
        .requests
        .iter()
        .filter(|request| !matches!(request, Request::Refresh))
        .cloned()
        .collect();
    assert_eq!(
        agent_requests,
        [
            Request::InterruptAgent {
                task_id: BUILD.to_owned(),
                attempt_id: "att-index-1".to_owned(),
            },
            Request::Attach {
                attempt_id: "att-index-1".to_owned(),
            },
        ]
    );
    type_keys(&mut app, &mut backend, "x");
    assert_eq!(
        app.pending(),
        Some(&Request::Cancel {
            task_id: BUILD.to_owned(),
            work_item_id: Some("index".to_owned()),
        })
    );
}

#[test]
fn only_a_work_item_with_an_agent_opens_the_pane() {
    let mut backend = Scripted::new(view_with(agent("working", None, None)));
    let mut app = start(&mut backend);
    press(&mut app, &mut backend, KeyCode::Tab);
    // The first item (scan) has no agent.
    type_keys(&mut app, &mut backend, "A");
    assert!(!screen_text(&app, 120, 40).contains("Agent ·"));
}
