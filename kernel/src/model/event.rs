//! Events (`valp-kernel-event.v1`) and Evidence (`valp-kernel-evidence.v1`).

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::model::identity::Identity;
use crate::model::state::Int;
use crate::model::vocabulary::{CancellationScope, ControlReason, EventKind, Open, WakeReason};

/// `schema_version` of an Event.
pub const EVENT_SCHEMA: &str = "valp-kernel-event.v1";
/// `schema_version` of an Evidence reference.
pub const EVIDENCE_SCHEMA: &str = "valp-kernel-evidence.v1";

/// A proposed transition. The first six fields are always present; the rest are optional slots
/// that only some kinds read. Slots a kind does not read are still bound into its
/// `input_digest`, so two events that differ only in an ignored slot are different inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // slot names are the protocol's; see RFC 0002 and `protocol-digest.md`.
pub struct Event {
    pub event_id: Identity,
    pub installation_id: Identity,
    pub leader_epoch: Int,
    pub task_id: Identity,
    pub kind: Open<EventKind>,
    pub expected_revision: Int,
    pub work_item_id: Option<Identity>,
    pub attempt_id: Option<Identity>,
    pub dispatch_id: Option<Identity>,
    pub dispatch_generation: Option<Int>,
    pub suspension_id: Option<Identity>,
    pub suspension_epoch: Option<Int>,
    pub wait_policy_id: Option<Identity>,
    pub wait_policy_digest: Option<String>,
    /// Omitted from the canonical form when empty.
    pub required_work_item_ids: Vec<Identity>,
    pub wake_id: Option<Identity>,
    pub wake_reason: Option<Open<WakeReason>>,
    pub authority_principal_id: Option<Identity>,
    pub authority_evidence_id: Option<Identity>,
    pub control_reason: Option<Open<ControlReason>>,
    pub cancellation_scope: Option<Open<CancellationScope>>,
    pub interrupt_id: Option<Identity>,
    pub redirect_id: Option<Identity>,
    pub intent_version: Option<Int>,
    pub next_intent_version: Option<Int>,
    /// Omitted from the canonical form when empty.
    pub superseded_work_item_ids: Vec<Identity>,
}

impl Event {
    /// An event with the six mandatory fields and every optional slot empty.
    pub fn new(
        event_id: Identity,
        installation_id: Identity,
        leader_epoch: Int,
        task_id: Identity,
        kind: EventKind,
        expected_revision: Int,
    ) -> Self {
        Self {
            event_id,
            installation_id,
            leader_epoch,
            task_id,
            kind: Open::Known(kind),
            expected_revision,
            work_item_id: None,
            attempt_id: None,
            dispatch_id: None,
            dispatch_generation: None,
            suspension_id: None,
            suspension_epoch: None,
            wait_policy_id: None,
            wait_policy_digest: None,
            required_work_item_ids: Vec::new(),
            wake_id: None,
            wake_reason: None,
            authority_principal_id: None,
            authority_evidence_id: None,
            control_reason: None,
            cancellation_scope: None,
            interrupt_id: None,
            redirect_id: None,
            intent_version: None,
            next_intent_version: None,
            superseded_work_item_ids: Vec::new(),
        }
    }
}

impl Canonical for Event {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.optional("attempt_id", self.attempt_id.as_ref());
        fields.optional("authority_evidence_id", self.authority_evidence_id.as_ref());
        fields.optional(
            "authority_principal_id",
            self.authority_principal_id.as_ref(),
        );
        if let Some(scope) = &self.cancellation_scope {
            fields.str("cancellation_scope", scope.as_str());
        }
        if let Some(reason) = &self.control_reason {
            fields.str("control_reason", reason.as_str());
        }
        if let Some(generation) = self.dispatch_generation {
            fields.int("dispatch_generation", generation);
        }
        fields.optional("dispatch_id", self.dispatch_id.as_ref());
        fields.canonical("event_id", &self.event_id);
        fields.int("expected_revision", self.expected_revision);
        fields.canonical("installation_id", &self.installation_id);
        if let Some(version) = self.intent_version {
            fields.int("intent_version", version);
        }
        fields.optional("interrupt_id", self.interrupt_id.as_ref());
        fields.str("kind", self.kind.as_str());
        fields.int("leader_epoch", self.leader_epoch);
        if let Some(version) = self.next_intent_version {
            fields.int("next_intent_version", version);
        }
        fields.optional("redirect_id", self.redirect_id.as_ref());
        if !self.required_work_item_ids.is_empty() {
            fields.list("required_work_item_ids", &self.required_work_item_ids);
        }
        fields.str("schema_version", EVENT_SCHEMA);
        if !self.superseded_work_item_ids.is_empty() {
            fields.list("superseded_work_item_ids", &self.superseded_work_item_ids);
        }
        if let Some(epoch) = self.suspension_epoch {
            fields.int("suspension_epoch", epoch);
        }
        fields.optional("suspension_id", self.suspension_id.as_ref());
        fields.canonical("task_id", &self.task_id);
        if let Some(digest) = &self.wait_policy_digest {
            fields.str("wait_policy_digest", digest);
        }
        fields.optional("wait_policy_id", self.wait_policy_id.as_ref());
        fields.optional("wake_id", self.wake_id.as_ref());
        if let Some(reason) = &self.wake_reason {
            fields.str("wake_reason", reason.as_str());
        }
        fields.optional("work_item_id", self.work_item_id.as_ref());
        fields.end();
    }
}

/// A reference to content-addressed evidence. The kernel sees only the identity and the digest;
/// the bytes live with the System.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evidence {
    /// The evidence identity (kind `evidence`).
    pub evidence_id: Identity,
    /// `sha256:` digest of the evidence bytes.
    pub content_digest: String,
}

impl Canonical for Evidence {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("content_digest", &self.content_digest);
        fields.canonical("evidence_id", &self.evidence_id);
        fields.str("schema_version", EVIDENCE_SCHEMA);
        fields.end();
    }
}

/// The canonical form of an EvidenceSet: each element's canonical form, sorted by those bytes.
/// The order in which evidence was supplied never changes a digest.
pub fn sorted_evidence(evidence_set: &[Evidence]) -> Vec<Vec<u8>> {
    let mut encoded: Vec<Vec<u8>> = evidence_set
        .iter()
        .map(|evidence| {
            let mut bytes = Vec::with_capacity(160);
            evidence.write_canonical(&mut bytes);
            bytes
        })
        .collect();
    encoded.sort_unstable();
    encoded
}

/// Appends the canonical EvidenceSet array.
pub fn write_evidence_set(out: &mut Vec<u8>, evidence_set: &[Evidence]) {
    out.push(b'[');
    for (index, bytes) in sorted_evidence(evidence_set).iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(bytes);
    }
    out.push(b']');
}
