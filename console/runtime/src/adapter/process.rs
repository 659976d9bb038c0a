//! The process adapter (RFC 0002 §5.4; protocol digest §13.3): a local command, run without a
//! shell by a detached supervisor process, one per attempt, that outlives the console.
//!
//! The System prepares an attempt folder and launches the supervisor; from then on the folder
//! is the only channel between them. Adapters never write journals: the System reads the
//! observations as untrusted input and proposes Events to the kernel itself.
//!
//! ```text
//! <control root>/runtime/process/attempts/<H>/     H = attempt_folder(attempt_id)
//!   request.json            AdapterRequest (submit), canonical          System (prepare)
//!   run.json                valp-process-run-spec.v1, canonical;        System (prepare)
//!                           request.payload_digest is its digest
//!   supervisor.json         valp-process-supervisor.v1 {pid, start_ticks, boot_id}
//!                                                                       launch and supervisor
//!   supervisor.log          the supervisor's stdout and stderr          supervisor
//!   control/cancel.json     valp-process-control.v1 (cancel + reason)   System (request_cancel)
//!   control/interrupt-*.json valp-process-control.v1 (one per request)  System (request_interrupt)
//!   stdout, stderr          the captured streams (capped)               supervisor
//!   proofs/process_bound.json  valp-process-bound-proof.v1              supervisor
//!   proofs/content_bound.json  valp-process-content-proof.v1            supervisor
//!   observations/000001.json   valp-adapter-observation.v1 (accepted, or a refusal)
//!   observations/000002.json   the final observation (completed / blocked / cancelled)
//! ```
//!
//! Every file but the two streams is canonical JSON + LF written atomically (temporary file in
//! the same folder, fsync, rename or hard link, folder fsync); observations and proofs are
//! created once and never replaced. The supervisor writes nothing outside the folder.
//!
//! References: a segment's `evidence_refs` (its proof files and the streams) are relative to
//! the control root (`runtime/process/attempts/<H>/proofs/process_bound.json`). An
//! observation's `evidence_refs` are the expected evidence files found, exactly as the request
//! lists them (relative to the working folder), so the ABI's composite assessment (every
//! expected reference among the evidence references of a completed observation) holds.

mod capture;
mod listing;
pub(crate) mod os;
pub mod records;
pub mod spec;
mod supervisor;

pub(crate) use supervisor::{Control, Writer, claim_folder};

use std::fs::OpenOptions;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use valp_kernel::canonical::Canonical;

use crate::abi::attempt_folder;
use crate::abi::{AdapterObservation, AdapterRequest, ObservationStatus, Operation};
use crate::adapter::files;
use crate::clock::{Clock, SystemClock};
pub use records::{
    ContentProof, ControlAction, ControlRequest, EvidenceRecord, ProcessBoundProof, RecordError,
    StreamRecord, SupervisorRecord,
};
pub use spec::{RunSpec, SpecError};

/// The adapter id: the last provenance segment of every observation is this adapter's.
pub const ADAPTER_ID: &str = "process";
/// `request.json`
pub const REQUEST_FILE: &str = "request.json";
/// `run.json`
pub const RUN_FILE: &str = "run.json";
/// `supervisor.json`
pub const SUPERVISOR_FILE: &str = "supervisor.json";
/// `supervisor.log`
pub const SUPERVISOR_LOG: &str = "supervisor.log";
/// `stdout`
pub const STDOUT_FILE: &str = "stdout";
/// `stderr`
pub const STDERR_FILE: &str = "stderr";
/// `observations/`
pub const OBSERVATIONS_DIR: &str = "observations";
/// `proofs/`
pub const PROOFS_DIR: &str = "proofs";
/// `control/`
pub const CONTROL_DIR: &str = "control";
/// `proofs/process_bound.json`
pub const PROCESS_BOUND_FILE: &str = "proofs/process_bound.json";
/// `proofs/content_bound.json`
pub const CONTENT_BOUND_FILE: &str = "proofs/content_bound.json";
/// `control/cancel.json`
pub const CANCEL_FILE: &str = "control/cancel.json";

