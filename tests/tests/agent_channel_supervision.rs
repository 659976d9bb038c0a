//! The supervisors using the agents' channels, end to end through `valp run`:
//!
//! - the tmux supervisor with the demo agent in real tmux: a submission acknowledged by the
//!   agent's own `UserPromptSubmit` hook (content-bound), a hook's state outranking a
//!   contradicting screen, the screen deciding again once the channel is silent past the
//!   profile's `channel_silence_ms`; the source of each state in `state.json` and the
//!   completion proof; a profile with `launch_hooks = "claude_settings"` (here the demo's,
//!   through the user config) started with hooks of the attempt's own (`--settings FILE`);
//! - `adapter = "agent-stream"` items: a fake headless agent (a shell script printing the
//!   recorded transcripts of `tests/fixtures/agent-channels/`) run under the process adapter,
//!   its stream recorded as signals, its prompt on stdin, an interrupt delivered as claude's
//!   control message or as SIGINT, cost and tokens per attempt and per task in
//!   `valp task status`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use valp_runtime::abi::attempt_folder;
use valp_tests::project::{Project, plan, wait_until, work_item};
use valp_tests::schemas::{assert_record_valid, attempt_observations, read_json};
use valp_tests::tmux::tmux_at;
use valp_tests::{valp_binary, workspace_root};

fn fixture(name: &str) -> PathBuf {
    workspace_root()
        .join("tests/fixtures/agent-channels")
        .join(name)
}

fn state(dir: &Path) -> serde_json::Value {
    std::fs::read(dir.join("state.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn text(value: &serde_json::Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// Kills the project's private tmux server when the test ends, also when it fails.
struct Cleanup<'a>(&'a Project);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let socket = self.0.control_root().join("runtime/tmux/.server.sock");
        let _ = tmux_at(&socket, &["kill-server"]);
    }
}

/// A tmux item run by the demo agent (seed 4, never asking), with `extra` arguments.
fn demo_item(id: &str, expected: &[&str], prompt: &str, extra: &[&str]) -> String {
    let valp = valp_binary().unwrap();
    let mut command = vec![
        format!("{:?}", valp.to_str().unwrap()),
        "\"demo-agent\"".to_owned(),
        "\"--seed\"".to_owned(),
        "\"4\"".to_owned(),
        "\"--ask\"".to_owned(),
        "\"never\"".to_owned(),
    ];
    command.extend(extra.iter().map(|arg| format!("{arg:?}")));
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"demo\"\ncommand = [{}]\nprompt = \
         {prompt:?}\ntimeout_seconds = 90\n",
        command.join(", ")
    );
    work_item(id, "required", &[], expected, &run)
}

fn tmux_dir(project: &Project, attempt_id: &str) -> PathBuf {
    project
        .control_root()
        .join("runtime/tmux/attempts")
        .join(attempt_folder(attempt_id))
}

/// `valp hook claude` with `payload` on stdin, as the agent of `attempt_id` runs it.
fn hook(project: &Project, attempt_id: &str, payload: &Path) {
    let parts: Vec<&str> = attempt_id.split(':').collect();
    let mut child = Command::new(valp_binary().unwrap())
        .args(["hook", "claude"])
        .env("VALP_CONTROL_ROOT", project.control_root())
        .env("VALP_TASK_ID", parts[0])
        .env("VALP_WORK_ITEM_ID", parts[1])
        .env("VALP_ATTEMPT_ID", attempt_id)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(payload).unwrap())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    assert!(output.stderr.is_empty(), "{output:?}");
}

