//! Recovering a refused journal (`valp recover`): the one way on after a journal was refused
//! for damage, truncation, rollback or a missing head, and the only code that ever cuts
//! complete lines off a journal.
//!
//! [`plan`] changes nothing: it reads the journal from its genesis as far as every line
//! verifies (chain, kernel, guard), ignoring the head, and says exactly what recovery would do:
//! keep the verified prefix (entries and bytes), cut everything after it (bytes, complete
//! lines), why reading stopped there, and what the head anchored, so how many acknowledged
//! entries the cut or an earlier truncation loses. [`apply`] does it under the journal lock,
//! only if the journal and its head are still exactly as planned: it first copies the journal
//! and its head byte for byte to `quarantine/` (`<folder>.<file>.<digest prefix>.before-recover`,
//! durably), then truncates the journal to the prefix (fsync) and writes a head anchored at
//! its last line (durably). Nothing is deleted: what was cut stays in the backup copy.
//!
//! A journal whose genesis line does not verify has no prefix to keep; recovery refuses it
//! (restore the task folder from a backup).
//!
//! A task's operator-action journal (`actions.jsonl`, [`actions_plan`], [`recover_actions`]) is
//! recovered the same way: its records that verify from the first on are kept (it has no
//! genesis, so the kept prefix may be empty, and then its head is moved to `quarantine/` with
//! the rest). Effect ledgers are not cut: a cut one would have reconciliation carry a cancel
//! out again (`valp verify` says to restore it from a backup).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::sha256_digest;

use crate::actions::{ACTIONS_FILE, ACTIONS_LOCK, ActionJournal, ActionRecord};
use crate::error::StoreError;
use crate::files::{create_dir_durably, write_atomically};
use crate::head::{self, Head};
use crate::io::Storage;
use crate::journal::{Access, Anchoring, JOURNAL_FILE, Journal, LOCK_FILE};
use crate::ledger::Ledger;
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use crate::machine::Machine;
use crate::root::ControlRoot;

/// What recovering one journal would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The journal file.
    pub journal: PathBuf,
    /// Its head file.
    pub head_file: PathBuf,
    /// The head as it is (`None`: missing).
    pub head: Option<Head>,
    /// Why the journal is refused, or `None` when it opens as it is.
    pub refusal: Option<String>,
    /// Entries that verify from the genesis on (kept).
    pub keep_entries: u64,
    /// Bytes of the verified prefix (kept).
    pub keep_bytes: u64,
    /// Bytes of the file now.
    pub file_bytes: u64,
    /// Complete lines (LF-terminated) after the prefix (cut).
    pub cut_lines: u64,
    /// Why reading stopped before the end of the file (`None`: it did not).
    pub stopped: Option<String>,
    /// The seq of the first entry (1 for a journal, whose line 0 is its genesis; 0 for a
    /// ledger of records).
    pub first_seq: u64,
}

impl Plan {
    /// Whether there is anything to do.
    pub fn needed(&self) -> bool {
        self.refusal.is_some()
    }

    /// Entries the head anchored that recovery does not keep (lost by the cut or by a
    /// truncation before it).
    pub fn acknowledged_lost(&self) -> u64 {
        self.head.as_ref().map_or(0, |head| {
            (head.seq + 1)
                .saturating_sub(self.first_seq)
                .saturating_sub(self.keep_entries)
        })
    }

