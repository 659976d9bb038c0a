//! Reading a journal ahead on a second thread (`journal/read_ahead.rs`) gives exactly what reading
//! it on the calling thread gives: the same State and count on a long journal (open, verify,
//! refresh), and on a journal damaged in the middle the same error (code and message, naming
//! the same line), the same recovery plan (entries and bytes kept) and nothing applied after
//! the damage.

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
use valp_store::{Access, ControlRoot, recover};

/// Entries of the long journal: many batches of the read-ahead thread.
const ENTRIES: usize = 700;

/// The two ways to read: always ahead on a second thread, never.
const WAYS: [(&str, u64); 2] = [("read ahead", 0), ("on the calling thread", u64::MAX)];

fn at() -> Timestamp {
    Timestamp::from_millis(1_796_042_096_789)
}

fn root_in(dir: &Path) -> ControlRoot {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage))
        .unwrap()
        .with_clock(Arc::new(FixedClock::new(at())))
}

fn walk() -> Walk {
    Walk::new(WalkConfig {
        seed: 11,
        work_items: 3,
        may_terminate: false,
    })
}

/// A root with a task journal of `entries` entries, and the walk that wrote them.
fn journal_of(entries: usize) -> (tempfile::TempDir, ControlRoot, Walk) {
    let temp = tempfile::tempdir().unwrap();
    let root = root_in(temp.path());
    let mut walk = walk();
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(entries).collect();
    journal
        .append_batch(
            steps
                .iter()
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )
        .unwrap();
    drop(journal);
    (temp, root, walk)
}

fn dir(root: &ControlRoot) -> std::path::PathBuf {
    root.layout().task_dir("task-1")
}

#[test]
fn reading_ahead_applies_what_reading_on_the_calling_thread_does() {
    let (_temp, root, walk) = journal_of(ENTRIES);
    let expected = walk.live().state_digest();
    for (way, threshold) in WAYS {
        set_read_ahead_threshold(Some(threshold));
        let verified = root.verify_task_dir(&dir(&root)).unwrap();
        assert_eq!(verified.len(), ENTRIES as u64, "{way}");
        assert_eq!(verified.live().state_digest(), expected, "{way}");
        let opened = root
            .open_task_with_history("task-1", Access::ReadOnly)
            .unwrap();
        assert_eq!(opened.live().history(), walk.live().history(), "{way}");
        assert!(
            opened.warnings().is_empty(),
            "{way}: {:?}",
            opened.warnings()
        );
    }
    // A refresh reads what another handle appended since, in order.
    for (way, threshold) in WAYS {
        let (_temp, root, mut walk) = journal_of(50);
        set_read_ahead_threshold(Some(threshold));
        let mut reader = root.open_task("task-1", Access::ReadOnly).unwrap();
        let mut writer = root.open_task("task-1", Access::Write).unwrap();
        let steps: Vec<_> = walk.by_ref().take(400).collect();
        writer
            .append_batch(
                steps
                    .iter()
                    .map(|step| (&step.event, step.evidence_set.as_slice())),
            )
            .unwrap();
        assert_eq!(reader.refresh().unwrap(), 400, "{way}");
        assert_eq!(reader.len(), 450, "{way}");
        assert_eq!(
            reader.live().state_digest(),
            walk.live().state_digest(),
            "{way}"
        );
        assert_eq!(reader.refresh().unwrap(), 0, "{way}");
    }
    set_read_ahead_threshold(None);
}

/// How line `seq` (1-based entry) of the long journal is damaged.
#[derive(Debug, Clone, Copy)]
enum Damage {
    /// One hex digit of its `entry_digest` changed (the line stays canonical).
    Digest,
    /// A space after its first `{`.
    NotCanonical,
    /// Re-written, chained and hashed as the store writes, with another seq.
    Seq,
    /// Re-written as the store writes with an earlier entry recorded again: every line check
    /// passes, the kernel refuses it.
    Refused,
}

