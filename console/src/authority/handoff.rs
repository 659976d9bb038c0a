//! Handing a task over from a fenced Leader epoch to the active one (see ARCHITECTURE.md,
//! "Task handoff across epochs").
//!
//! A task journal is bound for life to the epoch in its genesis; after a rotation no event of
//! the old epoch is accepted, so the task cannot continue as it is. A handoff is the only way
//! on, and it is explicit and recorded:
//!
//! 1. the active Leader approves it (approval evidence, like a selection);
//! 2. the ledger accepts `task_handed_over` (task, successor, from and to epoch), with the
//!    predecessor's final Task State stored as evidence in the same EvidenceSet, so the ledger
//!    binds exactly which state was handed over;
//! 3. the successor task journal is created at the active epoch. Its frozen work-item table is
//!    the predecessor's unfinished work: every item not `completed`, back to `pending` with no
//!    attempt, keeping its requirement and its edges to other unfinished items (edges to
//!    completed items are satisfied and dropped). A planned predecessor's successor is
//!    published from the same plan cut down to those items (so it runs and closes through the
//!    Done gate like any task); an unplanned one gets the bare genesis.
//!
//! The ledger entry comes first: if creating the journal fails, running the handoff again
//! finds the recorded handoff and only creates the missing journal.

use valp_kernel::canonical::Canonical;
use valp_kernel::installation::InstallationLive;
use valp_kernel::replay::GenesisRoot;
use valp_kernel::{Identity, IdentityKind, InstallationEventKind, State, WorkItem, WorkItemStatus};
use valp_store::{Access, ControlRoot, Journal};

use super::Approval;
use super::AuthorityError;
use super::lane::{ApprovalRecord, event, identity, propose};
use crate::evidence;

/// What a handoff did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The fenced task.
    pub task_id: String,
    /// Its successor at the active epoch.
    pub successor_task_id: String,
    /// The fenced epoch.
    pub from_epoch: i128,
    /// The active epoch.
    pub to_epoch: i128,
    /// Work items carried over (not completed in the predecessor).
    pub carried: usize,
    /// Work items left behind because they were completed.
    pub completed: usize,
    /// Whether this run only created the journal of a handoff recorded earlier.
    pub resumed: bool,
}

/// The default successor id: `<task>-e<epoch>`.
pub fn default_successor(task_id: &str, epoch: i128) -> String {
    format!("{task_id}-e{epoch}")
}

