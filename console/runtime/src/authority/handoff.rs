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
//!
//! Before the ledger entry, the fenced task's running work is stopped: its journal accepts
//! nothing any more and attempt ids are per task, so the successor cannot adopt an attempt, and
//! a process left running would go on next to the successor's own. Every process attempt folder
//! of the task whose supervisor still runs (work items and verification checks alike) is
//! cancelled through its supervisor, a supervisor that died has its process group killed, and
//! every live external attempt is asked to stop ([`effects::execute`], as for an accepted
//! cancel). What was stopped, and how, is stored as evidence (`valp-handoff-stopped.v1`) in the
//! handoff's EvidenceSet. Running the handoff again stops whatever still runs.

use std::path::Path;
use std::time::Duration;

use valp_kernel::canonical::Canonical;
use valp_kernel::installation::InstallationLive;
use valp_kernel::json::write::Fields;
use valp_kernel::reduce::adapter_cancel_obligation;
use valp_kernel::replay::GenesisRoot;
use valp_kernel::{
    Attempt, AttemptStatus, Identity, IdentityKind, InstallationEventKind, State, StateBody,
    WorkItem, WorkItemStatus,
};
use valp_store::{Access, ControlRoot, Journal};

use super::Approval;
use super::AuthorityError;
use super::lane::{ApprovalRecord, event, identity, propose};
use crate::abi::AdapterRequest;
use crate::adapter::{external, process};
use crate::evidence;
use crate::runtime::effects::{self, Outcome};

/// How long the handoff waits for each running supervisor to confirm its cancel.
const STOP_PATIENCE: Duration = Duration::from_secs(10);

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
    /// The fenced task's attempts that were still running, and how each was stopped.
    pub stopped: Vec<Stopped>,
}

/// A running attempt of the fenced task the handoff stopped (or tried to).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// The attempt (or verification check) id.
    pub attempt_id: String,
    /// What its adapter did: confirmed (with proof) or why it could not.
    pub outcome: Outcome,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use valp_view::sanitize::display_text;
        match &self.outcome {
            Outcome::Fulfilled { proof_ref, .. } => write!(
                f,
                "{}: stopped (proof {})",
                display_text(&self.attempt_id),
                display_text(proof_ref)
            ),
            Outcome::Blocked { reason } => write!(
                f,
                "{}: not confirmed ({})",
                display_text(&self.attempt_id),
                display_text(reason)
            ),
        }
    }
}

/// `valp-handoff-stopped.v1`: what the handoff stopped, stored as evidence of the handoff.
struct StoppedRecord<'a> {
    task_id: &'a str,
    stopped: &'a [Stopped],
}

impl Canonical for StoppedRecord<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let lines: Vec<String> = self.stopped.iter().map(ToString::to_string).collect();
        let mut fields = Fields::begin(out);
        fields.str("schema_version", "valp-handoff-stopped.v1");
        fields.strs("stopped", &lines);
        fields.str("task_id", self.task_id);
        fields.end();
    }
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
    // The final State is recorded whole (its history too): replayed from the genesis.
    let predecessor = root.open_task_with_history(task_id, Access::ReadOnly)?;
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
    let stopped;
    if let Some(handoff) = &recorded {
        // Whatever still runs of the fenced task is stopped on every run of the handoff.
        stopped = stop_running(root, body);
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
        stopped = stop_running(root, body);
        let handed = Handed {
            task_id,
            successor_id,
            approval,
            candidate_id: &leader.candidate.candidate_id,
            active_epoch: state.active_epoch,
        };
        record(root, ledger, &handed, &final_state, &stopped)?;
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
        stopped,
    })
}

