//! valp: the VALP operator console's command line (RFC 0002 Layer 01, Experience).
//!
//! The library holds the `valp` binary's command line and commands, so tests drive the same
//! code paths; `main.rs` only wires it up. The work itself is done by the layers below:
//! valp-runtime (the System), valp-tui (the full-screen console) and valp-view (what the two
//! share). The console never decides protocol truth: every state change is proposed to the
//! kernel and shown only once the kernel accepted it.

pub mod cli;
pub mod commands;
pub mod demo_terminal;
pub mod fast_hook;
pub mod small_pages;
