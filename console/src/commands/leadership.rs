//! What every command that changes a task needs first: the bound Leader, re-proven by a fresh
//! observation. An unbound installation or an unproven session refuses, saying what to do.

use valp_kernel::installation::InstallationLive;
use valp_store::{ControlRoot, Journal};

use super::CommandError;
use valp_runtime::authority::{self, AuthorityError, SessionCheck};
use valp_runtime::clock::Clock;
use valp_runtime::doctor::{self, Observation, ObserveOptions};

/// The re-proven Leader's ledger and the observation that proved it. `purpose` finishes the
/// sentence "… before <purpose>".
pub(super) fn proven_leader(
    root: &ControlRoot,
    clock: &dyn Clock,
    options: &ObserveOptions,
    purpose: &str,
) -> Result<(Journal<InstallationLive>, Observation), CommandError> {
    let mut ledger = root.ledger()?;
    let observation = doctor::observe(clock, options);
    match authority::open_session(root, &mut ledger, &observation)? {
        SessionCheck::Reopened { .. } => Ok((ledger, observation)),
        SessionCheck::Unbound => Err(AuthorityError::Invalid(
            "no Leader is bound: select one first (`valp leader select`)".to_owned(),
        )
        .into()),
        SessionCheck::Unproven { reason } => Err(AuthorityError::Invalid(format!(
            "the Leader session is not re-proven ({reason}); rebind it with `valp leader \
             rotate` before {purpose}"
        ))
        .into()),
    }
}