#[test]
fn a_tmux_submission_is_acknowledged_by_the_agents_own_hook() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let valp = valp_binary().unwrap();
    let hook_command = format!("'{}' hook claude", valp.display());
    let prompt = "Write @out/hooked.md now";
    project.publish(
        "hooked",
        &plan(
            "hooked",
            &demo_item(
                "write",
                &["out/hooked.md"],
                prompt,
                &["--hook-command", &hook_command],
            ),
        ),
    );
    let ran = project.ok(&["run", "--timeout", "120"]);
    assert!(ran.contains("hooked: reviewing"), "{ran}");
    let dir = tmux_dir(&project, "hooked:write:a1");
    let submission = read_json(&dir.join("proofs/submission.json"));
    assert_eq!(submission["proven"], true);
    // Signal 1 is the SessionStart at launch; 2 the UserPromptSubmit of exactly our prompt.
    let acknowledged = text(&submission["acknowledged_by"]);
    assert!(
        acknowledged.starts_with("claude_hook:prompt_submitted#2 (content-bound; signal sha256:"),
        "{acknowledged}"
    );
    // The turn's end came from the Stop hook, not the screen.
    let completion = read_json(&dir.join("proofs/completion.json"));
    assert_eq!(completion["status"], "completed");
    assert_eq!(text(&completion["source"]), "claude_hook:turn_completed#3");
    for (file, schema) in [
        (
            "proofs/submission.json",
            "tmux-submission-proof.schema.json",
        ),
        (
            "proofs/completion.json",
            "tmux-completion-proof.schema.json",
        ),
        ("state.json", "tmux-agent-state.schema.json"),
    ] {
        assert_record_valid(&dir, file, schema);
    }
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
}

/// The user config turns the demo profile's `launch_hooks` to `claude_settings`: the supervisor
/// writes the attempt's `claude-settings.json` (valid, naming the attempt in its commands)
/// and starts the demo agent with `--settings FILE` appended, whose hooks the agent runs as
/// Claude does. The plan's command has no hook in it, yet the submission is acknowledged by
/// the agent's own `UserPromptSubmit` and the turn completed by its `Stop`.
#[test]
fn a_profile_launching_hooks_starts_the_agent_with_settings_of_the_attempts_own() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        config.path(),
        "[agents.demo]\nlaunch_hooks = \"claude_settings\"\n",
    )
    .unwrap();
    let prompt = "Write @out/launched.md now";
    project.publish(
        "launched",
        &plan(
            "launched",
            &demo_item("write", &["out/launched.md"], prompt, &[]),
        ),
    );
    let ran = Command::new(valp_binary().unwrap())
        .args(["--no-default-sockets", "run", "--timeout", "120"])
        .current_dir(project.path())
        .env_remove("VALP_ROOT")
        .env("VALP_CONFIG", config.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ran.stdout);
    assert!(stdout.contains("launched: reviewing"), "{ran:?}");
    let dir = tmux_dir(&project, "launched:write:a1");
    assert_record_valid(
        &dir,
        "claude-settings.json",
        "agent-hook-settings.schema.json",
    );
    let settings = read_json(&dir.join("claude-settings.json"));
    assert!(
        text(&settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"])
            .contains(" VALP_ATTEMPT_ID='launched:write:a1' '"),
        "{settings}"
    );
    let log = std::fs::read_to_string(dir.join("supervisor.log")).unwrap();
    assert!(
        log.contains(&format!(
            "launch_hooks: --settings {}",
            dir.join("claude-settings.json").display()
        )),
        "{log}"
    );
    let submission = read_json(&dir.join("proofs/submission.json"));
    assert!(
        text(&submission["acknowledged_by"])
            .starts_with("claude_hook:prompt_submitted#2 (content-bound; signal sha256:"),
        "{submission}"
    );
    let completion = read_json(&dir.join("proofs/completion.json"));
    assert_eq!(text(&completion["source"]), "claude_hook:turn_completed#3");
}

