//! The installation's authority lane (RFC 0002 §5.1, D17, D18): Leader candidates, one explicit
//! selection, daily reopen of the bound session, rotation, and epochs.
//!
//! A pure reducer with the task kernel's Result shape, canonical form, digests and replay, over
//! its own artifacts (`valp-kernel-installation-*.v1`). Its rules:
//!
//! - epoch 0 is the bootstrap epoch; the first activation allocates epoch 1 and every rotation
//!   the highest epoch ever allocated + 1, so an epoch is never reused; an event carrying any
//!   epoch but the active one is refused with `VALP-E-LEADER-EPOCH`;
//! - a Leader is only ever a candidate the Doctor observed and recorded, selected by an explicit,
//!   authority-bound approval; anything else is `VALP-E-PERMISSION-DENIED`. Nothing here infers
//!   a Leader: candidates carry ids and session fingerprints, never titles, focus or names;
//! - while the Leader rotates, every event except the rotation's completion or failure is
//!   refused with `VALP-E-LEADER-ROTATING`;
//! - a reopen is accepted only for the bound session's exact fingerprint.
//!
//! The order of checks: unknown values (`VALP-E-UNKNOWN-ENUM-VALUE`), validity and installation
//! (`VALP-E-STATE-CONFLICT`), epoch, idempotency (no-op / conflict), expected revision, the
//! rotation freeze, then the kind's rule.

mod decode;
mod live;
mod model;
mod reduce;

pub use decode::{
    decode_installation_entry, decode_installation_event, decode_installation_genesis,
    decode_installation_state,
};
pub use live::InstallationLive;
pub use model::{
    Binding, Candidate, CandidateSet, Handoff, InstallationEntry, InstallationEvent,
    InstallationGenesis, InstallationState, Pending, Reopen,
};
pub use reduce::reduce_installation;
