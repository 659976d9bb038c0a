//! The lean index written down and read back (for a store snapshot): its keys in key order,
//! each with its position, and the two digests of every position. Reading back builds the
//! `BTreeMap` from sorted keys in one pass and copies the digests; nothing is re-hashed.

use std::collections::BTreeMap;

use super::{CHUNK, LeanIndex};
use crate::live::parts::{KEY_RECORD, LeanParts, PartsError};

impl LeanIndex {
    /// Its keys (key order, 16 bytes + position as 4 big-endian bytes each) and the input and
    /// result digests of every position (64 bytes each).
    pub(crate) fn to_parts(&self) -> LeanParts {
        let mut keys = Vec::with_capacity(self.by_key.len() * KEY_RECORD);
        for (key, position) in &self.by_key {
            keys.extend_from_slice(key);
            keys.extend_from_slice(&position.to_be_bytes());
        }
        let mut digests = Vec::with_capacity(self.len * 64);
        for chunk in &self.digests {
            for pair in chunk {
                digests.extend_from_slice(pair);
            }
        }
        LeanParts { keys, digests }
    }

    /// The index [`LeanIndex::to_parts`] wrote: keys strictly increasing, every position below
    /// the number of digest pairs.
    pub(crate) fn from_parts(parts: &LeanParts) -> Result<Self, PartsError> {
        if !parts.keys.len().is_multiple_of(KEY_RECORD) || !parts.digests.len().is_multiple_of(64) {
            return Err(PartsError::Index("its byte lengths are not whole records"));
        }
        let len = parts.digests.len() / 64;
        let mut previous: Option<[u8; 16]> = None;
        let mut pairs = Vec::with_capacity(parts.keys.len() / KEY_RECORD);
        for record in parts.keys.chunks_exact(KEY_RECORD) {
            let mut key = [0; 16];
            key.copy_from_slice(&record[..16]);
            let position = u32::from_be_bytes([record[16], record[17], record[18], record[19]]);
            if previous.is_some_and(|before| before >= key) {
                return Err(PartsError::Index("its keys are not strictly increasing"));
            }
            if usize::try_from(position).map_or(true, |at| at >= len) {
                return Err(PartsError::Index("a key names a position it does not hold"));
            }
            previous = Some(key);
            pairs.push((key, position));
        }
        let by_key: BTreeMap<[u8; 16], u32> = pairs.into_iter().collect();
        let digests = parts
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
        Ok(Self {
            by_key,
            digests,
            len,
        })
    }
}
