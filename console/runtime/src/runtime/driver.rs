//! One task driven by the System: read the kernel's State, ask [`workflow::decide`] for the
//! next step, and carry it out: propose the event (with its evidence stored first), launch an
//! attempt on its adapter (the plan item's `process` or `external`), run the verification
//! checks (always on the process adapter), or close the task through the Done gate.
//!
//! What adapters report is read as untrusted files: every observation is checked against the
//! ABI and against the attempt it claims to be about, and a file that fails is listed as a
//! rejection, never acted on.
//!
//! - **Process** attempts report in their attempt folders. Evidence for an event is the
//!   observation and proof files themselves, stored content-addressed, plus the expected
//!   evidence files whose digests the content proof recorded (a file changed since then is an
//!   integrity failure, not evidence).
//! - **External** attempts ([`crate::adapter::external`]) report through the inbox, read
//!   incrementally and sorted out per attempt by
//!   [`Inbox::classify`](crate::adapter::external::Inbox::classify). They have no supervisor,
//!   so "supervisor lost" never applies to them. Evidence: `attempt_submitted` gets the
//!   request file, `attempt_running` the admitted `accepted` observation (canonical bytes), and
//!   the end of the attempt the final observation plus every expected evidence file of the
//!   item, read (through real folders only, below the item's `cwd`) and digested by the System
//!   when it proposes the event. That is weaker than the process adapter's content proof:
//!   nothing proves who wrote the files or that the tool's work produced them, only that they
//!   held these bytes when valp read them. A `completed` report while an expected file is
//!   missing is not taken as completion: the attempt fails like a process that exited 0
//!   without its evidence (`missing_expected_evidence`), and is retried within the budget.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, decode_canonical, sha256_digest};
use valp_kernel::dimension::{DimensionMeasures, GateResult, GateVerdict};
use valp_kernel::done::correction::CYCLE_EVIDENCE_PREFIX;
use valp_kernel::done::{
    CLOSURE_EVIDENCE_PREFIX, ClosureCriterion, DoneClosure, DonePolicy, dimension_gates,
};
use valp_kernel::{
    AttemptStatus, ClaimResult, Event, EventKind, Evidence, Identity, IdentityKind, StateBody,
    TaskStatus,
};
use valp_store::{Access, Appended, ControlRoot, Journal};

use super::workflow::{
    self, AttemptReport, AttemptSlots, EvidenceNeed, ExecutionPolicy, Proposal, Step, Wait,
};
use super::{effects, measures};
use crate::abi::{AdapterObservation, AdapterRequest, ObservationStatus, Operation};
use crate::adapter::external::{self, Inbox};
use crate::adapter::process::{
    self, CONTENT_BOUND_FILE, ContentProof, PROCESS_BOUND_FILE, REQUEST_FILE, RunSpec, STDERR_FILE,
    STDOUT_FILE, Supervisor, SupervisorState,
};
use crate::adapter::tmux;
use crate::evidence;
use crate::plan::{self, Adapter, Plan, PlanItem, TmuxPane};
use valp_view::sanitize::display_text;

