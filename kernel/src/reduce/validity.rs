//! Structural validity of a State, an Event, an EvidenceSet and an event's authority.
//!
//! These are the reference kernel's `_state_is_valid`, `_event_is_valid`,
//! `_evidence_set_is_valid` and `_authority_is_valid`; any failure is `VALP-E-STATE-CONFLICT`.

use crate::canonical::is_digest;
use crate::history::HistoryView;
use crate::model::identity::has_kind;
use crate::model::{
    Attempt, Control, ControlStatus, Event, Evidence, Identity, IdentityKind, Int,
    PROTOCOL_VERSION, StateBody, Suspension, SuspensionStatus, TaskStatus, WakeReason, WorkItem,
};

fn non_negative(value: Int) -> bool {
    value >= 0
}

fn optional_kind(identity: Option<&Identity>, kind: IdentityKind) -> bool {
    identity.is_none_or(|identity| identity.is(kind))
}

fn all_unique<'a, I>(identities: I) -> bool
where
    I: IntoIterator<Item = &'a Identity>,
    I::IntoIter: Clone,
{
    let identities = identities.into_iter();
    // Lists here are short (dependencies, required items) except the work-item table; pairwise
    // comparison avoids allocating for the short ones.
    if identities.clone().nth(8).is_none() {
        let mut rest = identities;
        while let Some(identity) = rest.next() {
            if rest.clone().any(|other| other == identity) {
                return false;
            }
        }
        return true;
    }
    let mut sorted: Vec<&Identity> = identities.collect();
    sorted.sort_unstable();
    sorted.windows(2).all(|pair| pair[0] != pair[1])
}

/// `_state_is_valid`: the State is well formed for this protocol version.
pub(crate) fn state_is_valid(body: &StateBody, history: &(impl HistoryView + ?Sized)) -> bool {
    state_is_valid_given(body, history, || work_items_are_valid(body))
}

/// The work-item table's part of `_state_is_valid`: every item well formed for the task, and
/// no two with the same id.
pub(crate) fn work_items_are_valid(body: &StateBody) -> bool {
    body.work_items
        .iter()
        .all(|item| work_item_is_valid(item, &body.task_id))
        && all_unique(body.work_items.iter().map(|item| &item.work_item_id))
}

/// [`work_items_are_valid`] of a body whose table was valid before the items at `changed` were
/// replaced (the table's length never changes): only those are checked, and the ids again.
pub(crate) fn work_items_still_valid(body: &StateBody, changed: &[usize]) -> bool {
    let replaced_valid = changed.iter().all(|&index| {
        body.work_items
            .get(index)
            .is_some_and(|item| work_item_is_valid(item, &body.task_id))
    });
    changed.is_empty()
        || (replaced_valid && all_unique(body.work_items.iter().map(|item| &item.work_item_id)))
}

/// [`state_is_valid`], with the work-item table's part given by `items_valid` (asked only when
/// the other checks pass, so that a caller that keeps it up to date need not recompute it).
pub(crate) fn state_is_valid_given(
    body: &StateBody,
    history: &(impl HistoryView + ?Sized),
    items_valid: impl FnOnce() -> bool,
) -> bool {
    let Some(status) = body.status.known() else {
        return false;
    };
    let revision_matches = usize::try_from(body.revision).is_ok_and(|len| len == history.len());
    body.protocol_version == PROTOCOL_VERSION
        && body.installation_id.is(IdentityKind::Installation)
        && body.task_id.is(IdentityKind::Task)
        && non_negative(body.leader_epoch)
        && non_negative(body.revision)
        && revision_matches
        && (body.revision != 0 || status == TaskStatus::Published)
        && body.suspension.as_ref().is_none_or(|suspension| {
            status == TaskStatus::Executing && suspension_is_valid(suspension, body)
        })
        && body.control.as_ref().is_none_or(control_is_valid)
        && history.is_well_formed()
        && items_valid()
}

fn attempt_is_valid(attempt: &Attempt) -> bool {
    attempt.task_id.is(IdentityKind::Task)
        && attempt.work_item_id.is(IdentityKind::WorkItem)
        && attempt.attempt_id.is(IdentityKind::Attempt)
        && attempt.dispatch_id.is(IdentityKind::Dispatch)
        && non_negative(attempt.dispatch_generation)
}

fn work_item_is_valid(item: &WorkItem, task_id: &Identity) -> bool {
    &item.task_id == task_id
        && item.work_item_id.is(IdentityKind::WorkItem)
        && item.dependencies.iter().all(|dependency| {
            dependency.work_item_id.is(IdentityKind::WorkItem)
                && dependency.work_item_id != item.work_item_id
        })
        && all_unique(
            item.dependencies
                .iter()
                .map(|dependency| &dependency.work_item_id),
        )
        && item.current_attempt.as_ref().is_none_or(|attempt| {
            attempt_is_valid(attempt)
                && attempt.task_id == item.task_id
                && attempt.work_item_id == item.work_item_id
        })
}

