//! `leader/binding.json` (`valp-leader-binding.v1`): the active Leader binding as a person or a
//! script reads it, projected from the installation ledger and the evidence it names.
//!
//! The ledger is the authority; this file is a convenience. It is written only by
//! [`write`] (after a selection or rotation) and checked by [`check_file`], which re-derives it
//! and compares bytes: a file that differs, or one present while the ledger binds nobody, is
//! reported, never trusted.

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, first_difference};
use valp_kernel::installation::{Binding, InstallationLive};
use valp_kernel::json::write::Fields;
use valp_kernel::{Evidence, PrincipalKind};
use valp_store::{ControlRoot, Journal};

use super::AuthorityError;
use crate::doctor::{Observation, Session};

/// The file's schema version.
pub const BINDING_SCHEMA: &str = "valp-leader-binding.v1";

/// One Leader binding with the facts behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderBinding {
    /// The installation.
    pub installation_id: String,
    /// The selection that made this binding.
    pub selection_id: String,
    /// The Leader epoch it holds.
    pub epoch: i128,
    /// The observed candidate it binds.
    pub candidate_id: String,
    /// The bound principal.
    pub principal_id: String,
    /// The principal's kind.
    pub principal_kind: PrincipalKind,
    /// The session's identity tuple, from the observation that proved it.
    pub session: Session,
    /// That tuple's fingerprint (what a reopen must observe again).
    pub session_fingerprint: String,
    /// The Doctor observation that proved the session.
    pub observation: Evidence,
    /// The recorded approval.
    pub approval: Evidence,
    /// Who approved.
    pub selected_by: String,
    /// When they approved (RFC 3339 UTC, from the approval evidence).
    pub selected_at: String,
}

impl Canonical for LeaderBinding {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("approval", &self.approval);
        fields.str("candidate_id", &self.candidate_id);
        fields.int("epoch", self.epoch);
        fields.str("installation_id", &self.installation_id);
        fields.canonical("observation", &self.observation);
        fields.str("principal_id", &self.principal_id);
        fields.str("principal_kind", self.principal_kind.as_str());
        fields.str("schema_version", BINDING_SCHEMA);
        fields.str("selected_at", &self.selected_at);
        fields.str("selected_by", &self.selected_by);
        fields.str("selection_id", &self.selection_id);
        fields.canonical("session", &self.session);
        fields.str("session_fingerprint", &self.session_fingerprint);
        fields.end();
    }
}

/// The part of a `valp-leader-approval.v1` record the binding shows.
#[derive(Deserialize)]
struct ApprovalTime {
    approved_at: String,
}

/// Projects a kernel binding (active or fenced) with the evidence it names. Fails when the
/// evidence is missing or does not say what the ledger says it does.
pub fn project(
    root: &ControlRoot,
    installation_id: &str,
    binding: &Binding,
) -> Result<LeaderBinding, AuthorityError> {
    let blobs = root.blobs();
    let observation = Observation::decode(&blobs.get(&binding.observation.content_digest)?)
        .map_err(|error| {
            AuthorityError::Invalid(format!(
                "observation evidence {}: {error}",
                binding.observation.evidence_id
            ))
        })?;
    let candidate_id = &binding.candidate.candidate_id;
    let session = observation
        .candidate(candidate_id)
        .map(|candidate| candidate.session.clone())
        .ok_or_else(|| {
            AuthorityError::Invalid(format!(
                "observation evidence {} has no candidate {candidate_id}",
                binding.observation.evidence_id
            ))
        })?;
    if session.fingerprint() != binding.candidate.session_fingerprint {
        return Err(AuthorityError::Invalid(format!(
            "observation evidence {} does not match the fingerprint the ledger bound for \
             {candidate_id}",
            binding.observation.evidence_id
        )));
    }
    let approval: ApprovalTime =
        serde_json::from_slice(&blobs.get(&binding.approval.content_digest)?).map_err(|error| {
            AuthorityError::Invalid(format!(
                "approval evidence {}: {error}",
                binding.approval.evidence_id
            ))
        })?;
    Ok(LeaderBinding {
        installation_id: installation_id.to_owned(),
        selection_id: binding.selection_id.clone(),
        epoch: binding.epoch,
        candidate_id: candidate_id.clone(),
        principal_id: binding.candidate.principal_id.value().to_owned(),
        principal_kind: binding.candidate.principal_kind,
        session,
        session_fingerprint: binding.candidate.session_fingerprint.clone(),
        observation: binding.observation.clone(),
        approval: binding.approval.clone(),
        selected_by: binding.approved_by.value().to_owned(),
        selected_at: approval.approved_at,
    })
}

/// The active binding, or `None` while no Leader is bound.
pub fn current(
    root: &ControlRoot,
    ledger: &Journal<InstallationLive>,
) -> Result<Option<LeaderBinding>, AuthorityError> {
    let state = ledger.live().state();
    state
        .leader
        .as_ref()
        .map(|binding| project(root, state.installation_id.value(), binding))
        .transpose()
}

/// The fenced bindings, oldest first.
pub fn history(
    root: &ControlRoot,
    ledger: &Journal<InstallationLive>,
) -> Result<Vec<LeaderBinding>, AuthorityError> {
    let state = ledger.live().state();
    state
        .fenced
        .iter()
        .map(|binding| project(root, state.installation_id.value(), binding))
        .collect()
}

/// Rewrites `leader/binding.json` from the ledger; there must be an active binding.
pub fn write(
    root: &ControlRoot,
    ledger: &Journal<InstallationLive>,
) -> Result<LeaderBinding, AuthorityError> {
    let binding = current(root, ledger)?
        .ok_or_else(|| AuthorityError::Invalid("the ledger binds no Leader".to_owned()))?;
    root.write_leader_binding(&binding.canonical_bytes())?;
    Ok(binding)
}

/// How `leader/binding.json` compares with the ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileCheck {
    /// Byte for byte what the ledger projects.
    Matches,
    /// No file, and the ledger binds nobody.
    Absent,
    /// The ledger binds a Leader but the file is missing.
    Missing,
    /// The file differs from the projection (first difference at this byte).
    Differs(usize),
    /// The file exists but the ledger binds nobody.
    Unexpected,
}

impl std::fmt::Display for FileCheck {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Matches => formatter.write_str("matches the ledger"),
            Self::Absent => formatter.write_str("absent (no Leader bound)"),
            Self::Missing => formatter.write_str("missing (the ledger binds a Leader)"),
            Self::Differs(at) => write!(
                formatter,
                "differs from the ledger at byte {at} (the ledger is authoritative)"
            ),
            Self::Unexpected => formatter.write_str("present, but the ledger binds no Leader"),
        }
    }
}

/// Re-derives the binding and compares it with the file on disk.
pub fn check_file(
    root: &ControlRoot,
    ledger: &Journal<InstallationLive>,
) -> Result<FileCheck, AuthorityError> {
    let on_disk = root.read_leader_binding()?;
    Ok(match (current(root, ledger)?, on_disk) {
        (None, None) => FileCheck::Absent,
        (None, Some(_)) => FileCheck::Unexpected,
        (Some(_), None) => FileCheck::Missing,
        (Some(binding), Some(bytes)) => {
            let expected = binding.canonical_bytes();
            if expected == bytes {
                FileCheck::Matches
            } else {
                FileCheck::Differs(first_difference(&expected, &bytes))
            }
        }
    })
}
