//! The tmux supervisor (`valp adapter tmux --dir DIR`): one per attempt, detached, outliving
//! the console. It claims the folder, starts the agent in a window of the tmux server (or finds
//! the pane the plan targets), submits the prompt with proof, watches the agent's state, and
//! writes the final observation:
//!
//! - observation 1 `accepted` only once the submission is proven: its provenance is the
//!   `transport_only` segment of the paste (`dispatch_inserted`, never delivery) and the
//!   `process_bound` segment of the submission; a refused submission (the agent blocked, on a
//!   set-up screen, not settling) is `blocked` with nothing typed, an unconfirmed one is
//!   `blocked` with reason `submission_unconfirmed:…`: raised, never resent;
//! - then, watching the screen: a pane valp started pipes its output to `.pane-output`
//!   (`pipe-pane`), so a quiet pane costs a `stat` per tick and is captured only when it
//!   printed (or every 30 s); a targeted pane is captured every tick; an unchanged screen is
//!   never classified again. Then:
//!   idle (debounced by the profile) after working with every expected file present ends the
//!   attempt `completed`; idle with a file missing is noted "runtime idle, evidence missing"
//!   (a `waiting` observation, not completion) and supervision goes on; the pane gone is
//!   `blocked` `agent_exited`; past the timeout the agent is stopped and the attempt `blocked`
//!   `timeout`; a cancel request stops it and ends `cancelled`;
//! - interrupts press the profile's interrupt keys and are confirmed when the agent leaves
//!   working; a stop presses C-c, then the profile's exit keys, then (for a pane valp started)
//!   kills the pane's process group, each step confirmed by observing the pane gone.
//!
//! A window valp opened is closed when the attempt ends; a targeted pane is never closed or
//! killed. The agent's state is kept in `state.json` for the console.

use std::path::Path;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use valp_kernel::canonical::sha256_digest;

use super::records::{
    Action, CompletionProof, InsertedProof, MessageProof, MessageRequest, Record, StateRecord,
    SubmissionProof, TmuxSpec,
};
use super::screen::tail;
use super::server::{Found, Server, Window};
use super::submit::{self, Proof, Submission};
use super::{
    ADAPTER_ID, COMPLETION_FILE, INSERTED_FILE, MESSAGE_PREFIX, OUTPUT_FILE, STATE_FILE,
    SUBMISSION_FILE, runtime_identity,
};
use crate::abi::{AdapterRequest, ObservationStatus, ProofKind, ProvenanceSegment};
use crate::adapter::files;
use crate::adapter::process::os::{self, Signal};
use crate::adapter::process::records::EvidenceRecord;
use crate::adapter::process::{
    CONTROL_DIR, Control, PROOFS_DIR, ProcessError, RUN_FILE, Writer, claim_folder, invalid,
    io_error, same_evidence,
};
use crate::agent::channel::precedence::{ScreenReading, Source};
use crate::agent::classify::{Classification, Debouncer, classify};
use crate::agent::overrides::{AgentOverrides, OverrideError};
use crate::agent::profile::{AgentState, Profile, ProfileError};
use crate::clock::{Clock, SystemClock};

/// How often the agent is looked at (a `stat` of its output pipe; a capture when it printed).
const SAMPLE: Duration = Duration::from_millis(100);
/// Ticks between two looks at the control folder and the pane's process.
const CONTROL_EVERY: u64 = 5;
/// The longest a quiet pane goes without a capture (a screen can change without output:
/// a resize). Its process going away is seen at once (`/proc`), output at the next tick.
const FULL_CAPTURE: Duration = Duration::from_secs(30);
/// How long one tmux call may take.
const TMUX_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the agent may take to reach its prompt, and each submission step.
const PATIENCE: Duration = Duration::from_secs(30);
/// How long an interrupt may take to show.
const INTERRUPT_PATIENCE: Duration = Duration::from_secs(5);
/// Failed samples in a row before the agent counts as gone.
const FAILED_SAMPLES: u32 = 3;

fn log(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "{} valp adapter tmux [{}]: {message}",
        SystemClock.now(),
        std::process::id()
    );
}

fn now() -> String {
    SystemClock.now().to_rfc3339()
}

