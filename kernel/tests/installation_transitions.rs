//! The authority-lane reducer (`kernel/src/installation/`), exhaustively.
//!
//! - A verdict matrix: every installation event kind proposed from every installation status
//!   (18 scenario rows over the 13 statuses x the 14 kinds = 252 cells). Each cell asserts either
//!   acceptance with the exact resulting status and epochs, or the exact refusal code.
//! - The exact fields each accepted kind writes: observation, pending, leader, fenced, reopened,
//!   handoffs, audit facts.
//! - The epoch, permission, rotation-freeze, reopen and hand-over rules (RFC 0002 §5.1; protocol
//!   digest §12).
//! - Idempotency, the expected-revision guard and the structural guards, in the documented order.
//! - Canonical round trip of every State, event and entry reached, digests computed by hand, and
//!   replay of the recorded entries.
//!
//! Every expected value is written out by hand from the spec and the lane's documented rules;
//! none is computed by the code under test. States are reached by legal event sequences; only the
//! four statuses that no installation event leads to are set by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::fmt::Write as _;

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::installation::{
    Binding, Candidate, CandidateSet, Handoff, InstallationEntry, InstallationEvent,
    InstallationGenesis, InstallationLive, InstallationState, Pending, Reopen,
    decode_installation_entry, decode_installation_event, decode_installation_genesis,
    decode_installation_state, reduce_installation,
};
use valp_kernel::live::{AcceptedRecord, Verdict};
use valp_kernel::replay::{MismatchField, ReplayError};
use valp_kernel::{
    ErrorCode as E, Evidence, Identity, IdentityKind, InstallationEventKind as K,
    InstallationStatus as S, Int, Open, Outcome, PrincipalKind,
};

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

const INSTALLATION: &str = "inst-1";
/// The principal that approves every selection, rotation and hand-over.
const OPERATOR: &str = "user:operator";
const OBSERVED_AT: &str = "2026-12-01T08:00:00Z";

/// `sha256:` + lowercase hex, computed here with `sha2` rather than with the kernel's helper.
fn sha256(bytes: &[u8]) -> String {
    let mut text = String::from("sha256:");
    for byte in Sha256::digest(bytes) {
        write!(text, "{byte:02x}").unwrap();
    }
    text
}

fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

fn installation() -> Identity {
    id(IdentityKind::Installation, INSTALLATION)
}

fn principal(value: &str) -> Identity {
    id(IdentityKind::Principal, value)
}

fn task(value: &str) -> Identity {
    id(IdentityKind::Task, value)
}

fn evidence(name: &str) -> Evidence {
    Evidence {
        evidence_id: id(IdentityKind::Evidence, name),
        content_digest: sha256(format!("bytes of {name}").as_bytes()),
    }
}

/// The fingerprint of a session's identity tuple.
fn fingerprint(session: &str) -> String {
    sha256(format!("identity tuple of session {session}").as_bytes())
}

/// Candidate `name`: principal `user:<name>`, session fingerprint of session `<name>`.
fn candidate(name: &str) -> Candidate {
    Candidate {
        candidate_id: name.to_owned(),
        principal_id: principal(&format!("user:{name}")),
        principal_kind: if matches!(name, "bob" | "carol") {
            PrincipalKind::TmuxPane
        } else {
            PrincipalKind::Human
        },
        session_fingerprint: fingerprint(name),
    }
}

fn candidates(names: &[&str]) -> Vec<Candidate> {
    names.iter().map(|name| candidate(name)).collect()
}

fn candidate_set(observation: &str, names: &[&str]) -> CandidateSet {
    CandidateSet {
        observation: evidence(observation),
        candidates: candidates(names),
    }
}

/// The binding an approved selection of `name` (as `selection`, from `observation`) creates.
fn binding(name: &str, selection: &str, epoch: Int, observation: &str) -> Binding {
    Binding {
        candidate: candidate(name),
        selection_id: selection.to_owned(),
        epoch,
        observation: evidence(observation),
        approved_by: principal(OPERATOR),
        approval: evidence(&format!("approval-{selection}")),
    }
}

/// A State without its history, to compare everything else at once.
fn without_history(state: &InstallationState) -> InstallationState {
    let mut state = state.clone();
    state.accepted_events.clear();
    state
}

