//! Cancellation of work items and the `adapter_cancel:` obligations it emits.

use crate::json::write::Fields;
use crate::model::{Attempt, AttemptStatus, WorkItem, WorkItemStatus};

/// Prefix of the obligation asking the System to cancel a runtime attempt through its adapter.
pub const ADAPTER_CANCEL_PREFIX: &str = "adapter_cancel:";

/// `adapter_cancel:` + the canonical text (with its trailing LF) of the attempt's plain
/// identity values and generation.
pub fn adapter_cancel_obligation(attempt: &Attempt) -> String {
    let mut out = Vec::with_capacity(160);
    out.extend_from_slice(ADAPTER_CANCEL_PREFIX.as_bytes());
    let mut fields = Fields::begin(&mut out);
    fields.str("attempt_id", attempt.attempt_id.value());
    fields.int("dispatch_generation", attempt.dispatch_generation);
    fields.str("dispatch_id", attempt.dispatch_id.value());
    fields.str("task_id", attempt.task_id.value());
    fields.str("work_item_id", attempt.work_item_id.value());
    fields.end();
    out.push(b'\n');
    // Every byte written above comes from `&str` values or ASCII, so this never falls back.
    String::from_utf8(out).unwrap_or_default()
}

/// The attempt with a new status.
pub(crate) fn with_status(attempt: &Attempt, status: AttemptStatus) -> Attempt {
    Attempt {
        status,
        ..attempt.clone()
    }
}

/// The work item cancelled: its live attempt is cancelled too, and an attempt that was already
/// submitted to or running in a runtime yields an `adapter_cancel:` obligation.
pub(crate) fn cancel_work_item(item: &WorkItem) -> (WorkItem, Option<String>) {
    let mut obligation = None;
    let current_attempt = item.current_attempt.as_ref().map(|attempt| {
        if !attempt.status.is_live() {
            return attempt.clone();
        }
        if matches!(
            attempt.status,
            AttemptStatus::Submitted | AttemptStatus::Running
        ) {
            obligation = Some(adapter_cancel_obligation(attempt));
        }
        with_status(attempt, AttemptStatus::Cancelled)
    });
    let cancelled = WorkItem {
        status: WorkItemStatus::Cancelled,
        current_attempt,
        ..item.clone()
    };
    (cancelled, obligation)
}
