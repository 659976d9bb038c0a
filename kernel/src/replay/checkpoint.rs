//! Authenticated CheckpointRoot suffix replay (RFC 0002 §8, MVP-H).
//!
//! A CheckpointRoot binds a State to its prefix (entry count, prefix digest, tail event,
//! result and result digest) and to a trust policy. It is usable only with a
//! [`CheckpointAuthentication`]: the Kernel-accepted Result that produced the checkpoint State,
//! and evidence whose every content digest equals the checkpoint statement digest, with exactly
//! the evidence ids the trust policy lists. This verifies digest statements, not signatures:
//! who may issue the trusted evidence stays a System decision.
//!
//! The prefix digest is bound (forging it changes the statement) but is not recomputed here:
//! the prefix entries are not part of a suffix replay. A System that holds the prefix verifies
//! it with [`replay_prefix_digest`](super::replay_prefix_digest); see `kernel/DEVIATIONS.md`.

use std::collections::BTreeSet;

use crate::canonical::{Canonical, is_digest, sha256_digest};
use crate::json::write::Fields;
use crate::live::LiveState;
use crate::model::event::write_evidence_set;
use crate::model::{Evidence, Identity, IdentityKind, Int, Outcome, State};
use crate::reduce::validity::{evidence_set_is_valid, state_is_valid};
use crate::replay::{ReplayError, Replayer};

/// `schema_version` of a CheckpointRoot.
pub const CHECKPOINT_ROOT_SCHEMA: &str = "valp-kernel-checkpoint-root.v1";
/// `schema_version` of a checkpoint trust policy.
pub const TRUST_POLICY_SCHEMA: &str = "valp-kernel-checkpoint-trust-policy.v1";
/// `schema_version` of a checkpoint authentication.
pub const AUTHENTICATION_SCHEMA: &str = "valp-kernel-checkpoint-authentication.v1";
/// `schema_version` of the statement the trusted evidence attests.
pub const STATEMENT_SCHEMA: &str = "valp-kernel-checkpoint-statement.v1";

/// A checkpoint: a State and the bindings of the prefix that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointRoot {
    /// The checkpoint State (revision ≥ 1, with its full history).
    pub state: State,
    /// `state_digest` as recorded; must equal the digest of `state`.
    pub state_digest: String,
    /// Number of prefix entries; equals the revision.
    pub accepted_entry_count: Int,
    /// Digest of the exact prefix of ReplayEntries.
    pub prefix_digest: String,
    /// The last prefix event.
    pub tail_event_id: Identity,
    /// Its result.
    pub tail_result_id: Identity,
    /// Its result digest.
    pub tail_result_digest: String,
    /// The Kernel-accepted Result this checkpoint is authenticated by.
    pub checkpoint_result_id: Identity,
    /// Digest of the trust policy.
    pub trust_policy_digest: String,
}

impl CheckpointRoot {
    /// Builds the root of a State, binding `prefix_digest` and `trust_policy`; the tail bindings
    /// come from the State's last history entry.
    pub fn new(
        state: State,
        prefix_digest: String,
        trust_policy: &CheckpointTrustPolicy,
    ) -> Option<Self> {
        let tail = state.accepted_events.last()?.clone();
        Some(Self {
            state_digest: state.digest(),
            accepted_entry_count: state.body.revision,
            prefix_digest,
            tail_event_id: tail.event_id,
            tail_result_id: tail.result_id.clone(),
            tail_result_digest: tail.result_digest,
            checkpoint_result_id: tail.result_id,
            trust_policy_digest: trust_policy.digest(),
            state,
        })
    }

    /// The reference kernel's structural checks (`_checkpoint_root_is_valid`), plus the recorded
    /// `state_digest`.
    fn check_bindings(&self) -> Result<(), ReplayError> {
        let state = &self.state;
        if !state_is_valid(&state.body, state.accepted_events.as_slice()) {
            return Err(ReplayError::CheckpointRootInvalid(
                "state is not a valid Task State",
            ));
        }
        if self.state_digest != state.digest() {
            return Err(ReplayError::CheckpointRootInvalid(
                "state_digest does not match state",
            ));
        }
        let count_matches = usize::try_from(self.accepted_entry_count)
            .is_ok_and(|count| count == state.accepted_events.len());
        let tail = state.accepted_events.last();
        let bound = state.body.revision >= 1
            && self.accepted_entry_count == state.body.revision
            && count_matches
            && is_digest(&self.prefix_digest)
            && is_digest(&self.tail_result_digest)
            && is_digest(&self.trust_policy_digest)
            && self.tail_event_id.is(IdentityKind::Event)
            && self.tail_result_id.is(IdentityKind::Result)
            && self.checkpoint_result_id.is(IdentityKind::Result)
            && tail.is_some_and(|tail| {
                tail.event_id == self.tail_event_id
                    && tail.result_id == self.tail_result_id
                    && tail.result_digest == self.tail_result_digest
            });
        if bound {
            Ok(())
        } else {
            Err(ReplayError::CheckpointRootInvalid(
                "count, digests or tail bindings disagree",
            ))
        }
    }
}

impl Canonical for CheckpointRoot {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.int("accepted_entry_count", self.accepted_entry_count);
        fields.canonical("checkpoint_result_id", &self.checkpoint_result_id);
        fields.str("prefix_digest", &self.prefix_digest);
        fields.str("schema_version", CHECKPOINT_ROOT_SCHEMA);
        fields.canonical("state", &self.state);
        fields.str("state_digest", &self.state_digest);
        fields.canonical("tail_event_id", &self.tail_event_id);
        fields.str("tail_result_digest", &self.tail_result_digest);
        fields.canonical("tail_result_id", &self.tail_result_id);
        fields.str("trust_policy_digest", &self.trust_policy_digest);
        fields.end();
    }
}

