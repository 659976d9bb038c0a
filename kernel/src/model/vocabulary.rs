//! The closed vocabularies of protocol 0.3.0 (RFC 0002 §7 and the reference kernel).
//!
//! Each vocabulary is a Rust enum whose wire spelling is given once, in the macro call below.
//! [`Open`] wraps the five slots where the reference kernel keeps an unknown value so that it can
//! answer `VALP-E-UNKNOWN-ENUM-VALUE` with the input echoed back byte for byte.

macro_rules! closed_vocabulary {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$variant_meta:meta])* $variant:ident => $wire:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $name {
            $($(#[$variant_meta])* #[doc = concat!("`", $wire, "`")] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];
            /// The vocabulary's name, for error messages.
            pub const NAME: &'static str = stringify!($name);

            /// The wire spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }

            /// Parses the wire spelling; `None` for anything outside the vocabulary.
            pub fn from_wire(text: &str) -> Option<Self> {
                match text {
                    $($wire => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str(self.as_str())
            }
        }
    };
}

// The dimension gates (`crate::dimension`) declare their closed vocabularies the same way.
pub(crate) use closed_vocabulary;

closed_vocabulary! {
    /// The 16 identity kinds; one identity never substitutes for another.
    IdentityKind {
        Installation => "installation",
        Task => "task",
        WorkItem => "work_item",
        Attempt => "attempt",
        Dispatch => "dispatch",
        Event => "event",
        Evidence => "evidence",
        Receipt => "receipt",
        Claim => "claim",
        Result => "result",
        Suspension => "suspension",
        WaitPolicy => "wait_policy",
        Wake => "wake",
        Principal => "principal",
        Interrupt => "interrupt",
        Redirect => "redirect",
    }
}

closed_vocabulary! {
    /// The 13 kernel task statuses; `done`, `failed` and `cancelled` are terminal.
    TaskStatus {
        Published => "published",
        RoutingValidation => "routing_validation",
        Dispatching => "dispatching",
        Executing => "executing",
        Verifying => "verifying",
        Reviewing => "reviewing",
        Fixing => "fixing",
        ApprovalRequired => "approval_required",
        Recording => "recording",
        Done => "done",
        Blocked => "blocked",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

impl TaskStatus {
    /// `done`, `failed` or `cancelled`.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Done | Self::Failed | Self::Cancelled)
    }
}

closed_vocabulary! {
    /// The 11 work-item statuses.
    WorkItemStatus {
        Pending => "pending",
        Eligible => "eligible",
        Submitted => "submitted",
        Running => "running",
        Completed => "completed",
        Partial => "partial",
        Degraded => "degraded",
        Blocked => "blocked",
        Failed => "failed",
        Cancelled => "cancelled",
        Skipped => "skipped",
    }
}

impl WorkItemStatus {
    /// The statuses a cancel or redirect leaves untouched: completed, partial, degraded, failed,
    /// cancelled and skipped. (`blocked` is not among them: a blocked item can still be retried.)
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed
                | Self::Partial
                | Self::Degraded
                | Self::Failed
                | Self::Cancelled
                | Self::Skipped
        )
    }
}

closed_vocabulary! {
    /// How much a work item (or a dependency edge) matters: `required` is a hard edge.
    Requirement {
        Required => "required",
        Optional => "optional",
        Soft => "soft",
    }
}

closed_vocabulary! {
    /// The 7 attempt statuses.
    AttemptStatus {
        Created => "created",
        Submitted => "submitted",
        Running => "running",
        Completed => "completed",
        Failed => "failed",
        Cancelled => "cancelled",
        Fenced => "fenced",
    }
}

impl AttemptStatus {
    /// `created`, `submitted` or `running`: the attempt may still produce output.
    pub const fn is_live(self) -> bool {
        matches!(self, Self::Created | Self::Submitted | Self::Running)
    }
}

closed_vocabulary! {
    /// Whether a suspension is still waiting for its wake.
    SuspensionStatus {
        Waiting => "waiting",
        Resumed => "resumed",
    }
}

closed_vocabulary! {
    /// Why a suspension was woken (the kernel knows one reason).
    WakeReason {
        DependencyReady => "dependency_ready",
    }
}

closed_vocabulary! {
    /// Whether automatic progression is interrupted.
    ControlStatus {
        Active => "active",
        Interrupted => "interrupted",
    }
}

closed_vocabulary! {
    /// Why an authority-bound control event was issued.
    ControlReason {
        UserRequested => "user_requested",
        RuntimeFailed => "runtime_failed",
        PolicyEnforced => "policy_enforced",
        SupersededByRedirect => "superseded_by_redirect",
    }
}

closed_vocabulary! {
    /// What a cancel event targets.
    CancellationScope {
        Task => "task",
        WorkItem => "work_item",
        Attempt => "attempt",
    }
}

closed_vocabulary! {
    /// The result of a claim (RFC 0002 §7).
    ClaimResult {
        Pass => "pass",
        Fail => "fail",
        Unknown => "unknown",
        Partial => "partial",
        Degraded => "degraded",
        NotApplicable => "not_applicable",
    }
}

closed_vocabulary! {
    /// The three Result variants.
    Variant {
        Accepted => "accepted",
        NoOp => "no_op",
        Rejected => "rejected",
    }
}

closed_vocabulary! {
    /// The 36 kernel event kinds.
    EventKind {
        RoutingValidationStarted => "routing_validation_started",
        RoutingValidationPassed => "routing_validation_passed",
        DispatchAccepted => "dispatch_accepted",
        WorkCompleted => "work_completed",
        VerificationPassed => "verification_passed",
        VerificationFailed => "verification_failed",
        ReviewPassed => "review_passed",
        ReviewRejected => "review_rejected",
        ApprovalRequiredRaised => "approval_required_raised",
        FixDispatchRequested => "fix_dispatch_requested",
        ApprovalGranted => "approval_granted",
        ApprovalDenied => "approval_denied",
        RecordingCompleted => "recording_completed",
        TaskBlocked => "task_blocked",
        BlockedRecoveryToFixing => "blocked_recovery_to_fixing",
        TaskFailed => "task_failed",
        TaskCancelled => "task_cancelled",
        WorkItemEligible => "work_item_eligible",
        AttemptCreated => "attempt_created",
        AttemptCompleted => "attempt_completed",
        AttemptFenced => "attempt_fenced",
        AttemptSubmitted => "attempt_submitted",
        AttemptRunning => "attempt_running",
        AttemptFailed => "attempt_failed",
        AttemptCancelled => "attempt_cancelled",
        WorkItemPartial => "work_item_partial",
        WorkItemDegraded => "work_item_degraded",
        WorkItemBlocked => "work_item_blocked",
        WorkItemFailed => "work_item_failed",
        WorkItemCancelled => "work_item_cancelled",
        WorkItemSkipped => "work_item_skipped",
        SuspensionStarted => "suspension_started",
        WakeAccepted => "wake_accepted",
        InterruptRequested => "interrupt_requested",
        InterruptResumed => "interrupt_resumed",
        RedirectAuthorized => "redirect_authorized",
    }
}

impl EventKind {
    /// Kinds that must carry an authority principal, authority evidence present in the
    /// EvidenceSet, and a closed control reason.
    pub const fn is_authority_bound(self) -> bool {
        matches!(
            self,
            Self::TaskCancelled
                | Self::WorkItemCancelled
                | Self::AttemptCancelled
                | Self::InterruptRequested
                | Self::InterruptResumed
                | Self::RedirectAuthorized
        )
    }

    /// Kinds bound to the current attempt's (attempt, dispatch, generation) tuple.
    pub const fn is_attempt_scoped(self) -> bool {
        matches!(
            self,
            Self::AttemptCreated
                | Self::AttemptSubmitted
                | Self::AttemptRunning
                | Self::AttemptCompleted
                | Self::AttemptFailed
                | Self::AttemptCancelled
                | Self::AttemptFenced
        )
    }
}

/// A closed-vocabulary slot that may hold a value outside the vocabulary.
///
/// The reference kernel accepts such input and answers it with `VALP-E-UNKNOWN-ENUM-VALUE`,
/// echoing the input state in the rejected Result; keeping the original text lets us do the
/// same, byte for byte. Only the five slots the reference checks this way use `Open`: the task
/// status of a State, and an Event's `kind`, `wake_reason`, `control_reason` and
/// `cancellation_scope`. Every other closed slot refuses unknown values when decoded.
///
/// Two `Open` values are equal when their wire text is, so `Unknown("published")` (which the
/// decoder never produces) equals `Known(Published)`, as their canonical bytes do.
#[derive(Debug, Clone)]
pub enum Open<T> {
    /// A value of the vocabulary.
    Known(T),
    /// Text outside the vocabulary, kept verbatim.
    Unknown(String),
}

impl<T> From<T> for Open<T> {
    fn from(value: T) -> Self {
        Self::Known(value)
    }
}

macro_rules! open_wire {
    ($($name:ident),+) => {$(
        impl Open<$name> {
            /// The wire text: the vocabulary spelling or the verbatim unknown text.
            pub fn as_str(&self) -> &str {
                match self {
                    Self::Known(value) => value.as_str(),
                    Self::Unknown(text) => text,
                }
            }

            /// The vocabulary value, if the wire text is one (an `Unknown` whose text is a
            /// vocabulary spelling counts as that value).
            pub fn known(&self) -> Option<$name> {
                match self {
                    Self::Known(value) => Some(*value),
                    Self::Unknown(text) => $name::from_wire(text),
                }
            }

            /// Parses wire text, keeping unknown text.
            pub fn from_wire(text: &str) -> Self {
                $name::from_wire(text).map_or_else(|| Self::Unknown(text.to_owned()), Self::Known)
            }
        }

        impl PartialEq for Open<$name> {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for Open<$name> {}
    )+};
}

open_wire!(
    TaskStatus,
    EventKind,
    WakeReason,
    ControlReason,
    CancellationScope,
    InstallationStatus,
    InstallationEventKind
);

closed_vocabulary! {
    /// The deterministic failure codes a kernel Result can carry.
    ErrorCode {
        /// A value outside a closed vocabulary; checked before anything else.
        UnknownEnumValue => "VALP-E-UNKNOWN-ENUM-VALUE",
        /// Any guard failure: invalid input, identity or epoch mismatch, stale revision or
        /// attempt, missing authority, illegal transition.
        StateConflict => "VALP-E-STATE-CONFLICT",
        /// A known event id proposed again with different content.
        IdempotencyConflict => "VALP-E-IDEMPOTENCY-CONFLICT",
        /// Authority lane: an event from an epoch that is not the active one (fenced or
        /// future).
        LeaderEpoch => "VALP-E-LEADER-EPOCH",
        /// Authority lane: the principal or candidate may not do this (e.g. selecting a
        /// candidate the Doctor did not observe).
        PermissionDenied => "VALP-E-PERMISSION-DENIED",
        /// Authority lane: the current epoch is frozen while the Leader rotates.
        LeaderRotating => "VALP-E-LEADER-ROTATING",
    }
}

closed_vocabulary! {
    /// Installation statuses of the control plane (RFC 0001 of the VALP repository).
    InstallationStatus {
        Uninitialized => "uninitialized",
        Bootstrapping => "bootstrapping",
        DiscoveringLeaderCandidates => "discovering_leader_candidates",
        AwaitingLeaderSelection => "awaiting_leader_selection",
        ActivatingLeader => "activating_leader",
        Active => "active",
        ReconcilingCapabilities => "reconciling_capabilities",
        RotatingLeader => "rotating_leader",
        Migrating => "migrating",
        RollbackRequired => "rollback_required",
        Degraded => "degraded",
        Blocked => "blocked",
        Retired => "retired",
    }
}

closed_vocabulary! {
    /// Events of the installation's authority lane.
    InstallationEventKind {
        InstallationInitialized => "installation_initialized",
        BootstrapDiscoveryStarted => "bootstrap_discovery_started",
        LeaderCandidateDiscoveryCompleted => "leader_candidate_discovery_completed",
        LeaderCandidatesObserved => "leader_candidates_observed",
        LeaderSelectionApproved => "leader_selection_approved",
        LeaderActivated => "leader_activated",
        LeaderActivationFailed => "leader_activation_failed",
        LeaderSessionReopened => "leader_session_reopened",
        LeaderHealthFailed => "leader_health_failed",
        LeaderRotationApproved => "leader_rotation_approved",
        LeaderRotationCompleted => "leader_rotation_completed",
        LeaderRotationFailed => "leader_rotation_failed",
        BootstrapFailed => "bootstrap_failed",
        TaskHandedOver => "task_handed_over",
    }
}

closed_vocabulary! {
    /// What kind of principal a Leader candidate is.
    PrincipalKind {
        /// The local human operator (an OS account).
        Human => "human",
        /// A session in a tmux pane (an agent or a shell the user drives).
        TmuxPane => "tmux_pane",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_values_compare_by_wire_text() {
        let known = Open::Known(TaskStatus::Published);
        assert_eq!(Open::<TaskStatus>::Unknown("published".to_owned()), known);
        assert_ne!(Open::<TaskStatus>::Unknown("Published".to_owned()), known);
        assert_eq!(
            Open::<EventKind>::from_wire("work_completed").known(),
            Some(EventKind::WorkCompleted)
        );
        assert_eq!(Open::<EventKind>::from_wire("future").known(), None);
    }
}
