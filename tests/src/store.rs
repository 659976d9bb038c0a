//! Support for the store reliability tests: control roots holding one walk task, the walk's
//! history generated on demand, a seeded generator, and helpers to look at journal files.
//!
//! Everything here panics on failure: a helper that cannot do its job is a failed test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::replay::GenesisRoot;
use valp_kernel::walk::{Walk, WalkConfig, WalkStep};
use valp_kernel::{Identity, IdentityKind, State};
use valp_store::actions::{
    ActionJournal, ActionKind, ActionRecord, Delivery, Outcome as DeliveryOutcome,
};
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::effects::{EffectLedger, Outcome};
use valp_store::io::{OsStorage, Storage};
use valp_store::{Access, Appended, ControlRoot, Journal, StoreError, Warning};

/// The installation id of every walk genesis.
pub const INSTALLATION_ID: &str = "inst-1";
/// The task id of every walk genesis.
pub const TASK_ID: &str = "task-1";

/// A walk's accepted steps, generated as far as they are asked for. Step `i` (0-based) is the
/// entry that produces revision `i + 1`.
#[derive(Debug, Clone)]
pub struct History {
    genesis: GenesisRoot,
    walk: Walk,
    steps: Vec<WalkStep>,
}

impl History {
    /// The history of an endless walk (`may_terminate: false`) from `seed` over `work_items`
    /// work items.
    pub fn new(seed: u64, work_items: usize) -> Self {
        let walk = Walk::new(WalkConfig {
            seed,
            work_items,
            may_terminate: false,
        });
        Self {
            genesis: walk.genesis().clone(),
            walk,
            steps: Vec::new(),
        }
    }

    /// The task's GenesisRoot.
    pub fn genesis(&self) -> &GenesisRoot {
        &self.genesis
    }

    /// Step `index` (the entry of revision `index + 1`).
    pub fn step(&mut self, index: usize) -> &WalkStep {
        while self.steps.len() <= index {
            let step = self
                .walk
                .next()
                .expect("an endless walk always has a next step");
            self.steps.push(step);
        }
        &self.steps[index]
    }

    /// Steps `indices` as proposals for a bulk append (their events and evidence sets).
    pub fn proposals(&mut self, indices: Range<usize>) -> Vec<valp_store::journal::Proposal> {
        indices
            .map(|index| {
                let step = self.step(index);
                (step.event.clone(), step.evidence_set.clone())
            })
            .collect()
    }

    /// The State after the first `count` steps, rebuilt from the genesis.
    pub fn state_after(&mut self, count: usize) -> State {
        if count > 0 {
            self.step(count - 1);
        }
        let mut live = LiveState::new(self.genesis.state.clone());
        for (index, step) in self.steps[..count].iter().enumerate() {
            let verdict = live.apply(&step.event, &step.evidence_set);
            assert!(
                matches!(verdict, Verdict::Accepted(_)),
                "step {index} of the walk is not accepted on replay: {verdict:?}"
            );
        }
        live.into_state()
    }
}

/// The time the roots of these tests stamp on every line they write (a stopped clock: a line
/// appended twice is the same bytes).
pub const RECORDED_AT: Timestamp = Timestamp::from_millis(1_796_042_096_789);

/// The installation identity of the walk tasks.
pub fn installation_id() -> Identity {
    Identity::new(IdentityKind::Installation, INSTALLATION_ID).unwrap()
}

/// Creates the control root `dir/.valp` of installation `inst-1` over `storage`.
pub fn init_root_with(dir: &Path, storage: Arc<dyn Storage>) -> ControlRoot {
    ControlRoot::init(&dir.join(".valp"), installation_id(), storage)
        .unwrap()
        .with_clock(Arc::new(FixedClock::new(RECORDED_AT)))
}

/// Creates the control root `dir/.valp` of installation `inst-1` on the real file system.
pub fn init_root(dir: &Path) -> ControlRoot {
    init_root_with(dir, Arc::new(OsStorage))
}

