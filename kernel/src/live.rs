//! A task State kept in memory and advanced one event at a time in O(1) per event.
//!
//! The reference kernel re-encodes and re-hashes the whole accepted-event history on every
//! `reduce` (the prior State's digest is part of every result digest), which makes replay
//! quadratic. [`LiveState`] keeps three things next to the State instead:
//!
//! - a SHA-256 midstate over `{"accepted_events":[e1,…,en` — the canonical State starts with its
//!   history, which only grows, so the State digest is that midstate plus the short tail;
//! - an index from event id to history entry, for idempotency (a lean one, without the history,
//!   after [`LiveState::forget_history`]: see [`lean`]);
//! - whether the history is well formed, updated as entries are appended.
//!
//! [`LiveState::apply`] runs exactly the checks and rules of [`reduce`](crate::reduce()) (they
//! share the code) and gives the same Result, minus the copy of the State.

mod deferred;
mod lean;
pub(crate) mod midstate;
mod owed;
mod parts;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::canonical::Canonical;
use crate::decode::InputPrefix;
use crate::json::write::Fields;

use crate::history::{HistoryView, entry_is_well_formed};
use crate::model::{
    Accepted, AcceptedEvent, ErrorCode, Event, Evidence, Identity, IdentityKind, Int, NoOp,
    Outcome, Rejected, State, StateBody, Variant,
};
use crate::reduce::digests::{
    BodyEncoding, hash_history_entry, history_hash, result_digest, state_digest_from_parts,
};
use crate::reduce::validity::{work_items_are_valid, work_items_still_valid};
use crate::reduce::{Decision, commit, evaluate};

pub use deferred::{DigestChain, DigestCheck};
use lean::LeanIndex;
pub use lean::{KeyRecords, Recall};
pub use midstate::{Midstate, MidstateError};
pub use owed::{DigestRun, Owing};
pub use parts::{KEY_RECORD, LeanParts, LiveParts, PartsError};

/// What applying one event to a [`LiveState`] did: the protocol Result without its State (the
/// State is the `LiveState` itself, advanced only when accepted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted; the live state advanced by one revision.
    Accepted(AcceptedRecord),
    /// A duplicate of an accepted event; nothing changed.
    NoOp {
        /// Digest of the input.
        input_digest: String,
        /// The earlier acceptance.
        prior_result_id: Identity,
        /// Its result digest.
        prior_result_digest: String,
    },
    /// Refused; nothing changed.
    Rejected {
        /// Digest of the input.
        input_digest: String,
        /// Why.
        error_code: ErrorCode,
        /// For an idempotency conflict, the earlier acceptance and its digest.
        prior: Option<(Identity, String)>,
    },
}

/// An accepted Result without its State.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedRecord {
    /// `<event_id>:accepted`.
    pub result_id: Identity,
    /// Digest of the input.
    pub input_digest: String,
    /// Digest of the accepted Result.
    pub result_digest: String,
    /// Obligations emitted.
    pub obligations: Vec<String>,
    /// Audit facts, starting with `accepted:event:<id>`.
    pub audit_facts: Vec<String>,
}

impl Canonical for AcceptedRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("audit_facts", &self.audit_facts);
        fields.str("input_digest", &self.input_digest);
        fields.strs("obligations", &self.obligations);
        fields.str("result_digest", &self.result_digest);
        fields.canonical("result_id", &self.result_id);
        fields.end();
    }
}

impl Verdict {
    /// The error code, if rejected.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Rejected { error_code, .. } => Some(*error_code),
            _ => None,
        }
    }

    /// The full protocol Result, given the State that goes with it (the next State when
    /// accepted, the unchanged State otherwise).
    pub fn into_outcome<S>(self, state: S) -> Outcome<S> {
        match self {
            Self::Accepted(record) => Outcome::Accepted(Accepted {
                result_id: record.result_id,
                state,
                input_digest: record.input_digest,
                result_digest: record.result_digest,
                obligations: record.obligations,
                audit_facts: record.audit_facts,
            }),
            Self::NoOp {
                input_digest,
                prior_result_id,
                prior_result_digest,
            } => Outcome::NoOp(NoOp {
                state,
                input_digest,
                prior_result_id,
                prior_result_digest,
            }),
            Self::Rejected {
                input_digest,
                error_code,
                prior,
            } => {
                let (prior_result_id, prior_result_digest) = prior.unzip();
                Outcome::Rejected(Rejected {
                    state,
                    input_digest,
                    error_code,
                    prior_result_id,
                    prior_result_digest,
                })
            }
        }
    }
}

