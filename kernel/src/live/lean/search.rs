//! Finding a key in the lean index's sorted run by interpolation.
//!
//! Keys are SHA-256 prefixes, so uniformly spread: a key's first 8 bytes, as a fraction of
//! 2^64, estimate where it sits in the run far better than halving does. A binary search over
//! 10^6 slots touches ~20 cache lines; interpolating between the bounds known so far lands
//! within a few slots in ~3 probes. The answer is exact whatever the keys: every probe only
//! narrows the window that must hold the key (the run is sorted, each key once), and after
//! [`PROBES`] probes (keys that are not spread, never seen with hashes) the rest is a plain
//! binary search.

use super::{Key, Slot};

/// Interpolation probes before the rest is binary searched.
const PROBES: usize = 4;
/// Windows at most this long are binary searched (their slots share a few cache lines).
const SHORT: usize = 8;

/// The position of `key` in `run` (sorted by key, each key once).
pub(super) fn position_in(run: &[Slot], key: &Key) -> Option<u32> {
    let target = u128::from(prefix(key));
    // The key, if held, is in `run[low..high]`; `low_value` and `high_value` bound its prefix
    // (the prefixes of the slots just outside the window, or 0 and 2^64).
    let (mut low, mut high) = (0, run.len());
    let (mut low_value, mut high_value) = (0_u128, 1_u128 << 64);
    for _ in 0..PROBES {
        let width = high - low;
        if width <= SHORT {
            break;
        }
        // `low_value <= target < high_value`, so the offset is below `width`.
        let offset = (target - low_value) * width as u128 / (high_value - low_value);
        let at = low + usize::try_from(offset).unwrap_or(usize::MAX).min(width - 1);
        let slot = run[at];
        match slot.key.cmp(key) {
            std::cmp::Ordering::Equal => return Some(slot.position),
            std::cmp::Ordering::Less => {
                low = at + 1;
                low_value = u128::from(prefix(&slot.key));
            }
            std::cmp::Ordering::Greater => {
                high = at;
                high_value = u128::from(prefix(&slot.key)) + 1;
            }
        }
    }
    let window = &run[low..high];
    let at = window.partition_point(|slot| slot.key < *key);
    window
        .get(at)
        .filter(|slot| slot.key == *key)
        .map(|slot| slot.position)
}

/// A key's first 8 bytes, big-endian (the order of the keys' bytes).
pub(super) fn prefix(key: &Key) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&key[..8]);
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use sha2::{Digest as _, Sha256};

    use super::*;
    use crate::live::lean::KEY_LEN;

    /// The plain binary search the interpolation must agree with.
    fn binary(run: &[Slot], key: &Key) -> Option<u32> {
        let at = run.partition_point(|slot| slot.key < *key);
        run.get(at)
            .filter(|slot| slot.key == *key)
            .map(|slot| slot.position)
    }

    fn hashed(n: u32) -> Key {
        let hash: [u8; 32] = Sha256::digest(n.to_le_bytes()).into();
        let mut key = [0; KEY_LEN];
        key.copy_from_slice(&hash[..KEY_LEN]);
        key
    }

    fn run_of(mut keys: Vec<Key>) -> Vec<Slot> {
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter()
            .zip(0..)
            .map(|(key, position)| Slot { key, position })
            .collect()
    }

    /// Keys held and not held, the edges, and the neighbours of every held key.
    fn probes(run: &[Slot]) -> Vec<Key> {
        let mut keys = vec![[0; KEY_LEN], [0xff; KEY_LEN], hashed(u32::MAX)];
        for slot in run {
            keys.push(slot.key);
            let mut above = slot.key;
            above[KEY_LEN - 1] = above[KEY_LEN - 1].wrapping_add(1);
            let mut below = slot.key;
            below[KEY_LEN - 1] = below[KEY_LEN - 1].wrapping_sub(1);
            keys.extend([above, below]);
        }
        keys
    }

    fn agrees_with_binary_search(run: &[Slot]) {
        for key in probes(run) {
            assert_eq!(position_in(run, &key), binary(run, &key), "{key:?}");
        }
    }

    #[test]
    fn finds_what_binary_search_finds_in_spread_keys() {
        for len in [0, 1, 2, 7, 8, 9, 100, 5_000] {
            agrees_with_binary_search(&run_of((0..len).map(hashed).collect()));
        }
    }

    #[test]
    fn finds_what_binary_search_finds_in_keys_that_are_not_spread() {
        // The edge keys held; long runs sharing their first 8 bytes; keys crowded at one end.
        let mut edges = vec![[0; KEY_LEN], [0xff; KEY_LEN]];
        edges.extend((0..50).map(hashed));
        agrees_with_binary_search(&run_of(edges));
        let shared: Vec<Key> = (0..300_u32)
            .map(|n| {
                let mut key = [7; KEY_LEN];
                key[8..].copy_from_slice(&n.to_be_bytes());
                key
            })
            .collect();
        agrees_with_binary_search(&run_of(shared.clone()));
        let crowded: Vec<Key> = (0..300_u32)
            .map(|n| {
                let mut key = [0; KEY_LEN];
                key[..4].copy_from_slice(&n.to_be_bytes());
                key
            })
            .chain([[0xff; KEY_LEN]])
            .chain(shared)
            .collect();
        agrees_with_binary_search(&run_of(crowded));
    }
}
