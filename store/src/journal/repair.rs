//! What becomes of a torn tail, for every chained file (a task journal, the installation
//! ledger, an effect ledger): a reader reports it; a writer, under the file's lock, moves it to
//! `quarantine/` and cuts it off.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chain::Tail;
use crate::error::StoreError;
use crate::files::{create_dir_durably, write_atomically};
use crate::io::Storage;
use crate::journal::{Access, Warning};

/// A chained file as its torn tail's repair sees it.
#[derive(Debug)]
pub(crate) struct ChainedFile {
    /// The durable operations.
    pub(crate) storage: Arc<dyn Storage>,
    /// The file.
    pub(crate) path: PathBuf,
    /// Where torn tails go.
    pub(crate) quarantine: PathBuf,
}

impl ChainedFile {
    /// Deals with what follows the file's last verified line (`tail`), the file being open
    /// with `access`: a reader records a torn tail as [`Warning::IncompleteTail`] (once); a
    /// writer holding the file's lock (`locked`) quarantines it and records the repair. Returns
    /// `true` when a writer must first take the lock and read again: the bytes may be another
    /// writer's append in flight, which will have completed once the lock is held.
    pub(crate) fn settle(
        &self,
        tail: Tail,
        access: Access,
        locked: bool,
        warnings: &mut Vec<Warning>,
    ) -> Result<bool, StoreError> {
        let Tail::Torn { offset, bytes } = tail else {
            return Ok(false);
        };
        match (access, locked) {
            (Access::ReadOnly, _) => {
                let warning = Warning::IncompleteTail {
                    offset,
                    len: bytes.len() as u64,
                };
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
                Ok(false)
            }
            (Access::Write, true) => {
                warnings.push(quarantine_tail(self, offset, &bytes)?);
                Ok(false)
            }
            (Access::Write, false) => Ok(true),
        }
    }
}

/// Copies the torn bytes of the chained file to a quarantine file (written atomically and
/// durably, or found there already with exactly these bytes), then truncates the file to
/// `offset` (durably). If the copy cannot be made the file is left untouched.
fn quarantine_tail(file: &ChainedFile, offset: u64, bytes: &[u8]) -> Result<Warning, StoreError> {
    let (storage, path, quarantine) = (file.storage.as_ref(), &file.path, &file.quarantine);
    create_dir_durably(storage, quarantine)?;
    let quarantined = quarantine_path(path, quarantine, offset, bytes)?;
    if quarantined.exists() {
        // Found from an earlier, interrupted repair: make sure its name is durable too.
        storage
            .sync_dir(quarantine)
            .map_err(|source| StoreError::UnknownOrCommitted {
                path: quarantine.to_owned(),
                operation: "sync directory",
                seq: 0,
                source,
            })?;
    } else {
        write_atomically(storage, quarantine, &quarantined, bytes)?;
    }
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|source| StoreError::io(path, "open", source))?;
    file.set_len(offset)
        .map_err(|source| StoreError::io(path, "truncate", source))?;
    storage
        .sync(&file)
        .map_err(|source| StoreError::io(path, "sync", source))?;
    Ok(Warning::TornTailRepaired {
        offset,
        len: bytes.len() as u64,
        quarantined,
    })
}

/// `<task folder>.<file stem>.<offset>.<digest prefix>.torn` (`task-1.journal.…` for a task
/// journal, `task-1.effect-ledger.…` for its effect ledger), or with a `.N` suffix when a file
/// of that name holds other bytes. A file holding exactly these bytes is reused: the tail was
/// quarantined before (a repair interrupted between copy and truncation).
fn quarantine_path(
    path: &Path,
    quarantine: &Path,
    offset: u64,
    bytes: &[u8],
) -> Result<PathBuf, StoreError> {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map_or_else(|| "task".into(), |name| name.to_string_lossy());
    let file = path
        .file_stem()
        .map_or_else(|| "journal".into(), |name| name.to_string_lossy());
    let digest = valp_kernel::canonical::sha256_digest(bytes);
    let stem = format!("{folder}.{file}.{offset}.{}", &digest[7..23]);
    for attempt in 0_u32.. {
        let name = if attempt == 0 {
            format!("{stem}.torn")
        } else {
            format!("{stem}.{attempt}.torn")
        };
        let candidate = quarantine.join(name);
        match std::fs::read(&candidate) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(candidate),
            Err(source) => return Err(StoreError::io(&candidate, "read", source)),
            Ok(existing) if existing == bytes => return Ok(candidate),
            Ok(_) => {}
        }
    }
    Err(StoreError::Invalid(
        "no free quarantine file name".to_owned(),
    ))
}
