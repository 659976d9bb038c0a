//! Approvals that fail closed: an agent's permission request waits for the Leader's decision,
//! through files under the control root.
//!
//! ```text
//! <control root>/runtime/agent-channel/<H>/approvals/     H = attempt_folder(attempt_id)
//!   <request>.request.json    valp-agent-approval-request.v1   the hook, before it waits
//!   <request>.decision.json   valp-agent-approval-decision.v1  `valp agent approve|deny`,
//!                                                             created once (never replaced)
//!   <request>.answer.json     valp-agent-approval-answer.v1    the hook, created once: what
//!                                                             the agent was answered
//! <control root>/runtime/agent-channel/decisions.jsonl        the default [`ApprovalLog`]
//! ```
//!
//! **The hook** ([`open_request`], [`await_answer`]) writes the request with a deadline, polls
//! for a decision until then, and answers. The deadline is valp's own timeout, which setup
//! makes shorter than the agent's hook timeout, so valp always answers before the agent gives
//! up on the hook. Without a valid decision by the deadline it answers
//! [`TimeoutAnswer::Deny`] or [`TimeoutAnswer::Ask`] (back to the agent's own prompt, where an
//! answer is unattributed), never allow. The answer file is created once and is the truth of
//! what the agent got.
//!
//! **The Leader** ([`decide`]) may decide only a request that is not answered and whose deadline
//! has not passed (else [`ApprovalError::Stale`], nothing written), and only once
//! ([`ApprovalError::AlreadyDecided`]). The decision (allow/deny, who, from which Leader session
//! and epoch, for which `tool_use_id`) is recorded through the [`ApprovalLog`] seam *before* the
//! decision file is written, so no agent is answered by a decision the log does not hold. Then
//! `decide` waits for the hook's answer: the answer naming the decision's digest is delivery; a
//! timeout answer that won the race makes the decision stale (logged as such).
//!
//! The seam: the operator-action journal (`tasks/<t>/actions.jsonl`, being added to the store)
//! will implement [`ApprovalLog`]; until then [`ChannelLog`] appends the entries, synced, to
//! `runtime/agent-channel/decisions.jsonl`.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use valp_kernel::canonical::sha256_digest;

use super::hook::Ask;
use super::inbox::{InboxError, real_folder};
use super::signal::AttemptIds;
use crate::abi::attempt_folder;
use crate::adapter::files;
use crate::clock::{Clock, Timestamp};
use valp_view::sanitize::display_text;

/// The channel's folder under the control root.
pub const CHANNEL_DIR: &str = "runtime/agent-channel";
/// `valp-agent-approval-request.v1`
pub const REQUEST_SCHEMA: &str = "valp-agent-approval-request.v1";
/// `valp-agent-approval-decision.v1`
pub const DECISION_SCHEMA: &str = "valp-agent-approval-decision.v1";
/// `valp-agent-approval-answer.v1`
pub const ANSWER_SCHEMA: &str = "valp-agent-approval-answer.v1";
/// Largest approval file read.
const MAX_FILE_BYTES: u64 = 64 << 10;

/// `runtime/agent-channel/<H>/approvals`, relative to the control root.
pub fn approvals_dir(attempt_id: &str) -> String {
    format!("{CHANNEL_DIR}/{}/approvals", attempt_folder(attempt_id))
}

/// The request id of the permission request recorded as signal `sequence` of `attempt_id`:
/// `perm-` and 16 hex digits, short enough to type.
pub fn request_id(attempt_id: &str, sequence: u64) -> String {
    let digest = sha256_digest(format!("{attempt_id}\n{sequence}").as_bytes());
    format!("perm-{}", &digest["sha256:".len()..][..16])
}

