//! `reduce(State, Event, EvidenceSet) -> Result`: the pure transition function.
//!
//! The checks run in the reference kernel's order, because the order decides which error an
//! input that is wrong in several ways receives:
//!
//! 1. an unknown value in a closed slot (task status, event kind, wake reason, control reason,
//!    cancellation scope): `VALP-E-UNKNOWN-ENUM-VALUE`;
//! 2. an invalid State, Event or EvidenceSet, an installation or epoch mismatch, or missing
//!    authority: `VALP-E-STATE-CONFLICT`;
//! 3. a stale attempt-scoped event: `VALP-E-STATE-CONFLICT`;
//! 4. a known event id: `no_op` when the input digest matches, else
//!    `VALP-E-IDEMPOTENCY-CONFLICT` (so an old duplicate is still a no-op after the revision
//!    moved on);
//! 5. a task id mismatch or stale expected revision: `VALP-E-STATE-CONFLICT`;
//! 6. the interrupt gate, the kind's rule, the transition table and the suspension gate.

mod delta;
pub(crate) mod digests;
pub(crate) mod obligations;
pub(crate) mod rules;
pub mod transitions;
pub(crate) mod validity;

use crate::decode::InputPrefix;
use crate::history::HistoryView;
use crate::live::{AcceptedRecord, Verdict};
use crate::model::{
    AcceptedEvent, ErrorCode, Event, Evidence, Identity, IdentityKind, Outcome, State, StateBody,
};
use delta::Delta;
use digests::{
    BodyEncoding, ResultBinding, history_hash, input_digest, input_digest_from_prefix,
    result_digest, state_digest_from_parts,
};

pub use obligations::{ADAPTER_CANCEL_PREFIX, adapter_cancel_obligation};
pub use rules::work_item::dependency_gate;

/// Applies one event to a State. Pure and total: equal inputs give byte-identical Results, and
/// every input, however malformed, gets a Result.
///
/// This is the reference-shaped entry point; it copies the State's history into the next State
/// and rescans it, so a call costs O(history). To apply a long sequence of events use
/// [`LiveState`](crate::live::LiveState), which gives the same Results in O(1) per event.
pub fn reduce(state: &State, event: &Event, evidence_set: &[Evidence]) -> Outcome {
    let decision = evaluate(
        &state.body,
        state.accepted_events.as_slice(),
        event,
        evidence_set,
        None,
        None,
    );
    let mut next = None;
    let verdict = decision.settle(|input_digest, delta| {
        let mut body = state.body.clone();
        let mut encoding = BodyEncoding::new(&body);
        let prior_state_digest =
            state_digest_from_parts(&history_hash(&state.accepted_events), &encoding);
        let commit = commit(
            &mut body,
            &mut encoding,
            event,
            input_digest,
            &prior_state_digest,
            delta,
            |binding| result_digest(binding, &mut Vec::with_capacity(1024)),
        );
        let mut accepted_events = Vec::with_capacity(state.accepted_events.len() + 1);
        accepted_events.extend_from_slice(&state.accepted_events);
        accepted_events.push(commit.entry.clone());
        next = Some(State {
            body,
            accepted_events,
        });
        commit.into_record()
    });
    verdict.into_outcome(next.unwrap_or_else(|| state.clone()))
}

/// The decision for one event, before the next State is built.
// Lives for one call on the stack; boxing the delta would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Decision {
    /// Accepted; `delta` describes the change.
    Accept { input_digest: String, delta: Delta },
    /// Duplicate of the accepted `prior`.
    NoOp {
        input_digest: String,
        prior: AcceptedEvent,
    },
    /// Refused; `prior` is set for an idempotency conflict.
    Reject {
        input_digest: String,
        error_code: ErrorCode,
        prior: Option<AcceptedEvent>,
    },
}

impl Decision {
    /// The Verdict for this decision; `accept` commits an acceptance and returns its record.
    pub(crate) fn settle(self, accept: impl FnOnce(String, Delta) -> AcceptedRecord) -> Verdict {
        match self {
            Self::Accept {
                input_digest,
                delta,
            } => Verdict::Accepted(accept(input_digest, delta)),
            Self::NoOp {
                input_digest,
                prior,
            } => Verdict::NoOp {
                input_digest,
                prior_result_id: prior.result_id,
                prior_result_digest: prior.result_digest,
            },
            Self::Reject {
                input_digest,
                error_code,
                prior,
            } => Verdict::Rejected {
                input_digest,
                error_code,
                prior: prior.map(|prior| (prior.result_id, prior.result_digest)),
            },
        }
    }
}

