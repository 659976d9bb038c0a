//! Builders and assertions shared by the kernel integration tests.
//!
//! Each integration test crate compiles this module on its own and uses a different subset of
//! it, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::collections::BTreeMap;

use valp_kernel::canonical::{Canonical, decode_canonical, sha256_digest};
use valp_kernel::decode::decode_outcome;
use valp_kernel::json::write;
use valp_kernel::json::{self, Number, Value};
use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::{
    Accepted, AcceptedEvent, Attempt, AttemptStatus, CancellationScope, Control, ControlReason,
    ControlStatus, Dependency, ErrorCode, Event, EventKind, Evidence, Identity, IdentityKind, Int,
    NoOp, Open, Outcome, Rejected, Requirement, State, Suspension, SuspensionStatus, TaskStatus,
    WakeReason, WorkItem, WorkItemStatus, reduce,
};

/// The installation every fixture belongs to.
pub const INSTALLATION: &str = "inst-1";
/// The task every fixture is about.
pub const TASK: &str = "TASK-001";
/// The leader epoch of every fixture.
pub const EPOCH: Int = 1;
/// The principal that signs authority-bound fixture events.
pub const PRINCIPAL: &str = "user-1";
/// The evidence that authorises authority-bound fixture events.
pub const AUTHORITY_EVIDENCE: &str = "ev-auth";

/// An identity; fixture values are never empty.
pub fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).expect("fixture identity values are non-empty")
}

/// A `work_item` identity.
pub fn wi(value: &str) -> Identity {
    id(IdentityKind::WorkItem, value)
}

/// The fixture task identity.
pub fn task_id() -> Identity {
    id(IdentityKind::Task, TASK)
}

/// A pending work item of the fixture task with the given dependency edges.
pub fn work_item(value: &str, requirement: Requirement, deps: &[(&str, Requirement)]) -> WorkItem {
    WorkItem {
        task_id: task_id(),
        work_item_id: wi(value),
        requirement,
        status: WorkItemStatus::Pending,
        dependencies: deps
            .iter()
            .map(|&(target, requirement)| Dependency {
                work_item_id: wi(target),
                requirement,
            })
            .collect(),
        current_attempt: None,
    }
}

/// The genesis State of the fixture task with the given work items.
pub fn genesis_with(items: Vec<WorkItem>) -> State {
    State::genesis(
        id(IdentityKind::Installation, INSTALLATION),
        EPOCH,
        task_id(),
        items,
    )
}

/// The bare genesis State: no work items.
pub fn genesis() -> State {
    genesis_with(Vec::new())
}

/// Two items: `wi-1` (required) and `wi-2` (optional, hard-depends on `wi-1`).
pub fn two_items() -> Vec<WorkItem> {
    vec![
        work_item("wi-1", Requirement::Required, &[]),
        work_item(
            "wi-2",
            Requirement::Optional,
            &[("wi-1", Requirement::Required)],
        ),
    ]
}

/// An event of the fixture task with only the mandatory fields.
pub fn event(event_id: &str, kind: EventKind, expected_revision: Int) -> Event {
    Event::new(
        id(IdentityKind::Event, event_id),
        id(IdentityKind::Installation, INSTALLATION),
        EPOCH,
        task_id(),
        kind,
        expected_revision,
    )
}

/// Evidence whose digest is the SHA-256 of its id value.
pub fn evidence(value: &str) -> Evidence {
    Evidence {
        evidence_id: id(IdentityKind::Evidence, value),
        content_digest: sha256_digest(value.as_bytes()),
    }
}

/// Makes `event` carry full authority (principal, evidence id, `user_requested`) and returns the
/// EvidenceSet that contains the authority evidence.
pub fn authorize(event: &mut Event) -> Vec<Evidence> {
    event.authority_principal_id = Some(id(IdentityKind::Principal, PRINCIPAL));
    event.authority_evidence_id = Some(id(IdentityKind::Evidence, AUTHORITY_EVIDENCE));
    event.control_reason = Some(Open::Known(ControlReason::UserRequested));
    vec![evidence(AUTHORITY_EVIDENCE)]
}