/// The uninitialized State, written out field by field.
fn uninitialized_state() -> InstallationState {
    InstallationState {
        protocol_version: "0.3.0".to_owned(),
        installation_id: installation(),
        revision: 0,
        status: Open::Known(S::Uninitialized),
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

// ---------------------------------------------------------------------------------------------
// Event builders
// ---------------------------------------------------------------------------------------------

/// A proposed event with its EvidenceSet.
#[derive(Debug, Clone)]
struct Proposal {
    event: InstallationEvent,
    evidence: Vec<Evidence>,
}

impl Proposal {
    fn at_epoch(mut self, epoch: Int) -> Self {
        self.event.leader_epoch = epoch;
        self
    }

    fn with(mut self, edit: impl FnOnce(&mut InstallationEvent)) -> Self {
        edit(&mut self.event);
        self
    }

    fn without_evidence(mut self, name: &str) -> Self {
        self.evidence
            .retain(|evidence| evidence.evidence_id.value() != name);
        self
    }
}

/// An event of `kind` at the State's active epoch and current revision, with no slots.
fn bare_event(state: &InstallationState, event_id: &str, kind: K) -> Proposal {
    Proposal {
        event: InstallationEvent::new(
            id(IdentityKind::Event, event_id),
            state.installation_id.clone(),
            state.active_epoch,
            kind,
            state.revision,
        ),
        evidence: Vec::new(),
    }
}

/// Names the operator and the approval record `approval-<tag>`, and supplies it.
fn authorise(proposal: &mut Proposal, tag: &str) {
    let approval = format!("approval-{tag}");
    proposal.event.authority_principal_id = Some(principal(OPERATOR));
    proposal.event.authority_evidence_id = Some(id(IdentityKind::Evidence, &approval));
    proposal.evidence.push(evidence(&approval));
}

fn observation_event(
    state: &InstallationState,
    event_id: &str,
    kind: K,
    observation: &str,
    names: &[&str],
) -> Proposal {
    let mut proposal = bare_event(state, event_id, kind);
    proposal.event.observation_id = Some(id(IdentityKind::Evidence, observation));
    proposal.event.candidates = Some(candidates(names));
    proposal.evidence.push(evidence(observation));
    proposal
}

fn selection_event(
    state: &InstallationState,
    event_id: &str,
    candidate: &str,
    selection: &str,
    new_epoch: Int,
) -> Proposal {
    let mut proposal = bare_event(state, event_id, K::LeaderSelectionApproved);
    proposal.event.candidate_id = Some(candidate.to_owned());
    proposal.event.selection_id = Some(selection.to_owned());
    proposal.event.new_epoch = Some(new_epoch);
    authorise(&mut proposal, selection);
    proposal
}

fn rotation_event(
    state: &InstallationState,
    event_id: &str,
    candidate: &str,
    selection: &str,
    new_epoch: Int,
    fenced_epoch: Int,
) -> Proposal {
    let mut proposal = selection_event(state, event_id, candidate, selection, new_epoch);
    proposal.event.kind = Open::Known(K::LeaderRotationApproved);
    proposal.event.fenced_epoch = Some(fenced_epoch);
    proposal
}

/// `leader_activated` or `leader_rotation_completed` naming `new_epoch`.
fn activation_event(
    state: &InstallationState,
    event_id: &str,
    kind: K,
    new_epoch: Int,
) -> Proposal {
    let mut proposal = bare_event(state, event_id, kind);
    proposal.event.new_epoch = Some(new_epoch);
    proposal
}

fn reopen_event(
    state: &InstallationState,
    event_id: &str,
    session_fingerprint: &str,
    observation: &str,
) -> Proposal {
    let mut proposal = bare_event(state, event_id, K::LeaderSessionReopened);
    proposal.event.observation_id = Some(id(IdentityKind::Evidence, observation));
    proposal.event.session_fingerprint = Some(session_fingerprint.to_owned());
    proposal.event.observed_at = Some(OBSERVED_AT.to_owned());
    proposal.evidence.push(evidence(observation));
    proposal
}

fn health_event(state: &InstallationState, event_id: &str, observation: &str) -> Proposal {
    let mut proposal = bare_event(state, event_id, K::LeaderHealthFailed);
    proposal.event.observation_id = Some(id(IdentityKind::Evidence, observation));
    proposal.evidence.push(evidence(observation));
    proposal
}

/// `bootstrap_failed`, `leader_activation_failed` or `leader_rotation_failed`, with a reason.
fn failure_event(state: &InstallationState, event_id: &str, kind: K) -> Proposal {
    let mut proposal = bare_event(state, event_id, kind);
    proposal.event.reason = Some(format!("{} in test", kind.as_str()));
    proposal
}

fn handover_event(
    state: &InstallationState,
    event_id: &str,
    from_task: &str,
    successor: &str,
    from_epoch: Int,
) -> Proposal {
    let mut proposal = bare_event(state, event_id, K::TaskHandedOver);
    proposal.event.task_id = Some(task(from_task));
    proposal.event.successor_task_id = Some(task(successor));
    proposal.event.fenced_epoch = Some(from_epoch);
    authorise(&mut proposal, &format!("handover-{event_id}"));
    proposal
}

// ---------------------------------------------------------------------------------------------
// The lane: InstallationLive checked against the pure reducer on every proposal
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct Lane {
    genesis: InstallationGenesis,
    live: InstallationLive,
    /// The ledger: one entry per accepted event.
    entries: Vec<InstallationEntry>,
    /// The State after each entry.
    states: Vec<InstallationState>,
    counter: u32,
}

impl Lane {
    fn new() -> Self {
        let genesis = InstallationGenesis {
            state: uninitialized_state(),
        };
        Self {
            live: InstallationLive::from_genesis(&genesis).unwrap(),
            genesis,
            entries: Vec::new(),
            states: Vec::new(),
            counter: 0,
        }
    }

    fn state(&self) -> &InstallationState {
        self.live.state()
    }

    fn next_id(&mut self) -> String {
        self.counter += 1;
        format!("e{}", self.counter)
    }

    fn bare(&mut self, kind: K) -> Proposal {
        let event_id = self.next_id();
        bare_event(self.state(), &event_id, kind)
    }

    fn observe(&mut self, kind: K, observation: &str, names: &[&str]) -> Proposal {
        let event_id = self.next_id();
        observation_event(self.state(), &event_id, kind, observation, names)
    }

    fn select(&mut self, candidate: &str, selection: &str, new_epoch: Int) -> Proposal {
        let event_id = self.next_id();
        selection_event(self.state(), &event_id, candidate, selection, new_epoch)
    }

    fn rotate(
        &mut self,
        candidate: &str,
        selection: &str,
        new_epoch: Int,
        fenced: Int,
    ) -> Proposal {
        let event_id = self.next_id();
        rotation_event(
            self.state(),
            &event_id,
            candidate,
            selection,
            new_epoch,
            fenced,
        )
    }

    fn activate(&mut self, kind: K, new_epoch: Int) -> Proposal {
        let event_id = self.next_id();
        activation_event(self.state(), &event_id, kind, new_epoch)
    }

    fn reopen(&mut self, session_fingerprint: &str, observation: &str) -> Proposal {
        let event_id = self.next_id();
        reopen_event(self.state(), &event_id, session_fingerprint, observation)
    }

    fn health_failure(&mut self, observation: &str) -> Proposal {
        let event_id = self.next_id();
        health_event(self.state(), &event_id, observation)
    }

    fn failure(&mut self, kind: K) -> Proposal {
        let event_id = self.next_id();
        failure_event(self.state(), &event_id, kind)
    }

    fn handover(&mut self, from_task: &str, successor: &str, from_epoch: Int) -> Proposal {
        let event_id = self.next_id();
        handover_event(self.state(), &event_id, from_task, successor, from_epoch)
    }

    /// Proposes through `InstallationLive` and checks the pure reducer answers the same Result
    /// (State included); records accepted entries.
    fn propose(&mut self, proposal: &Proposal) -> Verdict {
        let before = self.state().clone();
        let outcome = reduce_installation(&before, &proposal.event, &proposal.evidence);
        let verdict = self.live.apply(&proposal.event, &proposal.evidence);
        assert_eq!(
            verdict.clone().into_outcome(self.state().clone()),
            outcome,
            "InstallationLive and reduce_installation disagree on {}",
            proposal.event.kind.as_str()
        );
        if let Verdict::Accepted(record) = &verdict {
            let state = self.live.state().clone();
            assert_eq!(state.revision, before.revision + 1);
            assert_eq!(
                state.accepted_events.len(),
                before.accepted_events.len() + 1
            );
            assert_eq!(
                state.accepted_events[..before.accepted_events.len()],
                before.accepted_events[..],
                "accepting rewrote the history"
            );
            let last = state.accepted_events.last().unwrap();
            assert_eq!(last.event_id, proposal.event.event_id);
            assert_eq!(
                last.result_id,
                id(
                    IdentityKind::Result,
                    &format!("{}:accepted", proposal.event.event_id.value())
                )
            );
            assert_eq!(record.result_id, last.result_id);
            assert_eq!(record.input_digest, last.input_digest);
            assert_eq!(record.result_digest, last.result_digest);
            assert!(
                record.obligations.is_empty(),
                "the authority lane has no obligations"
            );
            assert_eq!(
                record.audit_facts.first(),
                Some(&format!(
                    "accepted:event:{}",
                    proposal.event.event_id.value()
                ))
            );
            self.entries.push(InstallationEntry {
                event: proposal.event.clone(),
                evidence_set: proposal.evidence.clone(),
                result: record.clone(),
            });
            self.states.push(state);
        } else {
            assert_eq!(
                self.state(),
                &before,
                "a refusal or no-op changed the State"
            );
        }
        verdict
    }

    fn accept(&mut self, proposal: &Proposal) -> AcceptedRecord {
        match self.propose(proposal) {
            Verdict::Accepted(record) => record,
            other => panic!(
                "{} ({}) was not accepted: {other:?}",
                proposal.event.kind.as_str(),
                proposal.event.event_id.value()
            ),
        }
    }

    /// The refusal code; a refusal other than an idempotency conflict names no prior result.
    fn refuse(&mut self, proposal: &Proposal) -> E {
        match self.propose(proposal) {
            Verdict::Rejected {
                error_code, prior, ..
            } => {
                if error_code != E::IdempotencyConflict {
                    assert_eq!(prior, None, "{error_code:?} must not name a prior result");
                }
                error_code
            }
            other => panic!(
                "{} ({}) was not rejected: {other:?}",
                proposal.event.kind.as_str(),
                proposal.event.event_id.value()
            ),
        }
    }

    /// Accepts `proposal` and returns its audit facts after `accepted:event:<id>`.
    fn accept_facts(&mut self, proposal: &Proposal) -> Vec<String> {
        self.accept(proposal).audit_facts[1..].to_vec()
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios, each reached by legal events only
// ---------------------------------------------------------------------------------------------

fn bootstrapping() -> Lane {
    let mut lane = Lane::new();
    let init = lane.bare(K::InstallationInitialized);
    lane.accept(&init);
    lane
}

fn discovering() -> Lane {
    let mut lane = bootstrapping();
    let start = lane.bare(K::BootstrapDiscoveryStarted);
    lane.accept(&start);
    lane
}

/// Awaiting selection; observation `obs-1` holds alice, bob and carol.
fn awaiting() -> Lane {
    let mut lane = discovering();
    let discovered = lane.observe(
        K::LeaderCandidateDiscoveryCompleted,
        "obs-1",
        &["alice", "bob", "carol"],
    );
    lane.accept(&discovered);
    lane
}

/// alice selected as `sel-1` for epoch 1.
fn activating() -> Lane {
    let mut lane = awaiting();
    let select = lane.select("alice", "sel-1", 1);
    lane.accept(&select);
    lane
}

/// alice active at epoch 1.
fn active_1() -> Lane {
    let mut lane = activating();
    let activate = lane.activate(K::LeaderActivated, 1);
    lane.accept(&activate);
    lane
}

fn degraded(mut lane: Lane) -> Lane {
    let failed = lane.health_failure("obs-health");
    lane.accept(&failed);
    lane
}

/// Rotating from alice (epoch 1) to bob (`sel-2`, epoch 2).
fn rotating_1() -> Lane {
    let mut lane = active_1();
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    lane.accept(&rotate);
    lane
}

/// bob active at epoch 2; alice's epoch 1 fenced.
fn active_2() -> Lane {
    let mut lane = rotating_1();
    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    lane.accept(&complete);
    lane
}

/// Rotating from bob (epoch 2) to carol (`sel-3`, epoch 3).
fn rotating_2() -> Lane {
    let mut lane = active_2();
    let rotate = lane.rotate("carol", "sel-3", 3, 2);
    lane.accept(&rotate);
    lane
}

fn blocked_by(mut lane: Lane, kind: K) -> Lane {
    let failed = lane.failure(kind);
    lane.accept(&failed);
    lane
}

// ---------------------------------------------------------------------------------------------
// Invariants every reached State must satisfy
// ---------------------------------------------------------------------------------------------

/// The fields each status implies (written from the lane's rules, not read from the reducer).
fn assert_shape(state: &InstallationState) {
    let status = state.status.known().unwrap();
    let next_epoch = state.highest_epoch + 1;
    let pending_epoch = state.pending.as_ref().map(|pending| pending.binding.epoch);
    let pending_fences = state.pending.as_ref().map(|pending| pending.fenced_epoch);
    let leader_epoch = state.leader.as_ref().map(|leader| leader.epoch);
    match status {
        S::Uninitialized | S::Bootstrapping | S::DiscoveringLeaderCandidates => {
            assert!(state.observation.is_none(), "{status}: observation");
            assert_eq!((leader_epoch, pending_epoch), (None, None), "{status}");
            assert_eq!(
                (state.active_epoch, state.highest_epoch),
                (0, 0),
                "{status}"
            );
        }
        S::AwaitingLeaderSelection => {
            assert!(state.observation.is_some(), "{status}: observation");
            assert_eq!((leader_epoch, pending_epoch), (None, None), "{status}");
            assert_eq!(
                (state.active_epoch, state.highest_epoch),
                (0, 0),
                "{status}"
            );
        }
        S::ActivatingLeader => {
            assert_eq!(leader_epoch, None, "{status}");
            assert_eq!(pending_epoch, Some(next_epoch), "{status}");
            assert_eq!(pending_fences, Some(None), "{status}");
        }
        S::Active | S::Degraded => {
            assert!(state.active_epoch >= 1, "{status}: epoch");
            assert_eq!(leader_epoch, Some(state.active_epoch), "{status}");
            assert_eq!(state.highest_epoch, state.active_epoch, "{status}");
            assert_eq!(pending_epoch, None, "{status}");
        }
        S::RotatingLeader => {
            assert_eq!(leader_epoch, Some(state.active_epoch), "{status}");
            assert_eq!(pending_epoch, Some(next_epoch), "{status}");
            assert_eq!(pending_fences, Some(Some(state.active_epoch)), "{status}");
        }
        S::Blocked => assert_eq!(pending_epoch, None, "{status}"),
        other => panic!("no installation event leads to {other}"),
    }
    // Every epoch before the active one, and only those, is fenced (no rotation is lost).
    let fenced: Vec<Int> = state.fenced.iter().map(|binding| binding.epoch).collect();
    let expected: Vec<Int> = (1..state.active_epoch).collect();
    assert_eq!(fenced, expected, "{status}: fenced epochs");
}

/// Canonical bytes -> strict canonical decode -> installation decoder -> the same State and the
/// same bytes.
fn assert_round_trips(state: &InstallationState) {
    let bytes = state.canonical_bytes();
    let value = decode_canonical(&bytes).unwrap();
    let decoded = decode_installation_state(&value).unwrap();
    assert_eq!(&decoded, state);
    assert_eq!(decoded.canonical_bytes(), bytes);
}

// ---------------------------------------------------------------------------------------------
// 1 + 2: the verdict matrix
// ---------------------------------------------------------------------------------------------

/// A scenario row of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Row {
    Uninitialized,
    Bootstrapping,
    Discovering,
    Awaiting,
    Activating,
    Active1,
    Degraded1,
    Rotating1,
    Active2,
    Degraded2,
    Rotating2,
    BlockedInBootstrap,
    BlockedAfterActivation,
    BlockedAfterRotation,
    Reconciling,
    Migrating,
    RollbackRequired,
    Retired,
}

impl Row {
    const ALL: [Self; 18] = [
        Self::Uninitialized,
        Self::Bootstrapping,
        Self::Discovering,
        Self::Awaiting,
        Self::Activating,
        Self::Active1,
        Self::Degraded1,
        Self::Rotating1,
        Self::Active2,
        Self::Degraded2,
        Self::Rotating2,
        Self::BlockedInBootstrap,
        Self::BlockedAfterActivation,
        Self::BlockedAfterRotation,
        Self::Reconciling,
        Self::Migrating,
        Self::RollbackRequired,
        Self::Retired,
    ];

    /// The status the row is in.
    fn status(self) -> S {
        match self {
            Self::Uninitialized => S::Uninitialized,
            Self::Bootstrapping => S::Bootstrapping,
            Self::Discovering => S::DiscoveringLeaderCandidates,
            Self::Awaiting => S::AwaitingLeaderSelection,
            Self::Activating => S::ActivatingLeader,
            Self::Active1 | Self::Active2 => S::Active,
            Self::Degraded1 | Self::Degraded2 => S::Degraded,
            Self::Rotating1 | Self::Rotating2 => S::RotatingLeader,
            Self::BlockedInBootstrap
            | Self::BlockedAfterActivation
            | Self::BlockedAfterRotation => S::Blocked,
            Self::Reconciling => S::ReconcilingCapabilities,
            Self::Migrating => S::Migrating,
            Self::RollbackRequired => S::RollbackRequired,
            Self::Retired => S::Retired,
        }
    }

    /// The lane that reaches the row by legal events; `None` for the four statuses no
    /// installation event leads to.
    fn lane(self) -> Option<Lane> {
        Some(match self {
            Self::Uninitialized => Lane::new(),
            Self::Bootstrapping => bootstrapping(),
            Self::Discovering => discovering(),
            Self::Awaiting => awaiting(),
            Self::Activating => activating(),
            Self::Active1 => active_1(),
            Self::Degraded1 => degraded(active_1()),
            Self::Rotating1 => rotating_1(),
            Self::Active2 => active_2(),
            Self::Degraded2 => degraded(active_2()),
            Self::Rotating2 => rotating_2(),
            Self::BlockedInBootstrap => blocked_by(bootstrapping(), K::BootstrapFailed),
            Self::BlockedAfterActivation => blocked_by(activating(), K::LeaderActivationFailed),
            Self::BlockedAfterRotation => blocked_by(rotating_1(), K::LeaderRotationFailed),
            Self::Reconciling | Self::Migrating | Self::RollbackRequired | Self::Retired => {
                return None;
            }
        })
    }

    /// The row's State: the lane's, or (for unreachable statuses) the `active_2` State with its
    /// status set by hand.
    fn state(self) -> InstallationState {
        self.lane().map_or_else(
            || {
                let mut state = active_2().state().clone();
                state.status = Open::Known(self.status());
                state
            },
            |lane| lane.state().clone(),
        )
    }
}

/// What a cell must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Accepted {
        status: S,
        active_epoch: Int,
        highest_epoch: Int,
    },
    Rejected(E),
}

/// The matrix, written out by hand: every legal edge with its resulting status and epochs; every
/// other cell refused, with `VALP-E-LEADER-ROTATING` while the Leader rotates and
/// `VALP-E-STATE-CONFLICT` otherwise.
#[allow(clippy::match_same_arms)] // one arm per edge of the graph, as the spec's table lists them
fn expected(row: Row, kind: K) -> Expect {
    use Row as R;
    let ok = |status, active_epoch, highest_epoch| Expect::Accepted {
        status,
        active_epoch,
        highest_epoch,
    };
    match (row, kind) {
        (R::Uninitialized, K::InstallationInitialized) => ok(S::Bootstrapping, 0, 0),
        (R::Bootstrapping, K::BootstrapDiscoveryStarted) => {
            ok(S::DiscoveringLeaderCandidates, 0, 0)
        }
        (R::Bootstrapping | R::Discovering | R::Awaiting, K::BootstrapFailed) => {
            ok(S::Blocked, 0, 0)
        }
        (R::Discovering, K::LeaderCandidateDiscoveryCompleted)
        | (R::Awaiting, K::LeaderCandidatesObserved) => ok(S::AwaitingLeaderSelection, 0, 0),
        (R::Awaiting, K::LeaderSelectionApproved) => ok(S::ActivatingLeader, 0, 0),
        (R::Activating, K::LeaderActivated) => ok(S::Active, 1, 1),
        (R::Activating, K::LeaderActivationFailed) => ok(S::Blocked, 0, 0),
        (R::Active1, K::LeaderCandidatesObserved | K::LeaderSessionReopened) => ok(S::Active, 1, 1),
        (R::Active1, K::LeaderHealthFailed) => ok(S::Degraded, 1, 1),
        (R::Active1 | R::Degraded1, K::LeaderRotationApproved) => ok(S::RotatingLeader, 1, 1),
        (R::Degraded1, K::LeaderCandidatesObserved) => ok(S::Degraded, 1, 1),
        (R::Rotating1, K::LeaderRotationCompleted) => ok(S::Active, 2, 2),
        (R::Rotating1, K::LeaderRotationFailed) => ok(S::Blocked, 1, 1),
        (
            R::Active2,
            K::LeaderCandidatesObserved | K::LeaderSessionReopened | K::TaskHandedOver,
        ) => ok(S::Active, 2, 2),
        (R::Active2, K::LeaderHealthFailed) => ok(S::Degraded, 2, 2),
        (R::Active2 | R::Degraded2, K::LeaderRotationApproved) => ok(S::RotatingLeader, 2, 2),
        (R::Degraded2, K::LeaderCandidatesObserved) => ok(S::Degraded, 2, 2),
        (R::Rotating2, K::LeaderRotationCompleted) => ok(S::Active, 3, 3),
        (R::Rotating2, K::LeaderRotationFailed) => ok(S::Blocked, 2, 2),
        (R::Rotating1 | R::Rotating2, _) => Expect::Rejected(E::LeaderRotating),
        _ => Expect::Rejected(E::StateConflict),
    }
}

/// The most legal-looking event of `kind` for `state`: active epoch, current revision, and every
/// slot the kind reads filled consistently with the State, so that a refusal can only come from
/// the status x kind rule.
fn probe(state: &InstallationState, kind: K) -> Proposal {
    let event_id = format!("probe-{}", kind.as_str());
    let next_epoch = state.highest_epoch + 1;
    let pending_epoch = state
        .pending
        .as_ref()
        .map_or(next_epoch, |pending| pending.binding.epoch);
    let bound = state
        .leader
        .as_ref()
        .map(|leader| leader.candidate.session_fingerprint.clone());
    // The first observed candidate that is not the bound session.
    let replacement = state
        .observation
        .as_ref()
        .and_then(|set| {
            set.candidates
                .iter()
                .find(|candidate| Some(&candidate.session_fingerprint) != bound.as_ref())
        })
        .map_or_else(
            || "alice".to_owned(),
            |candidate| candidate.candidate_id.clone(),
        );
    match kind {
        K::InstallationInitialized | K::BootstrapDiscoveryStarted => {
            bare_event(state, &event_id, kind)
        }
        K::LeaderCandidateDiscoveryCompleted | K::LeaderCandidatesObserved => observation_event(
            state,
            &event_id,
            kind,
            "obs-probe",
            &["alice", "bob", "carol", "dave"],
        ),
        K::LeaderSelectionApproved => {
            selection_event(state, &event_id, &replacement, "sel-probe", next_epoch)
        }
        K::LeaderActivated | K::LeaderRotationCompleted => {
            activation_event(state, &event_id, kind, pending_epoch)
        }
        K::LeaderActivationFailed | K::LeaderRotationFailed | K::BootstrapFailed => {
            failure_event(state, &event_id, kind)
        }
        K::LeaderSessionReopened => reopen_event(
            state,
            &event_id,
            &bound.unwrap_or_else(|| fingerprint("nobody")),
            "obs-probe",
        ),
        K::LeaderHealthFailed => health_event(state, &event_id, "obs-probe"),
        K::LeaderRotationApproved => rotation_event(
            state,
            &event_id,
            &replacement,
            "sel-probe",
            next_epoch,
            state.active_epoch,
        ),
        K::TaskHandedOver => {
            // From the latest fenced epoch; with none fenced, from the active epoch itself.
            let from = state
                .fenced
                .last()
                .map_or(state.active_epoch, |binding| binding.epoch);
            handover_event(state, &event_id, "TASK-P", "TASK-P2", from)
        }
    }
}

#[test]
fn vocabularies_have_the_documented_sizes() {
    assert_eq!(K::ALL.len(), 14);
    assert_eq!(S::ALL.len(), 13);
    let covered: BTreeSet<S> = Row::ALL.iter().map(|row| row.status()).collect();
    assert_eq!(
        covered,
        S::ALL.iter().copied().collect(),
        "every status has a row"
    );
}

#[test]
fn verdict_matrix_every_status_by_every_kind() {
    let mut failures = Vec::new();
    let mut cells = 0;
    let mut accepted_cells = 0;
    let mut accepted_kinds = BTreeSet::new();
    for row in Row::ALL {
        let lane = row.lane();
        let state = row.state();
        assert_eq!(
            state.status.known(),
            Some(row.status()),
            "{row:?}: scenario"
        );
        if lane.is_some() {
            assert_shape(&state);
        }
        for &kind in K::ALL {
            cells += 1;
            let proposal = probe(&state, kind);
            let outcome = reduce_installation(&state, &proposal.event, &proposal.evidence);
            if let Some(lane) = &lane {
                // The live lane must answer the same (checked inside `propose`).
                lane.clone().propose(&proposal);
            }
            let cell = format!("{row:?} x {}", kind.as_str());
            match (expected(row, kind), &outcome) {
                (
                    Expect::Accepted {
                        status,
                        active_epoch,
                        highest_epoch,
                    },
                    Outcome::Accepted(accepted),
                ) => {
                    accepted_cells += 1;
                    accepted_kinds.insert(kind);
                    let next = &accepted.state;
                    let got = (
                        next.status.known(),
                        next.active_epoch,
                        next.highest_epoch,
                        next.revision,
                    );
                    let want = (
                        Some(status),
                        active_epoch,
                        highest_epoch,
                        state.revision + 1,
                    );
                    if got != want {
                        failures.push(format!("{cell}: accepted as {got:?}, want {want:?}"));
                    }
                    assert_shape(next);
                    assert_round_trips(next);
                }
                (Expect::Rejected(code), Outcome::Rejected(rejected)) => {
                    if rejected.error_code != code {
                        failures.push(format!(
                            "{cell}: rejected with {}, want {}",
                            rejected.error_code.as_str(),
                            code.as_str()
                        ));
                    }
                    assert_eq!(rejected.state, state, "{cell}: a refusal changed the State");
                    assert_eq!(rejected.prior_result_id, None, "{cell}");
                    assert_eq!(rejected.prior_result_digest, None, "{cell}");
                }
                (want, got) => failures.push(format!(
                    "{cell}: got {} ({:?}), want {want:?}",
                    got.variant().as_str(),
                    got.error_code()
                )),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cells} cells differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(cells, 18 * 14);
    assert_eq!(accepted_cells, 27);
    assert_eq!(
        accepted_kinds.len(),
        14,
        "every kind is legal from some status"
    );
}

#[test]
fn unknown_status_or_kind_is_refused_before_anything_else() {
    let lane = active_1();
    // An unknown kind, even with a wrong installation, epoch and revision.
    let mut alien = probe(lane.state(), K::LeaderCandidatesObserved);
    alien.event.kind = Open::Unknown("leader_promoted".to_owned());
    assert_eq!(lane.clone().refuse(&alien), E::UnknownEnumValue);
    let alien = alien.with(|event| {
        event.installation_id = id(IdentityKind::Installation, "inst-2");
        event.leader_epoch = 7;
        event.expected_revision = 99;
    });
    assert_eq!(lane.clone().refuse(&alien), E::UnknownEnumValue);

    // An unknown status, reached through the decoder (which keeps unknown text verbatim).
    let text = String::from_utf8(lane.state().canonical_bytes()).unwrap();
    let paused = text.replace("\"status\":\"active\"", "\"status\":\"paused\"");
    assert_ne!(paused, text);
    let value = valp_kernel::json::parse(paused.trim_end()).unwrap();
    let state = decode_installation_state(&value).unwrap();
    assert_eq!(
        (state.status.as_str(), state.status.known()),
        ("paused", None)
    );
    for &kind in K::ALL {
        let proposal = probe(&state, kind);
        assert_eq!(
            reduce_installation(&state, &proposal.event, &proposal.evidence).error_code(),
            Some(E::UnknownEnumValue),
            "{} in status paused",
            kind.as_str()
        );
    }

    // An unknown kind, reached through the decoder.
    let event_text = String::from_utf8(
        probe(lane.state(), K::LeaderHealthFailed)
            .event
            .canonical_bytes(),
    )
    .unwrap()
    .replace("leader_health_failed", "leader_promoted");
    let event =
        decode_installation_event(&valp_kernel::json::parse(event_text.trim_end()).unwrap())
            .unwrap();
    assert_eq!(
        (event.kind.as_str(), event.kind.known()),
        ("leader_promoted", None)
    );
    assert_eq!(
        reduce_installation(lane.state(), &event, &[evidence("obs-probe")]).error_code(),
        Some(E::UnknownEnumValue)
    );
}

// ---------------------------------------------------------------------------------------------
// 1: the exact fields each accepted kind writes
// ---------------------------------------------------------------------------------------------

#[test]
fn bootstrap_events_move_through_discovery_at_epoch_zero() {
    let mut lane = Lane::new();
    let init = lane.bare(K::InstallationInitialized);
    assert_eq!(lane.accept_facts(&init), Vec::<String>::new());
    let mut expected = uninitialized_state();
    expected.revision = 1;
    expected.status = Open::Known(S::Bootstrapping);
    assert_eq!(without_history(lane.state()), expected);

    let start = lane.bare(K::BootstrapDiscoveryStarted);
    assert_eq!(lane.accept_facts(&start), Vec::<String>::new());
    expected.revision = 2;
    expected.status = Open::Known(S::DiscoveringLeaderCandidates);
    assert_eq!(without_history(lane.state()), expected);

    let discovered = lane.observe(
        K::LeaderCandidateDiscoveryCompleted,
        "obs-1",
        &["alice", "bob", "carol"],
    );
    assert_eq!(lane.accept_facts(&discovered), ["candidates_observed:3"]);
    expected.revision = 3;
    expected.status = Open::Known(S::AwaitingLeaderSelection);
    expected.observation = Some(candidate_set("obs-1", &["alice", "bob", "carol"]));
    assert_eq!(without_history(lane.state()), expected);
    assert!(
        lane.state().leader.is_none(),
        "no Leader without an explicit selection"
    );

    // A later observation replaces the candidate set (the latest one counts).
    let again = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["dave", "bob"]);
    assert_eq!(lane.accept_facts(&again), ["candidates_observed:2"]);
    expected.revision = 4;
    expected.observation = Some(candidate_set("obs-2", &["dave", "bob"]));
    assert_eq!(without_history(lane.state()), expected);

    // An empty observation is recorded as such.
    let none = lane.observe(K::LeaderCandidatesObserved, "obs-3", &[]);
    assert_eq!(lane.accept_facts(&none), ["candidates_observed:0"]);
    expected.revision = 5;
    expected.observation = Some(candidate_set("obs-3", &[]));
    assert_eq!(without_history(lane.state()), expected);
    // ...and leaves nobody to select.
    let select = lane.select("dave", "sel-1", 1);
    assert_eq!(lane.refuse(&select), E::PermissionDenied);

    for (index, entry) in lane.entries.iter().enumerate() {
        assert_eq!(
            entry.event.leader_epoch, 0,
            "bootstrap event {index} is at epoch 0"
        );
    }
}

#[test]
fn bootstrap_failure_blocks_from_each_bootstrap_status() {
    for (name, lane) in [
        ("bootstrapping", bootstrapping()),
        ("discovering", discovering()),
        ("awaiting", awaiting()),
    ] {
        let mut lane = lane;
        let mut expected = without_history(lane.state());
        let failed = lane.failure(K::BootstrapFailed);
        assert_eq!(lane.accept_facts(&failed), Vec::<String>::new(), "{name}");
        expected.revision += 1;
        expected.status = Open::Known(S::Blocked);
        // Everything else, the recorded observation included, is kept.
        assert_eq!(without_history(lane.state()), expected, "{name}");
    }
    assert!(
        blocked_by(awaiting(), K::BootstrapFailed)
            .state()
            .observation
            .is_some()
    );
}

#[test]
fn selection_then_activation_binds_epoch_one() {
    let mut lane = awaiting();
    let mut expected = without_history(lane.state());

    let select = lane.select("alice", "sel-1", 1);
    assert_eq!(
        lane.accept_facts(&select),
        ["leader_selected:user:alice:alice:epoch:1"]
    );
    expected.revision = 4;
    expected.status = Open::Known(S::ActivatingLeader);
    expected.pending = Some(Pending {
        binding: binding("alice", "sel-1", 1, "obs-1"),
        fenced_epoch: None,
    });
    // Selection allocates nothing yet: still epoch 0.
    assert_eq!(without_history(lane.state()), expected);

    let activate = lane.activate(K::LeaderActivated, 1);
    assert_eq!(
        lane.accept_facts(&activate),
        ["leader_activated:user:alice:epoch:1"]
    );
    expected.revision = 5;
    expected.status = Open::Known(S::Active);
    expected.active_epoch = 1;
    expected.highest_epoch = 1;
    expected.pending = None;
    expected.leader = Some(binding("alice", "sel-1", 1, "obs-1"));
    assert_eq!(without_history(lane.state()), expected);
    assert!(
        lane.state().fenced.is_empty(),
        "epoch 0 had no Leader to fence"
    );
    assert_eq!(
        lane.entries[4].event.leader_epoch, 0,
        "activation is sent at epoch 0"
    );
}

#[test]
fn activation_failure_blocks_without_allocating_an_epoch() {
    let mut lane = activating();
    let mut expected = without_history(lane.state());
    let failed = lane.failure(K::LeaderActivationFailed);
    assert_eq!(lane.accept_facts(&failed), Vec::<String>::new());
    expected.revision += 1;
    expected.status = Open::Known(S::Blocked);
    expected.pending = None;
    assert_eq!(without_history(lane.state()), expected);
    assert_eq!(
        (lane.state().active_epoch, lane.state().highest_epoch),
        (0, 0)
    );
    assert!(lane.state().leader.is_none());
    // Epoch 1 was never activated, so it is not the active epoch.
    let unactivated = probe(lane.state(), K::LeaderActivated).at_epoch(1);
    assert_eq!(lane.refuse(&unactivated), E::LeaderEpoch);
}

#[test]
fn observations_while_active_or_degraded_replace_the_set_and_keep_the_status() {
    let mut lane = active_1();
    let mut expected = without_history(lane.state());
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["alice", "dave"]);
    assert_eq!(lane.accept_facts(&observed), ["candidates_observed:2"]);
    expected.revision += 1;
    expected.observation = Some(candidate_set("obs-2", &["alice", "dave"]));
    assert_eq!(without_history(lane.state()), expected);

    let mut lane = degraded(lane);
    let mut expected = without_history(lane.state());
    assert_eq!(expected.status, Open::Known(S::Degraded));
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-3", &["erin"]);
    assert_eq!(lane.accept_facts(&observed), ["candidates_observed:1"]);
    expected.revision += 1;
    expected.observation = Some(candidate_set("obs-3", &["erin"]));
    assert_eq!(without_history(lane.state()), expected);
}

#[test]
fn reopen_records_the_bound_session_and_rotation_clears_it() {
    let mut lane = active_1();
    let mut expected = without_history(lane.state());
    let reopen = lane.reopen(&fingerprint("alice"), "obs-reopen-1");
    assert_eq!(
        lane.accept_facts(&reopen),
        ["leader_session_reopened:epoch:1"]
    );
    expected.revision += 1;
    expected.reopened = Some(Reopen {
        epoch: 1,
        observation: evidence("obs-reopen-1"),
        observed_at: OBSERVED_AT.to_owned(),
    });
    assert_eq!(without_history(lane.state()), expected);

    // The next reopen replaces the record.
    let reopen = lane
        .reopen(&fingerprint("alice"), "obs-reopen-2")
        .with(|event| event.observed_at = Some("2026-12-02T08:00:00Z".to_owned()));
    lane.accept(&reopen);
    expected.revision += 1;
    expected.reopened = Some(Reopen {
        epoch: 1,
        observation: evidence("obs-reopen-2"),
        observed_at: "2026-12-02T08:00:00Z".to_owned(),
    });
    assert_eq!(without_history(lane.state()), expected);

    // A health failure keeps it; a completed rotation clears it.
    let mut lane = degraded(lane);
    assert_eq!(lane.state().reopened, expected.reopened);
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    lane.accept(&rotate);
    assert_eq!(lane.state().reopened, expected.reopened);
    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    lane.accept(&complete);
    assert_eq!(lane.state().reopened, None);

    // After the rotation only bob's session reopens, at epoch 2.
    let old = lane.reopen(&fingerprint("alice"), "obs-reopen-3");
    assert_eq!(lane.refuse(&old), E::StateConflict);
    let new = lane.reopen(&fingerprint("bob"), "obs-reopen-4");
    assert_eq!(lane.accept_facts(&new), ["leader_session_reopened:epoch:2"]);
    assert_eq!(
        lane.state().reopened,
        Some(Reopen {
            epoch: 2,
            observation: evidence("obs-reopen-4"),
            observed_at: OBSERVED_AT.to_owned(),
        })
    );
}

#[test]
fn reopen_refuses_anything_but_the_exact_bound_session() {
    let lane = active_1();
    let good = reopen_event(lane.state(), "e-reopen", &fingerprint("alice"), "obs-r");
    let upper = format!("sha256:{}", fingerprint("alice")[7..].to_uppercase());
    let cases: Vec<(&str, Proposal)> = vec![
        (
            "another observed candidate's session",
            good.clone()
                .with(|event| event.session_fingerprint = Some(fingerprint("bob"))),
        ),
        (
            "an unobserved session",
            good.clone()
                .with(|event| event.session_fingerprint = Some(fingerprint("mallory"))),
        ),
        (
            "no fingerprint",
            good.clone().with(|event| event.session_fingerprint = None),
        ),
        (
            "a fingerprint that is not a digest",
            good.clone()
                .with(|event| event.session_fingerprint = Some("alice".to_owned())),
        ),
        (
            "an upper-case fingerprint",
            good.clone()
                .with(|event| event.session_fingerprint = Some(upper.clone())),
        ),
        (
            "no observation id",
            good.clone().with(|event| event.observation_id = None),
        ),
        (
            "observation evidence not supplied",
            good.clone().without_evidence("obs-r"),
        ),
        (
            "no observed_at",
            good.clone().with(|event| event.observed_at = None),
        ),
        (
            "an empty observed_at",
            good.clone()
                .with(|event| event.observed_at = Some(String::new())),
        ),
    ];
    for (name, proposal) in cases {
        assert_eq!(lane.clone().refuse(&proposal), E::StateConflict, "{name}");
    }
    lane.clone().accept(&good);
    // A reopen is only for an active Leader: not while degraded.
    let mut lane = degraded(lane);
    let again = lane.reopen(&fingerprint("alice"), "obs-r2");
    assert_eq!(lane.refuse(&again), E::StateConflict);
}

#[test]
fn health_failure_degrades_and_keeps_the_binding() {
    let mut lane = active_1();
    let mut expected = without_history(lane.state());
    let failed = lane.health_failure("obs-health");
    assert_eq!(lane.accept_facts(&failed), ["leader_health_failed:epoch:1"]);
    expected.revision += 1;
    expected.status = Open::Known(S::Degraded);
    assert_eq!(without_history(lane.state()), expected);

    let lane = active_2();
    let failed = health_event(lane.state(), "e-h", "obs-h");
    assert_eq!(
        lane.clone().accept(&failed).audit_facts[1..],
        ["leader_health_failed:epoch:2"]
    );
    for (name, proposal) in [
        (
            "no observation id",
            failed.clone().with(|event| event.observation_id = None),
        ),
        (
            "evidence not supplied",
            failed.clone().without_evidence("obs-h"),
        ),
    ] {
        assert_eq!(lane.clone().refuse(&proposal), E::StateConflict, "{name}");
    }
}

#[test]
fn rotation_approval_then_completion_fences_the_old_epoch() {
    let mut lane = active_1();
    let mut expected = without_history(lane.state());
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    assert_eq!(
        lane.accept_facts(&rotate),
        ["leader_rotation_approved:user:bob:bob:epoch:2:fences:1"]
    );
    expected.revision += 1;
    expected.status = Open::Known(S::RotatingLeader);
    expected.pending = Some(Pending {
        binding: binding("bob", "sel-2", 2, "obs-1"),
        fenced_epoch: Some(1),
    });
    // alice stays the Leader at epoch 1 until the rotation completes.
    assert_eq!(without_history(lane.state()), expected);

    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    assert_eq!(
        complete.event.leader_epoch, 1,
        "the completion is sent at the old epoch"
    );
    assert_eq!(
        lane.accept_facts(&complete),
        ["epoch_fenced:1", "leader_activated:user:bob:epoch:2"]
    );
    expected.revision += 1;
    expected.status = Open::Known(S::Active);
    expected.active_epoch = 2;
    expected.highest_epoch = 2;
    expected.pending = None;
    expected.leader = Some(binding("bob", "sel-2", 2, "obs-1"));
    expected.fenced = vec![binding("alice", "sel-1", 1, "obs-1")];
    assert_eq!(without_history(lane.state()), expected);
}

#[test]
fn rotation_failure_blocks_and_keeps_the_old_binding() {
    let mut lane = rotating_1();
    let mut expected = without_history(lane.state());
    let failed = lane.failure(K::LeaderRotationFailed);
    assert_eq!(lane.accept_facts(&failed), Vec::<String>::new());
    expected.revision += 1;
    expected.status = Open::Known(S::Blocked);
    expected.pending = None;
    assert_eq!(without_history(lane.state()), expected);
    assert_eq!(
        lane.state().leader,
        Some(binding("alice", "sel-1", 1, "obs-1"))
    );
    assert_eq!(
        (lane.state().active_epoch, lane.state().highest_epoch),
        (1, 1)
    );
}

#[test]
fn rotation_from_degraded_replaces_the_leader() {
    let mut lane = degraded(active_1());
    let rotate = lane.rotate("carol", "sel-2", 2, 1);
    assert_eq!(
        lane.accept_facts(&rotate),
        ["leader_rotation_approved:user:carol:carol:epoch:2:fences:1"]
    );
    assert_eq!(lane.state().status, Open::Known(S::RotatingLeader));
    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    lane.accept(&complete);
    let state = lane.state();
    assert_eq!(state.status, Open::Known(S::Active));
    assert_eq!((state.active_epoch, state.highest_epoch), (2, 2));
    assert_eq!(state.leader, Some(binding("carol", "sel-2", 2, "obs-1")));
    assert_eq!(state.fenced, [binding("alice", "sel-1", 1, "obs-1")]);
}

#[test]
fn task_hand_over_records_from_and_to_epochs() {
    let mut lane = active_2();
    let mut expected = without_history(lane.state());
    let first = lane.handover("TASK-A", "TASK-A2", 1);
    assert_eq!(
        lane.accept_facts(&first),
        ["task_handed_over:TASK-A:TASK-A2:1:2"]
    );
    expected.revision += 1;
    expected.handoffs = vec![Handoff {
        task_id: task("TASK-A"),
        successor_task_id: task("TASK-A2"),
        from_epoch: 1,
        to_epoch: 2,
    }];
    assert_eq!(without_history(lane.state()), expected);

    // Rotate once more: both earlier epochs can hand over to epoch 3, in order.
    let rotate = lane.rotate("carol", "sel-3", 3, 2);
    lane.accept(&rotate);
    let complete = lane.activate(K::LeaderRotationCompleted, 3);
    lane.accept(&complete);
    for (from_task, successor, from) in [("TASK-B", "TASK-B2", 2), ("TASK-C", "TASK-C2", 1)] {
        let handover = lane.handover(from_task, successor, from);
        lane.accept(&handover);
    }
    let handoff = |from_task: &str, successor: &str, from_epoch, to_epoch| Handoff {
        task_id: task(from_task),
        successor_task_id: task(successor),
        from_epoch,
        to_epoch,
    };
    assert_eq!(
        lane.state().handoffs,
        [
            handoff("TASK-A", "TASK-A2", 1, 2),
            handoff("TASK-B", "TASK-B2", 2, 3),
            handoff("TASK-C", "TASK-C2", 1, 3),
        ]
    );
}

#[test]
fn task_hand_over_refusals() {
    let mut lane = active_2();
    let first = lane.handover("TASK-A", "TASK-A2", 1);
    lane.accept(&first);
    let good = handover_event(lane.state(), "e-h", "TASK-B", "TASK-B2", 1);
    let cases: Vec<(&str, Proposal, E)> = vec![
        (
            "from the active epoch",
            good.clone().with(|event| event.fenced_epoch = Some(2)),
            E::StateConflict,
        ),
        (
            "from a future epoch",
            good.clone().with(|event| event.fenced_epoch = Some(3)),
            E::StateConflict,
        ),
        (
            "from the bootstrap epoch (it never had a Leader, so never held tasks)",
            good.clone().with(|event| event.fenced_epoch = Some(0)),
            E::StateConflict,
        ),
        (
            "from a negative epoch",
            good.clone().with(|event| event.fenced_epoch = Some(-1)),
            E::StateConflict,
        ),
        (
            "without a from epoch",
            good.clone().with(|event| event.fenced_epoch = None),
            E::StateConflict,
        ),
        (
            "to itself",
            good.clone()
                .with(|event| event.successor_task_id = Some(task("TASK-B"))),
            E::StateConflict,
        ),
        (
            "without a task",
            good.clone().with(|event| event.task_id = None),
            E::StateConflict,
        ),
        (
            "without a successor",
            good.clone().with(|event| event.successor_task_id = None),
            E::StateConflict,
        ),
        (
            "a task handed over before",
            good.clone()
                .with(|event| event.task_id = Some(task("TASK-A"))),
            E::StateConflict,
        ),
        (
            "a successor that already continues a task",
            good.clone()
                .with(|event| event.successor_task_id = Some(task("TASK-A2"))),
            E::StateConflict,
        ),
        (
            "a task id of another identity kind",
            good.clone().with(|event| {
                event.task_id = Some(id(IdentityKind::WorkItem, "TASK-B"));
            }),
            E::StateConflict,
        ),
        (
            "without authority (and without a task: authority is checked first)",
            good.clone().with(|event| {
                event.authority_principal_id = None;
                event.task_id = None;
            }),
            E::PermissionDenied,
        ),
    ];
    for (name, proposal, code) in cases {
        assert_eq!(lane.clone().refuse(&proposal), code, "{name}");
    }
    lane.clone().accept(&good);
}

// ---------------------------------------------------------------------------------------------
// 3: epochs
// ---------------------------------------------------------------------------------------------

#[test]
fn epochs_are_allocated_in_sequence_and_never_reused() {
    let mut lane = active_1();
    for (candidate, selection, epoch) in [
        ("bob", "sel-2", 2),
        ("carol", "sel-3", 3),
        ("alice", "sel-4", 4),
    ] {
        let rotate = lane.rotate(candidate, selection, epoch, epoch - 1);
        lane.accept(&rotate);
        assert_eq!(
            (lane.state().active_epoch, lane.state().highest_epoch),
            (epoch - 1, epoch - 1),
            "nothing is allocated before the completion"
        );
        let complete = lane.activate(K::LeaderRotationCompleted, epoch);
        lane.accept(&complete);
        assert_eq!(
            (lane.state().active_epoch, lane.state().highest_epoch),
            (epoch, epoch)
        );
    }
    let state = lane.state();
    // alice leads again, but under a new selection and a new epoch.
    assert_eq!(state.leader, Some(binding("alice", "sel-4", 4, "obs-1")));
    assert_eq!(
        state.fenced,
        [
            binding("alice", "sel-1", 1, "obs-1"),
            binding("bob", "sel-2", 2, "obs-1"),
            binding("carol", "sel-3", 3, "obs-1"),
        ]
    );
    assert_shape(state);
    assert_round_trips(state);

    // Every fenced epoch (the bootstrap epoch included) and every future epoch is refused, for
    // every kind.
    for epoch in [0, 1, 2, 3, 5, 6, 1_000] {
        for &kind in K::ALL {
            let proposal = probe(lane.state(), kind).at_epoch(epoch);
            assert_eq!(
                lane.refuse(&proposal),
                E::LeaderEpoch,
                "{} at epoch {epoch} while 4 is active",
                kind.as_str()
            );
        }
    }
    // The next rotation can only allocate 5.
    for reused in [1, 3, 4, 6] {
        let rotate = lane.rotate("bob", "sel-5", reused, 4);
        assert_eq!(lane.refuse(&rotate), E::StateConflict, "new epoch {reused}");
    }
    let rotate = lane.rotate("bob", "sel-5", 5, 4);
    lane.accept(&rotate);
}

#[test]
fn epoch_zero_is_the_bootstrap_epoch_only() {
    // Before the first activation the active epoch is 0: epoch 1 is a future epoch.
    for lane in [
        Lane::new(),
        bootstrapping(),
        discovering(),
        awaiting(),
        activating(),
    ] {
        let mut lane = lane;
        assert_eq!(lane.state().active_epoch, 0);
        for &kind in K::ALL {
            let proposal = probe(lane.state(), kind).at_epoch(1);
            assert_eq!(
                lane.refuse(&proposal),
                E::LeaderEpoch,
                "{} at epoch 1 in {}",
                kind.as_str(),
                lane.state().status.as_str()
            );
        }
    }
    // Once epoch 1 is active, epoch 0 is fenced for every kind, in every later status.
    for lane in [
        active_1(),
        degraded(active_1()),
        rotating_1(),
        blocked_by(rotating_1(), K::LeaderRotationFailed),
    ] {
        let mut lane = lane;
        for &kind in K::ALL {
            let proposal = probe(lane.state(), kind).at_epoch(0);
            assert_eq!(
                lane.refuse(&proposal),
                E::LeaderEpoch,
                "{} at epoch 0 in {}",
                kind.as_str(),
                lane.state().status.as_str()
            );
        }
    }
}

#[test]
fn epoch_check_precedes_every_other_rule_but_validity() {
    let mut lane = rotating_1();
    // During a rotation, the pending epoch is not yet active: an event at epoch 2 is refused for
    // its epoch, not for the freeze.
    let early = probe(lane.state(), K::LeaderRotationCompleted).at_epoch(2);
    assert_eq!(lane.refuse(&early), E::LeaderEpoch);
    let frozen = probe(lane.state(), K::LeaderCandidatesObserved).at_epoch(2);
    assert_eq!(lane.refuse(&frozen), E::LeaderEpoch);
    // A stale epoch with a stale revision: the epoch is reported.
    let stale = probe(lane.state(), K::LeaderRotationCompleted)
        .at_epoch(0)
        .with(|event| event.expected_revision = 0);
    assert_eq!(lane.refuse(&stale), E::LeaderEpoch);
    // Validity (installation, identities, negative integers) comes first.
    let foreign = probe(lane.state(), K::LeaderRotationCompleted)
        .at_epoch(9)
        .with(|event| event.installation_id = id(IdentityKind::Installation, "inst-2"));
    assert_eq!(lane.refuse(&foreign), E::StateConflict);
    let negative = probe(lane.state(), K::LeaderRotationCompleted).at_epoch(-1);
    assert_eq!(lane.refuse(&negative), E::StateConflict);
}

#[test]
fn new_epoch_must_be_the_highest_plus_one() {
    let lane = awaiting();
    for new_epoch in [Some(0), Some(2), Some(-1), None] {
        let select = selection_event(lane.state(), "e-s", "alice", "sel-1", 1)
            .with(|event| event.new_epoch = new_epoch);
        assert_eq!(
            lane.clone().refuse(&select),
            E::StateConflict,
            "select {new_epoch:?}"
        );
    }

    let lane = activating();
    for new_epoch in [Some(0), Some(2), None] {
        let activate = activation_event(lane.state(), "e-a", K::LeaderActivated, 1)
            .with(|event| event.new_epoch = new_epoch);
        assert_eq!(
            lane.clone().refuse(&activate),
            E::StateConflict,
            "activate {new_epoch:?}"
        );
    }

    let lane = active_2();
    for new_epoch in [Some(1), Some(2), Some(4), None] {
        let rotate = rotation_event(lane.state(), "e-r", "carol", "sel-3", 3, 2)
            .with(|event| event.new_epoch = new_epoch);
        assert_eq!(
            lane.clone().refuse(&rotate),
            E::StateConflict,
            "rotate {new_epoch:?}"
        );
    }
    // The epoch a rotation fences must be the active one.
    for fenced in [Some(0), Some(1), Some(3), None] {
        let rotate = rotation_event(lane.state(), "e-r", "carol", "sel-3", 3, 2)
            .with(|event| event.fenced_epoch = fenced);
        assert_eq!(
            lane.clone().refuse(&rotate),
            E::StateConflict,
            "fencing {fenced:?}"
        );
    }
    let lane = degraded(active_2());
    let rotate = rotation_event(lane.state(), "e-r", "carol", "sel-3", 3, 2)
        .with(|event| event.fenced_epoch = None);
    assert_eq!(
        lane.clone().refuse(&rotate),
        E::StateConflict,
        "degraded, fencing none"
    );

    let lane = rotating_2();
    for new_epoch in [Some(2), Some(4), None] {
        let complete = activation_event(lane.state(), "e-c", K::LeaderRotationCompleted, 3)
            .with(|event| event.new_epoch = new_epoch);
        assert_eq!(
            lane.clone().refuse(&complete),
            E::StateConflict,
            "complete {new_epoch:?}"
        );
    }
    lane.clone().accept(&activation_event(
        lane.state(),
        "e-c",
        K::LeaderRotationCompleted,
        3,
    ));
}

// ---------------------------------------------------------------------------------------------
// 3: permission
// ---------------------------------------------------------------------------------------------

#[test]
fn only_a_candidate_of_the_latest_observation_can_be_selected() {
    let mut lane = awaiting();
    let mallory = lane.select("mallory", "sel-1", 1);
    assert_eq!(lane.refuse(&mallory), E::PermissionDenied);
    // A candidate id is matched exactly.
    let alice_upper = lane.select("Alice", "sel-1", 1);
    assert_eq!(lane.refuse(&alice_upper), E::PermissionDenied);
    // A newer observation without alice: alice is no longer selectable.
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["dave"]);
    lane.accept(&observed);
    let alice = lane.select("alice", "sel-1", 1);
    assert_eq!(lane.refuse(&alice), E::PermissionDenied);
    let dave = lane.select("dave", "sel-1", 1);
    lane.accept(&dave);
    assert_eq!(
        lane.state().pending.as_ref().unwrap().binding,
        binding("dave", "sel-1", 1, "obs-2"),
        "the binding names the observation the candidate was selected from"
    );

    // The same for a rotation.
    let mut lane = active_1();
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["alice", "dave"]);
    lane.accept(&observed);
    let bob = lane.rotate("bob", "sel-2", 2, 1);
    assert_eq!(lane.refuse(&bob), E::PermissionDenied);
    let dave = lane.rotate("dave", "sel-2", 2, 1);
    lane.accept(&dave);
    assert_eq!(
        lane.state().pending,
        Some(Pending {
            binding: binding("dave", "sel-2", 2, "obs-2"),
            fenced_epoch: Some(1),
        })
    );
}