/// Creates the task of `history` in `root` and appends its first `entries` steps, checking
/// that each is accepted at the right sequence number.
pub fn create_journal(root: &ControlRoot, history: &mut History, entries: usize) -> Journal {
    let mut journal = root.create_task(history.genesis()).unwrap();
    for index in 0..entries {
        append_step(&mut journal, history, index);
    }
    journal
}

/// Appends step `index` of `history` and checks that it is accepted as entry `index + 1`.
pub fn append_step(journal: &mut Journal, history: &mut History, index: usize) {
    let step = history.step(index);
    let appended = journal.append(&step.event, &step.evidence_set).unwrap();
    match appended {
        Appended::Accepted { seq, .. } => assert_eq!(seq, index as u64 + 1, "sequence number"),
        other => panic!("step {index} was not accepted: {other:?}"),
    }
}

/// An operator action on the walk task: `kind` (with the decision or delivery its kind needs,
/// allowing and delivered), decided at Leader epoch `epoch` against revision 3 by the local
/// operator.
pub fn action(action_id: &str, kind: ActionKind, epoch: i128) -> ActionRecord {
    ActionRecord {
        action_id: action_id.to_owned(),
        kind,
        principal_id: "user:local".to_owned(),
        leader_epoch: epoch,
        task_revision: 3,
        attempt_id: Some(format!("{TASK_ID}:wi-a:a1")),
        work_item_id: Some("wi-a".to_owned()),
        answers: (kind == ActionKind::ApprovalDecision).then(|| "toolu_01".to_owned()),
        payload_digest: valp_kernel::canonical::sha256_digest(action_id.as_bytes()),
        summary: format!("{} for wi-a", kind.as_str()),
        allow: (kind == ActionKind::ApprovalDecision).then_some(true),
        delivery: None,
    }
}

/// A `delivery` record `delivery_id` proving (as `outcome`) the delivery of `delivered`.
pub fn delivery(delivery_id: &str, delivered: &str, outcome: DeliveryOutcome) -> ActionRecord {
    let proof = valp_kernel::canonical::sha256_digest(b"pane read-back");
    ActionRecord {
        principal_id: "adapter:tmux".to_owned(),
        summary: format!("delivery of {delivered}: {}", outcome.as_str()),
        delivery: Some(Delivery {
            action_id: delivered.to_owned(),
            adapter: "tmux".to_owned(),
            outcome,
            proof: Some((format!("tmux-readback-{}", &proof[7..23]), proof)),
        }),
        ..action(delivery_id, ActionKind::Delivery, 1)
    }
}

/// Opens the walk task's operator-action journal in `root`.
pub fn open_actions(root: &ControlRoot, access: Access) -> Result<ActionJournal, StoreError> {
    ActionJournal::of_task(root, TASK_ID, access)
}

/// Opens the walk task of `root`.
pub fn open_task(root: &ControlRoot, access: Access) -> Result<Journal, StoreError> {
    root.open_task(TASK_ID, access)
}

/// The journal file of the walk task in `root`.
pub fn journal_path(root: &ControlRoot) -> PathBuf {
    root.layout()
        .task_dir(TASK_ID)
        .join(valp_store::journal::JOURNAL_FILE)
}

/// The journal lock file of the walk task in `root`.
pub fn lock_path(root: &ControlRoot) -> PathBuf {
    root.layout()
        .task_dir(TASK_ID)
        .join(valp_store::journal::LOCK_FILE)
}

/// Writes `journal` to the journal file at `path` with the head anchor of its last line, as a
/// journal holding those lines has after a clean append (or after a crash, for the lines
/// before a torn tail: the head never names bytes an append had not completed).
pub fn write_anchored(path: &Path, journal: &[u8], torn: &[u8]) {
    let head = valp_store::head::of_lines(journal).expect("the journal ends with a line");
    std::fs::write(
        valp_store::head::head_path(path),
        valp_kernel::canonical::Canonical::canonical_bytes(&head),
    )
    .unwrap();
    std::fs::write(path, [journal, torn].concat()).unwrap();
}

/// The byte ranges of the complete lines (each with its LF) of `bytes`; bytes after the last
/// LF are not a line.
pub fn line_ranges(bytes: &[u8]) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut start = 0;
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == b'\n' {
            ranges.push(start..index + 1);
            start = index + 1;
        }
    }
    ranges
}

