//! The hook settings valp generates for an agent: which events call `valp hook`, with which
//! timeouts, in a file under the control root that the tmux adapter passes to the agent
//! (`claude --settings FILE`), so the user's own settings are never edited.
//!
//! The permission hook's timeout (the agent's, [`PERMISSION_HOOK_TIMEOUT_S`]) is longer than
//! valp's own wait for the Leader ([`APPROVAL_WAIT`]), so valp always answers (deny, or back to
//! the agent's prompt) before the agent gives up on the hook.
//!
//! Codex runs hooks only once they are trusted and skips untrusted ones silently; valp cannot
//! make them trusted from outside, so setup says plainly that the Codex hook channel is off
//! unless Codex runs with `--dangerously-bypass-hook-trust` or the user trusts the hooks in
//! Codex. Codex's `notify` program needs no trust and is always on when configured.

use std::time::Duration;

use serde_json::{Value, json};

use super::approval::CHANNEL_DIR;

/// The agent's timeout for the permission hook, in seconds.
pub const PERMISSION_HOOK_TIMEOUT_S: u64 = 60;
/// The agent's timeout for every other hook, in seconds (the bridge returns in milliseconds).
pub const HOOK_TIMEOUT_S: u64 = 10;
/// How long the bridge waits for the Leader by default: well inside the agent's timeout.
pub const APPROVAL_WAIT: Duration = Duration::from_secs(45);

/// An agent valp can set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// Codex.
    Codex,
}

impl Agent {
    /// Its name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }

    /// The events its hooks fire for that valp listens to.
    pub const fn events(self) -> &'static [&'static str] {
        match self {
            Self::Claude => &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "Notification",
                "Stop",
                "StopFailure",
                "SessionEnd",
            ],
            Self::Codex => &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "Stop",
            ],
        }
    }

    /// The generated file, relative to the control root.
    pub fn settings_file(self) -> String {
        match self {
            Self::Claude => format!("{CHANNEL_DIR}/claude-settings.json"),
            Self::Codex => format!("{CHANNEL_DIR}/codex-hooks.json"),
        }
    }
}

/// Writes the generated settings of `agent` under `control_root` atomically (replacing an
/// earlier one), through real folders only.
pub fn write(
    control_root: &std::path::Path,
    agent: Agent,
    bytes: &[u8],
) -> Result<(), super::inbox::InboxError> {
    let dir = super::inbox::real_folder(control_root, CHANNEL_DIR)?;
    let file = agent.settings_file();
    let target = dir.join(file.rsplit('/').next().unwrap_or_default());
    crate::adapter::files::write_replacing(&target, bytes).map_err(|source| {
        super::inbox::InboxError::Io {
            path: target.display().to_string(),
            source,
        }
    })
}

/// `path` quoted for the shell the agents run hook commands with.
pub fn shell_quote(path: &str) -> String {
    format!("'{}'", path.replace('\'', r"'\''"))
}

/// The hooks settings (Claude's layout, which Codex's `hooks.json` shares) calling `valp` at
/// `valp_path`.
pub fn hooks(agent: Agent, valp_path: &str) -> Value {
    hooks_calling(
        agent,
        &format!("{} hook {}", shell_quote(valp_path), agent.name()),
    )
}

/// The hooks settings of one attempt's agent: each command names the attempt itself
/// (`VALP_ATTEMPT_ID='…' … 'valp' hook claude`, the four variables of
/// [`super::bridge::attempt_from_env`] taken from `env`), so the hook finds its attempt even
/// when the agent's command line clears its environment (`env -i …`).
pub fn attempt_hooks(
    agent: Agent,
    valp_path: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> Value {
    use super::bridge::{ENV_ATTEMPT, ENV_CONTROL_ROOT, ENV_TASK, ENV_WORK_ITEM};
    let assignments: String = [ENV_CONTROL_ROOT, ENV_TASK, ENV_WORK_ITEM, ENV_ATTEMPT]
        .iter()
        .filter_map(|name| Some(format!("{name}={} ", shell_quote(env.get(*name)?))))
        .collect();
    hooks_calling(
        agent,
        &format!(
            "{assignments}{} hook {}",
            shell_quote(valp_path),
            agent.name()
        ),
    )
}

/// The hooks settings running the shell command `command` for every event of `agent` (the
/// permission hook with valp's wait and the agent's longer timeout).
fn hooks_calling(agent: Agent, command: &str) -> Value {
    let mut hooks = serde_json::Map::new();
    for event in agent.events() {
        let entry = if *event == "PermissionRequest" {
            json!({
                "type": "command",
                "command": format!("{command} --wait-ms {}", APPROVAL_WAIT.as_millis()),
                "timeout": PERMISSION_HOOK_TIMEOUT_S,
            })
        } else {
            json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S})
        };
        let group = if matches!(*event, "PreToolUse" | "PermissionRequest" | "PostToolUse") {
            json!({"matcher": "*", "hooks": [entry]})
        } else {
            json!({"hooks": [entry]})
        };
        hooks.insert((*event).to_owned(), json!([group]));
    }
    json!({ "hooks": hooks })
}

/// The `notify` line of Codex's `config.toml` calling `valp notify codex`.
pub fn codex_notify(valp_path: &str) -> String {
    let quoted = |text: &str| serde_json::to_string(text).unwrap_or_default();
    format!("notify = [{}, \"notify\", \"codex\"]", quoted(valp_path))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn an_attempts_hooks_name_the_attempt_in_their_command() {
        let env: std::collections::BTreeMap<String, String> = [
            ("VALP_ATTEMPT_ID", "t:w:a1"),
            ("VALP_CONTROL_ROOT", "/p/it's/.valp"),
            ("VALP_TASK_ID", "t"),
            ("VALP_WORK_ITEM_ID", "w"),
            ("OTHER", "not passed"),
        ]
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .into();
        let settings = attempt_hooks(Agent::Claude, "/opt/valp", &env);
        let prefix = "VALP_CONTROL_ROOT='/p/it'\\''s/.valp' VALP_TASK_ID='t' VALP_WORK_ITEM_ID='w' \
                      VALP_ATTEMPT_ID='t:w:a1' '/opt/valp' hook claude";
        assert_eq!(settings["hooks"]["Stop"][0]["hooks"][0]["command"], prefix);
        assert_eq!(
            settings["hooks"]["PermissionRequest"][0]["hooks"][0]["command"],
            format!("{prefix} --wait-ms 45000")
        );
        assert_eq!(settings["hooks"].as_object().unwrap().len(), 9);
    }

    #[test]
    fn the_permission_hook_outlives_valps_wait() {
        let settings = hooks(Agent::Claude, "/opt/va'lp");
        let permission = &settings["hooks"]["PermissionRequest"][0]["hooks"][0];
        assert_eq!(
            permission["command"],
            "'/opt/va'\\''lp' hook claude --wait-ms 45000"
        );
        assert!(
            u128::from(permission["timeout"].as_u64().unwrap()) * 1000 > APPROVAL_WAIT.as_millis()
        );
        assert_eq!(settings["hooks"].as_object().unwrap().len(), 9);
        let codex = hooks(Agent::Codex, "/v");
        assert_eq!(codex["hooks"].as_object().unwrap().len(), 6);
        assert_eq!(
            codex_notify("/v"),
            "notify = [\"/v\", \"notify\", \"codex\"]"
        );
    }
}
