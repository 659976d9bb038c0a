//! The agents' headless JSON streams, line by line, as signal drafts: `claude -p
//! --output-format stream-json --verbose` and `codex exec --json`.
//!
//! | claude stream-json | signal |
//! |---|---|
//! | `system` `init` | `session_started` |
//! | `assistant` content `tool_use` (one per call) | `tool_requested` (tool, `id`) |
//! | `user` content `tool_result` (one per result) | `tool_completed` (`tool_use_id`) |
//! | `result` `success` | `turn_completed` with `total_cost_usd` (as micro-USD) and `usage` tokens |
//! | `result` any other subtype, or `is_error` | `turn_failed`, the same cost and tokens |
//! | `stream_event`, `assistant` text only | nothing (partial output, not a state) |
//! | any other `type` | `opaque` |
//!
//! | codex exec --json | signal |
//! |---|---|
//! | `thread.started` | `session_started` (`thread_id`) |
//! | `turn.started` | `turn_started` (the causal acknowledgement of a submission) |
//! | `item.started` of a `command_execution`, `file_change`, `mcp_tool_call` | `tool_requested` |
//! | `item.completed` of those | `tool_completed` |
//! | `item.*` of `agent_message`, `reasoning`, `todo_list`; `item.updated` | nothing |
//! | `turn.completed` | `turn_completed` with `usage` tokens (Codex reports no cost) |
//! | `turn.failed`, `error` | `turn_failed` |
//! | any other `type`, or an `error` item | `opaque` |
//!
//! A line that is not a JSON object with a string `type`, or whose cost or tokens are not
//! non-negative numbers, is a [`Rejection`] as hook payloads are.

use serde_json::{Map, Value};
use valp_kernel::canonical::sha256_digest;

use super::hook::Rejection;
use super::signal::{Channel, Draft, SignalKind};

/// Which stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Stream {
    /// `claude -p --output-format stream-json`.
    Claude,
    /// `codex exec --json`.
    Codex,
}

impl Stream {
    /// Its name in a plan (`agent = "claude"`) and on the command line.
    pub const fn as_str(self) -> &'static str {
        self.agent()
    }

    /// The stream named `name` in a plan.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Claude, Self::Codex]
            .into_iter()
            .find(|stream| stream.as_str() == name)
    }

    const fn channel(self) -> Channel {
        match self {
            Self::Claude => Channel::ClaudeStream,
            Self::Codex => Channel::CodexStream,
        }
    }

    const fn agent(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
        }
    }
}

struct Line<'a> {
    stream: Stream,
    event: String,
    object: &'a Map<String, Value>,
    digest: String,
}

impl Line<'_> {
    fn draft(&self, kind: SignalKind, summary: &str) -> Draft {
        let mut draft = Draft::new(
            kind,
            self.stream.channel(),
            self.stream.agent(),
            &self.event,
            self.digest.clone(),
            summary,
        );
        let session = match self.stream {
            Stream::Claude => "session_id",
            Stream::Codex => "thread_id",
        };
        draft.session_id = self
            .object
            .get(session)
            .and_then(Value::as_str)
            .map(str::to_owned);
        draft
    }

    fn wrong(&self, member: &'static str, expected: &'static str) -> Rejection {
        Rejection::Member {
            event: super::signal::bounded_name(&self.event),
            member,
            expected,
        }
    }

    /// A token count under `usage`: absent is unknown; present must be a non-negative integer.
    fn tokens(&self, usage: Option<&Value>, name: &'static str) -> Result<Option<u64>, Rejection> {
        match usage.and_then(|usage| usage.get(name)) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => value
                .as_u64()
                .map(Some)
                .ok_or_else(|| self.wrong(name, "a non-negative integer")),
        }
    }

    fn with_usage(&self, mut draft: Draft) -> Result<Draft, Rejection> {
        let usage = self.object.get("usage");
        draft.input_tokens = self.tokens(usage, "input_tokens")?;
        draft.output_tokens = self.tokens(usage, "output_tokens")?;
        Ok(draft)
    }
}

/// The cost `usd` in micro-USD: a finite, non-negative number below 10^9 USD, rounded.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // the range is checked first
fn micro_usd(usd: f64) -> Option<u64> {
    (usd.is_finite() && (0.0..1e9).contains(&usd))
        // In range, so the cast neither truncates nor wraps.
        .then(|| (usd * 1_000_000.0).round() as u64)
}

/// Maps one line of `stream` to the drafts it gives (none for partial output).
pub fn map_line(stream: Stream, bytes: &[u8]) -> Result<Vec<Draft>, Rejection> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Rejection::Empty);
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|error| {
        Rejection::NotJson(valp_view::sanitize::display_line(&error.to_string()))
    })?;
    let Value::Object(object) = &value else {
        return Err(Rejection::NotAnObject);
    };
    let Some(Value::String(event)) = object.get("type") else {
        return Err(Rejection::NoEvent { member: "type" });
    };
    let line = Line {
        stream,
        event: event.clone(),
        object,
        digest: sha256_digest(bytes),
    };
    match stream {
        Stream::Claude => claude(&line),
        Stream::Codex => codex(&line),
    }
}

fn content(line: &Line<'_>) -> Vec<Map<String, Value>> {
    line.object
        .get("message")
        .and_then(|message| message.get("content"))
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b.as_object().cloned())
                .collect()
        })
        .unwrap_or_default()
}

