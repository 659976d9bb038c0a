//! The dependency frontier: where every work item stands, for schedulers and the console.
//!
//! Pure and derived from the State alone. It uses the same dependency gate as the reducer's
//! `work_item_eligible` rule, so an item reported [`Position::Unlocked`] is exactly one whose
//! dependencies allow its eligibility event. (The task may still refuse that event for reasons
//! of its own: an interrupted task accepts no work-item events.)

use crate::model::{Attempt, Identity, Requirement, StateBody, WorkItemStatus};
use crate::reduce::dependency_gate;

/// A dependency that keeps an item locked: a hard dependency that is not completed, or a
/// dependency of any kind that names no existing item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lock {
    /// The dependency.
    pub work_item_id: Identity,
    /// Its status, or `None` when no such item exists (which locks forever).
    pub status: Option<WorkItemStatus>,
}

/// Where a work item stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// Pending, and every hard dependency is completed: the dependency gate of
    /// `work_item_eligible` is open. Soft dependencies that are not completed are listed (they
    /// become audit facts).
    Unlocked {
        /// Soft dependencies not completed.
        soft_unmet: Vec<Identity>,
    },
    /// Pending, waiting for the listed dependencies.
    Locked {
        /// Every dependency that gates, in declared order.
        by: Vec<Lock>,
    },
    /// Eligible: ready for a first attempt.
    Ready,
    /// Submitted or running with its current attempt.
    InFlight {
        /// The current attempt, if the state has one.
        attempt: Option<Attempt>,
    },
    /// Blocked: a retry needs a new attempt with a higher generation.
    Blocked {
        /// The last attempt, if any.
        attempt: Option<Attempt>,
    },
    /// Completed, partial, degraded, failed, cancelled or skipped.
    Settled(WorkItemStatus),
}

/// One work item on the frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontierItem {
    /// The item.
    pub work_item_id: Identity,
    /// How much the task needs it.
    pub requirement: Requirement,
    /// Its status.
    pub status: WorkItemStatus,
    /// Where it stands.
    pub position: Position,
}

/// Classifies every work item, in work-item table order.
pub fn frontier(body: &StateBody) -> Vec<FrontierItem> {
    body.work_items
        .iter()
        .map(|item| {
            let position = match item.status {
                WorkItemStatus::Pending => match dependency_gate(body, item) {
                    Some(_) => Position::Unlocked {
                        soft_unmet: item
                            .dependencies
                            .iter()
                            .filter(|dependency| dependency.requirement == Requirement::Soft)
                            .filter(|dependency| !is_completed(body, &dependency.work_item_id))
                            .map(|dependency| dependency.work_item_id.clone())
                            .collect(),
                    },
                    None => Position::Locked {
                        by: item
                            .dependencies
                            .iter()
                            .filter_map(|dependency| {
                                let status =
                                    body.work_item(&dependency.work_item_id).map(|d| d.status);
                                let gates = match status {
                                    None => true,
                                    Some(status) => {
                                        dependency.requirement == Requirement::Required
                                            && status != WorkItemStatus::Completed
                                    }
                                };
                                gates.then(|| Lock {
                                    work_item_id: dependency.work_item_id.clone(),
                                    status,
                                })
                            })
                            .collect(),
                    },
                },
                WorkItemStatus::Eligible => Position::Ready,
                WorkItemStatus::Submitted | WorkItemStatus::Running => Position::InFlight {
                    attempt: item.current_attempt.clone(),
                },
                WorkItemStatus::Blocked => Position::Blocked {
                    attempt: item.current_attempt.clone(),
                },
                settled => Position::Settled(settled),
            };
            FrontierItem {
                work_item_id: item.work_item_id.clone(),
                requirement: item.requirement,
                status: item.status,
                position,
            }
        })
        .collect()
}

fn is_completed(body: &StateBody, work_item_id: &Identity) -> bool {
    body.work_item(work_item_id)
        .is_some_and(|item| item.status == WorkItemStatus::Completed)
}
