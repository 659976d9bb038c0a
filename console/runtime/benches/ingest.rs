//! Observation ingest: latency from a file write to its `Ingested` item, and throughput of a
//! JSONL flood through the bounded channel. Targets: p99 <= 100 ms with inotify; >= 50,000
//! observation lines/s with memory that does not grow with the flood.
//!
//! - `ingest/latency/atomic_write`: an adapter replaces its observation file (temporary name,
//!   write, rename); timed from before the write to the `Ingested::File` on the receiver.
//!   Before it, the output prints p50/p90/p99/p99.9/max of [`LATENCY_SAMPLES`] writes timed one
//!   by one with inotify, and of [`POLL_SAMPLES`] with the polling fallback (100 ms interval).
//! - `ingest/flood/transport`: [`FLOOD_SMALL`] observation lines appended to a new `*.jsonl`
//!   file, one `write` per line, as fast as one thread can; timed until the receiver has every
//!   line (criterion's throughput is lines/s).
//! - Before it, two floods of [`FLOOD_LINES`] lines print lines/s and the process's peak
//!   resident memory (`VmHWM`) before and after: one where the consumer only counts the lines
//!   (the transport), one where it also runs `decode_observation` (size cap, strict decoding,
//!   every ABI check with its two SHA-256 ids) on each line (the whole ingest path).
//!
//! Every line is a real `valp-adapter-observation.v1` record (about 1.1 KB, canonical form) from
//! a pool of 1,000 distinct ones.

// A benchmark that cannot do its job fails loudly; rates are printed as floating point.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss
)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group};
#[path = "support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;
use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_runtime::abi::{
    ABI_VERSION, AdapterObservation, AdapterRequest, ObservationStatus, Operation, ProofKind,
    ProvenanceSegment,
};
use valp_runtime::ingest::{Ingested, Limits, WatchConfig, Watcher, decode_observation};

/// The allocator the `valp` binary uses, so the figures are the ones valp gets.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Atomic writes timed one by one (inotify).
const LATENCY_SAMPLES: usize = 2_000;
/// Atomic writes timed one by one (polling).
const POLL_SAMPLES: usize = 40;
/// Lines of each reported flood.
const FLOOD_LINES: usize = 500_000;
/// Lines of the flood criterion repeats.
const FLOOD_SMALL: usize = 50_000;
/// Capacity of the item channel (the default).
const CAPACITY: usize = 1024;

/// A control root with `runtime/` and `inbox/` in a fresh temporary folder.
fn control_root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir(base.join("runtime")).unwrap();
    fs::create_dir(base.join("inbox")).unwrap();
    (dir, base)
}

fn start(base: &Path, polling: bool) -> (Watcher, Receiver<Ingested>) {
    let (watcher, items) = Watcher::start(WatchConfig {
        capacity: CAPACITY,
        rescan_every: Duration::from_secs(3600),
        poll_interval: Duration::from_millis(100),
        force_polling: polling,
        ..WatchConfig::control_root(base)
    })
    .unwrap();
    wait_rescanned(&items);
    (watcher, items)
}

fn wait_rescanned(items: &Receiver<Ingested>) {
    loop {
        if let Ingested::Rescanned { .. } = items.recv().unwrap() {
            return;
        }
    }
}

/// `count` distinct observations of the process adapter, canonical, one per line.
fn observation_lines(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|n| {
            let request = AdapterRequest::new(
                Operation::Submit,
                "inst-1",
                1,
                "TASK-1",
                &format!("item-{n}"),
                &format!("attempt-{n}"),
                &format!("TASK-1:item-{n}:1"),
                1,
                &sha256_digest(b"payload"),
                vec!["out/report.txt".to_owned()],
            );
            let segment = ProvenanceSegment {
                segment_id: "seg-0".to_owned(),
                sequence: 0,
                adapter_id: "process".to_owned(),
                abi_version: ABI_VERSION.to_owned(),
                input_identity: request.request_id.clone(),
                input_digest: request.payload_digest.clone(),
                output_identity: format!("process:{n}:1234"),
                output_digest: sha256_digest(format!("{n}").as_bytes()),
                proof_kind: ProofKind::ProcessBound,
                evidence_refs: vec![format!("proofs/{n}.json")],
                acknowledged: true,
                failure_code: None,
            };
            AdapterObservation::new(
                request,
                1,
                ObservationStatus::Accepted,
                vec![segment],
                vec![],
                Some(format!("process:{n}:1234")),
                None,
            )
            .canonical_bytes()
        })
        .collect()
}