/// Runs the supervisor of the attempt folder `dir` (see the module documentation).
pub fn run(dir: &Path) -> Result<ExitCode, ProcessError> {
    let claimed = claim_folder(dir)?;
    let (dir, request) = (&claimed.dir, &claimed.request);
    let writer = claimed.writer(ADAPTER_ID);
    log(&format!("supervising attempt {}", request.attempt_id));
    sweep_captures(dir);
    let spec = match load_spec(dir, request) {
        Ok(spec) => spec,
        Err(reason) => return refuse(&writer, ObservationStatus::Blocked, reason),
    };
    // The operator's overrides from the user config file (`VALP_CONFIG`, set by the console
    // that launched this supervisor, or the platform's place).
    let profile = match AgentOverrides::of_this_process()
        .and_then(|overrides| Ok(overrides.profile(&spec.agent)?))
    {
        Ok(profile) => profile,
        Err(OverrideError::Profile(ProfileError::Unknown(_))) => {
            return refuse(&writer, ObservationStatus::Blocked, "unknown_agent".into());
        }
        Err(error) => {
            return refuse(
                &writer,
                ObservationStatus::Blocked,
                format!("agent_profile_override:{error}"),
            );
        }
    };
    let control = Control::new(dir);
    if let Some(reason) = control.cancel() {
        return refuse(
            &writer,
            ObservationStatus::Cancelled,
            format!("cancelled:{reason}"),
        );
    }
    let server = Server::new(Path::new("tmux"), Path::new(&spec.socket), TMUX_TIMEOUT);
    let found = match open_or_find(&server, &spec, &profile, dir) {
        Ok(Some(found)) => found,
        Ok(None) => {
            return refuse(&writer, ObservationStatus::Blocked, "target_missing".into());
        }
        Err(error) => {
            return refuse(
                &writer,
                ObservationStatus::Blocked,
                format!("tmux_failed:{error}"),
            );
        }
    };
    log(&format!(
        "agent {} in pane {} (process {})",
        spec.agent, found.pane_id, found.pane_pid
    ));
    if spec.target.is_some()
        && let Some(earlier) = unconfirmed_before(dir, &spec.socket, &found.pane_id)
    {
        // The agent may have taken that prompt: pasting again could run it twice.
        return refuse(
            &writer,
            ObservationStatus::Blocked,
            format!(
                "previous_submission_unconfirmed:{earlier}: the Leader looks at pane {} first; \
                 valp never resends",
                found.pane_id
            ),
        );
    }
    let ours = spec.command.is_some();
    // A pane valp started tells of its output through a pipe; a targeted pane's one pipe is
    // the Leader's, so it is sampled instead.
    let output = ours.then(|| dir.join(OUTPUT_FILE)).filter(|file| {
        std::fs::write(file, b"").is_ok() && server.pane(&found.pane_id).pipe_output(file).is_ok()
    });
    let mut agent = Agent {
        channel: super::channel::Channel::new(&spec.env),
        source: None,
        pane_ticks: os::stat(found.pane_pid).map(|stat| stat.start_ticks),
        server,
        found,
        ours,
        profile,
        spec,
        control,
        started: Instant::now(),
        actions: Vec::new(),
        last: None,
        output,
        captured_at: Instant::now(),
    };
    let result = agent.supervise(&writer);
    // Whatever happened, a window valp opened does not outlive its attempt.
    agent.close();
    result
}

/// Opens the agent's window (its command line as the profile's `launch_hooks` makes it,
/// [`super::launch`]) or finds the targeted pane.
fn open_or_find(
    server: &Server,
    spec: &TmuxSpec,
    profile: &Profile,
    dir: &Path,
) -> Result<Option<Found>, super::pane::PaneError> {
    let Some(argv) = &spec.command else {
        return spec
            .target
            .as_ref()
            .map_or(Ok(None), |target| server.find(target));
    };
    let valp = std::env::current_exe().ok();
    let launch = super::launch::prepare(profile, argv, dir, valp.as_deref(), &spec.env);
    if let Some(note) = &launch.note {
        log(note);
    }
    server
        .open(Window {
            session: &spec.session,
            name: &spec.window,
            cwd: &spec.cwd,
            env: &spec.env,
            argv: &launch.argv,
        })
        .map(Some)
}

fn refuse(
    writer: &Writer<'_>,
    status: ObservationStatus,
    reason: String,
) -> Result<ExitCode, ProcessError> {
    log(&format!("not supervised: {reason}"));
    writer.refusal(status, reason)?;
    Ok(ExitCode::SUCCESS)
}

/// Reads `run.json` and checks it against the request; the error is the blocked reason.
fn load_spec(dir: &Path, request: &AdapterRequest) -> Result<TmuxSpec, String> {
    let bytes = std::fs::read(dir.join(RUN_FILE))
        .map_err(|error| format!("run_spec_unreadable:{:?}", error.kind()))?;
    if sha256_digest(&bytes) != request.payload_digest {
        return Err("payload_digest_mismatch".to_owned());
    }
    let spec = TmuxSpec::decode(&bytes).map_err(|error| format!("invalid_run_spec:{error}"))?;
    spec.validate()?;
    if !same_evidence(&spec.expected_evidence, &request.expected_evidence_refs) {
        return Err("expected_evidence_mismatch".to_owned());
    }
    Ok(spec)
}

/// The last screen read: its digest, what the profile read, its tail.
#[derive(Debug)]
struct Sample {
    digest: String,
    read: Classification,
    tail: Vec<String>,
}