/// Why the process adapter could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// A file operation failed.
    #[error("{operation} {}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What was being done.
        operation: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A file of the attempt folder is not what it must be.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// `prepare` refuses the request and spec (they do not belong together, or break a rule).
    #[error("cannot prepare the attempt: {0}")]
    Refused(String),
    /// The folder is not `<control root>/runtime/process/attempts/<attempt_folder(attempt)>/`.
    #[error("{} is not the process attempt folder of its request", .0.display())]
    NotAttemptFolder(PathBuf),
    /// Another supervisor was launched for the folder (a folder is run at most once).
    #[error("the attempt folder already has a supervisor (process {pid})")]
    AlreadySupervised {
        /// The recorded supervisor's pid.
        pid: u32,
    },
}

pub(crate) fn io_error(
    path: &Path,
    operation: &'static str,
) -> impl FnOnce(io::Error) -> ProcessError {
    let path = path.to_owned();
    move |source| ProcessError::Io {
        path,
        operation,
        source,
    }
}

pub(crate) fn invalid(path: &Path, reason: impl Into<String>) -> ProcessError {
    ProcessError::Invalid {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

/// Runs the supervisor of the attempt folder `dir` until its process ends (the hidden command
/// `valp adapter process --dir DIR`). Exits 0 once the final observation is written (also when
/// it is a refusal, e.g. `blocked` for a payload digest mismatch); an error means no final
/// observation could be written.
pub fn supervise(dir: &Path) -> Result<ExitCode, ProcessError> {
    detach_session();
    supervisor::run(dir)
}

/// Leaves the launcher's session first thing (see [`os::new_session`]); a supervisor that
/// cannot still runs, and says so in its log.
pub(crate) fn detach_session() {
    if !os::new_session() {
        eprintln!("valp adapter: setsid failed; this supervisor stays in its launcher's session");
    }
}

/// `runtime/process/attempts/<attempt_folder(attempt_id)>`: the attempt folder relative to the
/// control root (the prefix of every segment reference).
pub fn attempt_ref(attempt_id: &str) -> String {
    format!("runtime/process/attempts/{}", attempt_folder(attempt_id))
}

/// The adapters whose attempt folders have this layout (a detached supervisor, observations,
/// proofs and control files): `runtime/<adapter>/attempts/<H>/`.
pub(crate) const SUPERVISED: [&str; 2] = [ADAPTER_ID, crate::adapter::tmux::ADAPTER_ID];

/// The supervised adapter whose folder `dir` is (`…/runtime/<adapter>/attempts/<H>`), if any.
pub(crate) fn folder_adapter(dir: &Path) -> Option<&'static str> {
    let names: Vec<_> = dir
        .components()
        .rev()
        .skip(1)
        .take(3)
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect();
    SUPERVISED
        .into_iter()
        .find(|adapter| names == ["attempts", *adapter, "runtime"])
}

/// Checks that `dir` is `…/runtime/<adapter>/attempts/<attempt_folder(attempt_id)>` for a
/// supervised adapter and returns the attempt's reference there (`runtime/<adapter>/attempts/<H>`).
pub(crate) fn check_attempt_folder(dir: &Path, attempt_id: &str) -> Result<String, ProcessError> {
    let named = dir
        .file_name()
        .is_some_and(|name| name.to_string_lossy() == attempt_folder(attempt_id));
    match folder_adapter(dir) {
        Some(adapter) if named => Ok(format!(
            "runtime/{adapter}/attempts/{}",
            attempt_folder(attempt_id)
        )),
        _ => Err(ProcessError::NotAttemptFolder(dir.to_owned())),
    }
}

fn canonical_dir(dir: &Path) -> Result<PathBuf, ProcessError> {
    std::fs::canonicalize(dir).map_err(io_error(dir, "open the attempt folder"))
}

/// Writes a new attempt folder under `process_root` (`<control root>/runtime/process`):
/// `attempts/<H>/` with `request.json`, `run.json` and the empty `observations/`, `proofs/`
/// and `control/` folders. Returns the folder.
///
/// Refused unless the request is a valid `submit`, the spec is valid, the request's payload
/// digest is the spec's digest and both list the same expected evidence. Preparing the same
/// request and spec again is a no-op; anything else in an existing folder is refused.
pub fn prepare(
    process_root: &Path,
    request: &AdapterRequest,
    spec: &RunSpec,
) -> Result<PathBuf, ProcessError> {
    check_submit(request, "process")?;
    spec.validate()
        .map_err(|error| ProcessError::Refused(format!("run spec: {error}")))?;
    check_request_names_spec(request, &spec.digest(), &spec.expected_evidence)?;
    write_folder(process_root, request, &spec.canonical_bytes())
}

/// Refused unless `request` is valid and a `submit` (the only operation an attempt folder is
/// prepared for); `adapter` names the adapter in the refusal.
pub(crate) fn check_submit(request: &AdapterRequest, adapter: &str) -> Result<(), ProcessError> {
    request
        .check()
        .map_err(|error| ProcessError::Refused(error.to_string()))?;
    if request.operation != Operation::Submit {
        return Err(ProcessError::Refused(format!(
            "the {adapter} adapter runs submit requests, not {}",
            request.operation.as_str()
        )));
    }
    Ok(())
}

/// Refused unless `request` names the run spec whose digest is `spec_digest` and expects the
/// same evidence as it (`spec_evidence`): a folder never pairs a request with another spec.
pub(crate) fn check_request_names_spec(
    request: &AdapterRequest,
    spec_digest: &str,
    spec_evidence: &[String],
) -> Result<(), ProcessError> {
    if request.payload_digest != spec_digest {
        return Err(ProcessError::Refused(
            "the request's payload_digest is not the run spec's digest".to_owned(),
        ));
    }
    if !same_evidence(&request.expected_evidence_refs, spec_evidence) {
        return Err(ProcessError::Refused(
            "the request and the run spec expect different evidence".to_owned(),
        ));
    }
    Ok(())
}

/// Writes `attempts/<H>/` under `adapter_root` (`<control root>/runtime/<adapter>`) with
/// `request.json`, `run.json` (`spec`, already checked against the request) and the empty
/// `observations/`, `proofs/` and `control/` folders; the same files again are a no-op.
pub(crate) fn write_folder(
    adapter_root: &Path,
    request: &AdapterRequest,
    spec: &[u8],
) -> Result<PathBuf, ProcessError> {
    let dir = adapter_root
        .join("attempts")
        .join(attempt_folder(&request.attempt_id));
    check_attempt_folder(&dir, &request.attempt_id)?;
    for sub in [OBSERVATIONS_DIR, PROOFS_DIR, CONTROL_DIR] {
        let path = dir.join(sub);
        files::create_dir_durably(&path).map_err(io_error(&path, "create"))?;
    }
    for (name, bytes) in [
        (REQUEST_FILE, request.canonical_bytes()),
        (RUN_FILE, spec.to_vec()),
    ] {
        let path = dir.join(name);
        files::write_new_or_same(&path, &bytes).map_err(io_error(&path, "write"))?;
    }
    Ok(dir)
}

/// Whether two expected-evidence lists name the same files.
pub(crate) fn same_evidence(left: &[String], right: &[String]) -> bool {
    let mut left: Vec<&String> = left.iter().collect();
    let mut right: Vec<&String> = right.iter().collect();
    left.sort();
    right.sort();
    left == right
}

/// A launched supervisor. Dropping it neither stops nor waits for the supervisor; keeping it
/// and calling [`try_wait`](Self::try_wait) now and then reaps the supervisor once it exits
/// (until then an exited supervisor stays a zombie of the launching process, which
/// [`supervisor_state`] counts as dead).
#[derive(Debug)]
pub struct Supervisor {
    pid: u32,
    start_ticks: u64,
    child: Child,
}

impl Supervisor {
    /// The supervisor's process id.
    pub const fn pid(&self) -> u32 {
        self.pid
    }

    /// The supervisor's start time (`/proc/<pid>/stat` field 22).
    pub const fn start_ticks(&self) -> u64 {
        self.start_ticks
    }

    /// Reaps the supervisor if it has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits for the supervisor to exit.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait()
    }
}

