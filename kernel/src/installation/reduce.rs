//! `reduce_installation`: the authority lane's pure transition function.

use std::collections::BTreeSet;

use crate::canonical::{Canonical, is_digest};
use crate::history::HistoryView;
use crate::installation::model::{
    Binding, Candidate, CandidateSet, Handoff, InstallationEvent, InstallationState, Pending,
    Reopen,
};
use crate::model::{
    Accepted, AcceptedEvent, ErrorCode, Evidence, Identity, IdentityKind, InstallationEventKind,
    InstallationStatus, NoOp, Outcome, Rejected,
};
use crate::reduce::digests::{ResultParts, input_digest, result_digest_of_state};
use crate::reduce::validity::evidence_set_is_valid;

/// A refusal with its code.
type Refusal = ErrorCode;

/// Applies one authority-lane event. Pure and total, like [`reduce`](crate::reduce()).
pub fn reduce_installation(
    state: &InstallationState,
    event: &InstallationEvent,
    evidence_set: &[Evidence],
) -> Outcome<InstallationState> {
    let input_digest = input_digest(&state.protocol_version, event, evidence_set);
    let reject = |error_code, prior: Option<&AcceptedEvent>| {
        Outcome::Rejected(Rejected {
            state: state.clone(),
            input_digest: input_digest.clone(),
            error_code,
            prior_result_id: prior.map(|prior| prior.result_id.clone()),
            prior_result_digest: prior.map(|prior| prior.result_digest.clone()),
        })
    };
    let (Some(status), Some(kind)) = (state.status.known(), event.kind.known()) else {
        return reject(ErrorCode::UnknownEnumValue, None);
    };
    if !state_is_valid(state)
        || !event_is_valid(event)
        || !evidence_set_is_valid(evidence_set)
        || event.installation_id != state.installation_id
    {
        return reject(ErrorCode::StateConflict, None);
    }
    if event.leader_epoch != state.active_epoch {
        return reject(ErrorCode::LeaderEpoch, None);
    }
    if let Some(prior) = state.accepted_events.as_slice().find(&event.event_id) {
        if prior.input_digest == input_digest {
            return Outcome::NoOp(NoOp {
                state: state.clone(),
                input_digest,
                prior_result_id: prior.result_id.clone(),
                prior_result_digest: prior.result_digest.clone(),
            });
        }
        return reject(ErrorCode::IdempotencyConflict, Some(&prior));
    }
    if event.expected_revision != state.revision {
        return reject(ErrorCode::StateConflict, None);
    }
    let rotation_closes = matches!(
        kind,
        InstallationEventKind::LeaderRotationCompleted
            | InstallationEventKind::LeaderRotationFailed
    );
    if status == InstallationStatus::RotatingLeader && !rotation_closes {
        return reject(ErrorCode::LeaderRotating, None);
    }
    let mut next = state.clone();
    let facts = match apply(&mut next, status, kind, event, evidence_set) {
        Ok(facts) => facts,
        Err(code) => return reject(code, None),
    };
    accept(state, next, event, input_digest, facts)
}

fn accept(
    prior: &InstallationState,
    mut next: InstallationState,
    event: &InstallationEvent,
    input_digest: String,
    kind_facts: Vec<String>,
) -> Outcome<InstallationState> {
    next.revision += 1;
    let event_id = &event.event_id;
    let mut audit_facts = vec![format!("accepted:{}:{}", event_id.kind(), event_id.value())];
    audit_facts.extend(kind_facts);
    let result_id = Identity::derived(
        IdentityKind::Result,
        format!("{}:accepted", event_id.value()),
    );
    let mut next_state = Vec::with_capacity(1024);
    next.write_with_history(&mut next_state, &[]);
    let result_digest = result_digest_of_state(
        &ResultParts {
            result_id: &result_id,
            event_id,
            input_digest: &input_digest,
            prior_state_digest: &prior.digest(),
            obligations: &[],
            audit_facts: &audit_facts,
        },
        &next_state,
    );
    next.accepted_events.push(AcceptedEvent {
        event_id: event_id.clone(),
        result_id: result_id.clone(),
        input_digest: input_digest.clone(),
        result_digest: result_digest.clone(),
    });
    Outcome::Accepted(Accepted {
        result_id,
        state: next,
        input_digest,
        result_digest,
        obligations: Vec::new(),
        audit_facts,
    })
}

