//! `verdict.v3` read alongside v2, on the fixtures in `tests/fixtures/related/agentops/v3/`
//! (written for these tests from the v3 schema: see PROVENANCE.md): the three outcomes map
//! exactly as v2's, a changed byte is digest-unbound, `NOT_PROVEN` is never pass or fail,
//! `EXCLUDED` is never not-applicable, every strict rule refuses with its exact reason, and the
//! plan mapping and refusals work as for v2.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};

use serde_json::Value;
use valp_runtime::plan::related::{AgentopsMapping, MapKey, Related, Target};
use valp_runtime::related::agentops::{
    self, ClaimResult, Mapped, Outcome, Reason, Report, ReviewVerdict,
};
use valp_runtime::related::record;
use valp_store::Access;
use valp_store::foreign::{self as store_foreign, ForeignJournal};
use valp_tests::project::{external_item, plan};
use valp_tests::schemas::{errors, validator};
use valp_tests::store::init_root;
use valp_tests::workspace_root;

const PASS: &str = "verdict-v3-PASS-7e9e03dd.json";
const FAIL: &str = "verdict-v3-FAIL-c2e651a2.json";
const NOT_PROVEN: &str = "verdict-v3-NOT_PROVEN-4d01af81.json";
const FAIL_DIGEST: &str = "c2e651a28fd6235c262eab14dbb867f28ec67edf00d96e72a629e6c6f6ee582d";
/// sha256("final"): the fixtures' `final_manifest_digest`, the claim's subject.
const SUBJECT: &str = "2443630b4620165c8b173e7265e17526fe2787ae594364dd6d839ad58f2fc007";

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        workspace_root()
            .join("tests/fixtures/related/agentops/v3")
            .join(name),
    )
    .unwrap()
}

fn folder(files: &[(&str, String)]) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("verdicts");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    (temp, dir)
}

fn ingest(files: &[(&str, String)]) -> Report {
    let (_temp, dir) = folder(files);
    agentops::ingest_dir(&dir).unwrap()
}

/// The one rejection of a folder holding `text` alone.
fn refused(text: String) -> Reason {
    let report = ingest(&[("v.json", text)]);
    assert!(report.verdicts.is_empty());
    assert_eq!(report.rejections.len(), 1);
    report.rejections[0].reason.clone()
}

#[test]
fn the_three_v3_outcomes_map_exactly_as_v2s() {
    let report = ingest(&[
        (PASS, fixture(PASS)),
        (FAIL, fixture(FAIL)),
        (NOT_PROVEN, fixture(NOT_PROVEN)),
    ]);
    assert!(report.rejections.is_empty(), "{:?}", report.rejections);
    let mapped: Vec<(&str, Mapped)> = report
        .verdicts
        .iter()
        .map(|v| (v.file.as_str(), v.mapped))
        .collect();
    assert_eq!(
        mapped,
        [
            (
                FAIL,
                Mapped {
                    claim: ClaimResult::Fail,
                    review: ReviewVerdict::Fail
                }
            ),
            (
                NOT_PROVEN,
                Mapped {
                    claim: ClaimResult::Unknown,
                    review: ReviewVerdict::Blocked
                }
            ),
            (
                PASS,
                Mapped {
                    claim: ClaimResult::Pass,
                    review: ReviewVerdict::Pass
                }
            ),
        ]
    );
    for verdict in &report.verdicts {
        assert_eq!(verdict.verdict.schema_version, "verdict.v3");
        assert_eq!(verdict.verdict.subject_manifest_digest, SUBJECT);
        assert_eq!(
            verdict.levels.names(),
            ["structurally_valid", "digest_bound"]
        );
        assert!(verdict.byte_canonical);
    }
    // EXCLUDED is unknown, never not-applicable (the scope index is not resolved).
    let fail = &report.verdicts[0].verdict;
    assert_eq!(fail.criteria[1].id, "AC-2");
    assert_eq!(fail.criteria[1].result, Outcome::NotProven);
    assert!(
        fail.criteria[1]
            .reason
            .as_deref()
            .unwrap()
            .starts_with("EXCLUDED, shown as unknown: the scope index is not resolved"),
    );
    assert_eq!(fail.v3.as_ref().unwrap().excluded, ["AC-2"]);
    // Receipts are unbound labels.
    assert!(fail.criteria[0].evidence_refs[0].starts_with("receipt:"));
}

#[test]
fn a_changed_byte_is_digest_unbound_and_a_content_addressed_name_must_match() {
    let changed = fixture(PASS).replacen("unit tests", "unit test", 1);
    assert!(matches!(
        refused(changed),
        Reason::DigestUnbound {
            field: "artifact_digest",
            ..
        }
    ));
    let report = ingest(&[(&format!("{FAIL_DIGEST}.json"), fixture(PASS))]);
    assert!(matches!(
        report.rejections[0].reason,
        Reason::DigestUnbound {
            field: "file name",
            ..
        }
    ));
    let named = ingest(&[(&format!("{FAIL_DIGEST}.json"), fixture(FAIL))]);
    assert_eq!(named.verdicts.len(), 1);
}

