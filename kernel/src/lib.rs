//! The pure VALP 0.3 protocol kernel (RFC 0002 Layer 02).
//!
//! **Contract.** Everything here is a pure function of its arguments: no file, network, clock,
//! environment, randomness or thread is touched, and equal canonical inputs give byte-identical
//! outputs. Time, runtime status and identity observations reach the kernel only as fields of
//! an [`Event`](model::Event) or an [`Evidence`](model::Evidence). `kernel/clippy.toml` and CI's
//! `cargo tree -p valp-kernel -e normal` keep it that way.
//!
//! The kernel reproduces the public VALP reference kernel byte for byte (see
//! `kernel/DEVIATIONS.md` for the documented exceptions):
//!
//! - [`reduce`](reduce::reduce)`(State, Event, EvidenceSet) -> Result` with the reference's rule
//!   precedence, over all 36 event kinds;
//! - [`canonical`] JSON and `sha256:` digests, one encoder for stored and hashed bytes;
//! - replay from a GenesisRoot or an authenticated CheckpointRoot, re-running the reducer and
//!   failing closed on a single changed byte;
//! - the [`done`] gate: RFC 0002 §10's Done matrix, a pure function the System and the store run
//!   beside the reducer (the reducer itself keeps the reference's ungated `recording_completed`).
//!
//! Unlike the reference, long histories cost O(1) per event: [`live::LiveState`] carries the
//! history's SHA-256 midstate and an event-id index instead of re-encoding the history.

pub mod canonical;
pub mod decode;
pub mod dimension;
pub mod done;
pub mod explain;
pub mod frontier;
pub(crate) mod history;
pub mod installation;
pub mod json;
pub mod live;
pub mod model;
pub mod reduce;
pub mod replay;
pub mod walk;

pub use model::*;
pub use reduce::reduce;
