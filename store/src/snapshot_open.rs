//! Opening a task journal from its newest matching snapshot, and when snapshots are written
//! (the format is [`snapshot`](crate::snapshot)'s).
//!
//! **Open.** After line 0 is verified, the snapshots of the task folder are tried newest first.
//! One is used only if it decodes exactly, its digest and its index file's digest match, it is
//! not newer than the head anchor (and, at the head's seq, names the head's line), the line it
//! is bound to is in the journal, verifies as a chain line (canonical bytes, its own digest,
//! its seq) and has its `entry_digest` and end, and its State's revision is that seq. The
//! journal then continues from that line: every later line is verified and replayed as usual,
//! and the head is checked on the way. Anything else refuses the snapshot with its reason
//! ([`Warning::SnapshotRefused`]); a writer moves it to `quarantine/` and writes a new one after
//! the replay. A reader (which never writes a snapshot) keeps only the index's keys, 16 bytes
//! per entry: the digests of an event seen again are read back from the journal
//! ([`recall`](crate::journal::recall)), as for `valp verify`. A snapshot is never trusted beyond what these checks bind: `valp verify` replays
//! every journal from the genesis and compares each snapshot with the State it rebuilt.
//!
//! **A handle to show** ([`ControlRoot::open_task_to_show`](crate::ControlRoot::open_task_to_show),
//! `valp task status`) uses a snapshot with no line after it (the head names its seq and the
//! file ends at its line) with the index file's keys read but the file not yet checked against
//! its digest: what it shows is the snapshot's State, which the snapshot's own digest and its
//! binding cover, and the index serves only idempotency when a line is applied. Before the first
//! line is applied ([`check_deferred`]) the snapshot is loaded again with its index file checked
//! and the State rebuilt from it, or the handle stops with the mismatch; with lines after the
//! snapshot the file is checked at the open, as for any reader.
//!
//! **When one is written** (writers only, after the head names the line): after an append when
//! [`snapshot::due`] says so, after an open that replayed that many lines or refused a snapshot,
//! and when a writing handle is dropped with at least [`ON_CLOSE`] entries since the newest one
//! (bulk writers such as `valp demo` end with one); a pipelined append takes the State at a
//! batch's end when one is due there and its writer thread writes it once that batch is durable
//! and anchored ([`Pending`]). A snapshot that cannot be written is a
//! [`Warning::SnapshotNotWritten`], never a failed append. A writer that writes a snapshot
//! keeps from then on the lean idempotency index instead of the accepted-event history, as an
//! open from that snapshot would (`live().history()` is then empty; the few readers that need
//! the whole State open with [`ControlRoot::open_task_with_history`](crate::ControlRoot::open_task_with_history)).

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::decode_canonical;
use valp_kernel::live::{KEY_RECORD, LiveState};

use crate::chain::{ChainLine, ChainReader};
use crate::error::StoreError;
use crate::io::Storage;
use crate::journal::recall::JournalRecall;
use crate::journal::{Access, Journal, Tip, Warning};
use crate::snapshot::{self, Snapshot};

/// Entries since the newest snapshot for a closing writer to leave one.
pub const ON_CLOSE: u64 = 64;

/// [`Machine::resume`](crate::machine::Machine::resume) for task journals.
pub(crate) fn resume(journal: &mut Journal<LiveState>) -> Result<bool, StoreError> {
    if !journal.snapshots.used {
        return Ok(false);
    }
    let candidates = match snapshot::list(journal.dir()) {
        Ok(candidates) => candidates,
        Err(error) => {
            journal.warnings.push(Warning::SnapshotRefused {
                path: journal.dir().join(snapshot::SNAPSHOTS_DIR),
                reason: error.to_string(),
            });
            return Ok(false);
        }
    };
    for (_, path) in candidates {
        match usable(journal, &path) {
            Ok((snapshot, line, deferred)) => match start_from(journal, snapshot, &line) {
                Ok(()) => {
                    journal.snapshots.unchecked = deferred.then_some(path);
                    return Ok(true);
                }
                // Keys read unchecked may not even make an index (a file that would not have
                // had its digest): refused, as the check would have refused it.
                Err(error) if deferred => refuse(journal, path, error.to_string()),
                Err(error) => return Err(error),
            },
            Err(reason) => refuse(journal, path, reason),
        }
    }
    Ok(false)
}

