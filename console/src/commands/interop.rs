//! `valp export --reference` (the journal in the reference layout, and the task's
//! `correction-cycle.json` beside it) and `valp import`.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use valp_runtime::audit::cycle_file;
use valp_runtime::runtime::driver::RuntimeError;
use valp_store::{Access, ControlRoot, reference};

use super::CommandError;
use valp_view::sanitize::display_text;

pub(super) fn export(
    root: &ControlRoot,
    task: &str,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let journal = root.open_task(task, Access::ReadOnly)?;
    let exported = reference::export(&journal, dir)?;
    writeln!(
        out,
        "exported task {}: {} entries to {} (genesis.json {} bytes, replay.jsonl {} bytes)",
        display_text(task),
        exported.entries,
        super::shown(&exported.dir),
        exported.genesis_bytes,
        exported.replay_bytes
    )?;
    // The correction cycle travels with the task (seed 003), where the reference layout has it.
    let cycle = cycle_file::export(journal.dir(), dir)
        .map_err(|error| RuntimeError::Integrity(format!("export: {error}")))?;
    if let Some(path) = cycle {
        writeln!(out, "  correction-cycle.json to {}", super::shown(&path))?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn import(
    root: &ControlRoot,
    dir: &Path,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let journal = reference::import(root, dir)?;
    writeln!(
        out,
        "imported task {}: {} entries verified by replay into {}",
        display_text(journal.genesis().state.body.task_id.value()),
        journal.len(),
        super::shown(journal.path())
    )?;
    Ok(ExitCode::SUCCESS)
}
