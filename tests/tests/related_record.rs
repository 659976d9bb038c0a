//! AgentOps verdicts recorded for the task (and work item) the caller names, on the real files in
//! `tests/fixtures/related/agentops/`: Evidence (the verdict's bytes), a Claim and a Review
//! observation in the task's foreign-observation journal, the three outcomes mapped exactly,
//! never a kernel event, never a write under `.agents/`; and the journal's own rules.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use valp_runtime::related::agentops;
use valp_runtime::related::record::{self, RecordError};
use valp_store::foreign::{
    ClaimResult, ForeignJournal, ForeignKind, ForeignRecord, ReviewVerdict, Source,
};
use valp_store::{Access, ControlRoot};
use valp_tests::project::{Project, external_item, plan};
use valp_tests::schemas::{errors, validator};
use valp_tests::store::init_root;
use valp_tests::workspace_root;

const TASK: &str = "t";
const FILES: [(&str, ClaimResult, ReviewVerdict); 3] = [
    (
        "verdict-v2-FAIL-3c297141.json",
        ClaimResult::Fail,
        ReviewVerdict::Fail,
    ),
    (
        "verdict-v2-NOT_PROVEN-42554461.json",
        ClaimResult::Unknown,
        ReviewVerdict::Blocked,
    ),
    (
        "verdict-v2-PASS-b4d8bd3b.json",
        ClaimResult::Pass,
        ReviewVerdict::Pass,
    ),
];

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        workspace_root()
            .join("tests/fixtures/related/agentops")
            .join(name),
    )
    .unwrap()
}

/// A project folder with a control root holding task `t` (one external item `review`) and the
/// real AgentOps files in `.agents/ao/verdicts/sha256/`.
fn scene() -> (tempfile::TempDir, ControlRoot, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let text = plan(TASK, &external_item("review", &[], &[]));
    let parsed = valp_runtime::plan::parse(Path::new("t.toml"), text.as_bytes()).unwrap();
    valp_runtime::plan::publish(&root, &parsed, 0).unwrap();
    let dir = temp.path().join(agentops::DEFAULT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    for name in [
        FILES[0].0,
        FILES[1].0,
        FILES[2].0,
        "subject-manifest-v1-c7cb66d7.json",
    ] {
        std::fs::write(dir.join(name), fixture(name)).unwrap();
    }
    (temp, root, dir)
}

fn records(root: &ControlRoot) -> Vec<ForeignRecord> {
    ForeignJournal::of_task(root, TASK, Access::ReadOnly)
        .unwrap()
        .records()
        .to_vec()
}

fn revision(root: &ControlRoot) -> valp_kernel::Int {
    root.open_task(TASK, Access::ReadOnly)
        .unwrap()
        .live()
        .revision()
}

/// Every file of a tree with its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else {
                let meta = entry.metadata().unwrap();
                files.insert(
                    entry.path(),
                    (
                        std::fs::read(entry.path()).unwrap(),
                        meta.modified().unwrap(),
                    ),
                );
            }
        }
    }
    files
}

/// `valp verify`, which must exit `code`: its `foreign` row of task `t`.
fn foreign_row(project: &Project, code: i32) -> String {
    let verified = project.valp(&["verify"]);
    assert_eq!(verified.code, Some(code), "{}", verified.stdout);
    verified
        .stdout
        .lines()
        .find(|line| line.starts_with("foreign   t "))
        .unwrap_or_else(|| panic!("{}", verified.stdout))
        .to_owned()
}

#[test]
fn the_three_outcomes_are_recorded_exactly_as_evidence_claim_and_review() {
    let (temp, root, dir) = scene();
    let before = snapshot(&temp.path().join(".agents"));
    let report = agentops::ingest_dir(&dir).unwrap();
    let kept = record::record_agentops(&root, TASK, Some("review"), &report).unwrap();
    assert_eq!(kept.len(), 3);
    let descriptors = validator("console/foreign-descriptor.schema.json");
    for ((file, claim, review), kept) in FILES.iter().zip(&kept) {
        let record = &kept.record;
        assert_eq!(record.source, Source::Agentops);
        assert_eq!(record.kind, ForeignKind::Review);
        assert_eq!(record.claim, Some((*claim, *review)), "{file}");
        assert_eq!(record.work_item_id.as_deref(), Some("review"));
        // Evidence: the verdict's exact bytes, under a foreign id.
        assert_eq!(
            root.blobs().get(&record.content_digest).unwrap(),
            fixture(file)
        );
        assert!(record.evidence_id.starts_with("foreign-agentops-"));
        let descriptor: Value =
            serde_json::from_slice(&root.blobs().get(&record.descriptor_digest).unwrap()).unwrap();
        assert_eq!(errors(&descriptors, &descriptor), Vec::<String>::new());
        assert_eq!(descriptor["claim"]["result"], claim.as_str());
        assert_eq!(descriptor["review"]["verdict"], review.as_str());
        assert_eq!(descriptor["evidence_refs"]["bound"], false);
    }
    let pass: Value =
        serde_json::from_slice(&root.blobs().get(&kept[2].record.descriptor_digest).unwrap())
            .unwrap();
    assert_eq!(
        pass["levels"],
        serde_json::json!(["structurally_valid", "digest_bound", "subject_resolved"])
    );
    assert_eq!(pass["independence"]["declared"], true);
    // Never a kernel event (no review_passed, no Done), never a write under `.agents/`.
    assert_eq!(revision(&root), 1);
    assert_eq!(snapshot(&temp.path().join(".agents")), before);
    // Recording again writes nothing.
    let again = record::record_agentops(&root, TASK, Some("review"), &report).unwrap();
    assert!(again.iter().all(|kept| !kept.written));
    assert_eq!(records(&root).len(), 3);
    // The journal's lines follow their schema.
    let lines = validator("store/foreign-line.schema.json");
    let text = std::fs::read_to_string(
        root.layout()
            .task_dir(TASK)
            .join(valp_store::foreign::FOREIGN_FILE),
    )
    .unwrap();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(errors(&lines, &value), Vec::<String>::new());
    }
}

