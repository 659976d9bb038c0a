//! Mapping what an agent hands its hook or notify program to a signal [`Draft`].
//!
//! Pure: bytes in, a draft (and, for a permission request, what is asked) or a [`Rejection`]
//! out. The payloads follow the agents' public documentation (see
//! `tests/fixtures/agent-channels/README.md`):
//!
//! | agent event | signal kind |
//! |---|---|
//! | `SessionStart` | `session_started` |
//! | `UserPromptSubmit` (`prompt` required: its digest is the submission's content-bound acknowledgement) | `prompt_submitted` |
//! | `PreToolUse` | `tool_requested` |
//! | `PostToolUse`, `PostToolUseFailure` | `tool_completed` |
//! | `PermissionRequest` | `permission_requested` (the bridge then waits for the Leader) |
//! | `Notification` `permission_prompt` / `idle_prompt` / `elicitation_dialog` | `permission_prompt` / `idle_prompt` / `elicitation` (another type: `opaque`) |
//! | `Stop` | `turn_completed` |
//! | `StopFailure` | `turn_failed` |
//! | `SessionEnd` | `session_ended` |
//! | codex `notify` `agent-turn-complete` | `turn_completed` |
//! | any other event | `opaque` (kept, not interpreted) |
//!
//! Claude and Codex hooks share this table (Codex's hooks use Claude's layout); the notify
//! payload has its own (`type`, `thread-id`, `last-assistant-message`). A payload that is not
//! a JSON object naming its event, or whose known members have the wrong type, is a listed
//! [`Rejection`] with an exact message; unknown members are ignored (agents add them).

use serde_json::{Map, Value};
use valp_kernel::canonical::sha256_digest;

use super::signal::{Channel, Draft, SignalKind};

/// Largest payload read, in bytes.
pub const MAX_PAYLOAD_BYTES: usize = 1 << 20;

/// Which program the agent ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A Claude Code command hook.
    ClaudeHook,
    /// A Codex hook.
    CodexHook,
    /// Codex's `notify` program.
    CodexNotify,
}

impl Source {
    /// The agent profile's name.
    pub const fn agent(self) -> &'static str {
        match self {
            Self::ClaudeHook => "claude",
            Self::CodexHook | Self::CodexNotify => "codex",
        }
    }

    const fn channel(self) -> Channel {
        match self {
            Self::ClaudeHook => Channel::ClaudeHook,
            Self::CodexHook => Channel::CodexHook,
            Self::CodexNotify => Channel::CodexNotify,
        }
    }
}

/// Why a payload is not mapped (nothing is recorded; the hook says so on stderr).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    /// No bytes.
    #[error("empty payload: expected one JSON object")]
    Empty,
    /// Over [`MAX_PAYLOAD_BYTES`].
    #[error("payload of {size} bytes, the limit is {MAX_PAYLOAD_BYTES}")]
    TooLarge {
        /// Its size.
        size: usize,
    },
    /// Not JSON.
    #[error("not JSON: {0}")]
    NotJson(String),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotAnObject,
    /// The member naming the event is missing or not a string.
    #[error("no event name: `{member}` must be a string")]
    NoEvent {
        /// `hook_event_name` or `type`.
        member: &'static str,
    },
    /// A member the mapping reads has the wrong type or is missing.
    #[error("{event}: `{member}` must be {expected}")]
    Member {
        /// The event.
        event: String,
        /// The member.
        member: &'static str,
        /// What it must be.
        expected: &'static str,
    },
}

impl Rejection {
    /// A stable short code for tests and the listing.
    pub const fn code(&self) -> &'static str {
        match self {
            Self::Empty => "empty",
            Self::TooLarge { .. } => "too_large",
            Self::NotJson(_) => "not_json",
            Self::NotAnObject => "not_an_object",
            Self::NoEvent { .. } => "no_event",
            Self::Member { .. } => "bad_member",
        }
    }
}

/// What a permission request asks, for the Leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The tool.
    pub tool_name: Option<String>,
    /// The tool call.
    pub tool_use_id: Option<String>,
    /// The command or file (display text).
    pub detail: String,
}

