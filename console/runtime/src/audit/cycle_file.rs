//! Keeps `correction-cycle.json` in a control-root task's folder equal to what its journal
//! derives ([`derive`](super::derive)): reads the journal lines with their `recorded_at`, derives,
//! and replaces the file atomically only when the canonical bytes differ. A task without a
//! correction signal gets no file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_kernel::live::LiveState;
use valp_store::StoreError;
use valp_store::journal::{JOURNAL_FILE, read_entries};

use super::correction::FILE_NAME;
use super::derive::{Cycle, Deriver, Fact, Round, canonical_bytes};
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

/// The correction cycle of the task `task_id` in `task_dir`, folded from its journal as it is
/// read (one fact at a time: no fact per entry is held); `owners` maps a work item to its
/// adapter. `None` when no entry is a correction signal.
pub fn derived(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
) -> Result<Option<Cycle>, StoreError> {
    let mut deriver = Deriver::new(owners);
    read_entries::<LiveState>(&task_dir.join(JOURNAL_FILE), |recorded| {
        deriver.push(&Fact::of(&recorded));
    })?;
    Ok(deriver.finish(task_id))
}

/// The open correction rounds of the task `task_id` in `task_dir` (status `open` or
/// `fixing`), derived from its journal; `owners` maps a work item to its adapter (an empty map
/// names every owner `unknown`). Empty when the task has no correction signal or every round
/// is closed. For the needs-you queue.
pub fn open_rounds(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
) -> Result<Vec<Round>, StoreError> {
    Ok(derived(task_dir, task_id, owners)?
        .map(|cycle| cycle.rounds.into_iter().filter(Round::is_open).collect())
        .unwrap_or_default())
}

/// Derives the cycle of the task in `task_dir` and writes it when it changed; returns it.
pub fn maintain(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
) -> Result<Option<Cycle>, CycleFileError> {
    let Some(cycle) = derived(task_dir, task_id, owners)? else {
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
