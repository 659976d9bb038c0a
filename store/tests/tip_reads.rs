//! Reads at the tip of a long journal that cost what they show, not the history:
//!
//! - `Journal::newest_entries`: the newest entries read back from the verified tip are the
//!   last ones a whole read gives (also reaching back before the snapshot a handle opened
//!   from), what it reads is bounded by the entries asked for, and a damaged line or a tip that
//!   moved under the handle is refused, never answered short.
//! - `ControlRoot::open_task_to_show` (`valp task status`): from a snapshot at the last line the
//!   index file is not checked at the open, but before any line is applied (a refresh), and a
//!   file that does not match then stops the handle (keys that make no index at all refuse the
//!   snapshot at the open); with lines after the snapshot it is checked at the open as for any
//!   reader.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::live::LiveState;
use valp_kernel::replay::CompactEntry;
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::io::OsStorage;
use valp_store::journal::{Recorded, read_entries};
use valp_store::snapshot::{self, SNAPSHOTS_DIR};
use valp_store::{Access, ControlRoot, Journal, StoreCode, Warning};

/// A root with task `task-1` of `entries` walk entries, written in batches; the writer is
/// dropped (so it leaves a snapshot).
fn root_with(dir: &Path, entries: usize) -> ControlRoot {
    root_and_walk(dir, entries).0
}

/// [`root_with`], and the walk to go on with.
fn root_and_walk(dir: &Path, entries: usize) -> (ControlRoot, Walk) {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    let root = ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage)).unwrap();
    let mut walk = Walk::new(WalkConfig {
        seed: 11,
        work_items: 4,
        may_terminate: false,
    });
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(entries).collect();
    for batch in steps.chunks(256) {
        journal
            .append_batch(
                batch
                    .iter()
                    .map(|step| (&step.event, step.evidence_set.as_slice())),
            )
            .unwrap();
    }
    assert_eq!(journal.len(), entries as u64);
    (root, walk)
}

/// Appends `count` more walk entries through a writer (dropped after: fewer than 64 leave no
/// snapshot).
fn append(root: &ControlRoot, walk: &mut Walk, count: usize) {
    let mut journal = root.open_task("task-1", Access::Write).unwrap();
    for step in walk.by_ref().take(count) {
        journal.append(&step.event, &step.evidence_set).unwrap();
    }
}

/// The newest snapshot of `task-1`, after flipping a bit of the last byte of its index file
/// (one of its digest records; flipped again, the file is whole again).
fn damage_newest_index(root: &ControlRoot) -> std::path::PathBuf {
    let dir = root.layout().task_dir("task-1");
    let (_, newest) = snapshot::list(&dir).unwrap().into_iter().next().unwrap();
    let index = snapshot::index_path(&newest);
    let mut bytes = std::fs::read(&index).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(&index, &bytes).unwrap();
    assert!(dir.join(SNAPSHOTS_DIR).is_dir());
    newest
}

fn reader(root: &ControlRoot) -> Journal {
    root.open_task("task-1", Access::ReadOnly).unwrap()
}

/// Every entry, read from the genesis.
fn whole(journal: &Journal) -> Vec<Recorded<CompactEntry>> {
    let mut all = Vec::new();
    read_entries::<LiveState>(journal.path(), |recorded| all.push(recorded)).unwrap();
    all
}

fn same(left: &[Recorded<CompactEntry>], right: &[Recorded<CompactEntry>]) -> bool {
    left.len() == right.len()
        && left.iter().zip(right).all(|(left, right)| {
            left.seq == right.seq
                && left.recorded_at == right.recorded_at
                && left.entry == right.entry
        })
}

/// Where each line of the journal file starts, and the file's bytes.
fn line_starts(path: &Path) -> (Vec<u64>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let mut starts = vec![0];
    starts.extend(
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &byte)| byte == b'\n')
            .map(|(at, _)| at as u64 + 1),
    );
    starts.pop();
    (starts, bytes)
}

/// Bytes this thread has read so far (`rchar` of `/proc/thread-self/io`).
fn bytes_read() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").unwrap();
    io.lines()
        .find_map(|line| line.strip_prefix("rchar: "))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn the_newest_entries_are_the_last_of_a_whole_read_also_before_the_snapshot_opened_from() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_with(temp.path(), 300);
    let journal = reader(&root);
    assert!(
        journal.live().history().is_empty(),
        "the reader opened from the snapshot the writer left"
    );
    let all = whole(&journal);
    for count in [0_usize, 1, 2, 17, 200, 299, 300] {
        let newest = journal.newest_entries(count as u64).unwrap();
        assert!(same(&newest, &all[300 - count..]), "count {count}");
    }
    // Asking for more than there is gives every entry (never the genesis).
    assert!(same(&journal.newest_entries(10_000).unwrap(), &all));
}

