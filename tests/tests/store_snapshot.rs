//! Task snapshots (layout 4, issue 20): an open starts from the newest snapshot that matches its
//! journal and replays only the lines after it.
//!
//! - Open via a snapshot equals a full replay from the genesis, over seeded random walks: the
//!   same State digest, body and Done-gate state, and the same answers to the next step and to
//!   duplicates of earlier ones (the lean index the snapshot carries).
//! - Every refusal names its reason exactly (digest, binding, truncation, unknown member, newer
//!   than the head, index file): the open ignores the snapshot and replays from the genesis, a
//!   writer moves it to `quarantine/` and writes a new one, and `valp verify` lists it with
//!   `VALP-E-STORE-SNAPSHOT-MISMATCH`.
//! - Crashes and failed writes around a snapshot write (`FaultyStorage`, and the files a crash
//!   can leave) never fail an append and never leave a snapshot an open would use wrongly.
//! - `valp recover` moves the snapshots bound to lines it cuts to `quarantine/`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::decode_canonical;
use valp_kernel::json::Value;
use valp_kernel::json::write::canonical_bytes;
use valp_kernel::live::KEY_RECORD;
use valp_store::io::{Fault, FaultyStorage, Operation};
use valp_store::snapshot::{self, Snapshot};
use valp_store::verify::verify;
use valp_store::{Access, Appended, ControlRoot, Journal, StoreCode, Warning};
use valp_tests::store::{
    History, append_step, create_journal, init_root, init_root_with, journal_path, open_task,
    write_anchored,
};

const WORK_ITEMS: usize = 4;

fn task_dir(root: &ControlRoot) -> PathBuf {
    journal_path(root).parent().unwrap().to_owned()
}

/// The snapshots of the walk task, newest first.
fn snapshots(root: &ControlRoot) -> Vec<(u64, PathBuf)> {
    snapshot::list(&task_dir(root)).unwrap()
}

/// Removes every snapshot of the walk task bound after `seq`.
fn drop_snapshots_after(root: &ControlRoot, seq: u64) {
    for (at, path) in snapshots(root) {
        if at > seq {
            std::fs::remove_file(snapshot::index_path(&path)).unwrap();
            std::fs::remove_file(path).unwrap();
        }
    }
}

/// A root whose walk task has `entries` entries and one snapshot, at `at`.
fn with_snapshot_at(temp: &Path, seed: u64, entries: usize, at: usize) -> (ControlRoot, History) {
    let root = init_root(temp);
    let mut history = History::new(seed, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, at);
    let written = journal.write_snapshot().unwrap().unwrap();
    assert_eq!(
        written.file_name().unwrap().to_string_lossy(),
        snapshot::file_name(at as u64, &journal.head().unwrap().entry_digest)
    );
    for index in at..entries {
        append_step(&mut journal, &mut history, index);
    }
    drop(journal);
    drop_snapshots_after(&root, at as u64);
    assert_eq!(snapshots(&root).len(), 1);
    (root, history)
}

/// The walk task opened from the genesis (no snapshot), history forgotten.
fn full_replay(root: &ControlRoot) -> Journal {
    root.verify_task_dir(&task_dir(root)).unwrap()
}