/// Which evidence ids may authenticate a checkpoint. Its canonical form lists them sorted by
/// their canonical bytes, whatever order they were given in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointTrustPolicy {
    /// Trusted evidence ids: non-empty, unique, all of kind `evidence`.
    pub trusted_evidence_ids: Vec<Identity>,
}

impl CheckpointTrustPolicy {
    fn check(&self) -> Result<(), ReplayError> {
        let ids = &self.trusted_evidence_ids;
        let unique: BTreeSet<_> = ids.iter().collect();
        if ids.is_empty()
            || unique.len() != ids.len()
            || !ids.iter().all(|id| id.is(IdentityKind::Evidence))
        {
            return Err(ReplayError::TrustPolicyInvalid);
        }
        Ok(())
    }
}

impl Canonical for CheckpointTrustPolicy {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut sorted: Vec<Vec<u8>> = self
            .trusted_evidence_ids
            .iter()
            .map(Canonical::canonical_bytes)
            .collect();
        sorted.sort_unstable();
        let mut fields = Fields::begin(out);
        fields.str("schema_version", TRUST_POLICY_SCHEMA);
        let list = fields.key("trusted_evidence_ids");
        list.push(b'[');
        for (index, bytes) in sorted.iter().enumerate() {
            if index > 0 {
                list.push(b',');
            }
            list.extend_from_slice(&bytes[..bytes.len() - 1]);
        }
        list.push(b']');
        fields.end();
    }
}

/// The proof that lets a CheckpointRoot start a replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointAuthentication {
    /// The Kernel-accepted Result whose State is the checkpoint State.
    pub checkpoint_result: Outcome,
    /// Evidence attesting the checkpoint statement; unique ids.
    pub evidence_set: Vec<Evidence>,
    /// The policy naming the trusted evidence ids.
    pub trust_policy: CheckpointTrustPolicy,
}

impl Canonical for CheckpointAuthentication {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("checkpoint_result", &self.checkpoint_result);
        write_evidence_set(fields.key("evidence_set"), &self.evidence_set);
        fields.str("schema_version", AUTHENTICATION_SCHEMA);
        fields.canonical("trust_policy", &self.trust_policy);
        fields.end();
    }
}

/// The digest every trusted evidence item must carry: `digest({"schema_version",
/// "checkpoint_root", "checkpoint_result", "trust_policy_digest"})`.
pub fn checkpoint_statement_digest(
    root: &CheckpointRoot,
    checkpoint_result: &Outcome,
    trust_policy: &CheckpointTrustPolicy,
) -> String {
    let mut out = Vec::new();
    let mut fields = Fields::begin(&mut out);
    fields.canonical("checkpoint_result", checkpoint_result);
    fields.canonical("checkpoint_root", root);
    fields.str("schema_version", STATEMENT_SCHEMA);
    fields.str("trust_policy_digest", &trust_policy.digest());
    fields.end();
    out.push(b'\n');
    sha256_digest(&out)
}

fn authenticate(
    root: &CheckpointRoot,
    authentication: Option<&CheckpointAuthentication>,
) -> Result<(), ReplayError> {
    use ReplayError::CheckpointAuthenticationInvalid as Invalid;
    root.check_bindings()?;
    let authentication = authentication.ok_or(Invalid("no authentication supplied"))?;
    authentication.trust_policy.check()?;
    let evidence_ids: BTreeSet<_> = authentication
        .evidence_set
        .iter()
        .map(|evidence| &evidence.evidence_id)
        .collect();
    if evidence_ids.len() != authentication.evidence_set.len() {
        return Err(ReplayError::AuthenticationEvidenceNotUnique);
    }
    if authentication.trust_policy.digest() != root.trust_policy_digest {
        return Err(Invalid("trust policy digest differs from the root's"));
    }
    let Outcome::Accepted(accepted) = &authentication.checkpoint_result else {
        return Err(Invalid("checkpoint Result is not accepted"));
    };
    if !evidence_set_is_valid(&authentication.evidence_set) {
        return Err(Invalid("evidence set is malformed"));
    }
    if accepted.state != root.state
        || accepted.result_id != root.checkpoint_result_id
        || accepted.result_id != root.tail_result_id
        || accepted.result_digest != root.tail_result_digest
    {
        return Err(Invalid(
            "checkpoint Result does not produce the root State and tail",
        ));
    }
    let trusted: BTreeSet<_> = authentication
        .trust_policy
        .trusted_evidence_ids
        .iter()
        .collect();
    if trusted != evidence_ids {
        return Err(Invalid("evidence ids differ from the trust policy"));
    }
    let statement = checkpoint_statement_digest(
        root,
        &authentication.checkpoint_result,
        &authentication.trust_policy,
    );
    if authentication
        .evidence_set
        .iter()
        .any(|evidence| evidence.content_digest != statement)
    {
        return Err(Invalid("evidence does not attest the checkpoint statement"));
    }
    Ok(())
}

impl Replayer {
    /// Starts from an authenticated CheckpointRoot. Without authentication, or with any
    /// binding or attestation that does not hold, the checkpoint is refused before any entry
    /// is applied.
    pub fn from_checkpoint(
        root: &CheckpointRoot,
        authentication: Option<&CheckpointAuthentication>,
    ) -> Result<Self, ReplayError> {
        authenticate(root, authentication)?;
        Ok(Self::from_verified(LiveState::new(root.state.clone())))
    }
}
