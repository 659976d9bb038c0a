//! Each task's correction cycle as the console shows it: derived from the task journal
//! ([`crate::audit::derive`]) when the task moved since the last derivation, by a fold kept per
//! task folder that reads only the lines appended since ([`CycleFold`]), and turned into [`CorrectionView`]s for the task detail and into the open rounds
//! the needs-you queue lists.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_view::sanitize::display_text;
use valp_view::{CorrectionView, RoundView};

use crate::audit::cycle_file::CycleFold;
use crate::audit::derive::Cycle;
use crate::audit::fold_cache;

/// The cycles, per task folder, with the revision each was derived at and the fold it was
/// derived by (carried forward: a refresh reads only the lines appended since).
#[derive(Debug, Default)]
pub struct Cycles(BTreeMap<PathBuf, Derived>);

#[derive(Debug, Default)]
struct Derived {
    revision: Option<i128>,
    cycle: Option<Cycle>,
    fold: CycleFold,
}

impl Cycles {
    /// Derives the cycle of the task `task_id` in `dir` again if its journal is now at another
    /// `revision` (a journal that cannot be read derives none).
    pub fn refresh(&mut self, dir: &Path, task_id: &str, revision: i128) {
        // The screen shows the open and the newest rounds; holding every round of a long
        // history (~277,000 at 10^6 demo entries) was most of the console's memory.
        let derived = self.0.entry(dir.to_owned()).or_insert_with(|| Derived {
            fold: CycleFold::summarizing(fold_cache::NEWEST_ROUNDS),
            ..Derived::default()
        });
        if derived.revision == Some(revision) {
            return;
        }
        // Owners are the plan's adapters, which the console does not read: `unknown`.
        derived.cycle = derived
            .fold
            .refresh(dir, task_id, &BTreeMap::new())
            .ok()
            .flatten();
        derived.revision = Some(revision);
    }

    /// The cycle of the task in `dir`, if it has one.
    pub fn get(&self, dir: &Path) -> Option<&Cycle> {
        self.0.get(dir).and_then(|derived| derived.cycle.as_ref())
    }

    /// Every task's cycle, sanitized, in task folder order.
    pub fn views(&self) -> Vec<CorrectionView> {
        self.0
            .values()
            .filter_map(|derived| derived.cycle.as_ref())
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
