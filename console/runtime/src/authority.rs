//! The authority lane as the System runs it (RFC 0002 §5.1, D17, D18): record Doctor
//! observations, one explicit Leader selection, the daily reopen of the bound session, and
//! rotation. Every change is proposed to the kernel through the installation ledger and is true
//! only once the kernel accepted it; nothing here picks a Leader on the user's behalf.
//!
//! - [`record_observation`] stores a Doctor observation as content-addressed evidence and
//!   records its candidates (the kernel refuses selecting anything it did not record), only
//!   when they differ from the latest recorded ones.
//! - [`select`] and [`rotate`] need an [`Approval`]: who approved, how, and when. The approval
//!   is stored as evidence and bound to the selection event.
//! - [`reopen`] re-proves the bound session: the same candidate with the same fingerprint in a
//!   fresh observation. Anything else is [`SessionCheck::Unproven`] and nothing is written; a
//!   session already re-proven with the observation that stands is not written again.
//! - Proposals that lose a race for the ledger's next revision are built again
//!   ([`RACE_RETRIES`]), so concurrent commands never fail on an event id collision.
//!
//! - [`handoff`] moves a task bound to a fenced epoch to the active one, explicitly.
//!
//! After every selection or rotation `leader/binding.json` is rewritten from the ledger
//! ([`binding`]); it is a projection, verified against the ledger whenever it is read.

pub mod binding;
pub mod handoff;
mod lane;

use valp_store::StoreError;

pub use lane::{
    Approval, Confirmation, RACE_RETRIES, open_session, operator, recheck, record_observation,
    reopen, rotate, select,
};

pub use valp_view::SessionCheck;

/// Why an authority operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum AuthorityError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The kernel refused the proposal.
    #[error("{code}: {reason}")]
    Refused {
        /// The kernel's code.
        code: String,
        /// Why, in words.
        reason: String,
    },
    /// The request does not make sense in the current state (the message says why).
    #[error("{0}")]
    Invalid(String),
}
