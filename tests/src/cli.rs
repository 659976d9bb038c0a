//! Running the `valp` binary in a chosen folder with a controlled environment.

use std::path::Path;
use std::process::{Command, Output};

use crate::valp_binary;

/// What a finished `valp` run printed.
#[derive(Debug)]
pub struct Run {
    /// Exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Self {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Runs `valp args…` in `cwd` with `VALP_ROOT` unset (or set to `root_env`).
pub fn valp_in(cwd: &Path, root_env: Option<&Path>, args: &[&str]) -> std::io::Result<Run> {
    let mut command = Command::new(valp_binary()?);
    command
        .args(args)
        .current_dir(cwd)
        .env_remove("VALP_ROOT")
        .env("RUST_BACKTRACE", "0");
    if let Some(root) = root_env {
        command.env("VALP_ROOT", root);
    }
    command.output().map(Run::from)
}

/// Runs `valp args…` in `cwd` with `VALP_ROOT` unset, `stdin` as its standard input (answers
/// to prompts) and `TMUX_TMPDIR` set to `tmux_tmpdir`, so the Doctor scans only the test's own
/// tmux servers.
pub fn valp_answering(
    cwd: &Path,
    tmux_tmpdir: &Path,
    args: &[&str],
    stdin: &str,
) -> std::io::Result<Run> {
    use std::io::Write as _;
    use std::process::Stdio;

    let mut child = Command::new(valp_binary()?)
        .args(args)
        .current_dir(cwd)
        .env_remove("VALP_ROOT")
        .env_remove("TMUX")
        .env("TMUX_TMPDIR", tmux_tmpdir)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes())?;
    }
    child.wait_with_output().map(Run::from)
}
