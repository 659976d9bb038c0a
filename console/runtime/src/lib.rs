//! valp-runtime: the System behind the operator console (RFC 0002 §5.2, Execution; Layer 01's
//! system side).
//!
//! Everything here works on the control root through the store and proposes every state change
//! to the kernel: the runtime drives tasks through the Operator Workflow, launches adapters and
//! turns their observations into proposals; the Doctor observes terminals and processes;
//! [`system::SystemBackend`] implements valp-view's [`Backend`](valp_view::Backend), the only
//! door the TUI has. No terminal library is a dependency of this crate (see ARCHITECTURE.md,
//! Layers).

pub mod abi;
pub mod adapter;
pub mod agent;
pub mod audit;
pub mod authority;
pub mod clock;
pub mod conformance;
pub mod doctor;
pub mod evidence;
pub mod flow;
pub mod ingest;
pub mod needs;
pub mod plan;
pub mod related;
pub mod runtime;
pub mod system;
pub mod userfiles;
