//! The needs-you queue's rows: what waits for the Leader, across tasks.
//!
//! The runtime finds the needs (`valp_runtime::needs`, one source per kind) and the TUI lists
//! them; this module holds what both must agree on: the kinds, their [`Severity`], and the
//! order of the queue (most severe first, then oldest first, acknowledged ones last).
//!
//! Extension point: a new kind of need (a blocked terminal agent, an unconfirmed submission, a
//! correction round) is one [`NeedKind`] variant here (its name, title and severity) and one
//! source function in the runtime's `needs::SOURCES`; the TUI maps each kind to the keys that
//! answer it.

use std::cmp::Ordering;

/// How urgent a need is. Declared from the most urgent down: the derived order sorts the
/// queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// An agent waits for an answer with a deadline: without the Leader, its hook answers for
    /// him (deny, or the agent's own prompt).
    Urgent,
    /// Work failed and nothing more happens without the Leader.
    Failure,
    /// A decision only the Leader may take (review, approval).
    Decision,
    /// The task stands still until the Leader says how it goes on.
    Stalled,
}

impl Severity {
    /// The word shown in the queue.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Urgent => "urgent",
            Self::Failure => "failure",
            Self::Decision => "decision",
            Self::Stalled => "stalled",
        }
    }
}

/// What kind of thing waits for the Leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NeedKind {
    /// A work item whose attempts failed and whose retry budget is spent (it is `blocked` or
    /// `failed`).
    FailedAttempt,
    /// A required Done-gate dimension cannot be judged: its evidence is missing.
    EvidenceMissing,
    /// The task is `reviewing`: pass or reject.
    Review,
    /// The task is `approval_required`: grant or deny.
    Approval,
    /// The task is `blocked` or `fixing` with nothing left to run.
    NothingToRun,
    /// A terminal agent's pending permission request (tool, command or file, deadline):
    /// allow or deny.
    AgentRequest,
    /// A terminal agent whose state is `blocked` or `unknown` (with the rule or note that says
    /// why) and no pending request explains it.
    AgentBlocked,
    /// A prompt pasted into an agent whose delivery is not proven, and no acknowledgement from
    /// its channel came within the grace time.
    UnconfirmedSubmission,
    /// An open round of the task's correction cycle (a correction signal with no fix
    /// dispatched yet).
    CorrectionRound,
}

impl NeedKind {
    /// Every kind, in the order of this enum.
    pub const ALL: [Self; 9] = [
        Self::FailedAttempt,
        Self::EvidenceMissing,
        Self::Review,
        Self::Approval,
        Self::NothingToRun,
        Self::AgentRequest,
        Self::AgentBlocked,
        Self::UnconfirmedSubmission,
        Self::CorrectionRound,
    ];

    /// The kind's stable name (in acknowledgement keys and the acknowledgements file).
    pub const fn name(self) -> &'static str {
        match self {
            Self::FailedAttempt => "failed_attempt",
            Self::EvidenceMissing => "evidence_missing",
            Self::Review => "review",
            Self::Approval => "approval",
            Self::NothingToRun => "nothing_to_run",
            Self::AgentRequest => "agent_request",
            Self::AgentBlocked => "agent_blocked",
            Self::UnconfirmedSubmission => "unconfirmed_submission",
            Self::CorrectionRound => "correction_round",
        }
    }

    /// A few words for the queue.
    pub const fn title(self) -> &'static str {
        match self {
            Self::FailedAttempt => "failed attempt",
            Self::EvidenceMissing => "evidence missing",
            Self::Review => "review",
            Self::Approval => "approval",
            Self::NothingToRun => "nothing left to run",
            Self::AgentRequest => "agent asks",
            Self::AgentBlocked => "agent blocked",
            Self::UnconfirmedSubmission => "unconfirmed submission",
            Self::CorrectionRound => "correction round",
        }
    }

    /// How urgent this kind is.
    pub const fn severity(self) -> Severity {
        match self {
            Self::AgentRequest => Severity::Urgent,
            Self::FailedAttempt | Self::EvidenceMissing | Self::UnconfirmedSubmission => {
                Severity::Failure
            }
            Self::Review | Self::Approval | Self::AgentBlocked => Severity::Decision,
            Self::NothingToRun | Self::CorrectionRound => Severity::Stalled,
        }
    }
}

