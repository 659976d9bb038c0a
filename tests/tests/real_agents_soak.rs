//! No flapping on the real CLIs (Claude Code, Codex, Aider): one session driven through turns that
//! alternate a full turn and a turn stopped with the interrupt key, against a model that
//! streams for a known time ([`STREAM`], no text: Codex hides its working line while text
//! streams). The pane is sampled every 50 ms through the CLI's profile and its idle debounce,
//! as the supervisor does. Counted:
//! - a **false idle**: a debounced idle while the model is certainly still streaming (before
//!   the interrupt of a stopped turn, or before the stream's end less a margin);
//! - a **false flip**: any reading other than idle in the second after a turn ended (idle
//!   reported), while nothing runs.
//!
//! CI runs 30 s per CLI; the documented long run is ten minutes per CLI:
//! `VALP_SOAK_SECONDS=600 cargo test -p valp-tests --test real_agents_soak -- --ignored
//! --nocapture` (the `_long` tests). Gated like `real_agents.rs` (`VALP_REQUIRE_AGENTS=1`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::time::{Duration, Instant};

use valp_runtime::adapter::tmux::submit::{Submission, submit};
use valp_runtime::agent::classify::{Debouncer, classify};
use valp_runtime::agent::profile::AgentState;
use valp_tests::agents::{AGENT_PATIENCE, AgentPane, Cli, Setup};
use valp_tests::model::{Reply, Script};

/// Pieces of the model's stream, one every [`EVERY`].
const PIECES: usize = 25;
const EVERY: Duration = Duration::from_millis(100);
/// How long the model streams a turn.
const STREAM: Duration = Duration::from_millis(2500);
/// Time before the stream's computed end that is still certainly streaming (the stream may
/// have begun before the submission saw the agent leave idle).
const MARGIN: Duration = Duration::from_millis(800);
/// When a stopped turn gets its interrupt key, after the submission.
const STOP_AFTER: Duration = Duration::from_millis(800);
/// How long an ended turn is watched for a flip.
const QUIET: Duration = Duration::from_secs(1);

/// What a soak saw.
#[derive(Debug, Default)]
struct Soak {
    turns: u32,
    samples: u64,
    false_idles: u64,
    false_flips: u64,
    unconfirmed: u32,
}

/// Drives `cli` through turns for `length`; `None` when the CLI is not installed.
fn soak(cli: Cli, length: Duration) -> Option<Soak> {
    let installed = cli.installed()?;
    let script = Script::new(
        Reply::Slow {
            piece: String::new(),
            pieces: PIECES,
            every: EVERY,
        },
        Reply::Text("done".to_owned()),
    );
    let agent = AgentPane::start(&installed, |_| script, Setup::Ready);
    agent.wait_for(AgentState::Idle, AGENT_PATIENCE);
    let profile = &agent.profile;
    let mut seen = Soak::default();
    let started = Instant::now();
    while started.elapsed() < length {
        seen.turns += 1;
        let stopped = seen.turns % 2 == 0;
        let prompt = format!("turn {}", seen.turns);
        let submission = submit(
            &agent.pane,
            profile,
            &prompt,
            agent.scratch(),
            AGENT_PATIENCE,
        )
        .unwrap();
        if let Submission::Unconfirmed { why, .. } = &submission {
            // A turn that looked idle between two samples: counted, not a flip of ours.
            eprintln!("turn {}: unconfirmed: {why}", seen.turns);
            seen.unconfirmed += 1;
        }
        let submitted = Instant::now();
        let streaming_until = if stopped {
            submitted + STOP_AFTER
        } else {
            submitted + STREAM.saturating_sub(MARGIN)
        };
        let mut debouncer = Debouncer::new(profile.idle_debounce_ms);
        let mut pressed = false;
        loop {
            let read = classify(profile, &agent.screen());
            let now = u64::try_from(submitted.elapsed().as_millis()).unwrap();
            seen.samples += 1;
            if debouncer.sample(read.state, now) == AgentState::Idle {
                if Instant::now() < streaming_until {
                    eprintln!("turn {}: false idle at {now} ms", seen.turns);
                    seen.false_idles += 1;
                }
                break;
            }
            if stopped && !pressed && Instant::now() >= streaming_until {
                let keys: Vec<&str> = profile.interrupt_keys.iter().map(String::as_str).collect();
                agent.pane.press(&keys).unwrap();
                pressed = true;
            }
            assert!(
                submitted.elapsed() < AGENT_PATIENCE,
                "turn {} never ended:\n{}",
                seen.turns,
                agent.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let ended = Instant::now();
        while ended.elapsed() < QUIET {
            let read = classify(profile, &agent.screen());
            seen.samples += 1;
            if read.state != AgentState::Idle {
                eprintln!(
                    "turn {}: flipped to {} by {:?} after the turn",
                    seen.turns,
                    read.state.name(),
                    read.rule
                );
                seen.false_flips += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        clear_input(&agent);
    }
    eprintln!(
        "{} {} soak {:?}: {} turns, {} samples, {} false idles, {} false flips, {} unconfirmed",
        cli.name(),
        installed.version,
        length,
        seen.turns,
        seen.samples,
        seen.false_idles,
        seen.false_flips,
        seen.unconfirmed
    );
    Some(seen)
}

/// Empties the input line a stopped turn left (Claude Code puts the interrupted prompt back):
/// the submission core refuses to type after someone's draft.
fn clear_input(agent: &AgentPane) {
    let started = Instant::now();
    loop {
        let read = classify(&agent.profile, &agent.screen());
        if read.input.as_deref().is_none_or(str::is_empty) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the input line stayed {:?}",
            read.input
        );
        agent.keys(&["C-u"]);
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn assert_no_flap(cli: Cli, length: Duration, at_least: u32) {
    let Some(seen) = soak(cli, length) else {
        return;
    };
    assert!(seen.turns >= at_least, "{seen:?}");
    assert_eq!((seen.false_idles, seen.false_flips), (0, 0), "{seen:?}");
}

/// The long run's length: `VALP_SOAK_SECONDS` (default 600).
fn long() -> Duration {
    Duration::from_secs(
        std::env::var("VALP_SOAK_SECONDS")
            .ok()
            .and_then(|seconds| seconds.parse().ok())
            .unwrap_or(600),
    )
}

#[test]
fn claude_code_does_not_flap_over_30_seconds_of_turns() {
    assert_no_flap(Cli::Claude, Duration::from_secs(30), 3);
}

#[test]
fn codex_does_not_flap_over_30_seconds_of_turns() {
    assert_no_flap(Cli::Codex, Duration::from_secs(30), 3);
}

#[test]
fn aider_does_not_flap_over_30_seconds_of_turns() {
    assert_no_flap(Cli::Aider, Duration::from_secs(30), 3);
}

#[test]
#[ignore = "the documented ten-minute soak, not CI"]
fn claude_code_does_not_flap_long() {
    assert_no_flap(Cli::Claude, long(), 10);
}

#[test]
#[ignore = "the documented ten-minute soak, not CI"]
fn codex_does_not_flap_long() {
    assert_no_flap(Cli::Codex, long(), 10);
}

#[test]
#[ignore = "the documented ten-minute soak, not CI"]
fn aider_does_not_flap_long() {
    assert_no_flap(Cli::Aider, long(), 10);
}
