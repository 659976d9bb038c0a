//! The console's terminal coding agents (tmux): what each item's current attempt's supervisor
//! last recorded ([`agents`], read on the backend's thread, never the UI's), and the Leader's
//! actions on a running agent, each a control request its supervisor carries out: a message
//! ([`message`], pasted and proven like the prompt), the interrupt keys ([`interrupt`]), and
//! attaching a terminal to its pane ([`attach`]).
//!
//! A message and an interrupt are recorded in the task's operator-action journal
//! (`tasks/<task>/actions.jsonl`) before the request is written, with the Leader's principal,
//! epoch and the task revision they were decided against; the supervisor appends the message's
//! delivery record (with its proof file and digest) once delivered or not.

use std::path::{Path, PathBuf};

use valp_kernel::canonical::sha256_digest;
use valp_store::actions::{ActionJournal, ActionKind, ActionRecord, MAX_SUMMARY_CHARS};
use valp_store::{Access, ControlRoot};
use valp_view::sanitize::display_text;
use valp_view::{AgentView, ItemRow, Refusal};

use crate::adapter::process;
use crate::adapter::tmux;
use crate::agent::channel::action_log::ActionLog;
use crate::agent::channel::approval;
use crate::clock::Timestamp;

/// The tmux agents of the items' current attempts, in item order (an item whose attempt has no
/// `state.json` has none).
pub fn agents(root: &Path, items: &[ItemRow], now: Timestamp) -> Vec<AgentView> {
    items
        .iter()
        .filter_map(|item| {
            let attempt = item.attempt.split(' ').next().filter(|id| !id.is_empty())?;
            tmux::agent_view(
                &root.join(tmux::attempt_ref(attempt)),
                (&item.task_id, &item.work_item_id, attempt),
                now,
            )
        })
        .collect()
}

/// What the agent channels of the items' current attempts reported spending, in item order;
/// an attempt whose signals said nothing (or cannot be read) is left out: unknown, never 0.
pub fn usage(root: &Path, items: &[ItemRow]) -> Vec<valp_view::UsageRow> {
    use crate::agent::channel::{inbox, precedence};
    items
        .iter()
        .filter_map(|item| {
            let attempt = item.attempt.split(' ').next().filter(|id| !id.is_empty())?;
            let signals = inbox::read(root, attempt).ok()?;
            let usage = precedence::usage(&signals);
            let known = usage.cost_micro_usd.is_some()
                || usage.input_tokens.is_some()
                || usage.output_tokens.is_some();
            known.then(|| valp_view::UsageRow {
                task_id: item.task_id.clone(),
                work_item_id: item.work_item_id.clone(),
                attempt_id: attempt.to_owned(),
                cost_micro_usd: usage.cost_micro_usd,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
            })
        })
        .collect()
}

/// The attempt folder of a running tmux agent, or the refusal.
fn folder(root: &Path, attempt_id: &str) -> Result<PathBuf, Refusal> {
    let dir = root.join(tmux::attempt_ref(attempt_id));
    let running = matches!(
        process::supervisor_state(&dir),
        process::SupervisorState::Running { .. }
    );
    if running {
        Ok(dir)
    } else {
        Err(refused(format!("{attempt_id} has no running agent")))
    }
}

fn refused(message: String) -> Refusal {
    Refusal {
        code: "VALP-CONSOLE-AGENT".to_owned(),
        message,
    }
}

/// Who acts on the agent: the Leader's principal and active epoch.
pub struct Leader {
    /// The principal id.
    pub principal_id: String,
    /// The active epoch.
    pub epoch: i128,
}

/// What one action is: its id, kind, the digest of its full payload and a summary.
struct Action<'a> {
    id: &'a str,
    kind: ActionKind,
    payload: &'a [u8],
    summary: &'a str,
}

/// Appends `action` on `attempt_id` of `task_id` to the task's operator-action journal.
fn record(
    root: &ControlRoot,
    leader: &Leader,
    (task_id, attempt_id): (&str, &str),
    action: &Action<'_>,
) -> Result<(), Refusal> {
    let store = |error: valp_store::StoreError| Refusal {
        code: error.code().as_str().to_owned(),
        message: error.to_string(),
    };
    let revision = root
        .open_task(task_id, Access::ReadOnly)
        .map_err(store)?
        .live()
        .body()
        .revision;
    let summary: String = display_text(action.summary)
        .chars()
        .filter(|ch| !ch.is_control())
        .take(MAX_SUMMARY_CHARS)
        .collect();
    let mut journal = ActionJournal::of_task(root, task_id, Access::Write).map_err(store)?;
    journal
        .append(&ActionRecord {
            action_id: action.id.to_owned(),
            kind: action.kind,
            principal_id: leader.principal_id.clone(),
            leader_epoch: leader.epoch,
            task_revision: revision,
            attempt_id: Some(attempt_id.to_owned()),
            work_item_id: None,
            answers: None,
            payload_digest: sha256_digest(action.payload),
            summary,
            allow: None,
            delivery: None,
        })
        .map_err(store)?;
    Ok(())
}

