//! Key → frame through a real terminal, and the console's idle CPU, over the real `valp`
//! binary (release build) on a pty (`valp_tests::pty`).
//!
//! The fixture: `VALP_PTY_TASKS` tasks (default 100) of `VALP_PTY_ITEMS` work items (default
//! 100), `VALP_PTY_AGENTS` of them (default 3) with a running process (`sleep`); the console
//! on a 200x60 pty. Then `VALP_PTY_KEYS` keys (default 1,000; `j` fifty times, `k` fifty
//! times, …, so the Tasks cursor walks the tasks and the Work items pane shows another task's
//! items at every key), each sent once the console is quiet and timed to the end of the frame
//! that answers it; then `VALP_PTY_IDLE_SECONDS` (default 60) without input, reading the
//! process's CPU time from `/proc/<pid>/stat`.
//!
//! `VALP_PTY_BINARY=PATH` runs that `valp` as the console instead (e.g. a build of an older
//! commit, for a before/after on the same fixture).
//!
//! `VALP_PTY_OPEN_PROJECT=DIR` measures the console's start instead: whole-process time from
//! spawning `valp` in project `DIR` (e.g. one holding a `valp demo --entries 100000
//! --work-items 20` task and a selected Leader) to the end of its first frame, then to the
//! footer's opening progress, `VALP_PTY_OPENS` times (default 5), 120x40.
//!
//! Run: `cargo bench -p valp-tests --bench console_pty` (about 3 minutes with the defaults,
//! most of it publishing the 100 plans and the idle minute). Targets: key → frame p99 <= 5 ms,
//! idle CPU <= 1 % of a core.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use valp_tests::pty::{Console, Fixture};

#[path = "../../console/runtime/benches/support/percentiles.rs"]
mod percentiles;
use percentiles::Percentiles;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Time to the first frame (and to the opening progress) of the console started in `project`.
fn opens(project: &std::path::Path) {
    let mut firsts = Vec::new();
    for _ in 0..setting("VALP_PTY_OPENS", 5) {
        let mut console = Console::start(project, 120, 40);
        let first = console.first_frame(Duration::from_secs(60)).unwrap();
        console.wait_for("verified", Duration::from_secs(60));
        println!("first frame after {first:.1?}; the opening progress shown");
        firsts.push(first);
        console.quit(Duration::from_secs(5));
    }
    println!("{}", Percentiles(firsts).line("first frame", &[500, 1000]));
}

fn main() {
    if let Some(project) = std::env::var_os("VALP_PTY_OPEN_PROJECT") {
        opens(std::path::Path::new(&project));
        return;
    }
    let tasks = setting("VALP_PTY_TASKS", 100);
    let items = setting("VALP_PTY_ITEMS", 100);
    let agents = setting("VALP_PTY_AGENTS", 3);
    let keys = setting("VALP_PTY_KEYS", 1_000);
    let idle = Duration::from_secs(u64::try_from(setting("VALP_PTY_IDLE_SECONDS", 60)).unwrap());

    let started = Instant::now();
    let fixture = Fixture::new(tasks, items, agents);
    println!(
        "fixture: {tasks} tasks x {items} items, {agents} running agents, published in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut console = Console::start(fixture.project.path(), 200, 60);
    let last = format!("task-{:03}", tasks.saturating_sub(1));
    console.wait_for(&last, Duration::from_secs(60));

    let mut samples = Vec::with_capacity(keys);
    let mut missed = 0;
    for at in 0..keys {
        let key: &[u8] = if at % 100 < 50 { b"j" } else { b"k" };
        match console.key_to_frame(key) {
            Some(latency) => samples.push(latency),
            None => missed += 1,
        }
    }
    println!(
        "{} ({missed} keys without a frame)",
        Percentiles(samples).line("pty key to frame, 200x60", &[500, 990, 999])
    );

    let (share, frames) = console.idle_cpu(idle);
    println!(
        "idle: {:.2} % of a core over {} s, {frames} frames drawn",
        share * 100.0,
        idle.as_secs()
    );
    println!(
        "console exited with {:?}",
        console.quit(Duration::from_secs(5))
    );
}