fn claude(line: &Line<'_>) -> Result<Vec<Draft>, Rejection> {
    let text = |map: &Map<String, Value>, key: &str| {
        map.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match line.event.as_str() {
        "system" if line.object.get("subtype").and_then(Value::as_str) == Some("init") => {
            Ok(vec![line.draft(
                SignalKind::SessionStarted,
                "session started (stream)",
            )])
        }
        "assistant" => Ok(content(line)
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_use"))
            .map(|block| {
                let mut draft = line.draft(SignalKind::ToolRequested, &text(block, "name"));
                draft.tool_name = Some(text(block, "name")).filter(|t| !t.is_empty());
                draft.tool_use_id = Some(text(block, "id")).filter(|t| !t.is_empty());
                draft
            })
            .collect()),
        "user" => Ok(content(line)
            .iter()
            .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool_result"))
            .map(|block| {
                let failed = block.get("is_error").and_then(Value::as_bool) == Some(true);
                let mut draft = line.draft(
                    SignalKind::ToolCompleted,
                    if failed { "tool failed" } else { "tool done" },
                );
                draft.tool_use_id = Some(text(block, "tool_use_id")).filter(|t| !t.is_empty());
                draft
            })
            .collect()),
        "result" => {
            let subtype = line
                .object
                .get("subtype")
                .and_then(Value::as_str)
                .unwrap_or("");
            let failed = subtype != "success"
                || line.object.get("is_error").and_then(Value::as_bool) == Some(true);
            let summary = line
                .object
                .get("result")
                .and_then(Value::as_str)
                .unwrap_or(subtype);
            let kind = if failed {
                SignalKind::TurnFailed
            } else {
                SignalKind::TurnCompleted
            };
            let mut draft = line.with_usage(line.draft(kind, summary))?;
            draft.cost_micro_usd =
                match line.object.get("total_cost_usd") {
                    None | Some(Value::Null) => None,
                    Some(cost) => Some(cost.as_f64().and_then(micro_usd).ok_or_else(|| {
                        line.wrong("total_cost_usd", "a non-negative number of USD")
                    })?),
                };
            Ok(vec![draft])
        }
        "stream_event" => Ok(Vec::new()),
        other => {
            Ok(vec![line.draft(
                SignalKind::Opaque,
                &format!("unknown message {other}"),
            )])
        }
    }
}

fn codex(line: &Line<'_>) -> Result<Vec<Draft>, Rejection> {
    const TOOLS: &[&str] = &["command_execution", "file_change", "mcp_tool_call"];
    const QUIET: &[&str] = &["agent_message", "reasoning", "todo_list"];
    match line.event.as_str() {
        "thread.started" => Ok(vec![
            line.draft(SignalKind::SessionStarted, "thread started"),
        ]),
        "turn.started" => Ok(vec![line.draft(SignalKind::TurnStarted, "turn started")]),
        "turn.completed" => {
            Ok(vec![line.with_usage(
                line.draft(SignalKind::TurnCompleted, "turn completed"),
            )?])
        }
        "turn.failed" | "error" => {
            let message = line
                .object
                .get("error")
                .and_then(|error| error.get("message"))
                .or_else(|| line.object.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("turn failed");
            Ok(vec![line.draft(SignalKind::TurnFailed, message)])
        }
        "item.updated" => Ok(Vec::new()),
        event @ ("item.started" | "item.completed") => {
            let item = line
                .object
                .get("item")
                .and_then(Value::as_object)
                .ok_or_else(|| line.wrong("item", "an object"))?;
            let kind_of = item.get("type").and_then(Value::as_str).unwrap_or("");
            if QUIET.contains(&kind_of) {
                return Ok(Vec::new());
            }
            let (kind, detail) = if !TOOLS.contains(&kind_of) {
                (SignalKind::Opaque, format!("{kind_of} item"))
            } else if event == "item.started" {
                (SignalKind::ToolRequested, kind_of.to_owned())
            } else {
                (SignalKind::ToolCompleted, kind_of.to_owned())
            };
            let command = item.get("command").and_then(Value::as_str).unwrap_or("");
            let mut draft = line.draft(kind, &format!("{detail}: {command}"));
            draft.tool_name = Some(kind_of.to_owned()).filter(|t| !t.is_empty());
            draft.tool_use_id = item.get("id").and_then(Value::as_str).map(str::to_owned);
            Ok(vec![draft])
        }
        other => {
            Ok(vec![line.draft(
                SignalKind::Opaque,
                &format!("unknown event {other}"),
            )])
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn costs_become_micro_usd_and_bad_ones_are_rejected() {
        assert_eq!(micro_usd(0.012_345_6), Some(12_346));
        assert_eq!(micro_usd(0.0), Some(0));
        assert_eq!(micro_usd(-1.0), None);
        assert_eq!(micro_usd(f64::NAN), None);
        let error = map_line(
            Stream::Claude,
            br#"{"type":"result","subtype":"success","total_cost_usd":-2}"#,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "result: `total_cost_usd` must be a non-negative number of USD"
        );
        let error = map_line(
            Stream::Codex,
            br#"{"type":"turn.completed","usage":{"input_tokens":"many"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "turn.completed: `input_tokens` must be a non-negative integer"
        );
        assert_eq!(
            map_line(Stream::Codex, br#"{"thread_id":"t"}"#)
                .unwrap_err()
                .to_string(),
            "no event name: `type` must be a string"
        );
    }
}