/// A task-level event: authorised when its kind is authority-bound, and scoped to the task when
/// it is `task_cancelled`. No other slot is set.
pub fn task_event(
    event_id: &str,
    kind: EventKind,
    expected_revision: Int,
) -> (Event, Vec<Evidence>) {
    let mut event = event(event_id, kind, expected_revision);
    let evidence_set = if kind.is_authority_bound() {
        authorize(&mut event)
    } else {
        Vec::new()
    };
    if kind == EventKind::TaskCancelled {
        event.cancellation_scope = Some(Open::Known(CancellationScope::Task));
    }
    (event, evidence_set)
}

/// The shortest chain of task edges from `published` to `status`.
pub fn path_to(status: TaskStatus) -> Vec<EventKind> {
    use EventKind as K;
    use TaskStatus as S;
    let (from, kind) = match status {
        S::Published => return Vec::new(),
        S::RoutingValidation => (S::Published, K::RoutingValidationStarted),
        S::Dispatching => (S::RoutingValidation, K::RoutingValidationPassed),
        S::Executing => (S::Dispatching, K::DispatchAccepted),
        S::Verifying => (S::Executing, K::WorkCompleted),
        S::Reviewing => (S::Verifying, K::VerificationPassed),
        S::Fixing => (S::Verifying, K::VerificationFailed),
        S::ApprovalRequired => (S::Reviewing, K::ApprovalRequiredRaised),
        S::Recording => (S::Reviewing, K::ReviewPassed),
        S::Done => (S::Recording, K::RecordingCompleted),
        S::Blocked => (S::Executing, K::TaskBlocked),
        S::Failed => (S::Published, K::TaskFailed),
        S::Cancelled => (S::Published, K::TaskCancelled),
    };
    let mut path = path_to(from);
    path.push(kind);
    path
}

/// Drives a State forward through `LiveState`, one accepted event at a time, naming events
/// `e-1`, `e-2`, … and panicking on anything that is not accepted.
pub struct Driver {
    live: LiveState,
    counter: usize,
}

impl Driver {
    /// Starts from `state`.
    pub fn new(state: State) -> Self {
        Self {
            live: LiveState::new(state),
            counter: 0,
        }
    }

    /// Starts from a genesis with `items` and walks the task to `status`.
    pub fn at(status: TaskStatus, items: Vec<WorkItem>) -> Self {
        let mut driver = Self::new(genesis_with(items));
        for kind in path_to(status) {
            driver.step(kind);
        }
        assert_eq!(driver.live.body().status, Open::Known(status));
        driver
    }

    /// The current revision.
    pub fn revision(&self) -> Int {
        self.live.revision()
    }

    /// A copy of the current State.
    pub fn state(&self) -> State {
        self.live.to_state()
    }

    /// A fresh event id (`e-<n>`).
    pub fn fresh_id(&mut self) -> String {
        self.counter += 1;
        format!("e-{}", self.counter)
    }

    /// A fresh event of `kind` at the current revision, with only the mandatory fields.
    pub fn event(&mut self, kind: EventKind) -> Event {
        let event_id = self.fresh_id();
        event(&event_id, kind, self.revision())
    }

    /// Applies `event`, which must be accepted (checked as [`assert_accepts`] does); returns the
    /// accepted Result.
    pub fn accept(&mut self, event: &Event, evidence_set: &[Evidence]) -> Accepted {
        let accepted = assert_accepts(&self.state(), event, evidence_set);
        let verdict = self.live.apply(event, evidence_set);
        assert_eq!(verdict, Verdict::Accepted(accepted.record()));
        accepted
    }

    /// Applies a task-level event of `kind` (see [`task_event`]), which must be accepted.
    pub fn step(&mut self, kind: EventKind) -> Accepted {
        let event_id = self.fresh_id();
        let (event, evidence_set) = task_event(&event_id, kind, self.revision());
        self.accept(&event, &evidence_set)
    }