/// `valp-agent-approval-request.v1`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent.
    pub agent: String,
    /// The attempt.
    pub attempt_id: String,
    /// When the hook answers without a decision.
    pub deadline: String,
    /// The command or file asked about (display text).
    pub detail: String,
    /// `perm-<16 hex>`.
    pub request_id: String,
    /// When the hook asked.
    pub requested_at: String,
    /// [`REQUEST_SCHEMA`].
    pub schema_version: String,
    /// The agent's session.
    pub session_id: Option<String>,
    /// The task.
    pub task_id: String,
    /// The tool.
    pub tool_name: Option<String>,
    /// The tool call.
    pub tool_use_id: Option<String>,
    /// The work item.
    pub work_item_id: String,
}

/// The Leader's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Let the tool run.
    Allow,
    /// Refuse it.
    Deny,
}

/// `valp-agent-approval-decision.v1`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The attempt.
    pub attempt_id: String,
    /// When.
    pub decided_at: String,
    /// The principal who decided.
    pub decider: String,
    /// The Leader epoch.
    pub leader_epoch: i64,
    /// The Leader session (the bound candidate).
    pub leader_session: String,
    /// Allow or deny.
    pub outcome: Outcome,
    /// The request.
    pub request_id: String,
    /// [`DECISION_SCHEMA`].
    pub schema_version: String,
    /// The task.
    pub task_id: String,
    /// The tool call decided.
    pub tool_use_id: Option<String>,
}

/// What the agent was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// The tool may run.
    Allow,
    /// It may not.
    Deny,
    /// Nothing: the agent shows its own prompt (whatever is answered there is unattributed).
    Ask,
}

/// Why the hook answered what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnsweredBy {
    /// The Leader's decision.
    Leader,
    /// No decision by the deadline.
    Timeout,
    /// A decision file that is not a valid decision for the request.
    InvalidDecision,
}

/// `valp-agent-approval-answer.v1`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answered {
    /// What the agent got.
    pub answer: Answer,
    /// When.
    pub answered_at: String,
    /// Why.
    pub by: AnsweredBy,
    /// `sha256:` of the decision file's bytes, when a decision was taken.
    pub decision_digest: Option<String>,
    /// The request.
    pub request_id: String,
    /// [`ANSWER_SCHEMA`].
    pub schema_version: String,
}

/// What the hook answers when no valid decision came: never allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeoutAnswer {
    /// Refuse the tool.
    Deny,
    /// Leave it to the agent's own permission prompt.
    Ask,
}

impl TimeoutAnswer {
    const fn answer(self) -> Answer {
        match self {
            Self::Deny => Answer::Deny,
            Self::Ask => Answer::Ask,
        }
    }
}

