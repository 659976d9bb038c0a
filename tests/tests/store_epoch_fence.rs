//! The store's epoch fence over a real control root: a task journal opened through
//! `ControlRoot` refuses what the kernel would accept once the installation ledger's active
//! epoch is another one, writes nothing, and logs `VALP-E-EPOCH-FENCED`; what the kernel
//! refuses or deduplicates is still answered by the kernel; epoch 0 fences nothing; history is
//! not re-judged on open; the handoff successor appends; the ledger is read incrementally, once
//! per batch, and a ledger that cannot be read fails the append closed.
//!
//! The Leader epochs come from the console's authority library (no tmux needed): the local
//! human operator is selected (epoch 1), then the role rotates to a tmux pane added to a real
//! observation (epoch 2), as `authority_schemas.rs` does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::{ErrorCode, Event, EventKind, Identity, IdentityKind};
use valp_runtime::authority::handoff::hand_over;
use valp_runtime::authority::{self, Approval, Confirmation};
use valp_runtime::clock::{Clock, FixedClock, Timestamp};
use valp_runtime::doctor::{Observation, ObserveOptions, observe};
use valp_store::io::OsStorage;
use valp_store::{Access, Appended, ControlRoot, Journal, StoreCode, StoreError};
use valp_tests::cli::valp_in;
use valp_tests::observations::{human_of, with_pane};
use valp_tests::schemas::{errors, validator};
use valp_tests::store::{History, TASK_ID, append_step, create_journal, installation_id};

const DAY_MS: i64 = 86_400_000;

/// A control root of installation `inst-1` (the walk tasks' installation), observed without
/// tmux.
struct Lab {
    temp: tempfile::TempDir,
    folder: PathBuf,
    clock: FixedClock,
    options: ObserveOptions,
}

impl Lab {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path().join(".valp");
        ControlRoot::init(&folder, installation_id(), Arc::new(OsStorage)).unwrap();
        Self {
            temp,
            folder,
            clock: FixedClock::new(Timestamp::from_millis(1_796_042_096_789)),
            options: ObserveOptions {
                tmux_binary: Some("/nonexistent/tmux".into()),
                ..ObserveOptions::only_sockets([])
            },
        }
    }

    /// The control root as a new process opens it (its own ledger handle for the fence).
    fn root(&self) -> ControlRoot {
        ControlRoot::open(&self.folder, Arc::new(OsStorage)).unwrap()
    }

    fn approval(&self, observation: &Observation) -> Approval {
        Approval {
            approved_by: authority::operator(observation).unwrap(),
            confirmation: Confirmation::Flag,
            at: self.clock.now(),
        }
    }

    fn active_epoch(&self) -> i128 {
        self.root()
            .ledger_read_only()
            .unwrap()
            .live()
            .state()
            .active_epoch
    }

    /// The first selection: the local human operator, epoch 1.
    fn select(&self) {
        let root = self.root();
        let mut ledger = root.ledger().unwrap();
        let observation = observe(&self.clock, &self.options);
        authority::record_observation(&root, &mut ledger, &observation).unwrap();
        let human = human_of(&observation).candidate_id.clone();
        authority::select(&root, &mut ledger, &human, &self.approval(&observation)).unwrap();
        assert_eq!(self.active_epoch(), 1);
    }

    /// A rotation to a tmux pane observed next to the operator: the active epoch is fenced.
    fn rotate(&self) {
        self.clock.advance(DAY_MS);
        let root = self.root();
        let mut ledger = root.ledger().unwrap();
        let before = ledger.live().state().active_epoch;
        let observation = with_pane(
            &observe(&self.clock, &self.options),
            "/tmp/valp-fence/tmux.sock",
        );
        authority::record_observation(&root, &mut ledger, &observation).unwrap();
        let pane = observation.candidates[1].candidate_id.clone();
        authority::rotate(&root, &mut ledger, &pane, &self.approval(&observation)).unwrap();
        assert_eq!(self.active_epoch(), before + 1);
    }

    /// `valp task handoff TASK --as SUCCESSOR`, through the library.
    fn hand_over(&self, task: &str, successor: &str) {
        let root = self.root();
        let mut ledger = root.ledger().unwrap();
        let observation = observe(&self.clock, &self.options);
        let handoff = hand_over(
            &root,
            &mut ledger,
            task,
            successor,
            &self.approval(&observation),
        )
        .unwrap();
        assert_eq!((handoff.from_epoch, handoff.to_epoch), (1, 2));
    }

    fn valp(&self, args: &[&str]) -> valp_tests::cli::Run {
        let root = self.folder.to_str().unwrap();
        let mut full = vec!["--root", root];
        full.extend_from_slice(args);
        valp_in(self.temp.path(), None, &full).unwrap()
    }

    fn ledger_path(&self) -> PathBuf {
        self.folder.join("installation/journal.jsonl")
    }
}

