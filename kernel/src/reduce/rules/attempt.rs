//! The attempt lifecycle and fencing (RFC 0002 §8, D07).

use crate::model::{
    Attempt, AttemptStatus, CancellationScope, Event, EventKind, Open, StateBody, TaskStatus,
    WorkItem, WorkItemStatus,
};
use crate::reduce::delta::Delta;
use crate::reduce::obligations::{adapter_cancel_obligation, with_status};
use crate::reduce::rules::{Conflict, carries_no_control_slots, principal, require, target_index};

/// Whether the event names exactly this attempt: same attempt, dispatch and generation.
pub(crate) fn names_attempt(event: &Event, attempt: &Attempt) -> bool {
    event.attempt_id.as_ref() == Some(&attempt.attempt_id)
        && event.dispatch_id.as_ref() == Some(&attempt.dispatch_id)
        && event.dispatch_generation == Some(attempt.dispatch_generation)
}

/// Whether an attempt-scoped event is stale: it targets a missing item or attempt, a different
/// attempt tuple, or a fenced attempt. `attempt_created` for a new tuple is not stale only as a
/// retry of a blocked item with a new attempt id and a strictly higher generation.
///
/// Checked before idempotency, so a stale duplicate is refused rather than answered as a no-op.
pub(crate) fn is_stale(body: &StateBody, kind: EventKind, event: &Event) -> bool {
    if !kind.is_attempt_scoped() {
        return false;
    }
    let Some(item) = event
        .work_item_id
        .as_ref()
        .and_then(|id| body.work_item(id))
    else {
        return true;
    };
    let Some(attempt) = &item.current_attempt else {
        return kind != EventKind::AttemptCreated;
    };
    if kind == EventKind::AttemptCreated {
        if names_attempt(event, attempt) {
            return false;
        }
        let is_retry = item.status == WorkItemStatus::Blocked
            && event.attempt_id.as_ref() != Some(&attempt.attempt_id)
            && event
                .dispatch_generation
                .is_some_and(|generation| generation > attempt.dispatch_generation);
        return !is_retry;
    }
    !names_attempt(event, attempt) || attempt.status == AttemptStatus::Fenced
}

/// `attempt_created`: an eligible item (or a blocked one, as a retry with a new attempt id and
/// a strictly higher generation) gets a new attempt and becomes `submitted`.
pub(super) fn created(
    body: &StateBody,
    status: TaskStatus,
    event: &Event,
) -> Result<Delta, Conflict> {
    let index = target_index(body, event)?;
    let item = &body.work_items[index];
    let (Some(attempt_id), Some(dispatch_id), Some(generation)) = (
        event.attempt_id.as_ref(),
        event.dispatch_id.as_ref(),
        event.dispatch_generation,
    ) else {
        return Err(Conflict);
    };
    let retry_ok = match &item.current_attempt {
        None => true,
        Some(previous) => {
            item.status == WorkItemStatus::Blocked
                && generation > previous.dispatch_generation
                && attempt_id != &previous.attempt_id
        }
    };
    require(
        matches!(
            item.status,
            WorkItemStatus::Eligible | WorkItemStatus::Blocked
        ) && retry_ok,
    )?;
    let mut delta = Delta::status_only(status);
    delta.items.push((
        index,
        WorkItem {
            status: WorkItemStatus::Submitted,
            current_attempt: Some(Attempt {
                task_id: body.task_id.clone(),
                work_item_id: item.work_item_id.clone(),
                attempt_id: attempt_id.clone(),
                dispatch_id: dispatch_id.clone(),
                dispatch_generation: generation,
                status: AttemptStatus::Created,
            }),
            ..item.clone()
        },
    ));
    Ok(delta)
}

/// `attempt_fenced`: a live attempt is fenced; every later event for it is stale.
pub(super) fn fenced(
    body: &StateBody,
    status: TaskStatus,
    event: &Event,
) -> Result<Delta, Conflict> {
    let index = target_index(body, event)?;
    let item = &body.work_items[index];
    let attempt = item.current_attempt.as_ref().ok_or(Conflict)?;
    require(attempt.status.is_live() && names_attempt(event, attempt))?;
    let mut delta = Delta::status_only(status);
    delta.items.push((
        index,
        WorkItem {
            current_attempt: Some(with_status(attempt, AttemptStatus::Fenced)),
            ..item.clone()
        },
    ));
    Ok(delta)
}

/// The item and attempt statuses an attempt event requires (`None`: see
/// [`progressed`]) and the ones it leaves.
type Step = (
    Option<WorkItemStatus>,
    Option<AttemptStatus>,
    WorkItemStatus,
    AttemptStatus,
);

fn step(kind: EventKind) -> Step {
    use AttemptStatus as A;
    use WorkItemStatus as W;
    match kind {
        EventKind::AttemptSubmitted => (
            Some(W::Submitted),
            Some(A::Created),
            W::Running,
            A::Submitted,
        ),
        EventKind::AttemptRunning => (Some(W::Running), Some(A::Submitted), W::Running, A::Running),
        EventKind::AttemptCompleted => (
            Some(W::Running),
            Some(A::Running),
            W::Completed,
            A::Completed,
        ),
        EventKind::AttemptFailed => (None, None, W::Failed, A::Failed),
        _ => (None, None, W::Cancelled, A::Cancelled),
    }
}

/// `attempt_{submitted,running,completed,failed,cancelled}` for the current attempt.
///
/// Failure and cancellation are allowed from any live attempt of a submitted or running item.
/// A cancel must name the attempt scope and no interrupt or redirect slots, and yields an
/// `adapter_cancel:` obligation when the attempt had reached a runtime.
pub(super) fn progressed(
    body: &StateBody,
    status: TaskStatus,
    kind: EventKind,
    event: &Event,
) -> Result<Delta, Conflict> {
    let index = target_index(body, event)?;
    let item = &body.work_items[index];
    let cancel = kind == EventKind::AttemptCancelled;
    if cancel {
        require(
            event.cancellation_scope == Some(Open::Known(CancellationScope::Attempt))
                && carries_no_control_slots(event),
        )?;
    }
    let attempt = item.current_attempt.as_ref().ok_or(Conflict)?;
    require(attempt.status != AttemptStatus::Fenced && names_attempt(event, attempt))?;
    let (item_from, attempt_from, item_to, attempt_to) = step(kind);
    let ends_early = matches!(kind, EventKind::AttemptFailed | EventKind::AttemptCancelled);
    require(
        item_from.is_none_or(|from| item.status == from)
            && attempt_from.is_none_or(|from| attempt.status == from)
            && (!ends_early
                || (matches!(
                    item.status,
                    WorkItemStatus::Submitted | WorkItemStatus::Running
                ) && attempt.status.is_live())),
    )?;
    let mut delta = Delta::status_only(status);
    delta.items.push((
        index,
        WorkItem {
            status: item_to,
            current_attempt: Some(with_status(attempt, attempt_to)),
            ..item.clone()
        },
    ));
    if cancel {
        if matches!(
            attempt.status,
            AttemptStatus::Submitted | AttemptStatus::Running
        ) {
            delta.obligations.push(adapter_cancel_obligation(attempt));
        }
        delta.audit_facts.push(format!(
            "cancelled:attempt:{}:{}",
            attempt.attempt_id.value(),
            principal(event)
        ));
    }
    Ok(delta)
}
