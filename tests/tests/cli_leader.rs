//! `valp leader …` and `valp task handoff` as a person runs them: typed confirmations, the
//! kernel's refusals with their codes, `leader show`'s verification, and the handoff of a task
//! from a fenced epoch. Real tmux on a private socket; needs tmux (CI installs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use valp_tests::leader_project::LeaderProject;
use valp_tests::project::{alive, recorded_pid, wait_until};
use valp_tests::schemas::{errors, validator};

/// A project of installation `inst-cli`.
fn new_project() -> LeaderProject {
    LeaderProject::new("inst-cli")
}

fn binding(project: &LeaderProject) -> Option<String> {
    std::fs::read_to_string(project.path().join(".valp/leader/binding.json")).ok()
}

fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"))
}

#[test]
fn selection_needs_the_typed_candidate_id() {
    let project = new_project();
    let _server = project.server();
    let pane = project.pane("%0");

    let shown = project.run(&["leader", "show"], "");
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    assert_eq!(
        line(&shown.stdout, "leader "),
        "leader        none selected"
    );
    assert!(line(&shown.stdout, "binding file").ends_with("absent (no Leader bound)"));

    let listed = project.run(&["leader", "candidates"], "");
    assert_eq!(listed.stdout.lines().count(), 2, "{}", listed.stdout);
    assert!(
        listed
            .stdout
            .lines()
            .nth(1)
            .unwrap()
            .starts_with(&format!("2. {pane} "))
    );

    for wrong in ["", "\n", "%0\n", &format!("{pane} \n")] {
        let refused = project.run(&["leader", "select", &pane], wrong);
        assert_eq!(refused.code, Some(2), "{wrong:?}: {}", refused.stdout);
        assert!(
            refused
                .stdout
                .contains("Type the candidate id to confirm: ")
        );
        assert_eq!(
            refused.stderr,
            format!("valp: not confirmed (the typed text was not {pane:?}); no Leader was bound\n")
        );
        assert_eq!(binding(&project), None);
    }
    let shown = project.run(&["leader", "show"], "");
    assert_eq!(
        line(&shown.stdout, "leader "),
        "leader        none selected"
    );

    let selected = project.run(&["leader", "select", &pane], &format!("{pane}\n"));
    assert_eq!(selected.code, Some(0), "{}", selected.stderr);
    assert!(
        selected
            .stdout
            .contains(&format!("Leader selected: {pane} (tmux:")),
        "{}",
        selected.stdout
    );
    assert!(selected.stdout.contains("), epoch 1\n"));
    let binding = binding(&project).unwrap();
    assert!(binding.contains("\"epoch\":1,"));
    assert!(binding.contains("\"schema_version\":\"valp-leader-binding.v1\""));

    let shown = project.run(&["leader", "show"], "");
    // installation_initialized, discovery started and completed (first attempt), then
    // approved, activated: the refused attempts and the selection saw the same candidates, so
    // they recorded no observation of their own.
    assert_eq!(
        line(&shown.stdout, "status"),
        "status        active (revision 5)"
    );
    assert_eq!(line(&shown.stdout, "epoch "), "epoch         1");
    assert!(line(&shown.stdout, "proof now").starts_with(&format!("proof now     proven: {pane}")));
    assert!(line(&shown.stdout, "binding file").ends_with("matches the ledger"));
    assert!(line(&shown.stdout, "  epoch 1 ").contains(&format!("active  {pane}")));

    let again = project.run(&["leader", "select", &pane, "--yes"], "");
    assert_eq!(again.code, Some(1));
    assert!(
        again.stderr.contains("use `valp leader rotate`"),
        "{}",
        again.stderr
    );
}

#[test]
fn show_says_when_the_binding_is_not_proven_and_changes_nothing() {
    let project = new_project();
    let server = project.server();
    let pane = project.pane("%0");
    let selected = project.run(&["leader", "select", &pane, "--yes"], "");
    assert_eq!(selected.code, Some(0), "{}", selected.stderr);
    let ledger = project.path().join(".valp/installation/journal.jsonl");
    server.kill();
    let before = std::fs::read(&ledger).unwrap();
    let shown = project.run(&["leader", "show"], "");
    assert_eq!(shown.code, Some(0), "{}", shown.stderr);
    assert_eq!(
        line(&shown.stdout, "proof now"),
        format!("proof now     NOT proven: {pane} is not observed now")
    );
    assert_eq!(
        std::fs::read(&ledger).unwrap(),
        before,
        "show writes nothing"
    );
}

