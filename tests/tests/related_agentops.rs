//! `valp ingest agentops` on the real AgentOps files in `tests/fixtures/related/agentops/`
//! (provenance in `tests/fixtures/related/PROVENANCE.md`): the three outcomes map exactly, a
//! changed byte is refused as digest-unbound, `NOT_PROVEN` never becomes pass or fail, and each
//! "never infer" rule of the research notes has a negative test here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_runtime::related::agentops::{
    self, ClaimResult, Independence, Ingested, Reason, Rejection, Report, ReviewVerdict, Verdict,
};
use valp_tests::cli::valp_in;
use valp_tests::workspace_root;

const PASS: &str = "verdict-v2-PASS-b4d8bd3b.json";
const FAIL: &str = "verdict-v2-FAIL-3c297141.json";
const NOT_PROVEN: &str = "verdict-v2-NOT_PROVEN-42554461.json";
const MANIFEST: &str = "subject-manifest-v1-c7cb66d7.json";

fn fixtures() -> PathBuf {
    workspace_root().join("tests/fixtures/related/agentops")
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).unwrap()
}

/// A scratch folder holding `files` (name, content).
fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    dir
}

fn ingest(dir: &Path) -> Report {
    agentops::ingest_dir(dir).unwrap()
}

fn taken<'a>(report: &'a Report, file: &str) -> &'a Ingested {
    report
        .verdicts
        .iter()
        .find(|verdict| verdict.file == file)
        .unwrap_or_else(|| panic!("{file} not taken: {:?}", report.rejections))
}

/// The only rejection of a report.
fn only_rejection(report: &Report) -> &Rejection {
    assert!(report.verdicts.is_empty(), "{:?}", report.verdicts);
    assert_eq!(report.rejections.len(), 1, "{:?}", report.rejections);
    &report.rejections[0]
}

fn malformed(report: &Report) -> String {
    match &only_rejection(report).reason {
        Reason::Malformed(message) => message.clone(),
        other => panic!("not malformed: {other:?}"),
    }
}

