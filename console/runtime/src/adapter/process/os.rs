//! What the supervisor asks of the operating system beyond `std::process`: process identity
//! from `/proc`, and signals to a process group through `rustix` (a safe `kill(2)` wrapper: the
//! workspace forbids `unsafe`, and running a `kill` program found on `PATH` forks for every
//! signal and trusts whatever `PATH` holds).

use std::path::Path;

use crate::doctor::procfs::{ProcStat, parse_boot_id, read_stat};

/// `/proc/<pid>/stat`, if the process exists (parsed by the Doctor's parser: one for both).
pub fn stat(pid: u32) -> Option<ProcStat> {
    read_stat(Path::new("/proc"), pid)
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
pub fn boot_id() -> Option<String> {
    parse_boot_id(&std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?)
}

/// Whether the process `pid` that started at `start_ticks` during boot `boot` still runs (not
/// a zombie, not another process that reused the pid, not a pid of an earlier boot).
pub fn is_running(pid: u32, start_ticks: u64, boot: Option<&str>) -> bool {
    if let (Some(recorded), Some(now)) = (boot, boot_id())
        && recorded != now
    {
        return false;
    }
    stat(pid).is_some_and(|stat| stat.start_ticks == start_ticks && stat.is_running())
}

/// The running (non-zombie) members of process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|stat| stat.pgrp == pgid && stat.is_running()))
        .collect()
}

/// A signal the supervisor sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT: interrupt.
    Int,
    /// SIGTERM: please stop.
    Term,
    /// SIGKILL: stop now.
    Kill,
}

impl Signal {
    const fn raw(self) -> rustix::process::Signal {
        match self {
            Self::Int => rustix::process::Signal::INT,
            Self::Term => rustix::process::Signal::TERM,
            Self::Kill => rustix::process::Signal::KILL,
        }
    }
}

/// Makes the calling supervisor the leader of a session of its own; whether `setsid(2)` succeeded.
///
/// A supervisor must outlive the console that launched it. In the console's session, its
/// process group becomes orphaned when the console exits, and if it is stopped at that moment
/// (SIGSTOP, a debugger) the kernel sends the group SIGHUP then SIGCONT (POSIX's orphaned
/// process group rule): SIGHUP's default action would kill it and leave its work running
/// unsupervised. Outside that session the rule no longer reaches it, and no terminal can
/// hang it up either.
pub fn new_session() -> bool {
    rustix::process::setsid().is_ok()
}

/// Sends `signal` to every process of group `pgid`; whether `kill(2)` succeeded.
///
/// Refuses group ids 0 and 1 and the caller's own group (`kill(-0)` would signal the
/// supervisor itself).
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    let own_group = rustix::process::getpgrp().as_raw_pid();
    let Some(group) = i32::try_from(pgid)
        .ok()
        .filter(|&raw| raw > 1 && raw != own_group)
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    rustix::process::kill_process_group(group, signal.raw()).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::os::unix::process::{CommandExt, ExitStatusExt};

    use super::*;

    #[test]
    fn this_process_runs() {
        let me = stat(std::process::id()).unwrap();
        assert!(me.is_running());
        assert!(is_running(std::process::id(), me.start_ticks, None));
        assert!(!is_running(std::process::id(), me.start_ticks + 1, None));
    }

    #[test]
    fn own_and_system_groups_are_never_signalled() {
        assert!(!signal_group(0, Signal::Int));
        assert!(!signal_group(1, Signal::Int));
        let own = stat(std::process::id()).unwrap().pgrp;
        assert!(!signal_group(own, Signal::Int));
        assert!(!signal_group(u32::MAX, Signal::Int));
    }

    #[test]
    fn a_group_is_signalled_directly() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        assert!(signal_group(child.id(), Signal::Term));
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(15));
        // The group is gone: nothing left to signal.
        assert!(!signal_group(child.id(), Signal::Term));
    }
}
