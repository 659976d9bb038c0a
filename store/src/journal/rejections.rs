//! `rejections.jsonl`: proposals the kernel refused, for the console to show.
//!
//! Each line is the canonical JSON of a [`Rejection`]. The log is informational: it is not
//! hash-chained, not replayed and never trusted as protocol truth, and it is written without
//! `fsync` (losing its last lines in a crash loses nothing the kernel accepted).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_kernel::json::write::Fields;
use valp_kernel::model::event::write_evidence_set;
use valp_kernel::{Event, Evidence, Int};

use crate::error::StoreError;

/// `schema_version` of a rejection line.
pub const REJECTION_SCHEMA: &str = "valp-store-rejection.v1";

/// One refused proposal (of a task Event unless `E` says otherwise).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection<E = Event> {
    /// The revision the journal was at.
    pub revision: Int,
    /// The proposed event.
    pub event: E,
    /// Its evidence.
    pub evidence_set: Vec<Evidence>,
    /// The kernel's code (an [`ErrorCode`](valp_kernel::ErrorCode)), or the store's for a
    /// refusal by its own rules (`VALP-E-DONE-GATE`, `VALP-E-EPOCH-FENCED`).
    pub error_code: &'static str,
    /// A human explanation.
    pub reason: String,
}

impl<E: Canonical> Canonical for Rejection<E> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("error_code", self.error_code);
        fields.canonical("event", &self.event);
        write_evidence_set(fields.key("evidence_set"), &self.evidence_set);
        fields.str("reason", &self.reason);
        fields.int("revision", self.revision);
        fields.str("schema_version", REJECTION_SCHEMA);
        fields.end();
    }
}

/// Appends one rejection to `path`.
pub(super) fn record<E: Canonical>(
    path: &Path,
    rejection: &Rejection<E>,
) -> Result<(), StoreError> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|source| StoreError::io(path, "open", source))?;
    file.write_all(&rejection.canonical_bytes())
        .map_err(|source| StoreError::io(path, "write", source))
}
