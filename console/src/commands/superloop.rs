//! `valp task import-superloop LOOPDIR [--as ID]`, and the dispatch of the task commands that
//! create a task (`publish`, `import-superloop`).
//!
//! The loop folder is read and checked first ([`valp_runtime::related::superloop::read`]); a
//! folder that must not be believed is refused with the reason and nothing is written. Then,
//! as for `valp task publish`, the active Leader is re-proven before the task is created.
//! Prints the task, the recomputed frontier, every observation kept, every problem (runs or
//! artifacts not taken) and, for a completed loop, the Done claim and what the kernel's Done
//! gate says about it (nothing is proposed: Done is not recorded by an import). Exit code 3
//! when something was not taken.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::related::superloop::{self, import::ImportError};
use valp_store::ControlRoot;
use valp_view::sanitize::{display_line, display_text};

use super::CommandError;
use crate::cli::TaskCommand;

/// Runs `valp task publish` or `valp task import-superloop`.
pub(super) fn publish_task(
    root: &ControlRoot,
    command: TaskCommand,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match command {
        TaskCommand::Publish { plan } => super::publish::run(root, &plan, clock, options, out),
        TaskCommand::ImportSuperloop { dir, task } => {
            import(root, &dir, task.as_deref(), clock, options, out)
        }
        other => Err(CommandError::Usage(format!(
            "not a task-creating command: {other:?}"
        ))),
    }
}

fn usage(error: impl std::fmt::Display) -> CommandError {
    CommandError::Usage(format!("{error}; nothing was imported"))
}

fn import(
    root: &ControlRoot,
    dir: &Path,
    task: Option<&str>,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let found = superloop::read(dir).map_err(usage)?;
    let task = task.map_or_else(
        || format!("superloop-{}", found.contract.name),
        str::to_owned,
    );
    let (ledger, _) =
        super::leadership::proven_leader(root, clock, options, "importing SuperLoop plans")?;
    let epoch = ledger.live().state().active_epoch;
    drop(ledger);
    let imported = superloop::import(root, &found, &task, epoch).map_err(|error| match error {
        ImportError::Store(error) => CommandError::Store(error),
        other => usage(other),
    })?;
    writeln!(
        out,
        "{} SuperLoop loop {} (generation {}) as task {} at epoch {}: {} work items",
        if imported.refreshed {
            "refreshed"
        } else {
            "imported"
        },
        display_text(&found.contract.name),
        display_text(&found.generation),
        display_text(&task),
        imported.published.leader_epoch,
        imported.published.work_items
    )?;
    writeln!(
        out,
        "contract     superloop-jcs:{} (verified), plan {}",
        found.contract.digest, imported.published.plan.content_digest
    )?;
    writeln!(
        out,
        "frontier     {} (recomputed from loop.yaml and state.json)",
        if imported.frontier.is_empty() {
            "(none)".to_owned()
        } else {
            display_text(&imported.frontier.join(", "))
        }
    )?;
    for kept in &imported.kept {
        let record = &kept.record;
        writeln!(
            out,
            "observed     {} {}{}{}",
            record.kind.as_str(),
            display_text(&record.observation_id),
            record
                .claim
                .map(|(claim, review)| format!(
                    " claim {} review {}",
                    claim.as_str(),
                    review.as_str()
                ))
                .unwrap_or_default(),
            if kept.written {
                ""
            } else {
                " (already recorded)"
            }
        )?;
    }
    for problem in &imported.problems {
        writeln!(out, "not taken    {}", display_line(problem))?;
    }
    if let Some(claim) = &imported.done_claim {
        let gate = superloop::done_gate(root, &task).map_err(usage)?;
        writeln!(
            out,
            "done claim   {} (a foreign claim, not Done); Done gate: {}",
            claim.result.as_str(),
            if gate.passed {
                "would pass".to_owned()
            } else {
                format!("refuses: {}", gate.reasons.join(", "))
            }
        )?;
    }
    Ok(if imported.problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}
