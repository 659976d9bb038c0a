//! Decoders for the authority lane's artifacts.

use crate::decode::entities::{accepted_event_at, evidence_at, record_at};
use crate::decode::reader::{DecodeError, ObjectReader, Path, string, vocabulary};
use crate::installation::model::{
    Binding, Candidate, CandidateSet, ENTRY_SCHEMA, EVENT_SCHEMA, GENESIS_SCHEMA, Handoff,
    InstallationEntry, InstallationEvent, InstallationGenesis, InstallationState, Pending, Reopen,
    STATE_SCHEMA,
};
use crate::json::Value;
use crate::model::{InstallationEventKind, InstallationStatus, Open, PrincipalKind};

/// Decodes an installation State.
pub fn decode_installation_state(value: &Value) -> Result<InstallationState, DecodeError> {
    state_at(value, &Path::Root("state"))
}

/// Decodes an installation event.
pub fn decode_installation_event(value: &Value) -> Result<InstallationEvent, DecodeError> {
    event_at(value, &Path::Root("event"))
}

/// Decodes the installation ledger's genesis.
pub fn decode_installation_genesis(value: &Value) -> Result<InstallationGenesis, DecodeError> {
    let path = Path::Root("genesis");
    let mut genesis = ObjectReader::new(value, &path)?;
    genesis.schema(GENESIS_SCHEMA)?;
    let state = state_at(genesis.required("state")?, &path.key("state"))?;
    genesis.finish()?;
    Ok(InstallationGenesis { state })
}

/// Decodes an installation ledger entry.
pub fn decode_installation_entry(value: &Value) -> Result<InstallationEntry, DecodeError> {
    let path = Path::Root("entry");
    let mut entry = ObjectReader::new(value, &path)?;
    entry.schema(ENTRY_SCHEMA)?;
    let decoded = InstallationEntry {
        event: event_at(entry.required("event")?, &path.key("event"))?,
        evidence_set: entry.required_list("evidence_set", evidence_at)?,
        result: record_at(entry.required("result")?, &path.key("result"))?,
    };
    entry.finish()?;
    Ok(decoded)
}

fn candidate_at(value: &Value, path: &Path<'_>) -> Result<Candidate, DecodeError> {
    let mut candidate = ObjectReader::new(value, path)?;
    let kind = candidate.required("principal_kind")?;
    let decoded = Candidate {
        candidate_id: candidate.string("candidate_id")?,
        principal_id: candidate.identity("principal_id")?,
        principal_kind: vocabulary(
            kind,
            &path.key("principal_kind"),
            PrincipalKind::from_wire,
            PrincipalKind::NAME,
        )?,
        session_fingerprint: candidate.string("session_fingerprint")?,
    };
    candidate.finish()?;
    Ok(decoded)
}

fn candidate_set_at(value: &Value, path: &Path<'_>) -> Result<CandidateSet, DecodeError> {
    let mut set = ObjectReader::new(value, path)?;
    let decoded = CandidateSet {
        observation: evidence_at(set.required("observation")?, &path.key("observation"))?,
        candidates: set.required_list("candidates", candidate_at)?,
    };
    set.finish()?;
    Ok(decoded)
}

fn binding_members(reader: &mut ObjectReader<'_, '_>) -> Result<Binding, DecodeError> {
    let path = reader.path();
    Ok(Binding {
        candidate: candidate_at(reader.required("candidate")?, &path.key("candidate"))?,
        selection_id: reader.string("selection_id")?,
        epoch: reader.int("epoch")?,
        observation: evidence_at(reader.required("observation")?, &path.key("observation"))?,
        approved_by: reader.identity("approved_by")?,
        approval: evidence_at(reader.required("approval")?, &path.key("approval"))?,
    })
}

fn binding_at(value: &Value, path: &Path<'_>) -> Result<Binding, DecodeError> {
    let mut reader = ObjectReader::new(value, path)?;
    let binding = binding_members(&mut reader)?;
    reader.finish()?;
    Ok(binding)
}

