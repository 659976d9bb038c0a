//! Reading a plan document ([`Node`] tree) into a [`Plan`], collecting every problem.
//!
//! The reader never stops at the first problem: a missing or ill-typed value is recorded and
//! replaced by a placeholder so the rest of the document is still read and checked. The
//! placeholders never escape, because any problem refuses the whole plan. Cross-reference
//! rules (unique ids, dependency targets, cycles, degradable items) only look at values that
//! were read correctly, so one mistake is reported once, where it is.

mod related;

use std::collections::{BTreeMap, BTreeSet};

use valp_kernel::Requirement;
use valp_kernel::dimension::{
    Dimension, DimensionRule, GatePolicy, Operator, UNSUPPORTED_OPERATOR, UNSUPPORTED_VERSION,
};

use super::dimensions::{self, Dimensions, SUPPORTED_VERSION};
use super::graph;
use super::tree::{Member, Node, Value};
use super::{
    ADAPTERS, Adapter, Criterion, DEFAULT_MAX_CONCURRENCY, DEFAULT_RETRY_BUDGET,
    DEFAULT_TIMEOUT_SECONDS, DependencyKind, DoneSettings, Execution, MAX_CONCURRENCY,
    MAX_ID_CHARS, MAX_RETRY_BUDGET, MAX_SOCKET_CHARS, MAX_TIMEOUT_SECONDS, PLAN_SCHEMA, Plan,
    PlanDependency, PlanItem, Run, TmuxPane, TmuxRun, Verification, Workdir,
};
use crate::abi::is_safe_relative;
use crate::agent::profile::Profile;

/// A problem before it is positioned: the byte offset, the field path and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Raw {
    /// Byte offset in the source.
    pub at: usize,
    /// The field path.
    pub field: String,
    /// The rule, in words.
    pub rule: String,
}

const ROOT_KEYS: &[&str] = &[
    "schema_version",
    "task_id",
    "goal",
    "non_goals",
    "criteria",
    "work_items",
    "verification",
    "done",
    "execution",
    "dimensions",
    "related",
];
const CRITERION_KEYS: &[&str] = &[
    "id",
    "description",
    "required",
    "not_applicable_allowed",
    "verify",
];
const ITEM_KEYS: &[&str] = &[
    "id",
    "description",
    "requirement",
    "dependencies",
    "run",
    "expected_evidence",
];
const DEPENDENCY_KEYS: &[&str] = &["id", "kind"];
const RUN_KEYS: &[&str] = &[
    "adapter",
    "argv",
    "cwd",
    "timeout_seconds",
    "env",
    "agent",
    "command",
    "target",
    "prompt",
    "socket",
    "workdir",
];
/// The keys only a `tmux` run has, with why the other adapters refuse them.
const TMUX_ONLY: &[(&str, &str)] = &[
    (
        "agent",
        "only the tmux and agent-stream adapters run an agent",
    ),
    (
        "command",
        "only the tmux adapter starts an agent (a process runs argv)",
    ),
    ("target", "only the tmux adapter attaches to a pane"),
    (
        "prompt",
        "only the tmux and agent-stream adapters take a prompt",
    ),
    ("socket", "only the tmux adapter uses a tmux socket"),
    ("workdir", "only the tmux adapter gives an agent a worktree"),
];
const VERIFICATION_KEYS: &[&str] = &["id", "argv", "cwd", "timeout_seconds"];
const DONE_KEYS: &[&str] = &["skippable_optional_items", "degradable_soft_items"];
const EXECUTION_KEYS: &[&str] = &["max_concurrency", "retry_budget", "approval"];
const DIMENSIONS_KEYS: &[&str] = &["version", "quality", "experience", "cost", "stability"];
const GATE_KEYS: &[&str] = &["required", "rules"];
const RULE_KEYS: &[&str] = &["rule_id", "measure", "operator", "threshold"];

/// A value that was read correctly, with where it is.
#[derive(Debug, Clone)]
struct Placed<T> {
    value: T,
    at: usize,
    field: String,
}

/// What the cross-reference checks need to know about one work item.
#[derive(Debug, Default)]
struct ItemPlaces {
    /// The id, when it is a valid identity.
    id: Option<Placed<String>>,
    /// The requirement, when it was read.
    requirement: Option<Requirement>,
    /// Each dependency's target, when it is a valid identity.
    dependencies: Vec<Option<Placed<String>>>,
}

/// Where the ids of a plan are, for the cross-reference checks.
#[derive(Debug, Default)]
struct Places {
    criteria: Vec<Option<Placed<String>>>,
    items: Vec<ItemPlaces>,
    verification: Vec<Option<Placed<String>>>,
    degradable: Vec<Option<Placed<String>>>,
    rules: Vec<Option<Placed<String>>>,
    /// The work items `[related]` maps foreign evidence to.
    related_items: Vec<Option<Placed<String>>>,
}

