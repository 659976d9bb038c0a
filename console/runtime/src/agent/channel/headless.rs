//! Headless agents (`adapter = "agent-stream"`): `valp agent run-stream claude|codex
//! [--prompt TEXT] -- ARGV…`, the program the process adapter's detached supervisor runs for an
//! `agent-stream` work item ([`wrapped`]). The process adapter gives it everything a process
//! gets (its own folder, run spec, proofs, timeout, cancel, interrupt, captured stdout); this
//! wrapper adds the agent's stream:
//!
//! - it starts ARGV (`claude -p --output-format stream-json --verbose …`, `codex exec --json
//!   …`) in a process group of its own, stdout piped, stderr shared;
//! - every line the agent prints is passed on to the wrapper's stdout unchanged (the process
//!   adapter captures it: the transcript is the attempt's stdout) and recorded as the attempt's
//!   agent signals ([`super::bridge::record_stream_with`]): turns, tool calls, cost in
//!   micro-USD, tokens, errors and the final result; a line that does not map is a listed
//!   rejection and reading goes on;
//! - with a prompt, claude (whose ARGV then has `--input-format stream-json`) gets it as a
//!   stream-json user message and its stdin stays open for control messages until its
//!   `result`, or until recording fails (then the rest of its output is passed on unrecorded:
//!   an open input would keep it waiting for ever); codex gets it as text and stdin is closed;
//! - an interrupt (the process adapter's SIGINT to the wrapper's group, which the agent's own
//!   group does not receive) is passed to the agent as its control message where it has one
//!   (claude with stdin open: `control_request` `interrupt`), else as SIGINT to its group;
//! - a stop (SIGTERM) is passed on as SIGTERM, then SIGKILL after [`STOP_GRACE`];
//! - the wrapper exits with the agent's exit code (128 + the signal that ended it).
//!
//! The agent's attempt is named by the environment the runtime sets (`VALP_CONTROL_ROOT`,
//! `VALP_TASK_ID`, `VALP_WORK_ITEM_ID`, `VALP_ATTEMPT_ID`), as for hooks.

use std::io::{BufReader, Write as _};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::bridge::{self, AttemptEnv, BridgeError, StreamReport};
use super::signal::SignalKind;
use super::stream::Stream;
use crate::adapter::process::os::{self, Signal};
use crate::plan::StreamRun;

/// How long a stopped agent has between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// How often the wrapper looks at its signals and the agent.
const POLL: Duration = Duration::from_millis(20);

