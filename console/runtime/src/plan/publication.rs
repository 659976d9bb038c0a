//! Publishing a plan as a task, and finding a task's plan again.
//!
//! A published task's journal holds, on line 0, the genesis whose work-item table is the plan's
//! work items (pending, with their edges), and on line 1 the first event,
//! `routing_validation_started` (event id [`PUBLISH_EVENT_ID`]), whose EvidenceSet is exactly
//! the plan (`plan-<16 hex>`) and its Done policy (`done-policy-<16 hex>`), the hex being the
//! start of each blob's SHA-256. The plan is therefore bound by digest into the task's first
//! input digest and can be re-derived from the journal and the evidence store alone.

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{decode_compact_entry, decode_genesis_root};
use valp_kernel::done::DonePolicy;
use valp_kernel::replay::GenesisRoot;
use valp_kernel::{
    Dependency, Event, EventKind, Evidence, Identity, IdentityKind, Int, State, WorkItem,
    WorkItemStatus,
};
use valp_store::chain::ChainReader;
use valp_store::journal::JOURNAL_FILE;
use valp_store::{Access, Appended, ControlRoot, Journal};

use super::{Plan, PlanError};
use crate::evidence;

/// The id prefix of a plan's evidence (`plan-<first 16 hex of its digest>`).
pub const PLAN_EVIDENCE_PREFIX: &str = "plan-";
/// The id prefix of a Done policy's evidence (`done-policy-<first 16 hex of its digest>`), as
/// the Done gate finds it.
pub const DONE_POLICY_EVIDENCE_PREFIX: &str = valp_kernel::done::POLICY_EVIDENCE_PREFIX;
/// The id of a published task's first event.
pub const PUBLISH_EVENT_ID: &str = "routing_validation_started-r0";

/// What [`publish`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The new task.
    pub task_id: String,
    /// The Leader epoch its journal is bound to.
    pub leader_epoch: Int,
    /// How many work items its genesis holds.
    pub work_items: usize,
    /// The plan's evidence.
    pub plan: Evidence,
    /// The Done policy's evidence.
    pub done_policy: Evidence,
    /// Whether this completed an earlier publication interrupted after the journal was
    /// created (the genesis was already there, identical).
    pub resumed: bool,
}

impl Plan {
    /// The genesis work-item table of task `task`: every work item pending, without an
    /// attempt, with its dependency edges in plan order.
    pub fn genesis_work_items(&self, task: &Identity) -> Result<Vec<WorkItem>, PlanError> {
        self.work_items
            .iter()
            .map(|item| {
                Ok(WorkItem {
                    task_id: task.clone(),
                    work_item_id: identity(IdentityKind::WorkItem, &item.id)?,
                    requirement: item.requirement,
                    status: WorkItemStatus::Pending,
                    dependencies: item
                        .dependencies
                        .iter()
                        .map(|edge| {
                            Ok(Dependency {
                                work_item_id: identity(IdentityKind::WorkItem, &edge.id)?,
                                requirement: edge.kind.requirement(),
                            })
                        })
                        .collect::<Result<_, PlanError>>()?,
                    current_attempt: None,
                })
            })
            .collect()
    }

    /// The GenesisRoot of the task this plan publishes.
    pub fn genesis(
        &self,
        installation_id: Identity,
        leader_epoch: Int,
    ) -> Result<GenesisRoot, PlanError> {
        let task = identity(IdentityKind::Task, &self.task_id)?;
        let work_items = self.genesis_work_items(&task)?;
        Ok(GenesisRoot {
            state: State::genesis(installation_id, leader_epoch, task, work_items),
        })
    }
}

fn identity(kind: IdentityKind, value: &str) -> Result<Identity, PlanError> {
    Identity::new(kind, value)
        .map_err(|error| PlanError::Invalid(format!("{value:?} is not an identity: {error}")))
}