/// How the attempt ends.
struct End {
    status: ObservationStatus,
    reason: Option<String>,
    evidence: Vec<EvidenceRecord>,
}

struct Agent {
    server: Server,
    found: Found,
    ours: bool,
    profile: Profile,
    spec: TmuxSpec,
    control: Control,
    started: Instant,
    actions: Vec<Action>,
    last: Option<Rc<Sample>>,
    /// Where the pane's output is piped (`None`: sample every time).
    output: Option<std::path::PathBuf>,
    /// The pane process's start time, to see it gone without asking tmux.
    pane_ticks: Option<u64>,
    /// When the screen was last captured.
    captured_at: Instant,
    /// The agent's structured channel (hooks), which outranks the screen while it speaks.
    channel: Option<super::channel::Channel>,
    /// Where the state last believed came from ([`crate::agent::channel::precedence::Source::label`]).
    source: Option<String>,
}

impl Agent {
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn identity(&self) -> String {
        runtime_identity(&self.found.pane_id, self.found.pane_pid)
    }

    /// Whether nothing can have changed since the last capture: the pane's output pipe is
    /// empty, its process runs, and the last capture is recent. Costs a `stat`, not a tmux
    /// client. Output found is consumed (the file is emptied), so the next tick is quiet again.
    fn quiet(&self, look: bool) -> bool {
        let Some(file) = &self.output else {
            return false;
        };
        if self.captured_at.elapsed() >= FULL_CAPTURE {
            return false;
        }
        let running = || {
            os::stat(self.found.pane_pid)
                .is_some_and(|stat| Some(stat.start_ticks) == self.pane_ticks && stat.is_running())
        };
        if look && !running() {
            return false;
        }
        match std::fs::metadata(file) {
            Ok(meta) if meta.len() == 0 => true,
            Ok(_) => {
                // `cat` appends: emptying the file under it loses nothing the capture misses.
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(file)
                    .and_then(|file| file.set_len(0));
                false
            }
            Err(_) => false,
        }
    }

    /// Reads the screen (classifying it only when it changed; not at all while the pane is
    /// quiet; `look`: also check that its process runs); `None` once the pane is gone.
    fn sample(&mut self, look: bool) -> Option<Rc<Sample>> {
        if let Some(last) = self.last.as_ref().filter(|_| self.quiet(look)) {
            return Some(Rc::clone(last));
        }
        let mut failures = 0;
        loop {
            match self.server.pane(&self.found.pane_id).capture() {
                Ok(screen) => {
                    self.captured_at = Instant::now();
                    let digest = sha256_digest(screen.as_bytes());
                    if let Some(last) = self.last.as_ref().filter(|last| last.digest == digest) {
                        return Some(Rc::clone(last));
                    }
                    let sample = Rc::new(Sample {
                        digest,
                        read: classify(&self.profile, &screen),
                        tail: tail(&screen),
                    });
                    self.last = Some(Rc::clone(&sample));
                    return Some(sample);
                }
                Err(error) => {
                    if matches!(self.server.find(&self.found.pane_id), Ok(None)) {
                        return None;
                    }
                    failures += 1;
                    if failures >= FAILED_SAMPLES {
                        log(&format!("the pane cannot be read: {error}"));
                        return None;
                    }
                    std::thread::sleep(SAMPLE);
                }
            }
        }
    }

    fn supervise(&mut self, writer: &Writer<'_>) -> Result<ExitCode, ProcessError> {
        let Some((inserted, submission)) = self.submit(writer)? else {
            return Ok(ExitCode::SUCCESS);
        };
        let end = self.watch(writer, &inserted, &submission)?;
        self.finish(writer, &[inserted, submission], end)?;
        Ok(ExitCode::SUCCESS)
    }

