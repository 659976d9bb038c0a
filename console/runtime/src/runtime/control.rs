//! The Leader's operations on a task (RFC 0002 §9): cancel, interrupt, resume, redirect, the
//! review and approval decisions, and the ways forward from `blocked` and `fixing`: a retry of
//! a blocked work item (a new attempt, which the System then runs like its own) and recovery
//! (`blocked_recovery_to_fixing`, or `fix_dispatch_requested` for a task already `fixing`).
//! Each is proposed to the kernel with an operator action record (`valp-operator-action.v1`:
//! who, when, why) stored as evidence; the kinds the kernel binds to authority also name the
//! approving principal (the local OS account the Doctor observed) and that record.
//!
//! A review pass on a task whose plan requires approval (`approval = "required"`) is proposed
//! as `approval_required_raised` (the review's record as its evidence): `review_passed` would
//! skip the approval. A retry on a `blocked` task first recovers it to `fixing` (a blocked task
//! runs nothing), each step its own event with its own record.
//!
//! Only a re-proven Leader on the task's own epoch may act; the caller proves the session, this
//! module checks the epoch and builds exactly the slots each kind requires.

use valp_kernel::canonical::Canonical;
use valp_kernel::json::write::Fields;
use valp_kernel::{
    CancellationScope, ControlReason, ControlStatus, Event, EventKind, Evidence, Identity,
    IdentityKind, Open, StateBody, TaskStatus, WorkItemStatus,
};
use valp_store::{Appended, ControlRoot, Journal};

use crate::adapter::{process, tmux};
use crate::clock::Timestamp;
use crate::evidence;

/// What the Leader asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// Cancel the whole task.
    CancelTask,
    /// Cancel one work item (and its live attempt).
    CancelItem(String),
    /// Stop automatic dispatch until resumed.
    Interrupt,
    /// Lift the active interrupt.
    Resume,
    /// A new intent version: the listed items are superseded (cancelled); the task goes to
    /// `fixing`. The intent text is stored as evidence.
    Redirect {
        /// Superseded work items.
        superseded: Vec<String>,
        /// The new intent (e.g. the contents of an intent file).
        intent: Vec<u8>,
    },
    /// The Leader's review: pass (`review_passed`) or reject (`review_rejected`).
    Review(bool),
    /// The Leader's approval decision: grant or deny.
    Approval(bool),
    /// A review pass on a task whose plan requires approval: `approval_required_raised`.
    RequestApproval,
    /// A new attempt for a blocked work item (its retry budget may be spent).
    Retry(String),
    /// `blocked` -> `fixing`; for a `fixing` task, dispatch it again.
    Recover,
}

impl Operation {
    fn name(&self) -> &'static str {
        match self {
            Self::CancelTask => "cancel_task",
            Self::CancelItem(_) => "cancel_work_item",
            Self::Interrupt => "interrupt",
            Self::Resume => "resume",
            Self::Redirect { .. } => "redirect",
            Self::Review(true) => "review_pass",
            Self::Review(false) => "review_reject",
            Self::Approval(true) => "approval_grant",
            Self::Approval(false) => "approval_deny",
            Self::RequestApproval => "review_pass_approval_required",
            Self::Retry(_) => "retry_work_item",
            Self::Recover => "recover",
        }
    }
}

/// Who acts, when, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The approving principal (`user:<login>`).
    pub principal: String,
    /// When.
    pub at: Timestamp,
    /// Why, in the Leader's words.
    pub note: String,
}

/// What the kernel said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted: the new revision, and the obligations it raised (adapter cancels).
    Accepted {
        /// The revision after the event.
        revision: u64,
        /// `adapter_cancel:` obligations to carry out.
        obligations: Vec<String>,
    },
    /// Refused by the kernel (nothing written).
    Refused {
        /// The kernel's code.
        code: String,
        /// Why.
        reason: String,
    },
}

