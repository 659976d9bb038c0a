//! `valp demo`: a task with a seeded legal history, written through the store (with
//! `--console`, only when `--entries` asks for it: the console's demo is the live plan). It
//! ends with the task folder's `correction-fold.json` ([`fold_cache`]) bound to the last line,
//! folded batch by batch as the lines are written, so the first `valp task status` or console
//! on the root folds no line from the genesis.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Identity, IdentityKind};
use valp_store::io::OsStorage;
use valp_store::{Access, Appended, ControlRoot};

use super::CommandError;
use crate::cli::DemoArgs;
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
        let answers = journal.append_batch(
            steps
                .iter()
                .map(|step| (&step.event, step.evidence_set.as_slice())),
        )?;
        if let Some(other) = answers
            .iter()
            .find(|answer| !matches!(answer, Appended::Accepted { .. }))
        {
            return Err(CommandError::Usage(format!(
                "the demo history was not accepted: {other:?}"
            )));
        }
        // The batch just written, folded while it is in the page cache: the fold holds what
        // the file does (the open and the newest rounds), never the whole history.
        fold.advance_keeping(journal.path(), Some(fold_cache::NEWEST_ROUNDS))?;
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