#[test]
fn selection_slots_are_required() {
    let lane = awaiting();
    let good = selection_event(lane.state(), "e-s", "alice", "sel-1", 1);
    for (name, proposal) in [
        (
            "no candidate",
            good.clone().with(|event| event.candidate_id = None),
        ),
        (
            "no selection id",
            good.clone().with(|event| event.selection_id = None),
        ),
        (
            "an empty selection id",
            good.clone()
                .with(|event| event.selection_id = Some(String::new())),
        ),
    ] {
        assert_eq!(lane.clone().refuse(&proposal), E::StateConflict, "{name}");
    }
    lane.clone().accept(&good);
}

/// The authority variants of an authority-bound proposal, with the code each must get.
fn without_authority(good: &Proposal) -> Vec<(&'static str, Proposal, E)> {
    let approval = good.event.authority_evidence_id.clone().unwrap();
    vec![
        (
            "no approving principal",
            good.clone()
                .with(|event| event.authority_principal_id = None),
            E::PermissionDenied,
        ),
        (
            "no approval evidence id",
            good.clone()
                .with(|event| event.authority_evidence_id = None),
            E::PermissionDenied,
        ),
        (
            "approval evidence not in the EvidenceSet",
            good.clone().without_evidence(approval.value()),
            E::PermissionDenied,
        ),
        (
            "an approval id naming evidence that is not the supplied approval",
            good.clone().with(|event| {
                event.authority_evidence_id = Some(id(IdentityKind::Evidence, "unsupplied"));
            }),
            E::PermissionDenied,
        ),
        (
            "neither",
            good.clone().with(|event| {
                event.authority_principal_id = None;
                event.authority_evidence_id = None;
            }),
            E::PermissionDenied,
        ),
        (
            "an approving identity that is not a principal",
            good.clone().with(|event| {
                event.authority_principal_id = Some(id(IdentityKind::Task, OPERATOR));
            }),
            E::StateConflict,
        ),
        (
            "an approval id that is not evidence",
            good.clone().with(|event| {
                event.authority_evidence_id = Some(id(IdentityKind::Principal, approval.value()));
            }),
            E::StateConflict,
        ),
    ]
}

