//! The agent-channel bridge driven through the real `valp` binary with the recorded hook and
//! notify payloads of `tests/fixtures/agent-channels/` (see its README for their origin):
//! signals recorded per attempt in order, submission digests, unknown and malformed payloads,
//! the no-op without the adapter's environment, permission requests answered by the Leader or
//! by the timeout (never allow), stale decisions, and the hook's latency.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use valp_kernel::canonical::sha256_digest;
use valp_runtime::abi::attempt_folder;
use valp_tests::cli::Run;
use valp_tests::project::{Project, external_item, plan};
use valp_tests::schemas::{errors, validator};
use valp_tests::{valp_binary, workspace_root};

const ATTEMPT: &str = "T-1:build:a1";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        workspace_root()
            .join("tests/fixtures/agent-channels")
            .join(name),
    )
    .unwrap()
}

/// `valp args…` as an agent runs its hook: the adapter's environment (unless `env` is false),
/// the payload on stdin.
fn hook(root: &Path, env: bool, args: &[&str], stdin: &str) -> Run {
    let mut command = Command::new(valp_binary().unwrap());
    command
        .args(args)
        .env_remove("VALP_ROOT")
        .env_remove("VALP_CONTROL_ROOT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if env {
        command
            .env("VALP_CONTROL_ROOT", root)
            .env("VALP_TASK_ID", "T-1")
            .env("VALP_WORK_ITEM_ID", "build")
            .env("VALP_ATTEMPT_ID", ATTEMPT);
    }
    let mut child = command.spawn().unwrap();
    let written = child.stdin.take().unwrap().write_all(stdin.as_bytes());
    // A hook that needs no payload (no adapter environment) may exit before reading it.
    if let Err(error) = written {
        assert_eq!(error.kind(), std::io::ErrorKind::BrokenPipe, "{error}");
    }
    child.wait_with_output().unwrap().into()
}

fn signals(root: &Path) -> Vec<Value> {
    let path = signal_path(root);
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn signal_path(root: &Path) -> PathBuf {
    root.join(format!(
        "inbox/agent-signals/{}.jsonl",
        attempt_folder(ATTEMPT)
    ))
}

fn initialised() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let run = valp_tests::cli::valp_in(dir.path(), None, &["init"]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    dir
}

#[test]
fn without_the_adapters_environment_the_hook_records_nothing_and_exits_0() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let run = hook(
        &root,
        false,
        &["hook", "claude"],
        &fixture("claude/stop.json"),
    );
    assert_eq!(run.code, Some(0));
    assert_eq!(
        run.stderr,
        "valp hook claude: not started by valp for an attempt (VALP_CONTROL_ROOT, VALP_TASK_ID, \
         VALP_WORK_ITEM_ID, VALP_ATTEMPT_ID not set); nothing recorded\n"
    );
    assert!(!root.join("inbox/agent-signals").exists());
    // A folder that is not a control root is refused the same way.
    let mut command = Command::new(valp_binary().unwrap());
    let output = command
        .args(["hook", "claude", &fixture("claude/stop.json")])
        .env("VALP_CONTROL_ROOT", dir.path())
        .env("VALP_TASK_ID", "T-1")
        .env("VALP_WORK_ITEM_ID", "build")
        .env("VALP_ATTEMPT_ID", ATTEMPT)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "valp hook claude: {} is not a valp control root (no installation.json); nothing \
             recorded\n",
            dir.path().display()
        )
    );
}