/// Why an operation could not be proposed at all.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] valp_store::StoreError),
    /// The operation does not make sense for this task (the message says why).
    #[error("{0}")]
    Invalid(String),
}

/// `valp-operator-action.v1`: the record bound as authority evidence.
struct ActionRecord<'a> {
    operation: &'a Operation,
    actor: &'a Actor,
    task_id: &'a str,
    epoch: i128,
    revision: i128,
    intent_digest: Option<String>,
}

impl Canonical for ActionRecord<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("action", self.operation.name());
        fields.str("at", &self.actor.at.to_rfc3339());
        fields.int("expected_revision", self.revision);
        if let Some(digest) = &self.intent_digest {
            fields.str("intent_digest", digest);
        }
        fields.int("leader_epoch", self.epoch);
        fields.str("note", &self.actor.note);
        fields.str("principal_id", &self.actor.principal);
        fields.str("schema_version", "valp-operator-action.v1");
        if let Operation::Redirect { superseded, .. } = self.operation {
            fields.strs("superseded_work_item_ids", superseded);
        }
        fields.str("task_id", self.task_id);
        if let Operation::CancelItem(item) | Operation::Retry(item) = self.operation {
            fields.str("work_item_id", item);
        }
        fields.end();
    }
}

fn identity(kind: IdentityKind, value: impl Into<String>) -> Result<Identity, ControlError> {
    Identity::new(kind, value).map_err(|error| ControlError::Invalid(error.to_string()))
}

/// Asks the supervisor of every attempt of `body` still in flight (submitted or running) on a
/// supervised adapter to interrupt it once ([`process::request_interrupt`]): SIGINT to a
/// process adapter's command, the agent profile's interrupt keys (Escape, C-c) to a tmux
/// adapter's agent. Each is named with its adapter. External attempts have no supervisor and
/// are left alone.
pub fn signal_running(
    root: &ControlRoot,
    body: &valp_kernel::StateBody,
) -> Vec<(String, &'static str, Result<(), process::ProcessError>)> {
    body.work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .filter(|attempt| {
            matches!(
                attempt.status,
                valp_kernel::AttemptStatus::Submitted | valp_kernel::AttemptStatus::Running
            )
        })
        .filter_map(|attempt| {
            let id = attempt.attempt_id.value();
            [
                (tmux::ADAPTER_ID, tmux::attempt_ref(id)),
                (process::ADAPTER_ID, process::attempt_ref(id)),
            ]
            .into_iter()
            .map(|(adapter, relative)| (adapter, root.layout().root().join(relative)))
            .find(|(_, dir)| dir.join(process::REQUEST_FILE).is_file())
            .map(|(adapter, dir)| (id.to_owned(), adapter, process::request_interrupt(&dir)))
        })
        .collect()
}

/// The operations `operation` stands for on the task `body`, in order, each its own event: a
/// retry on a `blocked` task is a recovery to `fixing` first (a blocked task runs nothing), and
/// a review pass on a task whose plan requires approval asks for it
/// ([`Operation::RequestApproval`]). Everything else is itself.
pub fn expand(body: &StateBody, operation: &Operation, approval_required: bool) -> Vec<Operation> {
    match operation {
        Operation::Retry(_) if body.status.known() == Some(TaskStatus::Blocked) => {
            vec![Operation::Recover, operation.clone()]
        }
        Operation::Review(true) if approval_required => vec![Operation::RequestApproval],
        other => vec![other.clone()],
    }
}

