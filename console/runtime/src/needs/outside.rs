//! The needs sources that read what the System gathered outside the journal ([`Outside`]):
//! agents' permission requests, blocked agents, unconfirmed submissions and open correction
//! rounds. Pure functions of [`TaskFacts`], like the others in [`super::SOURCES`].

use valp_view::AgentAsk;
use valp_view::NeedKind;

use super::gather::PendingAsk;
use super::{Found, TaskFacts};
use crate::clock::Timestamp;

/// How long an agent's `blocked` or `unknown` state must hold before it needs the Leader (the
/// supervisor's debounce aside, an agent passes through both for a moment).
pub const AGENT_HOLD_MS: i64 = 5_000;

/// How long after an unproven submission the agent's channel may still acknowledge it before
/// it needs the Leader.
pub const SUBMISSION_GRACE_MS: i64 = 15_000;

/// Tools whose input names a file.
const FILE_TOOLS: [&str; 5] = ["Write", "Edit", "MultiEdit", "Read", "NotebookEdit"];

/// What `ask`'s detail is, in one word, and the detail: `command`, `file` or `input`.
fn subject(ask: &PendingAsk) -> (String, String) {
    let word = if ask.detail.trim_start().starts_with('{') {
        "input"
    } else if ask
        .tool
        .as_deref()
        .is_some_and(|tool| FILE_TOOLS.contains(&tool))
    {
        "file"
    } else {
        "command"
    };
    (word.to_owned(), ask.detail.clone())
}

/// Each pending permission request of the task's agents.
pub fn agent_requests(facts: &TaskFacts) -> Vec<Found> {
    facts
        .outside
        .asks
        .iter()
        .map(|ask| {
            let tool = ask.tool.clone().unwrap_or_else(|| "tool".to_owned());
            let (word, detail) = subject(ask);
            Found {
                kind: NeedKind::AgentRequest,
                work_item_id: Some(ask.work_item_id.clone()),
                occurrence: ask.request_id.clone(),
                summary: format!("{} asks to use {tool} on the {word} {detail}", ask.agent),
                at_ms: ask.requested_ms,
                ask: Some(AgentAsk {
                    request_id: ask.request_id.clone(),
                    attempt_id: ask.attempt_id.clone(),
                    agent: ask.agent.clone(),
                    tool,
                    subject: (word, detail),
                    deadline_ms: ask.deadline_ms,
                    deadline_at: Timestamp::from_millis(ask.deadline_ms).to_rfc3339(),
                }),
            }
        })
        .collect()
}

/// Agents `blocked` or `unknown` for [`AGENT_HOLD_MS`] or more, unless a pending request of
/// theirs already says what they wait for.
pub fn blocked_agents(facts: &TaskFacts) -> Vec<Found> {
    let outside = facts.outside;
    outside
        .agents
        .iter()
        .filter(|agent| matches!(agent.state.as_str(), "blocked" | "unknown"))
        .filter(|agent| {
            agent
                .since_ms
                .is_none_or(|since| outside.now_ms.saturating_sub(since) >= AGENT_HOLD_MS)
        })
        .filter(|agent| {
            !outside
                .asks
                .iter()
                .any(|ask| ask.attempt_id == agent.attempt_id)
        })
        .map(|agent| {
            let why = match (&agent.rule, &agent.note) {
                (Some((rule, Some(line))), _) => format!("{rule} on line {line}"),
                (Some((rule, None)), _) => rule.clone(),
                (None, Some(note)) => note.clone(),
                (None, None) => "no profile rule matched the screen".to_owned(),
            };
            let hint = if agent.state == "blocked" {
                "attach to answer it, interrupt it, or cancel the item"
            } else {
                "attach to look at it"
            };
            Found {
                kind: NeedKind::AgentBlocked,
                work_item_id: Some(agent.work_item_id.clone()),
                occurrence: format!(
                    "{}:{}@{}",
                    agent.attempt_id,
                    agent.state,
                    agent.since_ms.unwrap_or_default()
                ),
                summary: format!(
                    "the agent of {} is {} ({why}): {hint}",
                    agent.attempt_id, agent.state
                ),
                at_ms: agent.since_ms,
                ask: None,
            }
        })
        .collect()
}

/// Unproven submissions the agent's channel did not acknowledge within
/// [`SUBMISSION_GRACE_MS`].
pub fn unconfirmed_submissions(facts: &TaskFacts) -> Vec<Found> {
    let outside = facts.outside;
    outside
        .submissions
        .iter()
        .filter(|submission| !submission.acknowledged)
        .filter(|submission| {
            submission
                .at_ms
                .is_none_or(|at| outside.now_ms.saturating_sub(at) >= SUBMISSION_GRACE_MS)
        })
        .map(|submission| Found {
            kind: NeedKind::UnconfirmedSubmission,
            work_item_id: Some(submission.work_item_id.clone()),
            occurrence: submission.attempt_id.clone(),
            summary: format!(
                "the prompt of {} was typed but its delivery is not proven ({}), and the agent \
                 did not acknowledge it: look at the agent; valp never submits it again",
                submission.attempt_id,
                submission.why.as_deref().unwrap_or("no reason recorded")
            ),
            at_ms: submission.at_ms,
            ask: None,
        })
        .collect()
}

/// The open rounds of the task's correction cycle.
pub fn open_rounds(facts: &TaskFacts) -> Vec<Found> {
    facts
        .outside
        .rounds
        .iter()
        .map(|round| Found {
            kind: NeedKind::CorrectionRound,
            work_item_id: round.work_item_id.clone(),
            occurrence: format!("round-{}", round.round),
            summary: format!(
                "correction round {} ({}) is open, no fix dispatched: {}",
                round.round, round.trigger, round.reason
            ),
            at_ms: round.started_ms,
            ask: None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
