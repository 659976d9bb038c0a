//! Agent channels: what Claude Code and Codex say about themselves through their hooks,
//! `notify` program and JSON streams, as typed, attributed signals for one attempt; and the
//! Leader's approvals of their permission requests, failing closed.
//!
//! - [`signal`]: the `valp-agent-signal.v1` record (ABI 1.1).
//! - [`inbox`]: appending an attempt's signals to the inbox, sequenced and bounded; reading
//!   them back.
//! - [`headless`]: `valp agent run-stream`, the headless agent an `agent-stream` work item
//!   runs under the process adapter, its stream recorded as it prints.
//! - [`hook`]: hook and notify payloads → signal drafts (pure).
//! - [`bridge`]: `valp hook` / `valp notify`: the environment, the mapping, the append, the
//!   approval wait and the agent's answer.
//! - [`approval`]: permission requests, the Leader's decisions, answers, and the log seam.
//! - [`action_log`]: the log of approvals: the task's operator-action journal.
//! - [`precedence`]: which source the runtime believes (channel over screen while fresh), and
//!   submission acknowledgement.
//! - [`setup`]: the hook settings valp generates for an agent.
//! - [`summary`]: what the console shows of a task's channels: cost and tokens per attempt
//!   and task, pending permission requests.
//! - [`stream`]: `claude -p --output-format stream-json` and `codex exec --json` lines →
//!   signal drafts (`valp agent stream`).

pub mod action_log;
pub mod approval;
pub mod bridge;
pub mod headless;
pub mod hook;
pub mod inbox;
pub mod precedence;
pub mod setup;
pub mod signal;
pub mod stream;
pub mod summary;
