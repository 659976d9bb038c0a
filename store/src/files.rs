//! Crash-safe whole-file writes: write a temporary file, make it durable, rename it into place,
//! make the rename durable.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::StoreError;
use crate::io::Storage;

/// Distinguishes temporary files written by one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A temporary file name in `dir` no other writer uses.
pub(crate) fn temporary_path(dir: &Path, stem: &str) -> std::path::PathBuf {
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    dir.join(format!(".{stem}.{}.{count}.tmp", std::process::id()))
}

/// Writes `bytes` to `target` atomically: readers see the old file or the whole new one, and
/// after a crash the new one is either completely there or not at all. `temp_dir` must be on the
/// same file system as `target`.
pub(crate) fn write_atomically(
    storage: &dyn Storage,
    temp_dir: &Path,
    target: &Path,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let stem = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let temp = temporary_path(temp_dir, &stem);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|source| StoreError::io(&temp, "create", source))?;
        storage
            .append(&mut file, bytes)
            .map_err(|source| StoreError::Precommit {
                path: temp.clone(),
                operation: "write",
                source,
            })?;
        storage
            .sync(&file)
            .map_err(|source| StoreError::Precommit {
                path: temp.clone(),
                operation: "sync",
                source,
            })?;
        storage
            .rename(&temp, target)
            .map_err(|source| StoreError::Precommit {
                path: target.to_owned(),
                operation: "rename",
                source,
            })
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
        return result;
    }
    let dir = target.parent().unwrap_or(Path::new("."));
    storage
        .sync_dir(dir)
        .map_err(|source| StoreError::UnknownOrCommitted {
            path: dir.to_owned(),
            operation: "sync directory",
            seq: 0,
            source,
        })
}

/// Creates `dir` (and its parents) and makes each new directory entry durable.
pub(crate) fn create_dir_durably(storage: &dyn Storage, dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dir_durably(storage, parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(source) => return Err(StoreError::io(dir, "create directory", source)),
    }
    let parent = dir.parent().unwrap_or(Path::new("."));
    storage
        .sync_dir(parent)
        .map_err(|source| StoreError::io(parent, "sync directory", source))
}
