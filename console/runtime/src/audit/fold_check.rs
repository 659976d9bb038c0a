//! `valp verify`'s check of each task folder's `correction-fold.json` ([`fold_cache`]): while
//! the store verifies the task journal from the genesis, the entries it decodes are folded
//! again ([`FoldChecks::observer`], no second read or decoding of the journal) and, at the line the file is bound
//! to, compared with it: the line (entry digest and end), the task, and the fold (rounds held,
//! rounds opened, the newest unfixed). A file that does not decode, is not that fold, or names a
//! line the verified journal does not reach is a problem naming the file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use valp_kernel::replay::CompactEntry;
use valp_store::chain::ChainLine;
use valp_store::verify::LineObserver;

use super::derive::Deriver;
use super::fold::Fold;
use super::fold_cache;

/// What one file's check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldCheck {
    /// The task folder.
    pub dir: PathBuf,
    /// The file.
    pub path: PathBuf,
    /// The seq it is bound to (for a file that does not decode, the seq it names, or 0).
    pub seq: u64,
    /// What does not match, if anything.
    pub problem: Option<String>,
}

/// The checks of a verify, one per task folder that has the file.
#[derive(Debug, Default)]
pub struct FoldChecks(Vec<(PathBuf, Arc<Mutex<Probe>>)>);

#[derive(Debug)]
struct Probe {
    /// The file's task and fold, or the seq it names (0: none) and why it does not decode.
    cached: Result<(String, Fold), (u64, String)>,
    /// The fold of the lines read so far (its open and newest rounds).
    deriver: Deriver,
    /// The outcome at the file's line, once reached.
    outcome: Option<Result<(), String>>,
    /// Rounds held above which the fold is trimmed to its open and newest rounds.
    trim_at: usize,
}

/// Rounds held before the first trim (the newest [`fold_cache::NEWEST_ROUNDS`], and half as
/// many more).
const TRIM_AT_LEAST: usize = 1536;

impl FoldChecks {
    /// The observer of the task journal in `dir` (`None` when the folder has no file).
    pub fn observer(&mut self, dir: &Path) -> Option<LineObserver> {
        let path = fold_cache::path(dir);
        let cached = match std::fs::read(&path) {
            Ok(bytes) => {
                fold_cache::decode_any(&bytes).map_err(|reason| (named_seq(&bytes), reason))
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
            Err(error) => Err((0, format!("cannot be read: {error}"))),
        };
        let probe = Arc::new(Mutex::new(Probe {
            cached,
            deriver: Deriver::new(),
            outcome: None,
            trim_at: TRIM_AT_LEAST,
        }));
        self.0.push((dir.to_owned(), Arc::clone(&probe)));
        Some(Box::new(move |line, entry| {
            if let Ok(mut probe) = probe.lock() {
                probe.observe(line, entry);
            }
        }))
    }

    /// One result per file; `verified(dir)` says whether the task journal in `dir` verified (a
    /// file of a journal that does not is not checked: `None`).
    pub fn results(self, verified: impl Fn(&Path) -> bool) -> Vec<Option<FoldCheck>> {
        self.0
            .into_iter()
            .map(|(dir, probe)| {
                let path = fold_cache::path(&dir);
                let probe = probe.lock().ok()?;
                let (seq, problem) = match (&probe.cached, &probe.outcome) {
                    (Err((seq, reason)), _) => (*seq, Some(reason.clone())),
                    (Ok((_, fold)), Some(outcome)) => (seq_of(fold), outcome.clone().err()),
                    (Ok(_), None) if !verified(&dir) => return None,
                    (Ok((_, fold)), None) => (
                        seq_of(fold),
                        Some(format!(
                            "it is bound to line {} (seq {}), which the verified journal does \
                             not reach",
                            seq_of(fold) + 1,
                            seq_of(fold)
                        )),
                    ),
                };
                Some(FoldCheck {
                    dir,
                    path,
                    seq,
                    problem,
                })
            })
            .collect()
    }
}

/// The `seq` a file that does not decode names, to show with its problem (0: none).
fn named_seq(bytes: &[u8]) -> u64 {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|value| value.get("seq")?.as_u64())
        .unwrap_or(0)
}

fn seq_of(fold: &Fold) -> u64 {
    fold.at().map_or(0, |at| at.seq)
}

impl Probe {
    fn observe(&mut self, line: &ChainLine, entry: &CompactEntry) {
        let Ok((task, fold)) = &self.cached else {
            return;
        };
        let Some(at) = fold.at() else {
            return;
        };
        if self.outcome.is_some() || line.seq > at.seq {
            return;
        }
        if entry.event.task_id.value() != task {
            self.outcome = Some(Err(format!(
                "it is the fold of task {task:?}, the journal's is {:?}",
                entry.event.task_id.value()
            )));
            return;
        }
        self.deriver
            .push_event(line.seq, line.recorded_at, &entry.event);
        // Only the open and the newest rounds are compared: holding every round of a long
        // history (~2.4 KB each) would make verify's memory grow with it.
        // Trimmed when it has grown by half since the last trim, so trimming stays linear.
        if self.deriver.rounds().len() > self.trim_at {
            self.deriver.keep(fold_cache::NEWEST_ROUNDS);
            let held = self.deriver.rounds().len();
            self.trim_at = held + held.max(TRIM_AT_LEAST) / 2;
        }
        if line.seq < at.seq {
            return;
        }
        let rebuilt = self.deriver.kept(fold_cache::NEWEST_ROUNDS);
        self.outcome = Some(if line.digest != at.entry_digest || line.end != at.length {
            Err(format!(
                "it is bound to line {} (seq {}) with entry_digest {} ending at byte {}, the \
                 journal's line there has {} ending at byte {}",
                at.seq + 1,
                at.seq,
                at.entry_digest,
                at.length,
                line.digest,
                line.end
            ))
        } else if &rebuilt != fold.deriver() {
            Err(
                "its fold (rounds, opened, unfixed) differs from the fold from the genesis at \
                 that line"
                    .to_owned(),
            )
        } else {
            Ok(())
        });
    }
}
