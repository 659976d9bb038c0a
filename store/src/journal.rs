//! A journal: the genesis and every accepted transition of one kernel state machine,
//! hash-chained. A task journal (`tasks/<task>/journal.jsonl`) replays the task kernel; the
//! installation ledger (`installation/journal.jsonl`) the authority lane (see
//! [`Machine`](crate::machine::Machine)). The machine's [`Guard`] adds the store's own rules
//! (for task journals the epoch fence on append, see [`fence`](crate::fence), and the Done gate
//! on append and open, see [`done`](crate::done)).
//!
//! **Format.** [`chain`](crate::chain) lines: line 0 carries the canonical genesis, line N ≥ 1
//! the canonical compact entry (Event, sorted EvidenceSet, the accepted Result without its
//! State) of revision N. Bytes per entry do not grow with the journal.
//!
//! **Open = verify.** Opening reads the journal's head anchor ([`head`](crate::head)) first,
//! then streams the file, checks every line's canonical bytes, sequence number and chained
//! digest, and re-runs the kernel over every entry ([`Replayer`]) and the guard over the entries
//! it judges; the State shown is the one replay rebuilt. With more than 1 MiB of lines to
//! read, a second thread reads, checks and decodes them ahead while the opening thread applies
//! them in order ([`read_ahead`]): the same lines, errors and stops as reading them in turn. A
//! verify (history forgotten) does so from 256 KiB and checks the entries' result and State
//! digests on two more threads, in batches any thread may run ([`digest_checks`]): the same
//! errors, the earliest first. The anchored line must be there with the anchored digest and
//! length: a journal without its head, shorter than it, or with another
//! line at its seq is refused ([`StoreError::HeadMismatch`]). A torn tail after the anchored
//! line (the remnant of an interrupted append: no LF, or NUL bytes, see
//! [`chain`](crate::chain)) is copied to `quarantine/` and truncated by a writer, with a
//! [`Warning`]; a reader leaves it alone (it may be an append in flight). Anything else that
//! does not verify refuses the journal with `VALP-E-KERNEL-STORE-CORRUPT`, naming file, line and
//! byte, and nothing is rewritten (`valp recover` is the way on, see
//! [`recover`](crate::recover)).
//!
//! **Append.** Take the lock, read and verify whatever other writers appended, run the kernel,
//! and only if it accepts: write one line and `sync_data` it, rewrite the head anchor (see
//! [`head`](crate::head)), then release the lock. A duplicate
//! (same event, same input) is answered with the earlier acceptance and writes nothing; every
//! refusal, including a stale expected revision (the compare-and-swap), is appended to
//! `rejections.jsonl` instead. After an I/O failure past the start of a write the handle refuses
//! further appends until the journal is reopened.

pub(crate) mod append;
mod append_pipelined;
mod digest_checks;
mod newest;
mod read_ahead;
pub(crate) mod recall;
mod rejections;
pub(crate) mod repair;
mod resume;

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use valp_kernel::decode::{DecodeError, EntrySpans, InputPrefix};
use valp_kernel::live::LiveState;
use valp_kernel::replay::ReplayError;

use crate::chain::{ChainLine, ChainReader};
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::StoreError;
use crate::files::write_atomically;
use crate::head::{self, Anchor, Head};
use crate::io::Storage;
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use crate::machine::{Guard, Machine, Refusal};

pub use append::Appended;
pub use append_pipelined::Proposal;
#[doc(hidden)]
pub use digest_checks::set_digest_checks_aside;
#[doc(hidden)]
pub use read_ahead::set_read_ahead_threshold;
pub use rejections::{REJECTION_SCHEMA, Rejection};
pub use resume::{LineBinding, ReadAfter, read_entries_after};

/// File names inside a task folder.
pub const JOURNAL_FILE: &str = "journal.jsonl";
/// The writers' lock file.
pub const LOCK_FILE: &str = "journal.lock";
/// Refused proposals.
pub const REJECTIONS_FILE: &str = "rejections.jsonl";

