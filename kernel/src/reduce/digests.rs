//! The two digests every reduce computes: `input_digest` and `result_digest`.

use sha2::{Digest as _, Sha256};

use crate::canonical::{Canonical, digest_text, sha256_digest};
use crate::json::write::Fields;
use crate::model::event::write_evidence_set;
use crate::model::state::STATE_HISTORY_OPEN;
use crate::model::{AcceptedEvent, Event, Evidence, Identity, StateBody};

/// `digest({"protocol_version", "event", "evidence_set" (sorted)})`, computed before any
/// validation so that even a refused input is identified.
pub(crate) fn input_digest(
    protocol_version: &str,
    event: &Event,
    evidence_set: &[Evidence],
) -> String {
    let mut out = Vec::with_capacity(512);
    let mut fields = Fields::begin(&mut out);
    fields.canonical("event", event);
    write_evidence_set(fields.key("evidence_set"), evidence_set);
    fields.str("protocol_version", protocol_version);
    fields.end();
    out.push(b'\n');
    sha256_digest(&out)
}

/// The canonical tail of a State body (everything after `{"accepted_events":[…]`), kept in
/// pieces so that an event that changes one work item re-encodes only that item.
///
/// The tail is `head` + (`,"work_items":[` + items joined by `,` + `]` when there are items) +
/// `}`, where `head` holds the members between `accepted_events` and `work_items`.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyEncoding {
    head: Vec<u8>,
    items: Vec<Vec<u8>>,
}

impl BodyEncoding {
    /// Encodes a whole body.
    pub fn new(body: &StateBody) -> Self {
        let mut encoding = Self::default();
        encoding.encode_head(body);
        encoding.items = body
            .work_items
            .iter()
            .map(|item| {
                let mut bytes = Vec::with_capacity(512);
                item.write_canonical(&mut bytes);
                bytes
            })
            .collect();
        encoding
    }

    fn encode_head(&mut self, body: &StateBody) {
        self.head.clear();
        let mut fields = Fields::resume(&mut self.head, "accepted_events");
        body.write_head_members(&mut fields);
    }

    /// Brings the encoding in line with `body` after the work items at `changed` were replaced
    /// (the head is always re-encoded: revision and status change on every event).
    pub fn refresh(&mut self, body: &StateBody, changed: impl IntoIterator<Item = usize>) {
        self.encode_head(body);
        for index in changed {
            let bytes = &mut self.items[index];
            bytes.clear();
            body.work_items[index].write_canonical(bytes);
        }
    }

    /// Feeds the tail into a hasher.
    pub fn feed(&self, hasher: &mut Sha256) {
        hasher.update(&self.head);
        if !self.items.is_empty() {
            hasher.update(b",\"work_items\":[");
            for (index, item) in self.items.iter().enumerate() {
                if index > 0 {
                    hasher.update(b",");
                }
                hasher.update(item);
            }
            hasher.update(b"]");
        }
        hasher.update(b"}");
    }
}

/// The parts of an accepted Result that its digest binds.
pub(crate) struct ResultBinding<'a> {
    pub result_id: &'a Identity,
    pub event_id: &'a Identity,
    pub input_digest: &'a str,
    pub prior_state_digest: &'a str,
    pub next: &'a StateBody,
    /// `next`, encoded.
    pub next_encoding: &'a BodyEncoding,
    pub obligations: &'a [String],
    pub audit_facts: &'a [String],
}

/// `digest({"variant":"accepted", result_id, event_id, input_digest, prior_state_digest, state,
/// obligations, audit_facts})`.
///
/// `state` is the compact `{protocol_version, installation_id, leader_epoch, task_id, revision,
/// status}` when the next State has no work items, suspension or control, and otherwise the full
/// next State with an empty `accepted_events` (the new history record, which contains this very
/// digest, cannot be part of it). Both shapes are the reference kernel's.
pub(crate) fn result_digest(binding: &ResultBinding<'_>) -> String {
    let next = binding.next;
    let mut out = Vec::with_capacity(1024);
    let mut fields = Fields::begin(&mut out);
    fields.strs("audit_facts", binding.audit_facts);
    fields.canonical("event_id", binding.event_id);
    fields.str("input_digest", binding.input_digest);
    fields.strs("obligations", binding.obligations);
    fields.str("prior_state_digest", binding.prior_state_digest);
    fields.canonical("result_id", binding.result_id);
    let state = fields.key("state");
    if next.work_items.is_empty() && next.suspension.is_none() && next.control.is_none() {
        let mut compact = Fields::begin(state);
        compact.canonical("installation_id", &next.installation_id);
        compact.int("leader_epoch", next.leader_epoch);
        compact.str("protocol_version", &next.protocol_version);
        compact.int("revision", next.revision);
        compact.str("status", next.status.as_str());
        compact.canonical("task_id", &next.task_id);
        compact.end();
        fields.str("variant", "accepted");
        fields.end();
        out.push(b'\n');
        return sha256_digest(&out);
    }
    state.extend_from_slice(STATE_HISTORY_OPEN);
    state.push(b']');
    let mut hasher = Sha256::new();
    hasher.update(&out);
    binding.next_encoding.feed(&mut hasher);
    // The members after "state": `"variant"` is the last key.
    hasher.update(b",\"variant\":\"accepted\"}\n");
    digest_text(&hasher.finalize().into())
}

/// SHA-256 fed with the canonical State's opening up to the end of its history:
/// `{"accepted_events":[` + the entries joined by commas.
pub(crate) fn history_hash(history: &[AcceptedEvent]) -> Sha256 {
    let mut hasher = Sha256::new();
    hasher.update(STATE_HISTORY_OPEN);
    let mut scratch = Vec::with_capacity(256);
    for (index, entry) in history.iter().enumerate() {
        hash_history_entry(&mut hasher, entry, index == 0, &mut scratch);
    }
    hasher
}

/// Extends a [`history_hash`] by one entry (`first`: no comma before it).
pub(crate) fn hash_history_entry(
    hasher: &mut Sha256,
    entry: &AcceptedEvent,
    first: bool,
    scratch: &mut Vec<u8>,
) {
    scratch.clear();
    if !first {
        scratch.push(b',');
    }
    entry.write_canonical(scratch);
    hasher.update(&scratch);
}

/// `digest()` of a State given as its running history hash and its encoded body: the canonical
/// State is `{"accepted_events":[` + history + `]` + tail.
pub(crate) fn state_digest_from_parts(history_prefix: &Sha256, body: &BodyEncoding) -> String {
    let mut hasher = history_prefix.clone();
    hasher.update(b"]");
    body.feed(&mut hasher);
    hasher.update(b"\n");
    digest_text(&hasher.finalize().into())
}
