//! The agent-signal inbox: where the hook bridge appends an attempt's signals, and how they are
//! read back.
//!
//! ```text
//! <control root>/inbox/agent-signals/<H>.jsonl   H = attempt_folder(attempt_id): one
//!                                                valp-agent-signal.v1 per line, canonical
//! <control root>/inbox/agent-signals/<H>.lock    taken while a line is appended
//! ```
//!
//! It follows the inbox contract ([`crate::ingest`]): lines are appended with one `write`, the
//! file is never truncated or rewritten, a line that would follow a torn one (a writer died
//! halfway) starts with an LF so the fragment stays a line of its own, as `valp report` does
//! ([`crate::adapter::report`]).
//!
//! **Sequenced.** Under the lock the appender reads only the file's tail (at most
//! [`TAIL_BYTES`]), takes the last line that decodes as a signal of the attempt, and writes the
//! next sequence; sequences of the complete lines are therefore `1..n` in file order. Reading
//! the tail, not the file, keeps an append's cost independent of how many signals came before
//! (the hook must return fast: the agent waits for it).
//!
//! **Bounded.** At most [`MAX_SIGNALS`] signals per attempt and [`MAX_LINE_BYTES`] per line: a
//! signal past either is refused with [`InboxError::Full`] / [`InboxError::TooLarge`] and
//! nothing is written. Signals are small by construction (every text is bounded), so the cap
//! on lines bounds the file too.
//!
//! **Stays inside the control root.** The folders on the way must be real folders (a symbolic
//! link is refused, [`InboxError::NotAFolder`]), and the file is opened with `O_NOFOLLOW`.
//!
//! **Not synced.** A signal is an observation the screen can stand in for, and the agent is
//! waiting: an append does not `fdatasync`. A crash can lose the newest lines or leave a torn
//! last line (read as a fragment), never alter lines before it.

use std::fs::OpenOptions;
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use valp_kernel::canonical::Canonical;
use valp_store::lock::LockGuard;

use super::signal::{AgentSignal, AttemptIds, Draft};
use crate::abi::attempt_folder;
use crate::clock::Clock;
use crate::ingest::{glued_record, open_flags};

/// The inbox folder of agent signals, relative to the control root.
pub const SIGNAL_DIR: &str = "inbox/agent-signals";
/// Signals kept per attempt.
pub const MAX_SIGNALS: u64 = 10_000;
/// Longest signal line, LF included.
pub const MAX_LINE_BYTES: usize = 8 << 10;
/// How much of the file's end an append reads to find the last sequence.
pub const TAIL_BYTES: u64 = 64 << 10;
/// How long an append waits for another appender's lock.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// Why a signal was not appended or the signals could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    /// The attempt already has [`MAX_SIGNALS`] signals.
    #[error("{file}: the attempt already has {MAX_SIGNALS} signals, the limit; not recorded")]
    Full {
        /// The signal file, relative to the control root.
        file: String,
    },
    /// The signal's line is longer than [`MAX_LINE_BYTES`].
    #[error("the signal is {size} bytes, the limit is {MAX_LINE_BYTES}; not recorded")]
    TooLarge {
        /// Its size.
        size: usize,
    },
    /// A folder on the way is a symbolic link or not a folder.
    #[error("{path}: not a real folder (a symbolic link or a file); nothing written")]
    NotAFolder {
        /// The path.
        path: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The lock could not be taken.
    #[error(transparent)]
    Lock(#[from] valp_store::StoreError),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> InboxError + '_ {
    move |source| InboxError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// `inbox/agent-signals/<H>.jsonl`, relative to the control root.
pub fn signal_file(attempt_id: &str) -> String {
    format!("{SIGNAL_DIR}/{}.jsonl", attempt_folder(attempt_id))
}

/// Creates `relative` below `root` folder by folder, refusing any that is a symbolic link.
pub(crate) fn real_folder(root: &Path, relative: &str) -> Result<PathBuf, InboxError> {
    let mut path = root.to_path_buf();
    for part in relative.split('/') {
        path.push(part);
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => {
                return Err(InboxError::NotAFolder {
                    path: path.display().to_string(),
                });
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                match std::fs::create_dir(&path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(error) => return Err(io_error(&path)(error)),
                }
            }
            Err(error) => return Err(io_error(&path)(error)),
        }
    }
    Ok(path)
}

/// Appends `draft` as the attempt's next signal, observed now by `clock`.
pub fn append(
    control_root: &Path,
    attempt: &AttemptIds,
    draft: Draft,
    clock: &dyn Clock,
) -> Result<AgentSignal, InboxError> {
    append_with(control_root, attempt, draft, clock, |_, _| {})
}

/// [`append`], letting `complete` fill in what depends on the sequence the signal gets (a
/// permission request's id), under the same lock.
pub fn append_with(
    control_root: &Path,
    attempt: &AttemptIds,
    mut draft: Draft,
    clock: &dyn Clock,
    complete: impl FnOnce(u64, &mut Draft),
) -> Result<AgentSignal, InboxError> {
    let folder = real_folder(control_root, SIGNAL_DIR)?;
    let name = attempt_folder(&attempt.attempt_id);
    let _lock = LockGuard::acquire(&folder.join(format!("{name}.lock")), LOCK_PATIENCE)?;
    let path = folder.join(format!("{name}.jsonl"));
    let mut file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .custom_flags(open_flags())
        .open(&path)
        .map_err(io_error(&path))?;
    let (last, torn) = last_sequence(&mut file, &attempt.attempt_id).map_err(io_error(&path))?;
    if last >= MAX_SIGNALS {
        return Err(InboxError::Full {
            file: signal_file(&attempt.attempt_id),
        });
    }
    complete(last + 1, &mut draft);
    let signal = draft.into_signal(attempt, last + 1, clock.now());
    let mut bytes = Vec::with_capacity(512);
    if torn {
        bytes.push(b'\n');
    }
    bytes.extend(signal.canonical_bytes());
    if bytes.len() > MAX_LINE_BYTES {
        return Err(InboxError::TooLarge { size: bytes.len() });
    }
    // One write per line, as the inbox contract asks.
    file.write_all(&bytes).map_err(io_error(&path))?;
    Ok(signal)
}

/// The sequence of the last signal of `attempt_id` in the file's tail (0 when none), and
/// whether the file ends in a partial line.
fn last_sequence(file: &mut std::fs::File, attempt_id: &str) -> std::io::Result<(u64, bool)> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((0, false));
    }
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::with_capacity(usize::try_from(len - start).unwrap_or_default());
    file.read_to_end(&mut tail)?;
    let torn = tail.last().is_some_and(|&byte| byte != b'\n');
    let last = tail
        .split(|&byte| byte == b'\n')
        .rev()
        .find_map(|line| decode_line(line).filter(|signal| signal.attempt_id == attempt_id))
        .map_or(0, |signal| signal.sequence);
    Ok((last, torn))
}

