//! Setup shared by the store benchmarks: scratch control roots on the workspace's disk, journals
//! of seeded legal histories built quickly, per-call timing statistics, and a child-process probe
//! that measures the memory of one open.
//!
//! Everything here runs outside the timed loops.

// Each bench binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator the `valp` binary uses, so the figures are the ones valp gets.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, SamplingMode};
use tempfile::TempDir;
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::chain::encode_line;
use valp_store::clock::{FixedClock, Timestamp};
use valp_store::io::OsStorage;
use valp_store::journal::JOURNAL_FILE;
use valp_store::{Access, ControlRoot, Journal};

/// Seed of every walk the benchmarks use (the kernel benchmarks use the same one).
pub const SEED: u64 = 0x0003_5EED;

/// The `recorded_at` of the lines the fixtures write (an append stamps the clock's time; the
/// line's size does not depend on which).
pub const RECORDED_AT: Timestamp = Timestamp::from_millis(1_796_042_096_789);

/// Work items of the "realistic" task size.
pub const WORK_ITEMS: usize = 20;

/// The task every walk creates.
pub const TASK: &str = "task-1";

/// Environment variable that turns the bench binary into the memory probe (see [`probe_open`]).
const PROBE_ENV: &str = "VALP_STORE_BENCH_PROBE_ROOT";

/// With [`PROBE_ENV`]: the probe verifies the task as `valp verify` does instead of opening it.
const PROBE_VERIFY_ENV: &str = "VALP_STORE_BENCH_PROBE_VERIFY";

/// The seeded walk over a task with `work_items` items (never terminates).
pub fn walk(work_items: usize) -> Walk {
    Walk::new(WalkConfig {
        seed: SEED,
        work_items,
        may_terminate: false,
    })
}

/// `target/valp-store-bench/`: scratch space on the same disk as the workspace (`/tmp` may be
/// a tmpfs, where `fdatasync` costs nothing). Found from the bench binary's own path
/// (`target/release/deps/<bench>`), so it follows `CARGO_TARGET_DIR`.
pub fn scratch_dir() -> PathBuf {
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_owned))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let dir = target.join("valp-store-bench");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh folder under [`scratch_dir`], deleted when dropped.
pub fn scratch_temp() -> TempDir {
    tempfile::Builder::new()
        .prefix("run-")
        .tempdir_in(scratch_dir())
        .unwrap()
}

/// Prints the file system type of `dir` (`df -T`), so the output says what was measured.
pub fn describe_filesystem(dir: &Path) {
    if let Ok(output) = Command::new("df").arg("-T").arg(dir).output() {
        let text = String::from_utf8_lossy(&output.stdout);
        if let Some(line) = text.lines().nth(1) {
            eprintln!("scratch {} on: {line}", dir.display());
        }
    }
}

/// A new control root of installation `inst-1` in `dir/.valp`.
pub fn init_root(dir: &Path) -> ControlRoot {
    let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
    // The stopped clock of the lines `build_journals` writes, so `create_task`'s genesis line
    // is byte for byte the one it encodes.
    ControlRoot::init(&dir.join(".valp"), id, Arc::new(OsStorage))
        .unwrap()
        .with_clock(Arc::new(FixedClock::new(RECORDED_AT)))
}

/// A built journal: its control root (in a temporary folder) and what it holds.
pub struct Built {
    /// Owns the folder.
    pub temp: TempDir,
    /// The control root holding task [`TASK`].
    pub root: ControlRoot,
    /// Entries after the genesis line.
    pub entries: usize,
    /// Size of `journal.jsonl`, genesis line included.
    pub bytes: u64,
    /// Size of the genesis line.
    pub genesis_bytes: u64,
}

impl Built {
    /// The journal file.
    pub fn path(&self) -> PathBuf {
        self.root.layout().task_dir(TASK).join(JOURNAL_FILE)
    }

