//! Seeded random walks of legal protocol histories.
//!
//! A [`Walk`] proposes plausible next events for the current State (task edges, work-item and
//! attempt progress, retries, fencing, suspension and wake, interrupts, redirects, cancels),
//! shuffles them with a seeded generator, and keeps the first one the kernel accepts. Every
//! step it yields is therefore an accepted transition of a legal history, and the same seed
//! always yields the same history. Tests, benchmarks and the demo installation use it.
//!
//! The generator is a hand-written SplitMix64: the kernel stays free of randomness sources, and
//! the walk is a pure function of its seed.

use crate::canonical::sha256_digest;
use crate::live::{AcceptedRecord, LiveState, Verdict};
use crate::model::{
    AttemptStatus, CancellationScope, ControlReason, ControlStatus, Dependency, Event, EventKind,
    Evidence, Identity, IdentityKind, Int, Open, Requirement, State, SuspensionStatus, TaskStatus,
    WorkItem, WorkItemStatus,
};
use crate::replay::{CompactEntry, GenesisRoot};

/// The task-table path from `published` to `reviewing` (for [`along_task_table`]).
pub const TO_REVIEWING: &[EventKind] = &[
    EventKind::RoutingValidationStarted,
    EventKind::RoutingValidationPassed,
    EventKind::DispatchAccepted,
    EventKind::WorkCompleted,
    EventKind::VerificationPassed,
];

/// A task without work items (installation `inst-1`, task `task-1`, epoch 1) driven along the
/// task table through `kinds`, each event carrying only its kind: the shortest legal history to
/// a status, for examples and tests. `None` if the kernel does not accept one of them.
pub fn along_task_table(kinds: &[EventKind]) -> Option<LiveState> {
    let id = |kind, value: &str| Identity::derived(kind, value.to_owned());
    let state = State::genesis(
        id(IdentityKind::Installation, "inst-1"),
        1,
        id(IdentityKind::Task, "task-1"),
        Vec::new(),
    );
    let mut live = LiveState::new(state);
    for (index, &kind) in kinds.iter().enumerate() {
        let event = Event::new(
            id(IdentityKind::Event, &format!("ev-{index}")),
            live.body().installation_id.clone(),
            1,
            live.body().task_id.clone(),
            kind,
            live.revision(),
        );
        if !matches!(live.apply(&event, &[]), Verdict::Accepted(_)) {
            return None;
        }
    }
    Some(live)
}

/// How to build a walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkConfig {
    /// Seed of the generator.
    pub seed: u64,
    /// Number of work items in the frozen work-item table.
    pub work_items: usize,
    /// Whether the walk may end the task (`done`, `failed`, `cancelled`). Without it a walk can
    /// go on indefinitely (fix loops, retries, interrupts).
    pub may_terminate: bool,
}

/// One accepted step of a walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkStep {
    /// The event.
    pub event: Event,
    /// Its evidence.
    pub evidence_set: Vec<Evidence>,
    /// The accepted Result without its State.
    pub record: AcceptedRecord,
}