/// Why an approval step failed.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// No request of that id for the task.
    #[error(
        "task {task_id} has no permission request {request_id} (`valp agent requests {task_id}` lists them)"
    )]
    NoRequest {
        /// The task.
        task_id: String,
        /// The request.
        request_id: String,
    },
    /// The hook already answered, or its deadline passed.
    #[error("stale: request {request_id} was already answered ({what}); the decision is refused")]
    Stale {
        /// The request.
        request_id: String,
        /// What happened instead.
        what: String,
    },
    /// Someone decided first.
    #[error("request {request_id} was already decided: {outcome} by {decider}")]
    AlreadyDecided {
        /// The request.
        request_id: String,
        /// Their outcome.
        outcome: &'static str,
        /// Who.
        decider: String,
    },
    /// The decision is written and logged, but no answer followed in time.
    #[error(
        "request {request_id}: the decision is recorded but the hook did not answer within \
         {waited_ms} ms (the agent may have stopped waiting); check the agent"
    )]
    Unconfirmed {
        /// The request.
        request_id: String,
        /// How long we waited.
        waited_ms: u128,
    },
    /// A file is not what it should be.
    #[error("{path}: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The folders on the way.
    #[error(transparent)]
    Folder(#[from] InboxError),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ApprovalError + '_ {
    move |source| ApprovalError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn json_line<T: Serialize>(value: &T) -> Vec<u8> {
    // Serializing plain structs of strings and integers cannot fail.
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, ApprovalError> {
    let bytes = match files::read_capped(path, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(ApprovalError::Invalid {
                path: path.display().to_string(),
                reason: format!("larger than {MAX_FILE_BYTES} bytes"),
            });
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(io_error(path)(error)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| ApprovalError::Invalid {
            path: path.display().to_string(),
            reason: display_text(&error.to_string()),
        })
}

fn file(dir: &Path, request_id: &str, what: &str) -> PathBuf {
    dir.join(format!("{request_id}.{what}.json"))
}

/// The hook's side, step 1: writes the request for the permission signal `sequence`, with a
/// deadline `wait` from now. Returns the request and its folder.
#[allow(clippy::too_many_arguments)] // the request's members, named at the one call site
pub fn open_request(
    control_root: &Path,
    attempt: &AttemptIds,
    sequence: u64,
    agent: &str,
    session_id: Option<&str>,
    ask: &Ask,
    wait: Duration,
    clock: &dyn Clock,
) -> Result<(Request, PathBuf), ApprovalError> {
    let dir = real_folder(control_root, &approvals_dir(&attempt.attempt_id))?;
    let now = clock.now();
    let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
    let request = Request {
        agent: agent.to_owned(),
        attempt_id: attempt.attempt_id.clone(),
        deadline: Timestamp::from_millis(now.millis().saturating_add(wait_ms)).to_rfc3339(),
        detail: ask.detail.clone(),
        request_id: request_id(&attempt.attempt_id, sequence),
        requested_at: now.to_rfc3339(),
        schema_version: REQUEST_SCHEMA.to_owned(),
        session_id: session_id.map(str::to_owned),
        task_id: attempt.task_id.clone(),
        tool_name: ask.tool_name.as_deref().map(super::signal::bounded_name),
        tool_use_id: ask.tool_use_id.as_deref().map(super::signal::bounded_name),
        work_item_id: attempt.work_item_id.clone(),
    };
    let path = file(&dir, &request.request_id, "request");
    files::write_new_or_same(&path, &json_line(&request)).map_err(io_error(&path))?;
    Ok((request, dir))
}

/// The hook's side, step 2: waits for a decision until the request's deadline (polling every
/// `poll`), then answers once. A decision that does not decode or names another request is
/// answered as a timeout would be.
pub fn await_answer(
    dir: &Path,
    request: &Request,
    poll: Duration,
    on_timeout: TimeoutAnswer,
    clock: &dyn Clock,
) -> Result<Answered, ApprovalError> {
    let deadline = Timestamp::parse_rfc3339(&request.deadline).unwrap_or(clock.now());
    let decision_path = file(dir, &request.request_id, "decision");
    let (answer, by, decision_digest) = loop {
        // Looked at once more after the deadline, so a decision written just before it counts.
        let expired = clock.now() >= deadline;
        match files::read_capped(&decision_path, MAX_FILE_BYTES) {
            Ok(Some(bytes)) => break judge(&bytes, request, on_timeout),
            Ok(None) => break (on_timeout.answer(), AnsweredBy::InvalidDecision, None),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(&decision_path)(error)),
        }
        if expired {
            break (on_timeout.answer(), AnsweredBy::Timeout, None);
        }
        std::thread::sleep(poll);
    };
    let answered = Answered {
        answer,
        answered_at: clock.now().to_rfc3339(),
        by,
        decision_digest,
        request_id: request.request_id.clone(),
        schema_version: ANSWER_SCHEMA.to_owned(),
    };
    let path = file(dir, &request.request_id, "answer");
    if files::write_new(&path, &json_line(&answered)).map_err(io_error(&path))? {
        return Ok(answered);
    }
    // Answered already (the same request's hook ran twice): the first answer stands.
    read_json(&path)?.ok_or_else(|| ApprovalError::Invalid {
        path: path.display().to_string(),
        reason: "vanished".to_owned(),
    })
}

fn judge(
    bytes: &[u8],
    request: &Request,
    on_timeout: TimeoutAnswer,
) -> (Answer, AnsweredBy, Option<String>) {
    match serde_json::from_slice::<Decision>(bytes) {
        Ok(decision)
            if decision.schema_version == DECISION_SCHEMA
                && decision.request_id == request.request_id
                && decision.task_id == request.task_id
                && decision.attempt_id == request.attempt_id =>
        {
            let answer = match decision.outcome {
                Outcome::Allow => Answer::Allow,
                Outcome::Deny => Answer::Deny,
            };
            (answer, AnsweredBy::Leader, Some(sha256_digest(bytes)))
        }
        _ => (on_timeout.answer(), AnsweredBy::InvalidDecision, None),
    }
}

/// An entry of the approval log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
pub enum LogEntry {
    /// A decision, before it is delivered.
    Decided {
        /// The request decided.
        request: Box<Request>,
        /// The decision.
        decision: Box<Decision>,
    },
    /// A decision the hook's timeout answer beat.
    Stale {
        /// The request.
        request_id: String,
        /// The task.
        task_id: String,
        /// What the agent got instead.
        answered: Answered,
    },
}

/// Where decisions are recorded before they reach an agent (the seam for the task's
/// operator-action journal).
pub trait ApprovalLog {
    /// Records `entry` durably; an error stops the decision before it is written.
    fn record(&self, entry: &LogEntry) -> Result<(), ApprovalError>;
}

/// The default [`ApprovalLog`]: `runtime/agent-channel/decisions.jsonl`, one JSON line per
/// entry, synced.
pub struct ChannelLog {
    /// The control root.
    pub control_root: PathBuf,
}

impl ApprovalLog for ChannelLog {
    fn record(&self, entry: &LogEntry) -> Result<(), ApprovalError> {
        let dir = real_folder(&self.control_root, CHANNEL_DIR)?;
        let path = dir.join("decisions.jsonl");
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .custom_flags(crate::ingest::open_flags())
            .open(&path)
            .map_err(io_error(&path))?;
        log.write_all(&json_line(entry))
            .and_then(|()| log.sync_data())
            .map_err(io_error(&path))
    }
}

/// Every request of `task_id` with its folder, oldest first.
pub fn requests(
    control_root: &Path,
    task_id: &str,
) -> Result<Vec<(Request, PathBuf)>, ApprovalError> {
    let base = control_root.join(CHANNEL_DIR);
    let entries = match std::fs::read_dir(&base) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io_error(&base)(error)),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path().join("approvals");
        let Ok(files) = std::fs::read_dir(&dir) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if !path.to_string_lossy().ends_with(".request.json") {
                continue;
            }
            if let Ok(Some(request)) = read_json::<Request>(&path)
                && request.task_id == task_id
                && request.schema_version == REQUEST_SCHEMA
            {
                found.push((request, dir.clone()));
            }
        }
    }
    found.sort_by(|a, b| {
        (&a.0.requested_at, &a.0.request_id).cmp(&(&b.0.requested_at, &b.0.request_id))
    });
    Ok(found)
}

