//! Replay: rebuild a State by re-running the reducer over accepted entries (RFC 0002 §8).
//!
//! For each entry, in ledger order, the reducer is called again on the current State with the
//! entry's Event and EvidenceSet; the recomputed Result must be accepted and equal to the
//! recorded one in every byte (state, identities, revision, digests, obligations, audit facts).
//! Only then does replay advance. Replay never emits obligations and never runs an adapter: the
//! [`Replay`] envelope always carries an empty obligation list.
//!
//! Entries come in two forms. A [`ReplayEntry`] is the reference kernel's form, whose recorded
//! Result embeds the whole next State including its history (O(history) bytes per entry). A
//! [`CompactEntry`] records the same Result without the history, which is implied by the chain
//! of earlier entries; it is what valp's own journals store. A [`Replayer`] accepts both and costs
//! O(1) per compact entry.

pub mod checkpoint;

use crate::canonical::{Canonical, EMPTY_REPLAY_PREFIX_DIGEST};
use crate::decode::InputPrefix;
use crate::json::write::Fields;
use crate::live::{AcceptedRecord, LiveState, Verdict};
use crate::model::event::write_evidence_set;
use crate::model::{Event, Evidence, Outcome, State, TaskStatus};
use crate::reduce::validity::state_is_valid;

pub use checkpoint::{
    CheckpointAuthentication, CheckpointRoot, CheckpointTrustPolicy, checkpoint_statement_digest,
};

/// `schema_version` of a GenesisRoot.
pub const GENESIS_ROOT_SCHEMA: &str = "valp-kernel-genesis-root.v1";
/// `schema_version` of a ReplayEntry.
pub const REPLAY_ENTRY_SCHEMA: &str = "valp-kernel-replay-entry.v1";
/// `schema_version` of a compact entry.
pub const COMPACT_ENTRY_SCHEMA: &str = "valp-kernel-compact-entry.v1";
/// `schema_version` of the Replay envelope.
pub const REPLAY_SCHEMA: &str = "valp-kernel-replay.v1";
/// `schema_version` of the replay prefix whose digest a CheckpointRoot binds.
pub const REPLAY_PREFIX_SCHEMA: &str = "valp-kernel-replay-prefix.v1";

/// The canonical empty Task State a replay starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenesisRoot {
    /// Must be valid, `published`, revision 0, with no history.
    pub state: State,
}

impl Canonical for GenesisRoot {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("prefix_digest", EMPTY_REPLAY_PREFIX_DIGEST);
        fields.str("schema_version", GENESIS_ROOT_SCHEMA);
        fields.canonical("state", &self.state);
        fields.end();
    }
}

/// One accepted transition in the reference form: Event, EvidenceSet and the full Result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayEntry {
    /// The event.
    pub event: Event,
    /// Its evidence (canonically sorted when encoded).
    pub evidence_set: Vec<Evidence>,
    /// The recorded Result, which must be accepted.
    pub result: Outcome,
}

impl Canonical for ReplayEntry {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("event", &self.event);
        write_evidence_set(fields.key("evidence_set"), &self.evidence_set);
        fields.canonical("result", &self.result);
        fields.str("schema_version", REPLAY_ENTRY_SCHEMA);
        fields.end();
    }
}

/// One accepted transition whose recorded Result omits the next State.
///
/// In a chain this determines the full Result as exactly as a [`ReplayEntry`] does: the next
/// State's history is the previous history plus this entry's own `{event_id, result_id,
/// input_digest, result_digest}`, and everything else in the next State (status, revision,
/// work items, suspension, control) is bound by `result_digest`, whose preimage contains it. A
/// replay recomputes the Result and requires every recorded field to be equal, so a recorded
/// compact entry verifies exactly when the reference form of the same entry would.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactEntry {
    /// The event.
    pub event: Event,
    /// Its evidence (canonically sorted when encoded).
    pub evidence_set: Vec<Evidence>,
    /// The accepted Result without its State.
    pub result: AcceptedRecord,
}

