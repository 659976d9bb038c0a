//! Decoders for the replay artifacts: GenesisRoot, ReplayEntry, compact entries, CheckpointRoot,
//! trust policy and checkpoint authentication.

use crate::canonical::EMPTY_REPLAY_PREFIX_DIGEST;
use crate::decode::entities::{event_at, evidence_at, outcome_at, record_at, state_at};
use crate::decode::reader::{DecodeError, ObjectReader, Path, identity};
use crate::json::Value;
use crate::replay::checkpoint::{
    AUTHENTICATION_SCHEMA, CHECKPOINT_ROOT_SCHEMA, TRUST_POLICY_SCHEMA,
};
use crate::replay::{
    COMPACT_ENTRY_SCHEMA, CheckpointAuthentication, CheckpointRoot, CheckpointTrustPolicy,
    CompactEntry, GENESIS_ROOT_SCHEMA, GenesisRoot, REPLAY_ENTRY_SCHEMA, ReplayEntry,
};

/// Decodes a GenesisRoot; its `prefix_digest` must be the empty replay prefix digest.
pub fn decode_genesis_root(value: &Value) -> Result<GenesisRoot, DecodeError> {
    let path = Path::Root("genesis");
    let mut root = ObjectReader::new(value, &path)?;
    root.schema(GENESIS_ROOT_SCHEMA)?;
    if root.string("prefix_digest")? != EMPTY_REPLAY_PREFIX_DIGEST {
        return Err(DecodeError::invalid(
            &path.key("prefix_digest"),
            "a GenesisRoot's prefix_digest is the empty replay prefix digest",
        ));
    }
    let state = state_at(root.required("state")?, &path.key("state"))?;
    root.finish()?;
    Ok(GenesisRoot { state })
}

/// Decodes a reference-form ReplayEntry.
pub fn decode_replay_entry(value: &Value) -> Result<ReplayEntry, DecodeError> {
    replay_entry_at(value, &Path::Root("entry"))
}

pub(crate) fn replay_entry_at(value: &Value, path: &Path<'_>) -> Result<ReplayEntry, DecodeError> {
    let mut entry = ObjectReader::new(value, path)?;
    entry.schema(REPLAY_ENTRY_SCHEMA)?;
    let decoded = ReplayEntry {
        event: event_at(entry.required("event")?, &path.key("event"))?,
        evidence_set: entry.required_list("evidence_set", evidence_at)?,
        result: outcome_at(entry.required("result")?, &path.key("result"))?,
    };
    entry.finish()?;
    Ok(decoded)
}

/// Decodes a compact entry (a ReplayEntry whose Result omits the next State).
pub fn decode_compact_entry(value: &Value) -> Result<CompactEntry, DecodeError> {
    let path = Path::Root("entry");
    let mut entry = ObjectReader::new(value, &path)?;
    entry.schema(COMPACT_ENTRY_SCHEMA)?;
    let event = event_at(entry.required("event")?, &path.key("event"))?;
    let evidence_set = entry.required_list("evidence_set", evidence_at)?;
    let record = record_at(entry.required("result")?, &path.key("result"))?;
    entry.finish()?;
    Ok(CompactEntry {
        event,
        evidence_set,
        result: record,
    })
}

/// Decodes a CheckpointRoot (its bindings are checked when a replay starts from it).
pub fn decode_checkpoint_root(value: &Value) -> Result<CheckpointRoot, DecodeError> {
    let path = Path::Root("checkpoint_root");
    let mut root = ObjectReader::new(value, &path)?;
    root.schema(CHECKPOINT_ROOT_SCHEMA)?;
    let decoded = CheckpointRoot {
        state: state_at(root.required("state")?, &path.key("state"))?,
        state_digest: root.string("state_digest")?,
        accepted_entry_count: root.int("accepted_entry_count")?,
        prefix_digest: root.string("prefix_digest")?,
        tail_event_id: root.identity("tail_event_id")?,
        tail_result_id: root.identity("tail_result_id")?,
        tail_result_digest: root.string("tail_result_digest")?,
        checkpoint_result_id: root.identity("checkpoint_result_id")?,
        trust_policy_digest: root.string("trust_policy_digest")?,
    };
    root.finish()?;
    Ok(decoded)
}

fn trust_policy_at(value: &Value, path: &Path<'_>) -> Result<CheckpointTrustPolicy, DecodeError> {
    let mut policy = ObjectReader::new(value, path)?;
    policy.schema(TRUST_POLICY_SCHEMA)?;
    let decoded = CheckpointTrustPolicy {
        trusted_evidence_ids: policy.required_list("trusted_evidence_ids", identity)?,
    };
    policy.finish()?;
    Ok(decoded)
}

/// Decodes a checkpoint trust policy.
pub fn decode_trust_policy(value: &Value) -> Result<CheckpointTrustPolicy, DecodeError> {
    trust_policy_at(value, &Path::Root("trust_policy"))
}

/// Decodes a checkpoint authentication.
pub fn decode_checkpoint_authentication(
    value: &Value,
) -> Result<CheckpointAuthentication, DecodeError> {
    let path = Path::Root("checkpoint_authentication");
    let mut authentication = ObjectReader::new(value, &path)?;
    authentication.schema(AUTHENTICATION_SCHEMA)?;
    let decoded = CheckpointAuthentication {
        checkpoint_result: outcome_at(
            authentication.required("checkpoint_result")?,
            &path.key("checkpoint_result"),
        )?,
        evidence_set: authentication.required_list("evidence_set", evidence_at)?,
        trust_policy: trust_policy_at(
            authentication.required("trust_policy")?,
            &path.key("trust_policy"),
        )?,
    };
    authentication.finish()?;
    Ok(decoded)
}
