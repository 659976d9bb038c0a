//! Read access to a State's accepted-event history, as the reducer needs it.
//!
//! The reducer asks two things of a history: is it well formed, and was this event id accepted
//! before. [`HistoryView`] answers them. A plain slice answers by scanning (what the reference
//! does, O(history) per call); [`LiveState`](crate::live::LiveState) answers from an index in
//! O(log history), which, with its running SHA-256 midstate for the State digest, is what makes
//! replay linear.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::canonical::is_digest;
use crate::model::{AcceptedEvent, Identity, IdentityKind};

/// What the reducer reads from a history.
pub(crate) trait HistoryView {
    /// Number of accepted events.
    fn len(&self) -> usize;
    /// Every entry is well formed and event ids and result ids are each unique.
    fn is_well_formed(&self) -> bool;
    /// The entry that accepted `event_id`, if any (rebuilt when the history is not kept, see
    /// [`LiveState::forget_history`](crate::live::LiveState::forget_history)).
    fn find(&self, event_id: &Identity) -> Option<Cow<'_, AcceptedEvent>>;
}

/// Whether one history entry is well formed on its own.
pub(crate) fn entry_is_well_formed(entry: &AcceptedEvent) -> bool {
    entry.event_id.is(IdentityKind::Event)
        && entry.result_id.is(IdentityKind::Result)
        && is_digest(&entry.input_digest)
        && is_digest(&entry.result_digest)
}

impl HistoryView for [AcceptedEvent] {
    fn len(&self) -> usize {
        <[AcceptedEvent]>::len(self)
    }

    fn is_well_formed(&self) -> bool {
        let mut event_ids = BTreeSet::new();
        let mut result_ids = BTreeSet::new();
        self.iter().all(|entry| {
            entry_is_well_formed(entry)
                && event_ids.insert(&entry.event_id)
                && result_ids.insert(&entry.result_id)
        })
    }

    fn find(&self, event_id: &Identity) -> Option<Cow<'_, AcceptedEvent>> {
        self.iter()
            .find(|entry| &entry.event_id == event_id)
            .map(Cow::Borrowed)
    }
}