/// The snapshot at `path`, its line, and whether its index file's check was deferred, if it
/// may be used for `journal`; why not otherwise.
fn usable(
    journal: &Journal<LiveState>,
    path: &Path,
) -> Result<(Snapshot, ChainLine, bool), String> {
    // A reader never writes a snapshot, so it need not hold the index's digests: 16 bytes per
    // entry instead of 80, an event seen again read back from the journal (`recall`). One
    // that defers the index file's check does so only when no line follows the snapshot.
    let (snapshot, deferred) = if journal.access == Access::Write {
        (snapshot::load(path)?, false)
    } else if journal.snapshots.defer_index {
        let unchecked = snapshot::load_keys_unchecked(path)?;
        if at_tip(journal, &unchecked) {
            (unchecked, true)
        } else {
            (snapshot::load_keys(path)?, false)
        }
    } else {
        (snapshot::load_keys(path)?, false)
    };
    check_binding(journal, &snapshot)?;
    let (line, _) = bound_line(journal.path(), snapshot.seq, snapshot.length)?;
    if line.digest != snapshot.entry_digest {
        return Err(format!(
            "it is bound to line {} (seq {}) with entry_digest {}, the journal's line there has \
             {}: bound to a different line",
            snapshot.seq + 1,
            snapshot.seq,
            snapshot.entry_digest,
            line.digest
        ));
    }
    if snapshot.parts.history_len != snapshot.seq
        || u64::try_from(snapshot.parts.body.revision).ok() != Some(snapshot.seq)
    {
        return Err(format!(
            "its State has revision {} and {} accepted events, its line is seq {}",
            snapshot.parts.body.revision, snapshot.parts.history_len, snapshot.seq
        ));
    }
    Ok((snapshot, line, deferred))
}

/// Whether `snapshot` is bound to the journal's last line: the head anchor names its seq and
/// the file ends where its line does (no line would be applied after it).
fn at_tip(journal: &Journal<LiveState>, snapshot: &Snapshot) -> bool {
    journal.head().is_some_and(|head| head.seq == snapshot.seq)
        && std::fs::metadata(journal.path()).is_ok_and(|meta| meta.len() == snapshot.length)
}

/// Before a line is applied to a handle that read its snapshot's index file unchecked
/// ([`History::KeptIndexDeferred`](crate::journal::History::KeptIndexDeferred)): loads the
/// snapshot again with the index file checked against its digest and rebuilds the State from
/// it (no line was applied since, so it is the same State), or refuses to go on. Nothing for
/// any other handle.
pub(crate) fn check_deferred(journal: &mut Journal<LiveState>) -> Result<(), StoreError> {
    let Some(path) = journal.snapshots.unchecked.take() else {
        return Ok(());
    };
    let seq = journal.len();
    let refused = |reason: String| StoreError::SnapshotMismatch {
        path: path.clone(),
        seq,
        reason: format!(
            "{reason}, found before a line was applied to a handle that read it unchecked"
        ),
    };
    let snapshot = snapshot::load_keys(&path).map_err(&refused)?;
    if snapshot.seq != seq || snapshot.entry_digest != journal.tip.digest {
        return Err(refused(format!(
            "it is bound to seq {}, the handle stands at seq {seq}",
            snapshot.seq
        )));
    }
    let recall = Arc::new(JournalRecall::new(journal.path().to_owned()));
    journal.live = LiveState::from_parts_recalling(snapshot.parts, recall)
        .map_err(|error| refused(format!("it does not rebuild: {error}")))?;
    Ok(())
}

/// Refuses a snapshot that is newer than the head anchor or names another line at its seq.
fn check_binding(journal: &Journal<LiveState>, snapshot: &Snapshot) -> Result<(), String> {
    if snapshot.seq == 0 {
        return Err("it is bound to the genesis line (seq 0)".to_owned());
    }
    let Some(head) = journal.head() else {
        return Err("the journal has no head anchor to check it against".to_owned());
    };
    if snapshot.seq > head.seq {
        return Err(format!(
            "it is bound to seq {}, newer than the head anchor (seq {})",
            snapshot.seq, head.seq
        ));
    }
    if snapshot.seq == head.seq
        && (snapshot.entry_digest != head.entry_digest || snapshot.length != head.length)
    {
        return Err(format!(
            "it is bound to seq {} with entry_digest {} ending at byte {}, the head anchor names \
             {} ending at byte {}: bound to a different line",
            snapshot.seq, snapshot.entry_digest, snapshot.length, head.entry_digest, head.length
        ));
    }
    Ok(())
}