/// One thing that waits for the Leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeedRow {
    /// Stable identity: `<kind>:<task>:<occurrence>`, the occurrence being what makes this
    /// need new (the failed attempt's id, or the task's revision for a review: a second review
    /// round is not the acknowledged first).
    pub key: String,
    /// What kind of need.
    pub kind: NeedKind,
    /// The task.
    pub task_id: String,
    /// The work item it is about, if any.
    pub work_item_id: Option<String>,
    /// One line of what is needed, display text.
    pub summary: String,
    /// Since when the System has seen it, in milliseconds since the Unix epoch (the System's
    /// clock when it first saw the need: journal lines carry no time yet).
    pub since_ms: i64,
    /// [`Self::since_ms`] as RFC 3339 text, for the detail view.
    pub since_at: String,
    /// Whether the Leader marked it as seen.
    pub acknowledged: bool,
    /// For an [`NeedKind::AgentRequest`]: what the agent asks.
    pub ask: Option<AgentAsk>,
}

/// A terminal agent's pending permission request, as the queue shows it (display text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAsk {
    /// `perm-<16 hex>`: what a decision names.
    pub request_id: String,
    /// The agent's attempt.
    pub attempt_id: String,
    /// The agent (`claude`, `codex`).
    pub agent: String,
    /// The tool (`Bash`, `Write`), or `tool` when the agent did not say.
    pub tool: String,
    /// What the tool call is about, and which word names it: `("command", "rm -rf build")`,
    /// `("file", "src/main.rs")`, or `("input", <the input's JSON>)`.
    pub subject: (String, String),
    /// When the hook answers without a decision (milliseconds since the Unix epoch).
    pub deadline_ms: i64,
    /// [`Self::deadline_ms`] as RFC 3339 text.
    pub deadline_at: String,
}

impl NeedRow {
    /// The key of a need of `kind` on `task_id`, this `occurrence` of it.
    pub fn key_of(kind: NeedKind, task_id: &str, occurrence: &str) -> String {
        format!("{}:{task_id}:{occurrence}", kind.name())
    }

    /// The queue's order: unacknowledged first, then most severe, then oldest, then by key
    /// (so equal needs keep one order).
    pub fn queue_order(&self, other: &Self) -> Ordering {
        self.acknowledged
            .cmp(&other.acknowledged)
            .then(self.kind.severity().cmp(&other.kind.severity()))
            .then(self.since_ms.cmp(&other.since_ms))
            .then_with(|| self.key.cmp(&other.key))
    }
}

/// An age in a few characters: `12s`, `4m`, `3h`, `2d` (never negative: a clock that went
/// back shows `0s`).
pub fn age_text(since_ms: i64, now_ms: i64) -> String {
    let seconds = now_ms.saturating_sub(since_ms).max(0) / 1000;
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86_400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::{NeedKind, NeedRow, age_text};

    fn need(kind: NeedKind, since_ms: i64, acknowledged: bool) -> NeedRow {
        NeedRow {
            key: NeedRow::key_of(kind, "t", "r1"),
            kind,
            task_id: "t".to_owned(),
            work_item_id: None,
            summary: String::new(),
            since_ms,
            since_at: String::new(),
            acknowledged,
            ask: None,
        }
    }

    #[test]
    fn the_queue_is_unacknowledged_then_severity_then_age() {
        let mut queue = [
            need(NeedKind::NothingToRun, 1, false),
            need(NeedKind::Review, 5, false),
            need(NeedKind::FailedAttempt, 9, true),
            need(NeedKind::Approval, 2, false),
            need(NeedKind::EvidenceMissing, 7, false),
            need(NeedKind::CorrectionRound, 0, false),
            need(NeedKind::AgentRequest, 20, false),
            need(NeedKind::AgentBlocked, 3, false),
            need(NeedKind::UnconfirmedSubmission, 8, false),
        ];
        queue.sort_by(NeedRow::queue_order);
        let kinds: Vec<NeedKind> = queue.iter().map(|need| need.kind).collect();
        assert_eq!(
            kinds,
            [
                NeedKind::AgentRequest,
                NeedKind::EvidenceMissing,
                NeedKind::UnconfirmedSubmission,
                NeedKind::Approval,
                NeedKind::AgentBlocked,
                NeedKind::Review,
                NeedKind::CorrectionRound,
                NeedKind::NothingToRun,
                NeedKind::FailedAttempt,
            ]
        );
    }

    #[test]
    fn ages_are_short_and_never_negative() {
        assert_eq!(age_text(0, 59_999), "59s");
        assert_eq!(age_text(0, 60_000), "1m");
        assert_eq!(age_text(0, 3_600_000), "1h");
        assert_eq!(age_text(0, 86_400_000 * 3), "3d");
        assert_eq!(age_text(10_000, 0), "0s");
    }

    #[test]
    fn keys_name_kind_task_and_occurrence() {
        assert_eq!(
            NeedRow::key_of(NeedKind::FailedAttempt, "build", "build:lint:a3"),
            "failed_attempt:build:build:lint:a3"
        );
        assert_eq!(NeedKind::ALL.len(), 9);
    }
}
