//! Durable append latency: `Journal::append` on a real file (take the lock, catch up with other
//! writers, run the kernel, write one line, `fdatasync`, release), on the workspace's disk
//! (`target/valp-store-bench/`, not a tmpfs). Target: p99 <= 2 ms.
//!
//! - `append/durable/<N>wi`: one accepted event of the seeded walk per iteration, over tasks
//!   with 0 and 20 work items; the journal grows as the benchmark runs. Each call is timed on
//!   its own (`iter_custom`), so generating the next event is not timed.
//! - `append/tmpfs/20wi`: the same in `/dev/shm`, where `fdatasync` costs nothing: what the
//!   append costs apart from the disk.
//! - `append/fdatasync_only`: writing a line of the same size to a plain file and
//!   `fdatasync`ing it, the floor the disk sets.
//!
//! - `append_batch/durable/<N>wi`: `Journal::append_batch` of [`BATCH`] accepted events of the
//!   walk per iteration (one lock, one `write`, one `fdatasync`, one head rewrite), on disk;
//!   throughput in entries per second (issue 20's bulk-append target: >= 50,000 entries/s).
//!   The steps are generated before each timed call.
//! - `append_batch/pipelined/<N>wi`: `Journal::append_pipelined` of [`PIPELINED`] batches of
//!   [`BATCH`] per iteration (the kernel's work on a batch overlapping the writing and
//!   `fdatasync` of the one before), the same journals' growth otherwise.
//!
//! Criterion reports means; before each benchmark the output also prints p50/p90/p99/p99.9/max
//! of [`APPENDS`] consecutive calls timed one by one, and the first call on a fresh handle
//! (which also opens the file for appending) separately.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    Percentiles, WORK_ITEMS, describe_filesystem, init_root, scaled, scratch_temp, selected, walk,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use valp_kernel::walk::Walk;
use valp_store::{Appended, Journal};

/// Calls timed one by one for the percentiles.
const APPENDS: usize = 2_000;

/// Entries per `append_batch` call (what `valp demo` uses).
const BATCH: usize = 1_024;

/// Appends the walk's next step and returns how long `Journal::append` took.
fn timed_append(journal: &mut Journal, walk: &mut Walk) -> Duration {
    let step = walk.next().expect("a non-terminating walk yields forever");
    let started = Instant::now();
    let appended = journal.append(&step.event, &step.evidence_set).unwrap();
    let elapsed = started.elapsed();
    assert!(
        matches!(appended, Appended::Accepted { .. }),
        "{appended:?}"
    );
    elapsed
}

/// A fresh task journal in `dir` and the walk that feeds it.
fn fresh_journal(dir: &Path, work_items: usize) -> (Journal, Walk) {
    let root = init_root(dir);
    let walk = walk(work_items);
    let journal = root.create_task(walk.genesis()).unwrap();
    (journal, walk)
}

fn bench_append(c: &mut Criterion) {
    let disk = scratch_temp();
    describe_filesystem(disk.path());
    let shm = Path::new("/dev/shm");
    let ram = shm
        .is_dir()
        .then(|| {
            tempfile::Builder::new()
                .prefix("valp-store-bench-")
                .tempdir_in(shm)
        })
        .and_then(Result::ok);
    let mut cases = vec![
        ("durable/0wi", disk.path().join("0wi"), 0),
        ("durable/20wi", disk.path().join("20wi"), WORK_ITEMS),
    ];
    if let Some(ram) = &ram {
        describe_filesystem(ram.path());
        cases.push(("tmpfs/20wi", ram.path().join("20wi"), WORK_ITEMS));
    }

    let mut group = c.benchmark_group("append");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let mut line_len = 1_000;
    cases.retain(|(name, _, _)| selected(&format!("append/{name}")));
    for (name, dir, work_items) in cases {
        let (mut journal, mut walk) = fresh_journal(&dir, work_items);
        let first = timed_append(&mut journal, &mut walk);
        let samples: Vec<Duration> = (0..scaled(APPENDS))
            .map(|_| timed_append(&mut journal, &mut walk))
            .collect();
        let bytes = journal.verified_bytes();
        line_len = usize::try_from(bytes / journal.len()).unwrap();
        eprintln!(
            "{}; first call {:.3} ms; journal now {} entries, {bytes} bytes",
            Percentiles::of(&samples).line(&format!("append/{name}")),
            first.as_secs_f64() * 1e3,
            journal.len(),
        );
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| timed_append(&mut journal, &mut walk))
                    .sum()
            });
        });
    }

    if !selected("append/fdatasync_only") {
        group.finish();
        return;
    }
    // The disk's floor: one line of the same size written and fdatasynced (about 1 KB, the
    // size of a journal line, when no journal ran before).
    let path = disk.path().join("plain.jsonl");
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let mut line = vec![b'x'; line_len];
    *line.last_mut().unwrap() = b'\n';
    let mut write_sync = || {
        let started = Instant::now();
        file.write_all(&line).unwrap();
        file.sync_data().unwrap();
        started.elapsed()
    };
    let samples: Vec<Duration> = (0..scaled(APPENDS)).map(|_| write_sync()).collect();
    eprintln!(
        "{} ({line_len}-byte lines)",
        Percentiles::of(&samples).line("append/fdatasync_only")
    );
    group.bench_function("fdatasync_only", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| write_sync()).sum());
    });
    group.finish();
}

