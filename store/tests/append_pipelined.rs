//! `Journal::append_pipelined`: the same journal, byte for byte, as `append_batch` of the same
//! proposals in the same batches, with the same answers, head and snapshots; each batch
//! acknowledged in order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Evidence, Identity, IdentityKind};
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::io::OsStorage;
use valp_store::{Appended, ControlRoot, snapshot};

/// Proposals per batch.
const BATCH: usize = 256;

fn root_in(dir: &Path) -> ControlRoot {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(1_796_042_096_789));
    ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage))
        .unwrap()
        .with_clock(Arc::new(clock))
}

/// A walk that never ends the task, and its first 2,600 steps as proposals.
fn walk_and_proposals(
    seed: u64,
    work_items: usize,
) -> (Walk, Vec<(valp_kernel::Event, Vec<Evidence>)>) {
    let mut walk = Walk::new(WalkConfig {
        seed,
        work_items,
        may_terminate: false,
    });
    let proposals = walk
        .by_ref()
        .take(2_600)
        .map(|step| (step.event, step.evidence_set))
        .collect();
    (walk, proposals)
}

/// The snapshot file names of task `task-1` of `root`.
fn snapshot_names(root: &ControlRoot) -> Vec<String> {
    snapshot::list(&root.layout().task_dir("task-1"))
        .unwrap()
        .into_iter()
        .map(|(_, path)| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn a_pipelined_append_writes_what_append_batch_writes() {
    let (walk, mut proposals) = walk_and_proposals(7, 3);
    // A duplicate and a stale revision in the middle: answered, not written.
    let mut stale = proposals[5].0.clone();
    stale.event_id = Identity::new(IdentityKind::Event, "stale").unwrap();
    proposals.insert(1_000, proposals[3].clone());
    proposals.insert(1_500, (stale, Vec::new()));

    let (expected, piped) = same_as_append_batch(&walk, proposals);
    assert!(matches!(expected[1_000], Appended::Duplicate { .. }));
    assert!(matches!(expected[1_500], Appended::Rejected { .. }));
    assert_eq!(piped, 2_600);
}

#[test]
fn a_duplicate_or_conflict_of_an_entry_whose_digests_are_owed_answers_as_append_batch_does() {
    let (walk, mut proposals) = walk_and_proposals(11, 20);
    // An idempotency conflict: entry 290's id with other content.
    let mut conflict = proposals[291].clone();
    conflict.0.event_id = proposals[290].0.event_id.clone();
    // Each earlier acceptance is in the batch being judged (its digests owed for sure) or the
    // one before (owed while the writer holds it); the very first one in the first batch.
    // Where they end up: 10, 261, 272 (entry 200), 303 (the conflict), 604, 705.
    proposals.insert(700, proposals[520].clone());
    proposals.insert(600, proposals[590].clone());
    proposals.insert(300, conflict);
    proposals.insert(270, proposals[200].clone());
    proposals.insert(260, proposals[258].clone());
    proposals.insert(10, proposals[0].clone());

    let (expected, piped) = same_as_append_batch(&walk, proposals);
    for at in [10, 261, 272, 604, 705] {
        assert!(
            matches!(expected[at], Appended::Duplicate { .. }),
            "{at}: {:?}",
            expected[at]
        );
    }
    assert!(matches!(
        expected[303],
        Appended::Rejected {
            error_code: valp_kernel::ErrorCode::IdempotencyConflict,
            ..
        }
    ));
    assert_eq!(piped, 2_600);
}

/// Appends `proposals` to a fresh task of `walk`'s genesis in batches of [`BATCH`], with
/// `append_batch` and with `append_pipelined`, checks that both wrote the same journal, head
/// and snapshots, byte for byte, and answered the same (each pipelined batch acknowledged in
/// order); returns the answers and the journal's length.
fn same_as_append_batch(
    walk: &Walk,
    proposals: Vec<(valp_kernel::Event, Vec<Evidence>)>,
) -> (Vec<Appended>, u64) {
    let plain_dir = tempfile::tempdir().unwrap();
    let plain_root = root_in(plain_dir.path());
    let mut plain = plain_root.create_task(walk.genesis()).unwrap();
    let mut expected = Vec::new();
    for batch in proposals.chunks(BATCH) {
        expected.extend(
            plain
                .append_batch(
                    batch
                        .iter()
                        .map(|(event, evidence)| (event, evidence.as_slice())),
                )
                .unwrap(),
        );
    }

    let piped_dir = tempfile::tempdir().unwrap();
    let piped_root = root_in(piped_dir.path());
    let mut piped = piped_root.create_task(walk.genesis()).unwrap();
    let mut acknowledged: Vec<Vec<Appended>> = Vec::new();
    let count = proposals.len();
    piped
        .append_pipelined(proposals, BATCH, |answers| acknowledged.push(answers))
        .unwrap();

    assert_eq!(acknowledged.len(), count.div_ceil(BATCH));
    assert!(
        acknowledged[..acknowledged.len() - 1]
            .iter()
            .all(|answers| answers.len() == BATCH)
    );
    assert_eq!(acknowledged.concat(), expected);
    assert_eq!(piped.len(), plain.len());
    assert_eq!(piped.head(), plain.head());
    assert_eq!(piped.warnings(), plain.warnings());
    assert_eq!(
        std::fs::read(piped.path()).unwrap(),
        std::fs::read(plain.path()).unwrap()
    );
    // The same snapshots, taken at the same batch ends, byte for byte.
    let names = snapshot_names(&piped_root);
    assert_eq!(names, snapshot_names(&plain_root));
    assert!(names.len() >= 2, "{names:?}");
    let folder = |root: &ControlRoot| root.layout().task_dir("task-1").join("snapshots");
    for name in &names {
        for file in [name.clone(), name.replace(".json", ".index")] {
            assert_eq!(
                std::fs::read(folder(&piped_root).join(&file)).unwrap(),
                std::fs::read(folder(&plain_root).join(&file)).unwrap(),
                "{file}"
            );
        }
    }
    assert_eq!(piped.live().state_digest(), plain.live().state_digest());
    assert_eq!(piped.live().to_parts(), plain.live().to_parts());
    (expected, piped.len())
}
