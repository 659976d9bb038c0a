//! Seeded walks recorded as replay entries, shared by the property, replay, checkpoint and
//! frontier tests.
//!
//! A [`Recorded`] walk holds the walk's steps and the same transitions as reference-form
//! ReplayEntries whose Results were computed by `reduce` (not by the walk's `LiveState`), so a
//! test that replays them checks one path of the kernel against the other.
//!
//! Each integration test crate compiles this module on its own and uses a different subset of
//! it, hence the `dead_code` allowance. It builds on `support` (identities, evidence).
#![allow(dead_code)]

use std::fmt::Debug;
use std::sync::OnceLock;

use proptest::sample::Index;

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::decode::DecodeError;
use valp_kernel::json::{self, Value};
use valp_kernel::replay::{CompactEntry, GenesisRoot, ReplayEntry};
use valp_kernel::walk::{Walk, WalkConfig, WalkStep};
use valp_kernel::{
    Accepted, AttemptStatus, CancellationScope, ControlStatus, ErrorCode, Event, EventKind,
    Evidence, IdentityKind, Open, Outcome, State, StateBody, WorkItemStatus, reduce,
};

use crate::support::{authorize, id};

/// The walk shapes every walk-based test covers: (work items, may terminate).
pub const SHAPES: [(usize, bool); 6] = [
    (0, false),
    (0, true),
    (3, false),
    (3, true),
    (20, false),
    (20, true),
];

/// Walks known to emit `adapter_cancel:` obligations within their first 30 steps (a
/// `work_item_cancelled`, a `task_cancelled` and a `redirect_authorized`), as (seed, work
/// items, may terminate).
pub const OBLIGATION_WALKS: [(u64, usize, bool); 3] =
    [(14, 5, false), (86, 8, true), (151, 5, false)];

/// The configuration of a walk.
pub fn config(seed: u64, (work_items, may_terminate): (usize, bool)) -> WalkConfig {
    WalkConfig {
        seed,
        work_items,
        may_terminate,
    }
}

/// The accepted variant of a Result; panics on any other.
pub fn accepted(outcome: &Outcome) -> &Accepted {
    match outcome {
        Outcome::Accepted(accepted) => accepted,
        other => panic!("expected an accepted Result, got {:?}", other.variant()),
    }
}

/// A walk recorded in both replay forms.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The walk's configuration (for failure messages).
    pub config: WalkConfig,
    /// The root the walk started from.
    pub genesis: GenesisRoot,
    /// The walk's steps (compact form).
    pub steps: Vec<WalkStep>,
    /// The same transitions as reference-form entries, Results computed by `reduce`.
    pub entries: Vec<ReplayEntry>,
}

impl Recorded {
    /// The first `max_steps` steps of the walk `config`.
    pub fn walk(config: WalkConfig, max_steps: usize) -> Self {
        let walk = Walk::new(config);
        let genesis = walk.genesis().clone();
        let mut recorded = Self {
            config,
            genesis,
            steps: Vec::new(),
            entries: Vec::new(),
        };
        for step in walk.take(max_steps) {
            recorded.push(step.event, step.evidence_set, Some(step.record));
        }
        recorded
    }

    /// Reduces `event` on the final State, requires acceptance (and, when given, the walk's
    /// own record of it), and appends it to both forms.
    pub fn push(
        &mut self,
        event: Event,
        evidence_set: Vec<Evidence>,
        walk_record: Option<valp_kernel::live::AcceptedRecord>,
    ) {
        let result = reduce(self.final_state(), &event, &evidence_set);
        let record = accepted(&result).record();
        if let Some(walk_record) = walk_record {
            assert_eq!(
                walk_record, record,
                "{:?}: walk and reduce disagree",
                self.config
            );
        }
        self.steps.push(WalkStep {
            event: event.clone(),
            evidence_set: evidence_set.clone(),
            record,
        });
        self.entries.push(ReplayEntry {
            event,
            evidence_set,
            result,
        });
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The State entry `index` applies to (`index == len()` gives the final State).
    pub fn state_before(&self, index: usize) -> &State {
        match index.checked_sub(1) {
            None => &self.genesis.state,
            Some(previous) => self.entries[previous].result.state(),
        }
    }

    /// The State after the last entry.
    pub fn final_state(&self) -> &State {
        self.state_before(self.entries.len())
    }

    /// The compact form of every entry.
    pub fn compact(&self) -> Vec<CompactEntry> {
        self.steps
            .iter()
            .cloned()
            .map(WalkStep::into_compact)
            .collect()
    }

    /// The result digest of every entry, in order.
    pub fn result_digests(&self) -> Vec<String> {
        self.steps
            .iter()
            .map(|step| step.record.result_digest.clone())
            .collect()
    }

    /// Total number of obligations the entries carry.
    pub fn obligation_count(&self) -> usize {
        self.steps
            .iter()
            .map(|step| step.record.obligations.len())
            .sum()
    }
}

/// The compact form of reference entries (which must all be accepted).
pub fn compact_of(entries: &[ReplayEntry]) -> Vec<CompactEntry> {
    entries
        .iter()
        .map(|entry| CompactEntry {
            event: entry.event.clone(),
            evidence_set: entry.evidence_set.clone(),
            result: accepted(&entry.result).record(),
        })
        .collect()
}

/// Two seeds of every shape, 24 steps each, plus the walks that emit obligations and one that
/// ends with a cancelled running attempt; computed once per test binary.
pub fn corpus() -> &'static [Recorded] {
    static CORPUS: OnceLock<Vec<Recorded>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let mut corpus: Vec<Recorded> = [3, 7]
            .into_iter()
            .flat_map(|seed| SHAPES.map(|shape| Recorded::walk(config(seed, shape), 24)))
            .collect();
        corpus.extend(
            OBLIGATION_WALKS.map(|(seed, items, terminate)| {
                Recorded::walk(config(seed, (items, terminate)), 30)
            }),
        );
        corpus.push(with_attempt_cancel(config(5, (3, false)), 60));
        corpus
    })
}

