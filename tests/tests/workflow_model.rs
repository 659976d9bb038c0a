//! A model check of the Operator Workflow: the state space of the System (`workflow::decide`
//! against the real kernel), simulated process adapters whose attempts stay in flight across
//! steps, and the Leader acting at every point, explored breadth first.
//!
//! A state is the task's kernel State (its body: status, control, work items and attempts),
//! the simulated adapters (per attempt: launched, accepted, its final word, whether its
//! process runs), the fenced predecessor after a rotation, and how many Leader actions the path
//! used. From every state, every enabled transition is taken:
//!
//! - the System's next step (propose the event; launch an attempt; verification passing or
//!   failing; the Done record), unless the task is bound to a fenced epoch;
//! - each running attempt's adapter reporting `accepted`, then `completed` or `blocked`;
//! - each Leader action the console offers (bounded per path): cancel the task or one work item,
//!   interrupt with and without `--signal`, resume, redirect superseding one item or none,
//!   review pass and reject, approval grant and deny, retry each blocked work item, recover,
//!   leader rotation then the handoff, and a console restart (the System keeps nothing in
//!   memory that decides a step, so a restart rebuilds the same reports from the adapters'
//!   folders: the model re-derives them and checks the decision is the same).
//!
//! Invariants, checked in every state reached:
//! 1. the kernel accepts every event the System proposes;
//! 2. a non-terminal state the System cannot leave by itself offers the Leader a way forward
//!    other than cancelling the task (task cancel, interrupt and redirect are legal almost
//!    everywhere and do not count): an operation among resume, review, approval, retry and
//!    recover that the kernel accepts, named in the System's words; or, after a rotation, the
//!    handoff. The System hands over to the Leader only when no attempt is live (else its
//!    words would hide work in flight whose end it would never record), and it waits for work
//!    in flight only while a process runs;
//!    Stronger: unless the Leader cancelled a required work item, `done` stays reachable
//!    from every state for a willing Leader (resume, review pass, approval, retry, recover);
//! 3. an adapter's final word that the journal does not show is explained
//!    ([`workflow::unapplied`]); the console's work-item status is the journal's by
//!    construction (it is read from the State's body), so there is nothing else to compare;
//! 4. after a handoff, no process of the fenced epoch runs;
//! 5. no attempt is handed to its adapter twice.
//!
//! The bounded exploration runs in the test suite; the long one (more plans, more Leader
//! actions per path) is `cargo test --release -p valp-tests --test workflow_model -- --ignored
//! --nocapture` and prints its figures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::path::Path;

use valp_kernel::canonical::sha256_digest;
use valp_kernel::{
    AttemptStatus, EventKind, IdentityKind, State, StateBody, TaskStatus, WorkItemStatus,
};
use valp_runtime::abi::ObservationStatus;
use valp_runtime::authority::handoff::unfinished_work;
use valp_runtime::runtime::control::Operation;
use valp_runtime::runtime::workflow::{
    AttemptReport, EvidenceNeed, ExecutionPolicy, Step, Wait, decide, unapplied,
};
use valp_tests::workflow::{accepted, event_of, evidence, id, leader};

/// A simulated process attempt, as its folder tells it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Sim {
    /// The task it belongs to.
    task: String,
    /// The adapter took its request.
    accepted: bool,
    /// Its final word.
    last: Option<ObservationStatus>,
    /// Its process runs.
    running: bool,
}

#[derive(Debug, Clone)]
struct Node {
    /// The task the System drives (the successor after a handoff).
    task: State,
    /// The task's epoch was fenced by a rotation; the handoff has not happened yet.
    rotated: bool,
    /// The predecessor, once handed over.
    fenced: Option<String>,
    /// Every attempt ever launched, by attempt id.
    attempts: BTreeMap<String, Sim>,
    /// Leader actions taken on the path.
    moves: u8,
    /// Rotations on the path.
    rotations: u8,
    depth: usize,
}

impl Node {
    /// What identifies the state: the SHA-256 of everything but the history (acceptance never
    /// depends on it: event ids carry the revision, so no event of the System or the Leader is
    /// a duplicate). A digest, not the text, keeps millions of states in memory.
    fn key(&self) -> String {
        sha256_digest(self.describe().as_bytes())
    }

