//! Two SHA-256 messages hashed side by side: [`digest_pair`] gives both digests, as
//! `sha2::Sha256` would give each (FIPS 180-4), from a chaining value and the bytes that follow.
//!
//! **Why.** A verified VALP entry costs two SHA-256 passes over the next State body (its result
//! digest and its State digest: the protocol's floor). The two messages are independent once the
//! body is known, and one SHA-256 is a serial chain of rounds: on x86-64 with SHA-NI the rounds of
//! two messages interleaved keep the SHA unit busier than one message does (issue 20: ~1.2x the
//! throughput of `sha2`'s own SHA-NI code on the Xeon measured, see ARCHITECTURE.md). Without
//! SHA-NI (other CPUs, or under valgrind, which hides it) the two run one after the other through
//! `sha2::compress256`, with the same results.
//!
//! **Contract.** For every chaining value, count of blocks already compressed and pieces,
//! [`digest_pair`] gives what finishing each message alone gives; the tests check it against
//! `sha2::Sha256` at every length around the block boundaries, split anywhere, and with the
//! messages of different lengths. Pure: no IO, no state kept between calls.

mod blocks;
#[cfg(target_arch = "x86_64")]
mod shani;

use blocks::Blocks;
pub use blocks::Message;

/// SHA-256's initial chaining value (FIPS 180-4, 5.3.3).
pub const INITIAL: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// The SHA-256 digests of `first` and `second`.
pub fn digest_pair(first: &Message<'_>, second: &Message<'_>) -> ([u8; 32], [u8; 32]) {
    let (mut a, mut b) = (Blocks::new(first), Blocks::new(second));
    let (mut state_a, mut state_b) = (first.state, second.state);
    // Pairs blocks while both messages have one, when the CPU has SHA-NI.
    #[cfg(target_arch = "x86_64")]
    shani::compress_pair(&mut state_a, &mut a, &mut state_b, &mut b);
    // What is left (everything without SHA-NI), one message after the other.
    for (state, blocks) in [(&mut state_a, &mut a), (&mut state_b, &mut b)] {
        while let Some(block) = blocks.next_block() {
            sha2::compress256(state, std::slice::from_ref(block.into()));
        }
    }
    (state_bytes(&state_a), state_bytes(&state_b))
}

/// A chaining value as bytes (big-endian words): the digest, once the padding is compressed.
pub fn state_bytes(words: &[u32; 8]) -> [u8; 32] {
    let mut bytes = [0; 32];
    for (out, word) in bytes.chunks_exact_mut(4).zip(words) {
        out.copy_from_slice(&word.to_be_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sha2::digest::Update as _;
    use sha2::{Digest as _, Sha256};

    use super::*;

    fn data(length: usize, seed: u32) -> Vec<u8> {
        (0..length)
            .map(|n| (u32::try_from(n).unwrap() * 31 + seed).to_le_bytes()[0])
            .collect()
    }

    /// `bytes` split into pieces at `cuts` (offsets, clamped), as a message from the start.
    fn pieces(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut from = 0;
        for &cut in cuts {
            let cut = cut.clamp(from, bytes.len());
            out.push(bytes[from..cut].to_vec());
            from = cut;
        }
        out.push(bytes[from..].to_vec());
        out
    }

    #[test]
    fn both_digests_equal_sha256_at_every_length_and_split() {
        let lengths = [
            0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 300, 1_024, 4_100, 8_300,
        ];
        for &length_a in &lengths {
            for &length_b in &[0, 64, 65, 8_300, length_a, length_a + 1] {
                let (bytes_a, bytes_b) = (data(length_a, 1), data(length_b, 7));
                let expected = (
                    <[u8; 32]>::from(Sha256::digest(&bytes_a)),
                    <[u8; 32]>::from(Sha256::digest(&bytes_b)),
                );
                for cuts in [
                    vec![],
                    vec![0, 0],
                    vec![1, 64],
                    vec![63, 65, 200],
                    vec![length_a / 2],
                ] {
                    let (pieces_a, pieces_b) = (pieces(&bytes_a, &cuts), pieces(&bytes_b, &cuts));
                    let slices_a: Vec<&[u8]> = pieces_a.iter().map(Vec::as_slice).collect();
                    let slices_b: Vec<&[u8]> = pieces_b.iter().map(Vec::as_slice).collect();
                    let first = Message::new(INITIAL, 0, &slices_a);
                    let second = Message::new(INITIAL, 0, &slices_b);
                    assert_eq!(
                        digest_pair(&first, &second),
                        expected,
                        "lengths {length_a}/{length_b}, cuts {cuts:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_message_resumed_after_whole_blocks_gives_the_digest_of_all_its_bytes() {
        let bytes = data(3_000, 3);
        for whole in [0, 1, 2, 10, 46] {
            let mut state = INITIAL;
            for block in bytes[..whole * 64].chunks_exact(64) {
                sha2::compress256(
                    &mut state,
                    &[*sha2::digest::generic_array::GenericArray::from_slice(
                        block,
                    )],
                );
            }
            let rest: &[&[u8]] = &[&bytes[whole * 64..]];
            let expected: [u8; 32] = Sha256::new().chain(&bytes).finalize().into();
            let resumed = Message::new(state, u64::try_from(whole).unwrap(), rest);
            let fresh_pieces: &[&[u8]] = &[&bytes[..100]];
            let fresh = Message::new(INITIAL, 0, fresh_pieces);
            let (digest, other) = digest_pair(&resumed, &fresh);
            assert_eq!(digest, expected, "after {whole} blocks");
            assert_eq!(other, <[u8; 32]>::from(Sha256::digest(&bytes[..100])));
        }
    }
}
