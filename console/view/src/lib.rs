//! What the operator console shows, as plain data.
//!
//! The system side (kernel results read back from the store, Doctor observations) fills a
//! [`ConsoleView`]; the TUI only renders it and turns keys into [`Request`]s for a [`Backend`].
//! Every string here is display text that was already stripped of terminal control sequences
//! when it entered the system (untrusted text is sanitized once, at ingest, through [`sanitize`],
//! which the runtime and the TUI share).

use std::sync::Arc;

pub mod flow;
pub mod foreign;
pub mod needs;
pub mod sanitize;

pub use flow::{MachineView, Workflow};
pub use foreign::ForeignRow;
pub use needs::{AgentAsk, NeedKind, NeedRow, Severity};

/// Everything one frame of the console shows.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsoleView {
    /// The installation id.
    pub installation_id: String,
    /// The control root folder, for the title line.
    pub root: String,
    /// The authority lane.
    pub lane: LaneView,
    /// Task journals, sorted by task id.
    pub tasks: Vec<TaskRow>,
    /// Every task's work items (the dependency frontier), in task order then table order.
    pub items: Vec<ItemRow>,
    /// The latest adapter observations the System ingested, newest first (bounded).
    pub observations: Vec<ObservationRow>,
    /// Adapter or inbox files that were not acted on, with why (newest first, bounded).
    pub rejections: Vec<RejectionRow>,
    /// What the System did lately (proposals and their verdicts, launches), newest first
    /// (bounded).
    pub activity: Vec<String>,
    /// The terminal coding agents (tmux) of the items' current attempts, in item order.
    pub agents: Vec<AgentView>,
    /// What waits for the Leader across tasks, most severe first, then oldest first.
    pub needs: Vec<NeedRow>,
    /// When the view was read, in milliseconds since the Unix epoch, from the System's
    /// (injected) clock: ages on screen are measured against it, so a test's view draws the
    /// same ages every time.
    pub now_ms: i64,
    /// Each task's Operator Workflow, in task order.
    pub workflows: Vec<Workflow>,
    /// The state machine of the task the console asked about ([`Request::Explain`]), as of
    /// this view.
    pub machine: Option<MachineView>,
    /// Each task's correction cycle, as its journal derives it (tasks with a correction
    /// signal only), in task order. Shared: a cycle holds a round per correction of a long
    /// history (~30,000 at 10^5 entries), and the backend hands the same cycles to every view
    /// until a task moves, so a view read on every tick, the console's copy of it and the
    /// filtered one on screen hold them once (and compare them by pointer).
    pub corrections: Arc<[CorrectionView]>,
    /// What the agent channels of the items' current attempts reported spending, in item
    /// order (attempts whose channels said nothing are not listed: unknown, never 0).
    pub usage: Vec<UsageRow>,
    /// While the System is still opening what the view shows (task journals, each verified
    /// on open): how far it got. `None` once everything is open.
    pub opening: Option<Opening>,
    /// Every task's foreign observations (AgentOps verdicts, SuperLoop records), in task order
    /// then journal order: evidence to look at, never a review.
    pub foreign: Vec<ForeignRow>,
}

impl ConsoleView {
    /// Whether an age this view puts on screen (a need's, an agent request's deadline, an
    /// observation's, an attempt's in flight: [`needs::age_text`]) reads differently at
    /// `now_ms` than at [`Self::now_ms`]. Every read of the view carries a new clock, so a
    /// view that differs only in it needs a new frame only then.
    pub fn ages_read_differently_at(&self, now_ms: i64) -> bool {
        let then = self.now_ms;
        let since = |at: i64| needs::age_text(at, then) != needs::age_text(at, now_ms);
        let until = |at: i64| needs::age_text(then, at) != needs::age_text(now_ms, at);
        self.needs.iter().any(|need| {
            since(need.since_ms) || need.ask.as_ref().is_some_and(|ask| until(ask.deadline_ms))
        }) || self.observations.iter().any(|row| since(row.seen_ms))
            || self
                .items
                .iter()
                .filter_map(ItemRow::in_flight_since_ms)
                .any(since)
    }
}

/// How far the System got opening the control root ([`Backend::open_next`]): the console
/// draws at once and fills tasks in as they open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Opening {
    /// Task journals open so far.
    pub tasks_open: usize,
    /// Task journals to open.
    pub tasks_total: usize,
    /// Entries verified so far (the open ones' lengths).
    pub entries: u64,
    /// The task folder being opened now (its name, sanitized); empty before the list is read.
    pub next: String,
    /// Bytes of the journal being opened now (its size on disk), so a long open says why.
    pub next_bytes: u64,
}

