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
use super::derive::{Cycle, Fact, canonical_bytes, derive};
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

/// The facts of the task journal in `task_dir`, in order.
pub fn facts(task_dir: &Path) -> Result<Vec<Fact>, StoreError> {
    let mut facts = Vec::new();
    read_entries::<LiveState>(&task_dir.join(JOURNAL_FILE), |recorded| {
        facts.push(Fact::of(&recorded));
    })?;
    Ok(facts)
}

/// Derives the cycle of the task in `task_dir` and writes it when it changed; returns it.
pub fn maintain(
    task_dir: &Path,
    task_id: &str,
    owners: &BTreeMap<String, String>,
) -> Result<Option<Cycle>, CycleFileError> {
    let Some(cycle) = derive(task_id, &facts(task_dir)?, owners) else {
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
