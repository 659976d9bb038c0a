//! Observation ingest: the files adapters and other tools write, read as untrusted input.
//!
//! Two stages, both free of any write (the ingest never creates, renames, deletes or locks a
//! file, and never touches a journal):
//!
//! 1. **Transport** ([`Watcher`]): watches directory trees of the control root (`runtime/` and
//!    `inbox/` by default) with `notify`'s recommended watcher (inotify on Linux), falling back
//!    to its `PollWatcher` when that is unavailable, and turns what it sees into [`Ingested`]
//!    items on a bounded channel.
//!    [`Scanner`] is the same reading without `notify` or a thread: each call walks the
//!    folders and returns what is new since the last call (the runtime reads the inbox with it
//!    for external attempts, see [`crate::adapter::external`]).
//! 2. **Decoding** ([`decode_observation`], [`Sequencer`]): applies the size cap, the strict
//!    `valp-adapter-observation.v1` decoder and every ABI check, with the observing adapter
//!    taken from where the file lies, then refuses an observation whose sequence does not move
//!    its request forward.
//!
//! Anything that cannot be ingested becomes a [`Rejection`] naming the file (relative to the
//! control root, shown through [`display_text`](valp_view::sanitize::display_text)) and a
//! [`Reason`]: never a panic, never a journal write. Mapping observations to kernel events is
//! the runtime's job, not this module's.
//!
//! # What the transport emits
//!
//! Paths in items are relative to [`WatchConfig::base`] (the control root), `/`-separated, for
//! example `runtime/process/attempts/<H>/abi-submit-accepted.json` or `inbox/ci-42.jsonl`.
//!
//! - **`*.json`**: one [`Ingested::File`] with the whole content and its SHA-256 when the file
//!   is new or its content differs from the last content emitted for that path (an atomic
//!   replace with new content is emitted once; with the same content, not at all). A
//!   replace A → B → A emits A twice: A differs from B, the content before it. A file written
//!   in place instead of renamed into place may be read half-written: the decoding stage
//!   rejects that content, and the complete file follows when the write ends.
//! - **`*.jsonl`**: one [`Ingested::Line`] per complete LF-terminated line (without the LF),
//!   tailed by byte offset. A partial last line waits until its LF arrives. A line that is a
//!   fragment followed by one complete JSON value (a writer died mid-line and the next one
//!   appended without starting a new line) is emitted as two lines, the fragment and then the
//!   record at its own offset ([`glued_record`]): the fragment is rejected as malformed, the
//!   record is not lost. The files are
//!   append-only by contract; the watcher checks that:
//!   - it keeps the SHA-256 of every byte it consumed and the last 64 of them;
//!   - a file that **shrank** is reported once as [`Reason::Truncated`];
//!   - a file that was **replaced** (another inode under the same name) is a continuation if
//!     its first bytes are exactly the bytes already consumed (a tool that rewrites the log
//!     with lines added), otherwise it is reported once as [`Reason::Replaced`];
//!   - a file whose 64 bytes before the read position changed was **rewritten** in place
//!     ([`Reason::Rewritten`]; a rewrite that leaves those bytes alone is not detected);
//!
//!   and after any of the three it reads the file again from byte 0. The lines of the current
//!   content are then emitted again, with their offsets, even those that did not change:
//!   which of the lines already emitted survived cannot be known without keeping every line,
//!   and claiming they did would be a guess. The rejection tells the operator the history was
//!   rewritten; the observations' own ids and the [`Sequencer`] turn a re-emitted observation
//!   into a visible duplicate rejection, never into a second journal write.
//! - A line longer than [`Limits::max_line_bytes`] is rejected with its offset and skipped up to
//!   its LF; a `*.json` over [`Limits::max_file_bytes`] is rejected with its size.
//! - Ignored without a word: names starting with `.` (temporary files of atomic writers, hidden
//!   folders) and names ending in `.tmp`, `~` or `.lock` (lock files coordinate, they hold no
//!   observations).
//! - Skipped under `runtime/`: files that are neither `*.json` nor `*.jsonl` (adapters keep
//!   captured output and logs there); under `inbox/` they are rejected
//!   ([`WatchConfig::reject_other_files_under`]).
//! - Rejected ([`Ingested::Rejected`]) once per file (until it is read successfully; another
//!   file under the same name is reported again): symbolic links (never followed, in or out of
//!   the tree), anything that is not a regular file or folder, names that are not UTF-8,
//!   unreadable files and folders, a watched folder that disappeared, folders nested deeper
//!   than 32 levels.
//! - [`Ingested::Rescanned`] after every full rescan: at start (generation 0; everything on
//!   disk before it has been emitted), when `notify` reports an overflow or an error, every
//!   [`WatchConfig::rescan_every`], and on [`Watcher::rescan`]. A rescan compares each file
//!   with what was already emitted and emits only what is new.
//!
//! # The inbox contract (for tools that are not valp adapters)
//!
//! Any runtime can report by dropping files into `.valp/inbox/` (any folder depth below it):
//!
//! - a file `<name>.json` holding one `valp-adapter-observation.v1` record (any JSON
//!   formatting), written to a temporary name starting with `.` or ending in `.tmp` in the
//!   same folder, then renamed into place; or
//! - a file `<name>.jsonl` to which records are appended, one per line in compact JSON, each
//!   line written with one `write` and ended by LF; the file is never truncated or rewritten.
//!
//! Each record is checked as an adapter's would be (exact shape, no unknown members, ids that
//! are the digests of their content, a provenance chain from the request, sequences strictly
//! increasing per request), except that no folder names the adapter: the last provenance
//! segment's `adapter_id` is taken as it is, so an inbox observation's adapter is claimed, not
//! proven by where it lies. Limits: 1 MiB per file, 256 KiB per line (defaults of [`Limits`]).
//! The inbox is read, never emptied: a file stays where the tool put it.
//!
//! ## Running a work item for valp (the `external` adapter)
//!
//! A plan work item with `run = { adapter = "external" }` is done by such a tool (see
//! [`crate::adapter::external`] for the whole protocol):
//!
//! - **Finding work.** When the System launches an attempt it writes its request, and nothing
//!   else, to `.valp/runtime/external/attempts/<H>/request.json` (`valp-adapter-request.v1`,
//!   canonical JSON, written atomically; `H` is
//!   [`attempt_folder`](crate::abi::attempt_folder) of the attempt id). A tool lists
//!   `runtime/external/attempts/*/request.json` for requests it has not finished; a retry is
//!   a new attempt with its own folder.
//! - **Reporting.** Observations go into the inbox as above, each with the request file's
//!   record exactly as its `request`: `accepted` (sequence 1) when the tool takes the work on,
//!   then one final observation (`completed`, or `blocked`/`cancelled`/`unsupported` with a
//!   `reason`) with a higher sequence. The System turns the `accepted` observation into
//!   `attempt_running` and the final one into `attempt_completed` (or a failure, retried within
//!   the plan's budget), each a kernel proposal with the observation as evidence. On
//!   `completed`, the item's `expected_evidence` files must exist below its `cwd`: they are
//!   digested then and stored as evidence.
//! - **What is refused.** An observation naming the attempt but carrying another request
//!   (forged or stale), the same observation twice, a sequence that does not move the request
//!   forward, or anything after the final observation is listed (`valp run`, `valp task status`)
//!   and never acted on.
//! - **Stopping.** When the Leader cancels the attempt, `control/cancel.json` appears in the
//!   attempt folder; the tool should stop and report `cancelled`.

