//! The Adapter boundary (RFC 0002 §5.4): adapters turn real runtimes into typed observations
//! and proof, and carry out the kernel's obligations; they never write journals.
//!
//! - The request and observation records every adapter speaks are [`crate::abi`]'s (ingest reads
//!   them too, and adapters use ingest's scanner: the records sit below both).
//! - [`process`]: local processes, run by a detached supervisor per attempt.
//! - [`external`]: work done by a tool outside valp, which finds the attempt's request in its
//!   folder and reports through the inbox.
//! - [`report`]: `valp report`, an external attempt's report built on a tool's behalf.
//! - [`worktree`]: a git worktree per agent attempt (`workdir = "worktree"`), its diff.
//! - `files`: the atomic whole-file writes both use for attempt folders.

pub mod external;
pub(crate) mod files;
pub mod process;
pub mod report;
pub mod tmux;
pub mod worktree;
