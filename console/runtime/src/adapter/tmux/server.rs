//! The tmux server an attempt's agent runs on: open the agent's window (in valp's session,
//! creating the session, and with it the server, when it is not there), find a pane the plan
//! targets, tell whether a pane is still there, close a window valp opened.
//!
//! valp's own server lives on a socket in the control root (`runtime/tmux/.server.sock`) and is
//! started with `-f /dev/null`, so the user's configuration cannot change what valp reads; it
//! ends by itself when its last window closes. valp only ever closes panes it opened.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::pane::{Pane, PaneError, call};

/// The format that names a new or found pane: its id and its process.
const PANE_FORMAT: &str = "#{pane_id} #{pane_pid}";
/// Columns and rows of valp's session (agents reflow to it).
const SIZE: (&str, &str) = ("100", "30");

/// A pane and its process (the process group leader: tmux makes every pane a session).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `%N`
    pub pane_id: String,
    /// The pane's process id.
    pub pane_pid: u32,
}

/// A tmux server, by socket.
#[derive(Debug, Clone)]
pub struct Server {
    binary: PathBuf,
    socket: PathBuf,
    timeout: Duration,
}

/// What opening a window needs.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    /// The session (created when missing).
    pub session: &'a str,
    /// The window's name.
    pub name: &'a str,
    /// The working folder.
    pub cwd: &'a str,
    /// Set in the window's environment.
    pub env: &'a std::collections::BTreeMap<String, String>,
    /// The agent's argv.
    pub argv: &'a [String],
}

fn found(output: &[u8], operation: &'static str) -> Result<Found, PaneError> {
    let text = String::from_utf8_lossy(output);
    let mut words = text.split_whitespace();
    match (words.next(), words.next().and_then(|pid| pid.parse().ok())) {
        (Some(id), Some(pid)) if id.starts_with('%') => Ok(Found {
            pane_id: id.to_owned(),
            pane_pid: pid,
        }),
        _ => Err(PaneError::Failed {
            operation,
            why: format!(
                "unexpected answer {:?}",
                valp_view::sanitize::display_text(&text)
            ),
        }),
    }
}

impl Server {
    /// The server at `socket`, driven with `binary`; each call may take at most `timeout`.
    pub fn new(binary: &Path, socket: &Path, timeout: Duration) -> Self {
        Self {
            binary: binary.to_path_buf(),
            socket: socket.to_path_buf(),
            timeout,
        }
    }

    fn tmux(&self, operation: &'static str, args: &[&OsStr]) -> Result<Vec<u8>, PaneError> {
        call(&self.binary, &self.socket, self.timeout, operation, args)
    }

    /// The pane `pane_id` on this server.
    pub fn pane(&self, pane_id: &str) -> Pane {
        Pane::new(&self.binary, &self.socket, pane_id, self.timeout)
    }

    /// Opens `window` (detached) and returns its pane. The argv runs without a shell: tmux
    /// hands a one-word command to `sh -c`, so one word runs as `env -- WORD`.
    pub fn open(&self, window: Window<'_>) -> Result<Found, PaneError> {
        let mut command: Vec<&OsStr> = vec![OsStr::new("--")];
        if window.argv.len() == 1 {
            command.extend([OsStr::new("env"), OsStr::new("--")]);
        }
        command.extend(window.argv.iter().map(OsStr::new));
        let env: Vec<String> = window
            .env
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect();
        let mut common: Vec<&OsStr> = vec![
            OsStr::new("-d"),
            OsStr::new("-P"),
            OsStr::new("-F"),
            OsStr::new(PANE_FORMAT),
            OsStr::new("-n"),
            OsStr::new(window.name),
            OsStr::new("-c"),
            OsStr::new(window.cwd),
        ];
        for pair in &env {
            common.extend([OsStr::new("-e"), OsStr::new(pair)]);
        }
        let target = format!("={}:", window.session);
        let new_window = || {
            let mut args = vec![
                OsStr::new("new-window"),
                OsStr::new("-t"),
                OsStr::new(&target),
            ];
            args.extend_from_slice(&common);
            args.extend_from_slice(&command);
            self.tmux("new-window", &args)
        };
        if let Ok(output) = new_window() {
            return found(&output, "new-window");
        }
        // No session (no server) yet: create it with this window. Another supervisor may
        // create it first; then the window goes into theirs.
        let mut args: Vec<&OsStr> = [
            "-f",
            "/dev/null",
            "new-session",
            "-s",
            window.session,
            "-x",
            SIZE.0,
            "-y",
            SIZE.1,
        ]
        .map(OsStr::new)
        .to_vec();
        args.extend_from_slice(&common);
        args.extend_from_slice(&command);
        match self.tmux("new-session", &args) {
            Ok(output) => found(&output, "new-session"),
            Err(PaneError::Failed { why, .. }) if why.contains("duplicate session") => {
                found(&new_window()?, "new-window")
            }
            Err(error) => Err(error),
        }
    }

    /// The pane `pane_id` if it is on this server and alive (`None`: gone, or no server).
    pub fn find(&self, pane_id: &str) -> Result<Option<Found>, PaneError> {
        let args = [
            "display-message",
            "-p",
            "-t",
            pane_id,
            "#{pane_id} #{pane_pid} #{pane_dead}",
        ]
        .map(OsStr::new);
        match self.tmux("display-message", &args) {
            Ok(output) if String::from_utf8_lossy(&output).trim_end().ends_with(" 0") => {
                found(&output, "display-message").map(Some)
            }
            Ok(_) => Ok(None),
            Err(PaneError::Failed { why, .. }) if gone(&why) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Closes the window of `pane_id` (a pane valp opened); a pane already gone is fine.
    pub fn close(&self, pane_id: &str) -> Result<(), PaneError> {
        match self.tmux(
            "kill-window",
            &["kill-window", "-t", pane_id].map(OsStr::new),
        ) {
            Ok(_) => Ok(()),
            Err(PaneError::Failed { why, .. }) if gone(&why) => Ok(()),
            Err(error) => Err(error),
        }
    }
}

/// Whether tmux's complaint means the pane (or its whole server) is not there.
fn gone(why: &str) -> bool {
    [
        "can't find",
        "no server running",
        "error connecting",
        "No such file",
    ]
    .iter()
    .any(|sign| why.contains(sign))
}

/// The socket of tmux's `-L NAME` for this user: `$TMUX_TMPDIR/tmux-<uid>/NAME` (or under
/// `/tmp`), as tmux itself resolves it.
pub fn named_socket(name: &str) -> PathBuf {
    crate::doctor::tmux::default_socket_dir(
        std::env::var_os("TMUX_TMPDIR").as_deref(),
        rustix::process::getuid().as_raw(),
    )
    .join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_names_a_pane_or_is_refused() {
        assert_eq!(
            found(b"%12 4242\n", "x").unwrap(),
            Found {
                pane_id: "%12".to_owned(),
                pane_pid: 4242
            }
        );
        assert!(matches!(
            found(b"12 4242\n", "x"),
            Err(PaneError::Failed { operation: "x", .. })
        ));
        assert!(gone("can't find pane: %9"));
        assert!(gone("no server running on /tmp/x"));
        assert!(!gone("no answer within 5s"));
    }
}
