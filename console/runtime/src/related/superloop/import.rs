//! `valp task import-superloop`: a checked SuperLoop loop ([`super::Loop`]) becomes a valp
//! task and foreign observations of it.
//!
//! - **The task** ([`plan_text`]): a `valp-plan.v1` whose work items are the Parts, each
//!   `required`, run by the `external` adapter (SuperLoop does the work, valp runs nothing),
//!   with `dependsOn` as `hard` edges; each item's description carries the Part's title,
//!   objective, acceptance criteria (id, statement, pass condition, evidence types), expected
//!   artifacts and definition digest; the goal's acceptance criteria are the task's required
//!   criteria; the goal text names the loop, its generation and the contract digest
//!   (`superloop-jcs:<hex>`), so the contract is frozen into the plan evidence of the task's
//!   first event. It is published with [`plan::publish`] like any plan; a task that exists
//!   with another plan (another generation, another contract) is refused, never merged. A task
//!   published with this very plan is refreshed: the observations not recorded yet (new runs,
//!   a Goal evaluation) are added, the others answered as already recorded.
//! - **Observations** (the task's foreign-observation journal, [`super::super::record`]):
//!   the contract (`contract`, loop.yaml's bytes), the state (`state`), each recorded run whose
//!   log is there and whose JCS digest, status and finish time are the state's (`run`), each
//!   Part result of such a run as an `attempt` (dispatch generation = the ordinal of that
//!   Part's results in `recordedRuns` order, never `retries`; the worker is a role name, no
//!   context id is made up) and a `review` (pass -> pass/pass, fail -> fail/fail, blocked and
//!   needs-human -> unknown/blocked; unknown/blocked as well when the evaluator artifact is not
//!   bound by its bytes inside the loop folder or the result was judged against another Part
//!   definition). `dry-run` runs are observation-only and `budget-exceeded` runs
//!   accounting-only: their results are never taken.
//! - **The Done claim** ([`DoneClaim`]): only when `lifecycle.status` is `completed` and
//!   `lastGoalEvaluation` verifies (its artifact's bytes hash to `sha256`, its `basisSha256`
//!   is the recomputed basis, [`super::goal_basis`]); a `pass` there is a claim `pass`,
//!   anything short of it `unknown`. "All Parts passed" alone is no claim. The claim is not
//!   Done: [`done_gate`] runs the kernel's Done gate over it.
//!
//! The state observation also carries the human resolutions and the Runner lease, as
//! observations only ([`super::observe`]): never authority, never an attempt.
//!
//! Unreadable, unbound or missing run logs and artifacts are listed as problems, never
//! repaired. Nothing is written into the loop folder and no SuperLoop lock is taken.

use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_kernel::done::{ClosureCriterion, DoneClosure, DoneGate};
use valp_kernel::{Evidence, Identity, IdentityKind, TaskStatus, WorkItemStatus};
use valp_store::foreign::{
    ClaimResult, ForeignJournal, ForeignKind, ForeignRecord, ReviewVerdict, Source,
};
use valp_store::{Access, ControlRoot};

use super::{Loop, RecordedRun, SuperloopError, bare_sha256, frontier, goal_basis, jcs_digest};
use crate::plan::{self, Published};
use crate::related::record::{self, Kept, Observation, RecordError};

/// The foreign Done claim a completed loop yields.
#[derive(Debug, Clone)]
pub struct DoneClaim {
    /// `pass` only for a verified passing Goal evaluation.
    pub result: ClaimResult,
    /// Why not `pass`, when not.
    pub reasons: Vec<String>,
}

/// What [`import`] did.
#[derive(Debug)]
pub struct Imported {
    /// The task.
    pub published: Published,
    /// Whether the task was already published with this very plan (same loop, generation and
    /// contract): only observations not yet recorded were added.
    pub refreshed: bool,
    /// Every observation kept (or found already kept).
    pub kept: Vec<Kept>,
    /// What was not taken, and why.
    pub problems: Vec<String>,
    /// The recomputed frontier.
    pub frontier: Vec<String>,
    /// The Done claim, when the lifecycle is completed.
    pub done_claim: Option<DoneClaim>,
}

