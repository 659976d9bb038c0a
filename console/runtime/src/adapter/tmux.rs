//! The tmux adapter's pieces that stand on their own: driving one pane of a tmux server
//! ([`pane`]) and handing a prompt to the agent in it with proof ([`submit`]).
//!
//! A plan names a tmux item with `adapter = "tmux"` ([`crate::plan::TmuxRun`]). Not built
//! yet: the detached supervisor and its attempt folder ([`attempt_ref`]), observation records
//! for the runtime, interrupt and cancel through the effect ledger; until they are, the runtime
//! refuses to run a task that has a tmux item (`RuntimeError::Unsupported`), so nothing is
//! typed into a pane without the supervisor that proves and records it.

use crate::abi::attempt_folder;

pub mod pane;
pub mod submit;

/// The adapter's name in the control root (`runtime/tmux/`).
pub const ADAPTER_ID: &str = "tmux";

/// `runtime/tmux/attempts/<attempt_folder(attempt_id)>`: where a tmux attempt's folder goes,
/// relative to the control root, beside the process and external adapters'.
pub fn attempt_ref(attempt_id: &str) -> String {
    format!(
        "runtime/{ADAPTER_ID}/attempts/{}",
        attempt_folder(attempt_id)
    )
}
