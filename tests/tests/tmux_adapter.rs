//! The tmux adapter end to end with real tmux and the demo agent (`valp demo-agent`), as a
//! person runs it: publish a plan with `adapter = "tmux"` items, `valp run`, review. Each
//! project has its own private tmux server (`<control root>/runtime/tmux/server.sock`), so no
//! test touches the user's tmux. tmux is required: a missing tmux fails these tests.
//!
//! What is checked is what really happened: the journal's evidence holds every submission's
//! proof, the attempt folders' observations and proofs, the files the agents wrote, the
//! windows valp closed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};

use valp_console::adapter::abi::attempt_folder;
use valp_kernel::canonical::sha256_digest;
use valp_tests::project::{Project, item, plan, wait_until, work_item};
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

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn observations(dir: &Path) -> Vec<serde_json::Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join("observations"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    names.sort();
    names.iter().map(|path| json(path)).collect()
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
    json(&dir.join("proofs/submission.json"))["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["what"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether valp's private tmux server of the project still runs.
fn server_runs(project: &Project) -> bool {
    let socket = project.control_root().join("runtime/tmux/server.sock");
    tmux_at(&socket, &["list-sessions"]).status.success()
}

fn kill_server(project: &Project) {
    let socket = project.control_root().join("runtime/tmux/server.sock");
    let _ = tmux_at(&socket, &["kill-server"]);
}

/// Kills the project's private tmux server when the test ends, also when it fails.
struct Cleanup<'a>(&'a Project);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        kill_server(self.0);
    }
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
        assert_eq!(project.item_status("agents", id), "completed");
        let written = std::fs::read_to_string(project.path().join(file)).unwrap();
        assert!(
            written.ends_with(prompt) || written.contains(&format!("{prompt}\n")),
            "{written:?}"
        );
        let dir = attempt_dir(&project, &format!("agents:{id}:a1"));
        let observed = observations(&dir);
        assert_eq!(observed[0]["status"], "accepted");
        let kinds: Vec<_> = observed[0]["provenance"]
            .as_array()
            .unwrap()
            .iter()
            .map(|segment| segment["proof_kind"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(kinds, ["transport_only", "process_bound"]);
        assert_eq!(observed.last().unwrap()["status"], "completed");
        let submission = json(&dir.join("proofs/submission.json"));
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
        assert!(steps[4].ends_with(", input cleared: submitted"), "{steps:?}");
        // The proofs are the journal's evidence, byte for byte.
        for proof in ["dispatch_inserted", "submission", "completion"] {
            let bytes = std::fs::read(dir.join(format!("proofs/{proof}.json"))).unwrap();
            assert!(in_evidence(&project, &bytes), "{id}: {proof} not in evidence");
        }
        // The agent's environment named its attempt (the hook bridge finds it through it).
        let spec = json(&dir.join("run.json"));
        assert_eq!(spec["env"]["VALP_ATTEMPT_ID"], format!("agents:{id}:a1").as_str());
        assert_eq!(spec["env"]["VALP_WORK_ITEM_ID"], id);
        assert_eq!(spec["env"]["VALP_TASK_ID"], "agents");
        assert!(
            spec["env"]["VALP_CONTROL_ROOT"]
                .as_str()
                .unwrap()
                .ends_with(".valp")
        );
    }
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
    // Every agent window was closed with its attempt, so the private server is gone.
    wait_until("valp's tmux server to end", || !server_runs(&project));
}
