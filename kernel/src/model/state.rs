//! The Task State and its parts: work items, attempts, suspension, control, accepted events.

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::model::identity::Identity;
use crate::model::vocabulary::{
    AttemptStatus, ControlStatus, Open, Requirement, SuspensionStatus, TaskStatus, WakeReason,
    WorkItemStatus,
};

/// A protocol integer. The reference kernel uses unbounded integers; we carry `i128`, which holds
/// every value the reference vectors use (up to 2^63 − 1) with room to add one.
pub type Int = i128;

/// `schema_version` of a State.
pub const STATE_SCHEMA: &str = "valp-kernel-state.v1";
/// The protocol version this kernel implements.
pub const PROTOCOL_VERSION: &str = "0.3.0";

/// One accepted transition as recorded in a State's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedEvent {
    /// The accepted event.
    pub event_id: Identity,
    /// `<event_id>:accepted`.
    pub result_id: Identity,
    /// Digest of the event, evidence set and protocol version.
    pub input_digest: String,
    /// Digest of the accepted Result.
    pub result_digest: String,
}

/// A dependency edge of a work item; the requirement is the edge kind (`required` = hard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// The work item depended on.
    pub work_item_id: Identity,
    /// Edge kind.
    pub requirement: Requirement,
}

/// The current execution attempt of a work item, fenced by (attempt, dispatch, generation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Owning task.
    pub task_id: Identity,
    /// Owning work item.
    pub work_item_id: Identity,
    /// This attempt.
    pub attempt_id: Identity,
    /// The dispatch that carries it.
    pub dispatch_id: Identity,
    /// Strictly increases on every retry.
    pub dispatch_generation: Int,
    /// Lifecycle status.
    pub status: AttemptStatus,
}

/// A unit of work inside a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkItem {
    /// Owning task.
    pub task_id: Identity,
    /// This work item.
    pub work_item_id: Identity,
    /// How much the task needs it.
    pub requirement: Requirement,
    /// Lifecycle status.
    pub status: WorkItemStatus,
    /// Dependency edges, in declared order.
    pub dependencies: Vec<Dependency>,
    /// The live or last attempt, if any.
    pub current_attempt: Option<Attempt>,
}

/// A coordinator suspension waiting for required work items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suspension {
    /// Owning task.
    pub task_id: Identity,
    /// This suspension.
    pub suspension_id: Identity,
    /// 0 for the first suspension, previous + 1 afterwards.
    pub suspension_epoch: Int,
    /// Waiting or resumed.
    pub status: SuspensionStatus,
    /// The wait policy in force.
    pub wait_policy_id: Identity,
    /// Digest of that policy.
    pub wait_policy_digest: String,
    /// Items that must complete before the wake.
    pub required_work_item_ids: Vec<Identity>,
    /// The accepted wake, once resumed.
    pub accepted_wake_id: Option<Identity>,
    /// Why it woke, once resumed.
    pub wake_reason: Option<WakeReason>,
}

impl Suspension {
    /// Fills `event` (a `wake_accepted`) with the slots that name this suspension, the wake
    /// `wake_id` and the reason `dependency_ready`: the wake the System proposes once the
    /// required items are ready.
    pub fn fill_wake(&self, event: &mut crate::model::Event, wake_id: Identity) {
        event.suspension_id = Some(self.suspension_id.clone());
        event.suspension_epoch = Some(self.suspension_epoch);
        event.wait_policy_id = Some(self.wait_policy_id.clone());
        event.wait_policy_digest = Some(self.wait_policy_digest.clone());
        event
            .required_work_item_ids
            .clone_from(&self.required_work_item_ids);
        event.wake_id = Some(wake_id);
        event.wake_reason = Some(crate::model::Open::Known(WakeReason::DependencyReady));
    }
}

/// Interrupt and intent-version control of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// Current intent version (incremented by each redirect).
    pub intent_version: Int,
    /// Active or interrupted.
    pub status: ControlStatus,
    /// The interrupt in force, while interrupted.
    pub active_interrupt_id: Option<Identity>,
}

impl Control {
    /// The control a task has before any control event: intent version 0, active.
    pub const INITIAL: Self = Self {
        intent_version: 0,
        status: ControlStatus::Active,
        active_interrupt_id: None,
    };
}

/// Everything in a State except its accepted-event history.
///
/// The history only grows and is carried separately (see [`State`] and
/// [`LiveState`](crate::live::LiveState)), so the rest of the state can be inspected, compared
/// and hashed without touching it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateBody {
    /// Protocol version of the state (valid only if equal to [`PROTOCOL_VERSION`]).
    pub protocol_version: String,
    /// Owning installation.
    pub installation_id: Identity,
    /// Leader epoch every event must carry.
    pub leader_epoch: Int,
    /// This task.
    pub task_id: Identity,
    /// Number of accepted events.
    pub revision: Int,
    /// Task status.
    pub status: Open<TaskStatus>,
    /// The frozen work-item table (omitted from the canonical form when empty).
    pub work_items: Vec<WorkItem>,
    /// The current or last suspension.
    pub suspension: Option<Suspension>,
    /// Control state, once any control event was accepted.
    pub control: Option<Control>,
}

/// A Task State (`valp-kernel-state.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// Everything except the history.
    pub body: StateBody,
    /// Every accepted transition, in order.
    pub accepted_events: Vec<AcceptedEvent>,
}

