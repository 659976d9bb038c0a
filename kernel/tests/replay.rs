//! Genesis replay (RFC 0002 §8, acceptance statements 37-41): seeded walks replay to the same
//! State and result digests in both entry forms, the Replay envelope never carries obligations,
//! any tampering fails closed at the tampered entry with the right error, and only the
//! canonical empty Task State is a GenesisRoot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
mod walks;

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::json::Value;
use valp_kernel::replay::{
    GenesisRoot, MismatchField, Replay, ReplayEntry, ReplayError, Replayer, replay, replay_compact,
    replay_prefix_digest,
};
use valp_kernel::walk::{Walk, WalkStep};
use valp_kernel::{
    AcceptedEvent, ErrorCode, EventKind, IdentityKind, NoOp, Open, Outcome, State, TaskStatus,
    reduce,
};

use support::{evidence, id};
use walks::{
    OBLIGATION_WALKS, Recorded, SHAPES, accepted, compact_of, config, corpus, flip_last, parsed,
    repeat_verdict,
};

const CONFLICT: &str = ErrorCode::StateConflict.as_str();

fn not_reproduced(index: usize, verdict: &str) -> ReplayError {
    ReplayError::NotReproduced {
        index,
        verdict: verdict.to_owned(),
    }
}

fn mismatch(index: usize, field: MismatchField) -> ReplayError {
    ReplayError::Mismatch { index, field }
}

/// The canonical bytes a Replay must have, assembled by hand from its parts.
fn expected_replay_bytes(state: &State, digests: &[String]) -> Vec<u8> {
    let digests: Vec<String> = digests
        .iter()
        .map(|digest| format!("\"{digest}\""))
        .collect();
    let state = state.canonical_bytes();
    let mut out = format!(
        "{{\"applied_result_digests\":[{}],\"obligations\":[],\"schema_version\":\"valp-kernel-replay.v1\",\"state\":",
        digests.join(",")
    )
    .into_bytes();
    out.extend_from_slice(&state[..state.len() - 1]);
    out.extend_from_slice(b"}\n");
    out
}

/// Replays `recorded` in both forms and checks the Replay against the walk.
fn assert_replays(recorded: &Recorded) -> Replay {
    let reference = replay(&recorded.genesis, &recorded.entries).expect("walk replays");
    let compact = replay_compact(&recorded.genesis, &recorded.compact()).expect("compact replays");
    let final_state = recorded.final_state();
    assert_eq!(
        reference.state.canonical_bytes(),
        final_state.canonical_bytes()
    );
    assert_eq!(
        reference.state.body.revision,
        i128::try_from(recorded.len()).unwrap()
    );
    assert_eq!(reference.applied_result_digests, recorded.result_digests());
    assert_eq!(
        reference.canonical_bytes(),
        expected_replay_bytes(final_state, &recorded.result_digests())
    );
    assert_eq!(compact.canonical_bytes(), reference.canonical_bytes());
    reference
}

#[test]
fn replay_reproduces_every_walk_in_both_forms() {
    for recorded in corpus() {
        assert_replays(recorded);
    }
    for seed in 100..103 {
        for shape in SHAPES {
            assert_replays(&Recorded::walk(config(seed, shape), 40));
        }
    }
}

#[test]
fn long_compact_replay_reproduces_the_walk_state() {
    let mut walk = Walk::new(config(42, (20, false)));
    let genesis = walk.genesis().clone();
    let steps: Vec<_> = walk.by_ref().take(400).collect();
    assert_eq!(steps.len(), 400);
    let digests: Vec<String> = steps
        .iter()
        .map(|s| s.record.result_digest.clone())
        .collect();
    let compact: Vec<_> = steps.into_iter().map(WalkStep::into_compact).collect();
    let replayed = replay_compact(&genesis, &compact).unwrap();
    assert_eq!(replayed.applied_result_digests, digests);
    assert_eq!(replayed.state.digest(), walk.live().state_digest());
    assert_eq!(replayed.state, walk.live().to_state());
}

