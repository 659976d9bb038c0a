//! Reading a journal's entries on from a line already read: what a fold over a journal's
//! history (the runtime's correction cycle) keeps between reads, so that it reads only the lines
//! appended since. The line is named as a snapshot names it ([`LineBinding`]: seq, entry
//! digest, end), and is checked the way a snapshot's line is (read back from its end, verified
//! as a chain line with that digest: `snapshot_open::bound_line`) before the reader resumes
//! after it, so a journal cut by `valp recover` or replaced is noticed, never read on from.

use std::path::Path;

use super::{Recorded, decoded_entry, next_decoded};
use crate::chain::ChainReader;
use crate::error::StoreError;
use crate::machine::Machine;

/// One journal line, as a reader that stands after it names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineBinding {
    /// Its sequence number (the revision its entry produced).
    pub seq: u64,
    /// Its `entry_digest`.
    pub entry_digest: String,
    /// The byte just after its LF (the journal's length when it was the last line).
    pub length: u64,
}

/// What [`read_entries_after`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAfter {
    /// The line is there: the entries after it were read; the line the reader now stands after
    /// (the same one when nothing was appended) and how many entries were read.
    Read {
        /// The last line read.
        last: LineBinding,
        /// Entries read after the line.
        entries: u64,
    },
    /// The journal has no such line (cut, replaced, or never this journal's): why. Nothing
    /// was read.
    NotThere(String),
}

/// Calls `each` with every entry of the journal file `path` of machine `M` after the line
/// `after` (every entry, line 1 on, when `after` is `None` or the genesis line), in order, as
/// [`read_entries`](super::read_entries) does (chain-verified and decoded, not replayed; reading
/// stops at a torn tail). The line `after` must be in the journal with its digest and end.
pub fn read_entries_after<M: Machine>(
    path: &Path,
    after: Option<&LineBinding>,
    mut each: impl FnMut(Recorded<M::Entry>),
) -> Result<ReadAfter, StoreError> {
    let (mut reader, mut last) = match after.filter(|line| line.seq > 0) {
        None => (ChainReader::open(path)?, None),
        Some(line) => {
            let (found, _) = match crate::snapshot_open::bound_line(path, line.seq, line.length) {
                Ok(found) => found,
                Err(reason) => return Ok(ReadAfter::NotThere(reason)),
            };
            if found.digest != line.entry_digest {
                return Ok(ReadAfter::NotThere(format!(
                    "line {} (seq {}) has entry_digest {}, not {}",
                    line.seq + 1,
                    line.seq,
                    found.digest,
                    line.entry_digest
                )));
            }
            let reader = ChainReader::resume(
                path,
                found.end,
                found.seq + 1,
                &found.digest,
                found.recorded_at.is_some(),
            )?;
            (reader, Some(line.clone()))
        }
    };
    let mut entries = 0;
    while let Some((line, decoded)) = next_decoded::<M>(&mut reader)? {
        if line.seq > 0 {
            let entry = decoded_entry::<M>(path, &line, decoded)?;
            each(Recorded {
                seq: line.seq,
                recorded_at: line.recorded_at,
                entry,
            });
            entries += 1;
        }
        last = Some(LineBinding {
            seq: line.seq,
            entry_digest: line.digest,
            length: line.end,
        });
    }
    match last {
        Some(last) => Ok(ReadAfter::Read { last, entries }),
        None => Ok(ReadAfter::NotThere(
            "the journal has no verified line".to_owned(),
        )),
    }
}
