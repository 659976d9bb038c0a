//! The authority lane's State, Event and ledger artifacts, with their canonical forms.

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::live::AcceptedRecord;
use crate::model::event::write_evidence_set;
use crate::model::state::STATE_HISTORY_OPEN;
use crate::model::{
    AcceptedEvent, Evidence, Identity, InstallationEventKind, InstallationStatus, Int, Open,
    PROTOCOL_VERSION, PrincipalKind,
};

/// `schema_version` of the installation State.
pub const STATE_SCHEMA: &str = "valp-kernel-installation-state.v1";
/// `schema_version` of an installation event.
pub const EVENT_SCHEMA: &str = "valp-kernel-installation-event.v1";
/// `schema_version` of the ledger's genesis.
pub const GENESIS_SCHEMA: &str = "valp-kernel-installation-genesis.v1";
/// `schema_version` of a ledger entry.
pub const ENTRY_SCHEMA: &str = "valp-kernel-installation-entry.v1";

/// One candidate the Doctor observed: an address, the principal, and the fingerprint of the
/// session's allowlisted identity tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Stable address, e.g. `human:uid-1000` or `tmux:/tmp/tmux-1000/default:%3`.
    pub candidate_id: String,
    /// The principal (kind `principal`).
    pub principal_id: Identity,
    /// What kind of principal.
    pub principal_kind: PrincipalKind,
    /// `sha256:` digest of the session identity tuple.
    pub session_fingerprint: String,
}

/// The candidates of the latest recorded Doctor observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateSet {
    /// The observation: its evidence id and the digest of its bytes.
    pub observation: Evidence,
    /// Candidates, in the Doctor's order.
    pub candidates: Vec<Candidate>,
}

/// The active Leader: principal, session binding and epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The candidate selected.
    pub candidate: Candidate,
    /// The selection that chose it.
    pub selection_id: String,
    /// Its epoch.
    pub epoch: Int,
    /// The observation the candidate was selected from.
    pub observation: Evidence,
    /// The principal who approved the selection.
    pub approved_by: Identity,
    /// The approval record (evidence).
    pub approval: Evidence,
}

/// A selection approved but not yet activated (activating, or rotating).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The binding it will become.
    pub binding: Binding,
    /// The epoch it fences (the active one), when rotating.
    pub fenced_epoch: Option<Int>,
}

/// The last accepted reopen of the bound session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reopen {
    /// The epoch reopened.
    pub epoch: Int,
    /// The fresh observation that re-proved the session.
    pub observation: Evidence,
    /// When, as the console's clock said (RFC 3339).
    pub observed_at: String,
}

/// A task handed over from a fenced epoch to the active one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handoff {
    /// The task whose journal is bound to the fenced epoch.
    pub task_id: Identity,
    /// The task that continues it at the active epoch.
    pub successor_task_id: Identity,
    /// The fenced epoch.
    pub from_epoch: Int,
    /// The epoch it was handed to.
    pub to_epoch: Int,
}

/// The installation's authority State (`valp-kernel-installation-state.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationState {
    /// Protocol version.
    pub protocol_version: String,
    /// The installation.
    pub installation_id: Identity,
    /// Number of accepted events.
    pub revision: Int,
    /// Control-plane status.
    pub status: Open<InstallationStatus>,
    /// The active epoch (0 until the first activation).
    pub active_epoch: Int,
    /// The highest epoch ever allocated (epochs are never reused).
    pub highest_epoch: Int,
    /// The latest recorded Doctor observation.
    pub observation: Option<CandidateSet>,
    /// The active Leader.
    pub leader: Option<Binding>,
    /// The bindings of every fenced epoch, oldest first (the history of the Leader role).
    pub fenced: Vec<Binding>,
    /// An approved selection awaiting activation or rotation completion.
    pub pending: Option<Pending>,
    /// The last accepted reopen.
    pub reopened: Option<Reopen>,
    /// Tasks handed over from fenced epochs.
    pub handoffs: Vec<Handoff>,
    /// Every accepted event.
    pub accepted_events: Vec<AcceptedEvent>,
}

