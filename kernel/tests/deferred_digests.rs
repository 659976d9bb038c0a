//! `LiveState::apply_recorded_deferring` with a `DigestChain`: applying recorded entries now and
//! checking their result and State digests later, in order, gives exactly what
//! `apply_recorded` gives: the same live state after entries that pass, and the inline path's
//! first error (same index, same field) for tampered ones, even when the checks lag behind the
//! applying side and it fails later on its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::live::{DigestCheck, LiveState, Verdict};
use valp_kernel::replay::{CompactEntry, MismatchField, ReplayError, Replayer};
use valp_kernel::walk::{Walk, WalkConfig};

/// The genesis live state and `steps` recorded entries of a seeded walk.
fn recorded(seed: u64, work_items: usize, steps: usize) -> (LiveState, Vec<CompactEntry>) {
    let mut walk = Walk::new(WalkConfig {
        seed,
        work_items,
        may_terminate: seed % 2 == 1,
    });
    let genesis = Replayer::from_genesis(walk.genesis()).unwrap().into_live();
    let mut live = genesis.clone();
    let entries = walk
        .by_ref()
        .take(steps)
        .map(|step| {
            let Verdict::Accepted(result) = live.apply(&step.event, &step.evidence_set) else {
                panic!("a walk's step is accepted");
            };
            CompactEntry {
                event: step.event,
                evidence_set: step.evidence_set,
                result,
            }
        })
        .collect();
    (genesis, entries)
}

/// The inline path: the first error, or the State digest at the end.
fn inline(mut live: LiveState, entries: &[CompactEntry]) -> Result<String, ReplayError> {
    for entry in entries {
        live.apply_recorded(entry)?;
    }
    Ok(live.state_digest())
}

/// The deferred path as a verifier on two threads runs it, the checks lagging as far behind as
/// they can: every check is queued and run, in order and all at once (`check_all`, sixteen body
/// passes side by side), only when the applying side fails (the earliest failure wins) or at
/// the end. Gives the State digest both sides reached.
fn deferred(mut live: LiveState, entries: &[CompactEntry]) -> Result<String, ReplayError> {
    let mut chain = live.digest_chain();
    let mut queued = Vec::new();
    let mut check = DigestCheck::default();
    for entry in entries {
        let applied = live.apply_recorded_deferring(entry, None, &mut check);
        if check.is_filled() {
            queued.push(check.clone());
        }
        if let Err(error) = applied {
            chain.check_all(&queued)?;
            return Err(error);
        }
    }
    chain.check_all(&queued)?;
    assert_eq!(chain.state_digest(), live.state_digest());
    Ok(live.state_digest())
}

/// Changes one hex digit of a digest's text.
fn tamper(digest: &mut String) {
    let last = digest.pop().unwrap();
    digest.push(if last == '0' { '1' } else { '0' });
}

#[test]
fn deferred_checks_give_the_inline_state_over_seeded_walks() {
    // 0 work items: the result digest binds the compact State; otherwise the full one.
    for (seed, work_items) in [(1, 0), (2, 0), (3, 3), (4, 5), (5, 20), (6, 20)] {
        let (genesis, entries) = recorded(seed, work_items, 250);
        let expected = inline(genesis.clone(), &entries).unwrap();
        assert_eq!(
            deferred(genesis, &entries).unwrap(),
            expected,
            "seed {seed}"
        );
    }
}