/// Starts `valp adapter <adapter> --dir DIR` (with `valp_binary`; the adapter whose folder `DIR`
/// is) detached: it starts its own session at once ([`supervise`]: neither the console's
/// terminal nor the console's exit reaches it; `setsid` needs a process that does not lead a
/// group yet, so it is not put in a group here), stdin null, stdout and stderr
/// appended to `DIR/supervisor.log`, working folder `DIR`. Does not wait for it. Writes
/// `DIR/supervisor.json` before returning, so [`supervisor_state`] knows the supervisor at once.
///
/// Refused when the folder is not a prepared attempt folder or already has a supervisor.
pub fn launch(dir: &Path, valp_binary: &Path) -> Result<Supervisor, ProcessError> {
    let dir = canonical_dir(dir)?;
    let request = read_request(&dir)?;
    check_attempt_folder(&dir, &request.attempt_id)?;
    let adapter =
        folder_adapter(&dir).ok_or_else(|| ProcessError::NotAttemptFolder(dir.clone()))?;
    let record_path = dir.join(SUPERVISOR_FILE);
    if let Some(existing) = read_supervisor_record(&dir)? {
        return Err(ProcessError::AlreadySupervised { pid: existing.pid });
    }
    let log_path = dir.join(SUPERVISOR_LOG);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(io_error(&log_path, "open"))?;
    let log_err = log.try_clone().map_err(io_error(&log_path, "open"))?;
    let mut command = Command::new(valp_binary);
    if let Some(config) = crate::userfiles::for_children() {
        command.env(crate::userfiles::CONFIG_VARIABLE, config);
    }
    let mut child = command
        .args(["adapter", adapter, "--dir"])
        .arg(&dir)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(io_error(valp_binary, "start"))?;
    let pid = child.id();
    // The child is not reaped before `wait`, so its stat is there even if it already exited.
    let Some(stat) = os::stat(pid) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(invalid(
            Path::new(&format!("/proc/{pid}/stat")),
            "unreadable right after start",
        ));
    };
    let record = supervisor_record(pid, stat.start_ticks);
    match files::write_new_or_same(&record_path, &record.canonical_bytes()) {
        Ok(_) => Ok(Supervisor {
            pid,
            start_ticks: stat.start_ticks,
            child,
        }),
        Err(error) => {
            // Another launch won the race: this supervisor refuses to run (its record is not
            // the folder's); stop it anyway and report the winner.
            let _ = child.kill();
            let _ = child.wait();
            match read_supervisor_record(&dir) {
                Ok(Some(existing)) => Err(ProcessError::AlreadySupervised { pid: existing.pid }),
                _ => Err(io_error(&record_path, "write")(error)),
            }
        }
    }
}

