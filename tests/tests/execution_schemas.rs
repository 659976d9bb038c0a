//! The execution lane's records against their schemas, from a real control root: the Done
//! policy and closure (`schemas/kernel/done-{policy,closure}.schema.json`), the Leader's
//! operator actions (`schemas/console/operator-action.schema.json`) and the effect ledger's
//! lines (`schemas/store/effect-ledger-line.schema.json`, each holding a record of
//! `schemas/console/effect-record.schema.json`). The `valp` binary runs a plan to `done`
//! (with a verified criterion, an advisory one and a degraded soft item), cancels a running
//! attempt, redirects past another, and interrupts, resumes and cancels a task; then every
//! evidence blob of these formats and every `effect-ledger.jsonl` line and record is
//! validated, and broken copies of real instances must be refused.
//!
//! The Done gate's verdict (`valp-kernel-done-gate.v1`) and the effect ledger's digest
//! preimages (`valp-kernel-effect-ledger.v1`, `valp-kernel-effect-identity.v1`) are never
//! stored, so they have no schema; this checks that no blob holds one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};
use valp_tests::project::{Project, item, plan};
use valp_tests::schemas::{errors, validator};

const POLICY: &str = "valp-kernel-done-policy.v3";
const CLOSURE: &str = "valp-kernel-done-closure.v1";
const ACTION: &str = "valp-operator-action.v1";
const EFFECT: &str = "valp-kernel-effect-record.v1";
/// The correction cycle a v3 policy's Done binds after a correction signal.
const CYCLE: &str = "valp-correction-cycle.v1";
/// An effect ledger's line: the store's journal line (layout 3: with `recorded_at`).
const EFFECT_LINE: &str = "valp-store-journal.v2";

/// The schema of each format, by `schema_version`.
const SCHEMAS: [(&str, &str); 6] = [
    (POLICY, "kernel/done-policy.schema.json"),
    (CYCLE, "console/correction-cycle.schema.json"),
    (CLOSURE, "kernel/done-closure.schema.json"),
    (ACTION, "console/operator-action.schema.json"),
    (EFFECT, "console/effect-record.schema.json"),
    (EFFECT_LINE, "store/effect-ledger-line.schema.json"),
];

/// Formats that are digest preimages or in-memory verdicts only: never stored.
const NEVER_STORED: [&str; 3] = [
    "valp-kernel-done-gate.v1",
    "valp-kernel-effect-ledger.v1",
    "valp-kernel-effect-identity.v1",
];

/// Every record of the four formats a real control root holds, by `schema_version`.
struct Artifacts {
    by_format: BTreeMap<&'static str, Vec<Value>>,
}

impl Artifacts {
    fn of(&self, format: &str) -> &[Value] {
        self.by_format.get(format).map_or(&[], Vec::as_slice)
    }
}

/// Runs the scenario once per test process and collects its records.
fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(|| {
        let project = Project::new();
        run_to_done(&project);
        cancel_a_running_attempt(&project);
        redirect_past_a_running_attempt(&project);
        interrupt_resume_and_cancel(&project);
        retry_recover_and_approve(&project);
        collect(project.path())
    })
}

/// A task blocked with its budget spent, recovered and retried; one whose plan requires
/// approval, reviewed and approved.
fn retry_recover_and_approve(project: &Project) {
    let body = format!(
        "{}[execution]\nretry_budget = 1\napproval = \"required\"\n",
        item("no", "required", &[], &["false"], &[])
    );
    project.publish("again", &plan("again", &body));
    project.ok(&["run", "--timeout", "60"]);
    project.ok(&["unblock", "again"]);
    project.ok(&["retry", "again", "no", "--note", "once more"]);
    let body = format!(
        "{}[execution]\napproval = \"required\"\n",
        item("yes", "required", &[], &["true"], &[])
    );
    project.publish("ask", &plan("ask", &body));
    project.ok(&["run", "--timeout", "60"]);
    project.ok(&["review", "ask", "pass"]);
    project.ok(&["approve", "ask", "grant"]);
}

