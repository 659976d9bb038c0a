//! valp: the VALP operator console and its command line (RFC 0002 Layer 01, Experience).
//!
//! The library holds everything the `valp` binary does, so tests drive the same code paths;
//! `main.rs` only wires it up. The console never decides protocol truth: every state change is
//! proposed to the kernel and shown only once the kernel accepted it.

pub mod adapter;
pub mod agent;
pub mod audit;
pub mod authority;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod conformance;
pub mod doctor;
pub mod evidence;
pub mod ingest;
pub mod plan;
pub mod related;
pub mod runtime;
pub mod system;
pub mod tui;
pub mod userfiles;
pub mod view;
