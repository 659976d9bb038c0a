//! What the protocol allows next: the transitions of the Protocol State Machine from a task
//! State (RFC 0002 §6, D04, D15).
//!
//! [`explain`] builds one candidate event for every event kind and target (the task, each work
//! item, each work item's current attempt), judges it with the reducer's own code
//! ([`LiveState::preview`] and [`LiveState::apply`] on a copy: the rules are never written
//! twice) and then with the store's guards, modelled from the same functions the store calls:
//!
//! - the **epoch fence** (`store/src/fence.rs`): an event the kernel would accept is refused
//!   with `VALP-E-EPOCH-FENCED` when the installation's active epoch is at least 1 and is not
//!   the task's epoch;
//! - the **Done gate** (`store/src/done.rs`): a `recording_completed` the kernel would accept is
//!   refused with `VALP-E-DONE-GATE` unless [`done::locate`] finds the frozen policy and one
//!   closure and [`done::evaluate_bound`] passes, and, under a v3 policy after a correction
//!   signal, the bound correction cycle satisfies seed 003's rule ([`correction::judge`]). The
//!   caller supplies the decoded policy, the closure and the cycle it would propose and the
//!   history's signals (the store reads blobs; a missing or damaged blob, and whether a cycle's
//!   refs exist in the task folder, are the store's business and are not modelled here).
//!
//! The fence is checked before the Done gate, as the store does. Each transition carries the
//! candidate event and EvidenceSet, so a caller can propose exactly what was judged, and the
//! property test `store/tests/explain_store.rs` appends every listed candidate through the real
//! journal and checks the store's answer is the listed one.

use std::fmt::Write as _;

use crate::canonical::sha256_digest;
use crate::done::{self, DoneClosure, DonePolicy, correction};
use crate::live::{LiveState, Verdict};
use crate::model::{
    CancellationScope, Control, ControlReason, ControlStatus, Event, EventKind, Evidence, Identity,
    IdentityKind, Int, Open, StateBody, TaskStatus, Variant, WorkItem,
};
use crate::reduce::rules::passes_interrupt;
use crate::reduce::transitions::task_transition;

/// The store's code for a Done-gate refusal (`StoreCode::DoneGate`).
pub const DONE_GATE_CODE: &str = "VALP-E-DONE-GATE";
/// The store's code for an epoch-fence refusal (`StoreCode::EpochFenced`).
pub const EPOCH_FENCED_CODE: &str = "VALP-E-EPOCH-FENCED";

/// The store-side inputs of the lister.
#[derive(Debug, Clone, Copy, Default)]
pub struct Guards<'a> {
    /// The installation's active Leader epoch, when the task journal is fenced by a ledger.
    pub active_epoch: Option<Int>,
    /// The `done-policy-…` evidence frozen with the task's revision-1 entry (empty for a
    /// reference journal, whose `recording_completed` the store refuses).
    pub frozen_policy: &'a [Evidence],
    /// The frozen policy, decoded.
    pub policy: Option<&'a DonePolicy>,
    /// The closure the caller would propose, with its evidence.
    pub closure: Option<(&'a Evidence, &'a DoneClosure)>,
    /// The evidence the closure cites, proposed with it.
    pub cited: &'a [Evidence],
    /// The correction signals of the task's history (the store's
    /// `DoneGuard::correction_signals`): under a v3 policy they make the correction cycle
    /// part of the Done gate.
    pub signals: &'a [String],
    /// The correction cycle the caller would bind (its `correction-cycle-…` evidence is
    /// proposed with it), decoded.
    pub cycle: Option<(&'a Evidence, &'a crate::json::Value)>,
}

/// What a transition targets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The task.
    Task,
    /// A work item.
    WorkItem(Identity),
    /// A work item's current attempt.
    Attempt {
        /// The work item.
        work_item: Identity,
        /// The attempt.
        attempt: Identity,
    },
}

impl Target {
    /// The target in words: `task`, `item wi-01`, `attempt att-3 of wi-01`.
    pub fn describe(&self) -> String {
        match self {
            Self::Task => "task".to_owned(),
            Self::WorkItem(item) => format!("item {}", item.value()),
            Self::Attempt { work_item, attempt } => {
                format!("attempt {} of {}", attempt.value(), work_item.value())
            }
        }
    }
}

