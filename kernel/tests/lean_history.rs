//! `LiveState::forget_history`: a live state that keeps only the lean idempotency index gives
//! the same answers as one that keeps the whole history, for accepted events, for duplicates
//! (the earlier acceptance, rebuilt exactly), for idempotency conflicts and in replay.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::live::Verdict;
use valp_kernel::replay::{ReplayError, Replayer};
use valp_kernel::walk::{Walk, WalkConfig};

fn walk(seed: u64) -> Walk {
    Walk::new(WalkConfig {
        seed,
        work_items: 5,
        may_terminate: false,
    })
}

#[test]
fn a_lean_live_state_answers_as_the_whole_one() {
    for seed in [1, 2, 3] {
        let mut walk = walk(seed);
        let mut whole = Replayer::from_genesis(walk.genesis()).unwrap().into_live();
        let mut lean = whole.clone();
        assert!(lean.forget_history());
        assert!(!lean.keeps_history() && whole.keeps_history());
        let steps: Vec<_> = walk.by_ref().take(300).collect();
        for step in &steps {
            let expected = whole.apply(&step.event, &step.evidence_set);
            assert!(matches!(expected, Verdict::Accepted(_)));
            assert_eq!(lean.apply(&step.event, &step.evidence_set), expected);
            assert_eq!(lean.state_digest(), whole.state_digest());
        }
        assert_eq!(lean.history(), []);
        assert_eq!(whole.history().len(), steps.len());
        let (mut duplicates, mut conflicts) = (0, 0);
        for step in &steps {
            // A duplicate: the earlier acceptance, with its result id and digest.
            let duplicate = whole.apply(&step.event, &step.evidence_set);
            duplicates += usize::from(matches!(duplicate, Verdict::NoOp { .. }));
            assert_eq!(lean.apply(&step.event, &step.evidence_set), duplicate);
            // The same id with another expected revision: an idempotency conflict naming the
            // prior (or an earlier check's refusal, the same for both).
            let mut other = step.event.clone();
            other.expected_revision += 1_000;
            let conflict = whole.apply(&other, &step.evidence_set);
            conflicts += usize::from(matches!(conflict, Verdict::Rejected { prior: Some(_), .. }));
            assert_eq!(lean.apply(&other, &step.evidence_set), conflict);
            assert_eq!(
                lean.preview(&step.event, &step.evidence_set),
                whole.preview(&step.event, &step.evidence_set)
            );
        }
        assert!(
            duplicates > 10 && conflicts > 10,
            "{duplicates} {conflicts}"
        );
        assert_eq!(lean.state_digest(), whole.state_digest());
    }
}

#[test]
fn a_lean_replay_refuses_a_recorded_duplicate_as_the_whole_one_does() {
    let mut walk = walk(4);
    let genesis = walk.genesis().clone();
    let entries: Vec<_> = walk
        .by_ref()
        .take(40)
        .map(valp_kernel::walk::WalkStep::into_compact)
        .collect();
    let mut whole = Replayer::from_genesis(&genesis).unwrap().into_live();
    let mut lean = whole.clone();
    assert!(lean.forget_history());
    for entry in &entries {
        assert_eq!(
            lean.apply_recorded(entry).unwrap(),
            whole.apply_recorded(entry).unwrap()
        );
    }
    let mut no_ops = 0;
    for again in &entries {
        let expected = whole.apply_recorded(again).unwrap_err();
        no_ops += usize::from(
            matches!(&expected, ReplayError::NotReproduced { verdict, .. } if verdict == "no_op"),
        );
        assert_eq!(lean.apply_recorded(again).unwrap_err(), expected);
    }
    assert!(no_ops > 5, "{no_ops}");
}