mod decode;
mod scan;
mod watch;

use std::fmt;
use std::path::{Path, PathBuf};

pub use decode::{Origin, Sequencer, decode_observation, glued_record, origin};
/// The flags untrusted files are opened with (the agent-signal inbox appends with them too).
pub(crate) use scan::open_flags;
pub use watch::{IngestError, Mode, WatchConfig, Watcher};

use crate::abi::AdapterObservation;
use valp_view::sanitize::display_text;

/// The watcher's reading stage, driven by the caller: each [`Scanner::scan`] walks the folders
/// and returns the items the watcher would emit for what is new or changed since the last scan
/// (a file whose `lstat` did not change is not opened again; a `*.jsonl` file is read on from
/// where the last scan stopped; truncated, replaced and rewritten logs are reported and read
/// again from the start). Cost per scan: one `lstat` per file plus the new bytes.
pub struct Scanner {
    tracker: scan::Tracker,
}

impl Scanner {
    /// Reads the folders `roots` (relative) of the control root `base`. A root that does not
    /// exist is reported as unreadable and read once it exists.
    pub fn new(base: &Path, roots: Vec<PathBuf>, limits: Limits) -> std::io::Result<Self> {
        let base = std::fs::canonicalize(base)?;
        Ok(Self {
            tracker: scan::Tracker::new(base, roots, Vec::new(), limits),
        })
    }