/// How the candidate would be answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Accepted by the kernel and admitted by the store.
    Allowed {
        /// The task status after it.
        next_status: TaskStatus,
        /// Obligations it emits.
        obligations: Vec<String>,
        /// Audit facts it records.
        audit_facts: Vec<String>,
    },
    /// Refused.
    Refused {
        /// `VALP-E-…`: the kernel's code or the store's.
        code: String,
        /// Why, in words (the Done gate's reasons for a Done-gate refusal).
        reasons: Vec<String>,
    },
}

/// One transition of the state machine from the current State.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    /// The event kind.
    pub kind: EventKind,
    /// What it targets.
    pub target: Target,
    /// Who may send it and with which authority.
    pub actor: &'static str,
    /// The current-state guard, in words.
    pub guard: String,
    /// The evidence it requires.
    pub evidence: &'static str,
    /// The answer it would get now.
    pub judgement: Judgement,
    /// The candidate event that was judged.
    pub event: Event,
    /// Its EvidenceSet.
    pub evidence_set: Vec<Evidence>,
}

impl Transition {
    /// Whether the transition is allowed now.
    pub fn is_allowed(&self) -> bool {
        matches!(self.judgement, Judgement::Allowed { .. })
    }
}

/// Every candidate transition from `live`, in event-kind order, then target order.
pub fn explain(live: &LiveState, guards: &Guards<'_>) -> Vec<Transition> {
    let builder = Candidates::new(live.body(), guards);
    let mut out = Vec::new();
    for &kind in EventKind::ALL {
        for (target, event, evidence_set) in builder.for_kind(kind) {
            let judgement = judge(live, guards, &event, &evidence_set);
            out.push(Transition {
                kind,
                target,
                actor: actor(kind),
                guard: guard(kind),
                evidence: evidence(kind),
                judgement,
                event,
                evidence_set,
            });
        }
    }
    out
}

/// The kernel's answer, then the store's guards in the store's order.
fn judge(
    live: &LiveState,
    guards: &Guards<'_>,
    event: &Event,
    evidence_set: &[Evidence],
) -> Judgement {
    let body = live.body();
    if live.preview(event, evidence_set) != Variant::Accepted {
        let mut copy = live.clone();
        let code = copy
            .apply(event, evidence_set)
            .error_code()
            .map_or_else(|| "no_op".to_owned(), |code| code.as_str().to_owned());
        return Judgement::Refused {
            code,
            reasons: vec![kernel_reason(body, event)],
        };
    }
    let task_epoch = body.leader_epoch;
    if let Some(active) = guards
        .active_epoch
        .filter(|&active| active >= 1 && active != task_epoch)
    {
        return Judgement::Refused {
            code: EPOCH_FENCED_CODE.to_owned(),
            reasons: vec![format!(
                "the task is bound to Leader epoch {task_epoch}, the active epoch is {active}"
            )],
        };
    }
    if event.kind.known() == Some(EventKind::RecordingCompleted) {
        let reasons = done_gate(body, guards, evidence_set);
        if !reasons.is_empty() {
            return Judgement::Refused {
                code: DONE_GATE_CODE.to_owned(),
                reasons,
            };
        }
    }
    let mut copy = live.clone();
    match copy.apply(event, evidence_set) {
        Verdict::Accepted(record) => Judgement::Allowed {
            next_status: copy.body().status.known().unwrap_or(TaskStatus::Published),
            obligations: record.obligations,
            audit_facts: record.audit_facts,
        },
        // `preview` said accepted and `apply` runs the same checks.
        other => Judgement::Refused {
            code: other
                .error_code()
                .map_or_else(|| "no_op".to_owned(), |code| code.as_str().to_owned()),
            reasons: vec![kernel_reason(body, event)],
        },
    }
}

/// The Done gate's blocking reasons for a `recording_completed` with `evidence_set`.
fn done_gate(body: &StateBody, guards: &Guards<'_>, evidence_set: &[Evidence]) -> Vec<String> {
    if let Err(reasons) = done::locate(guards.frozen_policy, evidence_set) {
        return reasons;
    }
    match (guards.policy, guards.closure) {
        (Some(policy), Some((_, closure))) => {
            let mut reasons = done::evaluate_bound(body, evidence_set, policy, closure).reasons;
            reasons.extend(correction_gate(body, guards, policy, evidence_set));
            reasons
        }
        _ => vec!["done_policy_unreadable".to_owned()],
    }
}