#[test]
fn the_kernel_refuses_unobserved_candidates_with_its_code() {
    let project = new_project();
    let _server = project.server();
    let bogus = project.pane("%7");
    let refused = project.run(&["leader", "select", &bogus, "--yes"], "");
    assert_eq!(refused.code, Some(1));
    assert_eq!(
        refused.stderr,
        format!(
            "valp: VALP-E-PERMISSION-DENIED: the principal may not do this: {bogus} was not \
             among the candidates just observed (`valp leader candidates` lists them)\n"
        )
    );
    assert_eq!(binding(&project), None);

    let pane = project.pane("%0");
    project.run(&["leader", "select", &pane, "--yes"], "");
    let refused = project.run(&["leader", "rotate", &bogus, "--yes"], "");
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .starts_with("valp: VALP-E-PERMISSION-DENIED: ")
    );
    // Rotating to the session already bound is no rotation.
    let same = project.run(&["leader", "rotate", &pane, "--yes"], "");
    assert_eq!(same.code, Some(1));
    assert!(
        same.stderr.starts_with("valp: VALP-E-PERMISSION-DENIED: "),
        "{}",
        same.stderr
    );
    let shown = project.run(&["leader", "show"], "");
    assert_eq!(
        line(&shown.stdout, "epochs"),
        "epochs        active 1, highest allocated 1"
    );
}

#[test]
fn a_fenced_task_continues_only_through_a_confirmed_handoff() {
    let project = new_project();
    let _server = project.server();
    let demo = project.run(&["demo", "--entries", "60"], "");
    assert_eq!(demo.code, Some(0), "{}", demo.stderr);
    let pane = project.pane("%0");
    project.run(&["leader", "select", &pane, "--yes"], "");

    let current = project.run(&["task", "handoff", "demo-1", "--yes"], "");
    assert_eq!(current.code, Some(1));
    assert_eq!(
        current.stderr,
        "valp: task demo-1 is bound to epoch 1, the active one: there is nothing to hand over\n"
    );

    let rotated = project.run(&["leader", "rotate", &project.human(), "--yes"], "");
    assert_eq!(rotated.code, Some(0), "{}", rotated.stderr);
    let shown = project.run(&["leader", "show"], "");
    assert_eq!(
        line(&shown.stdout, "  demo-1"),
        "  demo-1  epoch 1  needs `valp task handoff` to continue"
    );

    let refused = project.run(&["task", "handoff", "demo-1"], "demo\n");
    assert_eq!(refused.code, Some(2));
    assert!(refused.stderr.contains("nothing was handed over"));

    let handed = project.run(&["task", "handoff", "demo-1"], "demo-1\n");
    assert_eq!(handed.code, Some(0), "{}", handed.stderr);
    let summary = handed.stdout.lines().last().unwrap();
    assert!(
        summary.starts_with(
            "Type the task id to confirm: handed over task demo-1 -> demo-1-e2 (epoch 1 -> 2): "
        ),
        "{summary}"
    );

    let twice = project.run(&["task", "handoff", "demo-1", "--yes"], "");
    assert_eq!(twice.code, Some(1));
    assert_eq!(
        twice.stderr,
        "valp: task demo-1 was already handed over to demo-1-e2 (epoch 1 -> 2)\n"
    );

    let shown = project.run(&["leader", "show"], "");
    assert_eq!(
        line(&shown.stdout, "  task demo-1"),
        "  task demo-1 -> demo-1-e2  (epoch 1 -> 2)"
    );
    assert_eq!(
        line(&shown.stdout, "  demo-1 "),
        "  demo-1  epoch 1  handed over to demo-1-e2"
    );
    let verified = project.run(&["verify"], "");
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);
    assert!(
        verified
            .stdout
            .ends_with("verify: 3 journals ok, 0 problems\n"),
        "{}",
        verified.stdout
    );
}

