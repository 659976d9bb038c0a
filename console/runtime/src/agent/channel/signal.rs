//! The agent-signal record, ABI 1.1 (`valp-agent-signal.v1`, schema
//! `schemas/console/agent-signal.schema.json`): one thing a coding agent said about itself
//! through a structured channel (a hook, a notify program, a JSON stream), for one attempt.
//!
//! ABI 1.0's observation is closed (six statuses about a request; no kind, time or cost), so an
//! agent's own reports get their own record beside it rather than bending it. A signal is
//! evidence about the agent's state, never a status of the request: the runtime weighs it
//! against the screen ([`super::precedence`]) and never turns it into a kernel event by itself.
//!
//! What valp trusts in a signal: the attempt it names (taken from the environment the tmux
//! adapter set, never from the payload), the time (valp's own clock when the bridge read the
//! payload, not the agent's), the digest of the raw payload bytes, and the digest of the prompt
//! text. Everything else (event name, session id, tool, summary) is the agent's claim, kept
//! bounded and sanitized. Cost and tokens are integers (micro-USD, tokens), absent when the
//! channel did not say: "unknown" is never 0.
//!
//! The id is the digest of the record's canonical form without it, as ABI 1.0's observation
//! ids are, so a line that was altered after it was written does not check.

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, form_digest, is_digest};
use valp_kernel::json::write::Fields;

use crate::abi::closed;
use crate::clock::Timestamp;
use valp_view::sanitize::{MAX_DISPLAY_CHARS, is_plain};

/// `valp-agent-signal.v1`
pub const SIGNAL_SCHEMA: &str = "valp-agent-signal.v1";
/// The ABI version of agent signals.
pub const SIGNAL_ABI_VERSION: &str = "1.1";
/// Longest identifier-like text kept (event, session, tool, tool use id), in bytes.
pub const MAX_NAME_BYTES: usize = 128;

closed! {
    /// What the agent reported (closed; an event valp does not know is [`SignalKind::Opaque`]).
    SignalKind {
        /// A session began or resumed (claude `SessionStart`, codex `SessionStart`,
        /// `thread.started`).
        SessionStarted => "session_started",
        /// A prompt was submitted (`UserPromptSubmit`; carries the prompt's digest).
        PromptSubmitted => "prompt_submitted",
        /// A turn began (codex `turn.started`).
        TurnStarted => "turn_started",
        /// A tool is about to run (`PreToolUse`, stream tool calls).
        ToolRequested => "tool_requested",
        /// A tool finished (`PostToolUse`, `item.completed`).
        ToolCompleted => "tool_completed",
        /// The agent asks permission through its hook (`PermissionRequest`).
        PermissionRequested => "permission_requested",
        /// The bridge answered a permission request (allow, deny, or back to the agent's prompt).
        PermissionAnswered => "permission_answered",
        /// The agent shows its own permission prompt (`Notification` `permission_prompt`).
        PermissionPrompt => "permission_prompt",
        /// The agent waits at its prompt (`Notification` `idle_prompt`).
        IdlePrompt => "idle_prompt",
        /// The agent asks the user a question (`Notification` `elicitation_dialog`).
        Elicitation => "elicitation",
        /// A turn ended normally (`Stop`, codex `agent-turn-complete`, `turn.completed`,
        /// stream `result` success).
        TurnCompleted => "turn_completed",
        /// A turn ended in an error (`StopFailure`, `turn.failed`, stream `result` error).
        TurnFailed => "turn_failed",
        /// The session ended (`SessionEnd`).
        SessionEnded => "session_ended",
        /// A message valp keeps but does not interpret (an unknown hook event).
        Opaque => "opaque",
    }
}

closed! {
    /// Which structured channel carried the signal.
    Channel {
        /// A Claude Code command hook (`valp hook claude`).
        ClaudeHook => "claude_hook",
        /// A Codex hook (`valp hook codex`).
        CodexHook => "codex_hook",
        /// Codex's `notify` program (`valp notify codex`).
        CodexNotify => "codex_notify",
        /// `claude -p --output-format stream-json`.
        ClaudeStream => "claude_stream",
        /// `codex exec --json`.
        CodexStream => "codex_stream",
    }
}