/// The correction-cycle part of the Done gate (after the matrix's reasons, as the store
/// orders them): nothing unless the policy is v3 and the history has a signal; then the one
/// bound `correction-cycle-…` evidence, judged by the seed's rule. Whether its refs exist in
/// the task folder is the store's business (it looks when the Done is written), like blobs.
fn correction_gate(
    body: &StateBody,
    guards: &Guards<'_>,
    policy: &DonePolicy,
    evidence_set: &[Evidence],
) -> Vec<String> {
    if !correction::required(policy, guards.signals) {
        return Vec::new();
    }
    match correction::locate(evidence_set, guards.signals) {
        Err(reason) => vec![reason],
        Ok(bound) => match guards.cycle {
            Some((evidence, cycle)) if evidence == bound => {
                correction::judge(body.task_id.value(), cycle, &|_| true)
            }
            _ => vec!["correction_cycle_unreadable".to_owned()],
        },
    }
}

/// Why the kernel refuses `event`, in words, following the reducer's order of checks.
fn kernel_reason(body: &StateBody, event: &Event) -> String {
    let Some(kind) = event.kind.known() else {
        return "unknown event kind".to_owned();
    };
    let Some(status) = body.status.known() else {
        return "unknown task status".to_owned();
    };
    let control = body.control.as_ref().unwrap_or(&Control::INITIAL);
    if control.status == ControlStatus::Interrupted && !passes_interrupt(kind) {
        return "the task is interrupted: resume it first".to_owned();
    }
    if is_task_edge(kind) && task_transition(status, kind).is_none() {
        return format!(
            "the transition table has no edge {} --{}--> (allowed from: {})",
            status.as_str(),
            kind.as_str(),
            from_states(kind).join(", ")
        );
    }
    format!(
        "the {} rule refuses it while the task is {}",
        kind.as_str(),
        status.as_str()
    )
}

/// Kinds whose only rule is the task transition table.
fn is_task_edge(kind: EventKind) -> bool {
    use EventKind as K;
    matches!(
        kind,
        K::RoutingValidationStarted
            | K::RoutingValidationPassed
            | K::DispatchAccepted
            | K::WorkCompleted
            | K::VerificationPassed
            | K::VerificationFailed
            | K::ReviewPassed
            | K::ReviewRejected
            | K::ApprovalRequiredRaised
            | K::FixDispatchRequested
            | K::ApprovalGranted
            | K::ApprovalDenied
            | K::RecordingCompleted
            | K::TaskBlocked
            | K::BlockedRecoveryToFixing
            | K::TaskFailed
            | K::TaskCancelled
    )
}

/// The statuses from which the task table has an edge for `kind`.
pub fn from_states(kind: EventKind) -> Vec<&'static str> {
    TaskStatus::ALL
        .iter()
        .filter(|&&from| task_transition(from, kind).is_some())
        .map(|from| from.as_str())
        .collect()
}

/// Who sends `kind`.
pub fn actor(kind: EventKind) -> &'static str {
    use EventKind as K;
    match kind {
        _ if kind.is_authority_bound() => "Leader, with authority principal and evidence",
        K::ReviewPassed
        | K::ReviewRejected
        | K::ApprovalRequiredRaised
        | K::ApprovalGranted
        | K::ApprovalDenied
        | K::FixDispatchRequested
        | K::BlockedRecoveryToFixing
        | K::RecordingCompleted => "Leader",
        K::AttemptSubmitted
        | K::AttemptRunning
        | K::AttemptCompleted
        | K::AttemptFailed
        | K::WorkItemPartial
        | K::WorkItemDegraded => "System, from the adapter's proof",
        _ => "System",
    }
}