/// The accepted-event history with the indexes the reducer needs.
#[derive(Clone)]
struct HistoryIndex {
    kept: Kept,
    well_formed: bool,
    /// SHA-256 fed with `{"accepted_events":[` and the entries joined by commas.
    prefix: Midstate,
}

/// What a [`HistoryIndex`] keeps of its entries.
#[derive(Clone)]
enum Kept {
    /// Every entry, indexed by event id and result id.
    Whole {
        entries: Vec<AcceptedEvent>,
        by_event_id: BTreeMap<Identity, usize>,
        result_ids: BTreeSet<Identity>,
    },
    /// Only what idempotency needs ([`lean`]).
    Lean(LeanIndex),
}

impl HistoryIndex {
    fn new() -> Self {
        Self {
            kept: Kept::Whole {
                entries: Vec::new(),
                by_event_id: BTreeMap::new(),
                result_ids: BTreeSet::new(),
            },
            well_formed: true,
            prefix: history_hash(&[]),
        }
    }

    /// Appends one entry (borrowed when only the lean index is kept: nothing of it is held);
    /// `looked_up`: what a lookup of its event id in this history just found.
    fn push(&mut self, entry: Cow<'_, AcceptedEvent>, scratch: &mut Vec<u8>, looked_up: LookedUp) {
        let first = self.len() == 0;
        hash_history_entry(&mut self.prefix, &entry, first, scratch);
        let well_formed = match &mut self.kept {
            Kept::Whole {
                entries,
                by_event_id,
                result_ids,
            } => {
                let shape_ok = entry_is_well_formed(&entry);
                let unique_event = !by_event_id.contains_key(&entry.event_id);
                if unique_event {
                    by_event_id.insert(entry.event_id.clone(), entries.len());
                }
                let unique_result = result_ids.insert(entry.result_id.clone());
                entries.push(entry.into_owned());
                shape_ok && unique_event && unique_result
            }
            // The lean index holds an entry only when both digests are a digest's text and the
            // result id is the derived one (so of kind `result`): of the entry's shape only the
            // event id's kind is left to check (not the digests again: two 64-digit scans per
            // applied event). The result id being the derived one (or the entry not held and
            // the history taken as malformed, failing closed), it is unique exactly when the
            // event id is.
            Kept::Lean(lean) => {
                let unique = match looked_up {
                    LookedUp::Not => lean.push(&entry, false),
                    LookedUp::Missed(None) => lean.push(&entry, true),
                    LookedUp::Missed(Some(key)) => lean.push_looked_up(&entry, &key),
                }
                .unwrap_or(false);
                unique && entry.event_id.is(IdentityKind::Event)
            }
        };
        self.well_formed &= well_formed;
    }

    /// Drops the entries, keeping the lean index (with the digests, or asking `recall` for
    /// them); `false` when they cannot be held exactly.
    fn forget(&mut self, recall: Option<Arc<dyn Recall>>) -> bool {
        let lean = match (&self.kept, recall) {
            (Kept::Whole { entries, .. }, None) => LeanIndex::from_entries(entries),
            (Kept::Whole { entries, .. }, Some(recall)) => LeanIndex::recalling(entries, recall),
            (Kept::Lean(_), _) => return true,
        };
        match lean {
            Some(lean) => {
                self.kept = Kept::Lean(lean);
                true
            }
            None => false,
        }
    }

    fn entries(&self) -> &[AcceptedEvent] {
        match &self.kept {
            Kept::Whole { entries, .. } => entries,
            Kept::Lean(_) => &[],
        }
    }
}

/// What is known of an entry's event id when it is pushed to a [`HistoryIndex`].
#[derive(Clone, Copy)]
enum LookedUp {
    /// Not looked up.
    Not,
    /// Looked up and not found; in the lean index under this key, when it was computed.
    Missed(Option<lean::Key>),
}

