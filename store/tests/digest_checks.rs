//! A verify that checks the entries' result and State digests on a second thread
//! (`journal/digest_checks.rs`, used with the lines read ahead) reports exactly what checking
//! them inline reports: on a journal whose entry `k` was re-recorded with a wrong result digest
//! (and the lines after it re-chained, so that every line check passes), the same error naming
//! the same line, also when a later line fails in the applying thread or the reader, and the
//! same rows from `valp verify`'s snapshot checks; and the same State on an intact journal.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::live::LiveState;
use valp_kernel::replay::CompactEntry;
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::chain::encode_line;
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::io::OsStorage;
use valp_store::journal::{read_entries, set_read_ahead_threshold};
use valp_store::{ControlRoot, verify};

/// The two ways: read ahead with the digests checked aside, everything on the calling thread.
const WAYS: [(&str, u64); 2] = [("checked aside", 0), ("inline", u64::MAX)];

fn at() -> Timestamp {
    Timestamp::from_millis(1_796_042_096_789)
}

/// A root with a task journal of `entries` entries over `work_items` work items, appended in
/// batches of at most `batch` (a snapshot is due after a batch that ends 1,024 entries or more
/// after the last one).
fn journal_of(
    entries: usize,
    work_items: usize,
    batch: usize,
) -> (tempfile::TempDir, ControlRoot, Walk) {
    let temp = tempfile::tempdir().unwrap();
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    let root = ControlRoot::init(&temp.path().join(".valp"), id, Arc::new(OsStorage))
        .unwrap()
        .with_clock(Arc::new(FixedClock::new(at())));
    let mut walk = Walk::new(WalkConfig {
        seed: 23,
        work_items,
        may_terminate: false,
    });
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(entries).collect();
    for chunk in steps.chunks(batch) {
        journal
            .append_batch(
                chunk
                    .iter()
                    .map(|step| (&step.event, step.evidence_set.as_slice())),
            )
            .unwrap();
    }
    drop(journal);
    (temp, root, walk)
}

fn journal_path(root: &ControlRoot) -> std::path::PathBuf {
    root.layout().task_dir("task-1").join("journal.jsonl")
}

/// Changes one hex digit of a digest's text.
fn tamper(digest: &mut String) {
    let last = digest.pop().unwrap();
    digest.push(if last == '0' { '1' } else { '0' });
}

