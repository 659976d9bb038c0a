//! Observation to kernel event, over the real pipeline. Target: an observation file written ->
//! its kernel-accepted event, p99 <= 100 ms with inotify.
//!
//! The pipeline is the one `valp run` and the console drive, with nothing stubbed:
//!
//! 1. the process adapter: the real `valp` binary as a detached supervisor
//!    (`valp adapter process --dir DIR`) per attempt, running `true` and writing
//!    `observations/000001.json` (`accepted`) then `000002.json` (`completed`) atomically;
//! 2. the file watcher and the live feed ([`Feed`], inotify): it decodes every observation file
//!    under `runtime/` and wakes the runtime, here through a one-slot channel exactly as
//!    `valp run` does;
//! 3. the runtime: on every wake, [`Driver::reconcile_effects`] then [`Driver::step`] until the
//!    task waits, as `valp run` and the console's pump do. A step that consumes an observation
//!    stores its evidence and appends the event through the kernel to the task journal.
//!
//! One sample is one event the kernel accepted that consumed an observation: `attempt_running`
//! (consumes `000001.json`) or `attempt_completed` (consumes the terminal `000002.json`).
//! Latency = the wall clock ([`SystemTime::now`]) when [`Driver::step`] returned the accepted
//! proposal, minus the observation file's mtime (written by the supervisor into a new
//! temporary file, then fsynced and hard-linked into place). Both are `CLOCK_REALTIME`; the file
//! clock is coarse, so the mtime can be earlier than the write by up to one clock tick (the
//! output prints how much on this machine) and the figures err high, never low. The observation
//! carries no timestamp of its own, so the file's mtime is the only record of when it was written.
//!
//! Before criterion runs, the output prints p50/p90/p99/max over one task of [`REPORT_ITEMS`]
//! independent work items (`max_concurrency = 1`): terminal observations, `accepted`
//! observations, both; for the events consumed on their own file's wake, mtime -> the runtime
//! woke with the feed's row and woke -> accepted; the terminal latency of the first and last
//! quarter of the items, and the cost of one `driver.step` and one `reconcile_effects` in
//! those quarters (neither should grow with the attempts already settled); how many events were consumed on their own file's wake rather than by a
//! run an earlier wake started; and missed wakes.
//!
//! `observation_to_event/terminal` then times terminal observation -> `attempt_completed` per
//! iteration, on tasks of [`BENCH_ITEMS`] items published as needed: its iterations run on the
//! first items of a fresh task, so it compares with the report's first quarter, not its whole.

// A benchmark that cannot do its job fails loudly; rates are printed as floating point.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss
)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TrySendError, sync_channel};
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, SamplingMode, criterion_group};
#[path = "../runtime/benches/support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;
use valp_kernel::{AttemptStatus, EventKind, StateBody};
use valp_runtime::runtime::driver::{Driver, Progress};
use valp_runtime::runtime::workflow::Wait;
use valp_runtime::system::feed::Feed;
use valp_store::ControlRoot;
use valp_store::io::OsStorage;

/// The allocator the `valp` binary uses, so the figures are the ones valp gets.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The `valp` binary cargo built for this bench (the supervisor the driver launches).
const VALP: &str = env!("CARGO_BIN_EXE_valp");
/// Work items of the reported task (one terminal and one `accepted` sample each).
const REPORT_ITEMS: usize = 250;
/// Work items of each task published for criterion's iterations.
const BENCH_ITEMS: usize = 100;
/// How long the loop waits for a wake before it steps anyway (and counts a missed wake).
const WAKE_PATIENCE: Duration = Duration::from_secs(5);
/// How long a cancel waits for the adapter (as `valp run`; no cancel happens here).
const CANCEL_PATIENCE: Duration = Duration::from_secs(10);
/// New files written for the mtime clock check.
const CLOCK_SAMPLES: usize = 200;
/// The percentiles every line of the report prints (per mille): p50, p90, p99.
const RANKS: [usize; 3] = [500, 900, 990];

/// One kernel-accepted event that consumed an observation.
#[derive(Debug, Clone, Copy)]
struct Sample {
    /// `attempt_completed` (the terminal observation) or `attempt_running` (`accepted`).
    terminal: bool,
    /// Observation file mtime -> the step returned the accepted proposal.
    latency: Duration,
    /// Mtime -> the runtime woke with the feed's row for this very file, when it had one
    /// (otherwise the driver found the file during a run started by an earlier wake).
    to_wake: Option<Duration>,
    /// The wait for the wake before this pump timed out (no inotify wake).
    after_timeout: bool,
}