/// The history as [`evaluate`] sees it while one event is applied: the lean index's key of that
/// event's id is computed when it is looked up and kept, so that pushing the accepted entry
/// does not hash the id a second time.
struct Applying<'a> {
    history: &'a HistoryIndex,
    event_id: &'a Identity,
    key: OnceCell<lean::Key>,
}

impl HistoryView for Applying<'_> {
    fn len(&self) -> usize {
        self.history.len()
    }

    fn is_well_formed(&self) -> bool {
        self.history.is_well_formed()
    }

    fn find(&self, event_id: &Identity) -> Option<Cow<'_, AcceptedEvent>> {
        match &self.history.kept {
            Kept::Lean(lean) if event_id == self.event_id => {
                let key = self.key.get_or_init(|| lean::key_of(event_id));
                lean.find_keyed(event_id, key).map(Cow::Owned)
            }
            _ => self.history.find(event_id),
        }
    }
}

impl HistoryView for HistoryIndex {
    fn len(&self) -> usize {
        match &self.kept {
            Kept::Whole { entries, .. } => entries.len(),
            Kept::Lean(lean) => lean.len(),
        }
    }

    fn is_well_formed(&self) -> bool {
        self.well_formed
    }

    fn find(&self, event_id: &Identity) -> Option<Cow<'_, AcceptedEvent>> {
        match &self.kept {
            Kept::Whole {
                entries,
                by_event_id,
                ..
            } => by_event_id
                .get(event_id)
                .map(|&index| Cow::Borrowed(&entries[index])),
            Kept::Lean(lean) => lean.find(event_id).map(Cow::Owned),
        }
    }
}

/// A task State held in memory, advanced in place by [`apply`](Self::apply).
#[derive(Clone)]
pub struct LiveState {
    body: StateBody,
    history: HistoryIndex,
    /// `body`, encoded and kept in step with it: the next event's prior-State digest needs it,
    /// this event's result digest already produced it, and an event re-encodes only the work
    /// items it changed.
    encoding: BodyEncoding,
    /// Reused encoding buffer.
    scratch: Vec<u8>,
    /// Whether `body`'s work-item table is valid (`_state_is_valid`'s per-item checks and
    /// unique ids), kept up to date so that an event checks only the items the last one
    /// replaced, not all of them.
    items_valid: bool,
}

impl LiveState {
    /// Takes over a State (which need not be valid: an invalid State rejects every event, as
    /// `reduce` would). Indexes its history once, in O(history).
    pub fn new(state: State) -> Self {
        let mut history = HistoryIndex::new();
        let mut scratch = Vec::new();
        for entry in state.accepted_events {
            history.push(Cow::Owned(entry), &mut scratch, LookedUp::Not);
        }
        let encoding = BodyEncoding::new(&state.body);
        Self {
            items_valid: work_items_are_valid(&state.body),
            body: state.body,
            history,
            encoding,
            scratch,
        }
    }

    /// Everything in the current State except its history.
    pub fn body(&self) -> &StateBody {
        &self.body
    }

    /// The accepted-event history, oldest first; empty after
    /// [`forget_history`](Self::forget_history).
    pub fn history(&self) -> &[AcceptedEvent] {
        self.history.entries()
    }

    /// Whether the history is kept ([`history`](Self::history), [`to_state`](Self::to_state)).
    pub fn keeps_history(&self) -> bool {
        matches!(self.history.kept, Kept::Whole { .. })
    }

    /// Bytes the lean idempotency index holds ([`lean`]: 16 per event, 80 with the digests);
    /// `None` while the history is kept instead.
    pub fn lean_index_bytes(&self) -> Option<usize> {
        match &self.history.kept {
            Kept::Whole { .. } => None,
            Kept::Lean(lean) => Some(lean.held_bytes()),
        }
    }

    /// Drops the accepted-event history from memory, keeping only what idempotency needs (80
    /// bytes per event instead of ~540, see [`lean`]): for a replay that only verifies. Every
    /// later answer (`apply`, `preview`, digests) is the same as with the history kept, but
    /// [`history`](Self::history) is empty and [`to_state`](Self::to_state) /
    /// [`into_state`](Self::into_state) give a State without it. Returns `false`, keeping the
    /// history, when it holds an entry the lean index cannot rebuild exactly (only possible in a
    /// history handed to [`new`](Self::new), never in one built by `apply`).
    pub fn forget_history(&mut self) -> bool {
        self.history.forget(None)
    }