/// The files in `root`'s `quarantine/`, sorted.
pub fn quarantine_files(root: &ControlRoot) -> Vec<PathBuf> {
    let dir = root.layout().quarantine_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    files
}

/// Checks what a writer that opened a chained file (journal or effect ledger) in `root` did
/// with the torn tail `torn` at byte `offset`: `warnings` say it was repaired, into the one file
/// in `quarantine/`, which holds exactly those bytes. Returns that file.
pub fn assert_repaired(
    root: &ControlRoot,
    warnings: &[Warning],
    offset: u64,
    torn: &[u8],
    what: &str,
) -> PathBuf {
    let quarantined = quarantine_files(root);
    assert_eq!(quarantined.len(), 1, "{what}: one quarantine file");
    assert_eq!(
        warnings,
        [Warning::TornTailRepaired {
            offset,
            len: torn.len() as u64,
            quarantined: quarantined[0].clone(),
        }],
        "{what}"
    );
    assert!(
        std::fs::read(&quarantined[0]).unwrap() == torn,
        "{what}: the quarantine copy holds exactly the cut bytes"
    );
    quarantined[0].clone()
}

/// Empties `root`'s `quarantine/`.
pub fn clear_quarantine(root: &ControlRoot) {
    for file in quarantine_files(root) {
        std::fs::remove_file(file).unwrap();
    }
}

/// The file, 1-based line and byte of a [`StoreError::Corrupt`]; panics on any other result.
pub fn corrupt_location<T: std::fmt::Debug>(result: Result<T, StoreError>) -> (PathBuf, u64, u64) {
    match result {
        Err(StoreError::Corrupt {
            path, line, byte, ..
        }) => (path, line, byte),
        other => panic!("expected VALP-E-KERNEL-STORE-CORRUPT, got {other:?}"),
    }
}

/// Test obligation `number` of the walk task: the `adapter_cancel:` text the kernel would raise
/// for attempt `task-1:item-<number>:a1` (effect ledgers do not check that the journal raised
/// it; `valp verify` does).
pub fn obligation(number: usize) -> String {
    format!(
        "adapter_cancel:{{\"attempt_id\":\"{TASK_ID}:item-{number}:a1\",\"dispatch_generation\":1,\
         \"dispatch_id\":\"{TASK_ID}:item-{number}:1\",\"task_id\":\"{TASK_ID}\",\
         \"work_item_id\":\"item-{number}\"}}\n"
    )
}

/// An outcome for test obligation `number` written by `writer`: fulfilled for even numbers
/// (a proof file named after both), blocked with a reason naming both for odd ones.
pub fn outcome(number: usize, writer: &str) -> Outcome {
    if number.is_multiple_of(2) {
        let proof_ref = format!("runtime/process/attempts/{writer}/observations/{number:06}.json");
        Outcome::Fulfilled {
            proof_digest: valp_kernel::canonical::sha256_digest(proof_ref.as_bytes()),
            proof_ref,
        }
    } else {
        Outcome::Blocked {
            reason: format!("{writer} could not cancel item {number}"),
        }
    }
}

/// The effect ledger file of the walk task in `root`.
pub fn effect_ledger_path(root: &ControlRoot) -> PathBuf {
    root.layout()
        .task_dir(TASK_ID)
        .join(valp_store::effects::EFFECT_LEDGER_FILE)
}

/// Opens the walk task's effect ledger.
pub fn open_effects(root: &ControlRoot, access: Access) -> Result<EffectLedger, StoreError> {
    EffectLedger::of_task(root, TASK_ID, access)
}

/// A small seeded generator (xorshift64*): every random choice of a test follows from its seed,
/// so a failure can be replayed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut state = self.0;
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        self.0 = state;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..bound` (0 when `bound` is 0).
    pub fn below(&mut self, bound: usize) -> usize {
        match u64::try_from(bound) {
            Ok(0) | Err(_) => 0,
            Ok(bound) => usize::try_from(self.next_u64() % bound).unwrap_or(0),
        }
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }
}
