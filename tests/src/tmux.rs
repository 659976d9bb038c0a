//! Private tmux servers for the Doctor's tests.
//!
//! Every server runs on its own socket (`tmux -S <path>`, config `/dev/null`), never on the
//! user's default one, and [`TmuxServer`] kills it when dropped, also when the test panics.
//! tmux is required: CI installs it, and a missing tmux fails these tests loudly instead of
//! skipping them.

#![allow(clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a test waits for tmux to show a change before failing.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Runs `tmux -S socket args…` and returns what it did; panics if tmux cannot be run.
pub fn tmux_at(socket: &Path, args: &[&str]) -> Output {
    Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(args)
        .env_remove("TMUX")
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run tmux ({error}): the Doctor's tests need tmux installed \
                 (CI installs it; install it with your package manager)"
            )
        })
}

/// A tmux server on a private socket, killed on drop.
#[derive(Debug)]
pub struct TmuxServer {
    socket: PathBuf,
    pid: u32,
}

impl TmuxServer {
    /// Starts a server on `socket` with a detached 80x24 session `session` whose first pane
    /// runs `command` (argv, executed without a shell) in folder `cwd`.
    pub fn start(socket: &Path, session: &str, cwd: &Path, command: &[&str]) -> Self {
        let cwd = cwd.to_str().expect("test folders are UTF-8");
        let mut args = vec![
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            "80",
            "-y",
            "24",
            "-c",
            cwd,
        ];
        args.extend_from_slice(command);
        // tmux creates its socket folder only for `-L`; a test on a fresh machine may be the
        // first to use `$TMUX_TMPDIR/tmux-<uid>/`, and with `-S` tmux then reports success
        // although its server could not create the socket. Made as tmux makes it: private.
        if let Some(folder) = socket.parent() {
            use std::os::unix::fs::DirBuilderExt as _;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(folder)
                .expect("the socket's folder can be made");
        }
        let started = tmux_at(socket, &args);
        assert!(
            started.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        let mut server = Self {
            socket: socket.to_path_buf(),
            pid: 0,
        };
        server.pid = server
            .display("", "#{pid}")
            .parse()
            .expect("tmux prints its pid");
        server
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Runs a tmux command on this server; panics unless it succeeds. Returns its stdout.
    pub fn run(&self, args: &[&str]) -> String {
        let output = tmux_at(&self.socket, args);
        assert!(
            output.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// `display-message -p` of `format` for `target` (the current pane when empty).
    pub fn display(&self, target: &str, format: &str) -> String {
        let mut args = vec!["display-message", "-p"];
        if !target.is_empty() {
            args.extend(["-t", target]);
        }
        args.push(format);
        self.run(&args).trim_end_matches('\n').to_owned()
    }

    /// Waits until `format` for `target` shows `expected`; panics after [`PATIENCE`].
    pub fn wait_for(&self, target: &str, format: &str, expected: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let shown = self.display(target, format);
            if shown == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{format} of {target} stayed {shown:?}, expected {expected:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends a signal to the server process (e.g. `STOP`, `CONT`).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid.to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -{signal} {}", self.pid);
    }

    /// Kills the server and waits until its process is gone.
    pub fn kill(self) {
        drop(self);
    }
}

/// Whether process `pid` exists and has not exited.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        if self.pid == 0 {
            return;
        }
        // A stopped server cannot hear kill-server.
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.pid.to_string())
            .status();
        let _ = tmux_at(&self.socket, &["kill-server"]);
        let deadline = Instant::now() + PATIENCE;
        while running(self.pid) {
            if Instant::now() >= deadline {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(self.pid.to_string())
                    .status();
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
