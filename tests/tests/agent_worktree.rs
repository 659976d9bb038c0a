//! `workdir = "worktree"`: each agent attempt works in a git worktree of its own, with real git
//! and real tmux (the demo agent on the project's private server). Concurrent agents never
//! write into the project's checkout or each other's; the diff of each attempt is recorded,
//! bound as evidence, shown by `valp task status`; a worktree left unchanged is removed, one
//! with changes kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};
use std::process::Command;

use valp_kernel::canonical::sha256_digest;
use valp_runtime::abi::attempt_folder;
use valp_tests::project::{Project, plan, work_item};
use valp_tests::schemas::{errors, validator};
use valp_tests::tmux::tmux_at;
use valp_tests::valp_binary;

/// `git -C folder args…`, which must succeed; its standard output.
fn git(folder: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args([
            "-c",
            "user.name=valp test",
            "-c",
            "user.email=test@valp.invalid",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Makes the project a git repository with one commit holding `notes.md`.
fn commit_project(project: &Project) -> String {
    let folder = project.path();
    git(folder, &["init", "-q"]);
    std::fs::write(folder.join(".gitignore"), ".valp/\n*.toml\n").unwrap();
    std::fs::write(folder.join("notes.md"), "one\ntwo\n").unwrap();
    git(folder, &["add", "notes.md", ".gitignore"]);
    git(folder, &["commit", "-q", "-m", "base"]);
    git(folder, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// A demo-agent item in its own worktree, told `prompt`.
fn isolated_item(id: &str, expected: &[&str], prompt: &str) -> String {
    let valp = valp_binary().unwrap();
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"demo\"\ncommand = [{:?}, \"demo-agent\", \
         \"--seed\", \"1\", \"--ask\", \"never\"]\nprompt = {prompt:?}\nworkdir = \"worktree\"\n\
         timeout_seconds = 90\n",
        valp.to_str().unwrap()
    );
    work_item(id, "required", &[], expected, &run)
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

fn assert_valid(path: &Path, schema: &str) {
    let found = errors(&validator(&format!("console/{schema}")), &json(path));
    assert!(found.is_empty(), "{}: {found:?}", path.display());
}

/// Kills the project's private tmux server when the test ends, also when it fails.
struct Cleanup<'a>(&'a Project);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let socket = self.0.control_root().join("runtime/tmux/.server.sock");
        let _ = tmux_at(&socket, &["kill-server"]);
    }
}

#[test]
fn concurrent_agents_work_in_their_own_worktrees_and_their_diffs_are_recorded() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    let base = commit_project(&project);
    let body = [
        isolated_item("left", &["out/left.md"], "Write @out/left.md please"),
        isolated_item("right", &["out/right.md"], "Write @out/right.md please"),
        isolated_item("idle", &[], "Think, write nothing"),
    ]
    .concat();
    project.publish("trees", &plan("trees", &body));
    let ran = project.ok(&["run", "--timeout", "180"]);
    assert!(ran.contains("trees: reviewing"), "{ran}");
    // Nothing was written into the project's own checkout.
    assert!(!project.path().join("out").exists());
    assert_eq!(git(project.path(), &["status", "--porcelain"]), "");
    let status = project.ok(&["task", "status", "trees"]);
    let mut paths = Vec::new();
    for (id, file) in [("left", "out/left.md"), ("right", "out/right.md")] {
        let dir = attempt_dir(&project, &format!("trees:{id}:a1"));
        assert_valid(&dir.join("worktree.json"), "worktree.schema.json");
        assert_valid(&dir.join("worktree-diff.json"), "worktree-diff.schema.json");
        let tree = json(&dir.join("worktree.json"));
        assert_eq!(tree["base"], base.as_str());
        let path = PathBuf::from(tree["path"].as_str().unwrap());
        assert!(
            path.starts_with(project.control_root().join("runtime/worktrees")),
            "{}",
            path.display()
        );
        // The agent worked there: its file is in its worktree, its run spec's folder.
        let written = std::fs::read_to_string(path.join(file)).unwrap();
        assert!(
            written.contains(&format!("Write @{file} please")),
            "{written}"
        );
        assert_eq!(json(&dir.join("run.json"))["cwd"], path.to_str().unwrap());
        // The diff: the one new file, against the project's HEAD; the worktree kept.
        let diff = json(&dir.join("worktree-diff.json"));
        assert_eq!(diff["kept"], true);
        assert_eq!(diff["base"], base.as_str());
        let files = diff["files"].as_array().unwrap();
        assert_eq!(files.len(), 1, "{diff}");
        assert_eq!(files[0]["path"], file);
        assert_eq!(files[0]["new"], true);
        let lines = written.lines().count() as u64;
        assert_eq!(files[0]["insertions"], lines);
        // The diff is the attempt's evidence in the journal.
        let bytes = std::fs::read(dir.join("worktree-diff.json")).unwrap();
        let digest = sha256_digest(&bytes);
        assert!(
            project
                .control_root()
                .join("evidence/sha256")
                .join(&digest["sha256:".len()..])
                .is_file()
        );
        // `valp task status` shows where and what, before the review.
        let head = format!(
            "    worktree {} (base {}): 1 file changed, +{lines} -0; kept for review (git \
             worktree remove PATH when done)",
            path.display(),
            &base[..12]
        );
        assert!(status.contains(&head), "missing {head:?} in:\n{status}");
        assert!(
            status.contains(&format!("      {file} +{lines} -0 (new)")),
            "{status}"
        );
        paths.push(path);
    }
    assert_ne!(paths[0], paths[1]);
    // The agent that changed nothing: diff recorded empty, its worktree removed.
    let idle = attempt_dir(&project, "trees:idle:a1");
    let diff = json(&idle.join("worktree-diff.json"));
    assert_eq!(diff["kept"], false);
    assert_eq!(diff["files"].as_array().unwrap().len(), 0);
    let gone = PathBuf::from(json(&idle.join("worktree.json"))["path"].as_str().unwrap());
    assert!(!gone.exists(), "{}", gone.display());
    assert!(
        status.contains("0 files changed, +0 -0; removed: nothing changed"),
        "{status}"
    );
    let listed = git(project.path(), &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(gone.to_str().unwrap()), "{listed}");
    for path in &paths {
        assert!(listed.contains(path.to_str().unwrap()), "{listed}");
    }
    project.ok(&["review", "trees", "pass"]);
    project.ok(&["run"]);
    assert_eq!(project.task_status("trees"), "done");
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
    // Kept worktrees stay after the task: the Leader's to merge and remove.
    assert!(paths.iter().all(|path| path.join(".git").is_file()));
}

#[test]
fn a_worktree_outside_a_git_repository_is_refused_with_the_reason() {
    let project = Project::new();
    let _cleanup = Cleanup(&project);
    project.publish(
        "bare",
        &plan("bare", &isolated_item("solo", &[], "Think, write nothing")),
    );
    let ran = project.valp(&["run", "--timeout", "20"]);
    let all = format!("{}{}", ran.stdout, ran.stderr);
    assert!(
        all.contains(
            "workdir = \"worktree\" needs the project in a git repository with a commit: fatal: \
             not a git repository"
        ),
        "{all}"
    );
    assert!(
        !attempt_dir(&project, "bare:solo:a1")
            .join("run.json")
            .exists()
    );
}