/// Whether a journal is opened to append to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read and follow; never changes the file (a torn tail is reported, not repaired).
    ReadOnly,
    /// Append; a torn tail left by a crashed writer is quarantined and truncated.
    Write,
}

/// Something the reader should know that did not stop the journal from opening.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A torn last line was copied to `quarantine` and cut off.
    TornTailRepaired {
        /// Where the torn bytes started.
        offset: u64,
        /// How many bytes were cut.
        len: u64,
        /// The quarantine copy.
        quarantined: PathBuf,
    },
    /// Bytes after the last complete line were left alone (an append may be in flight).
    IncompleteTail {
        /// Where they start.
        offset: u64,
        /// How many there are.
        len: u64,
    },
    /// An accepted entry is durable, but rewriting the head anchor after it failed: the anchor
    /// lags (as after a crash) until the next append rewrites it.
    HeadNotUpdated {
        /// The entry.
        seq: u64,
        /// Why.
        error: String,
    },
    /// A snapshot did not match its journal and was not used (see
    /// [`snapshot`](crate::snapshot)); the open replayed from an older one or the genesis.
    SnapshotRefused {
        /// The snapshot.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A snapshot could not be written; the next open replays more lines.
    SnapshotNotWritten {
        /// The line it was for.
        seq: u64,
        /// Why.
        error: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TornTailRepaired {
                offset,
                len,
                quarantined,
            } => write!(
                formatter,
                "torn last line ({len} bytes at byte {offset}) from an interrupted append was \
                 moved to {} and cut off",
                quarantined.display()
            ),
            Self::IncompleteTail { offset, len } => write!(
                formatter,
                "{len} bytes at byte {offset} do not form a complete line yet (an append in \
                 flight, or a torn tail a writer will repair)"
            ),
            Self::HeadNotUpdated { seq, error } => write!(
                formatter,
                "entry {seq} is durable but its head anchor was not rewritten ({error}); the \
                 next append rewrites it"
            ),
            Self::SnapshotRefused { path, reason } => write!(
                formatter,
                "snapshot {} was not used: {reason}",
                path.display()
            ),
            Self::SnapshotNotWritten { seq, error } => {
                write!(formatter, "no snapshot was written at entry {seq}: {error}")
            }
        }
    }
}

/// The position after the last verified line.
#[derive(Debug, Clone)]
pub(crate) struct Tip {
    /// Sequence number of the next line.
    pub(crate) next_seq: u64,
    /// `entry_digest` of the last line.
    pub(crate) digest: String,
    /// Byte offset after the last line.
    pub(crate) offset: u64,
    /// The last line's `recorded_at`.
    pub(crate) recorded_at: Option<Timestamp>,
}

/// Called with every line an open verifies, its decoded entry, and the machine and guard after
/// it (`valp verify` compares the snapshots with the States it rebuilds).
pub(crate) type OnLine<M> =
    Box<dyn FnMut(&ChainLine, &<M as Machine>::Entry, &M, &<M as Machine>::Guard) + Send + Sync>;

/// An [`OnLine`] callback, if any.
pub(crate) struct Watch<M: Machine> {
    on_line: Option<OnLine<M>>,
    /// The seqs of the lines at which `on_line` needs the State exactly as verified up to
    /// there (`valp verify`'s snapshot checks): digest checks left for later are run first.
    settled_at: BTreeSet<u64>,
}

impl<M: Machine> Watch<M> {
    /// No callback.
    pub(crate) fn none() -> Self {
        Self::each(None)
    }

    /// `on_line`, if any, called with every line.
    pub(crate) fn each(on_line: Option<OnLine<M>>) -> Self {
        Self {
            on_line,
            settled_at: BTreeSet::new(),
        }
    }

    /// This watch, given at the lines at `seqs` a State whose every check has run.
    pub(crate) fn settled_at(mut self, seqs: impl IntoIterator<Item = u64>) -> Self {
        self.settled_at.extend(seqs);
        self
    }
}

