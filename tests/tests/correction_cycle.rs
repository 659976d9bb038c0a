//! The correction cycle a control-root task's journal derives (seed 003), end to end with the
//! real binary: a work item fails, the Leader retries it, it passes, and the task reaches Done
//! (under the v3 Done policy, which binds the cycle) with `correction-cycle.json` in its folder
//! saying `fixed`; `valp audit TASK` on control-root tasks (pass, fail, skip per gate); the
//! cycle exported with the task.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;

use serde_json::Value;
use valp_runtime::audit::cycle_file::open_rounds;
use valp_tests::project::{Project, item, plan};

fn cycle_of(project: &Project, task: &str) -> Option<Value> {
    let path = project
        .control_root()
        .join("tasks")
        .join(task)
        .join("correction-cycle.json");
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

/// One task's gates as (gate, status, category).
type Gates = Vec<(String, String, String)>;

/// `valp audit --json TASK…`: the exit code and each task's gates.
fn audit(project: &Project, tasks: &[&str]) -> (Option<i32>, Vec<Gates>) {
    let mut args = vec!["audit", "--json"];
    args.extend_from_slice(tasks);
    let run = project.valp(&args);
    let document: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    let gates = document["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| {
            task["gates"]
                .as_array()
                .unwrap()
                .iter()
                .map(|gate| {
                    let field = |name: &str| gate[name].as_str().unwrap().to_owned();
                    (field("gate"), field("status"), field("category"))
                })
                .collect()
        })
        .collect();
    (run.code, gates)
}

