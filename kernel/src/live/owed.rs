//! Applying a proposal now and computing its digests later: the two SHA-256 passes over the next
//! State body (its result digest and its State digest, the protocol's floor) are a chain from
//! one accepted event to the next, but no verdict depends on them, so a writer may run them
//! elsewhere (another thread) while the next proposals are judged.
//!
//! [`LiveState::apply_owing`] judges a proposal exactly as [`LiveState::apply`] and commits an
//! acceptance, but leaves its result digest **owed**: the [`Verdict`]'s record (and the history
//! record the idempotency index holds) carry a placeholder, and a [`DigestCheck`] holds the result
//! digest's preimage and what the event changed in the State body's encoded tail (~1-2 KB, not
//! the ~8 KB tail). A [`DigestRun`], started from the State before the first owed event
//! ([`LiveState::digest_run`]) and given the checks **in order**, computes each result digest
//! (writing it into the event's record), extends the history's running hash with the event's
//! history record and computes the next State digest: exactly what `apply` computes inline.
//!
//! **Contract.** While digests are owed, the live state's running history hash (so
//! [`LiveState::state_digest`] and [`LiveState::to_parts`]' midstate) and the owed events'
//! result digests in its history are not the real ones; verdicts are (they depend on neither),
//! except a duplicate or an idempotency conflict whose earlier acceptance is owed: for that one
//! `apply_owing` changes nothing and answers [`Owing::Unsettled`], to be applied again once the
//! earlier digests are paid. Paying: [`LiveState::pay_results`] with the result digests the run
//! computed (at any time, for any owed events), and [`LiveState::pay_history`] with the run that
//! reached the live state's revision (then nothing is owed); a State taken apart while owing is
//! paid the same way ([`LiveParts::pay`]). Pure: no threads here; running the digests on another
//! thread is the caller's choice.

use super::deferred::PRIOR_PLACEHOLDER;
use super::midstate::Midstate;
use super::{DigestCheck, Kept, LiveParts, LiveState, Verdict};
use crate::canonical::digest_text;
use crate::history::HistoryView;
use crate::live::AcceptedRecord;
use crate::model::{AcceptedEvent, Event, Evidence, Identity};
use crate::reduce::digests::{TailCopy, hash_history_entry, state_digest_of_tail};

/// What [`LiveState::apply_owing`] made of a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owing {
    /// Judged as `apply` judges it; when accepted, its result digest is owed (the record holds a
    /// placeholder) and the check was filled.
    Judged(Verdict),
    /// A duplicate or idempotency conflict of an event whose result digest is still owed:
    /// nothing changed; pay what is owed and apply it again.
    Unsettled,
}

/// Computes owed digests in order, carrying the State digest, the encoded tail and the
/// history's running hash from one accepted event to the next.
#[derive(Debug, Clone)]
pub struct DigestRun {
    /// The State digest before the next check's event.
    prior: String,
    /// The State body's encoded tail before the next check's event.
    tail: TailCopy,
    /// The history's running hash before the next check's event.
    history: Midstate,
    /// History records hashed into `history`.
    len: usize,
    /// Reused encoding buffer.
    scratch: Vec<u8>,
}

impl DigestRun {
    /// The State digest the run has reached.
    pub fn state_digest(&self) -> &str {
        &self.prior
    }

    /// How many accepted events the history holds at the run's point (its revision, for a
    /// history built by the kernel).
    pub fn history_len(&self) -> usize {
        self.len
    }

    /// Computes the owed digests of the accepted event `event_id`, whose `check` and `record`
    /// [`LiveState::apply_owing`] filled, writing its result digest into `record` and returning
    /// it raw (for [`LiveState::pay_results`]). `None`, with nothing changed, when the check is
    /// not filled or not that of the run's next event (checks must come in order); a check the
    /// kernel filled always gives its digest then.
    pub fn run(
        &mut self,
        check: &DigestCheck,
        event_id: &Identity,
        record: &mut AcceptedRecord,
    ) -> Option<[u8; 32]> {
        if !check.filled || check.index != self.len {
            return None;
        }
        self.tail.take_changes(&check.changes);
        let result = check.result_digest(&self.prior, &self.tail)?;
        // The history record, as the inline path pushes it.
        let entry = AcceptedEvent {
            event_id: event_id.clone(),
            result_id: record.result_id.clone(),
            input_digest: std::mem::take(&mut record.input_digest),
            result_digest: digest_text(&result),
        };
        hash_history_entry(&mut self.history, &entry, self.len == 0, &mut self.scratch);
        self.len += 1;
        self.prior = state_digest_of_tail(&self.history, self.tail.bytes());
        record.input_digest = entry.input_digest;
        record.result_digest = entry.result_digest;
        Some(result)
    }
}