#[test]
fn replay_obligations_are_always_empty() {
    let with_obligations: Vec<&Recorded> = corpus()
        .iter()
        .filter(|recorded| recorded.obligation_count() > 0)
        .collect();
    // The three known walks and the constructed attempt cancel.
    assert_eq!(with_obligations.len(), OBLIGATION_WALKS.len() + 1);
    let kinds: Vec<EventKind> = with_obligations
        .iter()
        .flat_map(|recorded| &recorded.steps)
        .filter(|step| !step.record.obligations.is_empty())
        .filter_map(|step| step.event.kind.known())
        .collect();
    for kind in [
        EventKind::WorkItemCancelled,
        EventKind::TaskCancelled,
        EventKind::RedirectAuthorized,
        EventKind::AttemptCancelled,
    ] {
        assert!(kinds.contains(&kind), "no {kind} obligation in the corpus");
    }
    for recorded in with_obligations {
        for step in &recorded.steps {
            for obligation in &step.record.obligations {
                assert!(obligation.starts_with("adapter_cancel:{"));
                assert!(obligation.ends_with("}\n"));
            }
        }
        let replayed = assert_replays(recorded);
        let Value::Object(members) = parsed(&replayed) else {
            panic!("a Replay is an object");
        };
        assert_eq!(members["obligations"], Value::Array(Vec::new()));
    }
}

#[test]
fn empty_entry_list_replays_to_the_root() {
    for shape in SHAPES {
        let genesis = Walk::new(config(1, shape)).genesis().clone();
        for replayed in [
            replay(&genesis, []).unwrap(),
            replay_compact(&genesis, []).unwrap(),
            Replayer::from_genesis(&genesis).unwrap().finish(),
        ] {
            assert_eq!(replayed.state, genesis.state);
            assert!(replayed.applied_result_digests.is_empty());
            assert_eq!(
                replayed.canonical_bytes(),
                expected_replay_bytes(&genesis.state, &[])
            );
        }
    }
}

/// The golden values of protocol digest §6.5 (derived from the reference formulas).
#[test]
fn single_entry_replay_matches_the_golden_digests() {
    let genesis = GenesisRoot {
        state: support::genesis(),
    };
    assert_eq!(
        genesis.state.digest(),
        "sha256:f98b995565219829b07e935d179391011b7a123bc07a984942831eeabca061a5"
    );
    assert_eq!(
        genesis.digest(),
        "sha256:04286a06bc97bd639ff96532d4f88a82f64139bb468cb1507e2ae2e42dfc2ccc"
    );
    let event = support::event("evt-1", EventKind::RoutingValidationStarted, 0);
    let result = reduce(&genesis.state, &event, &[]);
    let record = accepted(&result).record();
    assert_eq!(
        record.input_digest,
        "sha256:1ebad39fee25d7d4f53622a9289467f3e1c10956ecb266be9bf8c28182b786e9"
    );
    assert_eq!(
        record.result_digest,
        "sha256:29b7a0b16d274d7620e930bb10fb5282223613ad619278cc4a76fd65528caed7"
    );
    assert_eq!(
        result.digest(),
        "sha256:9bdfdeef85e22ee33be8806fc04cdf0b58bf40808f9f77e7ec5668359b517af3"
    );
    let entries = [ReplayEntry {
        event,
        evidence_set: Vec::new(),
        result: result.clone(),
    }];
    assert_eq!(
        replay_prefix_digest(&entries),
        "sha256:ab0b2af4a185804e512d5805319285f91e399897248cf095efb5508f817497c5"
    );
    assert_eq!(
        replay_prefix_digest([]),
        valp_kernel::canonical::EMPTY_REPLAY_PREFIX_DIGEST
    );
    let replayed = replay(&genesis, &entries).unwrap();
    assert_eq!(replayed.state, *result.state());
    assert_eq!(replayed.applied_result_digests, [record.result_digest]);
}

/// Runs `tamper` on a copy of the first `upto` entries (the replay must fail within them, so
/// the rest is never read) and replays them in the reference form, and also in the compact
/// form when `compact` (for tampers that survive the conversion).
fn replay_tampered(
    recorded: &Recorded,
    upto: usize,
    compact: bool,
    tamper: impl FnOnce(&mut Vec<ReplayEntry>),
) -> ReplayError {
    let mut entries = recorded.entries[..upto].to_vec();
    tamper(&mut entries);
    let error = replay(&recorded.genesis, &entries).expect_err("tampered replay must fail");
    if compact {
        let compact_error = replay_compact(&recorded.genesis, &compact_of(&entries))
            .expect_err("tampered compact replay must fail");
        assert_eq!(
            compact_error, error,
            "{:?}: compact form differs",
            recorded.config
        );
    }
    error
}