/// A plan to `done`: a required criterion the review attests, a verified one, an advisory
/// one that may be not applicable, and a soft item that degrades.
fn run_to_done(project: &Project) {
    let body = [
        "[[criteria]]\nid = \"checked\"\ndescription = \"verified\"\nverify = [\"true\"]\n\n",
        "[[criteria]]\nid = \"advice\"\ndescription = \"advisory\"\nrequired = false\n\
         not_applicable_allowed = true\n\n",
        &item("extra", "soft", &[], &["false"], &[]),
        &item("main", "required", &[("extra", "soft")], &["true"], &[]),
        "[done]\nskippable_optional_items = true\ndegradable_soft_items = [\"extra\"]\n",
    ]
    .concat();
    project.publish("fin", &plan("fin", &body));
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("fin: reviewing"), "{ran}");
    project.ok(&["review", "fin", "pass", "--note", "looks right"]);
    let closed = project.ok(&["run"]);
    assert!(closed.contains("fin  recording_completed"), "{closed}");
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

fn cancel_a_running_attempt(project: &Project) {
    project.sleeping("nap", "sleep");
    let cancelled = project.ok(&["cancel", "nap", "--item", "sleep", "--note", "too slow"]);
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:"),
        "{cancelled}"
    );
}

fn redirect_past_a_running_attempt(project: &Project) {
    let body = [
        item("keep", "required", &[], &["true"], &[]),
        item("drop", "optional", &[], &["sleep", "60"], &[]),
    ]
    .concat();
    project.publish("turn", &plan("turn", &body));
    project.run_until("turn", "turn:drop:a1 g1 running");
    let redirected = project.redirect("turn", "drop the slow part\n", "drop");
    assert!(redirected.contains("effect fulfilled"), "{redirected}");
}

fn interrupt_resume_and_cancel(project: &Project) {
    project.publish(
        "pause",
        &plan("pause", &item("one", "required", &[], &["true"], &[])),
    );
    project.ok(&["interrupt", "pause"]);
    project.ok(&["resume", "pause", "--note", "go on"]);
    project.ok(&["cancel", "pause"]);
}

/// Every evidence blob that is a JSON object with a `schema_version` of interest, and every
/// line of every task's `effects.jsonl`.
fn collect(project: &Path) -> Artifacts {
    let mut by_format: BTreeMap<&'static str, Vec<Value>> = BTreeMap::new();
    let blobs = project.join(".valp/evidence/sha256");
    for entry in std::fs::read_dir(&blobs).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let Some(version) = value.get("schema_version").and_then(Value::as_str) else {
            continue;
        };
        assert!(
            !NEVER_STORED.contains(&version),
            "{version} is stored as evidence"
        );
        if let Some((format, _)) = SCHEMAS.iter().find(|(format, _)| *format == version) {
            by_format.entry(format).or_default().push(value);
        }
    }
    assert!(
        !by_format.contains_key(EFFECT),
        "effect records live in effects.jsonl, not in the evidence store"
    );
    for entry in std::fs::read_dir(project.join(".valp/tasks")).unwrap() {
        let folder = entry.unwrap().path();
        assert!(
            !folder.join("effects.jsonl").exists(),
            "the layout-1 effect ledger is never written"
        );
        let ledger = folder.join("effect-ledger.jsonl");
        if !ledger.is_file() {
            continue;
        }
        for line in std::fs::read_to_string(&ledger).unwrap().lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            by_format
                .entry(EFFECT)
                .or_default()
                .push(value["entry"].clone());
            by_format.entry(EFFECT_LINE).or_default().push(value);
        }
    }
    Artifacts { by_format }
}

fn strings<'a>(values: &'a [Value], member: &str) -> BTreeSet<&'a str> {
    values
        .iter()
        .filter_map(|value| value[member].as_str())
        .collect()
}

#[test]
fn every_real_record_validates_against_its_schema() {
    let artifacts = artifacts();
    for (format, schema) in SCHEMAS {
        let validator = validator(schema);
        let records = artifacts.of(format);
        assert!(!records.is_empty(), "no {format} record was produced");
        for record in records {
            assert_eq!(
                errors(&validator, record),
                Vec::<String>::new(),
                "{format}: {record}"
            );
        }
    }
    // The scenario reaches every conditional branch of the schemas.
    assert_eq!(
        strings(artifacts.of(ACTION), "action"),
        BTreeSet::from([
            "approval_grant",
            "cancel_task",
            "cancel_work_item",
            "interrupt",
            "recover",
            "redirect",
            "resume",
            "retry_work_item",
            "review_pass",
            "review_pass_approval_required"
        ])
    );
    assert_eq!(
        strings(artifacts.of(EFFECT), "status"),
        BTreeSet::from(["fulfilled"])
    );
    assert_eq!(artifacts.of(EFFECT).len(), 2, "one per cancelled attempt");
    assert_eq!(artifacts.of(EFFECT_LINE).len(), 2);
    assert!(
        artifacts
            .of(POLICY)
            .iter()
            .any(|policy| policy["degradable_soft_items"] == json!(["extra"]))
    );
    assert!(
        artifacts
            .of(CLOSURE)
            .iter()
            .flat_map(|closure| closure["criteria"].as_array().unwrap())
            .any(|criterion| !criterion["evidence_ids"].as_array().unwrap().is_empty()),
        "a verified criterion cites its evidence"
    );
}

