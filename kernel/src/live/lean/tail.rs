//! The lean index's tail: the keys indexed since the last merge into the run, in an
//! open-addressing table (linear probing, at most half full).
//!
//! Keys are SHA-256 prefixes, so their first bits place them evenly: a lookup or an insert is
//! one probe into one cache line, most of the time, where a tree of up to [`TAIL`] keys took
//! ~15 key comparisons on ~4 nodes per lookup and per insert (both run for every verified
//! entry). The table doubles as it fills (from [`MIN_SLOTS`]), so a tail that holds a few keys
//! (a read-only handle that follows a journal) holds a few slots. Deterministic: nothing is
//! random, the slots depend only on the keys. [`Tail::take_sorted`] hands the keys over in
//! key order for the merge, and leaves the table empty with its memory kept.

use super::{Key, Slot, TAIL};

/// Slots of a table that holds any key.
const MIN_SLOTS: usize = 64;
/// Slots when the tail is full: a power of two at least twice [`TAIL`].
const MAX_SLOTS: usize = (2 * TAIL).next_power_of_two();

/// The keys indexed since the last merge, each once, with their positions.
#[derive(Clone, Default)]
pub(super) struct Tail {
    /// A power of two long (or empty), at most half of them in use.
    slots: Vec<Slot>,
    /// One bit per slot: whether it holds a key.
    used: Vec<u64>,
    len: usize,
}

impl Tail {
    /// Keys held.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes allocated for the slots and their bits.
    pub(super) fn held_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot>() + self.used.capacity() * 8
    }

    /// The position held for `key`.
    pub(super) fn get(&self, key: &Key) -> Option<u32> {
        if self.len == 0 {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = home(key, self.slots.len());
        while self.is_used(at) {
            let slot = &self.slots[at];
            if slot.key == *key {
                return Some(slot.position);
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// Holds `key` at `position`; `key` must not be held yet (the index looked it up).
    pub(super) fn insert(&mut self, key: Key, position: u32) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        self.place(Slot { key, position });
        self.len += 1;
    }

    /// The keys in key order, taken out: the table is empty afterwards (its memory kept).
    pub(super) fn take_sorted(&mut self) -> &[Slot] {
        let mut kept = 0;
        for at in 0..self.slots.len() {
            if self.is_used(at) {
                self.slots[kept] = self.slots[at];
                kept += 1;
            }
        }
        self.used.fill(0);
        self.len = 0;
        let taken = &mut self.slots[..kept];
        taken.sort_unstable_by_key(|slot| slot.key);
        taken
    }

    /// The keys in key order (a copy).
    pub(super) fn sorted(&self) -> Vec<Slot> {
        let mut slots: Vec<Slot> = (0..self.slots.len())
            .filter(|&at| self.is_used(at))
            .map(|at| self.slots[at])
            .collect();
        slots.sort_unstable_by_key(|slot| slot.key);
        slots
    }

    /// Doubles the slots (up to [`MAX_SLOTS`], which a full tail never outgrows) and places the
    /// keys again.
    fn grow(&mut self) {
        let slots = (2 * self.slots.len()).clamp(MIN_SLOTS, MAX_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); slots]);
        let old_used = std::mem::replace(&mut self.used, vec![0; slots / 64]);
        for (at, slot) in old.into_iter().enumerate() {
            if old_used[at / 64] & (1 << (at % 64)) != 0 {
                self.place(slot);
            }
        }
    }

    /// Puts `slot` into the first free slot from its key's home.
    fn place(&mut self, slot: Slot) {
        let mask = self.slots.len() - 1;
        let mut at = home(&slot.key, self.slots.len());
        while self.is_used(at) {
            at = (at + 1) & mask;
        }
        self.slots[at] = slot;
        self.used[at / 64] |= 1 << (at % 64);
    }

    fn is_used(&self, at: usize) -> bool {
        self.used[at / 64] & (1 << (at % 64)) != 0
    }
}

/// Where the probe for `key` starts in a table of `slots` slots (a power of two): its first
/// bits.
fn home(key: &Key, slots: usize) -> usize {
    let first = u64::from_be_bytes([
        key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
    ]);
    let bits = slots.trailing_zeros();
    usize::try_from(first >> (64 - bits)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use sha2::{Digest as _, Sha256};

    use super::*;
    use crate::live::lean::KEY_LEN;

    fn hashed(n: u32) -> Key {
        let hash: [u8; 32] = Sha256::digest(n.to_le_bytes()).into();
        let mut key = [0; KEY_LEN];
        key.copy_from_slice(&hash[..KEY_LEN]);
        key
    }

    /// Agrees with a tree of the same keys: lookups of held and unheld keys, and the order.
    fn agrees(tail: &Tail, tree: &BTreeMap<Key, u32>, unheld: &[Key]) {
        assert_eq!(tail.len(), tree.len());
        for (key, position) in tree {
            assert_eq!(tail.get(key), Some(*position));
        }
        for key in unheld {
            assert_eq!(tail.get(key), tree.get(key).copied());
        }
        let sorted: Vec<(Key, u32)> = tail
            .sorted()
            .iter()
            .map(|slot| (slot.key, slot.position))
            .collect();
        assert_eq!(
            sorted,
            tree.iter().map(|(k, p)| (*k, *p)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn holds_what_a_tree_holds_as_it_grows_and_is_taken() {
        let mut tail = Tail::default();
        let mut tree = BTreeMap::new();
        let unheld: Vec<Key> = (1_000_000..1_000_200).map(hashed).collect();
        agrees(&tail, &tree, &unheld);
        for n in 0..u32::try_from(TAIL).unwrap() {
            tail.insert(hashed(n), n);
            tree.insert(hashed(n), n);
            if n.is_power_of_two() || n % 5_000 == 0 {
                agrees(&tail, &tree, &unheld);
            }
        }
        agrees(&tail, &tree, &unheld);
        assert!(tail.slots.len() <= MAX_SLOTS && 2 * tail.len() <= tail.slots.len());
        let taken: Vec<(Key, u32)> = tail
            .take_sorted()
            .iter()
            .map(|slot| (slot.key, slot.position))
            .collect();
        assert_eq!(taken, tree.into_iter().collect::<Vec<_>>());
        agrees(&tail, &BTreeMap::new(), &unheld);
        // Filled again after a take.
        tail.insert(hashed(7), 70);
        assert_eq!(tail.get(&hashed(7)), Some(70));
        assert_eq!(tail.get(&hashed(8)), None);
    }

    #[test]
    fn keys_sharing_their_first_bits_are_all_found() {
        // The edge keys, and keys that all start the probe at the same slot.
        let mut tail = Tail::default();
        let mut tree = BTreeMap::new();
        let mut keys = vec![[0; KEY_LEN], [0xff; KEY_LEN]];
        keys.extend((0..200_u32).map(|n| {
            let mut key = [0x80; KEY_LEN];
            key[8..].copy_from_slice(&n.to_be_bytes());
            key
        }));
        for (key, position) in keys.iter().zip(0..) {
            tail.insert(*key, position);
            tree.insert(*key, position);
        }
        let mut unheld = [0x80; KEY_LEN];
        unheld[8..].copy_from_slice(&500_u32.to_be_bytes());
        agrees(&tail, &tree, &[unheld, [0x7f; KEY_LEN], [0xfe; KEY_LEN]]);
    }
}