#[test]
fn a_claude_session_becomes_signals_in_order() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let session = [
        ("claude/session-start.json", "session_started"),
        ("claude/user-prompt-submit.json", "prompt_submitted"),
        ("claude/pre-tool-use.json", "tool_requested"),
        (
            "claude/notification-permission-prompt.json",
            "permission_prompt",
        ),
        ("claude/notification-elicitation.json", "elicitation"),
        ("claude/stop.json", "turn_completed"),
        ("claude/notification-idle-prompt.json", "idle_prompt"),
        ("claude/unknown-subagent-stop.json", "opaque"),
        ("claude/stop-failure.json", "turn_failed"),
        ("claude/session-end.json", "session_ended"),
    ];
    for (file, _) in session {
        let run = hook(&root, true, &["hook", "claude"], &fixture(file));
        assert_eq!(
            (run.code, run.stderr.as_str(), run.stdout.as_str()),
            (Some(0), "", ""),
            "{file}"
        );
    }
    let recorded = signals(&root);
    let schema = validator("console/agent-signal.schema.json");
    for (index, ((file, kind), signal)) in session.iter().zip(&recorded).enumerate() {
        assert_eq!(signal["kind"], *kind, "{file}");
        assert_eq!(signal["sequence"], index as u64 + 1);
        assert_eq!(signal["channel"], "claude_hook");
        assert_eq!(signal["task_id"], "T-1");
        assert_eq!(signal["session_id"], "3f1c2a9e-claude-session");
        assert_eq!(
            signal["payload_digest"],
            sha256_digest(fixture(file).as_bytes())
        );
        assert_eq!(errors(&schema, signal), Vec::<String>::new(), "{file}");
    }
    assert_eq!(recorded.len(), session.len());
    // The submission carries the digest of exactly the prompt text.
    assert_eq!(
        recorded[1]["prompt_digest"],
        sha256_digest(b"Write hello.txt containing hello")
    );
    assert_eq!(recorded[2]["tool_use_id"], "toolu_01ABC");
    assert_eq!(recorded[2]["summary"], "Write: /work/app/hello.txt");
    assert_eq!(recorded[7]["event"], "SubagentStop");
    let listed =
        valp_tests::cli::valp_in(dir.path(), None, &["agent", "signals", ATTEMPT]).unwrap();
    assert_eq!(listed.code, Some(0), "{}", listed.stderr);
    let lines: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(lines.len(), session.len() + 2);
    assert!(
        lines[1].ends_with(" claude_hook prompt_submitted: prompt submitted (32 bytes)"),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[session.len()],
        "state: exited (from claude_hook:session_ended#10; the screen is read by the tmux adapter, not here)"
    );
    assert_eq!(
        lines[session.len() + 1],
        "cost: unknown micro-USD; tokens: unknown in, unknown out"
    );
}