/// The verified chain line `seq` of the journal at `path` that ends (LF included) at byte
/// `length`, and the `prior_entry_digest` it names: read back to the LF before it, verified as
/// a chain line chained to that prior digest.
pub(crate) fn bound_line(
    path: &Path,
    seq: u64,
    length: u64,
) -> Result<(ChainLine, String), String> {
    let not_there = |why: String| {
        format!(
            "it is bound to line {} (seq {seq}) ending at byte {length}, which is not there: {why}",
            seq + 1
        )
    };
    let mut file = std::fs::File::open(path).map_err(|error| not_there(error.to_string()))?;
    let size = file
        .metadata()
        .map_err(|error| not_there(error.to_string()))?
        .len();
    if length == 0 || length > size {
        return Err(not_there(format!("the journal is {size} bytes")));
    }
    let mut window = 4096_u64;
    let (start, bytes) = loop {
        let from = length.saturating_sub(window);
        let mut bytes = vec![0; usize::try_from(length - from).unwrap_or(0)];
        file.seek(SeekFrom::Start(from))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|error| not_there(error.to_string()))?;
        if bytes.last() != Some(&b'\n') {
            return Err(not_there("no line ends there".to_owned()));
        }
        let body = &bytes[..bytes.len() - 1];
        if let Some(at) = body.iter().rposition(|&byte| byte == b'\n') {
            break (from + at as u64 + 1, bytes[at + 1..].to_vec());
        }
        if from == 0 {
            break (0, bytes);
        }
        window = window.saturating_mul(4);
    };
    let prior = prior_named(&bytes)
        .ok_or_else(|| not_there("the bytes there are not a chain line".to_owned()))?;
    let mut reader = ChainReader::resume(path, start, seq, &prior, false)
        .map_err(|error| not_there(error.to_string()))?;
    match reader.next_line() {
        Ok(Some(line)) if line.end == length => Ok((line, prior)),
        Ok(_) => Err(not_there("no complete line ends there".to_owned())),
        Err(error) => Err(format!(
            "it is bound to line {} (seq {seq}), which does not verify there: {error}",
            seq + 1
        )),
    }
}

/// The `prior_entry_digest` the journal line `bytes` names (read, not verified: the caller
/// verifies the line chained to it); `None` when the bytes are not such a line.
pub(crate) fn prior_named(bytes: &[u8]) -> Option<String> {
    decode_canonical(bytes).ok().and_then(|value| {
        value
            .as_object()
            .and_then(|members| members.get("prior_entry_digest"))
            .and_then(|prior| prior.as_str().map(str::to_owned))
    })
}

/// Continues `journal` from `snapshot`, whose line is `line`.
fn start_from(
    journal: &mut Journal<LiveState>,
    snapshot: Snapshot,
    line: &ChainLine,
) -> Result<(), StoreError> {
    let guard = journal.guard.clone().restored(&snapshot.guard);
    let rebuilt = if journal.access == Access::Write {
        LiveState::from_parts(snapshot.parts)
    } else {
        let recall = Arc::new(JournalRecall::new(journal.path().to_owned()));
        LiveState::from_parts_recalling(snapshot.parts, recall)
    };
    let rebuilt = rebuilt
        .map_err(|error| StoreError::Invalid(format!("the snapshot does not rebuild: {error}")))?;
    journal.live = rebuilt;
    journal.guard = guard;
    journal.tip = Tip {
        next_seq: line.seq + 1,
        digest: line.digest.clone(),
        offset: line.end,
        recorded_at: line.recorded_at,
    };
    journal.snapshots.newest = line.seq;
    Ok(())
}

/// Notes a refused snapshot (a writer moves it away once the open succeeded, see [`settled`]).
fn refuse(journal: &mut Journal<LiveState>, path: PathBuf, reason: String) {
    if journal.access == Access::Write {
        journal.snapshots.rebuild = true;
        journal.snapshots.refused.push(path.clone());
    }
    journal
        .warnings
        .push(Warning::SnapshotRefused { path, reason });
}

