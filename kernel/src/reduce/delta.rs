//! What an accepted event changes, separate from the State it changes.
//!
//! Rules describe an acceptance as a [`Delta`]; the pure `reduce` applies it to a copy of the
//! State, [`LiveState`](crate::live::LiveState) applies it in place. Either way the same
//! [`Delta::apply`] runs, so both paths produce the same next State.

use crate::model::{Control, StateBody, Suspension, TaskStatus, WorkItem};

/// What an accepted event does to the suspension.
#[derive(Debug, Clone)]
pub(crate) enum SuspensionChange {
    /// Leaves it as it is.
    Keep,
    /// Starts or resumes one.
    Set(Box<Suspension>),
    /// Clears it (a status change, a redirect or a task cancel).
    Clear,
}

/// The changes of one accepted event.
#[derive(Debug, Clone)]
pub(crate) struct Delta {
    /// Next task status (may equal the current one).
    pub status: TaskStatus,
    /// Work items replaced, by index into the work-item table.
    pub items: Vec<(usize, WorkItem)>,
    /// What happens to the suspension.
    pub suspension: SuspensionChange,
    /// `Some` when the control state is replaced.
    pub control: Option<Control>,
    /// Obligations emitted, in order.
    pub obligations: Vec<String>,
    /// Kind-specific audit facts (the `accepted:` fact is added later).
    pub audit_facts: Vec<String>,
}

impl Delta {
    /// A delta that moves the task to `status` and changes nothing else.
    pub fn status_only(status: TaskStatus) -> Self {
        Self {
            status,
            items: Vec::new(),
            suspension: SuspensionChange::Keep,
            control: None,
            obligations: Vec::new(),
            audit_facts: Vec::new(),
        }
    }

    /// The suspension after this delta, given the current one.
    pub fn next_suspension<'a>(
        &'a self,
        current: Option<&'a Suspension>,
    ) -> Option<&'a Suspension> {
        match &self.suspension {
            SuspensionChange::Keep => current,
            SuspensionChange::Set(suspension) => Some(suspension.as_ref()),
            SuspensionChange::Clear => None,
        }
    }

    /// Applies the state changes and advances the revision; returns the indexes of the
    /// replaced work items, the obligations and the kind-specific audit facts.
    pub fn apply(self, body: &mut StateBody) -> Applied {
        body.revision += 1;
        body.status = self.status.into();
        let mut changed_items = Vec::with_capacity(self.items.len());
        for (index, item) in self.items {
            body.work_items[index] = item;
            changed_items.push(index);
        }
        match self.suspension {
            SuspensionChange::Keep => {}
            SuspensionChange::Set(suspension) => body.suspension = Some(*suspension),
            SuspensionChange::Clear => body.suspension = None,
        }
        if let Some(control) = self.control {
            body.control = Some(control);
        }
        Applied {
            changed_items,
            obligations: self.obligations,
            audit_facts: self.audit_facts,
        }
    }
}

/// What [`Delta::apply`] leaves to the caller.
pub(crate) struct Applied {
    /// Indexes of the replaced work items.
    pub changed_items: Vec<usize>,
    /// Obligations emitted, in order.
    pub obligations: Vec<String>,
    /// Kind-specific audit facts.
    pub audit_facts: Vec<String>,
}
