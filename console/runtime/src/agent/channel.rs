//! Agent channels: what Claude Code and Codex say about themselves through their hooks,
//! `notify` program and JSON streams, as typed, attributed signals for one attempt; and the
//! Leader's approvals of their permission requests, failing closed.
//!
//! - [`signal`]: the `valp-agent-signal.v1` record (ABI 1.1).
//! - [`inbox`]: appending an attempt's signals to the inbox, sequenced and bounded; reading
//!   them back.
//! - [`hook`]: hook and notify payloads → signal drafts (pure).
//! - [`bridge`]: `valp hook` / `valp notify`: the environment, the mapping, the append, the
//!   approval wait and the agent's answer.
//! - [`approval`]: permission requests, the Leader's decisions, answers, and the log seam.
//! - [`precedence`]: which source the runtime believes (channel over screen while fresh), and
//!   submission acknowledgement.
//! - [`setup`]: the hook settings valp generates for an agent.
//! - [`stream`]: `claude -p --output-format stream-json` and `codex exec --json` lines →
//!   signal drafts (`valp agent stream`).

pub mod approval;
pub mod bridge;
pub mod hook;
pub mod inbox;
pub mod precedence;
pub mod setup;
pub mod signal;
pub mod stream;