impl<M: Machine> std::fmt::Debug for Watch<M> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(if self.on_line.is_some() {
            "Watch(..)"
        } else {
            "Watch(None)"
        })
    }
}

/// One entry of a chained file as a reader gets it: its line, when the store wrote it, and its
/// payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded<T> {
    /// Its line's sequence number (for a journal: the revision the entry produced).
    pub seq: u64,
    /// When the store wrote the line; `None` for a line written before layout 3, shown as
    /// "unknown" ([`chain::shown`](crate::chain::shown)), never as a made-up time.
    pub recorded_at: Option<Timestamp>,
    /// The payload.
    pub entry: T,
}

/// How opening treats the head anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchoring {
    /// The journal must have its head and match it (layout 2 on).
    Required,
    /// A journal of layout 1, which has none yet: an existing head is still checked
    /// ([`upgrade`](crate::upgrade) may be re-run after a crash).
    Optional,
    /// Read as far as the lines verify, ignoring the head, and keep the first problem instead
    /// of failing ([`recover`](crate::recover)).
    Salvage,
}

/// Whether an open keeps the machine's accepted-event history in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum History {
    /// Kept (what the console reads).
    Kept,
    /// Only the lean idempotency index (`valp verify`: 16 bytes per entry instead of ~540; the
    /// digests of an event seen again are read back from the journal, see [`recall`]).
    Forgotten,
    /// Kept, replaying every line from the genesis whatever snapshots there are (`valp
    /// recover`'s plan judges the whole journal).
    KeptFromGenesis,
    /// [`History::Kept`] for a reader that shows the State at the tip (`valp task status`):
    /// from a snapshot with no line after it, the index file's keys are read but the file is
    /// checked against its digest only before a line is applied
    /// ([`snapshot_open`](crate::snapshot_open)'s deferred index).
    KeptIndexDeferred,
}

/// An open, verified journal; a task journal unless `M` says otherwise.
#[derive(Debug)]
pub struct Journal<M: Machine = LiveState> {
    dir: PathBuf,
    path: PathBuf,
    /// The head as read on open, then as written by this handle.
    anchor: Anchor,
    anchoring: Anchoring,
    /// With [`Anchoring::Salvage`]: the first problem found, where reading stopped.
    damage: Option<StoreError>,
    pub(crate) quarantine: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    genesis: M::Genesis,
    pub(crate) live: M,
    pub(crate) guard: M::Guard,
    pub(crate) tip: Tip,
    pub(crate) warnings: Vec<Warning>,
    pub(crate) access: Access,
    lock_timeout: Duration,
    /// Stamps each line this handle writes (`recorded_at`).
    clock: Arc<dyn Clock>,
    appender: Option<File>,
    pub(crate) poisoned: Option<String>,
    /// Snapshots (task journals opened with their head and history, see
    /// [`snapshot`](crate::snapshot)): whether they are used, the newest one's seq (0: none),
    /// and whether one was refused and is to be rebuilt.
    pub(crate) snapshots: Snapshots,
    watch: Watch<M>,
    /// A verify's open (history forgotten): the digests of lines read ahead are checked on
    /// other threads ([`digest_checks`]).
    checks_aside: bool,
}

/// A journal handle's use of snapshots.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshots {
    /// Opened from / takes snapshots.
    pub(crate) used: bool,
    /// Seq of the newest snapshot known to match (0: none).
    pub(crate) newest: u64,
    /// A snapshot was refused: write one at the next chance.
    pub(crate) rebuild: bool,
    /// A reader's open may defer checking the index file of a snapshot with no line after it
    /// ([`History::KeptIndexDeferred`]).
    pub(crate) defer_index: bool,
    /// The snapshot whose index file this handle read without checking it: checked (and the
    /// State rebuilt from it) before the first line is applied.
    pub(crate) unchecked: Option<PathBuf>,
    /// Snapshots refused by this open, moved to `quarantine/` by a writer once the open
    /// succeeded.
    pub(crate) refused: Vec<PathBuf>,
}