#[test]
fn reading_the_newest_entries_reads_what_they_take_not_the_journal() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_with(temp.path(), 3000);
    let journal = reader(&root);
    let (starts, bytes) = line_starts(journal.path());
    let wanted = 200;
    let span = bytes.len() as u64 - starts[starts.len() - wanted];
    let before = bytes_read();
    let newest = journal.newest_entries(wanted as u64).unwrap();
    let read = bytes_read() - before;
    assert_eq!(newest.len(), wanted);
    // The lines back, then forward while verifying, and at most a 64 KiB block on each side.
    assert!(
        read <= 2 * span + 2 * 65_536 + 4096,
        "read {read} bytes for {wanted} lines of {span} bytes"
    );
    assert!(
        read * 4 < bytes.len() as u64,
        "read {read} of {}",
        bytes.len()
    );
    // Nothing before them is read: damage to line 2 does not matter to it (a whole read fails).
    let mut damaged = bytes.clone();
    let at = usize::try_from(starts[1]).unwrap() + 2;
    damaged[at] = b'#';
    std::fs::write(journal.path(), &damaged).unwrap();
    assert!(same(
        &journal.newest_entries(wanted as u64).unwrap(),
        &newest
    ));
    assert!(read_entries::<LiveState>(journal.path(), |_| {}).is_err());
}

#[test]
fn a_damaged_line_among_the_newest_is_refused_with_its_line_and_byte() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_with(temp.path(), 100);
    let journal = reader(&root);
    let (starts, mut bytes) = line_starts(journal.path());
    // Line seq 95: one hex digit of its entry_digest changed.
    let start = usize::try_from(starts[95]).unwrap();
    let end = usize::try_from(starts[96]).unwrap();
    let text = std::str::from_utf8(&bytes[start..end]).unwrap().to_owned();
    let member = r#""entry_digest":"sha256:"#;
    let digest_at = text.find(member).unwrap() + member.len() - "sha256:".len();
    let original = text[digest_at..digest_at + 71].to_owned();
    let flipped = if original.ends_with('0') { b'1' } else { b'0' };
    bytes[start + digest_at + 70] = flipped;
    let altered = format!("{}{}", &original[..70], flipped as char);
    std::fs::write(journal.path(), &bytes).unwrap();
    let error = journal.newest_entries(10).unwrap_err();
    assert_eq!(error.code(), StoreCode::Corrupt);
    assert_eq!(
        error.to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:96: byte {start}: entry_digest {altered} does not match \
             the line ({original})",
            journal.path().display()
        )
    );
    // The lines after it are still read.
    assert_eq!(journal.newest_entries(5).unwrap().len(), 5);
}

#[test]
fn a_tip_cut_under_the_open_handle_is_refused_not_answered_short() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_with(temp.path(), 100);
    let journal = reader(&root);
    let (starts, bytes) = line_starts(journal.path());
    // The last two lines cut (as `valp recover` would) after the handle verified them.
    std::fs::write(
        journal.path(),
        &bytes[..usize::try_from(starts[99]).unwrap()],
    )
    .unwrap();
    let error = journal.newest_entries(10).unwrap_err();
    assert_eq!(error.code(), StoreCode::Corrupt);
    assert_eq!(
        error.to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:101: byte {}: the journal is {} bytes, short of its \
             verified tip at byte {}: cut under an open handle",
            journal.path().display(),
            starts[99],
            starts[99],
            bytes.len()
        )
    );
    // Cut and written again to the same length with other lines: the chain read back does not
    // end at the verified tip.
    let mut other = bytes.clone();
    let tail_at = usize::try_from(starts[99]).unwrap();
    other.truncate(tail_at);
    other.extend_from_slice(&bytes[usize::try_from(starts[98]).unwrap()..tail_at]);
    other.resize(bytes.len(), b'\n');
    std::fs::write(journal.path(), &other).unwrap();
    let error = journal.newest_entries(10).unwrap_err();
    // Counted back from the tip, line 92 starts after the 11th LF from the end: there, an LF
    // of the padding or a line's middle, not a chain line.
    let start = other
        .iter()
        .enumerate()
        .rev()
        .filter(|&(_, &byte)| byte == b'\n')
        .nth(10)
        .map(|(at, _)| at + 1)
        .unwrap();
    assert_eq!(
        error.to_string(),
        format!(
            "VALP-E-KERNEL-STORE-CORRUPT: {}:92: byte {start}: the bytes there are not a chain \
             line",
            journal.path().display()
        )
    );
}

