//! Plan files (`valp-plan.v1`): what a task is for, how its work is split, what "done" means,
//! and how it runs; `valp task publish PLAN` turns one into a task.
//!
//! # The file
//!
//! A plan is a TOML file (schema: `schemas/console/plan.schema.json`, which describes the file
//! converted to JSON; `examples/plans/` has complete examples):
//!
//! ```toml
//! schema_version = "valp-plan.v1"
//! task_id = "release-notes"
//! goal = "Publish checksummed release notes"
//! non_goals = ["translate the notes"]              # optional, default []
//!
//! [[criteria]]                                     # at least one
//! id = "checksums-match"
//! description = "SHA256SUMS matches the published files"
//! required = true                                  # optional, default true
//! not_applicable_allowed = false                   # optional, default false
//! verify = ["sha256sum", "--check", "out/SHA256SUMS"]   # optional: exit 0 = pass
//!
//! [[work_items]]                                   # at least one
//! id = "stage"
//! description = "Copy the notes into out/"         # optional
//! requirement = "required"                         # required | optional | soft
//! dependencies = [{ id = "prepare", kind = "hard" }]   # optional; kind defaults to "hard"
//! expected_evidence = ["out/NOTES.md"]             # optional, default []
//! [work_items.run]
//! adapter = "process"                              # process | external (see below)
//! argv = ["cp", "NOTES.md", "out/NOTES.md"]        # no shell: argv[0] is the program
//! cwd = "."                                        # optional, default "."
//! timeout_seconds = 60                             # optional, default 300, 1..=86400
//! env = { LC_ALL = "C" }                           # optional
//!
//! [[work_items]]                                   # run by a tool outside valp
//! id = "review-bot"
//! requirement = "required"
//! expected_evidence = ["out/review.md"]
//! run = { adapter = "external", cwd = "." }        # no argv, env or timeout_seconds
//!
//! [[verification]]                                 # optional
//! id = "notes-present"
//! argv = ["test", "-s", "out/NOTES.md"]
//! cwd = "."                                        # optional, default "."
//! timeout_seconds = 30                             # optional, default 300, 1..=86400
//!
//! [done]                                           # optional
//! skippable_optional_items = false                 # default false
//! degradable_soft_items = []                       # soft work item ids, default []
//!
//! [execution]                                      # optional
//! max_concurrency = 2                              # 1..=64, default 2
//! retry_budget = 2                                 # attempts per work item, 1..=10, default 2
//! approval = "none"                                # or "required": the Leader approves
//!                                                  # after the review, default "none"
//!
//! [dimensions]                                     # optional: the dimension gates
//! version = 1                                      # see [`dimensions`]
//! [dimensions.quality]                             # quality | experience | cost | stability
//! required = true
//! rules = [{ rule_id = "no-failed", measure = "quality.verification_failed", operator = "eq", threshold = 0 }]
//!
//! [related]                                        # optional: see [`related`]
//! agentops_watch = ".agents/ao/verdicts/sha256"    # a folder the console watches read-only
//! [[related.agentops]]                             # an AgentOps verdict -> task / work item
//! subject = "c7cb66d7…"                            # or verdict = "<artifact_digest>"
//! work_item = "stage"                              # optional: absent = the task
//! ```
//!
//! Paths (`cwd`, `expected_evidence`) are relative to the project folder, the folder that
//! holds `.valp/`; `cwd = "."` is the project folder itself. Dependency kinds map to the
//! kernel's edge requirements: `hard` -> `required` (the dependent becomes eligible only once
//! the target completed), `soft` -> `soft` (an unmet edge is an audit fact), `optional` ->
//! `optional` (ignored for eligibility).
//!
//! # Adapters
//!
//! - `process`: valp runs `argv` itself, without a shell, in `cwd`, under a detached
//!   supervisor that enforces `timeout_seconds` (see [`crate::adapter::process`]).
//! - `external`: a tool outside valp does the work and reports through `.valp/inbox/` (see
//!   [`crate::adapter::external`] and the inbox contract in [`crate::ingest`]). valp only
//!   writes the attempt's request for the tool to find; it runs nothing, so `argv`, `env` and
//!   `timeout_seconds` are refused. There is no timeout in this version: an external attempt
//!   runs until the tool reports or the Leader cancels it (`valp cancel`), because valp cannot
//!   stop an outside runtime, only ask it to stop. `cwd` (default `.`) is the folder the item's
//!   `expected_evidence` paths are read from when the tool reports completion, as for the
//!   process adapter.
//!
//! # Validation
//!
//! [`parse`] reports every problem at once, each as `<file>:<line>:<column>: <field>: <rule>`
//! (see [`PlanProblem`]), in file order; a plan with any problem is refused whole. The rules:
//!
//! - TOML syntax (field `(syntax)`; a file with syntax errors is reported with those alone);
//!   the file must be UTF-8 (field `(file)`);
//! - `schema_version` is exactly `valp-plan.v1`;
//! - no unknown keys at any level; every value has its documented type; required keys are
//!   present; `goal`, descriptions and `non_goals` entries are not empty;
//! - ids (`task_id` and every criterion, work item and verification id) are identities: 1 to
//!   128 characters, no control characters, no `/` or `\`, not `.` or `..` (so any id is also a
//!   usable file name component; the store maps task ids to folders with
//!   [`valp_store::layout::task_folder_name`]);
//! - ids are unique among the criteria, among the work items and among the verification
//!   commands;
//! - a dependency names another work item of the plan, at most once per item, never the item
//!   itself, and the dependencies (of every kind) form no cycle (a cycle is named in full:
//!   `a -> b -> a`);
//! - `adapter` is `process` or `external`; for `process`, `argv` is required, not empty, its
//!   program (`argv[0]`) is not empty, and no argument contains NUL; environment variable names
//!   are not empty and contain no `=` or NUL; for `external`, `argv` and `env` are refused
//!   (`only the process adapter runs a command`) and so is `timeout_seconds` (`only the process
//!   adapter enforces a timeout`); an unknown or missing adapter is checked as `process`;
//! - `cwd` is `.` or a safe relative path and `expected_evidence` entries are safe relative
//!   paths ([`is_safe_relative`](crate::abi::is_safe_relative): `/`-separated, no
//!   absolute path, no `..`, `.` or empty part, no backslash or control character), each
//!   listed once;
//! - numbers are in range (`timeout_seconds` 1..=86400, `max_concurrency` 1..=64,
//!   `retry_budget` 1..=10);
//! - `degradable_soft_items` lists existing `soft` work items, each once;
//! - the `[dimensions]` rules of [`dimensions`] (supported version and operators, known measures
//!   of the gate's dimension, unique rule ids, a required gate has a rule);
//! - the `[related]` rules of [`related`] (one digest per mapping, mapped once, known work
//!   items, a safe watched path).
//!
//! # Canonical form
//!
//! A parsed [`Plan`] has one canonical JSON encoding
//! ([`Canonical`](valp_kernel::canonical::Canonical)): the same members as the
//! file, every default written out, `description`, `verify` and `env` omitted when absent
//! (or, for `env`, empty), keys sorted, RFC 0002 §5.3 canonical JSON. The `run` of an
//! `external` item is exactly `{"adapter":"external","cwd":…}` (it has no command, so no
//! `argv` or `timeout_seconds` is written); a `process` run is encoded as before, so the
//! digests of plans published earlier do not change. Publishing stores exactly
//! these bytes as evidence; [`Plan::from_canonical`] reads them back and refuses any byte that
//! differs from the re-encoding. The frozen Done policy is derived from the plan as its own
//! record, the kernel's [`DonePolicy`] (`valp-kernel-done-policy.v3`: the correction cycle of
//! seed 003, and the dimension gates when the plan has `[dimensions]`), which the Done gate
//! evaluates at closure. Tasks published before keep the v1 or v2 policy they froze.
//! `[dimensions]` and `[related]` are written only when present, so plans without them keep
//! their digests.
//!
//! # Publication
//!
//! [`publish`] stores the plan and the Done policy as evidence, creates the task journal at
//! the active Leader epoch with the plan's work items (pending, with their dependency edges)
//! as the genesis work-item table, and appends the first event, `routing_validation_started`,
//! whose EvidenceSet is the plan and the policy. [`of_task`] finds both again from a task's
//! journal. `valp task publish` re-proves the Leader before calling [`publish`].

