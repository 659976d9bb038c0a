//! `valp demo`: a task with a seeded legal history, written through the store (with
//! `--console`, only when `--entries` asks for it: the console's demo is the live plan). It
//! ends with the task folder's `correction-fold.json` ([`fold_cache`]) bound to the last line,
//! folded batch by batch, as each is acknowledged, from what it wrote (each step's event and the
//! time the store's clock gave its line), so the first `valp task status` or console on the root folds no line from
//! the genesis.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, channel, sync_channel};
use std::sync::{Arc, Mutex};

use valp_kernel::walk::{Walk, WalkConfig};
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

/// Entries the demo appends per batch (one `fdatasync` each), and the most proposals the walk
/// chooses ahead of the store.
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
    // The journal's kernel holds what a long history needs; the walk's own need not hold it
    // twice (~540 bytes per entry).
    walk.forget_history();
    let times = Arc::new(KeptTimes {
        clock: Arc::clone(root.clock()),
        times: Mutex::default(),
    });
    journal.set_clock(Arc::clone(&times) as Arc<dyn Clock>);
    // The walk chooses its proposals (running a kernel of its own) on a thread of its own,
    // beside the store's pipelined append (the kernel on this thread, the writing and one
    // `fdatasync` per batch on the store's writer): a crash loses at most the batches not yet
    // acknowledged, never an entry of an earlier one. Each acknowledged batch is folded from
    // the walk's events and the times its lines were given, never read back.
    let (events, written) = channel();
    let mut folding = WrittenFold::new(written, Arc::clone(&times));
    std::thread::scope(|scope| {
        let (steps, proposals) = sync_channel(DEMO_BATCH);
        scope.spawn(move || {
            for step in walk.take(entries) {
                // The fold's copy first: it is there before the store acknowledges the step.
                if events.send(step.event.clone()).is_err()
                    || steps.send((step.event, step.evidence_set)).is_err()
                {
                    break;
                }
            }
        });
        journal.append_pipelined(proposals, DEMO_BATCH, |answers| folding.batch(&answers))
    })?;
    if let Some(other) = folding.refused.take() {
        return Err(CommandError::Usage(format!(
            "the demo history was not accepted: {other:?}"
        )));
    }
    let fold = folding.finish(&journal)?;
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
    /// The `count` oldest times given and not taken yet (fewer if fewer were given).
    fn take_first(&self, count: usize) -> Vec<Timestamp> {
        self.times
            .lock()
            .map(|mut times| {
                let count = count.min(times.len());
                times.drain(..count).collect()
            })
            .unwrap_or_default()
    }
}

/// The correction fold of what the demo wrote, batch by batch as the store acknowledges them:
/// each answer takes the walk's copy of its event and, when accepted, the time its line was
/// given (in line order: the store asks its clock once per accepted line, on the judging thread).
struct WrittenFold {
    fold: Fold,
    events: Receiver<valp_kernel::Event>,
    times: Arc<KeptTimes>,
    /// The first answer that was not an acceptance.
    refused: Option<Appended>,
    /// Whether every answer found its event and every acceptance its time; if not, the fold
    /// is read from the journal at the end instead.
    whole: bool,
}

impl WrittenFold {
    fn new(events: Receiver<valp_kernel::Event>, times: Arc<KeptTimes>) -> Self {
        Self {
            fold: Fold::genesis(),
            events,
            times,
            refused: None,
            whole: true,
        }
    }

    /// Folds one acknowledged batch.
    fn batch(&mut self, answers: &[Appended]) {
        let events: Vec<_> = self.events.iter().take(answers.len()).collect();
        let accepted = answers
            .iter()
            .filter(|answer| matches!(answer, Appended::Accepted { .. }))
            .count();
        let times = self.times.take_first(accepted);
        if self.refused.is_none() {
            self.refused = answers
                .iter()
                .find(|answer| !matches!(answer, Appended::Accepted { .. }))
                .cloned();
        }
        self.whole &= events.len() == answers.len() && times.len() == accepted;
        if !self.whole {
            return;
        }
        let mut times = times.into_iter();
        let facts = answers
            .iter()
            .zip(&events)
            .filter_map(|(answer, event)| match answer {
                Appended::Accepted { seq, .. } => Some(Fact::of_event(*seq, times.next(), event)),
                _ => None,
            })
            .collect::<Vec<_>>();
        self.fold.push_facts(facts, Some(fold_cache::NEWEST_ROUNDS));
    }

    /// The fold, bound to the journal's last line; read from the journal when a batch could not
    /// be folded from what was written or the head is not at the last line.
    fn finish(mut self, journal: &Journal) -> Result<Fold, StoreError> {
        let newest = Some(fold_cache::NEWEST_ROUNDS);
        match journal.head() {
            Some(head) if self.whole && head.seq == journal.len() => {
                self.fold.bind_written(LineBinding {
                    seq: head.seq,
                    entry_digest: head.entry_digest.clone(),
                    length: head.length,
                });
                Ok(self.fold)
            }
            _ => {
                let mut fold = Fold::genesis();
                fold.advance_keeping(journal.path(), newest)?;
                Ok(fold)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// Batches are folded from the events and the times the clock gave, not read back: with the
    /// journal file moved away the fold still comes out, and equals the fold of the lines.
    #[test]
    fn batches_are_folded_from_what_was_written_without_reading_them_back() {
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
        let walk = Walk::for_task_at(config, root.installation().installation_id.clone(), 1, task);
        let mut journal = root.create_task(walk.genesis()).unwrap();
        let times = Arc::new(KeptTimes {
            clock: Arc::clone(root.clock()),
            times: Mutex::default(),
        });
        journal.set_clock(Arc::clone(&times) as Arc<dyn Clock>);
        let (events, written) = channel();
        let mut proposals = Vec::new();
        for step in walk.take(1200) {
            events.send(step.event.clone()).unwrap();
            proposals.push((step.event, step.evidence_set));
        }
        let mut folding = WrittenFold::new(written, times);
        let mut batches = 0;
        journal
            .append_pipelined(proposals, 400, |answers| {
                batches += 1;
                folding.batch(&answers);
            })
            .unwrap();
        assert_eq!(batches, 3);
        assert!(folding.refused.is_none() && folding.whole);
        let aside = temp.path().join("aside.jsonl");
        std::fs::rename(journal.path(), &aside).unwrap();
        let fold = folding.finish(&journal).unwrap();
        std::fs::rename(&aside, journal.path()).unwrap();
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
