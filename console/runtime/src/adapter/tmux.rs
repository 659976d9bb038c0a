//! The tmux adapter: a terminal coding agent in a tmux pane, handed its prompt with proof and
//! watched through its screen by a detached supervisor, one per attempt, that outlives the
//! console (`valp adapter tmux --dir DIR`, [`supervisor`]).
//!
//! A plan names a tmux item with `adapter = "tmux"` ([`crate::plan::TmuxRun`]). The attempt
//! folder has the process adapter's layout and lifecycle (the same request, `supervisor.json`,
//! observations, control files, reconcile and cancel through the effect ledger; see
//! [`crate::adapter::process`]), with its own run spec and proofs:
//!
//! ```text
//! <control root>/runtime/tmux/
//!   .server.sock                valp's private tmux server (one per installation)
//!   attempts/<H>/               H = attempt_folder(attempt_id)
//!     request.json              AdapterRequest (submit)                          System
//!     run.json                  valp-tmux-run-spec.v1: agent, command|target,
//!                               prompt, socket, cwd, env, timeout, evidence       System
//!     claude-settings.json      the agent's hooks, passed as `--settings FILE` when its
//!                               profile says `launch_hooks = "claude_settings"`
//!                               ([`launch`])                                      supervisor
//!     supervisor.json, supervisor.log, control/cancel.json, control/interrupt-*.json,
//!     control/message-*.json (a Leader message; its delivery proof: proofs/message-*.json)
//!     proofs/dispatch_inserted.json  the paste, read back: transport only         supervisor
//!     proofs/submission.json         every step of the submission, with the
//!                                    screen digest after each                     supervisor
//!     proofs/completion.json         how it ended, expected evidence digests      supervisor
//!     state.json                     the agent's state, rule, sample time, tail   supervisor
//!     captures/NNNNNN-blocked.json   the screen each time the agent blocked:
//!                                    redacted, capped, swept after 14 days
//!                                    ([`capture`])                                supervisor
//!     worktree.json, worktree-diff.json  with `workdir = "worktree"`
//!                                    ([`crate::adapter::worktree`])               runtime
//!     .pane-output                   the pane's output, piped, emptied when read  tmux
//!     observations/000001.json       accepted (submission proven) or blocked
//!     observations/00000N.json       waiting ("runtime idle, evidence missing"), then the
//!                                    final one (completed / blocked / cancelled)
//! ```
//!
//! The agent's window gets `VALP_CONTROL_ROOT`, `VALP_TASK_ID`, `VALP_WORK_ITEM_ID` and
//! `VALP_ATTEMPT_ID` in its environment (hooks find their attempt through them; the generated
//! settings of [`launch`] also set them in each hook's command).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use valp_kernel::canonical::sha256_digest;

use crate::abi::{AdapterRequest, attempt_folder};
use crate::adapter::process::{self, ProcessError, invalid, io_error};

pub mod capture;
mod channel;
pub mod launch;
pub mod pane;
pub mod records;
pub mod screen;
pub mod server;
pub mod submit;
mod supervisor;

pub use records::{
    CompletionProof, MessageProof, MessageRequest, Record, StateRecord, SubmissionProof, TmuxSpec,
};

/// The adapter's name in the control root (`runtime/tmux/`).
pub const ADAPTER_ID: &str = "tmux";
/// valp's private tmux server, relative to the control root (a dot name: the file watcher
/// ignores it, as it is a socket and holds no observations).
pub const SERVER_SOCKET: &str = "runtime/tmux/.server.sock";
/// The session valp's agent windows go into.
pub const SESSION: &str = "valp";
/// `proofs/dispatch_inserted.json`
pub const INSERTED_FILE: &str = "proofs/dispatch_inserted.json";
/// `proofs/submission.json`
pub const SUBMISSION_FILE: &str = "proofs/submission.json";
/// `proofs/completion.json`
pub const COMPLETION_FILE: &str = "proofs/completion.json";
/// `control/message-<ms>-<pid>-<n>.json`: a Leader message; its proof has the same name in
/// `proofs/`.
pub const MESSAGE_PREFIX: &str = "message-";
/// `state.json`
pub const STATE_FILE: &str = "state.json";
/// `.pane-output`: what the agent's pane prints, piped by tmux and emptied by the supervisor
/// as it reads the screen, removed when the attempt ends (a dot name: the file watcher ignores
/// it).
pub const OUTPUT_FILE: &str = ".pane-output";
/// Milliseconds each step of a stop waits for the agent to go.
pub const DEFAULT_GRACE_MS: u64 = 3000;
/// The environment variables set in the agent's window, in this order: control root, task,
/// work item, attempt.
pub const ENV_NAMES: [&str; 4] = [
    "VALP_CONTROL_ROOT",
    "VALP_TASK_ID",
    "VALP_WORK_ITEM_ID",
    "VALP_ATTEMPT_ID",
];