/// Moves `next` (a copy of the prior state) to its new status; returns kind-specific audit
/// facts or the refusal.
#[allow(clippy::too_many_lines)] // one match over the kinds, read top to bottom
fn apply(
    next: &mut InstallationState,
    status: InstallationStatus,
    kind: InstallationEventKind,
    event: &InstallationEvent,
    evidence_set: &[Evidence],
) -> Result<Vec<String>, Refusal> {
    use InstallationEventKind as K;
    use InstallationStatus as S;
    let conflict = ErrorCode::StateConflict;
    let require = |condition: bool| if condition { Ok(()) } else { Err(conflict) };
    let mut facts = Vec::new();
    let new_status = match (status, kind) {
        (S::Uninitialized, K::InstallationInitialized) => S::Bootstrapping,
        (S::Bootstrapping, K::BootstrapDiscoveryStarted) => S::DiscoveringLeaderCandidates,
        (
            S::Bootstrapping | S::DiscoveringLeaderCandidates | S::AwaitingLeaderSelection,
            K::BootstrapFailed,
        ) => S::Blocked,
        (S::DiscoveringLeaderCandidates, K::LeaderCandidateDiscoveryCompleted)
        | (S::AwaitingLeaderSelection | S::Active | S::Degraded, K::LeaderCandidatesObserved) => {
            next.observation = Some(observation(event, evidence_set)?);
            let set = next
                .observation
                .as_ref()
                .map_or(0, |set| set.candidates.len());
            facts.push(format!("candidates_observed:{set}"));
            if kind == K::LeaderCandidateDiscoveryCompleted {
                S::AwaitingLeaderSelection
            } else {
                status
            }
        }
        (S::AwaitingLeaderSelection, K::LeaderSelectionApproved) => {
            let binding = selected(next, event, evidence_set)?;
            facts.push(format!(
                "leader_selected:{}:{}:epoch:{}",
                binding.candidate.principal_id.value(),
                binding.candidate.candidate_id,
                binding.epoch
            ));
            next.pending = Some(Pending {
                binding,
                fenced_epoch: None,
            });
            S::ActivatingLeader
        }
        (S::ActivatingLeader, K::LeaderActivated)
        | (S::RotatingLeader, K::LeaderRotationCompleted) => {
            let pending = next.pending.take().ok_or(conflict)?;
            require(event.new_epoch == Some(pending.binding.epoch))?;
            if let Some(fenced) = pending.fenced_epoch {
                facts.push(format!("epoch_fenced:{fenced}"));
            }
            facts.push(format!(
                "leader_activated:{}:epoch:{}",
                pending.binding.candidate.principal_id.value(),
                pending.binding.epoch
            ));
            next.active_epoch = pending.binding.epoch;
            next.highest_epoch = next.highest_epoch.max(pending.binding.epoch);
            if let Some(previous) = next.leader.replace(pending.binding) {
                next.fenced.push(previous);
            }
            next.reopened = None;
            S::Active
        }
        (S::ActivatingLeader, K::LeaderActivationFailed)
        | (S::RotatingLeader, K::LeaderRotationFailed) => {
            next.pending = None;
            S::Blocked
        }
        (S::Active, K::LeaderSessionReopened) => {
            let leader = next.leader.as_ref().ok_or(conflict)?;
            let observation = observed(event, evidence_set)?;
            require(
                event.session_fingerprint.as_ref() == Some(&leader.candidate.session_fingerprint),
            )?;
            let observed_at = event
                .observed_at
                .clone()
                .filter(|at| !at.is_empty())
                .ok_or(conflict)?;
            facts.push(format!("leader_session_reopened:epoch:{}", leader.epoch));
            next.reopened = Some(Reopen {
                epoch: leader.epoch,
                observation,
                observed_at,
            });
            S::Active
        }
        (S::Active, K::LeaderHealthFailed) => {
            observed(event, evidence_set)?;
            facts.push(format!("leader_health_failed:epoch:{}", next.active_epoch));
            S::Degraded
        }
        (S::Active | S::Degraded, K::LeaderRotationApproved) => {
            require(event.fenced_epoch == Some(next.active_epoch))?;
            let binding = selected(next, event, evidence_set)?;
            let current = next
                .leader
                .as_ref()
                .map(|leader| &leader.candidate.session_fingerprint);
            if current == Some(&binding.candidate.session_fingerprint) {
                return Err(ErrorCode::PermissionDenied);
            }
            facts.push(format!(
                "leader_rotation_approved:{}:{}:epoch:{}:fences:{}",
                binding.candidate.principal_id.value(),
                binding.candidate.candidate_id,
                binding.epoch,
                next.active_epoch
            ));
            next.pending = Some(Pending {
                binding,
                fenced_epoch: Some(next.active_epoch),
            });
            S::RotatingLeader
        }
        (S::Active, K::TaskHandedOver) => {
            authorised(event, evidence_set)?;
            let (Some(task_id), Some(successor_task_id), Some(from_epoch)) = (
                event.task_id.clone(),
                event.successor_task_id.clone(),
                event.fenced_epoch,
            ) else {
                return Err(conflict);
            };
            // Only an epoch that had a Leader and was fenced can hold tasks to hand over.
            require(
                next.fenced.iter().any(|fenced| fenced.epoch == from_epoch)
                    && task_id != successor_task_id,
            )?;
            require(!next.handoffs.iter().any(|handoff| {
                handoff.task_id == task_id || handoff.successor_task_id == successor_task_id
            }))?;
            facts.push(format!(
                "task_handed_over:{}:{}:{from_epoch}:{}",
                task_id.value(),
                successor_task_id.value(),
                next.active_epoch
            ));
            next.handoffs.push(Handoff {
                task_id,
                successor_task_id,
                from_epoch,
                to_epoch: next.active_epoch,
            });
            S::Active
        }
        _ => return Err(conflict),
    };
    next.status = new_status.into();
    Ok(facts)
}