fn refused_reasons(journal: &Journal) -> Vec<String> {
    journal
        .warnings()
        .iter()
        .filter_map(|warning| match warning {
            Warning::SnapshotRefused { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// Checks that `opened` is the same State as a replay from the genesis, answering the next steps
/// and duplicates alike.
fn assert_same_as_full_replay(root: &ControlRoot, opened: &Journal, history: &mut History) {
    let full = full_replay(root);
    assert_eq!(opened.len(), full.len());
    assert_eq!(opened.live().state_digest(), full.live().state_digest());
    assert_eq!(opened.live().body(), full.live().body());
    assert_eq!(
        opened.guard().done().correction_signals(),
        full.guard().done().correction_signals()
    );
    assert_eq!(
        opened.guard().done().frozen_policy(),
        full.guard().done().frozen_policy()
    );
    let len = usize::try_from(full.len()).unwrap();
    let (mut left, mut right) = (opened.live().clone(), full.live().clone());
    for index in [0, len / 2, len.saturating_sub(1), len, len + 1] {
        let step = history.step(index).clone();
        let (a, b) = (
            left.apply(&step.event, &step.evidence_set),
            right.apply(&step.event, &step.evidence_set),
        );
        assert_eq!(a, b, "step {index}");
        assert_eq!(left.state_digest(), right.state_digest(), "step {index}");
    }
}

#[test]
fn an_open_from_a_snapshot_equals_a_full_replay_over_random_walks() {
    for seed in 0..10_u64 {
        let temp = tempfile::tempdir().unwrap();
        let entries = 70 + usize::try_from(seed * 37 % 200).unwrap();
        let at = 1 + usize::try_from(seed * 13).unwrap() % entries;
        let (root, mut history) = with_snapshot_at(temp.path(), seed, entries, at);
        let opened = open_task(&root, Access::ReadOnly).unwrap();
        assert!(opened.warnings().is_empty(), "{:?}", opened.warnings());
        assert!(
            !opened.live().keeps_history(),
            "seed {seed}: the open started from the snapshot"
        );
        assert_same_as_full_replay(&root, &opened, &mut history);
        // A writer from the snapshot appends on, and everything verifies from the genesis.
        let mut writer = open_task(&root, Access::Write).unwrap();
        append_step(&mut writer, &mut history, entries);
        drop(writer);
        let verification = verify(&root).unwrap();
        assert_eq!(verification.problems(), 0, "{verification:?}");
    }
}

#[test]
fn a_writer_takes_snapshots_as_it_goes_and_keeps_the_newest_two() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut history = History::new(7, WORK_ITEMS);
    let journal = create_journal(&root, &mut history, 2100);
    let seqs: Vec<u64> = snapshots(&root).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [2048, 1024]);
    drop(journal);
    // Closing a writer 52 entries after the last one writes none (fewer than ON_CLOSE).
    let seqs: Vec<u64> = snapshots(&root).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [2048, 1024]);
    let mut writer = open_task(&root, Access::Write).unwrap();
    for index in 2100..2112 {
        append_step(&mut writer, &mut history, index);
    }
    drop(writer);
    let seqs: Vec<u64> = snapshots(&root).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(
        seqs,
        [2112, 2048],
        "closing 64 entries after one writes one"
    );
    assert!(
        !std::fs::read_dir(task_dir(&root).join("snapshots"))
            .unwrap()
            .any(|entry| entry.unwrap().path().ends_with("00000000000000001024")),
        "the third newest was removed"
    );
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert_same_as_full_replay(&root, &opened, &mut history);
}

#[test]
fn a_writer_holds_the_lean_index_from_its_first_snapshot_on_and_answers_the_same() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut history = History::new(5, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 1023);
    assert!(journal.live().keeps_history(), "no snapshot yet");
    assert_eq!(journal.live().history().len(), 1023);
    append_step(&mut journal, &mut history, 1023);
    assert_eq!(snapshots(&root)[0].0, 1024);
    assert!(
        !journal.live().keeps_history(),
        "from its snapshot on, the writer holds what an open from it would"
    );
    assert!(journal.live().history().is_empty());
    // Idempotency is answered from the lean index as from the history: a step accepted
    // before is a duplicate naming its first acceptance, and nothing is written.
    let state = history.state_after(1024);
    let bytes = std::fs::read(journal.path()).unwrap();
    for index in [0, 511, 1023] {
        let step = history.step(index).clone();
        let answer = journal.append(&step.event, &step.evidence_set).unwrap();
        let first = &state.accepted_events[index];
        assert_eq!(
            answer,
            Appended::Duplicate {
                prior_result_id: first.result_id.clone(),
                prior_result_digest: first.result_digest.clone(),
            },
            "step {index}"
        );
    }
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    for index in 1024..1100 {
        append_step(&mut journal, &mut history, index);
    }
    assert_eq!(
        journal.live().state_digest(),
        full_replay(&root).live().state_digest()
    );
    assert_same_as_full_replay(&root, &journal, &mut history);
}

/// Re-signs the snapshot at `path` after `change` (so only the changed member is wrong),
/// writing it under the name its new contents give; returns that path.
fn resign(path: &Path, change: impl FnOnce(&mut Snapshot)) -> PathBuf {
    let mut decoded = snapshot::load(path).unwrap();
    change(&mut decoded);
    let (json, index) = decoded.encode();
    std::fs::remove_file(snapshot::index_path(path)).unwrap();
    std::fs::remove_file(path).unwrap();
    let target = path
        .parent()
        .unwrap()
        .join(snapshot::file_name(decoded.seq, &decoded.entry_digest));
    std::fs::write(snapshot::index_path(&target), index).unwrap();
    std::fs::write(&target, json).unwrap();
    target
}