/// The demo agent without hooks writes nothing, so it idles with its evidence missing; hooks
/// the test runs as its agent then say more than the screen: a `PreToolUse` holds the state at
/// working against the idle screen until the channel has been silent for the demo profile's
/// 3 s, then the screen decides again; a `Stop` after the file appeared completes the attempt
/// on the channel's word.
#[test]
fn a_hooks_state_outranks_the_screen_until_the_channel_falls_silent() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    project.publish(
        "ranked",
        &plan(
            "ranked",
            &demo_item("think", &["out/late.md"], "Think quietly", &[]),
        ),
    );
    let attempt = "ranked:think:a1";
    project.run_until("ranked", &format!("{attempt} g1 running"));
    let dir = tmux_dir(&project, attempt);
    wait_until("the screen to read idle, evidence missing", || {
        let state = state(&dir);
        state["state"] == "idle" && text(&state["source"]).starts_with("screen (")
    });
    assert_eq!(
        text(&state(&dir)["source"]),
        "screen (prompt box; no channel)"
    );

    hook(&project, attempt, &fixture("claude/pre-tool-use.json"));
    wait_until("the hook's working state", || {
        state(&dir)["state"] == "working"
    });
    let working = state(&dir);
    assert_eq!(text(&working["source"]), "claude_hook:tool_requested#1");
    // The screen still shows the idle prompt: the channel outranks it, and says so.
    assert_eq!(text(&working["rule"]), "prompt box");
    let status = project.ok(&["task", "status", "ranked"]);
    assert!(
        status.contains("    agent working (prompt box, line ")
            && status.contains(" [from claude_hook:tool_requested#1]"),
        "{status}"
    );

    wait_until("the screen to decide again", || {
        state(&dir)["state"] == "idle"
    });
    let fallback = text(&state(&dir)["source"]);
    assert!(
        fallback.starts_with("screen (prompt box; channel silent ") && fallback.ends_with(" ms)"),
        "{fallback}"
    );

    // Working again by the channel; the file appears; the Stop hook ends the turn.
    hook(&project, attempt, &fixture("claude/pre-tool-use.json"));
    wait_until("working again", || state(&dir)["state"] == "working");
    std::fs::create_dir_all(project.path().join("out")).unwrap();
    std::fs::write(project.path().join("out/late.md"), "late\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        attempt_observations(&dir).last().unwrap()["status"],
        "waiting",
        "the fresh channel's working state holds the completion back"
    );
    hook(&project, attempt, &fixture("claude/stop.json"));
    wait_until("the final observation", || {
        attempt_observations(&dir).last().unwrap()["status"] == "completed"
    });
    let completion = read_json(&dir.join("proofs/completion.json"));
    assert_eq!(text(&completion["source"]), "claude_hook:turn_completed#3");
    assert_record_valid(&dir, "state.json", "tmux-agent-state.schema.json");
}

/// An `agent-stream` item whose argv is `sh SCRIPT ARGS…`.
fn stream_item(
    id: &str,
    agent: &str,
    script: &str,
    prompt: Option<&str>,
    expected: &[&str],
) -> String {
    let prompt = prompt
        .map(|prompt| format!("prompt = {prompt:?}\n"))
        .unwrap_or_default();
    let run = format!(
        "[work_items.run]\nadapter = \"agent-stream\"\nagent = \"{agent}\"\nargv = [\"sh\", \
         \"-c\", {script:?}]\n{prompt}timeout_seconds = 60\n"
    );
    work_item(id, "required", &[], expected, &run)
}

fn process_dir(project: &Project, attempt_id: &str) -> PathBuf {
    project.attempts_dir().join(attempt_folder(attempt_id))
}

fn kinds(project: &Project, attempt_id: &str) -> Vec<String> {
    valp_runtime::agent::channel::inbox::read(&project.control_root(), attempt_id)
        .unwrap()
        .iter()
        .map(|signal| signal.kind.as_str().to_owned())
        .collect()
}