/// Moves the snapshots a writer's open refused (and their index files) to `quarantine/`, as
/// `<folder>.<file>.refused`.
fn quarantine_refused(journal: &mut Journal<LiveState>) {
    let folder = journal
        .dir()
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    for path in std::mem::take(&mut journal.snapshots.refused) {
        for file in [path.clone(), snapshot::index_path(&path)] {
            if let Some(name) = file.file_name() {
                let target = journal
                    .quarantine
                    .join(format!("{folder}.{}.refused", name.to_string_lossy()));
                let _moved = std::fs::create_dir_all(&journal.quarantine)
                    .and_then(|()| std::fs::rename(&file, &target));
            }
        }
    }
}

/// [`Machine::settled`](crate::machine::Machine::settled) for task journals.
pub(crate) fn settled(journal: &mut Journal<LiveState>) {
    quarantine_refused(journal);
    let seq = journal.len();
    if journal.snapshots.rebuild || snapshot::due(journal.snapshots.newest, seq) {
        write_warned(journal);
    }
}

/// [`Machine::closing`](crate::machine::Machine::closing) for task journals.
pub(crate) fn closing(journal: &mut Journal<LiveState>) {
    if journal.len() >= journal.snapshots.newest + ON_CLOSE {
        write_warned(journal);
    }
}

fn write_warned(journal: &mut Journal<LiveState>) {
    if let Err(error) = write_now(journal) {
        let seq = journal.len();
        journal.warnings.push(Warning::SnapshotNotWritten {
            seq,
            error: error.to_string(),
        });
    }
}

/// Writes a snapshot at the verified tip of a writing handle that uses snapshots, if the head
/// anchor names that line or a later one (a snapshot is never ahead of the head). Returns its
/// path when one was written.
pub(crate) fn write_now(journal: &mut Journal<LiveState>) -> Result<Option<PathBuf>, StoreError> {
    let seq = journal.len();
    let anchored = journal.head().is_some_and(|head| head.seq >= seq);
    if !anchored {
        return Ok(None);
    }
    let Some(mut snapshot) = capture(journal, seq) else {
        return Ok(None);
    };
    snapshot.entry_digest.clone_from(&journal.tip.digest);
    snapshot.length = journal.tip.offset;
    let path = snapshot::write(journal.storage.as_ref(), journal.dir(), &snapshot)?;
    journal.snapshots.newest = seq;
    journal.snapshots.rebuild = false;
    Ok(Some(path))
}

/// The snapshot of a writing handle that uses snapshots, at its State's revision `seq`, not yet
/// bound to its line (`entry_digest` and `length` are left empty); `None` when none may be
/// written.
fn capture(journal: &mut Journal<LiveState>, seq: u64) -> Option<Snapshot> {
    if !journal.snapshots.used
        || journal.access != Access::Write
        || journal.poisoned.is_some()
        || seq == 0
    {
        return None;
    }
    // From here on the handle holds what an open from this snapshot would: the lean index
    // (with the digests) instead of the history. Then each later snapshot copies the index
    // instead of re-indexing the whole history (which cost a bulk writer more than the
    // kernel's own work per entry, issue 20); `forget_history` keeps the history when it
    // cannot be held exactly, and `to_parts` then declines as before.
    if journal.live.keeps_history() {
        journal.live.forget_history();
    }
    Some(Snapshot {
        seq,
        entry_digest: String::new(),
        length: 0,
        parts: journal.live().to_parts()?,
        guard: journal.guard().done().parts(),
    })
}

/// A snapshot of a writing handle's State at `seq` taken before the line at `seq` is durable
/// (by a pipelined append, see [`Journal::append_pipelined`]), to be written by
/// [`Pending::write`] once that line is durable and the head names it.
pub(crate) struct Pending {
    snapshot: Snapshot,
    storage: Arc<dyn Storage>,
    dir: PathBuf,
}