/// A mapped payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The signal to record.
    pub draft: Draft,
    /// Set for a permission request: the bridge waits for the Leader.
    pub ask: Option<Ask>,
}

struct Payload<'a> {
    event: String,
    object: &'a Map<String, Value>,
}

impl Payload<'_> {
    /// The string member `name`: `None` when absent or null, a rejection when another type.
    fn text(&self, name: &'static str) -> Result<Option<&str>, Rejection> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.wrong(name, "a string")),
        }
    }

    fn wrong(&self, member: &'static str, expected: &'static str) -> Rejection {
        Rejection::Member {
            event: crate::agent::channel::signal::bounded_name(&self.event),
            member,
            expected,
        }
    }

    /// What a tool call is about: the command, else the file, else the input's JSON; obvious
    /// secrets redacted ([`crate::agent::redact`]).
    fn tool_detail(&self) -> Result<String, Rejection> {
        self.raw_tool_detail()
            .map(|detail| crate::agent::redact::redact(&detail))
    }

    fn raw_tool_detail(&self) -> Result<String, Rejection> {
        match self.object.get("tool_input") {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::Object(input)) => Ok(["command", "cmd", "file_path", "path", "url"]
                .iter()
                .find_map(|key| input.get(*key).and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| Value::Object(input.clone()).to_string())),
            Some(_) => Err(self.wrong("tool_input", "an object")),
        }
    }
}

/// Maps `bytes` from `source` to a signal draft.
pub fn map(source: Source, bytes: &[u8]) -> Result<Mapped, Rejection> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Rejection::Empty);
    }
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(Rejection::TooLarge { size: bytes.len() });
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        Rejection::NotJson(valp_view::sanitize::display_line(&error.to_string()))
    })?;
    let Value::Object(object) = &value else {
        return Err(Rejection::NotAnObject);
    };
    let member = if source == Source::CodexNotify {
        "type"
    } else {
        "hook_event_name"
    };
    let Some(Value::String(event)) = object.get(member) else {
        return Err(Rejection::NoEvent { member });
    };
    let payload = Payload {
        event: event.clone(),
        object,
    };
    let digest = sha256_digest(bytes);
    if source == Source::CodexNotify {
        return notify(&payload, digest);
    }
    hook(source, &payload, digest)
}

fn draft(
    source: Source,
    payload: &Payload<'_>,
    kind: SignalKind,
    digest: String,
    summary: &str,
) -> Draft {
    Draft::new(
        kind,
        source.channel(),
        source.agent(),
        &payload.event,
        digest,
        summary,
    )
}

fn hook(source: Source, payload: &Payload<'_>, digest: String) -> Result<Mapped, Rejection> {
    let mut ask = None;
    let (kind, summary, prompt_digest) = match payload.event.as_str() {
        "SessionStart" => (
            SignalKind::SessionStarted,
            format!(
                "session started ({})",
                payload.text("source")?.unwrap_or("source not said")
            ),
            None,
        ),
        "UserPromptSubmit" => {
            let prompt = payload
                .text("prompt")?
                .ok_or_else(|| payload.wrong("prompt", "a string"))?;
            (
                SignalKind::PromptSubmitted,
                format!("prompt submitted ({} bytes)", prompt.len()),
                Some(sha256_digest(prompt.as_bytes())),
            )
        }
        "PreToolUse" => (
            SignalKind::ToolRequested,
            format!(
                "{}: {}",
                payload.text("tool_name")?.unwrap_or("tool"),
                payload.tool_detail()?
            ),
            None,
        ),
        "PostToolUse" | "PostToolUseFailure" => (
            SignalKind::ToolCompleted,
            format!(
                "{} {}",
                payload.text("tool_name")?.unwrap_or("tool"),
                if payload.event == "PostToolUse" {
                    "done"
                } else {
                    "failed"
                }
            ),
            None,
        ),
        "PermissionRequest" => {
            let (asked, summary) = permission(payload)?;
            ask = Some(asked);
            (SignalKind::PermissionRequested, summary, None)
        }
        "Notification" => (
            notification_kind(payload.text("notification_type")?),
            payload.text("message")?.unwrap_or_default().to_owned(),
            None,
        ),
        "Stop" => (
            SignalKind::TurnCompleted,
            payload
                .text("last_assistant_message")?
                .unwrap_or("turn ended")
                .to_owned(),
            None,
        ),
        "StopFailure" => (
            SignalKind::TurnFailed,
            payload
                .text("error")?
                .or(payload.text("message")?)
                .unwrap_or("turn ended in an error")
                .to_owned(),
            None,
        ),
        "SessionEnd" => (
            SignalKind::SessionEnded,
            format!(
                "session ended ({})",
                payload.text("reason")?.unwrap_or("reason not said")
            ),
            None,
        ),
        _ => (
            SignalKind::Opaque,
            format!("unknown event {}", payload.event),
            None,
        ),
    };
    let mut draft = draft(source, payload, kind, digest, &summary);
    draft.session_id = payload.text("session_id")?.map(str::to_owned);
    draft.prompt_digest = prompt_digest;
    draft.tool_name = payload.text("tool_name")?.map(str::to_owned);
    draft.tool_use_id = payload.text("tool_use_id")?.map(str::to_owned);
    Ok(Mapped { draft, ask })
}