#[test]
fn codex_hooks_and_notify_become_signals() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    for file in [
        "codex/session-start.json",
        "codex/user-prompt-submit.json",
        "codex/pre-tool-use.json",
        "codex/post-tool-use.json",
        "codex/stop.json",
    ] {
        let run = hook(&root, true, &["hook", "codex"], &fixture(file));
        assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{file}");
    }
    // Codex passes the notify payload as the last argument.
    let payload = fixture("codex/notify-agent-turn-complete.json");
    let run = hook(&root, true, &["notify", "codex", payload.trim_end()], "");
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""));
    let kinds: Vec<String> = signals(&root)
        .iter()
        .map(|s| {
            format!(
                "{}:{}",
                s["channel"].as_str().unwrap(),
                s["kind"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "codex_hook:session_started",
            "codex_hook:prompt_submitted",
            "codex_hook:tool_requested",
            "codex_hook:tool_completed",
            "codex_hook:turn_completed",
            "codex_notify:turn_completed",
        ]
    );
    assert_eq!(signals(&root)[5]["session_id"], "0199a1b2-codex-thread");
}

#[test]
fn malformed_payloads_are_listed_rejections_and_never_fail_the_agent() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let rejected = format!(
        "runtime/agent-channel/{}/rejected.jsonl",
        attempt_folder(ATTEMPT)
    );
    let run = hook(
        &root,
        true,
        &["hook", "claude"],
        &fixture("claude/malformed-truncated.json"),
    );
    assert_eq!(run.code, Some(0));
    assert_eq!(
        run.stderr,
        format!(
            "valp hook claude: rejected (not_json): not JSON: control character (\\u0000-\\u001F) \
             found while parsing a string at line 2 column 0; listed in {rejected}\n"
        )
    );
    let run = hook(
        &root,
        true,
        &[
            "notify",
            "codex",
            fixture("codex/notify-malformed-no-type.json").trim_end(),
        ],
        "",
    );
    assert_eq!(
        run.stderr,
        format!(
            "valp notify codex: rejected (no_event): no event name: `type` must be a string; \
             listed in {rejected}\n"
        )
    );
    let listed: Vec<Value> = std::fs::read_to_string(root.join(&rejected))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        listed
            .iter()
            .map(|l| l["code"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["not_json", "no_event"]
    );
    assert!(signals(&root).is_empty(), "nothing recorded as a signal");
}

#[test]
fn a_permission_request_without_a_decision_is_denied_never_allowed() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let started = Instant::now();
    let run = hook(
        &root,
        true,
        &["hook", "claude", "--wait-ms", "300"],
        &fixture("claude/permission-request.json"),
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""));
    let answer: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "PermissionRequest"
    );
    assert_eq!(answer["hookSpecificOutput"]["decision"]["behavior"], "deny");
    // With --on-timeout ask, nothing is answered: the agent shows its own prompt.
    let run = hook(
        &root,
        true,
        &["hook", "codex", "--wait-ms", "50", "--on-timeout", "ask"],
        &fixture("codex/permission-request.json"),
    );
    assert_eq!((run.code, run.stdout.as_str()), (Some(0), ""));
    let kinds: Vec<Value> = signals(&root).iter().map(|s| s["kind"].clone()).collect();
    assert_eq!(
        kinds,
        [
            "permission_requested",
            "permission_answered",
            "permission_requested",
            "permission_answered"
        ]
    );
    let recorded = signals(&root);
    assert_eq!(recorded[1]["summary"], "denied after the timeout");
    assert_eq!(
        recorded[3]["summary"],
        "left to the agent's own prompt (an answer there is unattributed) after the timeout"
    );
    let approvals = validator("console/agent-approval.schema.json");
    let folder = root.join(format!(
        "runtime/agent-channel/{}/approvals",
        attempt_folder(ATTEMPT)
    ));
    for entry in std::fs::read_dir(folder).unwrap() {
        let value: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        assert_eq!(errors(&approvals, &value), Vec::<String>::new());
    }
}

/// A project with the Leader selected and task T-1 (one external item, `build`) published.
fn project_with_task() -> Project {
    let project = Project::new();
    project.publish("t1", &plan("T-1", &external_item("build", &[], &["log"])));
    project
}

