//! The newest entries of an open journal, read back from its verified tip: what a reader that
//! wants only the end of a long history (the console's Activity pane keeps 200 lines) reads
//! instead of the whole file.
//!
//! **What is trusted, and why.** Only the handle's tip: the seq, byte end and `entry_digest`
//! of its last line, which the open verified (from the genesis, or from a snapshot bound to a
//! line the same way, [`snapshot_open`](crate::snapshot_open)) and [`Journal::refresh`] keeps
//! verified. Nothing read back is taken on trust: the reader counts LFs back from the tip to
//! the start of the first wanted line (canonical JSON escapes every LF inside a string, so an LF
//! ends a line), takes that line's `prior_entry_digest` from its own bytes, and then reads
//! forward with the store's [`ChainReader`], which verifies every line as a chain line
//! (canonical bytes, its own digest, the seq counted, each line chained to the one before).
//! The last line must end exactly at the tip and carry the tip's digest. So every line read is
//! hash-chained to the verified tip: the bytes are the ones the open verified (or, for lines
//! before a snapshot, the ones the snapshot's line chains back to), unless SHA-256 collides.
//! The first line's `prior_entry_digest` is read, not checked: it is bound by that line's own
//! digest, and the line before it is not wanted. A line that does not verify, a wrong count
//! or a tip that moved under the handle (a `valp recover` cut) is an error, never a shorter
//! answer.
//!
//! **What it reads.** The wanted lines twice (back, then forward while verifying) plus at most
//! one 64 KiB block on each side: bounded by the entries asked for, not by the journal.

use std::fs::File;
use std::io::{Read as _, Seek as _, SeekFrom};

use super::{Journal, Recorded, decoded_entry, next_decoded};
use crate::chain::ChainReader;
use crate::error::StoreError;
use crate::machine::Machine;

/// Bytes read per step when counting lines back from the tip.
const BLOCK: u64 = 1 << 16;

impl<M: Machine> Journal<M> {
    /// The newest `count` entries (line 1 on: never the genesis), oldest first, each with the
    /// time the store wrote it: read back from the verified tip (see the
    /// [module](self) for what is trusted). Fewer only when the journal holds fewer.
    pub fn newest_entries(&self, count: u64) -> Result<Vec<Recorded<M::Entry>>, StoreError> {
        let count = count.min(self.len());
        if count == 0 {
            return Ok(Vec::new());
        }
        let end = self.tip.offset;
        let first_seq = self.len() - count + 1;
        let corrupt = |byte: u64, reason: String| StoreError::Corrupt {
            path: self.path().to_owned(),
            line: first_seq + 1,
            byte,
            reason,
        };
        let (start, first_line) = self.line_start_back(end, count)?;
        let prior = crate::snapshot_open::prior_named(&first_line)
            .ok_or_else(|| corrupt(start, "the bytes there are not a chain line".to_owned()))?;
        let mut reader = ChainReader::resume(self.path(), start, first_seq, &prior, false)?;
        let mut entries = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
        let mut last = None;
        while last.as_ref().is_none_or(|(at, _)| *at < end) {
            let Some((line, decoded)) = next_decoded::<M>(&mut reader)? else {
                break;
            };
            let entry = decoded_entry::<M>(self.path(), &line, decoded)?;
            last = Some((line.end, line.digest.clone()));
            entries.push(Recorded {
                seq: line.seq,
                recorded_at: line.recorded_at,
                entry,
            });
        }
        match last {
            Some((at, digest)) if at == end && digest == self.tip.digest => Ok(entries),
            _ => Err(corrupt(
                start,
                format!(
                    "the {count} lines before byte {end} do not end at the verified tip \
                     (seq {}, {}): changed under an open handle",
                    self.len(),
                    self.tip.digest
                ),
            )),
        }
    }

    /// Where the line `count` lines back from the one ending at `end` starts, and its bytes (LF
    /// included): counted by LFs, reading back in [`BLOCK`]s. The LF ending the last line is
    /// the first counted: LF `count` ends the wanted line, LF `count + 1` the one before it.
    fn line_start_back(&self, end: u64, count: u64) -> Result<(u64, Vec<u8>), StoreError> {
        let path = self.path();
        let io = |operation: &'static str| move |source| StoreError::io(path, operation, source);
        let mut file = File::open(path).map_err(io("open"))?;
        let size = file.metadata().map_err(io("stat"))?.len();
        if size < end {
            return Err(StoreError::Corrupt {
                path: path.to_owned(),
                line: self.len() + 1,
                byte: size,
                reason: format!(
                    "the journal is {size} bytes, short of its verified tip at byte {end}: \
                     cut under an open handle"
                ),
            });
        }
        let (mut from, mut seen, mut line_end) = (end, 0, end);
        while from > 0 {
            let block_start = from.saturating_sub(BLOCK);
            let mut block = vec![0; usize::try_from(from - block_start).unwrap_or(0)];
            file.seek(SeekFrom::Start(block_start))
                .and_then(|_| file.read_exact(&mut block))
                .map_err(io("read"))?;
            for (at, _) in block
                .iter()
                .enumerate()
                .rev()
                .filter(|&(_, &byte)| byte == b'\n')
            {
                seen += 1;
                let after = block_start + at as u64 + 1;
                if seen == count {
                    line_end = after;
                } else if seen == count + 1 {
                    let mut line = vec![0; usize::try_from(line_end - after).unwrap_or(0)];
                    file.seek(SeekFrom::Start(after))
                        .and_then(|_| file.read_exact(&mut line))
                        .map_err(io("read"))?;
                    return Ok((after, line));
                }
            }
            from = block_start;
        }
        // Line 0 ends with an LF, and `count` never reaches back to it.
        Err(StoreError::Corrupt {
            path: path.to_owned(),
            line: 1,
            byte: 0,
            reason: format!("fewer than {count} lines before byte {end}"),
        })
    }
}