/// Asks the supervisor of `attempt_id` to hand `text` to its agent, recorded first; the
/// confirmation names the delivery proof (`proofs/<name>` in the attempt folder).
pub fn message(
    root: &ControlRoot,
    leader: &Leader,
    (task_id, attempt_id): (&str, &str),
    text: &str,
) -> Result<String, Refusal> {
    let dir = folder(root.layout().root(), attempt_id)?;
    if text.trim().is_empty() || text.contains('\0') {
        return Err(refused(
            "a message must be non-empty text without NUL".to_owned(),
        ));
    }
    let name = tmux::message_name();
    let action_id = name.trim_end_matches(".json");
    record(
        root,
        leader,
        (task_id, attempt_id),
        &Action {
            id: action_id,
            kind: ActionKind::Message,
            payload: text.as_bytes(),
            summary: text,
        },
    )?;
    tmux::request_message(&dir, &name, text).map_err(|error| refused(error.to_string()))?;
    Ok(format!(
        "message {action_id} for {attempt_id} recorded and requested; its delivery proof: {}/proofs/{name}",
        tmux::attempt_ref(attempt_id)
    ))
}

/// Asks the supervisor of `attempt_id` to press its agent's interrupt keys once, recorded
/// first.
pub fn interrupt(
    root: &ControlRoot,
    leader: &Leader,
    (task_id, attempt_id): (&str, &str),
) -> Result<String, Refusal> {
    let dir = folder(root.layout().root(), attempt_id)?;
    let action_id = tmux::message_name().replacen(tmux::MESSAGE_PREFIX, "interrupt-", 1);
    let action_id = action_id.trim_end_matches(".json");
    record(
        root,
        leader,
        (task_id, attempt_id),
        &Action {
            id: action_id,
            kind: ActionKind::Interrupt,
            payload: action_id.as_bytes(),
            summary: "the agent's interrupt keys, from the console",
        },
    )?;
    process::request_interrupt(&dir).map_err(|error| refused(error.to_string()))?;
    Ok(format!(
        "the agent's interrupt keys requested for {attempt_id} (recorded as {action_id})"
    ))
}

/// How long a decision waits, past the request's deadline, for the hook's answer.
const ANSWER_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Decides the permission request `request_id` of `task_id` as `decider` (allow or deny):
/// recorded in the task's operator-action journal first, then handed to the waiting hook, as
/// `valp agent approve|deny` does. A stale, decided or unknown request is refused with why.
pub fn decide(
    root: &ControlRoot,
    decider: &approval::Decider,
    (task_id, request_id): (&str, &str),
    allow: bool,
    clock: &dyn crate::clock::Clock,
) -> Result<String, Refusal> {
    let store = |error: valp_store::StoreError| Refusal {
        code: error.code().as_str().to_owned(),
        message: error.to_string(),
    };
    let task_revision = root
        .open_task(task_id, Access::ReadOnly)
        .map_err(store)?
        .live()
        .revision();
    let log = ActionLog {
        root,
        task_revision,
    };
    let outcome = if allow {
        approval::Outcome::Allow
    } else {
        approval::Outcome::Deny
    };
    let answered = approval::decide(
        root.layout().root(),
        task_id,
        request_id,
        outcome,
        decider,
        &log,
        clock,
        ANSWER_PATIENCE,
    )
    .map_err(|error| match error {
        approval::ApprovalError::Store(error) => store(error),
        other => refused(display_text(&other.to_string())),
    })?;
    Ok(format!(
        "{} delivered: request {} of {task_id} answered by your decision ({} from {}) at {}",
        if allow { "allow" } else { "deny" },
        display_text(request_id),
        display_text(&decider.principal),
        display_text(&decider.session),
        answered.answered_at
    ))
}

/// Attaches a terminal to the agent's pane: inside tmux (`inside` is `$TMUX`), a popup on the
/// Leader's own server attaching to valp's private server (a client cannot `switch-client`
/// across servers); elsewhere the confirmation is the command to copy. The popup is not
/// waited for (it lives as long as the user keeps it).
pub fn attach(root: &Path, attempt_id: &str, inside: Option<&str>) -> Result<String, Refusal> {
    let dir = root.join(tmux::attempt_ref(attempt_id));
    let command = tmux::attach_command(&dir)
        .ok_or_else(|| refused(format!("{attempt_id} has no agent pane yet")))?;
    if inside.is_none_or(str::is_empty) {
        return Ok(format!("attach with: {command}"));
    }
    let popup = std::process::Command::new("tmux")
        .args(["display-popup", "-E", "-w", "90%", "-h", "90%"])
        .arg(format!("env -u TMUX {command}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match popup {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
            Ok(format!("attached in a popup (detach: prefix d): {command}"))
        }
        Err(error) => Ok(format!("no popup ({error}); attach with: {command}")),
    }
}
