//! A ledger: a task folder's chained file of records that no kernel replays (the effect ledger
//! `effect-ledger.jsonl`, see [`effects`](crate::effects); the operator-action journal
//! `actions.jsonl`, see [`actions`](crate::actions)). What the records mean is the record
//! type's ([`LedgerRecord`]); everything about the file is here, once:
//!
//! - **Format.** [`chain`](crate::chain) lines, line `N` holding the `N + 1`-th record as its
//!   `entry`, each with its `recorded_at`. No genesis line: a missing file is the empty ledger.
//! - **Head anchor** (`<stem>.head`, [`head`](crate::head)), read before the file and checked
//!   with [`Anchor`] as a journal's: lines without a head, a file shorter than its head or with
//!   another line at the anchored seq are refused. A missing or empty file has no line to
//!   anchor; its head may name only the first line (the first line is created with its head
//!   written first), and a head naming a later one refuses it.
//! - **Open = verify.** Every line is chain-verified, decoded strictly and checked against the
//!   records before it ([`LedgerRecord::check`]), and at most one record has a key
//!   ([`LedgerRecord::key`]); anything else refuses the ledger with
//!   `VALP-E-KERNEL-STORE-CORRUPT`, file, line and byte. A torn tail (the chain reader's rule,
//!   the same as a journal's) is reported by a reader and, under the lock, copied to
//!   `quarantine/` and cut off by a writer; nothing else is ever rewritten.
//! - **Append** ([`Ledger::append`]): under the ledger's lock, catch up with what other writers
//!   appended, let the caller decide on the records as they now stand (write a record, or
//!   answer with one already there), write one line and `sync_data` it, then rewrite the head
//!   (a head that cannot be rewritten lags, with [`Warning::HeadNotUpdated`]). The first line is
//!   created as a journal is: head durably first, then the file atomically. A write that failed
//!   after it began poisons the handle until it is reopened.
//! - **Salvage** (for `valp recover`): read as far as the lines verify, ignoring the head, and
//!   keep the first problem instead of failing.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use valp_kernel::canonical::Canonical;
use valp_kernel::json::Value;

use crate::chain::{ChainLine, ChainReader, encode_line};
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::error::StoreError;
use crate::files::write_atomically;
use crate::head::{Anchor, Head};
use crate::io::Storage;
use crate::journal::append::ensure_writable;
use crate::journal::repair::ChainedFile;
use crate::journal::{Access, Recorded, Warning};
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};

/// A record type of a ledger.
pub trait LedgerRecord: Canonical + Clone + std::fmt::Debug {
    /// What a record is called in refusals (`effect record`).
    const NOUN: &'static str;
    /// What its key is called in refusals (`obligation`).
    const KEY: &'static str;
    /// Decodes a line's payload strictly; the rule broken otherwise.
    fn decode(value: &Value) -> Result<Self, String>;
    /// Its key: a ledger holds at most one record per key.
    fn key(&self) -> &str;
    /// The rules it must satisfy after `earlier` (the ledger's verified records); the rule
    /// broken otherwise.
    fn check(&self, earlier: &Records<Self>) -> Result<(), String>;
}

/// A ledger's verified records, in order, with where and when each was written.
#[derive(Debug, Clone)]
pub struct Records<R> {
    entries: Vec<R>,
    /// Byte offset of each record's line.
    starts: Vec<u64>,
    /// Each record's `recorded_at`.
    times: Vec<Option<Timestamp>>,
    /// Key → index.
    index: BTreeMap<String, usize>,
}

impl<R> Default for Records<R> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            starts: Vec::new(),
            times: Vec::new(),
            index: BTreeMap::new(),
        }
    }
}

impl<R: LedgerRecord> Records<R> {
    /// The records, in ledger order.
    pub fn all(&self) -> &[R] {
        &self.entries
    }

    /// The record with `key`, and its index.
    pub fn get(&self, key: &str) -> Option<(usize, &R)> {
        let index = *self.index.get(key)?;
        Some((index, self.entries.get(index)?))
    }

    /// Record `index` with its line and time.
    pub fn recorded(&self, index: usize) -> Option<Recorded<&R>> {
        Some(Recorded {
            seq: index as u64,
            recorded_at: *self.times.get(index)?,
            entry: self.entries.get(index)?,
        })
    }

    /// Byte offset of record `index`'s line.
    pub fn start(&self, index: usize) -> Option<u64> {
        self.starts.get(index).copied()
    }

    fn push(&mut self, record: R, start: u64, recorded_at: Option<Timestamp>) {
        self.index
            .insert(record.key().to_owned(), self.entries.len());
        self.entries.push(record);
        self.starts.push(start);
        self.times.push(recorded_at);
    }