    /// The state in words (what [`Node::key`] digests; shown with a violation).
    fn describe(&self) -> String {
        let body = &self.task.body;
        format!(
            "{}|{}|{}|{:?}|{:?}|{:?}|{}|{:?}|{:?}|{}|{}",
            body.task_id.value(),
            body.leader_epoch,
            body.status.as_str(),
            body.control,
            body.work_items,
            body.suspension,
            self.rotated,
            self.fenced,
            self.attempts,
            self.moves,
            self.rotations
        )
    }
}

/// What the exploration found.
#[derive(Debug, Default)]
struct Figures {
    states: usize,
    transitions: usize,
    max_depth: usize,
    checks: usize,
    violations: Vec<String>,
    terminal: BTreeMap<&'static str, usize>,
}

struct Model {
    policy: ExecutionPolicy,
    max_moves: u8,
    max_depth: usize,
    name: String,
    /// Whether `done` is reachable from a state (by key), as [`Model::reaches_done`] found.
    done_reachable: std::cell::RefCell<std::collections::HashMap<String, bool>>,
}

fn reports(node: &Node) -> BTreeMap<String, AttemptReport> {
    node.attempts
        .iter()
        .map(|(attempt, sim)| {
            (
                attempt.clone(),
                AttemptReport {
                    launched: true,
                    accepted: sim.accepted,
                    last: sim.last,
                    supervisor_lost: false,
                },
            )
        })
        .collect()
}

/// The attempt an `adapter_cancel:` obligation names.
fn obligation_attempt(obligation: &str) -> String {
    let json = obligation.trim_start_matches("adapter_cancel:");
    let value: serde_json::Value = serde_json::from_str(json).unwrap();
    value["attempt_id"].as_str().unwrap().to_owned()
}

/// The supervisor confirms a cancel: the process stops, its final word is `cancelled`.
fn cancel(attempts: &mut BTreeMap<String, Sim>, attempt: &str) {
    if let Some(sim) = attempts.get_mut(attempt)
        && sim.running
    {
        sim.running = false;
        sim.last = Some(ObservationStatus::Cancelled);
    }
}

/// Whether the journal shows the adapter's final word (so nothing needs explaining).
fn shown(body: &StateBody, attempt: &str, last: ObservationStatus) -> bool {
    body.work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .find(|current| current.attempt_id.value() == attempt)
        .is_some_and(|current| {
            matches!(
                (last, current.status),
                (ObservationStatus::Completed, AttemptStatus::Completed)
                    | (ObservationStatus::Cancelled, AttemptStatus::Cancelled)
                    | (_, AttemptStatus::Fenced | AttemptStatus::Failed)
            )
        })
}

/// The Leader's operations the console offers on this State.
fn operations(body: &StateBody) -> Vec<(String, Operation, bool)> {
    let mut all = vec![
        ("cancel task".to_owned(), Operation::CancelTask, false),
        ("interrupt".to_owned(), Operation::Interrupt, false),
        ("interrupt --signal".to_owned(), Operation::Interrupt, true),
        ("resume".to_owned(), Operation::Resume, false),
        (
            "redirect".to_owned(),
            Operation::Redirect {
                superseded: Vec::new(),
                intent: b"again".to_vec(),
            },
            false,
        ),
        ("review pass".to_owned(), Operation::Review(true), false),
        ("review reject".to_owned(), Operation::Review(false), false),
        ("approve".to_owned(), Operation::Approval(true), false),
        ("deny".to_owned(), Operation::Approval(false), false),
        ("recover".to_owned(), Operation::Recover, false),
    ];
    for item in &body.work_items {
        let item_id = item.work_item_id.value().to_owned();
        if !item.status.is_terminal() {
            all.push((
                format!("cancel {item_id}"),
                Operation::CancelItem(item_id.clone()),
                false,
            ));
            all.push((
                format!("redirect superseding {item_id}"),
                Operation::Redirect {
                    superseded: vec![item_id.clone()],
                    intent: b"narrower".to_vec(),
                },
                false,
            ));
        }
        if item.status == WorkItemStatus::Blocked {
            all.push((format!("retry {item_id}"), Operation::Retry(item_id), false));
        }
    }
    all
}

