//! The two digests every reduce computes: `input_digest` and `result_digest`.

use sha2::digest::Update;
use sha2::{Digest as _, Sha256};

use crate::canonical::{Canonical, digest_text, is_digest, sha256_digest};
use crate::json::write::{Fields, emit_str};
use crate::live::midstate::Midstate;
use crate::model::event::write_evidence_set;
use crate::model::state::STATE_HISTORY_OPEN;
use crate::model::{AcceptedEvent, Evidence, Identity, StateBody};

/// `digest({"protocol_version", "event", "evidence_set" (sorted)})`, computed before any
/// validation so that even a refused input is identified.
pub(crate) fn input_digest(
    protocol_version: &str,
    event: &impl Canonical,
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

/// [`input_digest`] of the Event and EvidenceSet whose canonical bytes `{"event":…,
/// "evidence_set":[…]` (sorted) are `prefix`: hashes them as they are, then the rest of the
/// preimage (`,"protocol_version":…}` and the LF). Equal to `input_digest` exactly when
/// `prefix` is what encoding the two gives ([`InputPrefix`](crate::decode::InputPrefix)).
pub(crate) fn input_digest_from_prefix(protocol_version: &str, prefix: &[u8]) -> String {
    let mut hasher = Sha256::new();
    Update::update(&mut hasher, prefix);
    // The rest fed as it is written: no buffer allocated per applied event.
    Update::update(&mut hasher, b",\"protocol_version\":");
    emit_str(protocol_version, |bytes| Update::update(&mut hasher, bytes));
    Update::update(&mut hasher, b"}\n");
    digest_text(&hasher.finalize().into())
}

/// The canonical tail of a State body (everything after `{"accepted_events":[…]`), kept in
/// pieces so that an event that changes one work item re-encodes only that item.
///
/// The tail is `head` + (`,"work_items":[` + items joined by `,` + `]` when there are items) +
/// `}`, where `head` holds the members between `accepted_events` and `work_items`. Each item is
/// kept with what precedes it (`,"work_items":[` for the first, `,` for the others), so that
/// hashing the tail takes one update per piece: a hasher fed many small pieces costs more
/// than one fed the same bytes in runs (it buffers each piece).
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyEncoding {
    head: Vec<u8>,
    items: Vec<Vec<u8>>,
}

/// What precedes the work item at `index` in the tail.
fn item_opening(index: usize) -> &'static [u8] {
    if index == 0 {
        b",\"work_items\":["
    } else {
        b","
    }
}

impl BodyEncoding {
    /// Encodes a whole body.
    pub fn new(body: &StateBody) -> Self {
        let mut encoding = Self::default();
        encoding.encode_head(body);
        encoding.items = body
            .work_items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let mut bytes = Vec::with_capacity(512);
                bytes.extend_from_slice(item_opening(index));
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
            bytes.extend_from_slice(item_opening(index));
            body.work_items[index].write_canonical(bytes);
        }
    }

    /// Writes into `out` what the last [`refresh`](Self::refresh) changed: the head and the
    /// work items at `replaced` (the ones it was given).
    pub fn write_changes(&self, replaced: &[usize], out: &mut BodyChanges) {
        out.head.clear();
        out.head.extend_from_slice(&self.head);
        out.items.clear();
        out.ends.clear();
        for &index in replaced {
            if let Some(item) = self.items.get(index) {
                out.items.extend_from_slice(item);
                out.ends.push((index, out.items.len()));
            }
        }
    }

    /// Feeds the tail into a hasher.
    pub fn feed(&self, hasher: &mut impl Update) {
        hasher.update(&self.head);
        for item in &self.items {
            hasher.update(item);
        }
        hasher.update(closing(self.items.len()));
    }
}