/// A copy of the PASS verdict with `field` set to `value` (digest not updated).
fn pass_with(field: &str, value: serde_json::Value) -> String {
    let mut verdict: serde_json::Value = serde_json::from_str(&fixture(PASS)).unwrap();
    verdict[field] = value;
    serde_json::to_string(&verdict).unwrap()
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
                files.insert(
                    entry.path(),
                    (Vec::new(), entry.metadata().unwrap().modified().unwrap()),
                );
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

#[test]
fn the_three_outcomes_map_exactly_on_the_real_files() {
    let report = ingest(&fixtures());
    assert!(report.rejections.is_empty(), "{:?}", report.rejections);
    assert_eq!(report.verdicts.len(), 3);
    let expected = [
        (PASS, ClaimResult::Pass, ReviewVerdict::Pass),
        (FAIL, ClaimResult::Fail, ReviewVerdict::Fail),
        (NOT_PROVEN, ClaimResult::Unknown, ReviewVerdict::Blocked),
    ];
    for (file, claim, review) in expected {
        let verdict = taken(&report, file);
        assert_eq!(
            (verdict.mapped.claim, verdict.mapped.review),
            (claim, review),
            "{file}"
        );
        assert!(
            verdict.levels.structurally_valid && verdict.levels.digest_bound,
            "{file}"
        );
        assert!(
            verdict.byte_canonical,
            "{file}: AgentOps writes canonical + LF"
        );
        let bytes = std::fs::read(fixtures().join(file)).unwrap();
        assert_eq!(
            verdict.content_digest,
            valp_kernel::canonical::sha256_digest(&bytes)
        );
        // No intent snapshot was kept with these files.
        assert!(!verdict.levels.intent_resolved, "{file}");
    }
    // Only the PASS verdict's subject manifest was kept: it resolves, the others do not.
    assert!(taken(&report, PASS).levels.subject_resolved);
    assert!(!taken(&report, FAIL).levels.subject_resolved);
    assert!(!taken(&report, NOT_PROVEN).levels.subject_resolved);
    let manifest_digest = &taken(&report, PASS).verdict.subject_manifest_digest;
    assert_eq!(
        report.manifests.get(manifest_digest).map(String::as_str),
        Some(MANIFEST)
    );
}

#[test]
fn a_changed_byte_is_refused_as_digest_unbound() {
    let original = fixture(PASS);
    // One byte inside a string value: the shape stays valid, only the digest can tell.
    let changed = original.replacen("2026-07-24T", "2026-07-25T", 1);
    assert_ne!(changed, original);
    assert_eq!(changed.len(), original.len());
    let dir = folder(&[(PASS, &changed)]);
    let report = ingest(dir.path());
    let rejection = only_rejection(&report);
    assert_eq!(rejection.file, PASS);
    match &rejection.reason {
        Reason::DigestUnbound {
            field,
            stated,
            recomputed,
        } => {
            assert_eq!(*field, "artifact_digest");
            assert!(stated.starts_with("b4d8bd3b"), "{stated}");
            assert_ne!(recomputed, stated);
        }
        other => panic!("not digest-unbound: {other:?}"),
    }
}

#[test]
fn a_content_addressed_name_must_be_the_recomputed_digest() {
    let report = ingest(&fixtures());
    let pass_digest = taken(&report, PASS).verdict.artifact_digest.clone();
    let fail_digest = taken(&report, FAIL).verdict.artifact_digest.clone();
    // The FAIL verdict under the PASS verdict's name: refused, never taken as a PASS.
    let wrong = format!("{pass_digest}.json");
    let dir = folder(&[(&wrong, &fixture(FAIL))]);
    let rejection = only_rejection(&ingest(dir.path())).clone();
    assert_eq!(
        rejection,
        Rejection {
            file: wrong,
            reason: Reason::DigestUnbound {
                field: "file name",
                stated: pass_digest,
                recomputed: fail_digest.clone(),
            },
        }
    );
    let right = format!("{fail_digest}.json");
    let dir = folder(&[(&right, &fixture(FAIL))]);
    let report = ingest(dir.path());
    assert!(report.rejections.is_empty());
    assert_eq!(taken(&report, &right).mapped.claim, ClaimResult::Fail);
}

#[test]
fn not_proven_never_turns_into_pass_or_fail() {
    let report = ingest(&fixtures());
    let verdict = taken(&report, NOT_PROVEN);
    assert_eq!(verdict.mapped.claim, ClaimResult::Unknown);
    assert_eq!(verdict.mapped.review, ReviewVerdict::Blocked);
    // Even with every criterion's evidence and two distinct ids declared.
    assert!(matches!(
        verdict.independence,
        Independence::Declared { .. }
    ));
    let run = valp_in(&fixtures(), None, &["ingest", "agentops", "."]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let block: String = run
        .stdout
        .split("verdict ")
        .find(|block| block.starts_with(NOT_PROVEN))
        .unwrap()
        .to_owned();
    assert!(block.contains("outcome: NOT_PROVEN -> claim unknown (not proven: neither pass nor fail); review blocked"), "{block}");
    assert!(
        !block.contains("claim pass") && !block.contains("claim fail"),
        "{block}"
    );
    assert!(
        !block.contains("review pass") && !block.contains("review fail"),
        "{block}"
    );
}

#[test]
fn the_command_shows_origin_levels_and_independence_and_names_no_task_unasked() {
    let run = valp_in(&fixtures(), None, &["ingest", "agentops", "."]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout
            .contains("task: none named (give --task; never guessed)"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(
        "outcome: PASS -> claim pass (supported by a foreign review; not a VALP review, not Done); review pass"
    ));
    assert!(
        run.stdout
            .contains("levels: structurally_valid, digest_bound, subject_resolved\n")
    );
    assert!(run.stdout.contains(
        "independence: declared (author root-t0rs-author-20260724, validator root-t0rs-validator-20260724-01)"
    ));
    assert!(
        run.stdout
            .contains("origin: agentops verdict.v2, artifact_digest agentops-c14n-nolf:b4d8bd3b")
    );
    assert!(
        run.stdout
            .ends_with("agentops: 3 verdicts, 1 manifests, 0 intents, 0 rejected\n")
    );
    // Never a next action or retry: AgentOps verdicts carry none.
    assert!(!run.stdout.contains("retry") && !run.stdout.contains("next action"));
    let named = valp_in(
        &fixtures(),
        None,
        &["ingest", "agentops", ".", "--task", "t-1"],
    )
    .unwrap();
    assert!(
        named
            .stdout
            .contains("task: t-1 (named on the command line)"),
        "{}",
        named.stdout
    );
}

#[test]
fn the_default_folder_is_read_and_nothing_under_agents_changes() {
    let workspace = tempfile::tempdir().unwrap();
    let store = workspace.path().join(".agents/ao/verdicts/sha256");
    std::fs::create_dir_all(&store).unwrap();
    for name in [PASS, FAIL, NOT_PROVEN, MANIFEST] {
        std::fs::copy(fixtures().join(name), store.join(name)).unwrap();
    }
    std::fs::write(store.join("broken.json"), "{").unwrap();
    let before = snapshot(workspace.path());
    let run = valp_in(workspace.path(), None, &["ingest", "agentops"]).unwrap();
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "rejected: broken.json: malformed: EOF while parsing an object at line 1 column 1"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("agentops: 3 verdicts, 1 manifests, 0 intents, 1 rejected")
    );
    assert_eq!(
        snapshot(workspace.path()),
        before,
        "the ingest wrote or touched something"
    );
    assert_eq!(
        std::fs::read_to_string(store.join("broken.json")).unwrap(),
        "{",
        "never repaired"
    );
}

#[test]
fn unknown_duplicate_and_missing_keys_are_listed_never_repaired() {
    let dir = folder(&[(PASS, &pass_with("extra", serde_json::json!("x")))]);
    let message = malformed(&ingest(dir.path()));
    assert!(message.starts_with("unknown field `extra`"), "{message}");

    let original = fixture(PASS);
    let duplicated = original.replacen(
        "{\"acceptance_digest\"",
        "{\"verdict\":\"FAIL\",\"acceptance_digest\"",
        1,
    );
    let dir = folder(&[(PASS, &duplicated)]);
    let message = malformed(&ingest(dir.path()));
    assert!(
        message.starts_with("duplicate field `verdict`"),
        "{message}"
    );

    let mut verdict: serde_json::Value = serde_json::from_str(&original).unwrap();
    verdict.as_object_mut().unwrap().remove("author_context_id");
    let dir = folder(&[(PASS, &serde_json::to_string(&verdict).unwrap())]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::MissingField("author_context_id")
    );

    let dir = folder(&[(
        PASS,
        &pass_with("artifact_digest", serde_json::json!("B4D8")),
    )]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::DigestText("artifact_digest")
    );

    // An unknown finding field nested inside an array is refused as well.
    let nested = fixture(FAIL).replacen(
        "{\"evidence_refs\"",
        "{\"severity\":\"high\",\"evidence_refs\"",
        1,
    );
    let dir = folder(&[(FAIL, &nested)]);
    let message = malformed(&ingest(dir.path()));
    assert!(message.starts_with("unknown field `severity`"), "{message}");
}

#[test]
fn pass_is_never_inferred_from_a_report_a_council_file_or_file_presence() {
    let report =
        r#"{"schema_version":"rpi-report.v1","status":"PASS","checked":[],"not_checked":[]}"#;
    let council = "# Council Verdict\n\nVerdict: PASS\n";
    let dir = folder(&[
        ("report.json", report),
        ("2026-07-24-validate-x.md", council),
        ("empty.json", ""),
    ]);
    let report = ingest(dir.path());
    assert!(report.verdicts.is_empty());
    let reasons: Vec<(&str, &Reason)> = report
        .rejections
        .iter()
        .map(|rejection| (rejection.file.as_str(), &rejection.reason))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("2026-07-24-validate-x.md", &Reason::NotAVerdict),
            (
                "empty.json",
                &Reason::Malformed("EOF while parsing a value at line 1 column 0".to_owned())
            ),
            (
                "report.json",
                &Reason::UnknownSchema("\"rpi-report.v1\"".to_owned())
            ),
        ]
    );
    // A v2 body relabelled verdict.v3 is read as v3, and refused: v3 has other keys.
    let v3 = pass_with("schema_version", serde_json::json!("verdict.v3"));
    let dir = folder(&[(PASS, &v3)]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::MissingField("invocation_id")
    );
}

