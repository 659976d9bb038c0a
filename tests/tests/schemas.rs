//! Every file format valp reads or writes has a JSON Schema in `schemas/`; this checks the
//! schemas against real artifacts: the committed reference vectors, the deviations file, and
//! kernel artifacts produced along seeded walks. Malformed instances must be refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;
use valp_kernel::canonical::Canonical;
use valp_kernel::replay::{GenesisRoot, ReplayEntry, replay};
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Outcome, reduce};
use valp_tests::schemas::{SCHEMA_BASE, errors, read_json, validator};
use valp_tests::workspace_root;

fn json_of<T: Canonical>(artifact: &T) -> Value {
    serde_json::from_slice(&artifact.canonical_bytes()).unwrap()
}

/// Names of the vectors in `file` that do not validate.
fn invalid_vectors(file: &str, schema: &str) -> (usize, Vec<String>) {
    let validator = validator(schema);
    let path = workspace_root()
        .join("tests/fixtures/conformance")
        .join(file);
    let reader = BufReader::new(flate2::read::GzDecoder::new(
        std::fs::File::open(path).unwrap(),
    ));
    let mut count = 0;
    let mut invalid = Vec::new();
    for line in reader.lines() {
        let vector: Value = serde_json::from_str(&line.unwrap()).unwrap();
        count += 1;
        if !validator.is_valid(&vector) {
            invalid.push(vector["name"].as_str().unwrap().to_owned());
        }
    }
    (count, invalid)
}

#[test]
fn every_schema_is_a_valid_draft_2020_12_schema() {
    let mut checked = 0;
    for directory in [
        "schemas/kernel",
        "schemas/conformance",
        "schemas/store",
        "schemas/console",
    ] {
        for entry in std::fs::read_dir(workspace_root().join(directory)).unwrap() {
            let path = entry.unwrap().path();
            let schema = read_json(&path);
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            let relative = path.strip_prefix(workspace_root().join("schemas")).unwrap();
            assert_eq!(
                schema["$id"],
                format!("{SCHEMA_BASE}{}", relative.display())
            );
            jsonschema::meta::validate(&schema)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            validator(&relative.display().to_string());
            checked += 1;
        }
    }
    assert_eq!(checked, 66);
}

#[test]
fn reference_vectors_validate_except_booleans_in_integer_slots() {
    let (count, invalid) = invalid_vectors(
        "kernel-vectors.jsonl.gz",
        "conformance/kernel-vector.schema.json",
    );
    assert_eq!(count, 2650);
    // JSON Schema counts 0.0 as an integer, so the float vector validates; the decoder
    // still refuses it (kernel/DEVIATIONS.md, D1).
    assert_eq!(
        invalid,
        [
            "malformed_types/event/expected-revision-false",
            "malformed_types/event/dispatch-generation-false"
        ]
    );
    let (count, invalid) = invalid_vectors(
        "replay-vectors.jsonl.gz",
        "conformance/replay-vector.schema.json",
    );
    assert_eq!((count, invalid.len()), (479, 0), "{invalid:?}");
    let (count, invalid) = invalid_vectors(
        "checkpoint-replay-vectors.jsonl.gz",
        "conformance/checkpoint-vector.schema.json",
    );
    assert_eq!((count, invalid.len()), (165, 0), "{invalid:?}");
}

#[test]
fn the_deviations_file_validates() {
    let validator = validator("conformance/deviations.schema.json");
    let file = read_json(&workspace_root().join("kernel/deviations.json"));
    assert_eq!(errors(&validator, &file), Vec::<String>::new());
    let mut broken = file.clone();
    broken["deviations"][0]["outcome"] = serde_json::json!({"rejected": "VALP-E-NOPE"});
    assert!(!validator.is_valid(&broken));
    let mut two_outcomes = file;
    two_outcomes["deviations"][0]["outcome"] =
        serde_json::json!({"rejected": "VALP-E-STATE-CONFLICT", "replay_error": "x"});
    assert!(!validator.is_valid(&two_outcomes));
}

