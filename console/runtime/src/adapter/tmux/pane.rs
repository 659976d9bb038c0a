//! One tmux pane, driven through its server's socket: capture the screen, paste a file with
//! bracketed paste, press keys.
//!
//! Every tmux call runs without a shell and with a time limit ([`crate::doctor::tmux::run`]), so
//! a wedged server cannot hang valp. Prompt text never goes through `send-keys`: a prompt holding
//! `C-c` or `Enter` would be pressed as keys (dev-3.0 PR #1263). [`Pane::press`] takes only the
//! key names of [`KEYS`]; text goes through a named tmux buffer loaded from a file and pasted
//! with `paste-buffer -p -r` (bracketed when the agent asked for it), then deleted.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::agent::profile::KEYS;
use crate::doctor::tmux::{Run, complaint, run};

/// Why a pane could not be driven.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PaneError {
    /// tmux is not installed.
    #[error("tmux is not installed (not found: {0})")]
    Missing(String),
    /// tmux could not be started, did not answer in time, or refused.
    #[error("tmux {operation}: {why}")]
    Failed {
        /// What was asked (`capture-pane`, …).
        operation: &'static str,
        /// Why, sanitized.
        why: String,
    },
    /// A key that is not one of [`KEYS`].
    #[error("key {0:?} is not one of {KEYS:?}: text is pasted, never typed as keys")]
    Key(String),
}

/// Runs `binary -S socket args…` within `timeout`; its stdout, or why it failed.
pub(super) fn call(
    binary: &Path,
    socket: &Path,
    timeout: Duration,
    operation: &'static str,
    args: &[&OsStr],
) -> Result<Vec<u8>, PaneError> {
    let mut full: Vec<&OsStr> = vec![OsStr::new("-S"), socket.as_os_str()];
    full.extend_from_slice(args);
    match run(binary, &full, timeout) {
        Run::NotFound => Err(PaneError::Missing(binary.display().to_string())),
        Run::CannotStart(error) => Err(PaneError::Failed {
            operation,
            why: error.to_string(),
        }),
        Run::TimedOut => Err(PaneError::Failed {
            operation,
            why: format!("no answer within {timeout:?}"),
        }),
        Run::Finished { status, stdout, .. } if status.success() => Ok(stdout),
        Run::Finished { status, stderr, .. } => Err(PaneError::Failed {
            operation,
            why: complaint(&stderr, status),
        }),
    }
}

/// A pane on a tmux server.
#[derive(Debug, Clone)]
pub struct Pane {
    binary: PathBuf,
    socket: PathBuf,
    target: String,
    timeout: Duration,
}

impl Pane {
    /// The pane `target` (a pane id such as `%3`) on the server at `socket`, driven with the
    /// tmux binary `binary`; each call may take at most `timeout`.
    pub fn new(binary: &Path, socket: &Path, target: &str, timeout: Duration) -> Self {
        Self {
            binary: binary.to_path_buf(),
            socket: socket.to_path_buf(),
            target: target.to_owned(),
            timeout,
        }
    }

    fn tmux(&self, operation: &'static str, args: &[&OsStr]) -> Result<Vec<u8>, PaneError> {
        call(&self.binary, &self.socket, self.timeout, operation, args)
    }

    /// The pane's id (`%N`).
    pub fn id(&self) -> &str {
        &self.target
    }

    /// The visible screen with its escape sequences (`capture-pane -p -e`): untrusted text.
    pub fn capture(&self) -> Result<String, PaneError> {
        let bytes = self.tmux(
            "capture-pane",
            &["capture-pane", "-p", "-e", "-t", &self.target].map(OsStr::new),
        )?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Pastes the bytes of `file` into the pane through the buffer `buffer`, bracketed, line
    /// feeds kept (`-r`: by default tmux turns them into carriage returns, which an agent reads
    /// as Enter when it did not ask for bracketed paste).
    pub fn paste(&self, buffer: &str, file: &Path) -> Result<(), PaneError> {
        self.tmux(
            "load-buffer",
            &[
                OsStr::new("load-buffer"),
                OsStr::new("-b"),
                OsStr::new(buffer),
                file.as_os_str(),
            ],
        )?;
        self.tmux(
            "paste-buffer",
            &[
                "paste-buffer",
                "-p",
                "-r",
                "-d",
                "-b",
                buffer,
                "-t",
                &self.target,
            ]
            .map(OsStr::new),
        )?;
        Ok(())
    }

    /// Has tmux append everything the pane's program prints to `file` (`pipe-pane -o`, through
    /// `cat`), so a watcher can tell a silent pane from a busy one without asking tmux. The
    /// path is quoted for the shell tmux runs the pipe command with.
    pub fn pipe_output(&self, file: &Path) -> Result<(), PaneError> {
        let quoted = file.display().to_string().replace('\'', "'\\''");
        let command = format!("exec cat >> '{quoted}'");
        self.tmux(
            "pipe-pane",
            &["pipe-pane", "-o", "-t", &self.target, &command].map(OsStr::new),
        )
        .map(drop)
    }

    /// Presses `keys` in order; each must be one of [`KEYS`].
    pub fn press(&self, keys: &[&str]) -> Result<(), PaneError> {
        if let Some(key) = keys.iter().find(|key| !KEYS.contains(key)) {
            return Err(PaneError::Key((*key).to_owned()));
        }
        let mut args = vec![
            OsStr::new("send-keys"),
            OsStr::new("-t"),
            OsStr::new(&self.target),
        ];
        args.extend(keys.iter().map(OsStr::new));
        self.tmux("send-keys", &args).map(drop)
    }
}
