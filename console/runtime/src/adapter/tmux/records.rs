//! The tmux adapter's own files, each canonical JSON + LF:
//!
//! - `run.json` ([`TmuxSpec`], `valp-tmux-run-spec.v1`): what the System asks, written once;
//! - `proofs/dispatch_inserted.json` ([`InsertedProof`], `valp-tmux-inserted-proof.v1`): the
//!   prompt was pasted and read back (transport only: not delivery);
//! - `proofs/submission.json` ([`SubmissionProof`], `valp-tmux-submission-proof.v1`): every
//!   step of the submission, proven or not;
//! - `proofs/completion.json` ([`CompletionProof`], `valp-tmux-completion-proof.v1`): how the
//!   attempt ended, the expected evidence found (digests), interrupts and the stop;
//! - `state.json` ([`StateRecord`], `valp-tmux-agent-state.v1`): the agent's state now, with
//!   the rule that matched and when it was sampled (replaced as it changes);
//! - `control/message-*.json` ([`MessageRequest`], `valp-tmux-message.v1`): a Leader message
//!   for the running agent, one per request;
//! - `proofs/message-*.json` ([`MessageProof`], `valp-tmux-message-proof.v1`): how that
//!   message was delivered, with the same steps as the prompt's submission.
//!
//! Records are written through serde and re-encoded canonically by the kernel's writer (every
//! number an integer), so one record has one digest; decoding requires the exact shape and
//! the canonical bytes.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use valp_kernel::canonical::decode_canonical;
use valp_kernel::json::parse::parse;
use valp_kernel::json::write::canonical_bytes;

use super::submit::Step;
use crate::abi::is_safe_relative;
use crate::adapter::process::records::{EvidenceRecord, RecordError};
use crate::agent::profile::Profile;

/// `valp-tmux-run-spec.v1`
pub const SPEC_SCHEMA: &str = "valp-tmux-run-spec.v1";
/// `valp-tmux-inserted-proof.v1`
pub const INSERTED_SCHEMA: &str = "valp-tmux-inserted-proof.v1";
/// `valp-tmux-submission-proof.v1`
pub const SUBMISSION_SCHEMA: &str = "valp-tmux-submission-proof.v1";
/// `valp-tmux-completion-proof.v1`
pub const COMPLETION_SCHEMA: &str = "valp-tmux-completion-proof.v1";
/// `valp-tmux-agent-state.v1`
pub const STATE_SCHEMA: &str = "valp-tmux-agent-state.v1";

/// `valp-tmux-message.v1`
pub const MESSAGE_SCHEMA: &str = "valp-tmux-message.v1";
/// `valp-tmux-message-proof.v1`
pub const MESSAGE_PROOF_SCHEMA: &str = "valp-tmux-message-proof.v1";

/// A record with a `schema_version`.
pub trait Record: Serialize + DeserializeOwned {
    /// Its schema name.
    const SCHEMA: &'static str;
    /// Its `schema_version` member.
    fn schema_version(&self) -> &str;

    /// The canonical bytes (canonical JSON + LF).
    fn canonical(&self) -> Result<Vec<u8>, RecordError> {
        let failed = |reason: String| RecordError {
            schema: Self::SCHEMA,
            reason,
        };
        let text = serde_json::to_string(self).map_err(|error| failed(error.to_string()))?;
        let value = parse(&text).map_err(|error| failed(error.to_string()))?;
        canonical_bytes(&value).map_err(|error| failed(error.to_string()))
    }

    /// Reads a record: canonical bytes of exactly this shape and schema.
    fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        let failed = |reason: String| RecordError {
            schema: Self::SCHEMA,
            reason,
        };
        decode_canonical(bytes).map_err(|error| failed(error.to_string()))?;
        let record: Self =
            serde_json::from_slice(bytes).map_err(|error| failed(error.to_string()))?;
        if record.schema_version() != Self::SCHEMA {
            return Err(failed("wrong schema_version".to_owned()));
        }
        if record.canonical()? != bytes {
            return Err(failed("not the canonical encoding".to_owned()));
        }
        Ok(record)
    }
}

