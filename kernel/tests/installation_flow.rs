//! The authority lane from first run to rotation, through the pure reducer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::installation::{
    Candidate, InstallationEvent, InstallationGenesis, InstallationLive, InstallationState,
    reduce_installation,
};
use valp_kernel::live::Verdict;
use valp_kernel::{
    ErrorCode, Evidence, Identity, IdentityKind, InstallationEventKind as K, InstallationStatus,
    Outcome, PrincipalKind,
};

fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

fn evidence(value: &str) -> Evidence {
    Evidence {
        evidence_id: id(IdentityKind::Evidence, value),
        content_digest: sha256_digest(value.as_bytes()),
    }
}

fn candidate(name: &str, fingerprint: &str) -> Candidate {
    Candidate {
        candidate_id: name.to_owned(),
        principal_id: id(IdentityKind::Principal, &format!("user:{name}")),
        principal_kind: PrincipalKind::Human,
        session_fingerprint: sha256_digest(fingerprint.as_bytes()),
    }
}

struct Lane {
    live: InstallationLive,
    counter: u32,
}

impl Lane {
    fn new() -> Self {
        let genesis = InstallationGenesis {
            state: InstallationState::genesis(id(IdentityKind::Installation, "inst-1")),
        };
        Self {
            live: InstallationLive::from_genesis(&genesis).unwrap(),
            counter: 0,
        }
    }

    fn event(&mut self, kind: K) -> InstallationEvent {
        self.counter += 1;
        let state = self.live.state();
        InstallationEvent::new(
            id(IdentityKind::Event, &format!("e{}", self.counter)),
            state.installation_id.clone(),
            state.active_epoch,
            kind,
            state.revision,
        )
    }

    fn apply(&mut self, event: &InstallationEvent, evidence_set: &[Evidence]) -> Verdict {
        let before = self.live.state().clone();
        let verdict = self.live.apply(event, evidence_set);
        assert_eq!(
            reduce_installation(&before, event, evidence_set)
                .variant()
                .as_str(),
            match &verdict {
                Verdict::Accepted(_) => "accepted",
                Verdict::NoOp { .. } => "no_op",
                Verdict::Rejected { .. } => "rejected",
            }
        );
        verdict
    }

    fn accept(&mut self, event: &InstallationEvent, evidence_set: &[Evidence]) {
        let verdict = self.apply(event, evidence_set);
        assert!(
            matches!(verdict, Verdict::Accepted(_)),
            "{:?}: {verdict:?}",
            event.kind
        );
    }
}