impl<M: Machine> Journal<M> {
    /// Opens and verifies the journal in `dir` with the machine's default guard (for a task
    /// journal: no epoch fence and a Done gate without an evidence store, which refuses every
    /// gated Done; a [`ControlRoot`](crate::ControlRoot) opens task journals with its ledger
    /// and its evidence store).
    /// `quarantine` receives torn tails (writers only).
    pub fn open(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        Self::open_guarded(dir, quarantine, storage, access, M::Guard::default())
    }

    /// Opens and verifies the journal in `dir`, enforcing `guard` (which must not have observed
    /// any entry yet).
    pub fn open_guarded(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
        guard: M::Guard,
    ) -> Result<Self, StoreError> {
        Self::open_anchored(dir, quarantine, storage, access, guard, Anchoring::Required)
    }

    /// [`Journal::open_guarded`] with the head anchor required or not.
    pub(crate) fn open_anchored(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
        guard: M::Guard,
        anchoring: Anchoring,
    ) -> Result<Self, StoreError> {
        Self::open_with(
            dir,
            quarantine,
            storage,
            access,
            anchoring,
            guard,
            History::Kept,
            Watch::none(),
        )
    }

    /// [`Journal::open_anchored`], keeping the machine's history in memory or not (a journal
    /// opened with its head and its history starts from its newest matching snapshot, see
    /// [`Machine::resume`]), calling `watch` with every line verified.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open_with(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
        anchoring: Anchoring,
        guard: M::Guard,
        history: History,
        watch: Watch<M>,
    ) -> Result<Self, StoreError> {
        let path = dir.join(JOURNAL_FILE);
        // The head first: it is only ever rewritten after the journal bytes it names are
        // there, so read before the journal it can never be ahead of what we read.
        let anchor = match anchoring {
            Anchoring::Salvage => Anchor::ignored(&path),
            Anchoring::Required => Anchor::read(&path, true)?,
            Anchoring::Optional => Anchor::read(&path, false)?,
        };
        let mut reader = ChainReader::open(&path)?;
        let (genesis_line, genesis) = read_genesis::<M>(&mut reader, &path)?;
        let mut live =
            M::start(&genesis).map_err(|error| replay_failure(&path, &genesis_line, &error))?;
        if history == History::Forgotten {
            live.forget_history(&path);
        }
        let mut journal = Self {
            dir: dir.to_owned(),
            quarantine: quarantine.to_owned(),
            storage,
            genesis,
            live,
            guard,
            tip: Tip {
                next_seq: 1,
                digest: genesis_line.digest.clone(),
                offset: genesis_line.end,
                recorded_at: genesis_line.recorded_at,
            },
            warnings: Vec::new(),
            access,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            clock: Arc::new(SystemClock),
            appender: None,
            poisoned: None,
            path,
            anchor,
            anchoring,
            damage: None,
            snapshots: Snapshots {
                used: anchoring == Anchoring::Required
                    && matches!(history, History::Kept | History::KeptIndexDeferred)
                    && watch.on_line.is_none(),
                defer_index: history == History::KeptIndexDeferred,
                ..Snapshots::default()
            },
            watch,
            checks_aside: history == History::Forgotten,
        };
        journal.anchor.check_line(&genesis_line)?;
        let reader = if M::resume(&mut journal)? {
            journal.reader()?
        } else {
            reader
        };
        journal.follow(reader, None)?;
        M::settled(&mut journal);
        Ok(journal)
    }

    /// Verifies one line against the head, the machine and the guard, and applies it (its
    /// digests left to `checks`, when given).
    fn apply_line(
        &mut self,
        line: &ChainLine,
        decoded: Option<&(M::Entry, EntrySpans)>,
        mut checks: Option<&mut digest_checks::Checks>,
    ) -> Result<(), StoreError> {
        if let Some(checks) = checks.as_deref_mut() {
            // A check that failed is of an earlier line: its error comes first.
            checks.poll()?;
        }
        self.anchor.check_line(line)?;
        M::before_apply(self)?;
        let spans = decoded.map(|(_, spans)| *spans);
        let parsed;
        let entry = if let Some((entry, _)) = decoded {
            entry
        } else {
            parsed = decoded_entry::<M>(&self.path, line, None)?;
            &parsed
        };
        let (event, evidence_set) = M::parts(entry);
        self.guard
            .verify(&self.live, event, evidence_set)
            .map_err(|refusal| guard_failure(&self.path, line, refusal))?;
        let prefix = spans.and_then(|spans| InputPrefix::of(line.entry_bytes(), &spans));
        let applied = match checks.as_deref_mut() {
            Some(checks) => {
                if checks.batch_full()
                    && let Some(chain) = self.live.digest_chain()
                {
                    checks.start_batch(chain);
                }
                let mut pending = checks.take();
                let applied = self
                    .live
                    .apply_recorded_deferring(entry, prefix, &mut pending.check);
                checks.queue(pending, line.seq, line.start);
                applied
            }
            None => self.live.apply_recorded(entry, prefix).map(drop),
        };
        applied.map_err(|error| replay_failure(&self.path, line, &error))?;
        self.guard.observe(line.seq, event, evidence_set);
        if let Some(watch) = &mut self.watch.on_line {
            if let Some(checks) = checks
                && self.watch.settled_at.contains(&line.seq)
            {
                checks.settle()?;
            }
            watch(line, entry, &self.live, &self.guard);
        }
        Ok(())
    }

    /// Verifies and applies the lines `lines` gives, in order, up to the end or the first
    /// error (where reading stops, see [`Journal::stop`]); with `checks`, their digests are
    /// checked aside, and every check has run (and passed) before this returns the end, and
    /// before an error, which is the earliest ([`digest_checks`]).
    fn apply_lines(
        &mut self,
        lines: &mut dyn read_ahead::Lines<M>,
        mut checks: Option<&mut digest_checks::Checks>,
    ) -> Read {
        let mut applied = 0;
        loop {
            let read = match lines.next_line() {
                Ok(Some(line)) => Ok(Some(line)),
                Ok(None) => checks
                    .as_deref_mut()
                    .map_or(Ok(()), digest_checks::Checks::settle)
                    .map(|()| None),
                Err(error) => Err(earliest(checks.as_deref_mut(), error)),
            };
            let (line, decoded) = match read {
                Ok(Some(line)) => line,
                Ok(None) => return Read::End(applied),
                Err(error) => return Read::Stopped(self.stop(error, applied)),
            };
            if let Err(error) = self.apply_line(line, decoded.as_ref(), checks.as_deref_mut()) {
                let error = earliest(checks.as_deref_mut(), error);
                // The State may be partly advanced: nothing may be appended through this
                // handle any more (a reopen re-reads the truth and refuses the damage).
                self.poisoned = Some(error.to_string());
                return Read::Stopped(self.stop(error, applied));
            }
            self.tip.next_seq = line.seq + 1;
            self.tip.digest.clone_from(&line.digest);
            self.tip.offset = line.end;
            self.tip.recorded_at = line.recorded_at;
            applied += 1;
        }
    }

    /// Reading stops at `error`: it is returned, or kept when salvaging.
    fn stop(&mut self, error: StoreError, applied: usize) -> Result<usize, StoreError> {
        if self.anchoring == Anchoring::Salvage {
            self.damage = Some(error);
            Ok(applied)
        } else {
            Err(error)
        }
    }

    /// With [`Anchoring::Salvage`]: where and why reading stopped before the end.
    pub(crate) fn damage(&self) -> Option<&StoreError> {
        self.damage.as_ref()
    }

    /// Reads and verifies lines appended since the last read (by this or another process).
    /// Returns how many new entries were applied. After an error (the file was damaged under
    /// us) the handle is poisoned: its State may be partly advanced, so appends are refused.
    pub fn refresh(&mut self) -> Result<usize, StoreError> {
        self.follow(self.reader()?, None)
    }

    /// A reader of the lines after the last verified one.
    pub(crate) fn reader(&self) -> Result<ChainReader, StoreError> {
        ChainReader::resume(
            &self.path,
            self.tip.offset,
            self.tip.next_seq,
            &self.tip.digest,
            self.tip.recorded_at.is_some(),
        )
    }

    /// Verifies and applies lines from `reader` to the end; deals with what follows them
    /// (repairing a torn tail when `lock` is held). Lines are read ahead on a second thread
    /// when enough are left ([`read_ahead`]); they are applied in the same order, with the same
    /// errors, either way.
    fn follow(
        &mut self,
        mut reader: ChainReader,
        lock: Option<&LockGuard>,
    ) -> Result<usize, StoreError> {
        let left = std::fs::metadata(&self.path)
            .map_or(0, |file| file.len().saturating_sub(reader.offset()));
        let aside = self.checks_aside && digest_checks::aside();
        let from = if aside {
            digest_checks::MIN_BYTES
        } else {
            read_ahead::MIN_BYTES
        };
        let (read, mut reader) = if read_ahead::pays(left, from) {
            let path = self.path.clone();
            let chain = aside.then(|| self.live.digest_chain()).flatten();
            read_ahead::read_ahead::<M, _>(&path, reader, |lines| match chain {
                Some(chain) => digest_checks::check_aside(&path, chain, |checks| {
                    self.apply_lines(lines, Some(checks))
                })
                .unwrap_or_else(|error| Read::Stopped(Err(error))),
                None => self.apply_lines(lines, None),
            })?
        } else {
            let read = self.apply_lines(&mut read_ahead::InTurn::new(&mut reader), None);
            (read, reader)
        };
        let mut applied = match read {
            Read::End(applied) => applied,
            Read::Stopped(result) => return result,
        };
        let tail = reader.tail()?;
        if let Err(error) = self
            .anchor
            .check_tail(self.tip.next_seq, self.tip.offset, &tail)
        {
            self.poisoned = Some(error.to_string());
            return Err(error);
        }
        let file = repair::ChainedFile {
            storage: Arc::clone(&self.storage),
            path: self.path.clone(),
            quarantine: self.quarantine.clone(),
        };
        if file.settle(tail, self.access, lock.is_some(), &mut self.warnings)? {
            // Repair only under the lock: the bytes may be another writer's append in progress.
            let lock = LockGuard::acquire(&self.dir.join(LOCK_FILE), self.lock_timeout)?;
            applied += self.follow(self.reader()?, Some(&lock))?;
        }
        Ok(applied)
    }

    /// The root the journal starts from.
    pub fn genesis(&self) -> &M::Genesis {
        &self.genesis
    }

    /// The verified current State.
    pub fn live(&self) -> &M {
        &self.live
    }

    /// The guard, as it stands after the verified entries (for a task journal: its Done gate
    /// holds the frozen Done policy and whether a Done was recorded without one).
    pub fn guard(&self) -> &M::Guard {
        &self.guard
    }

    /// The head anchor as read on open or last written by this handle (`None` only for a
    /// journal of layout 1 opened by [`upgrade`](crate::upgrade)).
    pub fn head(&self) -> Option<&Head> {
        self.anchor.head()
    }

    /// Takes the lock, catches up with what other writers appended (repairing a torn tail
    /// after the anchored line), and rewrites the head anchor at the verified tip, durably (the
    /// rename too). Needs a handle opened for writing.
    pub(crate) fn anchor_under_lock(&mut self) -> Result<(), StoreError> {
        let lock = LockGuard::acquire(&self.dir.join(LOCK_FILE), self.lock_timeout)?;
        self.follow(self.reader()?, Some(&lock))?;
        self.advance_anchor(true)
    }

    /// Rewrites the head anchor at the verified tip (the caller holds the lock).
    fn advance_anchor(&mut self, sync_dir: bool) -> Result<(), StoreError> {
        let Tip {
            next_seq,
            digest,
            offset,
            ..
        } = &self.tip;
        self.anchor.advance(
            self.storage.as_ref(),
            next_seq - 1,
            digest,
            *offset,
            sync_dir,
        )
    }

    /// Warnings raised while opening or following.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The task folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Number of entries (= the current revision).
    pub fn len(&self) -> u64 {
        self.tip.next_seq - 1
    }

    /// Whether the journal holds no entry yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Byte length of the verified part of the file.
    pub fn verified_bytes(&self) -> u64 {
        self.tip.offset
    }

    /// How long an append waits for the lock.
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        self.lock_timeout = timeout;
    }

    /// The clock that stamps the lines this handle appends (the system clock unless set; a
    /// [`ControlRoot`](crate::ControlRoot) gives its own).
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    /// When the store wrote the last verified line (`None`: before layout 3), for "last heard"
    /// ages; the time of every entry is read with [`read_entries`].
    pub fn last_recorded_at(&self) -> Option<Timestamp> {
        self.tip.recorded_at
    }

    /// The file opened for appending, taken out of the handle: put it back after a successful
    /// write (a failed one leaves the handle without it). A failure to open it poisons the
    /// handle.
    fn take_append_file(&mut self) -> Result<File, StoreError> {
        let file = match self.appender.take() {
            Some(file) => Ok(file),
            None => OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map_err(|source| StoreError::Precommit {
                    path: self.path.clone(),
                    operation: "open",
                    source,
                }),
        };
        if let Err(error) = &file {
            self.poisoned = Some(error.to_string());
        }
        file
    }
}