/// The current-state guard of `kind`, in words.
pub fn guard(kind: EventKind) -> String {
    use EventKind as K;
    let rule = match kind {
        K::InterruptRequested => "control active, intent version current",
        K::InterruptResumed => "control interrupted by this interrupt id",
        K::RedirectAuthorized => "intent version current, next = current + 1",
        K::SuspensionStarted => "executing, no waiting suspension, new suspension epoch",
        K::WakeAccepted => "the waiting suspension's id, epoch and wait policy",
        K::WorkItemEligible => "item pending, hard dependencies completed",
        K::AttemptCreated => "item eligible or blocked, next dispatch generation",
        K::AttemptFenced => "the current attempt's tuple, attempt not terminal",
        K::AttemptSubmitted
        | K::AttemptRunning
        | K::AttemptCompleted
        | K::AttemptFailed
        | K::AttemptCancelled => "the current attempt's (attempt, dispatch, generation) tuple",
        K::WorkItemPartial
        | K::WorkItemDegraded
        | K::WorkItemBlocked
        | K::WorkItemFailed
        | K::WorkItemCancelled
        | K::WorkItemSkipped => "item not settled",
        _ => "",
    };
    let states = from_states(kind);
    match (states.is_empty(), rule.is_empty()) {
        (true, _) if passes_interrupt(kind) => rule.to_owned(),
        (true, _) => format!("control not interrupted; {rule}"),
        (false, true) => format!("task in {}", states.join("|")),
        (false, false) => format!("task in {}; {rule}", states.join("|")),
    }
}

/// The evidence `kind` requires.
pub fn evidence(kind: EventKind) -> &'static str {
    match kind {
        EventKind::RecordingCompleted => {
            "frozen Done policy and one Done closure that passes the Done gate"
        }
        _ if kind.is_authority_bound() => "authority evidence in the EvidenceSet",
        _ => "none required",
    }
}

/// The obligations `kind` can emit.
pub fn obligations(kind: EventKind) -> &'static str {
    use EventKind as K;
    match kind {
        K::TaskCancelled => "`adapter_cancel:` for each submitted or running attempt",
        K::WorkItemCancelled | K::AttemptCancelled => {
            "`adapter_cancel:` if the attempt was submitted or running"
        }
        K::RedirectAuthorized => "`adapter_cancel:` for superseded items' live attempts",
        _ => "none",
    }
}

/// The audit facts `kind` records besides `accepted:event:<id>`.
pub fn audit_facts(kind: EventKind) -> &'static str {
    use EventKind as K;
    match kind {
        K::TaskCancelled => "`cancelled:task:…`",
        K::WorkItemCancelled => "`cancelled:work_item:…`",
        K::AttemptCancelled => "`cancelled:attempt:…`",
        K::InterruptRequested => "`interrupted:…`",
        K::InterruptResumed => "`interrupt_resumed:…`",
        K::RedirectAuthorized => "`redirected:…`",
        _ => "none",
    }
}

/// The failure codes `kind` can get besides `VALP-E-UNKNOWN-ENUM-VALUE`,
/// `VALP-E-IDEMPOTENCY-CONFLICT` and `VALP-E-EPOCH-FENCED`, which every kind can get.
pub fn failure_codes(kind: EventKind) -> &'static str {
    match kind {
        EventKind::RecordingCompleted => "`VALP-E-STATE-CONFLICT`, `VALP-E-DONE-GATE`",
        _ => "`VALP-E-STATE-CONFLICT`",
    }
}

/// The table of every transition (one row per event kind), in Markdown, generated from the
/// kernel: `schemas/transitions.md` holds it and a test keeps it current.
pub fn transition_table() -> String {
    let mut out = String::from(
        "<!-- Generated by valp_kernel::explain::transition_table; a test keeps it current. -->\n\
         # The task state machine's transitions\n\n\
         Every kind can also be refused with `VALP-E-UNKNOWN-ENUM-VALUE` (an unknown value in a \
         closed slot), `VALP-E-IDEMPOTENCY-CONFLICT` (a known event id with another input) and, \
         by the store, `VALP-E-EPOCH-FENCED` (a task bound to a fenced Leader epoch). \
         `valp task explain TASK` lists them for a task's current State.\n\n\
         | event kind | from states | actor | guard | evidence | next state | obligations | \
         audit facts | failure codes |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for &kind in EventKind::ALL {
        let next: Vec<String> = TaskStatus::ALL
            .iter()
            .filter_map(|&from| task_transition(from, kind).map(|to| (from, to)))
            .map(|(from, to)| format!("{} → {}", from.as_str(), to.as_str()))
            .collect();
        let from = from_states(kind);
        let (from, next) = if from.is_empty() {
            // Not an edge of the task table: the kind's own rule decides (see the guard).
            let next = if kind == EventKind::RedirectAuthorized {
                "fixing"
            } else {
                "status unchanged"
            };
            ("see guard".to_owned(), next.to_owned())
        } else {
            (from.join(", "), next.join(", "))
        };
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "| `{}` | {from} | {} | {} | {} | {next} | {} | {} | {} |",
            kind.as_str(),
            actor(kind),
            guard(kind),
            evidence(kind),
            obligations(kind),
            audit_facts(kind),
            failure_codes(kind),
        );
    }
    out
}

