//! What the needs sources know of a task from outside its journal, read once per view: the
//! pending permission requests of its agents ([`crate::agent::channel::approval`]), the state
//! its tmux agents' supervisors last recorded (`state.json`), their unproven submissions
//! (`proofs/submission.json`, with the channel's acknowledgement looked up in the inbox), and
//! the open rounds of its correction cycle ([`crate::audit::derive`]).
//!
//! Only the items' live attempts (`submitted` or `running`) are looked at: a finished attempt's
//! agent asks nothing more. A file that cannot be read is skipped here (the feed and the
//! runtime list broken files as rejections); the sources then find nothing for it.

use std::path::Path;

use valp_kernel::{AttemptStatus, StateBody};

use crate::adapter::tmux::{self, STATE_FILE, SUBMISSION_FILE, StateRecord, SubmissionProof};
use crate::agent::channel::{approval, inbox, precedence};
use crate::audit::derive::Cycle;
use crate::clock::Timestamp;

/// What the System read outside a task's journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outside {
    /// The System's clock when it read them (milliseconds since the Unix epoch).
    pub now_ms: i64,
    /// Permission requests no hook has answered yet, whose deadline is still ahead.
    pub asks: Vec<PendingAsk>,
    /// The tmux agents of live attempts, as their supervisors last recorded them.
    pub agents: Vec<AgentFacts>,
    /// Live attempts whose prompt submission is not proven.
    pub submissions: Vec<SubmissionFacts>,
    /// The correction cycle's rounds that are still `open`.
    pub rounds: Vec<RoundFacts>,
}

/// A pending permission request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingAsk {
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// `perm-<16 hex>`.
    pub request_id: String,
    /// The agent.
    pub agent: String,
    /// The tool, if the agent named it.
    pub tool: Option<String>,
    /// The command, file or input asked about.
    pub detail: String,
    /// When the hook asked.
    pub requested_ms: Option<i64>,
    /// When the hook answers without a decision.
    pub deadline_ms: i64,
}

/// A tmux agent's recorded state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentFacts {
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// `starting`, `working`, `idle`, `blocked`, `exited` or `unknown`.
    pub state: String,
    /// The profile rule that matched and its line.
    pub rule: Option<(String, Option<u64>)>,
    /// What the supervisor makes of it.
    pub note: Option<String>,
    /// Since when the state holds.
    pub since_ms: Option<i64>,
}

/// A live attempt whose submission is not proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionFacts {
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// Why the supervisor could not prove it.
    pub why: Option<String>,
    /// When the submission ended.
    pub at_ms: Option<i64>,
    /// Whether the agent's channel acknowledged the prompt since.
    pub acknowledged: bool,
}

/// An open correction round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundFacts {
    /// 1-based.
    pub round: u64,
    /// The signal that opened it.
    pub trigger: String,
    /// The work item it concerns.
    pub work_item_id: Option<String>,
    /// When it opened.
    pub started_ms: Option<i64>,
    /// What happened.
    pub reason: String,
}

fn millis(text: &str) -> Option<i64> {
    Timestamp::parse_rfc3339(text).map(Timestamp::millis)
}

/// Reads what [`Outside`] holds for the task `task_id` in `body`, under `control_root`, with
/// its derived correction `cycle`, at `now`.
pub fn gather(
    control_root: &Path,
    body: &StateBody,
    cycle: Option<&Cycle>,
    now: Timestamp,
) -> Outside {
    let live: Vec<(String, String)> = body
        .work_items
        .iter()
        .filter_map(|item| {
            let attempt = item.current_attempt.as_ref()?;
            matches!(
                attempt.status,
                AttemptStatus::Submitted | AttemptStatus::Running
            )
            .then(|| {
                (
                    item.work_item_id.value().to_owned(),
                    attempt.attempt_id.value().to_owned(),
                )
            })
        })
        .collect();
    let mut outside = Outside {
        now_ms: now.millis(),
        rounds: cycle.map(open_rounds).unwrap_or_default(),
        ..Outside::default()
    };
    if live.is_empty() {
        return outside;
    }
    outside.asks = asks(control_root, body.task_id.value(), &live, now);
    for (item, attempt) in &live {
        let dir = control_root.join(tmux::attempt_ref(attempt));
        if let Ok(Some(record)) = tmux::read_record::<StateRecord>(&dir, STATE_FILE) {
            outside.agents.push(AgentFacts {
                work_item_id: item.clone(),
                attempt_id: attempt.clone(),
                state: record.state,
                rule: record.rule.map(|rule| (rule, record.line)),
                note: record.note,
                since_ms: millis(&record.since),
            });
        }
        if let Ok(Some(proof)) = tmux::read_record::<SubmissionProof>(&dir, SUBMISSION_FILE)
            && !proof.proven
        {
            let at = Timestamp::parse_rfc3339(&proof.at);
            let signals = inbox::read(control_root, attempt).unwrap_or_default();
            let acknowledged = at.is_some_and(|at| {
                precedence::acknowledgement(&signals, &proof.prompt_digest, at).is_some()
            });
            outside.submissions.push(SubmissionFacts {
                work_item_id: item.clone(),
                attempt_id: attempt.clone(),
                why: proof.why,
                at_ms: at.map(Timestamp::millis),
                acknowledged,
            });
        }
    }
    outside
}