/// Breaks one thing in a valid record.
type Breakage = fn(&mut Value);

/// The first real record of `format` for which `pick` holds.
fn real(format: &str, pick: impl Fn(&Value) -> bool) -> Value {
    artifacts()
        .of(format)
        .iter()
        .find(|value| pick(value))
        .unwrap_or_else(|| panic!("no such {format} record"))
        .clone()
}

fn remove(value: &mut Value, member: &str) {
    assert!(value.as_object_mut().unwrap().remove(member).is_some());
}

/// `good` validates against `schema` and each breakage of it is refused. Every schema gets a
/// member removed, an unknown member added and another schema version, then the breaks its own
/// rules name.
fn assert_refused(schema: &str, good: &Value, breakages: &[(&str, Breakage)]) {
    let validator = validator(schema);
    assert_eq!(errors(&validator, good), Vec::<String>::new(), "{schema}");
    for (name, break_it) in breakages {
        let mut bad = good.clone();
        break_it(&mut bad);
        assert!(
            !validator.is_valid(&bad),
            "{schema}: {name} must be refused: {bad}"
        );
    }
}

#[test]
fn broken_done_policies_are_refused() {
    assert_refused(
        "kernel/done-policy.schema.json",
        &real(POLICY, |v| {
            v["degradable_soft_items"] != Value::Array(vec![])
        }),
        &[
            ("missing member", |v| remove(v, "skippable_optional_items")),
            ("unknown member", |v| v["extra"] = true.into()),
            ("wrong schema_version", |v| {
                v["schema_version"] = "valp-kernel-done-policy.v2".into();
            }),
            ("v3 without its correction cycle", |v| {
                remove(v, "correction_cycle");
            }),
            ("v1 with a correction cycle", |v| {
                v["schema_version"] = "valp-kernel-done-policy.v1".into();
            }),
            ("another correction cycle version", |v| {
                v["correction_cycle"] = "valp-correction-cycle.v2".into();
            }),
            ("missing criterion member", |v| {
                remove(&mut v["criteria"][0], "required");
            }),
            ("empty criterion id", |v| {
                v["criteria"][0]["criterion_id"] = "".into();
            }),
            ("repeated degradable item", |v| {
                v["degradable_soft_items"] = json!(["extra", "extra"]);
            }),
        ],
    );
}

#[test]
fn broken_done_closures_are_refused() {
    assert_refused(
        "kernel/done-closure.schema.json",
        &real(CLOSURE, |_| true),
        &[
            ("missing member", |v| remove(v, "policy_digest")),
            ("unknown member", |v| v["passed"] = true.into()),
            ("wrong schema_version", |v| {
                v["schema_version"] = "valp-kernel-done-gate.v1".into();
            }),
            ("unknown claim result", |v| {
                v["completion_claim"] = "done".into();
            }),
            ("unknown criterion member", |v| {
                v["criteria"][0]["note"] = "x".into();
            }),
            ("evidence ids as identities", |v| {
                v["criteria"][0]["evidence_ids"] = json!([{"kind": "evidence", "value": "x"}]);
            }),
        ],
    );
}

#[test]
fn broken_operator_actions_are_refused() {
    assert_refused(
        "console/operator-action.schema.json",
        &real(ACTION, |v| v["action"] == "cancel_work_item"),
        &[
            ("missing member", |v| remove(v, "principal_id")),
            ("unknown member", |v| v["approved"] = true.into()),
            ("wrong schema_version", |v| {
                v["schema_version"] = "valp-leader-approval.v1".into();
            }),
            ("cancel_work_item without its item", |v| {
                remove(v, "work_item_id");
            }),
            ("another action naming an item", |v| {
                v["action"] = "cancel_task".into();
            }),
            ("recover naming an item", |v| {
                v["action"] = "recover".into();
            }),
            ("an unknown action", |v| v["action"] = "pause".into()),
            ("redirect without its intent", |v| {
                remove(v, "work_item_id");
                v["action"] = "redirect".into();
            }),
            ("a time with an offset", |v| {
                v["at"] = "2026-11-30T12:34:56.789+01:00".into();
            }),
            ("a principal that is not a user", |v| {
                v["principal_id"] = "tmux:%1".into();
            }),
            ("epoch 0", |v| v["leader_epoch"] = 0.into()),
        ],
    );
    assert_refused(
        "console/operator-action.schema.json",
        &real(ACTION, |v| v["action"] == "retry_work_item"),
        &[("retry without its item", |v| remove(v, "work_item_id"))],
    );
    assert_refused(
        "console/operator-action.schema.json",
        &real(ACTION, |v| v["action"] == "redirect"),
        &[
            ("redirect without superseded items", |v| {
                remove(v, "superseded_work_item_ids");
            }),
            ("another action with an intent", |v| {
                v["action"] = "interrupt".into();
            }),
            ("a malformed intent digest", |v| {
                v["intent_digest"] = "sha256:ABC".into();
            }),
        ],
    );
}

