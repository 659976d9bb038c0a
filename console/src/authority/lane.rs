//! Proposing authority-lane events to the ledger.

use valp_kernel::canonical::Canonical;
use valp_kernel::installation::{
    Candidate as KernelCandidate, InstallationEvent, InstallationLive,
};
use valp_kernel::json::write::Fields;
use valp_kernel::{
    Evidence, Identity, IdentityKind, InstallationEventKind, InstallationStatus, PrincipalKind,
};
use valp_store::{Appended, ControlRoot, Journal};

use super::binding;
use super::{AuthorityError, SessionCheck};
use crate::clock::Timestamp;
use crate::doctor::{Candidate, Observation};
use crate::evidence;

/// How an approval was confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// The user typed the id of what they approve (candidate or task) at the command's prompt.
    TypedId,
    /// `--yes` on the command line (scripts).
    Flag,
    /// The confirmation dialog of the console.
    Dialog,
}

impl Confirmation {
    fn as_str(self) -> &'static str {
        match self {
            Self::TypedId => "typed_id",
            Self::Flag => "yes_flag",
            Self::Dialog => "console_dialog",
        }
    }
}

/// An explicit approval by the person at the keyboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The approving principal: the local human operator of the observation.
    pub approved_by: String,
    /// How it was confirmed.
    pub confirmation: Confirmation,
    /// When.
    pub at: Timestamp,
}

/// `valp-leader-approval.v1`, stored as evidence and bound to the selection, rotation or
/// handoff it approves. `candidate_id` is the candidate being bound (select, rotate) or the
/// bound Leader session approving (handoff).
pub(super) struct ApprovalRecord<'a> {
    pub approval: &'a Approval,
    pub action: &'static str,
    pub candidate_id: &'a str,
    pub epoch: i128,
}

impl Canonical for ApprovalRecord<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("action", self.action);
        fields.str("approved_at", &self.approval.at.to_rfc3339());
        fields.str("approved_by", &self.approval.approved_by);
        fields.str("candidate_id", self.candidate_id);
        fields.str("confirmation", self.approval.confirmation.as_str());
        fields.int("epoch", self.epoch);
        fields.str("schema_version", "valp-leader-approval.v1");
        fields.end();
    }
}

pub(super) fn identity(kind: IdentityKind, value: String) -> Result<Identity, AuthorityError> {
    Identity::new(kind, value).map_err(|error| AuthorityError::Invalid(error.to_string()))
}

/// An event at the ledger's current epoch and revision; its id names the kind and revision,
/// so re-proposing the same thing at the same revision is answered as a duplicate.
pub(super) fn event(
    ledger: &Journal<InstallationLive>,
    kind: InstallationEventKind,
) -> Result<InstallationEvent, AuthorityError> {
    let state = ledger.live().state();
    Ok(InstallationEvent::new(
        identity(
            IdentityKind::Event,
            format!("{}-r{}", kind.as_str(), state.revision),
        )?,
        state.installation_id.clone(),
        state.active_epoch,
        kind,
        state.revision,
    ))
}

/// Proposes an event; anything but an acceptance (or a duplicate of one) is an error.
pub(super) fn propose(
    ledger: &mut Journal<InstallationLive>,
    event: &InstallationEvent,
    evidence: &[Evidence],
) -> Result<(), AuthorityError> {
    match ledger.append(event, evidence)? {
        Appended::Accepted { .. } | Appended::Duplicate { .. } => Ok(()),
        Appended::Rejected { error_code, reason } => Err(AuthorityError::Refused {
            code: error_code.as_str().to_owned(),
            reason,
        }),
    }
}

fn status(ledger: &Journal<InstallationLive>) -> Option<InstallationStatus> {
    ledger.live().state().status.known()
}

/// The kernel's view of a Doctor candidate: address, principal and fingerprint only.
fn kernel_candidate(candidate: &Candidate) -> Result<KernelCandidate, AuthorityError> {
    Ok(KernelCandidate {
        candidate_id: candidate.candidate_id.clone(),
        principal_id: identity(IdentityKind::Principal, candidate.principal_id.clone())?,
        principal_kind: match candidate.principal_kind {
            crate::doctor::PrincipalKind::Human => PrincipalKind::Human,
            crate::doctor::PrincipalKind::TmuxPane => PrincipalKind::TmuxPane,
        },
        session_fingerprint: candidate.fingerprint(),
    })
}