/// The walk `config` up to the first State with a submitted or running attempt (at most
/// `max_steps` steps), then an accepted `attempt_cancelled` for it, which emits an
/// `adapter_cancel:` obligation.
pub fn with_attempt_cancel(config: WalkConfig, max_steps: usize) -> Recorded {
    let mut walk = Walk::new(config);
    let mut recorded = Recorded {
        config,
        genesis: walk.genesis().clone(),
        steps: Vec::new(),
        entries: Vec::new(),
    };
    loop {
        if let Some((event, evidence_set)) = cancel_live_attempt(walk.live().body()) {
            recorded.push(event, evidence_set, None);
            let obligations = &recorded.steps[recorded.len() - 1].record.obligations;
            assert_eq!(obligations.len(), 1, "a running attempt's cancel emits one");
            return recorded;
        }
        assert!(recorded.len() < max_steps, "{config:?}: no live attempt");
        let step = walk.step().expect("the walk goes on");
        recorded.push(step.event, step.evidence_set, Some(step.record));
    }
}

/// An authorised `attempt_cancelled` for the first item whose attempt reached a runtime, if the
/// task is not interrupted.
fn cancel_live_attempt(body: &StateBody) -> Option<(Event, Vec<Evidence>)> {
    if body
        .control
        .as_ref()
        .is_some_and(|control| control.status == ControlStatus::Interrupted)
    {
        return None;
    }
    let (item, attempt) = body.work_items.iter().find_map(|item| {
        let attempt = item.current_attempt.as_ref()?;
        let live_item = matches!(
            item.status,
            WorkItemStatus::Submitted | WorkItemStatus::Running
        );
        let in_runtime = matches!(
            attempt.status,
            AttemptStatus::Submitted | AttemptStatus::Running
        );
        (live_item && in_runtime).then_some((item, attempt))
    })?;
    let mut event = Event::new(
        id(IdentityKind::Event, "cancel-live-attempt"),
        body.installation_id.clone(),
        body.leader_epoch,
        body.task_id.clone(),
        EventKind::AttemptCancelled,
        body.revision,
    );
    event.work_item_id = Some(item.work_item_id.clone());
    event.attempt_id = Some(attempt.attempt_id.clone());
    event.dispatch_id = Some(attempt.dispatch_id.clone());
    event.dispatch_generation = Some(attempt.dispatch_generation);
    event.cancellation_scope = Some(Open::Known(CancellationScope::Attempt));
    let evidence_set = authorize(&mut event);
    Some((event, evidence_set))
}

/// What the reducer answers when the event just accepted is proposed again with the same
/// input: `no_op`, except that an `attempt_fenced` targets an attempt that is now fenced, so it
/// is stale and refused before the idempotency check.
pub fn repeat_verdict(event: &Event) -> String {
    if event.kind == Open::Known(EventKind::AttemptFenced) {
        ErrorCode::StateConflict.as_str().to_owned()
    } else {
        "no_op".to_owned()
    }
}

/// Changes the last character of `text` (a digest's last hex digit, or any other text's last
/// character) to a different ASCII character: exactly one byte differs when it was ASCII.
pub fn flip_last(text: &mut String) {
    let last = text.pop().expect("non-empty text");
    text.push(if last == '0' { '1' } else { '0' });
}

/// The JSON value of a kernel artifact's canonical bytes (without the final LF), checking on
/// the way that the strict canonical reader accepts those bytes and reads the same value.
pub fn parsed(artifact: &impl Canonical) -> Value {
    let bytes = artifact.canonical_bytes();
    let text = std::str::from_utf8(&bytes[..bytes.len() - 1]).expect("canonical bytes are UTF-8");
    let value = json::parse(text).expect("canonical text parses");
    assert_eq!(decode_canonical(&bytes), Ok(value.clone()));
    value
}

/// Asserts `decode(encode(artifact)) == artifact` and that re-encoding gives the same bytes.
pub fn assert_round_trip<T>(artifact: &T, decode: fn(&Value) -> Result<T, DecodeError>)
where
    T: Canonical + PartialEq + Debug,
{
    let decoded = decode(&parsed(artifact)).expect("canonical artifact decodes");
    assert_eq!(&decoded, artifact);
    assert_eq!(decoded.canonical_bytes(), artifact.canonical_bytes());
}

/// A permutation of `items` (Fisher-Yates, the swap at each position picked by `swaps`, which
/// needs one index per item after the first).
pub fn shuffled<T: Clone>(items: &[T], swaps: &[Index]) -> Vec<T> {
    assert!(swaps.len() + 1 >= items.len(), "not enough swaps");
    let mut shuffled = items.to_vec();
    for (position, swap) in (1..shuffled.len()).rev().zip(swaps) {
        shuffled.swap(position, swap.index(position + 1));
    }
    shuffled
}
