//! Known agent command lines, recognised in a pane's process tree as display labels.
//!
//! A label says what a pane appears to run (`agent:claude`); it is a hint for the person
//! choosing, never identity and never authority (RFC D18: no Leader inference from product
//! name). Labels are not part of any candidate id, principal id or fingerprint.

use std::collections::BTreeSet;
use std::path::Path;

use super::procfs::{ProcessTable, read_cmdline};

/// The agent command-line tools the Doctor labels.
pub const KNOWN_AGENTS: &[&str] = &[
    "aider",
    "claude",
    "codex",
    "cursor-agent",
    "gemini",
    "goose",
    "opencode",
];

/// Interpreters whose first script argument names the program actually running.
const INTERPRETERS: &[&str] = &["node", "nodejs", "bun", "deno", "python", "python3"];

/// The known agent named by a process's command name or arguments, if any.
///
/// A process is `X` when its command name is `X`, when its first argument's file name is `X`,
/// or when it is an interpreter (`node`, `python3.12`, …) whose first non-option argument's file
/// name is `X`.
pub fn agent_of(comm: &str, argv: &[String]) -> Option<&'static str> {
    let known = |name: &str| KNOWN_AGENTS.iter().copied().find(|agent| *agent == name);
    if let Some(agent) = known(comm) {
        return Some(agent);
    }
    let program = argv.first().map(|first| file_name(first))?;
    if let Some(agent) = known(program) {
        return Some(agent);
    }
    let interpreted = INTERPRETERS.contains(&program)
        || program
            .strip_prefix("python")
            .is_some_and(|version| version.chars().all(|ch| ch.is_ascii_digit() || ch == '.'));
    if !interpreted {
        return None;
    }
    argv[1..]
        .iter()
        .find(|argument| !argument.starts_with('-'))
        .and_then(|script| known(file_name(script)))
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `agent:<name>` for every known agent running in the process tree under `pane_pid`, sorted.
pub fn labels(table: &ProcessTable, proc_root: &Path, pane_pid: u32) -> Vec<String> {
    let mut found = BTreeSet::new();
    for stat in table.tree(pane_pid) {
        // The command name decides without reading the arguments when it can.
        let agent = agent_of(&stat.comm, &[])
            .or_else(|| agent_of(&stat.comm, &read_cmdline(proc_root, stat.pid)));
        if let Some(agent) = agent {
            found.insert(format!("agent:{agent}"));
        }
    }
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::procfs::ProcStat;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|&argument| argument.to_owned()).collect()
    }

    #[test]
    fn agents_are_recognised_by_name_program_or_script() {
        assert_eq!(agent_of("claude", &[]), Some("claude"));
        assert_eq!(agent_of("cursor-agent", &[]), Some("cursor-agent"));
        assert_eq!(
            agent_of(
                "node",
                &args(&["node", "/usr/lib/node_modules/.bin/gemini"])
            ),
            Some("gemini")
        );
        assert_eq!(
            agent_of(
                "python3",
                &args(&["/usr/bin/python3.12", "-u", "/opt/bin/aider"])
            ),
            Some("aider")
        );
        assert_eq!(
            agent_of("MainThread", &args(&["/home/a/.local/bin/codex", "exec"])),
            Some("codex")
        );
        assert_eq!(agent_of("bash", &args(&["bash", "claude"])), None);
        assert_eq!(agent_of("node", &args(&["node", "server.js"])), None);
        assert_eq!(agent_of("claude-helper", &[]), None);
        assert_eq!(agent_of("Claude", &[]), None);
        assert_eq!(agent_of("vim", &[]), None);
    }

    #[test]
    fn labels_cover_the_whole_tree() {
        let stat = |pid, ppid, comm: &str| ProcStat {
            pid,
            comm: comm.to_owned(),
            state: 'S',
            ppid,
            pgrp: pid,
            start_ticks: 1,
        };
        let table = ProcessTable::from_stats([
            stat(100, 1, "bash"),
            stat(101, 100, "claude"),
            stat(102, 101, "codex"),
            stat(103, 102, "claude"),
            stat(200, 1, "goose"),
        ]);
        let nowhere = Path::new("/nonexistent-proc");
        assert_eq!(
            labels(&table, nowhere, 100),
            ["agent:claude", "agent:codex"]
        );
        assert_eq!(labels(&table, nowhere, 200), ["agent:goose"]);
        assert!(labels(&table, nowhere, 300).is_empty());
    }
}