/// The long journal with entry `seq` damaged as `damage` says (the rest of the file as it was).
fn damaged(damage: Damage, seq: usize) -> (tempfile::TempDir, ControlRoot) {
    let (temp, root, _) = journal_of(ENTRIES);
    let path = dir(&root).join("journal.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let mut lines: Vec<Vec<u8>> = bytes
        .split_inclusive(|&byte| byte == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    let mut entries: Vec<CompactEntry> = Vec::new();
    read_entries::<LiveState>(&path, |recorded| entries.push(recorded.entry)).unwrap();
    let prior = |lines: &[Vec<u8>]| {
        let text = String::from_utf8(lines[seq - 1].clone()).unwrap();
        let from = text.find(r#""entry_digest":""#).unwrap() + 16;
        text[from..from + 71].to_owned()
    };
    let line = &mut lines[seq];
    match damage {
        Damage::Digest => {
            let text = String::from_utf8(line.clone()).unwrap();
            let at = text.find(r#""entry_digest":"sha256:"#).unwrap() + 23;
            line[at] = if line[at] == b'0' { b'1' } else { b'0' };
        }
        Damage::NotCanonical => line.insert(1, b' '),
        Damage::Seq => {
            let prior = prior(&lines);
            lines[seq] = encode_line(seq as u64 + 5, Some(&prior), at(), &entries[seq - 1]).0;
        }
        Damage::Refused => {
            let prior = prior(&lines);
            lines[seq] = encode_line(seq as u64, Some(&prior), at(), &entries[0]).0;
        }
    }
    std::fs::write(&path, lines.concat()).unwrap();
    (temp, root)
}

#[test]
fn a_damaged_line_gives_the_same_error_and_plan_either_way() {
    // Near the start (the first batches), in the middle, and the last line.
    for seq in [3, 301, ENTRIES] {
        for damage in [
            Damage::Digest,
            Damage::NotCanonical,
            Damage::Seq,
            Damage::Refused,
        ] {
            let (_temp, root) = damaged(damage, seq);
            let mut seen = Vec::new();
            for (way, threshold) in WAYS {
                set_read_ahead_threshold(Some(threshold));
                let verified = root
                    .verify_task_dir(&dir(&root))
                    .map(|journal| journal.len())
                    .expect_err(&format!("{damage:?} at {seq}, {way}"));
                let opened = root
                    .open_task_with_history("task-1", Access::ReadOnly)
                    .map(|journal| journal.len())
                    .expect_err(&format!("{damage:?} at {seq}, {way}"));
                let plan = recover::task_plan(&root, "task-1").unwrap();
                assert_eq!(plan.keep_entries, seq as u64 - 1, "{damage:?} {seq} {way}");
                seen.push((
                    verified.code(),
                    verified.to_string(),
                    opened.to_string(),
                    plan,
                ));
            }
            assert_eq!(seen[0], seen[1], "{damage:?} at {seq}");
            let message = &seen[0].1;
            assert_eq!(seen[0].0, valp_store::StoreCode::Corrupt, "{message}");
            // The anchor is checked before the kernel: a line re-written at the anchored seq
            // is refused by it.
            let (line, reason) = match damage {
                Damage::Refused if seq == ENTRIES => (
                    format!("line {} has entry_digest", seq + 1),
                    "does not match its head anchor",
                ),
                Damage::Refused => (
                    format!("journal.jsonl:{}: byte", seq + 1),
                    "replay refuses the entry",
                ),
                Damage::Digest => (
                    format!("journal.jsonl:{}: byte", seq + 1),
                    "does not match the line",
                ),
                Damage::NotCanonical => (
                    format!("journal.jsonl:{}: byte", seq + 1),
                    "not a canonical JSON line",
                ),
                Damage::Seq => (format!("journal.jsonl:{}: byte", seq + 1), "expected"),
            };
            assert!(message.contains(&line), "{damage:?} at {seq}: {message}");
            assert!(message.contains(reason), "{damage:?} at {seq}: {message}");
        }
    }
    set_read_ahead_threshold(None);
}