/// A task's correction cycle (seed 003), derived from its journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorrectionView {
    /// The task.
    pub task_id: String,
    /// Where the cycle stands (`open`, `fixing`, `fixed`, `blocked`, `cancelled`).
    pub outcome: String,
    /// Its rounds, oldest first.
    pub rounds: Vec<RoundView>,
}

/// One round of a correction cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundView {
    /// 1-based.
    pub round: u64,
    /// The signal that opened it (`runtime_failed`, `review_finding`, …).
    pub trigger: String,
    /// `open`, `fixing`, `fixed`, `blocked` or `cancelled`.
    pub status: String,
    /// The work item it concerns (`None`: the task as a whole).
    pub work_item_id: Option<String>,
    /// When it opened and closed (RFC 3339; `None` when the journal line has no time, or
    /// while open).
    pub started_at: Option<String>,
    /// When it closed.
    pub ended_at: Option<String>,
    /// What happened, naming the journal revision.
    pub reason: String,
}

/// What one attempt's agent channels reported spending; `None` is unknown, never 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    /// The task.
    pub task_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// Micro-USD.
    pub cost_micro_usd: Option<u64>,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
}

/// A terminal coding agent of a tmux attempt, as its supervisor last recorded it
/// (`state.json`). Every text is sanitized and the tail redacted by the supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentView {
    /// Its task.
    pub task_id: String,
    /// Its work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// `starting`, `working`, `idle`, `blocked`, `exited` or `unknown`.
    pub state: String,
    /// The profile rule that matched and its 1-based line (`permission prompt`, 12).
    pub rule: Option<(String, Option<u64>)>,
    /// How long the state has held, in milliseconds, when the view was read.
    pub for_ms: u64,
    /// The age of the screen sample, in milliseconds, when the view was read.
    pub sample_age_ms: u64,
    /// What the supervisor makes of it (`runtime idle, evidence missing: …`), if anything.
    pub note: Option<String>,
    /// The screen's last lines, oldest first.
    pub tail: Vec<String>,
    /// The command that attaches a terminal to the agent's pane (empty before the submission
    /// proof names the pane).
    pub attach: String,
}

impl AgentView {
    /// `blocked: permission prompt (line 12) matched 2 s ago`: the state with its provenance.
    pub fn headline(&self) -> String {
        let seconds = self.sample_age_ms / 1000;
        match &self.rule {
            Some((rule, Some(line))) => {
                format!(
                    "{}: {rule} (line {line}) matched {seconds} s ago",
                    self.state
                )
            }
            Some((rule, None)) => format!("{}: {rule} matched {seconds} s ago", self.state),
            None => format!("{} (sampled {seconds} s ago)", self.state),
        }
    }
}

/// One work item of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRow {
    /// Its task.
    pub task_id: String,
    /// The work item.
    pub work_item_id: String,
    /// `required`, `soft` or `optional`.
    pub requirement: String,
    /// Kernel status (`pending`, `eligible`, `running`, `completed`, …).
    pub status: String,
    /// Frontier position in words: `ready`, `locked by build (running)`, `in flight`, …
    pub position: String,
    /// The current attempt (`<attempt id> g<generation> <status>`), or empty.
    pub attempt: String,
    /// When the System first saw the current attempt (milliseconds since the Unix epoch, its
    /// clock; 0 without an attempt or until stamped): how long it has been going.
    pub attempt_since_ms: i64,
}

impl ItemRow {
    /// When its attempt, still in flight (`created`, `submitted` or `running`), was first
    /// seen: the age the Work items pane shows beside it. `None` for a settled or unstamped
    /// attempt.
    pub fn in_flight_since_ms(&self) -> Option<i64> {
        let in_flight = ["created", "submitted", "running"]
            .iter()
            .any(|status| self.attempt.ends_with(status));
        (self.attempt_since_ms > 0 && in_flight).then_some(self.attempt_since_ms)
    }
}

/// One adapter observation, as ingested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObservationRow {
    /// The task.
    pub task_id: String,
    /// The work item (or verification check).
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// Its sequence within the attempt.
    pub sequence: u64,
    /// `accepted`, `completed`, `blocked`, `cancelled`, …
    pub status: String,
    /// The reason or runtime identity, display only.
    pub detail: String,
    /// The file it was read from (relative to the control root).
    pub source: String,
    /// Its proof chain in words: each segment's adapter and what its proof binds.
    pub provenance: String,
    /// When the System first read it (milliseconds since the Unix epoch, the System's clock;
    /// 0 until the System stamps it), and the same as RFC 3339 text.
    pub seen_ms: i64,
    /// [`Self::seen_ms`] as RFC 3339 text (empty until stamped).
    pub seen_at: String,
}

