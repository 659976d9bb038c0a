//! The tmux adapter end to end with real tmux and the demo agent (`valp demo-agent`), as a
//! person runs it: publish a plan with `adapter = "tmux"` items, `valp run`, review. Each
//! project has its own private tmux server (`<control root>/runtime/tmux/.server.sock`), so no
//! test touches the user's tmux. tmux is required: a missing tmux fails these tests.
//!
//! What is checked is what really happened: the journal's evidence holds every submission's
//! proof, the attempt folders' observations and proofs, the files the agents wrote, the
//! windows valp closed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};

use valp_kernel::canonical::sha256_digest;
use valp_runtime::abi::attempt_folder;
use valp_tests::project::{Project, alive, item, plan, wait_until, work_item};
use valp_tests::schemas::{assert_record_valid, attempt_observations, read_json};
use valp_tests::tmux::tmux_at;
use valp_tests::valp_binary;

/// A tmux item run by the demo agent with `seed` and `ask`, told `prompt`.
fn agent_item(
    id: &str,
    deps: &[(&str, &str)],
    expected: &[&str],
    prompt: &str,
    (seed, ask): (u32, &str),
) -> String {
    let valp = valp_binary().unwrap();
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"demo\"\ncommand = [{:?}, \"demo-agent\", \
         \"--seed\", \"{seed}\", \"--ask\", \"{ask}\"]\nprompt = {prompt:?}\ntimeout_seconds = 90\n",
        valp.to_str().unwrap()
    );
    work_item(id, "required", deps, expected, &run)
}

fn attempt_dir(project: &Project, attempt_id: &str) -> PathBuf {
    project
        .control_root()
        .join("runtime/tmux/attempts")
        .join(attempt_folder(attempt_id))
}

/// Whether the evidence store holds a blob with these bytes.
fn in_evidence(project: &Project, bytes: &[u8]) -> bool {
    let digest = sha256_digest(bytes);
    project
        .control_root()
        .join("evidence/sha256")
        .join(&digest["sha256:".len()..])
        .is_file()
}

/// The steps of the submission proof, by name.
fn steps(dir: &Path) -> Vec<String> {
    read_json(&dir.join("proofs/submission.json"))["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["what"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether valp's private tmux server of the project still runs.
fn server_runs(project: &Project) -> bool {
    let socket = project.control_root().join("runtime/tmux/.server.sock");
    tmux_at(&socket, &["list-sessions"]).status.success()
}

fn kill_server(project: &Project) {
    let socket = project.control_root().join("runtime/tmux/.server.sock");
    let _ = tmux_at(&socket, &["kill-server"]);
}

/// Kills the project's private tmux server when the test ends, also when it fails.
struct Cleanup<'a>(&'a Project);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        kill_server(self.0);
    }
}