/// The evidence in the EvidenceSet that `id` names.
fn evidence_named(id: Option<&Identity>, evidence_set: &[Evidence]) -> Option<Evidence> {
    let id = id?;
    evidence_set
        .iter()
        .find(|evidence| &evidence.evidence_id == id)
        .cloned()
}

/// The observation an event records: its id must name evidence in the EvidenceSet.
fn observed(event: &InstallationEvent, evidence_set: &[Evidence]) -> Result<Evidence, Refusal> {
    evidence_named(event.observation_id.as_ref(), evidence_set).ok_or(ErrorCode::StateConflict)
}

fn observation(
    event: &InstallationEvent,
    evidence_set: &[Evidence],
) -> Result<CandidateSet, Refusal> {
    let observation = observed(event, evidence_set)?;
    let candidates = event.candidates.clone().ok_or(ErrorCode::StateConflict)?;
    Ok(CandidateSet {
        observation,
        candidates,
    })
}

/// Authority-bound events name the approving principal and carry its approval evidence.
fn authorised(
    event: &InstallationEvent,
    evidence_set: &[Evidence],
) -> Result<(Identity, Evidence), Refusal> {
    let principal = event
        .authority_principal_id
        .clone()
        .filter(|principal| principal.is(IdentityKind::Principal));
    let approval = evidence_named(event.authority_evidence_id.as_ref(), evidence_set);
    principal.zip(approval).ok_or(ErrorCode::PermissionDenied)
}