/// Stops the running work of the fenced task `body`: process attempt folders of the task
/// (found by their requests, so verification checks too) whose supervisor runs or died, and
/// its live external attempts.
fn stop_running(root: &ControlRoot, body: &StateBody) -> Vec<Stopped> {
    let task_id = body.task_id.value();
    let mut targets: Vec<AdapterRequest> = process_requests(root, task_id)
        .into_iter()
        .filter(|(dir, _)| {
            matches!(
                process::supervisor_state(dir),
                process::SupervisorState::Running { .. } | process::SupervisorState::Dead { .. }
            )
        })
        .map(|(_, request)| request)
        .collect();
    for attempt in body
        .work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .filter(|attempt| attempt.status.is_live())
    {
        let dir = root
            .layout()
            .root()
            .join(external::attempt_ref(attempt.attempt_id.value()));
        if let Ok(request) = external::read_request(&dir) {
            targets.push(request);
        }
    }
    targets
        .into_iter()
        .map(|request| {
            let outcome = match obligation_of(&request) {
                Some(obligation) => effects::execute(root, &obligation, STOP_PATIENCE),
                None => Outcome::Blocked {
                    reason: "the attempt's request names an invalid identity".to_owned(),
                },
            };
            Stopped {
                attempt_id: request.attempt_id,
                outcome,
            }
        })
        .collect()
}

/// The requests of the process attempt folders that name `task_id`, with their folders.
fn process_requests(
    root: &ControlRoot,
    task_id: &str,
) -> Vec<(std::path::PathBuf, AdapterRequest)> {
    let attempts = root.layout().root().join("runtime/process/attempts");
    let Ok(entries) = std::fs::read_dir(&attempts) else {
        return Vec::new();
    };
    let mut found: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter_map(|dir| {
            let request = process::read_request(Path::new(&dir)).ok()?;
            (request.task_id == task_id).then_some((dir, request))
        })
        .collect();
    found.sort_by(|a, b| a.1.attempt_id.cmp(&b.1.attempt_id));
    found
}

/// The `adapter_cancel:` obligation naming the attempt of `request`, as the kernel writes it.
fn obligation_of(request: &AdapterRequest) -> Option<String> {
    let attempt = Attempt {
        task_id: Identity::new(IdentityKind::Task, &*request.task_id).ok()?,
        work_item_id: Identity::new(IdentityKind::WorkItem, &*request.work_item_id).ok()?,
        attempt_id: Identity::new(IdentityKind::Attempt, &*request.attempt_id).ok()?,
        dispatch_id: Identity::new(IdentityKind::Dispatch, &*request.dispatch_id).ok()?,
        dispatch_generation: i128::from(request.dispatch_generation),
        status: AttemptStatus::Running,
    };
    Some(adapter_cancel_obligation(&attempt))
}

/// What a new handoff names.
struct Handed<'a> {
    task_id: &'a str,
    successor_id: &'a str,
    approval: &'a Approval,
    /// The bound Leader session approving.
    candidate_id: &'a str,
    active_epoch: i128,
}

/// Proposes `task_handed_over` to the ledger, with the approval, the predecessor's final
/// State and what was stopped as its EvidenceSet.
fn record(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    handed: &Handed<'_>,
    final_state: &State,
    stopped: &[Stopped],
) -> Result<(), AuthorityError> {
    let state_evidence = evidence::store(
        root,
        "task-state-",
        &final_state.canonical_bytes(),
        identity,
    )?;
    let stopped_evidence = evidence::store(
        root,
        "handoff-stopped-",
        &StoppedRecord {
            task_id: handed.task_id,
            stopped,
        }
        .canonical_bytes(),
        identity,
    )?;
    let record = ApprovalRecord {
        approval: handed.approval,
        action: "handoff",
        candidate_id: handed.candidate_id,
        epoch: handed.active_epoch,
    };
    let approval_evidence =
        evidence::store(root, "approval-", &record.canonical_bytes(), identity)?;
    let mut event = event(ledger, InstallationEventKind::TaskHandedOver)?;
    event.task_id = Some(identity(IdentityKind::Task, handed.task_id.to_owned())?);
    event.successor_task_id = Some(identity(
        IdentityKind::Task,
        handed.successor_id.to_owned(),
    )?);
    event.fenced_epoch = Some(final_state.body.leader_epoch);
    event.authority_principal_id = Some(identity(
        IdentityKind::Principal,
        handed.approval.approved_by.clone(),
    )?);
    event.authority_evidence_id = Some(approval_evidence.evidence_id.clone());
    propose(
        ledger,
        &event,
        &[approval_evidence, state_evidence, stopped_evidence],
    )?;
    Ok(())
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
pub fn unfinished_work(predecessor: &State, successor: &Identity) -> Vec<WorkItem> {
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