/// A [`Pending`] snapshot at `seq` (the handle's State's revision) when one is due there, as
/// [`settled`] would write it; counted as the newest from now on (a failed write sets
/// `snapshots.rebuild`, see [`Journal::append_pipelined`]).
pub(crate) fn take_due(journal: &mut Journal<LiveState>, seq: u64) -> Option<Pending> {
    if !journal.snapshots.rebuild && !snapshot::due(journal.snapshots.newest, seq) {
        return None;
    }
    let snapshot = capture(journal, seq)?;
    journal.snapshots.newest = seq;
    journal.snapshots.rebuild = false;
    Some(Pending {
        snapshot,
        storage: Arc::clone(&journal.storage),
        dir: journal.dir().to_owned(),
    })
}

impl Pending {
    /// The line it is for.
    pub(crate) fn seq(&self) -> u64 {
        self.snapshot.seq
    }

    /// The State it holds, for a pipelined append to pay the digests it owed there.
    pub(crate) fn parts_mut(&mut self) -> &mut valp_kernel::live::LiveParts {
        &mut self.snapshot.parts
    }

    /// Writes it bound to its line: the line's `entry_digest` and the journal's length through
    /// it.
    pub(crate) fn write(mut self, entry_digest: &str, length: u64) -> Result<PathBuf, StoreError> {
        entry_digest.clone_into(&mut self.snapshot.entry_digest);
        self.snapshot.length = length;
        snapshot::write(self.storage.as_ref(), &self.dir, &self.snapshot)
    }
}

impl Journal<LiveState> {
    /// The latest entry for which `wanted` holds, read backwards from the verified tip (each
    /// line verified by its own digest and chained to the one after it, so a journal opened
    /// from a snapshot answers what its history would, reading only back to that entry);
    /// `None` when no entry does. What the runtime asks of the history (the revision its
    /// verification round started at) instead of keeping it.
    pub fn latest_entry(
        &self,
        mut wanted: impl FnMut(&valp_kernel::replay::CompactEntry) -> bool,
    ) -> Result<Option<crate::journal::Recorded<valp_kernel::replay::CompactEntry>>, StoreError>
    {
        let (mut seq, mut end, mut digest) = (self.len(), self.tip.offset, self.tip.digest.clone());
        while seq >= 1 {
            let corrupt = |reason: String| StoreError::Corrupt {
                path: self.path().to_owned(),
                line: seq + 1,
                byte: end,
                reason,
            };
            let (line, prior) = bound_line(self.path(), seq, end).map_err(corrupt)?;
            if line.digest != digest {
                return Err(corrupt(format!(
                    "entry_digest {} is not the {digest} the next line chains to: changed \
                     under an open handle",
                    line.digest
                )));
            }
            let entry = valp_kernel::decode::decode_compact_entry(&line.entry())
                .map_err(|error| corrupt(format!("entry does not decode: {error}")))?;
            if wanted(&entry) {
                return Ok(Some(crate::journal::Recorded {
                    seq,
                    recorded_at: line.recorded_at,
                    entry,
                }));
            }
            (seq, end, digest) = (seq - 1, line.start, prior);
        }
        Ok(None)
    }

    /// Writes a snapshot at the verified tip now (see [`snapshot`](crate::snapshot)): a writing
    /// handle whose head names its last line; `Ok(None)` when none may be written.
    pub fn write_snapshot(&mut self) -> Result<Option<PathBuf>, StoreError> {
        write_now(self)
    }
}

/// What `valp verify` found of one snapshot: its file, the seq its name gives, the problem, and
/// a warning (a snapshot of a journal that does not verify is not checked, and not a second
/// problem).
pub(crate) type SnapshotCheck = (PathBuf, u64, Option<StoreError>, Option<String>);

/// The snapshots of a task folder read on a thread of their own while the replay runs
/// (`snapshot-read`), so that where the replay reaches a snapshot's line, on the applying
/// thread and after the digest checks were settled there (serial time: at the last line of a
/// journal nothing else is left to run), only the comparison is left. Reading one here or at
/// its line gives the same snapshot or the same reason ([`snapshot::read_for_check`]).
struct ReadAhead {
    reading: Option<std::thread::JoinHandle<Vec<ReadSnapshot>>>,
    read: Vec<ReadSnapshot>,
    limit: u64,
}

/// A snapshot's file and what reading it for its check gave.
type ReadSnapshot = (PathBuf, Result<snapshot::ForCheck, String>);

