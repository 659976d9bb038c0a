//! The real agent CLIs (Claude Code, Codex, Aider; versions pinned in `.ci/agents.lock`) in
//! private tmux panes against the scripted model (`valp_tests::agents`, `valp_tests::model`):
//! - each reaches its prompt, and the submission core (`adapter::tmux::submit`) hands it a
//!   prompt with proof; the model's request log shows the exact text;
//! - the model's tool call (Claude's `Write`, Codex's escalated `exec_command`) or edit
//!   (Aider's whole file) raises the CLI's permission question, read as `blocked`; nothing is
//!   written until it is answered; Enter accepts, the file appears, the CLI returns to idle;
//! - a slow stream reads as `working`; the profile's interrupt key stops it and the CLI
//!   returns to idle;
//! - while text streams, Claude Code reads as working, Codex as idle (a known misreading:
//!   its screen hides the working line then) and Aider as unknown;
//! - an error reply ends the turn and the CLI returns to idle;
//! - without the last first-run step the set-up screen reads as `unknown` and a submission is
//!   refused with nothing sent;
//! - Claude Code's hooks (`--settings FILE`) and Codex's (`~/.codex/hooks.json`) all fire;
//!   `UserPromptSubmit` carries the exact prompt, Claude's `Notification` the permission
//!   prompt; the payloads are recorded for the hook bridge.
//!
//! A CLI that `.ci/agents` did not install is skipped (the test says so and passes) unless
//! `VALP_REQUIRE_AGENTS=1`. With `VALP_RECORD_AGENT_SCREENS=1` the tests save the screens they
//! read as the fixtures of `tests/fixtures/agents/<cli>/<version>/` (see its PROVENANCE.md).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use valp_runtime::adapter::tmux::submit::{Submission, SubmitError, submit};
use valp_runtime::agent::classify::classify;
use valp_runtime::agent::profile::AgentState;
use valp_tests::agents::{AGENT_PATIENCE, AgentPane, Cli, Setup};
use valp_tests::model::{Reply, SERIAL, Script};
use valp_tests::tmux::PATIENCE;

/// A prompt with shell syntax and key names in it: text, never keys or commands.
const PROMPT: &str =
    "Create hello.txt for the valp test; 'quotes' \"too\" $(touch pwned) C-c Enter";
/// What the scripted model writes.
const CONTENT: &str = "hello from the scripted model\n";
/// Its last words.
const DONE: &str = "I wrote hello.txt for you.";

/// The model's part: write `hello.txt` in `project` the way this CLI does it.
fn write_hello(cli: Cli, project: &Path) -> Script {
    match cli {
        Cli::Claude => Script::tool_then_text(
            "Write",
            json!({"file_path": project.join("hello.txt"), "content": CONTENT}),
            DONE,
        ),
        // The read-only sandbox makes the command ask for escalation: Codex's approval prompt.
        Cli::Codex => Script::tool_then_text(
            "exec_command",
            json!({
                "cmd": format!("printf '{}' > hello.txt", CONTENT.trim_end()),
                "sandbox_permissions": "require_escalated",
                "justification": "write hello.txt for the valp test",
            }),
            DONE,
        ),
        // Aider's "whole" edit format: the file name, then its content fenced.
        Cli::Aider => Script::text(&format!("hello.txt\n```\n{CONTENT}```\n")),
    }
}

/// Starts `cli` against `script` and waits for its empty prompt.
fn start_at_prompt(cli: Cli, script: impl FnOnce(&Path) -> Script) -> Option<AgentPane> {
    let installed = cli.installed()?;
    let started = Instant::now();
    let agent = AgentPane::start(&installed, script, Setup::Ready);
    let (read, screen) = agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    eprintln!(
        "{} {}: prompt after {:?}",
        cli.name(),
        installed.version,
        started.elapsed()
    );
    assert_eq!(read.input.as_deref(), Some(""), "an empty input line");
    agent.record("prompt", &screen);
    Some(agent)
}

/// Submits [`PROMPT`] (waiting at most `patience` for each step) and checks that the model
/// got it verbatim, as the last user text of the request answered `first`.
fn submit_prompt(agent: &AgentPane, patience: Duration) -> Submission {
    let submission = submit(
        &agent.pane,
        &agent.profile,
        PROMPT,
        agent.scratch(),
        patience,
    )
    .unwrap();
    let request = agent
        .model
        .wait_for("the prompt", AGENT_PATIENCE, |request| {
            request.answered == "first"
        });
    assert_eq!(
        request.user_texts().last().map(String::as_str),
        Some(PROMPT),
        "the model got the exact prompt as the last user text"
    );
    submission
}