/// Batches per `append_pipelined` call.
const PIPELINED: usize = 8;

/// Appends the walk's next `PIPELINED * BATCH` steps with `Journal::append_pipelined` and
/// returns how long it took.
fn timed_pipelined(journal: &mut Journal, walk: &mut Walk) -> Duration {
    let steps: Vec<_> = walk
        .by_ref()
        .take(PIPELINED * BATCH)
        .map(|step| (step.event, step.evidence_set))
        .collect();
    let mut accepted = 0;
    let started = Instant::now();
    journal
        .append_pipelined(steps, BATCH, |answers| {
            accepted += answers
                .iter()
                .filter(|answer| matches!(answer, Appended::Accepted { .. }))
                .count();
        })
        .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(accepted, PIPELINED * BATCH, "a walk step was not accepted");
    elapsed
}

/// Appends the walk's next [`BATCH`] steps in one batch and returns how long
/// `Journal::append_batch` took.
fn timed_batch(journal: &mut Journal, walk: &mut Walk) -> Duration {
    let steps: Vec<_> = walk.by_ref().take(BATCH).collect();
    let started = Instant::now();
    let answers = journal
        .append_batch(
            steps
                .iter()
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        answers
            .iter()
            .all(|answer| matches!(answer, Appended::Accepted { .. })),
        "a walk step was not accepted"
    );
    elapsed
}

/// A way of appending: the bench name, entries per timed call, and the timed call.
type Appender = (&'static str, usize, fn(&mut Journal, &mut Walk) -> Duration);

fn bench_append_batch(c: &mut Criterion) {
    let disk = scratch_temp();
    describe_filesystem(disk.path());
    let mut group = c.benchmark_group("append_batch");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    let appenders: [Appender; 2] = [
        ("durable", BATCH, timed_batch),
        ("pipelined", PIPELINED * BATCH, timed_pipelined),
    ];
    for (mode, per_call, timed) in appenders {
        for (items, work_items) in [("0wi", 0), ("20wi", WORK_ITEMS)] {
            let name = format!("{mode}/{items}");
            if !selected(&format!("append_batch/{name}")) {
                continue;
            }
            let (mut journal, mut walk) =
                fresh_journal(&disk.path().join(name.replace('/', "-")), work_items);
            // 20 batches' worth when benchmarking, 1 call under `cargo test --benches`.
            let samples: Vec<Duration> = (0..(scaled(APPENDS) * BATCH / 100 / per_call).max(1))
                .map(|_| timed(&mut journal, &mut walk))
                .collect();
            let total: Duration = samples.iter().sum();
            let entries = u32::try_from(samples.len() * per_call).unwrap();
            eprintln!(
                "{}; {:.0} entries/s over {} calls of {per_call}",
                Percentiles::of(&samples).line(&format!("append_batch/{name}")),
                f64::from(entries) / total.as_secs_f64(),
                samples.len(),
            );
            group.throughput(Throughput::Elements(per_call as u64));
            group.bench_function(&name, |b| {
                b.iter_custom(|iters| (0..iters).map(|_| timed(&mut journal, &mut walk)).sum());
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_append, bench_append_batch);
criterion_main!(benches);
