//! The real `valp` binary driven in tmux as a person would: first run with an explicit
//! selection, the next start re-proving the Leader without a question, the read-only banner
//! after the Leader's tmux server restarted, the explicit rebind to epoch 2, and a redirect
//! while another work item runs.
//!
//! Two private tmux servers: one holds the "agents" (the Leader candidate), the other runs the
//! console in an 120x40 pane that the test types into (`send-keys`) and reads
//! (`capture-pane`). Needs tmux (CI installs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use valp_kernel::canonical::Canonical;
use valp_runtime::abi::{
    AdapterObservation, AdapterRequest, ObservationStatus, Operation, attempt_folder,
};
use valp_runtime::adapter::process;
use valp_tests::cli::{valp_answering, valp_in};
use valp_tests::tmux::{PATIENCE, TmuxServer};
use valp_tests::valp_binary;
use valp_view::flow::SHORT_STAGES;

/// Longer than drawing one frame takes, shorter than a person notices.
const SETTLE: Duration = Duration::from_millis(100);

struct Desk {
    temp: tempfile::TempDir,
    agents_socket: PathBuf,
    drive: TmuxServer,
}

impl Desk {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let agents_socket = temp.path().join("agents.sock");
        let drive = TmuxServer::start(
            &temp.path().join("drive.sock"),
            "drive",
            temp.path(),
            &["sh"],
        );
        drive.run(&["resize-window", "-t", "drive", "-x", "120", "-y", "40"]);
        Self {
            temp,
            agents_socket,
            drive,
        }
    }

    fn path(&self) -> &Path {
        self.temp.path()
    }

    fn agents(&self) -> TmuxServer {
        TmuxServer::start(&self.agents_socket, "agents", self.path(), &["sh"])
    }

    fn agent_pane(&self) -> String {
        format!(
            "tmux:{}:%0",
            std::fs::canonicalize(&self.agents_socket)
                .unwrap()
                .display()
        )
    }

    /// Starts `valp args…` in the drive pane (a fresh process each time), limited to the agents'
    /// socket.
    fn start_valp(&self, args: &[&str]) {
        let mut line = format!(
            "clear; env -u TMUX TMUX_TMPDIR={} {} --no-default-sockets --tmux-socket {}",
            self.path().join("no-tmux").display(),
            valp_binary().unwrap().display(),
            self.agents_socket.display()
        );
        for arg in args {
            line.push(' ');
            line.push_str(arg);
        }
        line.push_str("; echo valp-exited-$?");
        self.drive
            .run(&["send-keys", "-t", "drive", &line, "Enter"]);
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "drive"];
        args.extend_from_slice(keys);
        self.drive.run(&args);
    }

    fn screen(&self) -> String {
        self.drive.run(&["capture-pane", "-p", "-t", "drive"])
    }

    /// Waits until the screen shows `text` (wrapped or not); returns the screen's text with
    /// borders removed and every run of whitespace, line breaks included, made one space.
    fn wait_for(&self, text: &str) -> String {
        self.wait_for_within(text, PATIENCE)
    }

    /// [`Self::wait_for`] with another patience: the demo's tmux agents take longer than one.
    fn wait_for_within(&self, text: &str, patience: Duration) -> String {
        let deadline = Instant::now() + patience;
        loop {
            let screen = self.screen();
            let flat = flatten(&screen);
            if flat.contains(text) {
                // A frame is written in several chunks: a capture may catch one half-drawn.
                // What is still there a moment later is a whole frame.
                std::thread::sleep(SETTLE);
                let settled = flatten(&self.screen());
                if settled.contains(text) {
                    return settled;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {text:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Starts `valp demo --console`, selects the only candidate (no agents' server: the OS
    /// account) and shows the demo task's work items. The demo plan is published once the
    /// Leader is bound and the System starts running it: processes launched by the adapter,
    /// their observations arriving through the watcher.
    fn demo_with_its_leader(&self) {
        self.demo_with_its_leader_and(&[]);
        self.keys(&["j"]);
    }

    /// [`Self::demo_with_its_leader`] with more `valp demo` arguments, the first task selected.
    fn demo_with_its_leader_and(&self, args: &[&str]) {
        let mut all = vec!["demo", "--console"];
        all.extend_from_slice(args);
        self.start_valp(&all);
        self.wait_for("Candidates (1)");
        self.keys(&["Enter"]);
        self.wait_for("as the Leader?");
        self.keys(&["y"]);
        self.wait_for("demo-build");
    }

    /// The folder of a process attempt.
    fn attempt_dir(&self, attempt_id: &str) -> PathBuf {
        self.path()
            .join(".valp/runtime/process/attempts")
            .join(attempt_folder(attempt_id))
    }

    /// Waits until the screen no longer shows `text`.
    fn wait_until_gone(&self, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        while flatten(&self.screen()).contains(text) {
            assert!(
                Instant::now() < deadline,
                "the screen kept showing {text:?}:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn quit(&self) {
        self.keys(&["q"]);
        self.wait_for("valp-exited-0");
    }

    fn binding(&self) -> Vec<u8> {
        std::fs::read(self.path().join(".valp/leader/binding.json")).unwrap()
    }
}

/// The screen as one line of words: box-drawing characters dropped, whitespace collapsed.
fn flatten(screen: &str) -> String {
    screen
        .chars()
        .map(|c| {
            if ('\u{2500}'..='\u{257f}').contains(&c) {
                ' '
            } else {
                c
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn select_once_reopen_without_asking_and_rebind_after_a_restart() {
    let desk = Desk::new();
    let agents = desk.agents();
    let pane = desk.agent_pane();

    // First run: the demo installation, no Leader, the Doctor's candidates.
    desk.start_valp(&["demo", "--console"]);
    let first = desk.wait_for("No Leader is selected for this installation.");
    assert!(first.contains("Candidates (2)"), "{first}");
    assert!(first.contains("human:uid-"), "{first}");
    assert_eq!(
        std::fs::metadata(desk.path().join(".valp/leader/binding.json"))
            .ok()
            .map(|_| ()),
        None,
        "nothing is bound before the selection"
    );

    // Choose the agents' pane (second row), see the confirmation, confirm.
    desk.keys(&["Down", "Enter"]);
    let dialog = desk.wait_for("as the Leader?");
    assert!(dialog.contains("Select tmux:"), "{dialog}");
    assert!(dialog.contains("This starts epoch 1."), "{dialog}");
    desk.keys(&["y"]);
    desk.wait_for(&format!("Leader selected: {pane}, epoch 1"));
    // The answer shows as soon as it comes; the view re-read after it a moment later.
    let selected = desk.wait_for("lane active");
    assert!(
        selected.contains(&format!("Leader selected: {pane}, epoch 1")),
        "{selected}"
    );
    // The demo opens on its live plan; the seeded random history only with `--entries`.
    let selected = desk.wait_for("demo-build");
    assert!(!selected.contains("demo-1"), "{selected}");
    desk.quit();
    let bound = desk.binding();

    // The next day: a new process, the same pane. No question, the binding re-proven.
    desk.start_valp(&[]);
    desk.wait_for(", epoch 1");
    let reopened = desk.wait_for("reopened 20");
    assert!(reopened.contains(", epoch 1"), "{reopened}");
    assert!(!reopened.contains("No Leader is selected"), "{reopened}");
    assert!(!reopened.contains("Confirm"), "{reopened}");
    assert!(!reopened.contains("Read-only"), "{reopened}");
    desk.quit();
    assert_eq!(desk.binding(), bound);

    // The agents' tmux server restarts: pane %0 again, but another session.
    drop(agents);
    let _agents = desk.agents();
    desk.start_valp(&[]);
    let banner = desk.wait_for("Read-only");
    assert!(banner.contains("Leader session not re-proven"), "{banner}");
    assert!(banner.contains("now has a different identity"), "{banner}");
    assert!(
        banner.contains("another session is at this address now"),
        "{banner}"
    );
    // Keys that would change anything do nothing in read-only mode; a task key says why and
    // names the two ways on. Enter only looks (the detail view), Esc closes it.
    desk.keys(&["x"]);
    let refused = desk.wait_for("VALP-CONSOLE-READ-ONLY: cancel: refused");
    assert!(refused.contains("Ways on: r rebind"), "{refused}");
    desk.keys(&["Enter", "y", "Escape"]);
    // The detail view covers the banner until Escape is handled: wait for it to be back (a `y`
    // that changed anything would end read-only mode and this would time out).
    desk.wait_for("Read-only");
    assert_eq!(desk.binding(), bound, "the binding on disk is unchanged");

    // The explicit way on: rebind the principal to the new session, epoch 2.
    desk.keys(&["r"]);
    desk.wait_for("New sessions of tmux:");
    desk.keys(&["Enter"]);
    let rebind = desk.wait_for("Epoch 1 will be fenced and epoch 2 starts.");
    assert!(rebind.contains("Rebind tmux:"), "{rebind}");
    desk.keys(&["y"]);
    let rotated = desk.wait_for(&format!("Leader rotated: {pane}, epoch 2"));
    assert!(rotated.contains("FENCED"), "{rotated}");
    desk.quit();
    assert_ne!(desk.binding(), bound);

    let verified = valp_in(desk.path(), None, &["verify"]).unwrap();
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);
    let shown = valp_answering(
        desk.path(),
        &desk.path().join("no-tmux"),
        &[
            "--no-default-sockets",
            "--tmux-socket",
            desk.agents_socket.to_str().unwrap(),
            "leader",
            "show",
        ],
        "",
    )
    .unwrap();
    assert!(
        shown
            .stdout
            .contains("epochs        active 2, highest allocated 2"),
        "{}",
        shown.stdout
    );
}

#[test]
fn the_console_needs_a_terminal() {
    let project = tempfile::tempdir().unwrap();
    assert_eq!(
        valp_in(project.path(), None, &["init"]).unwrap().code,
        Some(0)
    );
    let run = valp_in(project.path(), None, &[]).unwrap();
    assert_eq!(run.code, Some(2));
    assert_eq!(
        run.stderr,
        "valp: the console needs a terminal (stdin and stdout are not both one); the commands in \
         `valp --help` work without one\n"
    );
}

#[test]
fn the_demo_console_runs_its_plan_under_the_leaders_keys() {
    let desk = Desk::new();
    desk.demo_with_its_leader();
    let running = desk.wait_for("warm-up required running in flight");
    assert!(running.contains("Work items · demo-build (8)"), "{running}");
    // The item is running from its attempt's creation; the adapter's `accepted` observation
    // (attempt_running) may come a pump later.
    desk.wait_for("attempt_running");

    // Close the console while warm-up runs: its supervisor finishes the work alone, and the
    // next start (no question asked) takes what it reported.
    desk.quit();
    let warm_up = desk
        .attempt_dir("demo-build:warm-up:a1")
        .join("observations/000002.json");
    let deadline = Instant::now() + PATIENCE;
    while !warm_up.is_file() {
        assert!(Instant::now() < deadline, "warm-up never finished");
        std::thread::sleep(Duration::from_millis(100));
    }
    desk.start_valp(&[]);
    desk.wait_for("reopened 20");
    desk.keys(&["j"]);
    desk.wait_for("warm-up required completed settled (completed)");
    desk.wait_for("slow-optional optional running in flight");

    // A file in the running attempt's folder that names another attempt: listed, not acted on.
    drop_foreign_observation(&desk, "demo-build:slow-optional:a1");
    let listed = desk.wait_for("observes another request (task demo-build)");
    assert!(listed.contains("Rejected files (1)"), "{listed}");

    // Cancel the slow optional item from the keyboard: Work items pane, row 5.
    desk.keys(&["Tab", "j", "j", "j", "j", "x"]);
    let dialog = desk.wait_for("Cancel work item slow-optional of task demo-build?");
    assert!(
        dialog.contains("Its attempt demo-build:slow-optional:a1"),
        "{dialog}"
    );
    desk.keys(&["y"]);
    desk.wait_for("slow-optional optional cancelled");
    let reviewing = desk.wait_for("demo-build reviewing");
    assert!(
        reviewing.contains(
            "cancel work item accepted: task demo-build is executing; 1 cancel(s) carried out"
        ),
        "{reviewing}"
    );

    // The Leader passes the review; recording goes through the Done gate.
    desk.keys(&["p"]);
    desk.wait_for("Pass the review of task demo-build?");
    desk.keys(&["y"]);
    let done = desk.wait_for("demo-build done");
    assert!(done.contains("recording_completed"), "{done}");
    desk.quit();

    // What the screen showed is what the journal holds.
    let status = valp_answering(
        desk.path(),
        &desk.path().join("no-tmux"),
        &["--no-default-sockets", "task", "status", "demo-build"],
        "",
    )
    .unwrap();
    assert!(status.stdout.contains("done"), "{}", status.stdout);
    assert!(
        status.stdout.lines().any(
            |line| line.trim_start().starts_with("slow-optional") && line.contains("cancelled")
        ),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains("  effect fulfilled: adapter_cancel:"),
        "{}",
        status.stdout
    );
    assert!(desk.path().join("target/valp-demo/notes.txt").is_file());
    let verified = valp_in(desk.path(), None, &["verify"]).unwrap();
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);
}

/// The backend is kept busy for 10 s: a cancel whose supervisor is stopped (SIGSTOP) never
/// confirms, so the System waits out its whole patience. Meanwhile the screen shows the cancel
/// as pending, answers every key, and `q` ends the program within a second.
#[test]
fn keys_are_answered_and_q_quits_while_the_backend_waits_on_a_cancel() {
    let desk = Desk::new();
    desk.demo_with_its_leader();
    desk.wait_for("slow-optional optional running in flight");
    let record = desk
        .attempt_dir("demo-build:slow-optional:a1")
        .join("supervisor.json");
    let deadline = Instant::now() + PATIENCE;
    while !record.is_file() {
        assert!(Instant::now() < deadline, "slow-optional never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let supervisor = record["pid"].as_u64().unwrap().to_string();
    let stopped = Signalled::new(&supervisor, "-STOP");

    desk.keys(&["Tab", "j", "j", "j", "j", "x"]);
    desk.wait_for("Cancel work item slow-optional of task demo-build?");
    desk.keys(&["y"]);
    desk.wait_for("pending: cancelling work item slow-optional of task demo-build");
    let busy_since = Instant::now();
    for _ in 0..3 {
        desk.keys(&["?"]);
        desk.wait_for("Everywhere");
        desk.keys(&["Escape"]);
        desk.wait_until_gone("Everywhere");
    }
    let screen = desk.wait_for("pending: cancelling work item slow-optional");
    assert!(
        screen.contains("slow-optional optional running in flight"),
        "{screen}"
    );
    let asked = Instant::now();
    desk.keys(&["q"]);
    desk.wait_for("valp-exited-0");
    let quit_after = asked.elapsed();
    assert!(
        quit_after <= Duration::from_secs(1),
        "q took {quit_after:?}"
    );
    assert!(
        busy_since.elapsed() < Duration::from_secs(10),
        "the backend's patience ran out before the test ended: it proves nothing"
    );
    // The console is gone; the supervisor, continued, still carries out the cancel it was asked
    // for (it leads a session of its own, so the console's exit did not hang it up).
    drop(stopped);
    let attempt = desk.attempt_dir("demo-build:slow-optional:a1");
    let deadline = Instant::now() + PATIENCE;
    loop {
        let observations = process::read_observations(&attempt).unwrap().observations;
        if observations
            .last()
            .is_some_and(|last| last.status == ObservationStatus::Cancelled)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no cancelled final observation after SIGCONT: {observations:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A signal sent with `kill`; SIGCONT on drop, so a stopped process never outlives the test.
struct Signalled(String);

impl Signalled {
    fn new(pid: &str, signal: &str) -> Self {
        let status = std::process::Command::new("kill")
            .args([signal, pid])
            .status()
            .unwrap();
        assert!(status.success());
        Self(pid.to_owned())
    }
}

impl Drop for Signalled {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &self.0])
            .status();
    }
}

/// Writes, into the observations of `attempt_id`'s folder, a valid observation of another
/// attempt (renamed into place, as an adapter writes).
fn drop_foreign_observation(desk: &Desk, attempt_id: &str) {
    let folder = desk.attempt_dir(attempt_id);
    let foreign = AdapterObservation::new(
        AdapterRequest::new(
            Operation::Submit,
            "another-installation",
            1,
            "demo-build",
            "slow-optional",
            "demo-build:slow-optional:a9",
            "d9",
            9,
            &format!("sha256:{}", "0".repeat(64)),
            Vec::new(),
        ),
        3,
        ObservationStatus::Unsupported,
        Vec::new(),
        Vec::new(),
        None,
        Some("not this attempt".to_owned()),
    );
    let temporary = folder.join("observations/.000003.json.tmp");
    std::fs::write(&temporary, foreign.canonical_bytes()).unwrap();
    std::fs::rename(&temporary, folder.join("observations/000003.json")).unwrap();
}

/// Path 1 of issue 11, from the console: the Leader redirects while another work item runs.
/// The task is dispatched again (not left "nothing left to run"), the running item's completion
/// is recorded, and the screen's work-item status follows the journal to the review.
#[test]
fn a_console_redirect_while_another_item_runs_lets_it_finish() {
    let desk = Desk::new();
    desk_valp(&desk, &["init"]);
    desk.start_valp(&[]);
    desk.wait_for("Candidates (1)");
    desk.keys(&["Enter"]);
    desk.wait_for("as the Leader?");
    desk.keys(&["y"]);
    // The main screen (the dialog said "epoch 1" too): the Leader is bound.
    desk.wait_for("Tasks (0)");
    std::fs::write(
        desk.path().join("turn.toml"),
        "schema_version = \"valp-plan.v1\"\ntask_id = \"turn\"\ngoal = \"test\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n\
         [[work_items]]\nid = \"drop\"\nrequirement = \"optional\"\n\
         run = { adapter = \"process\", argv = [\"sleep\", \"60\"] }\n\n\
         [[work_items]]\nid = \"keep\"\nrequirement = \"required\"\n\
         run = { adapter = \"process\", argv = [\"sleep\", \"3\"] }\n",
    )
    .unwrap();
    desk_valp(&desk, &["task", "publish", "turn.toml"]);
    desk.wait_for("drop optional running");
    desk.wait_for("keep required running");
    // Redirect, superseding `drop` (the first row of the dialog's list), while `keep` runs.
    desk.keys(&["R"]);
    desk.keys(&["-l", "drop the slow part"]);
    desk.keys(&["Tab", "Space", "Enter"]);
    desk.wait_for("Superseded work items: drop.");
    desk.keys(&["y"]);
    desk.wait_for("drop optional cancelled");
    // `keep` is still running; the System dispatches the task again and records its end.
    let reviewing = desk.wait_for("keep required completed");
    assert!(!reviewing.contains("nothing left to run"), "{reviewing}");
    desk.wait_for("turn reviewing");
    desk.quit();
    let status = desk_valp(&desk, &["task", "status", "turn"]);
    assert!(status.contains("reviewing"), "{status}");
}

/// The attempt folder `dir` holds one Leader message and its proof, each valid.
fn assert_message_records_valid(dir: &Path) {
    for (folder, schema) in [
        ("control", "console/tmux-message.schema.json"),
        ("proofs", "console/tmux-message-proof.schema.json"),
    ] {
        let validator = valp_tests::schemas::validator(schema);
        let files: Vec<PathBuf> = std::fs::read_dir(dir.join(folder))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.to_string_lossy().contains("/message-"))
            .collect();
        assert_eq!(files.len(), 1, "{folder}: {files:?}");
        let value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        let found = valp_tests::schemas::errors(&validator, &value);
        assert!(found.is_empty(), "{}: {found:?}", files[0].display());
    }
}

/// Kills valp's private tmux server of the control root under `path` when the test ends.
struct AgentServer(PathBuf);

impl Drop for AgentServer {
    fn drop(&mut self) {
        let _ = valp_tests::tmux::tmux_at(&self.0, &["kill-server"]);
    }
}

/// `valp --no-default-sockets ARGS…` in `desk`'s folder, without a Doctor tmux socket of its
/// own; its stdout, once it succeeded.
fn desk_valp(desk: &Desk, args: &[&str]) -> String {
    let mut all = vec!["--no-default-sockets"];
    all.extend_from_slice(args);
    let run = valp_answering(desk.path(), &desk.path().join("no-tmux"), &all, "").unwrap();
    assert_eq!(
        run.code,
        Some(0),
        "valp {args:?}: {}{}",
        run.stdout,
        run.stderr
    );
    run.stdout
}

/// A desk whose console selected its one candidate as the Leader and shows no task yet, with
/// the guard that stops the tmux adapter's private server (dropped before the desk).
fn desk_with_a_leader() -> (Desk, AgentServer) {
    let desk = Desk::new();
    let server = AgentServer(desk.path().join(".valp/runtime/tmux/.server.sock"));
    desk_valp(&desk, &["init"]);
    desk.start_valp(&[]);
    desk.wait_for("Candidates (1)");
    desk.keys(&["Enter"]);
    desk.wait_for("as the Leader?");
    desk.keys(&["y"]);
    desk.wait_for("Tasks (0)");
    (desk, server)
}

/// The Agent pane on a real demo agent run by the tmux adapter: its live tail and state
/// (blocked on its permission question, with the rule), the interrupt, and a Leader message
/// typed in the pane that reaches the agent (its screen shows it) and is recorded with its
/// delivery in the task's operator-action journal.
#[test]
fn the_agent_pane_shows_a_tmux_agent_live_and_delivers_a_leader_message() {
    let (desk, _server) = desk_with_a_leader();
    let valp = valp_binary().unwrap();
    std::fs::write(
        desk.path().join("pane.toml"),
        format!(
            "schema_version = \"valp-plan.v1\"\ntask_id = \"pane\"\ngoal = \"test\"\n\n\
             [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n\
             [[work_items]]\nid = \"ask\"\nrequirement = \"required\"\n\
             expected_evidence = [\"out/asked.md\"]\n[work_items.run]\nadapter = \"tmux\"\n\
             agent = \"demo\"\ncommand = [{:?}, \"demo-agent\", \"--seed\", \"5\", \"--ask\", \
             \"always\"]\nprompt = \"Write @out/asked.md please\"\ntimeout_seconds = 90\n",
            valp.to_str().unwrap()
        ),
    )
    .unwrap();
    desk_valp(&desk, &["task", "publish", "pane.toml"]);
    desk.wait_for("ask required running");
    // Work items pane, the agent's item: the Agent pane shows the question and the rule.
    // (The key is offered once the supervisor recorded the agent's first state.)
    desk.keys(&["Tab"]);
    desk.wait_for("A agent");
    desk.keys(&["A"]);
    desk.wait_for("Agent · pane / ask · pane:ask:a1");
    let blocked = desk.wait_for("Allow demo-agent to");
    assert!(blocked.contains("blocked: "), "{blocked}");
    assert!(blocked.contains(" matched "), "{blocked}");
    assert!(blocked.contains("attach: tmux -S '"), "{blocked}");
    // The interrupt (Escape: "no") returns the agent to its prompt.
    desk.keys(&["i"]);
    desk.wait_for("the agent's interrupt keys requested for pane:ask:a1");
    desk.wait_for("idle");
    // A message typed in the pane reaches the agent: its screen shows it.
    desk.keys(&["m"]);
    desk.keys(&["-l", "Also write @out/more.md"]);
    desk.wait_for("message › Also write @out/more.md");
    desk.keys(&["Enter"]);
    desk.wait_for("recorded and requested; its delivery proof:");
    // The agent took it: its next turn asks to write the file the message names.
    desk.wait_for("Allow demo-agent to write out/more.md?");
    // Recorded: the Leader's message, then the tmux adapter's delivery with its proof.
    let journal = desk.path().join(".valp/tasks/pane/actions.jsonl");
    let deadline = Instant::now() + PATIENCE;
    let lines = loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.contains("\"kind\":\"delivery\"") {
            break text;
        }
        assert!(Instant::now() < deadline, "no delivery recorded:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let kinds: Vec<String> = lines
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["entry"]["kind"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(kinds, ["interrupt", "message", "delivery"], "{lines}");
    assert!(lines.contains("\"outcome\":\"delivered\""), "{lines}");
    assert!(
        lines.contains("\"summary\":\"Also write @out/more.md\""),
        "{lines}"
    );
    // The message and its proof have the shapes their schemas give.
    assert_message_records_valid(
        &desk
            .path()
            .join(".valp/runtime/tmux/attempts")
            .join(attempt_folder("pane:ask:a1")),
    );
    desk.keys(&["Escape"]);
    desk.wait_for("Work items · pane");
    desk.quit();
}

/// Issue 16's needs-you queue through the real binary: the demo reaches its review, the queue
/// and the title count it, `n` jumps to it and `s` acknowledges it; after a restart the
/// acknowledgement is still there (read back from `console/acknowledged.json`), and `n` then
/// `p` pass the review; the start after that shows the pass in Activity, rebuilt from the
/// journal.
#[test]
fn the_needs_queue_shows_the_review_n_jumps_to_it_and_acknowledgements_survive_a_restart() {
    let desk = Desk::new();
    desk.demo_with_its_leader();
    desk.wait_for("slow-optional optional running in flight");
    // Cancel the slow optional item so the review comes at once.
    desk.keys(&["Tab", "j", "j", "j", "j", "x"]);
    desk.wait_for("Cancel work item slow-optional of task demo-build?");
    desk.keys(&["y"]);
    // The demo's agent items (tmux) run before the review.
    let queued = desk.wait_for_within("Needs you (1)", PATIENCE * 6);
    assert!(queued.contains("valp 1 needs you"), "{queued}");
    assert!(
        queued.contains("review demo-build the work is verified:")
            && queued.contains("p pass review · f reject review"),
        "{queued}"
    );

    // `n` selects the task in the Tasks pane; `s` marks the need as seen.
    desk.keys(&["n", "s"]);
    let seen = desk.wait_for("acknowledged review:demo-build:");
    assert!(seen.contains("Needs you (0)"), "{seen}");
    assert!(seen.contains("✓ review demo-build"), "{seen}");
    desk.quit();
    let file =
        std::fs::read_to_string(desk.path().join(".valp/console/acknowledged.json")).unwrap();
    // The key names the revision the review waits at; the pass is the next one.
    let reviewing: i64 = file
        .split("\"key\":\"review:demo-build:r")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|revision| revision.parse().ok())
        .unwrap_or_else(|| panic!("{file}"));

    // The next start reads the acknowledgement back.
    desk.start_valp(&[]);
    let restarted = desk.wait_for("✓ review demo-build");
    assert!(restarted.contains("Needs you (0)"), "{restarted}");
    assert!(!restarted.contains("needs you"), "{restarted}");
    desk.keys(&["n", "p"]);
    desk.wait_for("Pass the review of task demo-build?");
    desk.keys(&["y"]);
    let done = desk.wait_for("demo-build done");
    let done = if done.contains("Nothing waits for you.") {
        done
    } else {
        desk.wait_for("Nothing waits for you.")
    };
    assert!(done.contains("Needs you (0)"), "{done}");
    desk.quit();

    // Activity is rebuilt from the journal: the next start shows the Leader's pass.
    desk.start_valp(&[]);
    desk.wait_for("reopened 20");
    // The Activity pane: Tab past Tasks, Work items, Observations and Rejected files.
    desk.keys(&["Tab", "Tab", "Tab", "Tab"]);
    let history = desk.wait_for("demo-build review_passed accepted at revision");
    assert!(
        history.contains(&format!(
            "review_passed accepted at revision {} (the Leader's)",
            reviewing + 1
        )),
        "{history}"
    );
    desk.quit();
}

/// The stage the workflow strip marks current (`▶ execute`), if any.
fn current_stage(flat: &str) -> Option<String> {
    let after = flat.split("▶ ").nth(1)?;
    Some(after.split_whitespace().next()?.to_owned())
}

/// Presses `key` in the state machine view until the row under the cursor (spelled out below
/// the list) is `detail` (e.g. `review_passed on task`). Each press is drawn before the next
/// one is sent, so the cursor never runs past the row.
fn cursor_to(desk: &Desk, key: &str, detail: &str) {
    for _ in 0..120 {
        let before = flatten(&desk.screen());
        if before.contains(detail) {
            return;
        }
        desk.keys(&[key]);
        let deadline = Instant::now() + Duration::from_secs(2);
        while flatten(&desk.screen()) == before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(SETTLE);
    }
    desk.wait_for(detail);
}

/// Selects the demo plan's task and watches its strip while it runs: executing with the dispatch
/// stage proven, then (after the slow optional item is cancelled from the keyboard) in review;
/// the stages marked current on the way only ever move on.
fn strip_moves_on_until_review(desk: &Desk) {
    // The plan's task: the strip moves on stage by stage.
    desk.keys(&["j"]);
    desk.wait_for("› demo-build");
    let mut stages: Vec<String> = Vec::new();
    let mut note = |flat: &str| {
        if let Some(stage) = current_stage(flat)
            && stages.last() != Some(&stage)
        {
            stages.push(stage);
        }
    };
    let deadline = Instant::now() + PATIENCE;
    loop {
        let flat = flatten(&desk.screen());
        note(&flat);
        if flat.contains("slow-optional optional running") && flat.contains("▶ execute") {
            assert!(flat.contains("✓ dispatch › ▶ execute"), "{flat}");
            assert!(flat.contains("submissions proven"), "{flat}");
            break;
        }
        assert!(Instant::now() < deadline, "never executing:\n{flat}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Cancel the slow optional item: the task goes on to review.
    desk.keys(&["Tab", "j", "j", "j", "j", "x"]);
    desk.wait_for("Cancel work item slow-optional of task demo-build?");
    desk.keys(&["y"]);
    // The demo's agent items (tmux) run on after the cancel: longer than one patience.
    let deadline = Instant::now() + 6 * PATIENCE;
    let review = loop {
        let flat = flatten(&desk.screen());
        note(&flat);
        if flat.contains("Verify / Review / Fix: waiting for the Leader's review") {
            break flat;
        }
        assert!(Instant::now() < deadline, "never in review:\n{flat}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(review.contains("✓ execute › ▶ verify"), "{review}");
    // Every item's submission proven but the cancelled one's (its attempt no longer shows it).
    let proof = review.split("dispatch: ").nth(1).unwrap();
    let (proven, total) = proof.split(' ').next().unwrap().split_once('/').unwrap();
    assert!(
        proof.starts_with(&format!("{proven}/{total} submissions")),
        "{review}"
    );
    assert_eq!(
        proven.parse::<usize>().unwrap() + 1,
        total.parse::<usize>().unwrap(),
        "{review}"
    );
    let at: Vec<usize> = stages
        .iter()
        .map(|stage| SHORT_STAGES.iter().position(|name| name == stage).unwrap())
        .collect();
    assert!(at.windows(2).all(|pair| pair[0] < pair[1]), "{stages:?}");
    assert!(
        stages.ends_with(&["execute".to_owned(), "verify".to_owned()]),
        "{stages:?}"
    );
    eprintln!("stages the strip showed as current: {stages:?}");
}

/// Issue 15's two flow views on the demo: the strip of the seeded task in recording (no Done
/// closure: the view lists `recording_completed` refused by the Done gate with its reasons);
/// then the plan's task, whose strip moves stage by stage as it runs; in review, the view lists
/// the Leader's review decisions as allowed and `recording_completed` as refused by the
/// transition table; a review refused by the kernel (the task is interrupted) is explained in
/// the lister's words; choosing `review_passed` in the view asks as `p` does and closes the task.
#[test]
fn the_flow_views_follow_the_demo_and_propose_through_the_same_dialog() {
    let desk = Desk::new();
    // Seed 5, 20 entries, one work item: the seeded task demo-1 stops in recording.
    desk.demo_with_its_leader_and(&["--entries", "20", "--seed", "5", "--work-items", "1"]);
    let strip =
        desk.wait_for("Approval / Audit / Terminal result: recording through the Done gate");
    assert!(
        strip.contains("✓ verify › ▶ result") && strip.contains("Workflow ✓ authority"),
        "{strip}"
    );
    desk.keys(&["m"]);
    desk.wait_for("State machine · task demo-1");
    let gate = desk.wait_for(
        "recording_completed task VALP-E-DONE-GATE: done_policy_missing; done_closure_missing",
    );
    assert!(gate.contains("status recording · revision 20"), "{gate}");
    desk.keys(&["Escape"]);
    desk.wait_until_gone("State machine · task demo-1");

    strip_moves_on_until_review(&desk);

    // The state machine in review (from the Tasks pane: Tab past Observations, Rejected files,
    // Activity and Needs you).
    desk.keys(&["Tab", "Tab", "Tab", "Tab", "Tab", "m"]);
    desk.wait_for("State machine · task demo-build");
    let machine = desk.wait_for("status reviewing");
    assert!(
        machine.contains("✓ review_passed task → recording · Leader"),
        "{machine}"
    );
    assert!(
        machine.contains("✓ review_rejected task → fixing · Leader"),
        "{machine}"
    );
    cursor_to(&desk, "j", "recording_completed on task");
    desk.wait_for(
        "refused VALP-E-STATE-CONFLICT: the transition table has no edge reviewing \
         --recording_completed--> (allowed from: recording)",
    );
    desk.keys(&["Escape"]);
    desk.wait_until_gone("State machine · task demo-build");

    // A review the kernel refuses (the task is interrupted) is explained in the lister's words.
    desk.keys(&["i"]);
    desk.wait_for("INTERRUPTED");
    desk.keys(&["p"]);
    desk.wait_for("Pass the review of task demo-build?");
    desk.keys(&["y"]);
    desk.wait_for("VALP-E-STATE-CONFLICT");
    desk.wait_for("the task is interrupted: resume it first");
    desk.keys(&["u"]);
    desk.wait_until_gone("INTERRUPTED");

    // Proposing review_passed from the view: the same dialog as `p`, then the Done gate.
    desk.keys(&["m"]);
    desk.wait_for("status reviewing");
    cursor_to(&desk, "k", "review_passed on task");
    desk.keys(&["Enter"]);
    desk.wait_for("Pass the review of task demo-build?");
    desk.keys(&["y"]);
    desk.wait_for("status done");
    desk.keys(&["Escape"]);
    let done = desk.wait_for("result: done: the Done gate passed");
    assert!(done.contains("✓ verify › ✓ result"), "{done}");
    desk.quit();
}

/// Issue 13's approval from the console: a demo agent run by the tmux adapter with its Claude
/// hooks asks permission (`PermissionRequest`, waiting for the Leader); the request is in the
/// needs-you queue with its tool and file; `n` then `y` and the confirmation allow it; the
/// agent gets the allow (it writes the file and completes) and the task's operator-action
/// journal holds the decision with the decider, then its delivery.
#[test]
fn an_agents_permission_request_in_the_queue_is_allowed_from_the_console() {
    let (desk, _server) = desk_with_a_leader();
    let valp = valp_binary().unwrap();
    let valp = valp.to_str().unwrap();
    let hook = format!("'{valp}' hook claude --wait-ms 60000");
    std::fs::write(
        desk.path().join("asks.toml"),
        format!(
            "schema_version = \"valp-plan.v1\"\ntask_id = \"asks\"\ngoal = \"test\"\n\n\
             [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n\
             [[work_items]]\nid = \"ask\"\nrequirement = \"required\"\n\
             expected_evidence = [\"out/asked.md\"]\n[work_items.run]\nadapter = \"tmux\"\n\
             agent = \"demo\"\ncommand = [{valp:?}, \"demo-agent\", \"--seed\", \"5\", \"--ask\", \
             \"always\", \"--hook-command\", {hook:?}]\nprompt = \"Write @out/asked.md please\"\n\
             timeout_seconds = 90\n"
        ),
    )
    .unwrap();
    desk_valp(&desk, &["task", "publish", "asks.toml"]);
    let queued = desk.wait_for_within("agent asks", PATIENCE * 3);
    assert!(
        queued.contains("agent asks asks / ask claude asks to use Write"),
        "{queued}"
    );
    assert!(queued.contains("y allow agent · N deny agent"), "{queued}");
    desk.keys(&["n", "y"]);
    let dialog = desk.wait_for("Allow claude to use Write on task asks?");
    assert!(dialog.contains("file: out/asked.md"), "{dialog}");
    desk.keys(&["y"]);
    let delivered = desk.wait_for("allow delivered: request perm-");
    assert!(
        delivered.contains("answered by your decision ("),
        "{delivered}"
    );
    // The agent got the allow: it writes the file and the item completes.
    desk.wait_for_within("ask required completed", PATIENCE * 3);
    assert!(desk.path().join("out/asked.md").is_file());
    let journal =
        std::fs::read_to_string(desk.path().join(".valp/tasks/asks/actions.jsonl")).unwrap();
    let entries: Vec<serde_json::Value> = journal
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["entry"].clone())
        .collect();
    assert_eq!(entries.len(), 2, "{journal}");
    assert_eq!(entries[0]["kind"], "approval_decision");
    assert_eq!(entries[0]["decision"], "allow");
    assert_eq!(entries[0]["leader_epoch"], 1);
    assert!(
        entries[0]["principal_id"]
            .as_str()
            .is_some_and(|who| !who.is_empty() && delivered.contains(who)),
        "{journal}\n{delivered}"
    );
    assert_eq!(entries[1]["kind"], "delivery");
    assert_eq!(entries[1]["delivery"]["outcome"], "delivered");
    desk.quit();
}
