//! The real agent CLIs through `valp run`, as a person runs them: a plan whose work item is
//! `adapter = "tmux"` with `agent = "claude"` / `"codex"` / `"aider"`, the CLI started by valp in its
//! private tmux server (its own `HOME`, first-run state and scripted model: `valp_tests::agents`,
//! `valp_tests::model`), the prompt submitted with proof, the turn watched to idle, the attempt
//! completed, the Leader's review, done. The submission proof is in the journal's evidence and
//! the model's request log has the exact prompt. Claude Code is started with hooks of the
//! attempt's own (`--settings FILE`, its profile's `launch_hooks`): its `UserPromptSubmit`
//! with the prompt's digest acknowledges the submission, and neither its `HOME` nor the
//! project got a settings file.
//!
//! Gated like `real_agents.rs`: a CLI `.ci/agents` did not install is skipped (said on stderr)
//! unless `VALP_REQUIRE_AGENTS=1`, which makes it a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::time::Duration;

use valp_kernel::canonical::sha256_digest;
use valp_runtime::abi::attempt_folder;
use valp_tests::agents::{AGENT_PATIENCE, Cli, Setup, agent_command};
use valp_tests::model::{ModelServer, Reply, Script};
use valp_tests::project::{Project, plan, work_item};
use valp_tests::tmux::tmux_at;

/// Text, never keys or commands.
const PROMPT: &str = "Think about the valp test; 'quotes' \"too\" $(touch pwned) C-c Enter";

/// Kills the project's private tmux server when the test ends, also when it fails.
struct Cleanup<'a>(&'a Project);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let socket = self.0.control_root().join("runtime/tmux/.server.sock");
        let _ = tmux_at(&socket, &["kill-server"]);
    }
}

fn json(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `cli` runs one item of a plan through `valp run` to done.
fn runs_to_done(cli: Cli) {
    let Some(installed) = cli.installed() else {
        return;
    };
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let folder = project.path().canonicalize().unwrap();
    let home = tempfile::tempdir().unwrap();
    // A turn long enough to be seen working (3 s of a stream without text: Codex hides its
    // working line while text streams), then the turn ends.
    let model = ModelServer::start(Script::new(
        Reply::Slow {
            piece: String::new(),
            pieces: 30,
            every: Duration::from_millis(100),
        },
        Reply::Text("done".to_owned()),
    ));
    let argv = agent_command(&installed, home.path(), &folder, &model, Setup::Ready);
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"{}\"\ncommand = {argv:?}\n\
         prompt = {PROMPT:?}\ntimeout_seconds = 120\n",
        cli.name()
    );
    let task = format!("real-{}", cli.name());
    project.publish(
        &task,
        &plan(&task, &work_item("think", "required", &[], &[], &run)),
    );
    let ran = project.ok(&["run", "--timeout", "150"]);
    assert!(ran.contains(&format!("{task}  attempt_running")), "{ran}");
    assert!(ran.contains(&format!("{task}: reviewing")), "{ran}");
    project.ok(&["review", &task, "pass"]);
    project.ok(&["run"]);
    assert_eq!(project.task_status(&task), "done");
    // The model got the exact prompt.
    let request = model.wait_for("the prompt", AGENT_PATIENCE, |request| {
        request.answered == "first"
    });
    assert_eq!(
        request.user_texts().last().map(String::as_str),
        Some(PROMPT)
    );
    assert!(
        !folder.join("pwned").exists(),
        "the prompt ran as a command"
    );
    // The submission is proven step by step, and its proof is the journal's evidence.
    let dir = project
        .control_root()
        .join("runtime/tmux/attempts")
        .join(attempt_folder(&format!("{task}:think:a1")));
    let submission = json(&dir.join("proofs/submission.json"));
    assert_eq!(submission["proven"], true, "{submission}");
    assert_eq!(submission["agent"], cli.name());
    assert_eq!(
        submission["prompt_digest"],
        sha256_digest(PROMPT.as_bytes()).as_str()
    );
    let steps: Vec<&str> = submission["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["what"].as_str().unwrap())
        .collect();
    assert_eq!(steps[3], "send-keys Enter", "{steps:?}");
    assert!(
        steps[4].ends_with(", input cleared: submitted"),
        "{steps:?}"
    );
    for proof in ["dispatch_inserted", "submission", "completion"] {
        let bytes = std::fs::read(dir.join(format!("proofs/{proof}.json"))).unwrap();
        let digest = sha256_digest(&bytes);
        assert!(
            project
                .control_root()
                .join("evidence/sha256")
                .join(&digest["sha256:".len()..])
                .is_file(),
            "{proof} not in evidence"
        );
    }
    assert_eq!(
        json(&dir.join("proofs/completion.json"))["status"],
        "completed"
    );
    if cli == Cli::Claude {
        hooks_of_the_attempts_own(&dir, &folder, home.path(), &submission);
    }
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
    eprintln!("{} {}: valp run to done", cli.name(), installed.version);
}

/// Claude Code ran the hooks of the attempt's settings file: the submission is acknowledged
/// by its `UserPromptSubmit` carrying the prompt's digest, and no settings file was written
/// into the project or Claude's `HOME`.
fn hooks_of_the_attempts_own(
    dir: &std::path::Path,
    project: &std::path::Path,
    home: &std::path::Path,
    submission: &serde_json::Value,
) {
    valp_tests::schemas::assert_record_valid(
        dir,
        "claude-settings.json",
        "agent-hook-settings.schema.json",
    );
    let acknowledged = submission["acknowledged_by"].as_str().unwrap_or_default();
    assert!(
        acknowledged.starts_with("claude_hook:prompt_submitted#")
            && acknowledged.contains(" (content-bound; signal sha256:"),
        "{submission}"
    );
    for settings in [
        project.join(".claude/settings.json"),
        project.join(".claude/settings.local.json"),
        home.join(".claude/settings.json"),
    ] {
        assert!(!settings.exists(), "{} written", settings.display());
    }
}

#[test]
fn claude_code_runs_a_plan_item_to_done_through_valp_run() {
    runs_to_done(Cli::Claude);
}

#[test]
fn codex_runs_a_plan_item_to_done_through_valp_run() {
    runs_to_done(Cli::Codex);
}

#[test]
fn aider_runs_a_plan_item_to_done_through_valp_run() {
    runs_to_done(Cli::Aider);
}
