//! Screen captures kept as an attempt's evidence: the agent's screen each time it blocks (the
//! question it asks the Leader), as `captures/NNNNNN-blocked.json` (`valp-tmux-capture.v1`) in
//! the attempt folder.
//!
//! What is kept is bounded three ways:
//! - **redacted and sanitized**: the lines are the screen's tail ([`super::screen::tail`]),
//!   redacted again here ([`crate::agent::redact`]) and made display text, so no escape
//!   sequence or obvious secret is stored;
//! - **capped in size**: at most [`MAX_CAPTURES`] captures per attempt, each at most
//!   [`MAX_CAPTURE_BYTES`] (lines dropped from the top until it fits);
//! - **kept for a bounded time**: [`sweep`] deletes captures older than [`RETENTION`] from
//!   every tmux attempt folder; each supervisor sweeps when it starts.
//!
//! Captures are not bound into the journal (the proofs are, and hold digests and a tail): a
//! swept capture leaves every recorded digest checkable. Hook payloads are never stored raw:
//! a signal keeps the payload's digest and a redacted, bounded summary
//! ([`crate::agent::channel::signal`]).

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::Record;
use crate::adapter::files;

/// The captures' folder in an attempt folder.
pub const CAPTURES_DIR: &str = "captures";
/// `valp-tmux-capture.v1`
pub const CAPTURE_SCHEMA: &str = "valp-tmux-capture.v1";
/// Captures kept per attempt (later ones are not written).
pub const MAX_CAPTURES: usize = 20;
/// The largest capture file, in bytes.
pub const MAX_CAPTURE_BYTES: usize = 32 << 10;
/// How long a capture is kept: 14 days.
pub const RETENTION: Duration = Duration::from_secs(14 * 24 * 3600);

/// `valp-tmux-capture.v1`: the agent's screen at a moment worth keeping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    /// [`CAPTURE_SCHEMA`]
    pub schema_version: String,
    /// The state read (`blocked`).
    pub state: String,
    /// The profile rule that read it.
    pub rule: Option<String>,
    /// The captured screen's digest (of the raw screen, as `state.json` has it).
    pub screen_digest: String,
    /// When (RFC 3339).
    pub at: String,
    /// The screen's last lines: sanitized, redacted, capped.
    pub lines: Vec<String>,
}

impl Record for Capture {
    const SCHEMA: &'static str = CAPTURE_SCHEMA;
    fn schema_version(&self) -> &str {
        &self.schema_version
    }
}

/// Keeps `capture` in the attempt folder `dir` as the next `captures/NNNNNN-<state>.json`, its
/// lines redacted and sanitized again and cut until it fits [`MAX_CAPTURE_BYTES`]. Returns the
/// file's name, or `None` when the attempt has [`MAX_CAPTURES`] already.
pub fn keep(dir: &Path, mut capture: Capture) -> Result<Option<String>, String> {
    let folder = dir.join(CAPTURES_DIR);
    files::create_dir_durably(&folder).map_err(|error| error.to_string())?;
    let count = std::fs::read_dir(&folder)
        .map_err(|error| error.to_string())?
        .flatten()
        .filter(|entry| !files::is_temporary(&entry.file_name().to_string_lossy()))
        .count();
    if count >= MAX_CAPTURES {
        return Ok(None);
    }
    capture.lines = capture
        .lines
        .iter()
        .map(|line| valp_view::sanitize::display_line(&crate::agent::redact::redact(line)))
        .collect();
    let bytes = loop {
        let bytes = capture.canonical().map_err(|error| error.to_string())?;
        if bytes.len() <= MAX_CAPTURE_BYTES {
            break bytes;
        }
        if capture.lines.is_empty() {
            return Err(format!("a capture without lines is {} bytes", bytes.len()));
        }
        capture.lines.remove(0);
    };
    let state: String = capture
        .state
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let name = format!("{:06}-{state}.json", count + 1);
    files::write_new(&folder.join(&name), &bytes).map_err(|error| error.to_string())?;
    Ok(Some(name))
}

