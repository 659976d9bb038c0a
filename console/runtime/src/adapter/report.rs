//! `valp report`: an outside tool's report on an external attempt, built by valp on the tool's
//! behalf, so a shell script (or a person) can run an external work item without speaking the
//! ABI itself.
//!
//! The report goes where any tool's would: one line appended to
//! `inbox/valp-report/<H>.jsonl` (`H` = [`attempt_folder`] of the attempt), under a lock on
//! `inbox/valp-report/<H>.lock` so two reports on one attempt get distinct sequences. The line
//! is a `valp-adapter-observation.v1` record carrying the attempt's request exactly as valp
//! wrote it, the next sequence after the reports already in that file, and one provenance
//! segment of kind `transport_only` naming the reporter: the report says what the tool
//! claims, nothing more. The runtime then reads it like any inbox observation. The line is
//! synced before the command says it was reported.
//!
//! A report always starts on a fresh line: when the file ends without an LF (a tool or a
//! `valp report` died halfway through a line), the report's one write is an LF and then the
//! line, so the fragment becomes a line of its own (which the inbox reader lists as malformed,
//! with its file and offset) and the report is read whole. One file per attempt, not one per
//! report, so the sequence is counted under one lock from one file.
//!
//! Refused before anything is written: an attempt without a request (never launched on the
//! external adapter), a report after the attempt's final report, a reporter name that is not an
//! identity, and an observation the ABI refuses (an `unsupported` report without a reason).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_store::lock::LockGuard;

use super::external;
use super::process::is_final;
use crate::abi::{
    ABI_VERSION, AdapterObservation, AdapterRequest, ObservationStatus, ProofKind,
    ProvenanceSegment, attempt_folder,
};
use crate::ingest::glued_record;

/// The inbox folder `valp report` appends to.
pub const REPORT_DIR: &str = "inbox/valp-report";
/// The reporter named when the caller names none.
pub const DEFAULT_REPORTER: &str = "valp-report";

/// Why a report was not written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The attempt has no request on the external adapter.
    #[error(
        "no external attempt {attempt_id} is waiting for a report: {path} does not exist \
         (`valp task status` lists each task's attempts)"
    )]
    NoRequest {
        /// The attempt.
        attempt_id: String,
        /// Where its request would be.
        path: String,
    },
    /// The attempt's request is there but unreadable or invalid.
    #[error("attempt {attempt_id}: {reason}")]
    BadRequest {
        /// The attempt.
        attempt_id: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The attempt was already reported finished.
    #[error("attempt {attempt_id} was already reported {status} (sequence {sequence}) in {file}")]
    Finished {
        /// The attempt.
        attempt_id: String,
        /// Its final status.
        status: &'static str,
        /// The final report's sequence.
        sequence: u64,
        /// Where.
        file: String,
    },
    /// The report itself is not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The report file's lock could not be taken.
    #[error(transparent)]
    Lock(#[from] valp_store::StoreError),
}

/// What a report said, and where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// Its sequence.
    pub sequence: u64,
    /// The file it was appended to, relative to the control root.
    pub file: String,
}

