//! A task's effect ledger, `tasks/<task>/effect-ledger.jsonl`: how each `adapter_cancel:`
//! obligation the task journal raised was carried out, one record per obligation, append-only.
//!
//! **Format.** A chained file of [`chain`](crate::chain) lines (`valp-store-journal.v1`, the
//! task journal's line format), line `N` holding the `N + 1`-th record as its `entry`. The
//! record is `valp-kernel-effect-record.v1` byte for byte as layout 1 stored it alone on a line
//! of `effects.jsonl` (obligation, effect id, status `fulfilled` with a proof reference and
//! digest or `blocked` with a reason, its own `ledger_revision`/`prior_record_digest`/
//! `record_digest` chain), so converting a layout-1 ledger ([`convert_layout1`]) keeps every
//! record and its digest unchanged. Both chains are checked; the line's chain is the one the
//! store's torn-tail rule, quarantine and fault injection work on. There is no genesis line:
//! a missing file is the empty ledger, and each record names its task inside its obligation.
//!
//! **Head anchor.** Like a task journal, the ledger has a head anchor, `effect-ledger.head`
//! ([`head`](crate::head)): the seq, `entry_digest` and end of the last line known durable.
//! Open reads it first and checks it with [`Anchor`] exactly as a journal does: a ledger with
//! lines and no head ([`StoreError::HeadMissing`]), shorter than its head, or with another line
//! at the anchored seq ([`StoreError::HeadMismatch`]) is refused, so a ledger cut at a line
//! boundary or replaced by an older copy cannot make reconciliation carry a cancel out a second
//! time; bytes at or before the anchored line are never a torn tail. A missing or empty ledger
//! has no line to anchor; its head may name only the first line (the one window a crash can
//! leave: the first line's head is written before the file, see **Append**), and a head
//! naming a later one refuses it (the ledger was cut or removed).
//!
//! **Open = verify.** Every line is verified ([`ChainReader`]) and every record decoded
//! strictly (exact members, types, the status rules of `schemas/console/effect-record.schema.json`,
//! both chains, the effect id, at most one record per obligation); anything else refuses the
//! ledger with `VALP-E-KERNEL-STORE-CORRUPT`, file, line and byte, and nothing is rewritten. A
//! torn tail (bytes without a final LF, or NUL residue: the chain reader's rule, the same as
//! for task journals) is reported by readers and, under the lock, copied to `quarantine/` and
//! cut off by a writer. A complete line that fails its digest is damage, never quarantined.
//!
//! **Append** ([`EffectLedger::append`]): take the ledger's lock (`effect-ledger.lock`), read
//! and verify what other writers appended, and if the obligation has a record already answer
//! it ([`EffectAppended::AlreadyRecorded`]) without writing; else write one line and
//! `sync_data` it, then rewrite the head after it (a head that cannot be rewritten lags, with
//! [`Warning::HeadNotUpdated`], until the next append). The first line is created as a journal
//! is: its head durably first, then the file holding it atomically (with a folder sync). A
//! record is therefore
//! never duplicated, whatever the number of concurrent writers. A write that failed after it
//! began poisons the handle (`VALP-E-DURABILITY-UNKNOWN-OR-COMMITTED`) until it is reopened, as
//! for journals.
//!
//! **Layout 1.** A folder holding the layout-1 `effects.jsonl` and no ledger is refused until
//! [`convert_layout1`] (called by `valp upgrade`) has converted it: read as empty, it would have
//! every obligation carried out again.
//!
//! Which obligations exist is the task journal's business: [`obligations`] reads them from it
//! (chain-verified, not replayed), and [`verify_against`] checks that every record answers one.
//! Carrying an obligation out (asking an adapter) is the console's (`runtime::effects`).

mod layout1;
mod record;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use valp_kernel::reduce::ADAPTER_CANCEL_PREFIX;
use valp_kernel::replay::CompactEntry;

use crate::chain::{ChainLine, ChainReader, encode_line};
use crate::error::StoreError;
use crate::files::write_atomically;
use crate::head::{Anchor, Head};
use crate::io::Storage;
use crate::journal::append::ensure_writable;
use crate::journal::repair::ChainedFile;
use crate::journal::{Access, JOURNAL_FILE, Warning};
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use crate::root::ControlRoot;