    /// Bytes per entry, the genesis line excluded.
    pub fn bytes_per_entry(&self) -> f64 {
        per(self.bytes - self.genesis_bytes, self.entries)
    }

    /// Opens and verifies the journal read-only (what the timed benchmarks do).
    pub fn open(&self) -> Journal {
        self.root.open_task(TASK, Access::ReadOnly).unwrap()
    }

    /// Opens the journal once and checks that every entry verified; returns how long it took.
    pub fn verify(&self) -> Duration {
        let started = Instant::now();
        let journal = self.open();
        let elapsed = started.elapsed();
        self.check(&journal);
        elapsed
    }

    /// Asserts that `journal` is this journal, fully verified.
    pub fn check(&self, journal: &Journal) {
        assert_eq!(journal.len(), self.entries as u64, "every entry verifies");
        assert_eq!(journal.verified_bytes(), self.bytes, "every byte verifies");
        assert!(journal.warnings().is_empty(), "{:?}", journal.warnings());
    }
}

/// `total / count` as a float (for printing).
pub fn per(total: u64, count: usize) -> f64 {
    as_f64(total) / as_f64(count as u64)
}

/// A count as a float, for ratios in printed reports (exact below 2^53).
pub fn as_f64(value: u64) -> f64 {
    let high = u32::try_from(value >> 32).unwrap();
    let low = u32::try_from(value & 0xFFFF_FFFF).unwrap();
    f64::from(high) * 4_294_967_296.0 + f64::from(low)
}

/// Journals holding the first `lens[i]` steps of the seeded walk over `work_items` items, each
/// in its own control root, built in one pass over the walk.
///
/// `create_task` writes the genesis line; the entries are then encoded with
/// [`encode_line`] (exactly what `Journal::append` writes) and streamed through a `BufWriter`
/// instead of one `fdatasync`ed append each, which would take hours at 10^6. Each journal is
/// synced once. Callers verify a journal ([`Built::verify`], or the first timed open asserts
/// its length) before they report anything about it.
pub fn build_journals(work_items: usize, lens: &[usize]) -> Vec<Built> {
    let started = Instant::now();
    let mut walk = walk(work_items);
    let (genesis_line, mut prior) = encode_line(0, None, RECORDED_AT, walk.genesis());
    let mut outputs: Vec<(TempDir, ControlRoot, BufWriter<std::fs::File>, usize)> = lens
        .iter()
        .map(|&len| {
            let temp = scratch_temp();
            let root = init_root(temp.path());
            let journal = root.create_task(walk.genesis()).unwrap();
            assert_eq!(
                std::fs::read(journal.path()).unwrap(),
                genesis_line,
                "create_task writes the genesis line"
            );
            let file = OpenOptions::new()
                .append(true)
                .open(journal.path())
                .unwrap();
            (temp, root, BufWriter::with_capacity(1 << 20, file), len)
        })
        .collect();
    let longest = lens.iter().copied().max().unwrap_or(0);
    for (index, step) in walk.by_ref().take(longest).enumerate() {
        let seq = index as u64 + 1;
        let (line, digest) = encode_line(seq, Some(&prior), RECORDED_AT, &step.into_compact());
        for (_, _, writer, len) in &mut outputs {
            if index < *len {
                writer.write_all(&line).unwrap();
            }
        }
        prior = digest;
    }
    let generated = started.elapsed();
    let built: Vec<Built> = outputs
        .into_iter()
        .map(|(temp, root, writer, entries)| {
            let file = writer.into_inner().unwrap();
            file.sync_data().unwrap();
            drop(file);
            let bytes = std::fs::metadata(root.layout().task_dir(TASK).join(JOURNAL_FILE))
                .unwrap()
                .len();
            Built {
                temp,
                root,
                entries,
                bytes,
                genesis_bytes: genesis_line.len() as u64,
            }
        })
        .collect();
    eprintln!(
        "built {work_items}wi journals {lens:?} in {:.1} s (walk + encode {:.1} s), not yet \
         verified",
        started.elapsed().as_secs_f64(),
        generated.as_secs_f64(),
    );
    built
}