    /// Submits the prompt and writes observation 1; `None` when the attempt ended there.
    fn submit(
        &mut self,
        writer: &Writer<'_>,
    ) -> Result<Option<(ProvenanceSegment, ProvenanceSegment)>, ProcessError> {
        let pane = self.server.pane(&self.found.pane_id);
        if let Some(channel) = &mut self.channel {
            channel.submitting();
        }
        let outcome = submit::submit(
            &pane,
            &self.profile,
            &self.spec.prompt,
            writer.dir,
            PATIENCE,
        );
        let (proof, why) = match outcome {
            Ok(Submission::Proven(proof)) => (proof, None),
            Ok(Submission::Unconfirmed { proof, why }) => (proof, Some(why)),
            Err(error) => {
                // Nothing was typed: a window valp opened is closed with the attempt, a pane
                // the plan targeted is left exactly as it was.
                let reason = format!("submit_refused:{error}");
                log(&reason);
                writer.refusal(ObservationStatus::Blocked, reason)?;
                return Ok(None);
            }
        };
        // The agent's own word: a `UserPromptSubmit` with the pasted prompt's digest proves
        // delivery even where the screen could not (content-bound), a `turn.started` is noted.
        let acknowledged = self
            .channel
            .as_mut()
            .and_then(|channel| channel.acknowledged(&proof.prompt));
        let why = why.filter(|_| !acknowledged.as_ref().is_some_and(|(bound, _)| *bound));
        let request = writer.request;
        let record = SubmissionProof {
            schema_version: SubmissionProof::SCHEMA.to_owned(),
            submission_id: request.request_id.clone(),
            attempt_id: request.attempt_id.clone(),
            payload_digest: request.payload_digest.clone(),
            agent: self.spec.agent.clone(),
            socket: self.spec.socket.clone(),
            pane_id: self.found.pane_id.clone(),
            pane_pid: self.found.pane_pid,
            started_by_valp: self.ours,
            runtime_identity: self.identity(),
            prompt_digest: proof.prompt.clone(),
            prompt_bytes: self.spec.prompt.len() as u64,
            proven: why.is_none(),
            why: why.clone(),
            steps: proof.steps.clone(),
            acknowledged_by: acknowledged.map(|(_, line)| line),
            at: now(),
        };
        let submission_bytes = record
            .canonical()
            .map_err(|error| invalid(&writer.dir.join(SUBMISSION_FILE), error.to_string()))?;
        writer.write_once(SUBMISSION_FILE, &submission_bytes)?;
        let inserted = self.inserted(writer, &proof)?;
        let Some(why) = why else {
            let submission = writer.segment(
                1,
                ProofKind::ProcessBound,
                (&inserted.output_identity, &inserted.output_digest),
                (&self.identity(), sha256_digest(&submission_bytes)),
                vec![writer.reference(SUBMISSION_FILE)],
            );
            log("submission proven");
            writer.observe(
                1,
                ObservationStatus::Accepted,
                vec![inserted.clone(), submission.clone()],
                Vec::new(),
                Some(self.identity()),
                None,
            )?;
            return Ok(Some((inserted, submission)));
        };
        // Not proven: raised to the Leader, never resent. The paste's transport proof stays.
        log(&format!("submission unconfirmed: {why}"));
        if self.ours {
            self.stop("unconfirmed");
        }
        let mut unproven = writer.segment(
            1,
            ProofKind::ProcessBound,
            (&inserted.output_identity, &inserted.output_digest),
            (&self.identity(), sha256_digest(&submission_bytes)),
            vec![writer.reference(SUBMISSION_FILE)],
        );
        unproven.acknowledged = false;
        unproven.failure_code = Some("submission_unconfirmed".to_owned());
        writer.observe(
            1,
            ObservationStatus::Blocked,
            vec![inserted, unproven],
            Vec::new(),
            Some(self.identity()),
            Some(format!("submission_unconfirmed:{why}")),
        )?;
        Ok(None)
    }

    /// Writes the transport-only proof of the paste (the steps up to the readback) and returns
    /// its segment; unacknowledged when the readback did not see the prompt.
    fn inserted(
        &self,
        writer: &Writer<'_>,
        proof: &Proof,
    ) -> Result<ProvenanceSegment, ProcessError> {
        let seen = proof
            .steps
            .iter()
            .position(|step| step.what.starts_with("dispatch_inserted"));
        let steps = match seen {
            Some(index) => proof.steps[..=index].to_vec(),
            None => proof.steps.clone(),
        };
        let record = InsertedProof {
            schema_version: InsertedProof::SCHEMA.to_owned(),
            submission_id: writer.request.request_id.clone(),
            pane_id: self.found.pane_id.clone(),
            prompt_digest: proof.prompt.clone(),
            steps,
        };
        let bytes = record
            .canonical()
            .map_err(|error| invalid(&writer.dir.join(INSERTED_FILE), error.to_string()))?;
        writer.write_once(INSERTED_FILE, &bytes)?;
        let mut segment = writer.segment(
            0,
            ProofKind::TransportOnly,
            (&writer.request.request_id, &writer.request.payload_digest),
            (
                &format!("dispatch_inserted:{}", self.found.pane_id),
                sha256_digest(&bytes),
            ),
            vec![writer.reference(INSERTED_FILE)],
        );
        if seen.is_none() {
            segment.acknowledged = false;
            segment.failure_code = Some("not_inserted".to_owned());
        }
        Ok(segment)
    }