#[test]
fn independence_is_never_strengthened_nor_made_up() {
    let decode = |text: &str| serde_json::from_str::<Verdict>(text).unwrap();
    let null_author = pass_with("author_context_id", serde_json::Value::Null);
    assert_eq!(
        agentops::independence(&decode(&null_author)),
        Independence::NotEstablished("author_context_id is null")
    );
    let null_validator = pass_with("validator_context_id", serde_json::Value::Null);
    assert_eq!(
        agentops::independence(&decode(&null_validator)),
        Independence::NotEstablished("validator_context_id is null")
    );
    let same = pass_with(
        "validator_context_id",
        serde_json::json!("root-t0rs-author-20260724"),
    );
    assert_eq!(
        agentops::independence(&decode(&same)),
        Independence::NotEstablished("author and validator context ids are equal")
    );
    // And a PASS claiming it without independence is refused by the schema rule, before its
    // digest is even looked at.
    let dir = folder(&[(PASS, &same)]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::Rule("PASS without two distinct declared context ids".to_owned())
    );
    let no_freshness = pass_with("freshness_attestation", serde_json::Value::Null);
    let dir = folder(&[(PASS, &no_freshness)]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::Rule("PASS without a freshness attestation".to_owned())
    );
    let unchecked = pass_with("not_checked", serde_json::json!(["docs"]));
    let dir = folder(&[(PASS, &unchecked)]);
    assert_eq!(
        only_rejection(&ingest(dir.path())).reason,
        Reason::Rule("PASS with not_checked surfaces".to_owned())
    );
}