    /// The plan in words, one line each.
    pub fn describe(&self) -> Vec<String> {
        let mut lines = vec![format!("journal: {}", self.journal.display())];
        let Some(refusal) = &self.refusal else {
            lines.push("it opens as it is: nothing to recover".to_owned());
            return lines;
        };
        lines.push(format!("refused: {refusal}"));
        lines.push(match &self.head {
            Some(head) => format!(
                "head anchor: seq {} ({}) ending at byte {}",
                head.seq, head.entry_digest, head.length
            ),
            None => format!(
                "head anchor: missing or unreadable ({})",
                self.head_file.display()
            ),
        });
        lines.push(format!(
            "keep: entries {}..={} (bytes 0..{}), which verify from the {} on",
            self.first_seq,
            (self.first_seq + self.keep_entries).saturating_sub(1),
            self.keep_bytes,
            if self.first_seq == 1 {
                "genesis"
            } else {
                "first line"
            }
        ));
        let cut = self.file_bytes - self.keep_bytes;
        lines.push(if cut == 0 {
            "cut: nothing".to_owned()
        } else {
            format!(
                "cut: bytes {}..{} ({cut} bytes, {} complete lines){}",
                self.keep_bytes,
                self.file_bytes,
                self.cut_lines,
                self.stopped
                    .as_ref()
                    .map_or_else(String::new, |why| format!(", because {why}"))
            )
        });
        let lost = self.acknowledged_lost();
        if lost > 0 {
            lines.push(format!(
                "LOST: {lost} acknowledged entries (seq {}..={}) the head anchored will not be \
                 in the journal; restore them from a backup of the task folder if you have one",
                self.first_seq + self.keep_entries,
                self.first_seq + self.keep_entries + lost - 1
            ));
        }
        lines.push(match (self.keep_entries + self.first_seq).checked_sub(1) {
            Some(seq) => format!(
                "then: the journal and its head are copied to quarantine/, the journal is cut \
                 to {} bytes and anchored at seq {seq}",
                self.keep_bytes
            ),
            None => "then: the journal and its head are copied to quarantine/, the journal is \
                     cut to 0 bytes and its head removed (it holds no record)"
                .to_owned(),
        });
        lines
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The byte-for-byte copies made before anything changed (journal, then head if any).
    pub backups: Vec<PathBuf>,
    /// The new head (`None`: an operator-action journal with no record kept has none).
    pub head: Option<Head>,
    /// Task snapshots bound to lines after the cut, moved to `quarantine/` (their index files
    /// beside them).
    pub snapshots: Vec<PathBuf>,
}

/// The journal of a task, by id (or by its folder name when that is hashed).
pub fn task_plan(root: &ControlRoot, task_id: &str) -> Result<Plan, StoreError> {
    let dir = task_dir(root, task_id)?;
    plan_in::<valp_kernel::live::LiveState>(root, &dir, &|| root.task_guard().in_task(&dir))
}

/// Recovers the journal of a task as `confirmed` says (see [`apply`]).
pub fn recover_task(
    root: &ControlRoot,
    task_id: &str,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    let dir = task_dir(root, task_id)?;
    let mut recovered = apply_in::<valp_kernel::live::LiveState>(
        root,
        &dir,
        &|| root.task_guard().in_task(&dir),
        confirmed,
    )?;
    let _lock = LockGuard::acquire(&dir.join(LOCK_FILE), DEFAULT_LOCK_TIMEOUT)?;
    recovered.snapshots = crate::snapshot::quarantine_beyond(
        root.storage().as_ref(),
        &dir,
        &root.layout().quarantine_dir(),
        confirmed.keep_entries,
    )?;
    Ok(recovered)
}

/// The installation ledger.
pub fn ledger_plan(root: &ControlRoot) -> Result<Plan, StoreError> {
    plan_in::<valp_kernel::installation::InstallationLive>(
        root,
        &root.layout().installation_dir(),
        &Default::default,
    )
}

/// Recovers the installation ledger as `confirmed` says (see [`apply`]).
pub fn recover_ledger(root: &ControlRoot, confirmed: &Plan) -> Result<Recovered, StoreError> {
    apply_in::<valp_kernel::installation::InstallationLive>(
        root,
        &root.layout().installation_dir(),
        &Default::default,
        confirmed,
    )
}

/// The operator-action journal of a task.
pub fn actions_plan(root: &ControlRoot, task_id: &str) -> Result<Plan, StoreError> {
    let dir = task_dir(root, task_id)?;
    plan_actions(&dir, &root.layout().quarantine_dir(), root.storage())
}

/// Recovers the operator-action journal of a task as `confirmed` says (see [`apply`]).
pub fn recover_actions(
    root: &ControlRoot,
    task_id: &str,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    let dir = task_dir(root, task_id)?;
    let quarantine = root.layout().quarantine_dir();
    cut(
        &dir,
        &dir.join(ACTIONS_LOCK),
        &quarantine,
        root.storage(),
        &|| plan_actions(&dir, &quarantine, root.storage()),
        confirmed,
    )
}

fn plan_actions(
    dir: &Path,
    quarantine: &Path,
    storage: &Arc<dyn Storage>,
) -> Result<Plan, StoreError> {
    let refusal = ActionJournal::open(dir, quarantine, Arc::clone(storage), Access::ReadOnly)
        .err()
        .map(|error| error.to_string());
    let file = dir.join(ACTIONS_FILE);
    let salvaged = Ledger::<ActionRecord>::salvage(
        &file,
        &dir.join(ACTIONS_LOCK),
        quarantine,
        Arc::clone(storage),
    )?;
    finish_plan(
        file,
        refusal,
        salvaged.records().all().len() as u64,
        salvaged.verified_bytes(),
        salvaged.damage(),
        0,
    )
}

/// The folder of a task, named by its id or, for an id that is not a plain name, by its
/// folder name (`id-` and 32 hex digits, as `valp verify` lists it).
fn task_dir(root: &ControlRoot, task_id: &str) -> Result<PathBuf, StoreError> {
    let hashed_folder = task_id.len() == 35
        && task_id.strip_prefix("id-").is_some_and(|hex| {
            hex.bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
        });
    let dir = if hashed_folder {
        root.layout().tasks_dir().join(task_id)
    } else {
        root.layout().task_dir(task_id)
    };
    if dir.join(JOURNAL_FILE).is_file() {
        Ok(dir)
    } else {
        Err(StoreError::Invalid(format!(
            "no task {task_id:?} in {}",
            root.layout().root().display()
        )))
    }
}

fn plan_in<M: Machine>(
    root: &ControlRoot,
    dir: &Path,
    guard: &dyn Fn() -> M::Guard,
) -> Result<Plan, StoreError> {
    plan::<M>(
        dir,
        &root.layout().quarantine_dir(),
        Arc::clone(root.storage()),
        guard,
    )
}

fn apply_in<M: Machine>(
    root: &ControlRoot,
    dir: &Path,
    guard: &dyn Fn() -> M::Guard,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    apply::<M>(
        dir,
        &root.layout().quarantine_dir(),
        root.storage(),
        guard,
        confirmed,
    )
}

/// Looks at the journal in `dir`, opened with guards made by `guard` (changes nothing; see the
/// module documentation).
pub fn plan<M: Machine>(
    dir: &Path,
    quarantine: &Path,
    storage: Arc<dyn Storage>,
    guard: &dyn Fn() -> M::Guard,
) -> Result<Plan, StoreError> {
    let refusal = Journal::<M>::open_with(
        dir,
        quarantine,
        Arc::clone(&storage),
        Access::ReadOnly,
        Anchoring::Required,
        guard(),
        crate::journal::History::KeptFromGenesis,
        crate::journal::Watch::none(),
    )
    .err()
    .map(|error| error.to_string());
    let salvaged = Journal::<M>::open_anchored(
        dir,
        quarantine,
        storage,
        Access::ReadOnly,
        guard(),
        Anchoring::Salvage,
    )
    .map_err(|error| {
        StoreError::Invalid(format!(
            "nothing of the journal can be kept, its genesis line does not verify ({error}); \
             restore its folder from a backup"
        ))
    })?;
    finish_plan(
        salvaged.path().to_owned(),
        refusal,
        salvaged.len(),
        salvaged.verified_bytes(),
        salvaged.damage(),
        1,
    )
}

/// The plan for the chained file `journal`, refused as `refusal` says, of which
/// `keep_entries` entries (`keep_bytes`) verify, reading having stopped at `damage`.
fn finish_plan(
    journal: PathBuf,
    refusal: Option<String>,
    keep_entries: u64,
    keep_bytes: u64,
    damage: Option<&StoreError>,
    first_seq: u64,
) -> Result<Plan, StoreError> {
    let bytes = match std::fs::read(&journal) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(StoreError::io(&journal, "read", source)),
    };
    let cut = bytes
        .get(usize::try_from(keep_bytes).unwrap_or(usize::MAX)..)
        .unwrap_or(&[]);
    let stopped = damage.map(ToString::to_string).or_else(|| {
        (!cut.is_empty())
            .then(|| "the bytes after the last line are not a complete line".to_owned())
    });
    let head_file = head::head_path(&journal);
    Ok(Plan {
        head: head::read(&head_file).unwrap_or(None),
        head_file,
        journal,
        refusal,
        keep_entries,
        keep_bytes,
        file_bytes: bytes.len() as u64,
        cut_lines: line_count(cut),
        stopped,
        first_seq,
    })
}