/// Proposes `operation` on the task of `journal`, whose epoch must be `active_epoch`.
pub fn apply(
    root: &ControlRoot,
    journal: &mut Journal,
    active_epoch: i128,
    operation: &Operation,
    actor: &Actor,
) -> Result<Verdict, ControlError> {
    journal.refresh()?;
    let body = journal.live().body().clone();
    if body.leader_epoch != active_epoch {
        return Err(ControlError::Invalid(format!(
            "task {} is bound to epoch {}, which is fenced (the active epoch is {active_epoch}); \
             {}",
            body.task_id.value(),
            body.leader_epoch,
            super::fenced_hint(root, body.task_id.value())
        )));
    }
    let approval_required = crate::plan::of_task(root, body.task_id.value())
        .is_ok_and(|(plan, _, _)| plan.execution.approval_required);
    let steps = expand(&body, operation, approval_required);
    let Some((operation, before)) = steps.split_last() else {
        return Err(ControlError::Invalid("nothing to do".to_owned()));
    };
    if !before.is_empty() {
        // Each step is its own event, proposed (and re-read) in turn.
        for step in before {
            if let refused @ Verdict::Refused { .. } =
                apply(root, journal, active_epoch, step, actor)?
            {
                return Ok(refused);
            }
        }
        return apply(root, journal, active_epoch, operation, actor);
    }
    let revision = body.revision;
    let intent = match operation {
        Operation::Redirect { intent, .. } => {
            Some(evidence::store(root, "intent-", intent, identity)?)
        }
        _ => None,
    };
    let record = ActionRecord {
        operation,
        actor,
        task_id: body.task_id.value(),
        epoch: body.leader_epoch,
        revision,
        intent_digest: intent
            .as_ref()
            .map(|evidence| evidence.content_digest.clone()),
    };
    let authority = evidence::store(
        root,
        "operator-action-",
        &record.canonical_bytes(),
        identity,
    )?;
    let event = event_for(&body, operation, actor, &authority)?;
    let mut evidence = vec![authority];
    evidence.extend(intent);
    Ok(match journal.append(&event, &evidence)? {
        Appended::Accepted { seq, record } => Verdict::Accepted {
            revision: seq,
            obligations: record.obligations,
        },
        Appended::Duplicate { .. } => Verdict::Refused {
            code: "VALP-E-DUPLICATE".to_owned(),
            reason: "the same event was already accepted".to_owned(),
        },
        Appended::Rejected { error_code, reason } => Verdict::Refused {
            code: error_code.as_str().to_owned(),
            reason: super::refusal::explain_refusal(
                journal.live(),
                &event,
                active_epoch,
                error_code.as_str(),
            )
            .unwrap_or(reason),
        },
    })
}

/// The event for an operation, with exactly the slots its kind requires.
/// The event `operation` stands for on the task `body`, with `authority` as its authority
/// evidence: what [`apply`] proposes (its id and the slots the kernel checks).
pub fn event_for(
    body: &StateBody,
    operation: &Operation,
    actor: &Actor,
    authority: &Evidence,
) -> Result<Event, ControlError> {
    let control = body
        .control
        .clone()
        .unwrap_or(valp_kernel::Control::INITIAL);
    let kind = kind_of(body, operation)?;
    let mut event = super::task_event(body, kind, identity)?;
    if kind.is_authority_bound() {
        event.authority_principal_id = Some(identity(IdentityKind::Principal, &*actor.principal)?);
        event.authority_evidence_id = Some(authority.evidence_id.clone());
        event.control_reason = Some(Open::Known(ControlReason::UserRequested));
    }
    match operation {
        Operation::CancelTask => {
            event.cancellation_scope = Some(Open::Known(CancellationScope::Task));
            event.suspension_epoch = body
                .suspension
                .as_ref()
                .map(|suspension| suspension.suspension_epoch);
        }
        Operation::CancelItem(item) => {
            event.cancellation_scope = Some(Open::Known(CancellationScope::WorkItem));
            event.work_item_id = Some(identity(IdentityKind::WorkItem, &**item)?);
        }
        Operation::Interrupt => {
            event.interrupt_id = Some(identity(
                IdentityKind::Interrupt,
                format!("interrupt-r{}", body.revision),
            )?);
            event.intent_version = Some(control.intent_version);
        }
        Operation::Resume => {
            if control.status != ControlStatus::Interrupted {
                return Err(ControlError::Invalid(format!(
                    "task {} is not interrupted",
                    body.task_id.value()
                )));
            }
            event.interrupt_id.clone_from(&control.active_interrupt_id);
            event.intent_version = Some(control.intent_version);
        }
        Operation::Redirect { superseded, .. } => {
            event.redirect_id = Some(identity(
                IdentityKind::Redirect,
                format!("redirect-r{}", body.revision),
            )?);
            event.intent_version = Some(control.intent_version);
            event.next_intent_version = Some(control.intent_version + 1);
            event.superseded_work_item_ids = superseded
                .iter()
                .map(|item| identity(IdentityKind::WorkItem, &**item))
                .collect::<Result<_, _>>()?;
        }
        Operation::Retry(item) => retry_slots(body, item, &mut event)?,
        Operation::Review(_)
        | Operation::Approval(_)
        | Operation::RequestApproval
        | Operation::Recover => {}
    }
    Ok(event)
}