/// What one refresh changed in a [`BodyEncoding`]: its head and the changed work items, so
/// that another copy of the encoding (a digest check's, on another thread) follows it without
/// copying the whole tail (~8 KB at 20 work items) per event. Buffers are reused when written
/// again.
#[derive(Debug, Clone, Default)]
pub(crate) struct BodyChanges {
    head: Vec<u8>,
    /// The changed items' bytes, one after the other.
    items: Vec<u8>,
    /// Per changed item: its index and where its bytes end in `items`.
    ends: Vec<(usize, usize)>,
}

/// A [`BodyEncoding`]'s tail in one run of bytes, kept in step with it by the
/// [`BodyChanges`] of each refresh: a digest check's copy, on the thread that hashes it. A piece
/// that keeps its length (most do: the head's revision and status rarely change length) is
/// overwritten in place, one that does not is spliced in (the rest moves once, within this
/// thread's cache); the bytes are then hashed as one run, as cheaply as a copy of the whole tail.
#[derive(Debug, Clone)]
pub(crate) struct TailCopy {
    bytes: Vec<u8>,
    /// Where each piece ends: the head, then each work item (with what precedes it).
    ends: Vec<usize>,
}

impl TailCopy {
    /// A copy of `encoding`'s tail.
    pub fn new(encoding: &BodyEncoding) -> Self {
        let mut bytes = Vec::new();
        let mut ends = Vec::with_capacity(encoding.items.len() + 1);
        for piece in std::iter::once(&encoding.head).chain(&encoding.items) {
            bytes.extend_from_slice(piece);
            ends.push(bytes.len());
        }
        bytes.extend_from_slice(closing(encoding.items.len()));
        Self { bytes, ends }
    }

    /// The tail (what [`BodyEncoding::feed`] hashes).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Brings the copy in line with the encoding that wrote `changes`
    /// ([`BodyEncoding::write_changes`]), when both were equal before its refresh.
    pub fn take_changes(&mut self, changes: &BodyChanges) {
        self.replace(0, &changes.head);
        let mut start = 0;
        for &(index, end) in &changes.ends {
            if let Some(bytes) = changes.items.get(start..end) {
                self.replace(index + 1, bytes);
            }
            start = end;
        }
    }

    /// Replaces piece `piece` (0: the head, 1 + n: work item n) with `bytes`.
    fn replace(&mut self, piece: usize, bytes: &[u8]) {
        let Some(&end) = self.ends.get(piece) else {
            return;
        };
        // Piece 0 starts the tail; any other starts where the one before it ends.
        let start = piece
            .checked_sub(1)
            .and_then(|before| self.ends.get(before))
            .map_or(0, |&start| start);
        if end - start == bytes.len() {
            self.bytes[start..end].copy_from_slice(bytes);
            return;
        }
        // Moves the rest once, with `copy_within` (`Vec::splice` goes byte by byte).
        let total = self.bytes.len();
        let new_end = start + bytes.len();
        if new_end > end {
            self.bytes.resize(total + (new_end - end), 0);
        }
        self.bytes.copy_within(end..total, new_end);
        self.bytes.truncate(total + new_end - end);
        self.bytes[start..new_end].copy_from_slice(bytes);
        for later in &mut self.ends[piece..] {
            *later = *later + new_end - end;
        }
    }
}

/// What ends a body's tail with `items` work items.
fn closing(items: usize) -> &'static [u8] {
    if items == 0 { b"}" } else { b"]}" }
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
    /// Indexes of the work items the acceptance replaced (re-encoded in `next_encoding`).
    pub changed_items: &'a [usize],
    pub obligations: &'a [String],
    pub audit_facts: &'a [String],
}

