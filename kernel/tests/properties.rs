//! Property tests of the kernel (acceptance statements 7, 10, 12, 13, 17): canonical JSON round
//! trips, EvidenceSet order independence, determinism, the shape of every Result variant,
//! `LiveState` against `reduce` along mutated random walks, and decode/encode round trips of
//! the artifacts those walks produce.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;
mod walks;

use std::fmt::Write as _;

use proptest::prelude::*;
use proptest::sample::Index;
use valp_kernel::canonical::{Canonical, decode_canonical, sha256_digest};
use valp_kernel::decode::{
    decode_compact_entry, decode_event, decode_evidence, decode_genesis_root, decode_outcome,
    decode_replay_entry, decode_state,
};
use valp_kernel::json::{self, Number, Value, write};
use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::{
    ErrorCode, Event, EventKind, Evidence, IdentityKind, Open, Outcome, State, reduce,
};

use support::{check_accepted, evidence, id};
use walks::{Recorded, SHAPES, accepted, compact_of, config, corpus, flip_last};

// ---------------------------------------------------------------------------------------------
// Canonical JSON

/// Characters that stress the string writer and parser: escapes, controls, DEL, the line and
/// paragraph separators, a BOM, non-ASCII and astral characters.
fn tricky_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        2 => proptest::char::range('\u{0}', '\u{1f}'),
        2 => proptest::char::range('a', 'z'),
        3 => prop::sample::select(vec![
            '"', '\\', '/', '\u{7f}', 'é', '\u{2028}', '\u{2029}', '\u{feff}', '𝄞', '😀',
            '\u{10ffff}', '\u{e000}',
        ]),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(tricky_char(), 0..8).prop_map(String::from_iter)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i128>().prop_map(Value::from),
        prop::sample::select(vec![i128::MIN, i128::MAX, -1, 0, 1, i128::from(i64::MAX)])
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..5).prop_map(Value::Object),
        ]
    })
}

/// Writes `value` as valid JSON that is not canonical: object members in an order chosen by
/// `salt` (rotated, sometimes reversed), whitespace between tokens, and every string character
/// other than an ASCII letter or digit as a `\u` escape (astral characters as surrogate pairs,
/// hex case chosen by `salt`).
fn write_loose(value: &Value, salt: usize, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(Number::Int(number)) => out.push_str(&number.to_string()),
        Value::Number(Number::Other(text)) => out.push_str(text),
        Value::String(text) => write_escaped(text, salt, out),
        Value::Array(items) => {
            out.push_str("[ ");
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(" ,\n");
                }
                write_loose(item, salt + index, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut members: Vec<_> = map.iter().collect();
            let turn = salt % members.len().max(1);
            members.rotate_left(turn);
            if salt % 2 == 1 {
                members.reverse();
            }
            out.push_str("{\t");
            for (index, (key, item)) in members.into_iter().enumerate() {
                if index > 0 {
                    out.push_str(",\r\n");
                }
                write_escaped(key, salt, out);
                out.push_str(" : ");
                write_loose(item, salt + 1, out);
            }
            out.push_str(" }");
        }
    }
}

fn write_escaped(text: &str, salt: usize, out: &mut String) {
    out.push('"');
    for character in text.chars() {
        if character.is_ascii_alphanumeric() {
            out.push(character);
            continue;
        }
        for unit in character.encode_utf16(&mut [0; 2]) {
            if salt.is_multiple_of(3) {
                write!(out, "\\u{unit:04X}").unwrap();
            } else {
                write!(out, "\\u{unit:04x}").unwrap();
            }
        }
    }
    out.push('"');
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// parse(canonical text) and decode_canonical(canonical bytes) give the value back; any
    /// other spelling of the same value (member order, whitespace, escapes) parses to it and
    /// re-encodes to the same bytes, and the strict reader refuses it unless it is
    /// byte-identical to the canonical bytes.
    #[test]
    fn json_values_round_trip_through_the_canonical_form(
        value in json_value(),
        salt in 0usize..64,
    ) {
        let canonical = write::canonical_bytes(&value).unwrap();
        prop_assert_eq!(canonical.last(), Some(&b'\n'));
        let body = std::str::from_utf8(&canonical[..canonical.len() - 1]).unwrap();
        prop_assert!(!body.contains('\n'));
        prop_assert_eq!(json::parse(body).unwrap(), value.clone());
        prop_assert_eq!(decode_canonical(&canonical).unwrap(), value.clone());
        // The one-pass reader takes the canonical text, with the same value.
        prop_assert_eq!(json::strict::parse_canonical(body), Some(value.clone()));

        let mut loose = String::new();
        write_loose(&value, salt, &mut loose);
        let reparsed = json::parse(&loose).unwrap();
        prop_assert_eq!(&reparsed, &value);
        prop_assert_eq!(write::canonical_bytes(&reparsed).unwrap(), canonical.clone());
        let identical = loose.as_bytes() == body.as_bytes();
        let strict = decode_canonical(format!("{loose}\n").as_bytes());
        prop_assert_eq!(strict.is_ok(), identical, "{}", loose);
        prop_assert_eq!(json::strict::parse_canonical(&loose).is_some(), identical, "{}", loose);
    }
}

