//! Authenticated CheckpointRoot suffix replay (RFC 0002 §8, acceptance statements 42 and 43): a
//! checkpoint of any walk prefix plus the rest of the walk rebuilds the same State as genesis
//! replay, and every broken binding, authentication or suffix is refused with its own error.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
mod walks;

use proptest::prelude::*;
use proptest::sample::Index;
use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{
    decode_checkpoint_authentication, decode_checkpoint_root, decode_trust_policy,
};
use valp_kernel::replay::{
    CheckpointAuthentication, CheckpointRoot, CheckpointTrustPolicy, Replay, ReplayEntry,
    ReplayError, Replayer, checkpoint_statement_digest, replay, replay_prefix_digest,
};
use valp_kernel::{ErrorCode, Evidence, IdentityKind, NoOp, Outcome};

use support::id;
use walks::{Recorded, SHAPES, accepted, compact_of, config, corpus, flip_last, repeat_verdict};

/// A trust policy naming the evidence ids `names`, in that order.
fn policy(names: &[&str]) -> CheckpointTrustPolicy {
    CheckpointTrustPolicy {
        trusted_evidence_ids: names
            .iter()
            .map(|name| id(IdentityKind::Evidence, name))
            .collect(),
    }
}

/// The default policy: two trusted evidence ids.
fn two_signers() -> CheckpointTrustPolicy {
    policy(&["signer-a", "signer-b"])
}

/// Evidence with the ids `names`, each attesting the statement of (`root`, `result`, `policy`).
fn attest(
    root: &CheckpointRoot,
    result: &Outcome,
    trust_policy: &CheckpointTrustPolicy,
    names: &[&str],
) -> Vec<Evidence> {
    let statement = checkpoint_statement_digest(root, result, trust_policy);
    names
        .iter()
        .map(|name| Evidence {
            evidence_id: id(IdentityKind::Evidence, name),
            content_digest: statement.clone(),
        })
        .collect()
}

/// A root and its authentication.
#[derive(Debug, Clone)]
struct Checkpoint {
    root: CheckpointRoot,
    authentication: CheckpointAuthentication,
}

impl Checkpoint {
    /// The checkpoint after the first `count` entries of `recorded`, under `trust_policy`,
    /// attested by every id the policy lists.
    fn of(recorded: &Recorded, count: usize, trust_policy: &CheckpointTrustPolicy) -> Self {
        let prefix = &recorded.entries[..count];
        let result = prefix[count - 1].result.clone();
        let root = CheckpointRoot::new(
            result.state().clone(),
            replay_prefix_digest(prefix),
            trust_policy,
        )
        .expect("a non-empty prefix has a tail");
        let names: Vec<&str> = trust_policy
            .trusted_evidence_ids
            .iter()
            .map(valp_kernel::Identity::value)
            .collect();
        let evidence_set = attest(&root, &result, trust_policy, &names);
        let authentication = CheckpointAuthentication {
            checkpoint_result: result,
            evidence_set,
            trust_policy: trust_policy.clone(),
        };
        Self {
            root,
            authentication,
        }
    }

    /// Starts from this checkpoint and applies `suffix`.
    fn resume(&self, suffix: &[ReplayEntry]) -> Result<Replay, ReplayError> {
        let mut replayer = Replayer::from_checkpoint(&self.root, Some(&self.authentication))?;
        for entry in suffix {
            replayer.apply(entry)?;
        }
        Ok(replayer.finish())
    }

    /// Starts from this checkpoint and applies `suffix` in the compact form.
    fn resume_compact(&self, suffix: &[ReplayEntry]) -> Result<Replay, ReplayError> {
        let mut replayer = Replayer::from_checkpoint(&self.root, Some(&self.authentication))?;
        for entry in compact_of(suffix) {
            replayer.apply_compact(&entry)?;
        }
        Ok(replayer.finish())
    }

    /// The error starting from this checkpoint gives.
    fn refusal(&self) -> ReplayError {
        Replayer::from_checkpoint(&self.root, Some(&self.authentication)).unwrap_err()
    }
}

/// Checkpoint + suffix gives the genesis replay's State, and the suffix's result digests.
fn assert_resumes_like_genesis(recorded: &Recorded, count: usize) {
    let full = replay(&recorded.genesis, &recorded.entries).unwrap();
    let checkpoint = Checkpoint::of(recorded, count, &two_signers());
    let root = &checkpoint.root;
    let tail = accepted(&recorded.entries[count - 1].result);
    assert_eq!(root.accepted_entry_count, i128::try_from(count).unwrap());
    assert_eq!(
        root.tail_event_id,
        recorded.entries[count - 1].event.event_id
    );
    assert_eq!(root.tail_result_id, tail.result_id);
    assert_eq!(root.checkpoint_result_id, tail.result_id);
    assert_eq!(root.tail_result_digest, tail.result_digest);
    assert_eq!(root.state_digest, tail.state.digest());
    let suffix = &recorded.entries[count..];
    for resumed in [
        checkpoint.resume(suffix).unwrap(),
        checkpoint.resume_compact(suffix).unwrap(),
    ] {
        assert_eq!(
            resumed.state.canonical_bytes(),
            full.state.canonical_bytes(),
            "{:?} from {count}",
            recorded.config
        );
        assert_eq!(
            resumed.applied_result_digests,
            full.applied_result_digests[count..]
        );
    }
}