    /// An attempt-scoped event for `item` naming (`attempt`, `dispatch`, `generation`).
    pub fn attempt_event(
        &mut self,
        kind: EventKind,
        item: &str,
        attempt: &str,
        dispatch: &str,
        generation: Int,
    ) -> Event {
        let mut event = self.event(kind);
        set_attempt_tuple(&mut event, item, attempt, dispatch, generation);
        event
    }

    /// A work-item event for `item`.
    pub fn item_event(&mut self, kind: EventKind, item: &str) -> Event {
        let mut event = self.event(kind);
        event.work_item_id = Some(wi(item));
        event
    }

    /// Accepts `work_item_eligible` for `item`.
    pub fn eligible(&mut self, item: &str) -> Accepted {
        let event = self.item_event(EventKind::WorkItemEligible, item);
        self.accept(&event, &[])
    }

    /// Accepts an attempt-scoped event of `kind` for `item` with the tuple (`attempt`,
    /// `disp-<attempt>`, `generation`).
    pub fn attempt(
        &mut self,
        kind: EventKind,
        item: &str,
        attempt: &str,
        generation: Int,
    ) -> Accepted {
        let dispatch = format!("disp-{attempt}");
        let event = self.attempt_event(kind, item, attempt, &dispatch, generation);
        self.accept(&event, &[])
    }

    /// Makes `item` eligible and runs a first attempt `att-1` (generation 1) up to `running`.
    pub fn run_first_attempt(&mut self, item: &str) {
        self.eligible(item);
        for kind in [
            EventKind::AttemptCreated,
            EventKind::AttemptSubmitted,
            EventKind::AttemptRunning,
        ] {
            self.attempt(kind, item, "att-1", 1);
        }
    }

    /// An authorised `interrupt_requested` for `interrupt` at intent version 0.
    pub fn interrupt_event(&mut self, interrupt: &str) -> (Event, Vec<Evidence>) {
        let mut event = self.event(EventKind::InterruptRequested);
        event.interrupt_id = Some(id(IdentityKind::Interrupt, interrupt));
        event.intent_version = Some(0);
        let evidence_set = authorize(&mut event);
        (event, evidence_set)
    }

    /// Accepts [`Self::interrupt_event`].
    pub fn interrupt(&mut self, interrupt: &str) -> Accepted {
        let (event, evidence_set) = self.interrupt_event(interrupt);
        self.accept(&event, &evidence_set)
    }

    /// An event of `kind` (`suspension_started` or `wake_accepted`) naming the first suspension
    /// `susp-1` (epoch 0, policy `policy-1`) over `items`.
    pub fn suspension_event(&mut self, kind: EventKind, items: &[&str]) -> Event {
        let mut event = self.event(kind);
        event.suspension_id = Some(id(IdentityKind::Suspension, "susp-1"));
        event.suspension_epoch = Some(0);
        event.wait_policy_id = Some(id(IdentityKind::WaitPolicy, "policy-1"));
        event.wait_policy_digest = Some(sha256_digest(b"policy-1"));
        event.required_work_item_ids = items.iter().map(|item| wi(item)).collect();
        event
    }
}

/// Sets the attempt tuple slots of an event.
pub fn set_attempt_tuple(
    event: &mut Event,
    item: &str,
    attempt: &str,
    dispatch: &str,
    generation: Int,
) {
    event.work_item_id = Some(wi(item));
    event.attempt_id = Some(id(IdentityKind::Attempt, attempt));
    event.dispatch_id = Some(id(IdentityKind::Dispatch, dispatch));
    event.dispatch_generation = Some(generation);
}

/// The attempt a fixture run created: `att-<n>` carried by `disp-att-<n>`.
pub fn attempt_record(
    item: &str,
    attempt: &str,
    generation: Int,
    status: AttemptStatus,
) -> Attempt {
    Attempt {
        task_id: task_id(),
        work_item_id: wi(item),
        attempt_id: id(IdentityKind::Attempt, attempt),
        dispatch_id: id(IdentityKind::Dispatch, &format!("disp-{attempt}")),
        dispatch_generation: generation,
        status,
    }
}

