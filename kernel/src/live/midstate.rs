//! A SHA-256 computation that can be stopped, written down and resumed: the running hash of a
//! State's history (`{"accepted_events":[e1,…,en`) that a [`LiveState`](super::LiveState) keeps
//! and a store snapshot carries, so that an open resumes the State digest without re-hashing the
//! history.
//!
//! `sha2`'s hasher keeps its chaining value private, so this one keeps its own: the eight words,
//! the bytes compressed so far and the pending partial block, fed through `sha2::compress256`
//! (the same compression function, with SHA-NI where the CPU has it) with every whole block of
//! an update in one call, as `sha2::Sha256` does: with SHA-NI each call loads and stores the
//! chaining value and checks the CPU, which a call per block paid 128 times over a State
//! body. [`Midstate::digest`]
//! pads as FIPS 180-4 says; the unit tests check it against `sha2::Sha256` at every length
//! around the block boundaries.

use sha2::digest::Update;
use sha2::digest::block_buffer::{BlockBuffer, Eager};
use sha2::digest::generic_array::typenum::U64;
// SHA-256's initial chaining value (FIPS 180-4, 5.3.3) and its bytes, as the two-message
// hasher has them.
use valp_sha256_pair::{INITIAL, state_bytes};

/// A resumable SHA-256 over a byte stream.
#[derive(Clone)]
pub struct Midstate {
    state: [u32; 8],
    /// Whole blocks compressed so far.
    blocks: u64,
    /// The bytes after the last whole block (fewer than 64).
    pending: BlockBuffer<U64, Eager>,
}

impl PartialEq for Midstate {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
            && self.blocks == other.blocks
            && self.pending.get_data() == other.pending.get_data()
    }
}

impl Eq for Midstate {}

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
            .field("pending", &self.pending.get_pos())
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
            pending: BlockBuffer::default(),
        }
    }

    /// The chaining value (32 bytes, big-endian words), the whole blocks compressed and the
    /// pending bytes: everything needed to resume.
    pub fn parts(&self) -> ([u8; 32], u64, &[u8]) {
        (
            state_bytes(&self.state),
            self.blocks,
            self.pending.get_data(),
        )
    }

    /// The chaining value as words, the whole blocks compressed and the pending bytes: a
    /// message to finish elsewhere ([`valp_sha256_pair::Message`]).
    pub(crate) fn words(&self) -> ([u32; 8], u64, &[u8]) {
        (self.state, self.blocks, self.pending.get_data())
    }

    /// Resumes from [`Midstate::parts`].
    pub fn from_parts(state: &[u8], blocks: u64, pending: &[u8]) -> Result<Self, MidstateError> {
        let refused = || MidstateError {
            state: state.len(),
            pending: pending.len(),
        };
        if state.len() != 32 {
            return Err(refused());
        }
        // Holds fewer than 64 bytes, or refuses them.
        let kept = BlockBuffer::try_new(pending).map_err(|_| refused())?;
        let mut words = [0; 8];
        for (word, bytes) in words.iter_mut().zip(state.chunks_exact(4)) {
            *word = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        Ok(Self {
            state: words,
            blocks,
            pending: kept,
        })
    }

    /// The digest of everything fed, `Midstate` left as it was.
    pub fn digest(&self) -> [u8; 32] {
        let mut last = self.pending.clone();
        let bytes = self.blocks * 64 + self.pending.get_pos() as u64;
        let mut state = self.state;
        last.len64_padding_be(bytes * 8, |block| {
            sha2::compress256(&mut state, std::slice::from_ref(block));
        });
        state_bytes(&state)
    }
}

impl Update for Midstate {
    fn update(&mut self, data: &[u8]) {
        let (state, blocks) = (&mut self.state, &mut self.blocks);
        self.pending.digest_blocks(data, |whole| {
            sha2::compress256(state, whole);
            *blocks += whole.len() as u64;
        });
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
    fn pieces_of_any_size_leave_the_parts_of_one_update() {
        let data: Vec<u8> = (0..700_u32)
            .map(|n| (n * 13 + 1).to_le_bytes()[0])
            .collect();
        let mut whole = Midstate::new();
        whole.update(&data);
        assert_eq!(whole.parts().1, 10);
        assert_eq!(whole.parts().2, &data[640..]);
        for piece in [1, 3, 63, 64, 65, 200] {
            let mut fed = Midstate::new();
            for chunk in data.chunks(piece) {
                fed.update(chunk);
            }
            assert_eq!(fed.parts(), whole.parts(), "pieces of {piece}");
            assert!(fed == whole);
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