#[test]
fn selection_rotation_and_hand_over_require_the_approval() {
    let awaiting = awaiting();
    let active = active_1();
    let degraded = degraded(active_1());
    let active_2 = active_2();
    let cases = [
        (
            "selection",
            &awaiting,
            selection_event(awaiting.state(), "e-x", "alice", "sel-1", 1),
        ),
        (
            "rotation",
            &active,
            rotation_event(active.state(), "e-x", "bob", "sel-2", 2, 1),
        ),
        (
            "rotation from degraded",
            &degraded,
            rotation_event(degraded.state(), "e-x", "bob", "sel-2", 2, 1),
        ),
        (
            "hand-over",
            &active_2,
            handover_event(active_2.state(), "e-x", "TASK-A", "TASK-A2", 1),
        ),
    ];
    for (kind, lane, good) in cases {
        for (name, proposal, code) in without_authority(&good) {
            assert_eq!(lane.clone().refuse(&proposal), code, "{kind}: {name}");
        }
        lane.clone().accept(&good);
    }
    // Without authority even an unobserved candidate is refused for the authority.
    let unobserved = selection_event(awaiting.state(), "e-x", "mallory", "sel-1", 1)
        .with(|event| event.authority_principal_id = None);
    assert_eq!(awaiting.clone().refuse(&unobserved), E::PermissionDenied);
}