fn suspension_is_valid(suspension: &Suspension, body: &StateBody) -> bool {
    let shape_ok = suspension.task_id == body.task_id
        && suspension.suspension_id.is(IdentityKind::Suspension)
        && non_negative(suspension.suspension_epoch)
        && suspension.wait_policy_id.is(IdentityKind::WaitPolicy)
        && is_digest(&suspension.wait_policy_digest)
        && !suspension.required_work_item_ids.is_empty()
        && all_unique(&suspension.required_work_item_ids)
        && suspension
            .required_work_item_ids
            .iter()
            .all(|id| id.is(IdentityKind::WorkItem))
        && suspension
            .required_work_item_ids
            .iter()
            .all(|id| body.work_item(id).is_some());
    shape_ok
        && match suspension.status {
            SuspensionStatus::Waiting => {
                suspension.accepted_wake_id.is_none() && suspension.wake_reason.is_none()
            }
            SuspensionStatus::Resumed => {
                has_kind(suspension.accepted_wake_id.as_ref(), IdentityKind::Wake)
                    && suspension.wake_reason == Some(WakeReason::DependencyReady)
            }
        }
}

fn control_is_valid(control: &Control) -> bool {
    non_negative(control.intent_version)
        && match control.status {
            ControlStatus::Active => control.active_interrupt_id.is_none(),
            ControlStatus::Interrupted => has_kind(
                control.active_interrupt_id.as_ref(),
                IdentityKind::Interrupt,
            ),
        }
}

/// `_event_is_valid`: every slot that is present has the right kind and range.
pub(crate) fn event_is_valid(event: &Event) -> bool {
    let known_enums = event.kind.known().is_some()
        && event
            .wake_reason
            .as_ref()
            .is_none_or(|reason| reason.known().is_some())
        && event
            .control_reason
            .as_ref()
            .is_none_or(|reason| reason.known().is_some())
        && event
            .cancellation_scope
            .as_ref()
            .is_none_or(|scope| scope.known().is_some());
    known_enums
        && event.event_id.is(IdentityKind::Event)
        && event.installation_id.is(IdentityKind::Installation)
        && event.task_id.is(IdentityKind::Task)
        && non_negative(event.leader_epoch)
        && non_negative(event.expected_revision)
        && optional_kind(event.work_item_id.as_ref(), IdentityKind::WorkItem)
        && optional_kind(event.attempt_id.as_ref(), IdentityKind::Attempt)
        && optional_kind(event.dispatch_id.as_ref(), IdentityKind::Dispatch)
        && event.dispatch_generation.is_none_or(non_negative)
        && optional_kind(event.suspension_id.as_ref(), IdentityKind::Suspension)
        && event.suspension_epoch.is_none_or(non_negative)
        && optional_kind(event.wait_policy_id.as_ref(), IdentityKind::WaitPolicy)
        && event.wait_policy_digest.as_deref().is_none_or(is_digest)
        && event
            .required_work_item_ids
            .iter()
            .all(|id| id.is(IdentityKind::WorkItem))
        && optional_kind(event.wake_id.as_ref(), IdentityKind::Wake)
        && optional_kind(
            event.authority_principal_id.as_ref(),
            IdentityKind::Principal,
        )
        && optional_kind(event.authority_evidence_id.as_ref(), IdentityKind::Evidence)
        && optional_kind(event.interrupt_id.as_ref(), IdentityKind::Interrupt)
        && optional_kind(event.redirect_id.as_ref(), IdentityKind::Redirect)
        && event.intent_version.is_none_or(non_negative)
        && event.next_intent_version.is_none_or(non_negative)
        && event
            .superseded_work_item_ids
            .iter()
            .all(|id| id.is(IdentityKind::WorkItem))
        && all_unique(&event.superseded_work_item_ids)
}

/// `_evidence_set_is_valid`: evidence ids of kind `evidence`, well-formed digests, unique ids.
pub(crate) fn evidence_set_is_valid(evidence_set: &[Evidence]) -> bool {
    evidence_set.iter().all(|evidence| {
        evidence.evidence_id.is(IdentityKind::Evidence) && is_digest(&evidence.content_digest)
    }) && all_unique(evidence_set.iter().map(|evidence| &evidence.evidence_id))
}

/// `_authority_is_valid`: an authority-bound event names a principal, a closed reason, and
/// authority evidence that is present in the EvidenceSet.
pub(crate) fn authority_is_valid(event: &Event, evidence_set: &[Evidence]) -> bool {
    let Some(kind) = event.kind.known() else {
        return true;
    };
    if !kind.is_authority_bound() {
        return true;
    }
    has_kind(
        event.authority_principal_id.as_ref(),
        IdentityKind::Principal,
    ) && has_kind(event.authority_evidence_id.as_ref(), IdentityKind::Evidence)
        && event
            .control_reason
            .as_ref()
            .is_some_and(|reason| reason.known().is_some())
        && evidence_set
            .iter()
            .any(|evidence| Some(&evidence.evidence_id) == event.authority_evidence_id.as_ref())
}