impl LiveState {
    /// A run to compute the digests of the events applied from this State on with
    /// [`apply_owing`](Self::apply_owing); costs one State digest and a copy of the encoded
    /// body. The State must owe nothing (its history hash is the real one).
    pub fn digest_run(&self) -> DigestRun {
        DigestRun {
            prior: self.state_digest(),
            tail: TailCopy::new(&self.encoding),
            history: self.history.prefix.clone(),
            len: self.history.len(),
            scratch: Vec::with_capacity(512),
        }
    }

    /// [`apply`](Self::apply) leaving an acceptance's result and State digests to a
    /// [`DigestRun`] (see the module's contract): `check` is filled when the event is accepted.
    pub fn apply_owing(
        &mut self,
        event: &Event,
        evidence_set: &[Evidence],
        check: &mut DigestCheck,
    ) -> Owing {
        check.filled = false;
        check.index = self.history.len();
        let verdict = self.apply_checking(
            event,
            evidence_set,
            None,
            Some((&mut *check, PRIOR_PLACEHOLDER)),
        );
        // Only an earlier acceptance's digest can be the placeholder (a real digest never is),
        // and a duplicate or conflict changed nothing.
        let owed_prior = match &verdict {
            Verdict::Accepted(_) => {
                check.filled = true;
                false
            }
            Verdict::NoOp {
                prior_result_digest,
                ..
            } => prior_result_digest == PRIOR_PLACEHOLDER,
            Verdict::Rejected { prior, .. } => prior
                .as_ref()
                .is_some_and(|(_, digest)| digest == PRIOR_PLACEHOLDER),
        };
        if owed_prior {
            Owing::Unsettled
        } else {
            Owing::Judged(verdict)
        }
    }

    /// Puts into the history the result digests a [`DigestRun`] computed for the accepted
    /// events from history position `first` on (0: the first accepted event), in order.
    pub fn pay_results(&mut self, first: usize, results: &[[u8; 32]]) {
        match &mut self.history.kept {
            Kept::Whole { entries, .. } => {
                for (entry, result) in entries.iter_mut().skip(first).zip(results) {
                    entry.result_digest = digest_text(result);
                }
            }
            Kept::Lean(lean) => {
                for (position, result) in (first..).zip(results) {
                    lean.set_result_digest(position, result);
                }
            }
        }
    }

    /// Takes the history's running hash from `run`, which reached this State's revision: then
    /// nothing is owed once [`pay_results`](Self::pay_results) paid every owed result digest.
    /// `false`, with nothing changed, when the run is at another point of the history.
    pub fn pay_history(&mut self, run: &DigestRun) -> bool {
        if run.len != self.history.len() {
            return false;
        }
        self.history.prefix.clone_from(&run.history);
        true
    }
}

