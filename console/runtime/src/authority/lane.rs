//! Proposing authority-lane events to the ledger.
//!
//! Two rules keep the ledger a record of changes, safe under concurrent commands:
//!
//! - **Only what changed is written.** An observation whose candidates (id, principal, kind,
//!   session fingerprint) are exactly the latest recorded ones is not stored and not recorded:
//!   the recorded one stands for it ([`record_observation`]). A session already re-proven at
//!   the active epoch with the observation that stands now is not reopened again ([`reopen`]).
//!   So a command on an unchanged machine, accepted or refused, adds no entry and no blob.
//! - **A lost race is built again.** Event ids name the kind and the revision (`kind-rN`), so
//!   two commands that read the ledger at revision N propose the same id; the store lets one
//!   in and the kernel refuses the other (an idempotency conflict). The loser has then caught
//!   up with the ledger (the append reads what other writers appended, under the ledger's
//!   lock), so [`propose_with`] asks its builder again against the ledger as it now stands,
//!   after a short back-off, at most [`RACE_RETRIES`] times: the builder either finds nothing
//!   left to do (the winner recorded the same candidates) or proposes at the next revision.
//!   Only a refusal at the revision the event was built at is the kernel's answer.

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

/// How many times a proposal that lost a race for its revision is built again.
pub const RACE_RETRIES: u32 = 100;

/// What a builder of [`propose_with`] proposes: the event and its EvidenceSet, or `None` when
/// nothing is left to propose.
type Proposal = Option<(InstallationEvent, Vec<Evidence>)>;

/// Proposes what `build` makes of the ledger as it stands, building it again when another
/// writer took the revision it was built at (see the module documentation). Anything but an
/// acceptance (or a duplicate of one) at the revision it was built at is an error.
pub(super) fn propose_with(
    ledger: &mut Journal<InstallationLive>,
    mut build: impl FnMut(&Journal<InstallationLive>) -> Result<Proposal, AuthorityError>,
) -> Result<(), AuthorityError> {
    let mut lost = 0;
    loop {
        let Some((event, evidence)) = build(ledger)? else {
            return Ok(());
        };
        match ledger.append(&event, &evidence)? {
            Appended::Accepted { .. } | Appended::Duplicate { .. } => return Ok(()),
            Appended::Rejected { .. }
                if ledger.live().state().revision != event.expected_revision
                    && lost < RACE_RETRIES =>
            {
                // Another writer advanced the ledger after `build` read it.
                std::thread::sleep(std::time::Duration::from_millis(1 << lost.min(5)));
                lost += 1;
            }
            Appended::Rejected { error_code, reason } => {
                return Err(AuthorityError::Refused {
                    code: error_code.as_str().to_owned(),
                    reason,
                });
            }
        }
    }
}

