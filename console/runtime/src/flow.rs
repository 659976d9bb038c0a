//! The console's two flow views (RFC 0002 §6), computed from a task journal:
//!
//! - [`workflow`]: the **Operator Workflow** strip of a task. Each of the eight stages
//!   ([`valp_view::flow::STAGES`]) is done (with what in the State proves it: `3/5
//!   submissions proven`), current, blocked (with the reason: a fenced epoch, the Leader's
//!   interrupt, blocked work items) or not reached. It reads the task State and the active
//!   epoch only, so it is redrawn with every view.
//! - [`transitions`] and [`machine`]: the **Protocol State Machine**: the kernel's transition
//!   lister ([`valp_kernel::explain`]) fed with the active epoch and the frozen Done policy, as
//!   rows with the words the console shows, and for an allowed transition the Leader sends
//!   from the console, the [`Request`] its key sends. `valp task explain` prints the same.
//!
//! No Done closure is built for the lister (building one gathers and stores evidence): a
//! `recording_completed` in `recording` is listed as refused by the Done gate with
//! `done_closure_missing` among its reasons; the runtime builds the closure when it runs.

use valp_kernel::explain::{
    DONE_GATE_CODE, EPOCH_FENCED_CODE, Guards, Judgement, Target, Transition, explain,
};
use valp_kernel::{
    AttemptStatus, ControlStatus, EventKind, StateBody, SuspensionStatus, TaskStatus,
    WorkItemStatus,
};
use valp_store::{ControlRoot, Journal};
use valp_view::Request;
use valp_view::flow::{
    MachineView, StageRow, StageState, TransitionRow, TransitionVerdict, Workflow,
};
use valp_view::sanitize::display_text;

use crate::runtime::driver::{self, RuntimeError};

/// Stage indexes, in [`valp_view::flow::STAGES`] order.
const AUTHORITY: usize = 0;
const PUBLISH: usize = 1;
const DECOMPOSE: usize = 2;
const ASSIGN: usize = 3;
const DISPATCH: usize = 4;
const EXECUTE: usize = 5;
const VERIFY: usize = 6;
const RESULT: usize = 7;

/// The transitions of the task in `journal` now, judged with the installation's
/// `active_epoch` and the task's frozen Done policy.
pub fn transitions(
    root: &ControlRoot,
    journal: &Journal,
    active_epoch: i128,
) -> Result<Vec<Transition>, RuntimeError> {
    let policy = driver::frozen_policy(root, journal)?;
    let guards = Guards {
        active_epoch: Some(active_epoch),
        frozen_policy: journal.guard().done().frozen_policy(),
        policy: policy.as_ref(),
        closure: None,
        cited: &[],
        signals: journal.guard().done().correction_signals(),
        cycle: None,
    };
    Ok(explain(journal.live(), &guards))
}

/// The state machine view of `body` from its listed `transitions`: allowed ones first, then
/// those only the store's guards refuse (the Done gate, the epoch fence: the kernel would accept
/// them), then the rest; each group in the lister's order.
pub fn machine(body: &StateBody, transitions: &[Transition]) -> MachineView {
    let mut rows: Vec<TransitionRow> = transitions.iter().map(|t| row(body, t)).collect();
    rows.sort_by_key(|row| match &row.verdict {
        TransitionVerdict::Allowed { .. } => 0,
        TransitionVerdict::Refused { code, .. }
            if [DONE_GATE_CODE, EPOCH_FENCED_CODE].contains(&code.as_str()) =>
        {
            1
        }
        TransitionVerdict::Refused { .. } => 2,
    });
    MachineView {
        task_id: display_text(body.task_id.value()),
        status: body.status.as_str().to_owned(),
        revision: body.revision,
        epoch: body.leader_epoch,
        transitions: rows,
    }
}

/// One transition as the console shows it (every text sanitized: ids come from the journal).
pub fn row(body: &StateBody, transition: &Transition) -> TransitionRow {
    let verdict = match &transition.judgement {
        Judgement::Allowed {
            next_status,
            obligations,
            audit_facts,
        } => {
            let effect: Vec<&str> = obligations
                .iter()
                .chain(audit_facts)
                .map(String::as_str)
                .collect();
            TransitionVerdict::Allowed {
                next_status: next_status.as_str().to_owned(),
                effect: if effect.is_empty() {
                    "none".to_owned()
                } else {
                    display_text(&effect.join(", "))
                },
            }
        }
        Judgement::Refused { code, reasons } => TransitionVerdict::Refused {
            code: display_text(code),
            reasons: reasons.iter().map(|reason| display_text(reason)).collect(),
        },
    };
    let work_item = match &transition.target {
        Target::Task => None,
        Target::WorkItem(item)
        | Target::Attempt {
            work_item: item, ..
        } => Some(display_text(item.value())),
    };
    TransitionRow {
        kind: transition.kind.as_str().to_owned(),
        target: display_text(&transition.target.describe()),
        work_item,
        actor: transition.actor.to_owned(),
        guard: transition.guard.clone(),
        evidence: transition.evidence.to_owned(),
        action: transition
            .is_allowed()
            .then(|| action(body, transition))
            .flatten(),
        verdict,
    }
}