/// Order statistics of per-call timings.
pub struct Percentiles {
    /// Calls measured.
    pub count: usize,
    /// Mean.
    pub mean: Duration,
    /// Median.
    pub p50: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// 99.9th percentile.
    pub p999: Duration,
    /// Slowest call.
    pub max: Duration,
}

impl Percentiles {
    /// Nearest-rank percentiles of `samples` (which must not be empty).
    pub fn of(samples: &[Duration]) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let count = sorted.len();
        let rank = |per_mille: usize| sorted[(count * per_mille).div_ceil(1000).max(1) - 1];
        let total: Duration = sorted.iter().sum();
        Self {
            count,
            mean: total / u32::try_from(count).unwrap(),
            p50: rank(500),
            p90: rank(900),
            p99: rank(990),
            p999: rank(999),
            max: sorted[count - 1],
        }
    }

    /// One line: `label: n=.. mean .. p50 .. p90 .. p99 .. p99.9 .. max ..` (milliseconds).
    pub fn line(&self, label: &str) -> String {
        let ms = |duration: Duration| duration.as_secs_f64() * 1e3;
        format!(
            "{label}: n={} mean {:.3} ms, p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, \
             p99.9 {:.3} ms, max {:.3} ms",
            self.count,
            ms(self.mean),
            ms(self.p50),
            ms(self.p90),
            ms(self.p99),
            ms(self.p999),
            ms(self.max)
        )
    }
}

/// What one open measured in a fresh process (see [`probe_open`]).
#[derive(Debug)]
pub struct Probe {
    /// Entries verified.
    pub entries: u64,
    /// Wall time of `open_task(.., ReadOnly)`.
    pub open: Duration,
    /// `VmRSS` before the open, in KiB.
    pub rss_before_kib: u64,
    /// `VmHWM` (peak RSS) after the open, in KiB.
    pub peak_after_kib: u64,
    /// `VmRSS` after the open, the Journal still alive, in KiB.
    pub rss_after_kib: u64,
}

impl Probe {
    /// Peak RSS growth caused by the open, in MiB.
    pub fn peak_growth_mib(&self) -> f64 {
        as_f64(self.peak_after_kib.saturating_sub(self.rss_before_kib)) / 1024.0
    }

    /// Resident memory kept by the open Journal, in bytes per entry.
    pub fn retained_bytes_per_entry(&self) -> f64 {
        as_f64(self.rss_after_kib.saturating_sub(self.rss_before_kib) * 1024)
            / as_f64(self.entries.max(1))
    }
}

