//! SHA-256 messages hashed side by side: [`digest_pair`] gives two digests and [`digest_many`]
//! any number, each as `sha2::Sha256` would give it (FIPS 180-4), from a chaining value and the
//! bytes that follow.
//!
//! **Why.** A verified VALP entry costs two SHA-256 passes over the next State body (its result
//! digest and its State digest: the protocol's floor), and in a verify the passes of a run of
//! entries are independent messages once their bodies are known (the kernel's
//! `DigestChain::check_all`). One SHA-256 is a serial chain of rounds, so more messages at once
//! keep the CPU busier:
//! - with AVX-512 (`lanes`), sixteen messages take one 32-bit lane each of every register:
//!   ~2x the throughput of the SHA-NI pair below on the Xeon measured (issue 20, ARCHITECTURE.md);
//! - with SHA-NI (`shani`), two messages' rounds interleaved: ~1.2x `sha2`'s own SHA-NI code;
//! - without either (other CPUs, or under valgrind, which hides both), one message after the
//!   other through `sha2::compress256`, with the same results.
//!
//! **Contract.** For every chaining value, count of blocks already compressed and pieces,
//! [`digest_pair`] and [`digest_many`] give what finishing each message alone gives; the tests
//! check it against `sha2::Sha256` at every length around the block boundaries, split anywhere,
//! resumed, with the messages of different lengths and in every count around the sixteen
//! lanes. Pure: no IO, no state kept between calls.

mod blocks;
#[cfg(target_arch = "x86_64")]
mod lanes;
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
    finish(&mut state_a, &mut a);
    finish(&mut state_b, &mut b);
    (state_bytes(&state_a), state_bytes(&state_b))
}

/// Compresses what is left of `blocks` one block at a time (`sha2`): the part a faster path
/// did not take, or all of it.
fn finish(state: &mut [u32; 8], blocks: &mut Blocks<'_>) {
    while let Some(block) = blocks.next_block() {
        sha2::compress256(state, std::slice::from_ref(block.into()));
    }
}

/// The SHA-256 digests of `messages`, in order, into `digests` (cleared first): sixteen at a
/// time through AVX-512 when the CPU has it and at least [`LANES_FROM`] are left (a pass costs
/// the same for one message as for sixteen), else two at a time as [`digest_pair`] does.
pub fn digest_many(messages: &[Message<'_>], digests: &mut Vec<[u8; 32]>) {
    digests.clear();
    let mut rest = messages;
    #[cfg(target_arch = "x86_64")]
    if lanes::available() {
        while rest.len() >= LANES_FROM {
            let (group, after) = rest.split_at(rest.len().min(lanes::LANES));
            let mut blocks: Vec<Blocks<'_>> = group.iter().map(Blocks::new).collect();
            let mut states: Vec<[u32; 8]> = group.iter().map(|message| message.state).collect();
            lanes::compress_lanes(&mut states, &mut blocks);
            // Nothing is left after the lanes; were anything, it would still be hashed here.
            for (state, blocks) in states.iter_mut().zip(&mut blocks) {
                finish(state, blocks);
            }
            digests.extend(states.iter().map(state_bytes));
            rest = after;
        }
    }
    let mut pairs = rest.chunks_exact(2);
    for pair in pairs.by_ref() {
        let (first, second) = digest_pair(&pair[0], &pair[1]);
        digests.extend([first, second]);
    }
    if let [last] = pairs.remainder() {
        digests.push(digest_pair(last, &Message::new(INITIAL, 0, &[])).0);
    }
}

/// The fewest messages [`digest_many`] hashes sixteen side by side: below it, two at a time
/// costs less (measured: a sixteen-lane pass costs about what eight pairs do).
pub const LANES_FROM: usize = 9;

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
            let state = resumed_after(&bytes, whole);
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

    /// The chaining value after the first `whole` blocks of `bytes`.
    fn resumed_after(bytes: &[u8], whole: usize) -> [u32; 8] {
        let mut state = INITIAL;
        for block in bytes[..whole * 64].chunks_exact(64) {
            let block = sha2::digest::generic_array::GenericArray::from_slice(block);
            sha2::compress256(&mut state, &[*block]);
        }
        state
    }

    #[test]
    fn many_digests_equal_sha256_whatever_the_count_lengths_and_start() {
        let lengths = [
            0, 1, 55, 56, 63, 64, 65, 119, 120, 128, 300, 4_100, 8_300, 8_301,
        ];
        // Around LANES_FROM and the sixteen lanes: pairs only, lanes with a pair or one after.
        for count in [0, 1, 2, 3, 8, 9, 15, 16, 17, 25, 33] {
            let owned: Vec<Vec<u8>> = (0..count)
                .map(|n| {
                    let length = lengths[n % lengths.len()] + n / lengths.len();
                    data(length, u32::try_from(n).unwrap())
                })
                .collect();
            // Every third message resumes after its whole blocks but the last (or none).
            let whole: Vec<usize> = owned
                .iter()
                .enumerate()
                .map(|(n, bytes)| {
                    if n % 3 == 2 {
                        (bytes.len() / 64).saturating_sub(1)
                    } else {
                        0
                    }
                })
                .collect();
            let pieces: Vec<Vec<Vec<u8>>> = owned
                .iter()
                .zip(&whole)
                .enumerate()
                .map(|(n, (bytes, &whole))| pieces(&bytes[whole * 64..], &[n, 64 + n, 130]))
                .collect();
            let slices: Vec<Vec<&[u8]>> = pieces
                .iter()
                .map(|message| message.iter().map(Vec::as_slice).collect())
                .collect();
            let messages: Vec<Message<'_>> = slices
                .iter()
                .zip(owned.iter().zip(&whole))
                .map(|(message, (bytes, &whole))| {
                    let state = resumed_after(bytes, whole);
                    Message::new(state, u64::try_from(whole).unwrap(), message)
                })
                .collect();
            let mut digests = vec![[1; 32]];
            digest_many(&messages, &mut digests);
            let expected: Vec<[u8; 32]> = owned
                .iter()
                .map(|bytes| Sha256::digest(bytes).into())
                .collect();
            assert_eq!(digests, expected, "{count} messages");
        }
    }

    /// What `digest_many` gives rests on the sixteen-lane pass where the CPU has it: the test
    /// above must not pass on the pairs alone.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn sixteen_lanes_give_each_message_its_own_digest() {
        if !lanes::available() {
            eprintln!("no AVX-512 here: the sixteen-lane pass is not exercised");
            return;
        }
        let owned: Vec<Vec<u8>> = (0..16).map(|n| data(64 * n + n, 5)).collect();
        let slices: Vec<[&[u8]; 1]> = owned.iter().map(|bytes| [bytes.as_slice()]).collect();
        let mut blocks: Vec<Blocks<'_>> = slices
            .iter()
            .map(|piece| Blocks::new(&Message::new(INITIAL, 0, piece)))
            .collect();
        let mut states = vec![INITIAL; 16];
        lanes::compress_lanes(&mut states, &mut blocks);
        assert!(
            blocks.iter().all(|lane| !lane.has_block()),
            "every block compressed"
        );
        for (state, bytes) in states.iter().zip(&owned) {
            assert_eq!(state_bytes(state), <[u8; 32]>::from(Sha256::digest(bytes)));
        }
    }
}