impl Canonical for CompactEntry {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("event", &self.event);
        write_evidence_set(fields.key("evidence_set"), &self.evidence_set);
        fields.canonical("result", &self.result);
        fields.str("schema_version", COMPACT_ENTRY_SCHEMA);
        fields.end();
    }
}

/// The result of a replay: the rebuilt State and the applied result digests, in order. Its
/// obligation list is always empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The State after the last entry.
    pub state: State,
    /// Result digest of every applied entry, in order.
    pub applied_result_digests: Vec<String>,
}

impl Canonical for Replay {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("applied_result_digests", &self.applied_result_digests);
        fields.key("obligations").extend_from_slice(b"[]");
        fields.str("schema_version", REPLAY_SCHEMA);
        fields.canonical("state", &self.state);
        fields.end();
    }
}

/// Which part of a recorded Result differs from the recomputed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MismatchField {
    /// `result_id`
    ResultId,
    /// `input_digest`
    InputDigest,
    /// `result_digest`
    ResultDigest,
    /// `obligations`
    Obligations,
    /// `audit_facts`
    AuditFacts,
    /// The next State apart from its history.
    State,
    /// The next State's history.
    History,
}

impl std::fmt::Display for MismatchField {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::ResultId => "result_id",
            Self::InputDigest => "input_digest",
            Self::ResultDigest => "result_digest",
            Self::Obligations => "obligations",
            Self::AuditFacts => "audit_facts",
            Self::State => "state",
            Self::History => "state.accepted_events",
        })
    }
}

/// Why a replay failed closed. Every variant names the entry (0-based) where relevant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The GenesisRoot is not a valid, published, revision-0 State without history.
    #[error("GenesisRoot must be the canonical empty Task State")]
    GenesisInvalid,
    /// The recorded Result of an entry is not `accepted`.
    #[error("entry {index}: recorded Result is {variant}, not accepted")]
    NotAccepted {
        /// Entry index.
        index: usize,
        /// The recorded variant.
        variant: &'static str,
    },
    /// Re-running the reducer on the entry does not accept it.
    #[error("entry {index}: its inputs do not produce an accepted Result ({verdict})")]
    NotReproduced {
        /// Entry index.
        index: usize,
        /// What the reducer answered (`no_op`, or the error code).
        verdict: String,
    },
    /// The recomputed Result differs from the recorded one.
    #[error("entry {index}: recorded Result does not match recomputed Result ({field} differs)")]
    Mismatch {
        /// Entry index.
        index: usize,
        /// The first field that differs.
        field: MismatchField,
    },
    /// The CheckpointRoot's own bindings are inconsistent.
    #[error("CheckpointRoot bindings are invalid: {0}")]
    CheckpointRootInvalid(&'static str),
    /// The trust policy is empty, not all evidence ids, or has duplicates.
    #[error("CheckpointTrustPolicy requires unique Evidence identities")]
    TrustPolicyInvalid,
    /// The authentication repeats an evidence id.
    #[error("CheckpointAuthentication requires unique Evidence identities")]
    AuthenticationEvidenceNotUnique,
    /// The checkpoint is not authenticated by its trust policy.
    #[error("CheckpointRoot authentication is invalid: {0}")]
    CheckpointAuthenticationInvalid(&'static str),
}

impl ReplayError {
    /// The reference kernel's message for this failure, as its conformance vectors record it.
    pub fn reference_message(&self) -> &'static str {
        match self {
            Self::GenesisInvalid => "GenesisRoot must be the canonical empty Task State",
            Self::NotAccepted { .. } => "ReplayEntry must contain an accepted Result",
            Self::NotReproduced { .. } => "ReplayEntry inputs do not produce an accepted Result",
            Self::Mismatch { .. } => "ReplayEntry Result does not match recomputed Result",
            Self::CheckpointRootInvalid(_) => "CheckpointRoot bindings are invalid",
            Self::TrustPolicyInvalid => "CheckpointTrustPolicy requires unique Evidence identities",
            Self::AuthenticationEvidenceNotUnique => {
                "CheckpointAuthentication requires unique Evidence identities"
            }
            Self::CheckpointAuthenticationInvalid(_) => "CheckpointRoot authentication is invalid",
        }
    }
}

