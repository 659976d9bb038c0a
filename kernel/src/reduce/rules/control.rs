//! Interrupt, resume, redirect and task-scope cancel (RFC 0002 §9).

use crate::model::{CancellationScope, Control, ControlStatus, Event, Open, StateBody, TaskStatus};
use crate::reduce::delta::{Delta, SuspensionChange};
use crate::reduce::obligations::cancel_work_item;
use crate::reduce::rules::{
    Conflict, carries_no_attempt_slots, carries_no_control_slots, principal, require,
};

/// No redirect, next-intent, cancellation-scope or superseded slots.
fn carries_no_redirect_or_cancel(event: &Event) -> bool {
    event.redirect_id.is_none()
        && event.next_intent_version.is_none()
        && event.cancellation_scope.is_none()
        && event.superseded_work_item_ids.is_empty()
}

/// `interrupt_requested`: an active, non-terminal task becomes interrupted at its current intent
/// version. The task status does not change.
pub(super) fn interrupt_requested(
    status: TaskStatus,
    control: &Control,
    event: &Event,
) -> Result<Delta, Conflict> {
    let interrupt_id = event.interrupt_id.as_ref().ok_or(Conflict)?;
    require(
        !status.is_terminal()
            && control.status == ControlStatus::Active
            && event.intent_version == Some(control.intent_version)
            && carries_no_redirect_or_cancel(event),
    )?;
    let mut delta = Delta::status_only(status);
    delta.control = Some(Control {
        intent_version: control.intent_version,
        status: ControlStatus::Interrupted,
        active_interrupt_id: Some(interrupt_id.clone()),
    });
    delta.audit_facts.push(format!(
        "interrupted:{}:{}",
        interrupt_id.value(),
        principal(event)
    ));
    Ok(delta)
}

/// `interrupt_resumed`: the active interrupt is lifted at the same intent version.
pub(super) fn interrupt_resumed(
    status: TaskStatus,
    control: &Control,
    event: &Event,
) -> Result<Delta, Conflict> {
    require(
        control.status == ControlStatus::Interrupted
            && event.interrupt_id == control.active_interrupt_id
            && event.intent_version == Some(control.intent_version)
            && carries_no_redirect_or_cancel(event),
    )?;
    let interrupt_id = event.interrupt_id.as_ref().ok_or(Conflict)?;
    let mut delta = Delta::status_only(status);
    delta.control = Some(Control {
        intent_version: control.intent_version,
        status: ControlStatus::Active,
        active_interrupt_id: None,
    });
    delta.audit_facts.push(format!(
        "interrupt_resumed:{}:{}",
        interrupt_id.value(),
        principal(event)
    ));
    Ok(delta)
}

/// `redirect_authorized`: a new intent version; superseded live items are cancelled (with
/// adapter obligations), never removed; the suspension is cleared and the task goes to `fixing`.
pub(super) fn redirect_authorized(
    body: &StateBody,
    status: TaskStatus,
    control: &Control,
    event: &Event,
) -> Result<Delta, Conflict> {
    let redirect_id = event.redirect_id.as_ref().ok_or(Conflict)?;
    let next_version = control.intent_version.checked_add(1).ok_or(Conflict)?;
    require(
        !status.is_terminal()
            && event.interrupt_id.is_none()
            && event.intent_version == Some(control.intent_version)
            && event.next_intent_version == Some(next_version)
            && event.cancellation_scope.is_none()
            && event
                .superseded_work_item_ids
                .iter()
                .all(|id| body.work_item(id).is_some()),
    )?;
    let mut delta = Delta::status_only(TaskStatus::Fixing);
    for (index, item) in body.work_items.iter().enumerate() {
        if !item.status.is_terminal() && event.superseded_work_item_ids.contains(&item.work_item_id)
        {
            let (cancelled, obligation) = cancel_work_item(item);
            delta.items.push((index, cancelled));
            delta.obligations.extend(obligation);
        }
    }
    delta.suspension = SuspensionChange::Clear;
    delta.control = Some(Control {
        intent_version: next_version,
        status: ControlStatus::Active,
        active_interrupt_id: None,
    });
    delta.audit_facts.push(format!(
        "redirected:{}:{}:{}",
        redirect_id.value(),
        control.intent_version,
        next_version
    ));
    delta
        .audit_facts
        .push(format!("redirect_authority:{}", principal(event)));
    Ok(delta)
}

/// `task_cancelled`: every live work item and attempt is cancelled (with adapter obligations),
/// the suspension is cleared and control is reset to active.
pub(super) fn task_cancelled(
    body: &StateBody,
    control: &Control,
    event: &Event,
    cancelled: TaskStatus,
) -> Result<Delta, Conflict> {
    let suspension_epoch = body
        .suspension
        .as_ref()
        .map(|suspension| suspension.suspension_epoch);
    require(
        event.cancellation_scope == Some(Open::Known(CancellationScope::Task))
            && event.work_item_id.is_none()
            && carries_no_attempt_slots(event)
            && carries_no_control_slots(event)
            && event.suspension_epoch == suspension_epoch,
    )?;
    let mut delta = Delta::status_only(cancelled);
    for (index, item) in body.work_items.iter().enumerate() {
        if !item.status.is_terminal() {
            let (cancelled_item, obligation) = cancel_work_item(item);
            delta.items.push((index, cancelled_item));
            delta.obligations.extend(obligation);
        }
    }
    delta.suspension = SuspensionChange::Clear;
    delta.control = Some(Control {
        intent_version: control.intent_version,
        status: ControlStatus::Active,
        active_interrupt_id: None,
    });
    delta.audit_facts.push(format!(
        "cancelled:task:{}:{}",
        body.task_id.value(),
        principal(event)
    ));
    Ok(delta)
}