/// `digest({"variant":"accepted", result_id, event_id, input_digest, prior_state_digest, state,
/// obligations, audit_facts})`.
///
/// `state` is the compact `{protocol_version, installation_id, leader_epoch, task_id, revision,
/// status}` when the next State has no work items, suspension or control, and otherwise the full
/// next State with an empty `accepted_events` (the new history record, which contains this very
/// digest, cannot be part of it). Both shapes are the reference kernel's. `out` is a buffer to
/// write the preamble into (cleared first; a caller applying many events reuses one).
pub(crate) fn result_digest(binding: &ResultBinding<'_>, out: &mut Vec<u8>) -> String {
    let preimage = write_result_preimage(binding, out);
    let mut hasher = Sha256::new();
    Update::update(&mut hasher, out);
    if preimage.body_follows {
        binding.next_encoding.feed(&mut hasher);
    }
    Update::update(&mut hasher, RESULT_DIGEST_SUFFIX);
    digest_text(&hasher.finalize().into())
}

/// Where things are in a result digest's preimage as [`write_result_preimage`] wrote it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ResultPreimage {
    /// Offset of the prior State digest's text (`DIGEST_LEN` bytes).
    pub prior_at: usize,
    /// Whether the next State's body tail ([`BodyEncoding::feed`]) follows what was written
    /// (the full State), or the State was written whole (the compact one).
    pub body_follows: bool,
}

/// Writes a result digest's preimage (`out` cleared first) up to where the next State's body
/// tail follows, or up to [`RESULT_DIGEST_SUFFIX`] when the State is the compact one.
pub(crate) fn write_result_preimage(
    binding: &ResultBinding<'_>,
    out: &mut Vec<u8>,
) -> ResultPreimage {
    let next = binding.next;
    out.clear();
    let (state, prior_at) = write_result_preamble(out, &binding.parts());
    if next.work_items.is_empty() && next.suspension.is_none() && next.control.is_none() {
        let mut compact = Fields::begin(state);
        compact.canonical("installation_id", &next.installation_id);
        compact.int("leader_epoch", next.leader_epoch);
        compact.str("protocol_version", &next.protocol_version);
        compact.int("revision", next.revision);
        compact.str("status", next.status.as_str());
        compact.canonical("task_id", &next.task_id);
        compact.end();
        return ResultPreimage {
            prior_at,
            body_follows: false,
        };
    }
    state.extend_from_slice(STATE_HISTORY_OPEN);
    state.push(b']');
    ResultPreimage {
        prior_at,
        body_follows: true,
    }
}

/// What every result digest binds besides the next State.
pub(crate) struct ResultParts<'a> {
    pub result_id: &'a Identity,
    pub event_id: &'a Identity,
    /// A digest the kernel computed, as is `prior_state_digest` (or, for a deferred check, a
    /// stand-in of the same shape): both are written without escaping.
    pub input_digest: &'a str,
    pub prior_state_digest: &'a str,
    pub obligations: &'a [String],
    pub audit_facts: &'a [String],
}

impl ResultBinding<'_> {
    fn parts(&self) -> ResultParts<'_> {
        ResultParts {
            result_id: self.result_id,
            event_id: self.event_id,
            input_digest: self.input_digest,
            prior_state_digest: self.prior_state_digest,
            obligations: self.obligations,
            audit_facts: self.audit_facts,
        }
    }
}

/// The members that follow `"state"` in a result digest's preimage (`"variant"` is the last
/// key), its closing brace and the LF.
pub(crate) const RESULT_DIGEST_SUFFIX: &[u8] = b",\"variant\":\"accepted\"}\n";

/// Writes a result digest's preimage up to `"state":` and returns the buffer for the state and
/// the offset of the prior State digest's text in it.
fn write_result_preamble<'o>(
    out: &'o mut Vec<u8>,
    parts: &ResultParts<'_>,
) -> (&'o mut Vec<u8>, usize) {
    let mut fields = Fields::begin(out);
    fields.strs("audit_facts", parts.audit_facts);
    fields.canonical("event_id", parts.event_id);
    write_digest(fields.key("input_digest"), parts.input_digest);
    fields.strs("obligations", parts.obligations);
    let prior = fields.key("prior_state_digest");
    // After the opening quote.
    let prior_at = prior.len() + 1;
    write_digest(prior, parts.prior_state_digest);
    fields.canonical("result_id", parts.result_id);
    fields.key("state");
    (out, prior_at)
}

