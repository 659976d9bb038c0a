//! What the Doctor reads from `/proc` and `/etc/passwd`: parsers over text (unit-tested with
//! fixtures) and thin readers that feed them.

use std::collections::BTreeMap;
use std::path::Path;

/// The fields of `/proc/<pid>/stat` the Doctor and the process supervisor use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    /// Field 1: the process id.
    pub pid: u32,
    /// Field 2: the command name (`comm`, at most 15 bytes, any bytes but NUL; not sanitized:
    /// used for matching, never printed).
    pub comm: String,
    /// Field 3: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), …
    pub state: char,
    /// Field 4: the parent's process id.
    pub ppid: u32,
    /// Field 5: the process group.
    pub pgrp: u32,
    /// Field 22: the start time, in clock ticks since boot.
    pub start_ticks: u64,
}

impl ProcStat {
    /// Whether the process still runs (a zombie has ended, it only waits to be reaped).
    pub fn is_running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the contents of `/proc/<pid>/stat`.
///
/// The command name sits in parentheses and may itself hold spaces, parentheses and line
/// breaks, so it runs from the first `(` to the *last* `)`; the numbered fields follow that.
pub fn parse_stat(bytes: &[u8]) -> Option<ProcStat> {
    let open = bytes.iter().position(|&byte| byte == b'(')?;
    let close = bytes.iter().rposition(|&byte| byte == b')')?;
    if close < open {
        return None;
    }
    let pid = std::str::from_utf8(&bytes[..open])
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = String::from_utf8_lossy(&bytes[open + 1..close]).into_owned();
    let rest = std::str::from_utf8(&bytes[close + 1..]).ok()?;
    // `rest` starts with field 3 (state); field n is at index n - 3.
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let mut state = fields.first()?.chars();
    let (Some(state), None) = (state.next(), state.next()) else {
        return None;
    };
    Some(ProcStat {
        pid,
        comm,
        state,
        ppid: fields.get(4 - 3)?.parse().ok()?,
        pgrp: fields.get(5 - 3)?.parse().ok()?,
        start_ticks: fields.get(22 - 3)?.parse().ok()?,
    })
}

/// The real user id from the contents of `/proc/<pid>/status` (`Uid:` real, effective, saved,
/// filesystem).
pub fn parse_status_real_uid(text: &str) -> Option<u32> {
    text.lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_ascii_whitespace().next())
        .and_then(|real| real.parse().ok())
}

/// The login name of `uid` in the contents of `/etc/passwd` (the first entry with that uid).
///
/// Malformed lines are skipped; a login that is empty or holds characters other than printable
/// ASCII is not used (it becomes part of principal ids, which are printed verbatim).
pub fn login_of(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let login = fields.next()?;
        let _password = fields.next()?;
        let entry_uid: u32 = fields.next()?.parse().ok()?;
        (entry_uid == uid && is_plain_login(login)).then(|| login.to_owned())
    })
}

fn is_plain_login(login: &str) -> bool {
    !login.is_empty()
        && login
            .bytes()
            .all(|byte| byte.is_ascii_graphic() && byte != b':')
}

/// The boot id from `/proc/sys/kernel/random/boot_id`: a UUID (lowercase hex and dashes).
pub fn parse_boot_id(text: &str) -> Option<String> {
    let id = text.trim_end_matches('\n');
    let well_formed = id.len() == 36
        && id.char_indices().all(|(index, ch)| match index {
            8 | 13 | 18 | 23 => ch == '-',
            _ => matches!(ch, '0'..='9' | 'a'..='f'),
        });
    well_formed.then(|| id.to_owned())
}

/// The arguments in the contents of `/proc/<pid>/cmdline` (NUL-separated).
pub fn parse_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&byte| byte == 0)
        .filter(|argument| !argument.is_empty())
        .map(|argument| String::from_utf8_lossy(argument).into_owned())
        .collect()
}

/// Reads and parses `/proc/<pid>/stat`.
pub fn read_stat(proc_root: &Path, pid: u32) -> Option<ProcStat> {
    let bytes = std::fs::read(proc_root.join(pid.to_string()).join("stat")).ok()?;
    parse_stat(&bytes).filter(|stat| stat.pid == pid)
}