/// Deletes the captures older than `keep_for` at `now` (by their file's modification time)
/// from every attempt folder under `tmux_root` (`<control root>/runtime/tmux`), and each
/// captures folder left empty. Returns how many were deleted; what cannot be read is left.
pub fn sweep(tmux_root: &Path, now: SystemTime, keep_for: Duration) -> usize {
    let Ok(attempts) = std::fs::read_dir(tmux_root.join("attempts")) else {
        return 0;
    };
    let mut deleted = 0;
    for attempt in attempts.flatten() {
        let folder = attempt.path().join(CAPTURES_DIR);
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age > keep_for);
            if old && std::fs::remove_file(entry.path()).is_ok() {
                deleted += 1;
            }
        }
        // Only an empty folder goes.
        let _ = std::fs::remove_dir(&folder);
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capture(lines: Vec<String>) -> Capture {
        Capture {
            schema_version: CAPTURE_SCHEMA.to_owned(),
            state: "blocked".to_owned(),
            rule: Some("permission question".to_owned()),
            screen_digest: valp_kernel::canonical::sha256_digest(b"x"),
            at: "2026-01-01T00:00:00Z".to_owned(),
            lines,
        }
    }

    #[test]
    fn a_capture_is_redacted_capped_and_counted() {
        let temp = tempfile::tempdir().unwrap();
        let lines = vec![
            "Run curl -H 'Authorization: Bearer abcdefghijklmnop1234'?".to_owned(),
            "\u{1b}]0;title\u{7}key sk-ant-api03-abcdefghijklmnopqrstu".to_owned(),
        ];
        let name = keep(temp.path(), capture(lines)).unwrap().unwrap();
        assert_eq!(name, "000001-blocked.json");
        let bytes = std::fs::read(temp.path().join(CAPTURES_DIR).join(&name)).unwrap();
        let kept = Capture::decode(&bytes).unwrap();
        assert_eq!(
            kept.lines,
            ["Run curl -H 'Authorization: [redacted]'?", "key [redacted]"]
        );
        // A huge screen is cut from the top to fit.
        let big: Vec<String> = (0..400)
            .map(|n| format!("{n} {}", "y".repeat(300)))
            .collect();
        let name = keep(temp.path(), capture(big)).unwrap().unwrap();
        let bytes = std::fs::read(temp.path().join(CAPTURES_DIR).join(&name)).unwrap();
        assert!(bytes.len() <= MAX_CAPTURE_BYTES);
        let kept = Capture::decode(&bytes).unwrap();
        assert!(kept.lines.last().unwrap().starts_with("399 "));
        assert!(kept.lines.len() < 400);
        for _ in 2..MAX_CAPTURES {
            assert!(keep(temp.path(), capture(vec![])).unwrap().is_some());
        }
        assert_eq!(keep(temp.path(), capture(vec![])).unwrap(), None);
    }

    #[test]
    fn the_sweep_deletes_only_captures_older_than_the_retention() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        let old = root.join("attempts/a");
        let new = root.join("attempts/b");
        keep(&old, capture(vec!["old".to_owned()])).unwrap();
        keep(&new, capture(vec!["new".to_owned()])).unwrap();
        let day = Duration::from_secs(24 * 3600);
        let file = old.join(CAPTURES_DIR).join("000001-blocked.json");
        let stamp = SystemTime::now() - 20 * day;
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(stamp)
            .unwrap();
        assert_eq!(sweep(root, SystemTime::now(), RETENTION), 1);
        assert!(!old.join(CAPTURES_DIR).exists());
        assert!(new.join(CAPTURES_DIR).join("000001-blocked.json").is_file());
        assert_eq!(sweep(root, SystemTime::now(), RETENTION), 0);
        // Everything goes once the retention has passed.
        assert_eq!(sweep(root, SystemTime::now() + 15 * day, RETENTION), 1);
    }
}