/// The ways forward that count for invariant 2, and the words that name each.
fn forward(operation: &Operation) -> Option<&'static str> {
    match operation {
        Operation::Resume => Some("resume"),
        Operation::Review(_) => Some("valp review"),
        Operation::Approval(_) => Some("valp approve"),
        Operation::Retry(_) => Some("valp retry"),
        Operation::Recover => Some("valp unblock"),
        _ => None,
    }
}

/// `node` one step deeper.
fn child(node: &Node) -> Node {
    Node {
        depth: node.depth + 1,
        ..node.clone()
    }
}

/// Each running attempt's adapter: `accepted`, then `completed` or `blocked`.
fn adapter_moves(node: &Node, next: &mut Vec<(String, Node)>) {
    for (attempt, sim) in &node.attempts {
        if !sim.running {
            continue;
        }
        if sim.accepted {
            for last in [ObservationStatus::Completed, ObservationStatus::Blocked] {
                let mut after = child(node);
                let sim = after.attempts.get_mut(attempt).unwrap();
                sim.running = false;
                sim.last = Some(last);
                next.push((format!("{attempt} {}", last.as_str()), after));
            }
        } else {
            let mut after = child(node);
            after.attempts.get_mut(attempt).unwrap().accepted = true;
            next.push((format!("{attempt} accepted"), after));
        }
    }
}

/// `interrupt --signal`: SIGINT ends the commands of the attempts the kernel holds in flight
/// (as `control::signal_running` selects them); they fail.
fn signal_running(body: &StateBody, attempts: &mut BTreeMap<String, Sim>) {
    for current in body
        .work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .filter(|attempt| {
            matches!(
                attempt.status,
                AttemptStatus::Submitted | AttemptStatus::Running
            )
        })
    {
        if let Some(sim) = attempts.get_mut(current.attempt_id.value())
            && sim.running
        {
            sim.running = false;
            sim.last = Some(ObservationStatus::Blocked);
        }
    }
}

impl Model {
    fn context(&self, node: &Node, what: &str) -> String {
        format!(
            "[{}] {what} at depth {} in {}",
            self.name,
            node.depth,
            node.describe()
        )
    }

    /// The Leader's willing continuation from `node`: the adapters complete what runs, the
    /// Leader resumes, passes reviews, grants approvals, retries blocked items and recovers
    /// (nothing else), the System steps. Whether that reaches `done`.
    fn reaches_done(&self, node: &Node) -> bool {
        let mut node = node.clone();
        let mut path = Vec::new();
        let result = loop {
            let key = node.key();
            if let Some(&known) = self.done_reachable.borrow().get(&key) {
                break known;
            }
            if path.contains(&key) || path.len() > 400 {
                break false; // a cycle: the willing Leader goes round without getting anywhere
            }
            path.push(key);
            let Some(next) = self.willing_step(&node) else {
                break node.task.body.status.known() == Some(TaskStatus::Done);
            };
            node = next;
        };
        let mut memo = self.done_reachable.borrow_mut();
        for key in path {
            memo.insert(key, result);
        }
        result
    }