impl ReadAhead {
    /// Starts reading `listed` (with their index files shorter than `limit` bytes); nothing
    /// is read ahead when no index file is that short (a few KB of JSON read ahead do not pay
    /// for a thread) or no thread can be started.
    fn start(listed: &[(u64, PathBuf)], limit: u64) -> Self {
        let pays = listed.iter().any(|(_, path)| {
            std::fs::metadata(snapshot::index_path(path)).is_ok_and(|meta| meta.len() < limit)
        });
        let paths: Vec<PathBuf> = listed.iter().map(|(_, path)| path.clone()).collect();
        let reading = pays
            .then(|| {
                std::thread::Builder::new()
                    .name("snapshot-read".to_owned())
                    .spawn(move || {
                        paths
                            .into_iter()
                            .map(|path| {
                                let read = snapshot::read_for_check(&path, limit);
                                (path, read)
                            })
                            .collect()
                    })
                    .ok()
            })
            .flatten();
        Self {
            reading,
            read: Vec::new(),
            limit,
        }
    }

    /// The snapshot at `path`, read ahead (waiting for the thread if it is not done) or, when
    /// it was not (no thread was started, or it panicked), read now.
    fn take(&mut self, path: &Path) -> Result<snapshot::ForCheck, String> {
        if let Some(reading) = self.reading.take() {
            self.read = reading.join().unwrap_or_default();
        }
        match self.read.iter().position(|(read, _)| read == path) {
            Some(at) => self.read.swap_remove(at).1,
            None => snapshot::read_for_check(path, self.limit),
        }
    }
}

impl Drop for ReadAhead {
    /// A journal that stops before a snapshot's line leaves it unused: the thread is not left
    /// reading after the verify.
    fn drop(&mut self) {
        if let Some(reading) = self.reading.take() {
            let _unused = reading.join();
        }
    }
}

/// Verifies the task journal in `dir` from the genesis (as
/// [`ControlRoot::verify_task_dir`](crate::ControlRoot::verify_task_dir)) and compares every
/// snapshot of the folder with the State the replay rebuilt at its line, each read ahead
/// ([`ReadAhead`]) and compared when its line is reached.
pub(crate) fn verify_with_snapshots(
    root: &crate::ControlRoot,
    dir: &Path,
    mut observer: Option<crate::verify::LineObserver>,
) -> (Result<Journal<LiveState>, StoreError>, Vec<SnapshotCheck>) {
    let listed = match snapshot::list(dir) {
        Ok(listed) => listed,
        Err(error) => {
            let folder = dir.join(snapshot::SNAPSHOTS_DIR);
            let watch = observer.map(|mut observe| -> crate::journal::OnLine<LiveState> {
                Box::new(move |line, entry, _, _| observe(line, entry))
            });
            return (
                root.verify_task_dir_watched(dir, crate::journal::Watch::each(watch)),
                vec![(folder, 0, Some(error), None)],
            );
        }
    };
    let results = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let pending = listed.clone();
    let found = std::sync::Arc::clone(&results);
    // The verify's index recalls digests from the journal instead of holding them: the
    // snapshot's digest records are checked against a hash of every line's digests instead.
    let mut digests = DigestRecords::default();
    let mut ahead = ReadAhead::start(&listed, snapshot::read_ahead_limit());
    let watch: crate::journal::OnLine<LiveState> = Box::new(move |line, entry, live, guard| {
        digests.add(entry);
        if let Some(observe) = &mut observer {
            observe(line, entry);
        }
        for (seq, path) in &pending {
            if *seq != line.seq {
                continue;
            }
            // The snapshot's key records are compared with the replay's (as its index file is
            // read, unless it was short enough to be read ahead: no second copy of a large
            // index is held) and its digest records hashed, as the replay's were from its
            // lines.
            let outcome = check_snapshot(ahead.take(path), line, live, guard, &digests);
            if let Ok(mut found) = found.lock() {
                found.push((path.clone(), *seq, outcome));
            }
        }
    });
    let settled_at = listed.iter().map(|(seq, _)| *seq).collect::<Vec<_>>();
    let journal = root.verify_task_dir_watched(
        dir,
        crate::journal::Watch::each(Some(watch)).settled_at(settled_at),
    );
    let checked: Vec<(PathBuf, u64, Option<String>)> = results
        .lock()
        .map(|found| found.clone())
        .unwrap_or_default();
    let refused = journal.is_err();
    let checks = listed
        .into_iter()
        .map(|(seq, path)| {
            let reason = match checked.iter().find(|(done, ..)| *done == path) {
                Some((_, _, outcome)) => outcome.clone(),
                None if refused => {
                    let warning = "not checked: its journal does not verify".to_owned();
                    return (path, seq, None, Some(warning));
                }
                None => Some(format!(
                    "it is bound to line {} (seq {seq}), which the verified journal does not \
                     reach",
                    seq + 1
                )),
            };
            let problem = reason.map(|reason| StoreError::SnapshotMismatch {
                path: path.clone(),
                seq,
                reason,
            });
            (path, seq, problem, None)
        })
        .collect();
    (journal, checks)
}