/// Reads and checks a whole plan document. The plan is meaningful only when no problem was
/// found.
pub(super) fn read(root: &Node) -> (Plan, Vec<Raw>) {
    let mut reader = Reader::default();
    let plan = reader.plan(root);
    let Reader {
        mut problems,
        places,
    } = reader;
    cross_references(&places, &mut problems);
    (plan, problems)
}

#[derive(Default)]
struct Reader {
    problems: Vec<Raw>,
    places: Places,
}

/// A table being read: its members and where it starts.
struct Table<'n> {
    at: usize,
    path: String,
    members: &'n [Member],
}

impl<'n> Table<'n> {
    fn get(&self, key: &str) -> Option<&'n Node> {
        self.members
            .iter()
            .find(|member| member.key == key)
            .map(|member| &member.node)
    }

    fn field(&self, key: &str) -> String {
        join(&self.path, key)
    }

    /// Where `key` itself is written, when it is present.
    fn key_at(&self, key: &str) -> Option<usize> {
        self.members
            .iter()
            .find(|member| member.key == key)
            .map(|member| member.key_at)
    }
}

/// `path.key`, quoting a key that is not a bare TOML key.
fn join(path: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'));
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

fn indexed(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}

impl Reader {
    fn problem(&mut self, at: usize, field: impl Into<String>, rule: impl Into<String>) {
        self.problems.push(Raw {
            at,
            field: field.into(),
            rule: rule.into(),
        });
    }

    fn expected(&mut self, node: &Node, field: &str, expected: &str) {
        let found = node.value.kind();
        self.problem(
            node.at,
            field,
            format!("expected {expected}, found {found}"),
        );
    }

    /// The node as a table with only `allowed` keys (unknown keys are reported).
    fn table<'n>(&mut self, node: &'n Node, path: &str, allowed: &[&str]) -> Option<Table<'n>> {
        let Value::Table(members) = &node.value else {
            self.expected(node, path, "a table");
            return None;
        };
        for member in members {
            if !allowed.contains(&member.key.as_str()) {
                self.problem(
                    member.key_at,
                    join(path, &member.key),
                    format!("unknown key (expected one of: {})", allowed.join(", ")),
                );
            }
        }
        Some(Table {
            at: node.at,
            path: path.to_owned(),
            members,
        })
    }

    fn required<'n>(&mut self, table: &Table<'n>, key: &str) -> Option<&'n Node> {
        let node = table.get(key);
        if node.is_none() {
            self.problem(table.at, table.field(key), "missing required key");
        }
        node
    }

    fn string(&mut self, node: &Node, field: &str) -> Option<String> {
        if let Value::Str(text) = &node.value {
            Some(text.clone())
        } else {
            self.expected(node, field, "a string");
            None
        }
    }

    fn text(&mut self, node: &Node, field: &str) -> Option<String> {
        let text = self.string(node, field)?;
        if text.is_empty() {
            self.problem(node.at, field, "must not be empty");
            return None;
        }
        Some(text)
    }

    /// An id: a string that is a valid identity.
    fn id(&mut self, node: &Node, field: &str) -> Option<Placed<String>> {
        let text = self.string(node, field)?;
        if let Some(rule) = id_problem(&text) {
            self.problem(node.at, field, rule);
            return None;
        }
        Some(Placed {
            value: text,
            at: node.at,
            field: field.to_owned(),
        })
    }

    fn boolean(&mut self, node: &Node, field: &str) -> Option<bool> {
        if let Value::Bool(flag) = node.value {
            Some(flag)
        } else {
            self.expected(node, field, "a boolean");
            None
        }
    }

    fn bounded(&mut self, node: &Node, field: &str, min: u32, max: u32) -> Option<u32> {
        let Value::Int(number) = node.value else {
            self.expected(node, field, "an integer");
            return None;
        };
        match number.and_then(|number| u32::try_from(number).ok()) {
            Some(number) if (min..=max).contains(&number) => Some(number),
            _ => {
                let shown = number.map_or_else(|| "the number".to_owned(), |n| n.to_string());
                self.problem(
                    node.at,
                    field,
                    format!("{shown} is out of range ({min}..={max})"),
                );
                None
            }
        }
    }

    fn array<'n>(&mut self, node: &'n Node, field: &str, expected: &str) -> Option<&'n [Node]> {
        if let Value::Array(items) = &node.value {
            Some(items)
        } else {
            self.expected(node, field, expected);
            None
        }
    }

    /// An array of strings, each read by `each` (which reports its own problems).
    fn strings(
        &mut self,
        node: &Node,
        field: &str,
        mut each: impl FnMut(&mut Self, &Node, &str) -> Option<String>,
    ) -> Vec<String> {
        let Some(items) = self.array(node, field, "an array of strings") else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(index, item)| each(self, item, &indexed(field, index)))
            .collect()
    }

    /// A command line: a non-empty array of strings, the program not empty, no NUL anywhere.
    fn argv(&mut self, node: &Node, field: &str) -> Vec<String> {
        let Some(items) = self.array(node, field, "an array of strings") else {
            return Vec::new();
        };
        if items.is_empty() {
            self.problem(
                node.at,
                field,
                "must not be empty (argv[0] is the program to run)",
            );
            return Vec::new();
        }
        let mut argv = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let element = indexed(field, index);
            let Some(argument) = self.string(item, &element) else {
                continue;
            };
            if index == 0 && argument.is_empty() {
                self.problem(item.at, &element, "the program must not be empty");
            } else if argument.contains('\0') {
                self.problem(item.at, &element, "contains a NUL character");
            }
            argv.push(argument);
        }
        argv
    }

    /// `cwd`: `.` or a safe relative path.
    fn cwd(&mut self, table: &Table<'_>) -> String {
        let Some(node) = table.get("cwd") else {
            return ".".to_owned();
        };
        let field = table.field("cwd");
        let Some(cwd) = self.string(node, &field) else {
            return ".".to_owned();
        };
        if cwd != "." && !is_safe_relative(&cwd) {
            self.problem(
                node.at,
                &field,
                format!("{cwd:?} is neither \".\" nor a safe relative path"),
            );
        }
        cwd
    }

    fn timeout(&mut self, table: &Table<'_>) -> u32 {
        table
            .get("timeout_seconds")
            .and_then(|node| {
                self.bounded(
                    node,
                    &table.field("timeout_seconds"),
                    1,
                    MAX_TIMEOUT_SECONDS,
                )
            })
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }

    /// An optional boolean with its default.
    fn flag(&mut self, table: &Table<'_>, key: &str, default: bool) -> bool {
        table
            .get(key)
            .and_then(|node| self.boolean(node, &table.field(key)))
            .unwrap_or(default)
    }

    /// An optional description: a non-empty string.
    fn description(&mut self, table: &Table<'_>) -> Option<String> {
        let node = table.get("description")?;
        self.text(node, &table.field("description"))
    }

    /// The elements of an array of tables (`[[key]]`), each with its path.
    fn tables<'n>(&mut self, node: &'n Node, field: &str) -> Vec<(&'n Node, String)> {
        let Some(items) = self.array(node, field, "an array of tables") else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .map(|(index, item)| (item, indexed(field, index)))
            .collect()
    }

    fn plan(&mut self, root: &Node) -> Plan {
        let mut plan = Plan {
            task_id: String::new(),
            goal: String::new(),
            non_goals: Vec::new(),
            criteria: Vec::new(),
            work_items: Vec::new(),
            verification: Vec::new(),
            done: DoneSettings::default(),
            execution: Execution::default(),
            dimensions: None,
            related: None,
        };
        let Some(table) = self.table(root, "", ROOT_KEYS) else {
            return plan;
        };
        if let Some(node) = self.required(&table, "schema_version")
            && let Some(version) = self.string(node, "schema_version")
            && version != PLAN_SCHEMA
        {
            self.problem(
                node.at,
                "schema_version",
                format!("expected {PLAN_SCHEMA:?}, found {version:?}"),
            );
        }
        if let Some(node) = self.required(&table, "task_id")
            && let Some(id) = self.id(node, "task_id")
        {
            plan.task_id = id.value;
        }
        if let Some(node) = self.required(&table, "goal") {
            plan.goal = self.text(node, "goal").unwrap_or_default();
        }
        if let Some(node) = table.get("non_goals") {
            plan.non_goals = self.strings(node, "non_goals", Self::text);
        }
        if let Some(node) = self.required(&table, "criteria") {
            let criteria = self.tables(node, "criteria");
            if criteria.is_empty() && matches!(node.value, Value::Array(_)) {
                self.problem(node.at, "criteria", "must list at least one criterion");
            }
            for (item, path) in criteria {
                let (criterion, id) = self.criterion(item, &path);
                plan.criteria.push(criterion);
                self.places.criteria.push(id);
            }
        }
        if let Some(node) = self.required(&table, "work_items") {
            let items = self.tables(node, "work_items");
            if items.is_empty() && matches!(node.value, Value::Array(_)) {
                self.problem(node.at, "work_items", "must list at least one work item");
            }
            for (item, path) in items {
                let (work_item, places) = self.work_item(item, &path);
                plan.work_items.push(work_item);
                self.places.items.push(places);
            }
        }
        if let Some(node) = table.get("verification") {
            for (item, path) in self.tables(node, "verification") {
                let (verification, id) = self.verification(item, &path);
                plan.verification.push(verification);
                self.places.verification.push(id);
            }
        }
        if let Some(node) = table.get("done") {
            plan.done = self.done(node);
        }
        if let Some(node) = table.get("execution") {
            plan.execution = self.execution(node);
        }
        if let Some(node) = table.get("dimensions") {
            plan.dimensions = Some(self.dimensions(node));
        }
        if let Some(node) = table.get("related") {
            plan.related = Some(self.related(node));
        }
        plan
    }

    fn criterion(&mut self, node: &Node, path: &str) -> (Criterion, Option<Placed<String>>) {
        let mut criterion = Criterion {
            id: String::new(),
            description: String::new(),
            required: true,
            not_applicable_allowed: false,
            verify: None,
        };
        let Some(table) = self.table(node, path, CRITERION_KEYS) else {
            return (criterion, None);
        };
        let id = self
            .required(&table, "id")
            .and_then(|node| self.id(node, &table.field("id")));
        if let Some(id) = &id {
            criterion.id.clone_from(&id.value);
        }
        if let Some(node) = self.required(&table, "description") {
            criterion.description = self
                .text(node, &table.field("description"))
                .unwrap_or_default();
        }
        criterion.required = self.flag(&table, "required", true);
        criterion.not_applicable_allowed = self.flag(&table, "not_applicable_allowed", false);
        if let Some(node) = table.get("verify") {
            criterion.verify = Some(self.argv(node, &table.field("verify")));
        }
        (criterion, id)
    }

    fn work_item(&mut self, node: &Node, path: &str) -> (PlanItem, ItemPlaces) {
        let mut item = PlanItem {
            id: String::new(),
            description: None,
            requirement: Requirement::Required,
            dependencies: Vec::new(),
            run: placeholder_run(),
            expected_evidence: Vec::new(),
        };
        let mut places = ItemPlaces::default();
        let Some(table) = self.table(node, path, ITEM_KEYS) else {
            return (item, places);
        };
        places.id = self
            .required(&table, "id")
            .and_then(|node| self.id(node, &table.field("id")));
        if let Some(id) = &places.id {
            item.id.clone_from(&id.value);
        }
        item.description = self.description(&table);
        if let Some(node) = self.required(&table, "requirement") {
            let field = table.field("requirement");
            if let Some(text) = self.string(node, &field) {
                match Requirement::from_wire(&text) {
                    Some(requirement) => {
                        item.requirement = requirement;
                        places.requirement = Some(requirement);
                    }
                    None => self.problem(
                        node.at,
                        &field,
                        format!(
                            "unknown requirement {text:?} (expected required, optional or soft)"
                        ),
                    ),
                }
            }
        }
        if let Some(node) = table.get("dependencies") {
            let field = table.field("dependencies");
            for (edge, edge_path) in self.tables(node, &field) {
                let (dependency, target) = self.dependency(edge, &edge_path);
                item.dependencies.push(dependency);
                places.dependencies.push(target);
            }
        }
        if let Some(node) = self.required(&table, "run") {
            item.run = self.run(node, &table.field("run"));
        }
        if let Some(node) = table.get("expected_evidence") {
            item.expected_evidence = self.paths(node, &table.field("expected_evidence"));
        }
        (item, places)
    }

    fn dependency(&mut self, node: &Node, path: &str) -> (PlanDependency, Option<Placed<String>>) {
        let mut dependency = PlanDependency {
            id: String::new(),
            kind: DependencyKind::Hard,
        };
        if let Value::Str(text) = &node.value {
            self.problem(
                node.at,
                path,
                format!(
                    "expected a table such as {{ id = {text:?}, kind = \"hard\" }}, found a string"
                ),
            );
            return (dependency, None);
        }
        let Some(table) = self.table(node, path, DEPENDENCY_KEYS) else {
            return (dependency, None);
        };
        let target = self
            .required(&table, "id")
            .and_then(|node| self.id(node, &table.field("id")));
        if let Some(target) = &target {
            dependency.id.clone_from(&target.value);
        }
        if let Some(node) = table.get("kind") {
            let field = table.field("kind");
            if let Some(text) = self.string(node, &field) {
                match DependencyKind::from_plan(&text) {
                    Some(kind) => dependency.kind = kind,
                    None => self.problem(
                        node.at,
                        &field,
                        format!(
                            "unknown dependency kind {text:?} (expected hard, soft or optional)"
                        ),
                    ),
                }
            }
        }
        (dependency, target)
    }

    fn run(&mut self, node: &Node, path: &str) -> Run {
        let mut run = placeholder_run();
        let Some(table) = self.table(node, path, RUN_KEYS) else {
            return run;
        };
        // A missing or unknown adapter is reported once, and the rest of the table is checked
        // as a process run, the adapter most plans use.
        if let Some(node) = self.required(&table, "adapter") {
            let field = table.field("adapter");
            if let Some(text) = self.string(node, &field) {
                if let Some(adapter) = Adapter::from_plan(&text) {
                    run.adapter = adapter;
                } else {
                    let known = ADAPTERS
                        .iter()
                        .map(|name| format!("{name:?}"))
                        .collect::<Vec<_>>()
                        .join(", ");
                    self.problem(
                        node.at,
                        &field,
                        format!("unknown adapter {text:?} (known: {known})"),
                    );
                }
            }
        }
        run.cwd = self.cwd(&table);
        if run.adapter != Adapter::Tmux {
            for (key, rule) in TMUX_ONLY {
                // A headless agent is named by `agent` too, and may be given a `prompt`.
                if run.adapter == Adapter::AgentStream && matches!(*key, "agent" | "prompt") {
                    continue;
                }
                if let Some(at) = table.key_at(key) {
                    self.problem(at, table.field(key), *rule);
                }
            }
        }
        match run.adapter {
            Adapter::Process | Adapter::AgentStream => {
                if run.adapter == Adapter::AgentStream {
                    run.stream = self.stream_agent(&table);
                }
                if let Some(node) = self.required(&table, "argv") {
                    run.argv = self.argv(node, &table.field("argv"));
                }
                run.timeout_seconds = self.timeout(&table);
                if let Some(node) = table.get("env") {
                    run.env = self.env(node, &table.field("env"));
                }
            }
            Adapter::External => {
                // valp runs nothing for an external item, so a command, its environment or a
                // timeout would be promises nobody keeps.
                run.timeout_seconds = 0;
                for (key, rule) in [
                    ("argv", "only the process adapter runs a command"),
                    ("env", "only the process adapter runs a command"),
                    (
                        "timeout_seconds",
                        "only the process adapter enforces a timeout (stop an external attempt \
                         with `valp cancel`)",
                    ),
                ] {
                    if let Some(at) = table.key_at(key) {
                        self.problem(at, table.field(key), rule);
                    }
                }
            }
            Adapter::Tmux => {
                run.timeout_seconds = self.timeout(&table);
                run.tmux = self.tmux(&table);
            }
        }
        run
    }

    /// The members of an `agent-stream` run: `agent` (whose stream its argv prints, `claude`
    /// or `codex`) and an optional `prompt` for its stdin.
    fn stream_agent(&mut self, table: &Table<'_>) -> Option<crate::plan::StreamRun> {
        let prompt = table.get("prompt").and_then(|node| {
            let text = self.text(node, &table.field("prompt"))?;
            if text.contains('\0') {
                self.problem(node.at, table.field("prompt"), "contains a NUL character");
            }
            Some(text)
        });
        let node = self.required(table, "agent")?;
        let field = table.field("agent");
        let name = self.string(node, &field)?;
        let stream = crate::agent::channel::stream::Stream::from_name(&name)
            .map(|agent| crate::plan::StreamRun { agent, prompt });
        if stream.is_none() {
            self.problem(
                node.at,
                &field,
                format!(
                    "unknown stream agent {name:?} (known: \"claude\" for claude -p \
                     --output-format stream-json, \"codex\" for codex exec --json)"
                ),
            );
        }
        stream
    }

    /// The `tmux` members of a run table: a known agent profile, exactly one of `command`
    /// and `target`, a prompt, an optional socket name. `argv` and `env` are refused: the
    /// agent is started by `command` in a tmux window, whose environment is the server's.
    fn tmux(&mut self, table: &Table<'_>) -> Option<TmuxRun> {
        for (key, rule) in [
            ("argv", "a tmux item starts its agent with `command`"),
            (
                "env",
                "a tmux item's agent runs in the tmux server's environment",
            ),
        ] {
            if let Some(at) = table.key_at(key) {
                self.problem(at, table.field(key), rule);
            }
        }
        let agent = self.required(table, "agent").and_then(|node| {
            let field = table.field("agent");
            let name = self.string(node, &field)?;
            if Profile::builtin(&name).is_err() {
                let known = Profile::builtin_texts()
                    .iter()
                    .map(|(known, _)| format!("{known:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                self.problem(
                    node.at,
                    &field,
                    format!("unknown agent {name:?} (known: {known})"),
                );
                return None;
            }
            Some(name)
        });
        let pane = match (table.get("command"), table.get("target")) {
            (Some(command), None) => {
                let argv = self.argv(command, &table.field("command"));
                (!argv.is_empty()).then_some(TmuxPane::Command(argv))
            }
            (None, Some(target)) => {
                let field = table.field("target");
                match self.string(target, &field) {
                    Some(id) if is_pane_id(&id) => Some(TmuxPane::Target(id)),
                    Some(id) => {
                        self.problem(
                            target.at,
                            &field,
                            format!("{id:?} is not a tmux pane id (`%` and digits, e.g. \"%3\")"),
                        );
                        None
                    }
                    None => None,
                }
            }
            (Some(_), Some(target)) => {
                self.problem(
                    target.at,
                    table.field("target"),
                    "give `command` (start the agent) or `target` (an existing pane), not both",
                );
                None
            }
            (None, None) => {
                self.problem(
                    table.at,
                    table.field("command"),
                    "missing: give `command` (start the agent) or `target` (an existing pane)",
                );
                None
            }
        };
        let prompt = self
            .required(table, "prompt")
            .and_then(|node| self.text(node, &table.field("prompt")));
        if let (Some(node), Some(text)) = (table.get("prompt"), prompt.as_deref())
            && text.contains('\0')
        {
            self.problem(node.at, table.field("prompt"), "contains a NUL character");
        }
        let socket = self.socket(table);
        let workdir = self.workdir(table, pane.as_ref());
        Some(TmuxRun {
            agent: agent?,
            pane: pane?,
            prompt: prompt?,
            socket,
            workdir,
        })
    }

    /// `socket`: a tmux socket name (letters, digits, `_`, `-`).
    fn socket(&mut self, table: &Table<'_>) -> Option<String> {
        table.get("socket").and_then(|node| {
            let field = table.field("socket");
            let name = self.string(node, &field)?;
            let valid = !name.is_empty()
                && name.len() <= MAX_SOCKET_CHARS
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-'));
            if !valid {
                self.problem(
                    node.at,
                    &field,
                    format!(
                        "{name:?} is not a socket name (1 to {MAX_SOCKET_CHARS} letters, digits, \
                         '_' or '-')"
                    ),
                );
            }
            Some(name)
        })
    }

    /// `workdir`: `shared` (the default) or `worktree`, which a targeted pane cannot have (it
    /// runs where the Leader started it).
    fn workdir(&mut self, table: &Table<'_>, pane: Option<&TmuxPane>) -> Workdir {
        let Some(node) = table.get("workdir") else {
            return Workdir::Shared;
        };
        let field = table.field("workdir");
        let Some(text) = self.string(node, &field) else {
            return Workdir::Shared;
        };
        match Workdir::from_plan(&text) {
            Some(Workdir::Worktree) if matches!(pane, Some(TmuxPane::Target(_))) => {
                self.problem(
                    node.at,
                    &field,
                    "a targeted pane works where the Leader started it; `workdir = \"worktree\"` \
                     needs `command`",
                );
                Workdir::Shared
            }
            Some(workdir) => workdir,
            None => {
                self.problem(
                    node.at,
                    &field,
                    format!("unknown workdir {text:?} (known: \"shared\", \"worktree\")"),
                );
                Workdir::Shared
            }
        }
    }

    fn env(&mut self, node: &Node, path: &str) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let Value::Table(members) = &node.value else {
            self.expected(node, path, "a table of strings");
            return env;
        };
        for member in members {
            let field = join(path, &member.key);
            if member.key.is_empty() || member.key.contains(['=', '\0']) {
                self.problem(
                    member.key_at,
                    &field,
                    "not a valid environment variable name (empty, or contains '=' or NUL)",
                );
            }
            if let Some(value) = self.string(&member.node, &field) {
                if value.contains('\0') {
                    self.problem(member.node.at, &field, "contains a NUL character");
                }
                env.insert(member.key.clone(), value);
            }
        }
        env
    }

    /// `expected_evidence`: safe relative paths, each once.
    fn paths(&mut self, node: &Node, field: &str) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.strings(node, field, |reader, item, element| {
            let path = reader.string(item, element)?;
            if !is_safe_relative(&path) {
                reader.problem(
                    item.at,
                    element,
                    format!("{path:?} is not a safe relative path"),
                );
            } else if !seen.insert(path.clone()) {
                reader.problem(item.at, element, format!("{path:?} is listed twice"));
            }
            Some(path)
        })
    }

    fn verification(&mut self, node: &Node, path: &str) -> (Verification, Option<Placed<String>>) {
        let mut verification = Verification {
            id: String::new(),
            argv: Vec::new(),
            cwd: ".".to_owned(),
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        };
        let Some(table) = self.table(node, path, VERIFICATION_KEYS) else {
            return (verification, None);
        };
        let id = self
            .required(&table, "id")
            .and_then(|node| self.id(node, &table.field("id")));
        if let Some(id) = &id {
            verification.id.clone_from(&id.value);
        }
        if let Some(node) = self.required(&table, "argv") {
            verification.argv = self.argv(node, &table.field("argv"));
        }
        verification.cwd = self.cwd(&table);
        verification.timeout_seconds = self.timeout(&table);
        (verification, id)
    }

    fn done(&mut self, node: &Node) -> DoneSettings {
        let mut done = DoneSettings::default();
        let Some(table) = self.table(node, "done", DONE_KEYS) else {
            return done;
        };
        done.skippable_optional_items = self.flag(&table, "skippable_optional_items", false);
        if let Some(node) = table.get("degradable_soft_items") {
            let field = table.field("degradable_soft_items");
            let mut places = Vec::new();
            done.degradable_soft_items = self.strings(node, &field, |reader, item, element| {
                let id = reader.id(item, element);
                let value = id.as_ref().map(|id| id.value.clone());
                places.push(id);
                value
            });
            self.places.degradable = places;
        }
        done
    }

    fn dimensions(&mut self, node: &Node) -> Dimensions {
        let mut section = Dimensions {
            version: SUPPORTED_VERSION,
            ..Dimensions::default()
        };
        let Some(table) = self.table(node, "dimensions", DIMENSIONS_KEYS) else {
            return section;
        };
        if let Some(node) = self.required(&table, "version") {
            match node.value {
                Value::Int(Some(version)) if version == i128::from(SUPPORTED_VERSION) => {}
                Value::Int(version) => {
                    let shown = version.map_or_else(|| "the number".to_owned(), |n| n.to_string());
                    self.problem(
                        node.at,
                        "dimensions.version",
                        format!(
                            "{UNSUPPORTED_VERSION}: version {shown} is not supported \
                             (supported: {SUPPORTED_VERSION})"
                        ),
                    );
                }
                _ => self.expected(node, "dimensions.version", "an integer"),
            }
        }
        for &dimension in Dimension::ALL {
            if let Some(node) = table.get(dimension.as_str()) {
                let field = table.field(dimension.as_str());
                *section.gates.get_mut(dimension) = self.gate(node, &field, dimension);
            }
        }
        section
    }

    fn gate(&mut self, node: &Node, path: &str, dimension: Dimension) -> GatePolicy {
        let mut gate = GatePolicy::default();
        let Some(table) = self.table(node, path, GATE_KEYS) else {
            return gate;
        };
        gate.required = self.flag(&table, "required", false);
        // Rules that were listed but are wrong are reported where they are, not again here.
        let mut listed = 0;
        if let Some(node) = table.get("rules") {
            let rules = self.tables(node, &table.field("rules"));
            listed = rules.len();
            for (item, field) in rules {
                if let Some(rule) = self.rule(item, &field, dimension) {
                    gate.rules.push(rule);
                }
            }
        }
        if gate.required && listed == 0 {
            self.problem(
                table.at,
                table.field("rules"),
                "a required gate needs at least one rule",
            );
        }
        gate
    }

    fn rule(&mut self, node: &Node, path: &str, dimension: Dimension) -> Option<DimensionRule> {
        let table = self.table(node, path, RULE_KEYS)?;
        let id = self
            .required(&table, "rule_id")
            .and_then(|node| self.id(node, &table.field("rule_id")));
        self.places.rules.push(id.clone());
        let measure = self.required(&table, "measure").and_then(|node| {
            let field = table.field("measure");
            let name = self.string(node, &field)?;
            match dimensions::measure(&name) {
                Some(known) if known.dimension == dimension => Some(name),
                Some(known) => {
                    self.problem(
                        node.at,
                        &field,
                        format!(
                            "{name:?} is a {} measure, not a {dimension} one",
                            known.dimension
                        ),
                    );
                    None
                }
                None => {
                    let known: Vec<&str> = dimensions::MEASURES
                        .iter()
                        .filter(|measure| measure.dimension == dimension)
                        .map(|measure| measure.name)
                        .collect();
                    self.problem(
                        node.at,
                        &field,
                        format!(
                            "unknown measure {name:?} (expected one of: {})",
                            known.join(", ")
                        ),
                    );
                    None
                }
            }
        });
        let operator = self.required(&table, "operator").and_then(|node| {
            let field = table.field("operator");
            let text = self.string(node, &field)?;
            if Operator::from_wire(&text).is_none() {
                let known: Vec<&str> = Operator::ALL.iter().map(|op| op.as_str()).collect();
                self.problem(
                    node.at,
                    &field,
                    format!(
                        "{UNSUPPORTED_OPERATOR}: operator {text:?} is not supported \
                         (expected one of: {})",
                        known.join(", ")
                    ),
                );
                return None;
            }
            Some(text)
        });
        let threshold = self
            .required(&table, "threshold")
            .and_then(|node| match node.value {
                Value::Int(Some(number)) => Some(number),
                Value::Int(None) => {
                    self.problem(
                        node.at,
                        table.field("threshold"),
                        "the number is out of range",
                    );
                    None
                }
                _ => {
                    self.expected(node, &table.field("threshold"), "an integer");
                    None
                }
            });
        Some(DimensionRule {
            rule_id: id?.value,
            measure: measure?,
            operator: operator?,
            threshold: threshold?,
        })
    }

    fn execution(&mut self, node: &Node) -> Execution {
        let mut execution = Execution::default();
        let Some(table) = self.table(node, "execution", EXECUTION_KEYS) else {
            return execution;
        };
        if let Some(node) = table.get("max_concurrency") {
            execution.max_concurrency = self
                .bounded(node, "execution.max_concurrency", 1, MAX_CONCURRENCY)
                .unwrap_or(DEFAULT_MAX_CONCURRENCY);
        }
        if let Some(node) = table.get("retry_budget") {
            execution.retry_budget = self
                .bounded(node, "execution.retry_budget", 1, MAX_RETRY_BUDGET)
                .unwrap_or(DEFAULT_RETRY_BUDGET);
        }
        if let Some(node) = table.get("approval") {
            let field = table.field("approval");
            match self.string(node, &field).as_deref() {
                Some("required") => execution.approval_required = true,
                Some("none") | None => {}
                Some(other) => self.problem(
                    node.at,
                    &field,
                    format!("unknown approval {other:?} (known: \"none\", \"required\")"),
                ),
            }
        }
        execution
    }
}

