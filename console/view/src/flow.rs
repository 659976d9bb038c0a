//! The two flow views of RFC 0002 §6, as plain data: the **Operator Workflow** strip of a task
//! (eight stages, each done, current, blocked or not reached, with what proved it or why it is
//! stuck) and the **Protocol State Machine** of a task (every transition the kernel lists from
//! its current State, allowed or refused, with the words the console shows for a refusal).
//!
//! The runtime computes both (`valp_runtime::flow`); the TUI only draws them and turns an
//! allowed transition's [`TransitionRow::action`] into the same confirmation and [`Request`]
//! as the matching key.

use crate::Request;

/// The eight stages of the Operator Workflow, in order.
pub const STAGES: [&str; 8] = [
    "Doctor and Leader authority",
    "Publish",
    "Scan and decompose",
    "Declare and validate assignments",
    "Visible dispatch and submission proof",
    "Execute / Wait / Wake",
    "Verify / Review / Fix",
    "Approval / Audit / Terminal result",
];

/// A word per stage, for a narrow screen (same order as [`STAGES`]).
pub const SHORT_STAGES: [&str; 8] = [
    "authority",
    "publish",
    "decompose",
    "assign",
    "dispatch",
    "execute",
    "verify",
    "result",
];

/// Where a stage stands for one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageState {
    /// Proven by what the journal (or the ledger) holds.
    Done,
    /// The task is at this stage now.
    Current,
    /// The task cannot go on at this stage without someone acting.
    Blocked,
    /// Not reached (yet, or ever: a task cancelled before it).
    NotReached,
}

/// One stage of one task's workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageRow {
    /// Where it stands.
    pub state: StageState,
    /// What proved it (done), what is going on (current), why it is stuck (blocked); display
    /// text, e.g. `3/5 submissions proven`.
    pub note: String,
}

/// One task's Operator Workflow: exactly eight stages, in [`STAGES`] order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workflow {
    /// The task.
    pub task_id: String,
    /// The stages.
    pub stages: Vec<StageRow>,
}

/// One task's Protocol State Machine from its current State.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineView {
    /// The task.
    pub task_id: String,
    /// Its status.
    pub status: String,
    /// Its revision.
    pub revision: i128,
    /// The Leader epoch its journal is bound to.
    pub epoch: i128,
    /// Every listed transition: allowed ones first, then those only the store's guards refuse
    /// (Done gate, epoch fence), then the rest; each group in event-kind then target order.
    pub transitions: Vec<TransitionRow>,
}

/// One transition of the state machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransitionRow {
    /// The event kind, e.g. `review_passed`.
    pub kind: String,
    /// What it targets in words: `task`, `item build`, `attempt a1 of build`.
    pub target: String,
    /// The work item it concerns (its own or its attempt's), if any.
    pub work_item: Option<String>,
    /// Who may send it, with which authority.
    pub actor: String,
    /// The current-state guard, in words.
    pub guard: String,
    /// The evidence it requires.
    pub evidence: String,
    /// Allowed now, or refused with a code and reasons.
    pub verdict: TransitionVerdict,
    /// The console request that proposes it (an allowed transition the Leader sends from the
    /// console), if any.
    pub action: Option<Request>,
}

/// How a transition would be answered now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionVerdict {
    /// Accepted by the kernel, admitted by the store.
    Allowed {
        /// The task status after it.
        next_status: String,
        /// Its obligations and audit facts, in one line (`none` without any).
        effect: String,
    },
    /// Refused.
    Refused {
        /// `VALP-E-…`.
        code: String,
        /// Why, in words.
        reasons: Vec<String>,
    },
}

impl TransitionRow {
    /// Whether it is allowed now.
    pub fn is_allowed(&self) -> bool {
        matches!(self.verdict, TransitionVerdict::Allowed { .. })
    }

    /// The one-line form `valp task explain` prints and the console shows:
    /// `allowed <kind> <target> by <actor> [<guard>] -> <next>` or
    /// `refused <kind> <target> <code>: <reasons>`.
    pub fn line(&self) -> String {
        match &self.verdict {
            TransitionVerdict::Allowed { next_status, .. } => format!(
                "allowed {} {} by {} [{}] -> {next_status}",
                self.kind, self.target, self.actor, self.guard
            ),
            TransitionVerdict::Refused { code, reasons } => format!(
                "refused {} {} {code}: {}",
                self.kind,
                self.target,
                reasons.join("; ")
            ),
        }
    }
}
