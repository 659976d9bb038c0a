#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::{Identity, IdentityKind, State, StateBody};
use valp_view::NeedKind;

use super::super::gather::{AgentFacts, Outside, PendingAsk, RoundFacts, SubmissionFacts};
use super::super::{Found, TaskFacts, find};

const NOW: i64 = 1_000_000;

fn body() -> StateBody {
    let id = |kind, value| Identity::new(kind, value).unwrap();
    State::genesis(
        id(IdentityKind::Installation, "inst"),
        1,
        id(IdentityKind::Task, "T"),
        Vec::new(),
    )
    .body
}

fn found(outside: &Outside) -> Vec<Found> {
    find(&TaskFacts {
        body: &body(),
        gates: &[],
        last_recorded_ms: None,
        outside,
    })
}

fn ask(tool: Option<&str>, detail: &str) -> PendingAsk {
    PendingAsk {
        work_item_id: "w".into(),
        attempt_id: "T:w:a1".into(),
        request_id: "perm-0123456789abcdef".into(),
        agent: "claude".into(),
        tool: tool.map(str::to_owned),
        detail: detail.into(),
        requested_ms: Some(NOW - 2_000),
        deadline_ms: NOW + 40_000,
    }
}

fn agent(state: &str, held_ms: i64, rule: Option<(&str, Option<u64>)>) -> AgentFacts {
    AgentFacts {
        work_item_id: "w".into(),
        attempt_id: "T:w:a1".into(),
        state: state.into(),
        rule: rule.map(|(rule, line)| (rule.to_owned(), line)),
        note: None,
        since_ms: Some(NOW - held_ms),
    }
}

fn outside() -> Outside {
    Outside {
        now_ms: NOW,
        ..Outside::default()
    }
}

#[test]
fn a_pending_request_is_a_need_with_what_it_asks() {
    assert!(found(&outside()).is_empty(), "nothing pending, no need");
    let mut facts = outside();
    facts.asks = vec![
        ask(Some("Bash"), "rm -rf build"),
        ask(Some("Write"), "src/main.rs"),
        ask(None, "{\"x\":1}"),
    ];
    let needs = found(&facts);
    assert!(needs.iter().all(|need| need.kind == NeedKind::AgentRequest));
    assert_eq!(needs[0].occurrence, "perm-0123456789abcdef");
    assert_eq!(needs[0].work_item_id.as_deref(), Some("w"));
    assert_eq!(needs[0].at_ms, Some(NOW - 2_000));
    assert_eq!(
        needs[0].summary,
        "claude asks to use Bash on the command rm -rf build"
    );
    let asked = needs[0].ask.as_ref().unwrap();
    assert_eq!(asked.subject, ("command".into(), "rm -rf build".into()));
    assert_eq!(asked.deadline_ms, NOW + 40_000);
    assert_eq!(asked.deadline_at, "1970-01-01T00:17:20.000Z");
    let subjects: Vec<&str> = needs
        .iter()
        .map(|need| need.ask.as_ref().unwrap().subject.0.as_str())
        .collect();
    assert_eq!(subjects, ["command", "file", "input"]);
    assert_eq!(needs[2].ask.as_ref().unwrap().tool, "tool");
}

#[test]
fn a_blocked_or_unknown_agent_is_a_need_once_it_holds_and_no_request_explains_it() {
    let mut facts = outside();
    facts.agents = vec![agent(
        "blocked",
        6_000,
        Some(("permission prompt", Some(12))),
    )];
    let needs = found(&facts);
    assert_eq!(needs.len(), 1);
    assert_eq!(needs[0].kind, NeedKind::AgentBlocked);
    assert_eq!(needs[0].occurrence, "T:w:a1:blocked@994000");
    assert_eq!(
        needs[0].summary,
        "the agent of T:w:a1 is blocked (permission prompt on line 12): attach to answer it, \
         interrupt it, or cancel the item"
    );
    facts.agents = vec![agent("unknown", 60_000, None)];
    assert_eq!(
        found(&facts)[0].summary,
        "the agent of T:w:a1 is unknown (no profile rule matched the screen): attach to look at it"
    );
    // Negative: too fresh, working, or explained by a pending request.
    facts.agents = vec![
        agent("blocked", 1_000, None),
        agent("working", 60_000, None),
    ];
    assert!(found(&facts).is_empty());
    facts.agents = vec![agent("blocked", 60_000, None)];
    facts.asks = vec![ask(Some("Bash"), "ls")];
    let kinds: Vec<NeedKind> = found(&facts).iter().map(|need| need.kind).collect();
    assert_eq!(kinds, [NeedKind::AgentRequest]);
}

#[test]
fn an_unproven_submission_is_a_need_after_the_grace_unless_acknowledged() {
    let submission = |age: i64, acknowledged| SubmissionFacts {
        work_item_id: "w".into(),
        attempt_id: "T:w:a1".into(),
        why: Some("the agent stayed idle after Enter".into()),
        at_ms: Some(NOW - age),
        acknowledged,
    };
    let mut facts = outside();
    facts.submissions = vec![submission(20_000, false)];
    let needs = found(&facts);
    assert_eq!(needs.len(), 1);
    assert_eq!(needs[0].kind, NeedKind::UnconfirmedSubmission);
    assert_eq!(needs[0].occurrence, "T:w:a1");
    assert_eq!(
        needs[0].summary,
        "the prompt of T:w:a1 was typed but its delivery is not proven (the agent stayed idle \
         after Enter), and the agent did not acknowledge it: look at the agent; valp never \
         submits it again"
    );
    facts.submissions = vec![submission(5_000, false), submission(60_000, true)];
    assert!(found(&facts).is_empty());
}

#[test]
fn an_open_correction_round_is_a_need() {
    let mut facts = outside();
    facts.rounds = vec![RoundFacts {
        round: 2,
        trigger: "review_finding".into(),
        work_item_id: None,
        started_ms: Some(NOW - 1),
        reason: "review_rejected at revision 9".into(),
    }];
    let needs = found(&facts);
    assert_eq!(needs.len(), 1);
    assert_eq!(needs[0].kind, NeedKind::CorrectionRound);
    assert_eq!(needs[0].occurrence, "round-2");
    assert_eq!(
        needs[0].summary,
        "correction round 2 (review_finding) is open, no fix dispatched: review_rejected at \
         revision 9"
    );
    facts.rounds.clear();
    assert!(found(&facts).is_empty());
}
