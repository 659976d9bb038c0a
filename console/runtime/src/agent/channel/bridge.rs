//! The hook bridge: what `valp hook claude|codex` and `valp notify codex` do with one payload.
//!
//! The attempt is found only through the environment the tmux adapter sets when it starts the
//! agent ([`ENV_CONTROL_ROOT`], [`ENV_TASK`], [`ENV_WORK_ITEM`], [`ENV_ATTEMPT`]), never by
//! guessing from the current folder. Without them the bridge is a no-op that says so on
//! stderr; the command always exits 0 and never blocks the agent (Claude reads exit code 2 as
//! "block"), whatever goes wrong.
//!
//! What the bridge checks before writing (agents run as the same OS user as valp, so these
//! protect against mistakes and confused payloads, not against a hostile agent; see
//! ARCHITECTURE.md "Agent channels"): the control root holds an `installation.json`; the ids
//! are 1 to 128 bytes of plain text; it writes only below the control root's
//! `inbox/agent-signals/` and `runtime/agent-channel/`, in files named by the hash of the
//! attempt id, through real folders (no symbolic link) and with `O_NOFOLLOW`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use super::approval::{self, Answer, AnsweredBy, TimeoutAnswer};
use super::hook::{self, Source};
use super::inbox;
use super::signal::{AgentSignal, AttemptIds, Draft, MAX_NAME_BYTES, SignalKind};
use crate::clock::Clock;
use valp_view::sanitize::is_plain;

/// The control root the attempt belongs to.
pub const ENV_CONTROL_ROOT: &str = "VALP_CONTROL_ROOT";
/// The task.
pub const ENV_TASK: &str = "VALP_TASK_ID";
/// The work item.
pub const ENV_WORK_ITEM: &str = "VALP_WORK_ITEM_ID";
/// The attempt.
pub const ENV_ATTEMPT: &str = "VALP_ATTEMPT_ID";

/// The attempt the adapter named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptEnv {
    /// The control root.
    pub control_root: PathBuf,
    /// The ids.
    pub attempt: AttemptIds,
}

/// Why the environment names no attempt (the bridge then records nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvProblem {
    /// Not started by valp.
    #[error("not started by valp for an attempt ({0} not set); nothing recorded")]
    Missing(String),
    /// A variable is not an id.
    #[error("{0} is not 1 to 128 bytes of plain text; nothing recorded")]
    BadId(&'static str),
    /// The control root is not one.
    #[error("{0} is not a valp control root (no installation.json); nothing recorded")]
    NotAControlRoot(String),
}

/// Reads the attempt from the environment, through `get` (so tests need no process
/// environment).
pub fn attempt_from_env(get: impl Fn(&str) -> Option<OsString>) -> Result<AttemptEnv, EnvProblem> {
    let names = [ENV_CONTROL_ROOT, ENV_TASK, ENV_WORK_ITEM, ENV_ATTEMPT];
    let missing: Vec<&str> = names
        .iter()
        .copied()
        .filter(|name| get(name).is_none_or(|value| value.is_empty()))
        .collect();
    if !missing.is_empty() {
        return Err(EnvProblem::Missing(missing.join(", ")));
    }
    let id = |name: &'static str| -> Result<String, EnvProblem> {
        let value = get(name)
            .and_then(|value| value.into_string().ok())
            .ok_or(EnvProblem::BadId(name))?;
        if value.len() > MAX_NAME_BYTES || !is_plain(&value) {
            return Err(EnvProblem::BadId(name));
        }
        Ok(value)
    };
    let attempt = AttemptIds {
        task_id: id(ENV_TASK)?,
        work_item_id: id(ENV_WORK_ITEM)?,
        attempt_id: id(ENV_ATTEMPT)?,
    };
    let control_root = PathBuf::from(get(ENV_CONTROL_ROOT).unwrap_or_default());
    let installation = control_root.join(valp_store::layout::INSTALLATION_FILE);
    if !std::fs::symlink_metadata(&installation).is_ok_and(|meta| meta.is_file()) {
        return Err(EnvProblem::NotAControlRoot(
            valp_view::sanitize::display_line(&control_root.to_string_lossy()),
        ));
    }
    Ok(AttemptEnv {
        control_root,
        attempt,
    })
}

/// How the bridge answers permission requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApprovalOptions {
    /// How long to wait for the Leader (0: answer at once).
    pub wait: Duration,
    /// How often to look for a decision.
    pub poll: Duration,
    /// What to answer without a decision.
    pub on_timeout: TimeoutAnswer,
}

