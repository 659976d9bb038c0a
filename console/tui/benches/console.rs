//! The console's frame path: drawing, and a key turned into a frame.
//!
//! - `console/draw/200x60_10k_items`: [`App::render`] of a 200x60 screen showing 100 tasks of
//!   100 work items each (10,000 items), 200 observations and 100 activity lines, into
//!   ratatui's `TestBackend` (the cells a terminal would get; no terminal IO).
//! - `console/key_to_frame/busy`: one key (`j`, the cursor moves) handed to the app and the
//!   frame it causes drawn, while another thread keeps a core busy the way a runtime pump does.
//!   The backend is not on this path at all: the event loop only queues the backend's work
//!   (see `valp_tui::worker`), so what a key waits for is the app and the drawing.
//!
//! Before criterion's runs, each prints p50/p99/max of [`SAMPLES`] runs timed one by one
//! (targets: draw p99 <= 2 ms, key to frame p99 <= 5 ms), in wall time and in the CPU time of
//! the drawing thread. On a machine shared with other builds the wall-time tail is mostly time
//! spent waiting for a core; the CPU time and `callgrind` count what a frame costs (see
//! ARCHITECTURE.md, "Console TUI").

// A benchmark that cannot do its job fails loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use valp_tui::{App, Config, Event};
use valp_view::{
    ConsoleView, ItemRow, LaneView, LeaderView, ObservationRow, SessionCheck, TaskRow,
};

#[path = "../../runtime/benches/support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

/// Runs timed one by one for the percentile lines (`VALP_TUI_BENCH_SAMPLES` sets another count).
const SAMPLES: usize = 2_000;
const TASKS: usize = 100;
const ITEMS_PER_TASK: usize = 100;

fn view() -> ConsoleView {
    let statuses = ["completed", "running", "pending", "eligible", "blocked"];
    let tasks = (0..TASKS)
        .map(|task| TaskRow {
            task_id: format!("task-{task:03}"),
            status: "executing".to_owned(),
            revision: 40,
            epoch: 1,
            fenced: false,
            items_completed: ITEMS_PER_TASK / 5,
            items_total: ITEMS_PER_TASK,
            interrupted: false,
            waiting: String::new(),
            gates: "quality* pass · experience pass · cost unverifiable · stability pass"
                .to_owned(),
        })
        .collect();
    let items = (0..TASKS * ITEMS_PER_TASK)
        .map(|at| ItemRow {
            task_id: format!("task-{:03}", at / ITEMS_PER_TASK),
            work_item_id: format!("item-{:03}", at % ITEMS_PER_TASK),
            requirement: "required".to_owned(),
            status: statuses[at % statuses.len()].to_owned(),
            position: "locked by item-000 (running)".to_owned(),
            attempt: format!("task:item-{at}:a1 g1 running"),
            attempt_since_ms: 0,
        })
        .collect();
    let observations = (0..200u64)
        .map(|at| ObservationRow {
            task_id: "task-000".to_owned(),
            work_item_id: format!("item-{at:03}"),
            attempt_id: format!("task-000:item-{at:03}:a1"),
            sequence: at,
            status: "accepted".to_owned(),
            detail: "the process started".to_owned(),
            source: String::new(),
            provenance: String::new(),
            seen_ms: 0,
            seen_at: String::new(),
        })
        .collect();
    ConsoleView {
        installation_id: "inst-0123456789abcdef0123".to_owned(),
        root: "/home/alice/work/valp/.valp".to_owned(),
        lane: LaneView {
            status: "active".to_owned(),
            active_epoch: 1,
            leader: Some(LeaderView {
                principal_id: "user:alice".to_owned(),
                principal_kind: "human".to_owned(),
                candidate_id: "human:uid-1000".to_owned(),
                epoch: 1,
                session_summary: "alice on /dev/pts/3".to_owned(),
            }),
            session: SessionCheck::Reopened {
                at: "2026-11-30T12:00:00Z".to_owned(),
                epoch: 1,
            },
            candidates: Vec::new(),
            epochs: Vec::new(),
        },
        tasks,
        items,
        observations,
        rejections: Vec::new(),
        activity: (0..100)
            .map(|at| format!("task-000: proposal {at} accepted"))
            .collect(),
        ..ConsoleView::default()
    }
}

/// The CPU time this thread has used so far (not the time it waited for a core).
fn thread_cpu() -> Duration {
    let time = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(time.tv_sec).unwrap(),
        u32::try_from(time.tv_nsec).unwrap(),
    )
}

/// Runs `step` [`SAMPLES`] times (or `VALP_TUI_BENCH_SAMPLES`) and prints the percentiles of
/// its wall time, then of the CPU time it took (the wall time without the waits for a core
/// that a loaded machine adds).
fn sample(label: &str, mut step: impl FnMut(usize)) {
    let samples = std::env::var("VALP_TUI_BENCH_SAMPLES")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(SAMPLES);
    let (wall, cpu): (Vec<Duration>, Vec<Duration>) = (0..samples)
        .map(|at| {
            let (started, cpu) = (Instant::now(), thread_cpu());
            step(at);
            (started.elapsed(), thread_cpu().saturating_sub(cpu))
        })
        .unzip();
    println!("{}", Percentiles(wall).line(label, &[500, 990]));
    println!(
        "{}",
        Percentiles(cpu).line(&format!("{label} (CPU time)"), &[500, 990])
    );
}

fn terminal() -> Terminal<TestBackend> {
    Terminal::new(TestBackend::new(200, 60)).unwrap()
}

/// Keeps one core busy until dropped.
struct Busy(Arc<AtomicBool>);

impl Busy {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let spinning = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut sum = 0u64;
            while !spinning.load(Ordering::Relaxed) {
                sum = black_box(sum.wrapping_add(1));
            }
        });
        Self(stop)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// One key handled and its frame drawn; the key alternates so the cursor keeps moving.
fn key_to_frame(app: &mut App, terminal: &mut Terminal<TestBackend>, down: bool) {
    let code = if down {
        KeyCode::Char('j')
    } else {
        KeyCode::Char('k')
    };
    let effects = app.handle(Event::Key(KeyEvent::from(code)));
    assert!(
        effects.is_empty(),
        "moving the cursor asks nothing of the backend"
    );
    if app.take_dirty() {
        terminal.draw(|frame| app.render(frame)).unwrap();
    }
}

fn console(c: &mut Criterion) {
    let app = App::new(Config::builtin().unwrap(), view());
    let mut screen = terminal();
    sample("draw 200x60, 10,000 items", |_| {
        screen.draw(|frame| app.render(frame)).unwrap();
    });
    c.bench_function("console/draw/200x60_10k_items", |b| {
        b.iter(|| {
            screen.draw(|frame| app.render(frame)).unwrap();
        });
    });

    // `VALP_TUI_BENCH_BUSY=0` leaves the core idle: for callgrind, which runs threads one at a
    // time and would count the spinning thread's instructions into the profile.
    let _busy = (std::env::var("VALP_TUI_BENCH_BUSY").as_deref() != Ok("0")).then(Busy::start);
    let mut app = App::new(Config::builtin().unwrap(), view());
    let mut screen = terminal();
    sample("key to frame, a core busy", |at| {
        key_to_frame(&mut app, &mut screen, at % 200 < 100);
    });
    let mut at = 0usize;
    c.bench_function("console/key_to_frame/busy", |b| {
        b.iter(|| {
            at += 1;
            key_to_frame(&mut app, &mut screen, at % 200 < 100);
        });
    });
}

criterion_group!(benches, console);
criterion::criterion_main!(benches);
