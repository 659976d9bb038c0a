//! The idempotency index of a [`LiveState`](super::LiveState) that does not keep its history:
//! what a replay that only verifies (the store's `valp verify`) needs of every accepted event.
//!
//! Per accepted event it keeps a 12-byte key (the first 96 bits of the SHA-256 of the event
//! id's canonical form) and the event's position, 16 bytes: in one sorted run (searched by
//! interpolation, see [`search`]) and a small sorted tail of the latest [`TAIL`] events, merged
//! into the run when full, so there are no tree nodes per event and no doubling overshoot. An event's input and result
//! digests are either held too ([`Digests::Held`], 64 more bytes per event, in chunks) or, for a
//! store that can read them again from its journal, not held at all and asked of a [`Recall`]
//! when an event id is seen again (in a journal being verified that only happens on the line
//! that gets it refused). Its result id is not kept: an event the kernel accepted has the result
//! id `<event_id>:accepted`, which is rebuilt from the id asked for.
//!
//! A filter of one bit per slot ([`filter`]) rules out most event ids that were never indexed
//! (every line of a journal being verified) before the tail and the run are searched.
//!
//! [`LeanIndex::find`] answers exactly what a lookup in the full history answers (the same
//! `AcceptedEvent`), as long as no two event ids share a 96-bit key; a shared key could only
//! make a later event look like a duplicate (the journal is then refused, never wrongly
//! accepted), and finding one takes about 2^48 SHA-256 evaluations (a writer who can do that
//! can as well damage the journal it writes). A recalled entry whose event id is not the one
//! asked for, or one that cannot be read (the file changed under the verify), fails closed: it
//! answers as an earlier acceptance whose digests are unknown (empty), so the event is refused
//! as an idempotency conflict.
//!
//! Entries that this form cannot hold exactly (a result id that is not the derived one, a digest
//! that is not `sha256:` + 64 lowercase hex digits: only possible in a history handed in from
//! outside, never in one the kernel built) make [`LeanIndex::from_entries`] decline, and the
//! history stays whole.

mod filter;
mod parts;
mod search;

pub use parts::KeyRecords;

use std::collections::BTreeMap;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use crate::canonical::{digest_text, raw_digest};
use crate::json::write::emit_str;
use crate::model::{AcceptedEvent, Identity, IdentityKind};
use crate::reduce::derived_result_id;
use filter::Filter;

/// Bytes of an event key.
const KEY_LEN: usize = 12;
/// An event key.
pub(super) type Key = [u8; KEY_LEN];
/// Digests of accepted events, by position, per chunk (no doubling overshoot).
const CHUNK: usize = 4096;
/// Events indexed since the last merge, at most.
const TAIL: usize = 1 << 15;

/// Where a lean index finds an accepted event again instead of holding its digests.
pub trait Recall: Send + Sync {
    /// The accepted event at `position` of the history (0 for the first accepted event), as
    /// it was indexed; `None` when it cannot be read.
    fn recall(&self, position: usize) -> Option<AcceptedEvent>;
}

/// Where the digests of the indexed events are.
#[derive(Clone)]
enum Digests {
    /// In memory: input and result digest of each position.
    Held(Vec<Vec<[u8; 64]>>),
    /// Read again when asked.
    Recalled(Arc<dyn Recall>),
}

/// One indexed event: its key and position.
#[derive(Clone, Copy, Default)]
struct Slot {
    key: Key,
    position: u32,
}

/// The compact idempotency index.
#[derive(Clone)]
pub(crate) struct LeanIndex {
    /// Every key indexed before the tail, sorted, each once (the first position).
    run: Vec<Slot>,
    /// The latest keys (at most [`TAIL`]).
    tail: BTreeMap<Key, u32>,
    digests: Digests,
    len: usize,
    /// Which keys the run and the tail may hold ([`filter`]).
    seen: Filter,
}

/// The 96-bit key of an event id: its canonical form `{"kind":…,"value":…}` hashed as it is
/// written, without a buffer.
pub(super) fn key_of(event_id: &Identity) -> Key {
    let mut hasher = Sha256::new();
    hasher.update(b"{\"kind\":");
    emit_str(event_id.kind().as_str(), |bytes| hasher.update(bytes));
    hasher.update(b",\"value\":");
    emit_str(event_id.value(), |bytes| hasher.update(bytes));
    hasher.update(b"}");
    let hash: [u8; 32] = hasher.finalize().into();
    let mut key = [0; KEY_LEN];
    key.copy_from_slice(&hash[..KEY_LEN]);
    key
}

