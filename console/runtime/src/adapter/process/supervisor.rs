//! The supervisor (`valp adapter process --dir DIR`): claims the folder, checks the request and
//! run spec, starts the command without a shell in its own process group, writes the accepted
//! observation with its process-bound proof, watches exit, timeout and control files, and
//! writes the final observation with its content proof.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use valp_kernel::canonical::{Canonical, sha256_digest};

use super::capture::{Capture, Captured, sync_file};
use super::listing::Listing;
use super::os::{self, Signal};
use super::records::{
    self, ContentProof, ControlAction, ControlRequest, EvidenceRecord, ProcessBoundProof,
    StreamRecord, argv_digest, runtime_identity,
};
use super::spec::{INHERITED_ENV, RunSpec};
use super::{
    ADAPTER_ID, CANCEL_FILE, CONTENT_BOUND_FILE, CONTROL_DIR, OBSERVATIONS_DIR, PROCESS_BOUND_FILE,
    PROOFS_DIR, ProcessError, RUN_FILE, STDERR_FILE, STDOUT_FILE, check_attempt_folder, files,
    invalid, io_error, observation_file, read_request, same_evidence, supervisor_record,
};
use crate::abi::{
    ABI_VERSION, AdapterObservation, AdapterRequest, ObservationStatus, Operation, ProofKind,
    ProvenanceSegment,
};
use crate::clock::{Clock, SystemClock};

/// How often the supervisor looks at the process and the control folder.
const POLL: Duration = Duration::from_millis(20);
/// How long the streams may take to reach their end once the process group is gone.
const STREAM_PATIENCE: Duration = Duration::from_secs(2);
/// How long to wait for a process group to vanish after SIGKILL.
const KILL_PATIENCE: Duration = Duration::from_secs(2);

/// One line of `supervisor.log` (the supervisor's stderr); a log that cannot be written is not
/// a reason to stop supervising.
fn log(message: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "{} valp adapter process [{}]: {message}",
        SystemClock.now(),
        std::process::id()
    );
}

/// An attempt folder claimed by this supervisor, never supervised before.
pub(crate) struct Claimed {
    /// The folder, canonical.
    pub dir: PathBuf,
    /// Its request (a `submit`).
    pub request: AdapterRequest,
    /// `runtime/<adapter>/attempts/<H>`
    pub prefix: String,
}

