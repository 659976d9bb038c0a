//! A SHA-256 computation that can be stopped, written down and resumed: the running hash of a
//! State's history (`{"accepted_events":[e1,…,en`) that a [`LiveState`](super::LiveState) keeps
//! and a store snapshot carries, so that an open resumes the State digest without re-hashing the
//! history.
//!
//! `sha2`'s hasher keeps its chaining value private, so this one keeps its own: the eight words,
//! the bytes compressed so far and the pending partial block, fed through `sha2::compress256`
//! (the same compression function, with SHA-NI where the CPU has it). [`Midstate::digest`]
//! pads as FIPS 180-4 says; the unit tests check it against `sha2::Sha256` at every length
//! around the block boundaries.

use sha2::digest::Update;
use sha2::digest::generic_array::GenericArray;

/// The initial chaining value (FIPS 180-4, 5.3.3).
const INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// A resumable SHA-256 over a byte stream.
#[derive(Clone, PartialEq, Eq)]
pub struct Midstate {
    state: [u32; 8],
    /// Whole blocks compressed so far.
    blocks: u64,
    /// The bytes after the last whole block (fewer than 64).
    pending: Vec<u8>,
}

impl Default for Midstate {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Midstate {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Midstate")
            .field("blocks", &self.blocks)
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

/// Why [`Midstate::from_parts`] refuses its parts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a SHA-256 midstate needs 32 state bytes and fewer than 64 pending bytes (got {state} and {pending})"
)]
pub struct MidstateError {
    state: usize,
    pending: usize,
}

impl Midstate {
    /// Nothing hashed yet.
    pub fn new() -> Self {
        Self {
            state: INITIAL,
            blocks: 0,
            pending: Vec::with_capacity(64),
        }
    }

    /// The chaining value (32 bytes, big-endian words), the whole blocks compressed and the
    /// pending bytes: everything needed to resume.
    pub fn parts(&self) -> ([u8; 32], u64, &[u8]) {
        let mut state = [0; 32];
        for (out, word) in state.chunks_exact_mut(4).zip(self.state) {
            out.copy_from_slice(&word.to_be_bytes());
        }
        (state, self.blocks, &self.pending)
    }

    /// Resumes from [`Midstate::parts`].
    pub fn from_parts(state: &[u8], blocks: u64, pending: &[u8]) -> Result<Self, MidstateError> {
        if state.len() != 32 || pending.len() >= 64 {
            return Err(MidstateError {
                state: state.len(),
                pending: pending.len(),
            });
        }
        let mut words = [0; 8];
        for (word, bytes) in words.iter_mut().zip(state.chunks_exact(4)) {
            *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        let mut kept = Vec::with_capacity(64);
        kept.extend_from_slice(pending);
        Ok(Self {
            state: words,
            blocks,
            pending: kept,
        })
    }

    fn compress(&mut self, block: &[u8]) {
        sha2::compress256(
            &mut self.state,
            std::slice::from_ref(GenericArray::from_slice(block)),
        );
        self.blocks += 1;
    }

    /// The digest of everything fed, `Midstate` left as it was.
    pub fn digest(&self) -> [u8; 32] {
        let mut last = self.clone();
        let bits = (self.blocks * 64 + self.pending.len() as u64) * 8;
        let mut tail = std::mem::take(&mut last.pending);
        tail.push(0x80);
        while tail.len() % 64 != 56 {
            tail.push(0);
        }
        tail.extend_from_slice(&bits.to_be_bytes());
        for block in tail.chunks_exact(64) {
            last.compress(block);
        }
        last.parts().0
    }
}

impl Update for Midstate {
    fn update(&mut self, mut data: &[u8]) {
        if !self.pending.is_empty() {
            let take = (64 - self.pending.len()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.pending.len() < 64 {
                return;
            }
            let block = std::mem::take(&mut self.pending);
            self.compress(&block);
            self.pending = block;
            self.pending.clear();
        }
        let mut blocks = data.chunks_exact(64);
        for block in &mut blocks {
            self.compress(block);
        }
        self.pending.extend_from_slice(blocks.remainder());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sha2::{Digest as _, Sha256};

    use super::*;

    #[test]
    fn equals_sha256_at_every_length_and_split() {
        // Many blocks in one update, and splits inside them.
        let data: Vec<u8> = (0..2_500_u32)
            .map(|n| (n * 7 + 3).to_le_bytes()[0])
            .collect();
        for length in [
            0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 129, 300, 1_024, 1_090, 2_500,
        ] {
            let expected: [u8; 32] = Sha256::digest(&data[..length]).into();
            for split in [
                0,
                1,
                31,
                63,
                64,
                65,
                1_023,
                1_024,
                1_025,
                length / 2,
                length,
            ] {
                let split = split.min(length);
                let mut midstate = Midstate::new();
                midstate.update(&data[..split]);
                let (state, blocks, pending) = midstate.parts();
                let mut resumed = Midstate::from_parts(&state, blocks, pending).unwrap();
                resumed.update(&data[split..length]);
                assert_eq!(resumed.digest(), expected, "length {length} split {split}");
            }
        }
    }

    #[test]
    fn refuses_parts_that_are_not_a_midstate() {
        assert_eq!(
            Midstate::from_parts(&[0; 31], 0, &[])
                .unwrap_err()
                .to_string(),
            "a SHA-256 midstate needs 32 state bytes and fewer than 64 pending bytes (got 31 and \
             0)"
        );
        assert!(Midstate::from_parts(&[0; 32], 0, &[0; 64]).is_err());
    }
}
