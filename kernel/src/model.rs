//! The kernel's entities and closed vocabularies for protocol 0.3.0, each with its canonical
//! JSON form.

pub mod event;
pub mod identity;
pub mod outcome;
pub mod state;
pub mod vocabulary;

pub use event::{Event, Evidence};
pub use identity::Identity;
pub use outcome::{Accepted, NoOp, Outcome, Rejected};
pub use state::{
    AcceptedEvent, Attempt, Control, Dependency, Int, PROTOCOL_VERSION, State, StateBody,
    Suspension, WorkItem,
};
pub use vocabulary::{
    AttemptStatus, CancellationScope, ClaimResult, ControlReason, ControlStatus, ErrorCode,
    EventKind, IdentityKind, InstallationEventKind, InstallationStatus, Open, PrincipalKind,
    Requirement, SuspensionStatus, TaskStatus, Variant, WakeReason, WorkItemStatus,
};