/// What a permission request asks, and its summary.
fn permission(payload: &Payload<'_>) -> Result<(Ask, String), Rejection> {
    let detail = payload.tool_detail()?;
    let tool = payload.text("tool_name")?;
    let summary = format!("asks to use {}: {detail}", tool.unwrap_or("a tool"));
    let ask = Ask {
        tool_name: tool.map(str::to_owned),
        tool_use_id: payload.text("tool_use_id")?.map(str::to_owned),
        detail: valp_view::sanitize::display_text(&detail),
    };
    Ok((ask, summary))
}

/// A `Notification`'s kind from its `notification_type`.
fn notification_kind(notification_type: Option<&str>) -> SignalKind {
    match notification_type {
        Some("permission_prompt") => SignalKind::PermissionPrompt,
        Some("idle_prompt") => SignalKind::IdlePrompt,
        Some("elicitation_dialog") => SignalKind::Elicitation,
        _ => SignalKind::Opaque,
    }
}

fn notify(payload: &Payload<'_>, digest: String) -> Result<Mapped, Rejection> {
    let (kind, summary) = match payload.event.as_str() {
        "agent-turn-complete" => (
            SignalKind::TurnCompleted,
            payload
                .text("last-assistant-message")?
                .unwrap_or("turn complete")
                .to_owned(),
        ),
        _ => (
            SignalKind::Opaque,
            format!("unknown notification {}", payload.event),
        ),
    };
    let mut draft = draft(Source::CodexNotify, payload, kind, digest, &summary);
    draft.session_id = payload.text("thread-id")?.map(str::to_owned);
    Ok(Mapped { draft, ask: None })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn a_prompt_submission_carries_the_prompt_digest() {
        let mapped = map(
            Source::ClaudeHook,
            br#"{"hook_event_name":"UserPromptSubmit","session_id":"s1","prompt":"write @a.txt"}"#,
        )
        .unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::PromptSubmitted);
        assert_eq!(
            mapped.draft.prompt_digest.as_deref(),
            Some(sha256_digest(b"write @a.txt").as_str())
        );
        assert_eq!(mapped.draft.session_id.as_deref(), Some("s1"));
        assert_eq!(mapped.draft.summary, "prompt submitted (12 bytes)");
    }

    #[test]
    fn malformed_payloads_are_rejected_exactly() {
        for (bytes, source, message) in [
            (
                &b""[..],
                Source::ClaudeHook,
                "empty payload: expected one JSON object",
            ),
            (
                b" \n",
                Source::CodexHook,
                "empty payload: expected one JSON object",
            ),
            (b"[1]", Source::ClaudeHook, "not a JSON object"),
            (
                b"{\"session_id\":\"s\"}",
                Source::ClaudeHook,
                "no event name: `hook_event_name` must be a string",
            ),
            (
                b"{\"hook_event_name\":7}",
                Source::ClaudeHook,
                "no event name: `hook_event_name` must be a string",
            ),
            (
                b"{\"thread-id\":\"t\"}",
                Source::CodexNotify,
                "no event name: `type` must be a string",
            ),
            (
                b"{\"hook_event_name\":\"UserPromptSubmit\"}",
                Source::ClaudeHook,
                "UserPromptSubmit: `prompt` must be a string",
            ),
            (
                b"{\"hook_event_name\":\"PreToolUse\",\"tool_input\":\"rm\"}",
                Source::ClaudeHook,
                "PreToolUse: `tool_input` must be an object",
            ),
            (
                b"{\"hook_event_name\":\"Stop\",\"session_id\":5}",
                Source::ClaudeHook,
                "Stop: `session_id` must be a string",
            ),
            (
                b"{\"hook_event_name\":\"Stop\"",
                Source::ClaudeHook,
                "not JSON: EOF while parsing an object at line 1 column 25",
            ),
        ] {
            let error = map(source, bytes).unwrap_err();
            assert_eq!(
                error.to_string(),
                message,
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
        let big = vec![b' '; MAX_PAYLOAD_BYTES + 1];
        let mut big = big;
        big[0] = b'{';
        assert_eq!(
            map(Source::ClaudeHook, &big).unwrap_err().code(),
            "too_large"
        );
    }

    #[test]
    fn unknown_events_are_opaque_not_errors() {
        let mapped = map(
            Source::ClaudeHook,
            b"{\"hook_event_name\":\"SubagentStop\",\"session_id\":\"s\"}",
        )
        .unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::Opaque);
        assert_eq!(mapped.draft.event, "SubagentStop");
        assert_eq!(mapped.draft.summary, "unknown event SubagentStop");
        let mapped = map(Source::CodexNotify, b"{\"type\":\"approval-requested\"}").unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::Opaque);
    }

    #[test]
    fn hostile_text_is_sanitized() {
        let mapped = map(
            Source::ClaudeHook,
            "{\"hook_event_name\":\"Stop\",\"last_assistant_message\":\"done\\u001b]0;pwned\\u0007 \\u202e\"}".as_bytes(),
        )
        .unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::TurnCompleted);
        assert_eq!(mapped.draft.summary, "done \\u{202e}");
        let mapped = map(
            Source::ClaudeHook,
            "{\"hook_event_name\":\"Stop\\u001b[2J\"}".as_bytes(),
        )
        .unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::Opaque);
        assert_eq!(mapped.draft.event, "Stop");
        assert_eq!(mapped.draft.summary, "unknown event Stop");
    }

    #[test]
    fn secrets_in_a_payload_are_redacted_before_anything_is_kept() {
        let command = "curl -H 'Authorization: Bearer abcdefghijklmnop1234' -d key=sk-ant-api03-abcdefghijklmnopqrstu";
        let payload = serde_json::json!({
            "hook_event_name": "PermissionRequest",
            "tool_name": "Bash",
            "tool_input": { "command": command },
        });
        let mapped = map(Source::ClaudeHook, payload.to_string().as_bytes()).unwrap();
        let ask = mapped.ask.unwrap();
        assert_eq!(
            ask.detail,
            "curl -H 'Authorization: [redacted]' -d key=[redacted]"
        );
        assert!(
            !mapped.draft.summary.contains("abcdefghijklmnop"),
            "{}",
            mapped.draft.summary
        );
        assert!(
            mapped.draft.summary.ends_with("-d key=[redacted]"),
            "{}",
            mapped.draft.summary
        );
        let notified = map(
            Source::ClaudeHook,
            br#"{"hook_event_name":"Notification","message":"use token: ghp_0123456789abcdefghijABCDEFGHIJ"}"#,
        )
        .unwrap();
        assert_eq!(notified.draft.summary, "use [redacted]");
    }
}
