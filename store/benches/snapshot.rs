//! Task snapshots (layout 4, issue 20): what an open from the newest snapshot costs, and what
//! writing one costs, at 10^4 and 10^5 entries over [`WORK_ITEMS`] work items.
//!
//! - `snapshot_open/reader/<len>`: `ControlRoot::open_task(.., Access::ReadOnly)` of a journal
//!   whose newest snapshot is at its last line: the snapshot JSON and its whole index file read
//!   and checked (digest, binding line read back and verified), the State rebuilt holding the
//!   index's keys only (what the console's task handles and `valp task status` open).
//! - `snapshot_open/writer/<len>`: the same open by a writer, which also holds the index's
//!   digests (it writes the next snapshot) and takes the task lock.
//! - `snapshot_write/<len>`: `Journal::write_snapshot` by a writer at that line: the index file
//!   and the JSON each written aside, `fsync`ed and renamed, the folder `fsync`ed, then the
//!   older ones pruned. Where the scratch folder lives decides the `fsync` cost (printed).
//!
//! The journals are built once before timing (`common::build_journals`), given their head
//! anchor, then opened once by a writer, whose open replays them from the genesis and leaves
//! the snapshot; opens are warm.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use common::{
    Built, TASK, WORK_ITEMS, build_journals, configure_slow, describe_filesystem, scaled,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use valp_store::Access;
use valp_store::head;
use valp_store::io::OsStorage;
use valp_store::snapshot;

/// A snapshot at the last line of `built`'s journal: its head anchor written for the lines
/// `build_journals` streamed in, then a writer's open replays them and leaves one.
fn with_snapshot(built: &Built) {
    let path = built.path();
    let head = head::of_lines(&std::fs::read(&path).unwrap()).unwrap();
    head::write(&OsStorage, &head::head_path(&path), &head, true).unwrap();
    let mut writer = built.root.open_task(TASK, Access::Write).unwrap();
    assert_eq!(writer.len(), built.entries as u64);
    if snapshot::list(&built.root.layout().task_dir(TASK))
        .unwrap()
        .first()
        .is_none_or(|(seq, _)| *seq != built.entries as u64)
    {
        writer
            .write_snapshot()
            .unwrap()
            .expect("a writer at an anchored tip writes a snapshot");
    }
}

fn snapshots(criterion: &mut Criterion) {
    let lens = [scaled(10_000).max(10), scaled(100_000).max(10)];
    let built = build_journals(WORK_ITEMS, &lens);
    if let Some(first) = built.first() {
        describe_filesystem(first.temp.path());
    }
    for journal in &built {
        with_snapshot(journal);
    }
    let mut group = criterion.benchmark_group("snapshot_open");
    configure_slow(&mut group);
    for (name, access) in [("reader", Access::ReadOnly), ("writer", Access::Write)] {
        for journal in &built {
            group.throughput(Throughput::Elements(journal.entries as u64));
            group.bench_with_input(
                BenchmarkId::new(name, journal.entries),
                journal,
                |bencher, journal| {
                    bencher.iter(|| {
                        let opened = journal.root.open_task(TASK, access).unwrap();
                        assert_eq!(opened.len(), journal.entries as u64);
                        assert!(!opened.live().keeps_history(), "opened from the snapshot");
                        opened
                    });
                },
            );
        }
    }
    group.finish();

    let mut group = criterion.benchmark_group("snapshot_write");
    configure_slow(&mut group);
    for journal in &built {
        let mut writer = journal.root.open_task(TASK, Access::Write).unwrap();
        group.throughput(Throughput::Elements(journal.entries as u64));
        group.bench_function(BenchmarkId::from_parameter(journal.entries), |bencher| {
            bencher.iter(|| writer.write_snapshot().unwrap().unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, snapshots);
criterion_main!(benches);