#[test]
fn checkpoint_plus_suffix_equals_genesis_replay() {
    for recorded in corpus() {
        for count in 1..=recorded.len() {
            assert_resumes_like_genesis(recorded, count);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn checkpoint_of_any_walk_prefix_resumes_like_genesis(
        seed in any::<u64>(),
        shape in 0..SHAPES.len(),
        cut in any::<Index>(),
    ) {
        let recorded = Recorded::walk(config(seed, SHAPES[shape]), 16);
        prop_assume!(!recorded.entries.is_empty());
        assert_resumes_like_genesis(&recorded, 1 + cut.index(recorded.len()));
    }
}

#[test]
fn a_state_without_history_has_no_checkpoint() {
    let genesis = &corpus()[0].genesis;
    assert_eq!(
        CheckpointRoot::new(
            genesis.state.clone(),
            replay_prefix_digest([]),
            &two_signers()
        ),
        None
    );
}

/// A walk with work items, checkpointed after 10 of its entries.
fn sample() -> (&'static Recorded, Checkpoint) {
    let recorded = &corpus()[2];
    assert!(recorded.len() > 12);
    (recorded, Checkpoint::of(recorded, 10, &two_signers()))
}

fn invalid(reason: &'static str) -> ReplayError {
    ReplayError::CheckpointAuthenticationInvalid(reason)
}

#[test]
fn a_checkpoint_without_authentication_is_refused() {
    let (_, checkpoint) = sample();
    assert_eq!(
        Replayer::from_checkpoint(&checkpoint.root, None).unwrap_err(),
        invalid("no authentication supplied")
    );
}

#[test]
fn authentication_under_another_policy_is_refused() {
    let (recorded, mut checkpoint) = sample();
    let other = policy(&["signer-a", "signer-c"]);
    let result = recorded.entries[9].result.clone();
    checkpoint.authentication.evidence_set =
        attest(&checkpoint.root, &result, &other, &["signer-a", "signer-c"]);
    checkpoint.authentication.trust_policy = other;
    assert_eq!(
        checkpoint.refusal(),
        invalid("trust policy digest differs from the root's")
    );
}

#[test]
fn evidence_ids_must_be_exactly_the_trusted_ids() {
    let (recorded, checkpoint) = sample();
    let result = &recorded.entries[9].result;
    for names in [
        &["signer-a"][..],
        &["signer-b"],
        &[],
        &["signer-a", "signer-b", "signer-c"],
        &["signer-a", "signer-c"],
    ] {
        let mut changed = checkpoint.clone();
        changed.authentication.evidence_set =
            attest(&checkpoint.root, result, &two_signers(), names);
        assert_eq!(
            changed.refusal(),
            invalid("evidence ids differ from the trust policy"),
            "{names:?}"
        );
    }
}

#[test]
fn evidence_must_attest_the_statement() {
    let (recorded, checkpoint) = sample();
    let mut one_wrong = checkpoint.clone();
    flip_last(&mut one_wrong.authentication.evidence_set[1].content_digest);
    // Attesting the statement about another (earlier) checkpoint.
    let earlier = Checkpoint::of(recorded, 9, &two_signers());
    let mut other_statement = checkpoint.clone();
    other_statement
        .authentication
        .evidence_set
        .clone_from(&earlier.authentication.evidence_set);
    for changed in [one_wrong, other_statement] {
        assert_eq!(
            changed.refusal(),
            invalid("evidence does not attest the checkpoint statement")
        );
    }
    let mut malformed = checkpoint.clone();
    malformed.authentication.evidence_set[0].content_digest = "sha256:ABC".to_owned();
    assert_eq!(malformed.refusal(), invalid("evidence set is malformed"));
}

#[test]
fn duplicate_authentication_evidence_is_refused() {
    let (_, mut checkpoint) = sample();
    let first = checkpoint.authentication.evidence_set[0].clone();
    checkpoint.authentication.evidence_set.push(first);
    assert_eq!(
        checkpoint.refusal(),
        ReplayError::AuthenticationEvidenceNotUnique
    );
}

#[test]
fn an_invalid_trust_policy_is_refused() {
    let (recorded, _) = sample();
    let principal = CheckpointTrustPolicy {
        trusted_evidence_ids: vec![id(IdentityKind::Principal, "signer-a")],
    };
    for trust_policy in [policy(&[]), policy(&["signer-a", "signer-a"]), principal] {
        let checkpoint = Checkpoint::of(recorded, 10, &trust_policy);
        assert_eq!(
            checkpoint.refusal(),
            ReplayError::TrustPolicyInvalid,
            "{trust_policy:?}"
        );
    }
}

#[test]
fn the_checkpoint_result_must_be_the_tail_acceptance() {
    let (recorded, checkpoint) = sample();
    let policy = two_signers();
    let signers = ["signer-a", "signer-b"];
    let tail = accepted(&recorded.entries[9].result);
    let no_op = Outcome::NoOp(NoOp {
        state: tail.state.clone(),
        input_digest: tail.input_digest.clone(),
        prior_result_id: tail.result_id.clone(),
        prior_result_digest: tail.result_digest.clone(),
    });
    let mut forged_digest = tail.clone();
    flip_last(&mut forged_digest.result_digest);
    let cases = [
        (
            recorded.entries[8].result.clone(),
            "checkpoint Result does not produce the root State and tail",
        ),
        (
            recorded.entries[10].result.clone(),
            "checkpoint Result does not produce the root State and tail",
        ),
        (
            Outcome::Accepted(forged_digest),
            "checkpoint Result does not produce the root State and tail",
        ),
        (no_op, "checkpoint Result is not accepted"),
    ];
    for (result, reason) in cases {
        let mut changed = checkpoint.clone();
        changed.authentication.evidence_set = attest(&checkpoint.root, &result, &policy, &signers);
        changed.authentication.checkpoint_result = result;
        assert_eq!(changed.refusal(), invalid(reason));
    }
    // A root that names another acceptance as its checkpoint Result.
    let mut changed = checkpoint.clone();
    changed.root.checkpoint_result_id = accepted(&recorded.entries[8].result).result_id.clone();
    changed.authentication.evidence_set = attest(
        &changed.root,
        &changed.authentication.checkpoint_result,
        &policy,
        &signers,
    );
    assert_eq!(
        changed.refusal(),
        invalid("checkpoint Result does not produce the root State and tail")
    );
}

/// A change to a CheckpointRoot.
type RootChange<'a> = Box<dyn Fn(&mut CheckpointRoot) + 'a>;

#[test]
fn broken_root_bindings_are_refused_before_authentication() {
    const TAIL: &str = "count, digests or tail bindings disagree";
    let (recorded, checkpoint) = sample();
    let other_tail = accepted(&recorded.entries[8].result);
    let changes: Vec<(&str, RootChange)> = vec![
        (
            "state_digest does not match state",
            Box::new(|root| flip_last(&mut root.state_digest)),
        ),
        (
            "state_digest does not match state",
            Box::new(|root| root.state.body.leader_epoch += 1),
        ),
        (
            "state is not a valid Task State",
            Box::new(|root| {
                root.state.body.protocol_version = "0.2.0".to_owned();
                root.state_digest = root.state.digest();
            }),
        ),
        (TAIL, Box::new(|root| root.accepted_entry_count += 1)),
        (TAIL, Box::new(|root| root.accepted_entry_count -= 1)),
        (
            TAIL,
            Box::new(|root| root.tail_event_id = recorded.entries[8].event.event_id.clone()),
        ),
        (
            TAIL,
            Box::new(|root| root.tail_result_id = other_tail.result_id.clone()),
        ),
        (
            TAIL,
            Box::new(|root| {
                root.tail_result_digest
                    .clone_from(&other_tail.result_digest);
            }),
        ),
        (TAIL, Box::new(|root| root.prefix_digest.push('0'))),
        (
            TAIL,
            Box::new(|root| {
                root.trust_policy_digest.pop();
            }),
        ),
        (
            TAIL,
            Box::new(|root| root.checkpoint_result_id = id(IdentityKind::Event, "x:accepted")),
        ),
        (
            TAIL,
            Box::new(|root| root.tail_event_id = id(IdentityKind::Result, "x")),
        ),
        (
            TAIL,
            Box::new(|root| {
                root.state = recorded.genesis.state.clone();
                root.state_digest = root.state.digest();
                root.accepted_entry_count = 0;
            }),
        ),
    ];
    for (reason, change) in changes {
        let mut broken = checkpoint.clone();
        change(&mut broken.root);
        let expected = ReplayError::CheckpointRootInvalid(reason);
        assert_eq!(broken.refusal(), expected);
        assert_eq!(
            Replayer::from_checkpoint(&broken.root, None).unwrap_err(),
            expected
        );
    }
}

#[test]
fn a_forged_prefix_digest_is_refused_unless_the_forgery_is_attested() {
    let (recorded, checkpoint) = sample();
    let forged_digest = replay_prefix_digest(&recorded.entries[..9]);
    let mut forged = checkpoint.clone();
    forged.root.prefix_digest.clone_from(&forged_digest);
    assert_eq!(
        forged.refusal(),
        invalid("evidence does not attest the checkpoint statement")
    );
    // The kernel binds the prefix digest but cannot recompute it without the prefix (a known
    // property of the reference, `prefix-digest-forged-but-signed`): trusted evidence that
    // attests the forged root is accepted, and the System must check the prefix itself.
    forged.authentication.evidence_set = attest(
        &forged.root,
        &forged.authentication.checkpoint_result,
        &two_signers(),
        &["signer-a", "signer-b"],
    );
    assert!(forged.resume(&recorded.entries[10..]).is_ok());
    assert_ne!(
        replay_prefix_digest(&recorded.entries[..10]),
        forged.root.prefix_digest
    );
}

#[test]
fn a_suffix_must_continue_the_prefix_exactly() {
    let conflict = ErrorCode::StateConflict.as_str();
    let mut checked = 0;
    for recorded in corpus() {
        for count in 1..recorded.len().saturating_sub(1) {
            let checkpoint = Checkpoint::of(recorded, count, &two_signers());
            let gap = checkpoint.resume(&recorded.entries[count + 1..]);
            assert_eq!(
                gap.unwrap_err(),
                ReplayError::NotReproduced {
                    index: 0,
                    verdict: conflict.to_owned()
                }
            );
            let overlap = checkpoint.resume(&recorded.entries[count - 1..]);
            assert_eq!(
                overlap.unwrap_err(),
                ReplayError::NotReproduced {
                    index: 0,
                    verdict: repeat_verdict(&recorded.entries[count - 1].event)
                }
            );
            checked += 1;
        }
    }
    assert!(checked > 200);
}

/// Names for trusted evidence ids; ASCII letters and digits, so their canonical identities sort
/// like the names.
fn signer_names() -> impl Strategy<Value = Vec<String>> {
    prop::collection::btree_set("[a-z0-9]{1,6}", 1..7).prop_map(|set| set.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The policy's canonical form lists the ids sorted, whatever order they were given in, so
    /// its digest (which the root binds) does not depend on that order either.
    #[test]
    fn trust_policy_form_is_independent_of_id_order(
        sorted in signer_names(),
        swaps in prop::collection::vec(any::<Index>(), 7),
    ) {
        let shuffled = walks::shuffled(&sorted, &swaps);
        let as_given = policy(&shuffled.iter().map(String::as_str).collect::<Vec<_>>());
        let canonical = policy(&sorted.iter().map(String::as_str).collect::<Vec<_>>());
        let ids: Vec<String> = sorted
            .iter()
            .map(|name| format!("{{\"kind\":\"evidence\",\"value\":\"{name}\"}}"))
            .collect();
        let expected = format!(
            "{{\"schema_version\":\"valp-kernel-checkpoint-trust-policy.v1\",\"trusted_evidence_ids\":[{}]}}\n",
            ids.join(",")
        );
        prop_assert_eq!(String::from_utf8(as_given.canonical_bytes()).unwrap(), expected);
        prop_assert_eq!(as_given.digest(), canonical.digest());
        let decoded = decode_trust_policy(&walks::parsed(&as_given)).unwrap();
        prop_assert_eq!(decoded, canonical);
    }
}

#[test]
fn authentication_may_list_the_trusted_ids_in_another_order() {
    let (recorded, mut checkpoint) = sample();
    let reordered = policy(&["signer-b", "signer-a"]);
    assert_ne!(reordered, two_signers());
    checkpoint.authentication.evidence_set.reverse();
    checkpoint.authentication.trust_policy = reordered;
    let resumed = checkpoint.resume(&recorded.entries[10..]).unwrap();
    assert_eq!(resumed.state, *recorded.final_state());
}

#[test]
fn checkpoint_artifacts_round_trip_through_their_decoders() {
    let (_, checkpoint) = sample();
    walks::assert_round_trip(&checkpoint.root, decode_checkpoint_root);
    walks::assert_round_trip(&checkpoint.authentication, decode_checkpoint_authentication);
    walks::assert_round_trip(&two_signers(), decode_trust_policy);
    let decoded = decode_checkpoint_root(&walks::parsed(&checkpoint.root)).unwrap();
    assert!(Replayer::from_checkpoint(&decoded, Some(&checkpoint.authentication)).is_ok());
}
