//! Journal basics: create, append, reopen, export to the reference layout and import back.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::io::OsStorage;
use valp_store::{Access, Appended, ControlRoot, reference};

fn root_in(dir: &std::path::Path) -> ControlRoot {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    // One stopped clock: the import below writes its lines at the clock's time, so it can
    // reproduce the journal byte for byte only if both roots stamp the same time.
    let clock = FixedClock::new(Timestamp::from_millis(1_796_042_096_789));
    ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage))
        .unwrap()
        .with_clock(Arc::new(clock))
}

#[test]
fn append_reopen_export_import_round_trip() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_in(temp.path());
    let mut walk = Walk::new(WalkConfig {
        seed: 4,
        work_items: 3,
        may_terminate: false,
    });
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(40).collect();
    for (index, step) in steps.iter().enumerate() {
        let appended = journal.append(&step.event, &step.evidence_set).unwrap();
        assert!(
            matches!(appended, Appended::Accepted { seq, .. } if seq == index as u64 + 1),
            "{appended:?}"
        );
    }
    // A duplicate is answered without writing; a stale revision is refused and logged.
    let first = &steps[0];
    assert!(matches!(
        journal.append(&first.event, &first.evidence_set).unwrap(),
        Appended::Duplicate { .. }
    ));
    let mut stale = steps[5].event.clone();
    stale.event_id = Identity::new(IdentityKind::Event, "stale").unwrap();
    let refused = journal.append(&stale, &[]).unwrap();
    assert_eq!(
        refused,
        Appended::Rejected {
            error_code: valp_kernel::ErrorCode::StateConflict,
            reason: "stale expected_revision 5: the journal is at revision 40".to_owned()
        }
    );
    let bytes = std::fs::read(journal.path()).unwrap();
    let reopened = root.open_task("task-1", Access::ReadOnly).unwrap();
    assert_eq!(reopened.live().to_state(), walk.live().to_state());
    assert_eq!(reopened.len(), 40);

    let export_dir = temp.path().join("export");
    let exported = reference::export(&reopened, &export_dir).unwrap();
    assert_eq!(exported.entries, 40);
    let other = tempfile::tempdir().unwrap();
    let other_root = root_in(other.path());
    let imported = reference::import(&other_root, &export_dir).unwrap();
    assert_eq!(
        std::fs::read(imported.path()).unwrap(),
        bytes,
        "import reproduces our journal"
    );
    let again = other.path().join("again");
    reference::export(&imported, &again).unwrap();
    for file in ["genesis.json", "replay.jsonl"] {
        assert_eq!(
            std::fs::read(export_dir.join("runtime/kernel").join(file)).unwrap(),
            std::fs::read(again.join("runtime/kernel").join(file)).unwrap(),
            "{file} round trips"
        );
    }
}

#[test]
fn a_batch_is_one_append_per_proposal_and_verify_holds_no_history() {
    let temp = tempfile::tempdir().unwrap();
    let root = root_in(temp.path());
    let mut walk = Walk::new(WalkConfig {
        seed: 5,
        work_items: 3,
        may_terminate: false,
    });
    let single = tempfile::tempdir().unwrap();
    let single_root = root_in(single.path());
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let mut one_by_one = single_root.create_task(walk.genesis()).unwrap();
    let steps: Vec<_> = walk.by_ref().take(30).collect();
    for step in &steps {
        one_by_one.append(&step.event, &step.evidence_set).unwrap();
    }
    // The batch repeats its first proposal at the end: answered as a duplicate, not written.
    let answers = journal
        .append_batch(
            steps
                .iter()
                .chain(&steps[..1])
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )
        .unwrap();
    assert_eq!(answers.len(), 31);
    for (index, answer) in answers[..30].iter().enumerate() {
        assert!(
            matches!(answer, Appended::Accepted { seq, .. } if *seq == index as u64 + 1),
            "{answer:?}"
        );
    }
    assert!(matches!(answers[30], Appended::Duplicate { .. }));
    assert_eq!(journal.head().unwrap().seq, 30);
    // Byte for byte what thirty single appends write (the same stopped clock).
    assert_eq!(
        std::fs::read(journal.path()).unwrap(),
        std::fs::read(one_by_one.path()).unwrap()
    );
    let dir = root.layout().task_dir("task-1");
    let verified = root.verify_task_dir(&dir).unwrap();
    let opened = root.open_task("task-1", Access::ReadOnly).unwrap();
    assert_eq!(verified.len(), 30);
    assert_eq!(verified.live().state_digest(), opened.live().state_digest());
    assert_eq!(verified.live().body(), opened.live().body());
    assert!(verified.live().history().is_empty() && !verified.live().keeps_history());
    assert_eq!(opened.live().history().len(), 30);
}

/// A journal of 20 entries whose line 21 records entry `again` once more, chained and timed as
/// the store writes (`change` edits its event first): every line verifies, the replay refuses.
fn with_a_recorded_repeat(
    again: usize,
    change: impl FnOnce(&mut valp_kernel::Event),
) -> (tempfile::TempDir, ControlRoot) {
    let temp = tempfile::tempdir().unwrap();
    let root = root_in(temp.path());
    let mut walk = Walk::new(WalkConfig {
        seed: 6,
        work_items: 3,
        may_terminate: false,
    });
    let mut journal = root.create_task(walk.genesis()).unwrap();
    for step in walk.by_ref().take(20) {
        journal.append(&step.event, &step.evidence_set).unwrap();
    }
    let path = journal.path().to_owned();
    let mut entries = Vec::new();
    valp_store::journal::read_entries::<valp_kernel::live::LiveState>(&path, |recorded| {
        entries.push(recorded.entry);
    })
    .unwrap();
    let mut entry = entries[again].clone();
    change(&mut entry.event);
    let prior = journal.head().unwrap().entry_digest.clone();
    let at = Timestamp::from_millis(1_796_042_096_789);
    let (line, _) = valp_store::chain::encode_line(21, Some(&prior), at, &entry);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&line);
    std::fs::write(&path, bytes).unwrap();
    (temp, root)
}

#[test]
fn verify_refuses_a_recorded_repeat_as_an_open_does_reading_the_earlier_one_back() {
    // The same event again: `no_op` only if the earlier one's digests were read back from
    // line 4 (verify holds none); another input under the same id: the idempotency conflict.
    for (again, verdict, changed) in [
        (3, "no_op", false),
        (7, "VALP-E-IDEMPOTENCY-CONFLICT", true),
    ] {
        let (_temp, root) = with_a_recorded_repeat(again, |event| {
            if changed {
                event.expected_revision += 100;
            }
        });
        let verified = root
            .verify_task_dir(&root.layout().task_dir("task-1"))
            .unwrap_err();
        let opened = root.open_task("task-1", Access::ReadOnly).unwrap_err();
        assert_eq!(verified.to_string(), opened.to_string());
        assert_eq!(verified.code(), opened.code());
        assert!(
            verified.to_string().contains(&format!(
                "its inputs do not produce an accepted Result ({verdict})"
            )),
            "{verified}"
        );
    }
}