/// Checks that the snapshot at `path` is refused with `reason` by a reader (which replays from
/// the genesis instead), by `valp verify` (`VALP-E-STORE-SNAPSHOT-MISMATCH`), and that a writer
/// moves it to quarantine and writes a good one.
fn check_refused(root: &ControlRoot, history: &mut History, path: &Path, reason: &str) {
    check_refused_as(root, history, path, reason, reason);
}

/// [`check_refused`] where `valp verify`, which compares the snapshot with the State it rebuilt
/// at the snapshot's seq, names the difference as `verify_reason`.
fn check_refused_as(
    root: &ControlRoot,
    history: &mut History,
    path: &Path,
    reason: &str,
    verify_reason: &str,
) {
    let opened = open_task(root, Access::ReadOnly).unwrap();
    assert_eq!(refused_reasons(&opened), [reason.to_owned()]);
    assert!(opened.live().keeps_history(), "replayed from the genesis");
    assert_same_as_full_replay(root, &opened, history);
    drop(opened);
    assert!(path.exists(), "a reader leaves the refused snapshot alone");

    assert_verify_names(root, path, verify_reason);

    let writer = open_task(root, Access::Write).unwrap();
    assert_eq!(refused_reasons(&writer), [reason.to_owned()]);
    let tip = writer.len();
    drop(writer);
    let quarantined = root.layout().quarantine_dir().join(format!(
        "task-1.{}.refused",
        path.file_name().unwrap().to_string_lossy()
    ));
    assert!(
        quarantined.exists(),
        "a writer moves it away: {}",
        quarantined.display()
    );
    assert_eq!(snapshots(root)[0].0, tip, "a new snapshot at the tip");
    assert_eq!(verify(root).unwrap().problems(), 0);
    let reopened = open_task(root, Access::ReadOnly).unwrap();
    assert!(reopened.warnings().is_empty(), "{:?}", reopened.warnings());
    assert!(!reopened.live().keeps_history());
}

fn only_snapshot(root: &ControlRoot) -> PathBuf {
    snapshots(root).remove(0).1
}

#[test]
fn a_snapshot_whose_digest_is_wrong_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 1, 90, 60);
    let path = only_snapshot(&root);
    let mut value = decode_canonical(&std::fs::read(&path).unwrap()).unwrap();
    let Value::Object(members) = &mut value else {
        panic!()
    };
    members.insert(
        "snapshot_digest".to_owned(),
        Value::String(valp_kernel::canonical::sha256_digest(b"another")),
    );
    std::fs::write(&path, canonical_bytes(&value).unwrap()).unwrap();
    check_refused(
        &root,
        &mut history,
        &path,
        "snapshot_digest does not match its contents",
    );
}

#[test]
fn a_snapshot_bound_to_a_line_that_is_not_there_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 2, 90, 60);
    let size = std::fs::metadata(journal_path(&root)).unwrap().len();
    let path = resign(&only_snapshot(&root), |snapshot| {
        snapshot.length = size + 1000;
    });
    check_refused_as(
        &root,
        &mut history,
        &path,
        &format!(
            "it is bound to line 61 (seq 60) ending at byte {}, which is not there: the journal \
             is {size} bytes",
            size + 1000
        ),
        "its line (entry_digest or length) differs from what the replay from the genesis rebuilt at that line",
    );
}

#[test]
fn a_snapshot_bound_to_a_different_line_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 3, 90, 60);
    let other = valp_kernel::canonical::sha256_digest(b"another line");
    let mut actual = String::new();
    let path = resign(&only_snapshot(&root), |snapshot| {
        actual.clone_from(&snapshot.entry_digest);
        snapshot.entry_digest.clone_from(&other);
    });
    check_refused_as(
        &root,
        &mut history,
        &path,
        &format!(
            "it is bound to line 61 (seq 60) with entry_digest {other}, the journal's line there \
             has {actual}: bound to a different line"
        ),
        "its line (entry_digest or length) differs from what the replay from the genesis rebuilt at that line",
    );
}

