//! Concurrent `valp` commands on one project, and the installation ledger on an unchanged
//! machine: commands that change nothing add nothing, and commands that race for the ledger's
//! next revision never fail on an event id collision.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;

use valp_tests::cli::Run;
use valp_tests::entry_names;
use valp_tests::leader_project::LeaderProject;
use valp_tests::project::{Project, item, plan};

/// The ledger's lines (genesis included).
fn ledger_lines(control_root: &Path) -> usize {
    std::fs::read_to_string(control_root.join("installation/journal.jsonl"))
        .unwrap()
        .lines()
        .count()
}

/// The evidence store's blobs.
fn blobs(control_root: &Path) -> Vec<String> {
    entry_names(&control_root.join("evidence/sha256"))
}

/// What a race for a revision would print.
fn collided(run: &Run) -> bool {
    [&run.stdout, &run.stderr].iter().any(|text| {
        text.contains("IDEMPOTENCY-CONFLICT")
            || text.contains("stale expected_revision")
            || text.contains("was already accepted")
    })
}

#[test]
fn commands_on_an_unchanged_machine_add_nothing_to_the_ledger() {
    let project = Project::new();
    // The first command after the selection re-proves the session: that is a change.
    project.ok(&["run", "--once"]);
    let root = project.control_root();
    let (lines, stored) = (ledger_lines(&root), blobs(&root));
    for args in [
        &["run", "--once"][..],
        &["interrupt", "nosuch"],
        &["resume", "nosuch"],
        &["leader", "show"],
        &["run", "--once"],
    ] {
        let run = project.valp(args);
        assert!(!collided(&run), "{run:?}");
    }
    assert_eq!(ledger_lines(&root), lines);
    assert_eq!(blobs(&root), stored);
}

/// A project whose Leader is the OS account, with task `t` published, and whose next command
/// must record a changed observation (the tmux pane that was there is gone): every command
/// of a concurrent burst races for the same ledger revision.
fn raced_project() -> LeaderProject {
    let project = LeaderProject::new("inst-race");
    let server = project.server();
    let selected = project.run(&["leader", "select", &project.human(), "--yes"], "");
    assert_eq!(selected.code, Some(0), "{}", selected.stderr);
    std::fs::write(
        project.path().join("t.toml"),
        plan("t", &item("say", "required", &[], &["true"], &[])),
    )
    .unwrap();
    let published = project.run(&["task", "publish", "t.toml"], "");
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    drop(server);
    project
}

/// Runs `count` commands at once, `args(i)` for the i-th.
fn burst<'a>(
    project: &LeaderProject,
    count: usize,
    args: impl Fn(usize) -> Vec<&'a str> + Sync,
) -> Vec<(Vec<&'a str>, Run)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..count)
            .map(|index| {
                let args = args(index);
                scope.spawn(move || {
                    let run = project.run(&args, "");
                    (args, run)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    })
}

#[test]
fn two_hundred_concurrent_interrupts_and_resumes_never_collide() {
    let project = raced_project();
    let root = project.path().join(".valp");
    let lines = ledger_lines(&root);
    let runs = burst(&project, 200, |index| {
        vec![
            if index % 2 == 0 {
                "interrupt"
            } else {
                "resume"
            },
            "t",
        ]
    });
    let mut accepted = 0;
    for (args, run) in &runs {
        assert!(!collided(run), "{args:?}: {run:?}");
        match (args[0], run.code) {
            (_, Some(0)) => {
                assert!(run.stdout.starts_with("accepted: task t is "), "{run:?}");
                accepted += 1;
            }
            // The kernel's own answers to the operation, reported as such: the rule, the
            // task's state and why, in words (issue 16).
            ("interrupt", Some(1)) => assert_eq!(
                run.stdout,
                "refused: VALP-E-STATE-CONFLICT: interrupt_requested needs control not \
                 interrupted; control active, intent version current; the task is \
                 routing_validation (interrupted): the task is interrupted: resume it first\n",
                "{run:?}"
            ),
            ("resume", Some(2)) => {
                assert_eq!(run.stderr, "valp: task t is not interrupted\n", "{run:?}");
            }
            _ => panic!("{args:?}: {run:?}"),
        }
    }
    assert!(accepted >= 1);
    // One observation (the pane is gone) and one re-proof of the session, whoever won.
    assert_eq!(ledger_lines(&root), lines + 2);
    let journal = std::fs::read_to_string(root.join("tasks/t/journal.jsonl")).unwrap();
    let controls = journal
        .lines()
        .filter(|line| {
            line.contains("\"value\":\"interrupt_requested-r")
                || line.contains("\"value\":\"interrupt_resumed-r")
        })
        .count();
    assert_eq!(controls, accepted);
}

#[test]
fn four_concurrent_runs_never_collide() {
    let project = raced_project();
    let root = project.path().join(".valp");
    let lines = ledger_lines(&root);
    // Each runner drives the task to the review (two of them may race to start the same
    // attempt's supervisor: the loser finds it running).
    let runs = burst(&project, 4, |_| vec!["run", "--timeout", "60"]);
    for (args, run) in &runs {
        assert!(!collided(run), "{args:?}: {run:?}");
        assert_eq!(run.code, Some(0), "{run:?}");
        assert!(
            run.stdout
                .lines()
                .any(|line| line == "t: reviewing at revision 10"),
            "{run:?}"
        );
    }
    assert_eq!(ledger_lines(&root), lines + 2);
}
