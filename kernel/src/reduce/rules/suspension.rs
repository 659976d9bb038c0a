//! Coordinator suspension and wake (the kernel's suspension sub-machine).

use std::collections::BTreeSet;

use crate::model::{
    Event, Open, StateBody, Suspension, SuspensionStatus, TaskStatus, WakeReason, WorkItemStatus,
};
use crate::reduce::delta::{Delta, SuspensionChange};
use crate::reduce::rules::{Conflict, require};

/// `suspension_started`: an executing task waits for a non-empty, duplicate-free set of its work
/// items. The first suspension has epoch 0; each later one follows a resumed suspension with
/// epoch + 1 and a new id.
pub(super) fn started(
    body: &StateBody,
    status: TaskStatus,
    event: &Event,
) -> Result<Delta, Conflict> {
    let (Some(suspension_id), Some(epoch), Some(wait_policy_id), Some(wait_policy_digest)) = (
        event.suspension_id.as_ref(),
        event.suspension_epoch,
        event.wait_policy_id.as_ref(),
        event.wait_policy_digest.as_ref(),
    ) else {
        return Err(Conflict);
    };
    let required = &event.required_work_item_ids;
    let unique: BTreeSet<_> = required.iter().collect();
    let follows_prior = match &body.suspension {
        None => epoch == 0,
        Some(prior) => {
            prior.status == SuspensionStatus::Resumed
                && Some(epoch) == prior.suspension_epoch.checked_add(1)
                && suspension_id != &prior.suspension_id
        }
    };
    require(
        status == TaskStatus::Executing
            && !required.is_empty()
            && unique.len() == required.len()
            && event.wake_id.is_none()
            && event.wake_reason.is_none()
            && follows_prior
            && required.iter().all(|id| body.work_item(id).is_some()),
    )?;
    let mut delta = Delta::status_only(status);
    delta.suspension = SuspensionChange::Set(Box::new(Suspension {
        task_id: body.task_id.clone(),
        suspension_id: suspension_id.clone(),
        suspension_epoch: epoch,
        status: SuspensionStatus::Waiting,
        wait_policy_id: wait_policy_id.clone(),
        wait_policy_digest: wait_policy_digest.clone(),
        required_work_item_ids: required.clone(),
        accepted_wake_id: None,
        wake_reason: None,
    }));
    Ok(delta)
}

/// `wake_accepted`: the waiting suspension resumes once every required item is completed. The
/// event must restate the suspension's identity, epoch, policy and required items exactly.
pub(super) fn wake_accepted(
    body: &StateBody,
    status: TaskStatus,
    event: &Event,
) -> Result<Delta, Conflict> {
    let current = body.suspension.as_ref().ok_or(Conflict)?;
    let wake_id = event.wake_id.as_ref().ok_or(Conflict)?;
    require(
        status == TaskStatus::Executing
            && current.status == SuspensionStatus::Waiting
            && event.suspension_id.as_ref() == Some(&current.suspension_id)
            && event.suspension_epoch == Some(current.suspension_epoch)
            && event.wait_policy_id.as_ref() == Some(&current.wait_policy_id)
            && event.wait_policy_digest.as_ref() == Some(&current.wait_policy_digest)
            && event.required_work_item_ids == current.required_work_item_ids
            && event.wake_reason == Some(Open::Known(WakeReason::DependencyReady))
            && current.required_work_item_ids.iter().all(|id| {
                body.work_item(id)
                    .is_some_and(|item| item.status == WorkItemStatus::Completed)
            }),
    )?;
    let mut delta = Delta::status_only(status);
    delta.suspension = SuspensionChange::Set(Box::new(Suspension {
        status: SuspensionStatus::Resumed,
        accepted_wake_id: Some(wake_id.clone()),
        wake_reason: Some(WakeReason::DependencyReady),
        ..current.clone()
    }));
    Ok(delta)
}
