//! Moving a torn tail to `quarantine/` and cutting it off. Runs only under the journal lock.

use std::fs::OpenOptions;
use std::path::PathBuf;

use crate::error::StoreError;
use crate::files::{create_dir_durably, write_atomically};
use crate::journal::{Journal, Warning};
use crate::machine::Machine;

/// Copies the torn bytes to a quarantine file (written atomically and durably, or found there
/// already with exactly these bytes), then truncates the journal to `offset` (durably). If the
/// copy cannot be made the journal is left untouched.
pub(super) fn quarantine_tail<M: Machine>(
    journal: &Journal<M>,
    offset: u64,
    bytes: &[u8],
) -> Result<Warning, StoreError> {
    let storage = journal.storage.as_ref();
    create_dir_durably(storage, &journal.quarantine)?;
    let quarantined = quarantine_path(journal, offset, bytes)?;
    if quarantined.exists() {
        // Found from an earlier, interrupted repair: make sure its name is durable too.
        storage
            .sync_dir(&journal.quarantine)
            .map_err(|source| StoreError::UnknownOrCommitted {
                path: journal.quarantine.clone(),
                operation: "sync directory",
                seq: 0,
                source,
            })?;
    } else {
        write_atomically(storage, &journal.quarantine, &quarantined, bytes)?;
    }
    let file = OpenOptions::new()
        .write(true)
        .open(&journal.path)
        .map_err(|source| StoreError::io(&journal.path, "open", source))?;
    file.set_len(offset)
        .map_err(|source| StoreError::io(&journal.path, "truncate", source))?;
    storage
        .sync(&file)
        .map_err(|source| StoreError::io(&journal.path, "sync", source))?;
    Ok(Warning::TornTailRepaired {
        offset,
        len: bytes.len() as u64,
        quarantined,
    })
}

/// `<task folder>.journal.<offset>.<digest prefix>.torn`, or with a `.N` suffix when a file of
/// that name holds other bytes. A file holding exactly these bytes is reused: the tail was
/// quarantined before (a repair interrupted between copy and truncation).
fn quarantine_path<M: Machine>(
    journal: &Journal<M>,
    offset: u64,
    bytes: &[u8],
) -> Result<PathBuf, StoreError> {
    let folder = journal
        .dir
        .file_name()
        .map_or_else(|| "task".into(), |name| name.to_string_lossy());
    let digest = valp_kernel::canonical::sha256_digest(bytes);
    let stem = format!("{folder}.journal.{offset}.{}", &digest[7..23]);
    for attempt in 0_u32.. {
        let name = if attempt == 0 {
            format!("{stem}.torn")
        } else {
            format!("{stem}.{attempt}.torn")
        };
        let path = journal.quarantine.join(name);
        match std::fs::read(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(path),
            Err(source) => return Err(StoreError::io(&path, "read", source)),
            Ok(existing) if existing == bytes => return Ok(path),
            Ok(_) => {}
        }
    }
    Err(StoreError::Invalid(
        "no free quarantine file name".to_owned(),
    ))
}