#[test]
fn a_handoff_needs_a_re_proven_leader() {
    let project = new_project();
    let server = project.server();
    project.run(&["demo", "--entries", "10"], "");
    project.run(&["leader", "select", &project.pane("%0"), "--yes"], "");
    server.kill();
    let refused = project.run(&["task", "handoff", "demo-1", "--yes"], "");
    assert_eq!(refused.code, Some(1));
    assert!(
        refused
            .stderr
            .starts_with("valp: the Leader session is not re-proven ("),
        "{}",
        refused.stderr
    );
}

#[test]
fn help_explains_the_authority_commands() {
    let project = new_project();
    let help = project.run(&["leader", "--help"], "");
    for command in ["candidates", "select", "rotate", "show"] {
        assert!(
            help.stdout.contains(&format!("  {command} ")),
            "{}",
            help.stdout
        );
    }
    let select = project.run(&["leader", "select", "--help"], "");
    assert!(select.stdout.contains("type its"), "{}", select.stdout);
    assert!(select.stdout.contains("VALP-E-PERMISSION-DENIED"));
    let handoff = project.run(&["task", "handoff", "--help"], "");
    assert!(handoff.stdout.contains("--as <ID>"), "{}", handoff.stdout);
}

#[test]
fn a_handed_over_planned_task_runs_its_unfinished_work_under_the_new_epoch() {
    let project = new_project();
    let _server = project.server();
    project.run(&["leader", "select", &project.pane("%0"), "--yes"], "");
    std::fs::write(
        project.path().join("plan.toml"),
        "schema_version = \"valp-plan.v1\"\ntask_id = \"ship\"\ngoal = \"test\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n\
         [[work_items]]\nid = \"first\"\nrequirement = \"required\"\n\
         run = { adapter = \"process\", argv = [\"true\"] }\n\n\
         [[work_items]]\nid = \"second\"\nrequirement = \"required\"\n\
         dependencies = [{ id = \"first\", kind = \"hard\" }]\n\
         run = { adapter = \"process\", argv = [\"test\", \"-f\", \"go\"] }\n",
    )
    .unwrap();
    let published = project.run(&["task", "publish", "plan.toml"], "");
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    // `second` fails until the file `go` exists: the task stops with work left.
    let ran = project.run(&["run", "--timeout", "60"], "");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let status = project.run(&["task", "status", "ship"], "");
    assert!(
        line(&status.stdout, "  first ").contains("completed"),
        "{}",
        status.stdout
    );
    assert!(
        line(&status.stdout, "  second ").contains("blocked"),
        "{}",
        status.stdout
    );

    project.run(&["leader", "rotate", &project.human(), "--yes"], "");
    let fenced = project.run(&["run", "ship", "--once"], "");
    assert_eq!(fenced.code, Some(1), "{}", fenced.stdout);
    assert!(fenced.stderr.contains("fenced"), "{}", fenced.stderr);

    let handed = project.run(&["task", "handoff", "ship", "--yes"], "");
    assert_eq!(handed.code, Some(0), "{}", handed.stderr);
    // The successor carries the unfinished item only, with the predecessor's plan cut down
    // to it, so the System can run it.
    let successor = project.run(&["task", "status", "ship-e2"], "");
    assert_eq!(successor.code, Some(0), "{}", successor.stderr);
    assert!(
        line(&successor.stdout, "  second ").contains("pending"),
        "{}",
        successor.stdout
    );
    assert!(
        !successor.stdout.contains("  first "),
        "{}",
        successor.stdout
    );

    std::fs::write(project.path().join("go"), "").unwrap();
    let ran = project.run(&["run", "ship-e2", "--timeout", "60"], "");
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(ran.stdout.contains("ship-e2: reviewing"), "{}", ran.stdout);
    let reviewed = project.run(&["review", "ship-e2", "pass"], "");
    assert_eq!(reviewed.code, Some(0), "{}", reviewed.stderr);
    let closed = project.run(&["run", "ship-e2"], "");
    assert!(
        closed
            .stdout
            .contains("recording_completed  (the Done gate passes)"),
        "{}",
        closed.stdout
    );
    let verified = project.run(&["verify"], "");
    assert!(
        verified.stdout.ends_with("0 problems\n"),
        "{}",
        verified.stdout
    );
}

