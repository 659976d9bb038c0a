//! One task driven by the System: read the kernel's State, ask [`workflow::decide`] for the
//! next step, and carry it out: propose the event (with its evidence stored first), launch an
//! attempt on the process adapter, run the verification checks, or close the task through the
//! Done gate.
//!
//! What adapters report is read from their attempt folders (untrusted files): every
//! observation is checked against the ABI and against the attempt it claims to be about, and a
//! file that fails is listed as a rejection, never acted on. Evidence for an event is the
//! observation and proof files themselves, stored content-addressed, plus the expected
//! evidence files whose digests the content proof recorded (a file changed since then is an
//! integrity failure, not evidence).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, decode_canonical, sha256_digest};
use valp_kernel::done::{
    CLOSURE_EVIDENCE_PREFIX, ClosureCriterion, DoneClosure, DonePolicy, evaluate_bound,
};
use valp_kernel::{
    ClaimResult, Event, EventKind, Evidence, Identity, IdentityKind, StateBody, TaskStatus,
};
use valp_store::{Access, Appended, ControlRoot, Journal};

use super::workflow::{
    self, AttemptReport, AttemptSlots, EvidenceNeed, ExecutionPolicy, Proposal, Step, Wait,
};
use crate::adapter::abi::{AdapterObservation, AdapterRequest, ObservationStatus, Operation};
use crate::adapter::process::{
    self, CONTENT_BOUND_FILE, ContentProof, PROCESS_BOUND_FILE, REQUEST_FILE, RunSpec, STDERR_FILE,
    STDOUT_FILE, Supervisor, SupervisorState,
};
use crate::doctor::sanitize::display_text;
use crate::plan::{self, Plan};

/// Why the runtime could not take a step.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] valp_store::StoreError),
    /// The task's plan could not be read.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// The process adapter failed.
    #[error(transparent)]
    Adapter(#[from] process::ProcessError),
    /// The task is bound to a fenced epoch.
    #[error(
        "task {task} is bound to epoch {epoch}, which is fenced (active: {active}); hand it over \
         with `valp task handoff` first"
    )]
    Fenced {
        /// The task.
        task: String,
        /// Its epoch.
        epoch: i128,
        /// The active epoch.
        active: i128,
    },
    /// Something on disk is not what the ledger or a proof says it is.
    #[error("{0}")]
    Integrity(String),
}

/// What one step did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// An event was proposed.
    Proposed {
        /// Its kind.
        kind: EventKind,
        /// Why it was proposed.
        why: String,
        /// The kernel's answer: `None` when accepted, else the code and reason.
        refused: Option<(String, String)>,
    },
    /// An attempt (or a verification check) was handed to the process adapter.
    Launched {
        /// The attempt id.
        attempt_id: String,
    },
    /// Nothing to do now.
    Waiting(Wait),
}

/// The System driving one task.
pub struct Driver {
    root: ControlRoot,
    journal: Journal,
    plan: Plan,
    plan_evidence: Evidence,
    policy_evidence: Evidence,
    policy: DonePolicy,
    project: PathBuf,
    valp_binary: PathBuf,
    supervisors: Vec<Supervisor>,
    rejections: BTreeMap<PathBuf, String>,
}

/// A verification check: a plan verification command or a criterion's `verify` command.
struct Check {
    id: String,
    argv: Vec<String>,
    cwd: String,
    timeout_seconds: u32,
    criterion: Option<String>,
}

impl Driver {
    /// Opens the task's journal for writing and reads its plan. Commands run in `project`
    /// (the folder holding the control root).
    pub fn open(
        root: &ControlRoot,
        task_id: &str,
        valp_binary: PathBuf,
    ) -> Result<Self, RuntimeError> {
        let journal = root.open_task(task_id, Access::Write)?;
        let (plan, plan_evidence, policy_evidence) = plan::of_task(root, task_id)?;
        let policy_bytes = root.blobs().get(&policy_evidence.content_digest)?;
        let policy = decode_canonical(&policy_bytes)
            .ok()
            .and_then(|value| valp_kernel::done::decode_done_policy(&value).ok())
            .ok_or_else(|| {
                RuntimeError::Integrity(format!(
                    "the Done policy evidence {} of task {task_id} does not decode",
                    policy_evidence.evidence_id.value()
                ))
            })?;
        let project = root
            .layout()
            .root()
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        Ok(Self {
            root: root.clone(),
            journal,
            plan,
            plan_evidence,
            policy_evidence,
            policy,
            project,
            valp_binary,
            supervisors: Vec::new(),
            rejections: BTreeMap::new(),
        })
    }

