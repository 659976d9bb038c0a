//! SuperLoop finite Work Plans (`superloop/v2`) read from a loop folder, read-only.
//!
//! [`read`] takes `<loop>/loop.yaml` and `<loop>/state.json` (nothing else is needed; run logs
//! and evaluator artifacts are read by [`import()`] where the state names them) and checks,
//! before anything is believed:
//!
//! - the contract is `superloop/v2` with a finite `workPlan` (a legacy
//!   `loop-engineering/v1` loop is refused, not read as v2);
//! - `state.contractSha256` is the RFC 8785 (JCS) digest of the parsed contract, recomputed
//!   here ([`jcs_digest`]); a contract this reader cannot reproduce the way SuperLoop reads it
//!   ([`yaml`], floats) is *unverifiable*, a different digest is *another contract*: both
//!   refused, so no pass is carried across a changed contract;
//! - the state names the loop, has a `generation` (observation ids carry it, so a re-`init`
//!   never merges with older history), one item per Part, and no `in-progress` item (a finite
//!   plan never persists one: fail closed);
//! - no `locks/state-transaction.json`: a SuperLoop commit is under way, the state may be
//!   about to change, nothing is derived from it. The reader never takes SuperLoop's locks,
//!   never runs `loopctl` or `loopd` and never writes into the loop folder.
//!
//! [`frontier`] is recomputed from the contract and the state alone, never from a
//! `loopctl next` output's `eligibleParts` (capped, and silent about over-cap Parts): a Part
//! is on it when it is not passed, every `dependsOn` Part is passed, and it is `open`, or
//! `failed` with `retries < maxRetriesPerItem`. A `passed` item whose `lastResult` was bound to
//! another Part definition is not passed (the pass is not carried; [`Loop::stale_passes`]).

pub mod import;
pub mod observe;
pub mod yaml;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub use import::{DoneClaim, Imported, done_gate, import, plan_text};

/// The only protocol version read.
pub const API_VERSION: &str = "superloop/v2";
/// The legacy predecessor, refused.
pub const LEGACY_API_VERSION: &str = "loop-engineering/v1";
/// The largest file read.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// The marker of a SuperLoop state commit in progress.
pub const TRANSACTION_MARKER: &str = "locks/state-transaction.json";

/// Why a loop folder was not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SuperloopError {
    /// A file is missing or cannot be read (unavailable, never taken as empty).
    #[error("{file}: unavailable: {why}")]
    Unavailable {
        /// The file, relative to the loop folder.
        file: String,
        /// Why.
        why: String,
    },
    /// A file is not what the protocol says.
    #[error("{file}: malformed: {why}")]
    Malformed {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// A digest cannot be recomputed the way SuperLoop computes it.
    #[error("{file}: unverifiable: {why}")]
    Unverifiable {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// The files are readable but must not be believed.
    #[error("{0}")]
    Refused(String),
}

/// One Part of the Work Plan, as the contract writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Stable Part id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Objective.
    pub objective: String,
    /// Hard prerequisites.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Goal criteria it advances (a trace, not a completion claim).
    #[serde(default)]
    pub goal_criteria: Vec<String>,
    /// Its acceptance criteria.
    pub acceptance_criteria: Vec<PartCriterion>,
    /// Its expected artifacts.
    pub expected_artifacts: Vec<ExpectedArtifact>,
}

/// A Part acceptance criterion.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartCriterion {
    /// Id.
    pub id: String,
    /// What must hold.
    pub statement: String,
    /// Evidence types.
    #[serde(default)]
    pub evidence: Vec<String>,
    /// When it passes.
    pub pass_condition: String,
}

/// An artifact a Part must produce.
#[derive(Debug, Clone, Deserialize)]
pub struct ExpectedArtifact {
    /// Id.
    pub id: String,
    /// What it is.
    pub description: String,
}

