//! A temporary project for the Leader's CLI flows: an initialised control root whose Doctor
//! asks only the project's own tmux socket (`lead.sock`, no server until [`LeaderProject::server`]
//! starts one), so a test sees exactly the candidates it made.

#![allow(clippy::unwrap_used, clippy::panic)] // test support: a broken fixture fails the test

use std::path::Path;

use crate::cli::{Run, valp_answering};
use crate::tmux::TmuxServer;

/// The project folder and its tmux socket.
pub struct LeaderProject {
    temp: tempfile::TempDir,
    socket: std::path::PathBuf,
}

impl LeaderProject {
    /// `valp init --installation-id <installation>` in a new temporary folder.
    pub fn new(installation: &str) -> Self {
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(temp.path().join("tmux")).unwrap();
        let socket = temp.path().join("lead.sock");
        let project = Self { temp, socket };
        let init = project.run(&["init", "--installation-id", installation], "");
        assert_eq!(init.code, Some(0), "{}", init.stderr);
        project
    }

    /// The project folder (it holds `.valp/`).
    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// A tmux server on the project's socket, one shell in pane `%0`.
    pub fn server(&self) -> TmuxServer {
        TmuxServer::start(&self.socket, "work", self.path(), &["sh"])
    }

    /// `valp` with the Doctor limited to the project's socket, answering prompts with `stdin`.
    pub fn run(&self, args: &[&str], stdin: &str) -> Run {
        let socket = self.socket.to_str().unwrap();
        let mut all = vec!["--no-default-sockets", "--tmux-socket", socket];
        all.extend_from_slice(args);
        valp_answering(self.path(), &self.path().join("tmux"), &all, stdin).unwrap()
    }

    /// The candidate id of `pane` on the project's tmux server.
    pub fn pane(&self, pane: &str) -> String {
        format!(
            "tmux:{}:{pane}",
            std::fs::canonicalize(&self.socket).unwrap().display()
        )
    }

    /// The candidate id of the OS account (the first line of `valp leader candidates`).
    pub fn human(&self) -> String {
        let listed = self.run(&["leader", "candidates"], "");
        listed
            .stdout
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .filter(|id| id.starts_with("human:uid-"))
            .unwrap_or_else(|| panic!("{}", listed.stdout))
            .to_owned()
    }
}
