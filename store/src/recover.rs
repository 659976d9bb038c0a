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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::sha256_digest;

use crate::error::StoreError;
use crate::files::{create_dir_durably, write_atomically};
use crate::head::{self, Head};
use crate::io::Storage;
use crate::journal::{Access, Anchoring, JOURNAL_FILE, Journal, LOCK_FILE};
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
}

impl Plan {
    /// Whether there is anything to do.
    pub fn needed(&self) -> bool {
        self.refusal.is_some()
    }

    /// Entries the head anchored that recovery does not keep (lost by the cut or by a
    /// truncation before it).
    pub fn acknowledged_lost(&self) -> u64 {
        self.head
            .as_ref()
            .map_or(0, |head| head.seq.saturating_sub(self.keep_entries))
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
            "keep: entries 1..={} (bytes 0..{}), which verify from the genesis on",
            self.keep_entries, self.keep_bytes
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
                self.keep_entries + 1,
                self.keep_entries + lost
            ));
        }
        lines.push(format!(
            "then: the journal and its head are copied to quarantine/, the journal is cut to \
             {} bytes and anchored at seq {}",
            self.keep_bytes, self.keep_entries
        ));
        lines
    }
}

/// What [`apply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The byte-for-byte copies made before anything changed (journal, then head if any).
    pub backups: Vec<PathBuf>,
    /// The new head.
    pub head: Head,
}

/// The journal of a task, by id (or by its folder name when that is hashed).
pub fn task_plan(root: &ControlRoot, task_id: &str) -> Result<Plan, StoreError> {
    let dir = task_dir(root, task_id)?;
    plan_in::<valp_kernel::live::LiveState>(root, &dir, &|| root.task_guard())
}

/// Recovers the journal of a task as `confirmed` says (see [`apply`]).
pub fn recover_task(
    root: &ControlRoot,
    task_id: &str,
    confirmed: &Plan,
) -> Result<Recovered, StoreError> {
    let dir = task_dir(root, task_id)?;
    apply_in::<valp_kernel::live::LiveState>(root, &dir, &|| root.task_guard(), confirmed)
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
    let refusal = Journal::<M>::open_anchored(
        dir,
        quarantine,
        Arc::clone(&storage),
        Access::ReadOnly,
        guard(),
        Anchoring::Required,
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
    let journal = salvaged.path().to_owned();
    let bytes =
        std::fs::read(&journal).map_err(|source| StoreError::io(&journal, "read", source))?;
    let keep_bytes = salvaged.verified_bytes();
    let cut = bytes
        .get(usize::try_from(keep_bytes).unwrap_or(usize::MAX)..)
        .unwrap_or(&[]);
    let stopped = salvaged.damage().map(ToString::to_string).or_else(|| {
        (!cut.is_empty())
            .then(|| "the bytes after the last line are not a complete line".to_owned())
    });
    let head_file = head::head_path(&journal);
    Ok(Plan {
        head: head::read(&head_file).unwrap_or(None),
        head_file,
        journal,
        refusal,
        keep_entries: salvaged.len(),
        keep_bytes,
        file_bytes: bytes.len() as u64,
        cut_lines: line_count(cut),
        stopped,
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
    let _lock = LockGuard::acquire(&dir.join(LOCK_FILE), DEFAULT_LOCK_TIMEOUT)?;
    let now = plan::<M>(dir, quarantine, Arc::clone(storage), guard)?;
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
    let bytes = std::fs::read(&now.journal)
        .map_err(|source| StoreError::io(&now.journal, "read", source))?;
    let head = head::of_lines(&bytes).ok_or_else(|| {
        StoreError::Invalid(format!(
            "{}: the kept prefix does not end with a journal line",
            now.journal.display()
        ))
    })?;
    head::write(storage.as_ref(), &now.head_file, &head, true)?;
    Ok(Recovered { backups, head })
}