/// Publishes a validated plan as a new task bound to `leader_epoch` (the active epoch, whose
/// Leader the caller re-proved): stores the plan and its Done policy as evidence, creates the
/// task journal with the plan's work items as its genesis table, and appends
/// `routing_validation_started` with both as its EvidenceSet.
///
/// Refuses a task that already exists, except the one left by a publication interrupted right
/// after creating the journal (revision 0, the same genesis): that one is completed.
pub fn publish(root: &ControlRoot, plan: &Plan, leader_epoch: Int) -> Result<Published, PlanError> {
    let installation_id = root.installation().installation_id.clone();
    let genesis = plan.genesis(installation_id.clone(), leader_epoch)?;
    let existing = existing(root, plan, &genesis)?;
    let plan_evidence = store(root, PLAN_EVIDENCE_PREFIX, &plan.canonical_bytes())?;
    let policy_evidence = store(
        root,
        DONE_POLICY_EVIDENCE_PREFIX,
        &plan.done_policy().canonical_bytes(),
    )?;
    let resumed = existing.is_some();
    let mut journal = match existing {
        Some(journal) => journal,
        None => root.create_task(&genesis)?,
    };
    let event = Event::new(
        identity(IdentityKind::Event, PUBLISH_EVENT_ID)?,
        installation_id,
        leader_epoch,
        genesis.state.body.task_id.clone(),
        EventKind::RoutingValidationStarted,
        0,
    );
    match journal.append(&event, &[plan_evidence.clone(), policy_evidence.clone()])? {
        Appended::Accepted { .. } | Appended::Duplicate { .. } => {}
        Appended::Rejected { error_code, reason } => {
            return Err(PlanError::Refused {
                event: PUBLISH_EVENT_ID.to_owned(),
                code: error_code.as_str().to_owned(),
                reason,
            });
        }
    }
    Ok(Published {
        task_id: plan.task_id.clone(),
        leader_epoch,
        work_items: plan.work_items.len(),
        plan: plan_evidence,
        done_policy: policy_evidence,
        resumed,
    })
}

/// The journal of an interrupted publication of exactly this genesis, opened for writing;
/// `None` when the task does not exist; a refusal when it exists otherwise.
fn existing(
    root: &ControlRoot,
    plan: &Plan,
    genesis: &GenesisRoot,
) -> Result<Option<Journal>, PlanError> {
    let task_id = &plan.task_id;
    if !root.layout().task_dir(task_id).join(JOURNAL_FILE).is_file() {
        return Ok(None);
    }
    let journal = root.open_task(task_id, Access::ReadOnly)?;
    let revision = journal.live().revision();
    if revision == 0 && journal.genesis() == genesis {
        return Ok(Some(root.open_task(task_id, Access::Write)?));
    }
    let same_plan = of_task(root, task_id)
        .is_ok_and(|(published, _, _)| published.canonical_bytes() == plan.canonical_bytes());
    Err(PlanError::Exists(if same_plan {
        format!(
            "task {task_id} is already published with this plan (revision {revision}); \
             nothing was written"
        )
    } else if revision == 0 {
        format!(
            "task {task_id} already exists with another genesis (epoch {}, {} work items); \
             publish the plan under another task_id",
            journal.genesis().state.body.leader_epoch,
            journal.genesis().state.body.work_items.len()
        )
    } else {
        format!(
            "task {task_id} already exists (revision {revision}); publish the plan under \
             another task_id"
        )
    }))
}

/// Stores `bytes` as evidence `<prefix><first 16 hex of the digest>`.
fn store(root: &ControlRoot, prefix: &str, bytes: &[u8]) -> Result<Evidence, PlanError> {
    evidence::store(root, prefix, bytes, |kind, value| identity(kind, &value))
}

