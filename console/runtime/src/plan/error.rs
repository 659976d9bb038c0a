//! What can be wrong with a plan: the problems of a plan file (all of them, each with its
//! place), and the failures of finding a published plan again.

use std::fmt;

use valp_store::StoreError;

/// One problem of a plan, where it is and which rule it breaks.
///
/// Displayed as `<file>:<line>:<column>: <field>: <rule>`, e.g.
/// `plan.toml:12:19: work_items[1].dependencies[0].id: unknown work item "bulid"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanProblem {
    /// The plan file as named by the caller (or the evidence id of a published plan).
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The field path, e.g. `work_items[2].dependencies[0].id`; `(syntax)` for TOML syntax
    /// errors and `(file)` for a file that is not UTF-8.
    pub field: String,
    /// The rule, in words.
    pub rule: String,
}

impl fmt::Display for PlanProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}:{}:{}: {}: {}",
            self.file, self.line, self.column, self.field, self.rule
        )
    }
}

/// Every problem of a plan, in the order they appear in the file (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanErrors {
    /// The problems, sorted by position.
    pub problems: Vec<PlanProblem>,
}

impl fmt::Display for PlanErrors {
    /// One problem per line.
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, problem) in self.problems.iter().enumerate() {
            if index > 0 {
                formatter.write_str("\n")?;
            }
            write!(formatter, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}

/// Why a published plan could not be found again, or a plan could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The control root has no journal for this task.
    #[error("no task {task_id:?} in this control root")]
    NoTask {
        /// The task asked for.
        task_id: String,
    },
    /// The task exists but was not published from a plan: its journal has no first entry, or
    /// the first entry is not a plan publication.
    #[error("task {task_id:?} has no published plan: {reason}")]
    NotPublished {
        /// The task.
        task_id: String,
        /// What was found instead.
        reason: String,
    },
    /// A plan evidence blob is missing, does not match its digest, or does not decode.
    #[error("task {task_id:?}: evidence {evidence_id}: {reason}")]
    BadEvidence {
        /// The task.
        task_id: String,
        /// The evidence (`plan-…` or `done-policy-…`).
        evidence_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The task already exists; publishing never touches an existing task.
    #[error("{0}")]
    Exists(String),
    /// The plan cannot become kernel values (a plan that passed validation always can).
    #[error("the plan cannot be published: {0}")]
    Invalid(String),
    /// The kernel refused the publication event.
    #[error("the kernel refused {event}: {code}: {reason}")]
    Refused {
        /// The event id.
        event: String,
        /// The kernel's code.
        code: String,
        /// Why.
        reason: String,
    },
}