/// Appends the JSON string of a digest the kernel computed (`sha256:` and lowercase hex,
/// nothing to escape), without [`write_str`](crate::json::write::write_str)'s scan for bytes
/// to escape: a result preimage holds two, written per applied event.
fn write_digest(out: &mut Vec<u8>, digest: &str) {
    debug_assert!(is_digest(digest), "not a digest: {digest:?}");
    out.reserve(digest.len() + 2);
    out.push(b'"');
    out.extend_from_slice(digest.as_bytes());
    out.push(b'"');
}

/// A result digest whose next State is given as its canonical bytes (with an empty history):
/// the shape the authority lane's reducer uses.
pub(crate) fn result_digest_of_state(parts: &ResultParts<'_>, state: &[u8]) -> String {
    let mut out = Vec::with_capacity(1024 + state.len());
    write_result_preamble(&mut out, parts)
        .0
        .extend_from_slice(state);
    out.extend_from_slice(RESULT_DIGEST_SUFFIX);
    sha256_digest(&out)
}

/// SHA-256 fed with the canonical State's opening up to the end of its history:
/// `{"accepted_events":[` + the entries joined by commas.
pub(crate) fn history_hash(history: &[AcceptedEvent]) -> Midstate {
    let mut hasher = Midstate::new();
    hasher.update(STATE_HISTORY_OPEN);
    let mut scratch = Vec::with_capacity(256);
    for (index, entry) in history.iter().enumerate() {
        hash_history_entry(&mut hasher, entry, index == 0, &mut scratch);
    }
    hasher
}

/// Extends a [`history_hash`] by one entry (`first`: no comma before it).
pub(crate) fn hash_history_entry(
    hasher: &mut Midstate,
    entry: &AcceptedEvent,
    first: bool,
    scratch: &mut Vec<u8>,
) {
    scratch.clear();
    if !first {
        scratch.push(b',');
    }
    entry.write_canonical(scratch);
    hasher.update(scratch);
}

/// `digest()` of a State given as its running history hash and its encoded body: the canonical
/// State is `{"accepted_events":[` + history + `]` + tail.
pub(crate) fn state_digest_from_parts(history_prefix: &Midstate, body: &BodyEncoding) -> String {
    state_digest_fed(history_prefix, |hasher| body.feed(hasher))
}

/// [`state_digest_from_parts`] with the body given as its tail in one run ([`TailCopy`]).
pub(crate) fn state_digest_of_tail(history_prefix: &Midstate, tail: &[u8]) -> String {
    state_digest_fed(history_prefix, |hasher| hasher.update(tail))
}

/// What a State's canonical line holds between its history and its body's tail.
const HISTORY_CLOSE: &[u8] = b"]";
/// What the line holds after the tail.
const LINE_END: &[u8] = b"\n";

/// The State digest from the running history hash, with `feed` giving the body's tail.
fn state_digest_fed(history_prefix: &Midstate, feed: impl FnOnce(&mut Midstate)) -> String {
    let mut hasher = history_prefix.clone();
    hasher.update(HISTORY_CLOSE);
    feed(&mut hasher);
    hasher.update(LINE_END);
    digest_text(&hasher.digest())
}

/// What is left to hash of [`state_digest_of_tail`]'s preimage after the history midstate's
/// whole blocks ([`Midstate::words`]), in pieces: to hash it elsewhere, beside other messages
/// ([`valp_sha256_pair`]).
pub(crate) fn state_digest_rest<'a>(history_prefix: &'a Midstate, tail: &'a [u8]) -> [&'a [u8]; 4] {
    let (_, _, pending) = history_prefix.words();
    [pending, HISTORY_CLOSE, tail, LINE_END]
}
