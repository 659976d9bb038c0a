//! The System's decisions against the real kernel without a disk: events built as the driver
//! and the Leader's operations build them, evidence standing for what they would store, and the
//! kernel's verdict. Shared by the random walk and the model check of the Operator Workflow.

#![allow(clippy::unwrap_used, clippy::panic)] // test support: a broken fixture fails the test

use valp_kernel::canonical::sha256_digest;
use valp_kernel::{
    Accepted, Event, EventKind, Evidence, Identity, IdentityKind, Outcome, State, reduce,
};
use valp_runtime::clock::Timestamp;
use valp_runtime::runtime::control::{Actor, Operation, event_for, expand};
use valp_runtime::runtime::workflow::{EvidenceNeed, Proposal};

/// An identity the test knows is valid.
pub fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

/// The event of `kind` at the State's revision, with the work item and attempt slots of
/// `proposal` as the driver fills them.
pub fn event_of(state: &State, kind: EventKind, proposal: Option<&Proposal>) -> Event {
    let body = &state.body;
    let mut event = Event::new(
        id(
            IdentityKind::Event,
            &format!("{}-r{}", kind.as_str(), body.revision),
        ),
        body.installation_id.clone(),
        body.leader_epoch,
        body.task_id.clone(),
        kind,
        body.revision,
    );
    if let Some(proposal) = proposal {
        if let Some(item) = &proposal.work_item_id {
            event.work_item_id = Some(id(IdentityKind::WorkItem, item));
        }
        if let (true, Some(slots)) = (kind.is_attempt_scoped(), &proposal.attempt) {
            event.attempt_id = Some(id(IdentityKind::Attempt, &slots.attempt_id));
            event.dispatch_id = Some(id(IdentityKind::Dispatch, &slots.dispatch_id));
            event.dispatch_generation = Some(slots.generation);
        }
    }
    event
}

/// Evidence standing for what the driver would store for `event` (the kernel checks ids and
/// digests, not contents): one item named after the event and `tag`, so the same event on the
/// same path always carries the same evidence.
pub fn evidence_for(event: &Event, tag: &str) -> Evidence {
    let name = format!("sim-{tag}-{}", event.event_id.value());
    Evidence {
        evidence_id: id(IdentityKind::Evidence, &name),
        content_digest: sha256_digest(name.as_bytes()),
    }
}

/// The evidence a System proposal needs.
pub fn evidence(need: &EvidenceNeed, event: &Event) -> Vec<Evidence> {
    if *need == EvidenceNeed::Nothing {
        Vec::new()
    } else {
        vec![evidence_for(event, "system")]
    }
}

/// The kernel's verdict: the accepted result, or `None` when it refused (or it was a no-op).
pub fn accepted(state: &State, event: &Event, evidence: &[Evidence]) -> Option<Accepted> {
    match reduce(state, event, evidence) {
        Outcome::Accepted(accepted) => Some(accepted),
        _ => None,
    }
}

/// The Leader's `operation` as the console proposes it ([`expand`], then [`event_for`] with an
/// operator action record, and the intent for a redirect), applied step by step; the State
/// after the last step and the obligations every step raised, or `None` when the operation
/// cannot be built for this State or the kernel refuses a step.
pub fn leader(
    state: &State,
    operation: &Operation,
    approval_required: bool,
) -> Option<(State, Vec<String>)> {
    let actor = Actor {
        principal: "user:leader".to_owned(),
        at: Timestamp::from_millis(0),
        note: String::new(),
    };
    let mut state = state.clone();
    let mut obligations = Vec::new();
    for step in expand(&state.body, operation, approval_required) {
        let placeholder = Event::new(
            id(
                IdentityKind::Event,
                &format!("leader-r{}", state.body.revision),
            ),
            state.body.installation_id.clone(),
            state.body.leader_epoch,
            state.body.task_id.clone(),
            EventKind::TaskCancelled,
            state.body.revision,
        );
        let authority = evidence_for(&placeholder, "authority");
        let event = event_for(&state.body, &step, &actor, &authority).ok()?;
        let mut evidence = vec![authority];
        if matches!(step, Operation::Redirect { .. }) {
            evidence.push(evidence_for(&event, "intent"));
        }
        let accepted = accepted(&state, &event, &evidence)?;
        obligations.extend(accepted.obligations);
        state = accepted.state;
    }
    Some((state, obligations))
}
