//! The Operator Workflow as a pure decision: given the kernel's State, the plan's execution
//! policy and what the adapters reported, the one next step the System takes.
//!
//! One step at a time, always from the State the kernel accepted last, so a crash or a
//! concurrent writer can never make the System act on a state it imagined. A step is either an
//! event to propose (the kernel may still refuse it), an adapter action (launch, verification
//! run, closure) after which the runtime decides again, or a wait with its reason.
//!
//! The rules, in the order they are tried while the task is `executing`:
//! 1. settle what the adapters reported for live attempts (submitted → running → completed;
//!    a failed attempt is fenced, then its item is retried while the retry budget lasts, a
//!    soft item degrades, and anything else is blocked: a blocked item can still be given a
//!    new attempt by the Leader (`valp retry`), a failed one never could);
//! 2. launch attempts that were created but not yet submitted to their runtime;
//! 3. give blocked items a new attempt (higher generation) while their budget lasts, and
//!    items blocked by a dependency that has completed since their first;
//! 4. settle pending items whose hard dependency can no longer complete (skip optional/soft
//!    items nobody requires, block the others);
//! 5. make pending items with an open dependency gate eligible;
//! 6. create attempts for eligible items while fewer than `max_concurrency` are in flight;
//! 7. once every item is settled: `work_completed` if every required item completed, else
//!    `task_blocked`.
//!
//! Outside `executing` the task waits for the Leader, and the wait says which of the Leader's
//! ways forward the kernel allows there: `fixing` is dispatched again as soon as anything can
//! run or is still in flight (an attempt running while the Leader redirected is settled once
//! the task executes again); a `blocked` task offers retry, recovery to `fixing`, redirect and
//! cancel.

use std::collections::BTreeMap;

use valp_kernel::frontier::{Position, frontier};
use valp_kernel::{
    AttemptStatus, ControlStatus, EventKind, Requirement, StateBody, TaskStatus, WorkItem,
    WorkItemStatus,
};

use crate::abi::ObservationStatus;

/// How the plan lets the System execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionPolicy {
    /// Attempts in flight at once.
    pub max_concurrency: usize,
    /// Attempts per work item (the first included) the System makes by itself.
    pub retry_budget: i128,
    /// The plan requires the Leader's approval after the review (`approval = "required"`).
    pub approval: bool,
}

impl From<&crate::plan::Execution> for ExecutionPolicy {
    fn from(execution: &crate::plan::Execution) -> Self {
        Self {
            max_concurrency: usize::try_from(execution.max_concurrency).unwrap_or(1),
            retry_budget: i128::from(execution.retry_budget),
            approval: execution.approval_required,
        }
    }
}

/// What the adapter's folder says about one attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptReport {
    /// The runtime was handed the attempt (its request exists).
    pub launched: bool,
    /// The adapter took it on (observation `accepted`).
    pub accepted: bool,
    /// The adapter's final word, if any.
    pub last: Option<ObservationStatus>,
    /// The supervisor died without a final word (process attempts only: an external attempt
    /// has no supervisor, so this is never set for it).
    pub supervisor_lost: bool,
}

/// The identity of an attempt, as events carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptSlots {
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// The dispatch.
    pub dispatch_id: String,
    /// The generation.
    pub generation: i128,
}

/// The evidence an event needs, resolved by the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvidenceNeed {
    /// None.
    Nothing,
    /// The attempt's request (what was submitted).
    Request,
    /// The adapter's `accepted` observation and its process proof.
    Accepted,
    /// The adapter's final observation, its proofs and the expected evidence files.
    Final,
}

/// An event to propose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The kind.
    pub kind: EventKind,
    /// The work item it targets (work-item and attempt events).
    pub work_item_id: Option<String>,
    /// The attempt it names (attempt events).
    pub attempt: Option<AttemptSlots>,
    /// Its evidence.
    pub evidence: EvidenceNeed,
    /// Why, in words (shown in the console's log and `valp run`).
    pub why: String,
}

/// Why nothing happens now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wait {
    /// Adapters are working; their next observation wakes the runtime.
    InFlight(usize),
    /// The Leader interrupted the task.
    Interrupted,
    /// The task needs the Leader (review, approval, a blocked or fixing task).
    Leader(String),
    /// The task is finished.
    Finished(TaskStatus),
    /// The task was published but its first event is missing (publish it again).
    NotStarted,
}

/// The next thing to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Propose an event.
    Propose(Proposal),
    /// Hand a created attempt to its runtime, then propose `attempt_submitted`.
    Launch(AttemptSlots),
    /// Run the plan's verification commands and criteria checks (verifying).
    Verify,
    /// Evaluate the Done gate and propose `recording_completed` with it (recording).
    Record,
    /// Nothing now.
    Wait(Wait),
}

/// The attempt id of generation `generation` of `work_item` in `task`.
pub fn attempt_slots(task: &str, work_item: &str, generation: i128) -> AttemptSlots {
    AttemptSlots {
        work_item_id: work_item.to_owned(),
        attempt_id: format!("{task}:{work_item}:a{generation}"),
        dispatch_id: format!("{task}:{work_item}:{generation}"),
        generation,
    }
}