#[test]
fn rotating_to_the_bound_session_is_denied() {
    let lane = active_1();
    let same = rotation_event(lane.state(), "e-r", "alice", "sel-2", 2, 1);
    assert_eq!(
        lane.clone().refuse(&same),
        E::PermissionDenied,
        "the bound candidate"
    );

    let lane = degraded(active_1());
    let same = rotation_event(lane.state(), "e-r", "alice", "sel-2", 2, 1);
    assert_eq!(
        lane.clone().refuse(&same),
        E::PermissionDenied,
        "while degraded"
    );

    // Another candidate id and principal that is the same session.
    let mut lane = active_1();
    let mut twin = candidate("alice-twin");
    twin.session_fingerprint = fingerprint("alice");
    let mut observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["bob"]);
    observed.event.candidates.as_mut().unwrap().push(twin);
    lane.accept(&observed);
    let rotate = lane.rotate("alice-twin", "sel-2", 2, 1);
    assert_eq!(
        lane.refuse(&rotate),
        E::PermissionDenied,
        "the bound session, renamed"
    );
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    lane.accept(&rotate);
}

// ---------------------------------------------------------------------------------------------
// 3: the rotation freeze
// ---------------------------------------------------------------------------------------------

#[test]
fn rotation_freezes_everything_but_its_close() {
    for lane in [rotating_1(), rotating_2()] {
        let state = lane.state().clone();
        for &kind in K::ALL {
            if matches!(kind, K::LeaderRotationCompleted | K::LeaderRotationFailed) {
                continue;
            }
            let proposal = probe(&state, kind);
            assert_eq!(
                lane.clone().refuse(&proposal),
                E::LeaderRotating,
                "{}",
                kind.as_str()
            );
            // Frozen even when the event's own slots are wrong.
            let mut malformed = proposal.clone();
            malformed.evidence.clear();
            malformed.event.new_epoch = Some(99);
            malformed.event.authority_principal_id = None;
            assert_eq!(
                lane.clone().refuse(&malformed),
                E::LeaderRotating,
                "malformed {}",
                kind.as_str()
            );
            // ...but a stale revision is reported as such.
            let behind = proposal.with(|event| event.expected_revision -= 1);
            assert_eq!(
                lane.clone().refuse(&behind),
                E::StateConflict,
                "stale {}",
                kind.as_str()
            );
        }
    }
    // The rotation approval itself, proposed again, is a no-op, not a freeze.
    let mut lane = active_1();
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    let record = lane.accept(&rotate);
    assert!(matches!(
        lane.propose(&rotate),
        Verdict::NoOp { prior_result_id, prior_result_digest, .. }
            if prior_result_id == record.result_id && prior_result_digest == record.result_digest
    ));
    // A second, different rotation approval is frozen.
    let other = lane.rotate("carol", "sel-3", 2, 1);
    assert_eq!(lane.refuse(&other), E::LeaderRotating);
    // A stale completion is a state conflict, the right one is accepted.
    let stale = lane
        .activate(K::LeaderRotationCompleted, 2)
        .with(|event| event.expected_revision -= 1);
    assert_eq!(lane.refuse(&stale), E::StateConflict);
    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    lane.accept(&complete);
    // Once active again, nothing is frozen.
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["alice", "bob"]);
    lane.accept(&observed);
}

