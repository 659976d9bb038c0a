//! A valp project in a temporary folder, driven through the real `valp` binary as a person runs
//! it from the command line: `valp init`, the local OS account selected as the Leader, plans
//! published, and the task status read back from `valp task status`.
//!
//! Everything here panics on failure: a helper that cannot do its job is a failed test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::cli::{Run, valp_in};

/// A project folder with a control root and the local OS account as the Leader.
pub struct Project {
    temp: tempfile::TempDir,
}

impl Project {
    /// A project with a control root and the local OS account selected as the Leader.
    pub fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let project = Self { temp };
        assert_eq!(project.valp(&["init"]).code, Some(0));
        let listed = project.valp(&["leader", "candidates"]);
        let human = listed
            .stdout
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap()
            .to_owned();
        let selected = project.valp(&["leader", "select", &human, "--yes"]);
        assert_eq!(selected.code, Some(0), "{}", selected.stderr);
        project
    }

    /// The project folder.
    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// The control root, `<project>/.valp`.
    pub fn control_root(&self) -> PathBuf {
        self.path().join(".valp")
    }

    /// `valp` with the Doctor limited to the local account (no tmux servers).
    pub fn valp(&self, args: &[&str]) -> Run {
        let mut all = vec!["--no-default-sockets"];
        all.extend_from_slice(args);
        valp_in(self.path(), None, &all).unwrap()
    }

    /// `valp args…`, which must exit 0; its standard output.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.valp(args);
        assert_eq!(
            run.code,
            Some(0),
            "valp {args:?}\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
        run.stdout
    }

    /// Writes `plan` to `<name>.toml` in the project and publishes it.
    pub fn publish(&self, name: &str, plan: &str) {
        let file = self.path().join(format!("{name}.toml"));
        std::fs::write(&file, plan).unwrap();
        self.ok(&["task", "publish", file.to_str().unwrap()]);
    }

    /// `valp task status TASK`: the task line, then `item -> (status, position)` (effect,
    /// rejection and inbox lines left out).
    pub fn status(&self, task: &str) -> (String, Vec<(String, String)>) {
        let text = self.ok(&["task", "status", task]);
        let mut lines = text.lines();
        let head = lines.next().unwrap().to_owned();
        let items = lines
            .filter(|line| {
                line.starts_with("  ")
                    && !["  effect", "  rejected ", "  inbox:", "  gate"]
                        .iter()
                        .any(|prefix| line.starts_with(prefix))
            })
            .map(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                (fields[0].to_owned(), fields[2].to_owned())
            })
            .collect();
        (head, items)
    }

    /// The task's status (`executing`, `reviewing`, `done`, …).
    pub fn task_status(&self, task: &str) -> String {
        let (head, _) = self.status(task);
        head.split_whitespace().nth(2).unwrap().to_owned()
    }

    /// A work item's status.
    pub fn item_status(&self, task: &str, item: &str) -> String {
        self.status(task)
            .1
            .into_iter()
            .find(|(id, _)| id == item)
            .unwrap_or_else(|| panic!("no item {item}"))
            .1
    }

    /// Steps the runner (`valp run --once`) until `valp task status TASK` shows `needle`.
    pub fn run_until(&self, task: &str, needle: &str) {
        wait_until(&format!("{needle:?} in the status of {task}"), || {
            self.ok(&["run", "--once"]);
            self.ok(&["task", "status", task]).contains(needle)
        });
    }

    /// Publishes task `task` with one required process item `item` running `sleep 60`, and
    /// steps the runner until its first attempt runs.
    pub fn sleeping(&self, task: &str, item_id: &str) {
        self.publish(
            task,
            &plan(task, &item(item_id, "required", &[], &["sleep", "60"], &[])),
        );
        self.run_until(task, &format!("{task}:{item_id}:a1 g1 running"));
    }

    /// Writes `intent` to `intent.md` and redirects `task` to it, superseding the work item
    /// `supersede` (`valp redirect`, which must exit 0); its standard output.
    pub fn redirect(&self, task: &str, intent: &str, supersede: &str) -> String {
        std::fs::write(self.path().join("intent.md"), intent).unwrap();
        self.ok(&[
            "redirect",
            task,
            "--intent",
            "intent.md",
            "--supersede",
            supersede,
        ])
    }

    /// The process adapter's attempt folders.
    pub fn attempts_dir(&self) -> PathBuf {
        self.control_root().join("runtime/process/attempts")
    }
}

impl Default for Project {
    fn default() -> Self {
        Self::new()
    }
}

/// A plan for `task` with one criterion the Leader's review attests, then `body` (work items,
/// verification, `[done]`, …).
pub fn plan(task: &str, body: &str) -> String {
    format!(
        "schema_version = \"valp-plan.v1\"\ntask_id = \"{task}\"\ngoal = \"test\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"attested by the review\"\n\n{body}"
    )
}

/// A `[[work_items]]` table run by the process adapter: `deps` are `(id, kind)` pairs, `argv`
/// the command (no shell), `expected` its expected evidence; timeout 60 s.
pub fn item(
    id: &str,
    requirement: &str,
    deps: &[(&str, &str)],
    argv: &[&str],
    expected: &[&str],
) -> String {
    let run = format!(
        "[work_items.run]\nadapter = \"process\"\nargv = [{}]\ntimeout_seconds = 60\n",
        quoted(argv)
    );
    work_item(id, requirement, deps, expected, &run)
}

/// A required `[[work_items]]` table run by the external adapter (a tool outside valp).
pub fn external_item(id: &str, deps: &[(&str, &str)], expected: &[&str]) -> String {
    work_item(
        id,
        "required",
        deps,
        expected,
        "run = { adapter = \"external\" }\n",
    )
}

/// A `[[work_items]]` table whose `run` is the given TOML (one or more lines, each ended by
/// LF): the part every adapter's items share, so each test only writes what its adapter needs.
pub fn work_item(
    id: &str,
    requirement: &str,
    deps: &[(&str, &str)],
    expected: &[&str],
    run: &str,
) -> String {
    let deps = deps
        .iter()
        .map(|(dep, kind)| format!("{{ id = \"{dep}\", kind = \"{kind}\" }}"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "[[work_items]]\nid = \"{id}\"\nrequirement = \"{requirement}\"\ndependencies = [{deps}]\n\
         expected_evidence = [{}]\n{run}\n",
        quoted(expected)
    )
}

/// The items of a TOML array of strings, without the brackets.
fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|value| format!("{value:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Polls `condition` every 50 ms for up to 15 s; panics naming `what` when it never holds.
pub fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the process `pid` exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The pid the process adapter recorded for an attempt under `control_root`, once its
/// supervisor (a detached process that may still be starting) has written the proof.
pub fn recorded_pid(control_root: &Path, attempt_id: &str) -> u32 {
    let proof = control_root
        .join("runtime/process/attempts")
        .join(valp_runtime::abi::attempt_folder(attempt_id))
        .join("proofs/process_bound.json");
    wait_until("the process_bound proof", || proof.is_file());
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(proof).unwrap()).unwrap();
    u32::try_from(value["pid"].as_u64().unwrap()).unwrap()
}