pub use layout1::{Conversion, convert_layout1};
pub use record::{EFFECT_SCHEMA, EffectRecord, Outcome, effect_id, empty_ledger_digest};

/// The effect ledger in a task folder (layout 2).
pub const EFFECT_LEDGER_FILE: &str = "effect-ledger.jsonl";
/// Its writers' lock file (never renamed or deleted).
pub const EFFECT_LEDGER_LOCK: &str = "effect-ledger.lock";
/// The layout-1 effect ledger: one bare record per line, written outside the store.
pub const LAYOUT1_EFFECTS_FILE: &str = "effects.jsonl";

/// What [`EffectLedger::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectAppended {
    /// The record is durable.
    Recorded(EffectRecord),
    /// The obligation had a record already (perhaps another writer's); nothing was written.
    AlreadyRecorded(EffectRecord),
}

/// An open, verified effect ledger.
#[derive(Debug)]
pub struct EffectLedger {
    dir: PathBuf,
    /// The ledger file, its quarantine and storage.
    file: ChainedFile,
    /// Its head anchor, as read on open, then as written by this handle.
    anchor: Anchor,
    access: Access,
    records: Vec<EffectRecord>,
    /// Byte offset of each record's line.
    starts: Vec<u64>,
    /// Obligation → index in `records`.
    index: BTreeMap<String, usize>,
    /// `entry_digest` and end offset of the last verified line.
    tip: Option<(String, u64)>,
    warnings: Vec<Warning>,
    lock_timeout: Duration,
    poisoned: Option<String>,
}

impl EffectLedger {
    /// Opens and verifies the effect ledger of `task_id` in `root` (missing = empty).
    pub fn of_task(root: &ControlRoot, task_id: &str, access: Access) -> Result<Self, StoreError> {
        Self::open(
            &root.layout().task_dir(task_id),
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            access,
        )
    }

    /// Opens and verifies the effect ledger in the task folder `dir` (missing = empty). A
    /// writer repairs a torn tail under the lock, copying it to `quarantine`; a reader reports
    /// it. A folder holding a layout-1 `effects.jsonl` and no effect ledger is refused: its
    /// records are unknown to this ledger, and an empty one would have every obligation
    /// carried out again.
    pub fn open(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        let old = dir.join(LAYOUT1_EFFECTS_FILE);
        if old.exists() && !dir.join(EFFECT_LEDGER_FILE).exists() {
            return Err(StoreError::Invalid(format!(
                "{}: a layout-1 effect ledger that was not converted (`valp upgrade` converts \
                 it); valp neither reads it nor records effects beside it",
                old.display()
            )));
        }
        let path = dir.join(EFFECT_LEDGER_FILE);
        // Read (before the file) by the first `follow`.
        let anchor = Anchor::ignored(&path);
        let mut ledger = Self {
            dir: dir.to_owned(),
            file: ChainedFile {
                storage,
                path,
                quarantine: quarantine.to_owned(),
            },
            anchor,
            access,
            records: Vec::new(),
            starts: Vec::new(),
            index: BTreeMap::new(),
            tip: None,
            warnings: Vec::new(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            poisoned: None,
        };
        ledger.refresh()?;
        Ok(ledger)
    }

    /// Reads and verifies the records appended since the last read. Returns how many.
    pub fn refresh(&mut self) -> Result<usize, StoreError> {
        self.follow(None)
    }

    /// The verified records, in ledger order.
    pub fn records(&self) -> &[EffectRecord] {
        &self.records
    }

    /// The record of `obligation`, if it has one.
    pub fn record_of(&self, obligation: &str) -> Option<&EffectRecord> {
        self.index
            .get(obligation)
            .and_then(|&index| self.records.get(index))
    }

    /// Warnings raised while opening or following (a torn tail reported or repaired).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The head anchor as read on open or last written by this handle (`None`: the ledger
    /// has no line yet).
    pub fn head(&self) -> Option<&Head> {
        self.anchor.head()
    }

    /// Byte length of the verified part of the file.
    pub fn verified_bytes(&self) -> u64 {
        self.tip.as_ref().map_or(0, |(_, end)| *end)
    }

    /// How long an append waits for the lock.
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        self.lock_timeout = timeout;
    }