impl Claimed {
    /// The observation writer of the claimed folder for `adapter`.
    pub(crate) fn writer(&self, adapter: &'static str) -> Writer<'_> {
        Writer {
            adapter,
            dir: &self.dir,
            request: &self.request,
            prefix: self.prefix.clone(),
        }
    }
}

/// Checks `dir` (read-only first: nothing is written into a folder that is not an attempt
/// folder), makes `supervisor.json` name this process and refuses a folder that has
/// observations already: an attempt is supervised once.
pub(crate) fn claim_folder(dir: &Path) -> Result<Claimed, ProcessError> {
    let dir = std::fs::canonicalize(dir).map_err(io_error(dir, "open the attempt folder"))?;
    let request = read_request(&dir)?;
    let prefix = check_attempt_folder(&dir, &request.attempt_id)?;
    if request.operation != Operation::Submit {
        return Err(invalid(
            &dir.join(super::REQUEST_FILE),
            "a supervisor runs submit requests only",
        ));
    }
    claim(&dir)?;
    let observations = dir.join(OBSERVATIONS_DIR);
    for sub in [OBSERVATIONS_DIR, PROOFS_DIR, CONTROL_DIR] {
        let path = dir.join(sub);
        files::create_dir_durably(&path).map_err(io_error(&path, "create"))?;
    }
    let has_observations = std::fs::read_dir(&observations)
        .map_err(io_error(&observations, "list"))?
        .flatten()
        .any(|entry| !files::is_temporary(&entry.file_name().to_string_lossy()));
    if has_observations {
        return Err(invalid(&observations, "the attempt was supervised before"));
    }
    Ok(Claimed {
        dir,
        request,
        prefix,
    })
}

pub fn run(dir: &Path) -> Result<ExitCode, ProcessError> {
    let claimed = claim_folder(dir)?;
    let (dir, request) = (&claimed.dir, &claimed.request);
    let writer = claimed.writer(ADAPTER_ID);
    log(&format!("supervising attempt {}", request.attempt_id));
    let spec = match load_spec(dir, request) {
        Ok(spec) => spec,
        Err(reason) => {
            log(&format!("refused: {reason}"));
            writer.refusal(ObservationStatus::Blocked, reason)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let mut control = Control::new(dir);
    if let Some(reason) = control.cancel() {
        log("cancelled before start");
        writer.refusal(ObservationStatus::Cancelled, format!("cancelled:{reason}"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let running = match start(dir, &spec) {
        Ok(running) => running,
        Err(Start::Refused(reason)) => {
            log(&format!("not started: {reason}"));
            writer.refusal(ObservationStatus::Blocked, reason)?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(Start::Failed(error)) => return Err(error),
    };
    let pgid = running.child.id();
    let process = match writer.accepted(&spec, &running) {
        Ok(process) => process,
        Err(error) => {
            // Without an accepted observation nobody knows the process: stop it.
            os::signal_group(pgid, Signal::Kill);
            return Err(error);
        }
    };
    log(&format!("started {}", process.output_identity));
    let ended = watch(running, &spec, &mut control);
    let ended = match ended {
        Ok(ended) => ended,
        Err(error) => {
            os::signal_group(pgid, Signal::Kill);
            return Err(error);
        }
    };
    let outcome = finish(dir, &spec, request, &process, ended)?;
    writer.final_observation(&process, &outcome)?;
    log(&format!(
        "finished: {}{}",
        outcome.status.as_str(),
        outcome
            .reason
            .as_deref()
            .map(|reason| format!(" ({reason})"))
            .unwrap_or_default()
    ));
    Ok(ExitCode::SUCCESS)
}

/// Makes `supervisor.json` name this process, or refuses when it names another.
fn claim(dir: &Path) -> Result<(), ProcessError> {
    let me = std::process::id();
    let stat = os::stat(me).ok_or_else(|| invalid(Path::new("/proc/self/stat"), "unreadable"))?;
    let record = supervisor_record(me, stat.start_ticks);
    let path = dir.join(super::SUPERVISOR_FILE);
    let bytes = record.canonical_bytes();
    if files::write_new(&path, &bytes).map_err(io_error(&path, "write"))? {
        return Ok(());
    }
    let existing = std::fs::read(&path).map_err(io_error(&path, "read"))?;
    if existing == bytes {
        return Ok(());
    }
    let pid = records::SupervisorRecord::decode(&existing).map_or(0, |record| record.pid);
    Err(ProcessError::AlreadySupervised { pid })
}

/// Reads and checks `run.json` against the request; the error is the blocked reason.
fn load_spec(dir: &Path, request: &AdapterRequest) -> Result<RunSpec, String> {
    let bytes = std::fs::read(dir.join(RUN_FILE))
        .map_err(|error| format!("run_spec_unreadable:{:?}", error.kind()))?;
    if sha256_digest(&bytes) != request.payload_digest {
        return Err("payload_digest_mismatch".to_owned());
    }
    let spec = RunSpec::decode(&bytes).map_err(|error| format!("invalid_run_spec:{error}"))?;
    if !same_evidence(&spec.expected_evidence, &request.expected_evidence_refs) {
        return Err("expected_evidence_mismatch".to_owned());
    }
    Ok(spec)
}

/// The control folder: cancel once, each interrupt file once.
pub(crate) struct Control {
    dir: PathBuf,
    /// `control/`, listed again only when it changed (each listing is an inotify event for
    /// the console's watcher, and this is asked every poll).
    listing: Listing,
    delivered: BTreeSet<String>,
}

impl Control {
    pub(crate) fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            listing: Listing::new(&dir.join(CONTROL_DIR)),
            delivered: BTreeSet::new(),
        }
    }

    /// The cancel reason, if a cancel was requested. Any `cancel.json` cancels (fail safe); an
    /// unreadable one gives a reason saying so.
    pub(crate) fn cancel(&self) -> Option<String> {
        let path = self.dir.join(CANCEL_FILE);
        let bytes = std::fs::read(&path).ok()?;
        Some(
            match ControlRequest::decode(&bytes) {
                Ok(request) if request.action == ControlAction::Cancel => request.reason,
                _ => None,
            }
            .unwrap_or_else(|| "unreadable cancel request".to_owned()),
        )
    }

    /// Interrupt requests not delivered yet, oldest first; they count as delivered from now.
    pub(crate) fn new_interrupts(&mut self) -> usize {
        self.new_requests("interrupt-").len()
    }

    /// The names of the `<prefix>*.json` requests not taken yet, oldest first; they count as
    /// taken from now (each is acted on once).
    pub(crate) fn new_requests(&mut self, prefix: &str) -> Vec<String> {
        let Some(entries) = self.listing.names() else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .iter()
            .filter(|name| {
                name.starts_with(prefix)
                    && Path::new(name).extension().is_some_and(|ext| ext == "json")
            })
            .filter(|name| !self.delivered.contains(*name))
            .cloned()
            .collect();
        names.sort();
        self.delivered.extend(names.iter().cloned());
        names
    }
}

/// A started process and its captures.
struct Running {
    child: Child,
    start_ticks: u64,
    started_at: String,
    stdout: Capture,
    stderr: Capture,
}

enum Start {
    /// Not started; the blocked reason.
    Refused(String),
    /// The folder could not be written.
    Failed(ProcessError),
}

fn create_stream(dir: &Path, name: &str) -> Result<(PathBuf, File), Start> {
    let path = dir.join(name);
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map(|file| (path.clone(), file))
        .map_err(|error| Start::Failed(io_error(&path, "create")(error)))
}

fn start(dir: &Path, spec: &RunSpec) -> Result<Running, Start> {
    if !Path::new(&spec.cwd).is_dir() {
        return Err(Start::Refused("cwd_missing".to_owned()));
    }
    let (_, stdout_file) = create_stream(dir, STDOUT_FILE)?;
    let (_, stderr_file) = create_stream(dir, STDERR_FILE)?;
    let mut command = Command::new(&spec.argv[0]);
    command
        .args(&spec.argv[1..])
        .current_dir(&spec.cwd)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for name in INHERITED_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.envs(&spec.env);
    let started_at = SystemClock.now().to_rfc3339();
    let mut child = command
        .spawn()
        .map_err(|error| Start::Refused(format!("spawn_failed:{:?}", error.kind())))?;
    let pid = child.id();
    // Not reaped yet, so the stat is there even if the process already exited.
    let Some(stat) = os::stat(pid) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Start::Refused("process_identity_unreadable".to_owned()));
    };
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Start::Refused("spawn_failed:no_pipes".to_owned()));
    };
    let captures = Capture::start(out, stdout_file, spec.stdout_cap_bytes).and_then(|stdout| {
        Capture::start(err, stderr_file, spec.stderr_cap_bytes).map(|stderr| (stdout, stderr))
    });
    let (stdout, stderr) = match captures {
        Ok(captures) => captures,
        Err(error) => {
            os::signal_group(pid, Signal::Kill);
            let _ = child.kill();
            let _ = child.wait();
            return Err(Start::Refused(format!("capture_failed:{:?}", error.kind())));
        }
    };
    Ok(Running {
        child,
        start_ticks: stat.start_ticks,
        started_at,
        stdout,
        stderr,
    })
}

/// How the watch ended.
struct Ended {
    status: ExitStatus,
    pgid: u32,
    timed_out: bool,
    cancel_reason: Option<String>,
    interrupts: u64,
    /// When SIGKILL follows the SIGTERM already sent (None: no termination began).
    kill_at: Option<Instant>,
    stdout: Capture,
    stderr: Capture,
}

fn grace(spec: &RunSpec) -> Duration {
    Duration::from_millis(spec.grace_ms)
}

/// Polls for the exit, the timeout and control requests until the process exits.
fn watch(running: Running, spec: &RunSpec, control: &mut Control) -> Result<Ended, ProcessError> {
    let Running {
        mut child,
        stdout,
        stderr,
        ..
    } = running;
    let pgid = child.id();
    let deadline = Instant::now() + Duration::from_millis(spec.timeout_ms);
    let mut timed_out = false;
    let mut cancel_reason = None;
    let mut interrupts = 0_u64;
    let mut kill_at: Option<Instant> = None;
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(error) => return Err(io_error(Path::new("child"), "wait for")(error)),
        }
        let now = Instant::now();
        match kill_at {
            None => {
                if let Some(reason) = control.cancel() {
                    log(&format!("cancel requested ({reason}): SIGTERM"));
                    cancel_reason = Some(reason);
                } else if now >= deadline {
                    log("timeout: SIGTERM");
                    timed_out = true;
                }
                if cancel_reason.is_some() || timed_out {
                    os::signal_group(pgid, Signal::Term);
                    kill_at = Some(now + grace(spec));
                } else {
                    for _ in 0..control.new_interrupts() {
                        log("interrupt requested: SIGINT");
                        os::signal_group(pgid, Signal::Int);
                        interrupts += 1;
                    }
                }
            }
            Some(at) if !killed && now >= at => {
                log("grace period over: SIGKILL");
                if !os::signal_group(pgid, Signal::Kill) {
                    let _ = child.kill();
                }
                killed = true;
            }
            Some(_) => {}
        }
        std::thread::sleep(POLL);
    };
    Ok(Ended {
        status,
        pgid,
        timed_out,
        cancel_reason,
        interrupts,
        kill_at: if killed {
            Some(Instant::now())
        } else {
            kill_at
        },
        stdout,
        stderr,
    })
}