/// Whether `result_id` is [`derived_result_id`] of `event_id` (without building it).
fn is_derived_result_id(result_id: &Identity, event_id: &Identity) -> bool {
    result_id.is(IdentityKind::Result)
        && result_id.value().strip_suffix(":accepted") == Some(event_id.value())
}

impl LeanIndex {
    /// The index of `entries`, holding their digests, or `None` when one of them cannot be
    /// held exactly.
    pub(crate) fn from_entries(entries: &[AcceptedEvent]) -> Option<Self> {
        Self::indexing(entries, Digests::Held(Vec::new()))
    }

    /// The index of `entries`, whose digests `recall` gives when asked, or `None` when one of
    /// them cannot be held exactly.
    pub(crate) fn recalling(entries: &[AcceptedEvent], recall: Arc<dyn Recall>) -> Option<Self> {
        Self::indexing(entries, Digests::Recalled(recall))
    }

    fn indexing(entries: &[AcceptedEvent], digests: Digests) -> Option<Self> {
        let mut index = Self::of_run(Vec::new(), digests, 0);
        for entry in entries {
            index.push(entry, false)?;
        }
        Some(index)
    }

    /// The index of `len` events whose keys are all in `run` (sorted, each once).
    fn of_run(run: Vec<Slot>, digests: Digests, len: usize) -> Self {
        let mut seen = Filter::for_keys(run.len());
        for slot in &run {
            seen.insert(&slot.key);
        }
        Self {
            run,
            tail: BTreeMap::new(),
            digests,
            len,
            seen,
        }
    }

    /// Number of events indexed.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes it holds for its events: the run's slots written (the room reserved past them
    /// when the run grows by doubling is not written, so not resident: see `merge`), the
    /// tail's keys and positions (its tree nodes' overhead aside), and the digests when it
    /// holds them; not its lookup filter ([`filter`]: 1-2 bytes per key, as the tail's tree
    /// nodes are not counted either).
    pub(crate) fn held_bytes(&self) -> usize {
        let digests = match &self.digests {
            Digests::Held(chunks) => chunks.iter().map(|chunk| chunk.capacity() * 64).sum(),
            Digests::Recalled(_) => 0,
        };
        self.run.len() * std::mem::size_of::<Slot>() + self.tail.len() * (KEY_LEN + 4) + digests
    }

    /// Indexes one accepted event: `Some(true)` when its id is new, `Some(false)` when it was
    /// indexed before (the first position is kept, as the full index does), `None` (and nothing
    /// indexed) when it cannot be held exactly: a digest that is not a digest's text or a
    /// result id that is not the derived one (the live history's shape check relies on this).
    /// `known_new`: the caller has just looked the id up and not found it (an event the kernel
    /// accepted: a key found would have made it a duplicate), so it is not looked up again.
    pub(crate) fn push(&mut self, entry: &AcceptedEvent, known_new: bool) -> Option<bool> {
        self.push_keyed(entry, known_new, None)
    }

    /// [`push`](Self::push) of an event whose id was just looked up under `key` (its
    /// [`key_of`], which [`find_keyed`](Self::find_keyed) was given) and not found: the id is
    /// not hashed again.
    pub(crate) fn push_looked_up(&mut self, entry: &AcceptedEvent, key: &Key) -> Option<bool> {
        debug_assert_eq!(*key, key_of(&entry.event_id));
        self.push_keyed(entry, true, Some(key))
    }

    fn push_keyed(
        &mut self,
        entry: &AcceptedEvent,
        known_new: bool,
        key: Option<&Key>,
    ) -> Option<bool> {
        let input = raw_digest(&entry.input_digest)?;
        let result = raw_digest(&entry.result_digest)?;
        if !is_derived_result_id(&entry.result_id, &entry.event_id) {
            return None;
        }
        let position = u32::try_from(self.len).ok()?;
        if let Digests::Held(chunks) = &mut self.digests {
            let mut digests = [0; 64];
            digests[..32].copy_from_slice(&input);
            digests[32..].copy_from_slice(&result);
            if chunks.last().is_none_or(|chunk| chunk.len() == CHUNK) {
                chunks.push(Vec::with_capacity(CHUNK));
            }
            if let Some(chunk) = chunks.last_mut() {
                chunk.push(digests);
            }
        }
        self.len += 1;
        let key = key.copied().unwrap_or_else(|| key_of(&entry.event_id));
        if !known_new && self.position(&key).is_some() {
            return Some(false);
        }
        self.tail.insert(key, position);
        self.note(&key);
        if self.tail.len() >= TAIL {
            self.merge();
        }
        Some(true)
    }

