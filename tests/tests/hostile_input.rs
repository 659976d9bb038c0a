//! Hostile input at the command line, through the real `valp` binary: a torn inbox line before
//! `valp report`, plan paths through symbolic links, a damaged task among healthy ones, and
//! operator-typed text holding escape sequences and bidirectional controls. Each test names the
//! exact text valp prints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::io::Write as _;

use valp_runtime::abi::attempt_folder;
use valp_tests::cli::valp_in;
use valp_tests::project::{Project, external_item, item, plan};

#[test]
fn a_report_after_a_torn_inbox_line_starts_a_fresh_line_and_is_acted_on() {
    let project = Project::new();
    project.publish("manual", &plan("manual", &external_item("read", &[], &[])));
    project.ok(&["run", "--once"]);
    project.ok(&["report", "manual:read:a1", "accepted"]);
    let relative = format!(
        "inbox/valp-report/{}.jsonl",
        attempt_folder("manual:read:a1")
    );
    let file = project.control_root().join(&relative);
    // A tool died halfway through a line: a fragment without its LF.
    let torn_at = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"{\"request\":{\"attempt_id\":\"manual:re")
        .unwrap();

    let completed = project.ok(&["report", "manual:read:a1", "completed"]);
    assert_eq!(
        completed,
        format!("reported completed for manual:read:a1 as sequence 2: {relative}\n")
    );
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(lines[1], "{\"request\":{\"attempt_id\":\"manual:re");

    // The report is read and acted on; the fragment is listed with its file and offset.
    let run = project.ok(&["run", "--once"]);
    assert!(run.contains("manual  attempt_completed"), "{run}");
    assert_eq!(project.item_status("manual", "read"), "completed");
    let status = project.ok(&["task", "status", "manual"]);
    assert!(
        status.lines().any(|line| line
            == format!(
                "  rejected {relative} (line at byte {torn_at}): malformed: EOF while parsing a \
                 string at line 1 column 35"
            )),
        "{status}"
    );
}

#[test]
fn a_record_another_tool_glued_to_a_torn_line_is_not_lost() {
    let project = Project::new();
    project.publish("glued", &plan("glued", &external_item("read", &[], &[])));
    project.ok(&["run", "--once"]);
    project.ok(&["report", "glued:read:a1", "accepted"]);
    let relative = format!(
        "inbox/valp-report/{}.jsonl",
        attempt_folder("glued:read:a1")
    );
    let file = project.control_root().join(&relative);
    // A tool that does not repair torn lines: a fragment, then the record right after it.
    let record = std::fs::read(&file).unwrap();
    let fragment = b"{\"request\":{\"attempt_id\":\"glu";
    std::fs::write(&file, [&fragment[..], &record].concat()).unwrap();

    let completed = project.ok(&["report", "glued:read:a1", "completed"]);
    assert_eq!(
        completed,
        format!("reported completed for glued:read:a1 as sequence 2: {relative}\n")
    );
    let run = project.ok(&["run", "--once"]);
    assert!(run.contains("glued  attempt_running"), "{run}");
    assert!(run.contains("glued  attempt_completed"), "{run}");
    let status = project.ok(&["task", "status", "glued"]);
    assert!(
        status.lines().any(|line| line
            == format!(
                "  rejected {relative} (line at byte 0): malformed: EOF while parsing a string \
                 at line 1 column 29"
            )),
        "{status}"
    );
}

/// A folder outside the project, and a link `name` to it inside the project.
fn link_outside(project: &Project, name: &str) -> tempfile::TempDir {
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), project.path().join(name)).unwrap();
    outside
}

#[test]
fn a_plan_cwd_through_a_symbolic_link_is_refused_at_publish() {
    let project = Project::new();
    let outside = link_outside(&project, "linkout");
    let plan_text = plan(
        "escape",
        &format!(
            "{}cwd = \"linkout/x\"\n",
            item("touch", "required", &[], &["touch", "made"], &[])
        ),
    );
    let file = project.path().join("escape.toml");
    std::fs::write(&file, plan_text).unwrap();
    let published = project.valp(&["task", "publish", "escape.toml"]);
    assert_eq!(published.code, Some(2), "{}", published.stdout);
    assert_eq!(
        published.stderr,
        "valp: escape.toml: work item touch: cwd \"linkout/x\": linkout is a symbolic link \
         (a plan's paths must lie beneath the project through real folders only); nothing \
         was published\n"
    );
    assert!(!project.control_root().join("tasks/escape").exists());
    assert_eq!(
        valp_tests::entry_names(outside.path()),
        Vec::<String>::new()
    );
}