pub(crate) fn supervisor_record(pid: u32, start_ticks: u64) -> SupervisorRecord {
    SupervisorRecord {
        schema_version: records::SUPERVISOR_SCHEMA.to_owned(),
        pid,
        start_ticks,
        boot_id: os::boot_id(),
    }
}

fn read_supervisor_record(dir: &Path) -> Result<Option<SupervisorRecord>, ProcessError> {
    let path = dir.join(SUPERVISOR_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => SupervisorRecord::decode(&bytes)
            .map(Some)
            .map_err(|error| invalid(&path, error.to_string())),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(&path, "read")(error)),
    }
}

/// Reads `DIR/request.json`: canonical, a valid request.
pub fn read_request(dir: &Path) -> Result<AdapterRequest, ProcessError> {
    let path = dir.join(REQUEST_FILE);
    let bytes = std::fs::read(&path).map_err(io_error(&path, "read"))?;
    let request: AdapterRequest = serde_json::from_slice(&bytes)
        .map_err(|error| invalid(&path, format!("not a valp-adapter-request.v1: {error}")))?;
    if request.canonical_bytes() != bytes {
        return Err(invalid(&path, "not the request's canonical encoding"));
    }
    request
        .check()
        .map_err(|error| invalid(&path, error.to_string()))?;
    Ok(request)
}

static CONTROL_COUNTER: AtomicU64 = AtomicU64::new(0);

fn write_control(
    dir: &Path,
    name: &str,
    request: &ControlRequest,
    replace: bool,
) -> Result<(), ProcessError> {
    let control = dir.join(CONTROL_DIR);
    files::create_dir_durably(&control).map_err(io_error(&control, "create"))?;
    let path = control.join(name);
    let bytes = request.canonical_bytes();
    if replace {
        files::write_replacing(&path, &bytes).map_err(io_error(&path, "write"))
    } else if files::write_new(&path, &bytes).map_err(io_error(&path, "write"))? {
        Ok(())
    } else {
        Err(invalid(&path, "exists already"))
    }
}

