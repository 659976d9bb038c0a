//! The hook command's own latency when no decision is needed. Target (issue 13): `valp hook
//! claude` returns in <= 20 ms p99, process start included, since the agent waits for it.
//!
//! One sample is one whole run of the real `valp` binary cargo built for this bench, as Claude
//! Code runs a command hook: spawned with the adapter's environment (`VALP_CONTROL_ROOT`,
//! `VALP_TASK_ID`, `VALP_WORK_ITEM_ID`, `VALP_ATTEMPT_ID`), the recorded `Stop` payload of
//! `tests/fixtures/agent-channels/claude/stop.json` on stdin, until it exits (the signal is
//! appended to the attempt's inbox file by then). A `Stop` asks nothing, so nothing waits.
//!
//! Before criterion runs, the output prints p50/p90/p99/max over [`REPORT_RUNS`] runs into one
//! attempt (its signal file grows to that many lines: an append reads only the file's tail),
//! and the same for a `Notification` (`idle_prompt`) payload; `hook/claude_stop` then times one
//! run per iteration.

// A benchmark that cannot do its job fails loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
#[path = "../runtime/benches/support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

/// The `valp` binary cargo built for this bench.
const VALP: &str = env!("CARGO_BIN_EXE_valp");
/// Runs per reported payload.
const REPORT_RUNS: usize = 1000;

/// One hook run with `payload` on stdin for the attempt under `root`; its wall time.
fn hook(root: &Path, payload: &[u8]) -> Duration {
    let started = Instant::now();
    let mut child = Command::new(VALP)
        .args(["hook", "claude"])
        .env("VALP_CONTROL_ROOT", root)
        .env("VALP_TASK_ID", "T-1")
        .env("VALP_WORK_ITEM_ID", "build")
        .env("VALP_ATTEMPT_ID", "T-1:build:a1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload).unwrap();
    let status = child.wait().unwrap();
    let elapsed = started.elapsed();
    assert!(status.success());
    elapsed
}

fn payload(name: &str) -> Vec<u8> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/agent-channels");
    std::fs::read(fixtures.join(name)).unwrap()
}

fn initialised() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = Command::new(VALP)
        .arg("init")
        .current_dir(dir.path())
        .env_remove("VALP_ROOT")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

fn bench(c: &mut Criterion) {
    let dir = initialised();
    let root = dir.path().join(".valp");
    for name in ["claude/stop.json", "claude/notification-idle-prompt.json"] {
        let bytes = payload(name);
        let samples = (0..REPORT_RUNS).map(|_| hook(&root, &bytes)).collect();
        println!(
            "{}",
            Percentiles(samples).line(&format!("valp hook claude < {name}"), &[500, 900, 990])
        );
    }
    let stop = payload("claude/stop.json");
    c.bench_function("hook/claude_stop", |b| b.iter(|| hook(&root, &stop)));
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(5));
    targets = bench
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