    /// The ledger's rules for `record` after these records: its key is new, then the record's
    /// own ([`LedgerRecord::check`], whose rule is named after the record's noun).
    fn check(&self, record: &R) -> Result<(), String> {
        if let Some((earlier, _)) = self.get(record.key()) {
            return Err(format!(
                "the {} already has a record (line {})",
                R::KEY,
                earlier + 1
            ));
        }
        record
            .check(self)
            .map_err(|rule| format!("{}: {rule}", R::NOUN))
    }
}

/// What the caller of [`Ledger::append`] decided, seeing the records as they stand under the
/// lock.
#[derive(Debug)]
pub enum Decision<R> {
    /// Write this record.
    Write(R),
    /// Write nothing; answer with this record (already there).
    Existing(R),
}

/// An open, verified ledger of `R` records.
#[derive(Debug)]
pub struct Ledger<R> {
    dir: PathBuf,
    lock_file: PathBuf,
    /// The file, its quarantine and storage.
    file: ChainedFile,
    /// Its head anchor, as read on open, then as written by this handle.
    anchor: Anchor,
    access: Access,
    /// Read as far as the lines verify, ignoring the head ([`Ledger::salvage`]).
    salvage: bool,
    damage: Option<StoreError>,
    records: Records<R>,
    /// `entry_digest`, end offset and `recorded_at` of the last verified line.
    tip: Option<(String, u64, Option<Timestamp>)>,
    warnings: Vec<Warning>,
    lock_timeout: Duration,
    clock: Arc<dyn Clock>,
    poisoned: Option<String>,
}

impl<R: LedgerRecord> Ledger<R> {
    /// Opens and verifies the ledger file `file` in the task folder `dir` (missing = empty),
    /// whose writers lock `lock_file` (see the module documentation). A writer repairs a torn
    /// tail under the lock, copying it to `quarantine`; a reader reports it.
    pub fn open(
        file: &Path,
        lock_file: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        let mut ledger = Self::unread(file, lock_file, quarantine, storage, access, false);
        ledger.refresh()?;
        Ok(ledger)
    }

    /// Reads the ledger file as far as its lines verify, ignoring its head, and keeps the first
    /// problem ([`Ledger::damage`]) instead of failing (for `valp recover`; read-only).
    pub fn salvage(
        file: &Path,
        lock_file: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
    ) -> Result<Self, StoreError> {
        let mut ledger = Self::unread(file, lock_file, quarantine, storage, Access::ReadOnly, true);
        if let Err(error) = ledger.refresh() {
            ledger.damage = Some(error);
        }
        Ok(ledger)
    }

    fn unread(
        file: &Path,
        lock_file: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
        salvage: bool,
    ) -> Self {
        Self {
            dir: file.parent().unwrap_or(Path::new(".")).to_owned(),
            lock_file: lock_file.to_owned(),
            file: ChainedFile {
                storage,
                path: file.to_owned(),
                quarantine: quarantine.to_owned(),
            },
            // Read (before the file) by the first `follow`.
            anchor: Anchor::ignored(file),
            access,
            salvage,
            damage: None,
            records: Records::default(),
            tip: None,
            warnings: Vec::new(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            clock: Arc::new(SystemClock),
            poisoned: None,
        }
    }

    /// Reads and verifies the records appended since the last read. Returns how many.
    pub fn refresh(&mut self) -> Result<usize, StoreError> {
        self.follow(None)
    }

    /// The verified records.
    pub fn records(&self) -> &Records<R> {
        &self.records
    }

    /// Warnings raised while opening or following (a torn tail reported or repaired, a head
    /// not rewritten).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The head anchor as read on open or last written by this handle (`None`: no line yet).
    pub fn head(&self) -> Option<&Head> {
        self.anchor.head()
    }

    /// Byte length of the verified part of the file.
    pub fn verified_bytes(&self) -> u64 {
        self.tip.as_ref().map_or(0, |(_, end, _)| *end)
    }

    /// With [`Ledger::salvage`]: where and why reading stopped before the end.
    pub fn damage(&self) -> Option<&StoreError> {
        self.damage.as_ref()
    }

    /// How long an append waits for the lock.
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        self.lock_timeout = timeout;
    }