/// The records of T-1's operator-action journal.
fn actions(root: &Path) -> Vec<Value> {
    std::fs::read_to_string(root.join("tasks/T-1/actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["entry"].clone())
        .collect()
}

fn verified_clean(project: &Project) {
    let verified = project.valp(&["verify"]);
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);
    assert!(
        verified.stdout.ends_with(", 0 problems\n"),
        "{}",
        verified.stdout
    );
}

/// The Leader's decision from the command line reaches the waiting hook, and is in the task's
/// operator-action journal with the decider, then its delivery; a decision after the hook
/// answered is refused as stale.
#[test]
fn the_leaders_approval_reaches_the_agent_and_a_late_one_is_stale() {
    let project = project_with_task();
    let root = project.control_root();
    let waiting = {
        let root = root.clone();
        std::thread::spawn(move || {
            hook(
                &root,
                true,
                &["hook", "claude", "--wait-ms", "20000"],
                &fixture("claude/permission-request.json"),
            )
        })
    };
    let request = loop {
        let listed = project.valp(&["agent", "requests", "T-1"]);
        if let Some(id) = listed
            .stdout
            .split_whitespace()
            .find(|w| w.starts_with("perm-"))
        {
            assert!(
                listed
                    .stdout
                    .contains("claude Write: /work/app/hello.txt  [pending until "),
                "{}",
                listed.stdout
            );
            break id.to_owned();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let approved = project.valp(&["agent", "approve", "T-1", &request]);
    assert_eq!(approved.code, Some(0), "{}", approved.stderr);
    assert!(
        approved.stdout.starts_with(&format!(
            "delivered: request {request} answered allow by the Leader's decision ("
        )),
        "{}",
        approved.stdout
    );
    let answered = waiting.join().unwrap();
    let answer: Value = serde_json::from_str(&answered.stdout).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );
    assert!(!root.join("runtime/agent-channel/decisions.jsonl").exists());
    let records = actions(&root);
    assert_eq!(records.len(), 2, "{records:?}");
    let decision_record = &records[0];
    let decision_id = format!("{request}/decision");
    assert_eq!(decision_record["kind"], "approval_decision");
    assert_eq!(decision_record["action_id"], decision_id.as_str());
    assert_eq!(decision_record["answers"], request.as_str());
    assert_eq!(decision_record["decision"], "allow");
    assert_eq!(decision_record["attempt_id"], ATTEMPT);
    assert_eq!(decision_record["work_item_id"], "build");
    assert_eq!(decision_record["leader_epoch"], 1);
    assert!(
        decision_record["task_revision"].as_i64().unwrap() >= 1,
        "{decision_record}"
    );
    let decider = decision_record["principal_id"].as_str().unwrap();
    assert!(
        approved.stdout.contains(&format!("({decider} from ")),
        "{decider} {}",
        approved.stdout
    );
    let delivered = &records[1];
    assert_eq!(delivered["kind"], "delivery");
    assert_eq!(delivered["delivery"]["action_id"], decision_id.as_str());
    assert_eq!(delivered["delivery"]["adapter"], "hook");
    assert_eq!(delivered["delivery"]["outcome"], "delivered");
    verified_clean(&project);
    // The same request again: the hook answered, the decision is stale.
    let again = project.valp(&["agent", "deny", "T-1", &request]);
    assert_eq!(again.code, Some(2));
    assert!(
        again.stderr.starts_with(&format!(
            "valp: stale: request {request} was already answered (allow by the Leader's decision at "
        )),
        "{}",
        again.stderr
    );
}

/// A hook's timeout answer that beats a recorded decision (simulated: the answer file is
/// written as soon as the decision file appears) leaves the decision and a `failed` delivery,
/// and the command reports it stale.
#[test]
fn a_decision_beaten_by_the_timeout_is_recorded_as_failed_delivery() {
    let project = project_with_task();
    let root = project.control_root();
    // A real request from the hook (answered by its 1 ms timeout), copied as a pending one.
    let first = hook(
        &root,
        true,
        &["hook", "claude", "--wait-ms", "1"],
        &fixture("claude/permission-request.json"),
    );
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let dir = root.join(format!(
        "runtime/agent-channel/{}/approvals",
        attempt_folder(ATTEMPT)
    ));
    let original = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with(".request.json"))
        .unwrap();
    let mut request: Value = serde_json::from_slice(&std::fs::read(&original).unwrap()).unwrap();
    let id = "perm-00000000000000ff";
    request["request_id"] = id.into();
    // The hook's own deadline format, far in the future.
    let deadline = request["deadline"].as_str().unwrap();
    request["deadline"] = format!("2999{}", &deadline[4..]).into();
    std::fs::write(
        dir.join(format!("{id}.request.json")),
        format!("{request}\n"),
    )
    .unwrap();
    let racer = {
        let dir = dir.clone();
        std::thread::spawn(move || {
            let decision = dir.join(format!("{id}.decision.json"));
            let started = Instant::now();
            while !decision.exists() {
                if started.elapsed() > Duration::from_secs(20) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let answer = serde_json::json!({
                "answer": "deny",
                "answered_at": "2026-01-01T00:00:00Z",
                "by": "timeout",
                "decision_digest": null,
                "request_id": id,
                "schema_version": "valp-agent-approval-answer.v1",
            });
            // Like the hook, the answer appears whole (written aside, then renamed): the
            // command must never read a half-written answer.
            let temporary = dir.join(format!("{id}.answer.json.tmp"));
            std::fs::write(&temporary, format!("{answer}\n")).unwrap();
            std::fs::rename(&temporary, dir.join(format!("{id}.answer.json"))).unwrap();
        })
    };
    let approved = project.valp(&["agent", "approve", "T-1", id]);
    racer.join().unwrap();
    assert_eq!(approved.code, Some(2), "{}", approved.stderr);
    assert_eq!(
        approved.stderr,
        format!(
            "valp: stale: request {id} was already answered (deny by timeout at \
             2026-01-01T00:00:00Z); the decision is refused\n"
        )
    );
    let records = actions(&root);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0]["kind"], "approval_decision");
    assert_eq!(records[0]["answers"], id);
    assert_eq!(records[1]["kind"], "delivery");
    assert_eq!(records[1]["delivery"]["outcome"], "failed");
    assert_eq!(
        records[1]["delivery"]["action_id"],
        format!("{id}/decision").as_str()
    );
    verified_clean(&project);
}