/// A project with a control root, the local account as Leader, the feed, and a driven task.
struct Pipeline {
    _temp: tempfile::TempDir,
    project: PathBuf,
    root: ControlRoot,
    active: i128,
    feed: Feed,
    woken: Receiver<()>,
    driver: Option<Driver>,
    tasks: usize,
    /// Step again before waiting for a wake (a collection stopped mid-pump, or a new task).
    resume: bool,
    /// Wakes that did not come within [`WAKE_PATIENCE`].
    timeouts: usize,
    /// Every `driver.step` call: settled attempts of the task before it, and how long it took.
    steps: Vec<(usize, Duration)>,
    /// Every `reconcile_effects` call: settled attempts of the task, and how long it took.
    reconciles: Vec<(usize, Duration)>,
}

/// How a pump ended.
enum Pumped {
    /// The wanted number of terminal samples is reached (the pump stopped right after it).
    Enough,
    /// Attempts are in flight: wait for the next wake.
    InFlight,
    /// The task needs the Leader (it went through verification into review): all items done.
    Idle,
}

impl Pipeline {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let project = fs::canonicalize(temp.path()).unwrap();
        valp(&project, &["init"]);
        let listed = valp(&project, &["leader", "candidates"]);
        let human = listed
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap()
            .to_owned();
        valp(&project, &["leader", "select", &human, "--yes"]);
        let root = ControlRoot::open(&project.join(".valp"), Arc::new(OsStorage)).unwrap();
        let active = root.ledger_read_only().unwrap().live().state().active_epoch;
        let (wake, woken) = sync_channel::<()>(1);
        let feed = Feed::start(root.layout().root(), move || {
            !matches!(wake.try_send(()), Err(TrySendError::Disconnected(())))
        })
        .unwrap();
        Self {
            _temp: temp,
            project,
            root,
            active,
            feed,
            woken,
            driver: None,
            tasks: 0,
            resume: false,
            timeouts: 0,
            steps: Vec::new(),
            reconciles: Vec::new(),
        }
    }

    /// Publishes a task of `items` independent work items running `true`, one at a time, and
    /// drives it from now on.
    fn publish(&mut self, items: usize) {
        self.tasks += 1;
        let task = format!("bench-{}", self.tasks);
        let mut plan = format!(
            "schema_version = \"valp-plan.v1\"\ntask_id = \"{task}\"\n\
             goal = \"observation to event latency\"\n\n[[criteria]]\nid = \"c\"\n\
             description = \"attested by the review\"\n\n[execution]\nmax_concurrency = 1\n\
             retry_budget = 1\n\n"
        );
        for n in 0..items {
            write!(
                plan,
                "[[work_items]]\nid = \"item-{n:04}\"\nrequirement = \"required\"\n\
                 [work_items.run]\nadapter = \"process\"\nargv = [\"true\"]\n\
                 timeout_seconds = 60\n\n"
            )
            .unwrap();
        }
        let file = self.project.join(format!("{task}.toml"));
        fs::write(&file, plan).unwrap();
        valp(&self.project, &["task", "publish", file.to_str().unwrap()]);
        self.driver = Some(Driver::open(&self.root, &task, PathBuf::from(VALP)).unwrap());
        self.resume = true;
    }

    /// Drives tasks (publishing new ones of `items` work items when one is done) until
    /// `wanted` terminal samples were taken; returns every sample taken meanwhile.
    fn collect(&mut self, wanted: usize, items: usize) -> Vec<Sample> {
        let mut samples = Vec::new();
        loop {
            let mut after_timeout = false;
            if !self.resume {
                match self.woken.recv_timeout(WAKE_PATIENCE) {
                    Ok(()) => {}
                    Err(RecvTimeoutError::Timeout) => {
                        self.timeouts += 1;
                        after_timeout = true;
                    }
                    Err(RecvTimeoutError::Disconnected) => panic!("the feed stopped"),
                }
            }
            self.resume = false;
            match self.pump(&mut samples, wanted, after_timeout) {
                Pumped::Enough => {
                    self.resume = true;
                    return samples;
                }
                Pumped::InFlight => {}
                Pumped::Idle => self.publish(items),
            }
        }
    }

    /// What `valp run` does on a wake: reconcile the task's effects, then step until it waits.
    fn pump(&mut self, samples: &mut Vec<Sample>, wanted: usize, after_timeout: bool) -> Pumped {
        // The rows the feed delivered before this wake (it pushes a row, then wakes).
        let delivered: BTreeSet<(String, u64)> = self
            .feed
            .rows()
            .0
            .into_iter()
            .map(|row| (row.attempt_id, row.sequence))
            .collect();
        let woke_at = SystemTime::now();
        let Some(driver) = self.driver.as_mut() else {
            return Pumped::Idle;
        };
        let started = Instant::now();
        driver.reconcile_effects(CANCEL_PATIENCE).unwrap();
        let done = settled(&attempts(driver.body()));
        self.reconciles.push((done, started.elapsed()));
        loop {
            let before = attempts(driver.body());
            let started = Instant::now();
            let progress = driver.step(self.active).unwrap();
            let accepted_at = SystemTime::now();
            self.steps.push((settled(&before), started.elapsed()));
            let kind = match progress {
                Progress::Proposed {
                    kind,
                    refused: None,
                    ..
                } => kind,
                Progress::Proposed {
                    kind,
                    refused: Some((code, reason)),
                    ..
                } => panic!("the kernel refused {}: {code}: {reason}", kind.as_str()),
                Progress::Launched { .. } => continue,
                Progress::Waiting(Wait::InFlight(_)) => return Pumped::InFlight,
                Progress::Waiting(Wait::Leader(why)) => {
                    let status = driver.body().status.as_str();
                    assert_eq!(status, "reviewing", "the task waits for the Leader: {why}");
                    return Pumped::Idle;
                }
                Progress::Waiting(other) => panic!("unexpected wait: {other:?}"),
            };
            let (terminal, status) = match kind {
                EventKind::AttemptCompleted => (true, AttemptStatus::Completed),
                EventKind::AttemptRunning => (false, AttemptStatus::Running),
                _ => continue,
            };
            let attempt = attempts(driver.body())
                .into_iter()
                .find(|(id, now)| *now == status && before.get(id) != Some(now))
                .map(|(id, _)| id)
                .expect("the accepted event moved one attempt");
            let sequence = if terminal { 2 } else { 1 };
            let file = driver
                .attempt_dir(&attempt)
                .join(format!("observations/{sequence:06}.json"));
            let written = fs::metadata(&file).unwrap().modified().unwrap();
            samples.push(Sample {
                terminal,
                latency: accepted_at
                    .duration_since(written)
                    .expect("accepted after the write"),
                to_wake: delivered
                    .contains(&(attempt, sequence))
                    .then(|| woke_at.duration_since(written).unwrap_or_default()),
                after_timeout,
            });
            if terminal && samples.iter().filter(|sample| sample.terminal).count() >= wanted {
                return Pumped::Enough;
            }
        }
    }
}