impl<M: Machine> Drop for Journal<M> {
    /// A writing handle of a task journal leaves a snapshot of where it got to (see
    /// [`Machine::closing`]).
    fn drop(&mut self) {
        M::closing(self);
    }
}

/// Creates the journal file `path` (`<folder>/journal.jsonl` for the machines' journals; any
/// `<stem>.jsonl` gets its head `<stem>.head` the same way) holding `lines` (complete, encoded
/// chain lines, the genesis line first) with its head anchor, under the journal lock the caller
/// holds. The head is written (durably) before the journal, so a crash in between leaves a head
/// without a journal, which nothing reads (a folder without the journal file holds no journal)
/// and the next creation replaces; never a journal without its head. Every journal of a control
/// root is created here. Refuses a path that already holds a journal.
pub fn create_journal(storage: &dyn Storage, path: &Path, lines: &[u8]) -> Result<(), StoreError> {
    if path.exists() {
        return Err(StoreError::Invalid(format!(
            "{} already holds a journal",
            path.display()
        )));
    }
    let head = head::of_lines(lines).ok_or_else(|| {
        StoreError::Invalid(format!(
            "{}: the lines to create it with do not end with a journal line",
            path.display()
        ))
    })?;
    head::write(storage, &head::head_path(path), &head, true)?;
    write_atomically(
        storage,
        path.parent().unwrap_or(Path::new(".")),
        path,
        lines,
    )
}