/// The canonical bytes of a kernel artifact.
pub fn bytes(value: &impl Canonical) -> Vec<u8> {
    value.canonical_bytes()
}

/// Runs `reduce` and `LiveState::apply` on the same input, checks that they give the same
/// Result (and the same State digest) and that the Result survives its canonical encoding, and
/// returns it.
pub fn reduce_both(state: &State, event: &Event, evidence_set: &[Evidence]) -> Outcome {
    let outcome = reduce(state, event, evidence_set);
    let mut live = LiveState::new(state.clone());
    let verdict = live.apply(event, evidence_set);
    assert_eq!(live.state_digest(), outcome.state().digest());
    let from_live = verdict.into_outcome(live.into_state());
    assert_eq!(from_live, outcome, "reduce and LiveState disagree");
    let encoded = bytes(&outcome);
    assert_eq!(bytes(&from_live), encoded);
    // The Result's bytes are canonical and decode back to the same Result.
    let decoded = decode_canonical(&encoded).expect("a Result is canonical JSON");
    assert_eq!(decode_outcome(&decoded).as_ref(), Ok(&outcome));
    outcome
}

/// Asserts a rejection with `code`, no prior result, and the input State echoed byte for byte.
pub fn assert_rejected(outcome: &Outcome, input: &State, code: ErrorCode) -> Rejected {
    let Outcome::Rejected(rejected) = outcome else {
        panic!("expected rejected {code}, got {outcome:?}");
    };
    assert_eq!(rejected.error_code, code);
    assert_eq!(
        bytes(&rejected.state),
        bytes(input),
        "input State not echoed"
    );
    assert_eq!(rejected.state, *input);
    if code != ErrorCode::IdempotencyConflict {
        assert_eq!(rejected.prior_result_id, None);
        assert_eq!(rejected.prior_result_digest, None);
    }
    rejected.clone()
}

/// Reduces and asserts `VALP-E-STATE-CONFLICT` with the input echoed.
pub fn assert_conflict(state: &State, event: &Event, evidence_set: &[Evidence]) {
    assert_rejects(state, event, evidence_set, ErrorCode::StateConflict);
}

/// Reduces and asserts acceptance; returns the accepted Result.
pub fn assert_accepts(state: &State, event: &Event, evidence_set: &[Evidence]) -> Accepted {
    let outcome = reduce_both(state, event, evidence_set);
    check_input_digest(&outcome, state, event, evidence_set);
    match outcome {
        Outcome::Accepted(accepted) => {
            check_accepted(&accepted, state, event);
            accepted
        }
        other => panic!("expected accepted, got {other:?}"),
    }
}

/// Reduces and asserts the given rejection code; returns the rejection.
pub fn assert_rejects(
    state: &State,
    event: &Event,
    evidence_set: &[Evidence],
    code: ErrorCode,
) -> Rejected {
    let outcome = reduce_both(state, event, evidence_set);
    check_input_digest(&outcome, state, event, evidence_set);
    assert_rejected(&outcome, state, code)
}

/// Reduces and asserts a `no_op` that echoes the input State and names `prior`.
pub fn assert_no_op(
    state: &State,
    event: &Event,
    evidence_set: &[Evidence],
    prior: &Accepted,
) -> NoOp {
    let outcome = reduce_both(state, event, evidence_set);
    check_input_digest(&outcome, state, event, evidence_set);
    let Outcome::NoOp(no_op) = outcome else {
        panic!("expected no_op, got {outcome:?}");
    };
    assert_eq!(bytes(&no_op.state), bytes(state), "input State not echoed");
    assert_eq!(no_op.prior_result_id, prior.result_id);
    assert_eq!(no_op.prior_result_digest, prior.result_digest);
    assert_eq!(no_op.input_digest, prior.input_digest);
    no_op
}