    /// Watches the agent until the attempt ends.
    fn watch(
        &mut self,
        writer: &Writer<'_>,
        inserted: &ProvenanceSegment,
        submission: &ProvenanceSegment,
    ) -> Result<End, ProcessError> {
        let deadline = self.started + Duration::from_millis(self.spec.timeout_ms);
        let mut debouncer = Debouncer::new(self.profile.idle_debounce_ms);
        let mut shown: Option<(AgentState, String, Option<String>, String)> = None;
        let mut since = now();
        let mut reported = AgentState::Starting;
        let mut noted: Option<String> = None;
        let mut sequence = 1;
        let mut tick: u64 = 0;
        loop {
            tick = tick.wrapping_add(1);
            // The control folder is read every few ticks: a cancel or an interrupt waits at
            // most that long, and a quiet tick costs one `stat`.
            let look = tick.is_multiple_of(CONTROL_EVERY);
            if let Some(reason) = self.control.cancel().filter(|_| look) {
                log(&format!("cancel requested ({reason})"));
                self.stop("cancel");
                return Ok(self.end(ObservationStatus::Cancelled, &format!("cancelled:{reason}")));
            }
            if Instant::now() >= deadline {
                log("timeout: stopping the agent");
                self.stop("timeout");
                return Ok(self.end(ObservationStatus::Blocked, "timeout"));
            }
            if look {
                self.take_requests(writer.dir);
            }
            let Some(sample) = self.sample(look) else {
                log("the agent's pane is gone");
                return Ok(self.end(ObservationStatus::Blocked, "agent_exited"));
            };
            // The channel's state while it speaks, else the debounced screen's; each named.
            let (state, source_key) = self.believe(
                &ScreenReading {
                    state: debouncer.sample(sample.read.state, self.elapsed_ms()),
                    rule: sample.read.rule.as_ref().map(|(name, _)| name.clone()),
                },
                shown.as_ref().map(|shown| shown.3.as_str()),
            );
            if state != reported {
                since = now();
                reported = state;
                if state != AgentState::Idle {
                    noted = None;
                }
            }
            if state == AgentState::Exited {
                return Ok(self.end(ObservationStatus::Blocked, "agent_exited"));
            }
            // The submission proof saw the agent leave idle, so idle now is idle after working.
            if state == AgentState::Idle {
                let (evidence, missing) = self.evidence();
                if missing.is_empty() {
                    return Ok(End {
                        status: ObservationStatus::Completed,
                        reason: None,
                        evidence,
                    });
                }
                let note = format!("runtime idle, evidence missing: {}", missing.join(", "));
                if noted.as_deref() != Some(note.as_str()) {
                    log(&note);
                    sequence += 1;
                    writer.observe(
                        sequence,
                        ObservationStatus::Waiting,
                        vec![inserted.clone(), submission.clone()],
                        Vec::new(),
                        Some(self.identity()),
                        Some(format!(
                            "runtime_idle_evidence_missing:{}",
                            missing.join(",")
                        )),
                    )?;
                    noted = Some(note);
                }
            }
            // The screen (its digest) decides the rule, so this is all that can change.
            let key = (state, sample.digest.clone(), noted.clone(), source_key);
            if shown.as_ref() != Some(&key) {
                let (rule, line) = sample
                    .read
                    .rule
                    .as_ref()
                    .map_or((None, None), |(name, line)| {
                        (Some(name.clone()), Some(*line as u64))
                    });
                write_state(
                    writer,
                    &StateRecord {
                        schema_version: StateRecord::SCHEMA.to_owned(),
                        state: state.name().to_owned(),
                        rule,
                        line,
                        since: since.clone(),
                        sampled_at: now(),
                        screen_digest: sample.digest.clone(),
                        note: noted.clone(),
                        tail: sample.tail.clone(),
                        source: self.source.clone(),
                    },
                );
                shown = Some(key);
            }
            std::thread::sleep(SAMPLE);
        }
    }

    /// The state to believe ([`super::channel`]: the channel's while it speaks, else the
    /// debounced `screen`'s) and the key of its source. The screen's label counts the
    /// channel's silence, so the key leaves that out and the label is kept only when the key
    /// differs from the one `shown` (the first label says when the screen took over).
    fn believe(&mut self, screen: &ScreenReading, shown: Option<&str>) -> (AgentState, String) {
        let viewed = match &mut self.channel {
            Some(channel) => channel.view(screen, self.profile.channel_silence_ms),
            None => super::channel::screen_only(screen),
        };
        let key = match &viewed.source {
            Source::Channel { .. } => viewed.source.label(),
            Source::Screen {
                rule,
                channel_silent_ms,
            } => format!("screen {rule:?} {}", channel_silent_ms.is_some()),
        };
        if shown != Some(key.as_str()) {
            self.source = Some(viewed.source.label());
        }
        (viewed.state, key)
    }

    /// An end that is not completion, with the expected evidence as it is now.
    fn end(&self, status: ObservationStatus, reason: &str) -> End {
        End {
            status,
            reason: Some(reason.to_owned()),
            evidence: self.evidence().0,
        }
    }

    /// The expected evidence as it is now, and the files missing.
    fn evidence(&self) -> (Vec<EvidenceRecord>, Vec<String>) {
        let cwd = Path::new(&self.spec.cwd);
        let mut missing = Vec::new();
        let records = self
            .spec
            .expected_evidence
            .iter()
            .map(|relative| {
                let bytes = files::read_beneath(cwd, relative);
                if bytes.is_none() {
                    missing.push(relative.clone());
                }
                EvidenceRecord {
                    path: relative.clone(),
                    digest: bytes.as_deref().map(sha256_digest),
                    bytes: bytes.map(|bytes| bytes.len() as u64),
                }
            })
            .collect();
        (records, missing)
    }