/// The parts of `loop.yaml` this reader uses, with their digests.
#[derive(Debug, Clone)]
pub struct Contract {
    /// `metadata.name`.
    pub name: String,
    /// `goal.objective`.
    pub objective: String,
    /// `goal.acceptanceCriteria`: the task-level Done criteria.
    pub acceptance_criteria: Vec<String>,
    /// The Parts, in Work Plan order.
    pub parts: Vec<Part>,
    /// JCS digest of each Part object (bare hex), by id.
    pub part_digests: BTreeMap<String, String>,
    /// `safety.retries.maxRetriesPerItem`.
    pub max_retries: u64,
    /// `handoff.worker` (a role string, not an identity).
    pub worker: String,
    /// `workPlan.completion.evaluator`.
    pub goal_evaluator: String,
    /// JCS digest of the whole contract (bare hex).
    pub digest: String,
    /// `metadata.provenance`, when present: an unauthenticated local assertion.
    pub provenance: Option<Value>,
}

/// An item's status in `state.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ItemStatus {
    /// Not started, or reopened.
    Open,
    /// Never persisted by a finite plan.
    InProgress,
    /// Accepted by its Part Gate.
    Passed,
    /// Rejected by its Part Gate.
    Failed,
    /// Blocked.
    Blocked,
    /// Waiting for a person.
    NeedsHuman,
}

/// An artifact binding `{id, reference, sha256}` (raw file bytes).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// Artifact id.
    pub id: String,
    /// Path relative to the loop folder.
    pub reference: String,
    /// SHA-256 of the file bytes.
    pub sha256: String,
}

/// `items[].lastResult`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LastResult {
    /// The run.
    pub run_id: String,
    /// Its log.
    pub run_artifact: String,
    /// JCS digest of the log.
    pub run_sha256: String,
    /// The verdict.
    pub verdict: String,
    /// The Part definition it was judged against.
    pub part_definition_sha256: String,
    /// The evaluator artifact's bytes.
    pub evaluator_sha256: String,
}

/// One `items[]` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Item {
    /// Part id.
    pub id: String,
    /// Status.
    pub status: ItemStatus,
    /// Retry counter (not an attempt count).
    pub retries: u64,
    /// `work-plan` for Parts.
    #[serde(default)]
    pub source: Option<String>,
    /// Summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// Links.
    #[serde(default)]
    pub links: Option<Value>,
    /// Accepted artifacts.
    #[serde(default)]
    pub artifacts: Option<Vec<Binding>>,
    /// The last recorded result.
    #[serde(default)]
    pub last_result: Option<LastResult>,
}

/// `recordedRuns[]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecordedRun {
    /// Run id.
    pub run_id: String,
    /// Its log, relative to the loop folder.
    pub artifact: String,
    /// JCS digest of the log.
    pub sha256: String,
    /// When it finished.
    pub finished_at: String,
    /// Its status.
    pub status: String,
}

/// `lifecycle.lastGoalEvaluation`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GoalEvaluation {
    /// The run.
    pub run_id: String,
    /// `pass`, `fail`, `blocked` or `needs-human`.
    pub verdict: String,
    /// The Goal-evaluation artifact.
    pub artifact: String,
    /// SHA-256 of its bytes.
    pub sha256: String,
    /// The basis it evaluated.
    pub basis_sha256: String,
    /// When.
    pub evaluated_at: String,
}

/// `lifecycle`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lifecycle {
    /// `active` or `completed`.
    pub status: String,
    /// When completed.
    #[serde(default)]
    pub completed_at: Option<String>,
    /// Goal Gate attempts.
    #[serde(default)]
    pub goal_evaluation_attempts: u64,
    /// The last Goal evaluation.
    #[serde(default)]
    pub last_goal_evaluation: Option<GoalEvaluation>,
}

/// `state.json` (closed, as its schema).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct State {
    /// `superloop/v2`.
    pub api_version: String,
    /// The loop name.
    #[serde(rename = "loop")]
    pub loop_name: String,
    /// The loop instance.
    #[serde(default)]
    pub generation: Option<String>,
    /// The contract digest.
    #[serde(default)]
    pub contract_sha256: Option<String>,
    /// Last run time.
    pub last_run_at: Option<String>,
    /// Paused.
    #[serde(default)]
    pub paused: bool,
    /// Why.
    #[serde(default)]
    pub pause_reason: Option<String>,
    /// Finite lifecycle.
    #[serde(default)]
    pub lifecycle: Option<Lifecycle>,
    /// One item per Part.
    pub items: Vec<Item>,
    /// Human reopen records (unauthenticated).
    #[serde(default)]
    pub part_resolutions: Vec<Value>,
    /// Human resolve records (unauthenticated).
    #[serde(default)]
    pub goal_resolutions: Vec<Value>,
    /// The run ledger, in record order.
    #[serde(default)]
    pub recorded_runs: Vec<RecordedRun>,
    /// Accounting (floats stay here).
    pub budgets: Value,
    /// Out of scope.
    #[serde(default)]
    pub evolution: Option<Value>,
}