/// Stops what is left of the process group once its leader exited: the attempt is over, so
/// nothing it started may go on changing the working folder after the final observation.
fn clear_group(pgid: u32, kill_at: Option<Instant>, spec: &RunSpec) {
    if os::group_members(pgid).is_empty() {
        return;
    }
    let kill_at = kill_at.unwrap_or_else(|| {
        log("the process exited, its group did not: SIGTERM");
        os::signal_group(pgid, Signal::Term);
        Instant::now() + grace(spec)
    });
    while Instant::now() < kill_at {
        if os::group_members(pgid).is_empty() {
            return;
        }
        std::thread::sleep(POLL);
    }
    log("the process group outlived the grace period: SIGKILL");
    os::signal_group(pgid, Signal::Kill);
    let deadline = Instant::now() + KILL_PATIENCE;
    while !os::group_members(pgid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(POLL);
    }
}

/// What the final observation says.
struct Outcome {
    status: ObservationStatus,
    reason: Option<String>,
    /// The expected evidence found, as the request lists it.
    found: Vec<String>,
    proof: ContentProof,
}

fn stream_record(path: &Path, captured: &Captured) -> Result<StreamRecord, ProcessError> {
    // Every byte on disk before it is digested (a forced close skips the copier's own sync).
    sync_file(path).map_err(io_error(path, "sync"))?;
    if let Some(error) = &captured.error {
        log(&format!("capture of {}: {error}", path.display()));
    }
    let bytes = std::fs::read(path).map_err(io_error(path, "read"))?;
    Ok(StreamRecord {
        digest: sha256_digest(&bytes),
        bytes: bytes.len() as u64,
        truncated: captured.truncated || captured.error.is_some(),
    })
}