/// Every position of every corpus walk (with `at + extra` still an entry).
fn positions(extra: usize) -> impl Iterator<Item = (&'static Recorded, usize)> {
    corpus().iter().flat_map(move |recorded| {
        (0..recorded.len().saturating_sub(extra)).map(move |at| (recorded, at))
    })
}

#[test]
fn dropping_an_entry_fails_at_its_position() {
    for (recorded, at) in positions(1) {
        let error = replay_tampered(recorded, at + 2, true, |entries| {
            entries.remove(at);
        });
        assert_eq!(error, not_reproduced(at, CONFLICT), "{:?}", recorded.config);
    }
    // Dropping the last entry leaves a shorter, valid history: replay alone cannot tell, but
    // the State it rebuilds is not the recorded final State.
    let recorded = &corpus()[0];
    let shortened = replay(&recorded.genesis, &recorded.entries[..recorded.len() - 1]).unwrap();
    assert_ne!(shortened.state.digest(), recorded.final_state().digest());
}

#[test]
fn swapping_two_entries_fails_at_the_first() {
    for (recorded, at) in positions(1) {
        for later in [at + 1, recorded.len() - 1] {
            if later == at {
                continue;
            }
            let error = replay_tampered(recorded, later + 1, true, |entries| {
                entries.swap(at, later);
            });
            assert_eq!(error, not_reproduced(at, CONFLICT), "{:?}", recorded.config);
        }
    }
}

#[test]
fn duplicating_an_entry_fails_at_the_copy() {
    for (recorded, at) in positions(0) {
        let error = replay_tampered(recorded, at + 1, true, |entries| {
            entries.insert(at + 1, entries[at].clone());
        });
        let verdict = repeat_verdict(&recorded.entries[at].event);
        assert_eq!(
            error,
            not_reproduced(at + 1, &verdict),
            "{:?}",
            recorded.config
        );
    }
}

/// The recorded Result of entry `at`, which must be accepted.
fn recorded_result(entries: &mut [ReplayEntry], at: usize) -> &mut valp_kernel::Accepted {
    match &mut entries[at].result {
        Outcome::Accepted(accepted) => accepted,
        other => panic!("not accepted: {:?}", other.variant()),
    }
}

#[test]
fn a_changed_recorded_field_fails_with_that_field() {
    for (recorded, at) in positions(0) {
        let check = |field: MismatchField, tamper: &dyn Fn(&mut valp_kernel::Accepted)| {
            let compact = !matches!(field, MismatchField::State | MismatchField::History);
            let error = replay_tampered(recorded, at + 1, compact, |entries| {
                tamper(recorded_result(entries, at));
            });
            assert_eq!(error, mismatch(at, field), "{:?} at {at}", recorded.config);
        };
        check(MismatchField::ResultId, &|result| {
            let value = format!("{}x", result.result_id.value());
            result.result_id = id(IdentityKind::Result, &value);
        });
        check(MismatchField::InputDigest, &|result| {
            flip_last(&mut result.input_digest);
        });
        check(MismatchField::ResultDigest, &|result| {
            flip_last(&mut result.result_digest);
        });
        check(
            MismatchField::Obligations,
            &|result| match result.obligations.first_mut() {
                Some(obligation) => {
                    obligation.pop();
                }
                None => result.obligations.push("adapter_cancel:{}\n".to_owned()),
            },
        );
        check(MismatchField::AuditFacts, &|result| {
            flip_last(&mut result.audit_facts[0]);
        });
        check(MismatchField::AuditFacts, &|result| {
            result
                .audit_facts
                .push("redirect_authority:nobody".to_owned());
        });
        check(MismatchField::State, &|result| {
            result.state.body.leader_epoch += 1;
        });
        check(MismatchField::State, &|result| {
            result.state.body.revision += 1;
        });
        check(MismatchField::State, &|result| {
            let status = result.state.body.status.known().unwrap();
            let other = if status == TaskStatus::Failed {
                TaskStatus::Done
            } else {
                TaskStatus::Failed
            };
            result.state.body.status = Open::Known(other);
        });
        check(MismatchField::History, &|result| {
            let last: &mut AcceptedEvent = result.state.accepted_events.last_mut().unwrap();
            flip_last(&mut last.input_digest);
        });
        check(MismatchField::History, &|result| {
            result.state.accepted_events.pop();
        });
    }
}