    /// Carries out the interrupts, then the Leader messages, asked since the last look.
    fn take_requests(&mut self, dir: &Path) {
        for _ in 0..self.control.new_interrupts() {
            self.interrupt();
        }
        for name in self.control.new_requests(MESSAGE_PREFIX) {
            self.message(dir, &name);
        }
    }

    /// Hands the Leader message `control/<name>` to the agent by the prompt's paste-and-prove
    /// path ([`submit::submit`]) and writes how it went to `proofs/<name>`. Never retried: a
    /// refusal typed nothing, an unconfirmed delivery is shown as such.
    fn message(&self, dir: &Path, name: &str) {
        let path = dir.join(CONTROL_DIR).join(name);
        let request = match std::fs::read(&path) {
            Ok(bytes) => MessageRequest::decode(&bytes).map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        let request = match request {
            Ok(request) => request,
            Err(error) => {
                log(&format!("{name}: not delivered: {error}"));
                return;
            }
        };
        let pane = self.server.pane(&self.found.pane_id);
        let (steps, why) = match submit::submit(&pane, &self.profile, &request.text, dir, PATIENCE)
        {
            Ok(Submission::Proven(proof)) => (proof.steps, None),
            Ok(Submission::Unconfirmed { proof, why }) => (proof.steps, Some(why)),
            Err(error) => (Vec::new(), Some(format!("refused:{error}"))),
        };
        log(&format!(
            "{name}: {}",
            why.as_deref().unwrap_or("delivered (proven)")
        ));
        let proof = MessageProof {
            schema_version: MessageProof::SCHEMA.to_owned(),
            message_id: name.to_owned(),
            text_digest: sha256_digest(request.text.as_bytes()),
            proven: why.is_none(),
            why,
            steps,
            at: now(),
        };
        let target = dir.join(PROOFS_DIR).join(name);
        let written = proof
            .canonical()
            .map_err(|error| error.to_string())
            .and_then(|bytes| {
                files::write_new(&target, &bytes).map_err(|error| error.to_string())?;
                Ok(bytes)
            });
        match written {
            Ok(bytes) => self.record_delivery(name, &proof, &bytes),
            Err(error) => log(&format!("{}: {error}", target.display())),
        }
    }

    /// Appends the delivery record of the Leader's message `name` to the task's operator-action
    /// journal: `delivered` when proven, `unconfirmed` when something was typed without proof,
    /// `failed` when refused with nothing typed; the proof is the proof file and its digest. A
    /// failure is logged (the proof file stands).
    fn record_delivery(&self, name: &str, proof: &MessageProof, bytes: &[u8]) {
        use valp_store::actions::{ActionJournal, ActionKind, ActionRecord, Delivery, Outcome};
        let env = |key: &str| self.spec.env.get(key).cloned().unwrap_or_default();
        let action_id = name.trim_end_matches(".json");
        let outcome = match (&proof.why, proof.steps.is_empty()) {
            (None, _) => Outcome::Delivered,
            (Some(_), true) => Outcome::Failed,
            (Some(_), false) => Outcome::Unconfirmed,
        };
        let appended = valp_store::ControlRoot::open(
            Path::new(&env("VALP_CONTROL_ROOT")),
            std::sync::Arc::new(valp_store::io::OsStorage),
        )
        .and_then(|root| {
            ActionJournal::of_task(&root, &env("VALP_TASK_ID"), valp_store::Access::Write)
        })
        .and_then(|mut journal| {
            let Some(asked) = journal.get(action_id).cloned() else {
                return Err(valp_store::StoreError::Invalid(format!(
                    "no recorded action {action_id}"
                )));
            };
            let proof_ref = format!(
                "{}/{PROOFS_DIR}/{name}",
                super::attempt_ref(&env("VALP_ATTEMPT_ID"))
            );
            journal.append(&ActionRecord {
                action_id: format!("{action_id}/delivery"),
                kind: ActionKind::Delivery,
                principal_id: format!("adapter:{ADAPTER_ID}"),
                summary: proof
                    .why
                    .clone()
                    .unwrap_or_else(|| "submitted, input cleared".to_owned())
                    .chars()
                    .filter(|ch| !ch.is_control())
                    .take(valp_store::actions::MAX_SUMMARY_CHARS)
                    .collect(),
                allow: None,
                delivery: Some(Delivery {
                    action_id: action_id.to_owned(),
                    adapter: ADAPTER_ID.to_owned(),
                    outcome,
                    proof: Some((proof_ref, sha256_digest(bytes))),
                }),
                ..asked
            })
        });
        if let Err(error) = appended {
            log(&format!("{name}: delivery not recorded: {error}"));
        }
    }

    /// Presses the profile's interrupt keys and watches the agent return to its prompt.
    fn interrupt(&mut self) {
        self.interrupt_as("interrupt");
    }

    /// [`Self::interrupt`], recorded as the action `action`.
    fn interrupt_as(&mut self, action: &str) {
        let before = self
            .last
            .as_ref()
            .map(|last| last.digest.clone())
            .unwrap_or_default();
        let names = self.profile.interrupt_keys.clone();
        let keys: Vec<&str> = names.iter().map(String::as_str).collect();
        let pressed = self.server.pane(&self.found.pane_id).press(&keys);
        let deadline = Instant::now() + INTERRUPT_PATIENCE;
        let mut observed = AgentState::Unknown;
        // Confirmed once the agent is back at its prompt (or gone): a screen still showing the
        // turn or the question is the interrupt not landed yet.
        while pressed.is_ok() && Instant::now() < deadline {
            match self.sample(true) {
                Some(sample) if sample.read.state == AgentState::Idle => {
                    observed = AgentState::Idle;
                    break;
                }
                Some(_) => {}
                None => {
                    observed = AgentState::Exited;
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let confirmed = pressed.is_ok() && observed != AgentState::Unknown;
        log(&format!(
            "{action} ({}): {}",
            keys.join(" "),
            if confirmed {
                observed.name()
            } else {
                "not confirmed"
            }
        ));
        self.actions.push(Action {
            action: action.to_owned(),
            what: keys.join(" "),
            before,
            observed: observed.name().to_owned(),
            confirmed,
            at_ms: self.elapsed_ms(),
        });
    }

    /// Waits up to the grace period for the pane to be gone.
    fn gone_within(&self, grace: Duration) -> bool {
        let deadline = Instant::now() + grace;
        loop {
            if matches!(self.server.find(&self.found.pane_id), Ok(None)) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the agent: C-c, the profile's exit keys, then SIGKILL to the pane's process
    /// group; each step is recorded with what was observed after it. A pane the plan targeted
    /// is the Leader's agent: it only gets the interrupt keys (the turn stops, the agent stays).
    fn stop(&mut self, why: &str) {
        if !self.ours {
            log(&format!(
                "{why}: interrupting the targeted agent; valp never stops or kills it"
            ));
            self.interrupt_as(why);
            return;
        }
        let grace = Duration::from_millis(self.spec.grace_ms);
        let exit: Vec<String> = self.profile.exit_keys.clone();
        let steps: [(&str, Vec<&str>); 2] = [
            ("C-c", vec!["C-c"]),
            ("exit keys", exit.iter().map(String::as_str).collect()),
        ];
        for (name, keys) in steps {
            let before = self
                .last
                .as_ref()
                .map(|last| last.digest.clone())
                .unwrap_or_default();
            let pressed = self.server.pane(&self.found.pane_id).press(&keys);
            let gone = pressed.is_ok() && self.gone_within(grace);
            self.record_stop(why, &format!("{name}: {}", keys.join(" ")), before, gone);
            if gone {
                return;
            }
        }
        let before = self
            .last
            .as_ref()
            .map(|last| last.digest.clone())
            .unwrap_or_default();
        os::signal_group(self.found.pane_pid, Signal::Kill);
        let gone = self.gone_within(grace.max(Duration::from_secs(2)));
        self.record_stop(why, "SIGKILL to the pane's process group", before, gone);
    }

    fn record_stop(&mut self, why: &str, what: &str, before: String, gone: bool) {
        log(&format!(
            "{why}: {what}: {}",
            if gone { "gone" } else { "still there" }
        ));
        self.actions.push(Action {
            action: why.to_owned(),
            what: what.to_owned(),
            before,
            observed: if gone { "exited" } else { "running" }.to_owned(),
            confirmed: gone,
            at_ms: self.elapsed_ms(),
        });
    }

    /// Closes the window valp opened (never a targeted pane) and drops its output pipe's file
    /// (raw screen output is never kept).
    fn close(&self) {
        if self.ours
            && let Err(error) = self.server.close(&self.found.pane_id)
        {
            log(&format!("closing the agent's window: {error}"));
        }
        if let Some(file) = &self.output {
            let _ = std::fs::remove_file(file);
        }
    }

    /// Writes the completion proof and the final observation.
    fn finish(
        &mut self,
        writer: &Writer<'_>,
        segments: &[ProvenanceSegment; 2],
        end: End,
    ) -> Result<(), ProcessError> {
        let (state, rule, screen_digest, screen_tail) = match &self.last {
            Some(last) => (
                last.read.state.name().to_owned(),
                last.read.rule.as_ref().map(|(name, _)| name.clone()),
                last.digest.clone(),
                last.tail.clone(),
            ),
            None => ("unknown".to_owned(), None, sha256_digest(b""), Vec::new()),
        };
        let found: Vec<String> = end
            .evidence
            .iter()
            .filter(|record| record.digest.is_some())
            .map(|record| record.path.clone())
            .collect();
        let proof = CompletionProof {
            schema_version: CompletionProof::SCHEMA.to_owned(),
            submission_id: writer.request.request_id.clone(),
            runtime_identity: self.identity(),
            status: end.status.as_str().to_owned(),
            reason: end.reason.clone(),
            state,
            rule,
            screen_digest,
            screen_tail,
            expected_evidence: end.evidence,
            source: self.source.clone(),
            actions: std::mem::take(&mut self.actions),
            completed_at: now(),
        };
        let bytes = proof
            .canonical()
            .map_err(|error| invalid(&writer.dir.join(COMPLETION_FILE), error.to_string()))?;
        writer.write_once(COMPLETION_FILE, &bytes)?;
        let previous = &segments[1];
        let content = writer.segment(
            2,
            ProofKind::ContentBound,
            (&previous.output_identity, &previous.output_digest),
            (
                &format!("output:{}", writer.request.request_id),
                sha256_digest(&bytes),
            ),
            vec![writer.reference(COMPLETION_FILE)],
        );
        let sequence = next_sequence(writer.dir)?;
        log(&format!(
            "finished: {}{}",
            end.status.as_str(),
            end.reason
                .as_deref()
                .map(|reason| format!(" ({reason})"))
                .unwrap_or_default()
        ));
        writer.observe(
            sequence,
            end.status,
            vec![segments[0].clone(), segments[1].clone(), content],
            found,
            Some(self.identity()),
            end.reason,
        )
    }
}

/// The attempt folder (beside `dir`) whose unconfirmed submission went to `pane_id` on
/// `socket`, if any.
fn unconfirmed_before(dir: &Path, socket: &str, pane_id: &str) -> Option<String> {
    let attempts = dir.parent()?;
    std::fs::read_dir(attempts)
        .ok()?
        .flatten()
        .filter(|entry| entry.path() != dir)
        .find_map(|entry| {
            let proof = super::read_record::<SubmissionProof>(&entry.path(), SUBMISSION_FILE);
            proof
                .ok()
                .flatten()
                .filter(|proof| !proof.proven && proof.socket == socket && proof.pane_id == pane_id)
                .map(|proof| proof.attempt_id)
        })
}

/// Keeps the screen of `record` as a capture of the attempt ([`super::capture`]) when the
/// agent turns blocked (the `state.json` it replaces was not); a failure is logged (a capture is
/// the Leader's context, not the attempt's record).
fn keep_capture(dir: &Path, record: &StateRecord) {
    let before = super::read_record::<StateRecord>(dir, STATE_FILE)
        .ok()
        .flatten();
    if record.state != "blocked" || before.is_some_and(|before| before.state == "blocked") {
        return;
    }
    let capture = super::capture::Capture {
        schema_version: super::capture::CAPTURE_SCHEMA.to_owned(),
        state: record.state.clone(),
        rule: record.rule.clone(),
        screen_digest: record.screen_digest.clone(),
        at: record.sampled_at.clone(),
        lines: record.tail.clone(),
    };
    match super::capture::keep(dir, capture) {
        Ok(Some(name)) => log(&format!("screen kept as captures/{name}")),
        Ok(None) => {}
        Err(error) => log(&format!("capture not kept: {error}")),
    }
}

/// Deletes the captures of every tmux attempt past their retention ([`super::capture::sweep`]).
fn sweep_captures(dir: &Path) {
    if let Some(tmux_root) = dir.parent().and_then(Path::parent) {
        let deleted = super::capture::sweep(
            tmux_root,
            std::time::SystemTime::now(),
            super::capture::RETENTION,
        );
        if deleted > 0 {
            log(&format!("{deleted} captures past their retention deleted"));
        }
    }
}

/// Replaces `state.json` with `record` (a failure is logged: the console's view, not the
/// attempt's record).
fn write_state(writer: &Writer<'_>, record: &StateRecord) {
    keep_capture(writer.dir, record);
    let path = writer.dir.join(STATE_FILE);
    match record.canonical() {
        Ok(bytes) => {
            if let Err(error) = files::write_replacing(&path, &bytes) {
                log(&format!("state.json: {error}"));
            }
        }
        Err(error) => log(&format!("state.json: {error}")),
    }
}

/// The next observation sequence of the folder.
fn next_sequence(dir: &Path) -> Result<u64, ProcessError> {
    let folder = dir.join(crate::adapter::process::OBSERVATIONS_DIR);
    let count = std::fs::read_dir(&folder)
        .map_err(io_error(&folder, "list"))?
        .flatten()
        .filter(|entry| !files::is_temporary(&entry.file_name().to_string_lossy()))
        .count();
    Ok(count as u64 + 1)
}