    /// One step of [`Model::reaches_done`]'s continuation; `None` at a terminal status.
    fn willing_step(&self, node: &Node) -> Option<Node> {
        if node.rotated {
            return Some(self.hand_over(node));
        }
        let body = &node.task.body;
        if body.status.known().is_some_and(TaskStatus::is_terminal) {
            return None;
        }
        let mut after = node.clone();
        let system = |kind, proposal, need: &EvidenceNeed| {
            let event = event_of(&node.task, kind, proposal);
            accepted(&node.task, &event, &evidence(need, &event)).map(|result| result.state)
        };
        let leader_does = |operation: &Operation| {
            leader(&node.task, operation, self.policy.approval).map(|(state, _)| state)
        };
        let state = match decide(body, &self.policy, &reports(node), false) {
            Step::Propose(proposal) => system(proposal.kind, Some(&proposal), &proposal.evidence),
            Step::Verify => system(EventKind::VerificationPassed, None, &EvidenceNeed::Final),
            Step::Record => system(EventKind::RecordingCompleted, None, &EvidenceNeed::Nothing),
            Step::Launch(slots) => {
                after.attempts.insert(
                    slots.attempt_id,
                    Sim {
                        task: body.task_id.value().to_owned(),
                        accepted: true,
                        last: Some(ObservationStatus::Completed),
                        running: false,
                    },
                );
                return Some(after);
            }
            Step::Wait(Wait::InFlight(_)) => {
                for sim in after.attempts.values_mut().filter(|sim| sim.running) {
                    sim.running = false;
                    sim.accepted = true;
                    sim.last = Some(ObservationStatus::Completed);
                }
                return Some(after);
            }
            Step::Wait(Wait::Interrupted) => leader_does(&Operation::Resume),
            Step::Wait(_) => {
                let retry = body
                    .work_items
                    .iter()
                    .find(|item| item.status == WorkItemStatus::Blocked)
                    .map(|item| Operation::Retry(item.work_item_id.value().to_owned()));
                [
                    Operation::Review(true),
                    Operation::Approval(true),
                    retry.unwrap_or(Operation::Recover),
                    Operation::Recover,
                ]
                .iter()
                .find_map(leader_does)
            }
        };
        after.task = state?;
        Some(after)
    }

    /// Invariants 2 to 4 in `node`; counts the checks made.
    fn check(&self, node: &Node, figures: &mut Figures) {
        let body = &node.task.body;
        // 4: nothing of a fenced, handed-over task runs.
        figures.checks += 1;
        if let Some(fenced) = &node.fenced
            && let Some((attempt, _)) = node
                .attempts
                .iter()
                .find(|(_, sim)| &sim.task == fenced && sim.running)
        {
            figures.violations.push(self.context(
                node,
                &format!("{attempt} of the handed-over task {fenced} still runs"),
            ));
        }
        // 3: every final word the journal does not show is explained.
        for (attempt, sim) in &node.attempts {
            if sim.task != body.task_id.value() {
                continue;
            }
            figures.checks += 1;
            if let Some(last) = sim.last
                && !shown(body, attempt, last)
                && unapplied(body, attempt).is_none()
            {
                figures.violations.push(self.context(
                    node,
                    &format!(
                        "{attempt} reported {} but the journal shows otherwise, unexplained",
                        last.as_str()
                    ),
                ));
            }
        }
        // 2: `done` stays reachable for a willing Leader, unless the Leader cancelled work the
        // task requires (or the task): then no operation but cancel can finish it, and the
        // System's words say which work item was cancelled.
        figures.checks += 1;
        let cancelled_required = body.work_items.iter().any(|item| {
            item.requirement == valp_kernel::Requirement::Required
                && item.status == WorkItemStatus::Cancelled
        });
        let terminal = body.status.known().is_some_and(TaskStatus::is_terminal);
        if !terminal && !cancelled_required && !self.reaches_done(node) {
            figures.violations.push(self.context(
                node,
                "done is out of reach although the Leader cancelled nothing the task requires",
            ));
        }
        // 2: a way forward.
        figures.checks += 1;
        if node.rotated {
            return; // the handoff is always offered
        }
        let step = decide(body, &self.policy, &reports(node), false);
        let words = match &step {
            Step::Wait(Wait::Leader(words)) => words.clone(),
            Step::Wait(Wait::Interrupted) => "interrupted: resume".to_owned(),
            Step::Wait(Wait::InFlight(_)) => {
                let running = node
                    .attempts
                    .values()
                    .any(|sim| sim.task == body.task_id.value() && sim.running);
                if !running {
                    figures
                        .violations
                        .push(self.context(node, "the System waits for work in flight, none runs"));
                }
                return;
            }
            _ => return,
        };
        // The System hands over to the Leader only once nothing is in flight: an attempt the
        // kernel holds live would otherwise wait for a Leader who was told nothing runs.
        figures.checks += 1;
        if let Some(live) = body
            .work_items
            .iter()
            .filter_map(|item| item.current_attempt.as_ref())
            .find(|attempt| attempt.status.is_live())
            && !matches!(step, Step::Wait(Wait::Interrupted))
        {
            figures.violations.push(self.context(
                node,
                &format!(
                    "the System waits for the Leader ({words}) while {} is {}",
                    live.attempt_id.value(),
                    live.status.as_str()
                ),
            ));
        }
        let offered: Vec<&str> = operations(body)
            .iter()
            .filter_map(|(_, operation, _)| {
                let name = forward(operation)?;
                leader(&node.task, operation, self.policy.approval).map(|_| name)
            })
            .collect();
        if offered.is_empty() {
            figures.violations.push(self.context(
                node,
                &format!("no way forward but cancel, and the System says: {words}"),
            ));
        } else if !offered.iter().any(|name| words.contains(name)) {
            figures.violations.push(self.context(
                node,
                &format!("the wait names none of {offered:?}: {words}"),
            ));
        }
    }

