//! `valp audit` on task folders written in the VALP reference repository's layout
//! (`tests/fixtures/audit/`, see its PROVENANCE): the correction-cycle gate's verdict and
//! category for a folder with no signal (skip), a fixed cycle (pass) and a blocked one (fail),
//! the exit code, the JSON form, a hostile folder; and `correction-cycle.json` against
//! `schemas/console/correction-cycle.schema.json`, real fixtures accepted and broken copies
//! refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::PathBuf;

use serde_json::{Value, json};
use valp_tests::schemas::{errors, read_json, validator};
use valp_tests::{run_valp, workspace_root};

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures/audit").join(name)
}

/// The correction-cycle gate's (status, category) of one folder, from `valp audit --json`.
fn correction_gate(dir: &std::path::Path) -> (i32, String, String) {
    let output = run_valp(&["audit", "--json", dir.to_str().unwrap()]).unwrap();
    let document: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)));
    let gate = document["tasks"][0]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|gate| gate["gate"] == "correction_cycle")
        .unwrap()
        .clone();
    (
        output.status.code().unwrap(),
        gate["status"].as_str().unwrap().to_owned(),
        gate["category"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn reference_folders_get_the_reference_audits_verdicts() {
    for (name, code, status, category) in [
        ("no-signal", 0, "skip", "no_signal"),
        ("fixed", 0, "pass", "fixed"),
        ("failing", 1, "fail", "outcome_not_fixed"),
    ] {
        assert_eq!(
            correction_gate(&fixture(name)),
            (code, status.to_owned(), category.to_owned()),
            "{name}"
        );
    }
}

#[test]
fn audit_prints_one_line_per_gate_and_fails_on_a_failure() {
    let failing = fixture("failing");
    let output = run_valp(&[
        "audit",
        fixture("fixed").to_str().unwrap(),
        failing.to_str().unwrap(),
    ])
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 10, "{stdout}");
    assert!(lines[0].ends_with("fixed: pass"), "{stdout}");
    assert!(lines[5].ends_with("failing: fail"), "{stdout}");
    let gates: Vec<&str> = lines[6..]
        .iter()
        .map(|line| line.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        gates,
        [
            "done_matrix",
            "correction_cycle",
            "journal_integrity",
            "evidence"
        ]
    );
    assert!(
        lines[7].contains(
            "fail  outcome_not_fixed: final_outcome must be fixed before Done; got blocked"
        ),
        "{stdout}"
    );
    // The fixed folder's expected evidence is present.
    assert!(
        lines[4].contains("evidence           pass  present"),
        "{stdout}"
    );
}

#[test]
fn a_missing_or_broken_cycle_fails_with_the_part_named() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path();
    std::fs::write(
        task.join("dispatch-receipts.jsonl"),
        "not json\n{\"agent\":\"codex\",\"event\":\"dispatch_blocked\"}\n",
    )
    .unwrap();
    assert_eq!(
        correction_gate(task),
        (1, "fail".to_owned(), "missing_file".to_owned())
    );
    // Malformed JSON reads as no file.
    std::fs::write(task.join("correction-cycle.json"), "{\"rounds\": [").unwrap();
    assert_eq!(correction_gate(task).2, "missing_file");
    let mut cycle = read_json(&fixture("fixed/correction-cycle.json"));
    cycle["rounds"][0]["evidence_refs"] = json!(["../x"]);
    std::fs::write(task.join("correction-cycle.json"), cycle.to_string()).unwrap();
    assert_eq!(correction_gate(task).2, "unsafe_ref");
    cycle["rounds"][0]["evidence_refs"] = json!(["/etc/passwd"]);
    std::fs::write(task.join("correction-cycle.json"), cycle.to_string()).unwrap();
    assert_eq!(correction_gate(task).2, "unsafe_ref");
    cycle["rounds"][0]["evidence_refs"] = json!(["agents/codex/evidence.md"]);
    std::fs::write(task.join("correction-cycle.json"), cycle.to_string()).unwrap();
    assert_eq!(correction_gate(task).2, "missing_ref");
    // A hostile ref is printed sanitized.
    cycle["rounds"][0]["evidence_refs"] = json!(["agents/\u{1b}[31mx.md"]);
    std::fs::write(task.join("correction-cycle.json"), cycle.to_string()).unwrap();
    let output = run_valp(&["audit", task.to_str().unwrap()]).unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("missing_ref"), "{stdout:?}");
    assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
}

#[test]
fn audit_refuses_what_is_not_a_folder() {
    let output = run_valp(&["audit", "tests/fixtures/audit/no-such-task"]).unwrap();
    assert_ne!(output.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("audit: tests/fixtures/audit/no-such-task is not a task folder"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn correction_cycles_match_their_schema() {
    let schema = validator("console/correction-cycle.schema.json");
    for name in ["fixed", "failing"] {
        let cycle = read_json(&fixture(name).join("correction-cycle.json"));
        assert_eq!(errors(&schema, &cycle), Vec::<String>::new(), "{name}");
    }
    let fixed = read_json(&fixture("fixed/correction-cycle.json"));
    let broken = [
        ("/schema_version", json!("valp-correction-cycle.v0")),
        ("/final_outcome", json!("done")),
        ("/rounds", json!({})),
        ("/rounds/0/evidence_refs", json!(["../x"])),
        ("/rounds/0/rejected_refs", json!(["/abs"])),
        ("/final_evidence_refs", json!(["a\\b"])),
        ("/rounds/0/started_at", json!("yesterday")),
    ];
    for (pointer, value) in broken {
        let mut copy = fixed.clone();
        *copy.pointer_mut(pointer).unwrap() = value;
        assert!(!errors(&schema, &copy).is_empty(), "{pointer} accepted");
    }
    let mut missing = fixed;
    missing.as_object_mut().unwrap().remove("rounds");
    assert!(!errors(&schema, &missing).is_empty());
}

/// The `evidence` gate's (status, category) of one folder.
fn evidence_gate(dir: &std::path::Path) -> (String, String) {
    let output = run_valp(&["audit", "--json", dir.to_str().unwrap()]).unwrap();
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    let gate = &document["tasks"][0]["gates"][3];
    assert_eq!(gate["gate"], "evidence");
    (
        gate["status"].as_str().unwrap().to_owned(),
        gate["category"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn expected_evidence_must_be_safe_present_and_valid() {
    let dir = tempfile::tempdir().unwrap();
    let task = dir.path();
    let receipt = |refs: Value| {
        let line = json!({"agent": "codex", "event": "dispatch_completed", "expected_refs": refs});
        std::fs::write(task.join("dispatch-receipts.jsonl"), format!("{line}\n")).unwrap();
    };
    receipt(json!(["../outside.md"]));
    assert_eq!(evidence_gate(task), ("fail".into(), "unsafe_ref".into()));
    receipt(json!(["agents/codex/evidence.md"]));
    assert_eq!(evidence_gate(task), ("fail".into(), "missing_ref".into()));
    std::fs::create_dir_all(task.join("agents/codex")).unwrap();
    std::fs::write(task.join("agents/codex/evidence.md"), "done\n").unwrap();
    assert_eq!(evidence_gate(task), ("pass".into(), "present".into()));
    std::fs::write(
        task.join("evidence-status.json"),
        json!({"evidence": {"agents/codex/evidence.md": {"status": "Rejected"}}}).to_string(),
    )
    .unwrap();
    assert_eq!(
        evidence_gate(task),
        ("fail".into(), "invalid_evidence".into())
    );
}