fn finish(
    dir: &Path,
    spec: &RunSpec,
    request: &AdapterRequest,
    process: &Process,
    ended: Ended,
) -> Result<Outcome, ProcessError> {
    let completed_at = SystemClock.now().to_rfc3339();
    clear_group(ended.pgid, ended.kill_at, spec);
    let stdout = ended.stdout.close(STREAM_PATIENCE);
    let stderr = ended.stderr.close(STREAM_PATIENCE);
    let stdout = stream_record(&dir.join(STDOUT_FILE), &stdout)?;
    let stderr = stream_record(&dir.join(STDERR_FILE), &stderr)?;
    let cwd = Path::new(&spec.cwd);
    let mut found = Vec::new();
    let mut missing = Vec::new();
    let expected_evidence = spec
        .expected_evidence
        .iter()
        .map(|relative| {
            let bytes = files::read_beneath(cwd, relative);
            if bytes.is_some() {
                found.push(relative.clone());
            } else {
                missing.push(relative.as_str());
            }
            EvidenceRecord {
                path: relative.clone(),
                digest: bytes.as_deref().map(sha256_digest),
                bytes: bytes.map(|bytes| bytes.len() as u64),
            }
        })
        .collect();
    let exit_code = ended.status.code();
    let signal = ended.status.signal();
    let (status, reason) = if let Some(reason) = &ended.cancel_reason {
        (
            ObservationStatus::Cancelled,
            Some(format!("cancelled:{reason}")),
        )
    } else if ended.timed_out {
        (ObservationStatus::Blocked, Some("timeout".to_owned()))
    } else if let Some(signal) = signal {
        (ObservationStatus::Blocked, Some(format!("signal:{signal}")))
    } else if exit_code != Some(0) {
        let code = exit_code.map_or_else(|| "unknown".to_owned(), |code| code.to_string());
        (
            ObservationStatus::Blocked,
            Some(format!("exit_code:{code}")),
        )
    } else if !missing.is_empty() {
        (
            ObservationStatus::Blocked,
            Some(format!("missing_expected_evidence:{}", missing.join(","))),
        )
    } else {
        (ObservationStatus::Completed, None)
    };
    let proof = ContentProof {
        schema_version: records::CONTENT_PROOF_SCHEMA.to_owned(),
        submission_id: request.request_id.clone(),
        runtime_identity: process.output_identity.clone(),
        exit_code,
        signal,
        timed_out: ended.timed_out,
        cancelled: ended.cancel_reason.is_some(),
        interrupts: ended.interrupts,
        stdout,
        stderr,
        expected_evidence,
        completed_at,
    };
    Ok(Outcome {
        status,
        reason,
        found,
        proof,
    })
}