#[test]
fn a_changed_byte_is_not_recorded_and_not_proven_is_never_pass_or_fail() {
    let (_temp, root, dir) = scene();
    let pass = dir.join(FILES[2].0);
    let text = std::fs::read_to_string(&pass).unwrap();
    let changed = text.replacen("\"verdict\":\"PASS\"", "\"verdict\":\"FAIL\"", 1);
    assert_ne!(changed, text);
    std::fs::write(&pass, changed).unwrap();
    let report = agentops::ingest_dir(&dir).unwrap();
    assert!(matches!(
        report.rejections[0].reason,
        agentops::Reason::DigestUnbound {
            field: "artifact_digest",
            ..
        }
    ));
    record::record_agentops(&root, TASK, None, &report).unwrap();
    let claims: Vec<_> = records(&root).iter().map(|r| r.claim).collect();
    assert_eq!(
        claims,
        [
            Some((ClaimResult::Fail, ReviewVerdict::Fail)),
            Some((ClaimResult::Unknown, ReviewVerdict::Blocked)),
        ]
    );
    // The store itself refuses any other pairing, NOT_PROVEN as pass or fail among them.
    let mut journal = ForeignJournal::of_task(&root, TASK, Access::Write).unwrap();
    let mut forged = records(&root)[1].clone();
    forged.observation_id = "agentops:forged".to_owned();
    for (claim, review) in [
        (ClaimResult::Unknown, ReviewVerdict::Pass),
        (ClaimResult::Unknown, ReviewVerdict::Fail),
        (ClaimResult::Pass, ReviewVerdict::Blocked),
    ] {
        forged.claim = Some((claim, review));
        let error = journal.append(&forged).unwrap_err().to_string();
        assert!(
            error.ends_with(&format!(
                "refused to record \"agentops:forged\": foreign observation: claim_result {} \
                 with review_verdict {}: only pass/pass, fail/fail and unknown/blocked",
                claim.as_str(),
                review.as_str()
            )),
            "{error}"
        );
    }
    forged.claim = None;
    let error = journal.append(&forged).unwrap_err().to_string();
    assert!(
        error.ends_with("a review record carries a claim_result and a review_verdict"),
        "{error}"
    );
}

#[test]
fn the_task_and_item_are_never_guessed() {
    let (_temp, root, dir) = scene();
    let report = agentops::ingest_dir(&dir).unwrap();
    let error = record::record_agentops(&root, TASK, Some("nope"), &report).unwrap_err();
    assert!(matches!(error, RecordError::UnknownWorkItem { .. }));
    assert_eq!(
        error.to_string(),
        "task t has no work item \"nope\" (the mapping is never guessed)"
    );
    let error = record::record_agentops(&root, "other", None, &report).unwrap_err();
    assert!(
        error.to_string().starts_with("task other does not exist"),
        "{error}"
    );
}

#[test]
fn the_command_records_only_with_record_and_a_named_task() {
    let project = Project::new();
    project.publish("t", &plan(TASK, &external_item("review", &[], &[])));
    let dir = project.path().join("verdicts");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, _, _) in FILES {
        std::fs::write(dir.join(name), fixture(name)).unwrap();
    }
    let run = project.valp(&["ingest", "agentops", "verdicts", "--record"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    assert!(run.stderr.contains("--task"), "{}", run.stderr);
    let shown = project.ok(&["ingest", "agentops", "verdicts", "--task", TASK]);
    assert!(!shown.contains("recorded:"), "{shown}");
    let recorded = project.ok(&[
        "ingest", "agentops", "verdicts", "--task", TASK, "--item", "review", "--record",
    ]);
    let lines: Vec<&str> = recorded
        .lines()
        .filter(|line| line.starts_with("recorded: "))
        .collect();
    assert_eq!(lines.len(), 3, "{recorded}");
    assert!(
        lines[2].starts_with(
            "recorded: agentops:verdict:b4d8bd3b9db67ef51a251a928b749d5f95b1262570751e9890033937bd678f40 item review evidence foreign-agentops-"
        ),
        "{recorded}"
    );
    assert!(lines[2].ends_with(" claim pass review pass"), "{recorded}");
    assert!(
        lines[1].ends_with(" claim unknown review blocked"),
        "{recorded}"
    );
    assert_eq!(
        foreign_row(&project, 0),
        "foreign   t                       3  ok"
    );
    // A changed byte in the journal is found, never repaired.
    let journal = project
        .control_root()
        .join("tasks/t")
        .join(valp_store::foreign::FOREIGN_FILE);
    let changed = std::fs::read_to_string(&journal).unwrap().replacen(
        "agentops verdict.v2",
        "agentops verdict.v3",
        1,
    );
    std::fs::write(&journal, &changed).unwrap();
    let row = foreign_row(&project, 1);
    assert!(
        row.contains("PROBLEM VALP-E-KERNEL-STORE-CORRUPT")
            && row.contains("foreign.jsonl:1: byte 0: entry_digest"),
        "{row}"
    );
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), changed);
}
