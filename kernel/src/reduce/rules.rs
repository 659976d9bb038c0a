//! Per-kind rules: given a valid State and a valid, authorised, non-duplicate event at the
//! current revision, either describe the acceptance as a [`Delta`] or refuse it.
//!
//! Every refusal here is `VALP-E-STATE-CONFLICT`, so rules return [`Conflict`].

pub(crate) mod attempt;
mod control;
mod suspension;
pub(crate) mod work_item;

use crate::model::{Control, ControlStatus, Event, EventKind, StateBody, TaskStatus};
use crate::reduce::delta::{Delta, SuspensionChange};
use crate::reduce::transitions::task_transition;

/// The event is refused with `VALP-E-STATE-CONFLICT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Conflict;

/// Refuses unless `condition` holds.
pub(crate) fn require(condition: bool) -> Result<(), Conflict> {
    if condition { Ok(()) } else { Err(Conflict) }
}

/// Kinds that pass while the task is interrupted.
pub(crate) fn passes_interrupt(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::InterruptResumed
            | EventKind::RedirectAuthorized
            | EventKind::TaskCancelled
            | EventKind::TaskFailed
    )
}

/// Applies the interrupt gate, the kind's own rule, the task transition table and the
/// suspension gate, in the reference kernel's order.
pub(crate) fn decide(
    body: &StateBody,
    status: TaskStatus,
    kind: EventKind,
    event: &Event,
) -> Result<Delta, Conflict> {
    let control = body.control.as_ref().unwrap_or(&Control::INITIAL);
    require(control.status == ControlStatus::Active || passes_interrupt(kind))?;
    let transition = task_transition(status, kind);
    let delta = match kind {
        EventKind::InterruptRequested => control::interrupt_requested(status, control, event)?,
        EventKind::InterruptResumed => control::interrupt_resumed(status, control, event)?,
        EventKind::RedirectAuthorized => {
            control::redirect_authorized(body, status, control, event)?
        }
        EventKind::TaskCancelled => {
            control::task_cancelled(body, control, event, transition.ok_or(Conflict)?)?
        }
        EventKind::SuspensionStarted => suspension::started(body, status, event)?,
        EventKind::WakeAccepted => suspension::wake_accepted(body, status, event)?,
        EventKind::WorkItemEligible => work_item::eligible(body, status, event)?,
        EventKind::AttemptCreated => attempt::created(body, status, event)?,
        EventKind::AttemptFenced => attempt::fenced(body, status, event)?,
        EventKind::AttemptSubmitted
        | EventKind::AttemptRunning
        | EventKind::AttemptCompleted
        | EventKind::AttemptFailed
        | EventKind::AttemptCancelled => attempt::progressed(body, status, kind, event)?,
        EventKind::WorkItemPartial
        | EventKind::WorkItemDegraded
        | EventKind::WorkItemBlocked
        | EventKind::WorkItemFailed
        | EventKind::WorkItemCancelled
        | EventKind::WorkItemSkipped => work_item::settled(body, status, kind, event)?,
        _ => Delta::status_only(transition.ok_or(Conflict)?),
    };
    suspension_gate(body, status, kind, delta)
}

/// A status change while a suspension is waiting is refused unless it blocks, fails or cancels
/// the task; any accepted status change clears the suspension.
fn suspension_gate(
    body: &StateBody,
    status: TaskStatus,
    kind: EventKind,
    mut delta: Delta,
) -> Result<Delta, Conflict> {
    if delta.status == status {
        return Ok(delta);
    }
    let Some(suspension) = delta.next_suspension(body.suspension.as_ref()) else {
        return Ok(delta);
    };
    require(
        suspension.status != crate::model::SuspensionStatus::Waiting
            || matches!(
                kind,
                EventKind::TaskBlocked | EventKind::TaskFailed | EventKind::TaskCancelled
            ),
    )?;
    delta.suspension = SuspensionChange::Clear;
    Ok(delta)
}

/// No interrupt, redirect, intent-version or superseded-item slots: what every cancel requires.
pub(crate) fn carries_no_control_slots(event: &Event) -> bool {
    event.interrupt_id.is_none()
        && event.redirect_id.is_none()
        && event.intent_version.is_none()
        && event.next_intent_version.is_none()
        && event.superseded_work_item_ids.is_empty()
}

/// No attempt, dispatch or generation slots: a task- or work-item-scope cancel names no attempt.
pub(crate) fn carries_no_attempt_slots(event: &Event) -> bool {
    event.attempt_id.is_none() && event.dispatch_id.is_none() && event.dispatch_generation.is_none()
}

/// The principal value of an authority-bound event (validated before any rule runs).
pub(crate) fn principal(event: &Event) -> &str {
    event
        .authority_principal_id
        .as_ref()
        .map_or("", |principal| principal.value())
}

/// The index of the work item an event targets, or a conflict when absent.
pub(crate) fn target_index(body: &StateBody, event: &Event) -> Result<usize, Conflict> {
    let work_item_id = event.work_item_id.as_ref().ok_or(Conflict)?;
    body.work_items
        .iter()
        .position(|item| &item.work_item_id == work_item_id)
        .ok_or(Conflict)
}
