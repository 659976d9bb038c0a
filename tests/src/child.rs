//! A child process that reports by lines on its standard output.
//!
//! The tests synchronise with children only through those lines (a child says `ready`, then
//! one line per thing it did), never by sleeping. Timeouts are failure guards: a child that
//! says nothing for that long has hung, and the test fails instead of hanging with it.

#![allow(clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long a child may stay silent before the test gives up on it.
pub const SILENCE_LIMIT: Duration = Duration::from_secs(60);

/// A running child whose output lines arrive on a channel. Dropping it kills the child.
#[derive(Debug)]
pub struct Reporter {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    name: String,
}

impl Reporter {
    /// Starts `command` with piped stdin and stdout (stderr is inherited, so a child's
    /// complaint shows in the test output).
    pub fn spawn(command: &mut Command, name: impl Into<String>) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning the child process");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            name: name.into(),
        }
    }

    /// The next line, or `None` once the child closed its output.
    pub fn next_line(&mut self) -> Option<String> {
        match self.lines.recv_timeout(SILENCE_LIMIT) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                panic!("{}: no output for {} s", self.name, SILENCE_LIMIT.as_secs())
            }
        }
    }

    /// The next line; the child must not have ended.
    pub fn expect_line(&mut self) -> String {
        if let Some(line) = self.next_line() {
            return line;
        }
        let status = self.wait();
        panic!("{}: ended ({status}) while a line was expected", self.name)
    }

    /// Every remaining line, up to the end of the child's output.
    pub fn remaining_lines(&mut self) -> Vec<String> {
        std::iter::from_fn(|| self.next_line()).collect()
    }

    /// Writes one line to the child's stdin.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .expect("writing to the child");
    }

    /// Sends SIGKILL (on Unix, [`Child::kill`] is SIGKILL).
    pub fn kill(&mut self) {
        self.child.kill().expect("killing the child");
    }

    /// Waits for the child to end (call after its output ended, or after [`Reporter::kill`]).
    pub fn wait(&mut self) -> ExitStatus {
        self.stdin = None;
        self.child.wait().expect("waiting for the child")
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