/// The binding an approved selection or rotation will create: an observed candidate, a
/// selection id, and the next epoch (the highest ever allocated + 1).
fn selected(
    state: &InstallationState,
    event: &InstallationEvent,
    evidence_set: &[Evidence],
) -> Result<Binding, Refusal> {
    let (approved_by, approval) = authorised(event, evidence_set)?;
    let observation = state
        .observation
        .as_ref()
        .ok_or(ErrorCode::PermissionDenied)?;
    let candidate_id = event
        .candidate_id
        .as_ref()
        .ok_or(ErrorCode::StateConflict)?;
    let candidate = observation
        .candidates
        .iter()
        .find(|candidate| &candidate.candidate_id == candidate_id)
        .ok_or(ErrorCode::PermissionDenied)?;
    let selection_id = event
        .selection_id
        .clone()
        .filter(|id| !id.is_empty())
        .ok_or(ErrorCode::StateConflict)?;
    let epoch = state
        .highest_epoch
        .checked_add(1)
        .ok_or(ErrorCode::StateConflict)?;
    if event.new_epoch != Some(epoch) {
        return Err(ErrorCode::StateConflict);
    }
    Ok(Binding {
        candidate: candidate.clone(),
        selection_id,
        epoch,
        observation: observation.observation.clone(),
        approved_by,
        approval,
    })
}

fn candidate_is_valid(candidate: &Candidate) -> bool {
    !candidate.candidate_id.is_empty()
        && candidate.principal_id.is(IdentityKind::Principal)
        && is_digest(&candidate.session_fingerprint)
}

fn candidates_are_valid(candidates: &[Candidate]) -> bool {
    let mut ids = BTreeSet::new();
    candidates
        .iter()
        .all(|candidate| candidate_is_valid(candidate) && ids.insert(&candidate.candidate_id))
}

fn binding_is_valid(binding: &Binding) -> bool {
    candidate_is_valid(&binding.candidate)
        && !binding.selection_id.is_empty()
        && binding.epoch >= 1
        && binding.observation.evidence_id.is(IdentityKind::Evidence)
        && binding.approved_by.is(IdentityKind::Principal)
        && binding.approval.evidence_id.is(IdentityKind::Evidence)
}

fn state_is_valid(state: &InstallationState) -> bool {
    let history = state.accepted_events.as_slice();
    state.protocol_version == crate::model::PROTOCOL_VERSION
        && state.installation_id.is(IdentityKind::Installation)
        && state.revision >= 0
        && usize::try_from(state.revision).is_ok_and(|revision| revision == history.len())
        && history.is_well_formed()
        && state.active_epoch >= 0
        && state.active_epoch <= state.highest_epoch
        && state.observation.as_ref().is_none_or(|set| {
            set.observation.evidence_id.is(IdentityKind::Evidence)
                && candidates_are_valid(&set.candidates)
        })
        && state
            .leader
            .as_ref()
            .is_none_or(|leader| binding_is_valid(leader) && leader.epoch == state.active_epoch)
        && state
            .pending
            .as_ref()
            .is_none_or(|pending| binding_is_valid(&pending.binding))
        && state
            .fenced
            .iter()
            .all(|binding| binding_is_valid(binding) && binding.epoch < state.active_epoch)
        && state
            .reopened
            .as_ref()
            .is_none_or(|reopen| reopen.observation.evidence_id.is(IdentityKind::Evidence))
        && state.handoffs.iter().all(|handoff| {
            handoff.task_id.is(IdentityKind::Task)
                && handoff.successor_task_id.is(IdentityKind::Task)
        })
}

fn event_is_valid(event: &InstallationEvent) -> bool {
    let optional =
        |identity: Option<&Identity>, kind| identity.is_none_or(|identity| identity.is(kind));
    event.event_id.is(IdentityKind::Event)
        && event.installation_id.is(IdentityKind::Installation)
        && event.leader_epoch >= 0
        && event.expected_revision >= 0
        && optional(event.observation_id.as_ref(), IdentityKind::Evidence)
        && optional(
            event.authority_principal_id.as_ref(),
            IdentityKind::Principal,
        )
        && optional(event.authority_evidence_id.as_ref(), IdentityKind::Evidence)
        && optional(event.task_id.as_ref(), IdentityKind::Task)
        && optional(event.successor_task_id.as_ref(), IdentityKind::Task)
        && event.new_epoch.is_none_or(|epoch| epoch >= 0)
        && event.fenced_epoch.is_none_or(|epoch| epoch >= 0)
        && event.session_fingerprint.as_deref().is_none_or(is_digest)
        && event.candidates.as_deref().is_none_or(candidates_are_valid)
}