/// Appends the report `status` (with `reason`) on `attempt_id` by `reporter` to the inbox of
/// `control_root`.
pub fn report(
    control_root: &Path,
    attempt_id: &str,
    status: ObservationStatus,
    reason: Option<&str>,
    reporter: &str,
) -> Result<Reported, ReportError> {
    if reporter.is_empty()
        || reporter
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\')
    {
        return Err(ReportError::Invalid(format!(
            "the reporter {reporter:?} is not a name (not empty, no control characters or slashes)"
        )));
    }
    let attempt_ref = external::attempt_ref(attempt_id);
    let dir = control_root.join(&attempt_ref);
    if !external::launched(&dir) {
        return Err(ReportError::NoRequest {
            attempt_id: attempt_id.to_owned(),
            path: format!("{attempt_ref}/{}", external::REQUEST_FILE),
        });
    }
    let request = external::read_request(&dir).map_err(|error| ReportError::BadRequest {
        attempt_id: attempt_id.to_owned(),
        reason: error.to_string(),
    })?;
    let folder = control_root.join(REPORT_DIR);
    std::fs::create_dir_all(&folder).map_err(io_error(&folder))?;
    let name = attempt_folder(attempt_id);
    let _lock = LockGuard::acquire(
        &folder.join(format!("{name}.lock")),
        Duration::from_secs(10),
    )?;
    let relative = format!("{REPORT_DIR}/{name}.jsonl");
    let path = control_root.join(&relative);
    let (earlier, torn) = earlier_reports(&path, &request)?;
    if let Some(last) = earlier.iter().rfind(|earlier| is_final(earlier.status)) {
        return Err(ReportError::Finished {
            attempt_id: attempt_id.to_owned(),
            status: last.status.as_str(),
            sequence: last.sequence,
            file: relative,
        });
    }
    let sequence = earlier.last().map_or(1, |last| last.sequence + 1);
    let observation = observation(&request, sequence, status, reason, reporter, &relative);
    observation
        .check(reporter)
        .map_err(|error| ReportError::Invalid(error.to_string()))?;
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io_error(&path))?;
    // One write per line, as the inbox contract asks, then durable before we say so.
    let mut bytes = Vec::new();
    if torn {
        bytes.push(b'\n');
    }
    bytes.extend(observation.canonical_bytes());
    file.write_all(&bytes)
        .and_then(|()| file.sync_data())
        .map_err(io_error(&path))?;
    Ok(Reported {
        sequence,
        file: relative,
    })
}

/// The reports on `request` already in the attempt's report file, in file order (lines of other
/// requests, or that do not decode, are not ours to count), and whether the file ends in a
/// partial line.
fn earlier_reports(
    path: &Path,
    request: &AdapterRequest,
) -> Result<(Vec<AdapterObservation>, bool), ReportError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Vec::new(), false));
        }
        Err(error) => return Err(io_error(path)(error)),
    };
    let torn = bytes.last().is_some_and(|&last| last != b'\n');
    // Lines as the inbox reader sees them: a record glued to a torn line counts.
    let reports = bytes
        .split(|&byte| byte == b'\n')
        .map(|line| match glued_record(line) {
            Some(at) => &line[at..],
            None => line,
        })
        .filter_map(|line| AdapterObservation::decode(line).ok())
        .filter(|observation| &observation.request == request)
        .collect();
    Ok((reports, torn))
}

fn observation(
    request: &AdapterRequest,
    sequence: u64,
    status: ObservationStatus,
    reason: Option<&str>,
    reporter: &str,
    report_file: &str,
) -> AdapterObservation {
    let output = format!(
        "{reporter}:{}:{sequence}",
        attempt_folder(&request.attempt_id)
    );
    let segment = ProvenanceSegment {
        segment_id: format!("{reporter}-{sequence}"),
        sequence: 0,
        adapter_id: reporter.to_owned(),
        abi_version: ABI_VERSION.to_owned(),
        input_identity: request.request_id.clone(),
        input_digest: request.payload_digest.clone(),
        output_digest: sha256_digest(output.as_bytes()),
        output_identity: output,
        proof_kind: ProofKind::TransportOnly,
        // What the segment transported: the report file itself.
        evidence_refs: vec![report_file.to_owned()],
        acknowledged: true,
        failure_code: None,
    };
    // An unsupported report carries no proof (ABI rule); every other one names its reporter.
    let (provenance, runtime_identity) = if status == ObservationStatus::Unsupported {
        (Vec::new(), None)
    } else {
        (vec![segment], Some(reporter.to_owned()))
    };
    let evidence_refs = if status == ObservationStatus::Completed {
        request.expected_evidence_refs.clone()
    } else {
        Vec::new()
    };
    AdapterObservation::new(
        request.clone(),
        sequence,
        status,
        provenance,
        evidence_refs,
        runtime_identity,
        reason.map(str::to_owned),
    )
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError {
    let path = path.display().to_string();
    move |source| ReportError::Io { path, source }
}
