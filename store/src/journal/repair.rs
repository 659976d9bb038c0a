//! Moving a torn tail to `quarantine/` and cutting it off. Runs only under the journal lock.

use std::fs::OpenOptions;

use crate::error::StoreError;
use crate::files::create_dir_durably;
use crate::journal::{Journal, Warning};

/// Copies the torn bytes to a new quarantine file (durably), then truncates the journal to
/// `offset` (durably). If anything fails the journal is left as it was: the copy comes first.
pub(super) fn quarantine_tail(
    journal: &Journal,
    offset: u64,
    bytes: &[u8],
) -> Result<Warning, StoreError> {
    let storage = journal.storage.as_ref();
    create_dir_durably(storage, &journal.quarantine)?;
    let folder = journal
        .dir
        .file_name()
        .map_or_else(|| "task".into(), |name| name.to_string_lossy());
    let digest = valp_kernel::canonical::sha256_digest(bytes);
    let quarantined = journal
        .quarantine
        .join(format!("{folder}.journal.{offset}.{}.torn", &digest[7..23]));
    if !quarantined.exists() {
        let mut copy = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&quarantined)
            .map_err(|source| StoreError::io(&quarantined, "create", source))?;
        storage
            .append(&mut copy, bytes)
            .map_err(|source| StoreError::io(&quarantined, "write", source))?;
        storage
            .sync(&copy)
            .map_err(|source| StoreError::io(&quarantined, "sync", source))?;
        storage
            .sync_dir(&journal.quarantine)
            .map_err(|source| StoreError::io(&journal.quarantine, "sync directory", source))?;
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
