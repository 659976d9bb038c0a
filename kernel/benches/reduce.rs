//! Throughput of the pure reducer on small States, next to [`LiveState::apply`] on the same
//! inputs.
//!
//! `reduce()` is pure, so the same (State, Event, EvidenceSet) is accepted on every iteration;
//! the benchmark times the accepting path, including the copy of the State it returns. Target:
//! at least 2 M events/s on a small State.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use std::hint::black_box;

use common::{Step, assert_accepted, configure_fast, step_at};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use valp_kernel::canonical::Canonical;
use valp_kernel::live::Verdict;
use valp_kernel::{TaskStatus, reduce};

fn cases() -> Vec<(&'static str, Step)> {
    vec![
        ("published_0wi_h0", step_at(0, TaskStatus::Published, 0)),
        ("executing_0wi_h3", step_at(0, TaskStatus::Executing, 0)),
        ("executing_3wi_h3", step_at(3, TaskStatus::Executing, 0)),
        ("executing_3wi_h20", step_at(3, TaskStatus::Executing, 20)),
        ("executing_20wi_h50", step_at(20, TaskStatus::Executing, 50)),
        // The reference-shaped entry point copies and rescans the history: O(history).
        (
            "executing_20wi_h1000",
            step_at(20, TaskStatus::Executing, 1000),
        ),
    ]
}

fn bench_reduce(c: &mut Criterion) {
    let cases = cases();
    let mut group = c.benchmark_group("reduce");
    configure_fast(&mut group);
    group.throughput(Throughput::Elements(1));
    for (name, step) in &cases {
        assert_accepted(step);
        eprintln!(
            "reduce/{name}: State {} canonical bytes, Event {} bytes, {} evidence",
            step.state.canonical_bytes().len(),
            step.event.canonical_bytes().len(),
            step.evidence_set.len(),
        );
        assert_eq!(
            step.state.accepted_events.len(),
            usize::try_from(step.state.body.revision).unwrap()
        );
        group.bench_function(*name, |b| {
            b.iter(|| {
                reduce(
                    black_box(&step.state),
                    black_box(&step.event),
                    black_box(&step.evidence_set),
                )
            });
        });
    }
    group.finish();

    // The same events through the in-place path (the LiveState clone is untimed setup).
    let mut group = c.benchmark_group("live_apply_one");
    configure_fast(&mut group);
    group.throughput(Throughput::Elements(1));
    for (name, step) in cases
        .iter()
        .filter(|(_, step)| step.state.body.revision < 100)
    {
        let live = step.live();
        group.bench_function(*name, |b| {
            b.iter_batched_ref(
                || live.clone(),
                |live| {
                    let verdict = live.apply(black_box(&step.event), black_box(&step.evidence_set));
                    debug_assert!(matches!(verdict, Verdict::Accepted(_)));
                    verdict
                },
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

criterion_group!(benches, bench_reduce);
criterion_main!(benches);
