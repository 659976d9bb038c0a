//! I/O failures, injected with `FaultyStorage` into every durable-write operation (append,
//! sync, rename, directory sync), once or persistently: each is an `Err` with the right code,
//! never a panic; a failed journal append poisons its handle until the journal is reopened; a
//! failed whole-file write (blob, installation, new journal) commits nothing; and afterwards the
//! journal reopens and verifies (a torn write is repaired as a torn tail). Also the evidence
//! store's integrity rules.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_store::io::{Fault, FaultyStorage, Operation, Storage};
use valp_store::{Access, ControlRoot, StoreCode, StoreError, Warning};
use valp_tests::entry_names;
use valp_tests::store::{
    History, append_step, create_journal, init_root, init_root_with, installation_id, journal_path,
    open_task, quarantine_files,
};

const WORK_ITEMS: usize = 4;

/// A control root over a `FaultyStorage` that starts out healthy.
fn faulty_root(dir: &Path) -> (Arc<FaultyStorage>, ControlRoot) {
    let storage = Arc::new(FaultyStorage::default());
    let root = init_root_with(dir, Arc::clone(&storage) as Arc<dyn Storage>);
    (storage, root)
}

/// What a failed append left in the journal file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    Nothing,
    /// The whole line, not known to be durable.
    Entry,
    /// The first half of the line.
    Half,
}

#[test]
fn failed_appends_are_unknown_or_committed_and_poison_the_handle() {
    for (operation, fault, failing, left) in [
        (Operation::Append, Fault::Once, "write", Left::Nothing),
        (Operation::Append, Fault::Always, "write", Left::Nothing),
        (Operation::Append, Fault::TornOnce, "write", Left::Half),
        (Operation::Sync, Fault::Once, "sync", Left::Entry),
        (Operation::Sync, Fault::Always, "sync", Left::Entry),
    ] {
        check_failed_append(operation, fault, failing, left);
    }
}

