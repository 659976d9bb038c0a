//! `LiveState::forget_history` and `forget_history_recalling`: a live state that keeps only the
//! lean idempotency index (with the digests, or asking a `Recall` for them) gives the same
//! answers as one that keeps the whole history, for accepted events, for duplicates (the
//! earlier acceptance, rebuilt or recalled exactly), for idempotency conflicts and in replay.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use valp_kernel::AcceptedEvent;
use valp_kernel::live::{LiveState, Recall, Verdict};
use valp_kernel::replay::{ReplayError, Replayer};
use valp_kernel::walk::{Walk, WalkConfig};

fn walk(seed: u64) -> Walk {
    Walk::new(WalkConfig {
        seed,
        work_items: 5,
        may_terminate: false,
    })
}

/// Recalls from the history a whole live state built (what a store reads back from its
/// journal).
struct FromHistory(Vec<AcceptedEvent>);

impl Recall for FromHistory {
    fn recall(&self, position: usize) -> Option<AcceptedEvent> {
        self.0.get(position).cloned()
    }
}

/// The two lean forms of `whole`'s clone: digests held, and digests recalled from the history
/// the walk of `seed` will build (`steps` events).
fn lean_forms(seed: u64, steps: usize, whole: &LiveState) -> [LiveState; 2] {
    let mut ahead = whole.clone();
    for step in walk(seed).take(steps) {
        assert!(matches!(
            ahead.apply(&step.event, &step.evidence_set),
            Verdict::Accepted(_)
        ));
    }
    let mut held = whole.clone();
    assert!(held.forget_history());
    let mut recalled = whole.clone();
    assert!(recalled.forget_history_recalling(Arc::new(FromHistory(ahead.history().to_vec()))));
    [held, recalled]
}

#[test]
fn a_lean_live_state_answers_as_the_whole_one() {
    for (seed, form) in [(1, 0), (2, 0), (3, 0), (1, 1), (2, 1), (3, 1)] {
        let mut walk = walk(seed);
        let mut whole = Replayer::from_genesis(walk.genesis()).unwrap().into_live();
        let [held, recalled] = lean_forms(seed, 300, &whole);
        let mut lean = if form == 0 { held } else { recalled };
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
    let start = Replayer::from_genesis(&genesis).unwrap().into_live();
    for lean in lean_forms(4, 40, &start) {
        let mut lean = lean;
        let mut whole = start.clone();
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
}

#[test]
fn an_event_that_cannot_be_recalled_is_refused_as_a_conflict() {
    let mut walk = walk(6);
    let mut lean = Replayer::from_genesis(walk.genesis()).unwrap().into_live();
    // Nothing can be read back (the journal changed under the verify).
    assert!(lean.forget_history_recalling(Arc::new(FromHistory(Vec::new()))));
    let steps: Vec<_> = walk.by_ref().take(20).collect();
    for step in &steps {
        assert!(matches!(
            lean.apply(&step.event, &step.evidence_set),
            Verdict::Accepted(_)
        ));
    }
    let again = &steps[3];
    let verdict = lean.apply(&again.event, &again.evidence_set);
    let Verdict::Rejected {
        error_code, prior, ..
    } = verdict
    else {
        panic!("{verdict:?}");
    };
    assert_eq!(error_code, valp_kernel::ErrorCode::IdempotencyConflict);
    let (result_id, digest) = prior.unwrap();
    assert_eq!(
        result_id.value(),
        format!("{}:accepted", again.event.event_id.value())
    );
    assert_eq!(digest, "");
}

/// `index_key_records` gives exactly `to_parts`'s key bytes, one record at a time, with the keys
/// both in the sorted run (read back from parts) and in the tail (indexed since), and
/// `parts_but_index` the rest of `to_parts`.
#[test]
fn the_key_records_are_the_parts_keys_one_at_a_time() {
    let mut walk = walk(7);
    let mut live = Replayer::from_genesis(walk.genesis()).unwrap().into_live();
    assert!(
        live.index_key_records().is_none(),
        "the whole history has no lean index"
    );
    for step in walk.by_ref().take(200) {
        assert!(matches!(
            live.apply(&step.event, &step.evidence_set),
            Verdict::Accepted(_)
        ));
    }
    assert!(live.forget_history());
    let mut live = LiveState::from_parts(live.to_parts().unwrap()).unwrap();
    for step in walk.take(150) {
        assert!(matches!(
            live.apply(&step.event, &step.evidence_set),
            Verdict::Accepted(_)
        ));
    }
    let parts = live.to_parts().unwrap();
    let streamed: Vec<u8> = live.index_key_records().unwrap().flatten().collect();
    assert_eq!(streamed.len(), 350 * valp_kernel::live::KEY_RECORD);
    assert_eq!(streamed, parts.index.keys);
    let mut rest = parts.clone();
    rest.index = valp_kernel::live::LeanParts::default();
    assert_eq!(live.parts_but_index(), rest);
}

#[test]
fn a_walk_that_forgets_its_history_takes_the_same_steps() {
    let mut whole = walk(17);
    let mut lean = walk(17);
    assert!(lean.forget_history());
    for _ in 0..600 {
        let (kept, forgot) = (whole.step().unwrap(), lean.step().unwrap());
        assert_eq!(kept.event, forgot.event);
        assert_eq!(kept.evidence_set, forgot.evidence_set);
    }
    assert_eq!(whole.live().state_digest(), lean.live().state_digest());
    assert_eq!(whole.live().history().len(), 600);
    assert!(lean.live().history().is_empty() && lean.live().lean_index_bytes().is_some());
}