/// Replays entries one at a time from a verified root.
///
/// An error is final: after [`apply`](Self::apply) or
/// [`apply_compact`](Self::apply_compact) fails, the replayer's State is not trustworthy and it
/// must be dropped.
#[derive(Debug, Clone)]
pub struct Replayer {
    live: LiveState,
    applied: Vec<String>,
}

impl Replayer {
    /// Starts from a GenesisRoot, refusing anything but the canonical empty Task State.
    pub fn from_genesis(root: &GenesisRoot) -> Result<Self, ReplayError> {
        let state = &root.state;
        let empty_published = state.body.status.known() == Some(TaskStatus::Published)
            && state.body.revision == 0
            && state.accepted_events.is_empty();
        if !empty_published || !state_is_valid(&state.body, state.accepted_events.as_slice()) {
            return Err(ReplayError::GenesisInvalid);
        }
        Ok(Self {
            live: LiveState::new(state.clone()),
            applied: Vec::new(),
        })
    }

    /// Starts from an already verified live state (used by checkpoint replay).
    pub(crate) fn from_verified(live: LiveState) -> Self {
        Self {
            live,
            applied: Vec::new(),
        }
    }

    /// The current State.
    pub fn live(&self) -> &LiveState {
        &self.live
    }

    /// Number of entries applied so far.
    pub fn applied(&self) -> usize {
        self.applied.len()
    }

    /// Applies a reference-form entry, comparing the full recorded Result (including the
    /// embedded history, which costs O(history)).
    pub fn apply(&mut self, entry: &ReplayEntry) -> Result<(), ReplayError> {
        let index = self.applied.len();
        let Outcome::Accepted(recorded) = &entry.result else {
            return Err(ReplayError::NotAccepted {
                index,
                variant: entry.result.variant().as_str(),
            });
        };
        let record = reproduce(
            &mut self.live,
            index,
            &entry.event,
            &entry.evidence_set,
            None,
        )?;
        let field = record_mismatch(&record, &recorded.record())
            .or_else(|| (&recorded.state.body != self.live.body()).then_some(MismatchField::State))
            .or_else(|| {
                (recorded.state.accepted_events != self.live.history())
                    .then_some(MismatchField::History)
            });
        if let Some(field) = field {
            return Err(ReplayError::Mismatch { index, field });
        }
        self.applied.push(record.result_digest);
        Ok(())
    }

    /// Applies a compact entry in O(State body).
    pub fn apply_compact(&mut self, entry: &CompactEntry) -> Result<(), ReplayError> {
        let record = self
            .live
            .apply_recorded_at(self.applied.len(), entry, None)?;
        self.applied.push(record.result_digest);
        Ok(())
    }

    /// The verified live state, to continue appending to (the applied digests are dropped).
    pub fn into_live(self) -> LiveState {
        self.live
    }

    /// The Replay envelope.
    pub fn finish(self) -> Replay {
        Replay {
            state: self.live.into_state(),
            applied_result_digests: self.applied,
        }
    }
}

/// Re-runs the reducer on an entry's inputs; anything but an acceptance fails the replay.
fn reproduce(
    live: &mut LiveState,
    index: usize,
    event: &Event,
    evidence_set: &[Evidence],
    prefix: Option<InputPrefix<'_>>,
) -> Result<AcceptedRecord, ReplayError> {
    reproduced(index, live.apply_from(event, evidence_set, prefix))
}

/// The record of an entry re-run by the reducer (entry `index`) if it was accepted; anything
/// else fails the replay.
pub(crate) fn reproduced(index: usize, verdict: Verdict) -> Result<AcceptedRecord, ReplayError> {
    match verdict {
        Verdict::Accepted(record) => Ok(record),
        Verdict::NoOp { .. } => Err(ReplayError::NotReproduced {
            index,
            verdict: "no_op".to_owned(),
        }),
        Verdict::Rejected { error_code, .. } => Err(ReplayError::NotReproduced {
            index,
            verdict: error_code.as_str().to_owned(),
        }),
    }
}

