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
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|source| StoreError::io(&temp, "create", source))?;
    rename_durable(storage, file, &temp, target, bytes)?;
    sync_parent(storage, target)
}

/// Creates `target` holding `bytes` atomically and exclusively: the bytes are written to a
/// temporary file in `temp_dir` and made durable, then linked to `target`, which fails with
/// `Ok(false)` (and changes nothing) when `target` exists, whoever created it meanwhile. Unlike
/// checking for `target` and then renaming over it, two creators can never both succeed.
pub(crate) fn create_exclusively(
    storage: &dyn Storage,
    temp_dir: &Path,
    target: &Path,
    bytes: &[u8],
) -> Result<bool, StoreError> {
    let stem = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let temp = temporary_path(temp_dir, &stem);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|source| StoreError::io(&temp, "create", source))?;
    let linked = storage
        .append(&mut file, bytes)
        .map_err(|source| (temp.clone(), "write", source))
        .and_then(|()| {
            storage
                .sync(&file)
                .map_err(|source| (temp.clone(), "sync", source))
        })
        .and_then(|()| match storage.link(&temp, target) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(source) => Err((target.to_owned(), "link", source)),
        });
    let _ = std::fs::remove_file(&temp);
    let linked = linked.map_err(|(path, operation, source)| StoreError::Precommit {
        path,
        operation,
        source,
    })?;
    if linked {
        sync_parent(storage, target)?;
    }
    Ok(linked)
}

/// Replaces `target` with `bytes` through the fixed temporary file `.<name>.tmp` beside it,
/// which only a holder of the lock guarding `target` may use (so a crashed writer's leftover is
/// simply overwritten). The bytes are durable before the rename; the rename is made durable
/// only with `sync_dir` (otherwise a crash may lose it and leave the old `target`).
pub(crate) fn replace_under_lock(
    storage: &dyn Storage,
    target: &Path,
    bytes: &[u8],
    sync_dir: bool,
) -> Result<(), StoreError> {
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let temp = target.with_file_name(format!(".{name}.tmp"));
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .map_err(|source| StoreError::io(&temp, "create", source))?;
    rename_durable(storage, file, &temp, target, bytes)?;
    if sync_dir {
        sync_parent(storage, target)?;
    }
    Ok(())
}

/// Writes `bytes` to the new, empty `temp`, makes them durable and renames `temp` to `target`;
/// on failure removes `temp` and reports that nothing was committed.
fn rename_durable(
    storage: &dyn Storage,
    mut file: std::fs::File,
    temp: &Path,
    target: &Path,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let result = storage
        .append(&mut file, bytes)
        .map_err(|source| StoreError::Precommit {
            path: temp.to_owned(),
            operation: "write",
            source,
        })
        .and_then(|()| {
            storage.sync(&file).map_err(|source| StoreError::Precommit {
                path: temp.to_owned(),
                operation: "sync",
                source,
            })
        })
        .and_then(|()| {
            storage
                .rename(temp, target)
                .map_err(|source| StoreError::Precommit {
                    path: target.to_owned(),
                    operation: "rename",
                    source,
                })
        });
    if result.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    result
}

/// Makes the entry of `target` in its directory durable.
fn sync_parent(storage: &dyn Storage, target: &Path) -> Result<(), StoreError> {
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
