//! Open + full verify of a task journal: `ControlRoot::open_task(.., Access::ReadOnly)` reads
//! every line, checks its canonical bytes, sequence number and chained SHA-256, decodes it and
//! re-runs the kernel over it. Targets: 10^5 entries in at most 200 ms, 10^6 in at most 2 s,
//! with streaming memory.
//!
//! - `open_verify/<N>wi/<len>`: criterion, for 10^4 and 10^5 entries over tasks with 0 and 20
//!   work items. The opened Journal is dropped outside the timed region.
//! - 10^6 entries (0 work items; 20 with `VALP_STORE_BENCH_HEAVY=20wi-1m`): an open takes
//!   seconds and criterion needs at least eleven, so it is timed [`BIG_RUNS`] times by hand and
//!   printed as `open_verify/<N>wi/1000000: runs ...`.
//! - Memory: every journal is first opened in a fresh process (the bench binary started again),
//!   which prints its open time, the RSS before the open, the peak RSS (`VmHWM`) after it and
//!   the RSS kept by the open Journal. The file is read one line at a time; what grows with the
//!   journal is the kernel's `LiveState`, which keeps the accepted-event history and indexes of
//!   it by event id and by result id.
//! - Where the time goes: for 10^5 entries, the stages of an open are timed one by one (read
//!   lines; + canonical parse and chain check; + entry decoding; the kernel alone over the
//!   decoded entries) and printed as `open_stages/...`.
//!
//! The journals are built once, before timing (see `common::build_journals`), and are in the
//! page cache when opened: the figures are warm-cache.

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::{
    Built, WORK_ITEMS, as_f64, build_journals, configure_slow, heavy, probe_open,
    run_probe_if_asked, scaled, selected,
};
use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group};
use valp_kernel::decode::{decode_compact_entry, decode_genesis_root};
use valp_kernel::replay::Replayer;
use valp_store::chain::ChainReader;

/// Lengths timed by criterion (the stages are timed at the longest).
const CRITERION_LENGTHS: [usize; 2] = [10_000, 100_000];

/// The long journal, timed by hand.
const BIG: usize = 1_000_000;

/// Hand-timed opens of the long journal (the fresh-process open adds one more figure).
const BIG_RUNS: usize = 2;

/// Opens the journal in a fresh process (which also verifies it) and prints what it measured.
fn report_probe(name: &str, built: &Built) -> f64 {
    let probe = probe_open(built.root.layout().root());
    assert_eq!(probe.entries, built.entries as u64, "every entry verifies");
    eprintln!(
        "open_verify/{name}: fresh process: open {:.3} s; RSS {:.1} MiB before, peak {:.1} MiB \
         (+{:.1} MiB), {:.1} MiB after = {:.0} bytes per entry kept; file {} bytes = {:.1} \
         bytes per entry",
        probe.open.as_secs_f64(),
        as_f64(probe.rss_before_kib) / 1024.0,
        as_f64(probe.peak_after_kib) / 1024.0,
        probe.peak_growth_mib(),
        as_f64(probe.rss_after_kib) / 1024.0,
        probe.retained_bytes_per_entry(),
        built.bytes,
        built.bytes_per_entry(),
    );
    probe.peak_growth_mib()
}