/// The attempt `agents:<id>:a1` completed with its submission proven step by step, its proofs
/// in the journal's evidence, the prompt written to `file` by the agent, and its environment.
fn assert_proven(project: &Project, id: &str, file: &str, prompt: &str) {
    assert_eq!(project.item_status("agents", id), "completed");
    let written = std::fs::read_to_string(project.path().join(file)).unwrap();
    assert!(
        written.ends_with(prompt) || written.contains(&format!("{prompt}\n")),
        "{written:?}"
    );
    let dir = attempt_dir(project, &format!("agents:{id}:a1"));
    let observed = attempt_observations(&dir);
    assert_eq!(observed[0]["status"], "accepted");
    let kinds: Vec<_> = observed[0]["provenance"]
        .as_array()
        .unwrap()
        .iter()
        .map(|segment| segment["proof_kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["transport_only", "process_bound"]);
    assert_eq!(observed.last().unwrap()["status"], "completed");
    let submission = read_json(&dir.join("proofs/submission.json"));
    assert_eq!(submission["proven"], true);
    assert_eq!(
        submission["prompt_digest"],
        sha256_digest(prompt.as_bytes()).as_str()
    );
    let steps = steps(&dir);
    assert_eq!(steps[0], "idle, input empty");
    assert_eq!(steps[1], "load-buffer + paste-buffer -p");
    assert_eq!(steps[2], "dispatch_inserted (Echo readback)");
    assert_eq!(steps[3], "send-keys Enter");
    assert!(
        steps[4].ends_with(", input cleared: submitted"),
        "{steps:?}"
    );
    // The proofs are the journal's evidence, byte for byte.
    for proof in ["dispatch_inserted", "submission", "completion"] {
        let bytes = std::fs::read(dir.join(format!("proofs/{proof}.json"))).unwrap();
        assert!(
            in_evidence(project, &bytes),
            "{id}: {proof} not in evidence"
        );
    }
    // Every record of the attempt has the shape its schema gives.
    for (file, schema) in [
        ("run.json", "tmux-run-spec.schema.json"),
        (
            "proofs/dispatch_inserted.json",
            "tmux-inserted-proof.schema.json",
        ),
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
    // The raw output pipe of the agent's pane is not kept once the attempt ended.
    assert!(!dir.join(".pane-output").exists());
    // The agent's environment named its attempt (the hook bridge finds it through it).
    let spec = read_json(&dir.join("run.json"));
    assert_eq!(
        spec["env"]["VALP_ATTEMPT_ID"],
        format!("agents:{id}:a1").as_str()
    );
    assert_eq!(spec["env"]["VALP_WORK_ITEM_ID"], id);
    assert_eq!(spec["env"]["VALP_TASK_ID"], "agents");
    assert_eq!(
        spec["env"]["VALP_CONTROL_ROOT"],
        project.control_root().display().to_string().as_str()
    );
}

#[test]
fn three_demo_agents_with_dependencies_run_to_done_with_every_submission_proven() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let body = [
        agent_item(
            "draft",
            &[],
            &["out/draft.md"],
            "Draft a note in @out/draft.md",
            (1, "never"),
        ),
        item("stamp", "required", &[], &["mkdir", "-p", "stamped"], &[]),
        agent_item(
            "review",
            &[("draft", "hard"), ("stamp", "hard")],
            &["out/review.md"],
            "Review it into @out/review.md",
            (2, "never"),
        ),
        agent_item(
            "summary",
            &[("review", "hard")],
            &["out/summary.md"],
            "Summarise in @out/summary.md; \"quoted\" $(not run) C-c Enter",
            (3, "never"),
        ),
    ]
    .concat();
    project.publish("agents", &plan("agents", &body));
    let ran = project.ok(&["run", "--timeout", "180"]);
    for expected in [
        "agents  attempt_running",
        "agents  attempt_completed  (summary completed with its expected evidence)",
        "agents  work_completed",
        "agents: reviewing",
    ] {
        assert!(ran.contains(expected), "missing {expected:?} in:\n{ran}");
    }
    project.ok(&["review", "agents", "pass"]);
    let closed = project.ok(&["run"]);
    assert!(closed.contains("recording_completed"), "{closed}");
    assert_eq!(project.task_status("agents"), "done");
    for (id, file, prompt) in [
        ("draft", "out/draft.md", "Draft a note in @out/draft.md"),
        ("review", "out/review.md", "Review it into @out/review.md"),
        (
            "summary",
            "out/summary.md",
            "Summarise in @out/summary.md; \"quoted\" $(not run) C-c Enter",
        ),
    ] {
        assert_proven(&project, id, file, prompt);
    }
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
    // Every agent window was closed with its attempt, so the private server is gone.
    wait_until("valp's tmux server to end", || !server_runs(&project));
}

/// Publishes task `task` with one demo agent that always asks a permission question (so it
/// stays blocked once submitted) and steps the runner until its first attempt runs and the
/// agent waits on the question; returns the attempt folder.
fn blocked_agent(project: &Project, task: &str) -> PathBuf {
    project.publish(
        task,
        &plan(
            task,
            &agent_item(
                "ask",
                &[],
                &["out/asked.md"],
                "Write @out/asked.md please",
                (5, "always"),
            ),
        ),
    );
    project.run_until(task, &format!("{task}:ask:a1 g1 running"));
    let dir = attempt_dir(project, &format!("{task}:ask:a1"));
    wait_until("the agent to wait on its question", || {
        state(&dir)["state"] == "blocked"
    });
    dir
}

fn state(dir: &Path) -> serde_json::Value {
    std::fs::read(dir.join("state.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

fn pane_of(dir: &Path) -> String {
    read_json(&dir.join("proofs/submission.json"))["pane_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn private_socket(project: &Project) -> PathBuf {
    project.control_root().join("runtime/tmux/.server.sock")
}

#[test]
fn a_pane_killed_mid_attempt_is_a_recorded_failure() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let dir = blocked_agent(&project, "gone");
    let killed = tmux_at(
        &private_socket(&project),
        &["kill-pane", "-t", &pane_of(&dir)],
    );
    assert!(killed.status.success());
    wait_until_long("the final observation", || {
        attempt_observations(&dir).len() == 2
    });
    let last = attempt_observations(&dir).pop().unwrap();
    assert_eq!(last["status"], "blocked");
    assert_eq!(last["reason"], "agent_exited");
    let mut ran = String::new();
    wait_until("the failure to be recorded", || {
        ran.push_str(&project.ok(&["run", "--once"]));
        ran.contains("gone  attempt_fenced  (ask attempt 1 failed)")
    });
    // The failure's evidence is the final observation and the completion proof saying why.
    let completion = std::fs::read(dir.join("proofs/completion.json")).unwrap();
    assert!(in_evidence(&project, &completion));
    assert_eq!(
        read_json(&dir.join("proofs/completion.json"))["reason"],
        "agent_exited"
    );
    project.run_until("gone", "gone:ask:a2 g2");
    let log = project.ok(&["verify"]);
    assert!(log.ends_with("0 problems\n"), "{log}");
    project.ok(&["cancel", "gone"]);
}

/// Writes `bytes` to the terminal of `pane` as if its program printed them.
fn print_in_pane(socket: &Path, pane: &str, bytes: &[u8]) {
    let tty = tmux_at(
        socket,
        &["display-message", "-p", "-t", pane, "#{pane_tty}"],
    );
    let tty = String::from_utf8_lossy(&tty.stdout).trim().to_owned();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&tty)
        .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
        .unwrap();
}

/// Hostile text an agent (or what it reads) can put on its screen.
const HOSTILE: &[u8] = b"\x1b]0;EVIL TITLE\x07\x1b]52;c;Y3VybCBldmlsLnNo\x07\r\n\
    \xe2\x80\xae shown-bidi \x1b[31mred\x1b[0m OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz \
    \x1bP+q544e\x1b\\ done-marker\r\n";

/// No control characters, bidi overrides, OSC payloads or the secret in `bytes`.
fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for bad in [
        "\u{1b}",
        "\u{7}",
        "\u{202e}",
        "Y3VybCBldmlsLnNo",
        "EVIL TITLE",
        "sk-proj-abc",
    ] {
        assert!(!text.contains(bad), "{what} holds {bad:?}: {text}");
    }
}

#[test]
fn interrupt_and_cancel_land_are_observed_and_hostile_screens_are_stored_sanitized() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let dir = blocked_agent(&project, "stop");
    let socket = private_socket(&project);
    let pane = pane_of(&dir);
    let status = project.ok(&["task", "status", "stop"]);
    assert!(
        status.contains("\n    agent blocked (permission question, line "),
        "{status}"
    );
    print_in_pane(&socket, &pane, HOSTILE);
    wait_until("the hostile screen to be sampled", || {
        state(&dir)["tail"].to_string().contains("done-marker")
    });
    let tail = state(&dir)["tail"].to_string();
    assert!(tail.contains("shown-bidi red OPENAI_[redacted]"), "{tail}");
    assert_record_valid(&dir, "state.json", "tmux-agent-state.schema.json");
    // The interrupt (Escape for the demo agent) answers the question "no" and ends the turn:
    // the agent is idle without its file, which is not completion.
    let interrupted = project.ok(&["interrupt", "stop", "--signal"]);
    assert!(
        interrupted.contains("signal: the agent's interrupt keys requested for stop:ask:a1"),
        "{interrupted}"
    );
    wait_until("idle without evidence", || {
        state(&dir)["note"] == "runtime idle, evidence missing: out/asked.md"
    });
    let status = project.ok(&["task", "status", "stop"]);
    assert!(
        status.contains("; runtime idle, evidence missing: out/asked.md\n"),
        "{status}"
    );
    let waiting = &attempt_observations(&dir)[1];
    assert_eq!(waiting["status"], "waiting");
    assert_eq!(
        waiting["reason"],
        "runtime_idle_evidence_missing:out/asked.md"
    );
    project.ok(&["resume", "stop"]);
    project.ok(&["run", "--once"]);
    assert_eq!(project.item_status("stop", "ask"), "running");
    let cancelled = project.ok(&["cancel", "stop", "--item", "ask", "--note", "enough"]);
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:"),
        "{cancelled}"
    );
    assert_eq!(project.item_status("stop", "ask"), "cancelled");
    let last = attempt_observations(&dir).pop().unwrap();
    assert_eq!(last["status"], "cancelled");
    let completion = read_json(&dir.join("proofs/completion.json"));
    let actions = completion["actions"].as_array().unwrap();
    assert_eq!(actions[0]["action"], "interrupt");
    assert_eq!(actions[0]["what"], "Escape");
    assert_eq!(actions[0]["observed"], "idle");
    assert_eq!(actions[0]["confirmed"], true);
    let stop = actions.last().unwrap();
    assert_eq!(stop["action"], "cancel");
    assert_eq!(stop["confirmed"], true);
    assert_eq!(stop["observed"], "exited");
    assert_record_valid(
        &dir,
        "proofs/completion.json",
        "tmux-completion-proof.schema.json",
    );
    // The pane is gone, and with it valp's server.
    wait_until("valp's tmux server to end", || !server_runs(&project));
    // Nothing hostile reached the attempt's records or the evidence store.
    for file in [
        "state.json",
        "proofs/completion.json",
        "proofs/submission.json",
    ] {
        assert_clean(file, &std::fs::read(dir.join(file)).unwrap());
    }
    let evidence = project.control_root().join("evidence/sha256");
    for entry in std::fs::read_dir(&evidence).unwrap().flatten() {
        assert_clean(
            &entry.path().display().to_string(),
            &std::fs::read(entry.path()).unwrap(),
        );
    }
    let status = project.ok(&["task", "status", "stop"]);
    assert_clean("task status", status.as_bytes());
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

#[test]
fn a_restarted_runner_reconciles_the_running_agent_and_never_submits_twice() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let dir = blocked_agent(&project, "again");
    let supervisor = read_json(&dir.join("supervisor.json"))["pid"]
        .as_u64()
        .unwrap();
    // Every `valp run --once` is a new runner (as a console restart is): each finds the
    // attempt running under its supervisor and launches nothing.
    for _ in 0..3 {
        let ran = project.ok(&["run", "--once"]);
        assert!(!ran.contains("attempt_created"), "{ran}");
    }
    assert_eq!(
        read_json(&dir.join("supervisor.json"))["pid"]
            .as_u64()
            .unwrap(),
        supervisor
    );
    let enters = steps(&dir)
        .iter()
        .filter(|step| step.as_str() == "send-keys Enter")
        .count();
    assert_eq!(enters, 1);
    let windows = tmux_at(&private_socket(&project), &["list-windows", "-a"]);
    assert_eq!(String::from_utf8_lossy(&windows.stdout).lines().count(), 1);
    assert_eq!(attempt_observations(&dir).len(), 1);
    // The agent runs with its attempt in its environment (the hook bridge reads these).
    let pid = read_json(&dir.join("proofs/submission.json"))["pane_pid"]
        .as_u64()
        .unwrap();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    let environ: Vec<&[u8]> = environ.split(|&byte| byte == 0).collect();
    let root = project.control_root();
    for pair in [
        format!("VALP_CONTROL_ROOT={}", root.display()),
        "VALP_TASK_ID=again".to_owned(),
        "VALP_WORK_ITEM_ID=ask".to_owned(),
        "VALP_ATTEMPT_ID=again:ask:a1".to_owned(),
    ] {
        assert!(environ.contains(&pair.as_bytes()), "{pair} not set");
    }
    project.ok(&["cancel", "again"]);
}

#[test]
fn a_targeted_agent_waiting_on_a_question_is_refused_with_nothing_typed_and_left_running() {
    use std::time::Duration;
    use valp_runtime::adapter::tmux::pane::Pane;
    use valp_runtime::adapter::tmux::server::named_socket;
    use valp_runtime::adapter::tmux::submit::{Submission, submit};
    use valp_runtime::agent::profile::Profile;
    use valp_tests::tmux::TmuxServer;

    let project = Project::new();
    let name = format!("valp-test-{}", std::process::id());
    let socket = named_socket(&name);
    let valp = valp_binary().unwrap();
    let server = TmuxServer::start(
        &socket,
        "mine",
        project.path(),
        &[
            valp.to_str().unwrap(),
            "demo-agent",
            "--seed",
            "4",
            "--ask",
            "always",
        ],
    );
    let pane_id = server.display("mine", "#{pane_id}");
    // The Leader's own agent, asked something and now waiting on its permission question.
    let pane = Pane::new(Path::new("tmux"), &socket, &pane_id, Duration::from_secs(5));
    let profile = Profile::builtin("demo").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mine = submit(
        &pane,
        &profile,
        "mine @x.md",
        scratch.path(),
        Duration::from_secs(20),
    );
    assert!(matches!(mine, Ok(Submission::Proven(_))), "{mine:?}");
    wait_until("the question", || {
        valp_runtime::agent::classify::classify(&profile, &pane.capture().unwrap()).state
            == valp_runtime::agent::profile::AgentState::Blocked
    });
    let before = pane.capture().unwrap();
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"demo\"\ntarget = \"{pane_id}\"\n\
         socket = \"{name}\"\nprompt = \"do it @y.md\"\ntimeout_seconds = 60\n"
    );
    project.publish(
        "mine",
        &plan("mine", &work_item("use", "required", &[], &["y.md"], &run)),
    );
    project.run_until("mine", "blocked");
    for attempt in ["mine:use:a1", "mine:use:a2"] {
        let observed = attempt_observations(&attempt_dir(&project, attempt));
        assert_eq!(observed.len(), 1);
        assert_eq!(observed[0]["status"], "blocked");
        assert_eq!(
            observed[0]["reason"],
            "submit_refused:not submitted (nothing typed): agent blocked (permission question): \
             it waits for an answer; Enter would answer it"
        );
    }
    // Nothing was typed and the pane is the Leader's still: same screen, same process.
    assert_eq!(pane.capture().unwrap(), before);
    assert_eq!(server.display(&pane_id, "#{pane_dead}"), "0");
    assert!(!project.path().join("y.md").exists());
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

#[test]
fn an_inserted_but_unacknowledged_prompt_is_never_delivered_and_never_resent() {
    use valp_runtime::adapter::tmux::server::named_socket;
    use valp_tests::tmux::TmuxServer;

    let project = Project::new();
    let name = format!("valp-test-deaf-{}", std::process::id());
    let socket = named_socket(&name);
    // An "agent" at an aider-like prompt that echoes what is typed (the tty does) and never
    // acts on Enter.
    let server = TmuxServer::start(
        &socket,
        "deaf",
        project.path(),
        &["sh", "-c", "printf '> '; exec sleep 600"],
    );
    let pane_id = server.display("deaf", "#{pane_id}");
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"aider\"\ntarget = \"{pane_id}\"\n\
         socket = \"{name}\"\nprompt = \"fix the bug\"\ntimeout_seconds = 120\n"
    );
    project.publish(
        "deaf",
        &plan("deaf", &work_item("fix", "required", &[], &[], &run)),
    );
    let mut ran = String::new();
    wait_until_long("the task to block", || {
        ran.push_str(&project.ok(&["run", "--once"]));
        project.task_status("deaf") == "blocked"
    });
    assert!(!ran.contains("attempt_running"), "{ran}");
    let first = attempt_dir(&project, "deaf:fix:a1");
    let observed = attempt_observations(&first);
    assert_eq!(observed.len(), 1);
    assert_eq!(observed[0]["status"], "blocked");
    assert_eq!(
        observed[0]["reason"],
        "submission_unconfirmed:the agent did not leave idle with its input cleared after Enter"
    );
    let segments = observed[0]["provenance"].as_array().unwrap();
    assert_eq!(segments[0]["proof_kind"], "transport_only");
    assert_eq!(segments[0]["acknowledged"], true);
    assert_eq!(segments[1]["acknowledged"], false);
    assert_eq!(segments[1]["failure_code"], "submission_unconfirmed");
    assert_eq!(
        read_json(&first.join("proofs/submission.json"))["proven"],
        false
    );
    // The retry refuses to paste into the same pane again.
    let second = attempt_observations(&attempt_dir(&project, "deaf:fix:a2"));
    assert_eq!(
        second[0]["reason"],
        format!(
            "previous_submission_unconfirmed:deaf:fix:a1: the Leader looks at pane {pane_id} \
             first; valp never resends"
        )
        .as_str()
    );
    let screen = server.run(&["capture-pane", "-p", "-t", &pane_id]);
    assert_eq!(screen.matches("fix the bug").count(), 1, "{screen}");
    assert_eq!(server.display(&pane_id, "#{pane_dead}"), "0");
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

/// [`wait_until`] with two minutes' patience (a submission waits up to 30 s per step).
fn wait_until_long(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

#[test]
fn the_agents_example_runs_to_done() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let text =
        std::fs::read_to_string(valp_tests::workspace_root().join("examples/plans/agents.toml"))
            .unwrap();
    project.publish("agents", &text);
    let ran = project.ok(&["run", "--timeout", "180"]);
    assert!(ran.contains("agents: reviewing"), "{ran}");
    project.ok(&["review", "agents", "pass"]);
    project.ok(&["run"]);
    assert_eq!(project.task_status("agents"), "done");
    for file in ["draft", "review", "summary"] {
        assert!(
            project
                .path()
                .join(format!("target/agents/{file}.md"))
                .is_file()
        );
    }
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

/// Publishes a one-item plan whose agent `agent` is started by `command`, steps the runner
/// (with `path` as PATH) until the task blocks, and returns the first attempt's observation.
fn first_refusal(
    project: &Project,
    agent: &str,
    command: &[&str],
    path: &str,
) -> serde_json::Value {
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"{agent}\"\ncommand = [{}]\n\
         prompt = \"hello\"\ntimeout_seconds = 60\n",
        command
            .iter()
            .map(|word| format!("{word:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    project.publish(
        "setup",
        &plan("setup", &work_item("go", "required", &[], &[], &run)),
    );
    wait_until_long("the task to block", || {
        let ran = std::process::Command::new(valp_binary().unwrap())
            .args(["--no-default-sockets", "run", "--once"])
            .current_dir(project.path())
            .env("PATH", path)
            .env_remove("VALP_ROOT")
            .output()
            .unwrap();
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        project.task_status("setup") == "blocked"
    });
    attempt_observations(&attempt_dir(project, "setup:go:a1")).remove(0)
}

#[test]
fn an_agent_on_a_set_up_screen_is_refused_with_nothing_typed() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let observed = first_refusal(
        &project,
        "claude",
        &[
            "sh",
            "-c",
            "printf 'Do you trust the files in this folder?\\n> 1. Yes, proceed\\n'; exec sleep 600",
        ],
        &std::env::var("PATH").unwrap(),
    );
    assert_eq!(observed["status"], "blocked");
    assert_eq!(
        observed["reason"],
        "submit_refused:not submitted (nothing typed): agent unknown (folder trust dialog \
         (set-up needed)): it shows a set-up screen (trust, API key, first run) that only the \
         Leader answers"
    );
}

#[test]
fn a_missing_tmux_is_a_refusal_not_a_crash() {
    let project = Project::new();
    let empty = tempfile::tempdir().unwrap();
    let observed = first_refusal(
        &project,
        "demo",
        &["valp", "demo-agent"],
        &empty.path().display().to_string(),
    );
    assert_eq!(observed["status"], "blocked");
    assert_eq!(
        observed["reason"],
        "tmux_failed:tmux is not installed (not found: tmux)"
    );
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

/// utime + stime + cutime + cstime of `pid`, in clock ticks (0 once it is gone).
fn cpu_ticks(pid: u64) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let fields: Vec<u64> = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .skip(11)
                .take(4)
                .map(|field| field.parse().unwrap_or(0))
                .collect();
            Some(fields.iter().sum())
        })
        .unwrap_or(0)
}

