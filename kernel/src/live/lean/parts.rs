//! The lean index written down and read back (for a store snapshot): its keys in key order,
//! each with its position (the run and the tail merged), and the two digests of every position
//! when it holds them. Reading back gives a run and an empty tail, and copies the digests (or,
//! read back without them, leaves them to a [`Recall`]); nothing is re-hashed.

use std::sync::Arc;

use super::{CHUNK, Digests, KEY_LEN, Key, LeanIndex, Recall, Slot};
use crate::live::parts::{KEY_RECORD, LeanParts, PartsError};

impl LeanIndex {
    /// Its keys (key order, 12 bytes + position as 4 big-endian bytes each) and the input and
    /// result digests of every position (64 bytes each; none when they are recalled).
    pub(crate) fn to_parts(&self) -> LeanParts {
        let mut keys = Vec::with_capacity((self.run.len() + self.tail.len()) * KEY_RECORD);
        for record in self.key_records() {
            keys.extend_from_slice(&record);
        }
        let mut digests = Vec::new();
        if let Digests::Held(chunks) = &self.digests {
            digests.reserve_exact(self.len * 64);
            for pair in chunks.iter().flatten() {
                digests.extend_from_slice(pair);
            }
        }
        LeanParts { keys, digests }
    }

    /// Its key records in key order, as [`LeanIndex::to_parts`] writes them, one at a time
    /// (for a check that compares them with a file's without a second copy of the index).
    pub(crate) fn key_records(&self) -> KeyRecords<'_> {
        KeyRecords {
            run: self.run.iter().peekable(),
            tail: self.tail.iter().peekable(),
        }
    }

    /// The index [`LeanIndex::to_parts`] wrote (with its digests): keys strictly increasing,
    /// every position below the number of digest pairs.
    pub(crate) fn from_parts(parts: &LeanParts) -> Result<Self, PartsError> {
        if !parts.digests.len().is_multiple_of(64) {
            return Err(PartsError::Index("its byte lengths are not whole records"));
        }
        let len = parts.digests.len() / 64;
        let run = run_of(&parts.keys, len)?;
        let chunks = parts
            .digests
            .chunks(CHUNK * 64)
            .map(|chunk| {
                chunk
                    .chunks_exact(64)
                    .map(|pair| {
                        let mut digests = [0; 64];
                        digests.copy_from_slice(pair);
                        digests
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        Ok(Self::of_run(run, Digests::Held(chunks), len))
    }

    /// The index of `len` events [`LeanIndex::to_parts`] wrote, read back without its digests
    /// (`parts.digests` empty): `recall` gives them when an event id is seen again, as for
    /// [`LeanIndex::recalling`]. Keys strictly increasing, every position below `len`.
    pub(crate) fn from_keys_recalling(
        parts: &LeanParts,
        len: usize,
        recall: Arc<dyn Recall>,
    ) -> Result<Self, PartsError> {
        if !parts.digests.is_empty() {
            return Err(PartsError::Index("a recalling index holds no digests"));
        }
        Ok(Self::of_run(
            run_of(&parts.keys, len)?,
            Digests::Recalled(recall),
            len,
        ))
    }
}

/// The key records of a [`LeanIndex`] in key order: its run and its tail merged (see
/// [`LiveState::index_key_records`](crate::live::LiveState::index_key_records)).
pub struct KeyRecords<'a> {
    run: std::iter::Peekable<std::slice::Iter<'a, Slot>>,
    tail: std::iter::Peekable<std::collections::btree_map::Iter<'a, Key, u32>>,
}

impl Iterator for KeyRecords<'_> {
    type Item = [u8; KEY_RECORD];

    fn next(&mut self) -> Option<[u8; KEY_RECORD]> {
        let from_run = match (self.run.peek(), self.tail.peek()) {
            (Some(slot), Some((key, _))) => slot.key < **key,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return None,
        };
        let (key, position) = if from_run {
            let slot = self.run.next()?;
            (slot.key, slot.position)
        } else {
            let (key, position) = self.tail.next()?;
            (*key, *position)
        };
        let mut record = [0; KEY_RECORD];
        record[..KEY_LEN].copy_from_slice(&key);
        record[KEY_LEN..].copy_from_slice(&position.to_be_bytes());
        Some(record)
    }
}

/// The sorted run of key records `keys` for an index of `len` events.
fn run_of(keys: &[u8], len: usize) -> Result<Vec<Slot>, PartsError> {
    if !keys.len().is_multiple_of(KEY_RECORD) {
        return Err(PartsError::Index("its byte lengths are not whole records"));
    }
    let mut previous: Option<Key> = None;
    let mut run = Vec::with_capacity(keys.len() / KEY_RECORD);
    for record in keys.chunks_exact(KEY_RECORD) {
        let mut key = [0; KEY_LEN];
        key.copy_from_slice(&record[..KEY_LEN]);
        let position = u32::from_be_bytes([
            record[KEY_LEN],
            record[KEY_LEN + 1],
            record[KEY_LEN + 2],
            record[KEY_LEN + 3],
        ]);
        if previous.is_some_and(|before| before >= key) {
            return Err(PartsError::Index("its keys are not strictly increasing"));
        }
        if usize::try_from(position).map_or(true, |at| at >= len) {
            return Err(PartsError::Index("a key names a position it does not hold"));
        }
        previous = Some(key);
        run.push(Slot { key, position });
    }
    Ok(run)
}
