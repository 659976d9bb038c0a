//! `valp demo`: a task with a seeded legal history, written through the store (with
//! `--console`, only when `--entries` asks for it: the console's demo is the live plan). It
//! ends with the task folder's `correction-fold.json` ([`fold_cache`]) bound to the last line,
//! folded batch by batch from what it wrote (each step's event and the time the store's clock
//! gave its line), so the first `valp task status` or console on the root folds no line from
//! the genesis.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use valp_kernel::walk::{Walk, WalkConfig, WalkStep};
use valp_kernel::{Identity, IdentityKind};
use valp_store::clock::{Clock, Timestamp};
use valp_store::io::OsStorage;
use valp_store::journal::LineBinding;
use valp_store::{Access, Appended, ControlRoot, Journal, StoreError};

use super::CommandError;
use crate::cli::DemoArgs;
use valp_runtime::audit::derive::Fact;
use valp_runtime::audit::fold::Fold;
use valp_runtime::audit::fold_cache;
use valp_view::sanitize::display_text;

/// Entries the demo appends per batch (one `fdatasync` each).
const DEMO_BATCH: usize = 1024;

/// Accepted entries of the seeded task when `--entries` is not given (without `--console`).
const DEFAULT_ENTRIES: usize = 120;

pub(super) fn run(
    root_path: &Path,
    args: &DemoArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let root = if root_path
        .join(valp_store::layout::INSTALLATION_FILE)
        .is_file()
    {
        ControlRoot::open(root_path, Arc::new(OsStorage))?
    } else {
        let created = super::init::create(root_path, None)?;
        writeln!(
            out,
            "initialised installation {} at {}",
            display_text(created.installation().installation_id.value()),
            super::shown(root_path)
        )?;
        created
    };
    let task = Identity::new(IdentityKind::Task, args.task.clone())
        .map_err(|_| CommandError::Usage("--task must not be empty".to_owned()))?;
    // The console's demo is the live plan the System publishes once a Leader is bound; a
    // seeded random history beside it only confuses, unless asked for.
    let entries = match (args.entries, args.console) {
        (Some(entries), _) => entries,
        (None, false) => DEFAULT_ENTRIES,
        (None, true) => return Ok(ExitCode::SUCCESS),
    };
    if args.console && root.open_task(&args.task, Access::ReadOnly).is_ok() {
        writeln!(
            out,
            "demo task {} is already there; opening the console",
            args.task
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = WalkConfig {
        seed: args.seed,
        work_items: args.work_items,
        may_terminate: false,
    };
    // The task is bound to the active epoch, or to epoch 1 before any Leader (which the first
    // selection then activates): after a rotation a task of epoch 1 would be fenced from birth,
    // and the store refuses appends to a fenced task.
    let active = root.ledger_read_only()?.live().state().active_epoch;
    let mut walk = Walk::for_task_at(
        config,
        root.installation().installation_id.clone(),
        active.max(1),
        task,
    );
    let mut journal = root.create_task(walk.genesis())?;
    let times = Arc::new(KeptTimes {
        clock: Arc::clone(root.clock()),
        times: Mutex::default(),
    });
    journal.set_clock(Arc::clone(&times) as Arc<dyn Clock>);
    let mut left = entries;
    let mut fold = Fold::genesis();
    while left > 0 {
        // One `fdatasync` per batch (the store's bulk append): a crash loses at most the batch
        // in flight, never an entry of an earlier one.
        let steps: Vec<_> = walk.by_ref().take(left.min(DEMO_BATCH)).collect();
        if steps.is_empty() {
            break;
        }
        left -= steps.len();
        let answers = append_steps(&mut journal, &steps)?;
        if let Some(other) = answers
            .iter()
            .find(|answer| !matches!(answer, Appended::Accepted { .. }))
        {
            return Err(CommandError::Usage(format!(
                "the demo history was not accepted: {other:?}"
            )));
        }
        fold_batch(&mut fold, &journal, &steps, &answers, times.take())?;
    }
    // A derived cache: without it the first fold reads the whole journal, nothing else.
    if let Err(error) = fold_cache::write(journal.dir(), &args.task, &fold) {
        writeln!(
            out,
            "note: {} not written: {}",
            super::shown(&fold_cache::path(journal.dir())),
            display_text(&error.to_string())
        )?;
    }
    writeln!(
        out,
        "created demo task {} with {} accepted entries and {} work items in {}",
        display_text(&args.task),
        journal.len(),
        args.work_items,
        super::shown(journal.path())
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Appends the walk `steps` as one batch (one `fdatasync`).
fn append_steps(journal: &mut Journal, steps: &[WalkStep]) -> Result<Vec<Appended>, StoreError> {
    journal.append_batch(
        steps
            .iter()
            .map(|step| (&step.event, step.evidence_set.as_slice())),
    )
}

/// The root's clock, keeping each time it gives: the `recorded_at` of each line a batch
/// appends, in order (the store stamps each accepted line once).
#[derive(Debug)]
struct KeptTimes {
    clock: Arc<dyn Clock>,
    times: Mutex<Vec<Timestamp>>,
}

impl Clock for KeptTimes {
    fn now(&self) -> Timestamp {
        let now = self.clock.now();
        if let Ok(mut times) = self.times.lock() {
            times.push(now);
        }
        now
    }
}

impl KeptTimes {
    /// The times given since the last take.
    fn take(&self) -> Vec<Timestamp> {
        self.times
            .lock()
            .map(|mut times| std::mem::take(&mut *times))
            .unwrap_or_default()
    }
}

/// Folds the batch `steps` that `journal` just appended (`answers`, all accepted) into `fold`,
/// holding what the file holds (the open and the newest rounds): from each step's event and
/// its line's time when the clock gave one time per line and the head names the last line,
/// else by reading the lines back (as any fold does).
fn fold_batch(
    fold: &mut Fold,
    journal: &Journal,
    steps: &[WalkStep],
    answers: &[Appended],
    times: Vec<Timestamp>,
) -> Result<(), StoreError> {
    let newest = Some(fold_cache::NEWEST_ROUNDS);
    match journal.head() {
        Some(head)
            if head.seq == journal.len()
                && times.len() == steps.len()
                && answers.len() == steps.len() =>
        {
            let facts =
                steps.iter().zip(answers).zip(times).filter_map(
                    |((step, answer), at)| match answer {
                        Appended::Accepted { seq, .. } => {
                            Some(Fact::of_event(*seq, Some(at), &step.event))
                        }
                        _ => None,
                    },
                );
            let last = LineBinding {
                seq: head.seq,
                entry_digest: head.entry_digest.clone(),
                length: head.length,
            };
            fold.push_written(facts, last, newest);
            Ok(())
        }
        _ => fold.advance_keeping(journal.path(), newest).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// A batch is folded from the steps and the times the clock gave, not read back: with the
    /// journal file moved away the fold still comes out, and equals the fold of the lines.
    #[test]
    fn a_batch_is_folded_from_what_was_written_without_reading_it_back() {
        let temp = tempfile::tempdir().unwrap();
        let root = ControlRoot::init(
            temp.path(),
            Identity::new(IdentityKind::Installation, "inst").unwrap(),
            Arc::new(OsStorage),
        )
        .unwrap();
        let task = Identity::new(IdentityKind::Task, "t").unwrap();
        let config = WalkConfig {
            seed: 9,
            work_items: 4,
            may_terminate: false,
        };
        let mut walk =
            Walk::for_task_at(config, root.installation().installation_id.clone(), 1, task);
        let mut journal = root.create_task(walk.genesis()).unwrap();
        let times = Arc::new(KeptTimes {
            clock: Arc::clone(root.clock()),
            times: Mutex::default(),
        });
        journal.set_clock(Arc::clone(&times) as Arc<dyn Clock>);
        let mut fold = Fold::genesis();
        for _ in 0..3 {
            let steps: Vec<_> = walk.by_ref().take(400).collect();
            let answers = append_steps(&mut journal, &steps).unwrap();
            let aside = temp.path().join("aside.jsonl");
            std::fs::rename(journal.path(), &aside).unwrap();
            fold_batch(&mut fold, &journal, &steps, &answers, times.take()).unwrap();
            std::fs::rename(&aside, journal.path()).unwrap();
        }
        let mut read = Fold::genesis();
        read.advance_keeping(journal.path(), Some(fold_cache::NEWEST_ROUNDS))
            .unwrap();
        assert!(read.deriver().opened() > 0, "the walk opens rounds");
        assert_eq!(
            fold_cache::encode("t", &fold).unwrap(),
            fold_cache::encode("t", &read).unwrap()
        );
    }
}