/// Reads `/proc/<pid>/cmdline`.
pub fn read_cmdline(proc_root: &Path, pid: u32) -> Vec<String> {
    std::fs::read(proc_root.join(pid.to_string()).join("cmdline"))
        .map(|bytes| parse_cmdline(&bytes))
        .unwrap_or_default()
}

/// Every process visible in `/proc` at one moment: pid → (parent, command name).
#[derive(Debug, Clone, Default)]
pub struct ProcessTable {
    processes: BTreeMap<u32, ProcStat>,
}

impl ProcessTable {
    /// Scans `proc_root` (processes that exit during the scan are skipped).
    pub fn scan(proc_root: &Path) -> Self {
        let mut processes = BTreeMap::new();
        if let Ok(entries) = std::fs::read_dir(proc_root) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(pid) = name.to_str().and_then(|name| name.parse::<u32>().ok()) else {
                    continue;
                };
                if let Some(stat) = read_stat(proc_root, pid) {
                    processes.insert(pid, stat);
                }
            }
        }
        Self { processes }
    }

    /// A table of the given processes (for tests).
    pub fn from_stats(stats: impl IntoIterator<Item = ProcStat>) -> Self {
        Self {
            processes: stats.into_iter().map(|stat| (stat.pid, stat)).collect(),
        }
    }

    /// The process `pid`, if it was seen.
    pub fn get(&self, pid: u32) -> Option<&ProcStat> {
        self.processes.get(&pid)
    }

    /// `pid` and all its descendants, parents before children, each once.
    pub fn tree(&self, pid: u32) -> Vec<&ProcStat> {
        let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for stat in self.processes.values() {
            children.entry(stat.ppid).or_default().push(stat.pid);
        }
        let mut tree = Vec::new();
        let mut queue = std::collections::VecDeque::from([pid]);
        let mut seen = std::collections::BTreeSet::new();
        while let Some(next) = queue.pop_front() {
            if !seen.insert(next) {
                continue;
            }
            if let Some(stat) = self.processes.get(&next) {
                tree.push(stat);
            }
            queue.extend(children.get(&next).into_iter().flatten());
        }
        tree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_line(pid: u32, comm: &str, parent: u32, start: u64) -> Vec<u8> {
        format!(
            "{pid} ({comm}) S {parent} {pid} {pid} 34816 {pid} 4194560 1158 0 0 0 2 1 0 0 20 0 1 0 \
             {start} 8192000 1024 18446744073709551615 1 1 0 0 0 0 0 0 65536 0 0 0 17 1 0 0 0 0 0"
        )
        .into_bytes()
    }

    #[test]
    fn a_real_stat_line_parses() {
        let line = b"17826 (sleep) S 17825 17826 17826 34816 17826 4194560 95 0 0 0 0 0 0 0 20 0 \
                     1 0 4325912 5779456 256 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 \
                     0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                pid: 17826,
                comm: "sleep".to_owned(),
                state: 'S',
                ppid: 17825,
                pgrp: 17826,
                start_ticks: 4_325_912,
            })
        );
    }

    #[test]
    fn tricky_command_names_parse() {
        for comm in [
            "a b",
            "x) S 1 2 3",
            "((",
            "))",
            ")",
            "(",
            "",
            "tab\there",
            "nl\nhere",
            "sp ) ( ) ",
            "é) 9 9 9 9 9",
            "1 2 3 4 5 6 7 8",
        ] {
            let parsed = parse_stat(&stat_line(4242, comm, 17, 987_654)).unwrap();
            assert_eq!(parsed.comm, comm);
            assert_eq!(
                (parsed.pid, parsed.state, parsed.ppid, parsed.pgrp),
                (4242, 'S', 17, 4242),
                "{comm:?}"
            );
            assert_eq!(parsed.start_ticks, 987_654, "{comm:?}");
        }
    }

    #[test]
    fn non_utf8_command_names_parse() {
        let mut line = b"5 (bad\xff\xfe) R 1 ".to_vec();
        line.extend_from_slice(b"5 5 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0 0");
        let parsed = parse_stat(&line).unwrap();
        assert_eq!((parsed.pid, parsed.ppid, parsed.start_ticks), (5, 1, 77));
        assert_eq!(parsed.comm, "bad\u{fffd}\u{fffd}");
        assert!(parsed.is_running());
    }

    #[test]
    fn zombies_and_dead_processes_do_not_run() {
        for (state, running) in [
            ('R', true),
            ('S', true),
            ('T', true),
            ('Z', false),
            ('X', false),
        ] {
            let line = format!("7 (z) {state} 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0");
            assert_eq!(
                parse_stat(line.as_bytes()).unwrap().is_running(),
                running,
                "{state}"
            );
        }
    }

    #[test]
    fn malformed_stat_is_refused() {
        for bad in [
            &b""[..],
            b"12 sleep S 1",
            b"12 (sleep S 1 2 3",
            b"12 )sleep( S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (sleep) S 1 2 3",
            b"x (sleep) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (sleep) S one 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (sleep) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (sleep) S 1 two 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
        ] {
            assert_eq!(parse_stat(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn status_gives_the_real_uid() {
        let status = "Name:\tbash\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1\n\
                      Uid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n";
        assert_eq!(parse_status_real_uid(status), Some(1000));
        assert_eq!(parse_status_real_uid("Name:\tx\n"), None);
        assert_eq!(parse_status_real_uid("Uid:\tnope\n"), None);
    }

    #[test]
    fn passwd_lookup() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
                      # comment\n\
                      broken line\n\
                      ann:x:1000:1000:Ann,,,:/home/ann:/bin/zsh\n\
                      shadow:x:1000:1000::/:/bin/false\n\
                      bad\u{1b}[31m:x:1001:1001::/:/bin/sh\n\
                      :x:1002:1002::/:/bin/sh\n";
        assert_eq!(login_of(passwd, 0).as_deref(), Some("root"));
        assert_eq!(login_of(passwd, 1000).as_deref(), Some("ann"));
        assert_eq!(login_of(passwd, 1001), None);
        assert_eq!(login_of(passwd, 1002), None);
        assert_eq!(login_of(passwd, 4242), None);
    }

    #[test]
    fn boot_ids() {
        assert_eq!(
            parse_boot_id("028c6801-0bd8-45b6-9640-55274fd592c0\n").as_deref(),
            Some("028c6801-0bd8-45b6-9640-55274fd592c0")
        );
        assert_eq!(parse_boot_id("028c6801-0bd8-45b6-9640-55274fd592c"), None);
        assert_eq!(parse_boot_id("028C6801-0BD8-45B6-9640-55274FD592C0"), None);
        assert_eq!(parse_boot_id(""), None);
    }

    #[test]
    fn cmdline_splits_on_nul() {
        assert_eq!(
            parse_cmdline(b"node\0/usr/bin/claude\0--resume\0"),
            ["node", "/usr/bin/claude", "--resume"]
        );
        assert!(parse_cmdline(b"").is_empty());
    }

    #[test]
    fn process_trees() {
        let stat = |pid, ppid| ProcStat {
            pid,
            comm: format!("p{pid}"),
            state: 'S',
            ppid,
            pgrp: pid,
            start_ticks: 1,
        };
        let table = ProcessTable::from_stats([
            stat(1, 0),
            stat(10, 1),
            stat(11, 10),
            stat(12, 10),
            stat(13, 12),
            stat(20, 1),
        ]);
        let pids = |root| table.tree(root).iter().map(|s| s.pid).collect::<Vec<_>>();
        assert_eq!(pids(10), [10, 11, 12, 13]);
        assert_eq!(pids(20), [20]);
        assert_eq!(pids(99), Vec::<u32>::new());
        assert_eq!(table.get(13).map(|s| s.ppid), Some(12));
    }

    #[test]
    fn this_process_is_in_proc() {
        let me = std::process::id();
        let stat = read_stat(Path::new("/proc"), me).unwrap();
        assert_eq!(stat.pid, me);
        assert!(stat.start_ticks > 0);
        let table = ProcessTable::scan(Path::new("/proc"));
        assert_eq!(table.get(me).map(|s| s.start_ticks), Some(stat.start_ticks));
        assert!(!read_cmdline(Path::new("/proc"), me).is_empty());
    }
}