    /// Every transition out of `node`, labelled.
    fn successors(&self, node: &Node, figures: &mut Figures) -> Vec<(String, Node)> {
        let mut next = Vec::new();
        // The System, unless its epoch is fenced.
        if !node.rotated {
            self.system_moves(node, figures, &mut next);
        }
        adapter_moves(node, &mut next);
        if node.moves < self.max_moves {
            self.leader_moves(node, &mut next);
        }
        figures.transitions += next.len();
        next
    }

    /// The System's next step (both outcomes of a verification).
    fn system_moves(&self, node: &Node, figures: &mut Figures, next: &mut Vec<(String, Node)>) {
        let body = &node.task.body;
        let step = decide(body, &self.policy, &reports(node), false);
        // A console restart rebuilds the reports from the folders: the same decision.
        figures.checks += 1;
        if decide(body, &self.policy, &reports(&node.clone()), false) != step {
            figures
                .violations
                .push(self.context(node, "a restarted console decides otherwise"));
        }
        let mut propose = |kind: EventKind, proposal, need, label: String| {
            let event = event_of(&node.task, kind, proposal);
            figures.checks += 1;
            match accepted(&node.task, &event, &evidence(need, &event)) {
                Some(result) => {
                    let mut after = child(node);
                    after.task = result.state;
                    next.push((label, after));
                }
                None => figures.violations.push(self.context(
                    node,
                    &format!("the kernel refused the System's {}", kind.as_str()),
                )),
            }
        };
        match &step {
            Step::Propose(proposal) => propose(
                proposal.kind,
                Some(proposal),
                &proposal.evidence,
                format!("system {}", proposal.kind.as_str()),
            ),
            Step::Verify => {
                for kind in [EventKind::VerificationPassed, EventKind::VerificationFailed] {
                    propose(kind, None, &EvidenceNeed::Final, kind.as_str().to_owned());
                }
            }
            Step::Record => propose(
                EventKind::RecordingCompleted,
                None,
                &EvidenceNeed::Nothing,
                "record".to_owned(),
            ),
            Step::Launch(slots) => {
                figures.checks += 1;
                if node.attempts.contains_key(&slots.attempt_id) {
                    figures
                        .violations
                        .push(self.context(node, &format!("{} launched twice", slots.attempt_id)));
                } else {
                    let mut after = child(node);
                    after.attempts.insert(
                        slots.attempt_id.clone(),
                        Sim {
                            task: body.task_id.value().to_owned(),
                            accepted: false,
                            last: None,
                            running: true,
                        },
                    );
                    next.push((format!("launch {}", slots.attempt_id), after));
                }
            }
            Step::Wait(_) => {}
        }
    }

    /// Every Leader operation the kernel accepts, a rotation, and after it the handoff.
    fn leader_moves(&self, node: &Node, next: &mut Vec<(String, Node)>) {
        let body = &node.task.body;
        if node.rotated {
            next.push(("handoff".to_owned(), self.hand_over(node)));
            return;
        }
        for (label, operation, signal) in operations(body) {
            let Some((state, obligations)) = leader(&node.task, &operation, self.policy.approval)
            else {
                continue;
            };
            let mut after = child(node);
            after.moves += 1;
            for obligation in &obligations {
                cancel(&mut after.attempts, &obligation_attempt(obligation));
            }
            if signal {
                signal_running(body, &mut after.attempts);
            }
            after.task = state;
            next.push((label, after));
        }
        if node.rotations == 0 && !body.status.known().is_some_and(TaskStatus::is_terminal) {
            let mut after = child(node);
            after.moves += 1;
            after.rotations += 1;
            after.rotated = true;
            next.push(("rotate".to_owned(), after));
        }
    }

