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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::time::Duration;

    use super::*;
    use crate::agent::channel::approval::{TimeoutAnswer, await_answer, open_request};
    use crate::agent::channel::hook::Ask;
    use crate::agent::channel::signal::AttemptIds;
    use crate::clock::FixedClock;

    fn ask(tool: &str) -> Ask {
        Ask {
            tool_name: Some(tool.to_owned()),
            tool_use_id: None,
            detail: format!("run {tool}"),
        }
    }

    #[test]
    fn pending_requests_are_the_unanswered_ones_before_their_deadline() {
        let dir = tempfile::tempdir().unwrap();
        let attempt = AttemptIds {
            task_id: "T".into(),
            work_item_id: "w".into(),
            attempt_id: "T:w:a1".into(),
        };
        let clock = FixedClock::new(Timestamp::from_millis(1_000_000));
        let wait = Duration::from_secs(60);
        let (answered, folder) = open_request(
            dir.path(),
            &attempt,
            1,
            "claude",
            None,
            &ask("Bash"),
            wait,
            &clock,
        )
        .unwrap();
        open_request(
            dir.path(),
            &attempt,
            2,
            "claude",
            None,
            &ask("Write"),
            wait,
            &clock,
        )
        .unwrap();
        // The first is answered (its deadline passed on a later clock).
        let later = FixedClock::new(Timestamp::from_millis(1_061_000));
        await_answer(
            &folder,
            &answered,
            Duration::from_millis(1),
            TimeoutAnswer::Deny,
            &later,
        )
        .unwrap();
        let pending = |millis| {
            pending_requests(dir.path(), "T", Timestamp::from_millis(millis))
                .unwrap()
                .iter()
                .map(|request| request.tool_name.clone().unwrap_or_default())
                .collect::<Vec<_>>()
        };
        assert_eq!(pending(1_000_500), ["Write"]);
        assert!(pending(1_060_000).is_empty(), "past its deadline");
        assert!(
            pending_requests(dir.path(), "other", Timestamp::from_millis(0))
                .unwrap()
                .is_empty()
        );
    }
}