mod canonical;
mod check;
pub mod dimensions;
mod error;
mod graph;
pub mod paths;
mod publication;
pub mod related;
mod tree;

use std::collections::BTreeMap;
use std::path::Path;

use toml::de::DeTable;
use valp_kernel::Requirement;

use dimensions::Dimensions;

pub use error::{PlanError, PlanErrors, PlanProblem};
pub use publication::{
    DONE_POLICY_EVIDENCE_PREFIX, PLAN_EVIDENCE_PREFIX, PUBLISH_EVENT_ID, Published, of_task,
    publish,
};
pub use valp_kernel::done::{DonePolicy, PolicyCriterion};

/// `schema_version` of a plan.
pub const PLAN_SCHEMA: &str = "valp-plan.v1";
/// The longest id, in characters.
pub const MAX_ID_CHARS: usize = 128;
/// `timeout_seconds` when a command does not say.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 300;
/// The longest timeout a command may ask for (one day).
pub const MAX_TIMEOUT_SECONDS: u32 = 86_400;
/// `max_concurrency` when the plan does not say.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 2;
/// The largest `max_concurrency`.
pub const MAX_CONCURRENCY: u32 = 64;
/// `retry_budget` when the plan does not say.
pub const DEFAULT_RETRY_BUDGET: u32 = 2;
/// The largest `retry_budget`.
pub const MAX_RETRY_BUDGET: u32 = 10;
/// The adapters a work item may name.
pub const ADAPTERS: &[&str] = &["process", "external", "tmux", "agent-stream"];
/// The longest tmux socket name a plan may give (`tmux -L NAME`).
pub const MAX_SOCKET_CHARS: usize = 64;

