//! The Adapter boundary (RFC 0002 §5.4): adapters turn real runtimes into typed observations
//! and proof, and carry out the kernel's obligations; they never write journals.
//!
//! - [`abi`]: the request and observation records every adapter speaks, with their checks.
//! - [`process`]: local processes, run by a detached supervisor per attempt.

pub mod abi;
pub mod process;