/// The generic properties of an accepted Result: `<event>:accepted`, the `accepted:` audit fact
/// first, revision + 1, exactly one history entry appended and an independently recomputed
/// result digest.
pub fn check_accepted(accepted: &Accepted, prior: &State, event: &Event) {
    let event_value = event.event_id.value();
    assert_eq!(
        accepted.result_id,
        id(IdentityKind::Result, &format!("{event_value}:accepted"))
    );
    assert_eq!(
        accepted.audit_facts.first().map(String::as_str),
        Some(format!("accepted:event:{event_value}").as_str())
    );
    let next = &accepted.state;
    assert_eq!(next.body.revision, prior.body.revision + 1);
    assert_eq!(next.accepted_events.len(), prior.accepted_events.len() + 1);
    assert_eq!(
        next.accepted_events[..prior.accepted_events.len()],
        prior.accepted_events[..]
    );
    let last = next.accepted_events.last().expect("one entry appended");
    assert_eq!(last.event_id, event.event_id);
    assert_eq!(last.result_id, accepted.result_id);
    assert_eq!(last.input_digest, accepted.input_digest);
    assert_eq!(last.result_digest, accepted.result_digest);
    assert_eq!(
        accepted.result_digest,
        expected_result_digest(prior, accepted, event)
    );
}

fn check_input_digest(outcome: &Outcome, state: &State, event: &Event, evidence_set: &[Evidence]) {
    assert_eq!(
        outcome.input_digest(),
        expected_input_digest(state, event, evidence_set)
    );
}

/// The parsed canonical form of a kernel artifact.
pub fn to_value(artifact: &impl Canonical) -> Value {
    let bytes = artifact.canonical_bytes();
    let text = std::str::from_utf8(&bytes).expect("canonical bytes are UTF-8");
    json::parse(text).expect("canonical bytes parse")
}

/// `sha256:` digest of the canonical bytes of a JSON value, through the generic `Value` writer
/// (a different code path from the kernel's typed, streaming writers).
pub fn value_digest(value: &Value) -> String {
    sha256_digest(&write::canonical_bytes(value).expect("integers only"))
}

/// An object value from members.
pub fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect::<BTreeMap<_, _>>(),
    )
}

/// The input digest recomputed from the RFC formula with generic JSON values:
/// `digest({"event", "evidence_set" sorted by canonical bytes, "protocol_version"})`.
pub fn expected_input_digest(state: &State, event: &Event, evidence_set: &[Evidence]) -> String {
    let mut sorted: Vec<Vec<u8>> = evidence_set
        .iter()
        .map(Canonical::canonical_bytes)
        .collect();
    sorted.sort();
    let evidence_values = sorted
        .iter()
        .map(|bytes| json::parse(std::str::from_utf8(bytes).expect("UTF-8")).expect("parses"))
        .collect();
    value_digest(&object([
        ("event", to_value(event)),
        ("evidence_set", Value::Array(evidence_values)),
        (
            "protocol_version",
            Value::String(state.body.protocol_version.clone()),
        ),
    ]))
}

/// The result digest recomputed from the RFC formula with generic JSON values.
pub fn expected_result_digest(prior: &State, accepted: &Accepted, event: &Event) -> String {
    let next = &accepted.state.body;
    let state = if next.work_items.is_empty() && next.suspension.is_none() && next.control.is_none()
    {
        object([
            ("installation_id", to_value(&next.installation_id)),
            (
                "leader_epoch",
                Value::Number(Number::Int(next.leader_epoch)),
            ),
            (
                "protocol_version",
                Value::String(next.protocol_version.clone()),
            ),
            ("revision", Value::Number(Number::Int(next.revision))),
            ("status", Value::String(next.status.as_str().to_owned())),
            ("task_id", to_value(&next.task_id)),
        ])
    } else {
        let mut full = to_value(&accepted.state);
        *member_mut(&mut full, &["accepted_events"]) = Value::Array(Vec::new());
        full
    };
    let strings =
        |items: &[String]| Value::Array(items.iter().cloned().map(Value::String).collect());
    value_digest(&object([
        ("audit_facts", strings(&accepted.audit_facts)),
        ("event_id", to_value(&event.event_id)),
        ("input_digest", Value::String(accepted.input_digest.clone())),
        ("obligations", strings(&accepted.obligations)),
        ("prior_state_digest", Value::String(prior.digest())),
        ("result_id", to_value(&accepted.result_id)),
        ("state", state),
        ("variant", Value::String("accepted".to_owned())),
    ]))
}