/// Builds candidate events with fresh, deterministic identities.
struct Candidates<'a> {
    body: &'a StateBody,
    control: Control,
    /// The evidence a `recording_completed` carries: the frozen policy and the closure.
    done_evidence: Vec<Evidence>,
}

fn derived(kind: IdentityKind, value: String) -> Identity {
    Identity::derived(kind, value)
}

impl<'a> Candidates<'a> {
    fn new(body: &'a StateBody, guards: &Guards<'_>) -> Self {
        let mut done_evidence = guards.frozen_policy.to_vec();
        done_evidence.extend(guards.closure.map(|(evidence, _)| evidence.clone()));
        done_evidence.extend(guards.cited.iter().cloned());
        done_evidence.extend(guards.cycle.map(|(evidence, _)| evidence.clone()));
        Self {
            body,
            control: body.control.clone().unwrap_or(Control::INITIAL),
            done_evidence,
        }
    }

    /// A fresh id for this State's revision: `explain-<rev>-<what>`.
    fn fresh(&self, what: &str) -> String {
        format!("explain-{}-{what}", self.body.revision)
    }

    fn event(&self, kind: EventKind, what: &str) -> Event {
        let body = self.body;
        Event::new(
            derived(
                IdentityKind::Event,
                self.fresh(&format!("{}-{what}", kind.as_str())),
            ),
            body.installation_id.clone(),
            body.leader_epoch,
            body.task_id.clone(),
            kind,
            body.revision,
        )
    }

    /// The event, with authority slots and evidence when the kind is authority-bound.
    fn candidate(&self, kind: EventKind, what: &str) -> (Event, Vec<Evidence>) {
        let mut event = self.event(kind, what);
        if !kind.is_authority_bound() {
            return (event, Vec::new());
        }
        let evidence_id = derived(
            IdentityKind::Evidence,
            self.fresh(&format!("auth-{}-{what}", kind.as_str())),
        );
        let evidence = Evidence {
            content_digest: sha256_digest(evidence_id.value().as_bytes()),
            evidence_id: evidence_id.clone(),
        };
        event.authority_principal_id = Some(derived(IdentityKind::Principal, "leader".to_owned()));
        event.authority_evidence_id = Some(evidence_id);
        event.control_reason = Some(Open::Known(ControlReason::UserRequested));
        (event, vec![evidence])
    }

