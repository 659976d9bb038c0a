use std::collections::BTreeMap;

use super::*;
use crate::audit::correction::{Inputs, Reason, judge};

fn fact(revision: u64, kind: &str, item: Option<&str>) -> Fact {
    Fact {
        revision,
        recorded_at: Some(format!("2026-12-02T08:00:{revision:02}.000Z")),
        kind: kind.to_owned(),
        work_item: item.map(str::to_owned),
        attempt: item.map(|item| format!("{item}:a{revision}")),
        control_reason: None,
        superseded: Vec::new(),
    }
}

fn owners() -> BTreeMap<String, String> {
    BTreeMap::from([("t:w".to_owned(), "tmux".to_owned())])
}

fn single_round(facts: &[Fact]) -> Round {
    let cycle = derive("t", facts, &owners()).expect("a signal gives a cycle");
    assert_eq!(cycle.rounds.len(), 1, "{cycle:?}");
    cycle.rounds[0].clone()
}

#[test]
fn no_signal_gives_no_cycle() {
    let facts = [
        fact(1, "attempt_created", Some("t:w")),
        fact(2, "attempt_completed", Some("t:w")),
        fact(3, "verification_passed", None),
        fact(4, "recording_completed", None),
    ];
    assert_eq!(derive("t", &facts, &owners()), None);
}

#[test]
fn each_signal_opens_a_round_with_its_trigger() {
    let mut cancelled = fact(1, "attempt_cancelled", Some("t:w"));
    cancelled.control_reason = Some("runtime_failed".to_owned());
    let mut redirect = fact(1, "redirect_authorized", None);
    redirect.superseded = vec!["t:w".to_owned()];
    let cases = [
        (fact(1, "attempt_fenced", Some("t:w")), "runtime_failed"),
        (fact(1, "attempt_failed", Some("t:w")), "runtime_failed"),
        (fact(1, "work_item_failed", Some("t:w")), "runtime_failed"),
        (cancelled, "runtime_failed"),
        (
            fact(1, "work_item_blocked", Some("t:w")),
            "dispatch_blocked",
        ),
        (fact(1, "task_blocked", None), "dispatch_blocked"),
        (fact(1, "verification_failed", None), "verification_failed"),
        (fact(1, "review_rejected", None), "review_finding"),
        (fact(1, "approval_denied", None), "approval_blocked"),
        (redirect, "evidence_superseded"),
    ];
    for (signal, expected) in cases {
        let round = single_round(std::slice::from_ref(&signal));
        assert_eq!(round.trigger, expected, "{}", signal.kind);
        assert_eq!(round.status, "open");
        assert_eq!(
            round.started_at.as_deref(),
            Some("2026-12-02T08:00:01.000Z")
        );
        assert_eq!(round.ended_at, None);
        assert!(
            round
                .reason
                .starts_with(&format!("{} at revision 1", signal.kind))
        );
        assert_eq!(round.receipt_refs, [JOURNAL_FILE]);
    }
}

#[test]
fn a_user_cancel_and_a_plain_redirect_are_no_signal() {
    let mut cancelled = fact(1, "attempt_cancelled", Some("t:w"));
    cancelled.control_reason = Some("user_requested".to_owned());
    assert_eq!(derive("t", &[cancelled], &owners()), None);
    assert_eq!(
        derive("t", &[fact(1, "redirect_authorized", None)], &owners()),
        None
    );
}