/// Proposes `event` as decided; after a lost race the same content is proposed at the
/// ledger's new revision (its id and expected revision follow the ledger, its epoch and every
/// decision it carries do not: the kernel judges them against the State that won).
pub(super) fn propose(
    ledger: &mut Journal<InstallationLive>,
    event: &InstallationEvent,
    evidence: &[Evidence],
) -> Result<(), AuthorityError> {
    propose_with(ledger, |ledger| {
        let revision = ledger.live().state().revision;
        let mut event = event.clone();
        event.event_id = identity(
            IdentityKind::Event,
            format!("{}-r{revision}", event.kind.as_str()),
        )?;
        event.expected_revision = revision;
        Ok(Some((event, evidence.to_vec())))
    })
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

/// Records `observation`'s candidates in the ledger (finishing the bootstrap discovery on a
/// new installation), storing the observation as evidence, unless they are exactly the latest
/// recorded candidates: then nothing is stored or written. Returns the Evidence of the
/// observation that stands in the ledger now.
pub fn record_observation(
    root: &ControlRoot,
    ledger: &mut Journal<InstallationLive>,
    observation: &Observation,
) -> Result<Evidence, AuthorityError> {
    let candidates = observation
        .candidates
        .iter()
        .map(kernel_candidate)
        .collect::<Result<Vec<_>, _>>()?;
    propose_with(ledger, |ledger| {
        if status(ledger) != Some(InstallationStatus::Bootstrapping) {
            return Ok(None);
        }
        let started = event(ledger, InstallationEventKind::BootstrapDiscoveryStarted)?;
        Ok(Some((started, Vec::new())))
    })?;
    let mut stored = None;
    propose_with(ledger, |ledger| {
        if let Some(recorded) = recorded_as(ledger, &candidates) {
            stored = Some(recorded.clone());
            return Ok(None);
        }
        let evidence = match &stored {
            Some(evidence) => evidence.clone(),
            None => evidence::store(
                root,
                "observation-",
                &observation.canonical_bytes(),
                identity,
            )?,
        };
        stored = Some(evidence.clone());
        let mut recorded = event(ledger, observation_kind(ledger)?)?;
        recorded.observation_id = Some(evidence.evidence_id.clone());
        recorded.candidates = Some(candidates.clone());
        Ok(Some((recorded, vec![evidence])))
    })?;
    // After an acceptance (or a racer's recording of the same candidates) the ledger's latest
    // observation is the one that stands.
    recorded_as(ledger, &candidates)
        .cloned()
        .or(stored)
        .ok_or_else(|| AuthorityError::Invalid("the observation was not recorded".to_owned()))
}

/// The event kind that records an observation in the installation's status.
fn observation_kind(
    ledger: &Journal<InstallationLive>,
) -> Result<InstallationEventKind, AuthorityError> {
    match status(ledger) {
        Some(InstallationStatus::DiscoveringLeaderCandidates) => {
            Ok(InstallationEventKind::LeaderCandidateDiscoveryCompleted)
        }
        Some(
            InstallationStatus::AwaitingLeaderSelection
            | InstallationStatus::Active
            | InstallationStatus::Degraded,
        ) => Ok(InstallationEventKind::LeaderCandidatesObserved),
        other => Err(AuthorityError::Invalid(format!(
            "observations cannot be recorded while the installation is {}",
            other.map_or("in an unknown status", InstallationStatus::as_str)
        ))),
    }
}

/// The latest recorded observation's Evidence, when its candidates are exactly `candidates`.
fn recorded_as<'l>(
    ledger: &'l Journal<InstallationLive>,
    candidates: &[KernelCandidate],
) -> Option<&'l Evidence> {
    ledger
        .live()
        .state()
        .observation
        .as_ref()
        .filter(|recorded| recorded.candidates == candidates)
        .map(|recorded| &recorded.observation)
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
    let at = observation.observed_at.to_rfc3339();
    propose_with(ledger, |ledger| {
        let state = ledger.live().state();
        let Some(leader) = &state.leader else {
            return Ok(None);
        };
        let standing = state.reopened.as_ref().is_some_and(|reopen| {
            reopen.epoch == leader.epoch && reopen.observation.evidence_id == evidence.evidence_id
        });
        if standing {
            // Re-proven at this epoch with the observation that still stands: nothing changed.
            return Ok(None);
        }
        let fingerprint = leader.candidate.session_fingerprint.clone();
        let mut reopened = event(ledger, InstallationEventKind::LeaderSessionReopened)?;
        reopened.observation_id = Some(evidence.evidence_id.clone());
        reopened.session_fingerprint = Some(fingerprint);
        reopened.observed_at = Some(at.clone());
        Ok(Some((reopened, vec![evidence.clone()])))
    })?;
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
    let recorded = record_observation(root, ledger, observation)?;
    match (proof(ledger, observation), previous) {
        (Err(check), _) => Ok(check),
        (Ok(_), SessionCheck::Reopened { .. }) => Ok(previous.clone()),
        (Ok(_), _) => reopen(ledger, observation, &recorded),
    }
}