    fn lock(&self) -> Result<LockGuard, StoreError> {
        LockGuard::acquire(&self.dir.join(EFFECT_LEDGER_LOCK), self.lock_timeout)
    }

    /// Verifies the lines after the tip; deals with what follows them (repairing a torn tail
    /// only under `lock`, which a writer takes when it finds one).
    fn follow(&mut self, lock: Option<&LockGuard>) -> Result<usize, StoreError> {
        if self.tip.is_none() {
            // The head first: it is only ever rewritten after the lines it names are there, so
            // read before the ledger it can never be ahead of what we read. Until a line is
            // verified it is read again each time: another writer may have created the first
            // line since, replacing the head a crash left before a first line that never came.
            self.anchor = Anchor::read(&self.file.path, true)?;
        }
        let mut reader = match &self.tip {
            None if self.holds_no_byte()? => return self.check_empty().map(|()| 0),
            None => ChainReader::open(&self.file.path)?,
            Some((digest, end)) => {
                ChainReader::resume(&self.file.path, *end, self.records.len() as u64, digest)?
            }
        };
        let before = self.records.len();
        while let Some(line) = reader.next_line()? {
            self.anchor.check_line(&line)?;
            let record = self.verify_line(&line)?;
            self.index
                .insert(record.obligation.clone(), self.records.len());
            self.records.push(record);
            self.starts.push(line.start);
            self.tip = Some((line.digest, line.end));
        }
        let mut applied = self.records.len() - before;
        let tail = reader.tail()?;
        self.anchor
            .check_tail(self.records.len() as u64, self.verified_bytes(), &tail)?;
        if self
            .file
            .settle(tail, self.access, lock.is_some(), &mut self.warnings)?
        {
            applied += self.follow(Some(&self.lock()?))?;
        }
        Ok(applied)
    }

    /// Whether the ledger file is missing or empty.
    fn holds_no_byte(&self) -> Result<bool, StoreError> {
        match std::fs::metadata(&self.file.path) {
            Ok(metadata) => Ok(metadata.len() == 0),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(true),
            Err(source) => Err(StoreError::io(&self.file.path, "stat", source)),
        }
    }

    /// A missing or empty ledger holds no line. Its head may name the first line only: the
    /// first line is created with its head written first (see [`EffectLedger::append`]), so a
    /// crash in between leaves that head and no line, which no record was acknowledged under.
    /// A head naming a later line means the ledger was cut or removed: refused.
    fn check_empty(&self) -> Result<(), StoreError> {
        match self.anchor.head() {
            Some(head) if head.seq > 0 => self.anchor.check_end(0, 0, 0),
            _ => Ok(()),
        }
    }