/// A validated plan (`valp-plan.v1`), defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The task this plan publishes.
    pub task_id: String,
    /// What the task is for.
    pub goal: String,
    /// What the task deliberately does not do.
    pub non_goals: Vec<String>,
    /// Acceptance criteria, in plan order.
    pub criteria: Vec<Criterion>,
    /// The work items, in plan order.
    pub work_items: Vec<PlanItem>,
    /// Task-level verification commands, in plan order.
    pub verification: Vec<Verification>,
    /// The predeclared Done relaxations.
    pub done: DoneSettings,
    /// How the work runs.
    pub execution: Execution,
    /// The dimension gates (`[dimensions]`), when the plan declares them.
    pub dimensions: Option<Dimensions>,
    /// The foreign-evidence mapping and watched folder (`[related]`), when declared.
    pub related: Option<related::Related>,
}

/// An acceptance criterion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Criterion {
    /// Its id, unique among the criteria.
    pub id: String,
    /// What must hold.
    pub description: String,
    /// Whether Done needs it to pass.
    pub required: bool,
    /// Whether a `not_applicable` result (with supporting evidence) is acceptable.
    pub not_applicable_allowed: bool,
    /// A command whose exit status 0 means the criterion passes (argv, no shell).
    pub verify: Option<Vec<String>>,
}

/// A work item of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    /// Its id, unique among the work items.
    pub id: String,
    /// What it does, for people.
    pub description: Option<String>,
    /// How much the task needs it.
    pub requirement: Requirement,
    /// What it waits for, in plan order.
    pub dependencies: Vec<PlanDependency>,
    /// How it runs.
    pub run: Run,
    /// The files it must produce (safe paths relative to the project folder).
    pub expected_evidence: Vec<String>,
}

/// A dependency edge of a work item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDependency {
    /// The work item depended on.
    pub id: String,
    /// The edge kind.
    pub kind: DependencyKind,
}

/// How strongly a work item depends on another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DependencyKind {
    /// `hard`: the target must complete first (kernel `required`).
    Hard,
    /// `soft`: an unmet target is recorded, not waited for (kernel `soft`).
    Soft,
    /// `optional`: ignored for eligibility (kernel `optional`).
    Optional,
}

impl DependencyKind {
    /// Every kind, in the order the schema lists them.
    pub const ALL: &'static [Self] = &[Self::Hard, Self::Soft, Self::Optional];

    /// The spelling in a plan.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Hard => "hard",
            Self::Soft => "soft",
            Self::Optional => "optional",
        }
    }

    /// Parses the spelling in a plan.
    pub fn from_plan(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.as_str() == text)
    }

    /// The kernel's encoding of the edge kind.
    pub const fn requirement(self) -> Requirement {
        match self {
            Self::Hard => Requirement::Required,
            Self::Soft => Requirement::Soft,
            Self::Optional => Requirement::Optional,
        }
    }
}