#[test]
fn expected_evidence_through_a_symbolic_link_is_refused_at_publish() {
    let project = Project::new();
    let _outside = link_outside(&project, "out");
    let plan_text = plan(
        "leak",
        &item("copy", "required", &[], &["true"], &["out/secret.txt"]),
    );
    std::fs::write(project.path().join("leak.toml"), plan_text).unwrap();
    let published = project.valp(&["task", "publish", "leak.toml"]);
    assert_eq!(published.code, Some(2));
    assert_eq!(
        published.stderr,
        "valp: leak.toml: work item copy: expected evidence \"out/secret.txt\": out is a \
         symbolic link (a plan's paths must lie beneath the project through real folders \
         only); nothing was published\n"
    );
}

#[test]
fn a_cwd_that_became_a_symbolic_link_after_publish_is_refused_at_launch() {
    let project = Project::new();
    std::fs::create_dir(project.path().join("work")).unwrap();
    project.publish(
        "later",
        &plan(
            "later",
            &format!(
                "{}cwd = \"work/x\"\n",
                item("touch", "required", &[], &["touch", "made"], &[])
            ),
        ),
    );
    std::fs::remove_dir(project.path().join("work")).unwrap();
    let outside = link_outside(&project, "work");
    let refusal = "cwd \"work/x\": work is a symbolic link (a plan's paths must lie beneath \
                   the project through real folders only)";
    let named = project.valp(&["run", "--once", "later"]);
    assert_eq!(named.code, Some(1), "{}", named.stdout);
    assert_eq!(named.stderr, format!("valp: {refusal}\n"));
    // Without a task named, the task is listed as a problem and the command says so.
    let all = project.valp(&["run", "--once"]);
    assert_eq!(all.code, Some(3), "{}", all.stdout);
    assert!(
        all.stdout
            .lines()
            .any(|line| line == format!("problem: task later: {refusal}")),
        "{}",
        all.stdout
    );
    assert_eq!(
        all.stderr,
        "valp: 1 task could not be read or driven (listed above as problem lines)\n"
    );
    // Nothing was created or run outside.
    assert_eq!(
        valp_tests::entry_names(outside.path()),
        Vec::<String>::new()
    );
}

/// Damages the first entry of `task`'s journal (one byte of its digest changed).
fn damage(project: &Project, task: &str) -> String {
    let journal = project
        .control_root()
        .join(format!("tasks/{task}/journal.jsonl"));
    let mut bytes = std::fs::read(&journal).unwrap();
    let second_line = bytes.iter().position(|&byte| byte == b'\n').unwrap() + 1;
    let at = second_line + 20;
    bytes[at] = if bytes[at] == b'a' { b'b' } else { b'a' };
    std::fs::write(&journal, bytes).unwrap();
    journal.display().to_string()
}

