//! A membership filter over the lean index's keys, so that looking up an event id that was
//! never indexed (every line of a journal being verified) rarely searches the index.
//!
//! One bit per slot, the slot being a key's first bits (keys are SHA-256 prefixes, evenly
//! spread). A clear bit proves the key was never inserted; a set bit proves nothing, and the
//! exact search follows, so answers never depend on the filter. The search it spares is a
//! walk down the tail's tree (~32 K keys) and interpolation probes into the run, a few cache
//! misses each: ~16 % of the applying thread's samples in a 10^5 verify. It keeps at least
//! [`SLOTS_PER_KEY`] slots per key (a set bit for ~1 in 16 to 1 in 8 new keys), and is
//! refilled at twice the size from the index's keys when they outgrow it: 1-2 bytes per key (the
//! run holds 16), 1 MiB at 10^6 events.

use super::{Key, search::prefix};

/// Slots per key, at least.
const SLOTS_PER_KEY: usize = 8;
/// Slots of the smallest filter, as a power of two (8 KiB).
const MIN_SLOT_BITS: u32 = 16;

/// The filter: `1 << slot_bits` bits.
#[derive(Clone)]
pub(super) struct Filter {
    words: Vec<u64>,
    slot_bits: u32,
}

impl Filter {
    /// An empty filter with room for `keys` keys.
    pub(super) fn for_keys(keys: usize) -> Self {
        let mut slot_bits = MIN_SLOT_BITS;
        while (1_usize << slot_bits) < keys.saturating_mul(SLOTS_PER_KEY) && slot_bits < 48 {
            slot_bits += 1;
        }
        Self {
            words: vec![0; (1 << slot_bits) / 64],
            slot_bits,
        }
    }

    /// Whether it has room for `keys` keys.
    pub(super) fn fits(&self, keys: usize) -> bool {
        keys.saturating_mul(SLOTS_PER_KEY) <= 1 << self.slot_bits
    }

    /// The word and bit of `key`'s slot.
    fn slot(&self, key: &Key) -> (usize, u32) {
        let slot = prefix(key) >> (64 - self.slot_bits);
        // Below 2^42, so within usize on the 64-bit targets this runs on.
        let word = usize::try_from(slot / 64).unwrap_or(usize::MAX);
        (word, u32::try_from(slot % 64).unwrap_or(0))
    }

    /// Marks `key` as held.
    pub(super) fn insert(&mut self, key: &Key) {
        let (word, bit) = self.slot(key);
        if let Some(word) = self.words.get_mut(word) {
            *word |= 1 << bit;
        }
    }

    /// `false` when `key` was never inserted; `true` when it may have been.
    pub(super) fn may_hold(&self, key: &Key) -> bool {
        let (word, bit) = self.slot(key);
        self.words.get(word).is_none_or(|word| word >> bit & 1 == 1)
    }
}

#[cfg(test)]
mod tests {
    use sha2::{Digest as _, Sha256};

    use super::*;

    /// A key as the index makes them: the first bytes of a SHA-256.
    fn key(n: u64) -> Key {
        let mut key = [0; 12];
        key.copy_from_slice(&Sha256::digest(n.to_le_bytes())[..12]);
        key
    }

    #[test]
    fn holds_every_key_inserted_and_rules_most_others_out() {
        let mut filter = Filter::for_keys(10_000);
        assert!(filter.fits(10_000) && !filter.fits(100_000));
        for n in 0..10_000 {
            filter.insert(&key(n));
        }
        assert!((0..10_000).all(|n| filter.may_hold(&key(n))));
        let passed = (10_000..20_000)
            .filter(|&n| filter.may_hold(&key(n)))
            .count();
        assert!(passed < 2_000, "{passed} of 10000 new keys not ruled out");
    }

    #[test]
    fn the_smallest_filter_and_the_extreme_keys() {
        let mut filter = Filter::for_keys(0);
        assert_eq!(filter.words.len(), (1 << MIN_SLOT_BITS) / 64);
        for key in [[0; 12], [0xff; 12]] {
            assert!(!filter.may_hold(&key));
            filter.insert(&key);
            assert!(filter.may_hold(&key));
        }
    }
}
