//! The needs-you queue: what waits for the Leader, across every task, in one list.
//!
//! Each kind of need has one source, a pure function from what the System knows of a task (its
//! State, its dimension gates) to the needs it finds ([`SOURCES`]). Adding a kind (blocked
//! terminal agents, unconfirmed submissions, correction rounds) is a [`NeedKind`] variant in
//! valp-view and one function in [`SOURCES`].
//!
//! [`Queue`] turns what the sources find into [`NeedRow`]s: a need that arose with the task's
//! current revision is as old as that journal line (`recorded_at`, layout 3); any other need
//! is as old as the System's first sight of it (its injected clock: an age then starts at this
//! console's start for needs that were already there). It marks the ones the Leader
//! acknowledged, which `acks` keeps in `console/acknowledged.json` under the control root.

pub mod acks;
pub mod gather;
mod outside;

use std::collections::BTreeMap;

use valp_kernel::dimension::{GateResult, GateVerdict};
use valp_kernel::{StateBody, TaskStatus, WorkItemStatus};
use valp_store::ControlRoot;
use valp_view::sanitize::display_text;
use valp_view::{AgentAsk, NeedKind, NeedRow, RejectionRow};

use crate::clock::{Clock, Timestamp};
pub use acks::{Acks, AcksError};
pub use gather::{AgentFacts, Outside, PendingAsk, RoundFacts, SubmissionFacts};

/// What the System knows of one task when it looks for needs.
pub struct TaskFacts<'a> {
    /// The task's State as the kernel accepted it.
    pub body: &'a StateBody,
    /// Its dimension gates now (empty without a dimension section).
    pub gates: &'a [GateResult],
    /// When the store wrote the journal's last line (`recorded_at`, layout 3; `None` for a
    /// line written before): the time a need that arose with the current revision arose.
    pub last_recorded_ms: Option<i64>,
    /// What the System read outside the journal: agents, their requests and submissions, the
    /// correction cycle ([`gather`]).
    pub outside: &'a Outside,
}

/// A need a source found, before it has an age or an acknowledgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The kind.
    pub kind: NeedKind,
    /// The work item it is about.
    pub work_item_id: Option<String>,
    /// What makes this need new (see [`NeedRow::key`]).
    pub occurrence: String,
    /// One line of what is needed (raw: the queue sanitizes it).
    pub summary: String,
    /// When it arose, when the journal says (a need of the current revision: its line's
    /// `recorded_at`); otherwise the age runs from when the System first saw it.
    pub at_ms: Option<i64>,
    /// For an agent's permission request: what it asks (raw: the queue sanitizes it).
    pub ask: Option<AgentAsk>,
}

/// A source of needs.
pub type Source = fn(&TaskFacts) -> Vec<Found>;

/// Every source, one per [`NeedKind`].
pub const SOURCES: &[Source] = &[
    failed_attempts,
    evidence_missing,
    decisions,
    nothing_to_run,
    outside::agent_requests,
    outside::blocked_agents,
    outside::unconfirmed_submissions,
    outside::open_rounds,
];

/// Work items whose attempts failed beyond the retry budget: `blocked` (the Leader may retry)
/// or `failed`.
fn failed_attempts(facts: &TaskFacts) -> Vec<Found> {
    facts
        .body
        .work_items
        .iter()
        .filter(|item| {
            matches!(
                item.status,
                WorkItemStatus::Blocked | WorkItemStatus::Failed
            )
        })
        .map(|item| {
            let attempt = item.current_attempt.as_ref().map_or_else(
                || format!("{} (no attempt)", item.work_item_id.value()),
                |attempt| attempt.attempt_id.value().to_owned(),
            );
            Found {
                kind: NeedKind::FailedAttempt,
                work_item_id: Some(item.work_item_id.value().to_owned()),
                summary: format!(
                    "{} is {}: attempt {attempt} did not complete and the System retries no more",
                    item.work_item_id.value(),
                    item.status.as_str()
                ),
                occurrence: attempt,
                // The failure's line is not necessarily the last one.
                at_ms: None,
                ask: None,
            }
        })
        .collect()
}

/// Required dimension gates that cannot be judged for want of evidence, once the work is done
/// (`reviewing` or later): Done would refuse the task for them.
fn evidence_missing(facts: &TaskFacts) -> Vec<Found> {
    let late = facts.body.status.known().is_some_and(|status| {
        matches!(
            status,
            TaskStatus::Reviewing | TaskStatus::ApprovalRequired | TaskStatus::Recording
        )
    });
    if !late {
        return Vec::new();
    }
    facts
        .gates
        .iter()
        .filter(|gate| gate.required && gate.verdict == GateVerdict::Unverifiable)
        .map(|gate| Found {
            kind: NeedKind::EvidenceMissing,
            work_item_id: None,
            occurrence: format!("{}@r{}", gate.dimension.as_str(), facts.body.revision),
            summary: format!(
                "the required {} gate cannot be judged: {}",
                gate.dimension.as_str(),
                gate.reasons.join(", ")
            ),
            at_ms: facts.last_recorded_ms,
            ask: None,
        })
        .collect()
}