macro_rules! record {
    ($name:ident, $schema:expr) => {
        impl Record for $name {
            const SCHEMA: &'static str = $schema;
            fn schema_version(&self) -> &str {
                &self.schema_version
            }
        }
    };
}

/// `valp-tmux-run-spec.v1`: the agent, where it runs, the prompt and what it must leave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TmuxSpec {
    /// [`SPEC_SCHEMA`]
    pub schema_version: String,
    /// The agent profile (a built-in name).
    pub agent: String,
    /// The argv that starts the agent in a new window (exclusive with `target`).
    pub command: Option<Vec<String>>,
    /// An existing pane (`%N`) the Leader named (exclusive with `command`).
    pub target: Option<String>,
    /// The prompt, submitted once with proof.
    pub prompt: String,
    /// The tmux server's socket (absolute path).
    pub socket: String,
    /// The session valp's windows go into.
    pub session: String,
    /// The window's name.
    pub window: String,
    /// The agent's working folder (absolute).
    pub cwd: String,
    /// Set in the agent's window (`VALP_CONTROL_ROOT`, `VALP_TASK_ID`, `VALP_WORK_ITEM_ID`,
    /// `VALP_ATTEMPT_ID`).
    pub env: BTreeMap<String, String>,
    /// How long the attempt may run, in milliseconds (at least 1).
    pub timeout_ms: u64,
    /// How long each step of a stop waits for the agent to go.
    pub grace_ms: u64,
    /// Files the agent must leave, relative to `cwd`.
    pub expected_evidence: Vec<String>,
}
record!(TmuxSpec, SPEC_SCHEMA);

impl TmuxSpec {
    /// Checks every rule a spec must follow; the error is the blocked reason.
    pub fn validate(&self) -> Result<(), String> {
        Profile::builtin(&self.agent).map_err(|error| format!("unknown_agent:{error}"))?;
        match (&self.command, &self.target) {
            (Some(argv), None) if argv.first().is_some_and(|program| !program.is_empty()) => {}
            (None, Some(pane)) if pane.len() > 1 && pane.starts_with('%') => {}
            _ => return Err("invalid_spec:exactly one of command (non-empty) and target".into()),
        }
        let texts = self
            .command
            .iter()
            .flatten()
            .chain([&self.prompt, &self.socket, &self.cwd, &self.session])
            .chain(self.env.keys().chain(self.env.values()));
        if texts.into_iter().any(|text| text.contains('\0')) {
            return Err("invalid_spec:a NUL character".into());
        }
        if !self.cwd.starts_with('/') || !self.socket.starts_with('/') {
            return Err("invalid_spec:cwd and socket must be absolute".into());
        }
        if self.timeout_ms == 0 {
            return Err("invalid_spec:timeout_ms must be at least 1".into());
        }
        if let Some(bad) = self
            .expected_evidence
            .iter()
            .find(|path| !is_safe_relative(path))
        {
            return Err(format!("invalid_spec:{bad:?} is not a safe relative path"));
        }
        Ok(())
    }
}

/// `valp-tmux-inserted-proof.v1`: the prompt is in the agent's input line, as the profile's
/// readback checks it. Transport only (RFC 0002 `dispatch_inserted`): never delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InsertedProof {
    /// [`INSERTED_SCHEMA`]
    pub schema_version: String,
    /// The request id.
    pub submission_id: String,
    /// The pane.
    pub pane_id: String,
    /// `sha256:` of the prompt's bytes.
    pub prompt_digest: String,
    /// The steps up to the readback.
    pub steps: Vec<Step>,
}
record!(InsertedProof, INSERTED_SCHEMA);

