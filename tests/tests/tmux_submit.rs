//! Submitting a prompt to a terminal agent with proof (`valp_runtime::adapter::tmux::submit`),
//! against real tmux on private sockets: the demo agent takes a hostile prompt byte-exact and
//! the submission is proven; a blocked agent is refused with nothing typed; an agent that
//! shows the paste but ignores Enter gives an unconfirmed submission, never a delivered one;
//! key names in a profile-less keypress are refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;
use std::time::{Duration, Instant};

use valp_runtime::adapter::tmux::pane::{Pane, PaneError};
use valp_runtime::adapter::tmux::submit::{Submission, SubmitError, submit};
use valp_runtime::agent::classify::classify;
use valp_runtime::agent::profile::{AgentState, Profile};
use valp_tests::tmux::{PATIENCE, TmuxServer, tmux_at};
use valp_tests::valp_binary;

fn pane_of(server: &TmuxServer) -> Pane {
    let id = tmux_at(
        server.socket(),
        &["display-message", "-p", "-t", "agents", "#{pane_id}"],
    );
    let id = String::from_utf8_lossy(&id.stdout).trim().to_owned();
    Pane::new(
        Path::new("tmux"),
        server.socket(),
        &id,
        Duration::from_secs(5),
    )
}

fn demo(dir: &Path, ask: &str) -> TmuxServer {
    let valp = valp_binary().unwrap();
    TmuxServer::start(
        &dir.join("sock"),
        "agents",
        dir,
        &[
            valp.to_str().unwrap(),
            "demo-agent",
            "--seed",
            "9",
            "--ask",
            ask,
        ],
    )
}

fn steps(submission: &Submission) -> Vec<String> {
    let proof = match submission {
        Submission::Proven(proof) | Submission::Unconfirmed { proof, .. } => proof,
    };
    proof.steps.iter().map(|step| step.what.clone()).collect()
}

#[test]
fn a_hostile_prompt_reaches_the_demo_agent_byte_exact_and_is_proven() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo(dir.path(), "never");
    let pane = pane_of(&server);
    let profile = Profile::builtin("demo").unwrap();
    let prompt = "write @out.txt; rm -rf $(pwd) 'q' \"d\" `x` C-c Enter Escape \\";
    let submission = submit(&pane, &profile, prompt, dir.path(), PATIENCE).unwrap();
    assert!(
        matches!(submission, Submission::Proven(_)),
        "{submission:?}"
    );
    assert_eq!(
        steps(&submission),
        [
            "idle, input empty",
            "load-buffer + paste-buffer -p",
            "dispatch_inserted (Echo readback)",
            "send-keys Enter",
            "working, input cleared: submitted",
        ]
    );
    let started = Instant::now();
    while !dir.path().join("out.txt").exists() {
        assert!(started.elapsed() < PATIENCE, "the turn never wrote out.txt");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        format!("written by valp demo-agent (seed 9, turn 1)\n{prompt}")
    );
    assert!(
        !dir.path().read_dir().unwrap().any(|entry| {
            entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("prompt-")
        }),
        "the staged prompt file is removed"
    );
}

#[test]
fn a_blocked_agent_is_refused_with_nothing_typed() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo(dir.path(), "always");
    let pane = pane_of(&server);
    let profile = Profile::builtin("demo").unwrap();
    let first = submit(&pane, &profile, "job @a.txt", dir.path(), PATIENCE).unwrap();
    assert!(matches!(first, Submission::Proven(_)), "{first:?}");
    let started = Instant::now();
    while classify(&profile, &pane.capture().unwrap()).state != AgentState::Blocked {
        assert!(started.elapsed() < PATIENCE, "the demo never asked");
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = pane.capture().unwrap();
    assert_eq!(
        submit(&pane, &profile, "second", dir.path(), PATIENCE),
        Err(SubmitError::Refused {
            state: "blocked",
            rule: " (permission question)".to_owned(),
            why: "it waits for an answer; Enter would answer it",
        })
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        pane.capture().unwrap(),
        before,
        "the refused submission typed something"
    );
    assert!(
        !dir.path().join("a.txt").exists(),
        "the question was answered"
    );
}

#[test]
fn an_agent_that_ignores_enter_is_unconfirmed_not_delivered() {
    let dir = tempfile::tempdir().unwrap();
    // A "agent" that shows a prompt, echoes what is typed (the tty does) and never reacts.
    let server = TmuxServer::start(
        &dir.path().join("sock"),
        "agents",
        dir.path(),
        &["sh", "-c", "printf 'READY\\n> '; exec sleep 600"],
    );
    let pane = pane_of(&server);
    let profile = Profile::parse(
        r#"
schema_version = "valp-agent-profile.v1"
name = "deaf"
process_names = []
idle_debounce_ms = 200
interrupt_keys = ["C-c"]
exit_keys = ["C-d"]
readback = "echo"

[input]
pattern = '^> ?(?P<input>.*)$'

[[rules]]
name = "ready"
state = "idle"
pattern = '^READY$'
"#,
        "deaf.toml",
    )
    .unwrap();
    let submission = submit(&pane, &profile, "do it", dir.path(), Duration::from_secs(2)).unwrap();
    let Submission::Unconfirmed { why, .. } = &submission else {
        panic!("counted as delivered: {submission:?}");
    };
    assert_eq!(
        why,
        "the agent did not leave idle with its input cleared after Enter"
    );
    assert_eq!(
        steps(&submission),
        [
            "idle, input empty",
            "load-buffer + paste-buffer -p",
            "dispatch_inserted (Echo readback)",
            "send-keys Enter",
        ]
    );
}