/// Reads and decodes line 0 (the genesis) of the journal file `path` of machine `M` from
/// `reader`, which has read nothing yet.
pub(crate) fn read_genesis<M: Machine>(
    reader: &mut ChainReader,
    path: &Path,
) -> Result<(ChainLine, M::Genesis), StoreError> {
    let line = reader.next_line()?.ok_or_else(|| StoreError::Corrupt {
        path: path.to_owned(),
        line: 1,
        byte: 0,
        reason: "the journal has no complete genesis line".to_owned(),
    })?;
    let genesis =
        M::decode_genesis(&line.entry()).map_err(|error| decode_failure(path, &line, &error))?;
    Ok((line, genesis))
}

/// Calls `each` with every entry (line 1 on) of the journal file `path` of machine `M`, in
/// order, with the time the store wrote it: the reader API for history (the console's activity
/// and ages). The lines are chain-verified and decoded, not replayed and not checked against the
/// head (opening the [`Journal`] does that); reading stops at a torn tail.
pub fn read_entries<M: Machine>(
    path: &Path,
    mut each: impl FnMut(Recorded<M::Entry>),
) -> Result<(), StoreError> {
    let mut reader = ChainReader::open(path)?;
    while let Some((line, decoded)) = next_decoded::<M>(&mut reader)? {
        if line.seq == 0 {
            continue;
        }
        let entry = decoded_entry::<M>(path, &line, decoded)?;
        each(Recorded {
            seq: line.seq,
            recorded_at: line.recorded_at,
            entry,
        });
    }
    Ok(())
}