/// A file the System did not act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RejectionRow {
    /// The file (relative to the control root when inside it).
    pub path: String,
    /// Why.
    pub reason: String,
}

/// The Leader binding and its candidates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LaneView {
    /// Installation status (`awaiting_leader_selection`, `active`, `rotating_leader`, …).
    pub status: String,
    /// The active epoch (0 before the first selection).
    pub active_epoch: i128,
    /// The bound Leader, if any.
    pub leader: Option<LeaderView>,
    /// Whether this start re-proved the bound session.
    pub session: SessionCheck,
    /// Candidates of the latest Doctor observation, in its ranking order.
    pub candidates: Vec<CandidateRow>,
    /// Every epoch so far, oldest first.
    pub epochs: Vec<EpochRow>,
}

/// The bound Leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderView {
    /// Principal id, e.g. `user:alice` or `tmux:alice`.
    pub principal_id: String,
    /// `human` or `tmux_pane`.
    pub principal_kind: String,
    /// The bound session's address, e.g. `tmux:/tmp/tmux-1000/default:%3`.
    pub candidate_id: String,
    /// Its epoch.
    pub epoch: i128,
    /// A one-line description of the session (pane, command, size), display only.
    pub session_summary: String,
}

/// The outcome of re-observing the bound session at this start.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionCheck {
    /// No Leader is bound yet: the console shows the first-run selection.
    #[default]
    Unbound,
    /// The bound session was observed with the same fingerprint; the kernel accepted the
    /// reopen.
    Reopened {
        /// When (RFC 3339).
        at: String,
        /// The epoch reopened.
        epoch: i128,
    },
    /// The bound session could not be re-proven: the console is read-only until the user
    /// explicitly rebinds the principal to a new session or selects another candidate.
    Unproven {
        /// Why, in words (pane gone, server restarted, another OS user…).
        reason: String,
    },
}

/// One candidate the Doctor observed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateRow {
    /// Stable address, e.g. `human:uid-1000`.
    pub candidate_id: String,
    /// Principal id.
    pub principal_id: String,
    /// `human` or `tmux_pane`.
    pub principal_kind: String,
    /// `live`, or `unreachable: <reason>`.
    pub health: String,
    /// Labels such as `agent:claude` (never identity).
    pub labels: Vec<String>,
    /// One line of display-only detail (session/window/pane, command, size).
    pub summary: String,
    /// Whether this is the bound Leader's session.
    pub bound: bool,
}

/// One epoch of the installation's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochRow {
    /// The epoch.
    pub epoch: i128,
    /// Who led it.
    pub principal_id: String,
    /// Its session.
    pub candidate_id: String,
    /// `selected` (first activation) or `rotated`.
    pub how: String,
    /// Whether it is fenced (every epoch but the active one).
    pub fenced: bool,
}

/// One task journal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRow {
    /// Task id.
    pub task_id: String,
    /// Task status (kernel truth as replayed).
    pub status: String,
    /// Revision.
    pub revision: i128,
    /// The Leader epoch the task's journal is bound to.
    pub epoch: i128,
    /// Whether that epoch is fenced (the task needs an explicit handoff to continue).
    pub fenced: bool,
    /// Completed work items.
    pub items_completed: usize,
    /// All work items.
    pub items_total: usize,
    /// Whether the Leader interrupted it (nothing is dispatched until resumed).
    pub interrupted: bool,
    /// What the System waits for on this task, in words (empty while it works).
    pub waiting: String,
    /// The four dimension gates as the Done gate would see them now, in one line
    /// (`quality* fail (rule_failed:…) · experience pass · cost unverifiable
    /// (measure_unavailable:…) · stability pass`: `*` marks a required gate, the reasons of a
    /// gate that does not pass follow it); empty when the task's frozen Done policy has no
    /// dimension section.
    pub gates: String,
}