#[test]
fn broken_effect_records_are_refused() {
    let good = real(EFFECT, |v| v["status"] == "fulfilled");
    assert_refused(
        "console/effect-record.schema.json",
        &good,
        &[
            ("missing member", |v| remove(v, "record_digest")),
            ("unknown member", |v| v["attempt_id"] = "x".into()),
            ("wrong schema_version", |v| {
                v["schema_version"] = "valp-kernel-effect-ledger.v1".into();
            }),
            ("an unknown status", |v| v["status"] = "pending".into()),
            ("fulfilled with a reason", |v| v["reason"] = "why".into()),
            ("fulfilled without proof", |v| {
                v["proof_ref"] = "".into();
                v["proof_digest"] = "".into();
            }),
            ("blocked with proof", |v| {
                v["status"] = "blocked".into();
                v["reason"] = "why".into();
            }),
            ("blocked without a reason", |v| {
                v["status"] = "blocked".into();
                v["proof_ref"] = "".into();
                v["proof_digest"] = "".into();
            }),
            ("a malformed digest", |v| {
                v["prior_record_digest"] = "sha256:ABC".into();
            }),
            ("another obligation", |v| {
                v["obligation"] = "notify:x".into();
            }),
            ("revision 0", |v| v["ledger_revision"] = 0.into()),
        ],
    );
    // A blocked record (none was produced: every cancel was confirmed) validates, so the
    // refusals above are about the break, not the branch.
    let mut blocked = good;
    blocked["status"] = "blocked".into();
    blocked["proof_ref"] = "".into();
    blocked["proof_digest"] = "".into();
    blocked["reason"] = "the supervisor had died".into();
    assert_eq!(
        errors(&validator("console/effect-record.schema.json"), &blocked),
        Vec::<String>::new()
    );
}

#[test]
fn broken_effect_ledger_lines_are_refused() {
    let good = real(EFFECT_LINE, |v| v["seq"] == 0);
    let schema = "store/effect-ledger-line.schema.json";
    assert_refused(
        schema,
        &good,
        &[
            ("missing member", |v| remove(v, "entry_digest")),
            ("unknown member", |v| v["record"] = "x".into()),
            ("wrong schema_version", |v| {
                v["schema_version"] = "valp-store-effects.v1".into();
            }),
            ("line 0 with a prior", |v| {
                v["prior_entry_digest"] = v["entry_digest"].clone();
            }),
            ("a later line without a prior", |v| v["seq"] = 1.into()),
            ("a negative seq", |v| v["seq"] = (-1).into()),
            ("a malformed entry digest", |v| {
                v["entry_digest"] = "sha256:ABC".into();
            }),
            ("a broken record", |v| {
                remove(&mut v["entry"], "record_digest");
            }),
            ("a task journal entry instead of a record", |v| {
                v["entry"] = json!({"event": {}});
            }),
            ("a v2 line without recorded_at", |v| {
                remove(v, "recorded_at");
            }),
            ("a recorded_at without milliseconds", |v| {
                v["recorded_at"] = "2026-12-02T06:25:44Z".into();
            }),
            ("a recorded_at with an offset", |v| {
                v["recorded_at"] = "2026-12-02T06:25:44.000+00:00".into();
            }),
            ("a v1 line with recorded_at", |v| {
                v["schema_version"] = "valp-store-journal.v1".into();
            }),
        ],
    );
    // A later line, chained to a prior, validates: the refusals above are about the break.
    let mut later = good;
    later["seq"] = 1.into();
    later["prior_entry_digest"] = later["entry_digest"].clone();
    assert_eq!(errors(&validator(schema), &later), Vec::<String>::new());
}