#[test]
fn a_snapshot_bound_to_a_seq_its_line_does_not_have_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 4, 90, 60);
    let path = resign(&only_snapshot(&root), |snapshot| {
        snapshot.seq = 59;
    });
    let reason = check_reason(&root);
    assert_eq!(
        reason,
        format!(
            "it is bound to line 60 (seq 59), which does not verify there: \
             VALP-E-KERNEL-STORE-CORRUPT: {}:60: byte {}: seq is 60, expected 59",
            journal_path(&root).display(),
            snapshot::load(&path).unwrap().length - line_61_length(&root)
        )
    );
    check_refused_as(
        &root,
        &mut history,
        &path,
        &reason,
        "its line (entry_digest or length) differs from what the replay from the genesis rebuilt at that line",
    );
}

/// The length of line 61 (seq 60) of the walk task's journal.
fn line_61_length(root: &ControlRoot) -> u64 {
    let journal = std::fs::read(journal_path(root)).unwrap();
    let ends: Vec<usize> = journal
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    (ends[60] - ends[59]) as u64
}

fn check_reason(root: &ControlRoot) -> String {
    refused_reasons(&open_task(root, Access::ReadOnly).unwrap()).remove(0)
}

#[test]
fn a_truncated_snapshot_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 5, 90, 60);
    let path = only_snapshot(&root);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    check_refused(
        &root,
        &mut history,
        &path,
        "not canonical JSON: missing final LF",
    );
}

#[test]
fn a_snapshot_with_an_unknown_member_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 6, 90, 60);
    let path = only_snapshot(&root);
    let mut value = decode_canonical(&std::fs::read(&path).unwrap()).unwrap();
    let Value::Object(members) = &mut value else {
        panic!()
    };
    members.insert("compacted_below".to_owned(), Value::Null);
    std::fs::write(&path, canonical_bytes(&value).unwrap()).unwrap();
    check_refused(
        &root,
        &mut history,
        &path,
        "unexpected members [\"compacted_below\", \"entry_digest\", \"guard\", \"history\", \
         \"index\", \"length\", \"schema_version\", \"seq\", \"snapshot_digest\", \"state\"]",
    );
}

#[test]
fn a_snapshot_newer_than_the_head_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 8, 90, 90);
    // The head lags at line 80 (a crash between a line's fsync and the head's rename).
    let journal = std::fs::read(journal_path(&root)).unwrap();
    let ends: Vec<usize> = journal
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    write_anchored(
        &journal_path(&root),
        &journal[..ends[80]],
        &journal[ends[80]..],
    );
    let path = only_snapshot(&root);
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(
        refused_reasons(&opened),
        ["it is bound to seq 90, newer than the head anchor (seq 80)"]
    );
    assert_same_as_full_replay(&root, &opened, &mut history);
    let verification = verify(&root).unwrap();
    // `valp verify` judges the snapshot against the replay, which it matches.
    assert_eq!(verification.problems(), 0, "{verification:?}");
    drop(opened);
    assert!(path.exists());
}

#[test]
fn a_snapshot_whose_index_file_was_changed_or_lost_is_refused() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 9, 90, 60);
    let path = only_snapshot(&root);
    let index = snapshot::index_path(&path);
    let mut bytes = std::fs::read(&index).unwrap();
    bytes[17] ^= 0x40;
    std::fs::write(&index, &bytes).unwrap();
    check_refused(
        &root,
        &mut history,
        &path,
        "its index file does not have the digest the snapshot names",
    );

    let path = only_snapshot(&root);
    std::fs::remove_file(snapshot::index_path(&path)).unwrap();
    check_refused(
        &root,
        &mut history,
        &path,
        "its index file cannot be read: No such file or directory (os error 2)",
    );
}

#[test]
fn a_failed_snapshot_write_never_fails_an_append_nor_leaves_a_usable_snapshot() {
    let temp = tempfile::tempdir().unwrap();
    let storage = Arc::new(FaultyStorage::default());
    let root = init_root_with(temp.path(), storage.clone());
    let mut history = History::new(11, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 1023);
    assert!(snapshots(&root).is_empty());
    // Entry 1024 makes a snapshot due; creating its folder cannot be made durable.
    storage.fail(Operation::SyncDir, Fault::Once);
    append_step(&mut journal, &mut history, 1023);
    assert!(
        journal.warnings().iter().any(|warning| matches!(
            warning,
            Warning::SnapshotNotWritten { seq: 1024, error }
                if error.ends_with("sync directory: injected SyncDir failure")
        )),
        "{:?}",
        journal.warnings()
    );
    assert!(snapshots(&root).is_empty());
    // The index file's rename fails: nothing an open would read.
    storage.fail(Operation::Rename, Fault::Once);
    assert!(journal.write_snapshot().is_err());
    assert!(snapshots(&root).is_empty());
    // The index is renamed but its folder's sync fails: an index without its snapshot.
    storage.fail(Operation::SyncDir, Fault::Once);
    assert!(journal.write_snapshot().is_err());
    assert!(snapshots(&root).is_empty());
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert!(opened.warnings().is_empty(), "{:?}", opened.warnings());
    assert!(
        opened.live().keeps_history(),
        "no snapshot: from the genesis"
    );
    assert_same_as_full_replay(&root, &opened, &mut history);
    // The next write succeeds and removes the leftovers a crash can leave but temporaries.
    storage.heal();
    journal.write_snapshot().unwrap().unwrap();
    let folder = task_dir(&root).join("snapshots");
    let names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    drop(journal);
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert!(!opened.live().keeps_history());
    assert_same_as_full_replay(&root, &opened, &mut history);
}