/// Replaces `path` atomically with `bytes` and returns how long until its item arrived.
fn timed_write(path: &Path, temp: &Path, bytes: &[u8], items: &Receiver<Ingested>) -> Duration {
    let started = Instant::now();
    let mut file = File::create(temp).unwrap();
    file.write_all(bytes).unwrap();
    drop(file);
    fs::rename(temp, path).unwrap();
    loop {
        match items.recv().unwrap() {
            Ingested::File { bytes: got, .. } if got == bytes => return started.elapsed(),
            Ingested::Rescanned { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
}

fn latency_report(lines: &[Vec<u8>]) {
    for (polling, samples) in [(false, LATENCY_SAMPLES), (true, POLL_SAMPLES)] {
        let (_dir, base) = control_root();
        fs::create_dir_all(base.join("runtime/process/attempts/ab")).unwrap();
        let path = base.join("runtime/process/attempts/ab/abi-observe-waiting.json");
        let temp = path.with_file_name(".abi-observe-waiting.json.tmp");
        let (watcher, items) = start(&base, polling);
        let timings: Vec<Duration> = (0..samples)
            .map(|n| timed_write(&path, &temp, &lines[n % lines.len()], &items))
            .collect();
        let label = format!("ingest/latency/atomic_write ({})", watcher.mode());
        eprintln!(
            "{}",
            Percentiles(timings).line(&label, &[500, 900, 990, 999])
        );
    }
}

/// `/proc/self/status` fields in KiB.
fn memory_kib(field: &str) -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Appends `count` lines to a new file under `inbox/`, one `write` per line, and returns once
/// `consume` has seen every line: how long, and how many lines `consume` accepted.
fn flood(
    base: &Path,
    items: &Receiver<Ingested>,
    lines: &[Vec<u8>],
    count: usize,
    name: &str,
    mut consume: impl FnMut(&Path, &[u8]) -> bool,
) -> (Duration, usize) {
    let path = base.join("inbox").join(name);
    let writer = {
        let lines = lines.to_vec();
        std::thread::spawn(move || {
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            for n in 0..count {
                file.write_all(&lines[n % lines.len()]).unwrap();
            }
        })
    };
    let started = Instant::now();
    let mut seen = 0;
    let mut accepted = 0;
    while seen < count {
        match items.recv().unwrap() {
            Ingested::Line { path, bytes, .. } => {
                seen += 1;
                accepted += usize::from(consume(&path, &bytes));
            }
            Ingested::Rescanned { .. } => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    let elapsed = started.elapsed();
    writer.join().unwrap();
    (elapsed, accepted)
}

fn flood_report(lines: &[Vec<u8>]) {
    let (_dir, base) = control_root();
    let (_watcher, items) = start(&base, false);
    let limits = Limits::default();
    let average = lines.iter().map(Vec::len).sum::<usize>() / lines.len();
    for decode in [false, true] {
        let before = (memory_kib("VmHWM:"), memory_kib("VmRSS:"));
        let name = format!("flood-{decode}.jsonl");
        let (elapsed, accepted) = flood(&base, &items, lines, FLOOD_LINES, &name, |path, bytes| {
            !decode || decode_observation(path, bytes, &limits).is_ok()
        });
        assert_eq!(accepted, FLOOD_LINES);
        let after = (memory_kib("VmHWM:"), memory_kib("VmRSS:"));
        let rate = FLOOD_LINES as f64 / elapsed.as_secs_f64();
        eprintln!(
            "ingest/flood/{} ({FLOOD_LINES} lines of ~{average} B, channel {CAPACITY}): \
             {:.3} s, {rate:.0} lines/s ({:.1} MB/s); VmHWM {} -> {} KiB (+{} KiB), \
             VmRSS {} -> {} KiB",
            if decode {
                "transport+decode"
            } else {
                "transport"
            },
            elapsed.as_secs_f64(),
            rate * average as f64 / 1e6,
            before.0,
            after.0,
            after.0.saturating_sub(before.0),
            before.1,
            after.1,
        );
        fs::remove_file(base.join("inbox").join(name)).unwrap();
    }
}

fn bench_ingest(c: &mut Criterion) {
    eprintln!(
        "process at start: VmHWM {} KiB, VmRSS {} KiB",
        memory_kib("VmHWM:"),
        memory_kib("VmRSS:")
    );
    let lines = observation_lines(1_000);
    // The reported floods first, so the peak memory before them is the baseline.
    flood_report(&lines);
    latency_report(&lines);

    let mut group = c.benchmark_group("ingest");
    group.sample_size(10);
    {
        let (_dir, base) = control_root();
        let path = base.join("inbox/observation.json");
        let temp = base.join("inbox/.observation.json.tmp");
        let (_watcher, items) = start(&base, false);
        let mut n = 0;
        group.bench_function("latency/atomic_write", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        n += 1;
                        timed_write(&path, &temp, &lines[n % lines.len()], &items)
                    })
                    .sum()
            });
        });
    }
    {
        let (_dir, base) = control_root();
        let (_watcher, items) = start(&base, false);
        let mut n = 0;
        group.throughput(Throughput::Elements(FLOOD_SMALL as u64));
        group.bench_function("flood/transport", |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| {
                        n += 1;
                        let name = format!("small-{n}.jsonl");
                        let (elapsed, _) =
                            flood(&base, &items, &lines, FLOOD_SMALL, &name, |_, _| true);
                        fs::remove_file(base.join("inbox").join(name)).unwrap();
                        elapsed
                    })
                    .sum()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench_ingest);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