/// What the user asked for from the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// First selection of a Leader (after explicit confirmation).
    Select {
        /// The candidate.
        candidate_id: String,
    },
    /// Bind the Leader role to a new session, fencing the current epoch (after explicit
    /// confirmation): the same principal on a new session, or another candidate.
    Rotate {
        /// The candidate.
        candidate_id: String,
    },
    /// Re-run the Doctor and refresh the view.
    Refresh,
    /// Cancel a task, or one of its work items (after explicit confirmation).
    Cancel {
        /// The task.
        task_id: String,
        /// Only this work item.
        work_item_id: Option<String>,
    },
    /// Interrupt a task: nothing more is dispatched until resumed.
    Interrupt {
        /// The task.
        task_id: String,
    },
    /// Lift a task's interrupt.
    Resume {
        /// The task.
        task_id: String,
    },
    /// Redirect a task to a new intent; the listed work items are superseded (after explicit
    /// confirmation).
    Redirect {
        /// The task.
        task_id: String,
        /// Superseded work items.
        superseded: Vec<String>,
        /// The new intent, as the Leader typed it.
        intent: String,
    },
    /// The Leader's review of a task in `reviewing`.
    Review {
        /// The task.
        task_id: String,
        /// Pass (true) or reject.
        pass: bool,
    },
    /// The Leader's decision on a task in `approval_required`.
    Approve {
        /// The task.
        task_id: String,
        /// Grant (true) or deny.
        grant: bool,
    },
    /// A new attempt for a blocked work item (a blocked task is recovered to fixing first).
    Retry {
        /// The task.
        task_id: String,
        /// The blocked work item.
        work_item_id: String,
    },
    /// `blocked` -> `fixing`, or dispatch a `fixing` task again.
    Recover {
        /// The task.
        task_id: String,
    },
    /// A Leader message for a running terminal agent, handed to it once with proof.
    Message {
        /// The task.
        task_id: String,
        /// The agent's attempt.
        attempt_id: String,
        /// The message, as the Leader typed it.
        text: String,
    },
    /// Press a running terminal agent's interrupt keys once (its turn stops, it stays).
    InterruptAgent {
        /// The task.
        task_id: String,
        /// The agent's attempt.
        attempt_id: String,
    },
    /// Attach a terminal to a terminal agent's pane (a popup inside tmux, else the command).
    Attach {
        /// The agent's attempt.
        attempt_id: String,
    },
    /// Mark a need as seen (or no longer seen): it stays listed, dimmed and after the others,
    /// and rings no bell. Persisted under the control root, so it survives a restart.
    Acknowledge {
        /// The need's [`NeedRow::key`].
        key: String,
        /// Acknowledge (true) or take the acknowledgement back.
        seen: bool,
    },
    /// The Leader's decision on a terminal agent's pending permission request (after explicit
    /// confirmation), recorded with the decider in the task's operator-action journal before
    /// the agent's hook gets it.
    DecideAgentRequest {
        /// The task.
        task_id: String,
        /// The request ([`AgentAsk::request_id`]).
        request_id: String,
        /// Allow (true) or deny.
        allow: bool,
    },
    /// Keep this task's state machine in every view from now on ([`ConsoleView::machine`]);
    /// `None` stops. Changes nothing in the control root.
    Explain {
        /// The task.
        task_id: Option<String>,
    },
}

/// A refusal to show: the kernel's (or store's) code and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// e.g. `VALP-E-PERMISSION-DENIED`.
    pub code: String,
    /// What happened.
    pub message: String,
}

/// What the console asks of the system. The real one proposes to the kernel through the store;
/// tests use a scripted one.
pub trait Backend {
    /// The current view.
    fn view(&mut self) -> ConsoleView;
    /// Carries out a request; `Ok` carries a confirmation message to show, `Err` the refusal.
    fn request(&mut self, request: &Request) -> Result<String, Refusal>;
    /// Opens the next piece of what the view shows (a task journal, verified) and returns the
    /// view so far, with [`ConsoleView::opening`] saying how far it got; `None` once everything
    /// is open. The console calls it until `None` before its first [`Backend::view`], drawing
    /// each answer, so a slow open never leaves the screen blank or the keys unanswered. The
    /// first call opens nothing: it says what is to be opened. Default: nothing to open.
    fn open_next(&mut self) -> Option<ConsoleView> {
        None
    }
    /// The periodic look nobody asked for (the console's slow tick; its answer is shown only
    /// when it is a refusal). By default [`Request::Refresh`]; a backend may look only where
    /// something on screen needs watching.
    fn tick(&mut self) -> Result<String, Refusal> {
        self.request(&Request::Refresh)
    }
}

/// A frontier position in words.
pub fn position_text(position: &valp_kernel::frontier::Position) -> String {
    use valp_kernel::frontier::Position;
    match position {
        Position::Unlocked { soft_unmet } if soft_unmet.is_empty() => "unlocked".to_owned(),
        Position::Unlocked { soft_unmet } => format!(
            "unlocked (soft unmet: {})",
            soft_unmet
                .iter()
                .map(|id| id.value().to_owned())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Position::Locked { by } => format!(
            "locked by {}",
            by.iter()
                .map(|lock| format!(
                    "{} ({})",
                    lock.work_item_id.value(),
                    lock.status.map_or("missing", |status| status.as_str())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Position::Ready => "ready".to_owned(),
        Position::InFlight { .. } => "in flight".to_owned(),
        Position::Blocked { .. } => "blocked".to_owned(),
        Position::Settled(status) => format!("settled ({})", status.as_str()),
    }
}