fn slots_of(item: &WorkItem) -> Option<AttemptSlots> {
    item.current_attempt.as_ref().map(|attempt| AttemptSlots {
        work_item_id: item.work_item_id.value().to_owned(),
        attempt_id: attempt.attempt_id.value().to_owned(),
        dispatch_id: attempt.dispatch_id.value().to_owned(),
        generation: attempt.dispatch_generation,
    })
}

fn propose(kind: EventKind, item: &WorkItem, evidence: EvidenceNeed, why: String) -> Step {
    Step::Propose(Proposal {
        kind,
        work_item_id: Some(item.work_item_id.value().to_owned()),
        attempt: slots_of(item),
        evidence,
        why,
    })
}

fn task_event(kind: EventKind, why: &str) -> Step {
    Step::Propose(Proposal {
        kind,
        work_item_id: None,
        attempt: None,
        evidence: EvidenceNeed::Nothing,
        why: why.to_owned(),
    })
}

/// Why an adapter's final word about `attempt_id` (completed, blocked, cancelled, …) is not
/// what the journal shows, in words; `None` when the journal took it (or the attempt is not
/// the task's). The console shows this next to the observation, so a `completed` report beside
/// a work item that is still `running` is never left unexplained.
pub fn unapplied(body: &StateBody, attempt_id: &str) -> Option<String> {
    let item = body.work_items.iter().find(|item| {
        item.current_attempt
            .as_ref()
            .is_some_and(|attempt| attempt.attempt_id.value() == attempt_id)
    });
    let Some(attempt) = item.and_then(|item| item.current_attempt.as_ref()) else {
        let prefix = |item: &&WorkItem| {
            attempt_id.starts_with(&format!(
                "{}:{}:",
                body.task_id.value(),
                item.work_item_id.value()
            ))
        };
        return body.work_items.iter().find(prefix).map(|item| {
            let current = item
                .current_attempt
                .as_ref()
                .map_or("none", |attempt| attempt.attempt_id.value());
            format!(
                "superseded: the current attempt of {} is {current}",
                item.work_item_id.value()
            )
        });
    };
    let control = body.control.as_ref().map(|control| control.status);
    let status = body.status.as_str();
    match attempt.status {
        AttemptStatus::Completed | AttemptStatus::Failed => None,
        AttemptStatus::Fenced => Some(
            "the attempt was fenced: its end counts as a failure, and nothing it reports \
                 afterwards is applied"
                .to_owned(),
        ),
        AttemptStatus::Cancelled => {
            Some("not applied: the attempt was cancelled before it ended".to_owned())
        }
        AttemptStatus::Created | AttemptStatus::Submitted | AttemptStatus::Running => {
            Some(if control == Some(ControlStatus::Interrupted) {
                "not applied yet: the task is interrupted; it is recorded after a resume".to_owned()
            } else if body.status.known().is_some_and(TaskStatus::is_terminal) {
                format!("not applied: the task is {status}")
            } else if body.status.known() == Some(TaskStatus::Executing) {
                "not applied yet: the System records it at its next step".to_owned()
            } else {
                format!(
                    "not applied yet: the task is {status}; it is recorded once the task \
                     executes again"
                )
            })
        }
    }
}

/// The next step for a task. `reports` is keyed by attempt id.
pub fn decide(
    body: &StateBody,
    policy: &ExecutionPolicy,
    reports: &BTreeMap<String, AttemptReport>,
    verified: bool,
) -> Step {
    let Some(status) = body.status.known() else {
        return Step::Wait(Wait::Leader(format!(
            "unknown task status {}",
            body.status.as_str()
        )));
    };
    if status.is_terminal() {
        return Step::Wait(Wait::Finished(status));
    }
    if body
        .control
        .as_ref()
        .is_some_and(|control| control.status == ControlStatus::Interrupted)
    {
        return Step::Wait(Wait::Interrupted);
    }
    match status {
        TaskStatus::Published => Step::Wait(Wait::NotStarted),
        TaskStatus::RoutingValidation => task_event(
            EventKind::RoutingValidationPassed,
            "every work item names a known adapter (process, external or tmux)",
        ),
        TaskStatus::Dispatching => {
            task_event(EventKind::DispatchAccepted, "the dispatcher takes the task")
        }
        TaskStatus::Executing => execute(body, policy, reports),
        TaskStatus::Verifying if !verified => Step::Verify,
        TaskStatus::Verifying => Step::Wait(Wait::InFlight(0)),
        TaskStatus::Reviewing => Step::Wait(Wait::Leader(format!(
            "review: pass or reject the task (`valp review {} pass|reject`){}",
            body.task_id.value(),
            if policy.approval {
                "; the plan requires approval, so a pass asks for it"
            } else {
                ""
            }
        ))),
        TaskStatus::ApprovalRequired => Step::Wait(Wait::Leader(format!(
            "approval: grant or deny (`valp approve {} grant|deny`)",
            body.task_id.value()
        ))),
        TaskStatus::Recording => Step::Record,
        TaskStatus::Fixing => fixing(body, policy),
        TaskStatus::Blocked => Step::Wait(Wait::Leader(blocked(body, policy))),
        TaskStatus::Done | TaskStatus::Failed | TaskStatus::Cancelled => {
            Step::Wait(Wait::Finished(status))
        }
    }
}