/// A task in `reviewing` or `approval_required`: the Leader's decision.
fn decisions(facts: &TaskFacts) -> Vec<Found> {
    let (kind, summary) = match facts.body.status.known() {
        Some(TaskStatus::Reviewing) => (NeedKind::Review, "the work is verified: review it"),
        Some(TaskStatus::ApprovalRequired) => (
            NeedKind::Approval,
            "the review passed and the plan requires approval",
        ),
        _ => return Vec::new(),
    };
    vec![Found {
        kind,
        work_item_id: None,
        occurrence: format!("r{}", facts.body.revision),
        summary: summary.to_owned(),
        at_ms: facts.last_recorded_ms,
        ask: None,
    }]
}

/// A `blocked` or `fixing` task with no work item that could still run: it stands still until
/// the Leader retries, recovers, redirects or cancels.
fn nothing_to_run(facts: &TaskFacts) -> Vec<Found> {
    let status = facts.body.status.known();
    if !matches!(status, Some(TaskStatus::Blocked | TaskStatus::Fixing)) {
        return Vec::new();
    }
    let runnable = facts.body.work_items.iter().any(|item| {
        matches!(
            item.status,
            WorkItemStatus::Pending
                | WorkItemStatus::Eligible
                | WorkItemStatus::Submitted
                | WorkItemStatus::Running
        )
    });
    if runnable {
        return Vec::new();
    }
    vec![Found {
        kind: NeedKind::NothingToRun,
        work_item_id: None,
        occurrence: format!("r{}", facts.body.revision),
        summary: format!(
            "the task is {} and nothing is left to run",
            facts.body.status.as_str()
        ),
        at_ms: facts.last_recorded_ms,
        ask: None,
    }]
}

/// `ask` with every text sanitized for display.
fn clean_ask(ask: &AgentAsk) -> AgentAsk {
    AgentAsk {
        request_id: display_text(&ask.request_id),
        attempt_id: display_text(&ask.attempt_id),
        agent: display_text(&ask.agent),
        tool: display_text(&ask.tool),
        subject: (display_text(&ask.subject.0), display_text(&ask.subject.1)),
        deadline_ms: ask.deadline_ms,
        deadline_at: display_text(&ask.deadline_at),
    }
}

/// Every need the sources find in `facts`.
pub fn find(facts: &TaskFacts) -> Vec<Found> {
    SOURCES.iter().flat_map(|source| source(facts)).collect()
}

/// When the System first saw each thing of a changing set (a need, an observation), by key, on
/// its injected clock: what ages are measured from until journal lines carry their own time.
#[derive(Debug, Default)]
pub struct FirstSeen(BTreeMap<String, i64>);

impl FirstSeen {
    /// When `key` was first seen; now, if this is the first time.
    pub fn stamp(&mut self, key: &str, now: i64) -> i64 {
        *self.0.entry(key.to_owned()).or_insert(now)
    }

    /// Forgets everything `live` does not keep: a thing that comes back is new.
    pub fn keep(&mut self, live: impl Fn(&str) -> bool) {
        self.0.retain(|key, _| live(key));
    }
}

/// The queue between views: first-seen times and the acknowledgements file.
pub struct Queue {
    first_seen: FirstSeen,
    acks: Acks,
}

impl Queue {
    /// A queue whose acknowledgements live under `root`.
    pub fn new(root: &ControlRoot) -> Self {
        Self {
            first_seen: FirstSeen::default(),
            acks: Acks::new(root),
        }
    }

    /// The rows of the needs `found` per task (task id, needs), in queue order, and the
    /// acknowledgements file as a rejected file when it cannot be read (every need then shows
    /// unacknowledged).
    pub fn rows(
        &mut self,
        found: Vec<(String, Vec<Found>)>,
        clock: &dyn Clock,
    ) -> (Vec<NeedRow>, Option<RejectionRow>) {
        let now = clock.now().millis();
        let (acknowledged, problem) = match self.acks.read() {
            Ok(keys) => (keys, None),
            Err(error) => (
                BTreeMap::new(),
                Some(RejectionRow {
                    path: display_text(&error.file),
                    reason: display_text(&error.rule),
                }),
            ),
        };
        let mut rows: Vec<NeedRow> = found
            .into_iter()
            .flat_map(|(task, needs)| needs.into_iter().map(move |need| (task.clone(), need)))
            .map(|(task, need)| {
                let key = NeedRow::key_of(need.kind, &task, &need.occurrence);
                let seen = self.first_seen.stamp(&key, now);
                let since_ms = need.at_ms.unwrap_or(seen);
                NeedRow {
                    acknowledged: acknowledged.contains_key(&key),
                    ask: need.ask.as_ref().map(clean_ask),
                    key: display_text(&key),
                    kind: need.kind,
                    task_id: display_text(&task),
                    work_item_id: need.work_item_id.as_deref().map(display_text),
                    summary: display_text(&need.summary),
                    since_ms,
                    since_at: Timestamp::from_millis(since_ms).to_rfc3339(),
                }
            })
            .collect();
        // Needs gone are forgotten: one that comes back is new.
        self.first_seen
            .keep(|key| rows.iter().any(|row| row.key == key));
        rows.sort_by(NeedRow::queue_order);
        (rows, problem)
    }

    /// Marks `key` seen (or not) in the acknowledgements file, keeping only the keys of needs
    /// still `current` (so the file does not grow without bound).
    pub fn acknowledge(
        &mut self,
        key: &str,
        seen: bool,
        current: &[NeedRow],
        clock: &dyn Clock,
    ) -> Result<(), AcksError> {
        self.acks.set(key, seen.then(|| clock.now()), |kept| {
            current.iter().any(|row| row.key == kept)
        })
    }
}

#[cfg(test)]
mod tests;