/// The steps of a proven submission.
fn assert_proven(agent: &AgentPane, submission: &Submission) {
    let Submission::Proven(proof) = submission else {
        panic!("not proven: {submission:?}\n{}", agent.screen());
    };
    let steps: Vec<&str> = proof.steps.iter().map(|step| step.what.as_str()).collect();
    assert_eq!(
        steps[..2],
        ["idle, input empty", "load-buffer + paste-buffer -p"]
    );
    assert!(steps[2].starts_with("dispatch_inserted ("), "{steps:?}");
    assert_eq!(steps[3], "send-keys Enter");
    assert!(
        steps[4].ends_with(", input cleared: submitted"),
        "{steps:?}"
    );
}

/// Submits [`PROMPT`] for a turn whose screen may never read as working (it ends, or turns
/// idle-looking, between two samples): the submission is proven or unconfirmed (never
/// resent), and either way the model's log shows the exact prompt arrived.
fn submit_fast_turn(agent: &AgentPane) {
    match submit_prompt(agent, Duration::from_secs(5)) {
        Submission::Proven(_) => {}
        Submission::Unconfirmed { why, .. } => assert_eq!(
            why,
            "the agent did not leave idle with its input cleared after Enter"
        ),
    }
}

/// Reaches the prompt and submits [`PROMPT`] with proof.
fn start_and_submit(cli: Cli, script: impl FnOnce(&Path) -> Script) -> Option<AgentPane> {
    let agent = start_at_prompt(cli, script)?;
    let submission = submit_prompt(&agent, AGENT_PATIENCE);
    assert_proven(&agent, &submission);
    Some(agent)
}