    /// The handoff as `authority::handoff` does it: stop every running process of the fenced
    /// task, then a successor at the next epoch with the unfinished work, published.
    fn hand_over(&self, node: &Node) -> Node {
        let mut after = child(node);
        after.moves += 1;
        let predecessor = node.task.body.task_id.value().to_owned();
        for sim in after.attempts.values_mut() {
            if sim.task == predecessor && sim.running {
                sim.running = false;
                sim.last = Some(ObservationStatus::Cancelled);
            }
        }
        let successor = id(IdentityKind::Task, &format!("{predecessor}-e2"));
        let items = unfinished_work(&node.task, &successor);
        let genesis = State::genesis(
            node.task.body.installation_id.clone(),
            node.task.body.leader_epoch + 1,
            successor,
            items,
        );
        let publish = event_of(&genesis, EventKind::RoutingValidationStarted, None);
        let published = accepted(
            &genesis,
            &publish,
            &evidence(&EvidenceNeed::Request, &publish),
        )
        .unwrap_or_else(|| panic!("{}", self.context(node, "the successor is not published")));
        after.task = published.state;
        after.rotated = false;
        after.fenced = Some(predecessor);
        after
    }

    fn explore(&self, plan_text: &str) -> Figures {
        let plan = valp_runtime::plan::parse(Path::new("model.toml"), plan_text.as_bytes())
            .unwrap_or_else(|errors| panic!("{errors}"));
        let genesis = plan
            .genesis(id(IdentityKind::Installation, "inst-model"), 1)
            .unwrap();
        let publish = event_of(&genesis.state, EventKind::RoutingValidationStarted, None);
        let start = accepted(
            &genesis.state,
            &publish,
            &evidence(&EvidenceNeed::Request, &publish),
        )
        .unwrap();
        let root = Node {
            task: start.state,
            rotated: false,
            fenced: None,
            attempts: BTreeMap::new(),
            moves: 0,
            rotations: 0,
            depth: 0,
        };
        let mut figures = Figures::default();
        let mut seen = HashSet::new();
        let mut queue = VecDeque::new();
        seen.insert(root.key());
        queue.push_back(root);
        while let Some(node) = queue.pop_front() {
            figures.states += 1;
            figures.max_depth = figures.max_depth.max(node.depth);
            self.check(&node, &mut figures);
            if let Some(status) = node
                .task
                .body
                .status
                .known()
                .filter(|status| status.is_terminal())
            {
                *figures.terminal.entry(status.as_str()).or_default() += 1;
            }
            if node.depth >= self.max_depth {
                continue;
            }
            for (_, after) in self.successors(&node, &mut figures) {
                if seen.insert(after.key()) {
                    queue.push_back(after);
                }
            }
        }
        figures
    }
}