#[test]
fn fail_retry_pass_is_fixed_with_times_from_the_journal() {
    let facts = [
        fact(1, "attempt_created", Some("t:w")),
        fact(2, "attempt_failed", Some("t:w")),
        fact(3, "work_item_blocked", Some("t:w")),
        fact(4, "task_blocked", None),
        fact(4, "attempt_created", Some("t:w")),
        fact(5, "attempt_completed", Some("t:w")),
        fact(6, "recording_completed", None),
    ];
    let cycle = derive("t", &facts, &owners()).expect("cycle");
    assert_eq!(
        cycle.rounds.len(),
        1,
        "the item and task blocked after the failure are the same round"
    );
    let round = &cycle.rounds[0];
    assert_eq!(round.owner, "tmux");
    assert_eq!(round.status, "fixed");
    assert_eq!(
        round.started_at.as_deref(),
        Some("2026-12-02T08:00:02.000Z")
    );
    assert_eq!(round.ended_at.as_deref(), Some("2026-12-02T08:00:05.000Z"));
    assert_eq!(
        round.required_actions,
        ["attempt_created t:w:a4 at revision 4"]
    );
    assert_eq!(round.evidence_refs, [JOURNAL_FILE]);
    assert_eq!((cycle.status, cycle.final_outcome), ("fixed", "fixed"));
    assert_eq!(cycle.final_evidence_refs, [JOURNAL_FILE]);
    assert_eq!(cycle.open_rounds(), 0);
    // The derived file passes seed 003's audit rule when the journal exists.
    let value = serde_json::to_value(&cycle).expect("serializes");
    let signals = ["runtime_failed".to_owned()];
    let finding = judge(
        &Inputs {
            signals: &signals,
            declared: false,
            cycle: Some(&value),
        },
        &|path| path == JOURNAL_FILE,
    );
    assert_eq!(finding.reason, Reason::Fixed, "{finding:?}");
}

#[test]
fn a_missing_recorded_at_stays_null() {
    let mut failed = fact(1, "verification_failed", None);
    failed.recorded_at = None;
    let round = single_round(&[failed]);
    assert_eq!(round.started_at, None);
    assert_eq!(round.owner, "unknown");
    let value = serde_json::to_value(&round).expect("serializes");
    assert_eq!(value["started_at"], serde_json::Value::Null);
}

#[test]
fn review_rejection_goes_to_fixing_then_open_outcome() {
    let facts = [
        fact(1, "review_rejected", None),
        fact(2, "fix_dispatch_requested", None),
    ];
    let cycle = derive("t", &facts, &owners()).expect("cycle");
    assert_eq!(cycle.rounds[0].status, "fixing");
    assert_eq!((cycle.status, cycle.final_outcome), ("fixing", "fixing"));
    assert!(cycle.final_evidence_refs.is_empty());
    assert_eq!(cycle.open_rounds(), 1);
}

#[test]
fn a_failed_or_cancelled_task_ends_its_rounds() {
    for (end, status) in [("task_failed", "blocked"), ("task_cancelled", "cancelled")] {
        let facts = [fact(1, "attempt_failed", Some("t:w")), fact(2, end, None)];
        let cycle = derive("t", &facts, &owners()).expect("cycle");
        assert_eq!(cycle.rounds[0].status, status);
        assert_eq!(
            cycle.rounds[0].ended_at.as_deref(),
            Some("2026-12-02T08:00:02.000Z")
        );
        assert_eq!(cycle.final_outcome, status);
    }
}

#[test]
fn another_items_completion_does_not_fix_a_round() {
    let facts = [
        fact(1, "attempt_failed", Some("t:w")),
        fact(2, "attempt_completed", Some("t:other")),
    ];
    let cycle = derive("t", &facts, &owners()).expect("cycle");
    assert_eq!(cycle.rounds[0].status, "open");
}

#[test]
fn canonical_bytes_sort_keys_and_end_with_a_newline() {
    let cycle = derive("t", &[fact(1, "verification_failed", None)], &owners()).expect("cycle");
    let bytes = canonical_bytes(&cycle).expect("bytes");
    let text = String::from_utf8(bytes).expect("utf-8");
    assert!(
        text.starts_with("{\"final_evidence_refs\":[],\"final_outcome\":\"open\","),
        "{text}"
    );
    assert!(text.ends_with("}\n"));
    assert!(!text.contains("work_item"));
}