#[test]
fn a_changed_work_item_in_the_recorded_state_fails() {
    let mut checked = 0;
    for (recorded, at) in positions(0) {
        if recorded.entries[at]
            .result
            .state()
            .body
            .work_items
            .is_empty()
        {
            continue;
        }
        let error = replay_tampered(recorded, at + 1, false, |entries| {
            let item = &mut recorded_result(entries, at).state.body.work_items[0];
            item.dependencies.clear();
            item.requirement = match item.requirement {
                valp_kernel::Requirement::Optional => valp_kernel::Requirement::Soft,
                _ => valp_kernel::Requirement::Optional,
            };
        });
        assert_eq!(error, mismatch(at, MismatchField::State));
        checked += 1;
    }
    assert!(checked > 100, "only {checked} entries with work items");
}

#[test]
fn a_changed_event_fails_at_its_entry() {
    for (recorded, at) in positions(0) {
        let check = |expected: ReplayError, tamper: &dyn Fn(&mut valp_kernel::Event)| {
            let error = replay_tampered(recorded, at + 1, true, |entries| {
                tamper(&mut entries[at].event);
            });
            assert_eq!(error, expected, "{:?} at {at}", recorded.config);
        };
        check(mismatch(at, MismatchField::ResultId), &|event| {
            event.event_id = id(IdentityKind::Event, "tampered-event");
        });
        check(not_reproduced(at, CONFLICT), &|event| {
            event.expected_revision += 1;
        });
        check(not_reproduced(at, CONFLICT), &|event| {
            event.leader_epoch += 1;
        });
        check(not_reproduced(at, CONFLICT), &|event| {
            event.task_id = id(IdentityKind::Task, "another-task");
        });
        check(not_reproduced(at, CONFLICT), &|event| {
            event.installation_id = id(IdentityKind::Installation, "another-installation");
        });
        check(
            not_reproduced(at, ErrorCode::UnknownEnumValue.as_str()),
            &|event| event.kind = Open::Unknown("task_paused".to_owned()),
        );
        // A wake id is read only by the suspension rules: elsewhere it changes nothing but the
        // input digest; `suspension_started` must not carry one.
        let wake_expected =
            if recorded.entries[at].event.kind == Open::Known(EventKind::SuspensionStarted) {
                not_reproduced(at, CONFLICT)
            } else {
                mismatch(at, MismatchField::InputDigest)
            };
        check(wake_expected, &|event| {
            event.wake_id = Some(id(IdentityKind::Wake, "tampered-wake"));
        });
    }
}

#[test]
fn changed_evidence_fails_at_its_entry() {
    let mut with_evidence = 0;
    for (recorded, at) in positions(0) {
        let check = |expected: ReplayError, tamper: &dyn Fn(&mut Vec<valp_kernel::Evidence>)| {
            let error = replay_tampered(recorded, at + 1, true, |entries| {
                tamper(&mut entries[at].evidence_set);
            });
            assert_eq!(error, expected, "{:?} at {at}", recorded.config);
        };
        check(mismatch(at, MismatchField::InputDigest), &|set| {
            set.push(evidence("extra-evidence"));
        });
        check(not_reproduced(at, CONFLICT), &|set| {
            let mut malformed = evidence("malformed");
            malformed.content_digest = "sha256:not-hex".to_owned();
            set.push(malformed);
        });
        let event = &recorded.entries[at].event;
        if recorded.entries[at].evidence_set.is_empty() {
            continue;
        }
        with_evidence += 1;
        check(mismatch(at, MismatchField::InputDigest), &|set| {
            flip_last(&mut set[0].content_digest);
        });
        check(not_reproduced(at, CONFLICT), &|set| {
            let mut copy = set[0].clone();
            copy.content_digest = sha256_digest(b"another content");
            set.push(copy);
        });
        let bound = event.kind.known().unwrap().is_authority_bound();
        let expected = if bound {
            not_reproduced(at, CONFLICT)
        } else {
            mismatch(at, MismatchField::InputDigest)
        };
        check(expected, &Vec::clear);
    }
    assert!(
        with_evidence > 20,
        "only {with_evidence} entries carry evidence"
    );
}