fn pending_at(value: &Value, path: &Path<'_>) -> Result<Pending, DecodeError> {
    let mut reader = ObjectReader::new(value, path)?;
    let binding = binding_members(&mut reader)?;
    let fenced_epoch = reader.optional_int("fenced_epoch")?;
    reader.finish()?;
    Ok(Pending {
        binding,
        fenced_epoch,
    })
}

fn reopen_at(value: &Value, path: &Path<'_>) -> Result<Reopen, DecodeError> {
    let mut reader = ObjectReader::new(value, path)?;
    let decoded = Reopen {
        epoch: reader.int("epoch")?,
        observation: evidence_at(reader.required("observation")?, &path.key("observation"))?,
        observed_at: reader.string("observed_at")?,
    };
    reader.finish()?;
    Ok(decoded)
}

fn handoff_at(value: &Value, path: &Path<'_>) -> Result<Handoff, DecodeError> {
    let mut reader = ObjectReader::new(value, path)?;
    let decoded = Handoff {
        task_id: reader.identity("task_id")?,
        successor_task_id: reader.identity("successor_task_id")?,
        from_epoch: reader.int("from_epoch")?,
        to_epoch: reader.int("to_epoch")?,
    };
    reader.finish()?;
    Ok(decoded)
}

fn state_at(value: &Value, path: &Path<'_>) -> Result<InstallationState, DecodeError> {
    let mut state = ObjectReader::new(value, path)?;
    state.schema(STATE_SCHEMA)?;
    let status = string(state.required("status")?, &path.key("status"))?;
    let decoded = InstallationState {
        protocol_version: state.string("protocol_version")?,
        installation_id: state.identity("installation_id")?,
        revision: state.int("revision")?,
        status: Open::<InstallationStatus>::from_wire(status),
        active_epoch: state.int("active_epoch")?,
        highest_epoch: state.int("highest_epoch")?,
        observation: state
            .optional("observation")
            .map(|v| candidate_set_at(v, &path.key("observation")))
            .transpose()?,
        leader: state
            .optional("leader")
            .map(|v| binding_at(v, &path.key("leader")))
            .transpose()?,
        fenced: state.list("fenced", binding_at)?,
        pending: state
            .optional("pending")
            .map(|v| pending_at(v, &path.key("pending")))
            .transpose()?,
        reopened: state
            .optional("reopened")
            .map(|v| reopen_at(v, &path.key("reopened")))
            .transpose()?,
        handoffs: state.list("handoffs", handoff_at)?,
        accepted_events: state.required_list("accepted_events", accepted_event_at)?,
    };
    state.finish()?;
    Ok(decoded)
}

fn event_at(value: &Value, path: &Path<'_>) -> Result<InstallationEvent, DecodeError> {
    let mut event = ObjectReader::new(value, path)?;
    event.schema(EVENT_SCHEMA)?;
    let kind = string(event.required("kind")?, &path.key("kind"))?;
    let candidates = match event.optional("candidates") {
        None => None,
        Some(value) => Some(crate::decode::reader::list(
            value,
            &path.key("candidates"),
            candidate_at,
        )?),
    };
    let decoded = InstallationEvent {
        event_id: event.identity("event_id")?,
        installation_id: event.identity("installation_id")?,
        leader_epoch: event.int("leader_epoch")?,
        kind: Open::<InstallationEventKind>::from_wire(kind),
        expected_revision: event.int("expected_revision")?,
        observation_id: event.optional_identity("observation_id")?,
        candidates,
        candidate_id: event.optional_string("candidate_id")?,
        selection_id: event.optional_string("selection_id")?,
        new_epoch: event.optional_int("new_epoch")?,
        fenced_epoch: event.optional_int("fenced_epoch")?,
        session_fingerprint: event.optional_string("session_fingerprint")?,
        observed_at: event.optional_string("observed_at")?,
        authority_principal_id: event.optional_identity("authority_principal_id")?,
        authority_evidence_id: event.optional_identity("authority_evidence_id")?,
        reason: event.optional_string("reason")?,
        task_id: event.optional_identity("task_id")?,
        successor_task_id: event.optional_identity("successor_task_id")?,
    };
    event.finish()?;
    Ok(decoded)
}
