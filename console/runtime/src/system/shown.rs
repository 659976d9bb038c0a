//! What one task journal shows on the console (its task row, its work-item frontier and its
//! Operator Workflow), built again only when the journal moved.
//!
//! The console reads its view after every change and on the slow tick; with 100 tasks of 100
//! items each, building every row afresh (the frontier, the positions in words, a copy of
//! every task's state) was most of an idle tick's cost although nothing had moved. The rows
//! depend on the task's state and the active epoch only, so [`Shown::of`] keeps them under the
//! journal's length, the state's revision and the epoch, and builds them again when any of
//! those differ. What changes without the journal (what the System waits for, the gate line,
//! when an attempt was first seen) is laid over them by the caller.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_kernel::frontier::frontier;
use valp_kernel::{ControlStatus, StateBody, WorkItemStatus};
use valp_store::Journal;
use valp_view::sanitize::display_text;
use valp_view::{ItemRow, TaskRow, Workflow};

use crate::flow;

/// The rows of one task, as of one state of its journal.
#[derive(Debug, Clone)]
pub struct Rows {
    /// The task id (raw, as the journal has it).
    pub task_id: String,
    /// The state's revision.
    pub revision: i128,
    /// The task row, without `waiting` and `gates`.
    pub row: TaskRow,
    /// The frontier as rows (`attempt_since_ms` 0).
    pub items: Vec<ItemRow>,
    /// The Operator Workflow.
    pub workflow: Workflow,
}

/// `(entries, revision, active epoch)`: what the rows were built from.
type Key = (u64, i128, i128);

/// The rows of every task journal shown, each with what it was built from.
#[derive(Debug, Default)]
pub struct Shown {
    rows: BTreeMap<PathBuf, (Key, Rows)>,
    /// How many times rows were built.
    #[cfg(test)]
    built: usize,
}

impl Shown {
    /// The rows of the journal in `dir` at `active_epoch`, built again only when the journal or
    /// the epoch moved since the last call for `dir`.
    pub fn of(&mut self, dir: &Path, journal: &Journal, active_epoch: i128) -> &Rows {
        let body = journal.live().body();
        let key = (journal.len(), body.revision, active_epoch);
        let stale = self.rows.get(dir).is_none_or(|(built, _)| *built != key);
        if stale {
            #[cfg(test)]
            {
                self.built += 1;
            }
            self.rows
                .insert(dir.to_owned(), (key, build(body, active_epoch)));
        }
        &self.rows[dir].1
    }

    /// The work-item rows last built for `dir` (none if never built).
    pub fn items(&self, dir: &Path) -> &[ItemRow] {
        self.rows
            .get(dir)
            .map_or(&[][..], |(_, rows)| rows.items.as_slice())
    }

    /// How many times rows were built (an unchanged journal builds none).
    #[cfg(test)]
    pub fn built(&self) -> usize {
        self.built
    }
}

fn build(body: &StateBody, active_epoch: i128) -> Rows {
    Rows {
        task_id: body.task_id.value().to_owned(),
        revision: body.revision,
        row: task_row(body, active_epoch),
        items: item_rows(body),
        workflow: flow::workflow(body, active_epoch),
    }
}

fn task_row(body: &StateBody, active_epoch: i128) -> TaskRow {
    TaskRow {
        task_id: display_text(body.task_id.value()),
        status: body.status.as_str().to_owned(),
        revision: body.revision,
        epoch: body.leader_epoch,
        fenced: body.leader_epoch != active_epoch,
        items_completed: body
            .work_items
            .iter()
            .filter(|item| item.status == WorkItemStatus::Completed)
            .count(),
        items_total: body.work_items.len(),
        interrupted: body
            .control
            .as_ref()
            .is_some_and(|control| control.status == ControlStatus::Interrupted),
        waiting: String::new(),
        gates: String::new(),
    }
}

/// The frontier of one task as rows.
fn item_rows(body: &StateBody) -> Vec<ItemRow> {
    frontier(body)
        .into_iter()
        .map(|item| {
            let attempt = body
                .work_item(&item.work_item_id)
                .and_then(|work| work.current_attempt.as_ref())
                .map_or_else(String::new, |attempt| {
                    format!(
                        "{} g{} {}",
                        attempt.attempt_id.value(),
                        attempt.dispatch_generation,
                        attempt.status.as_str()
                    )
                });
            ItemRow {
                task_id: display_text(body.task_id.value()),
                work_item_id: display_text(item.work_item_id.value()),
                requirement: item.requirement.as_str().to_owned(),
                status: item.status.as_str().to_owned(),
                position: valp_view::position_text(&item.position),
                attempt: display_text(&attempt),
                // Stamped by the System when it shows the row.
                attempt_since_ms: 0,
            }
        })
        .collect()
}