    /// What is new since the last scan (everything, the first time).
    pub fn scan(&mut self) -> Vec<Ingested> {
        let mut items = Vec::new();
        // The sink never refuses, so the walk always completes.
        let _ = self.tracker.rescan(&mut |item| {
            items.push(item);
            Ok(())
        });
        items
    }
}

/// Size caps of what the ingest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest `*.json` observation file, in bytes (default 1 MiB).
    pub max_file_bytes: u64,
    /// Largest `*.jsonl` line without its LF, in bytes (default 256 KiB).
    pub max_line_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_file_bytes: 1 << 20,
            max_line_bytes: 256 << 10,
        }
    }
}

/// One thing the watcher saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ingested {
    /// A complete `*.json` file, new or with new content.
    File {
        /// Relative to the control root.
        path: PathBuf,
        /// The whole content.
        bytes: Vec<u8>,
        /// `sha256:` + 64 hex digits of `bytes`.
        digest: String,
    },
    /// A complete line of a `*.jsonl` file.
    Line {
        /// Relative to the control root.
        path: PathBuf,
        /// Byte offset of the line's first byte in the file.
        offset: u64,
        /// The line, without its LF.
        bytes: Vec<u8>,
    },
    /// Something that cannot be ingested.
    Rejected(Rejection),
    /// A full rescan finished: every file on disk when it started has been emitted.
    Rescanned {
        /// The highest [`Watcher::rescan`] ticket it answers (0 for the scan at start and for
        /// periodic and overflow rescans before any request).
        generation: u64,
    },
}

impl Ingested {
    /// The file the item is about (`None` for [`Ingested::Rescanned`]).
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File { path, .. } | Self::Line { path, .. } => Some(path),
            Self::Rejected(rejection) => Some(&rejection.file),
            Self::Rescanned { .. } => None,
        }
    }

    /// The decoding stage for this item: the observation of a file or line (a line's rejection
    /// names its offset), the rejection itself, or `None` for [`Ingested::Rescanned`].
    pub fn decode(&self, limits: &Limits) -> Option<Result<AdapterObservation, Rejection>> {
        match self {
            Self::File { path, bytes, .. } => Some(decode_observation(path, bytes, limits)),
            Self::Line {
                path,
                offset,
                bytes,
            } => Some(
                decode_observation(path, bytes, limits)
                    .map_err(|rejection| rejection.at_offset(*offset)),
            ),
            Self::Rejected(rejection) => Some(Err(rejection.clone())),
            Self::Rescanned { .. } => None,
        }
    }
}

/// A file (or one line of it) that is not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// Relative to the control root; may hold any bytes (its [`fmt::Display`] is sanitized).
    pub file: PathBuf,
    /// The line's byte offset, for a line of a `*.jsonl` file.
    pub offset: Option<u64>,
    /// Why.
    pub reason: Reason,
}

impl Rejection {
    /// A rejection of a whole file.
    pub fn new(file: impl Into<PathBuf>, reason: Reason) -> Self {
        Self {
            file: file.into(),
            offset: None,
            reason,
        }
    }

    /// The same rejection, about the line at `offset`.
    #[must_use]
    pub fn at_offset(mut self, offset: u64) -> Self {
        self.offset = Some(offset);
        self
    }