/// How far [`Journal::apply_lines`] got.
enum Read {
    /// To the end of the verifiable lines, applying that many.
    End(usize),
    /// To an error: what [`Journal::follow`] returns.
    Stopped(Result<usize, StoreError>),
}

/// A verified line, with its entry (and where things are in its text) if the machine decoded it
/// in the pass that checked the line.
type Decoded<M> = (ChainLine, Option<(<M as Machine>::Entry, EntrySpans)>);

/// The next line, with its entry if the machine decoded it in the pass that checked the line.
fn next_decoded<M: Machine>(reader: &mut ChainReader) -> Result<Option<Decoded<M>>, StoreError> {
    let mut decoded = None;
    let line = reader.next_line_reading(&mut |text| {
        // Kept as the decoder gives it: a decoded entry is ~1 KB, each move a copy.
        decoded = M::decode_entry_prefix(text);
        decoded.as_ref().map(|(_, spans)| spans.len())
    })?;
    Ok(line.map(|line| (line, decoded)))
}

/// The line's entry: as decoded with the line, or decoded from its parsed payload (which names
/// what is wrong with it).
fn decoded_entry<M: Machine>(
    path: &Path,
    line: &ChainLine,
    decoded: Option<(M::Entry, EntrySpans)>,
) -> Result<M::Entry, StoreError> {
    match decoded {
        Some((entry, _)) => Ok(entry),
        None => M::decode_entry(&line.entry()).map_err(|error| decode_failure(path, line, &error)),
    }
}