/// Opens the journal of [`TASK`] in the control root `root` in a fresh copy of this bench
/// binary and reports time and memory: the peak RSS of this process is dominated by the walk
/// that built the fixture, so it cannot be measured here.
pub fn probe_open(root: &Path) -> Probe {
    let exe = std::env::current_exe().unwrap();
    let output = Command::new(exe).env(PROBE_ENV, root).output().unwrap();
    assert!(
        output.status.success(),
        "probe failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).unwrap();
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(|field| field.parse().unwrap())
        .collect();
    let [
        entries,
        nanos,
        rss_before_kib,
        peak_after_kib,
        rss_after_kib,
    ]: [u64; 5] = fields.try_into().expect("the probe prints five numbers");
    Probe {
        entries,
        open: Duration::from_nanos(nanos),
        rss_before_kib,
        peak_after_kib,
        rss_after_kib,
    }
}

/// `(VmRSS, VmHWM)` of this process in KiB.
fn memory_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The bench binary's `main`: when started by [`probe_open`], opens the journal, prints
/// `entries nanos rss_before peak_after rss_after` and returns `true`; otherwise returns
/// `false` and the caller runs the benchmarks.
pub fn run_probe_if_asked() -> bool {
    let Some(root) = std::env::var_os(PROBE_ENV) else {
        return false;
    };
    let root = ControlRoot::open(Path::new(&root), Arc::new(OsStorage)).unwrap();
    let (rss_before, _) = memory_kib();
    let started = Instant::now();
    // With `VALP_STORE_BENCH_PROBE_VERIFY` set, what `valp verify` does with the task instead
    // (`--toggle-collect='*verify_task_dir*'` counts only that).
    let journal = if std::env::var_os(PROBE_VERIFY_ENV).is_some() {
        root.verify_task_dir(&root.layout().task_dir(TASK)).unwrap()
    } else {
        root.open_task(TASK, Access::ReadOnly).unwrap()
    };
    let open = started.elapsed();
    let (rss_after, peak_after) = memory_kib();
    println!(
        "{} {} {rss_before} {peak_after} {rss_after}",
        journal.len(),
        open.as_nanos()
    );
    // Leave without dropping the State: the parent has what it needs.
    std::process::exit(0);
}

/// Settings for groups whose routine takes milliseconds to seconds: ten flat samples
/// (criterion's minimum), each of a single iteration when the routine is slow.
pub fn configure_slow(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
}

/// Whether this is a benchmark run (`cargo bench` passes `--bench`) rather than criterion's
/// test mode (`cargo test --benches`), which runs every routine once to check that it works.
pub fn benchmarking() -> bool {
    std::env::args().any(|arg| arg == "--bench")
}

/// `len` in a benchmark run; `len / 100` in test mode, so that a smoke test of the benchmarks
/// takes seconds. Only benchmark runs print figures worth reporting.
pub fn scaled(len: usize) -> usize {
    if benchmarking() { len } else { len / 100 }
}

/// Whether the opt-in heavy measurements (named by `VALP_STORE_BENCH_HEAVY`, comma-separated)
/// include `name`.
pub fn heavy(name: &str) -> bool {
    std::env::var("VALP_STORE_BENCH_HEAVY").is_ok_and(|list| {
        list.split(',')
            .any(|item| item.trim() == name || item == "all")
    })
}

/// Criterion options that take a value (the value is not a filter).
const VALUE_OPTIONS: &[&str] = &[
    "-b",
    "-c",
    "-s",
    "--baseline",
    "--baseline-lenient",
    "--color",
    "--confidence-level",
    "--format",
    "--load-baseline",
    "--logfile",
    "--measurement-time",
    "--noise-threshold",
    "--nresamples",
    "--output-format",
    "--plotting-backend",
    "--profile-time",
    "--sample-size",
    "--save-baseline",
    "--significance-level",
    "--warm-up-time",
];

/// Whether the filter given on the command line (`cargo bench -p valp-store -- <filter>`)
/// selects benchmark `id`, so that the hand-timed measurements outside criterion (fixtures,
/// memory probes, percentiles) are skipped along with the criterion benchmarks they go with.
/// Plain filters match as substrings, as criterion's regex does, and may be anchored with `^`
/// and `$`; a filter with other regex syntax selects everything.
pub fn selected(id: &str) -> bool {
    let mut args = std::env::args().skip(1);
    let mut filters = Vec::new();
    while let Some(arg) = args.next() {
        if VALUE_OPTIONS.contains(&arg.as_str()) {
            args.next();
        } else if !arg.starts_with('-') {
            filters.push(arg);
        }
    }
    filters.is_empty() || filters.iter().any(|filter| matches_filter(id, filter))
}

fn matches_filter(id: &str, filter: &str) -> bool {
    let (start, rest) = match filter.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, filter),
    };
    let (end, plain) = match rest.strip_suffix('$') {
        Some(plain) => (true, plain),
        None => (false, rest),
    };
    if plain.contains(|c: char| ".*+?()[]{}|\\^$".contains(c)) {
        return true;
    }
    match (start, end) {
        (true, true) => id == plain,
        (true, false) => id.starts_with(plain),
        (false, true) => id.ends_with(plain),
        (false, false) => id.contains(plain),
    }
}