#[test]
fn kernel_artifacts_along_walks_validate() {
    let state = validator("kernel/state.schema.json");
    let event = validator("kernel/event.schema.json");
    let result = validator("kernel/result.schema.json");
    let entry = validator("kernel/replay-entry.schema.json");
    let compact = validator("kernel/compact-entry.schema.json");
    let genesis = validator("kernel/genesis-root.schema.json");
    let replay_schema = validator("kernel/replay.schema.json");
    for (seed, work_items) in [(1, 0), (2, 4), (3, 20)] {
        let mut walk = Walk::new(WalkConfig {
            seed,
            work_items,
            may_terminate: true,
        });
        let root: GenesisRoot = walk.genesis().clone();
        assert_eq!(errors(&genesis, &json_of(&root)), Vec::<String>::new());
        let mut current = root.state.clone();
        let mut entries = Vec::new();
        for step in walk.by_ref().take(60) {
            let outcome = reduce(&current, &step.event, &step.evidence_set);
            assert_eq!(errors(&event, &json_of(&step.event)), Vec::<String>::new());
            assert_eq!(errors(&result, &json_of(&outcome)), Vec::<String>::new());
            let Outcome::Accepted(accepted) = &outcome else {
                panic!("walk steps are accepted")
            };
            current = accepted.state.clone();
            assert_eq!(errors(&state, &json_of(&current)), Vec::<String>::new());
            let reference = ReplayEntry {
                event: step.event.clone(),
                evidence_set: step.evidence_set.clone(),
                result: outcome,
            };
            assert_eq!(errors(&entry, &json_of(&reference)), Vec::<String>::new());
            assert_eq!(
                errors(&compact, &json_of(&step.into_compact())),
                Vec::<String>::new()
            );
            entries.push(reference);
        }
        let replayed = replay(&root, &entries).unwrap();
        assert_eq!(
            errors(&replay_schema, &json_of(&replayed)),
            Vec::<String>::new()
        );
    }
}

/// Breaks one thing in a valid State.
type Breakage = fn(&mut Value);

