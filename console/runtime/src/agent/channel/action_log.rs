//! The [`ApprovalLog`] of record: the task's operator-action journal (`tasks/<t>/actions.jsonl`,
//! [`valp_store::actions`]). There is one log of an approval, never a second file beside it.
//!
//! [`LogEntry::Decided`] appends an `approval_decision` record (action id `<request>/decision`,
//! principal = the decider, the decider's Leader epoch, the attempt and work item, `answers` =
//! the request id, allow/deny, the task revision the Leader decided against, `payload_digest` =
//! the digest of the decision file the hook reads). It is appended before the decision file is
//! written, so no agent is answered by a decision the journal does not hold; the store's epoch
//! fence refuses a stale Leader's decision with the store's error before anything is written.
//! [`LogEntry::Delivered`] and [`LogEntry::Stale`] append the `delivery` record of that action
//! (`<request>/delivery`, adapter `hook`, outcome `delivered` / `failed`, proof = the hook's
//! answer file and its digest).

use valp_kernel::Int;
use valp_kernel::canonical::sha256_digest;
use valp_store::actions::{
    ActionJournal, ActionKind, ActionRecord, Delivery, MAX_SUMMARY_CHARS, Outcome as Delivered,
};
use valp_store::{Access, ControlRoot};
use valp_view::sanitize::display_line;

use super::approval::{
    Answered, ApprovalError, ApprovalLog, LogEntry, Outcome, describe, json_line,
};

/// The adapter named by the hook's delivery records.
const ADAPTER: &str = "hook";
/// The principal of a delivery record: the hook bridge, not a person.
const HOOK_PRINCIPAL: &str = "adapter:hook";

/// Appends approval entries to the request's task's operator-action journal.
pub struct ActionLog<'a> {
    /// The installation.
    pub root: &'a ControlRoot,
    /// The task journal's revision the decision was made against.
    pub task_revision: Int,
}

impl ApprovalLog for ActionLog<'_> {
    fn record(&self, entry: &LogEntry) -> Result<(), ApprovalError> {
        let (request, decision, answered) = match entry {
            LogEntry::Decided { request, decision } => (request, decision, None),
            LogEntry::Delivered {
                request,
                decision,
                answered,
            } => (request, decision, Some((answered, Delivered::Delivered))),
            LogEntry::Stale {
                request,
                decision,
                answered,
            } => (request, decision, Some((answered, Delivered::Failed))),
        };
        let allow = decision.outcome == Outcome::Allow;
        let decided = ActionRecord {
            action_id: format!("{}/decision", request.request_id),
            kind: ActionKind::ApprovalDecision,
            principal_id: decision.decider.clone(),
            leader_epoch: Int::from(decision.leader_epoch),
            task_revision: self.task_revision,
            attempt_id: Some(request.attempt_id.clone()),
            work_item_id: Some(request.work_item_id.clone()),
            answers: Some(request.request_id.clone()),
            payload_digest: sha256_digest(&json_line(decision)),
            summary: summary(&format!(
                "{} {}: {}",
                if allow { "allow" } else { "deny" },
                request.tool_name.as_deref().unwrap_or("tool"),
                request.detail
            )),
            allow: Some(allow),
            delivery: None,
        };
        let record = match answered {
            None => decided,
            Some((answered, outcome)) => delivery(decided, answered, outcome),
        };
        let mut journal = ActionJournal::of_task(self.root, &request.task_id, Access::Write)?;
        journal.append(&record)?;
        Ok(())
    }
}

/// The delivery record of `decided`: what the hook answered the agent, proven by the answer
/// file's digest.
fn delivery(decided: ActionRecord, answered: &Answered, outcome: Delivered) -> ActionRecord {
    let digest = sha256_digest(&json_line(answered));
    ActionRecord {
        action_id: format!("{}/delivery", answered.request_id),
        kind: ActionKind::Delivery,
        principal_id: HOOK_PRINCIPAL.to_owned(),
        payload_digest: digest.clone(),
        summary: summary(&format!("the agent was answered {}", describe(answered))),
        allow: None,
        delivery: Some(Delivery {
            action_id: decided.action_id.clone(),
            adapter: ADAPTER.to_owned(),
            outcome,
            proof: Some((format!("{}.answer.json", answered.request_id), digest)),
        }),
        ..decided
    }
}

/// Untrusted agent text, one line, cut to the journal's limit.
fn summary(text: &str) -> String {
    display_line(text).chars().take(MAX_SUMMARY_CHARS).collect()
}