impl InstallationState {
    /// The state of a new installation: uninitialized, epoch 0, nothing recorded.
    pub fn genesis(installation_id: Identity) -> Self {
        Self {
            protocol_version: PROTOCOL_VERSION.to_owned(),
            installation_id,
            revision: 0,
            status: Open::Known(InstallationStatus::Uninitialized),
            active_epoch: 0,
            highest_epoch: 0,
            observation: None,
            leader: None,
            fenced: Vec::new(),
            pending: None,
            reopened: None,
            handoffs: Vec::new(),
            accepted_events: Vec::new(),
        }
    }

    /// The canonical form with the given history.
    pub(crate) fn write_with_history(&self, out: &mut Vec<u8>, history: &[AcceptedEvent]) {
        out.extend_from_slice(STATE_HISTORY_OPEN);
        for (index, entry) in history.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            entry.write_canonical(out);
        }
        out.push(b']');
        let mut fields = Fields::resume(out, "accepted_events");
        fields.int("active_epoch", self.active_epoch);
        if !self.fenced.is_empty() {
            fields.list("fenced", &self.fenced);
        }
        if !self.handoffs.is_empty() {
            fields.list("handoffs", &self.handoffs);
        }
        fields.int("highest_epoch", self.highest_epoch);
        fields.canonical("installation_id", &self.installation_id);
        fields.optional("leader", self.leader.as_ref());
        fields.optional("observation", self.observation.as_ref());
        fields.optional("pending", self.pending.as_ref());
        fields.str("protocol_version", &self.protocol_version);
        fields.optional("reopened", self.reopened.as_ref());
        fields.int("revision", self.revision);
        fields.str("schema_version", STATE_SCHEMA);
        fields.str("status", self.status.as_str());
        fields.end();
    }
}

impl Canonical for InstallationState {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_with_history(out, &self.accepted_events);
    }
}

impl Canonical for Candidate {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("candidate_id", &self.candidate_id);
        fields.canonical("principal_id", &self.principal_id);
        fields.str("principal_kind", self.principal_kind.as_str());
        fields.str("session_fingerprint", &self.session_fingerprint);
        fields.end();
    }
}

impl Canonical for CandidateSet {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.list("candidates", &self.candidates);
        fields.canonical("observation", &self.observation);
        fields.end();
    }
}

impl Binding {
    fn write_members(&self, fields: &mut Fields<'_>, fenced_epoch: Option<Int>) {
        fields.canonical("approval", &self.approval);
        fields.canonical("approved_by", &self.approved_by);
        fields.canonical("candidate", &self.candidate);
        fields.int("epoch", self.epoch);
        if let Some(epoch) = fenced_epoch {
            fields.int("fenced_epoch", epoch);
        }
        fields.canonical("observation", &self.observation);
        fields.str("selection_id", &self.selection_id);
    }
}

impl Canonical for Binding {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        self.write_members(&mut fields, None);
        fields.end();
    }
}

impl Canonical for Pending {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        self.binding.write_members(&mut fields, self.fenced_epoch);
        fields.end();
    }
}

impl Canonical for Reopen {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.int("epoch", self.epoch);
        fields.canonical("observation", &self.observation);
        fields.str("observed_at", &self.observed_at);
        fields.end();
    }
}

impl Canonical for Handoff {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.int("from_epoch", self.from_epoch);
        fields.canonical("successor_task_id", &self.successor_task_id);
        fields.canonical("task_id", &self.task_id);
        fields.int("to_epoch", self.to_epoch);
        fields.end();
    }
}