    /// Marks `key`, just inserted, in the filter, refilled at twice the size first when the
    /// keys have outgrown it.
    fn note(&mut self, key: &Key) {
        let keys = self.run.len() + self.tail.len();
        if self.seen.fits(keys) {
            self.seen.insert(key);
            return;
        }
        let mut seen = Filter::for_keys(keys);
        for held in self
            .run
            .iter()
            .map(|slot| &slot.key)
            .chain(self.tail.keys())
        {
            seen.insert(held);
        }
        self.seen = seen;
    }

    /// The position first indexed under `key`.
    fn position(&self, key: &Key) -> Option<u32> {
        if !self.seen.may_hold(key) {
            return None;
        }
        if let Some(&position) = self.tail.get(key) {
            return Some(position);
        }
        search::position_in(&self.run, key)
    }

    /// Merges the tail into the run, in place from the back (keys are unique across both).
    fn merge(&mut self) {
        let tail = std::mem::take(&mut self.tail);
        let mut read = self.run.len();
        // Room grows by doubling, not by the tail: an exact reserve moved the whole run (16 MB
        // at 10^6 events) to a new block at every merge, and the allocator keeps a freed block
        // resident for a while, so a verify's peak RSS held two runs (64.6 MiB at 10^6 against
        // 47.4 MiB when freed memory is returned at once). Room not yet written is not resident.
        self.run.reserve(tail.len());
        self.run.resize(read + tail.len(), Slot::default());
        let mut write = self.run.len();
        let mut incoming = tail.into_iter().rev().peekable();
        while let Some(&(key, position)) = incoming.peek() {
            write -= 1;
            if read > 0 && self.run[read - 1].key > key {
                read -= 1;
                self.run[write] = self.run[read];
            } else {
                self.run[write] = Slot { key, position };
                incoming.next();
            }
        }
    }

    /// Replaces the result digest held for the event at `position` (nothing when the digests
    /// are recalled or the position was not indexed): for a digest computed after the event
    /// was indexed ([`owed`](super::owed)).
    pub(crate) fn set_result_digest(&mut self, position: usize, result: &[u8; 32]) {
        if let Digests::Held(chunks) = &mut self.digests
            && let Some(digests) = chunks
                .get_mut(position / CHUNK)
                .and_then(|chunk| chunk.get_mut(position % CHUNK))
        {
            digests[32..].copy_from_slice(result);
        }
    }

    /// The accepted event of `event_id`, rebuilt (or recalled).
    pub(crate) fn find(&self, event_id: &Identity) -> Option<AcceptedEvent> {
        self.find_keyed(event_id, &key_of(event_id))
    }