/// A line as the inbox reader takes it (a record glued to a torn line counts), if it is a
/// valid signal.
fn decode_line(line: &[u8]) -> Option<AgentSignal> {
    let line = match glued_record(line) {
        Some(at) => &line[at..],
        None => line,
    };
    AgentSignal::decode(line)
        .ok()
        .filter(|signal| signal.check().is_ok())
}

/// Every valid signal of `attempt_id` in its file, in file order (lines that do not decode or
/// check are skipped: the console's feed lists them). Missing file: none.
pub fn read(control_root: &Path, attempt_id: &str) -> Result<Vec<AgentSignal>, InboxError> {
    let path = control_root.join(signal_file(attempt_id));
    let cap = MAX_SIGNALS * MAX_LINE_BYTES as u64;
    let bytes = match crate::adapter::files::read_capped(&path, cap) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(InboxError::Io {
                path: path.display().to_string(),
                source: std::io::Error::other(format!("larger than {cap} bytes")),
            });
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(io_error(&path)(error)),
    };
    Ok(bytes
        .split(|&byte| byte == b'\n')
        .filter_map(decode_line)
        .filter(|signal| signal.attempt_id == attempt_id)
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use valp_kernel::canonical::sha256_digest;

    use super::*;
    use crate::agent::channel::signal::{Channel, SignalKind};
    use crate::clock::{FixedClock, Timestamp};

    fn attempt() -> AttemptIds {
        AttemptIds {
            task_id: "T".into(),
            work_item_id: "w".into(),
            attempt_id: "T:w:a1".into(),
        }
    }

    fn draft(summary: &str) -> Draft {
        Draft::new(
            SignalKind::Opaque,
            Channel::ClaudeHook,
            "claude",
            "Odd",
            sha256_digest(summary.as_bytes()),
            summary,
        )
    }

    #[test]
    fn appends_are_sequenced_and_survive_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let clock = FixedClock::new(Timestamp::from_millis(1_000));
        for n in 1..=3 {
            let signal = append(dir.path(), &attempt(), draft(&format!("s{n}")), &clock).unwrap();
            assert_eq!(signal.sequence, n);
        }
        let path = dir.path().join(signal_file("T:w:a1"));
        // A writer died mid-line.
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"half")
            .unwrap();
        let fourth = append(dir.path(), &attempt(), draft("s4"), &clock).unwrap();
        assert_eq!(fourth.sequence, 4);
        let read = read(dir.path(), "T:w:a1").unwrap();
        assert_eq!(
            read.iter().map(|s| s.sequence).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("{\"half\n{"), "the fragment is its own line");
    }

    #[test]
    fn the_count_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let clock = FixedClock::new(Timestamp::from_millis(1_000));
        let mut last = draft("x").into_signal(&attempt(), MAX_SIGNALS, Timestamp::from_millis(1));
        last.signal_id = last.content_digest();
        let folder = real_folder(dir.path(), SIGNAL_DIR).unwrap();
        std::fs::write(
            folder.join(format!("{}.jsonl", attempt_folder("T:w:a1"))),
            last.canonical_bytes(),
        )
        .unwrap();
        let error = append(dir.path(), &attempt(), draft("y"), &clock).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{}: the attempt already has 10000 signals, the limit; not recorded",
                signal_file("T:w:a1")
            )
        );
    }

    #[test]
    fn a_symbolic_link_on_the_way_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("inbox")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("inbox/agent-signals")).unwrap();
        let clock = FixedClock::new(Timestamp::from_millis(1_000));
        let error = append(dir.path(), &attempt(), draft("x"), &clock).unwrap_err();
        assert!(matches!(error, InboxError::NotAFolder { .. }), "{error}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