// ---------------------------------------------------------------------------------------------
// Reduce: EvidenceSet order, determinism, Result shapes, LiveState

/// An evidence item from a small pool (so ids repeat): `digest` 0 is the id's own digest, 1
/// another well-formed digest, 2 a malformed one.
fn pool_evidence(slot: u8, digest: u8) -> Evidence {
    let mut item = evidence(&format!("pool-{slot}"));
    match digest {
        0 => {}
        1 => item.content_digest = sha256_digest(&[slot, digest]),
        _ => item.content_digest = format!("sha256:{slot}"),
    }
    item
}

/// A corpus walk and one of its entry positions.
fn pick(walk: Index, step: Index) -> (&'static Recorded, usize) {
    let recorded = walk.get(corpus());
    (recorded, step.index(recorded.len()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Permuting an EvidenceSet never changes a single byte of the Result, whatever the
    /// Result is (accepted with its own evidence plus extra items, or rejected for a
    /// duplicate id or a malformed digest).
    #[test]
    fn evidence_set_order_never_changes_the_result(
        walk in any::<Index>(),
        step in any::<Index>(),
        extra in prop::collection::vec((0u8..6, 0u8..3), 0..5),
        swaps in prop::collection::vec(any::<Index>(), 6),
    ) {
        let (recorded, at) = pick(walk, step);
        let entry = &recorded.entries[at];
        let state = recorded.state_before(at);
        let mut set = entry.evidence_set.clone();
        set.extend(extra.iter().map(|&(slot, digest)| pool_evidence(slot, digest)));
        let expected = reduce(state, &entry.event, &set).canonical_bytes();
        let shuffled = walks::shuffled(&set, &swaps);
        prop_assert_eq!(&reduce(state, &entry.event, &shuffled).canonical_bytes(), &expected);
        set.reverse();
        prop_assert_eq!(&reduce(state, &entry.event, &set).canonical_bytes(), &expected);
    }

    /// Equal canonical inputs give byte-identical Results: reducing twice, or reducing copies
    /// of the State, Event and EvidenceSet decoded from their canonical bytes, gives the bytes
    /// of the recorded Result (accepted), or of the same Result for the event proposed again
    /// (`no_op`, or rejected when stale).
    #[test]
    fn reduce_is_a_function_of_the_canonical_inputs(
        walk in any::<Index>(),
        step in any::<Index>(),
        again in any::<bool>(),
    ) {
        let (recorded, at) = pick(walk, step);
        let entry = &recorded.entries[at];
        let state = if again { entry.result.state() } else { recorded.state_before(at) };
        let first = reduce(state, &entry.event, &entry.evidence_set).canonical_bytes();
        if !again {
            prop_assert_eq!(&first, &entry.result.canonical_bytes());
        }
        let second = reduce(state, &entry.event, &entry.evidence_set).canonical_bytes();
        prop_assert_eq!(&second, &first);
        let state_copy = decode_state(&walks::parsed(state)).unwrap();
        let event_copy = decode_event(&walks::parsed(&entry.event)).unwrap();
        let evidence_copy: Vec<Evidence> = entry
            .evidence_set
            .iter()
            .map(|item| decode_evidence(&walks::parsed(item)).unwrap())
            .collect();
        let copied = reduce(&state_copy, &event_copy, &evidence_copy).canonical_bytes();
        prop_assert_eq!(&copied, &first);
    }
}

/// How many Results of each kind the mutation walks produced, so a property cannot pass by
/// never reaching a branch.
#[derive(Debug, Default)]
struct Tally {
    accepted: usize,
    no_op: usize,
    rejected: [usize; 3],
}

impl Tally {
    fn count(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Accepted(_) => self.accepted += 1,
            Outcome::NoOp(_) => self.no_op += 1,
            Outcome::Rejected(rejected) => {
                let code = ErrorCode::ALL
                    .iter()
                    .position(|&code| code == rejected.error_code)
                    .unwrap();
                self.rejected[code] += 1;
            }
        }
    }
}

/// One proposal to check: an event and evidence, and the State to apply them to when it is
/// not the walk's own State.
struct Probe {
    label: &'static str,
    state: Option<State>,
    event: Event,
    evidence_set: Vec<Evidence>,
}

/// The walk's next event as proposed, and mutations of it (and of the State) that the kernel
/// must answer exactly as `reduce` does: wrong revision, epoch, installation, task or identity
/// kind, a repeated earlier event (same or changed input), another work item, generation or
/// kind, unknown closed values, changed evidence, and invalid States.
#[allow(clippy::too_many_lines)] // one flat list of mutations
fn probes(recorded: &Recorded, at: usize) -> Vec<Probe> {
    let entry = &recorded.entries[at];
    let state = recorded.state_before(at);
    let mut probes = Vec::new();
    let mut push = |label, state: Option<State>, event: Event, evidence_set: Vec<Evidence>| {
        probes.push(Probe {
            label,
            state,
            event,
            evidence_set,
        });
    };
    let event = |change: &dyn Fn(&mut Event)| {
        let mut event = entry.event.clone();
        change(&mut event);
        event
    };
    let same_evidence = || entry.evidence_set.clone();

    push("as proposed", None, entry.event.clone(), same_evidence());
    push(
        "revision + 1",
        None,
        event(&|e| e.expected_revision += 1),
        same_evidence(),
    );
    push(
        "revision - 1",
        None,
        event(&|e| e.expected_revision -= 1),
        same_evidence(),
    );
    push(
        "huge revision",
        None,
        event(&|e| e.expected_revision = i128::MAX),
        same_evidence(),
    );
    push(
        "epoch + 1",
        None,
        event(&|e| e.leader_epoch += 1),
        same_evidence(),
    );
    push(
        "other installation",
        None,
        event(&|e| e.installation_id = id(IdentityKind::Installation, "inst-2")),
        same_evidence(),
    );
    push(
        "other task",
        None,
        event(&|e| e.task_id = id(IdentityKind::Task, "task-2")),
        same_evidence(),
    );
    push(
        "event id of kind task",
        None,
        event(&|e| e.event_id = id(IdentityKind::Task, e.event_id.value())),
        same_evidence(),
    );
    push(
        "fresh event id",
        None,
        event(&|e| e.event_id = id(IdentityKind::Event, "fresh-event")),
        same_evidence(),
    );
    if at > 0 {
        let earlier = &recorded.entries[at / 2];
        push(
            "earlier event again",
            None,
            earlier.event.clone(),
            earlier.evidence_set.clone(),
        );
        let mut changed = earlier.evidence_set.clone();
        changed.push(evidence("changed-input"));
        push(
            "earlier event id, new input",
            None,
            earlier.event.clone(),
            changed,
        );
        let previous = &recorded.entries[at - 1];
        push(
            "previous event again",
            None,
            previous.event.clone(),
            previous.evidence_set.clone(),
        );
    }
    let items = &state.body.work_items;
    let other_item = match &entry.event.work_item_id {
        Some(current) => items
            .iter()
            .map(|item| &item.work_item_id)
            .find(|candidate| *candidate != current)
            .cloned(),
        None => items.first().map(|item| item.work_item_id.clone()),
    };
    push(
        "other work item",
        None,
        event(&|e| e.work_item_id.clone_from(&other_item)),
        same_evidence(),
    );
    push(
        "missing work item",
        None,
        event(&|e| e.work_item_id = Some(id(IdentityKind::WorkItem, "wi-missing"))),
        same_evidence(),
    );
    push(
        "generation + 1",
        None,
        event(&|e| e.dispatch_generation = Some(e.dispatch_generation.unwrap_or(0) + 1)),
        same_evidence(),
    );
    let kinds = EventKind::ALL;
    let other_kind = kinds[(at * 7 + 3) % kinds.len()];
    push(
        "other kind",
        None,
        event(&|e| e.kind = Open::Known(other_kind)),
        same_evidence(),
    );
    push(
        "unknown kind",
        None,
        event(&|e| e.kind = Open::Unknown("task_paused".to_owned())),
        same_evidence(),
    );
    push(
        "unknown control reason",
        None,
        event(&|e| e.control_reason = Some(Open::Unknown("whim".to_owned()))),
        same_evidence(),
    );
    push(
        "unknown wake reason",
        None,
        event(&|e| e.wake_reason = Some(Open::Unknown("timeout".to_owned()))),
        same_evidence(),
    );
    push(
        "unknown cancellation scope",
        None,
        event(&|e| e.cancellation_scope = Some(Open::Unknown("installation".to_owned()))),
        same_evidence(),
    );
    push("no evidence", None, entry.event.clone(), Vec::new());
    let mut extra = same_evidence();
    extra.push(evidence("extra"));
    push("extra evidence", None, entry.event.clone(), extra.clone());
    extra.push(pool_evidence(0, 1));
    extra.push(pool_evidence(0, 0));
    push("duplicate evidence id", None, entry.event.clone(), extra);
    let mut malformed = same_evidence();
    malformed.push(pool_evidence(1, 2));
    push(
        "malformed evidence digest",
        None,
        entry.event.clone(),
        malformed,
    );
    if let Some(first) = entry.evidence_set.first() {
        let mut flipped = first.clone();
        flip_last(&mut flipped.content_digest);
        push(
            "changed evidence digest",
            None,
            entry.event.clone(),
            vec![flipped],
        );
    }

    let mutated = |change: &dyn Fn(&mut State)| {
        let mut state = state.clone();
        change(&mut state);
        Some(state)
    };
    push(
        "state: other protocol version",
        mutated(&|s| "0.2.0".clone_into(&mut s.body.protocol_version)),
        entry.event.clone(),
        same_evidence(),
    );
    push(
        "state: revision without history",
        mutated(&|s| s.body.revision += 1),
        entry.event.clone(),
        same_evidence(),
    );
    push(
        "state: unknown status",
        mutated(&|s| s.body.status = Open::Unknown("paused".to_owned())),
        entry.event.clone(),
        same_evidence(),
    );
    if let Some(last) = state.accepted_events.last() {
        push(
            "state: history entry twice",
            mutated(&|s| {
                s.accepted_events.push(last.clone());
                s.body.revision += 1;
            }),
            entry.event.clone(),
            same_evidence(),
        );
        let mut bad_entry = last.clone();
        "sha256:short".clone_into(&mut bad_entry.result_digest);
        push(
            "state: malformed history entry",
            mutated(&|s| *s.accepted_events.last_mut().unwrap() = bad_entry.clone()),
            entry.event.clone(),
            same_evidence(),
        );
    }
    probes
}

/// `reduce` twice and `LiveState::apply` on a clone of `live` (which holds `state`) must give
/// byte-identical Results and State digests; an accepted Result advances the revision by one
/// and appends exactly its own history entry, any other Result echoes the input State.
fn check_probe(state: &State, live: &LiveState, probe: &Probe) -> Outcome {
    let context = probe.label;
    let outcome = reduce(state, &probe.event, &probe.evidence_set);
    let bytes = outcome.canonical_bytes();
    let again = reduce(state, &probe.event, &probe.evidence_set);
    assert_eq!(
        again.canonical_bytes(),
        bytes,
        "{context}: reduce is not deterministic"
    );
    let mut live = live.clone();
    let verdict = live.apply(&probe.event, &probe.evidence_set);
    assert_eq!(live.state_digest(), outcome.state().digest(), "{context}");
    let from_live = verdict.into_outcome(live.into_state());
    assert_eq!(
        from_live.canonical_bytes(),
        bytes,
        "{context}: LiveState differs"
    );
    match &outcome {
        Outcome::Accepted(accepted) => check_accepted(accepted, state, &probe.event),
        Outcome::NoOp(no_op) => {
            let prior = state
                .accepted_events
                .iter()
                .find(|entry| entry.event_id == probe.event.event_id)
                .expect("a no_op names an accepted event");
            assert_eq!(no_op.prior_result_id, prior.result_id, "{context}");
            assert_eq!(no_op.prior_result_digest, prior.result_digest, "{context}");
            assert_eq!(no_op.input_digest, prior.input_digest, "{context}");
        }
        Outcome::Rejected(rejected) => {
            let conflict = rejected.error_code == ErrorCode::IdempotencyConflict;
            assert_eq!(rejected.prior_result_id.is_some(), conflict, "{context}");
            assert_eq!(
                rejected.prior_result_digest.is_some(),
                conflict,
                "{context}"
            );
        }
    }
    if !matches!(outcome, Outcome::Accepted(_)) {
        assert_eq!(
            outcome.state().canonical_bytes(),
            state.canonical_bytes(),
            "{context}: input State not echoed"
        );
    }
    outcome
}

/// Runs every probe at every step of a walk, against a `LiveState` advanced alongside it.
fn check_walk(recorded: &Recorded, tally: &mut Tally) {
    let mut live = LiveState::new(recorded.genesis.state.clone());
    for at in 0..recorded.len() {
        let state = recorded.state_before(at);
        assert_eq!(live.state_digest(), state.digest());
        assert_eq!(LiveState::new(state.clone()).state_digest(), state.digest());
        for probe in probes(recorded, at) {
            let outcome = match &probe.state {
                Some(mutated) => check_probe(mutated, &LiveState::new(mutated.clone()), &probe),
                None => check_probe(state, &live, &probe),
            };
            if probe.label == "as proposed" {
                assert_eq!(&outcome, &recorded.entries[at].result);
            }
            tally.count(&outcome);
        }
        let entry = &recorded.entries[at];
        let verdict = live.apply(&entry.event, &entry.evidence_set);
        assert_eq!(verdict, Verdict::Accepted(accepted(&entry.result).record()));
    }
    assert_eq!(live.to_state(), *recorded.final_state());
    assert_eq!(live.state_digest(), recorded.final_state().digest());
}

#[test]
fn live_state_matches_reduce_along_mutated_walks() {
    let mut tally = Tally::default();
    for recorded in corpus() {
        check_walk(recorded, &mut tally);
    }
    assert!(tally.accepted > 1000, "{tally:?}");
    assert!(tally.no_op > 100, "{tally:?}");
    assert!(tally.rejected.iter().all(|&count| count > 100), "{tally:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// The same on walks of arbitrary seeds.
    #[test]
    fn live_state_matches_reduce_on_any_walk(seed in any::<u64>(), shape in 0..SHAPES.len()) {
        let recorded = Recorded::walk(config(seed, SHAPES[shape]), 12);
        check_walk(&recorded, &mut Tally::default());
    }
}

// ---------------------------------------------------------------------------------------------
// Codec round trips

#[test]
fn walk_artifacts_round_trip_through_their_decoders() {
    for recorded in corpus() {
        walks::assert_round_trip(&recorded.genesis, decode_genesis_root);
        let compact = compact_of(&recorded.entries);
        for (at, entry) in recorded.entries.iter().enumerate() {
            let before = recorded.state_before(at);
            walks::assert_round_trip(before, decode_state);
            walks::assert_round_trip(&entry.event, decode_event);
            for item in &entry.evidence_set {
                walks::assert_round_trip(item, decode_evidence);
            }
            walks::assert_round_trip(&entry.result, decode_outcome);
            walks::assert_round_trip(entry, decode_replay_entry);
            walks::assert_round_trip(&compact[at], decode_compact_entry);
            // The other two Result variants: the same event again, and at a stale revision.
            let after = entry.result.state();
            let repeated = reduce(after, &entry.event, &entry.evidence_set);
            assert_ne!(repeated.variant(), valp_kernel::Variant::Accepted);
            walks::assert_round_trip(&repeated, decode_outcome);
            let mut stale = entry.event.clone();
            stale.expected_revision = before.body.revision + 5;
            stale.event_id = id(IdentityKind::Event, "stale");
            let rejected = reduce(before, &stale, &entry.evidence_set);
            assert_eq!(rejected.error_code(), Some(ErrorCode::StateConflict));
            walks::assert_round_trip(&rejected, decode_outcome);
        }
        walks::assert_round_trip(recorded.final_state(), decode_state);
    }
}