/// Re-records the journal at `path` with `change` applied to its entries (index 0 is line 1),
/// every line chained and hashed as the store writes it; `not_canonical`: a space after the
/// first `{` of that line (index), which the reader refuses.
fn rewrite(path: &Path, change: impl Fn(&mut Vec<CompactEntry>), not_canonical: Option<usize>) {
    let bytes = std::fs::read(path).unwrap();
    let genesis = bytes.split_inclusive(|&byte| byte == b'\n').next().unwrap();
    let text = String::from_utf8(genesis.to_vec()).unwrap();
    let from = text.find(r#""entry_digest":""#).unwrap() + 16;
    let mut prior = text[from..from + 71].to_owned();
    let mut entries = Vec::new();
    read_entries::<LiveState>(path, |recorded| entries.push(recorded.entry)).unwrap();
    change(&mut entries);
    let mut out = genesis.to_vec();
    for (index, entry) in entries.iter().enumerate() {
        let (mut line, digest) = encode_line(index as u64 + 1, Some(&prior), at(), entry);
        if not_canonical == Some(index) {
            line.insert(1, b' ');
        }
        out.extend_from_slice(&line);
        prior = digest;
    }
    std::fs::write(path, out).unwrap();
}

/// `valp verify`'s task-journal error either way, which must be the same.
fn verify_error(root: &ControlRoot, case: &str) -> String {
    let mut seen = Vec::new();
    for (way, threshold) in WAYS {
        set_read_ahead_threshold(Some(threshold));
        let error = root
            .verify_task_dir(&root.layout().task_dir("task-1"))
            .map(|journal| journal.len())
            .expect_err(&format!("{case}, {way}"));
        seen.push(error.to_string());
    }
    set_read_ahead_threshold(None);
    assert_eq!(seen[0], seen[1], "{case}");
    seen.swap_remove(0)
}

#[test]
fn an_intact_journal_verifies_to_the_same_state_either_way() {
    for work_items in [0, 20] {
        let (_temp, root, walk) = journal_of(600, work_items, 600);
        for (way, threshold) in WAYS {
            set_read_ahead_threshold(Some(threshold));
            let verified = root
                .verify_task_dir(&root.layout().task_dir("task-1"))
                .unwrap();
            assert_eq!(verified.len(), 600, "{way}");
            assert_eq!(
                verified.live().state_digest(),
                walk.live().state_digest(),
                "{way}"
            );
        }
    }
    set_read_ahead_threshold(None);
}

/// A change to the entries at position `k` (and after it).
type Change = fn(&mut Vec<CompactEntry>, usize);

#[test]
fn a_wrong_result_digest_is_reported_at_its_line_whatever_fails_after_it() {
    let (_temp, root, _) = journal_of(700, 3, 700);
    let path = journal_path(&root);
    let intact = std::fs::read(&path).unwrap();
    let cases: [(&str, Change, Option<usize>, &str); 5] = [
        (
            "result digest",
            |entries, k| tamper(&mut entries[k].result.result_digest),
            None,
            "result_digest differs",
        ),
        (
            "obligations and result digest",
            |entries, k| {
                entries[k].result.obligations.push("extra".to_owned());
                tamper(&mut entries[k].result.result_digest);
            },
            None,
            "result_digest differs",
        ),
        (
            "audit facts alone",
            |entries, k| entries[k].result.audit_facts.push("extra".to_owned()),
            None,
            "audit_facts differs",
        ),
        (
            "result digest, and three lines on an entry the kernel refuses",
            |entries, k| {
                tamper(&mut entries[k].result.result_digest);
                entries[k + 3] = entries[0].clone();
            },
            None,
            "result_digest differs",
        ),
        (
            "result digest, and the next line not canonical",
            |entries, k| tamper(&mut entries[k].result.result_digest),
            Some(1),
            "result_digest differs",
        ),
    ];
    // Near the start (the first batches), in the middle, near the end.
    for k in [2, 300, 690] {
        for (case, change, not_canonical, differs) in &cases {
            std::fs::write(&path, &intact).unwrap();
            rewrite(
                &path,
                |entries| change(entries, k),
                not_canonical.map(|n| k + n),
            );
            let error = verify_error(&root, &format!("{case} at {k}"));
            assert!(
                error.contains(&format!("journal.jsonl:{}: ", k + 2))
                    && error.contains(&format!("entry {k}: "))
                    && error.contains(differs),
                "{case} at {k}: {error}"
            );
        }
    }
}

/// Batches are run by whichever thread is free, so a later batch may fail first: the earliest
/// wrong entry is still the one reported.
#[test]
fn of_two_wrong_result_digests_in_different_batches_the_earlier_is_reported() {
    let (_temp, root, _) = journal_of(700, 3, 700);
    let path = journal_path(&root);
    let intact = std::fs::read(&path).unwrap();
    for (k, later) in [(2, 40), (300, 317), (300, 600), (650, 699)] {
        std::fs::write(&path, &intact).unwrap();
        rewrite(
            &path,
            |entries| {
                tamper(&mut entries[k].result.result_digest);
                tamper(&mut entries[later].result.result_digest);
            },
            None,
        );
        let error = verify_error(&root, &format!("{k} and {later}"));
        assert!(
            error.contains(&format!("journal.jsonl:{}: ", k + 2))
                && error.contains(&format!("entry {k}: "))
                && error.contains("result_digest differs"),
            "{k} and {later}: {error}"
        );
    }
}

#[test]
fn valp_verify_checks_the_same_snapshots_either_way() {
    // Snapshots at entries 1050 and 2100; a wrong result digest well before the first, just
    // before it and at its line (within the checks' lag: only the check run before the
    // snapshot's keeps it from being compared with a State chained on a wrong digest), between
    // them, and none.
    let (_temp, root, _) = journal_of(2_100, 3, 1_050);
    let path = journal_path(&root);
    let intact = std::fs::read(&path).unwrap();
    for k in [None, Some(500), Some(1_047), Some(1_049), Some(1_500)] {
        std::fs::write(&path, &intact).unwrap();
        if let Some(k) = k {
            rewrite(
                &path,
                |entries| tamper(&mut entries[k].result.result_digest),
                None,
            );
        }
        let mut seen = Vec::new();
        for (_, threshold) in WAYS {
            set_read_ahead_threshold(Some(threshold));
            let verification = verify::verify(&root).unwrap();
            seen.push(format!("{:?}", verification.checks));
        }
        set_read_ahead_threshold(None);
        assert_eq!(seen[0], seen[1], "{k:?}");
        assert_eq!(seen[0].contains("result_digest differs"), k.is_some());
        assert!(!seen[0].contains("SnapshotMismatch"), "{}", seen[0]);
        // The snapshots at or after the failing line are not checked, as inline.
        let unchecked = [1_050, 2_100]
            .iter()
            .filter(|&&seq| k.is_some_and(|k| seq > k))
            .count();
        assert_eq!(seen[0].matches("not checked").count(), unchecked, "{k:?}");
    }
}
