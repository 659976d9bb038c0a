//! The store's line time and a task's operator-action journal over a real control root:
//! every line carries the `recorded_at` of the injected clock, bound by the line's chain (an
//! edited time breaks it, a malformed one or a line without time after a timed one is refused,
//! even re-hashed); the action journal round-trips its records with their times, answers a
//! retry without writing, refuses every broken rule with the exact error and writes nothing,
//! treats a torn tail and a damaged line exactly as the other journals do, is checked by
//! `valp verify` and cut back to its verified prefix by recovery.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::live::LiveState;
use valp_store::actions::{ACTIONS_FILE, ActionAppended, ActionKind, Outcome};
use valp_store::chain::{encode_line, shown};
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::journal::read_entries;
use valp_store::{Access, ControlRoot, StoreError, Warning};
use valp_tests::schemas::{errors, validator};
use valp_tests::store::{
    History, RECORDED_AT, action, assert_repaired, corrupt_location, create_journal, delivery,
    init_root, journal_path, line_ranges, open_actions, open_task,
};

/// A root whose clock the test moves, with the walk task at 3 entries.
struct Lab {
    temp: tempfile::TempDir,
    root: ControlRoot,
    clock: Arc<FixedClock>,
}

impl Lab {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let clock = Arc::new(FixedClock::new(RECORDED_AT));
        let root = init_root(temp.path()).with_clock(Arc::clone(&clock) as _);
        create_journal(&root, &mut History::new(7, 3), 3);
        Self { temp, root, clock }
    }

    fn actions_path(&self) -> std::path::PathBuf {
        self.root
            .layout()
            .task_dir(valp_tests::store::TASK_ID)
            .join(ACTIONS_FILE)
    }
}

/// Already encoded canonical bytes, to write a line whose payload no typed value produces.
struct Raw(Vec<u8>);

impl Canonical for Raw {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.0);
    }
}