/// After a redirect (or a failed verification, a rejected review, a denied approval, a
/// recovery) the task is `fixing`: it is dispatched again when something can run or is still in
/// flight (a running attempt is only settled while the task executes); otherwise the Leader
/// decides, and the wait names what the kernel allows.
fn fixing(body: &StateBody, policy: &ExecutionPolicy) -> Step {
    let runnable = body.work_items.iter().any(|item| {
        matches!(
            item.status,
            WorkItemStatus::Pending
                | WorkItemStatus::Eligible
                | WorkItemStatus::Submitted
                | WorkItemStatus::Running
        ) || system_retries(body, policy, item)
    });
    if runnable {
        return task_event(
            EventKind::FixDispatchRequested,
            "work items remain to run or are still running",
        );
    }
    let task = body.task_id.value();
    let spent = spent_items(body, policy);
    Step::Wait(Wait::Leader(if spent.is_empty() {
        format!(
            "fixing: every work item is settled; `valp unblock {task}` dispatches the task \
             again (verification runs again once every required item completed), or redirect \
             or cancel it"
        )
    } else {
        format!(
            "fixing: {} spent the retry budget; `valp retry {task} ITEM` gives one a new \
             attempt, `valp unblock {task}` dispatches the task as it is, or redirect or cancel \
             it",
            spent.join(", ")
        )
    }))
}

/// What a `blocked` task offers the Leader, in words.
fn blocked(body: &StateBody, policy: &ExecutionPolicy) -> String {
    let task = body.task_id.value();
    let spent = spent_items(body, policy);
    if spent.is_empty() {
        format!(
            "blocked: `valp unblock {task}` returns the task to fixing, or redirect or cancel \
             it (no blocked work item can be retried: {})",
            unretriable_reason(body)
        )
    } else {
        format!(
            "blocked: {} spent the retry budget; `valp retry {task} ITEM` gives one a new \
             attempt, `valp unblock {task}` returns the task to fixing, or redirect or cancel it",
            spent.join(", ")
        )
    }
}

/// Why no item of a blocked task can run again: the items that are cancelled or failed (never
/// run again) and the blocked ones still waiting for a dependency.
fn unretriable_reason(body: &StateBody) -> String {
    let stuck: Vec<String> = body
        .work_items
        .iter()
        .filter(|item| {
            item.requirement == Requirement::Required && item.status != WorkItemStatus::Completed
        })
        .map(|item| format!("{} is {}", item.work_item_id.value(), item.status.as_str()))
        .collect();
    if stuck.is_empty() {
        "every required item completed".to_owned()
    } else {
        stuck.join(", ")
    }
}

/// Blocked items whose own attempts spent the retry budget, while their hard dependencies are
/// completed: only the Leader's retry gives them another attempt.
fn spent_items(body: &StateBody, policy: &ExecutionPolicy) -> Vec<String> {
    body.work_items
        .iter()
        .filter(|item| {
            item.status == WorkItemStatus::Blocked
                && hard_dependencies_completed(body, item)
                && item.current_attempt.as_ref().is_some_and(|attempt| {
                    !attempt.status.is_live() && attempt.dispatch_generation >= policy.retry_budget
                })
        })
        .map(|item| item.work_item_id.value().to_owned())
        .collect()
}

/// Whether the System itself gives a blocked item its next attempt: its hard dependencies are
/// completed and either it never had an attempt (it was blocked by a dependency that has
/// completed since) or its last attempt ended with budget left.
fn system_retries(body: &StateBody, policy: &ExecutionPolicy, item: &WorkItem) -> bool {
    item.status == WorkItemStatus::Blocked
        && hard_dependencies_completed(body, item)
        && item.current_attempt.as_ref().is_none_or(|attempt| {
            !attempt.status.is_live() && attempt.dispatch_generation < policy.retry_budget
        })
}

fn execute(
    body: &StateBody,
    policy: &ExecutionPolicy,
    reports: &BTreeMap<String, AttemptReport>,
) -> Step {
    settle_attempts(body, policy, reports)
        .or_else(|| retry(body, policy))
        .or_else(|| pending(body, policy))
        .or_else(|| new_attempt(body, policy))
        .unwrap_or_else(|| close(body, policy))
}