/// Asks the supervisor to cancel: SIGTERM to the process group, SIGKILL after the spec's grace
/// period; the final observation is `cancelled` with reason `cancelled:<reason>`. A cancel that
/// arrives before the process started means it is never started.
pub fn request_cancel(dir: &Path, reason: &str) -> Result<(), ProcessError> {
    let request = ControlRequest {
        schema_version: records::CONTROL_SCHEMA.to_owned(),
        action: ControlAction::Cancel,
        reason: Some(reason.to_owned()),
        requested_at: SystemClock.now().to_rfc3339(),
    };
    write_control(dir, "cancel.json", &request, true)
}

/// Asks the supervisor to deliver SIGINT to the process group once (each call is one request,
/// delivered once); supervision goes on.
pub fn request_interrupt(dir: &Path) -> Result<(), ProcessError> {
    let now = SystemClock.now();
    let request = ControlRequest {
        schema_version: records::CONTROL_SCHEMA.to_owned(),
        action: ControlAction::Interrupt,
        reason: None,
        requested_at: now.to_rfc3339(),
    };
    let count = CONTROL_COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = format!(
        "interrupt-{:015}-{}-{count}.json",
        now.millis().max(0),
        std::process::id()
    );
    write_control(dir, &name, &request, false)
}

/// The observation file of `sequence`: `observations/000001.json`.
pub fn observation_file(sequence: u64) -> String {
    format!("{OBSERVATIONS_DIR}/{sequence:06}.json")
}

/// What an attempt folder's `observations/` holds: the observations that count, and the files
/// that do not.
#[derive(Debug, Default)]
pub struct ObservationRead {
    /// Sequences `1..=n`, each file canonical, passing the ABI checks for this adapter,
    /// carrying the folder's request and the sequence of its file name.
    pub observations: Vec<AdapterObservation>,
    /// Every other file ([`ProcessError::Invalid`], naming it and the rule it breaks): a file
    /// that fails a check, or a valid observation after a missing sequence.
    pub rejected: Vec<ProcessError>,
}

/// Reads the folder's observations. A file that fails a check is rejected on its own and the
/// others still count, so whatever lands in the folder cannot stop the attempt's real
/// observations from being read; only an unreadable folder or request is an error.
pub fn read_observations(dir: &Path) -> Result<ObservationRead, ProcessError> {
    let request = read_request(dir)?;
    let folder = dir.join(OBSERVATIONS_DIR);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(ObservationRead::default());
        }
        Err(error) => return Err(io_error(&folder, "list")(error)),
    };
    let mut read = ObservationRead::default();
    for entry in entries {
        let entry = entry.map_err(io_error(&folder, "list"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if files::is_temporary(&name) {
            continue;
        }
        match read_observation_file(&entry.path(), &name, &request) {
            Ok(observation) => read.observations.push(observation),
            Err(error) => read.rejected.push(error),
        }
    }
    read.observations
        .sort_by_key(|observation| observation.sequence);
    if let Some(gap) = read
        .observations
        .iter()
        .enumerate()
        .position(|(index, observation)| observation.sequence != index as u64 + 1)
    {
        for orphan in read.observations.split_off(gap) {
            read.rejected.push(invalid(
                &folder.join(observation_file(orphan.sequence)),
                format!("observation {} is missing before it", gap + 1),
            ));
        }
    }
    Ok(read)
}

fn read_observation_file(
    path: &Path,
    name: &str,
    request: &AdapterRequest,
) -> Result<AdapterObservation, ProcessError> {
    let sequence = name
        .strip_suffix(".json")
        .filter(|number| number.len() == 6 && number.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|number| number.parse::<u64>().ok())
        .ok_or_else(|| invalid(path, "not an observation file name (NNNNNN.json)"))?;
    let cap = crate::ingest::Limits::default().max_file_bytes;
    let bytes = files::read_capped(path, cap)
        .map_err(io_error(path, "read"))?
        .ok_or_else(|| invalid(path, format!("larger than {cap} bytes")))?;
    let observation =
        AdapterObservation::decode(&bytes).map_err(|error| invalid(path, error.to_string()))?;
    if observation.canonical_bytes() != bytes {
        return Err(invalid(path, "not the observation's canonical encoding"));
    }
    let adapter = path
        .parent()
        .and_then(Path::parent)
        .and_then(folder_adapter)
        .unwrap_or(ADAPTER_ID);
    observation
        .check(adapter)
        .map_err(|error| invalid(path, error.to_string()))?;
    if observation.sequence != sequence {
        return Err(invalid(path, "the sequence is not the file's"));
    }
    if &observation.request != request {
        return Err(invalid(path, "observes another request"));
    }
    Ok(observation)
}

/// Whether an observation ends the attempt (anything but `accepted` and `waiting`).
pub const fn is_final(status: ObservationStatus) -> bool {
    !matches!(
        status,
        ObservationStatus::Accepted | ObservationStatus::Waiting
    )
}

/// What a restarted System can tell about an attempt folder's supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisorState {
    /// No supervisor was launched (`supervisor.json` is absent) and there is no observation.
    NotLaunched,
    /// The recorded supervisor runs (same pid, start ticks and boot) and the final observation
    /// is not written yet.
    Running {
        /// Its pid.
        pid: u32,
    },
    /// The final observation is written.
    Finished {
        /// Its status.
        status: ObservationStatus,
    },
    /// The recorded supervisor is gone (exited, killed, a zombie, or its pid now names another
    /// process or an earlier boot) without a final observation. The command it started may
    /// still run: see [`terminate_orphan`].
    Dead {
        /// The recorded pid.
        pid: u32,
    },
    /// The folder's files could not be read or are damaged.
    Unreadable(String),
}