/// A proposed authority-lane transition. The first five fields are always present; the rest are
/// slots some kinds read (and every kind binds into its input digest).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // slot names say what they hold; the reducer says which kind reads which
pub struct InstallationEvent {
    pub event_id: Identity,
    pub installation_id: Identity,
    pub leader_epoch: Int,
    pub kind: Open<InstallationEventKind>,
    pub expected_revision: Int,
    pub observation_id: Option<Identity>,
    /// Present (possibly empty) on discovery and observation events.
    pub candidates: Option<Vec<Candidate>>,
    pub candidate_id: Option<String>,
    pub selection_id: Option<String>,
    pub new_epoch: Option<Int>,
    pub fenced_epoch: Option<Int>,
    pub session_fingerprint: Option<String>,
    pub observed_at: Option<String>,
    pub authority_principal_id: Option<Identity>,
    pub authority_evidence_id: Option<Identity>,
    pub reason: Option<String>,
    pub task_id: Option<Identity>,
    pub successor_task_id: Option<Identity>,
}

impl InstallationEvent {
    /// An event with the mandatory fields and every slot empty.
    pub fn new(
        event_id: Identity,
        installation_id: Identity,
        leader_epoch: Int,
        kind: InstallationEventKind,
        expected_revision: Int,
    ) -> Self {
        Self {
            event_id,
            installation_id,
            leader_epoch,
            kind: Open::Known(kind),
            expected_revision,
            observation_id: None,
            candidates: None,
            candidate_id: None,
            selection_id: None,
            new_epoch: None,
            fenced_epoch: None,
            session_fingerprint: None,
            observed_at: None,
            authority_principal_id: None,
            authority_evidence_id: None,
            reason: None,
            task_id: None,
            successor_task_id: None,
        }
    }
}

impl Canonical for InstallationEvent {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.optional("authority_evidence_id", self.authority_evidence_id.as_ref());
        fields.optional(
            "authority_principal_id",
            self.authority_principal_id.as_ref(),
        );
        if let Some(candidate) = &self.candidate_id {
            fields.str("candidate_id", candidate);
        }
        if let Some(candidates) = &self.candidates {
            fields.list("candidates", candidates);
        }
        fields.canonical("event_id", &self.event_id);
        fields.int("expected_revision", self.expected_revision);
        if let Some(epoch) = self.fenced_epoch {
            fields.int("fenced_epoch", epoch);
        }
        fields.canonical("installation_id", &self.installation_id);
        fields.str("kind", self.kind.as_str());
        fields.int("leader_epoch", self.leader_epoch);
        if let Some(epoch) = self.new_epoch {
            fields.int("new_epoch", epoch);
        }
        fields.optional("observation_id", self.observation_id.as_ref());
        if let Some(at) = &self.observed_at {
            fields.str("observed_at", at);
        }
        if let Some(reason) = &self.reason {
            fields.str("reason", reason);
        }
        fields.str("schema_version", EVENT_SCHEMA);
        if let Some(selection) = &self.selection_id {
            fields.str("selection_id", selection);
        }
        if let Some(fingerprint) = &self.session_fingerprint {
            fields.str("session_fingerprint", fingerprint);
        }
        fields.optional("successor_task_id", self.successor_task_id.as_ref());
        fields.optional("task_id", self.task_id.as_ref());
        fields.end();
    }
}

/// Line 0 of the installation ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationGenesis {
    /// Must be the uninitialized state of the installation.
    pub state: InstallationState,
}

impl Canonical for InstallationGenesis {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("schema_version", GENESIS_SCHEMA);
        fields.canonical("state", &self.state);
        fields.end();
    }
}

/// One accepted authority-lane transition, without its State (bound by `result_digest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallationEntry {
    /// The event.
    pub event: InstallationEvent,
    /// Its evidence.
    pub evidence_set: Vec<Evidence>,
    /// The accepted Result without its State.
    pub result: AcceptedRecord,
}

impl Canonical for InstallationEntry {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("event", &self.event);
        write_evidence_set(fields.key("evidence_set"), &self.evidence_set);
        fields.canonical("result", &self.result);
        fields.str("schema_version", ENTRY_SCHEMA);
        fields.end();
    }
}