/// The lines of a task's `rejections.jsonl`.
fn rejections(journal: &Journal) -> Vec<serde_json::Value> {
    std::fs::read_to_string(journal.dir().join("rejections.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn fenced_message(path: &Path, task_epoch: i128, active_epoch: i128) -> String {
    format!(
        "VALP-E-EPOCH-FENCED: {}: the task is bound to Leader epoch {task_epoch}, the active \
         epoch is {active_epoch}: nothing written (hand the task over with `valp task handoff`)",
        path.display()
    )
}

/// A selection, a walk task of epoch 1 with `entries` entries, then a rotation to epoch 2. The
/// journal handle was opened (and its fence read the ledger) before the rotation.
fn fenced_task(lab: &Lab, history: &mut History, entries: usize) -> Journal {
    lab.select();
    let journal = create_journal(&lab.root(), history, entries);
    lab.rotate();
    journal
}

#[test]
fn an_append_at_the_active_epoch_is_accepted() {
    let lab = Lab::new();
    lab.select();
    let root = lab.root();
    let mut history = History::new(7, 3);
    let mut journal = create_journal(&root, &mut history, 12);
    assert_eq!(journal.live().body().leader_epoch, 1);
    assert_eq!(journal.len(), 12);
    let fence = journal
        .guard()
        .fence()
        .expect("a ControlRoot journal has a fence");
    assert_eq!(fence.active_epoch().unwrap(), 1);
    // A reopened handle appends too.
    drop(journal);
    journal = root.open_task(TASK_ID, Access::Write).unwrap();
    append_step(&mut journal, &mut history, 12);
    assert!(rejections(&journal).is_empty());
}

#[test]
fn after_a_rotation_the_fenced_task_refuses_what_the_kernel_would_accept() {
    let lab = Lab::new();
    let mut history = History::new(7, 3);
    let mut journal = fenced_task(&lab, &mut history, 8);
    let bytes = std::fs::read(journal.path()).unwrap();
    let step = history.step(8).clone();

    // The handle that appended at epoch 1 catches up with the ledger: the rotation is seen.
    let error = journal.append(&step.event, &step.evidence_set).unwrap_err();
    assert_eq!(error.code(), StoreCode::EpochFenced);
    assert_eq!(error.code().as_str(), "VALP-E-EPOCH-FENCED");
    assert!(
        matches!(
            error,
            StoreError::EpochFenced {
                task_epoch: 1,
                active_epoch: 2,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(error.to_string(), fenced_message(journal.path(), 1, 2));
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    assert_eq!(journal.len(), 8);
    assert_eq!(journal.live().revision(), 8);

    // A handle opened after the rotation refuses the same; a retry writes nothing either.
    let mut reopened = lab.root().open_task(TASK_ID, Access::Write).unwrap();
    let again = reopened
        .append(&step.event, &step.evidence_set)
        .unwrap_err();
    assert_eq!(again.to_string(), fenced_message(reopened.path(), 1, 2));
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);

    let logged = rejections(&journal);
    assert_eq!(logged.len(), 2);
    let schema = validator("store/rejection.schema.json");
    for line in &logged {
        assert_eq!(line["error_code"], "VALP-E-EPOCH-FENCED");
        assert_eq!(line["revision"], 8);
        assert_eq!(
            line["event"]["event_id"]["value"],
            step.event.event_id.value()
        );
        assert_eq!(
            line["reason"],
            "the task is bound to Leader epoch 1, the active epoch is 2 (hand the task over \
             with `valp task handoff`)"
        );
        assert_eq!(errors(&schema, line), Vec::<String>::new());
    }
}

#[test]
fn on_a_fenced_task_the_kernel_still_answers_duplicates_and_refusals() {
    let lab = Lab::new();
    let mut history = History::new(11, 2);
    let mut journal = fenced_task(&lab, &mut history, 6);
    let bytes = std::fs::read(journal.path()).unwrap();

    // A retry of an accepted event is a duplicate, not a fence refusal.
    let accepted = history.step(5).clone();
    let duplicate = journal
        .append(&accepted.event, &accepted.evidence_set)
        .unwrap();
    assert!(
        matches!(duplicate, Appended::Duplicate { .. }),
        "{duplicate:?}"
    );

    // A stale revision is the kernel's compare-and-swap failure.
    let mut stale = history.step(6).event.clone();
    stale.expected_revision = 3;
    let refused = journal
        .append(&stale, &history.step(6).evidence_set)
        .unwrap();
    let Appended::Rejected { error_code, reason } = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(error_code, ErrorCode::StateConflict);
    assert_eq!(
        reason,
        "stale expected_revision 3: the journal is at revision 6"
    );

    // An event carrying the active epoch is refused by the kernel itself: the task is bound to
    // epoch 1.
    let mut moved = history.step(6).event.clone();
    moved.leader_epoch = 2;
    let refused = journal
        .append(&moved, &history.step(6).evidence_set)
        .unwrap();
    assert!(
        matches!(
            refused,
            Appended::Rejected {
                error_code: ErrorCode::StateConflict,
                ..
            }
        ),
        "{refused:?}"
    );

    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    let codes: Vec<String> = rejections(&journal)
        .iter()
        .map(|line| line["error_code"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes, ["VALP-E-STATE-CONFLICT", "VALP-E-STATE-CONFLICT"]);
}

#[test]
fn active_epoch_zero_fences_nothing() {
    let lab = Lab::new();
    assert_eq!(lab.active_epoch(), 0);
    let root = lab.root();
    let mut history = History::new(3, 4);
    // The walk task is bound to epoch 1, which no Leader holds yet: no fence.
    let journal = create_journal(&root, &mut history, 20);
    assert_eq!(journal.live().body().leader_epoch, 1);
    assert_eq!(journal.guard().fence().unwrap().active_epoch().unwrap(), 0);
    assert!(rejections(&journal).is_empty());
}

#[test]
fn the_fenced_journal_still_opens_and_verifies() {
    let lab = Lab::new();
    let mut history = History::new(5, 3);
    let journal = fenced_task(&lab, &mut history, 15);
    let root = lab.root();
    for access in [Access::ReadOnly, Access::Write] {
        let opened = root.open_task(TASK_ID, access).unwrap();
        assert_eq!(opened.len(), 15);
        assert_eq!(opened.live().state_digest(), journal.live().state_digest());
    }
    let verified = lab.valp(&["verify"]);
    assert_eq!(
        verified.code,
        Some(0),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    assert!(
        verified
            .stdout
            .ends_with("verify: 2 journals ok, 0 problems\n"),
        "{}",
        verified.stdout
    );
}

#[test]
fn the_handoff_successor_at_the_active_epoch_accepts_appends() {
    let lab = Lab::new();
    let mut history = History::new(9, 4);
    let mut predecessor = fenced_task(&lab, &mut history, 10);
    lab.hand_over(TASK_ID, "task-1-e2");

    let root = lab.root();
    let mut successor = root.open_task("task-1-e2", Access::Write).unwrap();
    assert_eq!(successor.live().body().leader_epoch, 2);
    let event = Event::new(
        Identity::new(IdentityKind::Event, "successor-routing").unwrap(),
        installation_id(),
        2,
        Identity::new(IdentityKind::Task, "task-1-e2").unwrap(),
        EventKind::RoutingValidationStarted,
        0,
    );
    let appended = successor.append(&event, &[]).unwrap();
    assert!(
        matches!(appended, Appended::Accepted { seq: 1, .. }),
        "{appended:?}"
    );

    // The predecessor stays fenced.
    let step = history.step(10).clone();
    let error = predecessor
        .append(&step.event, &step.evidence_set)
        .unwrap_err();
    assert_eq!(error.code(), StoreCode::EpochFenced, "{error}");
}

#[test]
fn the_ledger_is_read_incrementally_and_an_unreadable_one_fails_closed() {
    let lab = Lab::new();
    lab.select();
    let root = lab.root();
    let mut history = History::new(13, 2);
    let mut journal = create_journal(&root, &mut history, 4);

    // Damage a byte inside the ledger's first entry, keeping the line's length. The handle that
    // already verified it reads only what follows, so it goes on appending ...
    let ledger = lab.ledger_path();
    let original = std::fs::read(&ledger).unwrap();
    let mut damaged = original.clone();
    let first_entry = damaged.iter().position(|&byte| byte == b'\n').unwrap() + 1;
    let target = first_entry
        + damaged[first_entry..]
            .windows(b"installation_initialized".len())
            .position(|window| window == b"installation_initialized")
            .unwrap();
    damaged[target] = b'X';
    std::fs::write(&ledger, &damaged).unwrap();
    append_step(&mut journal, &mut history, 4);

    // ... while a new process, which must verify the ledger from its start, fails closed.
    let bytes = std::fs::read(journal.path()).unwrap();
    let mut fresh = lab.root().open_task(TASK_ID, Access::Write).unwrap();
    let step = history.step(5).clone();
    let error = fresh.append(&step.event, &step.evidence_set).unwrap_err();
    assert_eq!(error.code(), StoreCode::Corrupt, "{error}");
    assert!(
        error.to_string().contains(&ledger.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);

    // A missing ledger fails closed too, naming the file.
    std::fs::remove_file(&ledger).unwrap();
    let mut fresh = lab.root().open_task(TASK_ID, Access::Write).unwrap();
    let error = fresh.append(&step.event, &step.evidence_set).unwrap_err();
    assert_eq!(error.code(), StoreCode::Io, "{error}");
    assert!(
        error.to_string().contains(&ledger.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    assert!(rejections(&journal).is_empty());

    // With the ledger back, the task at the active epoch appends again.
    std::fs::write(&ledger, &original).unwrap();
    append_step(&mut fresh, &mut history, 5);
}

#[test]
fn a_pipelined_append_to_a_fenced_task_acknowledges_nothing_and_returns_the_fence() {
    let lab = Lab::new();
    let mut history = History::new(9, 3);
    let mut journal = fenced_task(&lab, &mut history, 5);
    let bytes = std::fs::read(journal.path()).unwrap();
    let proposals = history.proposals(5..12);
    let mut acknowledged = Vec::new();
    let error = journal
        .append_pipelined(proposals, 3, |answers| acknowledged.push(answers))
        .unwrap_err();
    assert_eq!(error.code(), StoreCode::EpochFenced);
    assert_eq!(error.to_string(), fenced_message(journal.path(), 1, 2));
    assert!(acknowledged.is_empty(), "{acknowledged:?}");
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    assert_eq!(journal.len(), 5);
    // The refusal is logged once, for the first proposal; the run stopped there.
    let logged = rejections(&journal);
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0]["error_code"], "VALP-E-EPOCH-FENCED");
    assert_eq!(
        logged[0]["event"]["event_id"]["value"],
        history.step(5).event.event_id.value()
    );
    // The handle is not poisoned: nothing was written; it refuses again for the fence alone.
    let step = history.step(5).clone();
    let again = journal.append(&step.event, &step.evidence_set).unwrap_err();
    assert_eq!(again.to_string(), fenced_message(journal.path(), 1, 2));
}

#[test]
fn a_batch_reads_the_ledger_once_when_it_starts() {
    let lab = Lab::new();
    lab.select();
    let root = lab.root();
    let mut history = History::new(13, 2);
    let mut journal = create_journal(&root, &mut history, 4);
    let steps: Vec<_> = (4..8).map(|index| history.step(index).clone()).collect();

    // The ledger disappears while the batch is proposed (after its first proposal): the batch
    // was judged against the epoch read when it started, so all of it is accepted ...
    let ledger = lab.ledger_path();
    let original = std::fs::read(&ledger).unwrap();
    let answers = journal
        .append_batch(steps.iter().enumerate().map(|(index, step)| {
            if index == 1 {
                std::fs::remove_file(&ledger).unwrap();
            }
            (&step.event, step.evidence_set.as_slice())
        }))
        .unwrap();
    let seqs: Vec<u64> = answers
        .iter()
        .map(|answer| match answer {
            Appended::Accepted { seq, .. } => *seq,
            other => panic!("not accepted: {other:?}"),
        })
        .collect();
    assert_eq!(seqs, [5, 6, 7, 8]);

    // ... and the next append reads it again: missing, it fails closed.
    let bytes = std::fs::read(journal.path()).unwrap();
    let step = history.step(8).clone();
    let error = journal.append(&step.event, &step.evidence_set).unwrap_err();
    assert_eq!(error.code(), StoreCode::Io, "{error}");
    assert!(
        error.to_string().contains(&ledger.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    std::fs::write(&ledger, &original).unwrap();
    append_step(&mut journal, &mut history, 8);
}

#[test]
fn demo_after_a_rotation_binds_its_task_to_the_active_epoch() {
    let lab = Lab::new();
    let first = lab.valp(&["demo", "--entries", "20"]);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    lab.select();
    // Run again after a selection: with --console it keeps the existing task and goes on to
    // the console, which needs a terminal this test does not have.
    let again = lab.valp(&["demo", "--entries", "20", "--console"]);
    assert!(
        again.stdout.contains("demo task demo-1 is already there"),
        "{}",
        again.stdout
    );
    assert!(
        again.stderr.contains("needs a terminal"),
        "{}",
        again.stderr
    );
    let selected = lab.valp(&["demo", "--task", "demo-2", "--entries", "20"]);
    assert_eq!(selected.code, Some(0), "{}", selected.stderr);
    lab.rotate();
    let rotated = lab.valp(&["demo", "--task", "demo-3", "--entries", "20"]);
    assert_eq!(rotated.code, Some(0), "{}", rotated.stderr);
    let root = lab.root();
    let epoch = |task: &str| {
        root.open_task(task, Access::ReadOnly)
            .unwrap()
            .live()
            .body()
            .leader_epoch
    };
    assert_eq!(
        (epoch("demo-1"), epoch("demo-2"), epoch("demo-3")),
        (1, 1, 2)
    );
}

/// The transition lister (`valp_kernel::explain`, the state machine view's source) models the
/// fence: on a fenced task every transition the kernel would accept is listed as refused with
/// `VALP-E-EPOCH-FENCED`, and proposing each listed transition through the store gets exactly
/// the listed code (the fence's, or the kernel's own).
#[test]
fn the_lister_names_the_fence_for_every_transition_the_kernel_would_accept() {
    use valp_kernel::explain::{EPOCH_FENCED_CODE, Guards, Judgement, explain};
    let lab = Lab::new();
    let mut history = History::new(7, 3);
    let mut journal = fenced_task(&lab, &mut history, 8);
    let guards = Guards {
        active_epoch: Some(lab.active_epoch()),
        frozen_policy: journal.guard().done().frozen_policy(),
        ..Guards::default()
    };
    let listed = explain(journal.live(), &guards);
    let bytes = std::fs::read(journal.path()).unwrap();
    let mut fenced = 0;
    for transition in &listed {
        let Judgement::Refused { code, reasons } = &transition.judgement else {
            panic!("{:?} is allowed on a fenced task", transition.kind);
        };
        let answer = journal.append(&transition.event, &transition.evidence_set);
        match answer {
            Err(error @ StoreError::EpochFenced { .. }) => {
                fenced += 1;
                assert_eq!(code, EPOCH_FENCED_CODE, "{:?}", transition.kind);
                assert_eq!(error.code().as_str(), EPOCH_FENCED_CODE);
                assert_eq!(
                    reasons,
                    &["the task is bound to Leader epoch 1, the active epoch is 2".to_owned()]
                );
            }
            Ok(Appended::Rejected { error_code, .. }) => {
                assert_eq!(code, error_code.as_str(), "{:?}", transition.kind);
            }
            other => panic!(
                "{:?}: listed {code}, the store answered {other:?}",
                transition.kind
            ),
        }
    }
    assert_eq!(std::fs::read(journal.path()).unwrap(), bytes);
    assert!(
        fenced > 5 && fenced < listed.len(),
        "{fenced} of {}",
        listed.len()
    );
}

#[test]
fn an_operator_action_at_a_fenced_epoch_is_refused_with_the_fence_error() {
    use valp_store::actions::{ActionAppended, ActionKind};
    use valp_tests::store::{action, open_actions};

    let lab = Lab::new();
    let mut history = History::new(7, 3);
    lab.select();
    drop(create_journal(&lab.root(), &mut history, 4));
    let mut actions = open_actions(&lab.root(), Access::Write).unwrap();
    assert!(matches!(
        actions
            .append(&action("msg-1", ActionKind::Message, 1))
            .unwrap(),
        ActionAppended::Recorded { .. }
    ));
    let path = actions.path().to_owned();
    let bytes = std::fs::read(&path).unwrap();

    // The Leader rotates to epoch 2: the handle opened at epoch 1 catches up with the ledger
    // and refuses, with the journals' fence error, and writes nothing.
    lab.rotate();
    let error = actions
        .append(&action("msg-2", ActionKind::Message, 1))
        .unwrap_err();
    assert_eq!(error.code(), StoreCode::EpochFenced);
    assert_eq!(error.to_string(), fenced_message(&path, 1, 2));
    // A record claiming the new epoch on the task of epoch 1 is not the task's.
    assert_eq!(
        open_actions(&lab.root(), Access::Write)
            .unwrap()
            .append(&action("msg-3", ActionKind::Message, 2))
            .unwrap_err()
            .to_string(),
        format!(
            "{}: the action names Leader epoch 2, the task is bound to epoch 1",
            path.display()
        )
    );
    assert!(std::fs::read(&path).unwrap() == bytes, "nothing written");
    // Opening does not re-judge history.
    assert_eq!(
        open_actions(&lab.root(), Access::ReadOnly).unwrap().len(),
        1
    );
}
