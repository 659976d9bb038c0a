//! `valp demo`: a task with a seeded legal history, written through the store (with
//! `--console`, only when `--entries` asks for it: the console's demo is the live plan).

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
    let walk = Walk::for_task_at(
        config,
        root.installation().installation_id.clone(),
        active.max(1),
        task,
    );
    let mut journal = root.create_task(walk.genesis())?;
    // The walk chooses its proposals (running a kernel of its own) on a thread of its own,
    // beside the store's pipelined append (the kernel on this thread, the writing and one
    // `fdatasync` per batch on the store's writer): a crash loses at most the batches not yet
    // acknowledged, never an entry of an earlier one.
    let mut refused = None;
    std::thread::scope(|scope| {
        let (steps, proposals) = std::sync::mpsc::sync_channel(DEMO_BATCH);
        scope.spawn(move || {
            for step in walk.take(entries) {
                if steps.send((step.event, step.evidence_set)).is_err() {
                    break;
                }
            }
        });
        journal.append_pipelined(proposals, DEMO_BATCH, |answers| {
            if refused.is_none() {
                refused = answers
                    .into_iter()
                    .find(|answer| !matches!(answer, Appended::Accepted { .. }));
            }
        })
    })?;
    if let Some(other) = refused {
        return Err(CommandError::Usage(format!(
            "the demo history was not accepted: {other:?}"
        )));
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