    fn for_kind(&self, kind: EventKind) -> Vec<(Target, Event, Vec<Evidence>)> {
        use EventKind as K;
        let task =
            |(event, evidence): (Event, Vec<Evidence>)| vec![(Target::Task, event, evidence)];
        let control = &self.control;
        match kind {
            K::TaskCancelled => {
                let (mut event, evidence) = self.candidate(kind, "task");
                event.cancellation_scope = Some(Open::Known(CancellationScope::Task));
                event.suspension_epoch = self.body.suspension.as_ref().map(|s| s.suspension_epoch);
                task((event, evidence))
            }
            K::InterruptRequested => {
                let (mut event, evidence) = self.candidate(kind, "task");
                event.interrupt_id = Some(derived(IdentityKind::Interrupt, self.fresh("int")));
                event.intent_version = Some(control.intent_version);
                task((event, evidence))
            }
            K::InterruptResumed => {
                let (mut event, evidence) = self.candidate(kind, "task");
                event.interrupt_id = Some(
                    control
                        .active_interrupt_id
                        .clone()
                        .unwrap_or_else(|| derived(IdentityKind::Interrupt, self.fresh("int"))),
                );
                event.intent_version = Some(control.intent_version);
                task((event, evidence))
            }
            K::RedirectAuthorized => {
                let (mut event, evidence) = self.candidate(kind, "task");
                event.redirect_id = Some(derived(IdentityKind::Redirect, self.fresh("redir")));
                event.intent_version = Some(control.intent_version);
                event.next_intent_version = Some(control.intent_version + 1);
                task((event, evidence))
            }
            K::SuspensionStarted => {
                let (mut event, evidence) = self.candidate(kind, "task");
                let epoch = self
                    .body
                    .suspension
                    .as_ref()
                    .map_or(0, |s| s.suspension_epoch + 1);
                let policy = self.fresh("policy");
                event.suspension_id = Some(derived(IdentityKind::Suspension, self.fresh("susp")));
                event.suspension_epoch = Some(epoch);
                event.wait_policy_digest = Some(sha256_digest(policy.as_bytes()));
                event.wait_policy_id = Some(derived(IdentityKind::WaitPolicy, policy));
                // Waiting on an unsettled item if there is one; any item is allowed.
                let items = &self.body.work_items;
                event.required_work_item_ids = items
                    .iter()
                    .find(|item| !item.status.is_terminal())
                    .or_else(|| items.first())
                    .map(|item| item.work_item_id.clone())
                    .into_iter()
                    .collect();
                task((event, evidence))
            }
            K::WakeAccepted => {
                let Some(suspension) = &self.body.suspension else {
                    return task(self.candidate(kind, "task"));
                };
                let (mut event, evidence) = self.candidate(kind, "task");
                suspension.fill_wake(&mut event, derived(IdentityKind::Wake, self.fresh("wake")));
                task((event, evidence))
            }
            K::WorkItemEligible
            | K::WorkItemPartial
            | K::WorkItemDegraded
            | K::WorkItemBlocked
            | K::WorkItemFailed
            | K::WorkItemCancelled
            | K::WorkItemSkipped
            | K::AttemptCreated => self
                .body
                .work_items
                .iter()
                .map(|item| self.item_candidate(kind, item))
                .collect(),
            _ if kind.is_attempt_scoped() => self
                .body
                .work_items
                .iter()
                .filter_map(|item| self.attempt_candidate(kind, item))
                .collect(),
            K::RecordingCompleted => {
                let event = self.event(kind, "task");
                task((event, self.done_evidence.clone()))
            }
            _ => task(self.candidate(kind, "task")),
        }
    }

    fn item_candidate(&self, kind: EventKind, item: &WorkItem) -> (Target, Event, Vec<Evidence>) {
        let (mut event, evidence) = self.candidate(kind, item.work_item_id.value());
        event.work_item_id = Some(item.work_item_id.clone());
        if kind == EventKind::WorkItemCancelled {
            event.cancellation_scope = Some(Open::Known(CancellationScope::WorkItem));
        }
        if kind == EventKind::AttemptCreated {
            let generation = item
                .current_attempt
                .as_ref()
                .map_or(0, |attempt| attempt.dispatch_generation + 1);
            let what = format!("{}-{generation}", item.work_item_id.value());
            event.attempt_id = Some(derived(
                IdentityKind::Attempt,
                self.fresh(&format!("att-{what}")),
            ));
            event.dispatch_id = Some(derived(
                IdentityKind::Dispatch,
                self.fresh(&format!("dsp-{what}")),
            ));
            event.dispatch_generation = Some(generation);
        }
        (Target::WorkItem(item.work_item_id.clone()), event, evidence)
    }

