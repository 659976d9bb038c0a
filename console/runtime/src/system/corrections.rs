//! Each task's correction cycle as the console shows it: derived from the task journal
//! ([`crate::audit::derive`]) when the task moved since the last derivation, kept per task
//! folder, and turned into [`CorrectionView`]s for the task detail and into the open rounds
//! the needs-you queue lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_view::sanitize::display_text;
use valp_view::{CorrectionView, RoundView};

use crate::audit::cycle_file;
use crate::audit::derive::Cycle;

/// The cycles, per task folder, with the revision each was derived at.
#[derive(Debug, Default)]
pub struct Cycles(BTreeMap<PathBuf, (i128, Option<Cycle>)>);

impl Cycles {
    /// Derives the cycle of the task `task_id` in `dir` again if its journal is now at another
    /// `revision` (a journal that cannot be read derives none).
    pub fn refresh(&mut self, dir: &Path, task_id: &str, revision: i128) {
        if self.0.get(dir).is_some_and(|(at, _)| *at == revision) {
            return;
        }
        // Owners are the plan's adapters, which the console does not read: `unknown`.
        let cycle = cycle_file::derived(dir, task_id, &BTreeMap::new())
            .ok()
            .flatten();
        self.0.insert(dir.to_owned(), (revision, cycle));
    }

    /// The cycle of the task in `dir`, if it has one.
    pub fn get(&self, dir: &Path) -> Option<&Cycle> {
        self.0.get(dir).and_then(|(_, cycle)| cycle.as_ref())
    }

    /// Every task's cycle, sanitized, in task folder order.
    pub fn views(&self) -> Vec<CorrectionView> {
        self.0
            .values()
            .filter_map(|(_, cycle)| cycle.as_ref())
            .map(view)
            .collect()
    }
}

fn view(cycle: &Cycle) -> CorrectionView {
    let text = |value: &Option<String>| value.as_deref().map(display_text);
    CorrectionView {
        task_id: display_text(&cycle.task_id),
        outcome: cycle.final_outcome.to_owned(),
        rounds: cycle
            .rounds
            .iter()
            .map(|round| RoundView {
                round: round.round,
                trigger: display_text(&round.trigger),
                status: round.status.to_owned(),
                work_item_id: text(&round.work_item),
                started_at: text(&round.started_at),
                ended_at: text(&round.ended_at),
                reason: display_text(&round.reason),
            })
            .collect(),
    }
}