#[test]
fn a_fold_holding_only_its_newest_rounds_keeps_the_outcome_of_the_rounds_it_dropped() {
    let mut deriver = Deriver::new();
    let outcome = |deriver: &Deriver| deriver.summary().outcome;
    deriver.push(&fact(1, "verification_failed", None));
    deriver.push(&fact(2, "task_failed", None));
    assert_eq!(outcome(&deriver), Some("blocked"));
    deriver.push(&fact(3, "attempt_failed", Some("t:w")));
    assert_eq!(outcome(&deriver), Some("open"));
    // Round 1 (blocked) is dropped: the fold still knows it is the newest that is not fixed
    // once round 2 is.
    let mut trimmed = deriver.kept(0);
    assert_eq!(trimmed.rounds().len(), 1);
    assert!(!trimmed.complete());
    for fold in [&mut deriver, &mut trimmed] {
        fold.push(&fact(4, "attempt_completed", Some("t:w")));
    }
    assert_eq!(outcome(&deriver), Some("blocked"));
    assert_eq!(
        trimmed.summary(),
        Summary {
            outcome: Some("blocked"),
            rounds: 2,
            open: 0
        }
    );
    assert_eq!(trimmed.kept(0), deriver.kept(0));
    assert_eq!(
        trimmed.finish("t", &owners()),
        None,
        "it has no whole cycle"
    );
    assert_eq!(
        deriver
            .finish("t", &owners())
            .map(|cycle| cycle.final_outcome),
        Some("blocked")
    );
    // Resumed from what it writes down, it is the same fold.
    let resumed = Deriver::resume(
        deriver.rounds().to_vec(),
        deriver.opened(),
        deriver.unfixed(),
    );
    assert_eq!(resumed, Ok(deriver));
    assert_eq!(
        Deriver::resume(Vec::new(), 1, Some((2, "blocked"))),
        Err("unfixed must name a round that ended blocked or cancelled".to_owned())
    );
}

/// An event of every kind in turn, over two work items, some with a control reason or
/// superseding items (a seeded walk: the same sequence every run).
fn walk_events(count: u64) -> Vec<valp_kernel::Event> {
    use valp_kernel::model::{ControlReason, Identity, Open};
    let id = |kind, value: String| Identity::new(kind, value).expect("a value");
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    (0..count)
        .map(|revision| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let kinds = EventKind::ALL;
            let kind = kinds[usize::try_from(seed % kinds.len() as u64).expect("small")];
            let mut event = valp_kernel::Event::new(
                id(IdentityKind::Event, format!("e{revision}")),
                id(IdentityKind::Installation, "i".to_owned()),
                1,
                id(IdentityKind::Task, "t".to_owned()),
                kind,
                i128::from(revision),
            );
            let item = format!("t:w{}", (seed >> 8) % 2);
            if !(seed >> 12).is_multiple_of(4) {
                event.work_item_id = Some(id(IdentityKind::WorkItem, item.clone()));
                event.attempt_id = Some(id(IdentityKind::Attempt, format!("{item}:a{revision}")));
            }
            if (seed >> 16).is_multiple_of(3) {
                event.control_reason = Some(Open::Known(ControlReason::RuntimeFailed));
            }
            if (seed >> 20).is_multiple_of(5) {
                event.superseded_work_item_ids = vec![id(IdentityKind::WorkItem, item)];
            }
            event
        })
        .collect()
}

#[test]
fn pushing_an_event_folds_as_pushing_its_fact_and_keeping_in_place_as_kept() {
    let events = walk_events(4000);
    let (mut by_fact, mut by_event) = (Deriver::new(), Deriver::new());
    let at = |revision: u64| {
        valp_store::clock::Timestamp::from_millis(
            1_800_000_000_000 + i64::try_from(revision).expect("small"),
        )
    };
    for (revision, event) in (1..).zip(&events) {
        by_fact.push(&Fact::of_event(revision, Some(at(revision)), event));
        by_event.push_event(revision, Some(at(revision)), event);
        assert_eq!(by_event, by_fact, "after revision {revision}");
        if revision % 97 == 0 {
            by_fact = by_fact.kept(5);
            by_event.keep(5);
            assert_eq!(by_event, by_fact, "kept at revision {revision}");
        }
    }
    assert!(
        by_fact.opened() > 300,
        "the walk opens rounds: {}",
        by_fact.opened()
    );
    assert!(
        by_fact.rounds().iter().any(|round| round.status == "fixed") && by_fact.unfixed().is_some(),
        "rounds are fixed and ended"
    );
}
