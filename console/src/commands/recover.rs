//! `valp recover`: the way on after a journal was refused (see `valp_store::recover`).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use valp_runtime::audit::fold_cache;
use valp_store::ControlRoot;

use valp_store::recover::{
    actions_plan, ledger_plan, recover_actions, recover_ledger, recover_task, task_plan,
};
use valp_view::sanitize::display_text;

use super::{CommandError, confirm};

/// What to recover: a task's journal (its operator-action journal with `actions`), or the
/// ledger (`None`).
pub(super) fn run(
    root: &ControlRoot,
    task: Option<&str>,
    actions: bool,
    yes: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let plan = match task {
        Some(task) if actions => actions_plan(root, task)?,
        Some(task) => task_plan(root, task)?,
        None => ledger_plan(root)?,
    };
    for line in plan.describe() {
        writeln!(out, "{}", display_text(&line))?;
    }
    if !plan.needed() {
        return Ok(ExitCode::SUCCESS);
    }
    let name = task.unwrap_or("installation");
    if !yes {
        confirm::typed(
            input,
            out,
            &format!("type {name} to recover its journal as shown"),
            name,
            "the journal was not changed",
        )?;
    }
    let recovered = match task {
        Some(task) if actions => recover_actions(root, task, &plan)?,
        Some(task) => recover_task(root, task, &plan)?,
        None => recover_ledger(root, &plan)?,
    };
    for backup in &recovered.backups {
        writeln!(out, "backup: {}", backup.display())?;
    }
    for moved in &recovered.snapshots {
        writeln!(out, "snapshot beyond the cut moved to {}", moved.display())?;
    }
    if let (Some(task), false) = (task, actions) {
        // The correction cycle's fold, a derived cache, when it is bound after the cut.
        let set_aside = fold_cache::set_aside_beyond(
            &root.layout().task_dir(task),
            plan.keep_entries,
            &root.layout().quarantine_dir(),
        );
        match set_aside {
            Ok(Some(moved)) => writeln!(
                out,
                "correction fold beyond the cut moved to {}",
                moved.display()
            )?,
            Ok(None) => {}
            Err(error) => writeln!(
                out,
                "correction fold beyond the cut not moved ({}); opens do not use it",
                display_text(&error.to_string())
            )?,
        }
    }
    match &recovered.head {
        Some(head) => writeln!(
            out,
            "recovered: {} entries, anchored at seq {}",
            plan.keep_entries, head.seq
        )?,
        None => writeln!(out, "recovered: no record kept, no head")?,
    }
    Ok(ExitCode::SUCCESS)
}