/// The requests of `task_id`'s live attempts that no hook answered and whose deadline is ahead
/// of `now`.
fn asks(
    control_root: &Path,
    task_id: &str,
    live: &[(String, String)],
    now: Timestamp,
) -> Vec<PendingAsk> {
    let Ok(requests) = approval::requests(control_root, task_id) else {
        return Vec::new();
    };
    requests
        .into_iter()
        .filter_map(|(request, dir)| {
            let (item, _) = live
                .iter()
                .find(|(_, attempt)| *attempt == request.attempt_id)?;
            let deadline_ms = millis(&request.deadline).filter(|at| *at > now.millis())?;
            let answered = approval::answer_of(&dir, &request.request_id);
            matches!(answered, Ok(None)).then(|| PendingAsk {
                work_item_id: item.clone(),
                attempt_id: request.attempt_id.clone(),
                request_id: request.request_id.clone(),
                agent: request.agent.clone(),
                tool: request.tool_name.clone(),
                detail: request.detail.clone(),
                requested_ms: millis(&request.requested_at),
                deadline_ms,
            })
        })
        .collect()
}

fn open_rounds(cycle: &Cycle) -> Vec<RoundFacts> {
    cycle
        .rounds
        .iter()
        .filter(|round| round.status == "open")
        .map(|round| RoundFacts {
            round: round.round,
            trigger: round.trigger.clone(),
            work_item_id: round.work_item.clone(),
            started_ms: round.started_at.as_deref().and_then(millis),
            reason: round.reason.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::time::Duration;

    use valp_kernel::{
        Attempt, AttemptStatus, Identity, IdentityKind, Requirement, State, WorkItem,
        WorkItemStatus,
    };

    use super::*;
    use crate::adapter::tmux::Record;
    use crate::agent::channel::hook::Ask;
    use crate::agent::channel::signal::AttemptIds;
    use crate::clock::{Clock, SystemClock};

    fn body(status: AttemptStatus) -> StateBody {
        let id = |kind, value| Identity::new(kind, value).unwrap();
        let item = WorkItem {
            task_id: id(IdentityKind::Task, "T"),
            work_item_id: id(IdentityKind::WorkItem, "w"),
            requirement: Requirement::Required,
            status: WorkItemStatus::Running,
            dependencies: Vec::new(),
            current_attempt: Some(Attempt {
                task_id: id(IdentityKind::Task, "T"),
                work_item_id: id(IdentityKind::WorkItem, "w"),
                attempt_id: id(IdentityKind::Attempt, "T:w:a1"),
                dispatch_id: id(IdentityKind::Dispatch, "T:w:d1"),
                dispatch_generation: 1,
                status,
            }),
        };
        State::genesis(
            id(IdentityKind::Installation, "inst"),
            1,
            id(IdentityKind::Task, "T"),
            vec![item],
        )
        .body
    }

    fn request(root: &Path, sequence: u64, wait: Duration) {
        let ids = AttemptIds {
            task_id: "T".into(),
            work_item_id: "w".into(),
            attempt_id: "T:w:a1".into(),
        };
        let ask = Ask {
            tool_name: Some("Bash".into()),
            tool_use_id: Some("toolu_1".into()),
            detail: "cargo test".into(),
        };
        approval::open_request(
            root,
            &ids,
            sequence,
            "claude",
            None,
            &ask,
            wait,
            &SystemClock,
        )
        .unwrap();
    }

    #[test]
    fn live_attempts_give_their_pending_requests_agent_state_and_unproven_submission() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        request(root, 1, Duration::from_secs(60));
        // Expired: the hook answers it alone; not pending.
        request(root, 2, Duration::ZERO);
        let dir = root.join(tmux::attempt_ref("T:w:a1"));
        std::fs::create_dir_all(dir.join("proofs")).unwrap();
        let now = SystemClock.now();
        let state = StateRecord {
            schema_version: tmux::records::STATE_SCHEMA.into(),
            state: "blocked".into(),
            rule: Some("permission prompt".into()),
            line: Some(3),
            since: now.to_rfc3339(),
            sampled_at: now.to_rfc3339(),
            screen_digest: "sha256:00".into(),
            note: None,
            tail: Vec::new(),
            source: None,
        };
        std::fs::write(dir.join(STATE_FILE), state.canonical().unwrap()).unwrap();
        let proof = SubmissionProof {
            schema_version: tmux::records::SUBMISSION_SCHEMA.into(),
            submission_id: "s".into(),
            attempt_id: "T:w:a1".into(),
            payload_digest: "sha256:00".into(),
            agent: "demo".into(),
            socket: "/s".into(),
            pane_id: "%1".into(),
            pane_pid: 1,
            started_by_valp: true,
            runtime_identity: "tmux:%1:1".into(),
            prompt_digest: "sha256:01".into(),
            prompt_bytes: 3,
            proven: false,
            why: Some("no change after Enter".into()),
            steps: Vec::new(),
            at: now.to_rfc3339(),
            acknowledged_by: None,
        };
        std::fs::write(dir.join(SUBMISSION_FILE), proof.canonical().unwrap()).unwrap();

        let found = gather(root, &body(AttemptStatus::Running), None, SystemClock.now());
        assert_eq!(found.asks.len(), 1, "{found:?}");
        assert_eq!(found.asks[0].request_id, approval::request_id("T:w:a1", 1));
        assert_eq!(found.asks[0].tool.as_deref(), Some("Bash"));
        assert_eq!(found.agents.len(), 1);
        assert_eq!(found.agents[0].state, "blocked");
        assert_eq!(
            found.agents[0].rule,
            Some(("permission prompt".to_owned(), Some(3)))
        );
        assert_eq!(found.submissions.len(), 1);
        assert!(!found.submissions[0].acknowledged);
        assert_eq!(
            found.submissions[0].why.as_deref(),
            Some("no change after Enter")
        );

        // A finished attempt asks nothing: none of it is read.
        let done = gather(
            root,
            &body(AttemptStatus::Completed),
            None,
            SystemClock.now(),
        );
        assert_eq!(
            done,
            Outside {
                now_ms: done.now_ms,
                ..Outside::default()
            }
        );
    }
}