/// The answer of a request, if the hook gave one.
pub fn answer_of(dir: &Path, request_id: &str) -> Result<Option<Answered>, ApprovalError> {
    read_json(&file(dir, request_id, "answer"))
}

/// Who decides, as the authority lane proved it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decider {
    /// The principal.
    pub principal: String,
    /// The bound Leader session (candidate id).
    pub session: String,
    /// The active epoch.
    pub epoch: i64,
}

/// The Leader's side: decides `request_id` of `task_id` (see the module documentation), then
/// waits up to `patience` past the request's deadline for the hook's answer.
#[allow(clippy::too_many_arguments)] // each is one independent input of the decision
pub fn decide(
    control_root: &Path,
    task_id: &str,
    request_id: &str,
    outcome: Outcome,
    decider: &Decider,
    log: &dyn ApprovalLog,
    clock: &dyn Clock,
    patience: Duration,
) -> Result<Answered, ApprovalError> {
    let (request, dir) = requests(control_root, task_id)?
        .into_iter()
        .find(|(request, _)| request.request_id == request_id)
        .ok_or_else(|| ApprovalError::NoRequest {
            task_id: display_text(task_id),
            request_id: display_text(request_id),
        })?;
    if let Some(answered) = answer_of(&dir, request_id)? {
        return Err(stale(&answered));
    }
    let now = clock.now();
    if Timestamp::parse_rfc3339(&request.deadline).is_none_or(|deadline| now >= deadline) {
        return Err(ApprovalError::Stale {
            request_id: request_id.to_owned(),
            what: format!("its deadline {} has passed", request.deadline),
        });
    }
    let decision_path = file(&dir, request_id, "decision");
    if let Some(earlier) = read_json::<Decision>(&decision_path)? {
        return Err(already(&earlier));
    }
    let decision = Decision {
        attempt_id: request.attempt_id.clone(),
        decided_at: now.to_rfc3339(),
        decider: decider.principal.clone(),
        leader_epoch: decider.epoch,
        leader_session: decider.session.clone(),
        outcome,
        request_id: request_id.to_owned(),
        schema_version: DECISION_SCHEMA.to_owned(),
        task_id: request.task_id.clone(),
        tool_use_id: request.tool_use_id.clone(),
    };
    log.record(&LogEntry::Decided {
        request: Box::new(request.clone()),
        decision: Box::new(decision.clone()),
    })?;
    let bytes = json_line(&decision);
    if !files::write_new(&decision_path, &bytes).map_err(io_error(&decision_path))? {
        // Another Leader command won between the check and the write.
        let earlier = read_json::<Decision>(&decision_path)?;
        return Err(earlier.map_or_else(
            || ApprovalError::Invalid {
                path: decision_path.display().to_string(),
                reason: "vanished".to_owned(),
            },
            |earlier| already(&earlier),
        ));
    }
    let digest = sha256_digest(&bytes);
    let started = Instant::now();
    let until = Timestamp::parse_rfc3339(&request.deadline).unwrap_or(now);
    let wait =
        Duration::from_millis(u64::try_from(until.millis() - now.millis()).unwrap_or(0)) + patience;
    loop {
        if let Some(answered) = answer_of(&dir, request_id)? {
            if answered.decision_digest.as_deref() == Some(digest.as_str()) {
                return Ok(answered);
            }
            log.record(&LogEntry::Stale {
                request_id: request_id.to_owned(),
                task_id: request.task_id.clone(),
                answered: answered.clone(),
            })?;
            return Err(stale(&answered));
        }
        if started.elapsed() >= wait {
            return Err(ApprovalError::Unconfirmed {
                request_id: request_id.to_owned(),
                waited_ms: started.elapsed().as_millis(),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn stale(answered: &Answered) -> ApprovalError {
    let answer = match answered.answer {
        Answer::Allow => "allow",
        Answer::Deny => "deny",
        Answer::Ask => "left to the agent's own prompt",
    };
    let by = match answered.by {
        AnsweredBy::Leader => "the Leader's decision",
        AnsweredBy::Timeout => "timeout",
        AnsweredBy::InvalidDecision => "an invalid decision file",
    };
    ApprovalError::Stale {
        request_id: answered.request_id.clone(),
        what: format!("{answer} by {by} at {}", answered.answered_at),
    }
}

fn already(earlier: &Decision) -> ApprovalError {
    ApprovalError::AlreadyDecided {
        request_id: earlier.request_id.clone(),
        outcome: match earlier.outcome {
            Outcome::Allow => "allow",
            Outcome::Deny => "deny",
        },
        decider: display_text(&earlier.decider),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::cell::RefCell;

    use super::*;
    use crate::clock::SystemClock;

    #[derive(Default)]
    struct MemoryLog(RefCell<Vec<LogEntry>>, bool);

    impl ApprovalLog for MemoryLog {
        fn record(&self, entry: &LogEntry) -> Result<(), ApprovalError> {
            if self.1 {
                return Err(ApprovalError::Invalid {
                    path: "log".into(),
                    reason: "full".into(),
                });
            }
            self.0.borrow_mut().push(entry.clone());
            Ok(())
        }
    }

    fn attempt() -> AttemptIds {
        AttemptIds {
            task_id: "T".into(),
            work_item_id: "w".into(),
            attempt_id: "T:w:a1".into(),
        }
    }

    fn ask() -> Ask {
        Ask {
            tool_name: Some("Bash".into()),
            tool_use_id: Some("toolu_1".into()),
            detail: "rm -rf build".into(),
        }
    }

    fn decider() -> Decider {
        Decider {
            principal: "uid-1000".into(),
            session: "tmux:/s:%1".into(),
            epoch: 1,
        }
    }

    /// `decide` on `root`'s task T as the test Leader, waiting `patience` for the answer.
    fn leader(
        root: &Path,
        request: &str,
        outcome: Outcome,
        log: &MemoryLog,
        patience: Duration,
    ) -> Result<Answered, ApprovalError> {
        decide(
            root,
            "T",
            request,
            outcome,
            &decider(),
            log,
            &SystemClock,
            patience,
        )
    }

    /// Runs the hook's wait in a thread while `leader` acts; returns the hook's answer and
    /// the Leader's result.
    fn race(
        wait: Duration,
        leader: impl FnOnce(&Path, &str) -> Result<Answered, ApprovalError>,
    ) -> (Answered, Result<Answered, ApprovalError>) {
        let dir = tempfile::tempdir().unwrap();
        let (request, folder) = open_request(
            dir.path(),
            &attempt(),
            7,
            "claude",
            Some("s"),
            &ask(),
            wait,
            &SystemClock,
        )
        .unwrap();
        let id = request.request_id.clone();
        let hook = std::thread::spawn(move || {
            await_answer(
                &folder,
                &request,
                Duration::from_millis(5),
                TimeoutAnswer::Deny,
                &SystemClock,
            )
            .unwrap()
        });
        let decided = leader(dir.path(), &id);
        (hook.join().unwrap(), decided)
    }

    #[test]
    fn an_allow_reaches_the_hook_and_is_logged_first() {
        let log = MemoryLog::default();
        let (answered, decided) = race(Duration::from_secs(5), |root, id| {
            leader(root, id, Outcome::Allow, &log, Duration::from_secs(2))
        });
        assert_eq!(
            (answered.answer, answered.by),
            (Answer::Allow, AnsweredBy::Leader)
        );
        assert_eq!(decided.unwrap(), answered);
        let entries = log.0.borrow();
        let LogEntry::Decided { decision, .. } = &entries[0] else {
            panic!("{entries:?}")
        };
        assert_eq!(decision.decider, "uid-1000");
        assert_eq!(decision.leader_session, "tmux:/s:%1");
        assert_eq!(decision.tool_use_id.as_deref(), Some("toolu_1"));
    }

    #[test]
    fn a_deny_reaches_the_hook() {
        let log = MemoryLog::default();
        let (answered, decided) = race(Duration::from_secs(5), |root, id| {
            leader(root, id, Outcome::Deny, &log, Duration::from_secs(2))
        });
        assert_eq!(
            (answered.answer, answered.by),
            (Answer::Deny, AnsweredBy::Leader)
        );
        decided.unwrap();
    }

    #[test]
    fn a_timeout_never_allows_and_a_late_decision_is_stale() {
        let log = MemoryLog::default();
        let (answered, decided) = race(Duration::from_millis(50), |root, id| {
            std::thread::sleep(Duration::from_millis(300));
            leader(root, id, Outcome::Allow, &log, Duration::from_secs(1))
        });
        assert_eq!(
            (answered.answer, answered.by),
            (Answer::Deny, AnsweredBy::Timeout)
        );
        let error = decided.unwrap_err();
        assert!(
            error.to_string().starts_with(&format!(
                "stale: request {} was already answered (deny by timeout at ",
                answered.request_id
            )),
            "{error}"
        );
        assert!(
            log.0.borrow().is_empty(),
            "a stale decision is not recorded as decided"
        );
    }

    #[test]
    fn a_decision_the_log_refuses_is_never_delivered() {
        let log = MemoryLog(RefCell::default(), true);
        let (answered, decided) = race(Duration::from_millis(300), |root, id| {
            leader(root, id, Outcome::Allow, &log, Duration::from_secs(1))
        });
        assert_eq!(decided.unwrap_err().to_string(), "log: full");
        assert_eq!(
            (answered.answer, answered.by),
            (Answer::Deny, AnsweredBy::Timeout)
        );
    }

    #[test]
    fn a_second_decision_and_an_unknown_request_are_refused() {
        let log = MemoryLog::default();
        let (_, decided) = race(Duration::from_secs(5), |root, id| {
            let first = leader(root, id, Outcome::Deny, &log, Duration::from_secs(2));
            let unknown = leader(root, "perm-0", Outcome::Deny, &log, Duration::ZERO).unwrap_err();
            assert_eq!(
                unknown.to_string(),
                "task T has no permission request perm-0 (`valp agent requests T` lists them)"
            );
            let other_task = decide(
                root,
                "U",
                id,
                Outcome::Deny,
                &decider(),
                &log,
                &SystemClock,
                Duration::ZERO,
            )
            .unwrap_err();
            assert!(matches!(other_task, ApprovalError::NoRequest { .. }));
            first
        });
        decided.unwrap();
    }

    #[test]
    fn a_second_decision_before_the_answer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (request, folder) = open_request(
            dir.path(),
            &attempt(),
            2,
            "claude",
            None,
            &ask(),
            Duration::from_secs(60),
            &SystemClock,
        )
        .unwrap();
        // Another Leader command decided; the hook has not answered yet.
        let earlier = Decision {
            attempt_id: request.attempt_id.clone(),
            decided_at: request.requested_at.clone(),
            decider: "uid-1000".into(),
            leader_epoch: 1,
            leader_session: "tmux:/s:%1".into(),
            outcome: Outcome::Deny,
            request_id: request.request_id.clone(),
            schema_version: DECISION_SCHEMA.into(),
            task_id: "T".into(),
            tool_use_id: None,
        };
        std::fs::write(
            file(&folder, &request.request_id, "decision"),
            json_line(&earlier),
        )
        .unwrap();
        let log = MemoryLog::default();
        let second = leader(
            dir.path(),
            &request.request_id,
            Outcome::Allow,
            &log,
            Duration::ZERO,
        )
        .unwrap_err();
        assert_eq!(
            second.to_string(),
            format!(
                "request {} was already decided: deny by uid-1000",
                request.request_id
            )
        );
        assert!(
            log.0.borrow().is_empty(),
            "the refused decision is not logged"
        );
    }

    #[test]
    fn an_invalid_decision_file_answers_as_a_timeout_would() {
        let dir = tempfile::tempdir().unwrap();
        let (request, folder) = open_request(
            dir.path(),
            &attempt(),
            1,
            "codex",
            None,
            &ask(),
            Duration::from_secs(5),
            &SystemClock,
        )
        .unwrap();
        std::fs::write(
            folder.join(format!("{}.decision.json", request.request_id)),
            b"{\"outcome\":\"allow\"}",
        )
        .unwrap();
        let answered = await_answer(
            &folder,
            &request,
            Duration::from_millis(5),
            TimeoutAnswer::Ask,
            &SystemClock,
        )
        .unwrap();
        assert_eq!(
            (answered.answer, answered.by),
            (Answer::Ask, AnsweredBy::InvalidDecision)
        );
    }
}
