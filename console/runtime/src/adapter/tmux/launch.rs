//! The command line the tmux supervisor starts an agent with, when its profile connects the
//! agent's hooks to valp (`launch_hooks`, [`LaunchHooks`]).
//!
//! `claude_settings`: the supervisor writes `claude-settings.json` into the attempt's folder
//! (Claude Code's settings layout, schema `schemas/console/agent-hook-settings.schema.json`):
//! every hook event valp listens to runs `valp hook claude` (this valp), with the attempt's
//! four `VALP_*` variables set in the hook's own command, so they reach the hook even through a
//! command line that clears the environment (`env -i …`). The agent's argv gets
//! `--settings FILE` at its end: the user's own settings (`~/.claude`, the project's
//! `.claude/`) are neither read nor written by valp, and Claude merges them with this file.
//! An argv that already passes `--settings` is left as it is (the plan chose its settings).
//!
//! Codex has no equivalent here: hooks given on its command line (`-c`) are untrusted and
//! skipped silently unless Codex runs with `--dangerously-bypass-hook-trust`, which valp does
//! not add on the user's behalf (see ARCHITECTURE.md "Agent channels").

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::channel::setup::{self, Agent};
use crate::agent::profile::{LaunchHooks, Profile};

/// The generated Claude Code settings, in the attempt's folder.
pub const CLAUDE_SETTINGS_FILE: &str = "claude-settings.json";

/// What the supervisor starts: the argv, and a line for its log saying what was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The agent's command line.
    pub argv: Vec<String>,
    /// What the profile's `launch_hooks` did (`None`: nothing to do).
    pub note: Option<String>,
}

/// The settings file's bytes for the agent of the attempt named by `env`, its hooks calling
/// the valp at `valp` (pretty JSON and an LF: a file a person may read).
pub fn claude_settings(valp: &Path, env: &BTreeMap<String, String>) -> Vec<u8> {
    let settings = setup::attempt_hooks(Agent::Claude, &valp.to_string_lossy(), env);
    let mut bytes = serde_json::to_vec_pretty(&settings).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// `argv` with `--settings FILE` at its end, unless it already passes `--settings` (`None`).
pub fn with_settings(argv: &[String], file: &Path) -> Option<Vec<String>> {
    if argv
        .iter()
        .any(|word| word == "--settings" || word.starts_with("--settings="))
    {
        return None;
    }
    let mut argv = argv.to_vec();
    argv.extend(["--settings".to_owned(), file.display().to_string()]);
    Some(argv)
}

/// The command line for `argv` under `profile`, writing the settings file into the attempt's
/// folder `dir` when the profile asks for it. A failure to write it starts the agent without
/// its hooks (the screen still tells its state) and says why in the note.
pub fn prepare(
    profile: &Profile,
    argv: &[String],
    dir: &Path,
    valp: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> Launch {
    let unchanged = |note: Option<String>| Launch {
        argv: argv.to_vec(),
        note,
    };
    match profile.launch_hooks {
        LaunchHooks::None => unchanged(None),
        LaunchHooks::ClaudeSettings => {
            let Some(valp) = valp else {
                return unchanged(Some(
                    "launch_hooks: valp's own path is unknown; started without hooks".to_owned(),
                ));
            };
            let file = dir.join(CLAUDE_SETTINGS_FILE);
            let Some(launched) = with_settings(argv, &file) else {
                return unchanged(Some(
                    "launch_hooks: the command passes its own --settings; left as it is".to_owned(),
                ));
            };
            match crate::adapter::files::write_replacing(&file, &claude_settings(valp, env)) {
                Ok(()) => Launch {
                    argv: launched,
                    note: Some(format!("launch_hooks: --settings {}", file.display())),
                },
                Err(error) => unchanged(Some(format!(
                    "launch_hooks: writing {}: {error}; started without hooks",
                    file.display()
                ))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn env() -> BTreeMap<String, String> {
        crate::adapter::tmux::agent_env(Path::new("/p/.valp"), ["t", "w", "t:w:a1"])
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| (*word).to_owned()).collect()
    }

    #[test]
    fn claude_starts_with_a_settings_file_of_the_attempts_own() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::builtin("claude").unwrap();
        let command = argv(&["env", "-i", "HOME=/h", "claude"]);
        let launch = prepare(
            &profile,
            &command,
            dir.path(),
            Some(Path::new("/bin/valp")),
            &env(),
        );
        let file = dir.path().join(CLAUDE_SETTINGS_FILE);
        assert_eq!(
            launch.argv,
            argv(&["env", "-i", "HOME=/h", "claude", "--settings"])
                .into_iter()
                .chain([file.display().to_string()])
                .collect::<Vec<_>>()
        );
        assert_eq!(
            launch.note,
            Some(format!("launch_hooks: --settings {}", file.display()))
        );
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            written["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
            "VALP_CONTROL_ROOT='/p/.valp' VALP_TASK_ID='t' VALP_WORK_ITEM_ID='w' \
             VALP_ATTEMPT_ID='t:w:a1' '/bin/valp' hook claude"
        );
        assert_eq!(
            written,
            setup::attempt_hooks(Agent::Claude, "/bin/valp", &env())
        );
    }

    #[test]
    fn the_profile_flag_an_own_settings_argument_and_no_valp_leave_the_command_alone() {
        let dir = tempfile::tempdir().unwrap();
        let valp = Some(Path::new("/bin/valp"));
        let mut off = Profile::builtin("claude").unwrap();
        off.launch_hooks = LaunchHooks::None;
        let command = argv(&["claude"]);
        let launch = prepare(&off, &command, dir.path(), valp, &env());
        assert_eq!((launch.argv, launch.note), (command.clone(), None));
        let claude = Profile::builtin("claude").unwrap();
        for own in [
            argv(&["claude", "--settings", "mine.json"]),
            argv(&["claude", "--settings=mine.json"]),
        ] {
            let launch = prepare(&claude, &own, dir.path(), valp, &env());
            assert_eq!(launch.argv, own);
            assert_eq!(
                launch.note.as_deref(),
                Some("launch_hooks: the command passes its own --settings; left as it is")
            );
        }
        let launch = prepare(&claude, &command, dir.path(), None, &env());
        assert_eq!(launch.argv, command);
        assert_eq!(
            launch.note.as_deref(),
            Some("launch_hooks: valp's own path is unknown; started without hooks")
        );
        let missing = dir.path().join("gone");
        let launch = prepare(&claude, &command, &missing, valp, &env());
        assert_eq!(launch.argv, command);
        assert!(
            launch
                .note
                .as_deref()
                .is_some_and(|note| note.starts_with(&format!(
                    "launch_hooks: writing {}/claude-settings.json: ",
                    missing.display()
                )) && note.ends_with("; started without hooks")),
            "{launch:?}"
        );
        assert!(!dir.path().join(CLAUDE_SETTINGS_FILE).exists());
        for name in ["codex", "aider", "demo", "generic", "gemini"] {
            assert_eq!(
                Profile::builtin(name).unwrap().launch_hooks,
                LaunchHooks::None,
                "{name}"
            );
        }
    }
}