/// The process-bound segment of the accepted observation, reused in the final one.
struct Process {
    segment: ProvenanceSegment,
    output_identity: String,
}

/// Writes observations (and their proofs) into the folder.
pub(crate) struct Writer<'a> {
    /// The adapter writing (the last provenance segment's).
    pub adapter: &'static str,
    /// The attempt folder.
    pub dir: &'a Path,
    /// Its request.
    pub request: &'a AdapterRequest,
    /// `runtime/<adapter>/attempts/<H>`
    pub prefix: String,
}

impl Writer<'_> {
    /// `file` of the folder as a reference relative to the control root.
    pub(crate) fn reference(&self, file: &str) -> String {
        format!("{}/{file}", self.prefix)
    }

    /// Creates `relative` in the folder with `bytes`; it must not exist.
    pub(crate) fn write_once(&self, relative: &str, bytes: &[u8]) -> Result<(), ProcessError> {
        let path = self.dir.join(relative);
        if files::write_new(&path, bytes).map_err(io_error(&path, "write"))? {
            Ok(())
        } else {
            Err(invalid(&path, "exists already"))
        }
    }

    /// Writes observation `sequence`, checked against the ABI first.
    pub(crate) fn observe(
        &self,
        sequence: u64,
        status: ObservationStatus,
        provenance: Vec<ProvenanceSegment>,
        evidence_refs: Vec<String>,
        runtime_identity: Option<String>,
        reason: Option<String>,
    ) -> Result<(), ProcessError> {
        let observation = AdapterObservation::new(
            self.request.clone(),
            sequence,
            status,
            provenance,
            evidence_refs,
            runtime_identity,
            reason,
        );
        let relative = observation_file(sequence);
        observation
            .check(self.adapter)
            .map_err(|error| invalid(&self.dir.join(&relative), error.to_string()))?;
        self.write_once(&relative, &observation.canonical_bytes())
    }

    /// Observation 1 when nothing was started: blocked or cancelled, without proof.
    pub(crate) fn refusal(
        &self,
        status: ObservationStatus,
        reason: String,
    ) -> Result<(), ProcessError> {
        self.observe(1, status, Vec::new(), Vec::new(), None, Some(reason))
    }

    /// A segment of this adapter, acknowledged, for the request.
    pub(crate) fn segment(
        &self,
        sequence: u64,
        kind: ProofKind,
        input: (&str, &str),
        output: (&str, String),
        evidence_refs: Vec<String>,
    ) -> ProvenanceSegment {
        ProvenanceSegment {
            segment_id: format!("{}:{}", self.request.request_id, kind.as_str()),
            sequence,
            adapter_id: self.adapter.to_owned(),
            abi_version: ABI_VERSION.to_owned(),
            input_identity: input.0.to_owned(),
            input_digest: input.1.to_owned(),
            output_identity: output.0.to_owned(),
            output_digest: output.1,
            proof_kind: kind,
            evidence_refs,
            acknowledged: true,
            failure_code: None,
        }
    }

    /// The process-bound proof and observation 1 (`accepted`).
    fn accepted(&self, spec: &RunSpec, running: &Running) -> Result<Process, ProcessError> {
        let pid = running.child.id();
        let identity = runtime_identity(pid, running.start_ticks);
        let proof = ProcessBoundProof {
            schema_version: records::PROCESS_BOUND_SCHEMA.to_owned(),
            submission_id: self.request.request_id.clone(),
            attempt_id: self.request.attempt_id.clone(),
            payload_digest: self.request.payload_digest.clone(),
            pid,
            start_ticks: running.start_ticks,
            boot_id: os::boot_id(),
            argv_digest: argv_digest(&spec.argv),
            runtime_identity: identity.clone(),
            started_at: running.started_at.clone(),
        };
        let bytes = proof.canonical_bytes();
        self.write_once(PROCESS_BOUND_FILE, &bytes)?;
        let segment = self.segment(
            0,
            ProofKind::ProcessBound,
            (&self.request.request_id, &self.request.payload_digest),
            (&identity, sha256_digest(&bytes)),
            vec![self.reference(PROCESS_BOUND_FILE)],
        );
        self.observe(
            1,
            ObservationStatus::Accepted,
            vec![segment.clone()],
            Vec::new(),
            Some(identity.clone()),
            None,
        )?;
        Ok(Process {
            segment,
            output_identity: identity,
        })
    }

    /// The content proof and observation 2 (the final one).
    fn final_observation(&self, process: &Process, outcome: &Outcome) -> Result<(), ProcessError> {
        let bytes = outcome.proof.canonical_bytes();
        self.write_once(CONTENT_BOUND_FILE, &bytes)?;
        let content = self.segment(
            1,
            ProofKind::ContentBound,
            (
                &process.segment.output_identity,
                &process.segment.output_digest,
            ),
            (
                &format!("output:{}", self.request.request_id),
                sha256_digest(&bytes),
            ),
            vec![
                self.reference(CONTENT_BOUND_FILE),
                self.reference(STDOUT_FILE),
                self.reference(STDERR_FILE),
            ],
        );
        self.observe(
            2,
            outcome.status,
            vec![process.segment.clone(), content],
            outcome.found.clone(),
            Some(process.output_identity.clone()),
            outcome.reason.clone(),
        )
    }
}