/// What the bridge did with one payload.
#[derive(Debug)]
pub enum Handled {
    /// Recorded.
    Recorded {
        /// The signals written (the request, and for a permission request its answer).
        signals: Vec<AgentSignal>,
        /// For a permission request, what the agent was answered.
        answer: Option<approval::Answered>,
    },
    /// Not a payload valp maps; recorded in the attempt's rejection list.
    Rejected(hook::Rejection),
}

/// Why the bridge could not record (reported on stderr; the agent goes on).
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The inbox.
    #[error(transparent)]
    Inbox(#[from] inbox::InboxError),
    /// The approval files.
    #[error(transparent)]
    Approval(#[from] approval::ApprovalError),
    /// Writing the answer to the agent.
    #[error("answering the agent: {0}")]
    Output(#[from] std::io::Error),
}

/// `runtime/agent-channel/<H>/rejected.jsonl`: payloads the bridge did not map.
pub fn rejections_file(attempt_id: &str) -> String {
    format!(
        "{}/{}/rejected.jsonl",
        approval::CHANNEL_DIR,
        crate::abi::attempt_folder(attempt_id)
    )
}

/// Largest rejection list kept per attempt; past it, rejections are only reported on stderr.
const MAX_REJECTIONS_BYTES: u64 = 1 << 20;

fn list_rejection(
    env: &AttemptEnv,
    agent: &str,
    payload: &[u8],
    rejection: &hook::Rejection,
    clock: &dyn Clock,
) -> Result<(), BridgeError> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let relative = rejections_file(&env.attempt.attempt_id);
    let (folder, name) = relative.rsplit_once('/').unwrap_or(("", &relative));
    let dir = inbox::real_folder(&env.control_root, folder)?;
    let path = dir.join(name);
    if std::fs::metadata(&path).is_ok_and(|meta| meta.len() > MAX_REJECTIONS_BYTES) {
        return Ok(());
    }
    let line = serde_json::json!({
        "agent": agent,
        "at": clock.now().to_rfc3339(),
        "code": rejection.code(),
        "message": valp_view::sanitize::display_text(&rejection.to_string()),
        "payload_digest": valp_kernel::canonical::sha256_digest(payload),
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(crate::ingest::open_flags())
        .open(&path)
        .map_err(|error| inbox::InboxError::Io {
            path: path.display().to_string(),
            source: error,
        })?;
    file.write_all(format!("{line}\n").as_bytes())?;
    Ok(())
}

/// Maps `payload` from `source`, records it for the attempt in `env`, and for a permission
/// request waits for the Leader and writes the agent's answer to `out`.
pub fn handle(
    source: Source,
    payload: &[u8],
    env: &AttemptEnv,
    options: &ApprovalOptions,
    clock: &dyn Clock,
    out: &mut dyn Write,
) -> Result<Handled, BridgeError> {
    let mapped = match hook::map(source, payload) {
        Ok(mapped) => mapped,
        Err(rejection) => {
            list_rejection(env, source.agent(), payload, &rejection, clock)?;
            return Ok(Handled::Rejected(rejection));
        }
    };
    let session = mapped.draft.session_id.clone();
    let event = mapped.draft.event.clone();
    let payload_digest = mapped.draft.payload_digest.clone();
    let Some(ask) = mapped.ask else {
        let signal = inbox::append(&env.control_root, &env.attempt, mapped.draft, clock)?;
        return Ok(Handled::Recorded {
            signals: vec![signal],
            answer: None,
        });
    };
    // The request id is derived from the signal's sequence, which only the append knows, so
    // the signal is written first and names its request.
    let draft = mapped.draft;
    let requested = inbox::append_with(
        &env.control_root,
        &env.attempt,
        draft,
        clock,
        |sequence, draft| {
            draft.request_id = Some(approval::request_id(&env.attempt.attempt_id, sequence));
        },
    )?;
    let (request, dir) = approval::open_request(
        &env.control_root,
        &env.attempt,
        requested.sequence,
        source.agent(),
        session.as_deref(),
        &ask,
        options.wait,
        clock,
    )?;
    let answered = approval::await_answer(&dir, &request, options.poll, options.on_timeout, clock)?;
    write_answer(source, answered.answer, out)?;
    let mut answer_draft = Draft::new(
        SignalKind::PermissionAnswered,
        requested.channel,
        source.agent(),
        &event,
        payload_digest,
        &answer_summary(&answered),
    );
    answer_draft.session_id = session;
    answer_draft.request_id = Some(request.request_id.clone());
    answer_draft.tool_name = ask.tool_name;
    answer_draft.tool_use_id = ask.tool_use_id;
    let answer_signal = inbox::append(&env.control_root, &env.attempt, answer_draft, clock)?;
    Ok(Handled::Recorded {
        signals: vec![requested, answer_signal],
        answer: Some(answered),
    })
}

/// What [`record_stream`] did.
#[derive(Debug, Default)]
pub struct StreamReport {
    /// Signals recorded.
    pub recorded: usize,
    /// Lines not mapped, by 1-based line number (also listed in the attempt's rejection list).
    pub rejected: Vec<(u64, hook::Rejection)>,
}

/// Records every line of an agent's JSON stream read from `reader` (a transcript, or the live
/// output piped in) as the attempt's signals; lines over the payload cap or that do not map
/// are listed rejections and reading goes on.
pub fn record_stream(
    stream: super::stream::Stream,
    reader: &mut dyn std::io::BufRead,
    env: &AttemptEnv,
    clock: &dyn Clock,
) -> Result<StreamReport, BridgeError> {
    record_stream_with(stream, reader, env, clock, |_, _| Ok(()))
}

/// [`record_stream`], calling `each` with every line as read (its LF included when it had
/// one) and the kinds of the signals it gave, once they are recorded: the headless wrapper
/// passes the stream on and watches for the end of a turn ([`super::headless`]).
pub fn record_stream_with(
    stream: super::stream::Stream,
    reader: &mut dyn std::io::BufRead,
    env: &AttemptEnv,
    clock: &dyn Clock,
    mut each: impl FnMut(&[u8], &[super::signal::SignalKind]) -> std::io::Result<()>,
) -> Result<StreamReport, BridgeError> {
    use std::io::{BufRead as _, Read as _};
    let agent = match stream {
        super::stream::Stream::Claude => "claude",
        super::stream::Stream::Codex => "codex",
    };
    let mut report = StreamReport::default();
    let mut line = Vec::new();
    let cap = hook::MAX_PAYLOAD_BYTES as u64 + 1;
    for number in 1.. {
        line.clear();
        if (&mut *reader).take(cap).read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let ended = line.last() == Some(&b'\n');
        if ended {
            line.pop();
        }
        let mapped = if !ended && line.len() as u64 >= cap {
            reader.skip_until(b'\n')?;
            Err(hook::Rejection::TooLarge { size: line.len() })
        } else if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        } else {
            super::stream::map_line(stream, &line)
        };
        let mut kinds = Vec::new();
        match mapped {
            Ok(drafts) => {
                for draft in drafts {
                    kinds.push(draft.kind);
                    inbox::append(&env.control_root, &env.attempt, draft, clock)?;
                    report.recorded += 1;
                }
            }
            Err(rejection) => {
                list_rejection(env, agent, &line, &rejection, clock)?;
                report.rejected.push((number, rejection));
            }
        }
        if ended {
            line.push(b'\n');
        }
        each(&line, &kinds)?;
    }
    Ok(report)
}

fn answer_summary(answered: &approval::Answered) -> String {
    let what = match answered.answer {
        Answer::Allow => "allowed",
        Answer::Deny => "denied",
        Answer::Ask => "left to the agent's own prompt (an answer there is unattributed)",
    };
    let by = match answered.by {
        AnsweredBy::Leader => "by the Leader's decision",
        AnsweredBy::Timeout => "after the timeout",
        AnsweredBy::InvalidDecision => "after an invalid decision file",
    };
    format!("{what} {by}")
}

/// The hook's answer on stdout: `hookSpecificOutput.decision.behavior` for allow and deny
/// (Claude Code's and Codex's `PermissionRequest` output); nothing for ask, so the agent shows
/// its own prompt.
fn write_answer(source: Source, answer: Answer, out: &mut dyn Write) -> std::io::Result<()> {
    let decision = match answer {
        Answer::Allow => serde_json::json!({"behavior": "allow"}),
        Answer::Deny => serde_json::json!({
            "behavior": "deny",
            "message": format!("denied by valp (the Leader's decision, or no decision in time) for the {} attempt", source.agent()),
        }),
        Answer::Ask => return Ok(()),
    };
    let output = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": decision,
        }
    });
    writeln!(out, "{output}")?;
    out.flush()
}