/// `valp-agent-signal.v1`
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSignal {
    /// Must be [`SIGNAL_SCHEMA`].
    pub schema_version: String,
    /// Must be [`SIGNAL_ABI_VERSION`].
    pub abi_version: String,
    /// `sha256:` of the canonical form without this member.
    pub signal_id: String,
    /// The task (from the environment the adapter set).
    pub task_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// Per attempt, `1, 2, …` in file order.
    pub sequence: u64,
    /// What was reported.
    pub kind: SignalKind,
    /// Through what.
    pub channel: Channel,
    /// The agent profile's name (`claude`, `codex`, `demo`).
    pub agent: String,
    /// The agent's own event name (`UserPromptSubmit`, `agent-turn-complete`, …).
    pub event: String,
    /// When valp read it (its own clock), RFC 3339 with milliseconds.
    pub observed_at: String,
    /// The agent's session (claude `session_id`, codex `thread-id`), if it said.
    #[serde(default)]
    pub session_id: Option<String>,
    /// `sha256:` of the exact prompt text, for a submission.
    #[serde(default)]
    pub prompt_digest: Option<String>,
    /// The tool, for tool and permission signals.
    #[serde(default)]
    pub tool_name: Option<String>,
    /// The agent's id of the tool call.
    #[serde(default)]
    pub tool_use_id: Option<String>,
    /// The approval request this signal opened or answered.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Cost the channel reported, in micro-USD.
    #[serde(default)]
    pub cost_micro_usd: Option<u64>,
    /// Input tokens the channel reported.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens the channel reported.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// `sha256:` of the raw payload bytes as received.
    pub payload_digest: String,
    /// What a person needs to know, sanitized display text, at most 256 characters.
    pub summary: String,
}

/// A signal before the inbox gives it its sequence and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// What was reported.
    pub kind: SignalKind,
    /// Through what.
    pub channel: Channel,
    /// The agent.
    pub agent: String,
    /// The agent's event name (bounded, sanitized by [`Draft::new`]).
    pub event: String,
    /// The session.
    pub session_id: Option<String>,
    /// The prompt's digest.
    pub prompt_digest: Option<String>,
    /// The tool.
    pub tool_name: Option<String>,
    /// The tool call.
    pub tool_use_id: Option<String>,
    /// The approval request.
    pub request_id: Option<String>,
    /// Cost in micro-USD.
    pub cost_micro_usd: Option<u64>,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// The raw payload's digest.
    pub payload_digest: String,
    /// The summary (sanitized and cut by [`Draft::new`]).
    pub summary: String,
}

/// An identifier-like text from an agent, made safe and short: display text, cut at
/// [`MAX_NAME_BYTES`] on a character boundary.
pub fn bounded_name(text: &str) -> String {
    let mut shown = valp_view::sanitize::display_line(text);
    if shown.len() > MAX_NAME_BYTES {
        let mut end = MAX_NAME_BYTES;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
    }
    shown
}

impl Draft {
    /// A draft of `kind` from `channel`: the event name and summary are sanitized and bounded
    /// here, and the summary's obvious secrets redacted, so no caller can forget it.
    pub fn new(
        kind: SignalKind,
        channel: Channel,
        agent: &str,
        event: &str,
        payload_digest: String,
        summary: &str,
    ) -> Self {
        Self {
            kind,
            channel,
            agent: bounded_name(agent),
            event: bounded_name(event),
            session_id: None,
            prompt_digest: None,
            tool_name: None,
            tool_use_id: None,
            request_id: None,
            cost_micro_usd: None,
            input_tokens: None,
            output_tokens: None,
            payload_digest,
            summary: valp_view::sanitize::display_text(&crate::agent::redact::redact(summary)),
        }
    }

    /// The record for `attempt` at `sequence`, observed at `at`.
    pub fn into_signal(self, attempt: &AttemptIds, sequence: u64, at: Timestamp) -> AgentSignal {
        let bounded = |value: Option<String>| value.map(|text| bounded_name(&text));
        let mut signal = AgentSignal {
            schema_version: SIGNAL_SCHEMA.to_owned(),
            abi_version: SIGNAL_ABI_VERSION.to_owned(),
            signal_id: String::new(),
            task_id: attempt.task_id.clone(),
            work_item_id: attempt.work_item_id.clone(),
            attempt_id: attempt.attempt_id.clone(),
            sequence,
            kind: self.kind,
            channel: self.channel,
            agent: self.agent,
            event: self.event,
            observed_at: at.to_rfc3339(),
            session_id: bounded(self.session_id),
            prompt_digest: self.prompt_digest,
            tool_name: bounded(self.tool_name),
            tool_use_id: bounded(self.tool_use_id),
            request_id: self.request_id,
            cost_micro_usd: self.cost_micro_usd,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            payload_digest: self.payload_digest,
            summary: self.summary,
        };
        signal.signal_id = signal.content_digest();
        signal
    }
}