/// Why an import stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The loop folder.
    #[error(transparent)]
    Loop(#[from] SuperloopError),
    /// The generated plan or its publication.
    #[error(transparent)]
    Plan(#[from] plan::PlanError),
    /// Recording observations.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The store.
    #[error(transparent)]
    Store(#[from] valp_store::StoreError),
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text)
        .unwrap_or_default()
        .replace('\u{7f}', "\\u007F")
}

/// The `valp-plan.v1` text of the task `task_id` for `found` (see the module documentation).
pub fn plan_text(found: &Loop, task_id: &str) -> String {
    use std::fmt::Write as _;
    let contract = &found.contract;
    let mut text = String::new();
    let _ = writeln!(text, "schema_version = \"valp-plan.v1\"");
    let _ = writeln!(text, "task_id = {}", quoted(task_id));
    let _ = writeln!(
        text,
        "goal = {}",
        quoted(&format!(
            "{} (SuperLoop loop {}, generation {}, contract superloop-jcs:{})",
            contract.objective, contract.name, found.generation, contract.digest
        ))
    );
    for (index, criterion) in contract.acceptance_criteria.iter().enumerate() {
        let _ = writeln!(text, "\n[[criteria]]\nid = \"goal-{}\"", index + 1);
        let _ = writeln!(text, "description = {}", quoted(criterion));
    }
    for part in &contract.parts {
        let mut description = format!("{}: {}", part.title, part.objective);
        for criterion in &part.acceptance_criteria {
            let _ = write!(
                description,
                " | criterion {}: {} (pass: {}; evidence: {})",
                criterion.id,
                criterion.statement,
                criterion.pass_condition,
                criterion.evidence.join(", ")
            );
        }
        for artifact in &part.expected_artifacts {
            let _ = write!(
                description,
                " | artifact {}: {}",
                artifact.id, artifact.description
            );
        }
        if let Some(digest) = contract.part_digests.get(&part.id) {
            let _ = write!(description, " | definition superloop-jcs:{digest}");
        }
        let _ = writeln!(text, "\n[[work_items]]\nid = {}", quoted(&part.id));
        let _ = writeln!(text, "description = {}", quoted(&description));
        let _ = writeln!(text, "requirement = \"required\"");
        let edges: Vec<String> = part
            .depends_on
            .iter()
            .map(|dep| format!("{{ id = {}, kind = \"hard\" }}", quoted(dep)))
            .collect();
        let _ = writeln!(text, "dependencies = [{}]", edges.join(", "));
        let _ = writeln!(text, "run = {{ adapter = \"external\", cwd = \".\" }}");
    }
    text
}

/// Imports `found` as task `task_id` at `leader_epoch` (the caller re-proved the Leader) and
/// records its observations (see the module documentation).
pub fn import(
    root: &ControlRoot,
    found: &Loop,
    task_id: &str,
    leader_epoch: valp_kernel::Int,
) -> Result<Imported, ImportError> {
    let text = plan_text(found, task_id);
    let parsed = plan::parse(
        Path::new("(plan generated from loop.yaml)"),
        text.as_bytes(),
    )
    .map_err(|errors| plan::PlanError::Invalid(errors.to_string()))?;
    let (published, refreshed) = match plan::of_task(root, task_id) {
        // The same plan (same loop, generation and contract): record what is new, idempotently.
        Ok((existing, plan_evidence, done_policy)) if existing == parsed => {
            let task = root.open_task(task_id, Access::ReadOnly)?;
            let published = Published {
                task_id: task_id.to_owned(),
                leader_epoch: task.genesis().state.body.leader_epoch,
                work_items: parsed.work_items.len(),
                plan: plan_evidence,
                done_policy,
                resumed: false,
            };
            (published, true)
        }
        _ => (plan::publish(root, &parsed, leader_epoch)?, false),
    };
    let mut journal = ForeignJournal::of_task(root, task_id, Access::Write)?;
    let mut session = Session {
        root,
        found,
        journal: &mut journal,
        kept: Vec::new(),
        problems: Vec::new(),
    };
    session.contract()?;
    session.state()?;
    let mut generations = std::collections::BTreeMap::<String, i64>::new();
    for run in &found.state.recorded_runs {
        session.run(run, &mut generations)?;
    }
    let done_claim = session.goal()?;
    for stale in found.stale_passes() {
        session.problems.push(format!(
            "Part {stale}: passed against another Part definition; the pass is not carried"
        ));
    }
    Ok(Imported {
        published,
        refreshed,
        kept: session.kept,
        problems: session.problems,
        frontier: frontier(found),
        done_claim,
    })
}

struct Session<'a> {
    root: &'a ControlRoot,
    found: &'a Loop,
    journal: &'a mut ForeignJournal,
    kept: Vec<Kept>,
    problems: Vec<String>,
}