/// Complete lines in `bytes`.
fn line_count(bytes: &[u8]) -> u64 {
    bytes.split(|&byte| byte == b'\n').count() as u64 - 1
}

/// Recovers the journal in `dir` as `confirmed` (a [`plan`] shown to the person who confirmed
/// it) says, under the journal lock; refused when the journal or its head changed since.
pub fn apply<M: Machine>(
    dir: &Path,
    quarantine: &Path,
    storage: &Arc<dyn Storage>,
    guard: &dyn Fn() -> M::Guard,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    cut(
        dir,
        &dir.join(LOCK_FILE),
        quarantine,
        storage,
        &|| plan::<M>(dir, quarantine, Arc::clone(storage), guard),
        confirmed,
    )
}

/// Cuts the chained file of `confirmed` under its lock `lock`, if `replan` still gives that
/// plan (see [`apply`]).
fn cut(
    dir: &Path,
    lock: &Path,
    quarantine: &Path,
    storage: &Arc<dyn Storage>,
    replan: &dyn Fn() -> Result<Plan, StoreError>,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    let _lock = LockGuard::acquire(lock, DEFAULT_LOCK_TIMEOUT)?;
    let now = replan()?;
    if &now != confirmed {
        return Err(StoreError::Invalid(format!(
            "{}: the journal or its head changed since the plan was shown; run `valp recover` \
             again",
            now.journal.display()
        )));
    }
    if !now.needed() {
        return Err(StoreError::Invalid(format!(
            "{}: the journal opens as it is; there is nothing to recover",
            now.journal.display()
        )));
    }
    create_dir_durably(storage.as_ref(), quarantine)?;
    let folder = dir
        .file_name()
        .map_or_else(|| "journal".into(), |name| name.to_string_lossy());
    let mut backups = Vec::new();
    for file in [&now.journal, &now.head_file] {
        let bytes = match std::fs::read(file) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(StoreError::io(file, "read", source)),
        };
        let name = file
            .file_name()
            .map_or_else(|| "file".into(), |name| name.to_string_lossy());
        let digest = sha256_digest(&bytes);
        let backup = quarantine.join(format!("{folder}.{name}.{}.before-recover", &digest[7..23]));
        if std::fs::read(&backup).ok().as_deref() != Some(bytes.as_slice()) {
            write_atomically(storage.as_ref(), quarantine, &backup, &bytes)?;
        }
        backups.push(backup);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&now.journal)
        .map_err(|source| StoreError::io(&now.journal, "open", source))?;
    file.set_len(now.keep_bytes)
        .map_err(|source| StoreError::io(&now.journal, "truncate", source))?;
    storage
        .sync(&file)
        .map_err(|source| StoreError::io(&now.journal, "sync", source))?;
    if now.keep_bytes == 0 && now.first_seq == 0 {
        // A ledger with no record kept has no line to anchor; its head (copied above) would
        // name a line that is gone.
        match std::fs::remove_file(&now.head_file) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(StoreError::io(&now.head_file, "remove", source)),
        }
        storage
            .sync_dir(dir)
            .map_err(|source| StoreError::io(dir, "sync directory", source))?;
        return Ok(Recovered {
            backups,
            head: None,
            snapshots: Vec::new(),
        });
    }
    let bytes = std::fs::read(&now.journal)
        .map_err(|source| StoreError::io(&now.journal, "read", source))?;
    let head = head::of_lines(&bytes).ok_or_else(|| {
        StoreError::Invalid(format!(
            "{}: the kept prefix does not end with a journal line",
            now.journal.display()
        ))
    })?;
    head::write(storage.as_ref(), &now.head_file, &head, true)?;
    Ok(Recovered {
        backups,
        head: Some(head),
        snapshots: Vec::new(),
    })
}
