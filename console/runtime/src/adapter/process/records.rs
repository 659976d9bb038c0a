//! The process adapter's own records, each canonical JSON + LF:
//!
//! - `proofs/process_bound.json` ([`ProcessBoundProof`], `valp-process-bound-proof.v1`),
//! - `proofs/content_bound.json` ([`ContentProof`], `valp-process-content-proof.v1`),
//! - `supervisor.json` ([`SupervisorRecord`], `valp-process-supervisor.v1`),
//! - `control/*.json` ([`ControlRequest`], `valp-process-control.v1`).
//!
//! Decoding is strict: the exact shape, and bytes equal to the record's canonical encoding.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use valp_kernel::canonical::Canonical;
use valp_kernel::json::write::{Fields, write_str};

/// `valp-process-bound-proof.v1`
pub const PROCESS_BOUND_SCHEMA: &str = "valp-process-bound-proof.v1";
/// `valp-process-content-proof.v1`
pub const CONTENT_PROOF_SCHEMA: &str = "valp-process-content-proof.v1";
/// `valp-process-supervisor.v1`
pub const SUPERVISOR_SCHEMA: &str = "valp-process-supervisor.v1";
/// `valp-process-control.v1`
pub const CONTROL_SCHEMA: &str = "valp-process-control.v1";

/// Why a record file is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a {schema}: {reason}")]
pub struct RecordError {
    /// The record's schema name.
    pub schema: &'static str,
    /// What is wrong.
    pub reason: String,
}

/// Decodes `bytes` as `T` (exact shape) and requires them to be `T`'s canonical encoding.
fn decode_exact<T: DeserializeOwned + Canonical>(
    bytes: &[u8],
    schema: &'static str,
    schema_of: impl FnOnce(&T) -> &str,
) -> Result<T, RecordError> {
    let record: T = serde_json::from_slice(bytes).map_err(|error| RecordError {
        schema,
        reason: error.to_string(),
    })?;
    if schema_of(&record) != schema {
        return Err(RecordError {
            schema,
            reason: "wrong schema_version".to_owned(),
        });
    }
    if record.canonical_bytes() != bytes {
        return Err(RecordError {
            schema,
            reason: "not the canonical encoding".to_owned(),
        });
    }
    Ok(record)
}

fn bool_member(fields: &mut Fields<'_>, key: &'static str, value: bool) {
    fields
        .key(key)
        .extend_from_slice(if value { b"true" } else { b"false" });
}

fn optional_int(fields: &mut Fields<'_>, key: &'static str, value: Option<i128>) {
    match value {
        Some(value) => fields.int(key, value),
        None => fields.key(key).extend_from_slice(b"null"),
    }
}

fn optional_str(fields: &mut Fields<'_>, key: &'static str, value: Option<&str>) {
    match value {
        Some(value) => fields.str(key, value),
        None => fields.key(key).extend_from_slice(b"null"),
    }
}

/// `valp-process-bound-proof.v1`: the started process is bound to the submission that caused it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessBoundProof {
    /// [`PROCESS_BOUND_SCHEMA`]
    pub schema_version: String,
    /// The causal submission: the request id.
    pub submission_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// The run spec digest (the request's payload digest).
    pub payload_digest: String,
    /// The process id (also its process group id).
    pub pid: u32,
    /// `/proc/<pid>/stat` field 22: the start time in clock ticks since boot.
    pub start_ticks: u64,
    /// `/proc/sys/kernel/random/boot_id` (null when unreadable): pid and ticks are per boot.
    pub boot_id: Option<String>,
    /// `sha256:` of the canonical JSON array of argv + LF.
    pub argv_digest: String,
    /// `process:<pid>:<start ticks>`
    pub runtime_identity: String,
    /// When the process was started (RFC 3339, ms, UTC).
    pub started_at: String,
}

impl ProcessBoundProof {
    /// Reads `proofs/process_bound.json`.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        decode_exact(bytes, PROCESS_BOUND_SCHEMA, |record: &Self| {
            &record.schema_version
        })
    }
}

impl Canonical for ProcessBoundProof {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("argv_digest", &self.argv_digest);
        fields.str("attempt_id", &self.attempt_id);
        optional_str(&mut fields, "boot_id", self.boot_id.as_deref());
        fields.str("payload_digest", &self.payload_digest);
        fields.int("pid", i128::from(self.pid));
        fields.str("runtime_identity", &self.runtime_identity);
        fields.str("schema_version", &self.schema_version);
        fields.int("start_ticks", i128::from(self.start_ticks));
        fields.str("started_at", &self.started_at);
        fields.str("submission_id", &self.submission_id);
        fields.end();
    }
}

