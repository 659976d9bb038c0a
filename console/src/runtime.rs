//! The System runtime (RFC 0002 §5.2, Execution): drives published tasks through the Operator
//! Workflow by proposing events to the kernel through the store, launching adapters, and
//! turning their observations into proposals. Nothing is presented as true before the kernel
//! accepted it.
//!
//! - [`workflow`]: the pure decision of the next step from the kernel's State.
//! - [`driver`]: one task driven step by step: proposals with their evidence, launches,
//!   verification, the Done gate.
//! - [`effects`]: `adapter_cancel:` obligations carried out once and recorded.
//! - [`control`]: the Leader's operations (cancel, interrupt, resume, redirect, review,
//!   approval) with their authority evidence.

pub mod control;
pub mod driver;
pub mod effects;
pub mod workflow;
