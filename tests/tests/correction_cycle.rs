//! The correction cycle a control-root task's journal derives (seed 003), end to end with the
//! real binary: a work item fails, the Leader retries it, it passes, and the task reaches Done
//! with `correction-cycle.json` in its folder saying `fixed`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use serde_json::Value;
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
}