/// A work item of a model plan: id, requirement, and `(dependency, kind)` edges.
type ItemSpec<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A plan of `items`, with the `[execution]` table's `execution`.
fn plan(items: &[ItemSpec<'_>], execution: &str) -> String {
    let mut text = String::from(
        "schema_version = \"valp-plan.v1\"\ntask_id = \"m\"\ngoal = \"g\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"d\"\n\n",
    );
    for (item, requirement, dependencies) in items {
        let dependencies: Vec<String> = dependencies
            .iter()
            .map(|(dependency, kind)| format!("{{ id = \"{dependency}\", kind = \"{kind}\" }}"))
            .collect();
        write!(
            text,
            "[[work_items]]\nid = \"{item}\"\nrequirement = \"{requirement}\"\n\
             dependencies = [{}]\nrun = {{ adapter = \"process\", argv = [\"true\"] }}\n\n",
            dependencies.join(", ")
        )
        .unwrap();
    }
    text + "[execution]\n" + execution
}

/// Explores every plan with up to its number of Leader actions per path and at most
/// `max_depth` steps; prints and returns the totals.
fn run(plans: &[(&str, String, u8)], max_depth: usize) -> Figures {
    let mut total = Figures::default();
    for (name, text, max_moves) in plans {
        let parsed = valp_runtime::plan::parse(Path::new("model.toml"), text.as_bytes()).unwrap();
        let model = Model {
            policy: ExecutionPolicy::from(&parsed.execution),
            max_moves: *max_moves,
            max_depth,
            name: (*name).to_owned(),
            done_reachable: std::cell::RefCell::default(),
        };
        let figures = model.explore(text);
        println!(
            "{name} ({max_moves} Leader actions): {} states, {} transitions, depth {}, {} \
             invariant checks, {} violations, terminal {:?}",
            figures.states,
            figures.transitions,
            figures.max_depth,
            figures.checks,
            figures.violations.len(),
            figures.terminal
        );
        total.states += figures.states;
        total.transitions += figures.transitions;
        total.max_depth = total.max_depth.max(figures.max_depth);
        total.checks += figures.checks;
        total.violations.extend(figures.violations);
        for (status, count) in figures.terminal {
            *total.terminal.entry(status).or_default() += count;
        }
    }
    println!(
        "total: {} states, {} transitions, max depth {}, {} invariant checks, {} violations",
        total.states,
        total.transitions,
        total.max_depth,
        total.checks,
        total.violations.len()
    );
    total
}

/// The plans of the bounded exploration, each with `moves` Leader actions per path.
fn small_plans(moves: u8) -> Vec<(&'static str, String, u8)> {
    vec![
        (
            "one item, budget 1, approval",
            plan(
                &[("a", "required", &[])],
                "retry_budget = 1\napproval = \"required\"\n",
            ),
            moves,
        ),
        (
            "chain, budget 2",
            plan(
                &[("a", "required", &[]), ("b", "required", &[("a", "hard")])],
                "retry_budget = 2\nmax_concurrency = 1\n",
            ),
            moves,
        ),
        (
            "two in parallel, budget 1",
            plan(
                &[("a", "required", &[]), ("b", "optional", &[])],
                "retry_budget = 1\nmax_concurrency = 2\n",
            ),
            moves,
        ),
    ]
}

#[test]
fn the_workflow_has_no_dead_ends_within_two_leader_actions() {
    let figures = run(&small_plans(2), 60);
    assert!(
        figures.violations.is_empty(),
        "{} violations, the first:\n{}",
        figures.violations.len(),
        figures.violations[..figures.violations.len().min(5)].join("\n")
    );
    // The exploration reaches every way to end, so the invariants are not checked in vain.
    for status in ["done", "cancelled"] {
        assert!(
            figures.terminal.get(status).copied().unwrap_or(0) > 0,
            "{:?}",
            figures.terminal
        );
    }
    assert!(figures.states > 1_000, "{}", figures.states);
}

#[test]
#[ignore = "long: cargo test --release -p valp-tests --test workflow_model -- --ignored --nocapture"]
fn the_workflow_has_no_dead_ends_long() {
    // Three Leader actions per path on the small plans; two on the larger ones, whose state
    // space grows past what memory holds with three.
    let mut plans = small_plans(3);
    plans.extend([
        (
            "diamond, budget 2, approval",
            plan(
                &[
                    ("a", "required", &[]),
                    ("b", "required", &[("a", "hard")]),
                    ("c", "soft", &[("a", "soft")]),
                    ("d", "required", &[("b", "hard"), ("c", "soft")]),
                ],
                "retry_budget = 2\nmax_concurrency = 2\napproval = \"required\"\n",
            ),
            2,
        ),
        (
            "three in parallel, budget 1",
            plan(
                &[
                    ("a", "required", &[]),
                    ("b", "soft", &[]),
                    ("c", "optional", &[("a", "optional")]),
                ],
                "retry_budget = 1\nmax_concurrency = 3\n",
            ),
            2,
        ),
    ]);
    let figures = run(&plans, 80);
    assert!(
        figures.violations.is_empty(),
        "{} violations, the first:\n{}",
        figures.violations.len(),
        figures.violations[..figures.violations.len().min(5)].join("\n")
    );
}
