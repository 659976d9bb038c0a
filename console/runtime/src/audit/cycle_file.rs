//! Keeps `correction-cycle.json` in a control-root task's folder equal to what its journal
//! derives ([`derive`](super::derive)): folds the journal lines with their `recorded_at`
//! ([`Fold`]: only the lines appended since the fold a process keeps, [`CycleFold`], or since
//! the task folder's `correction-fold.json`, [`fold_cache`]), and replaces the file atomically
//! only when the canonical bytes differ. A task without a correction signal gets no file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_store::StoreError;
use valp_store::journal::JOURNAL_FILE;

use super::correction::FILE_NAME;
use super::derive::{Cycle, Round, canonical_bytes, named};
use super::fold::Fold;
use super::fold_cache;
use crate::adapter::files::write_replacing;

/// Why the file could not be maintained.
#[derive(Debug, thiserror::Error)]
pub enum CycleFileError {
    /// The journal could not be read.
    #[error(transparent)]
    Journal(#[from] StoreError),
    /// The cycle did not encode.
    #[error("correction cycle does not encode: {0}")]
    Encode(#[from] serde_json::Error),
    /// The file could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The correction-cycle fold of the task `task_id` in `task_dir` up to its journal's end,
/// read-only: from its `correction-fold.json` when that can be used ([`fold_cache`]: only the
/// lines after it are read), else from the genesis. It may hold only the open and the newest
/// rounds (see [`Deriver::kept`](super::derive::Deriver::kept)).
pub fn summarized(task_dir: &Path, task_id: &str) -> Result<Fold, StoreError> {
    let mut fold = fold_cache::load(task_dir, task_id).unwrap_or_default();
    // Folding from the genesis, every round of a long history would be held (650 MB at 10^6
    // demo entries): hold what the file would, the open and the newest rounds.
    fold.advance_keeping(
        &task_dir.join(JOURNAL_FILE),
        Some(fold_cache::NEWEST_ROUNDS),
    )?;
    Ok(fold)
}

/// The open correction rounds of the task `task_id` in `task_dir` (status `open` or
/// `fixing`), derived from its journal ([`summarized`]); `owners` maps a work item to its
/// adapter (an empty map names every owner `unknown`). Empty when the task has no correction
/// signal or every round is closed. For the needs-you queue.
pub fn open_rounds(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
) -> Result<Vec<Round>, StoreError> {
    let fold = summarized(task_dir, task_id)?;
    Ok(fold
        .deriver()
        .rounds()
        .iter()
        .filter(|round| round.is_open())
        .map(|round| named(round, owners))
        .collect())
}

/// Lines a kept fold may run ahead of the task folder's `correction-fold.json` before it is
/// written again.
pub const CACHE_EVERY: u64 = 1024;

/// A task's correction-cycle fold kept by a process (the driver, the console) between reads of
/// its journal: the first [`CycleFold::refresh`] starts from the task folder's
/// `correction-fold.json` when it holds every round, else from the genesis; every later one
/// reads only the lines appended since. It writes the file again (atomically) when there was
/// none that could be used, or it is [`CACHE_EVERY`] lines behind.
///
/// A [`CycleFold::summarizing`] fold (the console's) holds only the open and the newest rounds,
/// so it may start from a file that holds only those, and never holds the whole history.
#[derive(Debug, Default)]
pub struct CycleFold {
    fold: Option<Fold>,
    /// How many of the newest closed rounds it holds (`None`: every round).
    newest: Option<u64>,
    /// The seq the task folder's file was bound to when last read or written.
    cached: Option<u64>,
    /// Entries the last refresh read.
    read: u64,
}

impl CycleFold {
    /// A fold that holds only the open rounds and about the newest `newest` closed ones (at
    /// least `newest`, at most twice as many): what a screen shows, in memory that does not grow
    /// with the history.
    pub fn summarizing(newest: u64) -> Self {
        Self {
            newest: Some(newest),
            ..Self::default()
        }
    }

    /// Brings the fold of the task `task_id` in `task_dir` to its journal's end; its cycle.
    pub fn refresh(
        &mut self,
        task_dir: &Path,
        task_id: &str,
        owners: &BTreeMap<String, String>,
    ) -> Result<Option<Cycle>, StoreError> {
        let mut fold = if let Some(fold) = self.fold.take() {
            fold
        } else {
            let summarizing = self.newest.is_some();
            let cached = fold_cache::load(task_dir, task_id)
                .ok()
                .filter(|fold| summarizing || fold.deriver().complete());
            self.cached = cached.as_ref().and_then(|fold| Some(fold.at()?.seq));
            cached.unwrap_or_default()
        };
        let advanced = fold.advance_keeping(&task_dir.join(JOURNAL_FILE), self.newest)?;
        self.read = advanced.entries;
        if advanced.restarted.is_some() {
            self.cached = None;
        }
        let seq = fold.at().map_or(0, |at| at.seq);
        if self.cached.is_none_or(|cached| seq >= cached + CACHE_EVERY) {
            // A cache that cannot be written only makes the next process fold more lines;
            // it is tried again at the next refresh.
            if fold_cache::write(task_dir, task_id, &fold).is_ok() {
                self.cached = Some(seq);
            }
        }
        let cycle = fold.cycle(task_id, owners);
        self.fold = Some(fold);
        Ok(cycle)
    }

    /// Entries the last [`CycleFold::refresh`] read from the journal.
    pub fn last_read(&self) -> u64 {
        self.read
    }
}

/// Brings `kept`, the fold of the task in `task_dir`, to its journal's end and writes its cycle
/// when it changed; returns it.
pub fn maintain(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
    kept: &mut CycleFold,
) -> Result<Option<Cycle>, CycleFileError> {
    let Some(cycle) = kept.refresh(task_dir, task_id, owners)? else {
        return Ok(None);
    };
    let bytes = canonical_bytes(&cycle)?;
    let path = task_dir.join(FILE_NAME);
    if std::fs::read(&path).ok().as_deref() != Some(bytes.as_slice()) {
        write_replacing(&path, &bytes).map_err(|source| CycleFileError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(Some(cycle))
}

/// Copies the task folder's `correction-cycle.json` to `out` (the export's task folder, where
/// the reference layout keeps it beside `runtime/kernel/`), atomically; the path written, or
/// `None` when the task has none (no correction signal).
pub fn export(task_dir: &Path, out: &Path) -> Result<Option<PathBuf>, CycleFileError> {
    let Ok(bytes) = std::fs::read(task_dir.join(FILE_NAME)) else {
        return Ok(None);
    };
    let path = out.join(FILE_NAME);
    write_replacing(&path, &bytes).map_err(|source| CycleFileError::Write {
        path: path.clone(),
        source,
    })?;
    Ok(Some(path))
}