impl WalkStep {
    /// The step as a compact journal entry.
    pub fn into_compact(self) -> CompactEntry {
        CompactEntry {
            event: self.event,
            evidence_set: self.evidence_set,
            result: self.record,
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        let bound = u64::try_from(bound.max(1)).unwrap_or(u64::MAX);
        usize::try_from(self.next() % bound).unwrap_or(0)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A seeded generator of legal histories.
#[derive(Debug, Clone)]
pub struct Walk {
    config: WalkConfig,
    genesis: GenesisRoot,
    live: LiveState,
    rng: SplitMix64,
    counter: u64,
}

fn id(kind: IdentityKind, value: String) -> Identity {
    Identity::derived(kind, value)
}

impl Walk {
    /// A walk over a fresh task with `config.work_items` items. Item `i` depends on item `i - 1`
    /// (mostly hard edges, some soft or optional), and a few items are optional or soft.
    pub fn new(config: WalkConfig) -> Self {
        let installation = id(IdentityKind::Installation, "inst-1".to_owned());
        Self::for_task(
            config,
            installation,
            id(IdentityKind::Task, "task-1".to_owned()),
        )
    }

    /// A walk like [`Walk::new`] over a task with the given identities (installation kind
    /// `installation`, task kind `task`), bound to Leader epoch 1.
    pub fn for_task(config: WalkConfig, installation: Identity, task: Identity) -> Self {
        Self::for_task_at(config, installation, 1, task)
    }

    /// A walk like [`Walk::for_task`] over a task bound to Leader epoch `leader_epoch` (the
    /// demo binds its task to the installation's active epoch, which a rotation moves past 1).
    pub fn for_task_at(
        config: WalkConfig,
        installation: Identity,
        leader_epoch: Int,
        task: Identity,
    ) -> Self {
        let mut rng = SplitMix64(config.seed);
        let items: Vec<WorkItem> = (0..config.work_items)
            .map(|index| {
                let dependencies = if index == 0 {
                    Vec::new()
                } else {
                    let requirement = match rng.below(6) {
                        0 => Requirement::Soft,
                        1 => Requirement::Optional,
                        _ => Requirement::Required,
                    };
                    vec![Dependency {
                        work_item_id: id(IdentityKind::WorkItem, format!("wi-{:02}", index - 1)),
                        requirement,
                    }]
                };
                let requirement = match rng.below(5) {
                    0 => Requirement::Optional,
                    1 => Requirement::Soft,
                    _ => Requirement::Required,
                };
                WorkItem {
                    task_id: task.clone(),
                    work_item_id: id(IdentityKind::WorkItem, format!("wi-{index:02}")),
                    requirement,
                    status: WorkItemStatus::Pending,
                    dependencies,
                    current_attempt: None,
                }
            })
            .collect();
        let state = State::genesis(installation, leader_epoch, task, items);
        Self {
            config,
            genesis: GenesisRoot {
                state: state.clone(),
            },
            live: LiveState::new(state),
            rng,
            counter: 0,
        }
    }

    /// The root the walk started from.
    pub fn genesis(&self) -> &GenesisRoot {
        &self.genesis
    }

    /// Drops the walk's own accepted-event history, keeping only what idempotency needs
    /// ([`LiveState::forget_history`]): the same steps follow, in 80 bytes per step instead of
    /// ~540 (`valp demo` of 10^6 entries). Returns what `forget_history` returns.
    pub fn forget_history(&mut self) -> bool {
        self.live.forget_history()
    }

    /// The current State.
    pub fn live(&self) -> &LiveState {
        &self.live
    }

    /// The next accepted step, or `None` once no proposal is accepted (a terminal task).
    pub fn step(&mut self) -> Option<WalkStep> {
        let mut proposals = self.proposals();
        while !proposals.is_empty() {
            let (event, evidence_set) = proposals.swap_remove(self.rng.below(proposals.len()));
            if let Verdict::Accepted(record) = self.live.apply(&event, &evidence_set) {
                return Some(WalkStep {
                    event,
                    evidence_set,
                    record,
                });
            }
        }
        None
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}-{}-{}", self.config.seed, self.counter)
    }

    fn event(&mut self, kind: EventKind) -> Event {
        let body = self.live.body();
        let (installation, epoch, task, revision) = (
            body.installation_id.clone(),
            body.leader_epoch,
            body.task_id.clone(),
            body.revision,
        );
        let event_id = id(IdentityKind::Event, self.fresh("ev"));
        Event::new(event_id, installation, epoch, task, kind, revision)
    }

    fn authorised(&mut self, kind: EventKind) -> (Event, Vec<Evidence>) {
        let mut event = self.event(kind);
        let evidence_id = id(IdentityKind::Evidence, self.fresh("auth"));
        let evidence = Evidence {
            content_digest: sha256_digest(evidence_id.value().as_bytes()),
            evidence_id: evidence_id.clone(),
        };
        event.authority_principal_id = Some(id(IdentityKind::Principal, "leader".to_owned()));
        event.authority_evidence_id = Some(evidence_id);
        event.control_reason = Some(Open::Known(ControlReason::UserRequested));
        (event, vec![evidence])
    }

    fn plain(&mut self, kind: EventKind) -> (Event, Vec<Evidence>) {
        let event = self.event(kind);
        let evidence = if self.rng.chance(30) {
            let evidence_id = id(IdentityKind::Evidence, self.fresh("obs"));
            vec![Evidence {
                content_digest: sha256_digest(evidence_id.value().as_bytes()),
                evidence_id,
            }]
        } else {
            Vec::new()
        };
        (event, evidence)
    }

    #[allow(clippy::too_many_lines)] // one list of proposals, read top to bottom
    fn proposals(&mut self) -> Vec<(Event, Vec<Evidence>)> {
        use EventKind as K;
        let body = self.live.body().clone();
        let Some(status) = body.status.known() else {
            return Vec::new();
        };
        let control = body
            .control
            .clone()
            .unwrap_or(crate::model::Control::INITIAL);
        let terminate = self.config.may_terminate;
        let mut out = Vec::new();

        let task_kinds: &[K] = match status {
            TaskStatus::Published => &[K::RoutingValidationStarted],
            TaskStatus::RoutingValidation => &[K::RoutingValidationPassed],
            TaskStatus::Dispatching => &[K::DispatchAccepted],
            TaskStatus::Executing => &[K::WorkCompleted, K::TaskBlocked],
            TaskStatus::Verifying => {
                &[K::VerificationPassed, K::VerificationFailed, K::TaskBlocked]
            }
            TaskStatus::Reviewing => &[
                K::ReviewPassed,
                K::ReviewRejected,
                K::ApprovalRequiredRaised,
                K::TaskBlocked,
            ],
            TaskStatus::Fixing => &[K::FixDispatchRequested, K::TaskBlocked],
            TaskStatus::ApprovalRequired => &[K::ApprovalGranted, K::ApprovalDenied],
            TaskStatus::Recording if terminate => &[K::RecordingCompleted],
            TaskStatus::Blocked => &[K::BlockedRecoveryToFixing],
            _ => &[],
        };
        for &kind in task_kinds {
            out.push(self.plain(kind));
        }
        if terminate && self.rng.chance(2) {
            out.push(self.plain(K::TaskFailed));
        }
        if terminate && self.rng.chance(2) {
            let (mut event, evidence) = self.authorised(K::TaskCancelled);
            event.cancellation_scope = Some(Open::Known(CancellationScope::Task));
            event.suspension_epoch = body.suspension.as_ref().map(|s| s.suspension_epoch);
            out.push((event, evidence));
        }

        match control.status {
            ControlStatus::Active if self.rng.chance(4) => {
                let (mut event, evidence) = self.authorised(K::InterruptRequested);
                event.interrupt_id = Some(id(IdentityKind::Interrupt, self.fresh("int")));
                event.intent_version = Some(control.intent_version);
                out.push((event, evidence));
            }
            ControlStatus::Interrupted => {
                let (mut event, evidence) = self.authorised(K::InterruptResumed);
                event.interrupt_id.clone_from(&control.active_interrupt_id);
                event.intent_version = Some(control.intent_version);
                out.push((event, evidence));
            }
            ControlStatus::Active => {}
        }
        // A redirect is rare, except that it is the only way out of `recording` for a walk that
        // must not end the task.
        let stuck = status == TaskStatus::Recording && !terminate;
        if stuck || self.rng.chance(2) {
            let (mut event, evidence) = self.authorised(K::RedirectAuthorized);
            event.redirect_id = Some(id(IdentityKind::Redirect, self.fresh("redir")));
            event.intent_version = Some(control.intent_version);
            event.next_intent_version = Some(control.intent_version + 1);
            if !body.work_items.is_empty() {
                let pick = self.rng.below(body.work_items.len());
                event.superseded_work_item_ids = vec![body.work_items[pick].work_item_id.clone()];
            }
            out.push((event, evidence));
        }

        if status == TaskStatus::Executing {
            match &body.suspension {
                Some(suspension) if suspension.status == SuspensionStatus::Waiting => {
                    let mut event = self.event(K::WakeAccepted);
                    suspension.fill_wake(&mut event, id(IdentityKind::Wake, self.fresh("wake")));
                    out.push((event, Vec::new()));
                }
                previous if !body.work_items.is_empty() && self.rng.chance(10) => {
                    let epoch: Int = previous.as_ref().map_or(0, |s| s.suspension_epoch + 1);
                    let mut event = self.event(K::SuspensionStarted);
                    let policy = self.fresh("policy");
                    event.suspension_id = Some(id(IdentityKind::Suspension, self.fresh("susp")));
                    event.suspension_epoch = Some(epoch);
                    event.wait_policy_digest = Some(sha256_digest(policy.as_bytes()));
                    event.wait_policy_id = Some(id(IdentityKind::WaitPolicy, policy));
                    let pick = self.rng.below(body.work_items.len());
                    event.required_work_item_ids = vec![body.work_items[pick].work_item_id.clone()];
                    out.push((event, Vec::new()));
                }
                _ => {}
            }
        }

        for item in &body.work_items {
            let kinds: &[K] = match item.status {
                WorkItemStatus::Pending => {
                    &[K::WorkItemEligible, K::WorkItemSkipped, K::WorkItemBlocked]
                }
                WorkItemStatus::Eligible => &[K::AttemptCreated, K::WorkItemBlocked],
                WorkItemStatus::Submitted => &[
                    K::AttemptSubmitted,
                    K::AttemptFailed,
                    K::AttemptFenced,
                    K::AttemptCancelled,
                ],
                WorkItemStatus::Running => &[
                    K::AttemptRunning,
                    K::AttemptCompleted,
                    K::AttemptCompleted,
                    K::AttemptFailed,
                    K::WorkItemPartial,
                    K::WorkItemDegraded,
                    K::WorkItemBlocked,
                ],
                WorkItemStatus::Blocked => &[K::AttemptCreated, K::WorkItemFailed],
                _ => &[],
            };
            for &kind in kinds {
                let (mut event, evidence) = match kind {
                    K::AttemptCancelled => {
                        let (mut event, evidence) = self.authorised(kind);
                        event.cancellation_scope = Some(Open::Known(CancellationScope::Attempt));
                        (event, evidence)
                    }
                    _ => self.plain(kind),
                };
                event.work_item_id = Some(item.work_item_id.clone());
                let attempt = item.current_attempt.as_ref();
                if kind == K::AttemptCreated {
                    let generation = attempt.map_or(0, |attempt| attempt.dispatch_generation + 1);
                    event.attempt_id = Some(id(IdentityKind::Attempt, self.fresh("att")));
                    event.dispatch_id = Some(id(IdentityKind::Dispatch, self.fresh("dsp")));
                    event.dispatch_generation = Some(generation);
                } else if kind.is_attempt_scoped() {
                    let Some(attempt) = attempt.filter(|a| a.status != AttemptStatus::Fenced)
                    else {
                        continue;
                    };
                    event.attempt_id = Some(attempt.attempt_id.clone());
                    event.dispatch_id = Some(attempt.dispatch_id.clone());
                    event.dispatch_generation = Some(attempt.dispatch_generation);
                }
                out.push((event, evidence));
            }
            if !item.status.is_terminal() && self.rng.chance(1) {
                let (mut event, evidence) = self.authorised(K::WorkItemCancelled);
                event.cancellation_scope = Some(Open::Known(CancellationScope::WorkItem));
                event.work_item_id = Some(item.work_item_id.clone());
                out.push((event, evidence));
            }
        }
        out
    }
}

impl Iterator for Walk {
    type Item = WalkStep;

    fn next(&mut self) -> Option<WalkStep> {
        self.step()
    }
}