/// The plan of a published task, with its evidence and the Done policy's evidence.
///
/// Reads the journal's first two lines (the chain of those lines is verified; the rest of the
/// journal is not read, so open the task journal to verify it by replay), takes the evidence
/// whose id starts with [`PLAN_EVIDENCE_PREFIX`] and [`DONE_POLICY_EVIDENCE_PREFIX`] from the
/// first event, loads both blobs (checked against their digests), decodes the plan strictly
/// from its canonical JSON and checks that the policy and the genesis work-item table are the
/// plan's.
pub fn of_task(root: &ControlRoot, task_id: &str) -> Result<(Plan, Evidence, Evidence), PlanError> {
    let path = root.layout().task_dir(task_id).join(JOURNAL_FILE);
    if !path.is_file() {
        return Err(PlanError::NoTask {
            task_id: task_id.to_owned(),
        });
    }
    let not_published = |reason: String| PlanError::NotPublished {
        task_id: task_id.to_owned(),
        reason,
    };
    let mut reader = ChainReader::open(&path)?;
    let genesis = reader
        .next_line()?
        .ok_or_else(|| not_published("the journal is empty".to_owned()))?;
    let genesis = decode_genesis_root(&genesis.entry())
        .map_err(|error| not_published(format!("line 1 is not a genesis: {error}")))?;
    if genesis.state.body.task_id.value() != task_id {
        return Err(not_published(format!(
            "the journal in its folder belongs to task {:?}",
            genesis.state.body.task_id.value()
        )));
    }
    let first = reader.next_line()?.ok_or_else(|| {
        not_published(
            "the journal has no first event (a publication interrupted after creating the \
             journal: publish the plan again to complete it)"
                .to_owned(),
        )
    })?;
    let entry = decode_compact_entry(&first.entry())
        .map_err(|error| not_published(format!("line 2 does not decode: {error}")))?;
    if entry.event.kind.known() != Some(EventKind::RoutingValidationStarted) {
        return Err(not_published(format!(
            "its first event is {}, not routing_validation_started",
            entry.event.kind.as_str()
        )));
    }
    let plan_evidence = one(&entry.evidence_set, PLAN_EVIDENCE_PREFIX).map_err(&not_published)?;
    let policy_evidence =
        one(&entry.evidence_set, DONE_POLICY_EVIDENCE_PREFIX).map_err(&not_published)?;
    let bad = |evidence: &Evidence, reason: String| PlanError::BadEvidence {
        task_id: task_id.to_owned(),
        evidence_id: evidence.evidence_id.value().to_owned(),
        reason,
    };
    let plan_bytes = root
        .blobs()
        .get(&plan_evidence.content_digest)
        .map_err(|error| bad(&plan_evidence, error.to_string()))?;
    let plan = Plan::from_canonical(plan_evidence.evidence_id.value(), &plan_bytes)
        .map_err(|errors| bad(&plan_evidence, errors.to_string()))?;
    if plan.task_id != task_id {
        return Err(bad(
            &plan_evidence,
            format!("the plan is for task {:?}", plan.task_id),
        ));
    }
    let work_items = plan.genesis_work_items(&genesis.state.body.task_id)?;
    if work_items != genesis.state.body.work_items {
        return Err(bad(
            &plan_evidence,
            "the plan's work items are not the task's genesis work-item table".to_owned(),
        ));
    }
    let policy_bytes = root
        .blobs()
        .get(&policy_evidence.content_digest)
        .map_err(|error| bad(&policy_evidence, error.to_string()))?;
    // A task published before the correction cycle froze the same policy without it (v1/v2).
    let declared = plan.done_policy();
    let before_v3 = DonePolicy {
        correction_cycle: false,
        ..declared.clone()
    };
    if policy_bytes != declared.canonical_bytes() && policy_bytes != before_v3.canonical_bytes() {
        return Err(bad(
            &policy_evidence,
            "not the Done policy the plan declares".to_owned(),
        ));
    }
    Ok((plan, plan_evidence, policy_evidence))
}

/// The one evidence whose id is `<prefix><first 16 hex of its digest>`.
fn one(evidence_set: &[Evidence], prefix: &str) -> Result<Evidence, String> {
    let mut found = evidence_set
        .iter()
        .filter(|evidence| evidence.evidence_id.value().starts_with(prefix));
    let (Some(evidence), None) = (found.next(), found.next()) else {
        return Err(format!(
            "its first event does not carry exactly one {prefix}… evidence"
        ));
    };
    let expected = evidence
        .content_digest
        .get(7..23)
        .map(|hex| format!("{prefix}{hex}"));
    if expected.as_deref() != Some(evidence.evidence_id.value()) {
        return Err(format!(
            "evidence {} is not named after its digest {}",
            evidence.evidence_id.value(),
            evidence.content_digest
        ));
    }
    Ok(evidence.clone())
}
