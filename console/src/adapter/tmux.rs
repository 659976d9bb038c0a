//! The tmux adapter's pieces that stand on their own: driving one pane of a tmux server
//! ([`pane`]) and handing a prompt to the agent in it with proof ([`submit`]).
//!
//! Not built yet: the `adapter = "tmux"` plan option, the detached supervisor and its attempt
//! folder, observation records for the runtime, interrupt and cancel through the effect ledger.

pub mod pane;
pub mod submit;