/// The attempt a signal is about, as the adapter named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptIds {
    /// The task.
    pub task_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
}

/// Why bytes are not an acceptable signal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignalError {
    /// Not JSON of the record's shape.
    #[error("not a valp-agent-signal.v1: {0}")]
    Shape(String),
    /// The shape is right but a rule is broken.
    #[error("{field}: {rule}")]
    Rule {
        /// Which member.
        field: &'static str,
        /// Which rule.
        rule: String,
    },
}

fn rule(field: &'static str, rule: impl Into<String>) -> SignalError {
    SignalError::Rule {
        field,
        rule: rule.into(),
    }
}

impl AgentSignal {
    /// Reads a record (any JSON formatting; exact shape).
    pub fn decode(bytes: &[u8]) -> Result<Self, SignalError> {
        serde_json::from_slice(bytes).map_err(|error| SignalError::Shape(error.to_string()))
    }

    /// `sha256:` of the canonical form without `signal_id`.
    pub fn content_digest(&self) -> String {
        form_digest(|out| self.write_members(out, false))
    }

    /// When valp read it.
    pub fn observed(&self) -> Option<Timestamp> {
        Timestamp::parse_rfc3339(&self.observed_at)
    }

    fn write_members(&self, out: &mut Vec<u8>, with_id: bool) {
        let mut fields = Fields::begin(out);
        fields.str("abi_version", &self.abi_version);
        fields.str("agent", &self.agent);
        fields.str("attempt_id", &self.attempt_id);
        fields.str("channel", self.channel.as_str());
        if let Some(cost) = self.cost_micro_usd {
            fields.int("cost_micro_usd", i128::from(cost));
        }
        fields.str("event", &self.event);
        if let Some(tokens) = self.input_tokens {
            fields.int("input_tokens", i128::from(tokens));
        }
        fields.str("kind", self.kind.as_str());
        fields.str("observed_at", &self.observed_at);
        if let Some(tokens) = self.output_tokens {
            fields.int("output_tokens", i128::from(tokens));
        }
        fields.str("payload_digest", &self.payload_digest);
        if let Some(digest) = &self.prompt_digest {
            fields.str("prompt_digest", digest);
        }
        if let Some(id) = &self.request_id {
            fields.str("request_id", id);
        }
        fields.str("schema_version", &self.schema_version);
        fields.int("sequence", i128::from(self.sequence));
        if let Some(session) = &self.session_id {
            fields.str("session_id", session);
        }
        if with_id {
            fields.str("signal_id", &self.signal_id);
        }
        fields.str("summary", &self.summary);
        fields.str("task_id", &self.task_id);
        if let Some(tool) = &self.tool_name {
            fields.str("tool_name", tool);
        }
        if let Some(id) = &self.tool_use_id {
            fields.str("tool_use_id", id);
        }
        fields.str("work_item_id", &self.work_item_id);
        fields.end();
    }

    /// Checks every rule the shape cannot: versions, the id, the sequence, the time, digests,
    /// and that every text is bounded plain text.
    pub fn check(&self) -> Result<(), SignalError> {
        if self.schema_version != SIGNAL_SCHEMA {
            return Err(rule("schema_version", format!("must be {SIGNAL_SCHEMA}")));
        }
        if self.abi_version != SIGNAL_ABI_VERSION {
            return Err(rule("abi_version", format!("must be {SIGNAL_ABI_VERSION}")));
        }
        if self.signal_id != self.content_digest() {
            return Err(rule(
                "signal_id",
                "is not the digest of the signal's content",
            ));
        }
        if self.sequence < 1 {
            return Err(rule("sequence", "must be at least 1"));
        }
        if self.observed().is_none() {
            return Err(rule(
                "observed_at",
                "is not RFC 3339 UTC with milliseconds (YYYY-MM-DDTHH:MM:SS.mmmZ)",
            ));
        }
        if !is_digest(&self.payload_digest) {
            return Err(rule("payload_digest", "is not a sha256: digest"));
        }
        if self.prompt_digest.as_deref().is_some_and(|d| !is_digest(d)) {
            return Err(rule("prompt_digest", "is not a sha256: digest"));
        }
        for (field, value) in [
            ("task_id", Some(&self.task_id)),
            ("work_item_id", Some(&self.work_item_id)),
            ("attempt_id", Some(&self.attempt_id)),
            ("agent", Some(&self.agent)),
            ("event", Some(&self.event)),
            ("session_id", self.session_id.as_ref()),
            ("tool_name", self.tool_name.as_ref()),
            ("tool_use_id", self.tool_use_id.as_ref()),
            ("request_id", self.request_id.as_ref()),
        ] {
            if let Some(value) = value
                && (value.is_empty() || value.len() > MAX_NAME_BYTES || !is_plain(value))
            {
                return Err(rule(
                    field,
                    format!("must be 1 to {MAX_NAME_BYTES} bytes of plain text"),
                ));
            }
        }
        if self.summary.chars().count() > MAX_DISPLAY_CHARS || !is_plain(&self.summary) {
            return Err(rule(
                "summary",
                format!("must be at most {MAX_DISPLAY_CHARS} characters of plain text"),
            ));
        }
        Ok(())
    }
}