impl Session<'_> {
    fn keep(&mut self, observation: Observation<'_>) -> Result<(), ImportError> {
        let kept = record::keep(self.root, self.journal, observation)?;
        self.kept.push(kept);
        Ok(())
    }

    fn observation<'b>(
        &self,
        kind: ForeignKind,
        id: &str,
        bytes: &'b [u8],
        descriptor: serde_json::Value,
    ) -> Observation<'b> {
        Observation {
            source: Source::Superloop,
            kind,
            observation_id: format!("{}:{id}", self.found.prefix()),
            work_item_id: None,
            bytes,
            descriptor,
            claim: None,
            summary: String::new(),
        }
    }

    fn contract(&mut self) -> Result<(), ImportError> {
        let contract = &self.found.contract;
        let descriptor = serde_json::json!({
            "schema_version": "valp-foreign-superloop-contract.v1",
            "loop": contract.name,
            "generation": self.found.generation,
            "contract_digest": {"scheme": "superloop-jcs", "value": contract.digest, "verified": true},
            "parts": contract.parts.iter().map(|part| serde_json::json!({
                "id": part.id,
                "definition_digest": format!("superloop-jcs:{}", contract.part_digests.get(&part.id).cloned().unwrap_or_default()),
                "depends_on": part.depends_on,
                "goal_criteria": part.goal_criteria,
                "acceptance_criteria": part.acceptance_criteria.iter().map(|c| serde_json::json!({
                    "id": c.id, "statement": c.statement, "evidence": c.evidence, "pass_condition": c.pass_condition,
                })).collect::<Vec<_>>(),
                "expected_artifacts": part.expected_artifacts.iter().map(|a| serde_json::json!({
                    "id": a.id, "description": a.description,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "provenance": {"present": contract.provenance.is_some(), "authenticated": false},
        });
        let mut observation = self.observation(
            ForeignKind::Contract,
            "contract",
            &self.found.contract_bytes,
            descriptor,
        );
        observation.summary = format!(
            "SuperLoop contract {} superloop-jcs:{}",
            contract.name,
            &contract.digest[..16]
        );
        self.keep(observation)
    }

    fn state(&mut self) -> Result<(), ImportError> {
        let state = &self.found.state;
        let phase = phase(self.found);
        let (resolutions, lease, problems) = super::observe::described(self.found);
        self.problems.extend(problems);
        let descriptor = serde_json::json!({
            "schema_version": "valp-foreign-superloop-state.v1",
            "phase": phase,
            "paused": state.paused,
            "frontier": frontier(self.found),
            "frontier_source": "recomputed from loop.yaml and state.json",
            "stale_passes": self.found.stale_passes(),
            "items": state.items.iter().map(|item| serde_json::json!({
                "id": item.id, "status": item.status, "retries": item.retries,
            })).collect::<Vec<_>>(),
            "resolutions": resolutions,
            "lease": lease,
        });
        // The lease lives beside the state: a new lease is a new observation of the state.
        let mut id = format!("state:{}", &bare_sha256(&self.found.state_bytes)[..16]);
        if let Ok(lease) = super::read_file(&self.found.dir, super::observe::LEASE_FILE) {
            id = format!("{id}:lease:{}", &bare_sha256(&lease)[..16]);
        }
        let mut observation =
            self.observation(ForeignKind::State, &id, &self.found.state_bytes, descriptor);
        observation.summary = format!("SuperLoop state, phase {phase}");
        self.keep(observation)
    }

    /// One recorded run: its log, and its Part results as attempts and reviews.
    fn run(
        &mut self,
        run: &RecordedRun,
        generations: &mut std::collections::BTreeMap<String, i64>,
    ) -> Result<(), ImportError> {
        let bytes = match super::read_file(&self.found.dir, &run.artifact) {
            Ok(bytes) => bytes,
            Err(error) => {
                self.problems
                    .push(format!("run {}: {error}; not taken", run.run_id));
                return Ok(());
            }
        };
        let log = match bound_log(&bytes, run) {
            Ok(log) => log,
            Err(why) => {
                self.problems
                    .push(format!("run {}: {why}; not taken", run.run_id));
                return Ok(());
            }
        };
        let takes_results = !matches!(run.status.as_str(), "dry-run" | "budget-exceeded");
        let descriptor = serde_json::json!({
            "schema_version": "valp-foreign-superloop-run.v1",
            "run_id": run.run_id,
            "status": run.status,
            "finished_at": run.finished_at,
            "log_digest": {"scheme": "superloop-jcs", "value": run.sha256, "verified": true},
            "results_taken": takes_results,
        });
        let mut observation = self.observation(
            ForeignKind::Run,
            &format!("run:{}", run.run_id),
            &bytes,
            descriptor,
        );
        observation.summary = format!("SuperLoop run {} {}", run.run_id, run.status);
        self.keep(observation)?;
        if !takes_results {
            return Ok(());
        }
        let results = log
            .get("results")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        for result in &results {
            let Some(part) = result.get("itemId").and_then(serde_json::Value::as_str) else {
                continue;
            };
            if !self.found.contract.part_digests.contains_key(part) {
                self.problems.push(format!(
                    "run {}: result for {part:?}, not a Part; not taken",
                    run.run_id
                ));
                continue;
            }
            let generation = generations.entry(part.to_owned()).or_insert(0);
            *generation += 1;
            let generation = *generation;
            self.result(run, &bytes, part, result, generation)?;
        }
        Ok(())
    }

    /// One Part result: an attempt and a review of its claim.
    fn result(
        &mut self,
        run: &RecordedRun,
        log_bytes: &[u8],
        part: &str,
        result: &serde_json::Value,
        generation: i64,
    ) -> Result<(), ImportError> {
        let text = |pointer: &str| {
            result
                .pointer(pointer)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let prefix = self.found.prefix();
        let attempt = serde_json::json!({
            "schema_version": "valp-foreign-superloop-attempt.v1",
            "attempt_id": format!("{prefix}:{}:{part}", run.run_id),
            "dispatch_id": format!("{prefix}:{part}"),
            "dispatch_generation": generation,
            "status": "completed",
            "worker": {"role": self.found.contract.worker, "context_id": null},
            "proof": "content_bound",
        });
        let mut observation = self.observation(
            ForeignKind::Attempt,
            &format!("attempt:{}:{part}", run.run_id),
            log_bytes,
            attempt,
        );
        observation.work_item_id = Some(part.to_owned());
        observation.summary = format!("SuperLoop attempt {generation} at {part}");
        self.keep(observation)?;

        let verdict = text("/verdict");
        let mut claim = match verdict.as_str() {
            "pass" => (ClaimResult::Pass, ReviewVerdict::Pass),
            "fail" => (ClaimResult::Fail, ReviewVerdict::Fail),
            _ => (ClaimResult::Unknown, ReviewVerdict::Blocked),
        };
        let mut reasons = Vec::new();
        if result
            .get("partDefinitionSha256")
            .and_then(serde_json::Value::as_str)
            != self
                .found
                .contract
                .part_digests
                .get(part)
                .map(String::as_str)
        {
            reasons.push("judged against another Part definition".to_owned());
        }
        let evaluator = bound_file(
            &self.found.dir,
            &text("/evaluator/artifact"),
            &text("/evaluator/sha256"),
        );
        let evidence_bytes = match &evaluator {
            Ok(bytes) => bytes.clone(),
            Err(why) => {
                reasons.push(format!("evaluator artifact {why}"));
                log_bytes.to_vec()
            }
        };
        if !reasons.is_empty() {
            claim = (ClaimResult::Unknown, ReviewVerdict::Blocked);
        }
        let review = serde_json::json!({
            "schema_version": "valp-foreign-superloop-review.v1",
            "run_id": run.run_id,
            "part": part,
            "foreign_verdict": verdict,
            "claim": claim.0.as_str(),
            "review": claim.1.as_str(),
            "reviewer": {"evaluator_context_id": text("/evaluator/contextId")},
            "claimant": {"role": self.found.contract.worker, "context_id": null},
            "evaluator_bound": evaluator.is_ok(),
            "not_taken_because": reasons,
        });
        let mut observation = self.observation(
            ForeignKind::Review,
            &format!("review:{}:{part}", run.run_id),
            &evidence_bytes,
            review,
        );
        observation.work_item_id = Some(part.to_owned());
        observation.claim = Some(claim);
        observation.summary = format!("SuperLoop Part Gate {verdict} for {part}");
        self.keep(observation)
    }

    /// The Done claim of a completed lifecycle.
    fn goal(&mut self) -> Result<Option<DoneClaim>, ImportError> {
        let Some(lifecycle) = &self.found.state.lifecycle else {
            return Ok(None);
        };
        if lifecycle.status != "completed" {
            return Ok(None);
        }
        let mut reasons = Vec::new();
        let Some(evaluation) = &lifecycle.last_goal_evaluation else {
            self.problems
                .push("lifecycle completed without a lastGoalEvaluation: no Done claim".to_owned());
            return Ok(None);
        };
        let bytes = match bound_file(&self.found.dir, &evaluation.artifact, &evaluation.sha256) {
            Ok(bytes) => bytes,
            Err(why) => {
                reasons.push(format!("Goal evaluation artifact {why}"));
                Vec::new()
            }
        };
        match goal_basis(self.found) {
            Ok(basis) if basis == evaluation.basis_sha256 => {}
            Ok(basis) => reasons.push(format!(
                "basisSha256 {} is not the recomputed basis {basis}",
                evaluation.basis_sha256
            )),
            Err(why) => reasons.push(format!("basis unverifiable: {why}")),
        }
        let claim = match (reasons.is_empty(), evaluation.verdict.as_str()) {
            (true, "pass") => (ClaimResult::Pass, ReviewVerdict::Pass),
            (true, "fail") => (ClaimResult::Fail, ReviewVerdict::Fail),
            _ => (ClaimResult::Unknown, ReviewVerdict::Blocked),
        };
        if evaluation.verdict != "pass" {
            reasons.push(format!("the Goal Gate said {}", evaluation.verdict));
        }
        if bytes.is_empty() {
            // Nothing to keep as evidence: the claim is listed, not recorded.
            self.problems
                .push(format!("Done claim not recorded: {}", reasons.join("; ")));
            return Ok(Some(DoneClaim {
                result: ClaimResult::Unknown,
                reasons,
            }));
        }
        let descriptor = serde_json::json!({
            "schema_version": "valp-foreign-superloop-done-claim.v1",
            "run_id": evaluation.run_id,
            "foreign_verdict": evaluation.verdict,
            "claim": claim.0.as_str(),
            "basis_digest": {"scheme": "superloop-jcs", "value": evaluation.basis_sha256},
            "evaluator": self.found.contract.goal_evaluator,
            "evaluated_at": evaluation.evaluated_at,
            "not_taken_because": reasons,
            "done": false,
        });
        let mut observation = self.observation(
            ForeignKind::DoneClaim,
            &format!("done-claim:{}", evaluation.run_id),
            &bytes,
            descriptor,
        );
        observation.claim = Some(claim);
        observation.summary = format!(
            "SuperLoop Goal Gate {}: a Done claim, not Done",
            evaluation.verdict
        );
        self.keep(observation)?;
        Ok(Some(DoneClaim {
            result: claim.0,
            reasons,
        }))
    }
}

/// `work`, `goal-evaluation` or `completed`, as SuperLoop derives it.
fn phase(found: &Loop) -> &'static str {
    if found
        .state
        .lifecycle
        .as_ref()
        .is_some_and(|lifecycle| lifecycle.status == "completed")
    {
        "completed"
    } else if found.state.items.iter().all(|item| found.passed(&item.id)) {
        "goal-evaluation"
    } else {
        "work"
    }
}

/// A run log whose JCS digest, status and finish time are the ledger entry's.
fn bound_log(bytes: &[u8], run: &RecordedRun) -> Result<serde_json::Value, String> {
    let log: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|error| format!("malformed log: {error}"))?;
    let digest = jcs_digest(&log).map_err(|why| format!("unverifiable: {why}"))?;
    if digest != run.sha256 {
        return Err(format!(
            "digest-unbound: recordedRuns says superloop-jcs:{}, the log gives superloop-jcs:{digest}",
            run.sha256
        ));
    }
    let same = |key: &str, expected: &str| {
        log.get(key).and_then(serde_json::Value::as_str) == Some(expected)
    };
    if !same("runId", &run.run_id)
        || !same("status", &run.status)
        || !same("finishedAt", &run.finished_at)
    {
        return Err("the log's runId, status or finishedAt is not the ledger's".to_owned());
    }
    Ok(log)
}

/// The bytes of `reference` inside the loop folder when they hash to `sha256`.
fn bound_file(dir: &Path, reference: &str, sha256: &str) -> Result<Vec<u8>, String> {
    let bytes = super::read_file(dir, reference).map_err(|error| match error {
        SuperloopError::Unavailable { why, .. } => format!("{reference}: unavailable: {why}"),
        other => other.to_string(),
    })?;
    let digest = bare_sha256(&bytes);
    if digest == sha256 {
        Ok(bytes)
    } else {
        Err(format!(
            "{reference}: digest-unbound: the state says file-sha256:{sha256}, the bytes give file-sha256:{digest}"
        ))
    }
}

/// The kernel's Done gate over the imported task's foreign Done claim: the task's frozen
/// policy, a closure whose completion claim and criteria carry the Done claim's result with
/// its evidence, and the task's State as a labelled foreign projection (status `recording`;
/// an item counts as completed only when a recorded foreign review of it passed). The
/// EvidenceSet holds the claim's evidence only when its bytes are in the control root. Nothing
/// is proposed: the verdict is what the kernel would say.
pub fn done_gate(root: &ControlRoot, task_id: &str) -> Result<DoneGate, ImportError> {
    let (parsed, _, _) = plan::of_task(root, task_id)?;
    let policy = parsed.done_policy();
    let journal = ForeignJournal::of_task(root, task_id, Access::ReadOnly)?;
    let records = journal.records();
    let claim = records
        .iter()
        .rev()
        .find(|record| record.kind == ForeignKind::DoneClaim);
    let mut evidence_set = Vec::new();
    let (completion, evidence_ids) = match claim {
        Some(record) => {
            if root.blobs().get(&record.content_digest).is_ok() {
                evidence_set.push(Evidence {
                    evidence_id: Identity::new(IdentityKind::Evidence, record.evidence_id.clone())
                        .map_err(|_| RecordError::Identity(record.evidence_id.clone()))?,
                    content_digest: record.content_digest.clone(),
                });
            }
            (
                kernel_claim(record.claim.map(|(claim, _)| claim)),
                vec![record.evidence_id.clone()],
            )
        }
        None => (valp_kernel::ClaimResult::Unknown, Vec::new()),
    };
    let closure = DoneClosure {
        policy_digest: policy.digest(),
        completion_claim: completion,
        criteria: policy
            .criteria
            .iter()
            .map(|criterion| ClosureCriterion {
                criterion_id: criterion.criterion_id.clone(),
                result: completion,
                evidence_ids: evidence_ids.clone(),
            })
            .collect(),
        measures: None,
    };
    let task = root.open_task(task_id, Access::ReadOnly)?;
    let mut body = task.live().body().clone();
    body.status = valp_kernel::Open::Known(TaskStatus::Recording);
    for item in &mut body.work_items {
        if passed_review(records, item.work_item_id.value()) {
            item.status = WorkItemStatus::Completed;
        }
    }
    Ok(valp_kernel::done::evaluate_bound(
        &body,
        &evidence_set,
        &policy,
        &closure,
    ))
}

/// Whether the latest recorded review of `item` passed.
fn passed_review(records: &[ForeignRecord], item: &str) -> bool {
    records
        .iter()
        .rev()
        .find(|record| {
            record.kind == ForeignKind::Review && record.work_item_id.as_deref() == Some(item)
        })
        .is_some_and(|record| record.claim == Some((ClaimResult::Pass, ReviewVerdict::Pass)))
}

const fn kernel_claim(claim: Option<ClaimResult>) -> valp_kernel::ClaimResult {
    match claim {
        Some(ClaimResult::Pass) => valp_kernel::ClaimResult::Pass,
        Some(ClaimResult::Fail) => valp_kernel::ClaimResult::Fail,
        Some(ClaimResult::Unknown) | None => valp_kernel::ClaimResult::Unknown,
    }
}
