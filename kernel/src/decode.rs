//! Typed decoding of kernel artifacts from JSON values.
//!
//! Decoding is exact about shape: unknown members, missing members, wrong JSON types, empty
//! identity values and values outside a closed vocabulary are errors that name the path of the
//! offending member (`state.work_items[2].status`). It is deliberately *not* a validity check:
//! a wrong identity kind in a slot, a negative revision or a malformed digest decode fine,
//! because the reducer must answer them with a rejected Result that echoes the input. The five
//! slots where the reference keeps unknown vocabulary text decode into
//! [`Open::Unknown`](crate::model::Open::Unknown) for the same reason.
//!
//! Integers must be JSON integers: a boolean or a float where an integer belongs is refused
//! here (see `kernel/DEVIATIONS.md`, D1), with the same code the reference would return.

mod bytes;
pub(crate) mod entities;
pub(crate) mod reader;
mod replay;

pub use bytes::{
    EntrySpans, InputPrefix, decode_compact_entry_canonical, decode_compact_entry_prefix,
    decode_compact_entry_spans,
};
pub use entities::{
    decode_event, decode_evidence, decode_evidence_set, decode_outcome, decode_state,
};
pub use reader::{DecodeError, DecodeErrorKind};
pub use replay::{
    decode_checkpoint_authentication, decode_checkpoint_root, decode_compact_entry,
    decode_genesis_root, decode_replay_entry, decode_trust_policy,
};
