//! Work-item eligibility and settlement (RFC 0002 §10, D06).

use crate::model::{
    CancellationScope, Event, EventKind, Open, Requirement, StateBody, TaskStatus, WorkItem,
    WorkItemStatus,
};
use crate::reduce::delta::Delta;
use crate::reduce::obligations::cancel_work_item;
use crate::reduce::rules::{
    Conflict, carries_no_attempt_slots, carries_no_control_slots, principal, require, target_index,
};

/// Whether every hard (`required`) dependency of `item` is completed, and the audit facts for
/// soft dependencies that are not. Optional dependencies never gate. A dependency on an item
/// that does not exist gates.
pub fn dependency_gate(body: &StateBody, item: &WorkItem) -> Option<Vec<String>> {
    let mut soft_unmet = Vec::new();
    for dependency in &item.dependencies {
        let target = body.work_item(&dependency.work_item_id)?;
        let completed = target.status == WorkItemStatus::Completed;
        match dependency.requirement {
            Requirement::Required if !completed => return None,
            Requirement::Soft if !completed => soft_unmet.push(format!(
                "soft_dependency_unmet:{}:{}",
                item.work_item_id.value(),
                target.work_item_id.value()
            )),
            _ => {}
        }
    }
    Some(soft_unmet)
}

/// `work_item_eligible`: a pending item whose hard dependencies are completed becomes eligible.
pub(super) fn eligible(
    body: &StateBody,
    status: TaskStatus,
    event: &Event,
) -> Result<Delta, Conflict> {
    let index = target_index(body, event)?;
    let item = &body.work_items[index];
    let soft_unmet = dependency_gate(body, item).ok_or(Conflict)?;
    require(item.status == WorkItemStatus::Pending)?;
    let mut delta = Delta::status_only(status);
    delta.items.push((
        index,
        WorkItem {
            status: WorkItemStatus::Eligible,
            ..item.clone()
        },
    ));
    delta.audit_facts = soft_unmet;
    Ok(delta)
}

/// The item statuses a settlement event may leave.
fn settles_from(kind: EventKind, status: WorkItemStatus) -> bool {
    use WorkItemStatus as W;
    match kind {
        EventKind::WorkItemPartial | EventKind::WorkItemDegraded => status == W::Running,
        EventKind::WorkItemBlocked => {
            matches!(status, W::Pending | W::Eligible | W::Submitted | W::Running)
        }
        EventKind::WorkItemFailed | EventKind::WorkItemCancelled => {
            matches!(
                status,
                W::Pending | W::Eligible | W::Submitted | W::Running | W::Blocked
            )
        }
        EventKind::WorkItemSkipped => matches!(status, W::Pending | W::Eligible),
        _ => false,
    }
}

/// The status a settlement event leaves the item in.
fn settled_status(kind: EventKind) -> WorkItemStatus {
    match kind {
        EventKind::WorkItemPartial => WorkItemStatus::Partial,
        EventKind::WorkItemDegraded => WorkItemStatus::Degraded,
        EventKind::WorkItemBlocked => WorkItemStatus::Blocked,
        EventKind::WorkItemFailed => WorkItemStatus::Failed,
        EventKind::WorkItemSkipped => WorkItemStatus::Skipped,
        _ => WorkItemStatus::Cancelled,
    }
}

/// `work_item_{partial,degraded,blocked,failed,cancelled,skipped}`.
///
/// A cancel must name the work-item scope and no attempt, interrupt or redirect slots; it also
/// cancels the live attempt (with an adapter obligation when the attempt reached a runtime).
/// Only items that are not `required`, and that no item depends on as `required`, may be skipped.
pub(super) fn settled(
    body: &StateBody,
    status: TaskStatus,
    kind: EventKind,
    event: &Event,
) -> Result<Delta, Conflict> {
    let index = target_index(body, event)?;
    let item = &body.work_items[index];
    if kind == EventKind::WorkItemCancelled {
        require(
            event.cancellation_scope == Some(Open::Known(CancellationScope::WorkItem))
                && carries_no_attempt_slots(event)
                && carries_no_control_slots(event),
        )?;
    }
    require(settles_from(kind, item.status))?;
    if kind == EventKind::WorkItemSkipped {
        let hard_dependency_target = body.work_items.iter().any(|candidate| {
            candidate.dependencies.iter().any(|dependency| {
                dependency.work_item_id == item.work_item_id
                    && dependency.requirement == Requirement::Required
            })
        });
        require(item.requirement != Requirement::Required && !hard_dependency_target)?;
    }
    let mut delta = Delta::status_only(status);
    if kind == EventKind::WorkItemCancelled {
        let (cancelled, obligation) = cancel_work_item(item);
        delta.items.push((index, cancelled));
        delta.obligations.extend(obligation);
        delta.audit_facts.push(format!(
            "cancelled:work_item:{}:{}",
            item.work_item_id.value(),
            principal(event)
        ));
    } else {
        delta.items.push((
            index,
            WorkItem {
                status: settled_status(kind),
                ..item.clone()
            },
        ));
    }
    Ok(delta)
}
