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
pub mod refusal;
pub mod workflow;

use valp_kernel::{Event, EventKind, Identity, IdentityKind, StateBody};
use valp_store::ControlRoot;

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

/// What the Leader can do with `task_id`, bound to a fenced epoch, in words: act on its
/// successor once it was handed over (its running work was stopped then, see
/// [`crate::authority::handoff`]), else hand it over. Read from the ledger, so the runtime needs
/// nothing of the authority lane to say it.
pub fn fenced_hint(root: &ControlRoot, task_id: &str) -> String {
    let handoff = root.ledger_read_only().ok().and_then(|ledger| {
        ledger
            .live()
            .state()
            .handoffs
            .iter()
            .find(|handoff| handoff.task_id.value() == task_id)
            .cloned()
    });
    match handoff {
        Some(handoff) => format!(
            "it was handed over to {} (epoch {} -> {}), which stopped its running work; its \
             journal accepts nothing more: act on {} instead",
            handoff.successor_task_id.value(),
            handoff.from_epoch,
            handoff.to_epoch,
            handoff.successor_task_id.value()
        ),
        None => "hand it over with `valp task handoff` first".to_owned(),
    }
}