/// A loop folder, read and checked.
#[derive(Debug, Clone)]
pub struct Loop {
    /// The folder.
    pub dir: PathBuf,
    /// The contract.
    pub contract: Contract,
    /// The state.
    pub state: State,
    /// `loop.yaml`'s bytes.
    pub contract_bytes: Vec<u8>,
    /// `state.json`'s bytes.
    pub state_bytes: Vec<u8>,
    /// The loop instance.
    pub generation: String,
}

/// Reads and checks the loop folder `dir` (see the module documentation).
pub fn read(dir: &Path) -> Result<Loop, SuperloopError> {
    if dir.join(TRANSACTION_MARKER).exists() {
        return Err(SuperloopError::Refused(format!(
            "{TRANSACTION_MARKER}: a SuperLoop state commit is in progress; the state may be \
             about to change, so nothing is derived from it (nothing repaired, no lock taken)"
        )));
    }
    let contract_bytes = read_file(dir, "loop.yaml")?;
    let state_bytes = read_file(dir, "state.json")?;
    let contract = contract(&contract_bytes)?;
    let state: State =
        serde_json::from_slice(&state_bytes).map_err(|error| SuperloopError::Malformed {
            file: "state.json".to_owned(),
            why: error.to_string(),
        })?;
    check_state(&contract, &state).map(|generation| Loop {
        dir: dir.to_path_buf(),
        contract,
        state,
        contract_bytes,
        state_bytes,
        generation,
    })
}

/// Reads `relative` inside `dir` (for reading only), capped.
pub fn read_file(dir: &Path, relative: &str) -> Result<Vec<u8>, SuperloopError> {
    let unavailable = |why: String| SuperloopError::Unavailable {
        file: relative.to_owned(),
        why,
    };
    let path = inside(dir, relative).map_err(unavailable)?;
    let size = std::fs::metadata(&path)
        .map_err(|error| unavailable(error.kind().to_string()))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(unavailable(format!(
            "{size} bytes, more than {MAX_FILE_BYTES}"
        )));
    }
    std::fs::read(&path).map_err(|error| unavailable(error.kind().to_string()))
}

/// `dir/relative` when it is a safe relative path whose real path stays inside `dir`'s (a
/// symbolic link out of the loop folder is refused).
fn inside(dir: &Path, relative: &str) -> Result<PathBuf, String> {
    if !crate::abi::is_safe_relative(relative) {
        return Err("not a safe relative path inside the loop folder".to_owned());
    }
    let base = dir
        .canonicalize()
        .map_err(|error| error.kind().to_string())?;
    let path = base
        .join(relative)
        .canonicalize()
        .map_err(|error| error.kind().to_string())?;
    if path.starts_with(&base) {
        Ok(path)
    } else {
        Err("its real path leaves the loop folder".to_owned())
    }
}