#[test]
fn the_validation_time_is_never_taken_from_the_file_time() {
    let dir = folder(&[(PASS, &fixture(PASS))]);
    let file = std::fs::File::options()
        .write(true)
        .open(dir.path().join(PASS))
        .unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
        .unwrap();
    drop(file);
    let report = ingest(dir.path());
    let stated: serde_json::Value = serde_json::from_str(&fixture(PASS)).unwrap();
    assert_eq!(
        taken(&report, PASS).verdict.validated_at,
        stated["validated_at"].as_str().unwrap()
    );
    let run = valp_in(dir.path(), None, &["ingest", "agentops", "."]).unwrap();
    let line = format!(
        "validated_at: {}\n",
        stated["validated_at"].as_str().unwrap()
    );
    assert!(run.stdout.contains(&line), "{}", run.stdout);
    assert!(!run.stdout.contains("2001-09-09"), "{}", run.stdout);
}

#[test]
fn evidence_refs_are_never_resolved_and_a_later_verdict_supersedes_nothing() {
    // A file named like one of the PASS verdict's references changes nothing: refs are labels.
    let stated: serde_json::Value = serde_json::from_str(&fixture(PASS)).unwrap();
    let first_ref = stated["evidence_refs"][0]
        .as_str()
        .unwrap()
        .replace(['/', ':'], "_");
    let dir = folder(&[
        (PASS, &fixture(PASS)),
        (FAIL, &fixture(FAIL)),
        (&first_ref, "x"),
    ]);
    let report = ingest(dir.path());
    let alone_dir = folder(&[(PASS, &fixture(PASS))]);
    let alone = ingest(alone_dir.path());
    assert_eq!(taken(&report, PASS).levels, taken(&alone, PASS).levels);
    // Both verdicts stay, each immutable evidence of its own subject.
    assert_eq!(report.verdicts.len(), 2);
    assert_eq!(report.rejections.len(), 1, "{:?}", report.rejections);
}

#[test]
fn manifests_and_intents_bind_by_their_bytes() {
    // A manifest whose content changed no longer resolves the PASS verdict's subject.
    let manifest = fixture(MANIFEST).replacen("\"executable\":false", "\"executable\":true", 1);
    assert_ne!(manifest, fixture(MANIFEST));
    let dir = folder(&[(PASS, &fixture(PASS)), (MANIFEST, &manifest)]);
    let report = ingest(dir.path());
    assert!(!taken(&report, PASS).levels.subject_resolved);
    assert!(
        matches!(
            &report.rejections[..],
            [Rejection {
                reason: Reason::DigestUnbound {
                    field: "canonical_manifest_digest",
                    ..
                },
                ..
            }]
        ),
        "{:?}",
        report.rejections
    );
    // git_metadata is descriptive: changing it leaves the identity alone.
    let mut described: serde_json::Value = serde_json::from_str(&fixture(MANIFEST)).unwrap();
    described["git_metadata"] = serde_json::json!({"candidate": "0000"});
    let dir = folder(&[
        (PASS, &fixture(PASS)),
        (MANIFEST, &serde_json::to_string(&described).unwrap()),
    ]);
    assert!(taken(&ingest(dir.path()), PASS).levels.subject_resolved);
    // An intent snapshot is named by the SHA-256 of its bytes (generated here: none was kept).
    let bytes = "Acceptance: the docs build.\n";
    let digest = valp_kernel::canonical::sha256_digest(bytes.as_bytes());
    let hex = digest.strip_prefix("sha256:").unwrap();
    let good = format!("{hex}.intent");
    let bad = format!("{}.intent", "0".repeat(64));
    let dir = folder(&[(&good, bytes), (&bad, bytes), (".intent-1.tmp", "partial")]);
    let report = ingest(dir.path());
    assert_eq!(
        report.intents.get(hex).map(String::as_str),
        Some(good.as_str())
    );
    assert_eq!(
        report.rejections,
        vec![Rejection {
            file: bad,
            reason: Reason::DigestUnbound {
                field: "file name",
                stated: "0".repeat(64),
                recomputed: hex.to_owned(),
            },
        }]
    );
}

#[test]
fn a_missing_folder_is_a_usage_error_not_an_empty_report() {
    let dir = tempfile::tempdir().unwrap();
    let run = valp_in(dir.path(), None, &["ingest", "agentops"]).unwrap();
    assert_eq!(run.code, Some(2), "{}", run.stdout);
    assert_eq!(
        run.stderr,
        "valp: agentops folder .agents/ao/verdicts/sha256: No such file or directory (os error 2)\n"
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        !dir.path().join(".agents").exists(),
        "the folder is never created"
    );
}
