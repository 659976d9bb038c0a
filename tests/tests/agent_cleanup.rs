//! What valp leaves behind on a tmux server, with real tmux: on the Leader's own server (a
//! named socket, `socket = "NAME"`), valp's agent window is closed when the task ends and the
//! Leader's own panes are never touched (same process, same screen, still running); the screen
//! the agent blocked on is kept as a capture, redacted and bounded.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use valp_runtime::abi::attempt_folder;
use valp_tests::cli::{Run, valp_answering};
use valp_tests::project::{Project, plan, wait_until, work_item};
use valp_tests::schemas::{errors, validator};
use valp_tests::tmux::{TmuxServer, tmux_at};
use valp_tests::valp_binary;

/// `valp args…` in the project, with the test's own `TMUX_TMPDIR` (where `socket = "NAME"`
/// resolves), which must exit 0; its standard output.
fn valp(project: &Project, tmpdir: &Path, args: &[&str]) -> String {
    let mut all = vec!["--no-default-sockets"];
    all.extend_from_slice(args);
    let run: Run = valp_answering(project.path(), tmpdir, &all, "").unwrap();
    assert_eq!(
        run.code,
        Some(0),
        "valp {args:?}\n{}\n{}",
        run.stdout,
        run.stderr
    );
    run.stdout
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn state(dir: &Path) -> serde_json::Value {
    std::fs::read(dir.join("state.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The panes on the server: `id pid dead session`.
fn panes(socket: &Path) -> Vec<String> {
    let listed = tmux_at(
        socket,
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{pane_pid} #{pane_dead} #{session_name}",
        ],
    );
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_task_ending_closes_valps_window_and_leaves_the_leaders_panes_untouched() {
    let project = Project::new();
    let tmpdir = tempfile::tempdir().unwrap();
    let uid = std::fs::metadata(tmpdir.path()).unwrap().uid();
    let folder = tmpdir.path().join(format!("tmux-{uid}"));
    std::fs::create_dir(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket: PathBuf = folder.join("leader");
    // The Leader's own server: two panes of their work.
    let server = TmuxServer::start(
        &socket,
        "mine",
        project.path(),
        &["sh", "-c", "echo leader-work-marker; exec sleep 600"],
    );
    server.run(&["split-window", "-t", "mine", "sleep", "600"]);
    let before = panes(&socket);
    assert_eq!(before.len(), 2, "{before:?}");
    let screen = |pane: &str| server.run(&["capture-pane", "-p", "-t", pane]);
    let first = before[0].split(' ').next().unwrap().to_owned();
    wait_until("the Leader's pane to print", || {
        screen(&first).contains("leader-work-marker")
    });
    let shown = screen(&first);
    // A demo agent that always asks (so it waits, blocked) in a window on that server, with a
    // secret on its screen.
    let valp_path = valp_binary().unwrap();
    let run = format!(
        "[work_items.run]\nadapter = \"tmux\"\nagent = \"demo\"\ncommand = [{:?}, \"demo-agent\", \
         \"--seed\", \"5\", \"--ask\", \"always\"]\nprompt = \"Write @out/asked.md with \
         sk-ant-api03-abcdefghijklmnopqrstu\"\nsocket = \"leader\"\ntimeout_seconds = 120\n",
        valp_path.to_str().unwrap()
    );
    let body = work_item("ask", "required", &[], &["out/asked.md"], &run);
    std::fs::write(project.path().join("end.toml"), plan("end", &body)).unwrap();
    valp(&project, tmpdir.path(), &["task", "publish", "end.toml"]);
    let dir = project
        .control_root()
        .join("runtime/tmux/attempts")
        .join(attempt_folder("end:ask:a1"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while state(&dir)["state"] != "blocked" {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never blocked"
        );
        valp(&project, tmpdir.path(), &["run", "--once"]);
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let during = panes(&socket);
    assert_eq!(during.len(), 3, "{during:?}");
    assert!(
        during.iter().any(|pane| pane.ends_with(" valp")),
        "{during:?}"
    );
    // The question's screen is kept: schema'd, redacted, bounded.
    let capture = dir.join("captures/000001-blocked.json");
    wait_until("the blocked screen's capture", || capture.is_file());
    let kept = json(&capture);
    let found = errors(&validator("console/tmux-capture.schema.json"), &kept);
    assert!(found.is_empty(), "{found:?}");
    assert_eq!(kept["state"], "blocked");
    let text = kept["lines"].to_string();
    assert!(!text.contains("abcdefghijklmnop"), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
    // The task ends: valp's window goes, the Leader's panes stay as they were.
    let cancelled = valp(
        &project,
        tmpdir.path(),
        &["cancel", "end", "--note", "done"],
    );
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:"),
        "{cancelled}"
    );
    wait_until("valp's window to close", || panes(&socket) == before);
    assert_eq!(screen(&first), shown);
    for pane in &before {
        let pid: u32 = pane.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(valp_tests::project::alive(pid), "{pane}");
    }
    assert!(
        tmux_at(&socket, &["has-session", "-t", "=valp"])
            .status
            .code()
            != Some(0)
    );
    // valp's own private server was never started.
    let private = project.control_root().join("runtime/tmux/.server.sock");
    assert!(!tmux_at(&private, &["list-sessions"]).status.success());
    let completion = json(&dir.join("proofs/completion.json"));
    assert_eq!(completion["status"], "cancelled");
    server.kill();
}
