//! Typed decoding of a compact entry straight from its canonical bytes: no `Value` tree, one
//! owned string per string the entry holds, read in the one pass that checks the text.
//!
//! [`decode_compact_entry_canonical`] answers only for canonical text of exactly the shape
//! [`decode_compact_entry`](super::decode_compact_entry) accepts, and then with the entry that
//! decoder gives for the parsed text. On anything else (a non-canonical byte, a missing or
//! unknown member, a wrong type, an unknown vocabulary value, an empty identity, a `null` in an
//! optional slot) it says nothing, and the caller takes the general path (parse, then decode),
//! which names the error: every refusal is the one it always was.
//!
//! It also says where the input digest's preimage is in that text ([`EntrySpans::input`]): a
//! compact entry's canonical text starts `{"event":…,"evidence_set":[…]`, which is what the
//! input digest hashes before `,"protocol_version":…}` when those bytes are exactly the ones
//! encoding the decoded Event and EvidenceSet gives. They are not when the evidence is not in
//! canonical (sorted) order or an empty id list is written out (`"required_work_item_ids":[]`,
//! which encoding omits): then there is no span and the kernel encodes the input, as before.

use crate::json::strict::Strict;
use crate::live::AcceptedRecord;
use crate::model::event::{EVENT_SCHEMA, EVIDENCE_SCHEMA};
use crate::model::{
    CancellationScope, ControlReason, Event, EventKind, Evidence, Identity, IdentityKind, Int,
    Open, WakeReason,
};
use crate::replay::{COMPACT_ENTRY_SCHEMA, CompactEntry};

/// Where things are in the canonical text a compact entry was decoded from (only
/// [`decode_compact_entry_spans`] makes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntrySpans {
    len: usize,
    input: Option<usize>,
}

impl EntrySpans {
    /// How many bytes the entry's text takes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the text is empty (never, for a decoded entry).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `Some(n)`: the text's first `n` bytes, `{"event":…,"evidence_set":[…]`, are exactly the
    /// bytes encoding the decoded Event and EvidenceSet gives at the start of the input digest's
    /// preimage; `None` when encoding would give other bytes.
    pub fn input(&self) -> Option<usize> {
        self.input
    }
}

/// The start of an input digest's preimage, `{"event":…,"evidence_set":[…]`, taken from the
/// canonical text an entry was decoded from, for
/// [`LiveState::apply_recorded_from`](crate::live::LiveState::apply_recorded_from): hashing
/// these bytes gives the digest encoding the entry's Event and EvidenceSet gives, without
/// encoding them. Made only from an [`EntrySpans`] and the text it was decoded from.
#[derive(Debug, Clone, Copy)]
pub struct InputPrefix<'a>(&'a [u8]);