/// Why the wrapper could not run the agent.
#[derive(Debug, thiserror::Error)]
pub enum HeadlessError {
    /// No command.
    #[error("no agent command after `--`")]
    NoCommand,
    /// The agent could not be started.
    #[error("starting {program}: {source}")]
    Start {
        /// `argv[0]`.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Signals could not be watched.
    #[error("watching SIGINT and SIGTERM: {0}")]
    Signals(std::io::Error),
}

/// The argv the process adapter runs for an `agent-stream` item: `VALP agent run-stream AGENT
/// [--prompt TEXT] -- ARGV…`.
pub fn wrapped(valp: &Path, stream: &StreamRun, argv: Vec<String>) -> Vec<String> {
    let mut wrapped = vec![
        valp.display().to_string(),
        "agent".to_owned(),
        "run-stream".to_owned(),
        stream.agent.as_str().to_owned(),
    ];
    if let Some(prompt) = &stream.prompt {
        wrapped.extend(["--prompt".to_owned(), prompt.clone()]);
    }
    wrapped.push("--".to_owned());
    wrapped.extend(argv);
    wrapped
}

/// How the agent ended.
#[derive(Debug)]
pub struct Ended {
    /// Its exit code (128 + signal when a signal ended it).
    pub code: i32,
    /// What its stream gave (`Err`: recording stopped early; the agent still ran to its end).
    pub report: Result<StreamReport, BridgeError>,
    /// Interrupts passed on, and how (`control_request` or `SIGINT`).
    pub interrupts: Vec<&'static str>,
}

/// The claude stream-json user message carrying `prompt`.
fn user_message(prompt: &str) -> String {
    serde_json::json!({
        "type": "user",
        "message": {"role": "user", "content": [{"type": "text", "text": prompt}]},
    })
    .to_string()
}

/// The claude stream-json control message interrupting the turn.
fn interrupt_message(n: usize) -> String {
    serde_json::json!({
        "type": "control_request",
        "request_id": format!("valp-interrupt-{n}"),
        "request": {"subtype": "interrupt"},
    })
    .to_string()
}

/// Runs the agent `argv` printing `stream` with `prompt`, recording its stream for the attempt
/// in `env` (see the module documentation).
pub fn run(
    stream: Stream,
    prompt: Option<&str>,
    argv: &[String],
    env: &AttemptEnv,
) -> Result<Ended, HeadlessError> {
    let (program, rest) = argv.split_first().ok_or(HeadlessError::NoCommand)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    let stopped = Arc::new(AtomicBool::new(false));
    for (signal, flag) in [
        (signal_hook::consts::SIGINT, &interrupted),
        (signal_hook::consts::SIGTERM, &stopped),
    ] {
        signal_hook::flag::register(signal, Arc::clone(flag)).map_err(HeadlessError::Signals)?;
    }
    let mut child = Command::new(program)
        .args(rest)
        .stdin(if prompt.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .map_err(|source| HeadlessError::Start {
            program: program.clone(),
            source,
        })?;
    let group = child.id();
    // The control channel: claude's stdin while its turn runs.
    let control: Arc<Mutex<Option<ChildStdin>>> = Arc::new(Mutex::new(None));
    if let (Some(prompt), Some(mut stdin)) = (prompt, child.stdin.take()) {
        let written = match stream {
            Stream::Claude => writeln!(stdin, "{}", user_message(prompt)),
            Stream::Codex => stdin.write_all(prompt.as_bytes()),
        };
        if written.is_ok() && stream == Stream::Claude {
            *control.lock().unwrap_or_else(PoisonError::into_inner) = Some(stdin);
        }
    }
    let stdout = child.stdout.take();
    let done = Arc::new(AtomicBool::new(false));
    // The watcher passes signals on and waits for the agent; this thread reads the stream
    // (it may be the one holding stderr's lock: the watcher writes nowhere).
    let watcher = {
        let (control, done) = (Arc::clone(&control), Arc::clone(&done));
        std::thread::spawn(move || watch(child, group, &control, &done, &interrupted, &stopped))
    };
    let report = match stdout {
        Some(stdout) => {
            let mut out = std::io::stdout().lock();
            let mut reader = BufReader::new(stdout);
            let report = bridge::record_stream_with(
                stream,
                &mut reader,
                env,
                &crate::clock::SystemClock,
                |line, kinds| {
                    out.write_all(line)?;
                    out.flush()?;
                    // The turn's result: claude exits once its input ends.
                    if kinds.iter().any(|kind| {
                        matches!(kind, SignalKind::TurnCompleted | SignalKind::TurnFailed)
                    }) {
                        control
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .take();
                    }
                    Ok(())
                },
            );
            if report.is_err() {
                // Recording stopped before the turn's result: claude would wait on its open
                // input for ever (and on a full pipe). End its input and pass the rest of its
                // output on unrecorded, so it finishes its turn and exits.
                control
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                let _ = std::io::copy(&mut reader, &mut out);
            }
            report
        }
        None => Ok(StreamReport::default()),
    };
    done.store(true, Ordering::SeqCst);
    let (code, interrupts) = watcher.join().unwrap_or((1, Vec::new()));
    Ok(Ended {
        code,
        report,
        interrupts,
    })
}

/// Passes interrupts and stops on to the agent's group until the agent exits; then, once the
/// stream has ended (`done`) or [`STOP_GRACE`] passed, kills what is left of its group (a
/// process it left behind holding its output). Returns the exit code and the interrupts.
fn watch(
    mut child: std::process::Child,
    group: u32,
    control: &Mutex<Option<ChildStdin>>,
    done: &AtomicBool,
    interrupted: &AtomicBool,
    stopped: &AtomicBool,
) -> (i32, Vec<&'static str>) {
    let mut interrupts = Vec::new();
    let mut stop_at: Option<Instant> = None;
    let status = loop {
        if interrupted.swap(false, Ordering::SeqCst) {
            let mut channel = control.lock().unwrap_or_else(PoisonError::into_inner);
            let sent = channel.as_mut().is_some_and(|stdin| {
                writeln!(stdin, "{}", interrupt_message(interrupts.len() + 1)).is_ok()
            });
            drop(channel);
            if sent {
                interrupts.push("control_request");
            } else {
                os::signal_group(group, Signal::Int);
                interrupts.push("SIGINT");
            }
        }
        if stopped.swap(false, Ordering::SeqCst) && stop_at.is_none() {
            control
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            os::signal_group(group, Signal::Term);
            stop_at = Some(Instant::now() + STOP_GRACE);
        }
        if stop_at.is_some_and(|at| Instant::now() >= at) {
            os::signal_group(group, Signal::Kill);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => std::thread::sleep(POLL),
            Err(_) => break None,
        }
    };
    control
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let deadline = Instant::now() + STOP_GRACE;
    while !done.load(Ordering::SeqCst) && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
    if !done.load(Ordering::SeqCst) {
        os::signal_group(group, Signal::Kill);
    }
    let code = status.map_or(1, |status| {
        status
            .code()
            .or_else(|| status.signal().map(|signal| 128 + signal))
            .unwrap_or(1)
    });
    (code, interrupts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// The inbox cannot be written (a file where its folder goes): the first line is not
    /// recorded, and the agent, which reads its input to the end before it exits, still ends
    /// at once: its input is closed when recording fails.
    #[test]
    fn a_recording_failure_closes_the_agents_input_so_it_ends() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("inbox")).unwrap();
        std::fs::write(root.path().join("inbox/agent-signals"), b"not a folder").unwrap();
        let env = AttemptEnv {
            control_root: root.path().to_path_buf(),
            attempt: super::super::signal::AttemptIds {
                task_id: "t".into(),
                work_item_id: "w".into(),
                attempt_id: "t:w:a1".into(),
            },
        };
        let script = r#"IFS= read -r prompt; echo '{"type":"system","subtype":"init","session_id":"s"}'; cat >/dev/null; echo after"#;
        let argv = ["sh", "-c", script].map(str::to_owned);
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(run(Stream::Claude, Some("Work"), &argv, &env));
        });
        let ended = receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the agent ended")
            .unwrap();
        assert_eq!(ended.code, 0);
        let Err(BridgeError::Inbox(error)) = ended.report else {
            panic!("{:?}", ended.report)
        };
        assert_eq!(
            error.to_string(),
            format!(
                "{}/inbox/agent-signals: not a real folder (a symbolic link or a file); nothing \
                 written",
                root.path().display()
            )
        );
    }
}
