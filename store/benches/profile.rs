//! Fixtures kept on disk for profiling under `valgrind --tool=callgrind` or `perf`.
//!
//! **An open.** `cargo bench -p valp-store --bench profile` builds a task journal of
//! `VALP_STORE_PROFILE_ENTRIES` entries (default 2,000) over 20 work items, verifies it once,
//! keeps its control root and prints its path. Run the same binary under callgrind with
//! `VALP_STORE_BENCH_PROBE_ROOT=<path>` and `--toggle-collect='*open_task*'` to count only the
//! instructions of the open (ARCHITECTURE.md, "Where an open's instructions go", gives the
//! command and the breakdown per entry). The path is printed, never deleted: remove it by hand.
//!
//! **Bulk appends.** With `VALP_STORE_PROFILE_APPEND=<work items>` it instead creates a fresh
//! task in a scratch folder on the workspace's disk, generates `VALP_STORE_PROFILE_BATCHES`
//! batches (default 8) of 1,024 walk steps first, then appends them with
//! `Journal::append_batch`, one call per batch, and prints the entries appended and the wall
//! time, and how long the thread was on a CPU (the wait for a core on a loaded machine
//! aside). With `VALP_STORE_PROFILE_PIPELINED` set it appends them with one
//! `Journal::append_pipelined` call instead, and also prints the CPU time of all threads (the
//! writer's included). Under callgrind, `--toggle-collect='*append_batch*'` counts only the appends
//! (ARCHITECTURE.md, "Bulk append on disk").

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Instant;

use common::{
    WORK_ITEMS, as_f64, build_journals, init_root, run_probe_if_asked, scratch_temp, walk,
};
use valp_store::Appended;

/// Entries per batch (what `valp demo` and the `append_batch` benchmark use).
const BATCH: usize = 1_024;

fn main() {
    if run_probe_if_asked() {
        return;
    }
    if let Some(work_items) = env_number("VALP_STORE_PROFILE_APPEND") {
        profile_appends(
            work_items,
            env_number("VALP_STORE_PROFILE_BATCHES").unwrap_or(8),
        );
        return;
    }
    let entries = env_number("VALP_STORE_PROFILE_ENTRIES").unwrap_or(2_000);
    let built = build_journals(WORK_ITEMS, &[entries])
        .pop()
        .expect("one journal");
    built.verify();
    let root = built.root.layout().root().to_owned();
    let _kept = built.temp.keep();
    println!("{}", root.display());
}

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()
        .map(|text| text.parse().expect("a number"))
}

/// Appends `batches` batches of the walk over `work_items` items to a fresh task.
fn profile_appends(work_items: usize, batches: usize) {
    let temp = scratch_temp();
    let root = init_root(temp.path());
    let mut walk = walk(work_items);
    let mut journal = root.create_task(walk.genesis()).unwrap();
    let steps: Vec<Vec<_>> = (0..batches)
        .map(|_| walk.by_ref().take(BATCH).collect())
        .collect();
    let pipelined = std::env::var_os("VALP_STORE_PROFILE_PIPELINED").is_some();
    let cpu_before = cpu_ns();
    let process_before = process_cpu_ms();
    let started = Instant::now();
    if pipelined {
        let proposals = steps
            .into_iter()
            .flatten()
            .map(|step| (step.event, step.evidence_set));
        journal
            .append_pipelined(proposals, BATCH, |answers| {
                assert!(
                    answers
                        .iter()
                        .all(|answer| matches!(answer, Appended::Accepted { .. }))
                );
            })
            .unwrap();
    } else {
        for batch in &steps {
            let answers = journal
                .append_batch(
                    batch
                        .iter()
                        .map(|step| (&step.event, step.evidence_set.as_slice())),
                )
                .unwrap();
            assert!(
                answers
                    .iter()
                    .all(|answer| matches!(answer, Appended::Accepted { .. }))
            );
        }
    }
    let elapsed = started.elapsed();
    let cpu = cpu_ns()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let process = process_cpu_ms()
        .zip(process_before)
        .map(|(after, before)| after - before);
    let entries = batches * BATCH;
    let wall_ms = elapsed.as_secs_f64() * 1e3;
    println!(
        "{entries} entries over {work_items} work items{} in {wall_ms:.1} ms ({:.0} entries/s); \
         calling thread on CPU {} ms, all threads {} ms",
        if pipelined { ", pipelined," } else { "" },
        as_f64(u64::try_from(entries).unwrap()) / elapsed.as_secs_f64(),
        cpu.map_or_else(|| "?".to_owned(), |ns| format!("{:.1}", as_f64(ns) / 1e6)),
        process.map_or_else(|| "?".to_owned(), |ms| ms.to_string()),
    );
}

/// Milliseconds the whole process has run on a CPU, user and system (`/proc/self/stat`, in
/// clock ticks of 10 ms), threads that ended included; `None` where it is missing.
fn process_cpu_ms() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((user + system) * 10)
}

/// Nanoseconds this thread has run on a CPU (`/proc/thread-self/schedstat`), to tell the
/// appends' own cost from the wait for a core on a loaded machine; `None` where it is missing.
fn cpu_ns() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