impl State {
    /// The canonical empty Task State of a new task: published, revision 0, no history.
    pub fn genesis(
        installation_id: Identity,
        leader_epoch: Int,
        task_id: Identity,
        work_items: Vec<WorkItem>,
    ) -> Self {
        Self {
            body: StateBody {
                protocol_version: PROTOCOL_VERSION.to_owned(),
                installation_id,
                leader_epoch,
                task_id,
                revision: 0,
                status: Open::Known(TaskStatus::Published),
                work_items,
                suspension: None,
                control: None,
            },
            accepted_events: Vec::new(),
        }
    }
}

impl StateBody {
    /// The work item with this id, if present (the first one, as the reference looks it up).
    pub fn work_item(&self, work_item_id: &Identity) -> Option<&WorkItem> {
        self.work_items
            .iter()
            .find(|item| &item.work_item_id == work_item_id)
    }

    /// Writes every State member except `accepted_events`.
    pub(crate) fn write_members(&self, fields: &mut Fields<'_>) {
        self.write_head_members(fields);
        if !self.work_items.is_empty() {
            fields.list("work_items", &self.work_items);
        }
    }

    /// Writes every State member except `accepted_events` and `work_items` (the last member).
    pub(crate) fn write_head_members(&self, fields: &mut Fields<'_>) {
        fields.optional("control", self.control.as_ref());
        fields.canonical("installation_id", &self.installation_id);
        fields.int("leader_epoch", self.leader_epoch);
        fields.str("protocol_version", &self.protocol_version);
        fields.int("revision", self.revision);
        fields.str("schema_version", STATE_SCHEMA);
        fields.str("status", self.status.as_str());
        fields.optional("suspension", self.suspension.as_ref());
        fields.canonical("task_id", &self.task_id);
    }

    /// Appends the canonical State members that follow `accepted_events`, and the closing brace.
    ///
    /// `accepted_events` sorts before every other State key, so a State's canonical form is
    /// `{"accepted_events":[…]` followed by this tail; the history can therefore be hashed
    /// incrementally and the tail appended at the end.
    pub(crate) fn write_tail(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::resume(out, "accepted_events");
        self.write_members(&mut fields);
        fields.end();
    }

    /// The canonical State with the given history.
    pub(crate) fn write_with_history(&self, out: &mut Vec<u8>, history: &[AcceptedEvent]) {
        out.extend_from_slice(STATE_HISTORY_OPEN);
        for (index, entry) in history.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            entry.write_canonical(out);
        }
        out.push(b']');
        self.write_tail(out);
    }
}

/// The bytes every canonical State starts with.
pub(crate) const STATE_HISTORY_OPEN: &[u8] = b"{\"accepted_events\":[";

/// The canonical form of a State body is the State's canonical form without the
/// `accepted_events` member (used by compact journal entries, whose history is implied).
impl Canonical for StateBody {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        self.write_members(&mut fields);
        fields.end();
    }
}

impl Canonical for State {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.body.write_with_history(out, &self.accepted_events);
    }
}

impl Canonical for AcceptedEvent {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("event_id", &self.event_id);
        fields.str("input_digest", &self.input_digest);
        fields.str("result_digest", &self.result_digest);
        fields.canonical("result_id", &self.result_id);
        fields.end();
    }
}

impl Canonical for Dependency {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("requirement", self.requirement.as_str());
        fields.canonical("work_item_id", &self.work_item_id);
        fields.end();
    }
}

impl Canonical for Attempt {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("attempt_id", &self.attempt_id);
        fields.int("dispatch_generation", self.dispatch_generation);
        fields.canonical("dispatch_id", &self.dispatch_id);
        fields.str("status", self.status.as_str());
        fields.canonical("task_id", &self.task_id);
        fields.canonical("work_item_id", &self.work_item_id);
        fields.end();
    }
}

impl Canonical for WorkItem {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        match &self.current_attempt {
            Some(attempt) => fields.canonical("current_attempt", attempt),
            None => fields.key("current_attempt").extend_from_slice(b"null"),
        }
        fields.list("dependencies", &self.dependencies);
        fields.str("requirement", self.requirement.as_str());
        fields.str("status", self.status.as_str());
        fields.canonical("task_id", &self.task_id);
        fields.canonical("work_item_id", &self.work_item_id);
        fields.end();
    }
}

impl Canonical for Suspension {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.optional("accepted_wake_id", self.accepted_wake_id.as_ref());
        fields.list("required_work_item_ids", &self.required_work_item_ids);
        fields.str("status", self.status.as_str());
        fields.int("suspension_epoch", self.suspension_epoch);
        fields.canonical("suspension_id", &self.suspension_id);
        fields.canonical("task_id", &self.task_id);
        fields.str("wait_policy_digest", &self.wait_policy_digest);
        fields.canonical("wait_policy_id", &self.wait_policy_id);
        if let Some(reason) = self.wake_reason {
            fields.str("wake_reason", reason.as_str());
        }
        fields.end();
    }
}

impl Canonical for Control {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.optional("active_interrupt_id", self.active_interrupt_id.as_ref());
        fields.int("intent_version", self.intent_version);
        fields.str("status", self.status.as_str());
        fields.end();
    }
}