/// Hands `task_id` over to the active epoch as `successor_id`, approved by `approval`.
pub fn hand_over(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    task_id: &str,
    successor_id: &str,
    approval: &Approval,
) -> Result<Handoff, AuthorityError> {
    let predecessor = root.open_task(task_id, Access::ReadOnly)?;
    let final_state = predecessor.live().to_state();
    let body = &final_state.body;
    let state = ledger.live().state();
    let Some(leader) = state.leader.clone() else {
        return Err(AuthorityError::Invalid(
            "no Leader is bound: a handoff needs the active Leader's approval".to_owned(),
        ));
    };
    let recorded = state
        .handoffs
        .iter()
        .find(|handoff| handoff.task_id.value() == task_id)
        .cloned();
    if let Some(handoff) = &recorded {
        if handoff.successor_task_id.value() != successor_id
            || root
                .layout()
                .task_dir(successor_id)
                .join(valp_store::journal::JOURNAL_FILE)
                .exists()
        {
            return Err(AuthorityError::Invalid(format!(
                "task {task_id} was already handed over to {} (epoch {} -> {})",
                handoff.successor_task_id.value(),
                handoff.from_epoch,
                handoff.to_epoch
            )));
        }
    } else {
        if body.leader_epoch >= state.active_epoch {
            return Err(AuthorityError::Invalid(format!(
                "task {task_id} is bound to epoch {}, the active one: there is nothing to hand \
                 over",
                body.leader_epoch
            )));
        }
        if body
            .status
            .known()
            .is_some_and(valp_kernel::TaskStatus::is_terminal)
        {
            return Err(AuthorityError::Invalid(format!(
                "task {task_id} is {}: a finished task is not handed over",
                body.status.as_str()
            )));
        }
        let state_evidence = evidence::store(
            root,
            "task-state-",
            &final_state.canonical_bytes(),
            identity,
        )?;
        let record = ApprovalRecord {
            approval,
            action: "handoff",
            candidate_id: &leader.candidate.candidate_id,
            epoch: state.active_epoch,
        };
        let approval_evidence =
            evidence::store(root, "approval-", &record.canonical_bytes(), identity)?;
        let mut handed = event(ledger, InstallationEventKind::TaskHandedOver)?;
        handed.task_id = Some(identity(IdentityKind::Task, task_id.to_owned())?);
        handed.successor_task_id = Some(identity(IdentityKind::Task, successor_id.to_owned())?);
        handed.fenced_epoch = Some(body.leader_epoch);
        handed.authority_principal_id = Some(identity(
            IdentityKind::Principal,
            approval.approved_by.clone(),
        )?);
        handed.authority_evidence_id = Some(approval_evidence.evidence_id.clone());
        propose(ledger, &handed, &[approval_evidence, state_evidence])?;
    }
    let to_epoch = ledger.live().state().active_epoch;
    let successor = identity(IdentityKind::Task, successor_id.to_owned())?;
    let items = unfinished_work(&final_state, &successor);
    let carried = items.len();
    match crate::plan::of_task(root, task_id) {
        // A planned task: the successor is published from the plan's unfinished part, so it
        // runs like any task and closes through the Done gate with the policy carried over.
        Ok((plan, _, _)) => {
            crate::plan::publish(root, &successor_plan(&plan, successor_id, &items), to_epoch)
                .map_err(|error| AuthorityError::Invalid(error.to_string()))?;
        }
        Err(crate::plan::PlanError::NotPublished { .. }) => {
            let genesis = GenesisRoot {
                state: State::genesis(body.installation_id.clone(), to_epoch, successor, items),
            };
            root.create_task(&genesis)?;
        }
        Err(error) => return Err(AuthorityError::Invalid(error.to_string())),
    }
    Ok(Handoff {
        task_id: task_id.to_owned(),
        successor_task_id: successor_id.to_owned(),
        from_epoch: body.leader_epoch,
        to_epoch,
        carried,
        completed: body.work_items.len() - carried,
        resumed: recorded.is_some(),
    })
}

/// The successor's plan: the predecessor's, for the successor task, keeping only the work
/// items carried over (`items`), their edges among themselves, and the soft items the Done
/// policy may degrade that are still there.
fn successor_plan(
    plan: &crate::plan::Plan,
    successor_id: &str,
    items: &[WorkItem],
) -> crate::plan::Plan {
    let kept = |id: &str| items.iter().any(|item| item.work_item_id.value() == id);
    let mut successor = plan.clone();
    successor_id.clone_into(&mut successor.task_id);
    successor.work_items.retain(|item| kept(&item.id));
    for item in &mut successor.work_items {
        item.dependencies.retain(|dependency| kept(&dependency.id));
    }
    successor.done.degradable_soft_items.retain(|id| kept(id));
    successor
}

/// The predecessor's work items that were not completed, as fresh pending items of
/// `successor`; edges to completed items are dropped (they are satisfied).
fn unfinished_work(predecessor: &State, successor: &Identity) -> Vec<WorkItem> {
    let done = |id: &Identity| {
        predecessor
            .body
            .work_item(id)
            .is_some_and(|item| item.status == WorkItemStatus::Completed)
    };
    predecessor
        .body
        .work_items
        .iter()
        .filter(|item| item.status != WorkItemStatus::Completed)
        .map(|item| WorkItem {
            task_id: successor.clone(),
            work_item_id: item.work_item_id.clone(),
            requirement: item.requirement,
            status: WorkItemStatus::Pending,
            dependencies: item
                .dependencies
                .iter()
                .filter(|edge| !done(&edge.work_item_id))
                .cloned()
                .collect(),
            current_attempt: None,
        })
        .collect()
}