/// Why `text` is not a valid id (task, work item, criterion or verification id), if it is not.
/// The run a work item has until its `run` table is read (and when it cannot be).
fn placeholder_run() -> Run {
    Run {
        adapter: Adapter::Process,
        argv: Vec::new(),
        cwd: ".".to_owned(),
        timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        env: BTreeMap::new(),
        tmux: None,
        stream: None,
    }
}

/// A tmux pane id as `tmux display -p '#{pane_id}'` prints it: `%` then decimal digits.
fn is_pane_id(text: &str) -> bool {
    text.strip_prefix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

pub(super) fn id_problem(text: &str) -> Option<String> {
    let reason = if text.is_empty() {
        return Some("must not be empty".to_owned());
    } else if text.chars().count() > MAX_ID_CHARS {
        format!("longer than {MAX_ID_CHARS} characters")
    } else if text.chars().any(char::is_control) {
        "contains a control character".to_owned()
    } else if text.contains(['/', '\\']) {
        "contains a path separator ('/' or '\\')".to_owned()
    } else if text == "." || text == ".." {
        format!("{text:?} is not a usable name")
    } else {
        return None;
    };
    Some(format!("not a valid id: {reason}"))
}

/// The rules between values: unique ids, dependency targets, cycles, degradable items.
fn cross_references(places: &Places, problems: &mut Vec<Raw>) {
    unique("criterion", &places.criteria, problems);
    let items: Vec<Option<Placed<String>>> =
        places.items.iter().map(|item| item.id.clone()).collect();
    let index = unique("work item", &items, problems);
    unique("verification", &places.verification, problems);
    unique("dimension rule", &places.rules, problems);

    let mut edges: Vec<Vec<(usize, &Placed<String>)>> = vec![Vec::new(); places.items.len()];
    for (from, item) in places.items.iter().enumerate() {
        let mut listed = BTreeSet::new();
        for target in item.dependencies.iter().flatten() {
            let name = &target.value;
            let problem = |rule: String| Raw {
                at: target.at,
                field: target.field.clone(),
                rule,
            };
            if item.id.as_ref().is_some_and(|id| &id.value == name) {
                problems.push(problem(format!("work item {name:?} depends on itself")));
            } else if !listed.insert(name.as_str()) {
                problems.push(problem(format!("{name:?} is listed twice")));
            } else if let Some(&to) = index.get(name.as_str()) {
                edges[from].push((to, target));
            } else {
                problems.push(problem(format!("unknown work item {name:?}")));
            }
        }
    }
    let adjacency: Vec<Vec<usize>> = edges
        .iter()
        .map(|out| out.iter().map(|(to, _)| *to).collect())
        .collect();
    for cycle in graph::cycles(&adjacency) {
        let (Some(&first), Some(&second)) = (cycle.first(), cycle.get(1)) else {
            continue;
        };
        let Some((_, target)) = edges[first].iter().find(|(to, _)| *to == second) else {
            continue;
        };
        let names: Vec<&str> = cycle
            .iter()
            .filter_map(|&node| places.items[node].id.as_ref())
            .map(|id| id.value.as_str())
            .collect();
        problems.push(Raw {
            at: target.at,
            field: target.field.clone(),
            rule: format!("dependency cycle: {}", names.join(" -> ")),
        });
    }

    for entry in places.related_items.iter().flatten() {
        if !index.contains_key(entry.value.as_str()) {
            problems.push(Raw {
                at: entry.at,
                field: entry.field.clone(),
                rule: format!("unknown work item {:?}", entry.value),
            });
        }
    }

    let mut listed = BTreeSet::new();
    for entry in places.degradable.iter().flatten() {
        let name = &entry.value;
        let rule = if !listed.insert(name.as_str()) {
            format!("{name:?} is listed twice")
        } else if let Some(&item) = index.get(name.as_str()) {
            match places.items[item].requirement {
                Some(Requirement::Soft) | None => continue,
                Some(other) => {
                    format!("{name:?} is not a soft work item (its requirement is {other})")
                }
            }
        } else {
            format!("unknown work item {name:?}")
        };
        problems.push(Raw {
            at: entry.at,
            field: entry.field.clone(),
            rule,
        });
    }
}

/// Reports every id used a second time; returns each id's first index.
fn unique<'p>(
    what: &str,
    ids: &'p [Option<Placed<String>>],
    problems: &mut Vec<Raw>,
) -> BTreeMap<&'p str, usize> {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    for (index, id) in ids.iter().enumerate() {
        let Some(id) = id else { continue };
        if let Some(&earlier) = first.get(id.value.as_str()) {
            let earlier_field = ids[earlier]
                .as_ref()
                .map_or_else(String::new, |earlier| earlier.field.clone());
            problems.push(Raw {
                at: id.at,
                field: id.field.clone(),
                rule: format!(
                    "duplicate {what} id {:?} (first at {earlier_field})",
                    id.value
                ),
            });
        } else {
            first.insert(id.value.as_str(), index);
        }
    }
    first
}