impl Canonical for AgentSignal {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_members(out, true);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use valp_kernel::canonical::sha256_digest;

    use super::*;

    pub(crate) fn attempt() -> AttemptIds {
        AttemptIds {
            task_id: "TASK-1".into(),
            work_item_id: "build".into(),
            attempt_id: "TASK-1:build:a1".into(),
        }
    }

    fn signal() -> AgentSignal {
        let mut draft = Draft::new(
            SignalKind::PromptSubmitted,
            Channel::ClaudeHook,
            "claude",
            "UserPromptSubmit",
            sha256_digest(b"{}"),
            "prompt \u{1b}[31msubmitted\u{202e}",
        );
        draft.prompt_digest = Some(sha256_digest(b"hello"));
        draft.cost_micro_usd = Some(1234);
        draft.into_signal(&attempt(), 3, Timestamp::from_millis(1_764_000_000_000))
    }

    #[test]
    fn a_signal_round_trips_and_checks() {
        let signal = signal();
        signal.check().unwrap();
        assert_eq!(signal.summary, "prompt submitted\\u{202e}");
        let decoded = AgentSignal::decode(&signal.canonical_bytes()).unwrap();
        assert_eq!(decoded, signal);
        let text = String::from_utf8(signal.canonical_bytes()).unwrap();
        assert!(text.contains("\"cost_micro_usd\":1234"), "{text}");
        assert!(
            !text.contains("input_tokens"),
            "unknown is absent, never 0: {text}"
        );
    }

    /// A member, how to break it, and whether to recompute the id afterwards.
    type Breakage = (&'static str, fn(&mut AgentSignal), bool);

    #[test]
    fn every_rule_is_enforced() {
        let cases: Vec<Breakage> = vec![
            ("signal_id", |s| s.sequence = 4, false),
            ("schema_version", |s| s.schema_version = "x".into(), true),
            ("abi_version", |s| s.abi_version = "1.0".into(), true),
            ("sequence", |s| s.sequence = 0, true),
            ("observed_at", |s| s.observed_at = "yesterday".into(), true),
            (
                "payload_digest",
                |s| s.payload_digest = "md5:1".into(),
                true,
            ),
            (
                "prompt_digest",
                |s| s.prompt_digest = Some("x".into()),
                true,
            ),
            ("event", |s| s.event = String::new(), true),
            (
                "session_id",
                |s| s.session_id = Some("a\u{7}b".into()),
                true,
            ),
            ("tool_name", |s| s.tool_name = Some("x".repeat(129)), true),
            ("summary", |s| s.summary = "\u{1b}[2J".into(), true),
            ("summary", |s| s.summary = "x".repeat(257), true),
        ];
        for (field, edit, rehash) in cases {
            let mut bad = signal();
            edit(&mut bad);
            if rehash {
                bad.signal_id = bad.content_digest();
            }
            match bad.check() {
                Err(SignalError::Rule { field: got, .. }) => assert_eq!(got, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn unknown_members_and_kinds_are_shape_errors() {
        let mut value: serde_json::Value =
            serde_json::from_slice(&signal().canonical_bytes()).unwrap();
        value["kind"] = "dancing".into();
        let error = AgentSignal::decode(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        assert!(
            matches!(&error, SignalError::Shape(text) if text.contains("unknown variant `dancing`")),
            "{error}"
        );
    }

    #[test]
    fn names_are_bounded_on_a_character_boundary() {
        let long = "é".repeat(100);
        let bounded = bounded_name(&long);
        assert_eq!(bounded.len(), 128);
        assert_eq!(bounded_name("Pre\u{1b}[1mTool"), "PreTool");
    }
}