    fn verify_line(&self, line: &ChainLine) -> Result<EffectRecord, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt {
            path: self.file.path.clone(),
            line: line.seq + 1,
            byte: line.start,
            reason,
        };
        let record = EffectRecord::decode(&line.entry)
            .map_err(|rule| corrupt(format!("not an effect record: {rule}")))?;
        record
            .check(self.records.last())
            .map_err(|rule| corrupt(format!("effect record: {rule}")))?;
        if let Some(earlier) = self.index.get(&record.obligation) {
            return Err(corrupt(format!(
                "the obligation already has a record (line {})",
                earlier + 1
            )));
        }
        Ok(record)
    }

    /// Records how `obligation` ended, once: see the module documentation.
    pub fn append(
        &mut self,
        obligation: &str,
        outcome: &Outcome,
    ) -> Result<EffectAppended, StoreError> {
        ensure_writable(&self.file.path, self.access, self.poisoned.as_deref())?;
        let lock = self.lock()?;
        self.anchor.check_not_shortened(
            self.verified_bytes(),
            self.records.len().saturating_sub(1) as u64,
        )?;
        self.follow(Some(&lock))?;
        if let Some(record) = self.record_of(obligation) {
            return Ok(EffectAppended::AlreadyRecorded(record.clone()));
        }
        let record = EffectRecord::new(obligation, outcome, self.records.last());
        record.check(self.records.last()).map_err(|rule| {
            StoreError::Invalid(format!(
                "{}: refused to record {obligation:?}: {rule}",
                self.file.path.display()
            ))
        })?;
        let seq = self.records.len() as u64;
        let prior = self.tip.as_ref().map(|(digest, _)| digest.as_str());
        let (line, digest) = encode_line(seq, prior, &record);
        if let Err(error) = self.write(seq, &line, &digest) {
            // Once the write began, what is on disk is unknown until the file is read again.
            if matches!(error, StoreError::UnknownOrCommitted { .. }) {
                self.poisoned = Some(error.to_string());
            }
            return Err(error);
        }
        let start = self.verified_bytes();
        self.tip = Some((digest, start + line.len() as u64));
        self.index
            .insert(record.obligation.clone(), self.records.len());
        self.records.push(record.clone());
        self.starts.push(start);
        drop(lock);
        Ok(EffectAppended::Recorded(record))
    }

    /// Appends and syncs one line, then rewrites the head after it (see
    /// [`Anchor::advance_after_append`]). The first line is created as a journal is: its head is
    /// written (durably) first, then the file holding the line (atomically, with a folder sync),
    /// so that no ledger line is ever without its head, and an acknowledged record cannot
    /// vanish with its file's name.
    fn write(&mut self, seq: u64, line: &[u8], digest: &str) -> Result<(), StoreError> {
        let storage = Arc::clone(&self.file.storage);
        let Some((_, start)) = &self.tip else {
            self.anchor
                .advance(storage.as_ref(), seq, digest, line.len() as u64, true)?;
            return write_atomically(storage.as_ref(), &self.dir, &self.file.path, line);
        };
        let end = start + line.len() as u64;
        let mut file = OpenOptions::new()
            .append(true)
            .open(&self.file.path)
            .map_err(|source| StoreError::Precommit {
                path: self.file.path.clone(),
                operation: "open",
                source,
            })?;
        crate::io::append_line(storage.as_ref(), &mut file, &self.file.path, seq, line)?;
        self.anchor
            .advance_after_append(storage.as_ref(), seq, digest, end, &mut self.warnings);
        Ok(())
    }
}

/// Calls `each` with every entry (revision 1 on) of the task journal in `task_dir`, in order.
/// The lines are chain-verified and decoded, not replayed (opening the journal replays it).
pub fn journal_entries(
    task_dir: &Path,
    mut each: impl FnMut(CompactEntry),
) -> Result<(), StoreError> {
    let path = task_dir.join(JOURNAL_FILE);
    let mut reader = ChainReader::open(&path)?;
    while let Some(line) = reader.next_line()? {
        if line.seq == 0 {
            continue;
        }
        let entry = valp_kernel::decode::decode_compact_entry(&line.entry).map_err(|error| {
            StoreError::Corrupt {
                path: path.clone(),
                line: line.seq + 1,
                byte: line.start,
                reason: format!("entry does not decode: {error}"),
            }
        })?;
        each(entry);
    }
    Ok(())
}

/// Every `adapter_cancel:` obligation the task journal in `task_dir` raised, in order.
pub fn obligations(task_dir: &Path) -> Result<Vec<String>, StoreError> {
    let mut found = Vec::new();
    journal_entries(task_dir, |entry| {
        found.extend(
            entry
                .result
                .obligations
                .into_iter()
                .filter(|obligation| obligation.starts_with(ADAPTER_CANCEL_PREFIX)),
        );
    })?;
    Ok(found)
}

/// Checks that every record of `ledger` answers an obligation of the task journal in its
/// folder: the first record that answers none is refused with its line and byte.
pub fn verify_against(ledger: &EffectLedger) -> Result<(), StoreError> {
    let raised: std::collections::BTreeSet<String> =
        obligations(&ledger.dir)?.into_iter().collect();
    match ledger
        .records
        .iter()
        .zip(&ledger.starts)
        .enumerate()
        .find(|(_, (record, _))| !raised.contains(&record.obligation))
    {
        None => Ok(()),
        Some((index, (_, &byte))) => Err(StoreError::Corrupt {
            path: ledger.file.path.clone(),
            line: index as u64 + 1,
            byte,
            reason: "the record answers no obligation of the task journal".to_owned(),
        }),
    }
}
