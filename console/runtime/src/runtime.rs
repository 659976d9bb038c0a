//! The System runtime (RFC 0002 §5.2, Execution): drives published tasks through the Operator
//! Workflow by proposing events to the kernel through the store, launching adapters, and
//! turning their observations into proposals. Nothing is presented as true before the kernel
//! accepted it.
//!
//! - [`workflow`]: the pure decision of the next step from the kernel's State.
//! - [`driver`]: one task driven step by step: proposals with their evidence, launches,
//!   verification, the Done gate.
//! - [`effects`]: `adapter_cancel:` obligations carried out once and recorded.
//! - [`measures`]: the values the dimension gates compare, measured at closure.
//! - [`control`]: the Leader's operations (cancel, interrupt, resume, redirect, review,
//!   approval) with their authority evidence.

pub mod control;
pub mod driver;
pub mod effects;
pub mod measures;
pub mod workflow;

use valp_kernel::{Event, EventKind, Identity, IdentityKind, StateBody};

/// An event of `kind` at the task's current revision; its id names the kind and revision, so
/// proposing the same thing again at that revision is answered as a duplicate. `identity`
/// builds the id in the caller's error type.
fn task_event<E>(
    body: &StateBody,
    kind: EventKind,
    identity: impl FnOnce(IdentityKind, String) -> Result<Identity, E>,
) -> Result<Event, E> {
    Ok(Event::new(
        identity(
            IdentityKind::Event,
            format!("{}-r{}", kind.as_str(), body.revision),
        )?,
        body.installation_id.clone(),
        body.leader_epoch,
        body.task_id.clone(),
        kind,
        body.revision,
    ))
}