/// `runtime/tmux/attempts/<attempt_folder(attempt_id)>`: where a tmux attempt's folder goes,
/// relative to the control root, beside the process and external adapters'.
pub fn attempt_ref(attempt_id: &str) -> String {
    format!(
        "runtime/{ADAPTER_ID}/attempts/{}",
        attempt_folder(attempt_id)
    )
}

/// `tmux:<pane id>:<pane pid>`: the runtime identity of an agent's pane.
pub fn runtime_identity(pane: &str, pid: u32) -> String {
    format!("tmux:{pane}:{pid}")
}

/// The environment of an attempt's agent ([`ENV_NAMES`]): the control root, then the task,
/// work item and attempt ids.
pub fn agent_env(control_root: &Path, ids: [&str; 3]) -> BTreeMap<String, String> {
    let [task, work_item, attempt] = ids;
    ENV_NAMES
        .into_iter()
        .zip([
            &*control_root.display().to_string(),
            task,
            work_item,
            attempt,
        ])
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// Writes a new attempt folder under `tmux_root` (`<control root>/runtime/tmux`), as
/// [`process::prepare`] does for a command: refused unless the request is a valid `submit`
/// whose payload digest is the spec's and both expect the same evidence.
pub fn prepare(
    tmux_root: &Path,
    request: &AdapterRequest,
    spec: &TmuxSpec,
) -> Result<PathBuf, ProcessError> {
    process::check_submit(request, "tmux")?;
    spec.validate()
        .map_err(|reason| ProcessError::Refused(format!("run spec: {reason}")))?;
    let bytes = spec
        .canonical()
        .map_err(|error| ProcessError::Refused(error.to_string()))?;
    process::check_request_names_spec(request, &sha256_digest(&bytes), &spec.expected_evidence)?;
    process::write_folder(tmux_root, request, &bytes)
}

/// Runs the supervisor of the attempt folder `dir` until the attempt ends (the hidden command
/// `valp adapter tmux --dir DIR`); exits 0 once the final observation is written.
pub fn supervise(dir: &Path) -> Result<ExitCode, ProcessError> {
    process::detach_session();
    supervisor::run(dir)
}

/// Reads a record of the folder (`None` when the file is absent).
pub fn read_record<T: Record>(dir: &Path, file: &str) -> Result<Option<T>, ProcessError> {
    let path = dir.join(file);
    match std::fs::read(&path) {
        Ok(bytes) => T::decode(&bytes)
            .map(Some)
            .map_err(|error| invalid(&path, error.to_string())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(&path, "read")(error)),
    }
}

/// What an attempt's `state.json` says, in one line for `valp task status`:
/// `agent blocked (permission question, line 12) for 8 s [from claude_hook:permission_prompt#4];
/// runtime idle, evidence missing: …`
/// (`None` before the supervisor wrote it). The file's text is sanitized.
pub fn state_line(dir: &Path, now: crate::clock::Timestamp) -> Option<String> {
    use valp_view::sanitize::display_text;
    let record = match read_record::<StateRecord>(dir, STATE_FILE) {
        Ok(record) => record?,
        Err(error) => {
            return Some(format!(
                "agent state unreadable: {}",
                display_text(&error.to_string())
            ));
        }
    };
    let rule = match (&record.rule, record.line) {
        (Some(rule), Some(line)) => format!(" ({}, line {line})", display_text(rule)),
        (Some(rule), None) => format!(" ({})", display_text(rule)),
        _ => String::new(),
    };
    let age = crate::clock::Timestamp::parse_rfc3339(&record.since)
        .map(|since| format!(" for {} s", (now.millis() - since.millis()).max(0) / 1000))
        .unwrap_or_default();
    let note = record
        .note
        .map(|note| format!("; {}", display_text(&note)))
        .unwrap_or_default();
    let source = record
        .source
        .map(|source| format!(" [from {}]", display_text(&source)))
        .unwrap_or_default();
    Some(format!(
        "agent {}{rule}{age}{source}{note}",
        display_text(&record.state)
    ))
}

/// The console's view of the agent of `attempt_id` (`None` when its folder has no readable
/// `state.json`): the state with its rule and line (or, for a state the agent's channel gave,
/// that channel's label, e.g. `claude_hook:turn_completed#3`), how old the sample is at `now`, the tail,
/// and the command attaching a terminal to its pane. Every text is sanitized here (the file
/// is the supervisor's, but the console shows nothing it did not clean).
pub fn agent_view(
    dir: &Path,
    (task_id, work_item_id, attempt_id): (&str, &str, &str),
    now: crate::clock::Timestamp,
) -> Option<valp_view::AgentView> {
    use valp_view::sanitize::display_text;
    let record = read_record::<StateRecord>(dir, STATE_FILE).ok()??;
    let ago = |at: &str| {
        crate::clock::Timestamp::parse_rfc3339(at).map_or(0, |at| {
            u64::try_from(now.millis() - at.millis()).unwrap_or(0)
        })
    };
    Some(valp_view::AgentView {
        task_id: task_id.to_owned(),
        work_item_id: work_item_id.to_owned(),
        attempt_id: attempt_id.to_owned(),
        state: display_text(&record.state),
        // A state the agent's channel gave names that channel where the screen's rule goes.
        rule: match record.source.filter(|source| !source.starts_with("screen")) {
            Some(channel) => Some((display_text(&channel), None)),
            None => record.rule.map(|rule| (display_text(&rule), record.line)),
        },
        for_ms: ago(&record.since),
        sample_age_ms: ago(&record.sampled_at),
        note: record.note.map(|note| display_text(&note)),
        tail: record.tail.iter().map(|line| display_text(line)).collect(),
        attach: attach_command(dir).unwrap_or_default(),
    })
}

/// `tmux -S '<socket>' attach -t <pane>`: the shell command attaching a terminal to the
/// agent's pane, from the submission proof (`None` before it is written). Sanitized.
pub fn attach_command(dir: &Path) -> Option<String> {
    let proof = read_record::<SubmissionProof>(dir, SUBMISSION_FILE).ok()??;
    let socket = proof.socket.replace('\'', "'\\''");
    Some(valp_view::sanitize::display_text(&format!(
        "tmux -S '{socket}' attach -t {}",
        proof.pane_id
    )))
}

/// A new Leader message's name: `message-<ms>-<pid>-<n>.json`, unique for this process. It
/// is the control request's file name, its proof's, and (without `.json`) the action id in
/// the task's operator-action journal.
pub fn message_name() -> String {
    use crate::clock::Clock as _;
    format!(
        "{MESSAGE_PREFIX}{:015}-{}-{}.json",
        crate::clock::SystemClock.now().millis().max(0),
        std::process::id(),
        MESSAGE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    )
}

/// Asks the supervisor of the attempt folder `dir` to hand `text` to its agent, once, by the
/// prompt's paste-and-prove path, as `control/<name>` ([`message_name`]); its proof will be
/// `proofs/<name>`. Refused before anything is written when the text is empty or has a NUL.
pub fn request_message(dir: &Path, name: &str, text: &str) -> Result<(), ProcessError> {
    use crate::clock::Clock as _;
    let control = dir.join(process::CONTROL_DIR);
    if text.trim().is_empty() || text.contains('\0') {
        return Err(invalid(
            &control,
            "a message must be non-empty text without NUL",
        ));
    }
    let request = MessageRequest {
        schema_version: MessageRequest::SCHEMA.to_owned(),
        text: text.to_owned(),
        requested_at: crate::clock::SystemClock.now().to_rfc3339(),
    };
    let bytes = request
        .canonical()
        .map_err(|error| invalid(&control, error.to_string()))?;
    crate::adapter::files::create_dir_durably(&control).map_err(io_error(&control, "create"))?;
    let path = control.join(name);
    if crate::adapter::files::write_new(&path, &bytes).map_err(io_error(&path, "write"))? {
        Ok(())
    } else {
        Err(invalid(&path, "exists already"))
    }
}

/// Tells apart two messages asked in the same millisecond by one process.
static MESSAGE_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// After a supervisor died ([`process::SupervisorState::Dead`]): closes the agent's window if
/// valp started it and it is still the pane the submission proof names (same id and process).
/// Returns whether it was closed. A targeted pane is never touched.
pub fn terminate_orphan(dir: &Path) -> Result<bool, ProcessError> {
    if !matches!(
        process::supervisor_state(dir),
        process::SupervisorState::Dead { .. }
    ) {
        return Ok(false);
    }
    let Some(proof) = read_record::<SubmissionProof>(dir, SUBMISSION_FILE)? else {
        return Ok(false);
    };
    if !proof.started_by_valp {
        return Ok(false);
    }
    let server = server::Server::new(
        Path::new("tmux"),
        Path::new(&proof.socket),
        std::time::Duration::from_secs(5),
    );
    match server.find(&proof.pane_id) {
        Ok(Some(found)) if found.pane_pid == proof.pane_pid => {
            process::os::signal_group(found.pane_pid, process::os::Signal::Kill);
            server
                .close(&proof.pane_id)
                .map_err(|error| invalid(&dir.join(SUBMISSION_FILE), error.to_string()))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::Operation;

    fn spec(cwd: &Path) -> TmuxSpec {
        TmuxSpec {
            schema_version: records::SPEC_SCHEMA.to_owned(),
            agent: "demo".to_owned(),
            command: Some(vec!["valp".to_owned(), "demo-agent".to_owned()]),
            target: None,
            prompt: "write @a.md".to_owned(),
            socket: cwd.join("s").display().to_string(),
            session: SESSION.to_owned(),
            window: "w".to_owned(),
            cwd: cwd.display().to_string(),
            env: agent_env(cwd, ["t", "w", "t:w:a1"]),
            timeout_ms: 1000,
            grace_ms: 100,
            expected_evidence: vec!["a.md".to_owned()],
        }
    }

    fn request(digest: &str, expected: &[&str]) -> AdapterRequest {
        operation_request(Operation::Submit, digest, expected)
    }

    fn operation_request(operation: Operation, digest: &str, expected: &[&str]) -> AdapterRequest {
        AdapterRequest::new(
            operation,
            "inst",
            1,
            "t",
            "w",
            "t:w:a1",
            "t:w:1",
            1,
            digest,
            expected.iter().map(|path| (*path).to_owned()).collect(),
        )
    }

    #[test]
    fn prepare_writes_the_folder_once_and_refuses_what_does_not_belong_together() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("runtime/tmux");
        let spec = spec(temp.path());
        let digest = sha256_digest(&spec.canonical().unwrap());
        let dir = prepare(&root, &request(&digest, &["a.md"]), &spec).unwrap();
        assert_eq!(dir, root.join("attempts").join(attempt_folder("t:w:a1")));
        assert_eq!(
            process::folder_adapter(&dir),
            Some(ADAPTER_ID),
            "a tmux attempt folder is a supervised adapter's"
        );
        assert_eq!(
            TmuxSpec::decode(&std::fs::read(dir.join(process::RUN_FILE)).unwrap()).unwrap(),
            spec
        );
        // The same request and spec again: a no-op.
        assert_eq!(
            prepare(&root, &request(&digest, &["a.md"]), &spec).unwrap(),
            dir
        );
        let refused =
            |request: &AdapterRequest, spec: &TmuxSpec| match prepare(&root, request, spec) {
                Err(ProcessError::Refused(reason)) => reason,
                other => panic!("not refused: {other:?}"),
            };
        assert_eq!(
            refused(&request(&sha256_digest(b"other"), &["a.md"]), &spec),
            "the request's payload_digest is not the run spec's digest"
        );
        assert_eq!(
            refused(&request(&digest, &["b.md"]), &spec),
            "the request and the run spec expect different evidence"
        );
        assert_eq!(
            refused(
                &operation_request(Operation::Observe, &digest, &["a.md"]),
                &spec
            ),
            "the tmux adapter runs submit requests, not observe"
        );
        let mut bad = spec.clone();
        bad.target = Some("%1".to_owned());
        assert_eq!(
            refused(&request(&digest, &["a.md"]), &bad),
            "run spec: invalid_spec:exactly one of command (non-empty) and target"
        );
    }

    #[test]
    fn the_agent_environment_names_the_attempt_under_the_four_names() {
        let env = agent_env(Path::new("/p/.valp"), ["t", "w", "t:w:a1"]);
        let pairs: Vec<(&str, &str)> = env
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("VALP_ATTEMPT_ID", "t:w:a1"),
                ("VALP_CONTROL_ROOT", "/p/.valp"),
                ("VALP_TASK_ID", "t"),
                ("VALP_WORK_ITEM_ID", "w"),
            ]
        );
        assert_eq!(runtime_identity("%3", 42), "tmux:%3:42");
        assert_eq!(
            process::folder_adapter(Path::new("/x/runtime/external/attempts/h")),
            None
        );
    }
}