/// Why the snapshot `read` is not what the replay rebuilt at `line` (`live`, `guard`, and the
/// digest records of the lines so far); `None` when it is.
fn check_snapshot(
    read: Result<snapshot::ForCheck, String>,
    line: &ChainLine,
    state: &LiveState,
    guard: &crate::machine::TaskGuard,
    digests: &DigestRecords,
) -> Option<String> {
    let rebuilt = Snapshot {
        seq: line.seq,
        entry_digest: line.digest.clone(),
        length: line.end,
        parts: state.parts_but_index(),
        guard: guard.done().parts(),
    };
    // The replay's key records one at a time (a verify's index is lean; a kept history
    // builds it once, as `to_parts` would).
    let built;
    let mut keys: Box<dyn Iterator<Item = [u8; KEY_RECORD]> + '_> =
        if let Some(records) = state.index_key_records() {
            Box::new(records)
        } else {
            let Some(parts) = state.to_parts() else {
                return Some("the rebuilt State cannot be taken apart".to_owned());
            };
            built = parts.index.keys;
            Box::new(
                built
                    .chunks_exact(KEY_RECORD)
                    .filter_map(|record| record.try_into().ok()),
            )
        };
    match read.and_then(|read| read.check(&mut keys)) {
        Err(reason) => Some(reason),
        Ok((snapshot, seen)) => {
            let index_matches = seen.keys_match && digests.matches(seen.digest_records);
            (rebuilt != snapshot || !index_matches)
                .then(|| difference(&snapshot, &rebuilt, index_matches))
        }
    }
}

/// The raw input and result digests of every entry a verify has read, hashed in order (what a
/// snapshot's digest records must be).
#[derive(Default)]
struct DigestRecords {
    hasher: sha2::Sha256,
    count: usize,
}

impl DigestRecords {
    fn add(&mut self, entry: &valp_kernel::replay::CompactEntry) {
        use sha2::Digest as _;
        // Recorded digests of verified entries, so well-formed (nothing is hashed otherwise).
        for digest in [&entry.result.input_digest, &entry.result.result_digest] {
            if let Some(raw) = valp_kernel::canonical::raw_digest(digest) {
                self.hasher.update(raw);
            }
        }
        self.count += 1;
    }

    /// Whether the digest records `seen` in a snapshot's index file (64 bytes per entry) are
    /// the digests read so far.
    fn matches(&self, seen: snapshot::DigestRecordsSeen) -> bool {
        use sha2::Digest as _;
        u64::try_from(self.count).is_ok_and(|count| seen.len == count * 64)
            && self.hasher.clone().finalize()[..] == seen.sha256[..]
    }
}

/// Which part of a snapshot differs from the State rebuilt at its line (`index_matches`: its
/// idempotency index, compared as it was read).
fn difference(snapshot: &Snapshot, rebuilt: &Snapshot, index_matches: bool) -> String {
    let part = if snapshot.entry_digest != rebuilt.entry_digest || snapshot.length != rebuilt.length
    {
        "its line (entry_digest or length)"
    } else if snapshot.parts.body != rebuilt.parts.body {
        "the State"
    } else if snapshot.parts.midstate != rebuilt.parts.midstate
        || snapshot.parts.history_len != rebuilt.parts.history_len
        || snapshot.parts.well_formed != rebuilt.parts.well_formed
    {
        "the history (midstate, count or well_formed)"
    } else if snapshot.parts.index != rebuilt.parts.index || !index_matches {
        "the idempotency index"
    } else {
        "the Done gate's state"
    };
    format!("{part} differs from what the replay from the genesis rebuilt at that line")
}