impl<'a> InputPrefix<'a> {
    /// The prefix of `text`, the entry's text `spans` was decoded from (exactly its bytes);
    /// `None` when that text does not hold the prefix as encoding would give it (see
    /// [`EntrySpans::input`]) or `text` is not as long as the entry.
    pub fn of(text: &'a [u8], spans: &EntrySpans) -> Option<Self> {
        (text.len() == spans.len)
            .then_some(())
            .and(spans.input)
            .and_then(|end| text.get(..end))
            .map(Self)
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// The compact entry `bytes` (without a trailing LF) is the canonical text of, if it is one.
pub fn decode_compact_entry_canonical(bytes: &[u8]) -> Option<CompactEntry> {
    let text = std::str::from_utf8(bytes).ok()?;
    decode_compact_entry_prefix(text)
        .and_then(|(entry, taken)| (taken == text.len()).then_some(entry))
}

/// The compact entry whose canonical text starts `text`, and how many bytes that text takes (for
/// a reader that decodes a journal line's entry in the pass that checks the line, see
/// [`parse_canonical_lazy`](crate::json::strict::parse_canonical_lazy)).
pub fn decode_compact_entry_prefix(text: &str) -> Option<(CompactEntry, usize)> {
    decode_compact_entry_spans(text).map(|(entry, spans)| (entry, spans.len))
}

/// [`decode_compact_entry_prefix`], saying also where the input digest's preimage starts in
/// `text` ([`EntrySpans`]).
pub fn decode_compact_entry_spans(text: &str) -> Option<(CompactEntry, EntrySpans)> {
    compact_entry(&mut Strict::new(text), text.as_bytes())
}

/// Objects here nest a few levels deep, far below the parser's limit.
const DEPTH: usize = 1;

/// The members an object may have: an enum `$name` of them and `$name::KEYS`, their keys in
/// canonical (ascending) order, for [`Strict::known_members`] (a test checks the order, and that
/// no key needs an escape).
macro_rules! members {
    ($(#[$doc:meta])* $name:ident { $($member:ident = $key:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        enum $name {
            $($member),+
        }

        impl $name {
            const KEYS: &[(&str, Self)] = &[$(($key, Self::$member)),+];
        }
    };
}

members!(
    /// A compact entry's members.
    EntryMember { Event = "event", EvidenceSet = "evidence_set", Result = "result", Schema = "schema_version" }
);
members!(
    /// An identity's members.
    IdentityMember { Kind = "kind", Value = "value" }
);
members!(
    /// An Evidence's members.
    EvidenceMember { ContentDigest = "content_digest", EvidenceId = "evidence_id", Schema = "schema_version" }
);
members!(
    /// The members of an accepted Result without its State.
    RecordMember {
        AuditFacts = "audit_facts",
        InputDigest = "input_digest",
        Obligations = "obligations",
        ResultDigest = "result_digest",
        ResultId = "result_id",
    }
);
members!(
    /// An Event's members.
    EventMember {
        AttemptId = "attempt_id",
        AuthorityEvidenceId = "authority_evidence_id",
        AuthorityPrincipalId = "authority_principal_id",
        CancellationScope = "cancellation_scope",
        ControlReason = "control_reason",
        DispatchGeneration = "dispatch_generation",
        DispatchId = "dispatch_id",
        EventId = "event_id",
        ExpectedRevision = "expected_revision",
        InstallationId = "installation_id",
        IntentVersion = "intent_version",
        InterruptId = "interrupt_id",
        Kind = "kind",
        LeaderEpoch = "leader_epoch",
        NextIntentVersion = "next_intent_version",
        RedirectId = "redirect_id",
        RequiredWorkItemIds = "required_work_item_ids",
        Schema = "schema_version",
        SupersededWorkItemIds = "superseded_work_item_ids",
        SuspensionEpoch = "suspension_epoch",
        SuspensionId = "suspension_id",
        TaskId = "task_id",
        WaitPolicyDigest = "wait_policy_digest",
        WaitPolicyId = "wait_policy_id",
        WakeId = "wake_id",
        WakeReason = "wake_reason",
        WorkItemId = "work_item_id",
    }
);

/// The entry `text` starts with, and where things are in it ([`EntrySpans`]). The Event (~750
/// bytes, most of the entry) is decoded where it stays, not moved from one function to the next.
fn compact_entry(parser: &mut Strict<'_>, text: &[u8]) -> Option<(CompactEntry, EntrySpans)> {
    let mut event = blank_event();
    let (mut has_event, mut evidence_set, mut result, mut schema) = (false, None, None, false);
    let (mut event_as_encoded, mut evidence_end) = (false, None);
    parser.known_members(DEPTH, EntryMember::KEYS, |parser, member| {
        match member {
            EntryMember::Event => {
                event_as_encoded = event_of(parser, &mut event)?;
                has_event = true;
            }
            EntryMember::EvidenceSet => {
                let (decoded, sorted) = evidence_list(parser, text)?;
                evidence_set = Some(decoded);
                evidence_end = sorted.then_some(parser.pos());
            }
            EntryMember::Result => result = Some(record(parser)?),
            EntryMember::Schema => schema = parser.string()? == COMPACT_ENTRY_SCHEMA,
        }
        Some(())
    })?;
    (schema && has_event).then_some(())?;
    let entry = CompactEntry {
        event,
        evidence_set: evidence_set?,
        result: result?,
    };
    // Keys are strictly ascending and all four are there, so `event` is the first member and
    // `evidence_set` the second: the text up to the set's end is `{"event":…,"evidence_set":[…]`.
    let spans = EntrySpans {
        len: parser.pos(),
        input: evidence_end.filter(|_| event_as_encoded),
    };
    Some((entry, spans))
}

/// An EvidenceSet, and whether its elements' texts are in the order encoding sorts them in
/// (ascending canonical bytes; every element's text is its canonical form, as decoded).
fn evidence_list(parser: &mut Strict<'_>, text: &[u8]) -> Option<(Vec<Evidence>, bool)> {
    let mut items = Vec::new();
    let (mut previous, mut sorted) = (0..0, true);
    parser.items(DEPTH, |parser, _| {
        let start = parser.pos();
        items.push(evidence(parser)?);
        let span = start..parser.pos();
        sorted &= previous.is_empty() || text.get(previous.clone()) <= text.get(span.clone());
        previous = span;
        Some(())
    })?;
    Some((items, sorted))
}

fn owned(parser: &mut Strict<'_>) -> Option<String> {
    parser.string().map(std::borrow::Cow::into_owned)
}

fn list<T>(parser: &mut Strict<'_>, item: impl Fn(&mut Strict<'_>) -> Option<T>) -> Option<Vec<T>> {
    let mut items = Vec::new();
    parser.items(DEPTH, |parser, _| {
        items.push(item(parser)?);
        Some(())
    })?;
    Some(items)
}

/// `{"kind","value"}` with a known kind and a non-empty value.
fn identity(parser: &mut Strict<'_>) -> Option<Identity> {
    let (mut kind, mut value) = (None, None);
    parser.known_members(DEPTH, IdentityMember::KEYS, |parser, member| {
        match member {
            IdentityMember::Kind => kind = Some(IdentityKind::from_wire(&parser.string()?)?),
            IdentityMember::Value => value = Some(owned(parser)?),
        }
        Some(())
    })?;
    Identity::new(kind?, value?).ok()
}

fn evidence(parser: &mut Strict<'_>) -> Option<Evidence> {
    let (mut content_digest, mut evidence_id, mut schema) = (None, None, false);
    parser.known_members(DEPTH, EvidenceMember::KEYS, |parser, member| {
        match member {
            EvidenceMember::ContentDigest => content_digest = Some(owned(parser)?),
            EvidenceMember::EvidenceId => evidence_id = Some(identity(parser)?),
            EvidenceMember::Schema => schema = parser.string()? == EVIDENCE_SCHEMA,
        }
        Some(())
    })?;
    schema.then_some(())?;
    Some(Evidence {
        evidence_id: evidence_id?,
        content_digest: content_digest?,
    })
}

/// The `result` of a compact entry: an accepted Result without its State.
fn record(parser: &mut Strict<'_>) -> Option<AcceptedRecord> {
    let (mut audit_facts, mut input_digest, mut obligations) = (None, None, None);
    let (mut result_digest, mut result_id) = (None, None);
    parser.known_members(DEPTH, RecordMember::KEYS, |parser, member| {
        match member {
            RecordMember::AuditFacts => audit_facts = Some(list(parser, owned)?),
            RecordMember::InputDigest => input_digest = Some(owned(parser)?),
            RecordMember::Obligations => obligations = Some(list(parser, owned)?),
            RecordMember::ResultDigest => result_digest = Some(owned(parser)?),
            RecordMember::ResultId => result_id = Some(identity(parser)?),
        }
        Some(())
    })?;
    Some(AcceptedRecord {
        result_id: result_id?,
        input_digest: input_digest?,
        result_digest: result_digest?,
        obligations: obligations?,
        audit_facts: audit_facts?,
    })
}

/// The Event's members as they are read; the six mandatory ones must all be there.
#[derive(Default)]
struct Members {
    event_id: Option<Identity>,
    installation_id: Option<Identity>,
    leader_epoch: Option<Int>,
    task_id: Option<Identity>,
    kind: Option<Open<EventKind>>,
    expected_revision: Option<Int>,
    schema: bool,
}

/// An Event whose every optional slot is empty and whose mandatory six [`event_of`] fills in.
fn blank_event() -> Event {
    Event::new(
        Identity::unset(IdentityKind::Event),
        Identity::unset(IdentityKind::Installation),
        0,
        Identity::unset(IdentityKind::Task),
        EventKind::RoutingValidationStarted,
        0,
    )
}

/// Reads the Event into `event` ([`blank_event`] before), and whether encoding it gives its text
/// back (not when an empty id list is written out: encoding omits it).
fn event_of(parser: &mut Strict<'_>, event: &mut Event) -> Option<bool> {
    let mut required = Members::default();
    let mut as_encoded = true;
    parser.known_members(DEPTH, EventMember::KEYS, |parser, member| {
        let id = identity;
        match member {
            EventMember::AttemptId => event.attempt_id = Some(id(parser)?),
            EventMember::AuthorityEvidenceId => event.authority_evidence_id = Some(id(parser)?),
            EventMember::AuthorityPrincipalId => {
                event.authority_principal_id = Some(id(parser)?);
            }
            EventMember::CancellationScope => {
                event.cancellation_scope =
                    Some(Open::<CancellationScope>::from_wire(&parser.string()?));
            }
            EventMember::ControlReason => {
                event.control_reason = Some(Open::<ControlReason>::from_wire(&parser.string()?));
            }
            EventMember::DispatchGeneration => {
                event.dispatch_generation = Some(parser.integer()?);
            }
            EventMember::DispatchId => event.dispatch_id = Some(id(parser)?),
            EventMember::EventId => required.event_id = Some(id(parser)?),
            EventMember::ExpectedRevision => required.expected_revision = Some(parser.integer()?),
            EventMember::InstallationId => required.installation_id = Some(id(parser)?),
            EventMember::IntentVersion => event.intent_version = Some(parser.integer()?),
            EventMember::InterruptId => event.interrupt_id = Some(id(parser)?),
            EventMember::Kind => {
                required.kind = Some(Open::<EventKind>::from_wire(&parser.string()?));
            }
            EventMember::LeaderEpoch => required.leader_epoch = Some(parser.integer()?),
            EventMember::NextIntentVersion => event.next_intent_version = Some(parser.integer()?),
            EventMember::RedirectId => event.redirect_id = Some(id(parser)?),
            EventMember::RequiredWorkItemIds => {
                event.required_work_item_ids = list(parser, id)?;
                as_encoded &= !event.required_work_item_ids.is_empty();
            }
            EventMember::Schema => required.schema = parser.string()? == EVENT_SCHEMA,
            EventMember::SupersededWorkItemIds => {
                event.superseded_work_item_ids = list(parser, id)?;
                as_encoded &= !event.superseded_work_item_ids.is_empty();
            }
            EventMember::SuspensionEpoch => event.suspension_epoch = Some(parser.integer()?),
            EventMember::SuspensionId => event.suspension_id = Some(id(parser)?),
            EventMember::TaskId => required.task_id = Some(id(parser)?),
            EventMember::WaitPolicyDigest => event.wait_policy_digest = Some(owned(parser)?),
            EventMember::WaitPolicyId => event.wait_policy_id = Some(id(parser)?),
            EventMember::WakeId => event.wake_id = Some(id(parser)?),
            EventMember::WakeReason => {
                event.wake_reason = Some(Open::<WakeReason>::from_wire(&parser.string()?));
            }
            EventMember::WorkItemId => event.work_item_id = Some(id(parser)?),
        }
        Some(())
    })?;
    required.schema.then_some(())?;
    event.event_id = required.event_id?;
    event.installation_id = required.installation_id?;
    event.leader_epoch = required.leader_epoch?;
    event.task_id = required.task_id?;
    event.kind = required.kind?;
    event.expected_revision = required.expected_revision?;
    Some(as_encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_are_in_canonical_order() {
        fn keys<K>(known: &[(&'static str, K)]) -> Vec<&'static str> {
            known.iter().map(|(key, _)| *key).collect()
        }
        for keys in [
            keys(EntryMember::KEYS),
            keys(IdentityMember::KEYS),
            keys(EvidenceMember::KEYS),
            keys(RecordMember::KEYS),
            keys(EventMember::KEYS),
        ] {
            assert!(keys.windows(2).all(|pair| pair[0] < pair[1]), "{keys:?}");
            // Written without an escape: the canonical text of each is the key in quotes.
            assert!(
                keys.iter().all(|key| key
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte == b'_')),
                "{keys:?}"
            );
        }
    }
}
