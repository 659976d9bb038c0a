//! The closed Task transition graph (MVP-B, 13 statuses).

use crate::model::{EventKind, TaskStatus};

/// The status a task-level event moves a task to, or `None` when the edge does not exist.
///
/// There are no implicit self-loops: an event that is not an edge from `from` is rejected.
/// `done`, `failed` and `cancelled` have no outgoing edges.
pub fn task_transition(from: TaskStatus, kind: EventKind) -> Option<TaskStatus> {
    use EventKind as K;
    use TaskStatus as S;
    let to = match (from, kind) {
        (S::Published, K::RoutingValidationStarted) => S::RoutingValidation,
        (S::RoutingValidation, K::RoutingValidationPassed)
        | (S::Fixing, K::FixDispatchRequested) => S::Dispatching,
        (S::Dispatching, K::DispatchAccepted) => S::Executing,
        (S::Executing, K::WorkCompleted) => S::Verifying,
        (S::Verifying, K::VerificationPassed) => S::Reviewing,
        (S::Verifying, K::VerificationFailed)
        | (S::Reviewing, K::ReviewRejected)
        | (S::ApprovalRequired, K::ApprovalDenied)
        | (S::Blocked, K::BlockedRecoveryToFixing) => S::Fixing,
        (S::Reviewing, K::ReviewPassed) | (S::ApprovalRequired, K::ApprovalGranted) => S::Recording,
        (S::Reviewing, K::ApprovalRequiredRaised) => S::ApprovalRequired,
        (S::Recording, K::RecordingCompleted) => S::Done,
        (S::Executing | S::Verifying | S::Reviewing | S::Fixing, K::TaskBlocked) => S::Blocked,
        (from, K::TaskFailed) if !from.is_terminal() => S::Failed,
        (from, K::TaskCancelled) if !from.is_terminal() => S::Cancelled,
        _ => return None,
    };
    Some(to)
}
