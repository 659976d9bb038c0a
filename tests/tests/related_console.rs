//! What the console shows of recorded foreign observations: the real AgentOps verdicts in
//! `tests/fixtures/related/agentops/`, recorded for a task, read back as the console's
//! [`valp_view::ForeignRow`]s with their origin, scheme-tagged digest, verification levels, claim
//! and declared independence; hostile text sanitized; a damaged journal listed, not repaired.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;

use valp_runtime::related::agentops;
use valp_runtime::related::record;
use valp_runtime::system::foreign::{self, Foreign};
use valp_store::ControlRoot;
use valp_store::foreign::{ClaimResult, ForeignKind, ForeignRecord, ReviewVerdict, Source};
use valp_tests::project::{external_item, plan};
use valp_tests::store::init_root;
use valp_tests::workspace_root;

const TASK: &str = "t";
const PASS: &str = "verdict-v2-PASS-b4d8bd3b.json";

fn scene() -> (tempfile::TempDir, ControlRoot) {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let text = plan(TASK, &external_item("review", &[], &[]));
    let parsed = valp_runtime::plan::parse(Path::new("t.toml"), text.as_bytes()).unwrap();
    valp_runtime::plan::publish(&root, &parsed, 0).unwrap();
    let dir = temp.path().join(agentops::DEFAULT_DIR);
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = workspace_root().join("tests/fixtures/related/agentops");
    for name in [
        PASS,
        "verdict-v2-FAIL-3c297141.json",
        "verdict-v2-NOT_PROVEN-42554461.json",
        "subject-manifest-v1-c7cb66d7.json",
    ] {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
    let report = agentops::ingest_dir(&dir).unwrap();
    record::record_agentops(&root, TASK, Some("review"), &report).unwrap();
    (temp, root)
}

#[test]
fn recorded_verdicts_show_origin_digest_levels_claim_and_independence() {
    let (_temp, root) = scene();
    let (rows, problems) = Foreign::default().rows(&root, &[TASK.to_owned(), "absent".to_owned()]);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(rows.len(), 3);
    let claims: Vec<_> = rows.iter().map(|row| row.claim.clone().unwrap()).collect();
    assert_eq!(
        claims,
        [
            ("fail".to_owned(), "fail".to_owned()),
            ("unknown".to_owned(), "blocked".to_owned()),
            ("pass".to_owned(), "pass".to_owned()),
        ]
    );
    let pass = &rows[2];
    assert_eq!(pass.task_id, TASK);
    assert_eq!(pass.work_item_id.as_deref(), Some("review"));
    assert_eq!(pass.source, "agentops");
    assert_eq!(pass.kind, "review");
    assert_eq!(pass.origin, format!("agentops verdict.v2 file {PASS}"));
    assert_eq!(
        pass.foreign_digest,
        "agentops-c14n-nolf:b4d8bd3b9db67ef51a251a928b749d5f95b1262570751e9890033937bd678f40"
    );
    assert_eq!(
        pass.content_digest,
        "sha256:1b903519fe8b6cfdcde72cf47f65b8b9f9ed16390800c6e176f2157aa1f2c24e"
    );
    assert_eq!(
        pass.levels_text(),
        "structurally valid yes · digest bound yes · subject resolved yes · intent resolved no"
    );
    assert_eq!(
        pass.claim_text().unwrap(),
        "pass, foreign review pass: evidence only (not a VALP review, not Done)"
    );
    assert!(
        pass.independence.starts_with("declared: author "),
        "{}",
        pass.independence
    );
    assert!(!pass.validated_at.is_empty());
    assert_eq!(
        rows[1].claim_text().unwrap(),
        "unknown, foreign review blocked: not proven (neither pass nor fail)"
    );
    assert_eq!(
        rows[1].levels_text(),
        "structurally valid yes · digest bound yes · subject resolved no · intent resolved no"
    );
}

#[test]
fn hostile_foreign_text_is_sanitized_for_the_console() {
    let record = ForeignRecord {
        observation_id: "agentops:verdict:x".to_owned(),
        source: Source::Agentops,
        kind: ForeignKind::Review,
        work_item_id: Some("review".to_owned()),
        evidence_id: "foreign-agentops-x".to_owned(),
        content_digest: format!("sha256:{}", "0".repeat(64)),
        descriptor_digest: format!("sha256:{}", "1".repeat(64)),
        claim: Some((ClaimResult::Fail, ReviewVerdict::Fail)),
        summary: "fine".to_owned(),
    };
    let descriptor = serde_json::json!({
        "origin": {"system": "agentops", "format": "verdict.v2", "file": "a\u{1b}[2J\u{1b}]0;owned\u{7}.json"},
        "artifact_digest": "agentops-c14n-nolf:\u{1b}[31mred",
        "levels": ["structurally_valid", "\u{1b}[5mblink"],
        "claim": {"claimant": "me\u{202e}txt"},
        "review": {"reviewer": "you\r\nforged line", "validated_at": "\u{1b}[1m2026"},
        "independence": {"declared": true},
    });
    let row = foreign::row(TASK, &record, &descriptor);
    for text in [
        &row.origin,
        &row.foreign_digest,
        &row.independence,
        &row.validated_at,
        &row.levels_text(),
    ] {
        assert!(
            !text.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{text:?}"
        );
    }
    // A missing descriptor leaves what the record says, with the independence unknown.
    let bare = foreign::row(TASK, &record, &serde_json::Value::Null);
    assert_eq!(bare.independence, "unknown (descriptor unavailable)");
    assert_eq!(bare.claim, Some(("fail".to_owned(), "fail".to_owned())));
}

#[test]
fn a_damaged_foreign_journal_is_listed_not_repaired() {
    let (_temp, root) = scene();
    let journal = root
        .layout()
        .task_dir(TASK)
        .join(valp_store::foreign::FOREIGN_FILE);
    let changed = std::fs::read_to_string(&journal).unwrap().replacen(
        "agentops verdict.v2",
        "agentops verdict.v3",
        1,
    );
    std::fs::write(&journal, &changed).unwrap();
    let (rows, problems) = Foreign::default().rows(&root, &[TASK.to_owned()]);
    assert!(rows.is_empty());
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].path.ends_with("tasks/t/foreign.jsonl"),
        "{problems:?}"
    );
    assert!(
        problems[0]
            .reason
            .starts_with("foreign observations not shown: "),
        "{problems:?}"
    );
    assert_eq!(std::fs::read_to_string(&journal).unwrap(), changed);
}