fn contract(bytes: &[u8]) -> Result<Contract, SuperloopError> {
    let malformed = |why: String| SuperloopError::Malformed {
        file: "loop.yaml".to_owned(),
        why,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| malformed("not UTF-8".to_owned()))?;
    let value = yaml::parse(text).map_err(|why| SuperloopError::Unverifiable {
        file: "loop.yaml".to_owned(),
        why,
    })?;
    let api = value.get("apiVersion").and_then(Value::as_str);
    if api == Some(LEGACY_API_VERSION) {
        return Err(SuperloopError::Refused(format!(
            "loop.yaml: a legacy {LEGACY_API_VERSION} loop is not read as {API_VERSION}"
        )));
    }
    if api != Some(API_VERSION) || value.get("kind").and_then(Value::as_str) != Some("Loop") {
        return Err(malformed(format!(
            "apiVersion must be {API_VERSION} and kind Loop"
        )));
    }
    let plan = value
        .get("workPlan")
        .filter(|plan| plan.get("mode").and_then(Value::as_str) == Some("finite"))
        .ok_or_else(|| malformed("no finite workPlan".to_owned()))?;
    let part_values = plan
        .get("parts")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("workPlan.parts is not a list".to_owned()))?;
    let unverifiable = |why: String| SuperloopError::Unverifiable {
        file: "loop.yaml".to_owned(),
        why,
    };
    let mut parts = Vec::new();
    let mut part_digests = BTreeMap::new();
    for value in part_values {
        let part: Part = serde_json::from_value(value.clone())
            .map_err(|error| malformed(format!("a Part: {error}")))?;
        part_digests.insert(part.id.clone(), jcs_digest(value).map_err(unverifiable)?);
        parts.push(part);
    }
    let text_at = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| malformed(format!("{pointer} is missing")))
    };
    Ok(Contract {
        name: text_at("/metadata/name")?,
        objective: text_at("/goal/objective")?,
        acceptance_criteria: value
            .pointer("/goal/acceptanceCriteria")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        parts,
        part_digests,
        max_retries: value
            .pointer("/safety/retries/maxRetriesPerItem")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("safety.retries.maxRetriesPerItem is missing".to_owned()))?,
        worker: text_at("/handoff/worker")?,
        goal_evaluator: text_at("/workPlan/completion/evaluator")?,
        digest: jcs_digest(&value).map_err(unverifiable)?,
        provenance: value.pointer("/metadata/provenance").cloned(),
    })
}

/// The state's rules against the contract; the generation.
fn check_state(contract: &Contract, state: &State) -> Result<String, SuperloopError> {
    let refused = |why: String| Err(SuperloopError::Refused(format!("state.json: {why}")));
    if state.api_version != API_VERSION {
        return refused(format!("apiVersion is not {API_VERSION}"));
    }
    if state.loop_name != contract.name {
        return refused(format!(
            "names loop {:?}, the contract is {:?}",
            state.loop_name, contract.name
        ));
    }
    match &state.contract_sha256 {
        Some(digest) if *digest == contract.digest => {}
        Some(digest) => {
            return refused(format!(
                "was recorded against contract superloop-jcs:{digest}, loop.yaml is \
                 superloop-jcs:{}; no result is carried across a changed contract",
                contract.digest
            ));
        }
        None => return refused("has no contractSha256".to_owned()),
    }
    let Some(generation) = state.generation.clone() else {
        return refused("has no generation (loop instances could not be told apart)".to_owned());
    };
    let ids: Vec<&str> = state.items.iter().map(|item| item.id.as_str()).collect();
    let parts: Vec<&str> = contract.parts.iter().map(|part| part.id.as_str()).collect();
    if ids != parts {
        return refused(format!(
            "items {ids:?} are not the Work Plan's Parts {parts:?}"
        ));
    }
    if let Some(item) = state
        .items
        .iter()
        .find(|item| item.status == ItemStatus::InProgress)
    {
        return refused(format!(
            "Part {} is persisted in-progress, which a finite plan never does; nothing is \
             derived from an inconsistent state",
            item.id
        ));
    }
    Ok(generation)
}

impl Loop {
    /// The Parts whose `passed` status is not believed: their last result was judged against
    /// another Part definition.
    pub fn stale_passes(&self) -> Vec<String> {
        self.state
            .items
            .iter()
            .filter(|item| item.status == ItemStatus::Passed && !self.pass_current(item))
            .map(|item| item.id.clone())
            .collect()
    }

    fn pass_current(&self, item: &Item) -> bool {
        item.last_result.as_ref().is_some_and(|last| {
            self.contract.part_digests.get(&item.id) == Some(&last.part_definition_sha256)
        })
    }

    /// Whether Part `id` is passed (and its pass is bound to the current definition).
    pub fn passed(&self, id: &str) -> bool {
        self.state.items.iter().any(|item| {
            item.id == id && item.status == ItemStatus::Passed && self.pass_current(item)
        })
    }