/// The event kind `operation` stands for on the task `body`.
fn kind_of(body: &StateBody, operation: &Operation) -> Result<EventKind, ControlError> {
    Ok(match operation {
        Operation::CancelTask => EventKind::TaskCancelled,
        Operation::CancelItem(_) => EventKind::WorkItemCancelled,
        Operation::Interrupt => EventKind::InterruptRequested,
        Operation::Resume => EventKind::InterruptResumed,
        Operation::Redirect { .. } => EventKind::RedirectAuthorized,
        Operation::Review(true) => EventKind::ReviewPassed,
        Operation::Review(false) => EventKind::ReviewRejected,
        Operation::Approval(true) => EventKind::ApprovalGranted,
        Operation::Approval(false) => EventKind::ApprovalDenied,
        Operation::RequestApproval => EventKind::ApprovalRequiredRaised,
        Operation::Retry(_) => EventKind::AttemptCreated,
        Operation::Recover => match body.status.known() {
            Some(TaskStatus::Blocked) => EventKind::BlockedRecoveryToFixing,
            Some(TaskStatus::Fixing) => EventKind::FixDispatchRequested,
            _ => {
                return Err(ControlError::Invalid(format!(
                    "task {} is {}: recovery moves a blocked task to fixing, or dispatches a \
                     fixing task again",
                    body.task_id.value(),
                    body.status.as_str()
                )));
            }
        },
    })
}

/// Fills the slots of the Leader's retry of `item`: the next generation of its attempt, named
/// as the System names its own. Refused unless the item is blocked and the task runs attempts.
fn retry_slots(body: &StateBody, item: &str, event: &mut Event) -> Result<(), ControlError> {
    let target = body
        .work_items
        .iter()
        .find(|candidate| candidate.work_item_id.value() == item)
        .ok_or_else(|| {
            ControlError::Invalid(format!(
                "task {} has no work item {item}",
                body.task_id.value()
            ))
        })?;
    if !matches!(
        body.status.known(),
        Some(TaskStatus::Executing | TaskStatus::Fixing)
    ) {
        // A blocked task is recovered first ([`expand`]); in verification, review,
        // approval or recording nothing runs, so the attempt would wait there unseen.
        return Err(ControlError::Invalid(format!(
            "task {} is {}: a work item is retried while the task executes, is fixing \
             or is blocked",
            body.task_id.value(),
            body.status.as_str()
        )));
    }
    if target.status != WorkItemStatus::Blocked {
        return Err(ControlError::Invalid(format!(
            "work item {item} is {}: only a blocked work item can be retried",
            target.status.as_str()
        )));
    }
    let generation = target
        .current_attempt
        .as_ref()
        .map_or(1, |attempt| attempt.dispatch_generation + 1);
    let slots = super::workflow::attempt_slots(body.task_id.value(), item, generation);
    event.work_item_id = Some(target.work_item_id.clone());
    event.attempt_id = Some(identity(IdentityKind::Attempt, slots.attempt_id)?);
    event.dispatch_id = Some(identity(IdentityKind::Dispatch, slots.dispatch_id)?);
    event.dispatch_generation = Some(generation);
    Ok(())
}