#[test]
fn without_a_leader_nobody_can_decide() {
    let dir = initialised();
    let run = valp_tests::cli::valp_in(
        dir.path(),
        None,
        &[
            "--no-default-sockets",
            "agent",
            "approve",
            "T-1",
            "perm-0000000000000000",
        ],
    )
    .unwrap();
    assert_eq!(run.code, Some(1));
    assert_eq!(
        run.stderr,
        "valp: no Leader is bound: select one first (`valp leader select`)\n"
    );
}

/// The hook's own latency when no decision is needed, measured over 200 runs of the whole
/// command (process start included). Prints p50/p99; asserts only a bound loose enough for a
/// debug build on a loaded machine (the figure in the report comes from the print).
#[test]
fn the_hook_returns_fast_when_no_decision_is_needed() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let payload = fixture("claude/stop.json");
    let mut times: Vec<Duration> = (0..200)
        .map(|_| {
            let started = Instant::now();
            let run = hook(&root, true, &["hook", "claude"], &payload);
            assert_eq!(run.code, Some(0));
            started.elapsed()
        })
        .collect();
    times.sort();
    let (p50, p99) = (times[100], times[197]);
    eprintln!("valp hook claude (Stop), 200 runs: p50 {p50:?}, p99 {p99:?}");
    assert_eq!(signals(&root).len(), 200);
    assert!(p99 < Duration::from_millis(500), "p99 {p99:?}");
}

