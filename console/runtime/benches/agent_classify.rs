//! Reading an agent's state from its screen: how long the classifier takes, and how long from
//! an agent's output to its state being read through tmux.
//!
//! - `agent/classify/<screen>`: [`classify`] of one 80x24 demo-agent screen (idle, working,
//!   blocked) with the built-in demo profile: the CPU cost of one sample.
//! - Before it, the output prints p50/p99/max of the end-to-end detection latency on a real
//!   tmux server (private socket, needs tmux and a built `valp`): from `send-keys Enter` (the
//!   demo agent starts a turn and redraws) until `capture-pane -p -e` + [`classify`] read
//!   `working`, sampling as fast as tmux answers; [`E2E_SAMPLES`] turns, each stopped with
//!   Escape and waited back to idle. Set `VALP_BIN` to the `valp` binary to use (default
//!   `target/debug/valp`); without tmux or the binary this part is skipped with a message.
//!
//! Idle is not timed here: the profile holds it back by design for `idle_debounce_ms` (600 ms
//! for the demo, 1,500 ms for Claude Code and Codex, 2,000 ms for Aider).

// A benchmark that cannot do its job fails loudly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use valp_runtime::agent::classify::classify;
use valp_runtime::agent::demo::{Ask, DemoAgent, Input};
use valp_runtime::agent::profile::{AgentState, Profile};

/// Turns timed end to end.
const E2E_SAMPLES: usize = 100;

fn screens() -> Vec<(&'static str, String)> {
    let mut agent = DemoAgent::new(3, Ask::Always);
    let idle = agent.screen(80, 24).join("\n");
    agent.handle(Input::Paste("write @a.txt".to_owned()), 0);
    agent.handle(Input::Enter, 0);
    let working = agent.screen(80, 24).join("\n");
    let mut now = 0;
    let profile = Profile::builtin("demo").unwrap();
    while classify(&profile, &agent.screen(80, 24).join("\n")).state != AgentState::Blocked {
        now += 100;
        agent.handle(Input::Tick, now);
    }
    let blocked = agent.screen(80, 24).join("\n");
    vec![("idle", idle), ("working", working), ("blocked", blocked)]
}

fn tmux(socket: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(args)
        .env_remove("TMUX")
        .output()
        .unwrap()
}

fn read_state(socket: &std::path::Path, profile: &Profile) -> AgentState {
    let screen = tmux(socket, &["capture-pane", "-p", "-e", "-t", "bench"]);
    classify(profile, &String::from_utf8_lossy(&screen.stdout)).state
}

fn wait_for(socket: &std::path::Path, profile: &Profile, state: AgentState) -> Duration {
    let started = Instant::now();
    while read_state(socket, profile) != state {
        assert!(started.elapsed() < Duration::from_secs(10), "no {state:?}");
    }
    started.elapsed()
}

fn end_to_end() {
    let valp = std::env::var_os("VALP_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/debug/valp"),
        PathBuf::from,
    );
    if !valp.exists() || Command::new("tmux").arg("-V").output().is_err() {
        println!("agent e2e: skipped (needs tmux and {})", valp.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sock");
    let started = tmux(
        &socket,
        &[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "bench",
            "-x",
            "80",
            "-y",
            "24",
            valp.to_str().unwrap(),
            "demo-agent",
            "--ask",
            "never",
        ],
    );
    assert!(started.status.success());
    let profile = Profile::builtin("demo").unwrap();
    wait_for(&socket, &profile, AgentState::Idle);
    let mut latencies = Vec::with_capacity(E2E_SAMPLES);
    for turn in 0..E2E_SAMPLES {
        tmux(
            &socket,
            &["send-keys", "-t", "bench", "-l", &format!("turn {turn}")],
        );
        wait_for(&socket, &profile, AgentState::Idle);
        let before = Instant::now();
        tmux(&socket, &["send-keys", "-t", "bench", "Enter"]);
        wait_for(&socket, &profile, AgentState::Working);
        latencies.push(before.elapsed());
        tmux(&socket, &["send-keys", "-t", "bench", "Escape"]);
        wait_for(&socket, &profile, AgentState::Idle);
    }
    tmux(&socket, &["kill-server"]);
    latencies.sort();
    let at = |quantile: f64| {
        latencies[((latencies.len() as f64 * quantile) as usize).min(latencies.len() - 1)]
    };
    println!(
        "agent e2e: Enter -> working read through tmux, {} turns: p50 {:?} p99 {:?} max {:?}",
        latencies.len(),
        at(0.5),
        at(0.99),
        latencies[latencies.len() - 1]
    );
}

fn bench(c: &mut Criterion) {
    end_to_end();
    let profile = Profile::builtin("demo").unwrap();
    let mut group = c.benchmark_group("agent/classify");
    for (name, screen) in screens() {
        group.bench_function(name, |b| b.iter(|| classify(&profile, &screen)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
