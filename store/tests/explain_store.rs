//! The transition lister (`valp_kernel::explain`) against the real store: over random legal
//! histories, every listed transition is proposed through the task journal's append, and
//! exactly the allowed ones are accepted; every refused one is refused with the listed code
//! (and, for the Done gate, the listed reasons). Allowed candidates are proposed to a fork of
//! the journal (a copy of its task directory in a second control root), so every one of them is
//! tried from the same State.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::explain::{Guards, Judgement, Transition, explain};
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::io::OsStorage;
use valp_store::root::ControlRoot;
use valp_store::{Access, Appended, Journal, StoreError};

fn root_in(dir: &Path) -> ControlRoot {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage)).unwrap()
}

/// A copy of `journal`'s task directory in the control root `root` (replacing the previous
/// copy), opened for writing.
fn fork(journal: &Journal, root: &ControlRoot) -> Journal {
    let task = journal.live().body().task_id.value().to_owned();
    let target = root.layout().task_dir(&task);
    if target.exists() {
        std::fs::remove_dir_all(&target).unwrap();
    }
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(journal.dir()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), target.join(entry.file_name())).unwrap();
        }
    }
    root.open_task(&task, Access::Write).unwrap()
}

/// Proposes `transition` and checks the store answers as listed.
fn check(journal: &mut Journal, transition: &Transition, context: &str) {
    let answer = journal.append(&transition.event, &transition.evidence_set);
    match (&transition.judgement, answer) {
        (Judgement::Allowed { .. }, Ok(Appended::Accepted { record, .. })) => {
            let Judgement::Allowed {
                obligations,
                audit_facts,
                next_status,
            } = &transition.judgement
            else {
                unreachable!()
            };
            assert_eq!(&record.obligations, obligations, "{context}");
            assert_eq!(&record.audit_facts, audit_facts, "{context}");
            assert_eq!(journal.live().body().status.known(), Some(*next_status));
        }
        (Judgement::Refused { code, .. }, Ok(Appended::Rejected { error_code, .. })) => {
            assert_eq!(code, error_code.as_str(), "{context}");
        }
        (Judgement::Refused { code, reasons }, Err(StoreError::DoneGate { reasons: got, .. })) => {
            assert_eq!(code, "VALP-E-DONE-GATE", "{context}");
            assert_eq!(reasons, &got, "{context}");
        }
        (Judgement::Refused { code, .. }, Err(error @ StoreError::EpochFenced { .. })) => {
            assert_eq!(code, error.code().as_str(), "{context}");
        }
        (listed, answer) => panic!("{context}: listed {listed:?}, the store answered {answer:?}"),
    }
}

#[test]
fn every_listed_transition_gets_the_listed_answer_from_the_store() {
    let (mut states, mut checked, mut allowed, mut done_gate) = (0, 0, 0, 0);
    for seed in 1..=6_u64 {
        let temp = tempfile::tempdir().unwrap();
        let root = root_in(temp.path());
        let fork_root = root_in(&temp.path().join("fork"));
        let active_epoch = root.ledger_read_only().unwrap().live().state().active_epoch;
        let mut walk = Walk::new(WalkConfig {
            seed,
            work_items: 3,
            may_terminate: seed % 2 == 0,
        });
        let mut journal = root.create_task(walk.genesis()).unwrap();
        let guards = Guards {
            active_epoch: Some(active_epoch),
            ..Guards::default()
        };
        // Every transition is checked at each State; allowed ones only in the first 30 States
        // (each needs a fork), refused ones further on, until the walk reaches `recording`.
        for step in 0..120 {
            let listed = explain(journal.live(), &guards);
            states += 1;
            for transition in &listed {
                let context = format!(
                    "seed {seed} step {step}: {} on {}",
                    transition.kind.as_str(),
                    transition.target.describe()
                );
                checked += 1;
                if transition.is_allowed() {
                    if step >= 30 {
                        checked -= 1;
                        continue;
                    }
                    allowed += 1;
                    let mut forked = fork(&journal, &fork_root);
                    check(&mut forked, transition, &context);
                } else {
                    done_gate += usize::from(matches!(&transition.judgement,
                        Judgement::Refused { code, .. } if code == "VALP-E-DONE-GATE"));
                    let before = journal.len();
                    check(&mut journal, transition, &context);
                    assert_eq!(journal.len(), before, "{context}: a refusal wrote nothing");
                }
            }
            let Some(next) = walk.step() else { break };
            // The walk's own step is one of the allowed transitions of its kind.
            let kind = next.event.kind.known().unwrap();
            assert!(
                listed.iter().any(|t| t.kind == kind && t.is_allowed())
                    || kind == valp_kernel::EventKind::RecordingCompleted,
                "seed {seed} step {step}: the walk's {} is not listed as allowed",
                kind.as_str()
            );
            if kind == valp_kernel::EventKind::RecordingCompleted {
                break; // the store refuses Done without a frozen policy: the walk ends here
            }
            journal.append(&next.event, &next.evidence_set).unwrap();
        }
    }
    eprintln!(
        "explain vs store: {states} states, {checked} transitions checked, {allowed} allowed, \
         {done_gate} refused by the Done gate"
    );
    assert!(states > 100 && allowed > 100 && checked > 2000);
}