/// Why the runtime could not take a step.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] valp_store::StoreError),
    /// The task's plan could not be read.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// An adapter's attempt folder could not be written or read.
    #[error(transparent)]
    Adapter(#[from] process::ProcessError),
    /// The task is bound to a fenced epoch.
    #[error("task {task} is bound to epoch {epoch}, which is fenced (active: {active}); {hint}")]
    Fenced {
        /// The task.
        task: String,
        /// Its epoch.
        epoch: i128,
        /// The active epoch.
        active: i128,
        /// What the Leader can do ([`super::fenced_hint`]).
        hint: String,
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
    /// An attempt (or a verification check) was handed to its adapter.
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
    /// Process attempt folders that failed the checks, by file.
    rejections: BTreeMap<String, String>,
    /// The inbox, read for the plan's external items (`None` when it has none).
    inbox: Option<Inbox>,
    /// Inbox observations naming a current external attempt that were not acted on, by
    /// location; recomputed on every step.
    inbox_rejections: BTreeMap<String, String>,
    /// Digests of the evidence the journal's attempt events carry (read at open and when
    /// another writer appended, extended on every accepted proposal): the inbox observations
    /// already acted on.
    recorded: std::collections::BTreeSet<String>,
    /// Whether the journal may hold `adapter_cancel:` obligations without an effect record:
    /// set at open, when another writer appended, and when one of our own proposals raised
    /// obligations; cleared by a successful [`Driver::reconcile_effects`]. Reconciling reads
    /// the whole journal, so it runs only when something could have changed.
    effects_due: bool,
    /// The journal length `correction-cycle.json` was last derived at (`None`: not yet).
    cycle_derived_at: Option<u64>,
    /// The correction cycle derived then (`None`: no correction signal).
    cycle: Option<crate::audit::derive::Cycle>,
    /// The fold it was derived by, carried forward: only new lines are read.
    cycle_fold: crate::audit::cycle_file::CycleFold,
    /// Why an external attempt's report counts as a failure, by attempt, when the report
    /// itself does not say (shown with the proposal).
    notes: BTreeMap<String, String>,
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
        let policy = decode_policy(root, &policy_evidence, task_id)?;
        let project = root
            .layout()
            .root()
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        let external = plan
            .work_items
            .iter()
            .any(|item| item.run.adapter == Adapter::External);
        // Only a plan with external items reads the inbox, and the journal's evidence once.
        let (inbox, recorded) = if external {
            let recorded = effects::recorded_evidence(root, task_id)
                .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
            (Some(Inbox::new(root.layout().root(), task_id)), recorded)
        } else {
            (None, std::collections::BTreeSet::new())
        };
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
            inbox,
            inbox_rejections: BTreeMap::new(),
            recorded,
            effects_due: true,
            cycle_derived_at: None,
            cycle: None,
            cycle_fold: crate::audit::cycle_file::CycleFold::default(),
            notes: BTreeMap::new(),
        })
    }

    /// The task's current State (as last read).
    pub fn body(&self) -> &StateBody {
        self.journal.live().body()
    }

    /// The task's journal (as last read), with its accepted-event history.
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Adapter files (or `*.jsonl` lines) that were not acted on, by location, with why
    /// (sanitized).
    pub fn rejections(&self) -> BTreeMap<String, String> {
        let mut all = self.rejections.clone();
        all.extend(
            self.inbox_rejections
                .iter()
                .map(|(location, reason)| (location.clone(), reason.clone())),
        );
        all
    }

    /// The attempt folder of `attempt_id`: under `runtime/external/` when it is the current
    /// attempt of an external item, else under `runtime/process/`.
    pub fn attempt_dir(&self, attempt_id: &str) -> PathBuf {
        let adapter = self
            .body()
            .work_items
            .iter()
            .find(|item| {
                item.current_attempt
                    .as_ref()
                    .is_some_and(|attempt| attempt.attempt_id.value() == attempt_id)
            })
            .map_or(Adapter::Process, |item| {
                self.adapter_of(item.work_item_id.value())
            });
        self.dir_of(adapter, attempt_id)
    }

    fn dir_of(&self, adapter: Adapter, attempt_id: &str) -> PathBuf {
        let relative = match adapter {
            // A headless agent is a process whose stream the wrapper reads.
            Adapter::Process | Adapter::AgentStream => process::attempt_ref(attempt_id),
            Adapter::External => external::attempt_ref(attempt_id),
            Adapter::Tmux => tmux::attempt_ref(attempt_id),
        };
        self.root.layout().root().join(relative)
    }

    /// The adapter of a plan work item (verification checks run on the process adapter).
    fn adapter_of(&self, work_item_id: &str) -> Adapter {
        self.plan
            .work_item(work_item_id)
            .map_or(Adapter::Process, |item| item.run.adapter)
    }

    fn plan_item(&self, work_item_id: &str) -> Result<&PlanItem, RuntimeError> {
        self.plan.work_item(work_item_id).ok_or_else(|| {
            RuntimeError::Integrity(format!(
                "work item {work_item_id} is not in the task's plan"
            ))
        })
    }

    /// The request of an external attempt, as the System writes it: the process adapter's
    /// record, with the work item's canonical JSON (as published) as the payload.
    fn external_request(
        &self,
        body: &StateBody,
        slots: &AttemptSlots,
    ) -> Result<AdapterRequest, RuntimeError> {
        let item = self.plan_item(&slots.work_item_id)?;
        Ok(submit_request(
            body,
            slots,
            &sha256_digest(&item.canonical_bytes()),
            item.expected_evidence.clone(),
        ))
    }

    /// What the inbox says about an external attempt.
    fn inbox_report(&self, request: &AdapterRequest) -> external::Classified {
        self.inbox
            .as_ref()
            .map(|inbox| inbox.classify(request, &self.recorded))
            .unwrap_or_default()
    }

    fn execution(&self) -> ExecutionPolicy {
        ExecutionPolicy::from(&self.plan.execution)
    }

    /// Takes one step. `active_epoch` is the installation's; a task on another epoch is fenced.
    pub fn step(&mut self, active_epoch: i128) -> Result<Progress, RuntimeError> {
        self.supervisors
            .retain_mut(|supervisor| matches!(supervisor.try_wait(), Ok(None)));
        let appended_elsewhere = self.journal.refresh()?;
        self.effects_due |= appended_elsewhere > 0;
        if appended_elsewhere > 0 && self.inbox.is_some() {
            // Another runner (the console, a second `valp run`) recorded evidence: read what
            // the journal now holds, so both sort the inbox the same way.
            self.recorded =
                effects::recorded_evidence(&self.root, self.journal.live().body().task_id.value())
                    .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        }
        self.maintain_correction_cycle()?;
        let body = self.journal.live().body().clone();
        if body.leader_epoch != active_epoch {
            return Err(RuntimeError::Fenced {
                task: body.task_id.value().to_owned(),
                epoch: body.leader_epoch,
                active: active_epoch,
                hint: super::fenced_hint(&self.root, body.task_id.value()),
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

    /// Re-derives the task's `correction-cycle.json` when the journal grew since the last time
    /// ([`crate::audit::cycle_file`], folding only the lines appended since): every step
    /// starts here, so the file follows whatever wrote the journal (this runner, the console,
    /// `valp retry`).
    fn maintain_correction_cycle(&mut self) -> Result<(), RuntimeError> {
        let length = self.journal.len();
        if self.cycle_derived_at == Some(length) {
            return Ok(());
        }
        let owners = self
            .plan
            .work_items
            .iter()
            .map(|item| (item.id.clone(), item.run.adapter.as_str().to_owned()))
            .collect();
        let task_id = self.journal.live().body().task_id.value().to_owned();
        self.cycle = crate::audit::cycle_file::maintain(
            self.journal.dir(),
            &task_id,
            &owners,
            &mut self.cycle_fold,
        )
        .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        self.cycle_derived_at = Some(length);
        Ok(())
    }

    /// Carries out the task's `adapter_cancel:` obligations that have no effect record yet
    /// ([`effects::reconcile`]) when the journal may hold new ones; otherwise does nothing.
    pub fn reconcile_effects(
        &mut self,
        patience: std::time::Duration,
    ) -> Result<Vec<effects::EffectRecord>, effects::EffectError> {
        self.effects_due |= self.journal.refresh()? > 0;
        if !self.effects_due {
            return Ok(Vec::new());
        }
        let records = effects::reconcile(
            &self.root,
            self.journal.live().body().task_id.value(),
            patience,
        )?;
        self.effects_due = false;
        Ok(records)
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

    /// What the attempt folders (and, for external attempts, the inbox) say about every
    /// current attempt.
    fn reports(&mut self, body: &StateBody) -> BTreeMap<String, AttemptReport> {
        let mut reports = BTreeMap::new();
        if let Some(inbox) = self.inbox.as_mut() {
            inbox.refresh();
        }
        self.inbox_rejections.clear();
        self.notes.clear();
        for item in &body.work_items {
            let Some(attempt) = &item.current_attempt else {
                continue;
            };
            // Only attempts still in flight need a report (workflow::settle_attempts); not
            // reading settled attempts' folders keeps a step's cost independent of how much of
            // the task is already done.
            if !matches!(
                attempt.status,
                AttemptStatus::Created | AttemptStatus::Submitted | AttemptStatus::Running
            ) {
                continue;
            }
            let id = attempt.attempt_id.value().to_owned();
            let slots = AttemptSlots {
                work_item_id: item.work_item_id.value().to_owned(),
                attempt_id: id.clone(),
                dispatch_id: attempt.dispatch_id.value().to_owned(),
                generation: attempt.dispatch_generation,
            };
            if self.adapter_of(&slots.work_item_id) == Adapter::External {
                let report = self.external_report(body, &slots);
                reports.insert(id, report);
                continue;
            }
            let adapter = self.adapter_of(&slots.work_item_id);
            let dir = self.dir_of(adapter, &id);
            let state = state_of(&dir);
            if adapter == Adapter::Tmux && matches!(state, SupervisorState::Dead { .. }) {
                // Nobody watches the agent any more: close the window valp opened for it (a
                // targeted pane is left alone), so it does not work on unrecorded.
                if let Err(error) = tmux::terminate_orphan(&dir) {
                    self.rejections.insert(
                        display_text(&dir.display().to_string()),
                        display_text(&error.to_string()),
                    );
                }
            }
            let observations = self.observations(body, &dir, &slots);
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

    /// An external attempt: launched once its request file exists; accepted and finished as
    /// the inbox's admitted observations say. Its rejections are listed.
    fn external_report(&mut self, body: &StateBody, slots: &AttemptSlots) -> AttemptReport {
        let dir = self.dir_of(Adapter::External, &slots.attempt_id);
        let Ok(request) = self.external_request(body, slots) else {
            return AttemptReport::default();
        };
        let classified = self.inbox_report(&request);
        for (location, reason) in &classified.rejected {
            self.inbox_rejections
                .insert(location.to_string(), reason.clone());
        }
        let mut last = classified
            .final_observation()
            .map(|(_, observation)| observation.status);
        if last == Some(ObservationStatus::Completed) {
            let missing = self.missing_evidence(&slots.work_item_id);
            if !missing.is_empty() {
                // As the process adapter does for a run that exited 0 without its evidence.
                last = Some(ObservationStatus::Blocked);
                self.notes.insert(
                    slots.attempt_id.clone(),
                    format!(
                        "reported completed, but expected evidence is missing: {}",
                        missing.join(", ")
                    ),
                );
            }
        }
        AttemptReport {
            launched: external::launched(&dir),
            accepted: classified.accepted().is_some(),
            last,
            supervisor_lost: false,
        }
    }

    /// The item's expected evidence files that cannot be read now (below its `cwd`, through
    /// real folders only).
    fn missing_evidence(&self, work_item_id: &str) -> Vec<String> {
        self.plan
            .work_item(work_item_id)
            .map(|item| {
                item.expected_evidence
                    .iter()
                    .filter(|path| {
                        crate::plan::paths::evidence_file(&self.project, &item.run.cwd, path)
                            .is_none()
                    })
                    .map(|path| display_text(path))
                    .collect()
            })
            .unwrap_or_default()
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
                self.rejections.insert(
                    display_text(&dir.display().to_string()),
                    display_text(&error.to_string()),
                );
                return Vec::new();
            }
        };
        for rejected in read.rejected {
            if let process::ProcessError::Invalid { path, reason } = rejected {
                self.rejections.insert(
                    display_text(&path.display().to_string()),
                    display_text(&reason),
                );
            }
        }
        read.observations
            .into_iter()
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
                        display_text(
                            &dir.join(process::observation_file(observation.sequence))
                                .display()
                                .to_string(),
                        ),
                        "foreign: the observation names another attempt".to_owned(),
                    );
                }
                ours
            })
            .collect()
    }

    fn store(&self, prefix: &str, bytes: &[u8]) -> Result<Evidence, RuntimeError> {
        evidence::store(&self.root, prefix, bytes, identity)
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
                evidence.push(self.store("request-", &Self::read(&dir.join(REQUEST_FILE))?)?);
            }
            EvidenceNeed::Accepted | EvidenceNeed::Final => {
                // Only what the report was built from: files that fail the checks are the
                // rejections `observations` listed.
                let observations = process::read_observations(dir)?.observations;
                let wanted = |observation: &&AdapterObservation| match need {
                    EvidenceNeed::Accepted => observation.status == ObservationStatus::Accepted,
                    _ => true,
                };
                let observation = observations.iter().rev().find(wanted);
                if let Some(observation) = observation {
                    evidence.push(self.store("observation-", &observation.canonical_bytes())?);
                }
                if process::folder_adapter(dir) == Some(tmux::ADAPTER_ID) {
                    // The tmux proofs are the files the observation's segments name (the
                    // paste, the submission, the completion), inside this attempt's folder.
                    evidence.extend(self.segment_files(dir, observation)?);
                    if *need == EvidenceNeed::Final {
                        evidence.extend(self.tmux_final_evidence(dir, cwd)?);
                    }
                } else {
                    let proof = dir.join(PROCESS_BOUND_FILE);
                    if proof.is_file() {
                        evidence.push(self.store("proof-", &Self::read(&proof)?)?);
                    }
                    if *need == EvidenceNeed::Final {
                        evidence.extend(self.final_evidence(dir, cwd)?);
                    }
                }
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        evidence.retain(|item| seen.insert(item.evidence_id.clone()));
        Ok(evidence)
    }

    /// Stores what `need` names for an external attempt: its request file, its admitted
    /// `accepted` observation, or its final observation with the item's expected evidence
    /// files as they are now (for `attempt_completed` all of them: one that vanished since the
    /// report was read is an integrity failure; for a failure, those present).
    fn gather_external(
        &self,
        kind: EventKind,
        need: &EvidenceNeed,
        body: &StateBody,
        slots: &AttemptSlots,
    ) -> Result<Vec<Evidence>, RuntimeError> {
        let dir = self.dir_of(Adapter::External, &slots.attempt_id);
        let mut evidence = Vec::new();
        match need {
            EvidenceNeed::Nothing => {}
            EvidenceNeed::Request => {
                evidence.push(self.store("request-", &Self::read(&dir.join(REQUEST_FILE))?)?);
            }
            EvidenceNeed::Accepted => {
                let classified = self.inbox_report(&self.external_request(body, slots)?);
                if let Some(observation) = classified.accepted() {
                    evidence.push(self.store("observation-", &observation.canonical_bytes())?);
                }
            }
            EvidenceNeed::Final => {
                let classified = self.inbox_report(&self.external_request(body, slots)?);
                let Some((_, observation)) = classified.final_observation() else {
                    return Ok(evidence);
                };
                evidence.push(self.store("observation-", &observation.canonical_bytes())?);
                let completed = kind == EventKind::AttemptCompleted;
                let cwd = self.item_cwd(&slots.work_item_id);
                let item = self.plan_item(&slots.work_item_id)?;
                for path in &item.expected_evidence {
                    let file =
                        crate::plan::paths::evidence_file(&self.project, &item.run.cwd, path);
                    match file.and_then(|file| std::fs::read(file).ok()) {
                        Some(bytes) => evidence.push(self.store("artifact-", &bytes)?),
                        None if completed => {
                            return Err(RuntimeError::Integrity(format!(
                                "{} vanished while the completion of {} was recorded",
                                cwd.join(path).display(),
                                slots.attempt_id
                            )));
                        }
                        None => {}
                    }
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
        let mut evidence = vec![self.store("proof-", &bytes)?];
        for name in [STDOUT_FILE, STDERR_FILE] {
            let output = dir.join(name);
            if output.is_file() {
                evidence.push(self.store("output-", &Self::read(&output)?)?);
            }
        }
        evidence.extend(self.artifacts(cwd, &proof.expected_evidence)?);
        Ok(evidence)
    }

    /// Every expected evidence file a proof found, checked against the digest it recorded (a
    /// file changed since is an integrity failure, not evidence).
    fn artifacts(
        &self,
        cwd: &Path,
        records: &[process::EvidenceRecord],
    ) -> Result<Vec<Evidence>, RuntimeError> {
        let mut evidence = Vec::new();
        for file in records {
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
            evidence.push(self.store("artifact-", &bytes)?);
        }
        Ok(evidence)
    }

    /// The proof files `observation`'s segments name, when they are in the attempt folder
    /// `dir` (a reference elsewhere is not read: the observation is untrusted).
    fn segment_files(
        &self,
        dir: &Path,
        observation: Option<&AdapterObservation>,
    ) -> Result<Vec<Evidence>, RuntimeError> {
        let Some(observation) = observation else {
            return Ok(Vec::new());
        };
        let prefix = tmux::attempt_ref(&observation.request.attempt_id) + "/";
        let mut evidence = Vec::new();
        for reference in observation
            .provenance
            .iter()
            .flat_map(|segment| &segment.evidence_refs)
        {
            if let Some(file) = reference.strip_prefix(&prefix) {
                evidence.push(self.store("proof-", &Self::read(&dir.join(file))?)?);
            }
        }
        Ok(evidence)
    }

    /// A tmux attempt's expected evidence, as its completion proof found it.
    /// The files the agent left (read where it worked: its run spec's folder, a worktree's
    /// when it had one), then its worktree's diff, recorded once (which may remove a worktree
    /// left unchanged: [`crate::adapter::worktree`]).
    fn tmux_final_evidence(&self, dir: &Path, cwd: &Path) -> Result<Vec<Evidence>, RuntimeError> {
        let spec = tmux::read_record::<tmux::TmuxSpec>(dir, process::RUN_FILE)?;
        let cwd = spec.as_ref().map_or(cwd, |spec| Path::new(&spec.cwd));
        let mut evidence =
            match tmux::read_record::<tmux::CompletionProof>(dir, tmux::COMPLETION_FILE)? {
                Some(proof) => self.artifacts(cwd, &proof.expected_evidence)?,
                None => Vec::new(),
            };
        let diff = crate::adapter::worktree::finish(dir)
            .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        if let Some(bytes) = diff {
            evidence.push(self.store("worktree-diff-", &bytes)?);
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
            Some(slots) if self.adapter_of(&slots.work_item_id) == Adapter::External => {
                self.gather_external(proposal.kind, &proposal.evidence, body, slots)?
            }
            Some(slots) => self.gather(
                &proposal.evidence,
                &self.dir_of(self.adapter_of(&slots.work_item_id), &slots.attempt_id),
                &self.item_cwd(&slots.work_item_id),
            )?,
            None => Vec::new(),
        };
        let mut why = proposal.why.clone();
        if let Some(note) = proposal
            .attempt
            .as_ref()
            .and_then(|slots| self.notes.get(&slots.attempt_id))
        {
            why = format!("{why}: {note}");
        }
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
        let progress = self.append(&event, &evidence, why)?;
        if matches!(progress, Progress::Proposed { refused: None, .. }) {
            // What the kernel now holds as evidence stays admitted in the inbox's order.
            self.recorded
                .extend(evidence.iter().map(|item| item.content_digest.clone()));
        }
        Ok(progress)
    }

    fn append(
        &mut self,
        event: &Event,
        evidence: &[Evidence],
        why: String,
    ) -> Result<Progress, RuntimeError> {
        let kind = event.kind.known().unwrap_or(EventKind::TaskFailed);
        let refused = match self.journal.append(event, evidence)? {
            Appended::Accepted { record, .. } => {
                self.effects_due |= !record.obligations.is_empty();
                None
            }
            Appended::Duplicate { .. } => None,
            Appended::Rejected { error_code, reason } => {
                Some((error_code.as_str().to_owned(), reason))
            }
        };
        Ok(Progress::Proposed { kind, why, refused })
    }

    /// Writes the attempt's request and run specification and starts its supervisor; for an
    /// external item, writes its request only (the outside tool takes it from there).
    fn launch(&mut self, body: &StateBody, slots: &AttemptSlots) -> Result<Progress, RuntimeError> {
        let item = self.plan_item(&slots.work_item_id)?;
        if item.run.adapter == Adapter::External {
            let request = self.external_request(body, slots)?;
            let external_root = self
                .root
                .layout()
                .root()
                .join("runtime")
                .join(external::ADAPTER_ID);
            external::prepare(&external_root, &request)?;
            return Ok(Progress::Launched {
                attempt_id: slots.attempt_id.clone(),
            });
        }
        if item.run.adapter == Adapter::Tmux {
            return self.start_agent(body, slots);
        }
        let (mut argv, cwd, timeout, mut env, expected) = (
            item.run.argv.clone(),
            item.run.cwd.clone(),
            item.run.timeout_seconds,
            item.run.env.clone(),
            item.expected_evidence.clone(),
        );
        if let Some(stream) = &item.run.stream {
            // `valp agent run-stream` runs the agent and records its stream as the attempt's
            // signals, which it finds through the same environment a tmux agent gets.
            argv = crate::agent::channel::headless::wrapped(&self.valp_binary, stream, argv);
            env.extend(tmux::agent_env(
                self.root.layout().root(),
                [body.task_id.value(), &slots.work_item_id, &slots.attempt_id],
            ));
        }
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
        // Created and checked through real folders only, now (a link may have appeared since
        // the publication).
        let folder = crate::plan::paths::working_folder(&self.project, cwd)
            .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        let mut spec = RunSpec::new(
            argv,
            folder.display().to_string(),
            u64::from(timeout_seconds) * 1000,
        );
        spec.env = env;
        spec.expected_evidence.clone_from(&expected);
        let request = submit_request(body, slots, &spec.digest(), expected);
        let process_root = self.root.layout().root().join("runtime/process");
        let dir = process::prepare(&process_root, &request, &spec)?;
        self.supervise(&dir, slots)
    }

    /// Writes a tmux attempt's request and run spec (the agent, its pane, its prompt) and
    /// starts its supervisor.
    fn start_agent(
        &mut self,
        body: &StateBody,
        slots: &AttemptSlots,
    ) -> Result<Progress, RuntimeError> {
        let item = self.plan_item(&slots.work_item_id)?;
        let Some(run) = item.run.tmux.clone() else {
            return Err(RuntimeError::Integrity(format!(
                "work item {} runs on tmux without its agent",
                slots.work_item_id
            )));
        };
        let expected = item.expected_evidence.clone();
        let timeout_ms = u64::from(item.run.timeout_seconds) * 1000;
        let control_root = self.root.layout().root().to_path_buf();
        // A worktree of its own, or the project's checkout; the item's cwd inside it.
        let tree = match run.workdir {
            crate::plan::Workdir::Worktree => Some(
                crate::adapter::worktree::create(&self.project, &control_root, &slots.attempt_id)
                    .map_err(|error| RuntimeError::Integrity(error.to_string()))?,
            ),
            crate::plan::Workdir::Shared => None,
        };
        let checkout = tree
            .as_ref()
            .map_or_else(|| self.project.clone(), |tree| PathBuf::from(&tree.path));
        let folder = crate::plan::paths::working_folder(&checkout, &item.run.cwd)
            .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        let socket = run.socket.as_deref().map_or_else(
            || control_root.join(tmux::SERVER_SOCKET),
            tmux::server::named_socket,
        );
        let (command, target) = match run.pane {
            TmuxPane::Command(mut argv) => {
                // `valp` is this valp (the demo agent, hooks), whatever PATH holds.
                if argv.first().is_some_and(|program| program == "valp") {
                    argv[0] = self.valp_binary.display().to_string();
                }
                (Some(argv), None)
            }
            TmuxPane::Target(pane) => (None, Some(pane)),
        };
        let spec = tmux::TmuxSpec {
            schema_version: <tmux::TmuxSpec as tmux::Record>::SCHEMA.to_owned(),
            agent: run.agent,
            command,
            target,
            prompt: run.prompt,
            socket: socket.display().to_string(),
            session: tmux::SESSION.to_owned(),
            window: slots.work_item_id.clone(),
            cwd: folder.display().to_string(),
            env: tmux::agent_env(
                &control_root,
                [body.task_id.value(), &slots.work_item_id, &slots.attempt_id],
            ),
            timeout_ms: timeout_ms.max(1),
            grace_ms: tmux::DEFAULT_GRACE_MS,
            expected_evidence: expected.clone(),
        };
        let bytes = tmux::Record::canonical(&spec)
            .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        let request = submit_request(body, slots, &sha256_digest(&bytes), expected);
        let dir = tmux::prepare(&control_root.join("runtime/tmux"), &request, &spec)?;
        if let Some(tree) = &tree {
            crate::adapter::worktree::write_record(&dir, tree)
                .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
        }
        self.supervise(&dir, slots)
    }

    /// Starts the supervisor of a prepared attempt folder unless it has one.
    fn supervise(&mut self, dir: &Path, slots: &AttemptSlots) -> Result<Progress, RuntimeError> {
        if matches!(process::supervisor_state(dir), SupervisorState::NotLaunched) {
            match process::launch(dir, &self.valp_binary) {
                Ok(supervisor) => self.supervisors.push(supervisor),
                // Another runner (a second `valp run`, the console) launched it first: the
                // attempt is running, which is all this step asked for.
                Err(process::ProcessError::AlreadySupervised { .. }) => {}
                Err(error) => return Err(error.into()),
            }
        }
        Ok(Progress::Launched {
            attempt_id: slots.attempt_id.clone(),
        })
    }

    /// The verification checks of the plan.
    fn checks(&self) -> Vec<Check> {
        checks(&self.plan)
    }

    /// The slots of `check` in the current verification round.
    fn check_slots(&self, body: &StateBody, check: &Check) -> AttemptSlots {
        check_slots(body, verifying_since(&self.journal), check)
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
            measures: measurement(&self.root, &self.plan, &self.policy, &self.journal)?,
        };
        let closure_evidence = self.store(CLOSURE_EVIDENCE_PREFIX, &closure.canonical_bytes())?;
        evidence.push(closure_evidence);
        if let Some(cycle) = self.cycle.as_ref().filter(|_| self.policy.correction_cycle) {
            // A v3 policy's Done binds the correction cycle the journal derives (seed 003).
            let bytes = crate::audit::derive::canonical_bytes(cycle)
                .map_err(|error| RuntimeError::Integrity(error.to_string()))?;
            evidence.push(self.store(CYCLE_EVIDENCE_PREFIX, &bytes)?);
        }
        let mut seen = std::collections::BTreeSet::new();
        evidence.retain(|item| seen.insert(item.evidence_id.clone()));
        // The store's own gate (matrix, bound evidence, correction cycle), run before proposing.
        let gate = self.journal.guard().done().gate(body, &evidence)?;
        if !gate.passed {
            // Name each failing dimension gate with its own reasons, beside the matrix's.
            let dimensions: Vec<String> = dimension_gates(body, &self.policy, &closure)
                .unwrap_or_default()
                .iter()
                .filter(|gate| gate.required && gate.verdict != GateVerdict::Pass)
                .map(|gate| {
                    let code = gate
                        .code()
                        .map_or_else(String::new, |code| format!(" {code}"));
                    format!(
                        "; {} gate {}{code}: {}",
                        gate.dimension,
                        gate.verdict,
                        gate.reasons.join(", ")
                    )
                })
                .collect();
            return Ok(Progress::Waiting(Wait::Leader(format!(
                "the Done gate refuses: {}{}",
                gate.reasons.join(", "),
                dimensions.concat()
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

/// The verification checks: the plan's verification commands, then every criterion with a
/// `verify` command.
fn checks(plan: &Plan) -> Vec<Check> {
    let commands = plan.verification.iter().map(|check| Check {
        id: format!("verification-{}", check.id),
        argv: check.argv.clone(),
        cwd: check.cwd.clone(),
        timeout_seconds: check.timeout_seconds,
        criterion: None,
    });
    let criteria = plan.criteria.iter().filter_map(|criterion| {
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
fn verifying_since(journal: &Journal) -> i128 {
    let revision = |event_id: &valp_kernel::Identity| {
        event_id
            .value()
            .strip_prefix("work_completed-r")
            .and_then(|revision| revision.parse::<i128>().ok())
    };
    // Read back from the tip (a journal opened from a snapshot keeps no history): a file
    // changed under the handle counts as no round yet; the next open refuses it.
    journal
        .latest_entry(|entry| revision(&entry.event.event_id).is_some())
        .ok()
        .flatten()
        .and_then(|found| revision(&found.entry.event.event_id))
        .map_or(0, |revision| revision + 1)
}

/// The slots of `check` in the verification round that started at revision `round`.
fn check_slots(body: &StateBody, round: i128, check: &Check) -> AttemptSlots {
    AttemptSlots {
        work_item_id: check.id.clone(),
        attempt_id: format!("{}:{}:r{round}", body.task_id.value(), check.id),
        dispatch_id: format!("{}:{}:r{round}", body.task_id.value(), check.id),
        generation: 1,
    }
}

/// How the task's current verification round ended: its checks always run on the process
/// adapter; one that did not complete (failed, timed out, lost, not run) counts as failed.
fn final_round(root: &ControlRoot, plan: &Plan, journal: &Journal) -> measures::Round {
    let body = journal.live().body();
    let round = verifying_since(journal);
    let mut counted = measures::Round::default();
    for check in checks(plan) {
        let slots = check_slots(body, round, &check);
        let dir = root
            .layout()
            .root()
            .join(process::attempt_ref(&slots.attempt_id));
        match state_of(&dir) {
            SupervisorState::Finished {
                status: ObservationStatus::Completed,
            } => counted.passed += 1,
            _ => counted.failed += 1,
        }
    }
    counted
}

/// The dimension measurement for `policy` (`None` for a v1 policy): what the task's journal
/// and its current verification round show.
fn measurement(
    root: &ControlRoot,
    plan: &Plan,
    policy: &DonePolicy,
    journal: &Journal,
) -> Result<Option<DimensionMeasures>, RuntimeError> {
    let Some(dimensions) = &policy.dimensions else {
        return Ok(None);
    };
    let round = final_round(root, plan, journal);
    let values = measures::measure(root, journal.live().body().task_id.value(), round)?;
    Ok(Some(DimensionMeasures {
        policy_id: dimensions.policy_id.clone(),
        policy_digest: dimensions.digest(),
        values,
    }))
}

/// The four dimension gates of a task as the Done gate would see them now (`None` when it has
/// no published plan or its frozen Done policy has no dimension section), read-only, for
/// display.
pub fn task_gates(
    root: &ControlRoot,
    journal: &Journal,
) -> Result<Option<Vec<GateResult>>, RuntimeError> {
    let body = journal.live().body();
    let (plan, _, policy_evidence) = match plan::of_task(root, body.task_id.value()) {
        Ok(published) => published,
        // A task not published from a plan (an imported reference store, an interrupted
        // publication) has no frozen Done policy, so no dimension gates.
        Err(plan::PlanError::NotPublished { .. }) => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let policy = decode_policy(root, &policy_evidence, body.task_id.value())?;
    let Some(measures) = measurement(root, &plan, &policy, journal)? else {
        return Ok(None);
    };
    let closure = DoneClosure {
        policy_digest: policy_evidence.content_digest.clone(),
        completion_claim: ClaimResult::Pass,
        criteria: Vec::new(),
        measures: Some(measures),
    };
    Ok(dimension_gates(body, &policy, &closure))
}

/// The Done policy frozen with `journal`'s revision-1 entry, decoded from its blob (`None` for
/// a journal without one, an imported reference store).
pub fn frozen_policy(
    root: &ControlRoot,
    journal: &Journal,
) -> Result<Option<DonePolicy>, RuntimeError> {
    match journal.guard().done().frozen_policy() {
        [evidence] => {
            decode_policy(root, evidence, journal.live().body().task_id.value()).map(Some)
        }
        _ => Ok(None),
    }
}

/// The frozen Done policy of task `task_id` from its evidence blob.
fn decode_policy(
    root: &ControlRoot,
    policy_evidence: &Evidence,
    task_id: &str,
) -> Result<DonePolicy, RuntimeError> {
    let policy_bytes = root.blobs().get(&policy_evidence.content_digest)?;
    decode_canonical(&policy_bytes)
        .ok()
        .and_then(|value| valp_kernel::done::decode_done_policy(&value).ok())
        .ok_or_else(|| {
            RuntimeError::Integrity(format!(
                "the Done policy evidence {} of task {task_id} does not decode",
                policy_evidence.evidence_id.value()
            ))
        })
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

/// The `submit` request of an attempt of this task, whichever adapter runs it; only the payload
/// and its expected evidence differ between adapters. Epoch and generation past `i64` saturate.
fn submit_request(
    body: &StateBody,
    slots: &AttemptSlots,
    payload_digest: &str,
    expected_evidence: Vec<String>,
) -> AdapterRequest {
    AdapterRequest::new(
        Operation::Submit,
        body.installation_id.value(),
        i64::try_from(body.leader_epoch).unwrap_or(i64::MAX),
        body.task_id.value(),
        &slots.work_item_id,
        &slots.attempt_id,
        &slots.dispatch_id,
        i64::try_from(slots.generation).unwrap_or(i64::MAX),
        payload_digest,
        expected_evidence,
    )
}

fn identity(kind: IdentityKind, value: impl Into<String>) -> Result<Identity, RuntimeError> {
    Identity::new(kind, value).map_err(|error| RuntimeError::Integrity(error.to_string()))
}

/// An event of `kind` at the task's current revision.
fn event(body: &StateBody, kind: EventKind) -> Result<Event, RuntimeError> {
    super::task_event(body, kind, identity)
}
