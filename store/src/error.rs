//! Store errors. Every variant names the file, and where it applies the line, byte or sequence
//! number, so a refusal can be acted on without reading code.

use std::path::PathBuf;

/// The failure codes a store operation reports (the VALP reference store's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCode {
    /// A journal, genesis or blob is not canonical, not replayable, or damaged (including a
    /// different blob stored under a digest).
    Corrupt,
    /// The journal lock was not acquired before the deadline.
    LockTimeout,
    /// The lock file could not be opened or locked.
    LockUnavailable,
    /// An I/O failure before anything was written: nothing was committed.
    DurabilityPrecommit,
    /// An I/O failure after the write began: the entry may or may not be on disk; reopen and
    /// re-read before proposing again.
    DurabilityUnknownOrCommitted,
    /// Any other I/O failure (permissions, missing files).
    Io,
    /// The Done gate refused a proposal the kernel accepts (`kernel/DEVIATIONS.md`, D2).
    DoneGate,
    /// The epoch fence refused a proposal the kernel accepts: the task is bound to a Leader
    /// epoch that is not the installation's active one.
    EpochFenced,
    /// The control root has the previous layout: `valp upgrade` converts it.
    UpgradeRequired,
    /// The control root's layout is one this valp has no way to read or convert.
    MigrationUnsupported,
    /// A task snapshot is not the State a replay from the genesis rebuilds at its line (or is
    /// not a snapshot, or names a line that is not there): `valp verify` lists it; opens ignore
    /// it.
    SnapshotMismatch,
}

impl StoreCode {
    /// The wire code.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Corrupt => "VALP-E-KERNEL-STORE-CORRUPT",
            Self::LockTimeout => "VALP-E-LOCK-TIMEOUT",
            Self::LockUnavailable => "VALP-E-LOCK-UNAVAILABLE",
            Self::DurabilityPrecommit => "VALP-E-DURABILITY-PRECOMMIT",
            Self::DurabilityUnknownOrCommitted => "VALP-E-DURABILITY-UNKNOWN-OR-COMMITTED",
            Self::Io => "VALP-E-STORE-IO",
            Self::DoneGate => "VALP-E-DONE-GATE",
            Self::EpochFenced => "VALP-E-EPOCH-FENCED",
            Self::UpgradeRequired => "VALP-E-STORE-UPGRADE-REQUIRED",
            Self::MigrationUnsupported => "VALP-E-MIGRATION-UNSUPPORTED",
            Self::SnapshotMismatch => "VALP-E-STORE-SNAPSHOT-MISMATCH",
        }
    }
}

