//! Setup shared by the kernel benchmarks: seeded legal histories from [`Walk`], reference-form
//! entries rebuilt from them, and small States to feed the pure reducer.
//!
//! Everything here runs outside the timed loops.

// Each bench binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::time::Duration;

/// The allocator the `valp` binary uses, so the figures are the ones valp gets. (glibc's
/// allocator fragments under replay's many short-lived strings: about 2x slower here.)
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, SamplingMode};
use valp_kernel::live::LiveState;
use valp_kernel::replay::{CompactEntry, GenesisRoot, ReplayEntry};
use valp_kernel::walk::{Walk, WalkConfig, WalkStep};
use valp_kernel::{Event, Evidence, Outcome, State, TaskStatus, reduce};

/// Seed of every walk the benchmarks use.
pub const SEED: u64 = 0x0003_5EED;

/// Work items of the "realistic" task size the targets are stated for.
pub const WORK_ITEMS: usize = 20;

/// A legal history: the root it starts from and its accepted entries in compact form.
pub struct History {
    /// The root.
    pub genesis: GenesisRoot,
    /// The entries, in order.
    pub entries: Vec<CompactEntry>,
}

fn walk(work_items: usize) -> Walk {
    Walk::new(WalkConfig {
        seed: SEED,
        work_items,
        may_terminate: false,
    })
}

/// The first `len` accepted steps of the seeded walk over a task with `work_items` items.
///
/// A prefix of a legal history is a legal history, so benchmarks of several lengths slice one
/// generated history.
pub fn history(work_items: usize, len: usize) -> History {
    let mut walk = walk(work_items);
    let genesis = walk.genesis().clone();
    let entries: Vec<CompactEntry> = walk
        .by_ref()
        .take(len)
        .map(WalkStep::into_compact)
        .collect();
    assert_eq!(entries.len(), len, "a non-terminating walk yields forever");
    History { genesis, entries }
}

/// The reference-form entries of a history: each Result embeds the full next State, history
/// included, as the reference kernel records it. Built by running [`reduce`] step by step.
pub fn reference_entries(genesis: &GenesisRoot, entries: &[CompactEntry]) -> Vec<ReplayEntry> {
    let mut state = genesis.state.clone();
    entries
        .iter()
        .map(|entry| {
            let result = reduce(&state, &entry.event, &entry.evidence_set);
            let accepted = result
                .accepted()
                .expect("walk entries are accepted by reduce");
            assert_eq!(
                accepted.record(),
                entry.result,
                "reduce and LiveState disagree"
            );
            state = accepted.state.clone();
            ReplayEntry {
                event: entry.event.clone(),
                evidence_set: entry.evidence_set.clone(),
                result,
            }
        })
        .collect()
}

/// A State taken from the seeded walk and the event the walk accepted next in it.
pub struct Step {
    /// The State before the event.
    pub state: State,
    /// The next accepted event.
    pub event: Event,
    /// Its evidence.
    pub evidence_set: Vec<Evidence>,
}

impl Step {
    /// The State as a [`LiveState`].
    pub fn live(&self) -> LiveState {
        LiveState::new(self.state.clone())
    }
}

/// The first State of the walk over `work_items` items whose status is `status` and whose
/// history has at least `min_history` entries, with the event the walk accepted next.
pub fn step_at(work_items: usize, status: TaskStatus, min_history: usize) -> Step {
    let mut walk = walk(work_items);
    loop {
        let live = walk.live();
        if live.body().status.known() == Some(status) && live.history().len() >= min_history {
            let state = live.to_state();
            let step = walk.step().expect("a non-terminating walk yields forever");
            return Step {
                state,
                event: step.event,
                evidence_set: step.evidence_set,
            };
        }
        walk.step().expect("a non-terminating walk yields forever");
    }
}

/// Asserts that `reduce` accepts the step, so a benchmark times the accepting path.
pub fn assert_accepted(step: &Step) {
    let outcome = reduce(&step.state, &step.event, &step.evidence_set);
    assert!(
        matches!(outcome, Outcome::Accepted(_)),
        "expected acceptance, got {outcome:?}"
    );
}

/// Settings for groups whose routine takes microseconds: short warm-up and measurement, so that
/// the whole suite stays within a few minutes.
pub fn configure_fast(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
        .sample_size(20);
}

/// Settings for groups whose routine takes milliseconds to seconds (a replay of 10^5 entries):
/// ten flat samples (criterion's minimum), each of a single iteration when the routine is slow,
/// after a single warm-up iteration.
pub fn configure_slow(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}