/// Runs every check of `reduce` against a State given as body + history view. `prefix`, when
/// given, is the start of the input digest's preimage as the canonical text the Event and
/// EvidenceSet were decoded from holds it (hashed instead of encoding them again);
/// `items_valid`, when given, is whether the body's work-item table is valid (kept up to date
/// by the caller instead of checked again).
pub(crate) fn evaluate(
    body: &StateBody,
    history: &(impl HistoryView + ?Sized),
    event: &Event,
    evidence_set: &[Evidence],
    prefix: Option<InputPrefix<'_>>,
    items_valid: Option<bool>,
) -> Decision {
    let input_digest = match prefix {
        Some(prefix) => input_digest_from_prefix(&body.protocol_version, prefix.bytes()),
        None => input_digest(&body.protocol_version, event, evidence_set),
    };
    let reject = |input_digest, error_code| Decision::Reject {
        input_digest,
        error_code,
        prior: None,
    };
    let (Some(status), Some(kind)) = (body.status.known(), event.kind.known()) else {
        return reject(input_digest, ErrorCode::UnknownEnumValue);
    };
    let unknown_slot = event
        .wake_reason
        .as_ref()
        .is_some_and(|slot| slot.known().is_none())
        || event
            .control_reason
            .as_ref()
            .is_some_and(|slot| slot.known().is_none())
        || event
            .cancellation_scope
            .as_ref()
            .is_some_and(|slot| slot.known().is_none());
    if unknown_slot {
        return reject(input_digest, ErrorCode::UnknownEnumValue);
    }
    let well_formed = validity::state_is_valid_given(body, history, || {
        items_valid.unwrap_or_else(|| validity::work_items_are_valid(body))
    }) && validity::event_is_valid(event)
        && validity::evidence_set_is_valid(evidence_set)
        && event.installation_id == body.installation_id
        && event.leader_epoch == body.leader_epoch
        && validity::authority_is_valid(event, evidence_set);
    if !well_formed || rules::attempt::is_stale(body, kind, event) {
        return reject(input_digest, ErrorCode::StateConflict);
    }
    if let Some(prior) = history.find(&event.event_id) {
        if prior.input_digest == input_digest {
            return Decision::NoOp {
                input_digest,
                prior: prior.into_owned(),
            };
        }
        return Decision::Reject {
            input_digest,
            error_code: ErrorCode::IdempotencyConflict,
            prior: Some(prior.into_owned()),
        };
    }
    if event.task_id != body.task_id || event.expected_revision != body.revision {
        return reject(input_digest, ErrorCode::StateConflict);
    }
    match rules::decide(body, status, kind, event) {
        Ok(delta) => Decision::Accept {
            input_digest,
            delta,
        },
        Err(rules::Conflict) => reject(input_digest, ErrorCode::StateConflict),
    }
}

/// The result id the kernel gives an accepted event: `<event_id>:accepted`.
pub(crate) fn derived_result_id(event_id: &Identity) -> Identity {
    Identity::derived(
        IdentityKind::Result,
        joined(&[event_id.value(), ":accepted"]),
    )
}

/// `parts` one after the other, in one allocation of the exact size (`format!` goes through the
/// formatting machinery and grows its buffer; this runs twice per accepted event).
fn joined(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|part| part.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// What committing an acceptance produced besides the next State body.
pub(crate) struct Commit {
    /// Indexes of the work items the acceptance replaced.
    pub changed_items: Vec<usize>,
    /// The history record to append.
    pub entry: AcceptedEvent,
    /// Obligations emitted.
    pub obligations: Vec<String>,
    /// All audit facts, starting with `accepted:event:<id>`.
    pub audit_facts: Vec<String>,
}

impl Commit {
    /// The accepted Result without its State.
    pub fn into_record(self) -> AcceptedRecord {
        AcceptedRecord {
            result_id: self.entry.result_id,
            input_digest: self.entry.input_digest,
            result_digest: self.entry.result_digest,
            obligations: self.obligations,
            audit_facts: self.audit_facts,
        }
    }
}

/// Applies an accepted delta to `body` (the prior State's body, which becomes the next one),
/// brings `encoding` (of the prior body) in line with it, and computes the result identity and
/// takes the result digest from `digest` (which computes it, see [`result_digest`], or leaves
/// it to be checked later, see [`DigestCheck`](crate::live::DigestCheck)).
pub(crate) fn commit(
    body: &mut StateBody,
    encoding: &mut BodyEncoding,
    event: &Event,
    input_digest: String,
    prior_state_digest: &str,
    delta: Delta,
    digest: impl FnOnce(&ResultBinding<'_>) -> String,
) -> Commit {
    let delta::Applied {
        changed_items,
        obligations,
        audit_facts: kind_facts,
    } = delta.apply(body);
    encoding.refresh(body, changed_items.iter().copied());
    let event_id = &event.event_id;
    let mut audit_facts = Vec::with_capacity(kind_facts.len() + 1);
    audit_facts.push(joined(&[
        "accepted:",
        event_id.kind().as_str(),
        ":",
        event_id.value(),
    ]));
    audit_facts.extend(kind_facts);
    let result_id = derived_result_id(event_id);
    let result_digest = digest(&ResultBinding {
        result_id: &result_id,
        event_id,
        input_digest: &input_digest,
        prior_state_digest,
        next: body,
        next_encoding: encoding,
        changed_items: &changed_items,
        obligations: &obligations,
        audit_facts: &audit_facts,
    });
    Commit {
        changed_items,
        entry: AcceptedEvent {
            event_id: event_id.clone(),
            result_id,
            input_digest,
            result_digest,
        },
        obligations,
        audit_facts,
    }
}