impl std::fmt::Display for StoreCode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file failed verification.
    #[error("{code}: {path}:{line}: byte {byte}: {reason}", code = StoreCode::Corrupt)]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: u64,
        /// Byte offset of the line's start (or of the problem, when known more precisely).
        byte: u64,
        /// What is wrong.
        reason: String,
    },
    /// The lock was not acquired in time.
    #[error("{code}: {path}: lock not acquired within {waited_ms} ms", code = StoreCode::LockTimeout)]
    LockTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long we waited.
        waited_ms: u128,
    },
    /// The lock file could not be used.
    #[error("{code}: {path}: {source}", code = StoreCode::LockUnavailable)]
    LockUnavailable {
        /// The lock file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An I/O failure that committed nothing.
    #[error("{code}: {path}: {operation}: {source}", code = StoreCode::DurabilityPrecommit)]
    Precommit {
        /// The file.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// An I/O failure after the write began; the writer is poisoned until reopened.
    #[error(
        "{code}: {path}: {operation} failed after the write began (what was written, entry {seq} \
         for a journal, may or may not be on disk; reopen to find out): {source}",
        code = StoreCode::DurabilityUnknownOrCommitted
    )]
    UnknownOrCommitted {
        /// The file.
        path: PathBuf,
        /// What failed.
        operation: &'static str,
        /// The journal sequence number being written (0 for other files).
        seq: u64,
        /// The cause.
        source: std::io::Error,
    },
    /// The writer failed before and refuses appends until the journal is reopened.
    #[error(
        "{code}: {path}: an earlier write failed ({cause}); reopen the journal before appending",
        code = StoreCode::DurabilityUnknownOrCommitted
    )]
    Poisoned {
        /// The journal.
        path: PathBuf,
        /// The earlier failure.
        cause: String,
    },
    /// A different blob exists under the same digest.
    #[error("{code}: {path}: a different blob is already stored under {digest}", code = StoreCode::Corrupt)]
    BlobConflict {
        /// The blob file.
        path: PathBuf,
        /// The digest.
        digest: String,
    },
    /// The Done gate refused the proposal (a `recording_completed`, or the revision-1 entry
    /// freezing the Done policy); nothing was written to the journal and the refusal was logged
    /// to `rejections.jsonl`.
    #[error(
        "{code}: {path}: refused by the Done gate, nothing written: {}",
        .reasons.join("; "),
        code = StoreCode::DoneGate
    )]
    DoneGate {
        /// The journal.
        path: PathBuf,
        /// The blocking reasons, in the gate's order (see `valp_kernel::done`).
        reasons: Vec<String>,
    },
    /// The epoch fence refused the proposal: the installation ledger's active epoch is not the
    /// one the task is bound to (see [`fence`](crate::fence)); nothing was written to the
    /// journal and the refusal was logged to `rejections.jsonl`.
    #[error(
        "{code}: {path}: the task is bound to Leader epoch {task_epoch}, the active epoch is \
         {active_epoch}: nothing written (hand the task over with `valp task handoff`)",
        code = StoreCode::EpochFenced
    )]
    EpochFenced {
        /// The journal.
        path: PathBuf,
        /// The Leader epoch of the task's genesis.
        task_epoch: i128,
        /// The installation's active epoch.
        active_epoch: i128,
    },
    /// A journal does not reach, or does not match, its head anchor: it was truncated or rolled
    /// back (or the anchor is damaged). See [`head`](crate::head).
    #[error(
        "{code}: {path}: does not match its head anchor {head} (anchored seq {seq}): {reason}; \
         nothing was changed (`valp recover` shows what can be done)",
        head = .head.display(),
        code = StoreCode::Corrupt
    )]
    HeadMismatch {
        /// The journal.
        path: PathBuf,
        /// Its head file.
        head: PathBuf,
        /// The anchored sequence number.
        seq: u64,
        /// What does not match.
        reason: String,
    },
    /// A journal of a layout-2 root has no head anchor.
    #[error(
        "{code}: {path}: its head anchor {head} is missing (every journal is created with one), \
         so a truncation could not be seen; nothing was changed (`valp recover` shows what can \
         be done)",
        head = .head.display(),
        code = StoreCode::Corrupt
    )]
    HeadMissing {
        /// The journal.
        path: PathBuf,
        /// Where its head should be.
        head: PathBuf,
    },
    /// The control root has an earlier layout that `valp upgrade` converts.
    #[error(
        "{code}: {path}: this control root has layout_version {found}; this valp reads layout \
         {current}. Run `valp upgrade` (it keeps a full backup) before anything else",
        code = StoreCode::UpgradeRequired
    )]
    UpgradeRequired {
        /// `installation.json`.
        path: PathBuf,
        /// The layout found.
        found: i128,
        /// The layout this valp reads.
        current: i128,
    },
    /// The control root's layout version is unknown or not supported.
    #[error(
        "{code}: {path}: layout_version {found} is not supported (this valp reads layout \
         {current} and upgrades layouts 1, 2 and 3); use the valp that wrote it",
        code = StoreCode::MigrationUnsupported
    )]
    MigrationUnsupported {
        /// `installation.json`.
        path: PathBuf,
        /// The value found, as JSON text.
        found: String,
        /// The layout this valp reads.
        current: i128,
    },
    /// A task snapshot does not match its journal (see [`snapshot`](crate::snapshot)).
    #[error(
        "{code}: {path}: the snapshot of seq {seq} does not match its journal: {reason}; opens \
         do not use it (a writer replaces it)",
        code = StoreCode::SnapshotMismatch
    )]
    SnapshotMismatch {
        /// The snapshot file.
        path: PathBuf,
        /// The seq it names (from its file name).
        seq: u64,
        /// What does not match.
        reason: String,
    },
    /// Any other I/O failure.
    #[error("{code}: {path}: {operation}: {source}", code = StoreCode::Io)]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The cause.
        source: std::io::Error,
    },
    /// A request that cannot be served as asked (the message says why).
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    /// The failure code.
    pub fn code(&self) -> StoreCode {
        match self {
            Self::Corrupt { .. }
            | Self::BlobConflict { .. }
            | Self::HeadMismatch { .. }
            | Self::HeadMissing { .. } => StoreCode::Corrupt,
            Self::UpgradeRequired { .. } => StoreCode::UpgradeRequired,
            Self::MigrationUnsupported { .. } => StoreCode::MigrationUnsupported,
            Self::LockTimeout { .. } => StoreCode::LockTimeout,
            Self::LockUnavailable { .. } => StoreCode::LockUnavailable,
            Self::Precommit { .. } => StoreCode::DurabilityPrecommit,
            Self::UnknownOrCommitted { .. } | Self::Poisoned { .. } => {
                StoreCode::DurabilityUnknownOrCommitted
            }
            Self::Io { .. } | Self::Invalid(_) => StoreCode::Io,
            Self::DoneGate { .. } => StoreCode::DoneGate,
            Self::EpochFenced { .. } => StoreCode::EpochFenced,
            Self::SnapshotMismatch { .. } => StoreCode::SnapshotMismatch,
        }
    }

    /// An I/O error at `path`.
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        operation: &'static str,
        source: std::io::Error,
    ) -> Self {
        Self::Io {
            path: path.into(),
            operation,
            source,
        }
    }
}