/// The member at `path` (object keys, or array indexes written as numbers).
pub fn member_mut<'v>(value: &'v mut Value, path: &[&str]) -> &'v mut Value {
    path.iter().fold(value, |current, step| match current {
        Value::Object(map) => map
            .get_mut(*step)
            .unwrap_or_else(|| panic!("no member {step:?}")),
        Value::Array(items) => {
            let index: usize = step.parse().expect("array index");
            &mut items[index]
        }
        other => panic!("cannot step into {other:?} with {step:?}"),
    })
}

/// The object at `path`, for adding or removing members.
pub fn object_mut<'v>(value: &'v mut Value, path: &[&str]) -> &'v mut BTreeMap<String, Value> {
    match member_mut(value, path) {
        Value::Object(map) => map,
        other => panic!("not an object: {other:?}"),
    }
}

/// A JSON string value.
pub fn string(text: &str) -> Value {
    Value::String(text.to_owned())
}

/// A State that uses every closed slot: an attempt, a dependency, a resumed suspension with a
/// wake reason, an interrupted control and a history entry. (Decoding does not check validity.)
pub fn rich_state() -> State {
    let mut state = genesis();
    state.body.status = Open::Known(TaskStatus::Executing);
    state.body.revision = 1;
    state.body.work_items = two_items();
    state.body.work_items[0].status = WorkItemStatus::Running;
    state.body.work_items[0].current_attempt =
        Some(attempt_record("wi-1", "att-1", 1, AttemptStatus::Running));
    state.body.suspension = Some(Suspension {
        task_id: task_id(),
        suspension_id: id(IdentityKind::Suspension, "susp-1"),
        suspension_epoch: 0,
        status: SuspensionStatus::Resumed,
        wait_policy_id: id(IdentityKind::WaitPolicy, "policy-1"),
        wait_policy_digest: sha256_digest(b"policy-1"),
        required_work_item_ids: vec![wi("wi-1")],
        accepted_wake_id: Some(id(IdentityKind::Wake, "wake-1")),
        wake_reason: Some(WakeReason::DependencyReady),
    });
    state.body.control = Some(Control {
        intent_version: 0,
        status: ControlStatus::Interrupted,
        active_interrupt_id: Some(id(IdentityKind::Interrupt, "int-1")),
    });
    state.accepted_events = vec![AcceptedEvent {
        event_id: id(IdentityKind::Event, "e-1"),
        result_id: id(IdentityKind::Result, "e-1:accepted"),
        input_digest: sha256_digest(b"in"),
        result_digest: sha256_digest(b"out"),
    }];
    state
}

/// An event with every identity slot set.
pub fn rich_event() -> Event {
    let mut event = event("evt-1", EventKind::AttemptCancelled, 1);
    set_attempt_tuple(&mut event, "wi-1", "att-1", "disp-att-1", 1);
    event.suspension_id = Some(id(IdentityKind::Suspension, "susp-1"));
    event.wait_policy_id = Some(id(IdentityKind::WaitPolicy, "policy-1"));
    event.required_work_item_ids = vec![wi("wi-1")];
    event.wake_id = Some(id(IdentityKind::Wake, "wake-1"));
    event.interrupt_id = Some(id(IdentityKind::Interrupt, "int-1"));
    event.redirect_id = Some(id(IdentityKind::Redirect, "redir-1"));
    event.superseded_work_item_ids = vec![wi("wi-2")];
    authorize(&mut event);
    event
}