#[test]
fn a_headless_claude_streams_signals_cost_and_tokens_into_task_status() {
    let project = Project::new();
    // The fake claude reads its stream-json user message, keeps it, prints the transcript.
    let script = format!(
        "IFS= read -r line; printf '%s\\n' \"$line\" > prompt.json; cat '{}'",
        fixture("claude/stream.jsonl").display()
    );
    let codex = format!(
        "cat > codex-prompt.txt; cat '{}'",
        fixture("codex/exec.jsonl").display()
    );
    let body = [
        stream_item(
            "claude",
            "claude",
            &script,
            Some("Create hello.txt"),
            &["prompt.json"],
        ),
        stream_item(
            "codex",
            "codex",
            &codex,
            Some("Say hi"),
            &["codex-prompt.txt"],
        ),
    ]
    .concat();
    project.publish("headless", &plan("headless", &body));
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("headless: reviewing"), "{ran}");
    // The prompt arrived as a stream-json user message; codex got the text.
    let message = read_json(&project.path().join("prompt.json"));
    assert_eq!(message["type"], "user");
    assert_eq!(message["message"]["content"][0]["text"], "Create hello.txt");
    assert_eq!(
        std::fs::read_to_string(project.path().join("codex-prompt.txt")).unwrap(),
        "Say hi"
    );
    assert_eq!(
        kinds(&project, "headless:claude:a1"),
        [
            "session_started",
            "tool_requested",
            "tool_completed",
            "turn_completed",
            "turn_failed"
        ]
    );
    assert_eq!(kinds(&project, "headless:codex:a1").len(), 8);
    // The transcript is the attempt's captured stdout, byte for byte.
    let stdout = std::fs::read(process_dir(&project, "headless:claude:a1").join("stdout")).unwrap();
    assert_eq!(
        stdout,
        std::fs::read(fixture("claude/stream.jsonl")).unwrap()
    );
    let status = project.ok(&["task", "status", "headless"]);
    for line in [
        "    usage headless:claude:a1: cost 62346 micro-USD, tokens 1300 in / 252 out\n",
        "    usage headless:codex:a1: cost unknown micro-USD, tokens 2400 in / 60 out\n",
        "  usage (task, 2 attempts): cost 62346 micro-USD, tokens 3700 in / 312 out\n",
    ] {
        assert!(status.contains(line), "missing {line:?} in:\n{status}");
    }
    let usage = valp_runtime::agent::channel::summary::attempt_usage(
        &project.control_root(),
        "headless:none:a1",
    )
    .unwrap();
    assert!(usage.is_unknown(), "no signals: unknown, never 0");
}

/// A fake claude that waits on its stdin after the init message: the interrupt reaches it as
/// a `control_request`, which it keeps, then ends its turn. Without a prompt (stdin empty), the
/// interrupt is SIGINT to the agent's own process group, which its trap records.
#[test]
fn an_interrupt_reaches_a_headless_agent_as_its_control_message_else_as_sigint() {
    let project = Project::new();
    let init = r#"{"type":"system","subtype":"init","session_id":"s"}"#;
    let result =
        r#"{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s"}"#;
    let controlled = format!(
        "IFS= read -r prompt; echo '{init}'; IFS= read -r control; printf '%s\\n' \"$control\" > \
         control.json; echo '{result}'; cat >/dev/null"
    );
    let signalled = format!(
        "trap 'echo SIGINT > sigint.txt; echo '\"'\"'{result}'\"'\"'; exit 0' INT; echo '{init}'; \
         while :; do sleep 0.05; done"
    );
    let body = [
        stream_item(
            "ctl",
            "claude",
            &controlled,
            Some("Work"),
            &["control.json"],
        ),
        stream_item("sig", "claude", &signalled, None, &["sigint.txt"]),
    ]
    .concat();
    project.publish("intr", &plan("intr", &body));
    project.run_until("intr", "intr:sig:a1 g1 running");
    project.run_until("intr", "intr:ctl:a1 g1 running");
    for attempt in ["intr:ctl:a1", "intr:sig:a1"] {
        wait_until("the agent's init", || {
            kinds(&project, attempt).first().map(String::as_str) == Some("session_started")
        });
        valp_runtime::adapter::process::request_interrupt(&process_dir(&project, attempt)).unwrap();
    }
    wait_until("both turns ended", || {
        ["intr:ctl:a1", "intr:sig:a1"].iter().all(|attempt| {
            kinds(&project, attempt).last().map(String::as_str) == Some("turn_failed")
        })
    });
    let control = read_json(&project.path().join("control.json"));
    assert_eq!(control["type"], "control_request");
    assert_eq!(control["request"]["subtype"], "interrupt");
    assert_eq!(
        std::fs::read_to_string(project.path().join("sigint.txt")).unwrap(),
        "SIGINT\n"
    );
    for (attempt, how) in [
        ("intr:ctl:a1", "control_request"),
        ("intr:sig:a1", "SIGINT"),
    ] {
        let stderr = process_dir(&project, attempt).join("stderr");
        wait_until("the wrapper's report", || {
            std::fs::read_to_string(&stderr)
                .is_ok_and(|log| log.contains(&format!("; interrupts: {how}\n")))
        });
    }
}