#[test]
fn one_damaged_task_does_not_stop_status_or_run_for_the_others() {
    let project = Project::new();
    let one = |task: &str| plan(task, &item("say", "required", &[], &["true"], &[]));
    project.publish("good", &one("good"));
    project.publish("bad", &one("bad"));
    let journal = damage(&project, "bad");

    let status = project.valp(&["task", "status"]);
    assert_eq!(status.code, Some(3), "{}", status.stderr);
    let problem = status
        .stdout
        .lines()
        .find(|line| line.starts_with("problem: "))
        .unwrap_or_else(|| panic!("{}", status.stdout));
    assert!(
        problem.starts_with(&format!(
            "problem: task folder tasks/bad: VALP-E-KERNEL-STORE-CORRUPT: {journal}:2: byte "
        )),
        "{problem}"
    );
    assert!(status.stdout.contains("task good  "), "{}", status.stdout);
    assert_eq!(
        status.stderr,
        "valp: 1 task could not be read or driven (listed above as problem lines)\n"
    );

    let run = project.valp(&["run", "--once"]);
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(run.stdout.contains(problem), "{}", run.stdout);
    assert!(
        run.stdout.contains("good  launched good:say:a1"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stderr,
        "valp: 1 task could not be read or driven (listed above as problem lines)\n"
    );
}

#[test]
fn the_console_lists_a_damaged_task_beside_the_others() {
    use valp_view::Backend as _;

    let project = Project::new();
    let one = |task: &str| plan(task, &item("say", "required", &[], &["true"], &[]));
    project.publish("good", &one("good"));
    project.publish("bad", &one("bad"));
    let journal = damage(&project, "bad");
    let root = valp_store::ControlRoot::open(
        &project.control_root(),
        std::sync::Arc::new(valp_store::io::OsStorage),
    )
    .unwrap();
    let options = valp_runtime::doctor::ObserveOptions {
        scan_default_sockets: false,
        ..valp_runtime::doctor::ObserveOptions::default()
    };
    let clock = valp_runtime::clock::SystemClock;
    let mut backend = valp_runtime::system::SystemBackend::open(root, &clock, options).unwrap();
    let view = backend.view();
    let rows: Vec<(&str, &str)> = view
        .tasks
        .iter()
        .map(|row| (row.task_id.as_str(), row.status.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("bad", "unreadable: VALP-E-KERNEL-STORE-CORRUPT"),
            ("good", "routing_validation")
        ]
    );
    assert!(
        view.tasks[0]
            .waiting
            .starts_with(&format!("VALP-E-KERNEL-STORE-CORRUPT: {journal}:2: byte ")),
        "{}",
        view.tasks[0].waiting
    );
}

#[test]
fn errors_show_operator_input_without_escape_sequences_and_with_visible_bidi_controls() {
    let project = Project::new();
    let task = project.valp(&["task", "status", "ev\u{1b}[31mil\u{202e}di"]);
    assert_eq!(task.code, Some(1));
    assert_eq!(
        task.stderr,
        format!(
            "valp: no task \"ev\\u{{1b}}[31mil\\u{{202e}}di\" in {}\n",
            project.control_root().display()
        )
    );
    let publish = project.valp(&["task", "publish", "ev\u{1b}[2Jil\u{200f}.toml"]);
    assert_eq!(publish.code, Some(2));
    assert_eq!(
        publish.stderr,
        "valp: cannot read evil\\u{200f}.toml: No such file or directory (os error 2)\n"
    );
    let root = valp_in(
        project.path(),
        None,
        &[
            "--root",
            "/nowhere\u{1b}]0;pwned\u{7}/x\u{61c}",
            "task",
            "status",
        ],
    )
    .unwrap();
    assert_eq!(root.code, Some(1));
    assert_eq!(
        root.stderr,
        "valp: /nowhere/x\\u{61c}/.valp is not a valp control root (no installation.json); \
         run `valp init` first\n"
    );
    let report = project.valp(&["report", "a\u{200e}b\u{1b}[1m", "accepted"]);
    assert_eq!(report.code, Some(1));
    assert!(
        report
            .stderr
            .starts_with("valp: no external attempt a\\u{200e}b is waiting for a report: "),
        "{}",
        report.stderr
    );
    assert!(!report.stderr.contains('\u{1b}'), "{}", report.stderr);
}

#[test]
fn output_shows_a_typed_root_without_escape_sequences() {
    let temp = tempfile::tempdir().unwrap();
    let typed = temp.path().join("p\u{1b}[31mq\u{202e}r");
    let init = valp_in(
        temp.path(),
        None,
        &[
            "--root",
            typed.to_str().unwrap(),
            "init",
            "--installation-id",
            "inst-typed",
        ],
    )
    .unwrap();
    assert_eq!(init.code, Some(0), "{}", init.stderr);
    assert_eq!(
        init.stdout,
        format!(
            "initialised installation inst-typed at {}/pq\\u{{202e}}r/.valp\n",
            temp.path().display()
        )
    );
}
