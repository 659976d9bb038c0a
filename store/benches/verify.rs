//! What `valp verify` costs per task-journal entry, next to the protocol's floor.
//!
//! - `verify_entry/<len>`: `ControlRoot::verify_task_dir` (read, canonical check, chain, decode,
//!   full kernel replay with the lean idempotency index) of a journal of `len` entries over
//!   [`WORK_ITEMS`] work items, reported per entry (criterion's throughput is one element per
//!   entry).
//! - `verify_entry/floor`: the two SHA-256 passes over the State body that every accepted event
//!   costs whatever the implementation (the result digest embeds the next body, the next
//!   event's prior-State digest the same body in another preimage), over the final body of the
//!   same walk: the per-entry figure above divided by this one is the ratio to the floor.
//!
//! - `read_ahead/<way>/<len>`: the same verify with the lines read ahead on a second thread and
//!   the digests checked on a third (`ahead`, what `verify_entry` does above the threshold),
//!   read ahead with the digests checked as each line is applied (`ahead_digests_inline`, as
//!   before `journal/digest_checks.rs`), or everything on the calling thread (`inline`, as
//!   before the read-ahead), at short and long lengths: where they cross is the threshold
//!   (`journal/read_ahead.rs`'s `MIN_BYTES`), and at 10^3-10^4 the before/after of each step
//!   in one sitting.
//!
//! The journals are built once before timing (`common::build_journals`) and opened warm.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use common::{TASK, WORK_ITEMS, build_journals, configure_slow, scaled};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::Canonical;
use valp_store::journal::{set_digest_checks_aside, set_read_ahead_threshold};

fn verify_entry(criterion: &mut Criterion) {
    let lens = [scaled(1_000).max(10), scaled(10_000).max(10)];
    let built = build_journals(WORK_ITEMS, &lens);
    let mut group = criterion.benchmark_group("verify_entry");
    configure_slow(&mut group);
    for journal in &built {
        let dir = journal.root.layout().task_dir(TASK);
        group.throughput(Throughput::Elements(journal.entries as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(journal.entries),
            &dir,
            |bencher, dir| {
                bencher.iter(|| {
                    let opened = journal.root.verify_task_dir(dir).unwrap();
                    assert_eq!(opened.len(), journal.entries as u64);
                    opened
                });
            },
        );
    }
    let last = built.last().unwrap().open();
    let body = last.live().body().canonical_bytes();
    group.throughput(Throughput::Elements(1));
    group.bench_function("floor", |bencher| {
        bencher.iter(|| {
            let first: [u8; 32] = Sha256::digest(&body).into();
            let second: [u8; 32] = Sha256::new()
                .chain_update(b"x")
                .chain_update(&body)
                .finalize()
                .into();
            (first, second)
        });
    });
    group.finish();
}

fn read_ahead(criterion: &mut Criterion) {
    if !common::selected("read_ahead") {
        return;
    }
    let mut lens = vec![16, 64, 256, scaled(1_000).max(10), scaled(10_000).max(10)];
    lens.sort_unstable();
    lens.dedup();
    let built = build_journals(WORK_ITEMS, &lens);
    let mut group = criterion.benchmark_group("read_ahead");
    configure_slow(&mut group);
    for journal in &built {
        let dir = journal.root.layout().task_dir(TASK);
        group.throughput(Throughput::Elements(journal.entries as u64));
        for (way, threshold, aside) in [
            ("ahead", 0, true),
            ("ahead_digests_inline", 0, false),
            ("inline", u64::MAX, true),
        ] {
            group.bench_with_input(
                BenchmarkId::new(way, journal.entries),
                &dir,
                |bencher, dir| {
                    set_read_ahead_threshold(Some(threshold));
                    set_digest_checks_aside(aside);
                    bencher.iter(|| {
                        let opened = journal.root.verify_task_dir(dir).unwrap();
                        assert_eq!(opened.len(), journal.entries as u64);
                        opened
                    });
                    set_read_ahead_threshold(None);
                    set_digest_checks_aside(true);
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, verify_entry, read_ahead);
criterion_main!(benches);