/// The whole turn: prompt, permission question, Enter accepts, the file, back to idle.
fn prompt_permission_and_file(cli: Cli) {
    let Some(agent) = start_and_submit(cli, |project| write_hello(cli, project)) else {
        return;
    };
    let (read, screen) = agent.wait_for(AgentState::Blocked, AGENT_PATIENCE);
    agent.record("permission", &screen);
    eprintln!("{}: blocked by {:?}", cli.name(), read.rule);
    let hello = agent.project.join("hello.txt");
    assert!(!hello.exists(), "written before the permission was given");
    agent.keys(&["Enter"]);
    let started = Instant::now();
    while std::fs::read_to_string(&hello).ok().as_deref() != Some(CONTENT.trim_end())
        && std::fs::read_to_string(&hello).ok().as_deref() != Some(CONTENT)
    {
        assert!(
            started.elapsed() < AGENT_PATIENCE,
            "hello.txt never written; screen:\n{}",
            agent.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, screen) = agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    agent.record("done", &screen);
    assert!(
        !agent.project.join("pwned").exists(),
        "the prompt ran as a command"
    );
    if cli != Cli::Aider {
        // The tool's result went back to the model, which ended the turn.
        agent
            .model
            .wait_for("the tool result", AGENT_PATIENCE, |request| {
                request.answered == "after_tool"
            });
        let started = Instant::now();
        while !agent.screen().contains(DONE) {
            assert!(
                started.elapsed() < AGENT_PATIENCE,
                "the final text never showed"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A slow stream reads as working; the interrupt key stops it; the CLI returns to idle. The
/// stream carries no text: Codex 0.171.0 and Aider hide their working line while text streams.
fn working_then_interrupted(cli: Cli) {
    let slow = Script::new(
        Reply::Slow {
            piece: String::new(),
            pieces: 600,
            every: Duration::from_millis(100),
        },
        Reply::Text(DONE.to_owned()),
    );
    let Some(agent) = start_and_submit(cli, |_| slow) else {
        return;
    };
    let (_, screen) = agent.wait_for(AgentState::Working, AGENT_PATIENCE);
    agent.record("working", &screen);
    let keys: Vec<&str> = agent
        .profile
        .interrupt_keys
        .iter()
        .map(String::as_str)
        .collect();
    let pressed = Instant::now();
    agent.pane.press(&keys).unwrap();
    let (read, screen) = agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    eprintln!(
        "{}: idle {:?} after {keys:?}",
        cli.name(),
        pressed.elapsed()
    );
    agent.record("interrupted", &screen);
    // Claude Code puts the interrupted prompt back in its input; the others clear it.
    let draft = if cli == Cli::Claude { PROMPT } else { "" };
    let mut read = read;
    let started = Instant::now();
    while read.input.as_deref() != Some(draft) {
        assert!(
            started.elapsed() < PATIENCE,
            "the input never read {draft:?}: {read:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
        read = agent.wait_for(AgentState::Idle, PATIENCE).0;
    }
    // Idle holds: the turn is over, not between two pieces.
    std::thread::sleep(Duration::from_millis(agent.profile.idle_debounce_ms));
    agent.wait_for(AgentState::Idle, Duration::ZERO);
}

/// While the model streams text the screen reads as `state`, by the rule `rule`: Claude Code
/// keeps its working line; Codex 0.171.0 hides its working line and shows its empty composer,
/// so the screen reads as idle (a known misreading no screen rule can fix: nothing on it tells
/// the two apart); Aider's last line is the streamed text, which no rule reads.
fn streaming_text_reads_as(cli: Cli, state: AgentState, rule: Option<&str>) {
    let slow = Script::new(
        Reply::Slow {
            piece: "still thinking ".to_owned(),
            pieces: 600,
            every: Duration::from_millis(100),
        },
        Reply::Text(DONE.to_owned()),
    );
    let Some(agent) = start_at_prompt(cli, |_| slow) else {
        return;
    };
    // Codex's screen may look idle from the first streamed piece on.
    submit_fast_turn(&agent);
    let started = Instant::now();
    while !agent
        .screen()
        .contains("still thinking still thinking still thinking")
    {
        assert!(
            started.elapsed() < AGENT_PATIENCE,
            "the text never streamed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = agent.screen();
    let read = classify(&agent.profile, &screen);
    agent.record("streaming", &screen);
    assert_eq!(
        (
            read.state,
            read.rule.as_ref().map(|(name, _)| name.as_str())
        ),
        (state, rule),
        "{read:?}"
    );
}

/// An error reply ends the turn; the CLI shows it and returns to idle. A turn that ends
/// between two samples of the screen cannot be proven from the screen.
fn error_reply(cli: Cli) {
    let failing = Script::new(
        Reply::Error {
            status: 400,
            message: "scripted failure for the valp test".to_owned(),
        },
        Reply::Text(DONE.to_owned()),
    );
    let Some(agent) = start_at_prompt(cli, |_| failing) else {
        return;
    };
    submit_fast_turn(&agent);
    let started = Instant::now();
    while !agent.screen().contains("scripted failure") {
        assert!(
            started.elapsed() < AGENT_PATIENCE,
            "the error never showed:\n{}",
            agent.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let (read, screen) = agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    assert_eq!(read.input.as_deref(), Some(""), "the input was cleared");
    agent.record("error", &screen);
}

/// Without the last set-up step the screen reads as `unknown` by the set-up rule `rule`, and a
/// submission is refused with nothing sent to the model.
fn set_up_screen_refuses(cli: Cli, rule: &str) {
    let Some(installed) = cli.installed() else {
        return;
    };
    let agent = AgentPane::start(&installed, |_| Script::text(DONE), Setup::Unprepared);
    let (read, screen) = agent.wait_for(AgentState::Unknown, AGENT_PATIENCE);
    // Unknown is also what a starting screen reads as before its banner: wait for the rule.
    let started = Instant::now();
    let mut read = read;
    let mut screen = screen;
    while read.rule.as_ref().map(|(name, _)| name.as_str()) != Some(rule) {
        assert!(
            started.elapsed() < AGENT_PATIENCE,
            "no {rule:?}; last read {read:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        (read, screen) = agent.wait_for(AgentState::Unknown, AGENT_PATIENCE);
    }
    agent.record("set-up", &screen);
    let refused = submit(
        &agent.pane,
        &agent.profile,
        PROMPT,
        agent.scratch(),
        Duration::from_secs(3),
    );
    assert_eq!(
        refused,
        Err(SubmitError::Refused {
            state: "unknown",
            rule: format!(" ({rule})"),
            why: "it shows a set-up screen (trust, API key, first run) that only the Leader answers",
        })
    );
    assert!(
        agent
            .model
            .requests()
            .iter()
            .all(|request| request.answered != "first"),
        "a prompt reached the model"
    );
}

#[test]
fn claude_code_takes_a_proven_prompt_asks_to_write_and_writes() {
    prompt_permission_and_file(Cli::Claude);
}

#[test]
fn claude_code_works_and_stops_on_escape() {
    working_then_interrupted(Cli::Claude);
}

#[test]
fn claude_code_shows_a_model_error_and_returns_to_its_prompt() {
    error_reply(Cli::Claude);
}

#[test]
fn claude_code_folder_trust_reads_as_set_up_and_refuses_a_prompt() {
    set_up_screen_refuses(Cli::Claude, "folder trust dialog (set-up needed)");
}

#[test]
fn codex_takes_a_proven_prompt_asks_to_escalate_and_runs() {
    prompt_permission_and_file(Cli::Codex);
}

#[test]
fn codex_works_and_stops_on_escape() {
    working_then_interrupted(Cli::Codex);
}

#[test]
fn codex_shows_a_model_error_and_returns_to_its_composer() {
    error_reply(Cli::Codex);
}

#[test]
fn codex_folder_trust_reads_as_set_up_and_refuses_a_prompt() {
    set_up_screen_refuses(Cli::Codex, "trust dialog (set-up needed)");
}

#[test]
fn aider_takes_a_proven_prompt_asks_to_create_and_writes() {
    prompt_permission_and_file(Cli::Aider);
}

#[test]
fn aider_works_and_stops_on_ctrl_c() {
    working_then_interrupted(Cli::Aider);
}

#[test]
fn aider_git_question_reads_as_set_up_and_refuses_a_prompt() {
    set_up_screen_refuses(Cli::Aider, "git repo question (set-up needed)");
}

#[test]
fn aider_shows_a_model_error_and_returns_to_its_prompt() {
    error_reply(Cli::Aider);
}

#[test]
fn claude_code_streaming_text_reads_as_working() {
    streaming_text_reads_as(Cli::Claude, AgentState::Working, Some("working line"));
}

#[test]
fn codex_streaming_text_reads_as_idle_a_known_misreading() {
    streaming_text_reads_as(Cli::Codex, AgentState::Idle, Some("composer"));
}

#[test]
fn aider_streaming_text_reads_as_unknown() {
    streaming_text_reads_as(Cli::Aider, AgentState::Unknown, None);
}

/// The hook events Claude Code is configured to report.
const HOOK_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
    "SessionEnd",
];

/// The hook payloads written so far into `folder`, in the order they came.
fn hook_payloads(folder: &Path) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(folder)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|file| serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok())
        .collect()
}

/// Waits until a hook payload of `event` (whose `field` is `value`, when given) arrived.
fn wait_for_hook(folder: &Path, event: &str, field: Option<(&str, &str)>) -> Value {
    let started = Instant::now();
    loop {
        let found = hook_payloads(folder).into_iter().find(|payload| {
            payload["hook_event_name"] == event
                && field.is_none_or(|(name, value)| payload[name] == value)
        });
        if let Some(payload) = found {
            return payload;
        }
        assert!(
            started.elapsed() < AGENT_PATIENCE,
            "no {event} hook; got {:?}",
            hook_payloads(folder)
                .iter()
                .map(|payload| payload["hook_event_name"].clone())
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A hooks table (Claude Code's layout, which Codex shares) running, for each of `events`, a
/// command that saves its standard input as one file in `folder`, named by arrival time
/// (hooks may run concurrently).
fn hook_settings(events: &[&str], folder: &Path) -> Value {
    let command = format!("cat > '{}'/$(date +%s%N)-$$.json", folder.display());
    let table: serde_json::Map<String, Value> = events
        .iter()
        .map(|event| {
            let entry =
                json!([{"matcher": "", "hooks": [{"type": "command", "command": command}]}]);
            ((*event).to_owned(), entry)
        })
        .collect();
    json!({ "hooks": table })
}

/// Records the first payload of each of `events` as `<cli>/<version>/hooks/<event>.json`;
/// panics when one is missing.
fn record_hooks(agent: &AgentPane, events: &[&str], payloads: &[Value]) {
    let order: Vec<&str> = payloads
        .iter()
        .filter_map(|payload| payload["hook_event_name"].as_str())
        .collect();
    eprintln!("{} hooks, in order: {order:?}", agent.installed.cli.name());
    for event in events {
        let payload = payloads
            .iter()
            .find(|payload| payload["hook_event_name"] == *event)
            .unwrap_or_else(|| panic!("no {event} in {order:?}"));
        agent.record_file(
            &format!("hooks/{event}.json"),
            &format!("{}\n", serde_json::to_string_pretty(payload).unwrap()),
        );
    }
}

/// Claude Code's hooks, configured with `--settings FILE`, fire in the interactive CLI: the
/// payload of each event (recorded as `claude/<version>/hooks/<event>.json` for the hook
/// bridge), `UserPromptSubmit` carrying the exact prompt, the tool events the `Write` call,
/// `Notification` the permission prompt, `Stop` the final text, `SessionEnd` the exit.
#[test]
fn claude_code_hooks_fire_with_the_exact_prompt_and_the_permission_prompt() {
    let Some(installed) = Cli::Claude.installed() else {
        return;
    };
    let hooks = tempfile::tempdir().unwrap();
    let events = hooks.path().join("events");
    std::fs::create_dir(&events).unwrap();
    let settings = hooks.path().join("settings.json");
    std::fs::write(&settings, hook_settings(&HOOK_EVENTS, &events).to_string()).unwrap();
    let agent = AgentPane::start_with(
        &installed,
        |project| write_hello(Cli::Claude, project),
        Setup::Ready,
        &["--settings", settings.to_str().unwrap()],
        &[],
    );
    agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    let submission = submit_prompt(&agent, AGENT_PATIENCE);
    assert_proven(&agent, &submission);
    let submitted = wait_for_hook(&events, "UserPromptSubmit", None);
    assert_eq!(submitted["prompt"], PROMPT, "the delivery acknowledgement");
    agent.wait_for(AgentState::Blocked, AGENT_PATIENCE);
    let asked = wait_for_hook(&events, "PermissionRequest", None);
    assert_eq!(asked["tool_name"], "Write");
    let notified = wait_for_hook(
        &events,
        "Notification",
        Some(("notification_type", "permission_prompt")),
    );
    assert!(notified["message"].is_string(), "{notified}");
    agent.keys(&["Enter"]);
    let stopped = wait_for_hook(&events, "Stop", None);
    assert_eq!(stopped["last_assistant_message"], DONE);
    let used = wait_for_hook(&events, "PostToolUse", None);
    assert_eq!(
        used["tool_input"]["file_path"],
        agent.project.join("hello.txt").to_str().unwrap()
    );
    agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    let keys: Vec<&str> = agent.profile.exit_keys.iter().map(String::as_str).collect();
    agent.pane.press(&keys).unwrap();
    wait_for_hook(&events, "SessionEnd", None);
    let payloads = hook_payloads(&events);
    let session = &payloads[0]["session_id"];
    for payload in &payloads {
        assert_eq!(&payload["session_id"], session, "one session: {payload}");
        assert_eq!(payload["cwd"], agent.project.to_str().unwrap(), "{payload}");
        assert!(payload["transcript_path"].is_string(), "{payload}");
    }
    record_hooks(&agent, &HOOK_EVENTS, &payloads);
}

/// The `percent` percentile of `samples` (nearest rank), in milliseconds.
fn percentile(samples: &mut [u64], percent: usize) -> u64 {
    samples.sort_unstable();
    let rank = (percent * samples.len()).div_ceil(100);
    samples[rank.clamp(1, samples.len()) - 1]
}

/// Times, over `VALP_AGENT_TURNS` turns (default 20) of one session, how long after Enter
/// the screen reads `working` (the submission's last step) and `blocked` (the permission
/// question), sampling every 50 ms; answers each question with Enter. A documented long run,
/// not CI: `cargo test -p valp-tests --test real_agents timing -- --ignored --nocapture`.
/// Aider asks only before creating a file (it edits a file it created without asking), so its
/// model names a new file in every turn (`hello-<request serial>.txt`); its screen leaves
/// idle as `working` (`Waiting for …`) or `unknown` (streamed text), both counted.
fn enter_to_working_and_blocked(cli: Cli) {
    let turns: usize = std::env::var("VALP_AGENT_TURNS")
        .ok()
        .and_then(|turns| turns.parse().ok())
        .unwrap_or(20);
    // Claude's Bash asks every time (its Write would need a Read before overwriting).
    let script = move |project: &Path| match cli {
        Cli::Claude => Script::tool_then_text(
            "Bash",
            json!({"command": "touch hello.txt", "description": "Touch hello.txt"}),
            DONE,
        ),
        Cli::Codex => write_hello(cli, project),
        Cli::Aider => Script::text(&format!("hello-{SERIAL}.txt\n```\n{CONTENT}```\n")),
    };
    let Some(agent) = start_at_prompt(cli, script) else {
        return;
    };
    let (mut working, mut blocked) = (Vec::new(), Vec::new());
    let mut left_as = std::collections::BTreeMap::new();
    for _ in 0..turns {
        let started = Instant::now();
        let submission = submit(
            &agent.pane,
            &agent.profile,
            PROMPT,
            agent.scratch(),
            AGENT_PATIENCE,
        )
        .unwrap();
        assert_proven(&agent, &submission);
        let Submission::Proven(proof) = submission else {
            unreachable!()
        };
        let enter = proof.steps[3].at_ms;
        working.push(proof.steps[4].at_ms - enter);
        let left = proof.steps[4].what.split(',').next().unwrap_or_default();
        *left_as.entry(left.to_owned()).or_insert(0_usize) += 1;
        agent.wait_for(AgentState::Blocked, AGENT_PATIENCE);
        let at = u64::try_from(started.elapsed().as_millis()).unwrap();
        blocked.push(at - enter);
        agent.keys(&["Enter"]);
        agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    }
    eprintln!(
        "{} {}, {turns} turns: Enter -> working p50 {} ms p99 {} ms; Enter -> blocked p50 {} ms \
         p99 {} ms; left idle as {left_as:?}; load average {}",
        cli.name(),
        agent.installed.version,
        percentile(&mut working, 50),
        percentile(&mut working, 99),
        percentile(&mut blocked, 50),
        percentile(&mut blocked, 99),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim_end(),
    );
}

#[test]
#[ignore = "a long run for the figures, not CI"]
fn claude_code_timing() {
    enter_to_working_and_blocked(Cli::Claude);
}

#[test]
#[ignore = "a long run for the figures, not CI"]
fn codex_timing() {
    enter_to_working_and_blocked(Cli::Codex);
}

#[test]
#[ignore = "a long run for the figures, not CI"]
fn aider_timing() {
    enter_to_working_and_blocked(Cli::Aider);
}

/// Codex's hooks (`~/.codex/hooks.json` in Claude Code's layout) fire when started with
/// `--dangerously-bypass-hook-trust` (untrusted hooks are skipped silently otherwise):
/// `UserPromptSubmit` carries the exact prompt, `PermissionRequest` the escalated command,
/// `Stop` the final text; recorded as `codex/<version>/hooks/<event>.json`.
#[test]
fn codex_hooks_fire_with_the_exact_prompt_and_the_approval() {
    let Some(installed) = Cli::Codex.installed() else {
        return;
    };
    let events_seen = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
    ];
    let hooks = tempfile::tempdir().unwrap();
    let settings = hook_settings(&events_seen, hooks.path()).to_string();
    let agent = AgentPane::start_with(
        &installed,
        |project| write_hello(Cli::Codex, project),
        Setup::Ready,
        &["--dangerously-bypass-hook-trust"],
        &[(".codex/hooks.json", &settings)],
    );
    agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    let submission = submit_prompt(&agent, AGENT_PATIENCE);
    assert_proven(&agent, &submission);
    let submitted = wait_for_hook(hooks.path(), "UserPromptSubmit", None);
    assert_eq!(submitted["prompt"], PROMPT, "the delivery acknowledgement");
    agent.wait_for(AgentState::Blocked, AGENT_PATIENCE);
    let asked = wait_for_hook(hooks.path(), "PermissionRequest", None);
    assert_eq!(asked["tool_name"], "Bash", "{asked}");
    agent.keys(&["Enter"]);
    let stopped = wait_for_hook(hooks.path(), "Stop", None);
    assert_eq!(stopped["last_assistant_message"], DONE);
    let payloads = hook_payloads(hooks.path());
    for payload in &payloads {
        assert_eq!(
            &payload["session_id"], &payloads[0]["session_id"],
            "{payload}"
        );
        assert_eq!(payload["cwd"], agent.project.to_str().unwrap(), "{payload}");
    }
    record_hooks(&agent, &events_seen, &payloads);
}