fn decode_failure(path: &Path, line: &ChainLine, error: &DecodeError) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        line: line.seq + 1,
        byte: line.start,
        reason: format!("entry does not decode: {error}"),
    }
}

fn replay_failure(path: &Path, line: &ChainLine, error: &ReplayError) -> StoreError {
    replay_failure_at(path, line.seq, line.start, error)
}

/// `error`, or the earlier failure of a digest check queued before it ([`digest_checks`]).
fn earliest(checks: Option<&mut digest_checks::Checks>, error: StoreError) -> StoreError {
    match checks {
        Some(checks) => checks.earliest(error),
        None => error,
    }
}

/// [`replay_failure`] of the line at `seq`, whose first byte is at `start`.
fn replay_failure_at(path: &Path, seq: u64, start: u64, error: &ReplayError) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        line: seq + 1,
        byte: start,
        reason: format!("replay refuses the entry: {error}"),
    }
}

fn guard_failure(path: &Path, line: &ChainLine, refusal: Refusal) -> StoreError {
    match refusal {
        Refusal::DoneGate(reasons) => StoreError::Corrupt {
            path: path.to_owned(),
            line: line.seq + 1,
            byte: line.start,
            reason: format!(
                "done gate: the recorded recording_completed does not pass: {}",
                reasons.join("; ")
            ),
        },
        // Verification never checks the fence (history holds entries of epochs that were
        // active then); named for completeness.
        Refusal::EpochFenced {
            task_epoch,
            active_epoch,
        } => StoreError::Corrupt {
            path: path.to_owned(),
            line: line.seq + 1,
            byte: line.start,
            reason: format!(
                "epoch fence: the task is bound to Leader epoch {task_epoch}, the active epoch \
                 is {active_epoch}"
            ),
        },
        Refusal::Store(error) => error,
    }
}