    /// [`forget_history`](Self::forget_history), holding not even the digests of the accepted
    /// events (16 bytes per event): `recall` gives the event at a history position when its id
    /// is seen again (a store reads it back from its journal). It must answer for every
    /// position, those of the history held now included; an event it cannot give back is
    /// refused as an idempotency conflict (failing closed, see [`lean`]). Once the history is
    /// forgotten, a later call changes nothing and returns `true`.
    pub fn forget_history_recalling(&mut self, recall: Arc<dyn Recall>) -> bool {
        self.history.forget(Some(recall))
    }

    /// The current revision.
    pub fn revision(&self) -> Int {
        self.body.revision
    }

    /// `digest()` of the current State, in O(State body).
    pub fn state_digest(&self) -> String {
        state_digest_from_parts(&self.history.prefix, &self.encoding)
    }

    /// A copy of the current State.
    pub fn to_state(&self) -> State {
        State {
            body: self.body.clone(),
            accepted_events: self.history.entries().to_vec(),
        }
    }

    /// The current State.
    pub fn into_state(self) -> State {
        let accepted_events = match self.history.kept {
            Kept::Whole { entries, .. } => entries,
            Kept::Lean(_) => Vec::new(),
        };
        State {
            body: self.body,
            accepted_events,
        }
    }

    /// The Result variant [`apply`](Self::apply) would give for this event, without applying
    /// it: the same checks in the same order, nothing changes.
    pub fn preview(&self, event: &Event, evidence_set: &[Evidence]) -> Variant {
        match evaluate(
            &self.body,
            &self.history,
            event,
            evidence_set,
            None,
            Some(self.items_valid),
        ) {
            Decision::Accept { .. } => Variant::Accepted,
            Decision::NoOp { .. } => Variant::NoOp,
            Decision::Reject { .. } => Variant::Rejected,
        }
    }

    /// Applies one event: the same checks, rules and Result as
    /// [`reduce`](crate::reduce()), in O(State body + log history). The live state advances only
    /// when the event is accepted.
    pub fn apply(&mut self, event: &Event, evidence_set: &[Evidence]) -> Verdict {
        self.apply_from(event, evidence_set, None)
    }

    /// [`apply`](Self::apply) of an Event and EvidenceSet decoded from canonical text that
    /// holds `prefix`, the start of their input digest's preimage (see [`InputPrefix`]): the
    /// same Verdict, without encoding them for the input digest.
    pub fn apply_from(
        &mut self,
        event: &Event,
        evidence_set: &[Evidence],
        prefix: Option<InputPrefix<'_>>,
    ) -> Verdict {
        self.apply_checking(event, evidence_set, prefix, None)
    }

    /// [`apply_from`](Self::apply_from), with the result digest computed (`deferred`: `None`)
    /// or taken as recorded and its check, with the State digest's, written into a
    /// [`DigestCheck`] (`deferred`: the check and the recorded result digest).
    fn apply_checking(
        &mut self,
        event: &Event,
        evidence_set: &[Evidence],
        prefix: Option<InputPrefix<'_>>,
        deferred: Option<(&mut DigestCheck, &str)>,
    ) -> Verdict {
        let applying = Applying {
            history: &self.history,
            event_id: &event.event_id,
            key: OnceCell::new(),
        };
        let decision = evaluate(
            &self.body,
            &applying,
            event,
            evidence_set,
            prefix,
            Some(self.items_valid),
        );
        let key = applying.key.into_inner();
        decision.settle(|input_digest, delta| {
            // A deferred check puts the prior State digest into the preimage when it runs.
            let prior_state_digest = match deferred {
                Some(_) => Cow::Borrowed(deferred::PRIOR_PLACEHOLDER),
                None => Cow::Owned(self.state_digest()),
            };
            let scratch = &mut self.scratch;
            let commit = commit(
                &mut self.body,
                &mut self.encoding,
                event,
                input_digest,
                &prior_state_digest,
                delta,
                |binding| match deferred {
                    Some((check, recorded)) => {
                        check.take_result(binding);
                        recorded.to_owned()
                    }
                    None => result_digest(binding, scratch),
                },
            );
            // Accepted, so `evaluate` looked the event id up and did not find it.
            self.history.push(
                Cow::Borrowed(&commit.entry),
                &mut self.scratch,
                LookedUp::Missed(key),
            );
            // Accepted, so the table was valid: only the replaced items can have changed that.
            self.items_valid = work_items_still_valid(&self.body, &commit.changed_items);
            commit.into_record()
        })
    }
}