impl LiveParts {
    /// [`LiveState::pay_results`] and [`LiveState::pay_history`] for a State taken apart while
    /// owing (`run` reached its revision); `false`, with nothing changed, when it did not.
    pub fn pay(&mut self, run: &DigestRun, first: usize, results: &[[u8; 32]]) -> bool {
        if u64::try_from(run.len).ok() != Some(self.history_len) {
            return false;
        }
        self.midstate.clone_from(&run.history);
        // Held digests: per event its input digest, then its result digest (none when recalled).
        let records = self.index.digests.chunks_exact_mut(64).skip(first);
        for (record, result) in records.zip(results) {
            record[32..].copy_from_slice(result);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::walk::{Walk, WalkConfig};

    /// A walk that never ends the task, and its genesis State twice: one to apply inline, one
    /// to apply owing.
    fn walk_and_states(seed: u64, work_items: usize) -> (Walk, LiveState, LiveState) {
        let walk = Walk::new(WalkConfig {
            seed,
            work_items,
            may_terminate: false,
        });
        let inline = LiveState::new(walk.genesis().state.clone());
        let owing = inline.clone();
        (walk, inline, owing)
    }

    /// Applies `steps` inline and owing (each must be accepted), running each owed entry's
    /// digests in order; returns the digests to pay back.
    fn accept_both(
        steps: &[crate::walk::WalkStep],
        inline: &mut LiveState,
        owing: &mut LiveState,
        run: &mut DigestRun,
        check: &mut DigestCheck,
    ) -> Vec<[u8; 32]> {
        let mut results = Vec::new();
        for step in steps {
            inline.apply(&step.event, &step.evidence_set);
            let Owing::Judged(Verdict::Accepted(mut record)) =
                owing.apply_owing(&step.event, &step.evidence_set, check)
            else {
                panic!("not accepted");
            };
            results.push(run.run(check, &step.event.event_id, &mut record).unwrap());
        }
        results
    }

    /// Applies `steps` of a walk over `work_items` items inline and owing (running the owed
    /// digests in order as they come), checking the records match; returns both States.
    fn both_ways(work_items: usize, steps: usize, lean: bool) -> (LiveState, LiveState) {
        let (mut walk, mut inline, mut owing) = walk_and_states(3, work_items);
        if lean {
            assert!(inline.forget_history() && owing.forget_history());
        }
        let mut run = owing.digest_run();
        let mut check = DigestCheck::default();
        let mut results = Vec::new();
        for step in walk.by_ref().take(steps) {
            let expected = inline.apply(&step.event, &step.evidence_set);
            let Owing::Judged(Verdict::Accepted(mut record)) =
                owing.apply_owing(&step.event, &step.evidence_set, &mut check)
            else {
                panic!("not accepted");
            };
            assert_eq!(record.result_digest, PRIOR_PLACEHOLDER);
            results.push(run.run(&check, &step.event.event_id, &mut record).unwrap());
            assert_eq!(Verdict::Accepted(record), expected);
            assert_eq!(run.state_digest(), inline.state_digest());
            // A check is run once, in order.
            assert_eq!(
                run.run(&check, &step.event.event_id, &mut expected_record()),
                None
            );
        }
        owing.pay_results(0, &results);
        assert!(owing.pay_history(&run));
        (inline, owing)
    }

    fn expected_record() -> AcceptedRecord {
        AcceptedRecord {
            result_id: Identity::new(crate::model::IdentityKind::Result, "x:accepted").unwrap(),
            input_digest: String::new(),
            result_digest: String::new(),
            obligations: Vec::new(),
            audit_facts: Vec::new(),
        }
    }

    #[test]
    fn owed_digests_run_in_order_are_what_apply_computes() {
        for (work_items, lean) in [(0, false), (3, true), (20, false), (20, true)] {
            let (inline, owing) = both_ways(work_items, 120, lean);
            assert_eq!(owing.state_digest(), inline.state_digest());
            assert_eq!(owing.history(), inline.history());
            assert_eq!(owing.to_parts(), inline.to_parts());
        }
    }

    #[test]
    fn a_duplicate_of_an_owed_acceptance_is_unsettled_until_paid() {
        let (mut walk, mut inline, mut owing) = walk_and_states(5, 20);
        let mut run = owing.digest_run();
        let mut check = DigestCheck::default();
        let steps: Vec<_> = walk.by_ref().take(3).collect();
        let results = accept_both(&steps, &mut inline, &mut owing, &mut run, &mut check);
        // The same event again, and its id with other content.
        let duplicate = &steps[1];
        let mut conflict = steps[2].event.clone();
        conflict.event_id = steps[1].event.event_id.clone();
        let before = owing.clone().to_parts();
        assert_eq!(
            owing.apply_owing(&duplicate.event, &duplicate.evidence_set, &mut check),
            Owing::Unsettled
        );
        assert_eq!(
            owing.apply_owing(&conflict, &[], &mut check),
            Owing::Unsettled
        );
        assert!(!check.filled);
        assert_eq!(owing.to_parts(), before);
        // Paid: answered as `apply` answers, the State unchanged.
        owing.pay_results(0, &results);
        assert!(owing.pay_history(&run));
        for (event, evidence_set) in [
            (&duplicate.event, duplicate.evidence_set.as_slice()),
            (&conflict, &[][..]),
        ] {
            let Owing::Judged(verdict) = owing.apply_owing(event, evidence_set, &mut check) else {
                panic!("still unsettled");
            };
            assert_eq!(verdict, inline.apply(event, evidence_set));
        }
        assert_eq!(owing.state_digest(), inline.state_digest());
        assert_eq!(owing.to_parts(), inline.to_parts());
    }

    #[test]
    fn a_state_taken_apart_while_owing_is_paid_like_the_state() {
        let (mut walk, mut inline, mut owing) = walk_and_states(9, 20);
        assert!(inline.forget_history() && owing.forget_history());
        let mut run = owing.digest_run();
        let start = run.clone();
        let mut check = DigestCheck::default();
        let steps: Vec<_> = walk.by_ref().take(40).collect();
        let results = accept_both(&steps, &mut inline, &mut owing, &mut run, &mut check);
        // The first 25 already paid into the State before it was taken apart.
        owing.pay_results(0, &results[..25]);
        let mut parts = owing.to_parts().unwrap();
        assert_ne!(Some(&parts), inline.to_parts().as_ref());
        // A run at another point of the history is refused.
        assert!(!parts.pay(&start, 25, &results[25..]));
        assert!(!owing.clone().pay_history(&start));
        assert!(parts.pay(&run, 25, &results[25..]));
        assert_eq!(Some(parts), inline.to_parts());
    }
}