impl LiveState {
    /// Applies a recorded compact entry with replay semantics: the recomputed Result must be
    /// accepted and equal to the recorded one. Errors name the entry by the revision it was
    /// recorded at. On error the live state must be discarded (it may have advanced).
    pub fn apply_recorded(&mut self, entry: &CompactEntry) -> Result<AcceptedRecord, ReplayError> {
        self.apply_recorded_from(entry, None)
    }

    /// [`apply_recorded`](Self::apply_recorded) of an entry decoded from canonical text that
    /// holds `prefix`, the start of its input digest's preimage
    /// ([`InputPrefix`](crate::decode::InputPrefix)): the same answer, without encoding the
    /// entry's Event and EvidenceSet again.
    pub fn apply_recorded_from(
        &mut self,
        entry: &CompactEntry,
        prefix: Option<InputPrefix<'_>>,
    ) -> Result<AcceptedRecord, ReplayError> {
        let index = usize::try_from(self.revision()).unwrap_or(usize::MAX);
        self.apply_recorded_at(index, entry, prefix)
    }

    pub(crate) fn apply_recorded_at(
        &mut self,
        index: usize,
        entry: &CompactEntry,
        prefix: Option<InputPrefix<'_>>,
    ) -> Result<AcceptedRecord, ReplayError> {
        let record = reproduce(self, index, &entry.event, &entry.evidence_set, prefix)?;
        match record_mismatch(&record, &entry.result) {
            Some(field) => Err(ReplayError::Mismatch { index, field }),
            None => Ok(record),
        }
    }
}

pub(crate) fn record_mismatch(
    recomputed: &AcceptedRecord,
    recorded: &AcceptedRecord,
) -> Option<MismatchField> {
    if recorded.result_id != recomputed.result_id {
        Some(MismatchField::ResultId)
    } else if recorded.input_digest != recomputed.input_digest {
        Some(MismatchField::InputDigest)
    } else if recorded.result_digest != recomputed.result_digest {
        Some(MismatchField::ResultDigest)
    } else if recorded.obligations != recomputed.obligations {
        Some(MismatchField::Obligations)
    } else if recorded.audit_facts != recomputed.audit_facts {
        Some(MismatchField::AuditFacts)
    } else {
        None
    }
}

/// Replays reference-form entries from a GenesisRoot.
pub fn replay<'a>(
    root: &GenesisRoot,
    entries: impl IntoIterator<Item = &'a ReplayEntry>,
) -> Result<Replay, ReplayError> {
    let mut replayer = Replayer::from_genesis(root)?;
    for entry in entries {
        replayer.apply(entry)?;
    }
    Ok(replayer.finish())
}

/// Replays compact entries from a GenesisRoot.
pub fn replay_compact<'a>(
    root: &GenesisRoot,
    entries: impl IntoIterator<Item = &'a CompactEntry>,
) -> Result<Replay, ReplayError> {
    let mut replayer = Replayer::from_genesis(root)?;
    for entry in entries {
        replayer.apply_compact(entry)?;
    }
    Ok(replayer.finish())
}

/// `digest({"entries": [ReplayEntry…], "schema_version": "valp-kernel-replay-prefix.v1"})`: the
/// prefix digest a CheckpointRoot binds.
pub fn replay_prefix_digest<'a>(entries: impl IntoIterator<Item = &'a ReplayEntry>) -> String {
    let mut out = Vec::new();
    let mut fields = Fields::begin(&mut out);
    crate::canonical::write_list(fields.key("entries"), entries);
    fields.str("schema_version", REPLAY_PREFIX_SCHEMA);
    fields.end();
    out.push(b'\n');
    crate::canonical::sha256_digest(&out)
}