    /// [`find`](Self::find) of `event_id`, whose [`key_of`] is `key`.
    pub(crate) fn find_keyed(&self, event_id: &Identity, key: &Key) -> Option<AcceptedEvent> {
        let position = self.position(key)?;
        let position = usize::try_from(position).ok()?;
        let chunks = match &self.digests {
            Digests::Held(chunks) => chunks,
            Digests::Recalled(recall) => {
                return Some(
                    recall
                        .recall(position)
                        .filter(|entry| entry.event_id == *event_id)
                        .unwrap_or_else(|| unrecalled(event_id)),
                );
            }
        };
        let digests = chunks.get(position / CHUNK)?.get(position % CHUNK)?;
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

/// An earlier acceptance of `event_id` whose digests could not be recalled: unknown (empty), so
/// no input matches it and the event is refused as an idempotency conflict.
fn unrecalled(event_id: &Identity) -> AcceptedEvent {
    AcceptedEvent {
        event_id: event_id.clone(),
        result_id: derived_result_id(event_id),
        input_digest: String::new(),
        result_digest: String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::live::LeanParts;

    fn accepted(value: &str, input: u8, result: u8) -> AcceptedEvent {
        let event_id = Identity::new(IdentityKind::Event, value).unwrap();
        AcceptedEvent {
            result_id: derived_result_id(&event_id),
            event_id,
            input_digest: digest_text(&[input; 32]),
            result_digest: digest_text(&[result; 32]),
        }
    }

    fn entries(count: usize) -> Vec<AcceptedEvent> {
        (0..count)
            .map(|n| {
                let byte = |modulus: usize| u8::try_from(n % modulus).unwrap();
                accepted(&format!("e{n}"), byte(251), byte(241))
            })
            .collect()
    }

    /// The run grows by doubling: merging tail after tail moves it to a new block only a few
    /// times, not at every merge (each move left a freed copy resident for a while: peak RSS).
    #[test]
    fn the_run_moves_to_a_new_block_only_when_its_room_doubles() {
        let merges = 16;
        let entries = entries(merges * TAIL);
        let mut index = LeanIndex::from_entries(&entries[..TAIL]).unwrap();
        let mut moves = 0;
        for tail in entries[TAIL..].chunks(TAIL) {
            let room = index.run.capacity();
            for entry in tail {
                assert_eq!(index.push(entry, false), Some(true));
            }
            assert!(index.tail.is_empty(), "a full tail is merged");
            moves += usize::from(index.run.capacity() != room);
        }
        assert_eq!(index.len(), merges * TAIL);
        assert!(moves <= 5, "{moves} moves in {} merges", merges - 1);
        for entry in entries.iter().step_by(97) {
            assert_eq!(index.find(&entry.event_id).as_ref(), Some(entry));
        }
    }

    #[test]
    fn finds_exactly_what_was_indexed() {
        // More than two tails: lookups hit the merged run and the tail.
        let count = 2 * TAIL + 1_000;
        let entries = entries(count);
        let index = LeanIndex::from_entries(&entries).unwrap();
        assert_eq!(index.len(), count);
        assert_eq!(index.run.len(), 2 * TAIL);
        assert_eq!(index.tail.len(), 1_000);
        assert!(index.run.windows(2).all(|pair| pair[0].key < pair[1].key));
        for entry in &entries {
            assert_eq!(index.find(&entry.event_id).as_ref(), Some(entry));
        }
        let unknown = Identity::new(IdentityKind::Event, format!("e{count}")).unwrap();
        assert_eq!(index.find(&unknown), None);
        let other_kind = Identity::new(IdentityKind::Task, "e1").unwrap();
        assert_eq!(index.find(&other_kind), None);
    }

    #[test]
    fn an_event_key_hashes_the_canonical_form_of_the_id() {
        for value in [
            "e1",
            "a\"b\\c",
            "ctl\u{1}\n\t",
            "é\u{2028}",
            &"x".repeat(100),
        ] {
            let id = Identity::new(IdentityKind::Event, value).unwrap();
            let hash: [u8; 32] = Sha256::digest(
                crate::canonical::Canonical::canonical_bytes(&id)
                    .strip_suffix(b"\n")
                    .unwrap(),
            )
            .into();
            assert_eq!(key_of(&id)[..], hash[..KEY_LEN], "{value:?}");
        }
    }

    #[test]
    fn declines_what_it_cannot_hold_exactly() {
        let mut other_kind = accepted("a", 1, 2);
        other_kind.result_id = Identity::new(IdentityKind::Event, "a:accepted").unwrap();
        assert!(LeanIndex::from_entries(&[other_kind]).is_none());
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
    fn ids_known_new_are_indexed_as_looked_up_ones() {
        let entries = entries(TAIL + 500);
        let looked_up = LeanIndex::from_entries(&entries).unwrap();
        let mut known = LeanIndex::from_entries(&[]).unwrap();
        for entry in &entries {
            assert_eq!(known.find(&entry.event_id), None);
            assert_eq!(known.push(entry, true), Some(true));
        }
        assert_eq!(known.to_parts(), looked_up.to_parts());
    }

    #[test]
    fn ids_pushed_under_their_looked_up_key_are_indexed_as_looked_up_ones() {
        let entries = entries(TAIL + 500);
        let looked_up = LeanIndex::from_entries(&entries).unwrap();
        let mut keyed = LeanIndex::from_entries(&[]).unwrap();
        for entry in &entries {
            let key = key_of(&entry.event_id);
            assert_eq!(keyed.find_keyed(&entry.event_id, &key), None);
            assert_eq!(keyed.push_looked_up(entry, &key), Some(true));
            assert_eq!(keyed.find(&entry.event_id).as_ref(), Some(entry));
        }
        assert_eq!(keyed.to_parts(), looked_up.to_parts());
    }

    #[test]
    fn a_repeated_id_keeps_its_first_entry() {
        let first = accepted("a", 1, 2);
        let again = accepted("a", 3, 4);
        let mut entries = entries(TAIL + 10);
        entries.insert(5, first.clone());
        entries.push(again);
        let index = LeanIndex::from_entries(&entries).unwrap();
        assert_eq!(index.find(&first.event_id), Some(first));
        assert_eq!(index.len(), TAIL + 12);
    }

    /// Recalls from a copy of the entries, counting the calls; `None` past `readable`.
    struct Recorded {
        entries: Vec<AcceptedEvent>,
        readable: usize,
        calls: std::sync::atomic::AtomicUsize,
    }

    impl Recall for Recorded {
        fn recall(&self, position: usize) -> Option<AcceptedEvent> {
            self.calls
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.entries
                .get(position)
                .filter(|_| position < self.readable)
                .cloned()
        }
    }

    #[test]
    fn a_recalling_index_holds_no_digests_and_asks_only_on_a_hit() {
        let entries = entries(TAIL + 100);
        let mut swapped = entries.clone();
        swapped.swap(0, 1);
        let recall = Arc::new(Recorded {
            entries: swapped,
            readable: TAIL,
            calls: std::sync::atomic::AtomicUsize::new(0),
        });
        let index = LeanIndex::recalling(&entries, recall.clone()).unwrap();
        assert!(matches!(index.digests, Digests::Recalled(_)));
        let unknown = Identity::new(IdentityKind::Event, "nope").unwrap();
        assert_eq!(index.find(&unknown), None);
        assert_eq!(recall.calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        for entry in &entries[2..TAIL] {
            assert_eq!(index.find(&entry.event_id).as_ref(), Some(entry));
        }
        // Recalled under another id, or not readable: an acceptance with unknown digests.
        for entry in [&entries[0], &entries[1], &entries[TAIL + 5]] {
            assert_eq!(
                index.find(&entry.event_id),
                Some(unrecalled(&entry.event_id))
            );
        }
        assert_eq!(
            recall.calls.load(std::sync::atomic::Ordering::Relaxed),
            TAIL + 1
        );
    }

    #[test]
    fn parts_read_back_without_digests_recall_them_and_check_positions() {
        let entries = entries(TAIL + 100);
        let parts = LeanIndex::from_entries(&entries).unwrap().to_parts();
        let recall = Arc::new(Recorded {
            entries: entries.clone(),
            readable: entries.len(),
            calls: std::sync::atomic::AtomicUsize::new(0),
        });
        let keys = LeanParts {
            keys: parts.keys.clone(),
            digests: Vec::new(),
        };
        let index = LeanIndex::from_keys_recalling(&keys, entries.len(), recall.clone()).unwrap();
        assert!(matches!(index.digests, Digests::Recalled(_)));
        assert_eq!(index.len(), entries.len());
        assert_eq!(recall.calls.load(std::sync::atomic::Ordering::Relaxed), 0);
        for entry in [&entries[0], &entries[TAIL], &entries[TAIL + 99]] {
            assert_eq!(index.find(&entry.event_id).as_ref(), Some(entry));
        }
        assert_eq!(recall.calls.load(std::sync::atomic::Ordering::Relaxed), 3);
        // Digests handed in, or a key naming a position past the events: refused.
        let refused = |parts: &LeanParts, len: usize| {
            LeanIndex::from_keys_recalling(parts, len, recall.clone())
                .err()
                .map(|error| error.to_string())
        };
        assert_eq!(
            refused(&parts, entries.len()).as_deref(),
            Some("the idempotency index is not well formed: a recalling index holds no digests")
        );
        assert_eq!(
            refused(&keys, entries.len() - 1).as_deref(),
            Some(
                "the idempotency index is not well formed: a key names a position it does not hold"
            )
        );
    }
}