#[test]
fn every_strict_v3_rule_refuses_with_its_reason() {
    let pass = fixture(PASS);
    let not_proven = fixture(NOT_PROVEN);
    let cases: Vec<(String, Reason)> = vec![
        (
            pass.replacen("\"scope_index_ref\":\"scope/index.json\",", "", 1),
            Reason::MissingField("scope_index_ref"),
        ),
        (
            pass.replacen(
                "\"author_context_id\":\"ctx-author-1\"",
                "\"author_context_id\":null",
                1,
            ),
            Reason::Malformed(
                "invalid type: null, expected a string at line 1 column 67".to_owned(),
            ),
        ),
        (
            pass.replacen(
                "\"judgment_id\":\"judgment:rel19-pass\"",
                "\"judgment_id\":\"-bad\"",
                1,
            ),
            Reason::Rule("an id does not match ^[a-zA-Z0-9][a-zA-Z0-9._:-]*$".to_owned()),
        ),
        (
            pass.replacen(
                "\"final_manifest_ref\":\"manifests/final.json\"",
                "\"final_manifest_ref\":\"../final.json\"",
                1,
            ),
            Reason::Rule("a ref is empty, absolute or has a .. segment".to_owned()),
        ),
        (
            pass.replacen("\"not_checked\":[]", "\"not_checked\":[\"the replay\"]", 1),
            Reason::Rule("PASS with not_checked surfaces or nothing checked".to_owned()),
        ),
        (
            pass.replacen(
                "\"validator_context_id\":\"ctx-validator-1\"",
                "\"validator_context_id\":\"ctx-author-1\"",
                1,
            ),
            Reason::Rule("PASS with equal author and validator context ids".to_owned()),
        ),
        (
            not_proven.replacen("\"verdict\":\"NOT_PROVEN\"", "\"verdict\":\"PASS\"", 1),
            Reason::Rule("PASS with not_checked surfaces or nothing checked".to_owned()),
        ),
        (
            pass.replacen("\"intent_digest\":\"", "\"intent_digest\":\"X", 1),
            Reason::DigestText("intent_digest"),
        ),
    ];
    for (text, reason) in cases {
        let found = refused(text.clone());
        if let (Reason::Malformed(_), Reason::Malformed(found)) = (&reason, &found) {
            assert!(
                found.starts_with("invalid type: null, expected a string"),
                "{found}"
            );
        } else {
            assert_eq!(found, reason, "{text}");
        }
    }
    // An unknown key (a v2 key in a v3 file) is refused by name.
    let unknown = pass.replacen('{', "{\"evidence_refs\":[],", 1);
    match refused(unknown) {
        Reason::Malformed(message) => {
            assert!(
                message.starts_with("unknown field `evidence_refs`"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_plan_mapping_places_v3_verdicts_and_never_guesses() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let text = plan("t", &external_item("review", &[], &[]));
    let parsed = valp_runtime::plan::parse(Path::new("t.toml"), text.as_bytes()).unwrap();
    valp_runtime::plan::publish(&root, &parsed, 0).unwrap();
    let (_dir_temp, dir) = folder(&[
        (PASS, fixture(PASS)),
        (FAIL, fixture(FAIL)),
        (NOT_PROVEN, fixture(NOT_PROVEN)),
    ]);
    let report = agentops::ingest_dir(&dir).unwrap();
    // The FAIL by its digest on the task; nothing else named.
    let related = Related {
        agentops: vec![AgentopsMapping {
            key: MapKey::Verdict(FAIL_DIGEST.to_owned()),
            work_item: None,
        }],
        agentops_watch: None,
    };
    let (kept, unplaced) = record::record_agentops_by_plan(&root, "t", &related, &report).unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        kept[0].record.claim,
        Some((
            store_foreign::ClaimResult::Fail,
            store_foreign::ReviewVerdict::Fail
        ))
    );
    assert_eq!(
        unplaced
            .iter()
            .map(|u| (u.file.as_str(), u.target.clone()))
            .collect::<Vec<_>>(),
        [(NOT_PROVEN, Target::Unmapped), (PASS, Target::Unmapped)]
    );
    // All by their shared subject on `review`: NOT_PROVEN recorded unknown/blocked, never
    // pass or fail; the descriptor says v3 and lists the EXCLUDED criterion.
    let related = Related {
        agentops: vec![AgentopsMapping {
            key: MapKey::Subject(SUBJECT.to_owned()),
            work_item: Some("review".to_owned()),
        }],
        agentops_watch: None,
    };
    let error = record::record_agentops_by_plan(&root, "t", &related, &report).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("was already recorded with other content"),
        "{error}"
    );
    let temp2 = tempfile::tempdir().unwrap();
    let root2 = init_root(temp2.path());
    valp_runtime::plan::publish(&root2, &parsed, 0).unwrap();
    let (kept, unplaced) = record::record_agentops_by_plan(&root2, "t", &related, &report).unwrap();
    assert!(unplaced.is_empty());
    let claims: Vec<_> = kept.iter().map(|k| k.record.claim).collect();
    assert_eq!(
        claims,
        [
            Some((
                store_foreign::ClaimResult::Fail,
                store_foreign::ReviewVerdict::Fail
            )),
            Some((
                store_foreign::ClaimResult::Unknown,
                store_foreign::ReviewVerdict::Blocked
            )),
            Some((
                store_foreign::ClaimResult::Pass,
                store_foreign::ReviewVerdict::Pass
            )),
        ]
    );
    let schema = validator("console/foreign-descriptor.schema.json");
    let descriptor: Value = serde_json::from_slice(
        &root2
            .blobs()
            .get(&kept[0].record.descriptor_digest)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(errors(&schema, &descriptor), Vec::<String>::new());
    assert_eq!(descriptor["origin"]["format"], "verdict.v3");
    assert_eq!(descriptor["v3"]["excluded"], serde_json::json!(["AC-2"]));
    assert_eq!(descriptor["claim"]["criteria"][1]["result"], "unknown");
    assert_eq!(
        ForeignJournal::of_task(&root2, "t", Access::ReadOnly)
            .unwrap()
            .records()
            .len(),
        3
    );
}