/// 1 and 2: what the adapters reported for live attempts, and launches.
fn settle_attempts(
    body: &StateBody,
    policy: &ExecutionPolicy,
    reports: &BTreeMap<String, AttemptReport>,
) -> Option<Step> {
    let report_of = |item: &WorkItem| {
        item.current_attempt
            .as_ref()
            .and_then(|attempt| reports.get(attempt.attempt_id.value()))
            .cloned()
            .unwrap_or_default()
    };
    for item in &body.work_items {
        let Some(attempt) = &item.current_attempt else {
            continue;
        };
        let report = report_of(item);
        let id = item.work_item_id.value();
        match attempt.status {
            AttemptStatus::Created if !report.launched => {
                if let Some(slots) = slots_of(item) {
                    return Some(Step::Launch(slots));
                }
            }
            AttemptStatus::Created => {
                return Some(propose(
                    EventKind::AttemptSubmitted,
                    item,
                    EvidenceNeed::Request,
                    format!("{id} was handed to its adapter"),
                ));
            }
            AttemptStatus::Submitted if report.accepted => {
                return Some(propose(
                    EventKind::AttemptRunning,
                    item,
                    EvidenceNeed::Accepted,
                    format!("the adapter started {id}"),
                ));
            }
            AttemptStatus::Submitted if report.last.is_some() || report.supervisor_lost => {
                return Some(failure(item));
            }
            AttemptStatus::Running => match report.last {
                Some(ObservationStatus::Completed) => {
                    return Some(propose(
                        EventKind::AttemptCompleted,
                        item,
                        EvidenceNeed::Final,
                        format!("{id} completed with its expected evidence"),
                    ));
                }
                Some(_) => return Some(failure(item)),
                None if report.supervisor_lost => return Some(failure(item)),
                None => {}
            },
            AttemptStatus::Fenced if item.status == WorkItemStatus::Running => {
                use EventKind::{WorkItemBlocked, WorkItemDegraded};
                // Never `work_item_failed`: a failed item can never run again, a blocked one
                // can be retried by the Leader.
                let (kind, why) = if attempt.dispatch_generation < policy.retry_budget {
                    (WorkItemBlocked, format!("{id} waits for its next attempt"))
                } else if item.requirement == Requirement::Soft {
                    (WorkItemDegraded, format!("soft item {id} degrades"))
                } else {
                    (
                        WorkItemBlocked,
                        format!("{id} spent its retry budget; the Leader may retry it"),
                    )
                };
                return Some(propose(kind, item, EvidenceNeed::Nothing, why));
            }
            _ => {}
        }
    }
    None
}

/// 3: blocked items the System retries ([`system_retries`]) get a new attempt with the next
/// generation.
fn retry(body: &StateBody, policy: &ExecutionPolicy) -> Option<Step> {
    let item = body
        .work_items
        .iter()
        .find(|item| system_retries(body, policy, item))?;
    let next = item
        .current_attempt
        .as_ref()
        .map_or(1, |attempt| attempt.dispatch_generation + 1);
    Some(Step::Propose(Proposal {
        kind: EventKind::AttemptCreated,
        work_item_id: Some(item.work_item_id.value().to_owned()),
        attempt: Some(attempt_slots(
            body.task_id.value(),
            item.work_item_id.value(),
            next,
        )),
        evidence: EvidenceNeed::Nothing,
        why: if next == 1 {
            format!("the hard dependencies of {} completed", item.work_item_id)
        } else {
            format!(
                "retry {} of {} for {}",
                next, policy.retry_budget, item.work_item_id
            )
        },
    }))
}