impl std::fmt::Debug for LiveState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LiveState")
            .field("body", &self.body)
            .field("history_len", &self.history.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::walk::{Walk, WalkConfig};

    #[test]
    fn the_kept_work_item_validity_is_the_table_checked_whole_after_every_event() {
        for (seed, work_items) in [(1, 0), (2, 3), (3, 20), (5, 7)] {
            let mut walk = Walk::new(WalkConfig {
                seed,
                work_items,
                may_terminate: seed % 2 == 1,
            });
            let mut live = LiveState::new(walk.genesis().state.clone());
            assert!(live.items_valid);
            for step in walk.by_ref().take(300) {
                assert!(matches!(
                    live.apply(&step.event, &step.evidence_set),
                    Verdict::Accepted(_)
                ));
                assert_eq!(live.items_valid, work_items_are_valid(&live.body));
                assert!(live.items_valid);
            }
        }
    }

    #[test]
    fn a_lean_history_is_malformed_after_exactly_the_entries_that_make_a_whole_one_so() {
        let entry = |event: (IdentityKind, &str), result: (IdentityKind, &str), input: &str| {
            AcceptedEvent {
                event_id: Identity::new(event.0, event.1).unwrap(),
                result_id: Identity::new(result.0, result.1).unwrap(),
                input_digest: input.to_owned(),
                result_digest: crate::canonical::digest_text(&[7; 32]),
            }
        };
        let digest = crate::canonical::digest_text(&[1; 32]);
        let event = (IdentityKind::Event, "ev-2");
        let derived = (IdentityKind::Result, "ev-2:accepted");
        let cases = [
            ("well formed", entry(event, derived, &digest), true),
            (
                "an event id of another kind",
                entry((IdentityKind::Task, "ev-2"), derived, &digest),
                false,
            ),
            (
                "a result id of another kind",
                entry(event, (IdentityKind::Event, "ev-2:accepted"), &digest),
                false,
            ),
            (
                "an input digest in capitals",
                entry(event, derived, &digest.to_uppercase()),
                false,
            ),
            (
                "a short input digest",
                entry(event, derived, &digest[..70]),
                false,
            ),
        ];
        for (what, odd, well_formed) in cases {
            let mut whole = HistoryIndex::new();
            let mut lean = HistoryIndex::new();
            assert!(lean.forget(None));
            let mut scratch = Vec::new();
            for history in [&mut whole, &mut lean] {
                let first = entry(
                    (IdentityKind::Event, "ev-1"),
                    (IdentityKind::Result, "ev-1:accepted"),
                    &digest,
                );
                history.push(Cow::Owned(first), &mut scratch, LookedUp::Not);
                history.push(Cow::Borrowed(&odd), &mut scratch, LookedUp::Not);
            }
            assert_eq!(whole.is_well_formed(), well_formed, "{what}");
            assert_eq!(lean.is_well_formed(), well_formed, "{what}");
        }
    }

    #[test]
    fn a_state_whose_table_is_not_valid_is_known_so_and_refuses_as_reduce_does() {
        let mut walk = Walk::new(WalkConfig {
            seed: 2,
            work_items: 3,
            may_terminate: false,
        });
        let step = walk.step().unwrap();
        let mut state = walk.genesis().state.clone();
        // Two items with one id.
        state.body.work_items[1].work_item_id = state.body.work_items[0].work_item_id.clone();
        let mut live = LiveState::new(state.clone());
        assert!(!live.items_valid);
        let expected = crate::reduce(&state, &step.event, &step.evidence_set);
        let verdict = live.apply(&step.event, &step.evidence_set);
        assert_eq!(verdict.error_code(), Some(ErrorCode::StateConflict));
        assert_eq!(verdict.into_outcome(state.clone()), expected);
        // Rebuilt from its parts, it knows too.
        let parts = live.to_parts().unwrap();
        assert!(!LiveState::from_parts(parts).unwrap().items_valid);
    }
}