    /// The task's current State (as last read).
    pub fn body(&self) -> &StateBody {
        self.journal.live().body()
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Adapter files that were not acted on, with why (sanitized).
    pub fn rejections(&self) -> &BTreeMap<PathBuf, String> {
        &self.rejections
    }

    /// The attempt folder of `attempt_id`.
    pub fn attempt_dir(&self, attempt_id: &str) -> PathBuf {
        self.root
            .layout()
            .root()
            .join(process::attempt_ref(attempt_id))
    }

    fn execution(&self) -> ExecutionPolicy {
        ExecutionPolicy {
            max_concurrency: usize::try_from(self.plan.execution.max_concurrency).unwrap_or(1),
            retry_budget: i128::from(self.plan.execution.retry_budget),
        }
    }

    /// Takes one step. `active_epoch` is the installation's; a task on another epoch is fenced.
    pub fn step(&mut self, active_epoch: i128) -> Result<Progress, RuntimeError> {
        self.supervisors
            .retain_mut(|supervisor| matches!(supervisor.try_wait(), Ok(None)));
        self.journal.refresh()?;
        let body = self.journal.live().body().clone();
        if body.leader_epoch != active_epoch {
            return Err(RuntimeError::Fenced {
                task: body.task_id.value().to_owned(),
                epoch: body.leader_epoch,
                active: active_epoch,
            });
        }
        let reports = self.reports(&body);
        match workflow::decide(&body, &self.execution(), &reports, false) {
            Step::Propose(proposal) => self.propose(&body, &proposal),
            Step::Launch(slots) => self.launch(&body, &slots),
            Step::Verify => self.verify(&body),
            Step::Record => self.record(&body),
            Step::Wait(wait) => Ok(Progress::Waiting(wait)),
        }
    }

    /// Steps until the task waits; returns every step taken, the last being the wait.
    pub fn run_until_idle(&mut self, active_epoch: i128) -> Result<Vec<Progress>, RuntimeError> {
        let mut steps = Vec::new();
        loop {
            let progress = self.step(active_epoch)?;
            let stop = match &progress {
                Progress::Waiting(_) => true,
                Progress::Proposed { refused, .. } => refused.is_some(),
                Progress::Launched { .. } => false,
            };
            steps.push(progress);
            if stop {
                return Ok(steps);
            }
        }
    }

    /// What the attempt folders say about every current attempt.
    fn reports(&mut self, body: &StateBody) -> BTreeMap<String, AttemptReport> {
        let mut reports = BTreeMap::new();
        for item in &body.work_items {
            let Some(attempt) = &item.current_attempt else {
                continue;
            };
            let id = attempt.attempt_id.value().to_owned();
            let dir = self.attempt_dir(&id);
            let state = state_of(&dir);
            let observations = self.observations(
                body,
                &dir,
                &AttemptSlots {
                    work_item_id: item.work_item_id.value().to_owned(),
                    attempt_id: id.clone(),
                    dispatch_id: attempt.dispatch_id.value().to_owned(),
                    generation: attempt.dispatch_generation,
                },
            );
            let last = observations
                .iter()
                .map(|observation| observation.status)
                .rfind(|status| {
                    !matches!(
                        status,
                        ObservationStatus::Accepted | ObservationStatus::Waiting
                    )
                });
            reports.insert(
                id,
                AttemptReport {
                    launched: !matches!(state, SupervisorState::NotLaunched),
                    accepted: observations
                        .iter()
                        .any(|observation| observation.status == ObservationStatus::Accepted),
                    last,
                    supervisor_lost: matches!(
                        state,
                        SupervisorState::Dead { .. } | SupervisorState::Unreadable(_)
                    ),
                },
            );
        }
        reports
    }

    /// The folder's observations that are about exactly this attempt of this task; the others
    /// are recorded as rejections.
    fn observations(
        &mut self,
        body: &StateBody,
        dir: &Path,
        slots: &AttemptSlots,
    ) -> Vec<AdapterObservation> {
        let read = match process::read_observations(dir) {
            Ok(read) => read,
            Err(process::ProcessError::Io { .. }) if !dir.exists() => return Vec::new(),
            Err(error) => {
                self.rejections
                    .insert(dir.to_owned(), display_text(&error.to_string()));
                return Vec::new();
            }
        };
        read.into_iter()
            .filter(|observation| {
                let request = &observation.request;
                let ours = request.installation_id == body.installation_id.value()
                    && i128::from(request.leader_epoch) == body.leader_epoch
                    && request.task_id == body.task_id.value()
                    && request.work_item_id == slots.work_item_id
                    && request.attempt_id == slots.attempt_id
                    && request.dispatch_id == slots.dispatch_id
                    && i128::from(request.dispatch_generation) == slots.generation;
                if !ours {
                    self.rejections.insert(
                        dir.join(process::observation_file(observation.sequence)),
                        "foreign: the observation names another attempt".to_owned(),
                    );
                }
                ours
            })
            .collect()
    }

    fn store(&self, prefix: &str, bytes: &[u8]) -> Result<Evidence, RuntimeError> {
        let stored = self.root.blobs().put(bytes)?;
        Ok(Evidence {
            evidence_id: identity(
                IdentityKind::Evidence,
                &format!("{prefix}-{}", &stored.digest[7..23]),
            )?,
            content_digest: stored.digest,
        })
    }

    fn read(path: &Path) -> Result<Vec<u8>, RuntimeError> {
        std::fs::read(path).map_err(|error| {
            RuntimeError::Integrity(format!("cannot read {}: {error}", path.display()))
        })
    }

    /// Stores what `need` names for the attempt in `dir`.
    fn gather(
        &self,
        need: &EvidenceNeed,
        dir: &Path,
        cwd: &Path,
    ) -> Result<Vec<Evidence>, RuntimeError> {
        let mut evidence = Vec::new();
        match need {
            EvidenceNeed::Nothing => {}
            EvidenceNeed::Request => {
                evidence.push(self.store("request", &Self::read(&dir.join(REQUEST_FILE))?)?);
            }
            EvidenceNeed::Accepted | EvidenceNeed::Final => {
                let observations = process::read_observations(dir)?;
                let wanted = |observation: &&AdapterObservation| match need {
                    EvidenceNeed::Accepted => observation.status == ObservationStatus::Accepted,
                    _ => true,
                };
                if let Some(observation) = observations.iter().rev().find(wanted) {
                    evidence.push(self.store("observation", &observation.canonical_bytes())?);
                }
                let proof = dir.join(PROCESS_BOUND_FILE);
                if proof.is_file() {
                    evidence.push(self.store("proof", &Self::read(&proof)?)?);
                }
                if *need == EvidenceNeed::Final {
                    evidence.extend(self.final_evidence(dir, cwd)?);
                }
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        evidence.retain(|item| seen.insert(item.evidence_id.clone()));
        Ok(evidence)
    }

    /// The content proof, the captured output and every expected evidence file the proof
    /// found, checked against the digests it recorded.
    fn final_evidence(&self, dir: &Path, cwd: &Path) -> Result<Vec<Evidence>, RuntimeError> {
        let path = dir.join(CONTENT_BOUND_FILE);
        if !path.is_file() {
            return Ok(Vec::new());
        }
        let bytes = Self::read(&path)?;
        let proof = ContentProof::decode(&bytes)
            .map_err(|error| RuntimeError::Integrity(format!("{}: {error}", path.display())))?;
        let mut evidence = vec![self.store("proof", &bytes)?];
        for name in [STDOUT_FILE, STDERR_FILE] {
            let output = dir.join(name);
            if output.is_file() {
                evidence.push(self.store("output", &Self::read(&output)?)?);
            }
        }
        for file in &proof.expected_evidence {
            let Some(recorded) = &file.digest else {
                continue;
            };
            let path = cwd.join(&file.path);
            let bytes = Self::read(&path)?;
            if &sha256_digest(&bytes) != recorded {
                return Err(RuntimeError::Integrity(format!(
                    "{} changed after the run that produced it (the content proof recorded {})",
                    path.display(),
                    recorded
                )));
            }
            evidence.push(self.store("artifact", &bytes)?);
        }
        Ok(evidence)
    }

    fn item_cwd(&self, work_item_id: &str) -> PathBuf {
        self.plan
            .work_items
            .iter()
            .find(|item| item.id == work_item_id)
            .map_or_else(
                || self.project.clone(),
                |item| self.project.join(&item.run.cwd),
            )
    }

    fn propose(&mut self, body: &StateBody, proposal: &Proposal) -> Result<Progress, RuntimeError> {
        let evidence = match &proposal.attempt {
            Some(slots) => self.gather(
                &proposal.evidence,
                &self.attempt_dir(&slots.attempt_id),
                &self.item_cwd(&slots.work_item_id),
            )?,
            None => Vec::new(),
        };
        let mut event = event(body, proposal.kind)?;
        if let Some(item) = &proposal.work_item_id {
            event.work_item_id = Some(identity(IdentityKind::WorkItem, item)?);
        }
        let attempt_scoped = proposal.kind.is_attempt_scoped();
        if let (true, Some(slots)) = (attempt_scoped, &proposal.attempt) {
            event.attempt_id = Some(identity(IdentityKind::Attempt, &slots.attempt_id)?);
            event.dispatch_id = Some(identity(IdentityKind::Dispatch, &slots.dispatch_id)?);
            event.dispatch_generation = Some(slots.generation);
        }
        self.append(&event, &evidence, proposal.why.clone())
    }

    fn append(
        &mut self,
        event: &Event,
        evidence: &[Evidence],
        why: String,
    ) -> Result<Progress, RuntimeError> {
        let kind = event.kind.known().unwrap_or(EventKind::TaskFailed);
        let refused = match self.journal.append(event, evidence)? {
            Appended::Accepted { .. } | Appended::Duplicate { .. } => None,
            Appended::Rejected { error_code, reason } => {
                Some((error_code.as_str().to_owned(), reason))
            }
        };
        Ok(Progress::Proposed { kind, why, refused })
    }

    /// Writes the attempt's request and run specification and starts its supervisor.
    fn launch(&mut self, body: &StateBody, slots: &AttemptSlots) -> Result<Progress, RuntimeError> {
        let item = self
            .plan
            .work_items
            .iter()
            .find(|item| item.id == slots.work_item_id)
            .ok_or_else(|| {
                RuntimeError::Integrity(format!(
                    "work item {} is not in the task's plan",
                    slots.work_item_id
                ))
            })?;
        let (argv, cwd, timeout, env, expected) = (
            item.run.argv.clone(),
            item.run.cwd.clone(),
            item.run.timeout_seconds,
            item.run.env.clone(),
            item.expected_evidence.clone(),
        );
        self.start(body, slots, argv, &cwd, timeout, env, expected)
    }

    #[allow(clippy::too_many_arguments)] // one attempt's whole specification
    fn start(
        &mut self,
        body: &StateBody,
        slots: &AttemptSlots,
        argv: Vec<String>,
        cwd: &str,
        timeout_seconds: u32,
        env: BTreeMap<String, String>,
        expected: Vec<String>,
    ) -> Result<Progress, RuntimeError> {
        let folder = self.project.join(cwd);
        std::fs::create_dir_all(&folder).map_err(|error| {
            RuntimeError::Integrity(format!("cannot create {}: {error}", folder.display()))
        })?;
        let folder = std::fs::canonicalize(&folder).map_err(|error| {
            RuntimeError::Integrity(format!("cannot open {}: {error}", folder.display()))
        })?;
        let mut spec = RunSpec::new(
            argv,
            folder.display().to_string(),
            u64::from(timeout_seconds) * 1000,
        );
        spec.env = env;
        spec.expected_evidence.clone_from(&expected);
        let request = AdapterRequest::new(
            Operation::Submit,
            body.installation_id.value(),
            i64::try_from(body.leader_epoch).unwrap_or(i64::MAX),
            body.task_id.value(),
            &slots.work_item_id,
            &slots.attempt_id,
            &slots.dispatch_id,
            i64::try_from(slots.generation).unwrap_or(i64::MAX),
            &spec.digest(),
            expected,
        );
        let process_root = self.root.layout().root().join("runtime/process");
        let dir = process::prepare(&process_root, &request, &spec)?;
        if matches!(
            process::supervisor_state(&dir),
            SupervisorState::NotLaunched
        ) {
            self.supervisors
                .push(process::launch(&dir, &self.valp_binary)?);
        }
        Ok(Progress::Launched {
            attempt_id: slots.attempt_id.clone(),
        })
    }

    /// The verification checks: the plan's verification commands, then every criterion with
    /// a `verify` command.
    fn checks(&self) -> Vec<Check> {
        let commands = self.plan.verification.iter().map(|check| Check {
            id: format!("verification-{}", check.id),
            argv: check.argv.clone(),
            cwd: check.cwd.clone(),
            timeout_seconds: check.timeout_seconds,
            criterion: None,
        });
        let criteria = self.plan.criteria.iter().filter_map(|criterion| {
            criterion.verify.as_ref().map(|argv| Check {
                id: format!("criterion-{}", criterion.id),
                argv: argv.clone(),
                cwd: ".".to_owned(),
                timeout_seconds: 300,
                criterion: Some(criterion.id.clone()),
            })
        });
        commands.chain(criteria).collect()
    }

    /// The revision at which the task last entered `verifying` (the checks of that round are
    /// named after it, so a later round runs them again).
    fn verifying_since(&self) -> i128 {
        self.journal
            .live()
            .history()
            .iter()
            .rev()
            .find_map(|accepted| {
                accepted
                    .event_id
                    .value()
                    .strip_prefix("work_completed-r")
                    .and_then(|revision| revision.parse::<i128>().ok())
            })
            .map_or(0, |revision| revision + 1)
    }

    fn check_slots(&self, body: &StateBody, check: &Check) -> AttemptSlots {
        let round = self.verifying_since();
        AttemptSlots {
            work_item_id: check.id.clone(),
            attempt_id: format!("{}:{}:r{round}", body.task_id.value(), check.id),
            dispatch_id: format!("{}:{}:r{round}", body.task_id.value(), check.id),
            generation: 1,
        }
    }

    /// `verifying`: start the checks that have not run, and once every check has finished,
    /// propose `verification_passed` (all completed) or `verification_failed`.
    fn verify(&mut self, body: &StateBody) -> Result<Progress, RuntimeError> {
        let checks = self.checks();
        let mut finished = Vec::new();
        for check in &checks {
            let slots = self.check_slots(body, check);
            let dir = self.attempt_dir(&slots.attempt_id);
            match state_of(&dir) {
                SupervisorState::NotLaunched => {
                    return self.start(
                        body,
                        &slots,
                        check.argv.clone(),
                        &check.cwd,
                        check.timeout_seconds,
                        BTreeMap::new(),
                        Vec::new(),
                    );
                }
                SupervisorState::Finished { status } => finished.push((slots, dir, status)),
                SupervisorState::Dead { .. } | SupervisorState::Unreadable(_) => {
                    finished.push((slots, dir, ObservationStatus::Blocked));
                }
                SupervisorState::Running { .. } => {}
            }
        }
        if finished.len() < checks.len() {
            return Ok(Progress::Waiting(Wait::InFlight(
                checks.len() - finished.len(),
            )));
        }
        let mut evidence = Vec::new();
        for (_, dir, _) in &finished {
            evidence.extend(self.gather(&EvidenceNeed::Final, dir, &self.project)?);
        }
        let mut seen = std::collections::BTreeSet::new();
        evidence.retain(|item| seen.insert(item.evidence_id.clone()));
        let failed: Vec<&str> = finished
            .iter()
            .filter(|(_, _, status)| *status != ObservationStatus::Completed)
            .map(|(slots, _, _)| slots.work_item_id.as_str())
            .collect();
        let (kind, why) = if failed.is_empty() {
            (
                EventKind::VerificationPassed,
                if checks.is_empty() {
                    "the plan declares no verification commands".to_owned()
                } else {
                    format!("{} verification checks passed", checks.len())
                },
            )
        } else {
            (
                EventKind::VerificationFailed,
                format!("verification failed: {}", failed.join(", ")),
            )
        };
        let event = event(body, kind)?;
        self.append(&event, &evidence, why)
    }

    /// `recording`: build the Done closure from the verification round and the Leader's
    /// review, evaluate the gate, and propose `recording_completed` only when it passes.
    fn record(&mut self, body: &StateBody) -> Result<Progress, RuntimeError> {
        let checks = self.checks();
        let mut evidence = vec![self.policy_evidence.clone(), self.plan_evidence.clone()];
        let mut criteria = Vec::new();
        for criterion in &self.policy.criteria {
            let check = checks
                .iter()
                .find(|check| check.criterion.as_deref() == Some(&criterion.criterion_id));
            let (result, evidence_ids) = match check {
                Some(check) => {
                    let slots = self.check_slots(body, check);
                    let dir = self.attempt_dir(&slots.attempt_id);
                    let status = match state_of(&dir) {
                        SupervisorState::Finished { status } => status,
                        _ => ObservationStatus::Blocked,
                    };
                    let found = self.gather(&EvidenceNeed::Final, &dir, &self.project)?;
                    let ids = found
                        .iter()
                        .map(|item| item.evidence_id.value().to_owned())
                        .collect();
                    evidence.extend(found);
                    let result = if status == ObservationStatus::Completed {
                        ClaimResult::Pass
                    } else {
                        ClaimResult::Fail
                    };
                    (result, ids)
                }
                // No command checks it: the Leader's review attested it.
                None => (ClaimResult::Pass, Vec::new()),
            };
            criteria.push(ClosureCriterion {
                criterion_id: criterion.criterion_id.clone(),
                result,
                evidence_ids,
            });
        }
        let closure = DoneClosure {
            policy_digest: self.policy_evidence.content_digest.clone(),
            completion_claim: ClaimResult::Pass,
            criteria,
        };
        let closure_evidence = self.store(
            CLOSURE_EVIDENCE_PREFIX.trim_end_matches('-'),
            &closure.canonical_bytes(),
        )?;
        evidence.push(closure_evidence);
        let mut seen = std::collections::BTreeSet::new();
        evidence.retain(|item| seen.insert(item.evidence_id.clone()));
        let gate = evaluate_bound(body, &evidence, &self.policy, &closure);
        if !gate.passed {
            return Ok(Progress::Waiting(Wait::Leader(format!(
                "the Done gate refuses: {}",
                gate.reasons.join(", ")
            ))));
        }
        let why = if gate.notes.is_empty() {
            "the Done gate passes".to_owned()
        } else {
            format!("the Done gate passes ({})", gate.notes.join(", "))
        };
        let event = event(body, EventKind::RecordingCompleted)?;
        self.append(&event, &evidence, why)
    }

    /// Whether the task is finished.
    pub fn finished(&self) -> Option<TaskStatus> {
        self.body()
            .status
            .known()
            .filter(|status| status.is_terminal())
    }
}

/// The supervisor state of an attempt folder; a folder that was never prepared is
/// `NotLaunched` (not unreadable).
fn state_of(dir: &Path) -> SupervisorState {
    if dir.join(REQUEST_FILE).is_file() {
        process::supervisor_state(dir)
    } else {
        SupervisorState::NotLaunched
    }
}

fn identity(kind: IdentityKind, value: &str) -> Result<Identity, RuntimeError> {
    Identity::new(kind, value).map_err(|error| RuntimeError::Integrity(error.to_string()))
}

/// An event of `kind` at the task's current revision; its id names the kind and revision.
fn event(body: &StateBody, kind: EventKind) -> Result<Event, RuntimeError> {
    Ok(Event::new(
        identity(
            IdentityKind::Event,
            &format!("{}-r{}", kind.as_str(), body.revision),
        )?,
        body.installation_id.clone(),
        body.leader_epoch,
        body.task_id.clone(),
        kind,
        body.revision,
    ))
}