/// `line` with its `entry_digest` computed again over its bytes as they are (a forger who
/// re-hashes what they edited).
fn rehash(line: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(line).unwrap();
    let at = text.find(r#","entry_digest":"sha256:"#).unwrap();
    let member_len = r#","entry_digest":"sha256:"#.len() + 64 + 1;
    let without = [&line[..at], &line[at + member_len..]].concat();
    let digest = sha256_digest(&without);
    let mut out = line[..at].to_vec();
    out.extend_from_slice(format!(r#","entry_digest":"{digest}""#).as_bytes());
    out.extend_from_slice(&line[at + member_len..]);
    out
}

/// Replaces the last line of the file at `path` with `line` (the head still names the line
/// before it only if the caller says so: here the head's seq names it, so the reader's verdict
/// on the line is what is seen).
fn replace_last_line(path: &Path, edit: impl FnOnce(&[u8]) -> Vec<u8>) -> (u64, u64) {
    let bytes = std::fs::read(path).unwrap();
    let ranges = line_ranges(&bytes);
    let last = ranges.last().unwrap().clone();
    let edited = edit(&bytes[last.clone()]);
    std::fs::write(path, [&bytes[..last.start], edited.as_slice()].concat()).unwrap();
    (ranges.len() as u64, last.start as u64)
}

#[test]
fn every_line_carries_the_clock_time_and_old_lines_show_unknown() {
    let lab = Lab::new();
    lab.clock.advance(1_500);
    let mut journal = open_task(&lab.root, Access::Write).unwrap();
    valp_tests::store::append_step(&mut journal, &mut History::new(7, 3), 3);
    let mut times = Vec::new();
    read_entries::<LiveState>(&journal_path(&lab.root), |recorded| {
        times.push((recorded.seq, recorded.recorded_at));
    })
    .unwrap();
    let later = Timestamp::from_millis(RECORDED_AT.millis() + 1_500);
    assert_eq!(
        times,
        [
            (1, Some(RECORDED_AT)),
            (2, Some(RECORDED_AT)),
            (3, Some(RECORDED_AT)),
            (4, Some(later)),
        ]
    );
    assert_eq!(journal.last_recorded_at(), Some(later));
    let last = std::fs::read_to_string(journal_path(&lab.root)).unwrap();
    assert!(
        last.lines().last().unwrap().contains(
            r#""recorded_at":"2026-11-30T12:34:58.289Z","schema_version":"valp-store-journal.v2","seq":4}"#
        ),
        "{last}"
    );
    // How a line written before layout 3 (no recorded_at) is shown.
    assert_eq!(shown(None), "unknown");
    assert_eq!(shown(Some(later)), "2026-11-30T12:34:58.289Z");
    // The installation ledger's lines are timed too.
    let ledger = lab.root.ledger_read_only().unwrap();
    assert!(ledger.last_recorded_at().is_some());
}

#[test]
fn an_edited_recorded_at_breaks_the_chain_at_its_line() {
    let lab = Lab::new();
    let path = journal_path(&lab.root);
    let bytes = std::fs::read(&path).unwrap();
    let ranges = line_ranges(&bytes);
    let line = ranges[2].clone();
    let text = std::str::from_utf8(&bytes[line.clone()]).unwrap();
    let edited = text.replace(
        r#""recorded_at":"2026-11-30T12:34:56.789Z""#,
        r#""recorded_at":"2026-11-30T12:34:56.788Z""#,
    );
    assert_ne!(edited, text);
    let digest = serde_json::from_str::<serde_json::Value>(text).unwrap()["entry_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(
        &path,
        [&bytes[..line.start], edited.as_bytes(), &bytes[line.end..]].concat(),
    )
    .unwrap();
    let error = open_task(&lab.root, Access::ReadOnly).unwrap_err();
    let StoreError::Corrupt {
        path: file,
        line: number,
        byte,
        reason,
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!((file, *number, *byte), (&path, 3, line.start as u64));
    // The reason names the recorded digest and the one the edited bytes have.
    let computed = serde_json::from_slice::<serde_json::Value>(&rehash(edited.as_bytes())).unwrap()
        ["entry_digest"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(computed, digest);
    assert_eq!(
        reason,
        &format!("entry_digest {digest} does not match the line ({computed})")
    );
}

#[test]
fn a_malformed_recorded_at_is_refused_even_when_rehashed() {
    for (bad, what) in [
        ("2026-11-30T12:34:56Z", "no milliseconds"),
        ("2026-11-30T12:34:56.789+00:00", "an offset"),
        ("2026-02-30T12:34:56.789Z", "no such day"),
        ("2026-11-30 12:34:56.789Z", "a space"),
    ] {
        let lab = Lab::new();
        let path = journal_path(&lab.root);
        let (line, byte) = replace_last_line(&path, |line| {
            let text = std::str::from_utf8(line).unwrap().replace(
                r#""recorded_at":"2026-11-30T12:34:56.789Z""#,
                &format!(r#""recorded_at":"{bad}""#),
            );
            rehash(text.as_bytes())
        });
        let error = open_task(&lab.root, Access::ReadOnly).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "VALP-E-KERNEL-STORE-CORRUPT: {}:{line}: byte {byte}: recorded_at {bad:?} is not \
                 an RFC 3339 UTC time with milliseconds (YYYY-MM-DDTHH:MM:SS.mmmZ)",
                path.display()
            ),
            "{what}"
        );
    }
    let lab = Lab::new();
    let path = journal_path(&lab.root);
    let (line, byte) = replace_last_line(&path, |line| {
        let text = std::str::from_utf8(line).unwrap().replace(
            r#""recorded_at":"2026-11-30T12:34:56.789Z""#,
            r#""recorded_at":7"#,
        );
        rehash(text.as_bytes())
    });
    assert_eq!(
        open_task(&lab.root, Access::ReadOnly)
            .unwrap_err()
            .to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:{line}: byte {byte}: recorded_at must be a string",
            path.display()
        )
    );
}

#[test]
fn a_line_without_time_after_a_timed_one_is_damage() {
    let lab = Lab::new();
    let path = journal_path(&lab.root);
    let (line, byte) = replace_last_line(&path, |line| {
        let text = std::str::from_utf8(line)
            .unwrap()
            .replace(r#","recorded_at":"2026-11-30T12:34:56.789Z""#, "")
            .replace("valp-store-journal.v2", "valp-store-journal.v1");
        rehash(text.as_bytes())
    });
    assert_eq!(
        open_task(&lab.root, Access::ReadOnly)
            .unwrap_err()
            .to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:{line}: byte {byte}: a valp-store-journal.v1 line \
             (no recorded_at) after a valp-store-journal.v2 line: every line written since \
             layout 3 has its time",
            path.display()
        )
    );
    // A v2 line that lost its time, re-hashed.
    let lab = Lab::new();
    let path = journal_path(&lab.root);
    let (line, byte) = replace_last_line(&path, |line| {
        let text = std::str::from_utf8(line)
            .unwrap()
            .replace(r#","recorded_at":"2026-11-30T12:34:56.789Z""#, "");
        rehash(text.as_bytes())
    });
    assert_eq!(
        open_task(&lab.root, Access::ReadOnly)
            .unwrap_err()
            .to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:{line}: byte {byte}: a valp-store-journal.v2 line \
             must have recorded_at",
            path.display()
        )
    );
}

#[test]
fn actions_round_trip_with_their_time_and_a_retry_writes_nothing() {
    let lab = Lab::new();
    let mut actions = open_actions(&lab.root, Access::Write).unwrap();
    assert!(actions.is_empty());
    let message = action("msg-1", ActionKind::Message, 1);
    assert_eq!(
        actions.append(&message).unwrap(),
        ActionAppended::Recorded {
            seq: 0,
            recorded_at: Some(RECORDED_AT)
        }
    );
    lab.clock.advance(2_000);
    let approval = action("approve-1", ActionKind::ApprovalDecision, 1);
    actions.append(&approval).unwrap();
    lab.clock.advance(2_000);
    for kind in [
        ActionKind::Interrupt,
        ActionKind::CancelRequest,
        ActionKind::Submission,
    ] {
        actions.append(&action(kind.as_str(), kind, 1)).unwrap();
    }
    actions
        .append(&delivery("d-1", "msg-1", Outcome::Unconfirmed))
        .unwrap();
    actions
        .append(&delivery("d-2", "msg-1", Outcome::Delivered))
        .unwrap();
    let bytes = std::fs::read(lab.actions_path()).unwrap();

    // A retry of the same record is answered without writing; other content under the id is
    // refused.
    assert_eq!(
        actions.append(&message).unwrap(),
        ActionAppended::AlreadyRecorded
    );
    let mut other = message.clone();
    other.summary = "another message".to_owned();
    assert_eq!(
        actions.append(&other).unwrap_err().to_string(),
        format!(
            "{}: action \"msg-1\" was already recorded with other content (line 1)",
            lab.actions_path().display()
        )
    );
    assert!(std::fs::read(lab.actions_path()).unwrap() == bytes);

    let reader = open_actions(&lab.root, Access::ReadOnly).unwrap();
    let seen: Vec<(u64, String, Option<Timestamp>)> = reader
        .entries()
        .map(|recorded| {
            (
                recorded.seq,
                recorded.entry.action_id.clone(),
                recorded.recorded_at,
            )
        })
        .collect();
    let at = |plus: i64| Some(Timestamp::from_millis(RECORDED_AT.millis() + plus));
    assert_eq!(
        seen,
        [
            (0, "msg-1".to_owned(), at(0)),
            (1, "approve-1".to_owned(), at(2_000)),
            (2, "interrupt".to_owned(), at(4_000)),
            (3, "cancel_request".to_owned(), at(4_000)),
            (4, "submission".to_owned(), at(4_000)),
            (5, "d-1".to_owned(), at(4_000)),
            (6, "d-2".to_owned(), at(4_000)),
        ]
    );
    assert_eq!(reader.get("approve-1"), Some(&approval));
    assert_eq!(
        reader
            .delivery_of("msg-1")
            .and_then(|record| record.delivery.as_ref())
            .map(|delivery| delivery.outcome),
        Some(Outcome::Delivered)
    );
    assert_eq!(reader.delivery_of("approve-1"), None);
    assert_eq!(reader.head().map(|head| head.seq), Some(6));

    // Every line validates against its schema.
    let schema = validator("store/action-line.schema.json");
    for line in String::from_utf8(bytes).unwrap().lines() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(errors(&schema, &value), Vec::<String>::new(), "{line}");
    }

    // `valp verify` checks it.
    let verification = valp_store::verify::verify(&lab.root).unwrap();
    let check = verification
        .checks
        .iter()
        .find(|check| check.kind == "actions")
        .unwrap();
    assert_eq!((check.entries, check.problem.is_none()), (7, true));
    assert_eq!(verification.problems(), 0);
}

/// Records that break one rule each after `msg-1` and its failed delivery `d-1`, with the
/// refusal each gets (`refused(id, rule)` names the file).
fn broken_records(
    refused: &dyn Fn(&str, &str) -> String,
    path: &str,
) -> Vec<(valp_store::actions::ActionRecord, String)> {
    let mut cases = Vec::new();
    let mut unanswered = action("a-1", ActionKind::ApprovalDecision, 1);
    unanswered.answers = None;
    cases.push((
        unanswered,
        refused(
            "a-1",
            "operator action: an approval_decision names the request it answers",
        ),
    ));
    let mut decided = action("m-2", ActionKind::Message, 1);
    decided.allow = Some(false);
    cases.push((
        decided,
        refused(
            "m-2",
            "operator action: decision is set exactly on an approval_decision",
        ),
    ));
    let mut long = action("m-3", ActionKind::Message, 1);
    long.summary = "x".repeat(201);
    cases.push((
        long,
        refused(
            "m-3",
            "operator action: summary has 201 characters, more than 200",
        ),
    ));
    let mut escaped = action("m-4", ActionKind::Message, 1);
    "ok\u{1b}]0;title\u{7}".clone_into(&mut escaped.summary);
    cases.push((
        escaped,
        refused(
            "m-4",
            "operator action: summary must not hold control characters (sanitize it first)",
        ),
    ));
    let mut undigested = action("m-5", ActionKind::Message, 1);
    "sha256:abc".clone_into(&mut undigested.payload_digest);
    cases.push((
        undigested,
        refused(
            "m-5",
            "operator action: payload_digest must be a sha256 digest",
        ),
    ));
    let mut nameless = action("m-6", ActionKind::Message, 1);
    nameless.action_id = String::new();
    cases.push((
        nameless,
        refused(
            "",
            "operator action: action_id must have 1 to 128 characters",
        ),
    ));
    cases.push((
        delivery("d-2", "nope", Outcome::Delivered),
        refused(
            "d-2",
            "operator action: the delivery names action \"nope\", which is not an earlier record",
        ),
    ));
    cases.push((
        delivery("d-3", "d-1", Outcome::Delivered),
        refused(
            "d-3",
            "operator action: a delivery names an action, not another delivery",
        ),
    ));
    cases.push((
        delivery("d-4", "msg-1", Outcome::Delivered),
        refused(
            "d-4",
            "operator action: action \"msg-1\" already has a final delivery (failed)",
        ),
    ));
    let mut undelivered = action("m-7", ActionKind::Delivery, 1);
    undelivered.delivery = None;
    cases.push((
        undelivered,
        refused(
            "m-7",
            "operator action: delivery is set exactly on a delivery record",
        ),
    ));
    cases.push((
        action("msg-1", ActionKind::Interrupt, 1),
        format!("{path}: action \"msg-1\" was already recorded with other content (line 1)"),
    ));
    cases.push((
        action("m-8", ActionKind::Message, 2),
        format!("{path}: the action names Leader epoch 2, the task is bound to epoch 1"),
    ));
    cases
}

#[test]
fn every_rule_of_a_record_is_refused_with_its_error_and_nothing_is_written() {
    let lab = Lab::new();
    let mut actions = open_actions(&lab.root, Access::Write).unwrap();
    actions
        .append(&action("msg-1", ActionKind::Message, 1))
        .unwrap();
    actions
        .append(&delivery("d-1", "msg-1", Outcome::Failed))
        .unwrap();
    let bytes = std::fs::read(lab.actions_path()).unwrap();
    let path = lab.actions_path().display().to_string();
    let refused = |id: &str, rule: &str| format!("{path}: refused to record {id:?}: {rule}");

    assert_eq!(
        ActionKind::parse("approve").unwrap_err().to_string(),
        "unknown operator action kind \"approve\" (known: message, \
         interrupt, cancel_request, approval_decision, submission, delivery)"
    );
    assert_eq!(
        ActionKind::parse("cancel_request").unwrap(),
        ActionKind::CancelRequest
    );

    let cases = broken_records(&refused, &path);
    for (record, expected) in cases {
        let error = actions.append(&record).unwrap_err();
        assert_eq!(error.to_string(), expected, "{record:?}");
    }
    assert!(
        std::fs::read(lab.actions_path()).unwrap() == bytes,
        "a refused record wrote nothing"
    );
    assert_eq!(open_actions(&lab.root, Access::ReadOnly).unwrap().len(), 2);
}

#[test]
fn an_unknown_kind_in_a_line_refuses_the_journal_with_file_line_and_byte() {
    let lab = Lab::new();
    let mut actions = open_actions(&lab.root, Access::Write).unwrap();
    actions
        .append(&action("msg-1", ActionKind::Message, 1))
        .unwrap();
    actions
        .append(&action("msg-2", ActionKind::Message, 1))
        .unwrap();
    let path = lab.actions_path();
    let (line, byte) = replace_last_line(&path, |line| {
        let value: serde_json::Value = serde_json::from_slice(line).unwrap();
        let entry = serde_json::to_string(&value["entry"])
            .unwrap()
            .replace(r#""kind":"message""#, r#""kind":"approve""#);
        let prior = value["prior_entry_digest"].as_str().unwrap();
        encode_line(1, Some(prior), RECORDED_AT, &Raw(entry.into_bytes())).0
    });
    // The head names line 2's old digest: bring it in line so the line's own refusal is seen.
    let bytes = std::fs::read(&path).unwrap();
    let head = valp_store::head::of_lines(&bytes).unwrap();
    valp_store::head::write(
        &valp_store::io::OsStorage,
        &valp_store::head::head_path(&path),
        &head,
        true,
    )
    .unwrap();
    assert_eq!(
        open_actions(&lab.root, Access::ReadOnly)
            .unwrap_err()
            .to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:{line}: byte {byte}: not an operator action: \
             unknown operator action kind \"approve\" (known: message, interrupt, \
             cancel_request, approval_decision, submission, delivery)",
            path.display()
        )
    );
    let verification = valp_store::verify::verify(&lab.root).unwrap();
    assert_eq!(verification.problems(), 1);
}

#[test]
fn a_torn_tail_is_repaired_and_a_damaged_line_refused_as_in_every_journal() {
    let lab = Lab::new();
    let mut actions = open_actions(&lab.root, Access::Write).unwrap();
    for number in 0..3 {
        actions
            .append(&action(&format!("msg-{number}"), ActionKind::Message, 1))
            .unwrap();
    }
    drop(actions);
    let path = lab.actions_path();
    let good = std::fs::read(&path).unwrap();

    // A torn tail (an append cut before its LF): reported by a reader, cut by a writer.
    let torn = br#"{"entry":{"action_id":"msg-3","ans"#;
    std::fs::write(&path, [good.as_slice(), torn].concat()).unwrap();
    let reader = open_actions(&lab.root, Access::ReadOnly).unwrap();
    assert_eq!(
        reader.warnings(),
        [Warning::IncompleteTail {
            offset: good.len() as u64,
            len: torn.len() as u64
        }]
    );
    assert_eq!(reader.len(), 3);
    let mut writer = open_actions(&lab.root, Access::Write).unwrap();
    assert_repaired(
        &lab.root,
        writer.warnings(),
        good.len() as u64,
        torn,
        "actions",
    );
    assert!(std::fs::read(&path).unwrap() == good);
    writer
        .append(&action("msg-3", ActionKind::Message, 1))
        .unwrap();
    drop(writer);
    assert_eq!(open_actions(&lab.root, Access::ReadOnly).unwrap().len(), 4);

    // A complete line with one byte changed is damage: refused with file, line and byte,
    // never repaired.
    let bytes = std::fs::read(&path).unwrap();
    let ranges = line_ranges(&bytes);
    let second = ranges[1].clone();
    let text = std::str::from_utf8(&bytes[second.clone()]).unwrap();
    let edited = text.replace("message for wi-a", "massage for wi-a");
    std::fs::write(
        &path,
        [
            &bytes[..second.start],
            edited.as_bytes(),
            &bytes[second.end..],
        ]
        .concat(),
    )
    .unwrap();
    for access in [Access::ReadOnly, Access::Write] {
        assert_eq!(
            corrupt_location(open_actions(&lab.root, access)),
            (path.clone(), 2, second.start as u64)
        );
    }

    // Recovery keeps the record that verifies and cuts the rest, with backups.
    let plan = valp_store::recover::actions_plan(&lab.root, valp_tests::store::TASK_ID).unwrap();
    assert!(plan.needed());
    assert_eq!((plan.keep_entries, plan.cut_lines), (1, 3));
    assert_eq!(plan.keep_bytes, ranges[0].end as u64);
    assert_eq!(plan.acknowledged_lost(), 3);
    assert!(
        plan.describe().contains(&format!(
            "then: the journal and its head are copied to quarantine/, the journal is cut to {} \
             bytes and anchored at seq 0",
            ranges[0].end
        )),
        "{:?}",
        plan.describe()
    );
    let recovered =
        valp_store::recover::recover_actions(&lab.root, valp_tests::store::TASK_ID, &plan).unwrap();
    assert_eq!(recovered.backups.len(), 2);
    assert_eq!(recovered.head.map(|head| head.seq), Some(0));
    let reopened = open_actions(&lab.root, Access::ReadOnly).unwrap();
    assert_eq!(reopened.len(), 1);
    assert_eq!(
        std::fs::read(&recovered.backups[0]).unwrap(),
        [
            &bytes[..second.start],
            edited.as_bytes(),
            &bytes[second.end..]
        ]
        .concat()
    );
}

#[test]
fn valp_verify_names_a_cut_action_journal_and_valp_recover_actions_reanchors_it() {
    let lab = Lab::new();
    let mut actions = open_actions(&lab.root, Access::Write).unwrap();
    for number in 0..3 {
        actions
            .append(&action(&format!("msg-{number}"), ActionKind::Message, 1))
            .unwrap();
    }
    drop(actions);
    let path = lab.actions_path();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..line_ranges(&bytes)[0].end]).unwrap();
    let project = lab.temp.path();

    let verified = valp_tests::cli::valp_in(project, None, &["verify"]).unwrap();
    assert_eq!(verified.code, Some(1), "{verified:?}");
    assert!(
        verified.stdout.contains(&format!(
            "actions   task-1                  0  PROBLEM VALP-E-KERNEL-STORE-CORRUPT: {}: does \
             not match its head anchor {}.head (anchored seq 2)",
            path.display(),
            path.with_extension("").display()
        )),
        "{}",
        verified.stdout
    );
    assert!(
        verified.stdout.contains(
            "to see what can be kept of the operator actions of task-1: valp recover task-1 \
             --actions\n"
        ),
        "{}",
        verified.stdout
    );
    let recovered =
        valp_tests::cli::valp_in(project, None, &["recover", "task-1", "--actions", "--yes"])
            .unwrap();
    assert_eq!(recovered.code, Some(0), "{recovered:?}");
    for needle in [
        "keep: entries 0..=0 (bytes 0..",
        "which verify from the first line on",
        "LOST: 2 acknowledged entries (seq 1..=2)",
        "recovered: 1 entries, anchored at seq 0",
    ] {
        assert!(
            recovered.stdout.contains(needle),
            "{needle:?} in {}",
            recovered.stdout
        );
    }
    let again = valp_tests::cli::valp_in(project, None, &["verify"]).unwrap();
    assert!(
        again.stdout.contains("verify: 3 journals ok, 0 problems"),
        "{}",
        again.stdout
    );
}