/// Every current attempt of the task with its status.
fn attempts(body: &StateBody) -> BTreeMap<String, AttemptStatus> {
    body.work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .map(|attempt| (attempt.attempt_id.value().to_owned(), attempt.status))
        .collect()
}

/// How many attempts of `attempts` are completed.
fn settled(attempts: &BTreeMap<String, AttemptStatus>) -> usize {
    attempts
        .values()
        .filter(|status| **status == AttemptStatus::Completed)
        .count()
}

/// `valp --no-default-sockets ARGS` in `project`; it must succeed. Returns its stdout.
fn valp(project: &Path, args: &[&str]) -> String {
    let output = Command::new(VALP)
        .arg("--no-default-sockets")
        .args(args)
        .current_dir(project)
        .env_remove("VALP_ROOT")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "valp {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// How much earlier than the write began a new file's mtime can be on this machine: new files
/// in the project folder, each created, written and synced like an observation, then stat'd.
fn mtime_lag(project: &Path) -> (Duration, usize) {
    let dir = project.join("clock-check");
    fs::create_dir(&dir).unwrap();
    let mut lag = Duration::ZERO;
    let mut earlier = 0;
    for n in 0..CLOCK_SAMPLES {
        let path = dir.join(format!("{n}.json"));
        let before = SystemTime::now();
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{}\n").unwrap();
        file.sync_all().unwrap();
        drop(file);
        let written = fs::metadata(&path).unwrap().modified().unwrap();
        if let Ok(early) = before.duration_since(written) {
            earlier += usize::from(early > Duration::ZERO);
            lag = lag.max(early);
        }
    }
    fs::remove_dir_all(&dir).unwrap();
    (lag, earlier)
}

fn report(pipeline: &mut Pipeline) {
    let (lag, earlier) = mtime_lag(&pipeline.project);
    eprintln!(
        "clock check: {earlier} of {CLOCK_SAMPLES} new files had an mtime before the moment \
         their write began, by at most {:.3} ms (the coarse file clock; latencies below err \
         high by up to that)",
        lag.as_secs_f64() * 1e3
    );
    let started = Instant::now();
    pipeline.steps.clear();
    pipeline.reconciles.clear();
    pipeline.publish(REPORT_ITEMS);
    let samples = pipeline.collect(REPORT_ITEMS, REPORT_ITEMS);
    let wall = started.elapsed();
    let pick = |filter: &dyn Fn(&Sample) -> bool| -> Vec<Duration> {
        samples
            .iter()
            .filter(|sample| filter(sample))
            .map(|sample| sample.latency)
            .collect()
    };
    eprintln!(
        "observation_to_event: 1 task, {REPORT_ITEMS} work items running `true`, \
         max_concurrency 1, {:.1} s wall ({:.1} ms per item)",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e3 / REPORT_ITEMS as f64
    );
    eprintln!(
        "{}",
        Percentiles(pick(&|sample| sample.terminal)).line(
            "observation_to_event/terminal (000002.json -> attempt_completed accepted)",
            &RANKS
        )
    );
    eprintln!(
        "{}",
        Percentiles(pick(&|sample| !sample.terminal)).line(
            "observation_to_event/accepted (000001.json -> attempt_running accepted)",
            &RANKS
        )
    );
    eprintln!(
        "{}",
        Percentiles(pick(&|_| true)).line("observation_to_event/all", &RANKS)
    );
    breakdown(pipeline, &samples);
}

/// Where the time goes: the wake, the position in the task, the runtime's calls.
fn breakdown(pipeline: &Pipeline, samples: &[Sample]) {
    let own: Vec<&Sample> = samples
        .iter()
        .filter(|sample| sample.to_wake.is_some())
        .collect();
    eprintln!(
        "{}",
        Percentiles(own.iter().filter_map(|sample| sample.to_wake).collect()).line(
            "  of the events consumed on their own file's wake: mtime -> runtime woke",
            &RANKS
        )
    );
    eprintln!(
        "{}",
        Percentiles(
            own.iter()
                .map(|sample| {
                    sample
                        .latency
                        .saturating_sub(sample.to_wake.unwrap_or_default())
                })
                .collect()
        )
        .line(
            "  of the events consumed on their own file's wake: woke -> accepted",
            &RANKS
        )
    );
    let terminal: Vec<Duration> = samples
        .iter()
        .filter(|sample| sample.terminal)
        .map(|sample| sample.latency)
        .collect();
    let quarter = terminal.len() / 4;
    eprintln!(
        "{}",
        Percentiles(terminal[..quarter].to_vec()).line(
            "  terminal, first quarter of the items (fewer settled attempts)",
            &RANKS
        )
    );
    eprintln!(
        "{}",
        Percentiles(terminal[terminal.len() - quarter..].to_vec()).line(
            "  terminal, last quarter of the items (more settled attempts)",
            &RANKS
        )
    );
    for (label, calls) in [
        ("driver.step (one call)", &pipeline.steps),
        ("reconcile_effects (one per wake)", &pipeline.reconciles),
    ] {
        for (range, low, high) in [
            ("first", 0, quarter),
            ("last", REPORT_ITEMS - quarter, REPORT_ITEMS),
        ] {
            let times = calls
                .iter()
                .filter(|(done, _)| (low..high).contains(done))
                .map(|(_, time)| *time)
                .collect();
            eprintln!(
                "{}",
                Percentiles(times).line(
                    &format!("  {label}, {range} quarter ({low}..{high} attempts settled)"),
                    &RANKS
                )
            );
        }
    }
    eprintln!(
        "  {} of {} events consumed on their own file's wake, {} found by a run an earlier \
         wake started; {} after a wait that timed out ({} timeouts of {} s)",
        own.len(),
        samples.len(),
        samples.len() - own.len(),
        samples.iter().filter(|sample| sample.after_timeout).count(),
        pipeline.timeouts,
        WAKE_PATIENCE.as_secs()
    );
}

fn bench_observation_to_event(c: &mut Criterion) {
    let mut pipeline = Pipeline::new();
    report(&mut pipeline);

    let mut group = c.benchmark_group("observation_to_event");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    group.bench_function("terminal", |b| {
        b.iter_custom(|iters| {
            pipeline
                .collect(usize::try_from(iters).unwrap(), BENCH_ITEMS)
                .iter()
                .filter(|sample| sample.terminal)
                .map(|sample| sample.latency)
                .sum()
        });
    });
    group.finish();
}

criterion_group!(benches, bench_observation_to_event);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