/// Stores `observation` as evidence and records its candidates in the ledger (finishing the
/// bootstrap discovery on a new installation). Returns the observation's Evidence.
pub fn record_observation(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    observation: &Observation,
) -> Result<Evidence, AuthorityError> {
    let evidence = evidence::store(
        root,
        "observation-",
        &observation.canonical_bytes(),
        identity,
    )?;
    if status(ledger) == Some(InstallationStatus::Bootstrapping) {
        let started = event(ledger, InstallationEventKind::BootstrapDiscoveryStarted)?;
        propose(ledger, &started, &[])?;
    }
    let kind = match status(ledger) {
        Some(InstallationStatus::DiscoveringLeaderCandidates) => {
            InstallationEventKind::LeaderCandidateDiscoveryCompleted
        }
        Some(
            InstallationStatus::AwaitingLeaderSelection
            | InstallationStatus::Active
            | InstallationStatus::Degraded,
        ) => InstallationEventKind::LeaderCandidatesObserved,
        other => {
            return Err(AuthorityError::Invalid(format!(
                "observations cannot be recorded while the installation is {}",
                other.map_or("in an unknown status", InstallationStatus::as_str)
            )));
        }
    };
    if already_recorded(ledger, &evidence) {
        return Ok(evidence);
    }
    let mut recorded = event(ledger, kind)?;
    recorded.observation_id = Some(evidence.evidence_id.clone());
    recorded.candidates = Some(
        observation
            .candidates
            .iter()
            .map(kernel_candidate)
            .collect::<Result<_, _>>()?,
    );
    propose(ledger, &recorded, std::slice::from_ref(&evidence))?;
    Ok(evidence)
}

/// Whether the ledger's latest observation is this very one.
fn already_recorded(ledger: &Journal<InstallationLive>, evidence: &Evidence) -> bool {
    ledger
        .live()
        .state()
        .observation
        .as_ref()
        .is_some_and(|set| set.observation.evidence_id == evidence.evidence_id)
}

fn approve(
    root: &ControlRoot,
    event: &mut InstallationEvent,
    approval: &Approval,
    action: &'static str,
    candidate_id: &str,
    epoch: i128,
) -> Result<Evidence, AuthorityError> {
    let record = ApprovalRecord {
        approval,
        action,
        candidate_id,
        epoch,
    };
    let evidence = evidence::store(root, "approval-", &record.canonical_bytes(), identity)?;
    event.authority_principal_id = Some(identity(
        IdentityKind::Principal,
        approval.approved_by.clone(),
    )?);
    event.authority_evidence_id = Some(evidence.evidence_id.clone());
    event.candidate_id = Some(candidate_id.to_owned());
    event.new_epoch = Some(epoch);
    event.selection_id = Some(format!("selection-{}", &evidence.content_digest[7..23]));
    Ok(evidence)
}

/// The first, explicit selection of a Leader from the recorded observation. Allocates epoch 1.
pub fn select(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    candidate_id: &str,
    approval: &Approval,
) -> Result<binding::LeaderBinding, AuthorityError> {
    if status(ledger) != Some(InstallationStatus::AwaitingLeaderSelection) {
        return Err(AuthorityError::Invalid(format!(
            "a first selection needs an installation awaiting one; this one is {} (use `valp leader rotate`)",
            ledger.live().state().status.as_str()
        )));
    }
    let epoch = ledger.live().state().highest_epoch + 1;
    let mut approved = event(ledger, InstallationEventKind::LeaderSelectionApproved)?;
    let evidence = approve(root, &mut approved, approval, "select", candidate_id, epoch)?;
    propose(ledger, &approved, &[evidence])?;
    let mut activated = event(ledger, InstallationEventKind::LeaderActivated)?;
    activated.new_epoch = Some(epoch);
    propose(ledger, &activated, &[])?;
    binding::write(root, ledger)
}

/// Binds the Leader role to another observed session (the same principal's new session, or
/// another candidate), fencing the active epoch and starting the next one.
pub fn rotate(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    candidate_id: &str,
    approval: &Approval,
) -> Result<binding::LeaderBinding, AuthorityError> {
    let state = ledger.live().state();
    let fenced = state.active_epoch;
    let epoch = state.highest_epoch + 1;
    let mut approved = event(ledger, InstallationEventKind::LeaderRotationApproved)?;
    approved.fenced_epoch = Some(fenced);
    let evidence = approve(root, &mut approved, approval, "rotate", candidate_id, epoch)?;
    propose(ledger, &approved, &[evidence])?;
    let mut completed = event(ledger, InstallationEventKind::LeaderRotationCompleted)?;
    completed.new_epoch = Some(epoch);
    propose(ledger, &completed, &[])?;
    binding::write(root, ledger)
}