/// The console request whose key sends `transition` (allowed), if the Leader sends it from
/// the console: the redirect needs a typed intent (its own dialog) and the System's
/// transitions are the runtime's.
fn action(body: &StateBody, transition: &Transition) -> Option<Request> {
    use EventKind as K;
    let task_id = display_text(body.task_id.value());
    let item = match &transition.target {
        Target::WorkItem(item) => Some(item),
        _ => None,
    };
    Some(match transition.kind {
        K::ReviewPassed | K::ReviewRejected => Request::Review {
            task_id,
            pass: transition.kind == K::ReviewPassed,
        },
        K::ApprovalGranted | K::ApprovalDenied => Request::Approve {
            task_id,
            grant: transition.kind == K::ApprovalGranted,
        },
        K::TaskCancelled => Request::Cancel {
            task_id,
            work_item_id: None,
        },
        K::WorkItemCancelled => Request::Cancel {
            task_id,
            work_item_id: Some(display_text(item?.value())),
        },
        K::InterruptRequested => Request::Interrupt { task_id },
        K::InterruptResumed => Request::Resume { task_id },
        K::BlockedRecoveryToFixing | K::FixDispatchRequested => Request::Recover { task_id },
        K::AttemptCreated => {
            let item = body.work_item(item?)?;
            if item.status != WorkItemStatus::Blocked {
                return None; // the System dispatches eligible items itself
            }
            Request::Retry {
                task_id,
                work_item_id: display_text(item.work_item_id.value()),
            }
        }
        _ => return None,
    })
}

/// The work items of a task, counted as the strip shows them.
struct Tally {
    total: usize,
    /// Items whose submission the adapter proved ([`submission_proven`]).
    proven: usize,
    completed: usize,
    settled: usize,
    running: usize,
    /// Cancelled or skipped items without a proven submission.
    withdrawn: usize,
    edges: usize,
    /// Blocked items, by id.
    blocked: Vec<String>,
}

impl Tally {
    fn of(body: &StateBody) -> Self {
        let items = &body.work_items;
        let count = |keep: &dyn Fn(&valp_kernel::WorkItem) -> bool| {
            items.iter().filter(|item| keep(item)).count()
        };
        Self {
            total: items.len(),
            proven: count(&submission_proven),
            completed: count(&|item| item.status == WorkItemStatus::Completed),
            settled: count(&|item| item.status.is_terminal()),
            running: count(&|item| {
                matches!(
                    item.status,
                    WorkItemStatus::Submitted | WorkItemStatus::Running
                )
            }),
            withdrawn: count(&|item| {
                matches!(
                    item.status,
                    WorkItemStatus::Cancelled | WorkItemStatus::Skipped
                ) && !submission_proven(item)
            }),
            edges: items.iter().map(|item| item.dependencies.len()).sum(),
            blocked: items
                .iter()
                .filter(|item| item.status == WorkItemStatus::Blocked)
                .map(|item| display_text(item.work_item_id.value()))
                .collect(),
        }
    }

    fn decomposed(&self) -> String {
        format!("{} work items, {} dependencies", self.total, self.edges)
    }

    /// A cancelled attempt keeps no trace of its submission in the State: cancelled and skipped
    /// items are counted apart.
    fn submissions(&self) -> String {
        let (proven, total) = (self.proven, self.total);
        if self.withdrawn == 0 {
            format!("{proven}/{total} submissions proven")
        } else {
            format!(
                "{proven}/{total} submissions proven, {} cancelled or skipped",
                self.withdrawn
            )
        }
    }
}

/// The stage a task in `status` stands at ([`RESULT`] + 1: all done).
const fn stage_of(status: Option<TaskStatus>, items_blocked: bool) -> usize {
    match status {
        Some(TaskStatus::Published) => DECOMPOSE,
        Some(TaskStatus::RoutingValidation) => ASSIGN,
        Some(TaskStatus::Dispatching) => DISPATCH,
        Some(TaskStatus::Executing) => EXECUTE,
        Some(TaskStatus::Blocked) if items_blocked => EXECUTE,
        Some(
            TaskStatus::Verifying
            | TaskStatus::Reviewing
            | TaskStatus::Fixing
            | TaskStatus::Blocked,
        ) => VERIFY,
        Some(
            TaskStatus::ApprovalRequired
            | TaskStatus::Recording
            | TaskStatus::Failed
            | TaskStatus::Cancelled,
        )
        | None => RESULT,
        Some(TaskStatus::Done) => RESULT + 1,
    }
}

