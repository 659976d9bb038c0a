//! Converting a layout-1 effect ledger (`effects.jsonl`, one bare record per line, written
//! outside the store) into the store's effect ledger (layout 2).

use std::path::Path;

use valp_kernel::canonical::decode_canonical;

use super::{EFFECT_LEDGER_FILE, EFFECT_LEDGER_LOCK, EffectRecord, LAYOUT1_EFFECTS_FILE};
use crate::chain::encode_line_at;
use crate::error::StoreError;
use crate::files::write_atomically;
use crate::io::Storage;
use crate::journal::create_journal;
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};

/// What [`convert_layout1`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversion {
    /// The task folder has no layout-1 `effects.jsonl`.
    Nothing,
    /// The effect ledger was written with these records.
    Converted {
        /// How many.
        records: usize,
        /// Bytes after the last complete record that were not converted (a torn tail a
        /// crashed layout-1 writer left; they stay in `effects.jsonl`): offset and length.
        torn_tail: Option<(u64, u64)>,
    },
    /// An earlier run converted these records (the ledger starts with exactly them; records
    /// appended since are kept).
    AlreadyConverted {
        /// How many.
        records: usize,
    },
}

/// Converts the layout-1 effect ledger of one task folder, `<task_dir>/effects.jsonl`, into
/// the store's `effect-ledger.jsonl` (layout 2). Under the effect ledger's lock: the old file is
/// read and verified first (every complete line must be a canonical record continuing its
/// chain: else `VALP-E-KERNEL-STORE-CORRUPT` with file, line and byte, and nothing is written);
/// then the new file is written atomically (temporary file, sync, rename, folder sync), each
/// record wrapped unchanged in a chained line, with its head anchor `effect-ledger.head` written
/// durably before it ([`create_journal`]; an empty ledger has no line to anchor). The old file is never modified or removed (the
/// upgrade's backup keeps it). Re-running it is harmless: a ledger that already starts with
/// those records is left as it is, and one that holds other records is refused.
pub fn convert_layout1(task_dir: &Path, storage: &dyn Storage) -> Result<Conversion, StoreError> {
    let _lock = LockGuard::acquire(&task_dir.join(EFFECT_LEDGER_LOCK), DEFAULT_LOCK_TIMEOUT)?;
    let old = task_dir.join(LAYOUT1_EFFECTS_FILE);
    let bytes = match std::fs::read(&old) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Conversion::Nothing);
        }
        Err(source) => return Err(StoreError::io(&old, "read", source)),
    };
    // A layout-1 file without a record still converts, to an empty ledger: the effect ledger
    // refuses a folder that holds `effects.jsonl` and no ledger.
    let (records, torn_tail) = read_layout1(&old, &bytes)?;
    let mut converted = Vec::new();
    let mut prior: Option<String> = None;
    for (seq, record) in (0_u64..).zip(&records) {
        // Written before layout 3, these records keep no time: v1 lines, not an invented one.
        let (line, digest) = encode_line_at(seq, prior.as_deref(), None, record);
        converted.extend_from_slice(&line);
        prior = Some(digest);
    }
    let new = task_dir.join(EFFECT_LEDGER_FILE);
    match std::fs::read(&new) {
        Ok(existing) if existing.starts_with(&converted) => {
            return Ok(Conversion::AlreadyConverted {
                records: records.len(),
            });
        }
        Ok(_) => {
            return Err(StoreError::Invalid(format!(
                "{}: already holds an effect ledger that does not start with the records of {}; \
                 nothing was converted",
                new.display(),
                old.display()
            )));
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(StoreError::io(&new, "read", source)),
    }
    if converted.is_empty() {
        // Nothing to anchor: an empty ledger needs no head.
        write_atomically(storage, task_dir, &new, &converted)?;
    } else {
        // The head first, as for every journal: no converted ledger exists without its head.
        create_journal(storage, &new, &converted)?;
    }
    Ok(Conversion::Converted {
        records: records.len(),
        torn_tail,
    })
}

/// The records of a layout-1 `effects.jsonl`, and the offset and length of the torn tail after
/// them.
type Layout1 = (Vec<EffectRecord>, Option<(u64, u64)>);

/// Reads a layout-1 `effects.jsonl`: its records and the torn tail after them, if any (bytes
/// without a final LF, or only NUL bytes and LFs: what an interrupted append leaves).
fn read_layout1(path: &Path, bytes: &[u8]) -> Result<Layout1, StoreError> {
    let mut records: Vec<EffectRecord> = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let rest = &bytes[start..];
        let offset = start as u64;
        let torn = Some((offset, rest.len() as u64));
        let Some(lf) = rest.iter().position(|&byte| byte == b'\n') else {
            return Ok((records, torn));
        };
        if rest.iter().all(|&byte| byte == 0 || byte == b'\n') {
            return Ok((records, torn));
        }
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.to_owned(),
            line: records.len() as u64 + 1,
            byte: offset,
            reason,
        };
        let line = &rest[..=lf];
        let record = decode_canonical(line)
            .map_err(|error| format!("not a canonical JSON line: {error}"))
            .and_then(|value| EffectRecord::decode(&value))
            .map_err(|rule| corrupt(format!("not an effect record: {rule}")))?;
        record
            .check(records.last())
            .map_err(|rule| corrupt(format!("effect record: {rule}")))?;
        if records
            .iter()
            .any(|seen| seen.obligation == record.obligation)
        {
            return Err(corrupt("the obligation already has a record".to_owned()));
        }
        records.push(record);
        start += lf + 1;
    }
    Ok((records, None))
}
