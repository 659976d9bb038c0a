//! What the console and `valp task status` show of a task's agent channels: the cost and
//! tokens each attempt's channel reported and the task's total, and the permission requests
//! still waiting for the Leader.
//!
//! A work item's attempts are `<task>:<item>:a1 … a<g>` (g: the current attempt's dispatch
//! generation, [`crate::runtime::workflow`]), so a task's usage is read from those attempts'
//! signal files only. Figures are integers (micro-USD, tokens); a figure no signal reported is
//! `None` ("unknown"), never 0.

use std::path::Path;

use valp_kernel::StateBody;

use super::approval::{self, ApprovalError, Request};
use super::inbox::{self, InboxError};
use super::precedence::{self, Usage};
use crate::clock::Timestamp;

/// One attempt's reported usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptUsage {
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// What its channel reported.
    pub usage: Usage,
}

/// A task's reported usage: per attempt that has channel signals, and in total.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskUsage {
    /// Attempts whose channel reported something, in work-item then attempt order.
    pub attempts: Vec<AttemptUsage>,
    /// Their sum (a figure unknown in every attempt stays unknown).
    pub total: Usage,
}

/// The usage the channel of `attempt_id` reported (every figure unknown without signals).
pub fn attempt_usage(control_root: &Path, attempt_id: &str) -> Result<Usage, InboxError> {
    Ok(precedence::usage(&inbox::read(control_root, attempt_id)?))
}

/// The usage of every attempt of the task `body`, read from their signal files; an attempt
/// whose file cannot be read is left out (its figures are unknown, not 0).
pub fn task_usage(control_root: &Path, body: &StateBody) -> TaskUsage {
    let task = body.task_id.value();
    let mut usage = TaskUsage::default();
    for item in &body.work_items {
        let Some(current) = &item.current_attempt else {
            continue;
        };
        let generations = u64::try_from(current.dispatch_generation).unwrap_or(0);
        for generation in 1..=generations {
            let attempt_id = format!("{task}:{}:a{generation}", item.work_item_id.value());
            let Ok(reported) = attempt_usage(control_root, &attempt_id) else {
                continue;
            };
            if reported.is_unknown() {
                continue;
            }
            usage.total = usage.total.plus(reported);
            usage.attempts.push(AttemptUsage {
                work_item_id: item.work_item_id.value().to_owned(),
                attempt_id,
                usage: reported,
            });
        }
    }
    usage
}

/// The permission requests of `task_id` still waiting for the Leader at `now`: not answered by
/// the hook and not past their deadline, oldest first.
pub fn pending_requests(
    control_root: &Path,
    task_id: &str,
    now: Timestamp,
) -> Result<Vec<Request>, ApprovalError> {
    let mut pending = Vec::new();
    for (request, dir) in approval::requests(control_root, task_id)? {
        let open = Timestamp::parse_rfc3339(&request.deadline).is_some_and(|at| at > now);
        if open && approval::answer_of(&dir, &request.request_id)?.is_none() {
            pending.push(request);
        }
    }
    Ok(pending)
}