/// How a work item runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The adapter that runs it.
    pub adapter: Adapter,
    /// The command, without a shell: `argv[0]` is the program (empty for `external`).
    pub argv: Vec<String>,
    /// The working folder: `.` or a safe path relative to the project folder.
    pub cwd: String,
    /// How long one attempt may run (0 for `external`: no timeout).
    pub timeout_seconds: u32,
    /// Extra environment variables (empty for `external` and `tmux`).
    pub env: BTreeMap<String, String>,
    /// What a `tmux` item runs and tells its agent (`None` for the other adapters).
    pub tmux: Option<TmuxRun>,
    /// What an `agent-stream` item's argv is (`None` for the other adapters).
    pub stream: Option<StreamRun>,
}

/// A headless coding agent: the `agent-stream` adapter's part of a [`Run`] (its command is
/// the run's `argv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamRun {
    /// Whose JSON stream the command prints (`claude`: `claude -p --output-format
    /// stream-json --verbose`; `codex`: `codex exec --json`).
    pub agent: crate::agent::channel::stream::Stream,
    /// The prompt, written to the agent's stdin (claude: as a stream-json user message, its
    /// argv then has `--input-format stream-json` and stdin stays open for control messages;
    /// codex: as text, then stdin is closed). `None`: the prompt is in argv, stdin is empty.
    pub prompt: Option<String>,
}

/// A terminal agent in a tmux pane: the `tmux` adapter's part of a [`Run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmuxRun {
    /// The agent profile (a built-in name: `valp agent classify --agent NAME`).
    pub agent: String,
    /// Where the agent runs.
    pub pane: TmuxPane,
    /// The prompt submitted to the agent, with proof, once per attempt.
    pub prompt: String,
    /// A named tmux socket (`tmux -L NAME`); `None`: the installation's private server.
    pub socket: Option<String>,
    /// Where the agent works: the project's checkout, or a git worktree of its own per attempt.
    pub workdir: Workdir,
}

/// Where a `tmux` item's agent works (`workdir` in the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Workdir {
    /// `shared` (the default): the item's `cwd` in the project folder.
    #[default]
    Shared,
    /// `worktree`: a git worktree of the project's repository per attempt, detached at the
    /// project's `HEAD` ([`crate::adapter::worktree`]), so concurrent agents never edit the
    /// same checkout; the item's `cwd` is taken inside it.
    Worktree,
}

impl Workdir {
    /// Every value, in the order a plan lists them.
    pub const ALL: &'static [Self] = &[Self::Shared, Self::Worktree];

    /// The spelling in a plan.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Worktree => "worktree",
        }
    }

    /// Parses the spelling in a plan.
    pub fn from_plan(text: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|value| value.as_str() == text)
    }
}

/// Where a `tmux` item's agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TmuxPane {
    /// `command`: valp starts this argv (no shell) in a new window of its tmux server.
    Command(Vec<String>),
    /// `target`: an existing pane, by its tmux id (`%N`), that the Leader named; never guessed.
    Target(String),
}

/// The adapters a work item can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Adapter {
    /// `process`: a local process (see [`crate::adapter::process`]).
    Process,
    /// `external`: a tool outside valp that reports through the inbox (see
    /// [`crate::adapter::external`]).
    External,
    /// `tmux`: a terminal coding agent in a tmux pane, handed its prompt with proof (see
    /// [`crate::adapter::tmux`]).
    Tmux,
    /// `agent-stream`: a headless coding agent (`claude -p --output-format stream-json`,
    /// `codex exec --json`) run as a supervised process whose JSON stream becomes agent
    /// signals (see [`crate::agent::channel::headless`]).
    AgentStream,
}

impl Adapter {
    /// Every adapter, in the order [`ADAPTERS`] lists them.
    pub const ALL: &'static [Self] =
        &[Self::Process, Self::External, Self::Tmux, Self::AgentStream];

    /// The spelling in a plan.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Process => "process",
            Self::External => "external",
            Self::Tmux => "tmux",
            Self::AgentStream => "agent-stream",
        }
    }

    /// Parses the spelling in a plan.
    pub fn from_plan(text: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|adapter| adapter.as_str() == text)
    }
}