/// What is going on at the task's own stage, in words.
fn now(body: &StateBody, tally: &Tally) -> String {
    let waking = body
        .suspension
        .as_ref()
        .is_some_and(|suspension| suspension.status == SuspensionStatus::Waiting);
    let progress = format!(
        "{}/{} completed, {} running",
        tally.completed, tally.total, tally.running
    );
    match body.status.known() {
        Some(TaskStatus::Published) => tally.decomposed(),
        Some(TaskStatus::RoutingValidation) => "validating the routing".to_owned(),
        Some(TaskStatus::Dispatching) => tally.submissions(),
        Some(TaskStatus::Executing) if waking => format!("{progress}; waiting for a wake"),
        Some(TaskStatus::Executing) => progress,
        Some(TaskStatus::Verifying) => "verification running".to_owned(),
        Some(TaskStatus::Reviewing) => "waiting for the Leader's review".to_owned(),
        Some(TaskStatus::Fixing) => "fixing: the Leader dispatches again".to_owned(),
        Some(TaskStatus::ApprovalRequired) => "waiting for the Leader's approval".to_owned(),
        Some(TaskStatus::Recording) => "recording through the Done gate".to_owned(),
        Some(TaskStatus::Done) => "done: the Done gate passed".to_owned(),
        Some(TaskStatus::Blocked) if tally.blocked.is_empty() => {
            "task blocked: the Leader recovers it".to_owned()
        }
        Some(TaskStatus::Blocked) => {
            format!("blocked work items: {}", tally.blocked.join(", "))
        }
        Some(TaskStatus::Failed) => "failed".to_owned(),
        Some(TaskStatus::Cancelled) => "cancelled".to_owned(),
        None => format!("unknown status {}", display_text(body.status.as_str())),
    }
}

/// The authority stage: done at the active epoch, blocked on a fenced one (unless finished).
fn authority(body: &StateBody, active_epoch: i128, finished: bool) -> StageRow {
    let epoch = body.leader_epoch;
    let (state, note) = match (epoch != active_epoch, finished) {
        (true, false) => (
            StageState::Blocked,
            format!("epoch {epoch} fenced (active {active_epoch}): hand the task off"),
        ),
        (true, true) => (
            StageState::Done,
            format!("Leader epoch {epoch} (fenced now)"),
        ),
        (false, _) => (StageState::Done, format!("Leader epoch {epoch}")),
    };
    StageRow { state, note }
}

/// The Operator Workflow of the task `body`, whose installation's active epoch is
/// `active_epoch`.
pub fn workflow(body: &StateBody, active_epoch: i128) -> Workflow {
    let status = body.status.known();
    let tally = Tally::of(body);
    let finished = status.is_some_and(TaskStatus::is_terminal);
    let current = stage_of(status, !tally.blocked.is_empty());
    // A task that ended early reached as far as its attempts show.
    let ended_early = matches!(status, Some(TaskStatus::Failed | TaskStatus::Cancelled));
    let reached = match (ended_early, tally.proven > 0) {
        (true, true) => EXECUTE,
        (true, false) => DECOMPOSE,
        (false, _) => current,
    };
    let mut stages: Vec<StageRow> = (0..8)
        .map(|index| {
            let note = match index {
                AUTHORITY => return authority(body, active_epoch, finished),
                PUBLISH => format!("published, {} work items frozen", tally.total),
                _ if index >= reached || index == RESULT => {
                    return StageRow {
                        state: StageState::NotReached,
                        note: String::new(),
                    };
                }
                DECOMPOSE => tally.decomposed(),
                ASSIGN => "routing validated".to_owned(),
                DISPATCH => tally.submissions(),
                EXECUTE => format!(
                    "{}/{} settled, {} completed",
                    tally.settled, tally.total, tally.completed
                ),
                _ => "verified and reviewed".to_owned(),
            };
            StageRow {
                state: StageState::Done,
                note,
            }
        })
        .collect();
    let now = now(body, &tally);
    let interrupted = body
        .control
        .as_ref()
        .is_some_and(|control| control.status == ControlStatus::Interrupted);
    let stuck = ended_early || status == Some(TaskStatus::Blocked) || status.is_none();
    let (index, state, note) = match current {
        index if index > RESULT => (RESULT, StageState::Done, now),
        index if interrupted && !finished => (
            index,
            StageState::Blocked,
            format!("interrupted by the Leader: resume it ({now})"),
        ),
        index if stuck => (index, StageState::Blocked, now),
        index => (index, StageState::Current, now),
    };
    stages[index] = StageRow { state, note };
    Workflow {
        task_id: display_text(body.task_id.value()),
        stages,
    }
}