// ---------------------------------------------------------------------------------------------
// 4: idempotency and the expected revision
// ---------------------------------------------------------------------------------------------

#[test]
fn proposing_an_accepted_event_again_is_a_no_op() {
    let mut lane = awaiting();
    // Every accepted bootstrap event, proposed again with its original (now stale) revision.
    let entries = lane.entries.clone();
    for (index, entry) in entries.iter().enumerate() {
        let again = Proposal {
            event: entry.event.clone(),
            evidence: entry.evidence_set.clone(),
        };
        assert_eq!(again.event.expected_revision, Int::try_from(index).unwrap());
        match lane.propose(&again) {
            Verdict::NoOp {
                input_digest,
                prior_result_id,
                prior_result_digest,
            } => {
                assert_eq!(input_digest, entry.result.input_digest, "entry {index}");
                assert_eq!(prior_result_id, entry.result.result_id, "entry {index}");
                assert_eq!(
                    prior_result_digest, entry.result.result_digest,
                    "entry {index}"
                );
            }
            other => panic!("entry {index}: {other:?}"),
        }
    }
    // The EvidenceSet's order is not part of the content.
    let mut observed = lane.observe(K::LeaderCandidatesObserved, "obs-2", &["bob"]);
    observed.evidence.push(evidence("extra"));
    lane.accept(&observed);
    let mut reversed = observed.clone();
    reversed.evidence.reverse();
    assert!(matches!(lane.propose(&reversed), Verdict::NoOp { .. }));

    // Also at epoch 1 (reopen), and in the pure reducer.
    let mut active = active_1();
    let reopen = active.reopen(&fingerprint("alice"), "obs-r");
    active.accept(&reopen);
    assert!(matches!(active.propose(&reopen), Verdict::NoOp { .. }));
    let state = active.state().clone();
    match reduce_installation(&state, &reopen.event, &reopen.evidence) {
        Outcome::NoOp(no_op) => assert_eq!(no_op.state, state),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_same_event_id_with_other_content_is_an_idempotency_conflict() {
    let mut lane = active_1();
    let reopen = lane.reopen(&fingerprint("alice"), "obs-r");
    let record = lane.accept(&reopen);
    let prior = Some((record.result_id.clone(), record.result_digest.clone()));
    let mut other_content = evidence("obs-r");
    other_content.content_digest = sha256(b"other bytes");
    let variants: Vec<(&str, Proposal)> = vec![
        (
            "another observed_at",
            reopen
                .clone()
                .with(|event| event.observed_at = Some("2026-12-09T00:00:00Z".to_owned())),
        ),
        (
            "the current expected revision (a retry must use a new id)",
            reopen.clone().with(|event| event.expected_revision += 1),
        ),
        (
            "a reason added",
            reopen
                .clone()
                .with(|event| event.reason = Some("again".to_owned())),
        ),
        (
            "other evidence content",
            Proposal {
                event: reopen.event.clone(),
                evidence: vec![other_content],
            },
        ),
        (
            "an extra evidence item",
            Proposal {
                event: reopen.event.clone(),
                evidence: vec![evidence("obs-r"), evidence("extra")],
            },
        ),
        (
            "another kind",
            reopen
                .clone()
                .with(|event| event.kind = Open::Known(K::LeaderHealthFailed)),
        ),
    ];
    for (name, proposal) in variants {
        match lane.propose(&proposal) {
            Verdict::Rejected {
                error_code,
                prior: named,
                ..
            } => {
                assert_eq!(error_code, E::IdempotencyConflict, "{name}");
                assert_eq!(named, prior, "{name}: names the earlier acceptance");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // The pure reducer names the prior acceptance too.
    let changed = reopen.with(|event| event.reason = Some("again".to_owned()));
    match reduce_installation(lane.state(), &changed.event, &changed.evidence) {
        Outcome::Rejected(rejected) => {
            assert_eq!(rejected.error_code, E::IdempotencyConflict);
            assert_eq!(rejected.prior_result_id, Some(record.result_id));
            assert_eq!(rejected.prior_result_digest, Some(record.result_digest));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_event_from_a_fenced_epoch_is_refused_before_idempotency() {
    let mut lane = active_2();
    // Every accepted event so far was sent at epoch 0 or 1; both are fenced now.
    let entries = lane.entries.clone();
    for (index, entry) in entries.iter().enumerate() {
        let again = Proposal {
            event: entry.event.clone(),
            evidence: entry.evidence_set.clone(),
        };
        assert_eq!(lane.refuse(&again), E::LeaderEpoch, "entry {index}");
    }
}

#[test]
fn a_stale_or_future_expected_revision_is_a_state_conflict() {
    for lane in [
        Lane::new(),
        awaiting(),
        activating(),
        active_1(),
        degraded(active_2()),
        blocked_by(awaiting(), K::BootstrapFailed),
    ] {
        let revision = lane.state().revision;
        let status = lane.state().status.as_str().to_owned();
        for &kind in K::ALL {
            for expected_revision in [revision - 1, revision + 1, 0, revision + 100] {
                if expected_revision == revision || expected_revision < 0 {
                    continue;
                }
                let proposal = probe(lane.state(), kind)
                    .with(|event| event.expected_revision = expected_revision);
                assert_eq!(
                    lane.clone().refuse(&proposal),
                    E::StateConflict,
                    "{} with revision {expected_revision} at {revision} in {status}",
                    kind.as_str()
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Structural guards
// ---------------------------------------------------------------------------------------------

#[test]
#[allow(clippy::too_many_lines)] // one table of cases
fn malformed_inputs_are_state_conflicts() {
    let active = active_1();
    let awaiting_lane = awaiting();
    let observe = probe(active.state(), K::LeaderCandidatesObserved);
    let mut bad_candidates = Vec::new();
    for edit in [
        (|c: &mut Candidate| c.candidate_id = String::new()) as fn(&mut Candidate),
        |c| c.session_fingerprint = "sha256:abc".to_owned(),
        |c| c.session_fingerprint = fingerprint("x").replace("sha256:", "sha512:"),
        |c| c.principal_id = id(IdentityKind::Task, "user:alice"),
    ] {
        let mut candidate = candidate("zed");
        edit(&mut candidate);
        bad_candidates.push(candidate);
    }
    let mut cases: Vec<(String, &Lane, Proposal)> = vec![
        (
            "another installation".to_owned(),
            &active,
            observe
                .clone()
                .with(|event| event.installation_id = id(IdentityKind::Installation, "inst-2")),
        ),
        (
            "an event id of another kind".to_owned(),
            &active,
            observe
                .clone()
                .with(|event| event.event_id = id(IdentityKind::Task, "probe")),
        ),
        (
            "a negative expected revision".to_owned(),
            &active,
            observe.clone().with(|event| event.expected_revision = -1),
        ),
        (
            "a negative new epoch".to_owned(),
            &active,
            observe.clone().with(|event| event.new_epoch = Some(-1)),
        ),
        (
            "a negative fenced epoch".to_owned(),
            &active,
            observe.clone().with(|event| event.fenced_epoch = Some(-2)),
        ),
        (
            "an observation id that is not evidence".to_owned(),
            &active,
            observe.clone().with(|event| {
                event.observation_id = Some(id(IdentityKind::Principal, "obs-probe"));
            }),
        ),
        (
            "no candidate list".to_owned(),
            &active,
            observe.clone().with(|event| event.candidates = None),
        ),
        (
            "duplicate candidate ids".to_owned(),
            &active,
            observe.clone().with(|event| {
                event.candidates = Some(vec![candidate("bob"), candidate("bob")]);
            }),
        ),
        (
            "observation evidence not supplied".to_owned(),
            &active,
            observe.clone().without_evidence("obs-probe"),
        ),
        (
            "no observation id".to_owned(),
            &active,
            observe.clone().with(|event| event.observation_id = None),
        ),
        (
            "duplicate evidence ids".to_owned(),
            &active,
            Proposal {
                event: observe.event.clone(),
                evidence: vec![evidence("obs-probe"), evidence("obs-probe")],
            },
        ),
        (
            "evidence with a malformed digest".to_owned(),
            &active,
            Proposal {
                event: observe.event.clone(),
                evidence: vec![Evidence {
                    evidence_id: id(IdentityKind::Evidence, "obs-probe"),
                    content_digest: "sha256:XYZ".to_owned(),
                }],
            },
        ),
        (
            "a discovery result without candidates".to_owned(),
            &awaiting_lane,
            probe(awaiting_lane.state(), K::LeaderCandidatesObserved)
                .with(|event| event.candidates = None),
        ),
    ];
    for (index, bad) in bad_candidates.into_iter().enumerate() {
        cases.push((
            format!("invalid candidate {index}"),
            &active,
            observe.clone().with(|event| {
                event.candidates = Some(vec![candidate("bob"), bad]);
            }),
        ));
    }
    for (name, lane, proposal) in cases {
        assert_eq!(lane.clone().refuse(&proposal), E::StateConflict, "{name}");
    }
    active.clone().accept(&observe);
}

#[test]
fn a_state_that_is_not_well_formed_is_refused() {
    let lane = active_2();
    let state = lane.state().clone();
    let proposal = probe(&state, K::LeaderCandidatesObserved);
    let mut cases: Vec<(&str, InstallationState)> = Vec::new();
    let mut broken = state.clone();
    broken.revision += 1;
    cases.push(("revision != history length", broken));
    let mut broken = state.clone();
    broken.protocol_version = "0.2.0".to_owned();
    cases.push(("another protocol version", broken));
    let mut broken = state.clone();
    broken.active_epoch = 3;
    cases.push(("active epoch above the highest", broken));
    let mut broken = state.clone();
    broken.leader.as_mut().unwrap().epoch = 1;
    cases.push(("a Leader at an epoch that is not the active one", broken));
    let mut broken = state.clone();
    broken.fenced[0].epoch = 2;
    cases.push(("a fenced epoch that is not below the active one", broken));
    let mut broken = state.clone();
    broken.accepted_events[1].event_id = broken.accepted_events[0].event_id.clone();
    cases.push(("a repeated event id in the history", broken));
    for (name, broken) in cases {
        let outcome = reduce_installation(&broken, &proposal.event, &proposal.evidence);
        assert_eq!(outcome.error_code(), Some(E::StateConflict), "{name}");
        assert_eq!(outcome.state(), &broken, "{name}");
    }
    assert!(
        reduce_installation(&state, &proposal.event, &proposal.evidence)
            .accepted()
            .is_some()
    );
}

// ---------------------------------------------------------------------------------------------
// 5: canonical bytes, digests and replay
// ---------------------------------------------------------------------------------------------

const GENESIS_STATE: &str = concat!(
    r#"{"accepted_events":[],"active_epoch":0,"highest_epoch":0,"#,
    r#""installation_id":{"kind":"installation","value":"inst-1"},"protocol_version":"0.3.0","#,
    r#""revision":0,"schema_version":"valp-kernel-installation-state.v1","status":"uninitialized"}"#,
);

#[test]
fn genesis_has_the_documented_canonical_form() {
    let genesis = InstallationState::genesis(installation());
    assert_eq!(genesis, uninitialized_state());
    assert_eq!(
        String::from_utf8(genesis.canonical_bytes()).unwrap(),
        format!("{GENESIS_STATE}\n")
    );
    let root = InstallationGenesis { state: genesis };
    let bytes = root.canonical_bytes();
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        format!(
            "{{\"schema_version\":\"valp-kernel-installation-genesis.v1\",\"state\":{GENESIS_STATE}}}\n"
        )
    );
    let decoded = decode_installation_genesis(&decode_canonical(&bytes).unwrap()).unwrap();
    assert_eq!(decoded, root);

    // Only the uninitialized, empty State is a genesis.
    let not_genesis = [
        bootstrapping().state().clone(),
        InstallationState {
            status: Open::Known(S::Blocked),
            ..uninitialized_state()
        },
        InstallationState {
            highest_epoch: 1,
            ..uninitialized_state()
        },
    ];
    for state in not_genesis {
        assert!(matches!(
            InstallationLive::from_genesis(&InstallationGenesis { state }),
            Err(ReplayError::GenesisInvalid)
        ));
    }
}

/// A bare bootstrap event (epoch 0, no slots), written out by hand.
fn bare_event_json(event: &str, revision: Int, kind: &str) -> String {
    format!(
        concat!(
            r#"{{"event_id":{{"kind":"event","value":"{event}"}},"expected_revision":{revision},"#,
            r#""installation_id":{{"kind":"installation","value":"inst-1"}},"#,
            r#""kind":"{kind}","leader_epoch":0,"#,
            r#""schema_version":"valp-kernel-installation-event.v1"}}"#,
        ),
        event = event,
        revision = revision,
        kind = kind,
    )
}

/// A bootstrap State with no observation, written out by hand.
fn bare_state_json(history: &str, revision: Int, status: &str) -> String {
    format!(
        concat!(
            r#"{{"accepted_events":[{history}],"active_epoch":0,"highest_epoch":0,"#,
            r#""installation_id":{{"kind":"installation","value":"inst-1"}},"#,
            r#""protocol_version":"0.3.0","revision":{revision},"#,
            r#""schema_version":"valp-kernel-installation-state.v1","status":"{status}"}}"#,
        ),
        history = history,
        revision = revision,
        status = status,
    )
}

#[test]
fn first_result_digests_match_a_hand_computation() {
    let mut lane = Lane::new();
    let mut history: Vec<String> = Vec::new();
    let mut prior_state = format!("{GENESIS_STATE}\n");
    assert_eq!(bare_state_json("", 0, "uninitialized"), GENESIS_STATE);
    for (revision, (kind, status)) in [
        (K::InstallationInitialized, "bootstrapping"),
        (
            K::BootstrapDiscoveryStarted,
            "discovering_leader_candidates",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let revision = Int::try_from(revision).unwrap();
        let proposal = lane.bare(kind);
        let record = lane.accept(&proposal);
        let name = proposal.event.event_id.value().to_owned();

        let event = bare_event_json(&name, revision, kind.as_str());
        assert_eq!(
            String::from_utf8(proposal.event.canonical_bytes()).unwrap(),
            format!("{event}\n")
        );
        let input_preimage =
            format!("{{\"event\":{event},\"evidence_set\":[],\"protocol_version\":\"0.3.0\"}}\n");
        let input_digest = sha256(input_preimage.as_bytes());
        assert_eq!(record.input_digest, input_digest, "{name}");

        // The result binds the next State without any history (not even the prior one).
        let result_preimage = format!(
            concat!(
                r#"{{"audit_facts":["accepted:event:{name}"],"#,
                r#""event_id":{{"kind":"event","value":"{name}"}},"#,
                r#""input_digest":"{input}","obligations":[],"prior_state_digest":"{prior}","#,
                r#""result_id":{{"kind":"result","value":"{name}:accepted"}},"state":{state},"#,
                r#""variant":"accepted"}}"#,
                "\n"
            ),
            name = name,
            input = input_digest,
            prior = sha256(prior_state.as_bytes()),
            state = bare_state_json("", revision + 1, status),
        );
        let result_digest = sha256(result_preimage.as_bytes());
        assert_eq!(record.result_digest, result_digest, "{name}");

        history.push(format!(
            concat!(
                r#"{{"event_id":{{"kind":"event","value":"{name}"}},"#,
                r#""input_digest":"{input}","result_digest":"{result}","#,
                r#""result_id":{{"kind":"result","value":"{name}:accepted"}}}}"#,
            ),
            name = name,
            input = input_digest,
            result = result_digest,
        ));
        let next = format!(
            "{}\n",
            bare_state_json(&history.join(","), revision + 1, status)
        );
        assert_eq!(
            String::from_utf8(lane.state().canonical_bytes()).unwrap(),
            next,
            "{name}"
        );
        assert_eq!(lane.state().digest(), sha256(next.as_bytes()), "{name}");
        prior_state = next;
    }
}

#[test]
fn bindings_have_the_documented_canonical_form() {
    let evidence_json = |name: &str| {
        format!(
            r#"{{"content_digest":"{}","evidence_id":{{"kind":"evidence","value":"{name}"}},"schema_version":"valp-kernel-evidence.v1"}}"#,
            sha256(format!("bytes of {name}").as_bytes())
        )
    };
    let members = |name: &str, kind: &str, selection: &str, epoch: Int, fenced: &str| {
        format!(
            concat!(
                r#""approval":{approval},"approved_by":{{"kind":"principal","value":"user:operator"}},"#,
                r#""candidate":{{"candidate_id":"{name}","principal_id":{{"kind":"principal","value":"user:{name}"}},"#,
                r#""principal_kind":"{kind}","session_fingerprint":"{fp}"}},"epoch":{epoch},{fenced}"#,
                r#""observation":{observation},"selection_id":"{selection}""#,
            ),
            approval = evidence_json(&format!("approval-{selection}")),
            name = name,
            kind = kind,
            fp = fingerprint(name),
            epoch = epoch,
            fenced = fenced,
            observation = evidence_json("obs-1"),
            selection = selection,
        )
    };
    let lane = rotating_1();
    let text = String::from_utf8(lane.state().canonical_bytes()).unwrap();
    let leader = format!(
        r#""leader":{{{}}}"#,
        members("alice", "human", "sel-1", 1, "")
    );
    let pending = format!(
        r#""pending":{{{}}}"#,
        members("bob", "tmux_pane", "sel-2", 2, r#""fenced_epoch":1,"#)
    );
    assert!(text.contains(&leader), "{text}\nlacks\n{leader}");
    assert!(text.contains(&pending), "{text}\nlacks\n{pending}");

    let lane = active_2();
    let text = String::from_utf8(lane.state().canonical_bytes()).unwrap();
    let fenced = format!(
        r#""fenced":[{{{}}}]"#,
        members("alice", "human", "sel-1", 1, "")
    );
    assert!(text.contains(&fenced), "{text}\nlacks\n{fenced}");
    assert!(text.contains(r#""active_epoch":2,"fenced":["#));
    assert!(!text.contains(r#""pending""#));
}

/// A lane through every kind but the two failures that end a bootstrap, with refusals and no-ops
/// in between (which must leave no entry), ending blocked by a failed emergency rotation.
fn journey() -> Lane {
    let mut lane = awaiting();
    let observed = lane.observe(
        K::LeaderCandidatesObserved,
        "obs-2",
        &["alice", "bob", "carol"],
    );
    lane.accept(&observed);
    let mallory = lane.select("mallory", "sel-1", 1);
    lane.refuse(&mallory);
    let select = lane.select("alice", "sel-1", 1);
    lane.accept(&select);
    lane.propose(&select);
    let activate = lane.activate(K::LeaderActivated, 1);
    lane.accept(&activate);
    let reopen = lane.reopen(&fingerprint("alice"), "obs-r");
    lane.accept(&reopen);
    let observed = lane.observe(
        K::LeaderCandidatesObserved,
        "obs-3",
        &["alice", "bob", "carol"],
    );
    lane.accept(&observed);
    let rotate = lane.rotate("bob", "sel-2", 2, 1);
    lane.accept(&rotate);
    let frozen = lane.health_failure("obs-h0");
    lane.refuse(&frozen);
    let complete = lane.activate(K::LeaderRotationCompleted, 2);
    lane.accept(&complete);
    let handover = lane.handover("TASK-A", "TASK-A2", 1);
    lane.accept(&handover);
    let failed = lane.health_failure("obs-h1");
    lane.accept(&failed);
    let observed = lane.observe(K::LeaderCandidatesObserved, "obs-4", &["carol"]);
    lane.accept(&observed);
    let rotate = lane.rotate("carol", "sel-3", 3, 2);
    lane.accept(&rotate);
    let failed = lane.failure(K::LeaderRotationFailed);
    lane.accept(&failed);
    lane
}

fn replay_lanes() -> Vec<(&'static str, Lane)> {
    vec![
        ("journey", journey()),
        (
            "bootstrap failed",
            blocked_by(awaiting(), K::BootstrapFailed),
        ),
        (
            "activation failed",
            blocked_by(activating(), K::LeaderActivationFailed),
        ),
        ("rotated twice", {
            let mut lane = rotating_2();
            let complete = lane.activate(K::LeaderRotationCompleted, 3);
            lane.accept(&complete);
            lane
        }),
    ]
}

#[test]
fn every_reached_state_event_and_entry_round_trips_byte_for_byte() {
    for (name, lane) in replay_lanes() {
        assert!(!lane.entries.is_empty(), "{name}");
        for (index, (entry, state)) in lane.entries.iter().zip(&lane.states).enumerate() {
            assert_shape(state);
            assert_round_trips(state);

            let bytes = entry.event.canonical_bytes();
            let decoded = decode_installation_event(&decode_canonical(&bytes).unwrap()).unwrap();
            assert_eq!(decoded, entry.event, "{name} event {index}");

            let bytes = entry.canonical_bytes();
            let decoded = decode_installation_entry(&decode_canonical(&bytes).unwrap()).unwrap();
            assert_eq!(&decoded, entry, "{name} entry {index}");
            assert_eq!(decoded.canonical_bytes(), bytes, "{name} entry {index}");
        }
    }
    let journey = journey();
    let kinds: BTreeSet<K> = journey
        .entries
        .iter()
        .map(|entry| entry.event.kind.known().unwrap())
        .collect();
    assert_eq!(
        kinds.len(),
        12,
        "the journey uses every kind but the two bootstrap failures"
    );
    assert_eq!(
        journey.states.last().unwrap().status,
        Open::Known(S::Blocked)
    );
}

#[test]
fn replaying_the_entries_reproduces_every_state() {
    for (name, lane) in replay_lanes() {
        let genesis_bytes = lane.genesis.canonical_bytes();
        let genesis =
            decode_installation_genesis(&decode_canonical(&genesis_bytes).unwrap()).unwrap();
        let mut replayed = InstallationLive::from_genesis(&genesis).unwrap();
        for (index, (entry, state)) in lane.entries.iter().zip(&lane.states).enumerate() {
            let stored =
                decode_installation_entry(&decode_canonical(&entry.canonical_bytes()).unwrap())
                    .unwrap();
            let record = replayed.apply_recorded(&stored).unwrap();
            assert_eq!(record, entry.result, "{name} entry {index}");
            assert_eq!(replayed.state(), state, "{name} entry {index}");
            assert_eq!(
                replayed.state().digest(),
                state.digest(),
                "{name} entry {index}"
            );
            assert_eq!(replayed.revision(), Int::try_from(index + 1).unwrap());
        }
        assert_eq!(replayed.state(), lane.state(), "{name}");
    }
}

#[test]
fn replay_fails_closed_on_a_changed_entry() {
    let lane = journey();
    let replay = |entries: &[InstallationEntry]| {
        let mut live = InstallationLive::from_genesis(&lane.genesis).unwrap();
        for entry in entries {
            live.apply_recorded(entry)?;
        }
        Ok::<_, ReplayError>(live.state().clone())
    };
    assert_eq!(replay(&lane.entries).unwrap(), *lane.state());

    // A forged result digest.
    let mut entries = lane.entries.clone();
    entries[5].result.result_digest = sha256(b"forged");
    assert_eq!(
        replay(&entries).unwrap_err(),
        ReplayError::Mismatch {
            index: 5,
            field: MismatchField::ResultDigest
        }
    );
    // A forged audit fact is named as such, and the State does not advance past a mismatch.
    let mut entries = lane.entries.clone();
    entries[4].result.audit_facts[1] = "leader_selected:user:mallory:mallory:epoch:1".to_owned();
    assert_eq!(
        replay(&entries).unwrap_err(),
        ReplayError::Mismatch {
            index: 4,
            field: MismatchField::AuditFacts
        }
    );
    let mut live = InstallationLive::from_genesis(&lane.genesis).unwrap();
    for entry in &entries[..4] {
        live.apply_recorded(entry).unwrap();
    }
    let before = live.state().clone();
    assert!(live.apply_recorded(&entries[4]).is_err());
    assert_eq!(
        live.state(),
        &before,
        "a refused entry leaves the State as it was"
    );
    assert_eq!(live.revision(), 4);
    // The selection's approval removed from its EvidenceSet.
    let mut entries = lane.entries.clone();
    assert_eq!(
        entries[4].event.kind,
        Open::Known(K::LeaderSelectionApproved)
    );
    entries[4].evidence_set.clear();
    assert_eq!(
        replay(&entries).unwrap_err(),
        ReplayError::NotReproduced {
            index: 4,
            verdict: "VALP-E-PERMISSION-DENIED".to_owned()
        }
    );
    // An entry recorded twice.
    let mut entries = lane.entries.clone();
    entries.insert(3, entries[2].clone());
    assert_eq!(
        replay(&entries).unwrap_err(),
        ReplayError::NotReproduced {
            index: 3,
            verdict: "no_op".to_owned()
        }
    );
    // Two entries swapped.
    let mut entries = lane.entries.clone();
    entries.swap(1, 2);
    assert_eq!(
        replay(&entries).unwrap_err(),
        ReplayError::NotReproduced {
            index: 1,
            verdict: "VALP-E-STATE-CONFLICT".to_owned()
        }
    );
    // A selection rewritten to another (observed) candidate.
    let mut entries = lane.entries.clone();
    entries[4].event.candidate_id = Some("bob".to_owned());
    assert!(matches!(
        replay(&entries).unwrap_err(),
        ReplayError::Mismatch { index: 4, .. }
    ));
}
