//! The protocol Result (`valp-kernel-result.v1`): exactly one of `accepted`, `no_op` or
//! `rejected`.
//!
//! Rust's own `Result` keeps its name, so the protocol type is called [`Outcome`]. It is generic
//! over the State it carries: a task's [`State`] by default, or the installation's
//! [`InstallationState`](crate::installation::InstallationState) for the authority lane, which
//! uses the same Result shape and digests.

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::live::AcceptedRecord;
use crate::model::identity::Identity;
use crate::model::state::State;
use crate::model::vocabulary::{ErrorCode, Variant};

/// `schema_version` of a Result.
pub const RESULT_SCHEMA: &str = "valp-kernel-result.v1";

/// The event was accepted: the state advanced by one revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted<S = State> {
    /// `<event_id>:accepted`.
    pub result_id: Identity,
    /// The next State, whose history ends with this acceptance.
    pub state: S,
    /// Digest of the input.
    pub input_digest: String,
    /// Digest binding input, prior state and next state.
    pub result_digest: String,
    /// Effects the System must carry out (`adapter_cancel:…`).
    pub obligations: Vec<String>,
    /// `accepted:event:<id>` followed by kind-specific facts.
    pub audit_facts: Vec<String>,
}

impl<S> Accepted<S> {
    /// This Result without its State.
    pub fn record(&self) -> AcceptedRecord {
        AcceptedRecord {
            result_id: self.result_id.clone(),
            input_digest: self.input_digest.clone(),
            result_digest: self.result_digest.clone(),
            obligations: self.obligations.clone(),
            audit_facts: self.audit_facts.clone(),
        }
    }
}

/// The event was accepted before with identical input; nothing changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoOp<S = State> {
    /// The input State, unchanged.
    pub state: S,
    /// Digest of the input.
    pub input_digest: String,
    /// The earlier acceptance.
    pub prior_result_id: Identity,
    /// Its result digest.
    pub prior_result_digest: String,
}

/// The event was refused with a deterministic code; nothing changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected<S = State> {
    /// The input State, unchanged.
    pub state: S,
    /// Digest of the input.
    pub input_digest: String,
    /// Why.
    pub error_code: ErrorCode,
    /// For an idempotency conflict: the earlier acceptance of the same event id.
    pub prior_result_id: Option<Identity>,
    /// Its result digest.
    pub prior_result_digest: Option<String>,
}

/// A protocol Result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<S = State> {
    /// Accepted: revision + 1.
    Accepted(Accepted<S>),
    /// Duplicate of an accepted event.
    NoOp(NoOp<S>),
    /// Refused.
    Rejected(Rejected<S>),
}

impl<S> Outcome<S> {
    /// Which variant this is.
    pub fn variant(&self) -> Variant {
        match self {
            Self::Accepted(_) => Variant::Accepted,
            Self::NoOp(_) => Variant::NoOp,
            Self::Rejected(_) => Variant::Rejected,
        }
    }

    /// The State carried by the Result (next state if accepted, input state otherwise).
    pub fn state(&self) -> &S {
        match self {
            Self::Accepted(accepted) => &accepted.state,
            Self::NoOp(no_op) => &no_op.state,
            Self::Rejected(rejected) => &rejected.state,
        }
    }

    /// The input digest.
    pub fn input_digest(&self) -> &str {
        match self {
            Self::Accepted(accepted) => &accepted.input_digest,
            Self::NoOp(no_op) => &no_op.input_digest,
            Self::Rejected(rejected) => &rejected.input_digest,
        }
    }

    /// The accepted variant, if accepted.
    pub fn accepted(&self) -> Option<&Accepted<S>> {
        match self {
            Self::Accepted(accepted) => Some(accepted),
            _ => None,
        }
    }

    /// The error code, if rejected.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Rejected(rejected) => Some(rejected.error_code),
            _ => None,
        }
    }
}

impl<S: Canonical> Canonical for Outcome<S> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        match self {
            Self::Accepted(accepted) => {
                fields.strs("audit_facts", &accepted.audit_facts);
                fields.str("input_digest", &accepted.input_digest);
                fields.strs("obligations", &accepted.obligations);
                fields.str("result_digest", &accepted.result_digest);
                fields.canonical("result_id", &accepted.result_id);
                fields.str("schema_version", RESULT_SCHEMA);
                fields.canonical("state", &accepted.state);
            }
            Self::NoOp(no_op) => {
                fields.str("input_digest", &no_op.input_digest);
                fields.str("prior_result_digest", &no_op.prior_result_digest);
                fields.canonical("prior_result_id", &no_op.prior_result_id);
                fields.str("schema_version", RESULT_SCHEMA);
                fields.canonical("state", &no_op.state);
            }
            Self::Rejected(rejected) => {
                fields.str("error_code", rejected.error_code.as_str());
                fields.str("input_digest", &rejected.input_digest);
                if let Some(digest) = &rejected.prior_result_digest {
                    fields.str("prior_result_digest", digest);
                }
                fields.optional("prior_result_id", rejected.prior_result_id.as_ref());
                fields.str("schema_version", RESULT_SCHEMA);
                fields.canonical("state", &rejected.state);
            }
        }
        fields.str("variant", self.variant().as_str());
        fields.end();
    }
}