    fn attempt_candidate(
        &self,
        kind: EventKind,
        item: &WorkItem,
    ) -> Option<(Target, Event, Vec<Evidence>)> {
        let attempt = item.current_attempt.as_ref()?;
        let (mut event, evidence) = self.candidate(kind, item.work_item_id.value());
        event.work_item_id = Some(item.work_item_id.clone());
        event.attempt_id = Some(attempt.attempt_id.clone());
        event.dispatch_id = Some(attempt.dispatch_id.clone());
        event.dispatch_generation = Some(attempt.dispatch_generation);
        if kind == EventKind::AttemptCancelled {
            event.cancellation_scope = Some(Open::Known(CancellationScope::Attempt));
        }
        let target = Target::Attempt {
            work_item: item.work_item_id.clone(),
            attempt: attempt.attempt_id.clone(),
        };
        Some((target, event, evidence))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::walk::TO_REVIEWING;

    /// A task without work items driven along the task table through `kinds`.
    fn task_after(kinds: &[EventKind]) -> LiveState {
        crate::walk::along_task_table(kinds).unwrap()
    }

    fn find(listed: &[Transition], kind: EventKind) -> &Transition {
        listed.iter().find(|t| t.kind == kind).unwrap()
    }

    #[test]
    fn reviewing_allows_review_and_refuses_recording_by_the_table() {
        let live = task_after(TO_REVIEWING);
        let listed = explain(&live, &Guards::default());
        let pass = find(&listed, EventKind::ReviewPassed);
        assert_eq!(pass.actor, "Leader");
        assert_eq!(pass.guard, "task in reviewing");
        match &pass.judgement {
            Judgement::Allowed {
                next_status,
                audit_facts,
                ..
            } => {
                assert_eq!(*next_status, TaskStatus::Recording);
                assert_eq!(
                    audit_facts[0],
                    "accepted:event:explain-5-review_passed-task"
                );
            }
            other @ Judgement::Refused { .. } => panic!("{other:?}"),
        }
        assert!(find(&listed, EventKind::ReviewRejected).is_allowed());
        assert_eq!(
            find(&listed, EventKind::RecordingCompleted).judgement,
            Judgement::Refused {
                code: "VALP-E-STATE-CONFLICT".to_owned(),
                reasons: vec![
                    "the transition table has no edge reviewing --recording_completed--> \
                     (allowed from: recording)"
                        .to_owned()
                ],
            }
        );
    }

    #[test]
    fn recording_without_a_frozen_policy_is_refused_by_the_done_gate() {
        let mut kinds = TO_REVIEWING.to_vec();
        kinds.push(EventKind::ReviewPassed);
        let live = task_after(&kinds);
        let listed = explain(&live, &Guards::default());
        assert_eq!(
            find(&listed, EventKind::RecordingCompleted).judgement,
            Judgement::Refused {
                code: DONE_GATE_CODE.to_owned(),
                reasons: vec![
                    "done_policy_missing".to_owned(),
                    "done_closure_missing".to_owned()
                ],
            }
        );
    }

    #[test]
    fn a_fenced_task_refuses_what_the_kernel_would_accept() {
        let live = task_after(TO_REVIEWING);
        let guards = Guards {
            active_epoch: Some(2),
            ..Guards::default()
        };
        let listed = explain(&live, &guards);
        let pass = find(&listed, EventKind::ReviewPassed);
        assert_eq!(
            pass.judgement,
            Judgement::Refused {
                code: EPOCH_FENCED_CODE.to_owned(),
                reasons: vec![
                    "the task is bound to Leader epoch 1, the active epoch is 2".to_owned()
                ],
            }
        );
        // What the kernel refuses keeps the kernel's code.
        let table = find(&listed, EventKind::RecordingCompleted);
        assert!(
            matches!(&table.judgement, Judgement::Refused { code, .. } if code == "VALP-E-STATE-CONFLICT")
        );
        assert!(listed.iter().all(|t| !t.is_allowed()));
    }

    #[test]
    fn an_interrupted_task_names_the_interrupt() {
        let live = task_after(TO_REVIEWING);
        let listed = explain(&live, &Guards::default());
        let interrupt = find(&listed, EventKind::InterruptRequested);
        assert!(interrupt.is_allowed(), "{:?}", interrupt.judgement);
        let mut live = live;
        assert!(matches!(
            live.apply(&interrupt.event, &interrupt.evidence_set),
            Verdict::Accepted(_)
        ));
        let listed = explain(&live, &Guards::default());
        assert_eq!(
            find(&listed, EventKind::ReviewPassed).judgement,
            Judgement::Refused {
                code: "VALP-E-STATE-CONFLICT".to_owned(),
                reasons: vec!["the task is interrupted: resume it first".to_owned()],
            }
        );
        assert!(find(&listed, EventKind::InterruptResumed).is_allowed());
    }
}