/// `valp-tmux-submission-proof.v1`: the whole submission.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionProof {
    /// [`SUBMISSION_SCHEMA`]
    pub schema_version: String,
    /// The request id.
    pub submission_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// The request's payload digest (the run spec's).
    pub payload_digest: String,
    /// The agent profile.
    pub agent: String,
    /// The tmux server's socket.
    pub socket: String,
    /// The pane.
    pub pane_id: String,
    /// The pane's process (its process group leader).
    pub pane_pid: u32,
    /// Whether valp started the pane (and may stop it) or the plan targeted it.
    pub started_by_valp: bool,
    /// `tmux:<pane>:<pid>`
    pub runtime_identity: String,
    /// `sha256:` of the prompt's bytes.
    pub prompt_digest: String,
    /// The prompt's length in bytes.
    pub prompt_bytes: u64,
    /// Whether delivery is proven (the agent left idle with its input cleared after Enter).
    pub proven: bool,
    /// Why it is not proven (refused or unconfirmed), if not.
    pub why: Option<String>,
    /// The tmux event sequence, each with the screen digest after it.
    pub steps: Vec<Step>,
    /// The agent's own acknowledgement through its channel, if it gave one:
    /// `claude_hook:prompt_submitted#2 (content-bound; signal sha256:…)` (the prompt's digest
    /// matched: delivery proven whatever the screen showed) or `… (causal; …)` (a turn
    /// started after the submission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged_by: Option<String>,
    /// When the submission ended (RFC 3339).
    pub at: String,
}
record!(SubmissionProof, SUBMISSION_SCHEMA);

/// One key action on the agent (an interrupt, a step of a stop) and what was observed after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// `interrupt`, `cancel`, `timeout`…
    pub action: String,
    /// The keys pressed, or `SIGKILL to the process group`.
    pub what: String,
    /// The screen digest before.
    pub before: String,
    /// The state observed after (`exited` when the pane is gone).
    pub observed: String,
    /// Whether the observation confirms the action (left working; gone).
    pub confirmed: bool,
    /// Milliseconds since the supervisor started.
    pub at_ms: u64,
}

/// `valp-tmux-completion-proof.v1`: how the attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompletionProof {
    /// [`COMPLETION_SCHEMA`]
    pub schema_version: String,
    /// The request id.
    pub submission_id: String,
    /// `tmux:<pane>:<pid>`
    pub runtime_identity: String,
    /// The final observation's status.
    pub status: String,
    /// Its reason, if any.
    pub reason: Option<String>,
    /// The last state read, and the rule that read it.
    pub state: String,
    /// The rule.
    pub rule: Option<String>,
    /// The digest of the last screen captured.
    pub screen_digest: String,
    /// Its last lines: sanitized, secrets redacted, capped ([`super::screen`]).
    pub screen_tail: Vec<String>,
    /// The expected evidence files as found (digests).
    pub expected_evidence: Vec<EvidenceRecord>,
    /// Where the last state came from ([`StateRecord::source`]), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Interrupts delivered and stop steps, in order.
    pub actions: Vec<Action>,
    /// When (RFC 3339).
    pub completed_at: String,
}
record!(CompletionProof, COMPLETION_SCHEMA);

/// `valp-tmux-agent-state.v1`: the agent's state now, for the console and `valp task status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StateRecord {
    /// [`STATE_SCHEMA`]
    pub schema_version: String,
    /// `starting`, `working`, `idle`, `blocked`, `exited` or `unknown` (idle debounced).
    pub state: String,
    /// The profile rule that matched, and its line (provenance).
    pub rule: Option<String>,
    /// Its 1-based line on the screen.
    pub line: Option<u64>,
    /// Since when the state holds (RFC 3339).
    pub since: String,
    /// When the screen was sampled (RFC 3339): the sample's age is now minus this.
    pub sampled_at: String,
    /// The screen's digest.
    pub screen_digest: String,
    /// What the supervisor makes of it (`runtime idle, evidence missing: …`), if anything.
    pub note: Option<String>,
    /// The screen's last lines, sanitized, redacted, capped.
    pub tail: Vec<String>,
    /// Where the state came from: the agent's channel (`claude_hook:turn_completed#3`) or
    /// the screen (`screen (working spinner; channel silent 31000 ms)`); absent in records
    /// written before channels were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}