/// Whether the adapter proved a submission of `item`'s attempt (the item or its attempt
/// reached `submitted` or went on from there).
fn submission_proven(item: &valp_kernel::WorkItem) -> bool {
    matches!(
        item.status,
        WorkItemStatus::Submitted
            | WorkItemStatus::Running
            | WorkItemStatus::Completed
            | WorkItemStatus::Partial
            | WorkItemStatus::Degraded
    ) || item.current_attempt.as_ref().is_some_and(|attempt| {
        matches!(
            attempt.status,
            AttemptStatus::Submitted
                | AttemptStatus::Running
                | AttemptStatus::Completed
                | AttemptStatus::Failed
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use StageState::{Blocked, Current, Done, NotReached};
    use std::collections::BTreeSet;
    use valp_kernel::explain::Guards;
    use valp_kernel::live::{LiveState, Verdict};
    use valp_kernel::walk::{TO_REVIEWING, Walk, WalkConfig};

    /// A task without work items driven along the task table through `kinds`.
    fn task_after(kinds: &[EventKind]) -> LiveState {
        valp_kernel::walk::along_task_table(kinds).unwrap()
    }

    fn states(workflow: &Workflow) -> Vec<StageState> {
        workflow.stages.iter().map(|stage| stage.state).collect()
    }

    #[test]
    fn a_task_in_review_is_at_verify_with_every_earlier_stage_proven() {
        let live = task_after(TO_REVIEWING);
        let workflow = workflow(live.body(), 1);
        assert_eq!(
            states(&workflow),
            [Done, Done, Done, Done, Done, Done, Current, NotReached]
        );
        assert_eq!(workflow.stages[AUTHORITY].note, "Leader epoch 1");
        assert_eq!(workflow.stages[DISPATCH].note, "0/0 submissions proven");
        assert_eq!(
            workflow.stages[VERIFY].note,
            "waiting for the Leader's review"
        );
    }

    #[test]
    fn a_fenced_or_interrupted_task_is_blocked_with_the_reason() {
        let live = task_after(TO_REVIEWING);
        let fenced = workflow(live.body(), 2);
        assert_eq!(fenced.stages[AUTHORITY].state, StageState::Blocked);
        assert_eq!(
            fenced.stages[AUTHORITY].note,
            "epoch 1 fenced (active 2): hand the task off"
        );
        let listed = explain(&live, &Guards::default());
        let interrupt = listed
            .iter()
            .find(|t| t.kind == EventKind::InterruptRequested)
            .unwrap();
        let mut live = live;
        assert!(matches!(
            live.apply(&interrupt.event, &interrupt.evidence_set),
            Verdict::Accepted(_)
        ));
        let interrupted = workflow(live.body(), 1);
        assert_eq!(interrupted.stages[VERIFY].state, StageState::Blocked);
        assert_eq!(
            interrupted.stages[VERIFY].note,
            "interrupted by the Leader: resume it (waiting for the Leader's review)"
        );
    }

    #[test]
    fn a_done_task_has_every_stage_done_and_a_cancelled_one_ends_blocked() {
        let mut kinds = TO_REVIEWING.to_vec();
        kinds.extend([EventKind::ReviewPassed, EventKind::RecordingCompleted]);
        let done = workflow(task_after(&kinds).body(), 1);
        assert!(
            done.stages
                .iter()
                .all(|stage| stage.state == StageState::Done)
        );
        assert_eq!(done.stages[RESULT].note, "done: the Done gate passed");

        let cancelled = task_after(&[EventKind::RoutingValidationStarted]);
        let listed = explain(&cancelled, &Guards::default());
        let cancel = listed
            .iter()
            .find(|t| t.kind == EventKind::TaskCancelled)
            .unwrap();
        let mut cancelled = cancelled;
        assert!(matches!(
            cancelled.apply(&cancel.event, &cancel.evidence_set),
            Verdict::Accepted(_)
        ));
        let workflow = workflow(cancelled.body(), 1);
        assert_eq!(
            states(&workflow),
            [
                Done, Done, NotReached, NotReached, NotReached, NotReached, NotReached, Blocked
            ]
        );
        assert_eq!(workflow.stages[RESULT].note, "cancelled");
    }

    /// Over random legal histories: the stages before the task's own are done, those after
    /// it not reached, the dispatch stage counts the items whose submission is proven, and the
    /// strip reaches every stage along the way.
    #[test]
    fn along_random_histories_the_strip_moves_stage_by_stage() {
        let mut seen = BTreeSet::new();
        for seed in 1..=12 {
            let mut walk = Walk::new(WalkConfig {
                seed,
                work_items: 4,
                may_terminate: seed % 3 == 0,
            });
            let (mut last, mut was_fixing) = (0, false);
            for _ in 0..300 {
                let body = walk.live().body();
                let workflow = workflow(body, body.leader_epoch);
                let at = workflow
                    .stages
                    .iter()
                    .position(|stage| {
                        matches!(stage.state, StageState::Current | StageState::Blocked)
                    })
                    .unwrap_or(RESULT + 1);
                seen.insert(at);
                let terminal = body.status.known().is_some_and(TaskStatus::is_terminal);
                if !terminal {
                    assert!(at >= DECOMPOSE, "seed {seed}: {workflow:?}");
                    assert!(
                        workflow.stages[..at]
                            .iter()
                            .all(|stage| stage.state == StageState::Done),
                        "seed {seed}: {workflow:?}"
                    );
                    assert!(
                        workflow.stages[at + 1..]
                            .iter()
                            .all(|stage| stage.state == StageState::NotReached),
                        "seed {seed}: {workflow:?}"
                    );
                    // Fixing goes back from verify to dispatch, and a blocked task's blocked items
                    // show at execute; otherwise the strip only moves on.
                    if !was_fixing {
                        assert!(at + 1 >= last, "seed {seed}: from {last} back to {at}");
                    }
                    last = at;
                    was_fixing = body.status.known() == Some(TaskStatus::Fixing);
                }
                if at > DISPATCH && !terminal {
                    let proven = body
                        .work_items
                        .iter()
                        .filter(|item| submission_proven(item))
                        .count();
                    assert!(
                        workflow.stages[DISPATCH].note.starts_with(&format!(
                            "{proven}/{} submissions proven",
                            body.work_items.len()
                        )),
                        "seed {seed}: {workflow:?}"
                    );
                }
                if walk.step().is_none() {
                    break;
                }
            }
        }
        assert!(
            (DECOMPOSE..=RESULT).all(|stage| seen.contains(&stage)),
            "stages reached: {seen:?}"
        );
    }

    #[test]
    fn in_review_the_leaders_decisions_carry_their_requests_and_recording_is_refused() {
        let live = task_after(TO_REVIEWING);
        let listed = explain(&live, &Guards::default());
        let view = machine(live.body(), &listed);
        let first_refused = view
            .transitions
            .iter()
            .position(|row| !row.is_allowed())
            .unwrap();
        assert!(
            view.transitions[first_refused..]
                .iter()
                .all(|row| !row.is_allowed())
        );
        let find = |kind: &str| {
            view.transitions
                .iter()
                .find(|row| row.kind == kind)
                .unwrap()
        };
        assert_eq!(
            find("review_passed").action,
            Some(Request::Review {
                task_id: "task-1".to_owned(),
                pass: true
            })
        );
        assert_eq!(
            find("review_rejected").action,
            Some(Request::Review {
                task_id: "task-1".to_owned(),
                pass: false
            })
        );
        assert_eq!(find("approval_required_raised").action, None);
        let recording = find("recording_completed");
        assert_eq!(recording.action, None);
        assert_eq!(
            recording.line(),
            "refused recording_completed task VALP-E-STATE-CONFLICT: the transition table has \
             no edge reviewing --recording_completed--> (allowed from: recording)"
        );
    }

    #[test]
    fn in_recording_without_a_policy_the_done_gate_refuses_with_its_reasons() {
        let mut kinds = TO_REVIEWING.to_vec();
        kinds.push(EventKind::ReviewPassed);
        let live = task_after(&kinds);
        let listed = explain(&live, &Guards::default());
        let view = machine(live.body(), &listed);
        // Right after the allowed ones: the kernel would accept it, the store's gate does not.
        let allowed = view
            .transitions
            .iter()
            .filter(|row| row.is_allowed())
            .count();
        let recording = &view.transitions[allowed];
        assert_eq!(recording.kind, "recording_completed");
        assert_eq!(
            recording.verdict,
            TransitionVerdict::Refused {
                code: "VALP-E-DONE-GATE".to_owned(),
                reasons: vec![
                    "done_policy_missing".to_owned(),
                    "done_closure_missing".to_owned()
                ],
            }
        );
    }
}