#[test]
fn text_is_never_pressed_as_keys() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo(dir.path(), "never");
    let pane = pane_of(&server);
    assert_eq!(
        pane.press(&["echo hi"]),
        Err(PaneError::Key("echo hi".to_owned()))
    );
    let missing = Pane::new(Path::new("/no/such/tmux"), server.socket(), "%0", PATIENCE);
    assert_eq!(
        missing.capture(),
        Err(PaneError::Missing("/no/such/tmux".to_owned()))
    );
}

#[test]
fn a_one_megabyte_prompt_arrives_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let server = demo(dir.path(), "never");
    let pane = pane_of(&server);
    let profile = Profile::builtin("demo").unwrap();
    let chunk = "line with 'single' \"double\" ; $(rm -rf ~) `id` C-c Enter Escape \\ \t tab\n";
    let mut prompt = "write @big.txt\n".to_owned();
    while prompt.len() < 1 << 20 {
        prompt.push_str(chunk);
    }
    let submission = submit(
        &pane,
        &profile,
        &prompt,
        dir.path(),
        Duration::from_secs(60),
    )
    .unwrap();
    assert!(
        matches!(submission, Submission::Proven(_)),
        "{submission:?}"
    );
    let file = dir.path().join("big.txt");
    let started = Instant::now();
    let expected = format!("written by valp demo-agent (seed 9, turn 1)\n{prompt}");
    while std::fs::metadata(&file).map_or(true, |meta| meta.len() < expected.len() as u64) {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "big.txt never complete"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        std::fs::read_to_string(&file).unwrap() == expected,
        "not byte-exact"
    );
}

/// Drives the demo agent through turns for `length`: every turn is submitted with proof,
/// questions are answered, every fourth turn is stopped with Escape; the pane is sampled every
/// 50 ms through the demo profile and its idle debounce. Returns (turns, samples, false idles):
/// a false idle is a debounced idle while a turn is still running (its file not yet written
/// and not stopped).
fn soak(length: Duration) -> (u32, u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let server = demo(dir.path(), "sometimes");
    let pane = pane_of(&server);
    let profile = Profile::builtin("demo").unwrap();
    let started = Instant::now();
    let (mut turns, mut samples, mut false_idles) = (0, 0, 0);
    while started.elapsed() < length {
        turns += 1;
        let file = dir.path().join(format!("turn-{turns}.txt"));
        let prompt = format!("turn {turns}: write @turn-{turns}.txt");
        let submission = submit(&pane, &profile, &prompt, dir.path(), PATIENCE).unwrap();
        assert!(
            matches!(submission, Submission::Proven(_)),
            "{submission:?}"
        );
        let mut debouncer = valp_runtime::agent::classify::Debouncer::new(profile.idle_debounce_ms);
        let turn_started = Instant::now();
        let mut stopped = false;
        loop {
            let read = classify(&profile, &pane.capture().unwrap());
            let now = u64::try_from(turn_started.elapsed().as_millis()).unwrap();
            let reported = debouncer.sample(read.state, now);
            samples += 1;
            let running = !stopped && !file.exists();
            if reported == AgentState::Idle {
                if running {
                    false_idles += 1;
                }
                break;
            }
            match read.state {
                AgentState::Blocked => {
                    tmux_at(server.socket(), &["send-keys", "-t", "agents", "y"]);
                }
                AgentState::Working if turns % 4 == 0 && !stopped && now > 300 => {
                    pane.press(&["Escape"]).unwrap();
                    stopped = true;
                }
                _ => {}
            }
            assert!(
                turn_started.elapsed() < PATIENCE,
                "turn {turns} never ended"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    (turns, samples, false_idles)
}

#[test]
fn a_one_minute_soak_of_the_demo_agent_has_no_false_idle() {
    let (turns, samples, false_idles) = soak(Duration::from_secs(60));
    eprintln!("soak 60 s: {turns} turns, {samples} samples, {false_idles} false idles");
    assert!(turns >= 10, "only {turns} turns in a minute");
    assert_eq!(false_idles, 0);
}

/// The documented long run: `cargo test -p valp-tests --test tmux_submit -- --ignored`.
#[test]
#[ignore = "10-minute soak; run with --ignored"]
fn a_ten_minute_soak_of_the_demo_agent_has_no_false_idle() {
    let (turns, samples, false_idles) = soak(Duration::from_secs(600));
    eprintln!("soak 600 s: {turns} turns, {samples} samples, {false_idles} false idles");
    assert_eq!(false_idles, 0);
}