    /// The clock that stamps the lines this handle appends.
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.clock = clock;
    }

    fn lock(&self) -> Result<LockGuard, StoreError> {
        LockGuard::acquire(&self.lock_file, self.lock_timeout)
    }

    /// Verifies the lines after the tip; deals with what follows them (repairing a torn tail
    /// only under `lock`, which a writer takes when it finds one).
    fn follow(&mut self, lock: Option<&LockGuard>) -> Result<usize, StoreError> {
        if self.tip.is_none() && !self.salvage {
            // The head first: it is only ever rewritten after the lines it names are there, so
            // read before the ledger it can never be ahead of what we read. Until a line is
            // verified it is read again each time: another writer may have created the first
            // line since, replacing the head a crash left before a first line that never came.
            self.anchor = Anchor::read(&self.file.path, true)?;
        }
        let mut reader = match &self.tip {
            None if self.holds_no_byte()? => return self.check_empty().map(|()| 0),
            None => ChainReader::open(&self.file.path)?,
            Some((digest, end, at)) => ChainReader::resume(
                &self.file.path,
                *end,
                self.records.all().len() as u64,
                digest,
                at.is_some(),
            )?,
        };
        let before = self.records.all().len();
        while let Some(line) = reader.next_line()? {
            self.anchor.check_line(&line)?;
            let record = self.verify_line(&line)?;
            self.records.push(record, line.start, line.recorded_at);
            self.tip = Some((line.digest, line.end, line.recorded_at));
        }
        let mut applied = self.records.all().len() - before;
        let tail = reader.tail()?;
        self.anchor.check_tail(
            self.records.all().len() as u64,
            self.verified_bytes(),
            &tail,
        )?;
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

    /// A missing or empty ledger holds no line; its head may name the first line only (see the
    /// module documentation).
    fn check_empty(&self) -> Result<(), StoreError> {
        match self.anchor.head() {
            Some(head) if head.seq > 0 => self.anchor.check_end(0, 0, 0),
            _ => Ok(()),
        }
    }

    fn verify_line(&self, line: &ChainLine) -> Result<R, StoreError> {
        let corrupt = |reason: String| StoreError::Corrupt {
            path: self.file.path.clone(),
            line: line.seq + 1,
            byte: line.start,
            reason,
        };
        let record = R::decode(&line.entry())
            .map_err(|rule| corrupt(format!("not an {}: {rule}", R::NOUN)))?;
        self.records.check(&record).map_err(corrupt)?;
        Ok(record)
    }

    /// Appends what `decide` returns, seeing the records as they stand under the lock (see the
    /// module documentation). A record that breaks the ledger's rules is refused
    /// (`VALP-E-STORE-INVALID`-class [`StoreError::Invalid`], naming the file and the rule) and
    /// nothing is written; an error from `decide` is returned as it is.
    pub fn append(
        &mut self,
        decide: impl FnOnce(&Records<R>) -> Result<Decision<R>, StoreError>,
    ) -> Result<Decision<R>, StoreError> {
        ensure_writable(&self.file.path, self.access, self.poisoned.as_deref())?;
        let lock = self.lock()?;
        self.anchor.check_not_shortened(
            self.verified_bytes(),
            self.records.all().len().saturating_sub(1) as u64,
        )?;
        self.follow(Some(&lock))?;
        let record = match decide(&self.records)? {
            Decision::Write(record) => record,
            existing @ Decision::Existing(_) => return Ok(existing),
        };
        self.records.check(&record).map_err(|rule| {
            StoreError::Invalid(format!(
                "{}: refused to record {:?}: {rule}",
                self.file.path.display(),
                record.key()
            ))
        })?;
        let seq = self.records.all().len() as u64;
        let prior = self.tip.as_ref().map(|(digest, _, _)| digest.as_str());
        let recorded_at = self.clock.now();
        let (line, digest) = encode_line(seq, prior, recorded_at, &record);
        if let Err(error) = self.write(seq, &line, &digest) {
            // Once the write began, what is on disk is unknown until the file is read again.
            if matches!(error, StoreError::UnknownOrCommitted { .. }) {
                self.poisoned = Some(error.to_string());
            }
            return Err(error);
        }
        let start = self.verified_bytes();
        self.tip = Some((digest, start + line.len() as u64, Some(recorded_at)));
        self.records.push(record.clone(), start, Some(recorded_at));
        drop(lock);
        Ok(Decision::Write(record))
    }

    /// Appends and syncs one line, then rewrites the head after it (see
    /// [`Anchor::advance_after_append`]). The first line is created as a journal is: its head is
    /// written (durably) first, then the file holding the line (atomically, with a folder sync),
    /// so that no ledger line is ever without its head, and an acknowledged record cannot
    /// vanish with its file's name.
    fn write(&mut self, seq: u64, line: &[u8], digest: &str) -> Result<(), StoreError> {
        let storage = Arc::clone(&self.file.storage);
        let Some((_, start, _)) = &self.tip else {
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