/// 4 and 5: pending items whose hard dependency died are settled; unlocked ones (all
/// dependencies settled) become eligible.
fn pending(body: &StateBody, policy: &ExecutionPolicy) -> Option<Step> {
    for (item, position) in body.work_items.iter().zip(frontier(body)) {
        if item.status != WorkItemStatus::Pending {
            continue;
        }
        match position.position {
            // The kernel gates on hard dependencies only; the System also waits for soft and
            // optional ones to settle, so a dependent runs after them (or after their failure).
            Position::Unlocked { .. } if !dependencies_settled(body, policy, item) => {}
            Position::Unlocked { .. } => {
                return Some(propose(
                    EventKind::WorkItemEligible,
                    item,
                    EvidenceNeed::Nothing,
                    format!("every hard dependency of {} completed", item.work_item_id),
                ));
            }
            Position::Locked { by } => {
                let dead = by.iter().find(|lock| {
                    lock.status.is_none_or(|status| {
                        can_no_longer_complete(body, policy, &lock.work_item_id, status)
                    })
                });
                if let Some(lock) = dead {
                    let kind = if item.requirement != Requirement::Required
                        && !required_by_another(body, item)
                    {
                        EventKind::WorkItemSkipped
                    } else {
                        EventKind::WorkItemBlocked
                    };
                    return Some(propose(
                        kind,
                        item,
                        EvidenceNeed::Nothing,
                        format!(
                            "hard dependency {} of {} can no longer complete",
                            lock.work_item_id, item.work_item_id
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// 6: new attempts for eligible items within the concurrency limit.
fn new_attempt(body: &StateBody, policy: &ExecutionPolicy) -> Option<Step> {
    let in_flight = body
        .work_items
        .iter()
        .filter(|item| {
            item.current_attempt
                .as_ref()
                .is_some_and(|attempt| attempt.status.is_live())
        })
        .count();
    if in_flight < policy.max_concurrency
        && let Some(item) = body
            .work_items
            .iter()
            .find(|item| item.status == WorkItemStatus::Eligible)
    {
        return Some(Step::Propose(Proposal {
            kind: EventKind::AttemptCreated,
            work_item_id: Some(item.work_item_id.value().to_owned()),
            attempt: Some(attempt_slots(
                body.task_id.value(),
                item.work_item_id.value(),
                1,
            )),
            evidence: EvidenceNeed::Nothing,
            why: format!("{} is eligible and a slot is free", item.work_item_id),
        }));
    }
    if in_flight > 0
        || body
            .work_items
            .iter()
            .any(|item| item.status == WorkItemStatus::Eligible)
    {
        return Some(Step::Wait(Wait::InFlight(in_flight)));
    }
    None
}

/// 7: nothing to start: wait for work in flight, or close execution once everything settled.
fn close(body: &StateBody, policy: &ExecutionPolicy) -> Step {
    let stuck = body
        .work_items
        .iter()
        .any(|item| !settled_for_good(body, policy, item));
    if stuck {
        return Step::Wait(Wait::Leader(
            "work items wait for something only the Leader can give".to_owned(),
        ));
    }
    let required_done = body.work_items.iter().all(|item| {
        item.requirement != Requirement::Required || item.status == WorkItemStatus::Completed
    });
    if required_done {
        task_event(
            EventKind::WorkCompleted,
            "every required work item completed",
        )
    } else {
        task_event(
            EventKind::TaskBlocked,
            "a required work item cannot complete",
        )
    }
}

/// The failure of a live attempt: it is fenced first, so nothing it reports later counts;
/// then its item is retried, degraded or blocked (see [`settle_attempts`]).
fn failure(item: &WorkItem) -> Step {
    let generation = item
        .current_attempt
        .as_ref()
        .map_or(0, |attempt| attempt.dispatch_generation);
    propose(
        EventKind::AttemptFenced,
        item,
        EvidenceNeed::Final,
        format!("{} attempt {generation} failed", item.work_item_id.value()),
    )
}

/// Whether an item whose dependency `id` has `status` is waiting in vain.
fn can_no_longer_complete(
    body: &StateBody,
    policy: &ExecutionPolicy,
    id: &valp_kernel::Identity,
    status: WorkItemStatus,
) -> bool {
    match status {
        WorkItemStatus::Failed
        | WorkItemStatus::Cancelled
        | WorkItemStatus::Skipped
        | WorkItemStatus::Partial
        | WorkItemStatus::Degraded => true,
        // Blocked for good (without the Leader): the System will not retry it.
        WorkItemStatus::Blocked => body
            .work_item(id)
            .is_some_and(|item| !system_retries(body, policy, item)),
        _ => false,
    }
}

/// Whether every dependency of `item`, of any kind, is settled (completed, partial, degraded,
/// failed, cancelled, skipped, or blocked for good) or missing.
fn dependencies_settled(body: &StateBody, policy: &ExecutionPolicy, item: &WorkItem) -> bool {
    item.dependencies.iter().all(|dependency| {
        body.work_item(&dependency.work_item_id)
            .is_none_or(|target| {
                target.status.is_terminal()
                    || can_no_longer_complete(body, policy, &target.work_item_id, target.status)
            })
    })
}

fn hard_dependencies_completed(body: &StateBody, item: &WorkItem) -> bool {
    item.dependencies.iter().all(|dependency| {
        dependency.requirement != Requirement::Required
            || body
                .work_item(&dependency.work_item_id)
                .is_some_and(|target| target.status == WorkItemStatus::Completed)
    })
}

fn required_by_another(body: &StateBody, item: &WorkItem) -> bool {
    body.work_items.iter().any(|other| {
        other.dependencies.iter().any(|dependency| {
            dependency.work_item_id == item.work_item_id
                && dependency.requirement == Requirement::Required
        })
    })
}

/// Whether an item will not change any more without the Leader.
fn settled_for_good(body: &StateBody, policy: &ExecutionPolicy, item: &WorkItem) -> bool {
    match item.status {
        WorkItemStatus::Completed
        | WorkItemStatus::Partial
        | WorkItemStatus::Degraded
        | WorkItemStatus::Failed
        | WorkItemStatus::Cancelled
        | WorkItemStatus::Skipped => true,
        WorkItemStatus::Blocked => !system_retries(body, policy, item),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use valp_kernel::{Attempt, Control, Dependency, Identity, IdentityKind, Open, State};

    use super::*;

    const POLICY: ExecutionPolicy = ExecutionPolicy {
        max_concurrency: 2,
        retry_budget: 2,
        approval: false,
    };

    fn id(kind: IdentityKind, value: &str) -> Identity {
        Identity::new(kind, value).unwrap()
    }

    fn item(name: &str, requirement: Requirement, deps: &[(&str, Requirement)]) -> WorkItem {
        WorkItem {
            task_id: id(IdentityKind::Task, "T"),
            work_item_id: id(IdentityKind::WorkItem, name),
            requirement,
            status: WorkItemStatus::Pending,
            dependencies: deps
                .iter()
                .map(|(dep, requirement)| Dependency {
                    work_item_id: id(IdentityKind::WorkItem, dep),
                    requirement: *requirement,
                })
                .collect(),
            current_attempt: None,
        }
    }

    fn with(
        mut item: WorkItem,
        status: WorkItemStatus,
        attempt: Option<(i128, AttemptStatus)>,
    ) -> WorkItem {
        item.status = status;
        item.current_attempt = attempt.map(|(generation, status)| {
            let slots = attempt_slots("T", item.work_item_id.value(), generation);
            Attempt {
                task_id: item.task_id.clone(),
                work_item_id: item.work_item_id.clone(),
                attempt_id: id(IdentityKind::Attempt, &slots.attempt_id),
                dispatch_id: id(IdentityKind::Dispatch, &slots.dispatch_id),
                dispatch_generation: generation,
                status,
            }
        });
        item
    }

    /// An executing task whose one work item, `a` (no dependencies), is `status` with its
    /// attempt `generation` in `attempt`.
    fn lone_attempt(
        requirement: Requirement,
        status: WorkItemStatus,
        generation: i128,
        attempt: AttemptStatus,
    ) -> StateBody {
        body(
            TaskStatus::Executing,
            vec![with(
                item("a", requirement, &[]),
                status,
                Some((generation, attempt)),
            )],
        )
    }

    fn body(status: TaskStatus, items: Vec<WorkItem>) -> StateBody {
        let mut state = State::genesis(
            id(IdentityKind::Installation, "inst"),
            1,
            id(IdentityKind::Task, "T"),
            items,
        );
        state.body.status = Open::Known(status);
        state.body
    }

    fn kind_of(step: &Step) -> (EventKind, Option<String>) {
        match step {
            Step::Propose(proposal) => (proposal.kind, proposal.work_item_id.clone()),
            other => panic!("expected a proposal, got {other:?}"),
        }
    }

    fn reports(entries: &[(&str, i128, AttemptReport)]) -> BTreeMap<String, AttemptReport> {
        entries
            .iter()
            .map(|(item, generation, report)| {
                (
                    attempt_slots("T", item, *generation).attempt_id,
                    report.clone(),
                )
            })
            .collect()
    }

    /// The step when no attempt has reported anything and verification has not run.
    fn decide_unreported(state: &StateBody) -> Step {
        decide(state, &POLICY, &BTreeMap::new(), false)
    }

    /// The step given these attempt reports, before verification.
    fn decide_reported(state: &StateBody, entries: &[(&str, i128, AttemptReport)]) -> Step {
        decide(state, &POLICY, &reports(entries), false)
    }

    #[test]
    fn the_task_walks_to_executing_then_makes_unlocked_items_eligible() {
        let items = vec![
            item("a", Requirement::Required, &[]),
            item("b", Requirement::Required, &[("a", Requirement::Required)]),
        ];
        assert_eq!(
            kind_of(&decide_unreported(&body(
                TaskStatus::RoutingValidation,
                items.clone()
            )))
            .0,
            EventKind::RoutingValidationPassed
        );
        assert_eq!(
            kind_of(&decide_unreported(&body(
                TaskStatus::Dispatching,
                items.clone()
            )))
            .0,
            EventKind::DispatchAccepted
        );
        assert_eq!(
            kind_of(&decide_unreported(&body(TaskStatus::Executing, items))),
            (EventKind::WorkItemEligible, Some("a".to_owned()))
        );
    }

    #[test]
    fn an_attempt_goes_created_launched_submitted_running_completed() {
        let created = lone_attempt(
            Requirement::Required,
            WorkItemStatus::Submitted,
            1,
            AttemptStatus::Created,
        );
        assert_eq!(
            decide_unreported(&created),
            Step::Launch(attempt_slots("T", "a", 1))
        );
        let launched = AttemptReport {
            launched: true,
            ..AttemptReport::default()
        };
        assert_eq!(
            kind_of(&decide_reported(&created, &[("a", 1, launched.clone())])).0,
            EventKind::AttemptSubmitted
        );
        let submitted = lone_attempt(
            Requirement::Required,
            WorkItemStatus::Running,
            1,
            AttemptStatus::Submitted,
        );
        assert_eq!(
            decide_reported(&submitted, &[("a", 1, launched.clone())]),
            Step::Wait(Wait::InFlight(1))
        );
        let accepted = AttemptReport {
            accepted: true,
            ..launched.clone()
        };
        assert_eq!(
            kind_of(&decide_reported(&submitted, &[("a", 1, accepted.clone())])).0,
            EventKind::AttemptRunning
        );
        let running = lone_attempt(
            Requirement::Required,
            WorkItemStatus::Running,
            1,
            AttemptStatus::Running,
        );
        let done = AttemptReport {
            last: Some(ObservationStatus::Completed),
            ..accepted
        };
        let step = decide_reported(&running, &[("a", 1, done)]);
        assert_eq!(kind_of(&step).0, EventKind::AttemptCompleted);
        let Step::Propose(proposal) = step else {
            unreachable!()
        };
        assert_eq!(proposal.evidence, EvidenceNeed::Final);
        assert_eq!(proposal.attempt, Some(attempt_slots("T", "a", 1)));
    }

    #[test]
    fn failures_are_fenced_then_retried_degraded_or_blocked() {
        let failed = AttemptReport {
            launched: true,
            accepted: true,
            last: Some(ObservationStatus::Blocked),
            supervisor_lost: false,
        };
        // Every failure fences the attempt first, whatever the budget.
        for (requirement, generation, expected) in [
            (Requirement::Required, 1, EventKind::AttemptFenced),
            (Requirement::Required, 2, EventKind::AttemptFenced),
            (Requirement::Soft, 2, EventKind::AttemptFenced),
            (Requirement::Optional, 2, EventKind::AttemptFenced),
        ] {
            let running = lone_attempt(
                requirement,
                WorkItemStatus::Running,
                generation,
                AttemptStatus::Running,
            );
            assert_eq!(
                kind_of(&decide_reported(
                    &running,
                    &[("a", generation, failed.clone())]
                ))
                .0,
                expected,
                "{requirement:?} generation {generation}"
            );
        }
        // A lost supervisor counts as a failure too.
        let lost = AttemptReport {
            launched: true,
            supervisor_lost: true,
            ..AttemptReport::default()
        };
        let submitted = lone_attempt(
            Requirement::Required,
            WorkItemStatus::Running,
            1,
            AttemptStatus::Submitted,
        );
        assert_eq!(
            kind_of(&decide_reported(&submitted, &[("a", 1, lost)])).0,
            EventKind::AttemptFenced
        );
        // After the fence: blocked for a retry, degraded (soft), or blocked with the budget
        // spent (never failed: the Leader may still retry it).
        for (requirement, generation, expected) in [
            (Requirement::Required, 1, EventKind::WorkItemBlocked),
            (Requirement::Soft, 2, EventKind::WorkItemDegraded),
            (Requirement::Required, 2, EventKind::WorkItemBlocked),
            (Requirement::Optional, 2, EventKind::WorkItemBlocked),
        ] {
            let fenced = lone_attempt(
                requirement,
                WorkItemStatus::Running,
                generation,
                AttemptStatus::Fenced,
            );
            assert_eq!(kind_of(&decide_unreported(&fenced)).0, expected);
        }
        // Blocked with budget left: a new attempt with the next generation.
        let blocked = lone_attempt(
            Requirement::Required,
            WorkItemStatus::Blocked,
            1,
            AttemptStatus::Fenced,
        );
        let Step::Propose(retry) = decide_unreported(&blocked) else {
            panic!()
        };
        assert_eq!(retry.kind, EventKind::AttemptCreated);
        assert_eq!(retry.attempt, Some(attempt_slots("T", "a", 2)));
        // Blocked with the budget spent: the System waits, and names the Leader's retry.
        let spent = body(
            TaskStatus::Executing,
            vec![with(
                item("a", Requirement::Required, &[]),
                WorkItemStatus::Blocked,
                Some((2, AttemptStatus::Fenced)),
            )],
        );
        assert_eq!(
            kind_of(&decide_unreported(&spent)).0,
            EventKind::TaskBlocked
        );
        let mut blocked = spent.clone();
        blocked.status = Open::Known(TaskStatus::Blocked);
        let Step::Wait(Wait::Leader(words)) = decide_unreported(&blocked) else {
            panic!()
        };
        assert_eq!(
            words,
            "blocked: a spent the retry budget; `valp retry T ITEM` gives one a new attempt, \
             `valp unblock T` returns the task to fixing, or redirect or cancel it"
        );
    }

    #[test]
    fn fixing_dispatches_again_while_work_runs_or_can_run() {
        let running = with(
            item("c", Requirement::Required, &[]),
            WorkItemStatus::Running,
            Some((1, AttemptStatus::Running)),
        );
        let cancelled = with(
            item("b", Requirement::Optional, &[]),
            WorkItemStatus::Cancelled,
            None,
        );
        // Redirected while `c` runs: `c` is still in flight, so the task is dispatched again
        // (its completion is settled while executing), not left waiting for the Leader.
        let state = body(TaskStatus::Fixing, vec![cancelled.clone(), running]);
        assert_eq!(
            kind_of(&decide_unreported(&state)).0,
            EventKind::FixDispatchRequested
        );
        // A dependent blocked by an item that has completed since is run again.
        let done = with(
            item("a", Requirement::Required, &[]),
            WorkItemStatus::Completed,
            Some((3, AttemptStatus::Completed)),
        );
        let dependent = with(
            item("d", Requirement::Required, &[("a", Requirement::Required)]),
            WorkItemStatus::Blocked,
            None,
        );
        let state = body(TaskStatus::Fixing, vec![done.clone(), dependent.clone()]);
        assert_eq!(
            kind_of(&decide_unreported(&state)).0,
            EventKind::FixDispatchRequested
        );
        let state = body(TaskStatus::Executing, vec![done.clone(), dependent]);
        let Step::Propose(created) = decide_unreported(&state) else {
            panic!()
        };
        assert_eq!(created.kind, EventKind::AttemptCreated);
        assert_eq!(created.attempt, Some(attempt_slots("T", "d", 1)));
        // Nothing left to run: the Leader decides, and is told how.
        let state = body(TaskStatus::Fixing, vec![done, cancelled]);
        let Step::Wait(Wait::Leader(words)) = decide_unreported(&state) else {
            panic!()
        };
        assert!(
            words.contains("`valp unblock T` dispatches the task again"),
            "{words}"
        );
    }

    #[test]
    fn dead_hard_dependencies_block_or_skip_their_dependents() {
        let a = with(
            item("a", Requirement::Required, &[]),
            WorkItemStatus::Failed,
            Some((2, AttemptStatus::Failed)),
        );
        let b = item("b", Requirement::Required, &[("a", Requirement::Required)]);
        let c = item("c", Requirement::Optional, &[("a", Requirement::Required)]);
        let state = body(TaskStatus::Executing, vec![a.clone(), b.clone(), c.clone()]);
        assert_eq!(
            kind_of(&decide_unreported(&state)),
            (EventKind::WorkItemBlocked, Some("b".to_owned()))
        );
        let state = body(
            TaskStatus::Executing,
            vec![a.clone(), with(b, WorkItemStatus::Blocked, None), c],
        );
        assert_eq!(
            kind_of(&decide_unreported(&state)),
            (EventKind::WorkItemSkipped, Some("c".to_owned()))
        );
        // Once everything is settled and a required item did not complete: task_blocked.
        let state = body(
            TaskStatus::Executing,
            vec![
                a,
                with(
                    item("b", Requirement::Required, &[("a", Requirement::Required)]),
                    WorkItemStatus::Blocked,
                    None,
                ),
                with(
                    item("c", Requirement::Optional, &[]),
                    WorkItemStatus::Skipped,
                    None,
                ),
            ],
        );
        assert_eq!(
            kind_of(&decide_unreported(&state)).0,
            EventKind::TaskBlocked
        );
    }

    #[test]
    fn soft_dependencies_do_not_hold_the_work_back() {
        let a = with(
            item("a", Requirement::Soft, &[]),
            WorkItemStatus::Degraded,
            Some((2, AttemptStatus::Fenced)),
        );
        let b = item("b", Requirement::Required, &[("a", Requirement::Soft)]);
        let state = body(TaskStatus::Executing, vec![a.clone(), b.clone()]);
        assert_eq!(
            kind_of(&decide_unreported(&state)),
            (EventKind::WorkItemEligible, Some("b".to_owned()))
        );
        let state = body(
            TaskStatus::Executing,
            vec![
                a,
                with(
                    b,
                    WorkItemStatus::Completed,
                    Some((1, AttemptStatus::Completed)),
                ),
            ],
        );
        assert_eq!(
            kind_of(&decide_unreported(&state)).0,
            EventKind::WorkCompleted
        );
    }

    #[test]
    fn the_concurrency_limit_holds_new_attempts() {
        let running = |name: &str| {
            with(
                item(name, Requirement::Required, &[]),
                WorkItemStatus::Running,
                Some((1, AttemptStatus::Running)),
            )
        };
        let eligible = with(
            item("c", Requirement::Required, &[]),
            WorkItemStatus::Eligible,
            None,
        );
        let state = body(
            TaskStatus::Executing,
            vec![running("a"), running("b"), eligible.clone()],
        );
        assert_eq!(decide_unreported(&state), Step::Wait(Wait::InFlight(2)));
        let state = body(TaskStatus::Executing, vec![running("a"), eligible]);
        assert_eq!(
            kind_of(&decide_unreported(&state)),
            (EventKind::AttemptCreated, Some("c".to_owned()))
        );
    }

    #[test]
    fn an_observation_the_journal_does_not_show_is_explained() {
        let running = with(
            item("c", Requirement::Required, &[]),
            WorkItemStatus::Running,
            Some((2, AttemptStatus::Running)),
        );
        let mut state = body(TaskStatus::Fixing, vec![running.clone()]);
        assert_eq!(
            unapplied(&state, "T:c:a2").as_deref(),
            Some(
                "not applied yet: the task is fixing; it is recorded once the task executes again"
            )
        );
        state.control = Some(Control {
            intent_version: 0,
            status: ControlStatus::Interrupted,
            active_interrupt_id: Some(id(IdentityKind::Interrupt, "i1")),
        });
        assert!(unapplied(&state, "T:c:a2").unwrap().contains("interrupted"));
        assert_eq!(
            unapplied(&state, "T:c:a1").as_deref(),
            Some("superseded: the current attempt of c is T:c:a2")
        );
        let fenced = with(
            item("c", Requirement::Required, &[]),
            WorkItemStatus::Blocked,
            Some((2, AttemptStatus::Fenced)),
        );
        assert!(
            unapplied(&body(TaskStatus::Executing, vec![fenced]), "T:c:a2")
                .unwrap()
                .contains("fenced")
        );
        let completed = with(
            item("c", Requirement::Required, &[]),
            WorkItemStatus::Completed,
            Some((2, AttemptStatus::Completed)),
        );
        assert_eq!(
            unapplied(&body(TaskStatus::Executing, vec![completed]), "T:c:a2"),
            None
        );
        assert_eq!(unapplied(&state, "T:verification-v:r3"), None);
    }

    #[test]
    fn interrupted_and_leader_states_wait() {
        let mut state = body(
            TaskStatus::Executing,
            vec![item("a", Requirement::Required, &[])],
        );
        state.control = Some(Control {
            intent_version: 0,
            status: ControlStatus::Interrupted,
            active_interrupt_id: Some(id(IdentityKind::Interrupt, "i1")),
        });
        assert_eq!(decide_unreported(&state), Step::Wait(Wait::Interrupted));
        for status in [
            TaskStatus::Reviewing,
            TaskStatus::Blocked,
            TaskStatus::ApprovalRequired,
        ] {
            assert!(matches!(
                decide_unreported(&body(status, vec![])),
                Step::Wait(Wait::Leader(_))
            ));
        }
        assert_eq!(
            decide_unreported(&body(TaskStatus::Verifying, vec![])),
            Step::Verify
        );
        assert_eq!(
            decide_unreported(&body(TaskStatus::Recording, vec![])),
            Step::Record
        );
        assert_eq!(
            decide_unreported(&body(TaskStatus::Done, vec![])),
            Step::Wait(Wait::Finished(TaskStatus::Done))
        );
    }
}