/// Times the stages of an open one by one and prints them.
fn report_stages(name: &str, built: &Built) {
    let path = built.path();
    let per_entry =
        |duration: Duration| duration.as_secs_f64() * 1e6 / as_f64(built.entries as u64);
    let line = |stage: &str, duration: Duration| {
        eprintln!(
            "open_stages/{name}: {stage:<52} {:>8.1} ms = {:>5.2} µs per entry",
            duration.as_secs_f64() * 1e3,
            per_entry(duration)
        );
    };

    let started = Instant::now();
    let mut reader = BufReader::with_capacity(1 << 16, File::open(&path).unwrap());
    let mut buffer = Vec::new();
    let mut lines = 0;
    while reader.read_until(b'\n', &mut buffer).unwrap() > 0 {
        lines += 1;
        buffer.clear();
    }
    line("read lines (BufReader::read_until)", started.elapsed());
    assert_eq!(lines, built.entries + 1);

    let started = Instant::now();
    let mut chain = ChainReader::open(&path).unwrap();
    while let Some(chain_line) = chain.next_line().unwrap() {
        drop(chain_line);
    }
    line(
        "+ parse canonical JSON, check seq and SHA-256 chain",
        started.elapsed(),
    );

    let started = Instant::now();
    let mut chain = ChainReader::open(&path).unwrap();
    chain.next_line().unwrap();
    while let Some(chain_line) = chain.next_line().unwrap() {
        drop(decode_compact_entry(&chain_line.entry()).unwrap());
    }
    line(
        "+ decode the entries (= open minus kernel)",
        started.elapsed(),
    );

    let mut chain = ChainReader::open(&path).unwrap();
    let genesis = decode_genesis_root(&chain.next_line().unwrap().unwrap().entry()).unwrap();
    let mut entries = Vec::with_capacity(built.entries);
    while let Some(chain_line) = chain.next_line().unwrap() {
        entries.push(decode_compact_entry(&chain_line.entry()).unwrap());
    }
    let started = Instant::now();
    let mut state = Replayer::from_genesis(&genesis).unwrap().into_live();
    for entry in &entries {
        state.apply_recorded(entry).unwrap();
    }
    line(
        "kernel alone: LiveState::apply_recorded, in memory",
        started.elapsed(),
    );
    drop(state);

    let started = Instant::now();
    let journal = built.open();
    line("full open_task(ReadOnly)", started.elapsed());
    built.check(&journal);
}

fn bench_open(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_verify");
    configure_slow(&mut group);
    for work_items in [0, WORK_ITEMS] {
        let big = scaled(BIG);
        let stages_at = scaled(CRITERION_LENGTHS[CRITERION_LENGTHS.len() - 1]);
        let mut lens: Vec<usize> = CRITERION_LENGTHS.iter().map(|&len| scaled(len)).collect();
        if work_items == 0 || heavy("20wi-1m") {
            lens.push(big);
        } else {
            eprintln!(
                "open_verify/{work_items}wi/{BIG}: skipped (building it takes minutes; set \
                 VALP_STORE_BENCH_HEAVY=20wi-1m)"
            );
        }
        lens.retain(|len| selected(&format!("open_verify/{work_items}wi/{len}")));
        if lens.is_empty() {
            continue;
        }
        let built = build_journals(work_items, &lens);
        let mut peaks = Vec::new();
        for journal in &built {
            let name = format!("{work_items}wi/{}", journal.entries);
            peaks.push((journal.entries, report_probe(&name, journal)));
            if journal.entries == stages_at {
                report_stages(&name, journal);
            }
            if journal.entries < big {
                group.throughput(Throughput::Elements(journal.entries as u64));
                group.bench_function(
                    BenchmarkId::new(format!("{work_items}wi"), journal.entries),
                    |b| b.iter_batched(|| (), |()| journal.open(), BatchSize::PerIteration),
                );
            } else {
                let runs: Vec<Duration> = (0..BIG_RUNS)
                    .map(|_| {
                        let started = Instant::now();
                        let opened = journal.open();
                        let elapsed = started.elapsed();
                        journal.check(&opened);
                        drop(opened);
                        elapsed
                    })
                    .collect();
                let mean = runs.iter().sum::<Duration>() / u32::try_from(BIG_RUNS).unwrap();
                eprintln!(
                    "open_verify/{name}: runs {:?} s: mean {:.3} s = {:.2} µs per entry",
                    runs.iter()
                        .map(|run| (run.as_secs_f64() * 1e3).round() / 1e3)
                        .collect::<Vec<_>>(),
                    mean.as_secs_f64(),
                    mean.as_secs_f64() * 1e6 / as_f64(journal.entries as u64),
                );
            }
        }
        if let [.., (short, short_peak), (long, long_peak)] = peaks[..] {
            eprintln!(
                "open_verify/{work_items}wi: peak RSS grows {:.0} bytes per entry between {short} \
                 and {long} entries",
                (long_peak - short_peak) * 1024.0 * 1024.0 / as_f64((long - short) as u64)
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench_open);

fn main() {
    if run_probe_if_asked() {
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