#[test]
fn a_handle_to_show_checks_the_index_file_before_it_applies_a_line_not_at_the_open() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut walk) = root_and_walk(temp.path(), 300);
    let reader = reader(&root);
    let newest = damage_newest_index(&root);
    // At the open, the index file is not checked: the State is the snapshot's.
    let shown = root.open_task_to_show("task-1").unwrap();
    assert!(shown.warnings().is_empty(), "{:?}", shown.warnings());
    assert_eq!(shown.live().body(), reader.live().body());
    assert_eq!(shown.len(), 300);
    // Any other reader checks it at the open and refuses the snapshot.
    let checked = root.open_task("task-1", Access::ReadOnly).unwrap();
    assert_eq!(
        checked.warnings(),
        [Warning::SnapshotRefused {
            path: newest.clone(),
            reason: "its index file does not have the digest the snapshot names".to_owned()
        }]
    );
    // A line to apply (written by a writer while the file is whole, which it checks): the
    // handle to show checks the file first, and stops.
    let mut shown = shown;
    assert_eq!(damage_newest_index(&root), newest, "the byte changed back");
    append(&root, &mut walk, 1);
    damage_newest_index(&root);
    let error = shown.refresh().unwrap_err();
    assert_eq!(error.code(), StoreCode::SnapshotMismatch);
    assert_eq!(
        error.to_string(),
        format!(
            "VALP-E-STORE-SNAPSHOT-MISMATCH: {}: the snapshot of seq 300 does not match its \
             journal: its index file does not have the digest the snapshot names, found before \
             a line was applied to a handle that read it unchecked; opens do not use it (a \
             writer replaces it)",
            newest.display()
        )
    );
}

#[test]
fn a_handle_to_show_goes_on_like_any_reader_once_its_index_file_checks() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut walk) = root_and_walk(temp.path(), 300);
    let mut shown = root.open_task_to_show("task-1").unwrap();
    append(&root, &mut walk, 5);
    assert_eq!(shown.refresh().unwrap(), 5);
    let reader = reader(&root);
    assert_eq!(shown.len(), 305);
    assert_eq!(shown.live().body(), reader.live().body());
    assert_eq!(shown.live().to_parts(), reader.live().to_parts());
}

#[test]
fn a_handle_to_show_checks_the_index_file_at_the_open_when_lines_follow_the_snapshot() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut walk) = root_and_walk(temp.path(), 300);
    append(&root, &mut walk, 3);
    let newest = damage_newest_index(&root);
    let shown = root.open_task_to_show("task-1").unwrap();
    assert_eq!(
        shown.warnings(),
        [Warning::SnapshotRefused {
            path: newest,
            reason: "its index file does not have the digest the snapshot names".to_owned()
        }]
    );
    assert_eq!(shown.len(), 303);
    assert_eq!(shown.live().body(), reader(&root).live().body());
}

#[test]
fn a_handle_to_show_refuses_a_snapshot_whose_unchecked_keys_make_no_index() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_with(temp.path(), 300);
    let dir = root.layout().task_dir("task-1");
    let (_, newest) = snapshot::list(&dir).unwrap().into_iter().next().unwrap();
    let index = snapshot::index_path(&newest);
    let mut bytes = std::fs::read(&index).unwrap();
    // The first two 16-byte key records swapped: the keys are no longer in order.
    let (first, second) = (bytes[..16].to_vec(), bytes[16..32].to_vec());
    bytes[..16].copy_from_slice(&second);
    bytes[16..32].copy_from_slice(&first);
    std::fs::write(&index, &bytes).unwrap();
    let shown = root.open_task_to_show("task-1").unwrap();
    assert_eq!(
        shown.warnings(),
        [Warning::SnapshotRefused {
            path: newest,
            reason: "the snapshot does not rebuild: the idempotency index is not well formed: \
                     its keys are not strictly increasing"
                .to_owned()
        }]
    );
    assert_eq!(shown.len(), 300);
    assert_eq!(
        shown.live().body(),
        root.open_task_with_history("task-1", Access::ReadOnly)
            .unwrap()
            .live()
            .body()
    );
}