/// The demo agent in real tmux, calling `valp hook claude` as Claude would: the tmux adapter's
/// submission is acknowledged by the agent's own `UserPromptSubmit` carrying the pasted
/// prompt's digest (content-bound), and the channel's state follows the turn.
#[test]
fn the_demo_agents_hooks_acknowledge_a_tmux_submission_by_content() {
    use valp_runtime::adapter::tmux::pane::Pane;
    use valp_runtime::adapter::tmux::submit::{Submission, submit};
    use valp_runtime::agent::channel::inbox;
    use valp_runtime::agent::channel::precedence::{Acknowledgement, acknowledgement, resolve};
    use valp_runtime::agent::profile::{AgentState, Profile};
    use valp_runtime::clock::{Clock as _, SystemClock};
    use valp_tests::tmux::{PATIENCE, TmuxServer, tmux_at};

    let dir = initialised();
    let root = dir.path().join(".valp");
    let valp = valp_binary().unwrap();
    let valp = valp.to_str().unwrap();
    let hook_command = format!("'{valp}' hook claude");
    let control_root = format!("VALP_CONTROL_ROOT={}", root.display());
    let server = TmuxServer::start(
        &dir.path().join("sock"),
        "agents",
        dir.path(),
        &[
            "env",
            &control_root,
            "VALP_TASK_ID=T-1",
            "VALP_WORK_ITEM_ID=build",
            &format!("VALP_ATTEMPT_ID={ATTEMPT}"),
            valp,
            "demo-agent",
            "--seed",
            "9",
            "--ask",
            "never",
            "--hook-command",
            &hook_command,
        ],
    );
    let id = tmux_at(
        server.socket(),
        &["display-message", "-p", "-t", "agents", "#{pane_id}"],
    );
    let pane = Pane::new(
        Path::new("tmux"),
        server.socket(),
        String::from_utf8_lossy(&id.stdout).trim(),
        Duration::from_secs(5),
    );
    let profile = Profile::builtin("demo").unwrap();
    let before = SystemClock.now();
    let prompt = "write @out.txt with 'quotes' and $(no expansion)";
    let submission = submit(&pane, &profile, prompt, dir.path(), PATIENCE).unwrap();
    let Submission::Proven(proof) = submission else {
        panic!("{submission:?}")
    };
    let started = Instant::now();
    loop {
        let signals = inbox::read(&root, ATTEMPT).unwrap();
        let done = signals.iter().any(|s| s.kind.as_str() == "turn_completed");
        if done {
            assert_eq!(signals[0].kind.as_str(), "session_started");
            assert_eq!(
                acknowledgement(&signals, &proof.prompt, before),
                Some(Acknowledgement::ContentBound { sequence: 2 })
            );
            let viewed = resolve(
                &signals,
                None,
                SystemClock.now(),
                profile.channel_silence_ms,
            );
            assert_eq!(viewed.state, AgentState::Idle);
            assert_eq!(viewed.source.label(), "claude_hook:turn_completed#3");
            break;
        }
        assert!(started.elapsed() < PATIENCE, "no Stop hook: {signals:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Headless transcripts: turns, tool calls, cost (micro-USD), tokens, errors and the result
/// become signals; partial output becomes nothing; the totals say "unknown" only when no
/// signal said.
#[test]
fn stream_transcripts_become_signals_with_cost_and_tokens() {
    let dir = initialised();
    let root = dir.path().join(".valp");
    let transcript = workspace_root().join("tests/fixtures/agent-channels/claude/stream.jsonl");
    let mut command = Command::new(valp_binary().unwrap());
    let output = command
        .args(["agent", "stream", "claude", transcript.to_str().unwrap()])
        .env("VALP_CONTROL_ROOT", &root)
        .env("VALP_TASK_ID", "T-1")
        .env("VALP_WORK_ITEM_ID", "build")
        .env("VALP_ATTEMPT_ID", ATTEMPT)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("recorded 5 signals for attempt {ATTEMPT}; 0 lines rejected\n")
    );
    let recorded = signals(&root);
    let kinds: Vec<&str> = recorded
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "tool_requested",
            "tool_completed",
            "turn_completed",
            "turn_failed"
        ]
    );
    assert_eq!(recorded[1]["tool_use_id"], "toolu_01XYZ");
    assert_eq!(recorded[2]["tool_use_id"], "toolu_01XYZ");
    assert_eq!(recorded[3]["cost_micro_usd"], 12_346);
    assert_eq!(recorded[3]["input_tokens"], 300);
    assert_eq!(recorded[3]["output_tokens"], 52);
    assert_eq!(recorded[4]["cost_micro_usd"], 50_000);
    let listed =
        valp_tests::cli::valp_in(dir.path(), None, &["agent", "signals", ATTEMPT]).unwrap();
    assert!(
        listed
            .stdout
            .ends_with("cost: 62346 micro-USD; tokens: 1300 in, 252 out\n"),
        "{}",
        listed.stdout
    );

    // Codex: piped on stdin, under another attempt.
    let transcript = fixture("codex/exec.jsonl") + "not json\n";
    let mut child = Command::new(valp_binary().unwrap())
        .args(["agent", "stream", "codex"])
        .env("VALP_CONTROL_ROOT", &root)
        .env("VALP_TASK_ID", "T-1")
        .env("VALP_WORK_ITEM_ID", "build")
        .env("VALP_ATTEMPT_ID", "T-1:build:a2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(transcript.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "line 11: rejected (not_json): not JSON: expected ident at line 1 column 2\n\
         recorded 8 signals for attempt T-1:build:a2; 1 lines rejected\n"
    );
    let codex: Vec<String> = valp_runtime::agent::channel::inbox::read(&root, "T-1:build:a2")
        .unwrap()
        .iter()
        .map(|s| s.kind.as_str().to_owned())
        .collect();
    assert_eq!(
        codex,
        [
            "session_started",
            "turn_started",
            "tool_requested",
            "tool_completed",
            "turn_completed",
            "turn_started",
            "opaque",
            "turn_failed"
        ]
    );
    let listed =
        valp_tests::cli::valp_in(dir.path(), None, &["agent", "signals", "T-1:build:a2"]).unwrap();
    assert!(
        listed
            .stdout
            .ends_with("cost: unknown micro-USD; tokens: 2400 in, 60 out\n"),
        "{}",
        listed.stdout
    );
}