fn gates(list: &[(&str, &str, &str)]) -> Gates {
    list.iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

/// The digest of the first evidence in `journal` (its text) whose id starts with `prefix`.
fn evidence_digest(journal: &str, prefix: &str) -> String {
    journal
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .flat_map(|line| {
            line.pointer("/entry/evidence_set")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .find(|evidence| {
            evidence["evidence_id"]["value"]
                .as_str()
                .unwrap()
                .starts_with(prefix)
        })
        .and_then(|evidence| evidence["content_digest"].as_str().map(str::to_owned))
        .unwrap()
}

/// The attempt id of the journal's last `attempt_completed` event.
fn last_completed_attempt(project: &Project, task: &str) -> String {
    let journal = std::fs::read_to_string(
        project
            .control_root()
            .join("tasks")
            .join(task)
            .join("journal.jsonl"),
    )
    .unwrap();
    journal
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|line| {
            let event = line.pointer("/entry/event")?.clone();
            (event["kind"] == "attempt_completed").then(|| event["attempt_id"]["value"].clone())
        })
        .and_then(|id| id.as_str().map(str::to_owned))
        .expect("an attempt completed")
}

/// The `correction-cycle-…` evidence digests the journal's `recording_completed` binds.
fn bound_cycles(project: &Project, task: &str) -> Vec<String> {
    let journal = std::fs::read_to_string(
        project
            .control_root()
            .join("tasks")
            .join(task)
            .join("journal.jsonl"),
    )
    .unwrap();
    journal
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.pointer("/entry/event/kind") == Some(&"recording_completed".into()))
        .flat_map(|line| line["entry"]["evidence_set"].as_array().cloned().unwrap())
        .filter(|evidence| {
            evidence["evidence_id"]["value"]
                .as_str()
                .unwrap()
                .starts_with("correction-cycle-")
        })
        .map(|evidence| evidence["content_digest"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn fail_retry_pass_reaches_done_with_a_fixed_cycle() {
    let project = Project::new();
    project.publish(
        "mend",
        &format!(
            "{}[execution]\nretry_budget = 1\n",
            plan(
                "mend",
                &item("fix", "required", &[], &["test", "-f", "go"], &[])
            )
        ),
    );
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("mend  attempt_fenced  (fix attempt 1 failed)"),
        "{ran}"
    );
    let open = cycle_of(&project, "mend").expect("a failure writes the cycle");
    assert_eq!(open["schema_version"], "valp-correction-cycle.v1");
    assert_eq!(open["final_outcome"], "open", "{open}");
    assert_eq!(open["rounds"][0]["trigger"], "runtime_failed");
    assert_eq!(open["rounds"][0]["owner"], "process");
    assert!(open["rounds"][0]["started_at"].is_string(), "{open}");
    assert_eq!(open["rounds"][0]["ended_at"], Value::Null);
    // What the needs-you queue reads: the one open round, owned by the plan item's adapter.
    let owners = BTreeMap::from([("fix".to_owned(), "process".to_owned())]);
    let task_dir = project.control_root().join("tasks/mend");
    let rounds = open_rounds(&task_dir, "mend", &owners).unwrap();
    assert_eq!(rounds.len(), 1);
    assert_eq!(
        (rounds[0].status, rounds[0].owner.as_str()),
        ("open", "process")
    );

    if project.task_status("mend") == "blocked" {
        project.ok(&["unblock", "mend", "--note", "go will exist"]);
    }
    project.ok(&["retry", "mend", "fix", "--note", "go exists now"]);
    std::fs::write(project.path().join("go"), "").unwrap();
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("mend  attempt_completed"), "{ran}");
    project.ok(&["review", "mend", "pass"]);
    let closed = project.ok(&["run"]);
    assert!(closed.contains("mend  recording_completed"), "{closed}");
    assert_eq!(project.task_status("mend"), "done");

    let fixed = cycle_of(&project, "mend").expect("the cycle is kept");
    assert_eq!(fixed["final_outcome"], "fixed", "{fixed}");
    assert_eq!(fixed["status"], "fixed");
    let rounds = fixed["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 1, "{fixed}");
    assert_eq!(rounds[0]["status"], "fixed");
    assert!(open_rounds(&task_dir, "mend", &owners).unwrap().is_empty());
    assert!(rounds[0]["ended_at"].is_string(), "{fixed}");
    // The Leader's recovery and retry are the round's actions, among them the attempt that
    // passed.
    let actions = rounds[0]["required_actions"].as_array().unwrap();
    let completed = last_completed_attempt(&project, "mend");
    assert!(
        actions
            .iter()
            .filter_map(Value::as_str)
            .any(|action| action.starts_with(&format!("attempt_created {completed} "))),
        "{fixed}"
    );
    assert!(
        actions
            .iter()
            .filter_map(Value::as_str)
            .any(|action| action.starts_with("fix_dispatch_requested ")),
        "{fixed}"
    );
    assert_eq!(fixed["final_evidence_refs"][0], "journal.jsonl");
    // The task froze a v3 Done policy, so its Done binds the cycle as it stood before Done,
    // which is the file's content.
    let file = project
        .control_root()
        .join("tasks/mend/correction-cycle.json");
    let bytes = std::fs::read(file).unwrap();
    assert_eq!(
        bound_cycles(&project, "mend"),
        [valp_kernel::canonical::sha256_digest(&bytes)]
    );
    let status = project.ok(&["task", "status", "mend"]);
    assert!(
        status.contains("  correction fixed: 1 rounds, 0 open\n"),
        "{status}"
    );
    assert!(
        status.contains("  round 1 runtime_failed fixed "),
        "{status}"
    );
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));

    audit_and_export_a_fixed_task(&project, &fixed);
}

/// `valp audit` and `valp export` of the fixed task `mend`; then its cycle broken and removed.
fn audit_and_export_a_fixed_task(project: &Project, fixed: &Value) {
    // The audit: every gate passes, the correction cycle as fixed.
    let (code, audited) = audit(project, &["mend"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        audited,
        [gates(&[
            ("done_matrix", "pass", "gated"),
            ("correction_cycle", "pass", "fixed"),
            ("journal_integrity", "pass", "verified"),
            ("evidence", "pass", "present"),
        ])]
    );
    let lines = project.ok(&["audit", "mend"]);
    assert!(
        lines.contains("  done_matrix        pass  gated: recording_completed passed the Done gate of its frozen policy (v3)\n"),
        "{lines}"
    );

    // Export carries the cycle beside the reference layout's kernel files.
    let out = project.path().join("exported");
    let exported = project.ok(&["export", "--reference", "mend", out.to_str().unwrap()]);
    assert!(exported.contains("correction-cycle.json"), "{exported}");
    assert_eq!(
        std::fs::read(out.join("correction-cycle.json")).unwrap(),
        std::fs::read(
            project
                .control_root()
                .join("tasks/mend/correction-cycle.json")
        )
        .unwrap()
    );

    // A cycle that no longer says fixed fails the audit, naming why; exit 1.
    let path = project
        .control_root()
        .join("tasks/mend/correction-cycle.json");
    let mut broken = fixed.clone();
    broken["final_outcome"] = "blocked".into();
    std::fs::write(&path, broken.to_string()).unwrap();
    let (code, audited) = audit(project, &["mend"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        audited[0][1],
        (
            "correction_cycle".to_owned(),
            "fail".to_owned(),
            "outcome_not_fixed".to_owned()
        )
    );
    let lines = project.valp(&["audit", "mend"]).stdout;
    assert!(
        lines.contains("final_outcome must be fixed before Done; got blocked"),
        "{lines}"
    );
    std::fs::remove_file(&path).unwrap();
    let (code, audited) = audit(project, &["mend"]);
    assert_eq!(code, Some(1));
    assert_eq!(audited[0][1].2, "missing_file");
}

#[test]
fn a_task_without_a_signal_gets_no_cycle_file() {
    let project = Project::new();
    project.publish(
        "calm",
        &plan("calm", &item("ok", "required", &[], &["true"], &[])),
    );
    project.ok(&["run", "--timeout", "60"]);
    project.ok(&["review", "calm", "pass"]);
    project.ok(&["run"]);
    assert_eq!(project.task_status("calm"), "done");
    assert_eq!(cycle_of(&project, "calm"), None);
    assert!(bound_cycles(&project, "calm").is_empty());
    let status = project.ok(&["task", "status", "calm"]);
    assert!(!status.contains("correction"), "{status}");

    audit_a_task_without_a_signal(&project);
}

/// `valp audit` of the done task `calm` (no signal), then with evidence and a policy removed.
fn audit_a_task_without_a_signal(project: &Project) {
    // The audit skips the correction cycle; no argument audits every task.
    let (code, audited) = audit(project, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(
        audited,
        [gates(&[
            ("done_matrix", "pass", "gated"),
            ("correction_cycle", "skip", "no_signal"),
            ("journal_integrity", "pass", "verified"),
            ("evidence", "pass", "present"),
        ])]
    );
    let out = project.path().join("exported");
    project.ok(&["export", "--reference", "calm", out.to_str().unwrap()]);
    assert!(!out.join("correction-cycle.json").exists());

    // A stored evidence blob removed: the evidence gate fails naming it (the plan is not read
    // again when the journal verifies).
    let journal =
        std::fs::read_to_string(project.control_root().join("tasks/calm/journal.jsonl")).unwrap();
    let blob = project
        .control_root()
        .join("evidence/sha256")
        .join(evidence_digest(&journal, "plan-").trim_start_matches("sha256:"));
    std::fs::remove_file(blob).unwrap();
    let (code, audited) = audit(project, &["calm"]);
    assert_eq!(code, Some(1));
    assert_eq!(audited[0][3].1, "fail");
    assert_eq!(audited[0][3].2, "missing_evidence");

    // The frozen policy's blob removed: the journal no longer verifies, the other gates skip.
    let policy = project
        .control_root()
        .join("evidence/sha256")
        .join(evidence_digest(&journal, "done-policy-").trim_start_matches("sha256:"));
    std::fs::remove_file(policy).unwrap();
    let (code, audited) = audit(project, &["calm"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        audited,
        [gates(&[
            ("done_matrix", "skip", "journal_unverified"),
            ("correction_cycle", "skip", "journal_unverified"),
            ("journal_integrity", "fail", "journal_corrupt"),
            ("evidence", "skip", "journal_unverified"),
        ])]
    );

    // A task that is not there is a usage error.
    let run = project.valp(&["audit", "nope"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("audit: nope is neither a task of the control root nor a task folder"),
        "{}",
        run.stderr
    );
}