    /// The file name, safe to print (control characters and escape sequences removed).
    pub fn display_file(&self) -> String {
        display_text(&self.file.to_string_lossy())
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.display_file())?;
        if let Some(offset) = self.offset {
            write!(f, " (line at byte {offset})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

impl std::error::Error for Rejection {}

/// Why something is not ingested. Every text here is already sanitized for display.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// A `*.json` file over [`Limits::max_file_bytes`] (or an observation over the cap).
    TooLarge {
        /// Its size in bytes (at least).
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// A `*.jsonl` line over [`Limits::max_line_bytes`]; skipped up to its LF.
    LineTooLong {
        /// The cap.
        limit: u64,
    },
    /// The file or folder could not be read.
    Unreadable(String),
    /// A name that is not UTF-8.
    NonUtf8Name,
    /// A symbolic link: never followed.
    Symlink,
    /// Not a regular file or folder (FIFO, socket, device).
    NotAFile,
    /// Neither `*.json` nor `*.jsonl`.
    UnknownKind,
    /// Folders nested deeper than the watcher descends.
    TooDeep,
    /// A `*.jsonl` file shrank below what was already read; read again from byte 0.
    Truncated {
        /// How far it had been read.
        from: u64,
        /// Its size now.
        to: u64,
    },
    /// A `*.jsonl` file was replaced by one that does not continue it; read again from byte 0.
    Replaced {
        /// How far the old file had been read.
        from: u64,
    },
    /// The bytes of a `*.jsonl` file before the read position changed; read again from byte 0.
    Rewritten {
        /// How far it had been read.
        from: u64,
    },
    /// Not under `runtime/<adapter>/` or `inbox/`.
    Misplaced,
    /// Not JSON of the observation's shape.
    Malformed(String),
    /// The shape is right but an ABI rule is broken (a tampered id names `observation_id`).
    Invalid {
        /// Where.
        field: String,
        /// Which rule.
        rule: String,
    },
    /// Written into one adapter's folder by another adapter.
    Foreign {
        /// The adapter whose folder holds the file.
        observer: String,
        /// The adapter the observation's last provenance segment names.
        claimed: String,
    },
    /// A sequence not greater than the last one admitted for the request.
    OutOfOrder {
        /// The request.
        request_id: String,
        /// The observation's sequence.
        sequence: u64,
        /// The last admitted.
        last: u64,
    },
    /// The observation already admitted for that request and sequence, seen again.
    Duplicate {
        /// The request.
        request_id: String,
        /// Its sequence.
        sequence: u64,
    },
}

impl Reason {
    /// A stable short code (`too_large`, `out_of_order`, …) for filters and tests.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::TooLarge { .. } => "too_large",
            Self::LineTooLong { .. } => "line_too_long",
            Self::Unreadable(_) => "unreadable",
            Self::NonUtf8Name => "non_utf8_name",
            Self::Symlink => "symlink",
            Self::NotAFile => "not_a_file",
            Self::UnknownKind => "unknown_kind",
            Self::TooDeep => "too_deep",
            Self::Truncated { .. } => "truncated",
            Self::Replaced { .. } => "replaced",
            Self::Rewritten { .. } => "rewritten",
            Self::Misplaced => "misplaced",
            Self::Malformed(_) => "malformed",
            Self::Invalid { .. } => "invalid",
            Self::Foreign { .. } => "foreign",
            Self::OutOfOrder { .. } => "out_of_order",
            Self::Duplicate { .. } => "duplicate",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { size, limit } => {
                write!(f, "too large: {size} bytes, the limit is {limit}")
            }
            Self::LineTooLong { limit } => {
                write!(f, "line longer than {limit} bytes (skipped)")
            }
            Self::Unreadable(error) => write!(f, "unreadable: {error}"),
            Self::NonUtf8Name => f.write_str("the name is not UTF-8"),
            Self::Symlink => f.write_str("a symbolic link (not followed)"),
            Self::NotAFile => f.write_str("not a regular file"),
            Self::UnknownKind => f.write_str("neither *.json nor *.jsonl"),
            Self::TooDeep => f.write_str("folders nested too deep (not read)"),
            Self::Truncated { from, to } => write!(
                f,
                "truncated from {from} to {to} bytes: lines already read may have changed; \
                 reading it again from the start"
            ),
            Self::Replaced { from } => write!(
                f,
                "replaced by a file that does not continue the {from} bytes already read; \
                 reading it again from the start"
            ),
            Self::Rewritten { from } => write!(
                f,
                "rewritten before byte {from}: lines already read changed; reading it again \
                 from the start"
            ),
            Self::Misplaced => f.write_str("not under runtime/<adapter>/ or inbox/"),
            Self::Malformed(error) => write!(f, "malformed: {error}"),
            Self::Invalid { field, rule } => write!(f, "invalid: {field}: {rule}"),
            Self::Foreign { observer, claimed } => write!(
                f,
                "foreign: written by adapter {claimed} into the folder of adapter {observer}"
            ),
            Self::OutOfOrder {
                request_id,
                sequence,
                last,
            } => write!(
                f,
                "out of order: sequence {sequence} of request {request_id}, after {last}"
            ),
            Self::Duplicate {
                request_id,
                sequence,
            } => write!(
                f,
                "duplicate: sequence {sequence} of request {request_id} was already admitted"
            ),
        }
    }
}