record!(StateRecord, STATE_SCHEMA);

/// `valp-tmux-message.v1`: a Leader message for the running agent (`control/message-*.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageRequest {
    /// [`MESSAGE_SCHEMA`]
    pub schema_version: String,
    /// The message, as the Leader typed it.
    pub text: String,
    /// When it was asked (RFC 3339).
    pub requested_at: String,
}
record!(MessageRequest, MESSAGE_SCHEMA);

/// `valp-tmux-message-proof.v1`: how a Leader message was handed to the agent
/// (`proofs/<the request's file name>`), proven or not; never retried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MessageProof {
    /// [`MESSAGE_PROOF_SCHEMA`]
    pub schema_version: String,
    /// The request's file name in `control/`.
    pub message_id: String,
    /// `sha256:` of the message's bytes.
    pub text_digest: String,
    /// Whether delivery is proven (the agent left idle with its input cleared after Enter).
    pub proven: bool,
    /// Why not (refused with nothing typed, or unconfirmed), if not.
    pub why: Option<String>,
    /// The tmux event sequence, each with the screen digest after it.
    pub steps: Vec<Step>,
    /// When the delivery ended (RFC 3339).
    pub at: String,
}
record!(MessageProof, MESSAGE_PROOF_SCHEMA);

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> TmuxSpec {
        TmuxSpec {
            schema_version: SPEC_SCHEMA.to_owned(),
            agent: "demo".to_owned(),
            command: Some(vec!["valp".to_owned(), "demo-agent".to_owned()]),
            target: None,
            prompt: "write @a.md \"$(x)\"".to_owned(),
            socket: "/tmp/s".to_owned(),
            session: "valp".to_owned(),
            window: "draft".to_owned(),
            cwd: "/tmp".to_owned(),
            env: BTreeMap::new(),
            timeout_ms: 1000,
            grace_ms: 100,
            expected_evidence: vec!["a.md".to_owned()],
        }
    }

    #[test]
    fn a_spec_round_trips_canonically_and_refuses_other_bytes() {
        let bytes = spec().canonical().unwrap();
        assert_eq!(TmuxSpec::decode(&bytes).unwrap(), spec());
        let pretty = serde_json::to_vec_pretty(&spec()).unwrap();
        assert!(
            TmuxSpec::decode(&pretty).unwrap_err().reason.contains("LF"),
            "pretty JSON is not canonical"
        );
        let mut other = spec();
        other.schema_version = "valp-tmux-run-spec.v0".to_owned();
        let error = TmuxSpec::decode(&other.canonical().unwrap()).unwrap_err();
        assert_eq!(error.reason, "wrong schema_version");
    }

    #[test]
    fn a_spec_breaking_a_rule_is_refused_with_the_reason() {
        let mut both = spec();
        both.target = Some("%1".to_owned());
        assert_eq!(
            both.validate().unwrap_err(),
            "invalid_spec:exactly one of command (non-empty) and target"
        );
        let mut agent = spec();
        agent.agent = "nobody".to_owned();
        assert!(agent.validate().unwrap_err().starts_with("unknown_agent:"));
        let mut escape = spec();
        escape.expected_evidence = vec!["../x".to_owned()];
        assert_eq!(
            escape.validate().unwrap_err(),
            "invalid_spec:\"../x\" is not a safe relative path"
        );
        let mut nul = spec();
        nul.prompt.push('\0');
        assert_eq!(nul.validate().unwrap_err(), "invalid_spec:a NUL character");
        assert_eq!(spec().validate(), Ok(()));
    }
}