#[test]
fn first_run_selection_reopen_and_rotation() {
    let mut lane = Lane::new();
    let init = lane.event(K::InstallationInitialized);
    lane.accept(&init, &[]);
    let start = lane.event(K::BootstrapDiscoveryStarted);
    lane.accept(&start, &[]);
    let mut discovered = lane.event(K::LeaderCandidateDiscoveryCompleted);
    discovered.observation_id = Some(id(IdentityKind::Evidence, "obs-1"));
    discovered.candidates = Some(vec![candidate("alice", "s1"), candidate("bob", "s2")]);
    lane.accept(&discovered, &[evidence("obs-1")]);
    assert_eq!(
        lane.live.state().status.known(),
        Some(InstallationStatus::AwaitingLeaderSelection)
    );
    assert!(
        lane.live.state().leader.is_none(),
        "no Leader without an explicit selection"
    );

    // Selecting a candidate that was not observed is denied.
    let mut select = lane.event(K::LeaderSelectionApproved);
    select.candidate_id = Some("mallory".to_owned());
    select.selection_id = Some("sel-1".to_owned());
    select.new_epoch = Some(1);
    select.authority_principal_id = Some(id(IdentityKind::Principal, "user:alice"));
    select.authority_evidence_id = Some(id(IdentityKind::Evidence, "approval-1"));
    assert_eq!(
        lane.apply(&select, &[evidence("approval-1")]).error_code(),
        Some(ErrorCode::PermissionDenied)
    );
    select.candidate_id = Some("alice".to_owned());
    lane.accept(&select, &[evidence("approval-1")]);
    let mut activate = lane.event(K::LeaderActivated);
    activate.new_epoch = Some(1);
    lane.accept(&activate, &[]);
    let state = lane.live.state();
    assert_eq!((state.active_epoch, state.highest_epoch), (1, 1));
    assert_eq!(
        state.leader.as_ref().unwrap().candidate.candidate_id,
        "alice"
    );

    // Epoch 0 is fenced once epoch 1 is active.
    let mut from_epoch_zero = lane.event(K::LeaderSessionReopened);
    from_epoch_zero.leader_epoch = 0;
    assert_eq!(
        lane.apply(&from_epoch_zero, &[]).error_code(),
        Some(ErrorCode::LeaderEpoch)
    );

    // Reopen with the bound fingerprint.
    let mut reopen = lane.event(K::LeaderSessionReopened);
    reopen.observation_id = Some(id(IdentityKind::Evidence, "obs-2"));
    reopen.session_fingerprint = Some(sha256_digest(b"s1"));
    reopen.observed_at = Some("2026-12-01T08:00:00.000Z".to_owned());
    lane.accept(&reopen, &[evidence("obs-2")]);
    let mut wrong = lane.event(K::LeaderSessionReopened);
    wrong.observation_id = Some(id(IdentityKind::Evidence, "obs-3"));
    wrong.session_fingerprint = Some(sha256_digest(b"s9"));
    wrong.observed_at = Some("2026-12-02T08:00:00.000Z".to_owned());
    assert_eq!(
        lane.apply(&wrong, &[evidence("obs-3")]).error_code(),
        Some(ErrorCode::StateConflict)
    );

    // Rotation to bob: epoch 2, epoch 1 fenced, everything else frozen meanwhile.
    let mut rotate = lane.event(K::LeaderRotationApproved);
    rotate.candidate_id = Some("bob".to_owned());
    rotate.selection_id = Some("sel-2".to_owned());
    rotate.new_epoch = Some(2);
    rotate.fenced_epoch = Some(1);
    rotate.authority_principal_id = Some(id(IdentityKind::Principal, "user:alice"));
    rotate.authority_evidence_id = Some(id(IdentityKind::Evidence, "approval-2"));
    lane.accept(&rotate, &[evidence("approval-2")]);
    let mut frozen = lane.event(K::LeaderCandidatesObserved);
    frozen.observation_id = Some(id(IdentityKind::Evidence, "obs-4"));
    frozen.candidates = Some(vec![]);
    assert_eq!(
        lane.apply(&frozen, &[evidence("obs-4")]).error_code(),
        Some(ErrorCode::LeaderRotating)
    );
    let mut complete = lane.event(K::LeaderRotationCompleted);
    complete.new_epoch = Some(2);
    lane.accept(&complete, &[]);
    let state = lane.live.state();
    assert_eq!((state.active_epoch, state.highest_epoch), (2, 2));
    assert_eq!(state.leader.as_ref().unwrap().candidate.candidate_id, "bob");
    assert_eq!(state.fenced.len(), 1);
    assert_eq!(
        (
            state.fenced[0].epoch,
            state.fenced[0].candidate.candidate_id.as_str()
        ),
        (1, "alice")
    );

    // The canonical State round-trips through the decoder.
    let value = valp_kernel::json::parse(
        std::str::from_utf8(&state.canonical_bytes())
            .unwrap()
            .trim_end(),
    )
    .unwrap();
    assert_eq!(
        &valp_kernel::installation::decode_installation_state(&value).unwrap(),
        state
    );
    // Replaying the completion (carrying the fenced epoch 1) is refused by the epoch check,
    // which comes before idempotency in the authority lane.
    assert!(matches!(
        reduce_installation(state, &complete, &[]),
        Outcome::Rejected(rejected) if rejected.error_code == ErrorCode::LeaderEpoch
    ));
}