/// Hook invocation → the signal's row in the console's live feed (the `notify` watcher the
/// console runs), over 100 hooks: prints p50/p99; asserts only that every row arrived.
#[test]
fn a_hooks_signal_reaches_the_console_feed() {
    use std::sync::mpsc;

    use valp_runtime::system::feed::Feed;

    let dir = initialised();
    let root = dir.path().join(".valp");
    let (woken, wakes) = mpsc::channel();
    let feed = Feed::start(&root, move || woken.send(()).is_ok()).unwrap();
    let payload = fixture("claude/stop.json");
    let mut times = Vec::new();
    for n in 1..=100 {
        let started = Instant::now();
        let run = hook(&root, true, &["hook", "claude"], &payload);
        assert_eq!(run.code, Some(0));
        loop {
            let (rows, rejections) = feed.rows();
            assert!(rejections.is_empty(), "{rejections:?}");
            if rows
                .iter()
                .any(|row| row.sequence == n && row.status == "agent turn_completed")
            {
                break;
            }
            wakes
                .recv_timeout(Duration::from_secs(10))
                .expect("the feed saw the signal");
        }
        times.push(started.elapsed());
    }
    times.sort();
    eprintln!(
        "hook -> console feed row, 100 hooks: p50 {:?}, p99 {:?}",
        times[50], times[98]
    );
}

/// `valp agent setup`: prints the settings, writes them only when confirmed, removes them.
#[test]
fn setup_writes_confirmed_settings_and_removes_them() {
    let dir = initialised();
    let file = dir
        .path()
        .join(".valp/runtime/agent-channel/claude-settings.json");
    let printed =
        valp_tests::cli::valp_in(dir.path(), None, &["agent", "setup", "claude"]).unwrap();
    assert_eq!(printed.code, Some(0), "{}", printed.stderr);
    assert!(
        printed.stdout.contains("\"PermissionRequest\""),
        "{}",
        printed.stdout
    );
    assert!(!file.exists(), "printing writes nothing");
    let refused = valp_tests::cli::valp_answering(
        dir.path(),
        dir.path(),
        &["agent", "setup", "claude", "--write"],
        "no\n",
    )
    .unwrap();
    assert_eq!(refused.code, Some(2));
    assert!(!file.exists());
    let written = valp_tests::cli::valp_in(
        dir.path(),
        None,
        &["agent", "setup", "claude", "--write", "--yes"],
    )
    .unwrap();
    assert_eq!(written.code, Some(0), "{}", written.stderr);
    assert!(
        written
            .stdout
            .ends_with("wrote runtime/agent-channel/claude-settings.json\n")
    );
    let settings: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(command.ends_with("' hook claude"), "{command}");
    let codex = valp_tests::cli::valp_in(dir.path(), None, &["agent", "setup", "codex"]).unwrap();
    assert!(
        codex.stdout.contains(
            "the codex hook channel is OFF unless codex runs with --dangerously-bypass-hook-trust"
        ),
        "{}",
        codex.stdout
    );
    let removed = valp_tests::cli::valp_in(
        dir.path(),
        None,
        &["agent", "setup", "claude", "--remove", "--yes"],
    )
    .unwrap();
    assert_eq!(
        removed.stdout,
        "removed runtime/agent-channel/claude-settings.json\n"
    );
    assert!(!file.exists());
}