fn final_status(dir: &Path) -> Result<Option<ObservationStatus>, ProcessError> {
    Ok(read_observations(dir)?
        .observations
        .last()
        .map(|observation| observation.status)
        .filter(|&status| is_final(status)))
}

/// Where the attempt folder's supervisor stands.
pub fn supervisor_state(dir: &Path) -> SupervisorState {
    match final_status(dir) {
        Ok(Some(status)) => return SupervisorState::Finished { status },
        Ok(None) => {}
        Err(error) => return SupervisorState::Unreadable(error.to_string()),
    }
    let record = match read_supervisor_record(dir) {
        Ok(Some(record)) => record,
        Ok(None) => return SupervisorState::NotLaunched,
        Err(error) => return SupervisorState::Unreadable(error.to_string()),
    };
    if os::is_running(record.pid, record.start_ticks, record.boot_id.as_deref()) {
        return SupervisorState::Running { pid: record.pid };
    }
    // It may have written its final observation and exited since the first look.
    match final_status(dir) {
        Ok(Some(status)) => SupervisorState::Finished { status },
        Ok(None) => SupervisorState::Dead { pid: record.pid },
        Err(error) => SupervisorState::Unreadable(error.to_string()),
    }
}

/// After a supervisor died ([`SupervisorState::Dead`]): sends SIGKILL to the process group of
/// the command it started, if that process is still the one its process-bound proof names
/// (same pid, start ticks and boot; a zombie still holds its pid and group). Returns whether a
/// signal was sent. Does nothing while the supervisor runs or once it finished.
pub fn terminate_orphan(dir: &Path) -> Result<bool, ProcessError> {
    if !matches!(supervisor_state(dir), SupervisorState::Dead { .. }) {
        return Ok(false);
    }
    let path = dir.join(PROCESS_BOUND_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(io_error(&path, "read")(error)),
    };
    let proof =
        ProcessBoundProof::decode(&bytes).map_err(|error| invalid(&path, error.to_string()))?;
    let same_boot = match (&proof.boot_id, os::boot_id()) {
        (Some(recorded), Some(now)) => *recorded == now,
        _ => true,
    };
    let same_process =
        same_boot && os::stat(proof.pid).is_some_and(|stat| stat.start_ticks == proof.start_ticks);
    Ok(same_process && os::signal_group(proof.pid, os::Signal::Kill))
}