#[test]
fn a_recorded_no_op_or_rejection_is_not_accepted() {
    for (recorded, at) in positions(0) {
        let entry = &recorded.entries[at];
        let record = accepted(&entry.result).record();
        let before = recorded.state_before(at);
        let no_op = Outcome::NoOp(NoOp {
            state: before.clone(),
            input_digest: record.input_digest.clone(),
            prior_result_id: record.result_id.clone(),
            prior_result_digest: record.result_digest.clone(),
        });
        let mut stale = entry.event.clone();
        stale.expected_revision += 1;
        let rejected = reduce(before, &stale, &entry.evidence_set);
        assert_eq!(rejected.error_code(), Some(ErrorCode::StateConflict));
        for (result, variant) in [(no_op, "no_op"), (rejected, "rejected")] {
            let error = replay_tampered(recorded, at + 1, false, |entries| {
                entries[at].result = result;
            });
            assert_eq!(error, ReplayError::NotAccepted { index: at, variant });
        }
    }
}

/// A State that differs from a walk's genesis by `change`.
fn root_with(change: impl FnOnce(&mut State)) -> GenesisRoot {
    let mut state = Walk::new(config(9, (3, false))).genesis().state.clone();
    change(&mut state);
    GenesisRoot { state }
}

#[test]
fn only_the_canonical_empty_task_state_is_a_genesis_root() {
    let recorded = &corpus()[2];
    let after_one = recorded.entries[0].result.state().clone();
    let history_entry = after_one.accepted_events[0].clone();
    let mut refused = vec![
        root_with(|state| state.body.revision = 1),
        root_with(|state| state.accepted_events.push(history_entry.clone())),
        root_with(|state| {
            state.body.revision = 1;
            state.accepted_events.push(history_entry.clone());
        }),
        GenesisRoot { state: after_one },
        root_with(|state| state.body.protocol_version = "0.2.0".to_owned()),
        root_with(|state| state.body.protocol_version = String::new()),
        root_with(|state| state.body.status = Open::Unknown("draft".to_owned())),
        root_with(|state| state.body.installation_id = id(IdentityKind::Task, "inst-1")),
        root_with(|state| state.body.task_id = id(IdentityKind::Installation, "task-1")),
        root_with(|state| state.body.leader_epoch = -1),
        root_with(|state| state.body.work_items[1].task_id = id(IdentityKind::Task, "other")),
        root_with(|state| {
            let first = state.body.work_items[0].clone();
            state.body.work_items.push(first);
        }),
    ];
    for &status in TaskStatus::ALL {
        if status != TaskStatus::Published {
            refused.push(root_with(|state| state.body.status = Open::Known(status)));
        }
    }
    assert_eq!(refused.len(), 12 + 12);
    let entries = &corpus()[2].entries;
    for root in &refused {
        assert_eq!(
            Replayer::from_genesis(root).unwrap_err(),
            ReplayError::GenesisInvalid
        );
        assert_eq!(replay(root, []).unwrap_err(), ReplayError::GenesisInvalid);
        assert_eq!(
            replay(root, entries).unwrap_err(),
            ReplayError::GenesisInvalid
        );
        assert_eq!(
            replay_compact(root, &compact_of(entries)).unwrap_err(),
            ReplayError::GenesisInvalid
        );
    }
    // The unchanged root is accepted, so each refusal above is due to its one change.
    assert!(replay(&root_with(|_| {}), []).is_ok());
}

#[test]
fn reference_messages_are_the_reference_kernel_strings() {
    let cases = [
        (
            ReplayError::GenesisInvalid,
            "GenesisRoot must be the canonical empty Task State",
        ),
        (
            ReplayError::NotAccepted {
                index: 3,
                variant: "no_op",
            },
            "ReplayEntry must contain an accepted Result",
        ),
        (
            not_reproduced(0, CONFLICT),
            "ReplayEntry inputs do not produce an accepted Result",
        ),
        (
            mismatch(7, MismatchField::History),
            "ReplayEntry Result does not match recomputed Result",
        ),
        (
            ReplayError::CheckpointAuthenticationInvalid("no authentication supplied"),
            "CheckpointRoot authentication is invalid",
        ),
        // Raised by the reference's constructors (`__post_init__`); not in the vectors.
        (
            ReplayError::CheckpointRootInvalid("state_digest does not match state"),
            "CheckpointRoot bindings are invalid",
        ),
        (
            ReplayError::TrustPolicyInvalid,
            "CheckpointTrustPolicy requires unique Evidence identities",
        ),
        (
            ReplayError::AuthenticationEvidenceNotUnique,
            "CheckpointAuthentication requires unique Evidence identities",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.reference_message(), message, "{error:?}");
    }
}
