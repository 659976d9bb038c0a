//! The Doctor's `/proc` and `/etc/passwd` parsers.

use valp_runtime::doctor::procfs::{
    ProcStat, login_of, parse_boot_id, parse_cmdline, parse_stat, parse_status_real_uid,
};

/// Every parser over the same bytes: a parsed stat line formats back to a line that parses to
/// the same fields; cmdline arguments are never empty; a boot id is a 36-character UUID; a
/// login is printable ASCII without `:`.
pub fn procfs(data: &[u8]) {
    if let Some(stat) = parse_stat(data) {
        assert_eq!(
            parse_stat(&stat_line(&stat)),
            Some(stat.clone()),
            "stat round trip"
        );
    }
    for argument in parse_cmdline(data) {
        assert!(
            !argument.is_empty() && !argument.contains('\0'),
            "argument {argument:?}"
        );
    }
    let text = String::from_utf8_lossy(data);
    if let Some(id) = parse_boot_id(&text) {
        assert_eq!(id.len(), 36, "boot id {id:?}");
    }
    let uid = parse_status_real_uid(&text).unwrap_or(0);
    if let Some(login) = login_of(&text, uid) {
        assert!(
            !login.is_empty()
                && login
                    .bytes()
                    .all(|byte| byte.is_ascii_graphic() && byte != b':'),
            "login {login:?}"
        );
    }
}

/// A `/proc/<pid>/stat` line holding `stat`'s fields (fields 6 to 21 zero).
fn stat_line(stat: &ProcStat) -> Vec<u8> {
    let zeros = |count: usize| " 0".repeat(count);
    format!(
        "{} ({}) {} {} {}{} {}\n",
        stat.pid,
        stat.comm,
        stat.state,
        stat.ppid,
        stat.pgrp,
        zeros(22 - 6),
        stat.start_ticks
    )
    .into_bytes()
}