/// One captured stream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamRecord {
    /// `sha256:` of the captured bytes (the file `stdout` / `stderr`).
    pub digest: String,
    /// How many bytes were captured.
    pub bytes: u64,
    /// Whether the stream went past its cap (the rest was read and dropped).
    pub truncated: bool,
}

impl Canonical for StreamRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.int("bytes", i128::from(self.bytes));
        fields.str("digest", &self.digest);
        bool_member(&mut fields, "truncated", self.truncated);
        fields.end();
    }
}

/// One expected evidence file as found after the process ended.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceRecord {
    /// Relative to the working folder, as the spec lists it.
    pub path: String,
    /// `sha256:` of its bytes; null when missing (or not a regular file, or behind a symlink).
    pub digest: Option<String>,
    /// Its size; null when missing.
    pub bytes: Option<u64>,
}

impl Canonical for EvidenceRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        optional_int(&mut fields, "bytes", self.bytes.map(i128::from));
        optional_str(&mut fields, "digest", self.digest.as_deref());
        fields.str("path", &self.path);
        fields.end();
    }
}

/// `valp-process-content-proof.v1`: what the process produced, bound to its identity.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentProof {
    /// [`CONTENT_PROOF_SCHEMA`]
    pub schema_version: String,
    /// The causal submission: the request id.
    pub submission_id: String,
    /// `process:<pid>:<start ticks>` (the process-bound segment's output).
    pub runtime_identity: String,
    /// The exit code; null when the process died of a signal.
    pub exit_code: Option<i32>,
    /// The signal that ended the process; null when it exited.
    pub signal: Option<i32>,
    /// Whether the supervisor terminated the process because the timeout passed.
    pub timed_out: bool,
    /// Whether the supervisor terminated the process because of a cancel request.
    pub cancelled: bool,
    /// How many interrupt requests were delivered (SIGINT to the process group).
    pub interrupts: u64,
    /// The captured stdout.
    pub stdout: StreamRecord,
    /// The captured stderr.
    pub stderr: StreamRecord,
    /// Every expected evidence file, in the spec's order.
    pub expected_evidence: Vec<EvidenceRecord>,
    /// When the process was seen to end (RFC 3339, ms, UTC).
    pub completed_at: String,
}

impl ContentProof {
    /// Reads `proofs/content_bound.json`.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        decode_exact(bytes, CONTENT_PROOF_SCHEMA, |record: &Self| {
            &record.schema_version
        })
    }
}

impl Canonical for ContentProof {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        bool_member(&mut fields, "cancelled", self.cancelled);
        fields.str("completed_at", &self.completed_at);
        optional_int(&mut fields, "exit_code", self.exit_code.map(i128::from));
        fields.list("expected_evidence", &self.expected_evidence);
        fields.int("interrupts", i128::from(self.interrupts));
        fields.str("runtime_identity", &self.runtime_identity);
        fields.str("schema_version", &self.schema_version);
        optional_int(&mut fields, "signal", self.signal.map(i128::from));
        fields.canonical("stderr", &self.stderr);
        fields.canonical("stdout", &self.stdout);
        fields.str("submission_id", &self.submission_id);
        bool_member(&mut fields, "timed_out", self.timed_out);
        fields.end();
    }
}

/// `valp-process-supervisor.v1` (`supervisor.json`): which process supervises the folder.
///
/// A pid alone cannot tell a live supervisor from a dead one whose pid was reused, so the record
/// holds the start ticks and boot id too. It has no time in it, so `launch` and the supervisor
/// write identical bytes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisorRecord {
    /// [`SUPERVISOR_SCHEMA`]
    pub schema_version: String,
    /// The supervisor's process id.
    pub pid: u32,
    /// `/proc/<pid>/stat` field 22.
    pub start_ticks: u64,
    /// The boot the pid belongs to (null when unreadable).
    pub boot_id: Option<String>,
}

impl SupervisorRecord {
    /// Reads `supervisor.json`.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        decode_exact(bytes, SUPERVISOR_SCHEMA, |record: &Self| {
            &record.schema_version
        })
    }
}