/// Path 2 of issue 11: after a rotation, the handoff stops the fenced task's running work (the
/// successor cannot adopt it) and records what it stopped; acting on the fenced task afterwards
/// is refused with what is true: it was handed over, act on the successor.
#[test]
fn a_handoff_stops_the_fenced_tasks_running_work() {
    let project = new_project();
    let _server = project.server();
    project.run(&["leader", "select", &project.pane("%0"), "--yes"], "");
    std::fs::write(
        project.path().join("plan.toml"),
        "schema_version = \"valp-plan.v1\"\ntask_id = \"nap\"\ngoal = \"test\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n\
         [[work_items]]\nid = \"long\"\nrequirement = \"required\"\n\
         run = { adapter = \"process\", argv = [\"sleep\", \"60\"] }\n",
    )
    .unwrap();
    let published = project.run(&["task", "publish", "plan.toml"], "");
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    let control_root = project.path().join(".valp");
    wait_until("the attempt to run", || {
        project.run(&["run", "--once"], "");
        project
            .run(&["task", "status", "nap"], "")
            .stdout
            .contains("nap:long:a1 g1 running")
    });
    let pid = recorded_pid(&control_root, "nap:long:a1");
    assert!(alive(pid));

    project.run(&["leader", "rotate", &project.human(), "--yes"], "");
    // Before the handoff: the refusal says to hand it over.
    let early = project.run(&["cancel", "nap"], "");
    assert_eq!(early.code, Some(2), "{}", early.stdout);
    assert!(
        early
            .stderr
            .contains("hand it over with `valp task handoff` first"),
        "{}",
        early.stderr
    );
    assert!(alive(pid), "a refused cancel stops nothing");

    let handed = project.run(&["task", "handoff", "nap", "--yes"], "");
    assert_eq!(handed.code, Some(0), "{}", handed.stderr);
    assert!(
        handed
            .stdout
            .contains("stopped nap:long:a1: stopped (proof runtime/process/attempts/"),
        "{}",
        handed.stdout
    );
    assert!(!alive(pid), "the fenced epoch's process is gone");
    // The ledger's handoff binds a record of what was stopped.
    let stopped: Vec<String> = std::fs::read_dir(control_root.join("evidence/sha256"))
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.unwrap().path()).ok())
        .filter(|text| text.contains("valp-handoff-stopped.v1"))
        .collect();
    assert_eq!(stopped.len(), 1, "{stopped:?}");
    let record: serde_json::Value = serde_json::from_str(&stopped[0]).unwrap();
    assert_eq!(
        errors(&validator("console/handoff-stopped.schema.json"), &record),
        Vec::<String>::new()
    );
    assert!(
        stopped[0].contains("\"stopped\":[\"nap:long:a1: stopped (proof "),
        "{}",
        stopped[0]
    );

    // After it: the refusal says it was handed over, and to whom.
    let late = project.run(&["cancel", "nap"], "");
    assert_eq!(late.code, Some(2), "{}", late.stdout);
    assert!(
        late.stderr.contains(
            "it was handed over to nap-e2 (epoch 1 -> 2), which stopped its running work; its \
             journal accepts nothing more: act on nap-e2 instead"
        ),
        "{}",
        late.stderr
    );
    // The successor runs its own attempt, and nothing of epoch 1 runs next to it.
    wait_until("the successor's attempt to run", || {
        project.run(&["run", "nap-e2", "--once"], "");
        project
            .run(&["task", "status", "nap-e2"], "")
            .stdout
            .contains("nap-e2:long:a1 g1 running")
    });
    let successor = recorded_pid(&control_root, "nap-e2:long:a1");
    assert!(alive(successor) && !alive(pid));
    let cancelled = project.run(&["cancel", "nap-e2"], "");
    assert_eq!(cancelled.code, Some(0), "{}", cancelled.stderr);
    assert!(!alive(successor));
}
