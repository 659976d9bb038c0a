//! The console's terminal coding agents (tmux): what each item's current attempt's supervisor
//! last recorded ([`agents`], read on the backend's thread, never the UI's), and the Leader's
//! actions on a running agent, each a control request its supervisor carries out: a message
//! ([`message`], pasted and proven like the prompt), the interrupt keys ([`interrupt`]), and
//! attaching a terminal to its pane ([`attach`]).

use std::path::{Path, PathBuf};

use valp_view::{AgentView, ItemRow, Refusal};

use crate::adapter::process;
use crate::adapter::tmux;
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

/// Asks the supervisor of `attempt_id` to hand `text` to its agent; the confirmation names the
/// request (its delivery proof is `proofs/<name>` in the attempt folder).
pub fn message(root: &Path, attempt_id: &str, text: &str) -> Result<(String, String), Refusal> {
    let dir = folder(root, attempt_id)?;
    let name = tmux::request_message(&dir, text).map_err(|error| refused(error.to_string()))?;
    let proof = format!("{}/proofs/{name}", tmux::attempt_ref(attempt_id));
    Ok((
        format!("message for {attempt_id} requested; its delivery proof: {proof}"),
        proof,
    ))
}

/// Asks the supervisor of `attempt_id` to press its agent's interrupt keys once.
pub fn interrupt(root: &Path, attempt_id: &str) -> Result<String, Refusal> {
    let dir = folder(root, attempt_id)?;
    process::request_interrupt(&dir).map_err(|error| refused(error.to_string()))?;
    Ok(format!(
        "the agent's interrupt keys requested for {attempt_id}"
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