#[test]
fn a_tampered_entry_fails_with_the_inline_error_whichever_side_finds_it() {
    type Tamper = fn(&mut [CompactEntry], usize);
    let cases: [(&str, Tamper, Option<MismatchField>); 9] = [
        (
            "result digest",
            |entries, k| tamper(&mut entries[k].result.result_digest),
            Some(MismatchField::ResultDigest),
        ),
        (
            "result digest not a digest",
            |entries, k| {
                entries[k].result.result_digest = entries[k].result.result_digest.to_uppercase();
            },
            Some(MismatchField::ResultDigest),
        ),
        (
            "obligations",
            |entries, k| entries[k].result.obligations.push("extra".to_owned()),
            Some(MismatchField::Obligations),
        ),
        (
            "audit facts and result digest",
            |entries, k| {
                entries[k].result.audit_facts.push("extra".to_owned());
                tamper(&mut entries[k].result.result_digest);
            },
            Some(MismatchField::ResultDigest),
        ),
        (
            "input digest and result digest",
            |entries, k| {
                tamper(&mut entries[k].result.input_digest);
                tamper(&mut entries[k].result.result_digest);
            },
            Some(MismatchField::InputDigest),
        ),
        (
            "result digest, and a later entry refused by the applying side",
            |entries, k| {
                tamper(&mut entries[k].result.result_digest);
                entries[k + 3].event.expected_revision += 7;
            },
            Some(MismatchField::ResultDigest),
        ),
        (
            "result digest, and a later input digest",
            |entries, k| {
                tamper(&mut entries[k].result.result_digest);
                tamper(&mut entries[k + 1].result.input_digest);
            },
            Some(MismatchField::ResultDigest),
        ),
        (
            "a later result digest, and an input digest",
            |entries, k| {
                tamper(&mut entries[k + 2].result.result_digest);
                tamper(&mut entries[k].result.input_digest);
            },
            Some(MismatchField::InputDigest),
        ),
        (
            "an event the kernel refuses",
            |entries, k| entries[k].event.expected_revision += 7,
            None,
        ),
    ];
    // Even seeds: walks that do not terminate, so every position below is reached.
    for (seed, work_items) in [(2, 0), (4, 3), (6, 20)] {
        let (genesis, entries) = recorded(seed, work_items, 60);
        for (name, change, field) in &cases {
            for k in [0, 1, 17, 40] {
                let mut changed = entries.clone();
                change(&mut changed, k);
                let expected = inline(genesis.clone(), &changed).unwrap_err();
                match (field, &expected) {
                    (
                        Some(field),
                        ReplayError::Mismatch {
                            index,
                            field: found,
                        },
                    ) => {
                        assert_eq!((*index, found), (k, field), "{name} at {k}");
                    }
                    (None, ReplayError::NotReproduced { index, .. }) => assert_eq!(*index, k),
                    _ => panic!("{name} at {k}: {expected}"),
                }
                assert_eq!(
                    deferred(genesis.clone(), &changed).unwrap_err(),
                    expected,
                    "seed {seed}, {name} at {k}"
                );
            }
        }
    }
}

/// A chain started at any entry owes its State's digest until its first check pays it: it
/// reports the State it started from before any check, and chains started at every entry
/// (one per entry, as a verifier's segments are) each check their entry as the inline path.
#[test]
fn a_chain_started_at_any_entry_checks_from_the_state_it_started_at() {
    let (mut live, entries) = recorded(7, 5, 40);
    let mut check = DigestCheck::default();
    for entry in &entries {
        let mut chain = live.digest_chain();
        assert_eq!(chain.state_digest(), live.state_digest());
        live.apply_recorded_deferring(entry, None, &mut check)
            .unwrap();
        chain.check(&check).unwrap();
        assert_eq!(chain.state_digest(), live.state_digest());
    }
    // A tampered recorded result digest fails the chain that starts at its entry.
    let (mut live, mut entries) = recorded(8, 5, 10);
    tamper(&mut entries[6].result.result_digest);
    for entry in &entries[..6] {
        live.apply_recorded(entry).unwrap();
    }
    let mut chain = live.digest_chain();
    live.apply_recorded_deferring(&entries[6], None, &mut check)
        .unwrap();
    assert_eq!(
        chain.check(&check),
        Err(ReplayError::Mismatch {
            index: 6,
            field: MismatchField::ResultDigest,
        })
    );
}
