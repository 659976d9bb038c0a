//! The idempotency index of a [`LiveState`](super::LiveState) that does not keep its history:
//! what a replay that only verifies (the store's `valp verify`) needs of every accepted event,
//! in 84 bytes instead of the ~540 of an owned [`AcceptedEvent`] and its index keys.
//!
//! Per accepted event it keeps a 16-byte key (the first half of the SHA-256 of the event id's
//! canonical form), the raw 32 bytes of its input digest and of its result digest, and the
//! event's position. Its result id is not kept: an event the kernel accepted has the result id
//! `<event_id>:accepted`, which is rebuilt from the id asked for. [`LeanIndex::find`] therefore
//! answers exactly what a lookup in the full history answers (the same `AcceptedEvent`), as long
//! as no two event ids share a 128-bit key; a shared key could only make a later event look like
//! a duplicate (the journal is then refused, never wrongly accepted), and finding one takes
//! about 2^64 SHA-256 evaluations.
//!
//! Entries that this form cannot hold exactly (a result id that is not the derived one, a digest
//! that is not `sha256:` + 64 lowercase hex digits: only possible in a history handed in from
//! outside, never in one the kernel built) make [`LeanIndex::from_entries`] decline, and the
//! history stays whole.

mod parts;

use std::collections::BTreeMap;

use sha2::{Digest as _, Sha256};

use crate::canonical::{Canonical, digest_text};
use crate::model::{AcceptedEvent, Identity, IdentityKind};

/// Digests of one accepted event, by position.
const CHUNK: usize = 4096;

/// The compact idempotency index.
#[derive(Clone, Default)]
pub(crate) struct LeanIndex {
    /// Event key → position.
    by_key: BTreeMap<[u8; 16], u32>,
    /// Input and result digest of each position, in chunks (no doubling overshoot).
    digests: Vec<Vec<[u8; 64]>>,
    len: usize,
}

/// The 128-bit key of an event id.
fn key_of(event_id: &Identity, scratch: &mut Vec<u8>) -> [u8; 16] {
    scratch.clear();
    event_id.write_canonical(scratch);
    let hash: [u8; 32] = Sha256::digest(&scratch[..]).into();
    let mut key = [0; 16];
    key.copy_from_slice(&hash[..16]);
    key
}

/// The raw bytes of a `sha256:` + 64 lowercase hex digest text.
fn raw_digest(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:")?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let nibble = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    let mut raw = [0; 32];
    for (out, pair) in raw.iter_mut().zip(hex.chunks_exact(2)) {
        *out = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(raw)
}

/// The result id the kernel gives an accepted event.
pub(crate) fn derived_result_id(event_id: &Identity) -> Identity {
    Identity::derived(
        IdentityKind::Result,
        format!("{}:accepted", event_id.value()),
    )
}

impl LeanIndex {
    /// The index of `entries`, or `None` when one of them cannot be held exactly.
    pub(crate) fn from_entries(entries: &[AcceptedEvent]) -> Option<Self> {
        let mut index = Self::default();
        let mut scratch = Vec::new();
        for entry in entries {
            index.push(entry, &mut scratch)?;
        }
        Some(index)
    }

    /// Number of events indexed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Indexes one accepted event: `Some(true)` when its id is new, `Some(false)` when it was
    /// indexed before (the first position is kept, as the full index does), `None` (and nothing
    /// indexed) when it cannot be held exactly.
    pub(crate) fn push(&mut self, entry: &AcceptedEvent, scratch: &mut Vec<u8>) -> Option<bool> {
        let input = raw_digest(&entry.input_digest)?;
        let result = raw_digest(&entry.result_digest)?;
        if entry.result_id != derived_result_id(&entry.event_id) {
            return None;
        }
        let position = u32::try_from(self.len).ok()?;
        let mut digests = [0; 64];
        digests[..32].copy_from_slice(&input);
        digests[32..].copy_from_slice(&result);
        if self.digests.last().is_none_or(|chunk| chunk.len() == CHUNK) {
            self.digests.push(Vec::with_capacity(CHUNK));
        }
        if let Some(chunk) = self.digests.last_mut() {
            chunk.push(digests);
        }
        self.len += 1;
        let key = key_of(&entry.event_id, scratch);
        Some(match self.by_key.entry(key) {
            std::collections::btree_map::Entry::Vacant(vacant) => {
                vacant.insert(position);
                true
            }
            std::collections::btree_map::Entry::Occupied(_) => false,
        })
    }

    /// The accepted event of `event_id`, rebuilt.
    pub(crate) fn find(&self, event_id: &Identity) -> Option<AcceptedEvent> {
        let position = *self
            .by_key
            .get(&key_of(event_id, &mut Vec::with_capacity(64)))?;
        let position = usize::try_from(position).ok()?;
        let digests = self.digests.get(position / CHUNK)?.get(position % CHUNK)?;
        let mut input = [0; 32];
        let mut result = [0; 32];
        input.copy_from_slice(&digests[..32]);
        result.copy_from_slice(&digests[32..]);
        Some(AcceptedEvent {
            event_id: event_id.clone(),
            result_id: derived_result_id(event_id),
            input_digest: digest_text(&input),
            result_digest: digest_text(&result),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn accepted(value: &str, input: u8, result: u8) -> AcceptedEvent {
        let event_id = Identity::new(IdentityKind::Event, value).unwrap();
        AcceptedEvent {
            result_id: derived_result_id(&event_id),
            event_id,
            input_digest: digest_text(&[input; 32]),
            result_digest: digest_text(&[result; 32]),
        }
    }

    #[test]
    fn finds_exactly_what_was_indexed() {
        let entries: Vec<_> = (0..10_000_u32)
            .map(|n| accepted(&format!("e{n}"), (n % 251) as u8, (n % 241) as u8))
            .collect();
        let index = LeanIndex::from_entries(&entries).unwrap();
        assert_eq!(index.len(), 10_000);
        for entry in &entries {
            assert_eq!(index.find(&entry.event_id).as_ref(), Some(entry));
        }
        let unknown = Identity::new(IdentityKind::Event, "e10000").unwrap();
        assert_eq!(index.find(&unknown), None);
        let other_kind = Identity::new(IdentityKind::Task, "e1").unwrap();
        assert_eq!(index.find(&other_kind), None);
    }

    #[test]
    fn declines_what_it_cannot_hold_exactly() {
        let mut odd_result = accepted("a", 1, 2);
        odd_result.result_id = Identity::new(IdentityKind::Result, "b:accepted").unwrap();
        assert!(LeanIndex::from_entries(&[odd_result]).is_none());
        let mut upper = accepted("a", 1, 2);
        upper.input_digest = upper.input_digest.to_uppercase();
        assert!(LeanIndex::from_entries(&[upper]).is_none());
        let mut short = accepted("a", 1, 2);
        short.result_digest.pop();
        assert!(LeanIndex::from_entries(&[short]).is_none());
    }

    #[test]
    fn a_repeated_id_keeps_its_first_entry() {
        let first = accepted("a", 1, 2);
        let again = accepted("a", 3, 4);
        let index = LeanIndex::from_entries(&[first.clone(), again]).unwrap();
        assert_eq!(index.find(&first.event_id), Some(first));
        assert_eq!(index.len(), 2);
    }
}