impl Canonical for SupervisorRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        optional_str(&mut fields, "boot_id", self.boot_id.as_deref());
        fields.int("pid", i128::from(self.pid));
        fields.str("schema_version", &self.schema_version);
        fields.int("start_ticks", i128::from(self.start_ticks));
        fields.end();
    }
}

/// What a control file asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Stop the work: SIGTERM to the process group, SIGKILL after the grace period.
    Cancel,
    /// SIGINT to the process group; supervision continues.
    Interrupt,
}

/// `valp-process-control.v1` (`control/cancel.json`, `control/interrupt-*.json`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControlRequest {
    /// [`CONTROL_SCHEMA`]
    pub schema_version: String,
    /// Cancel or interrupt.
    pub action: ControlAction,
    /// Why (cancel only; carried into the cancelled observation's reason).
    #[serde(default)]
    pub reason: Option<String>,
    /// When the System asked (RFC 3339, ms, UTC).
    pub requested_at: String,
}

impl ControlRequest {
    /// Reads a control file.
    pub fn decode(bytes: &[u8]) -> Result<Self, RecordError> {
        decode_exact(bytes, CONTROL_SCHEMA, |record: &Self| {
            &record.schema_version
        })
    }
}

impl Canonical for ControlRequest {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str(
            "action",
            match self.action {
                ControlAction::Cancel => "cancel",
                ControlAction::Interrupt => "interrupt",
            },
        );
        if let Some(reason) = &self.reason {
            fields.str("reason", reason);
        }
        fields.str("requested_at", &self.requested_at);
        fields.str("schema_version", &self.schema_version);
        fields.end();
    }
}

/// `sha256:` of the canonical JSON array of `argv` + LF (the reference's command digest).
pub fn argv_digest(argv: &[String]) -> String {
    let mut out = vec![b'['];
    for (index, argument) in argv.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(&mut out, argument);
    }
    out.extend_from_slice(b"]\n");
    valp_kernel::canonical::sha256_digest(&out)
}

/// `process:<pid>:<start ticks>`
pub fn runtime_identity(pid: u32, start_ticks: u64) -> String {
    format!("process:{pid}:{start_ticks}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn argv_digest_hashes_the_compact_array() {
        let argv = vec!["echo".to_owned(), "a \"b\"".to_owned()];
        assert_eq!(
            argv_digest(&argv),
            valp_kernel::canonical::sha256_digest(b"[\"echo\",\"a \\\"b\\\"\"]\n")
        );
    }

    #[test]
    fn records_round_trip_and_refuse_other_bytes() {
        let content = ContentProof {
            schema_version: CONTENT_PROOF_SCHEMA.into(),
            submission_id: "sha256:x".into(),
            runtime_identity: "process:1:2".into(),
            exit_code: None,
            signal: Some(9),
            timed_out: true,
            cancelled: false,
            interrupts: 0,
            stdout: StreamRecord {
                digest: "sha256:a".into(),
                bytes: 3,
                truncated: false,
            },
            stderr: StreamRecord {
                digest: "sha256:b".into(),
                bytes: 0,
                truncated: true,
            },
            expected_evidence: vec![EvidenceRecord {
                path: "a".into(),
                digest: None,
                bytes: None,
            }],
            completed_at: "2026-01-01T00:00:00.000Z".into(),
        };
        let bytes = content.canonical_bytes();
        assert_eq!(ContentProof::decode(&bytes).unwrap(), content);
        let mut spaced = bytes.clone();
        spaced.insert(1, b' ');
        assert!(ContentProof::decode(&spaced).is_err());

        let supervisor = SupervisorRecord {
            schema_version: SUPERVISOR_SCHEMA.into(),
            pid: 7,
            start_ticks: 99,
            boot_id: None,
        };
        assert_eq!(
            supervisor.canonical_bytes(),
            b"{\"boot_id\":null,\"pid\":7,\"schema_version\":\"valp-process-supervisor.v1\",\
              \"start_ticks\":99}\n"
        );
        assert_eq!(
            SupervisorRecord::decode(&supervisor.canonical_bytes()).unwrap(),
            supervisor
        );

        let control = ControlRequest {
            schema_version: CONTROL_SCHEMA.into(),
            action: ControlAction::Cancel,
            reason: Some("operator".into()),
            requested_at: "2026-01-01T00:00:00.000Z".into(),
        };
        assert_eq!(
            ControlRequest::decode(&control.canonical_bytes()).unwrap(),
            control
        );
    }
}