/// A measurement, not a check of behaviour (`--ignored`; ARCHITECTURE.md "Performance
/// (execution lane)" quotes it): 20 demo agents, each submitted its prompt and then waiting on
/// its question (a screen that no longer changes), and the CPU their 20 supervisors and the
/// tmux server use over 20 s, as a share of one core.
#[test]
#[ignore = "a measurement of about a minute; run with --ignored"]
fn twenty_idle_agents_cost_the_supervisors_little_cpu() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let ids: Vec<String> = (0..20).map(|n| format!("a{n}")).collect();
    let body: String = ids
        .iter()
        .map(|id| {
            agent_item(
                id,
                &[],
                &[&format!("out/{id}.md")],
                &format!("Write @out/{id}.md"),
                (7, "always"),
            )
        })
        .collect();
    project.publish(
        "idle",
        &format!("{}[execution]\nmax_concurrency = 20\n", plan("idle", &body)),
    );
    let dirs: Vec<PathBuf> = ids
        .iter()
        .map(|id| attempt_dir(&project, &format!("idle:{id}:a1")))
        .collect();
    wait_until_long("20 agents waiting on their question", || {
        project.ok(&["run", "--once"]);
        dirs.iter().all(|dir| state(dir)["state"] == "blocked")
    });
    let mut pids: Vec<u64> = dirs
        .iter()
        .map(|dir| {
            read_json(&dir.join("supervisor.json"))["pid"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let server = tmux_at(
        &private_socket(&project),
        &["display-message", "-p", "#{pid}"],
    );
    pids.push(
        String::from_utf8_lossy(&server.stdout)
            .trim()
            .parse()
            .unwrap(),
    );
    let before: Vec<u64> = pids.iter().map(|&pid| cpu_ticks(pid)).collect();
    let window = std::time::Duration::from_secs(20);
    std::thread::sleep(window);
    let after: Vec<u64> = pids.iter().map(|&pid| cpu_ticks(pid)).collect();
    let supervisors: u64 = (0..20).map(|index| after[index] - before[index]).sum();
    let server = after[20] - before[20];
    // Clock ticks are 1/100 s on Linux: ticks over 20 s are hundredths of a core-second.
    let share = |ticks: u64| f64::from(u32::try_from(ticks).unwrap()) / window.as_secs_f64();
    eprintln!(
        "20 idle agents over {window:?}: supervisors {:.2} % of one core, tmux server {:.2} %",
        share(supervisors),
        share(server)
    );
    project.ok(&["cancel", "idle"]);
}

/// A measurement (`--ignored`; quoted in ARCHITECTURE.md): from a line printed in an agent's
/// pane to `state.json` showing it, 50 times.
#[test]
#[ignore = "a measurement; run with --ignored"]
fn output_reaches_the_agent_state_within_a_tick_or_two() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let dir = blocked_agent(&project, "fast");
    let socket = private_socket(&project);
    let pane = pane_of(&dir);
    let mut delays = Vec::new();
    for n in 0..50 {
        let marker = format!("marker-{n}-end");
        let start = std::time::Instant::now();
        print_in_pane(&socket, &pane, format!("\r\n{marker}\r\n").as_bytes());
        while !state(&dir)["tail"].to_string().contains(&marker) {
            assert!(start.elapsed() < std::time::Duration::from_secs(10));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        delays.push(start.elapsed());
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    delays.sort();
    eprintln!(
        "output -> state.json over 50 lines: p50 {:?}, p99 {:?}, max {:?}",
        delays[24], delays[48], delays[49]
    );
    project.ok(&["cancel", "fast"]);
}

#[test]
fn a_dead_supervisor_fails_its_attempt_and_its_agent_window_is_closed() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let dir = blocked_agent(&project, "orphan");
    let supervisor = read_json(&dir.join("supervisor.json"))["pid"]
        .as_u64()
        .unwrap();
    let agent = read_json(&dir.join("proofs/submission.json"))["pane_pid"]
        .as_u64()
        .unwrap();
    let agent = u32::try_from(agent).unwrap();
    assert!(alive(agent));
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &supervisor.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let mut ran = String::new();
    wait_until_long("the lost supervisor's attempt to fail", || {
        ran.push_str(&project.ok(&["run", "--once"]));
        ran.contains("orphan  attempt_fenced  (ask attempt 1 failed)")
    });
    // The first attempt's agent is gone with its window (the retry has its own; pane ids
    // start again at %0 once the server had ended, so the agent's process tells).
    wait_until("the orphaned agent to end", || !alive(agent));
    project.ok(&["cancel", "orphan"]);
}
