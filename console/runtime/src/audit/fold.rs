//! A task's correction-cycle fold ([`Deriver`]) together with the journal line it has folded up
//! to, so that it is carried forward instead of folded again: [`Fold::advance`] reads only the
//! lines appended since (the store's [`read_entries_after`]: the kept line is checked to be
//! there with its entry digest, and the reader resumes after it), and folds the whole journal
//! again from the genesis when that line is not there (cut by `valp recover`, replaced). The
//! driver and the console keep one per task in process; across processes it is written down as
//! the task folder's `correction-fold.json` ([`fold_cache`](super::fold_cache)).

use std::collections::BTreeMap;
use std::path::Path;

use valp_kernel::live::LiveState;
use valp_store::StoreError;
use valp_store::journal::{LineBinding, ReadAfter, read_entries_after};

use super::derive::{Cycle, Deriver, Fact};

/// A fold of a task journal's correction cycle, bound to the last line folded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fold {
    deriver: Deriver,
    /// The last line folded; `None`: nothing read yet.
    at: Option<LineBinding>,
}

/// What one [`Fold::advance`] read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advanced {
    /// Entries folded in.
    pub entries: u64,
    /// Why the fold started again from the genesis (its line is not in the journal), if it did.
    pub restarted: Option<String>,
}

impl Fold {
    /// Nothing folded yet.
    pub fn genesis() -> Self {
        Self::default()
    }

    /// A fold whose rounds so far are `deriver`'s, at the line `at`.
    pub fn resumed(deriver: Deriver, at: LineBinding) -> Self {
        Self {
            deriver,
            at: Some(at),
        }
    }

    /// The last line folded (`None`: nothing read yet).
    pub fn at(&self) -> Option<&LineBinding> {
        self.at.as_ref()
    }

    /// The fold so far.
    pub fn deriver(&self) -> &Deriver {
        &self.deriver
    }

    /// The cycle of `task_id` so far; `owners` maps a work item to its adapter.
    pub fn cycle(&self, task_id: &str, owners: &BTreeMap<String, String>) -> Option<Cycle> {
        self.deriver.finish(task_id, owners)
    }

    /// Folds in the entries of the journal file `path` after the line folded last (all of them
    /// the first time). When that line is not in the journal, folds it all again from the
    /// genesis and says why. On an error (damage after the line, I/O) the fold is back at the
    /// genesis, so the next advance starts over.
    pub fn advance(&mut self, path: &Path) -> Result<Advanced, StoreError> {
        self.advance_keeping(path, None)
    }

    /// [`Fold::advance`] holding, when `newest` is given, only the open rounds and about the
    /// newest `newest` rounds ([`Deriver::kept`]) as it goes, so that what it holds does not
    /// grow with the history (a 10^6-entry demo task has ~277,000 rounds). The outcome and
    /// the count of rounds opened are those of the whole fold.
    pub fn advance_keeping(
        &mut self,
        path: &Path,
        newest: Option<u64>,
    ) -> Result<Advanced, StoreError> {
        let deriver = &mut self.deriver;
        trim(deriver, newest);
        let read = read_entries_after::<LiveState>(path, self.at.as_ref(), |recorded| {
            deriver.push_event(recorded.seq, recorded.recorded_at, &recorded.entry.event);
            trim(deriver, newest);
        });
        match read {
            Ok(ReadAfter::Read { last, entries }) => {
                self.at = Some(last);
                Ok(Advanced {
                    entries,
                    restarted: None,
                })
            }
            Ok(ReadAfter::NotThere(reason)) if self.at.is_some() => {
                *self = Self::genesis();
                let advanced = self.advance_keeping(path, newest)?;
                Ok(Advanced {
                    restarted: Some(reason),
                    ..advanced
                })
            }
            Ok(ReadAfter::NotThere(reason)) => {
                Err(StoreError::Invalid(format!("{}: {reason}", path.display())))
            }
            Err(error) => {
                *self = Self::genesis();
                Err(error)
            }
        }
    }

    /// Folds in the `facts` of lines a writer just appended after the line folded last, holding
    /// what [`Fold::advance_keeping`] would: for a writer that knows what it wrote (`valp demo`),
    /// instead of reading the lines back. The fold names no line of its own until
    /// [`Fold::bind_written`]: the writer binds it to the last line once it is durable. Nothing
    /// checks the facts against the journal here; `valp verify` compares the fold written down
    /// with the fold of the verified lines, and [`Fold::advance`] checks the bound line is in
    /// the journal.
    pub fn push_facts(&mut self, facts: impl IntoIterator<Item = Fact>, newest: Option<u64>) {
        for fact in facts {
            self.deriver.push(&fact);
            trim(&mut self.deriver, newest);
        }
    }

    /// Binds a fold made by [`Fold::push_facts`] to `last`, the last line it folded.
    pub fn bind_written(&mut self, last: LineBinding) {
        self.at = Some(last);
    }
}

/// Keeps of `deriver`, when `newest` is given and it holds more than twice as many rounds, only
/// the open and the newest `newest` rounds.
fn trim(deriver: &mut Deriver, newest: Option<u64>) {
    if let Some(newest) = newest
        && deriver.rounds().len() as u64 > newest.saturating_mul(2)
    {
        deriver.keep(newest);
    }
}