    /// The `superloop:<name>:<generation>` prefix every observation id of this loop starts
    /// with.
    pub fn prefix(&self) -> String {
        format!("superloop:{}:{}", self.contract.name, self.generation)
    }
}

/// The frontier, recomputed from the contract and the state alone (see the module
/// documentation), in Work Plan order.
pub fn frontier(found: &Loop) -> Vec<String> {
    found
        .state
        .items
        .iter()
        .filter(|item| !found.passed(&item.id))
        .filter(|item| match item.status {
            ItemStatus::Open | ItemStatus::Passed => true,
            ItemStatus::Failed => item.retries < found.contract.max_retries,
            ItemStatus::InProgress | ItemStatus::Blocked | ItemStatus::NeedsHuman => false,
        })
        .filter(|item| {
            found
                .contract
                .parts
                .iter()
                .find(|part| part.id == item.id)
                .is_some_and(|part| part.depends_on.iter().all(|dep| found.passed(dep)))
        })
        .map(|item| item.id.clone())
        .collect()
}

/// The Goal-evaluation basis, recomputed: JCS of `{contractSha256, parts: [{id,
/// definitionSha256, status, artifacts}]}` in Work Plan order, from the state's items.
pub fn goal_basis(found: &Loop) -> Result<String, String> {
    let parts: Vec<Value> = found
        .state
        .items
        .iter()
        .map(|item| {
            serde_json::json!({
                "id": item.id,
                "definitionSha256": found.contract.part_digests.get(&item.id),
                "status": serde_json::to_value(item.status).unwrap_or(Value::Null),
                "artifacts": item.artifacts.clone().unwrap_or_default().iter().map(|binding| {
                    serde_json::json!({"id": binding.id, "reference": binding.reference, "sha256": binding.sha256})
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    jcs_digest(&serde_json::json!({
        "contractSha256": found.contract.digest,
        "parts": parts,
    }))
}

/// The RFC 8785 (JCS) SHA-256 of `value`, bare hex, or why it cannot be computed the way
/// SuperLoop does: keys are sorted here by code point, which is JCS's UTF-16 order except for
/// keys with characters beyond U+FFFF (refused); integers are written as integers, other
/// numbers only when their shortest form is plain decimal (ECMAScript's, then).
pub fn jcs_digest(value: &Value) -> Result<String, String> {
    let normalized = jcs_normalize(value)?;
    let bytes = serde_json::to_vec(&normalized).map_err(|error| error.to_string())?;
    Ok(bare_sha256(&bytes))
}

fn jcs_normalize(value: &Value) -> Result<Value, String> {
    Ok(match value {
        Value::Number(number) => {
            if number.is_i64() || number.is_u64() {
                value.clone()
            } else {
                let float = number.as_f64().unwrap_or(f64::NAN);
                if !float.is_finite() {
                    return Err("a number that is not finite".to_owned());
                }
                if float.fract() == 0.0 && float.abs() < 9.0e15 {
                    #[expect(clippy::cast_possible_truncation, reason = "integral, in range")]
                    Value::from(float as i64)
                } else if number.to_string().contains(['e', 'E']) {
                    return Err(format!(
                        "the number {number} would need ECMAScript exponent formatting"
                    ));
                } else {
                    value.clone()
                }
            }
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(jcs_normalize).collect::<Result<_, _>>()?)
        }
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (key, item) in map {
                if key.chars().any(|c| u32::from(c) > 0xFFFF) {
                    return Err(format!(
                        "the key {key:?} sorts differently in UTF-16 (JCS) and code points"
                    ));
                }
                out.insert(key.clone(), jcs_normalize(item)?);
            }
            Value::Object(out)
        }
        Value::Null | Value::Bool(_) | Value::String(_) => value.clone(),
    })
}

/// SHA-256 of `bytes`, bare lowercase hex.
pub fn bare_sha256(bytes: &[u8]) -> String {
    let digest = valp_kernel::canonical::sha256_digest(bytes);
    digest.strip_prefix("sha256:").unwrap_or(&digest).to_owned()
}