fn check_failed_append(operation: Operation, fault: Fault, failing: &str, left: Left) {
    let what = format!("{operation:?} {fault:?}");
    let temp = tempfile::tempdir().unwrap();
    let (storage, root) = faulty_root(temp.path());
    let path = journal_path(&root);
    let mut history = History::new(21, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 5);
    let mut entries = 5;
    storage.fail(operation, fault);
    // A persistent fault fails the first append of a reopened handle again.
    let rounds = if fault == Fault::Always { 2 } else { 1 };
    for round in 0..rounds {
        let what = format!("{what}, round {round}");
        let before = std::fs::read(&path).unwrap();
        let step = history.step(entries).clone();
        let error = journal.append(&step.event, &step.evidence_set).unwrap_err();
        assert_eq!(
            error.code(),
            StoreCode::DurabilityUnknownOrCommitted,
            "{what}: {error}"
        );
        match &error {
            StoreError::UnknownOrCommitted {
                path: failed,
                operation,
                seq,
                ..
            } => {
                assert_eq!(failed, &path, "{what}");
                assert_eq!(*operation, failing, "{what}");
                assert_eq!(*seq, entries as u64 + 1, "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
        if round + 1 == rounds {
            storage.heal();
        }
        // The handle refuses to append until the journal is reopened, even once the storage
        // works again.
        let refused = journal.append(&step.event, &step.evidence_set).unwrap_err();
        assert!(
            matches!(&refused, StoreError::Poisoned { path: poisoned, .. } if poisoned == &path),
            "{what}: {refused:?}"
        );
        assert_eq!(refused.code(), StoreCode::DurabilityUnknownOrCommitted);
        let after = std::fs::read(&path).unwrap();
        assert!(after.starts_with(&before), "{what}");
        let written = &after[before.len()..];
        match left {
            Left::Nothing => assert_eq!(written, b"", "{what}"),
            Left::Entry => {
                let lf = written.iter().position(|&byte| byte == b'\n');
                assert_eq!(lf, Some(written.len() - 1), "{what}: one whole line");
                entries += 1;
            }
            Left::Half => {
                assert!(!written.is_empty() && !written.contains(&b'\n'), "{what}");
                let reader = open_task(&root, Access::ReadOnly).unwrap();
                assert_eq!(
                    reader.warnings(),
                    [Warning::IncompleteTail {
                        offset: before.len() as u64,
                        len: written.len() as u64
                    }],
                    "{what}"
                );
            }
        }
        drop(journal);
        journal = open_task(&root, Access::Write).unwrap();
        match left {
            Left::Half => {
                let [Warning::TornTailRepaired { quarantined, .. }] = journal.warnings() else {
                    panic!("{what}: {:?}", journal.warnings());
                };
                assert_eq!(std::fs::read(quarantined).unwrap(), written, "{what}");
                assert_eq!(std::fs::read(&path).unwrap(), before, "{what}");
            }
            Left::Nothing | Left::Entry => assert_eq!(journal.warnings(), [], "{what}"),
        }
        assert_eq!(journal.len(), entries as u64, "{what}");
        assert_eq!(journal.live().to_state(), history.state_after(entries));
    }
    append_step(&mut journal, &mut history, entries);
    let reopened = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(reopened.warnings(), [], "{what}");
    assert_eq!(reopened.len(), entries as u64 + 1, "{what}");
    assert_eq!(reopened.live().to_state(), history.state_after(entries + 1));
}

#[test]
fn a_torn_batch_keeps_every_acknowledged_entry_and_the_complete_lines_of_the_batch() {
    // `append_batch` writes a batch with one write and one fdatasync. A torn write of it (the
    // write stops half-way) leaves the batch's first lines complete and the next one torn:
    // the acknowledged entries and the head stay, the complete lines of the batch are accepted
    // entries and are kept on reopen, the torn line is quarantined and cut, and appending goes
    // on from there.
    let temp = tempfile::tempdir().unwrap();
    let (storage, root) = faulty_root(temp.path());
    let path = journal_path(&root);
    let mut history = History::new(22, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 3);
    let acknowledged = std::fs::read(&path).unwrap();
    let steps: Vec<_> = (3..11).map(|index| history.step(index).clone()).collect();
    storage.fail(Operation::Append, Fault::TornOnce);
    let error = journal
        .append_batch(
            steps
                .iter()
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )
        .unwrap_err();
    match &error {
        StoreError::UnknownOrCommitted { operation, seq, .. } => {
            assert_eq!((*operation, *seq), ("write", 4), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        journal.append(&steps[0].event, &steps[0].evidence_set),
        Err(StoreError::Poisoned { .. })
    ));
    let after = std::fs::read(&path).unwrap();
    assert!(after.starts_with(&acknowledged));
    let written = &after[acknowledged.len()..];
    let complete = written.split(|&byte| byte == b'\n').count() - 1;
    assert!(
        complete >= 1 && complete < steps.len() && written.last() != Some(&b'\n'),
        "half of the batch: {complete} complete lines and a torn one"
    );
    // A reader sees the complete lines and leaves the torn one alone; the head lags.
    let reader = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(reader.len(), 3 + complete as u64);
    assert_eq!(reader.head().unwrap().seq, 3);
    assert!(matches!(
        reader.warnings(),
        [Warning::IncompleteTail { .. }]
    ));
    drop(journal);
    let mut journal = open_task(&root, Access::Write).unwrap();
    let [Warning::TornTailRepaired { quarantined, .. }] = journal.warnings() else {
        panic!("{:?}", journal.warnings());
    };
    let torn_at = written.iter().rposition(|&byte| byte == b'\n').unwrap() + 1;
    assert_eq!(std::fs::read(quarantined).unwrap(), &written[torn_at..]);
    let kept = 3 + complete;
    assert_eq!(journal.len(), kept as u64);
    assert_eq!(journal.live().to_state(), history.state_after(kept));
    // The rest of the batch again, now whole: every entry accepted, one head at its end.
    let rest = &steps[complete..];
    let answers = journal
        .append_batch(
            rest.iter()
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )
        .unwrap();
    assert_eq!(answers.len(), rest.len());
    let reopened = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(reopened.warnings(), []);
    assert_eq!(reopened.len(), 11);
    assert_eq!(reopened.head().unwrap().seq, 11);
    assert_eq!(reopened.live().to_state(), history.state_after(11));
}

#[test]
fn a_failed_head_write_after_a_durable_line_leaves_the_head_behind_until_the_next_append() {
    // In an append only the head is renamed (the line is written, synced, then the head's
    // temporary is written, synced and renamed), so a rename fault hits the head alone.
    for fault in [Fault::Once, Fault::Always] {
        let what = format!("Rename {fault:?}");
        let temp = tempfile::tempdir().unwrap();
        let (storage, root) = faulty_root(temp.path());
        let path = journal_path(&root);
        let head_path = valp_store::head::head_path(&path);
        let mut history = History::new(25, WORK_ITEMS);
        let mut journal = create_journal(&root, &mut history, 3);
        let before = std::fs::read(&head_path).unwrap();
        storage.fail(Operation::Rename, fault);
        let step = history.step(3).clone();
        let appended = journal.append(&step.event, &step.evidence_set).unwrap();
        assert!(
            matches!(appended, valp_store::Appended::Accepted { seq: 4, .. }),
            "{what}: the entry is durable and acknowledged: {appended:?}"
        );
        let [Warning::HeadNotUpdated { seq: 4, error }] = journal.warnings() else {
            panic!("{what}: {:?}", journal.warnings());
        };
        assert!(error.contains("injected Rename failure"), "{what}: {error}");
        assert_eq!(
            std::fs::read(&head_path).unwrap(),
            before,
            "{what}: the head lags"
        );
        assert_eq!(
            entry_names(path.parent().unwrap()),
            ["journal.head", "journal.jsonl", "journal.lock"],
            "{what}: no temporary is left"
        );
        let reopened = open_task(&root, Access::ReadOnly).unwrap();
        assert_eq!(
            (reopened.len(), reopened.warnings()),
            (4, &[][..]),
            "{what}"
        );
        storage.heal();
        append_step(&mut journal, &mut history, 4);
        assert_eq!(journal.warnings(), [], "{what}: the head caught up");
        let head = valp_store::head::read(&head_path).unwrap().unwrap();
        assert_eq!(head.seq, 5, "{what}");
    }
}

/// The operations of a whole-file write that come before its rename, with the operation name
/// a failure reports, and the faults to try on each.
fn precommit_faults() -> Vec<(Operation, &'static str, Fault)> {
    vec![
        (Operation::Append, "write", Fault::Once),
        (Operation::Append, "write", Fault::Always),
        (Operation::Append, "write", Fault::TornOnce),
        (Operation::Sync, "sync", Fault::Once),
        (Operation::Sync, "sync", Fault::Always),
        (Operation::Rename, "rename", Fault::Once),
        (Operation::Rename, "rename", Fault::Always),
    ]
}

/// The code, file and operation of an I/O failure.
fn failure(error: &StoreError) -> (StoreCode, &Path, &'static str) {
    match error {
        StoreError::Io {
            path, operation, ..
        }
        | StoreError::Precommit {
            path, operation, ..
        }
        | StoreError::UnknownOrCommitted {
            path, operation, ..
        } => (error.code(), path, operation),
        other => panic!("not an I/O failure: {other:?}"),
    }
}

/// Checks a `DurabilityPrecommit` failure of `failing`; returns the file it names.
fn precommit_path(result: Result<impl std::fmt::Debug, StoreError>, failing: &str) -> PathBuf {
    let error = result.unwrap_err();
    let (code, path, operation) = failure(&error);
    assert_eq!((code, operation), (StoreCode::DurabilityPrecommit, failing));
    path.to_owned()
}

#[test]
fn failed_blob_writes_commit_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let (storage, root) = faulty_root(temp.path());
    let blobs = root.blobs();
    let temporaries = root.layout().blobs_tmp_dir();
    for (operation, failing, fault) in precommit_faults() {
        let what = format!("{operation:?} {fault:?}");
        let bytes = format!("evidence written under {what}").into_bytes();
        let digest = valp_kernel::canonical::sha256_digest(&bytes);
        let target = blobs.path_of(&digest).unwrap();
        storage.fail(operation, fault);
        let attempts = if fault == Fault::Always { 2 } else { 1 };
        for _ in 0..attempts {
            let failed = precommit_path(blobs.put(&bytes), failing);
            if failing == "rename" {
                assert_eq!(failed, target, "{what}");
            } else {
                assert_eq!(failed.parent(), Some(temporaries.as_path()), "{what}");
            }
            assert!(!target.exists(), "{what}: a failed write left the blob");
            assert_eq!(
                entry_names(&temporaries),
                Vec::<String>::new(),
                "{what}: temporaries left"
            );
        }
        storage.heal();
        let stored = blobs.put(&bytes).unwrap();
        assert_eq!(
            (stored.digest.as_str(), stored.existed),
            (digest.as_str(), false)
        );
        assert_eq!(blobs.get(&digest).unwrap(), bytes, "{what}");
    }
}

#[test]
fn failed_installation_writes_commit_nothing() {
    for (operation, failing, fault) in precommit_faults() {
        let what = format!("{operation:?} {fault:?}");
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(".valp");
        let storage = Arc::new(FaultyStorage::default());
        storage.fail(operation, fault);
        let attempts = if fault == Fault::Always { 2 } else { 1 };
        for _ in 0..attempts {
            let result = ControlRoot::init(&dir, installation_id(), storage.clone());
            // installation.json is linked into place (exclusive), not renamed.
            let failing = if failing == "rename" { "link" } else { failing };
            let failed = precommit_path(result, failing);
            let written_in = if failing == "link" {
                dir.clone()
            } else {
                dir.join("evidence/tmp")
            };
            assert_eq!(failed.parent(), Some(written_in.as_path()), "{what}");
            assert!(!dir.join("installation.json").exists(), "{what}");
            assert_eq!(entry_names(&dir.join("evidence/tmp")), Vec::<String>::new());
        }
        storage.heal();
        ControlRoot::init(&dir, installation_id(), storage).unwrap();
        let opened = ControlRoot::open(&dir, Arc::new(valp_store::io::OsStorage)).unwrap();
        assert_eq!(opened.installation().installation_id, installation_id());
    }
}

#[test]
fn failed_journal_creations_commit_nothing() {
    let temp = tempfile::tempdir().unwrap();
    let (storage, root) = faulty_root(temp.path());
    let history = History::new(22, WORK_ITEMS);
    let task_dir = root.layout().task_dir(valp_tests::store::TASK_ID);
    for (operation, failing, fault) in precommit_faults() {
        let what = format!("{operation:?} {fault:?}");
        storage.fail(operation, fault);
        let attempts = if fault == Fault::Always { 2 } else { 1 };
        for _ in 0..attempts {
            // The head anchor is written first: the first write, sync or rename is its own.
            let failed = precommit_path(root.create_task(history.genesis()), failing);
            if failing == "rename" {
                assert_eq!(failed, task_dir.join("journal.head"), "{what}");
            } else {
                assert_eq!(failed.parent(), Some(task_dir.as_path()), "{what}");
            }
            // Only the lock file remains: no journal, no temporary.
            assert_eq!(entry_names(&task_dir), ["journal.lock"], "{what}");
            assert!(
                matches!(
                    open_task(&root, Access::ReadOnly),
                    Err(StoreError::Invalid(_))
                ),
                "{what}: no task"
            );
        }
        storage.heal();
        let journal = root.create_task(history.genesis()).unwrap();
        assert_eq!((journal.len(), journal.warnings()), (0, &[][..]), "{what}");
        std::fs::remove_file(journal_path(&root)).unwrap();
        std::fs::remove_file(task_dir.join("journal.head")).unwrap();
    }
}

#[test]
fn failed_directory_syncs_are_reported() {
    for fault in [Fault::Once, Fault::Always] {
        let what = format!("SyncDir {fault:?}");
        let temp = tempfile::tempdir().unwrap();
        let (storage, root) = faulty_root(temp.path());
        let history = History::new(23, WORK_ITEMS);

        // After a blob's rename: it is there, but its durability is unknown.
        storage.fail(Operation::SyncDir, fault);
        let bytes = b"a blob whose folder sync fails".to_vec();
        let digest = valp_kernel::canonical::sha256_digest(&bytes);
        let error = root.blobs().put(&bytes).unwrap_err();
        let blobs_dir = root.layout().blobs_dir();
        assert_eq!(
            failure(&error),
            (
                StoreCode::DurabilityUnknownOrCommitted,
                blobs_dir.as_path(),
                "sync directory"
            ),
            "{what}"
        );
        assert_eq!(root.blobs().get(&digest).unwrap(), bytes, "{what}");
        assert!(root.blobs().put(&bytes).unwrap().existed, "{what}");

        // Creating a task folder: the folder exists, nothing else was written.
        storage.fail(Operation::SyncDir, fault);
        let error = root.create_task(history.genesis()).unwrap_err();
        let tasks_dir = root.layout().tasks_dir();
        assert_eq!(
            failure(&error),
            (StoreCode::Io, tasks_dir.as_path(), "sync directory"),
            "{what}"
        );
        assert!(!journal_path(&root).exists(), "{what}");
        if fault == Fault::Always {
            // The folder exists now; the head anchor is renamed into place, then its folder
            // sync fails: the journal is not written (a journal is never durable before its
            // head), and the next creation replaces the head.
            let error = root.create_task(history.genesis()).unwrap_err();
            assert_eq!(
                error.code(),
                StoreCode::DurabilityUnknownOrCommitted,
                "{what}"
            );
            assert!(!journal_path(&root).exists(), "{what}");
            storage.heal();
            let journal = root.create_task(history.genesis()).unwrap();
            assert_eq!((journal.len(), journal.warnings()), (0, &[][..]), "{what}");
            assert!(matches!(
                root.create_task(history.genesis()),
                Err(StoreError::Invalid(_))
            ));
        } else {
            let journal = root.create_task(history.genesis()).unwrap();
            assert_eq!(journal.len(), 0, "{what}");
        }

        // A new control root: creating its folders fails.
        let other = temp.path().join("other");
        std::fs::create_dir(&other).unwrap();
        storage.fail(Operation::SyncDir, fault);
        let error = ControlRoot::init(&other.join(".valp"), installation_id(), storage.clone())
            .unwrap_err();
        assert_eq!(error.code(), StoreCode::Io, "{what}: {error}");
        assert!(!other.join(".valp/installation.json").exists(), "{what}");
        storage.heal();
        ControlRoot::init(&other.join(".valp"), installation_id(), storage).unwrap();
    }
}

/// A journal of 4 entries followed by the first half of the 5th line, over `FaultyStorage`.
struct TornJournal {
    _temp: tempfile::TempDir,
    storage: Arc<FaultyStorage>,
    root: ControlRoot,
    path: PathBuf,
    good: Vec<u8>,
    torn: Vec<u8>,
}

impl TornJournal {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let (storage, root) = faulty_root(temp.path());
        let mut history = History::new(24, WORK_ITEMS);
        drop(create_journal(&root, &mut history, 5));
        let path = journal_path(&root);
        let full = std::fs::read(&path).unwrap();
        let lines = valp_tests::store::line_ranges(&full);
        let good = full[..lines[4].end].to_vec();
        let torn = full[lines[5].start..lines[5].start + lines[5].len() / 2].to_vec();
        valp_tests::store::write_anchored(&path, &good, &torn);
        Self {
            _temp: temp,
            storage,
            root,
            path,
            good,
            torn,
        }
    }

    /// Opening for writing while `operation` fails as `fault` says is refused and leaves the
    /// journal as it was: a failed quarantine copy committed nothing (`Precommit`), a failed
    /// directory sync after the copy's rename may or may not have kept the copy
    /// (`UnknownOrCommitted`). Once the storage heals, the torn tail is repaired and its
    /// quarantine copy holds exactly the torn bytes.
    fn check_failed_repair(&self, operation: Operation, fault: Fault) {
        let what = format!("{operation:?} {fault:?}");
        let damaged = [self.good.as_slice(), &self.torn].concat();
        self.storage.fail(operation, fault);
        let attempts = if fault == Fault::Always { 2 } else { 1 };
        for _ in 0..attempts {
            let error = match open_task(&self.root, Access::Write) {
                Ok(journal) => panic!("{what}: the repair went ahead: {:?}", journal.warnings()),
                Err(error) => error,
            };
            let expected = match operation {
                Operation::SyncDir => StoreCode::DurabilityUnknownOrCommitted,
                _ => StoreCode::DurabilityPrecommit,
            };
            assert_eq!(error.code(), expected, "{what}: {error}");
            assert!(
                std::fs::read(&self.path).unwrap() == damaged,
                "{what}: a failed repair changed the journal"
            );
        }
        self.storage.heal();
        let journal = open_task(&self.root, Access::Write).unwrap();
        let [Warning::TornTailRepaired { quarantined, .. }] = journal.warnings() else {
            panic!("{what}: {:?}", journal.warnings());
        };
        assert!(
            std::fs::read(quarantined).unwrap() == self.torn,
            "{what}: the quarantine copy holds exactly the torn bytes"
        );
        assert_eq!(
            quarantine_files(&self.root),
            std::slice::from_ref(quarantined),
            "{what}"
        );
        assert!(std::fs::read(&self.path).unwrap() == self.good, "{what}");
        assert_eq!(journal.len(), 4, "{what}");
    }
}

#[test]
fn failed_repairs_change_nothing() {
    for operation in [Operation::Sync, Operation::SyncDir] {
        TornJournal::new().check_failed_repair(operation, Fault::Once);
    }
}

#[test]
fn a_quarantine_copy_left_by_a_failed_repair_is_not_trusted() {
    for (operation, fault) in [
        (Operation::Append, Fault::Once),
        (Operation::Append, Fault::TornOnce),
        (Operation::Append, Fault::Always),
        (Operation::Sync, Fault::Always),
        (Operation::SyncDir, Fault::Always),
    ] {
        TornJournal::new().check_failed_repair(operation, fault);
    }
}

#[test]
fn blobs_are_content_addressed_and_checked() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let blobs = root.blobs();

    // Storing the same bytes again is a no-op: the file is not rewritten.
    let first = blobs.put(b"first evidence").unwrap();
    assert!(!first.existed);
    let path = blobs.path_of(&first.digest).unwrap();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let again = blobs.put(b"first evidence").unwrap();
    assert_eq!(again.digest, first.digest);
    assert!(again.existed);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
    assert_eq!(std::fs::read(&path).unwrap(), b"first evidence");
    let second = blobs.put(b"second evidence").unwrap();

    // Different bytes planted under a digest are a conflict, never overwritten.
    let wanted = b"planted-over evidence";
    let digest = valp_kernel::canonical::sha256_digest(wanted);
    let planted = blobs.path_of(&digest).unwrap();
    std::fs::write(&planted, b"something else").unwrap();
    let error = blobs.put(wanted).unwrap_err();
    assert_eq!(error.code(), StoreCode::Corrupt);
    match &error {
        StoreError::BlobConflict {
            path,
            digest: named,
        } => {
            assert_eq!((path, named), (&planted, &digest));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&planted).unwrap(), b"something else");
    assert!(matches!(
        blobs.get(&digest),
        Err(StoreError::Corrupt { ref path, .. }) if path == &planted
    ));

    // verify_all finds the planted blob, a tampered one and a misnamed file.
    let tampered = blobs.path_of(&second.digest).unwrap();
    std::fs::write(&tampered, b"second evidencE").unwrap();
    let misnamed = root.layout().blobs_dir().join("not-a-digest");
    std::fs::write(&misnamed, b"x").unwrap();
    let (good, problems) = blobs.verify_all().unwrap();
    assert_eq!(good, 1);
    let mut found: Vec<PathBuf> = problems
        .iter()
        .map(|problem| match problem {
            StoreError::Corrupt { path, .. } => path.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    found.sort();
    let mut expected = vec![planted, tampered, misnamed];
    expected.sort();
    assert_eq!(found, expected);
}

/// Fails the `fdatasync` of one file (told by its inode) once `allowed` of them succeeded; every
/// other operation is the operating system's.
#[derive(Debug, Default)]
struct SyncFailsAfter {
    inode: std::sync::atomic::AtomicU64,
    allowed: std::sync::atomic::AtomicUsize,
}

impl SyncFailsAfter {
    fn arm(&self, path: &Path, allowed: usize) {
        use std::sync::atomic::Ordering;
        self.allowed.store(allowed, Ordering::SeqCst);
        self.inode
            .store(std::fs::metadata(path).unwrap().ino(), Ordering::SeqCst);
    }
}

impl Storage for SyncFailsAfter {
    fn append(&self, file: &mut std::fs::File, bytes: &[u8]) -> std::io::Result<()> {
        valp_store::io::OsStorage.append(file, bytes)
    }

    fn sync(&self, file: &std::fs::File) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        if file.metadata()?.ino() == self.inode.load(Ordering::SeqCst)
            && self
                .allowed
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                    left.checked_sub(1)
                })
                .is_err()
        {
            return Err(std::io::Error::other("injected journal sync failure"));
        }
        valp_store::io::OsStorage.sync(file)
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        valp_store::io::OsStorage.rename(from, to)
    }

    fn link(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        valp_store::io::OsStorage.link(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        valp_store::io::OsStorage.sync_dir(dir)
    }
}

#[test]
fn a_failed_sync_in_a_pipelined_append_acknowledges_nothing_of_its_batch_and_poisons() {
    // Batches of 4 after 3 entries: batch 1 (entries 4-7) is synced and acknowledged, the sync
    // of batch 2 (8-11) fails while batch 3 (12-15) is judged: neither is acknowledged, the
    // handle is poisoned, and the file keeps what was written (batch 2's lines, not known to
    // be durable) with the head at batch 1's end.
    let temp = tempfile::tempdir().unwrap();
    let storage = Arc::new(SyncFailsAfter::default());
    let root = init_root_with(temp.path(), Arc::clone(&storage) as Arc<dyn Storage>);
    let path = journal_path(&root);
    let mut history = History::new(23, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 3);
    let proposals = history.proposals(3..15);
    storage.arm(&path, 1);
    let mut acknowledged = Vec::new();
    let error = journal
        .append_pipelined(proposals.clone(), 4, |answers| acknowledged.push(answers))
        .unwrap_err();
    assert_eq!(error.code(), StoreCode::DurabilityUnknownOrCommitted);
    assert_eq!(
        error.to_string(),
        format!(
            "VALP-E-DURABILITY-UNKNOWN-OR-COMMITTED: {}: sync failed after the write began \
             (what was written, entry 8 for a journal, may or may not be on disk; reopen to \
             find out): injected journal sync failure",
            path.display()
        )
    );
    let seqs: Vec<Vec<u64>> = acknowledged
        .iter()
        .map(|answers| {
            answers
                .iter()
                .map(|answer| match answer {
                    valp_store::Appended::Accepted { seq, .. } => *seq,
                    other => panic!("{other:?}"),
                })
                .collect()
        })
        .collect();
    assert_eq!(seqs, [[4, 5, 6, 7]]);
    let (event, evidence_set) = &proposals[8];
    let refused = journal.append(event, evidence_set).unwrap_err();
    assert!(
        matches!(&refused, StoreError::Poisoned { path: poisoned, .. } if poisoned == &path),
        "{refused:?}"
    );
    drop(journal);
    let reopened = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(reopened.warnings(), []);
    assert_eq!(reopened.len(), 11);
    assert_eq!(reopened.head().unwrap().seq, 7);
    assert_eq!(reopened.live().to_state(), history.state_after(11));
}

#[test]
fn a_snapshot_a_pipelined_append_fails_to_write_is_taken_again_at_a_later_batch_end() {
    // Batches of 100 after 1,000 entries: a snapshot is due at 1,100, written by the writer
    // after it reported that batch; creating the snapshot folder cannot be made durable, so it
    // is not written (a warning, no failed append) and a later batch end takes one again.
    let temp = tempfile::tempdir().unwrap();
    let (storage, root) = faulty_root(temp.path());
    let mut history = History::new(29, WORK_ITEMS);
    let mut journal = create_journal(&root, &mut history, 1_000);
    let proposals = history.proposals(1_000..2_000);
    storage.fail(Operation::SyncDir, Fault::Once);
    let mut acknowledged = 0;
    journal
        .append_pipelined(proposals, 100, |answers| acknowledged += answers.len())
        .unwrap();
    assert_eq!(acknowledged, 1_000);
    assert!(
        journal.warnings().iter().any(|warning| matches!(
            warning,
            Warning::SnapshotNotWritten { seq: 1_100, error }
                if error.ends_with("sync directory: injected SyncDir failure")
        )),
        "{:?}",
        journal.warnings()
    );
    let snapshots = valp_store::snapshot::list(&task_dir(&root)).unwrap();
    assert!(
        snapshots
            .iter()
            .any(|(seq, _)| (1_200..2_000).contains(seq)),
        "{snapshots:?}"
    );
    drop(journal);
    let reopened = open_task(&root, Access::ReadOnly).unwrap();
    assert!(!reopened.live().keeps_history(), "opened from a snapshot");
    assert_eq!(reopened.len(), 2_000);
    assert_eq!(
        reopened.live().state_digest(),
        valp_kernel::live::LiveState::new(history.state_after(2_000)).state_digest()
    );
}

/// The folder of the task `create_journal` made.
fn task_dir(root: &ControlRoot) -> PathBuf {
    journal_path(root).parent().unwrap().to_owned()
}
