//! Bytes on disk: the journal against the reference layout it exports to.
//!
//! Prints the journal's size per entry at 10^3, 10^4 and 10^5 entries (target: constant as the
//! journal grows), and the size of the same journal exported with `reference::export`
//! (`genesis.json` + `replay.jsonl`, where every line embeds the full next State with its
//! history, so the file is quadratic in the number of entries) at 10^3 entries; at 10^4 too with
//! `VALP_STORE_BENCH_HEAVY=export-10k` (about 16 GB with 20 work items).
//!
//! - `export/<N>wi/1000`: the time `reference::export` takes for 10^3 entries (it re-verifies
//!   the journal and writes and syncs the reference files).

#![allow(clippy::unwrap_used, clippy::expect_used)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

mod common;

use std::time::Instant;

use common::{
    Built, WORK_ITEMS, as_f64, build_journals, configure_slow, heavy, scaled, scratch_temp,
    selected,
};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use valp_store::reference::{self, Exported};

/// Journal lengths whose size is reported.
const LENGTHS: [usize; 3] = [1_000, 10_000, 100_000];

/// Exports once and prints both sizes.
fn report_export(name: &str, journal: &Built, out: &std::path::Path) -> Exported {
    let opened = journal.open();
    let started = Instant::now();
    let exported = reference::export(&opened, out).unwrap();
    let elapsed = started.elapsed();
    assert_eq!(exported.entries, journal.entries as u64);
    let reference_bytes = exported.genesis_bytes + exported.replay_bytes;
    eprintln!(
        "size/{name}: journal {} bytes; reference layout {reference_bytes} bytes \
         (genesis.json {} + replay.jsonl {} = {:.0} bytes per entry) = {:.0}x the journal; \
         export took {:.2} s",
        journal.bytes,
        exported.genesis_bytes,
        exported.replay_bytes,
        as_f64(exported.replay_bytes) / as_f64(exported.entries),
        as_f64(reference_bytes) / as_f64(journal.bytes),
        elapsed.as_secs_f64(),
    );
    exported
}

fn bench_size(c: &mut Criterion) {
    let mut group = c.benchmark_group("export");
    configure_slow(&mut group);
    for work_items in [WORK_ITEMS, 0] {
        if !selected(&format!("export/{work_items}wi")) {
            continue;
        }
        let lens = LENGTHS.map(scaled);
        let built = build_journals(work_items, &lens);
        for journal in &built {
            let verified = journal.verify();
            eprintln!(
                "size/{work_items}wi/{}: journal {} bytes = {:.1} bytes per entry (genesis line \
                 {} bytes not counted); verified in {:.2} s",
                journal.entries,
                journal.bytes,
                journal.bytes_per_entry(),
                journal.genesis_bytes,
                verified.as_secs_f64(),
            );
        }
        for journal in &built {
            let small = journal.entries == lens[0];
            if !(small || journal.entries == lens[1] && heavy("export-10k")) {
                continue;
            }
            let out = scratch_temp();
            let name = format!("{work_items}wi/{}", journal.entries);
            report_export(&name, journal, out.path());
            if small && work_items == WORK_ITEMS {
                let opened = journal.open();
                group.throughput(Throughput::Elements(journal.entries as u64));
                group.bench_function(
                    BenchmarkId::new(format!("{work_items}wi"), journal.entries),
                    |b| b.iter(|| reference::export(&opened, out.path()).unwrap()),
                );
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench_size);
criterion_main!(benches);
