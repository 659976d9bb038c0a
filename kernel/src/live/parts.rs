//! A [`LiveState`] taken apart and put back together, for the store's snapshots: the State body,
//! the running hash of its history ([`Midstate`]), the history's length and well-formedness, and
//! the lean idempotency index ([`LeanParts`]). What [`LiveState::from_parts`] rebuilds answers
//! every later event exactly as the `LiveState` that was taken apart (the same Verdicts, Results
//! and State digests), without the history itself: [`LiveState::history`] is empty, as after
//! [`LiveState::forget_history`]. Nothing here checks that the parts belong together (a snapshot
//! is bound to its journal and checked by the store); it only refuses parts that are not well
//! formed.

use std::sync::Arc;

use super::lean::{LeanIndex, Recall};
use super::{HistoryIndex, Kept, LiveState, Midstate};
use crate::model::StateBody;
use crate::reduce::digests::BodyEncoding;
use crate::reduce::validity::work_items_are_valid;

/// Bytes of one key record of [`LeanParts::keys`]: the 12-byte key and its position (4 bytes,
/// big-endian).
pub const KEY_RECORD: usize = 16;

/// The lean idempotency index as bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeanParts {
    /// Per distinct event id, in increasing key order: the first 12 bytes of the SHA-256 of the
    /// id's canonical form, then the position of its first acceptance (4 bytes, big-endian).
    pub keys: Vec<u8>,
    /// Per accepted event, in order: the raw 32 bytes of its input digest, then of its result
    /// digest. Empty when the index does not hold them (a verify that recalls them from its
    /// journal).
    pub digests: Vec<u8>,
}

/// A [`LiveState`] taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveParts {
    /// The State without its history.
    pub body: StateBody,
    /// How many events the history holds.
    pub history_len: u64,
    /// Whether the history is well formed (unique ids, well-formed entries).
    pub well_formed: bool,
    /// SHA-256 fed with `{"accepted_events":[` and the entries joined by commas.
    pub midstate: Midstate,
    /// The idempotency index.
    pub index: LeanParts,
}

/// Why [`LiveState::from_parts`] refuses its parts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PartsError {
    /// The index bytes are not an index.
    #[error("the idempotency index is not well formed: {0}")]
    Index(&'static str),
    /// The index does not hold as many events as the history.
    #[error("the idempotency index holds {index} events, the history {history}")]
    Length {
        /// Events in the index.
        index: u64,
        /// `history_len`.
        history: u64,
    },
}

impl LiveState {
    /// This State taken apart; `None` when its history holds an entry the lean index cannot
    /// hold exactly (only possible in a history handed to [`LiveState::new`]).
    pub fn to_parts(&self) -> Option<LiveParts> {
        let index = match &self.history.kept {
            Kept::Whole { entries, .. } => LeanIndex::from_entries(entries)?.to_parts(),
            Kept::Lean(lean) => lean.to_parts(),
        };
        Some(LiveParts {
            index,
            ..self.parts_but_index()
        })
    }

    /// [`LiveState::to_parts`] without the idempotency index (`index` empty), which
    /// [`LiveState::index_key_records`] gives one record at a time: a check of a snapshot
    /// against this State then holds no second copy of the index.
    pub fn parts_but_index(&self) -> LiveParts {
        LiveParts {
            body: self.body.clone(),
            history_len: self.history.len_u64(),
            well_formed: self.history.well_formed,
            midstate: self.history.prefix.clone(),
            index: LeanParts::default(),
        }
    }

    /// The key records of the lean idempotency index in key order, exactly the bytes of
    /// [`LiveState::to_parts`]'s `index.keys` in [`KEY_RECORD`]s; `None` while the history is
    /// kept whole (its index is only built by [`LiveState::to_parts`]).
    pub fn index_key_records(&self) -> Option<super::KeyRecords<'_>> {
        match &self.history.kept {
            Kept::Whole { .. } => None,
            Kept::Lean(lean) => Some(lean.key_records()),
        }
    }

    /// The State [`LiveState::to_parts`] took apart (with the digests), holding the lean index
    /// instead of the history.
    pub fn from_parts(parts: LiveParts) -> Result<Self, PartsError> {
        let lean = LeanIndex::from_parts(&parts.index)?;
        Self::with_lean(parts, lean)
    }

    /// [`LiveState::from_parts`] for parts read back without their digests (`index.digests`
    /// empty): the lean index holds 16 bytes per event, and `recall` gives the digests of an
    /// event whose id is seen again, as after [`LiveState::forget_history_recalling`]. Every
    /// answer is the same as [`LiveState::from_parts`] with the digests, as long as `recall`
    /// answers as the history did (what it cannot give back is refused as an idempotency
    /// conflict); [`LiveState::to_parts`] then gives no digests either.
    pub fn from_parts_recalling(
        parts: LiveParts,
        recall: Arc<dyn Recall>,
    ) -> Result<Self, PartsError> {
        let events = usize::try_from(parts.history_len)
            .map_err(|_| PartsError::Index("it names more events than this machine can index"))?;
        let lean = LeanIndex::from_keys_recalling(&parts.index, events, recall)?;
        Self::with_lean(parts, lean)
    }

    fn with_lean(parts: LiveParts, lean: LeanIndex) -> Result<Self, PartsError> {
        if lean.len() as u64 != parts.history_len {
            return Err(PartsError::Length {
                index: lean.len() as u64,
                history: parts.history_len,
            });
        }
        let encoding = BodyEncoding::new(&parts.body);
        Ok(Self {
            items_valid: work_items_are_valid(&parts.body),
            body: parts.body,
            history: HistoryIndex {
                kept: Kept::Lean(lean),
                well_formed: parts.well_formed,
                prefix: parts.midstate,
            },
            encoding,
            scratch: Vec::new(),
        })
    }
}

impl HistoryIndex {
    fn len_u64(&self) -> u64 {
        crate::history::HistoryView::len(self) as u64
    }
}