/// The real Claude Code (pinned in `.ci/agents.lock`, installed by `.ci/agents`; skipped when
/// it is not, unless `VALP_REQUIRE_AGENTS=1`) headless, through `valp agent run-stream`,
/// against the scripted model: the prompt goes in as a stream-json user message, the model's
/// `Write` runs, and the stream's init, tool call, tool result and result are the attempt's
/// signals; the file is written and the wrapper exits with claude's code 0.
#[test]
fn a_real_headless_claude_streams_its_turn_into_signals() {
    use valp_tests::agents::Cli;
    use valp_tests::model::{ModelServer, Script};

    const KEY: &str = "sk-ant-scripted-0123456789abcdefghij";
    let Some(installed) = Cli::Claude.installed() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let init = valp_tests::cli::valp_in(&project, None, &["init"]).unwrap();
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    let state = serde_json::json!({
        "hasCompletedOnboarding": true,
        "customApiKeyResponses": {"approved": [&KEY[KEY.len() - 20..]], "rejected": []},
        "projects": {project.display().to_string(): {"hasTrustDialogAccepted": true}},
    });
    std::fs::write(home.join(".claude.json"), state.to_string()).unwrap();
    let model = ModelServer::start(Script::tool_then_text(
        "Write",
        serde_json::json!({"file_path": project.join("hello.txt"), "content": "hello\n"}),
        "I wrote hello.txt.",
    ));
    let claude = installed.folder.join("node_modules/.bin/claude");
    let attempt = "real:stream:a1";
    // Bounded: a wait that never ends fails in 2 minutes with the wrapper's report (exit 124),
    // and claude gives up on a model request after 30 s, not its default 10 minutes.
    let output = Command::new("timeout")
        .args(["--kill-after=5", "120"])
        .arg(valp_binary().unwrap())
        .args([
            "agent",
            "run-stream",
            "claude",
            "--prompt",
            "Create hello.txt",
            "--",
        ])
        .arg(&claude)
        .args([
            "-p",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "acceptEdits",
        ])
        .current_dir(&project)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("API_TIMEOUT_MS", "30000")
        .env("VALP_CONTROL_ROOT", project.join(".valp"))
        .env("VALP_TASK_ID", "real")
        .env("VALP_WORK_ITEM_ID", "stream")
        .env("VALP_ATTEMPT_ID", attempt)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(project.join("hello.txt")).unwrap(),
        "hello\n"
    );
    let signals =
        valp_runtime::agent::channel::inbox::read(&project.join(".valp"), attempt).unwrap();
    let kinds: Vec<&str> = signals.iter().map(|signal| signal.kind.as_str()).collect();
    eprintln!("claude {} stream signals: {kinds:?}", installed.version);
    for kind in [
        "session_started",
        "tool_requested",
        "tool_completed",
        "turn_completed",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}; {stderr}");
    }
    let requested = signals
        .iter()
        .find(|signal| signal.kind.as_str() == "tool_requested")
        .unwrap();
    assert_eq!(requested.tool_name.as_deref(), Some("Write"));
    // The model saw exactly the prompt the wrapper sent.
    assert!(
        model.requests().iter().any(|request| request
            .user_texts()
            .iter()
            .any(|text| text == "Create hello.txt")),
        "the prompt did not reach the model"
    );
    assert!(stderr.contains("; interrupts: none"), "{stderr}");
}