#[test]
fn a_crash_between_the_index_and_the_snapshot_leaves_nothing_an_open_uses() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = with_snapshot_at(temp.path(), 12, 90, 60);
    let path = only_snapshot(&root);
    // The index was renamed into place, the snapshot was still a temporary file.
    let temporary = path.parent().unwrap().join(format!(
        ".{}.1.0.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::rename(&path, &temporary).unwrap();
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert!(opened.warnings().is_empty(), "{:?}", opened.warnings());
    assert!(opened.live().keeps_history());
    assert_same_as_full_replay(&root, &opened, &mut history);
    assert_eq!(verify(&root).unwrap().problems(), 0);
}

#[test]
fn recover_moves_the_snapshots_beyond_its_cut_to_quarantine() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut history = History::new(13, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 40);
    journal.write_snapshot().unwrap().unwrap();
    for index in 40..80 {
        append_step(&mut journal, &mut history, index);
    }
    journal.write_snapshot().unwrap().unwrap();
    drop(journal);
    // Line 61 is damaged: the snapshot at 80 still opens (the open does not read below it);
    // recover judges the whole journal from the genesis and cuts at line 60.
    let path = journal_path(&root);
    let mut bytes = std::fs::read(&path).unwrap();
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    bytes[ends[60] + 30] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let plan = valp_store::recover::task_plan(&root, "task-1").unwrap();
    assert!(plan.needed(), "{plan:?}");
    assert_eq!(plan.keep_entries, 60);
    let recovered = valp_store::recover::recover_task(&root, "task-1", &plan).unwrap();
    let quarantine = root.layout().quarantine_dir();
    let name = snapshot::file_name(80, &head_digest_at(&bytes, &ends, 80));
    assert_eq!(
        recovered.snapshots,
        [quarantine.join(format!("task-1.{name}.beyond-recover"))]
    );
    assert!(recovered.snapshots[0].exists());
    let seqs: Vec<u64> = snapshots(&root).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, [40]);
    let opened = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(opened.len(), 60);
    assert!(!opened.live().keeps_history());
    assert_same_as_full_replay(&root, &opened, &mut history);
    assert_eq!(verify(&root).unwrap().problems(), 0);
}