/// A task-level verification command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Its id, unique among the verification commands.
    pub id: String,
    /// The command, without a shell; exit status 0 means it passed.
    pub argv: Vec<String>,
    /// The working folder: `.` or a safe path relative to the project folder.
    pub cwd: String,
    /// How long it may run.
    pub timeout_seconds: u32,
}

/// The `[done]` table: what the Done policy may relax, declared before execution.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DoneSettings {
    /// Whether optional work items may be skipped and the task still be Done.
    pub skippable_optional_items: bool,
    /// Soft work items that may end degraded and the task still be Done, in plan order.
    pub degradable_soft_items: Vec<String>,
}

/// The `[execution]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Execution {
    /// How many work items may run at once.
    pub max_concurrency: u32,
    /// How many attempts a work item gets.
    pub retry_budget: u32,
    /// `approval = "required"`: after the Leader's review passes, the System raises
    /// `approval_required` and the task waits for the Leader's grant or denial.
    pub approval_required: bool,
}

impl Default for Execution {
    fn default() -> Self {
        Self {
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            retry_budget: DEFAULT_RETRY_BUDGET,
            approval_required: false,
        }
    }
}

/// Parses and validates a plan file; `path` only names the file in problems.
///
/// Returns every problem found, in file order, or the plan with its defaults filled in.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Plan, PlanErrors> {
    let file = path.display().to_string();
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let valid = String::from_utf8_lossy(&bytes[..error.valid_up_to()]);
            let (line, column) = tree::line_column(&valid, valid.len());
            return Err(PlanErrors {
                problems: vec![PlanProblem {
                    file,
                    line,
                    column,
                    field: "(file)".to_owned(),
                    rule: format!("not UTF-8 (invalid byte at offset {})", error.valid_up_to()),
                }],
            });
        }
    };
    let (table, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        let problems = syntax
            .iter()
            .map(|error| check::Raw {
                at: error.span().map_or(0, |span| span.start),
                field: "(syntax)".to_owned(),
                rule: format!("invalid TOML: {}", error.message()),
            })
            .collect();
        return Err(located(&file, text, problems));
    }
    let (plan, problems) = check::read(&tree::from_toml(&table));
    if problems.is_empty() {
        Ok(plan)
    } else {
        Err(located(&file, text, problems))
    }
}

/// Positions the problems in `text` and sorts them by position (stable: problems at one place
/// keep the order they were found in).
fn located(file: &str, text: &str, mut problems: Vec<check::Raw>) -> PlanErrors {
    problems.sort_by_key(|problem| problem.at);
    PlanErrors {
        problems: problems
            .into_iter()
            .map(|problem| {
                let (line, column) = tree::line_column(text, problem.at);
                PlanProblem {
                    file: file.to_owned(),
                    line,
                    column,
                    field: problem.field,
                    rule: problem.rule,
                }
            })
            .collect(),
    }
}

impl Plan {
    /// Reads a plan back from its canonical JSON (as published), refusing anything that is not
    /// exactly the canonical encoding of a valid plan; `origin` names the bytes in problems.
    pub fn from_canonical(origin: &str, bytes: &[u8]) -> Result<Self, PlanErrors> {
        canonical::decode(origin, bytes)
    }

    /// The work item with this id.
    pub fn work_item(&self, id: &str) -> Option<&PlanItem> {
        self.work_items.iter().find(|item| item.id == id)
    }

    /// The criterion with this id.
    pub fn criterion(&self, id: &str) -> Option<&Criterion> {
        self.criteria.iter().find(|criterion| criterion.id == id)
    }

    /// The frozen Done policy this plan declares.
    pub fn done_policy(&self) -> DonePolicy {
        DonePolicy {
            criteria: self
                .criteria
                .iter()
                .map(|criterion| PolicyCriterion {
                    criterion_id: criterion.id.clone(),
                    required: criterion.required,
                    not_applicable_allowed: criterion.not_applicable_allowed,
                })
                .collect(),
            skippable_optional_items: self.done.skippable_optional_items,
            degradable_soft_items: self.done.degradable_soft_items.clone(),
            dimensions: self
                .dimensions
                .as_ref()
                .map(|dimensions| dimensions.policy(&self.task_id)),
            correction_cycle: true,
        }
    }
}