/// The approving principal of a selection made at this terminal: the local human operator the
/// observation saw (its OS account), never anything a pane shows.
pub fn operator(observation: &Observation) -> Result<String, AuthorityError> {
    observation
        .candidates
        .iter()
        .find(|candidate| candidate.principal_kind == crate::doctor::PrincipalKind::Human)
        .map(|candidate| candidate.principal_id.clone())
        .ok_or_else(|| {
            AuthorityError::Invalid(
                "the observation has no local human operator (the local_user surface was \
                 unavailable), so nobody can approve"
                    .to_owned(),
            )
        })
}

/// Every start of the console: records the fresh observation, then re-proves the bound
/// session with it ([`reopen`]).
pub fn open_session(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    observation: &Observation,
) -> Result<SessionCheck, AuthorityError> {
    let evidence = record_observation(root, ledger, observation)?;
    reopen(ledger, observation, &evidence)
}

/// Whether `observation` proves the ledger's binding: `Ok(epoch)` when the bound candidate is
/// observed with the bound fingerprint on an active installation, otherwise the check to show.
fn proof(
    ledger: &Journal<InstallationLive>,
    observation: &Observation,
) -> Result<i128, SessionCheck> {
    let state = ledger.live().state();
    let Some(leader) = &state.leader else {
        return Err(SessionCheck::Unbound);
    };
    let unproven = |reason: String| Err(SessionCheck::Unproven { reason });
    if status(ledger) != Some(InstallationStatus::Active) {
        return unproven(format!("the installation is {}", state.status.as_str()));
    }
    let bound = &leader.candidate;
    match observation.candidate(&bound.candidate_id) {
        None => unproven(format!(
            "the bound session {} was not observed (pane closed, tmux server stopped, or \
             another OS user)",
            bound.candidate_id
        )),
        Some(current) if current.fingerprint() != bound.session_fingerprint => unproven(format!(
            "{} now has a different identity (its process or tmux server was restarted)",
            bound.candidate_id
        )),
        Some(_) => Ok(leader.epoch),
    }
}

/// Re-proves the bound session with a fresh observation (already recorded with
/// [`record_observation`]): the same candidate with the same fingerprint. On success the kernel
/// accepts `leader_session_reopened`; otherwise nothing is written and the reason is returned.
pub fn reopen(
    ledger: &mut Journal<InstallationLive>,
    observation: &Observation,
    evidence: &Evidence,
) -> Result<SessionCheck, AuthorityError> {
    let epoch = match proof(ledger, observation) {
        Ok(epoch) => epoch,
        Err(check) => return Ok(check),
    };
    let fingerprint = ledger
        .live()
        .state()
        .leader
        .as_ref()
        .map(|leader| leader.candidate.session_fingerprint.clone());
    let at = observation.observed_at.to_rfc3339();
    let mut reopened = event(ledger, InstallationEventKind::LeaderSessionReopened)?;
    reopened.observation_id = Some(evidence.evidence_id.clone());
    reopened.session_fingerprint = fingerprint;
    reopened.observed_at = Some(at.clone());
    propose(ledger, &reopened, std::slice::from_ref(evidence))?;
    Ok(SessionCheck::Reopened { at, epoch })
}

/// A later look during the same run of the console (its periodic refresh): writes only what
/// changed. A different candidate set is recorded; a session that was proven and still is stays
/// as it was (no new reopen); a session that is no longer proven becomes
/// [`SessionCheck::Unproven`] without writing; one proven again is reopened.
pub fn recheck(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    observation: &Observation,
    previous: &SessionCheck,
) -> Result<SessionCheck, AuthorityError> {
    let recorded = if same_candidates(ledger, observation)? {
        None
    } else {
        Some(record_observation(root, ledger, observation)?)
    };
    match (proof(ledger, observation), previous) {
        (Err(check), _) => Ok(check),
        (Ok(_), SessionCheck::Reopened { .. }) => Ok(previous.clone()),
        (Ok(_), _) => {
            let evidence = match recorded {
                Some(evidence) => evidence,
                None => record_observation(root, ledger, observation)?,
            };
            reopen(ledger, observation, &evidence)
        }
    }
}

/// Whether the ledger's latest recorded candidates are exactly `observation`'s.
fn same_candidates(
    ledger: &Journal<InstallationLive>,
    observation: &Observation,
) -> Result<bool, AuthorityError> {
    let Some(recorded) = &ledger.live().state().observation else {
        return Ok(false);
    };
    let observed = observation
        .candidates
        .iter()
        .map(kernel_candidate)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(recorded.candidates == observed)
}