/// The `entry_digest` of line `seq` of `journal` (`ends`: where each line ends).
fn head_digest_at(journal: &[u8], ends: &[usize], seq: usize) -> String {
    let start = if seq == 0 { 0 } else { ends[seq - 1] };
    let value = decode_canonical(&journal[start..ends[seq]]).unwrap();
    value.as_object().unwrap()["entry_digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The verify row of a snapshot whose index was changed and re-signed: a reader trusts the
/// signed index, so only `valp verify`, which reads the index file's digest records in chunks
/// and compares their hash with the replay's, and compares the keys, finds it.
fn verify_reason_after_index_change(seed: u64, change: impl FnOnce(&mut Vec<u8>, &mut Vec<u8>)) {
    let temp = tempfile::tempdir().unwrap();
    let (root, _history) = with_snapshot_at(temp.path(), seed, 90, 60);
    let path = resign(&only_snapshot(&root), |snapshot| {
        let index = &mut snapshot.parts.index;
        change(&mut index.keys, &mut index.digests);
    });
    let seq = assert_verify_names(
        &root,
        &path,
        "the idempotency index differs from what the replay from the genesis rebuilt at that line",
    );
    assert_eq!(seq, 60);
}

/// `valp verify` finds one problem in `root`: the snapshot at `path`, with
/// `VALP-E-STORE-SNAPSHOT-MISMATCH` and `verify_reason`; returns the seq its row names.
fn assert_verify_names(root: &ControlRoot, path: &Path, verify_reason: &str) -> u64 {
    // The same rows whether the snapshot's index file is read ahead or at its line.
    let rows: Vec<String> = [Some(u64::MAX), Some(0)]
        .into_iter()
        .map(|limit| {
            snapshot::set_read_ahead_limit(limit);
            format!("{:?}", verify(root).unwrap().checks)
        })
        .collect();
    snapshot::set_read_ahead_limit(None);
    assert_eq!(rows[0], rows[1]);
    let verification = verify(root).unwrap();
    assert_eq!(verification.problems(), 1, "{verification:?}");
    let row = verification
        .checks
        .iter()
        .find(|check| check.kind == "snapshot")
        .unwrap();
    let problem = row.problem.as_ref().unwrap();
    assert_eq!(problem.code(), StoreCode::SnapshotMismatch);
    assert_eq!(problem.code().as_str(), "VALP-E-STORE-SNAPSHOT-MISMATCH");
    assert_eq!(
        problem.to_string(),
        format!(
            "VALP-E-STORE-SNAPSHOT-MISMATCH: {}: the snapshot of seq {} does not match its \
             journal: {verify_reason}; opens do not use it (a writer replaces it)",
            path.display(),
            row.entries
        )
    );
    row.entries
}

/// `valp verify` reads a snapshot for its check before the replay reaches its line, the index
/// file too when it is shorter than the limit (its keys then compared when checked, with the
/// same outcome), and a longer index file only when checked.
#[test]
fn a_snapshot_read_for_a_check_reads_its_index_file_ahead_only_below_the_limit() {
    let temp = tempfile::tempdir().unwrap();
    let (root, _history) = with_snapshot_at(temp.path(), 10, 90, 60);
    let path = only_snapshot(&root);
    let index = snapshot::index_path(&path);
    let bytes = std::fs::metadata(&index).unwrap().len();
    let whole = snapshot::load(&path).unwrap();
    let keys = whole.parts.index.keys.clone();
    let records = |count: usize| {
        keys.chunks_exact(KEY_RECORD)
            .take(count)
            .map(|record| <[u8; KEY_RECORD]>::try_from(record).unwrap())
    };
    let all = keys.len() / KEY_RECORD;
    let ahead = [
        snapshot::read_for_check(&path, bytes + 1).unwrap(),
        snapshot::read_for_check(&path, u64::MAX).unwrap(),
    ];
    let fewer = snapshot::read_for_check(&path, bytes + 1).unwrap();
    let later = snapshot::read_for_check(&path, bytes).unwrap();
    std::fs::remove_file(&index).unwrap();
    for read in ahead {
        let (checked, seen) = read.check(&mut records(all)).unwrap();
        assert!(seen.keys_match);
        assert_eq!(seen.digest_records.len, 60 * 64);
        assert!(checked.parts.index.keys.is_empty() && checked.parts.index.digests.is_empty());
        assert_eq!(checked.parts.body, whole.parts.body);
    }
    let (_, seen) = fewer.check(&mut records(all - 1)).unwrap();
    assert!(!seen.keys_match);
    assert_eq!(
        later.check(&mut records(all)).err().unwrap(),
        "its index file cannot be read: No such file or directory (os error 2)"
    );
}

#[test]
fn verify_finds_a_changed_digest_record_in_a_resigned_snapshot_index() {
    verify_reason_after_index_change(5, |_, digests| digests[70] ^= 1);
}

#[test]
fn verify_finds_a_missing_digest_record_in_a_resigned_snapshot_index() {
    verify_reason_after_index_change(6, |_, digests| digests.truncate(digests.len() - 64));
}

#[test]
fn verify_finds_a_changed_key_in_a_resigned_snapshot_index() {
    verify_reason_after_index_change(7, |keys, _| keys[3] ^= 1);
}

/// `valp verify` compares the key records as it reads them: one record fewer or one more (the
/// comparison must see the end of both sides) is found as a changed one is.
#[test]
fn verify_finds_a_missing_or_an_extra_key_in_a_resigned_snapshot_index() {
    verify_reason_after_index_change(8, |keys, _| keys.truncate(keys.len() - 16));
    verify_reason_after_index_change(9, |keys, _| {
        let mut last = keys[keys.len() - 16..].to_vec();
        last[11] = last[11].wrapping_add(1);
        last[0] = 0xff;
        keys.extend_from_slice(&last);
    });
}