#[test]
fn malformed_kernel_artifacts_are_refused() {
    let state = validator("kernel/state.schema.json");
    let walk = Walk::new(WalkConfig {
        seed: 9,
        work_items: 2,
        may_terminate: false,
    });
    let good = json_of(&walk.genesis().state);
    assert!(state.is_valid(&good));
    let cases: [(&str, Breakage); 7] = [
        ("unknown member", |v| {
            v["extra"] = Value::Bool(true);
        }),
        ("missing member", |v| {
            v.as_object_mut().unwrap().remove("revision");
        }),
        ("boolean revision", |v| {
            v["revision"] = Value::Bool(false);
        }),
        ("unknown identity kind", |v| {
            v["task_id"]["kind"] = "job".into();
        }),
        ("empty identity value", |v| {
            v["task_id"]["value"] = "".into();
        }),
        ("unknown work item status", |v| {
            v["work_items"][0]["status"] = "paused".into();
        }),
        ("wrong schema_version", |v| {
            v["schema_version"] = "valp-kernel-state.v2".into();
        }),
    ];
    for (name, break_it) in cases {
        let mut bad = good.clone();
        break_it(&mut bad);
        assert!(!state.is_valid(&bad), "{name} must be refused");
    }
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A journal line written since layout 3 (`timed`) validates, so does the same line as layout 2
/// wrote it (v1, no time), and every broken `recorded_at` is refused.
fn timed_lines_validate(line: &jsonschema::Validator, timed: &Value) {
    assert_eq!(timed["schema_version"], "valp-store-journal.v2");
    // A line written before layout 3: v1, no recorded_at.
    let mut untimed = timed.clone();
    untimed["schema_version"] = "valp-store-journal.v1".into();
    untimed.as_object_mut().unwrap().remove("recorded_at");
    assert_eq!(errors(line, &untimed), Vec::<String>::new());
    for (name, break_it) in [
        (
            "v2 without recorded_at",
            (|line: &mut Value| {
                line.as_object_mut().unwrap().remove("recorded_at");
            }) as fn(&mut Value),
        ),
        ("v1 with recorded_at", |line| {
            line["schema_version"] = "valp-store-journal.v1".into();
        }),
        ("recorded_at in seconds", |line| {
            line["recorded_at"] = "2026-12-02T06:25:44Z".into();
        }),
        ("recorded_at as a number", |line| {
            line["recorded_at"] = 1_796_042_096_789_i64.into();
        }),
        ("recorded_at in another zone", |line| {
            line["recorded_at"] = "2026-12-02T06:25:44.000+01:00".into();
        }),
    ] {
        let mut bad = timed.clone();
        break_it(&mut bad);
        assert!(!line.is_valid(&bad), "{name} must be refused");
    }
}

/// A task snapshot validates against `store/snapshot.schema.json`, which refuses broken ones.
#[test]
fn snapshots_validate() {
    let temp = tempfile::tempdir().unwrap();
    let root = valp_tests::store::init_root(temp.path());
    let mut history = valp_tests::store::History::new(5, 3);
    let mut journal = valp_tests::store::create_journal(&root, &mut history, 25);
    let snapshot = validator("store/snapshot.schema.json");
    let path = journal.write_snapshot().unwrap().unwrap();
    let good = read_json(&path);
    assert_eq!(errors(&snapshot, &good), Vec::<String>::new());
    assert_eq!(good["seq"], 25);
    for (name, break_it) in [
        (
            "seq 0",
            (|value: &mut Value| value["seq"] = 0.into()) as fn(&mut Value),
        ),
        ("odd pending", |value| {
            value["history"]["pending"] = "abc".into();
        }),
        ("history in the State", |value| {
            value["state"]["accepted_events"] = Value::Null;
        }),
        ("extra member", |value| value["compacted_below"] = 1.into()),
        ("no index", |value| {
            value.as_object_mut().unwrap().remove("index");
        }),
    ] {
        let mut bad = good.clone();
        break_it(&mut bad);
        assert!(!snapshot.is_valid(&bad), "{name} must be refused");
    }
}

#[test]
fn control_root_files_validate() {
    use std::sync::Arc;
    use valp_kernel::{Identity, IdentityKind};
    use valp_store::io::OsStorage;
    use valp_store::{Appended, ControlRoot, reference};

    let temp = tempfile::tempdir().unwrap();
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    let root = ControlRoot::init(&temp.path().join(".valp"), id, Arc::new(OsStorage)).unwrap();
    let mut walk = Walk::new(WalkConfig {
        seed: 5,
        work_items: 3,
        may_terminate: false,
    });
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(25).collect();
    for step in &steps {
        assert!(matches!(
            journal.append(&step.event, &step.evidence_set).unwrap(),
            Appended::Accepted { .. }
        ));
    }
    let mut stale = steps[3].event.clone();
    stale.event_id = Identity::new(IdentityKind::Event, "late").unwrap();
    assert!(matches!(
        journal.append(&stale, &steps[3].evidence_set).unwrap(),
        Appended::Rejected { .. }
    ));

    let installation = validator("store/installation.schema.json");
    let layout = root.layout();
    assert_eq!(
        errors(&installation, &read_json(&layout.installation_file())),
        Vec::<String>::new()
    );
    let mut layout_1 = read_json(&layout.installation_file());
    for other in [1, 2, 3, 5] {
        layout_1["layout_version"] = other.into();
        assert!(
            !installation.is_valid(&layout_1),
            "layout_version {other} is not layout 4"
        );
    }
    let head = validator("store/head.schema.json");
    for file in [
        journal.dir().join("journal.head"),
        layout.installation_dir().join("journal.head"),
    ] {
        assert_eq!(errors(&head, &read_json(&file)), Vec::<String>::new());
    }
    let good_head = read_json(&journal.dir().join("journal.head"));
    assert_eq!(good_head["seq"], 25);
    for (name, break_it) in [
        (
            "negative seq",
            (|head: &mut Value| head["seq"] = (-1).into()) as fn(&mut Value),
        ),
        ("uppercase digest", |head| {
            head["entry_digest"] = format!("sha256:{}", "A".repeat(64)).into();
        }),
        ("no length", |head| {
            head.as_object_mut().unwrap().remove("length");
        }),
        ("extra member", |head| head["snapshot"] = Value::Null),
        ("other schema", |head| {
            head["schema_version"] = "valp-store-head.v2".into();
        }),
    ] {
        let mut bad = good_head.clone();
        break_it(&mut bad);
        assert!(!head.is_valid(&bad), "{name} must be refused");
    }
    let line = validator("store/journal-line.schema.json");
    let journal_lines = lines_of(journal.path());
    assert_eq!(journal_lines.len(), 26);
    for value in &journal_lines {
        assert_eq!(errors(&line, value), Vec::<String>::new());
    }
    let mut genesis_as_entry = journal_lines[0].clone();
    genesis_as_entry["seq"] = 1.into();
    assert!(
        !line.is_valid(&genesis_as_entry),
        "line 0 alone holds a GenesisRoot"
    );
    timed_lines_validate(&line, &journal_lines[3]);
    let rejection = validator("store/rejection.schema.json");
    let rejections = lines_of(&journal.dir().join("rejections.jsonl"));
    assert_eq!(rejections.len(), 1);
    assert_eq!(errors(&rejection, &rejections[0]), Vec::<String>::new());

    let out = temp.path().join("export");
    reference::export(&journal, &out).unwrap();
    let genesis = validator("kernel/genesis-root.schema.json");
    assert_eq!(
        errors(
            &genesis,
            &read_json(&out.join("runtime/kernel/genesis.json"))
        ),
        Vec::<String>::new()
    );
    let entry = validator("kernel/replay-entry.schema.json");
    for value in lines_of(&out.join("runtime/kernel/replay.jsonl")) {
        assert_eq!(errors(&entry, &value), Vec::<String>::new());
    }
}
