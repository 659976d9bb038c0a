//! `valp task publish PLAN`: a plan file (`valp-plan.v1`) becomes a task at the active Leader
//! epoch.
//!
//! The plan is validated first; an invalid plan is reported with every problem and nothing is
//! written (no observation, no evidence, no journal). So is a plan whose `cwd` or expected
//! evidence reaches through a symbolic link ([`valp_runtime::plan::paths`]). Then, as for a handoff, the active
//! Leader's session must be re-proven by a fresh observation before the task is created (see
//! [`valp_runtime::plan`] for what publishing writes).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use valp_store::ControlRoot;

use super::CommandError;
use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::plan::{self, PlanError};
use valp_view::sanitize::display_text;

pub(super) fn run(
    root: &ControlRoot,
    plan: &Path,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let bytes = std::fs::read(plan)
        .map_err(|error| CommandError::Usage(format!("cannot read {}: {error}", plan.display())))?;
    let parsed = plan::parse(plan, &bytes).map_err(|errors| {
        let count = errors.problems.len();
        CommandError::Usage(format!(
            "{}: the plan is invalid ({count} problem{}); nothing was published\n{errors}",
            plan.display(),
            if count == 1 { "" } else { "s" }
        ))
    })?;
    refuse_existing(root, &parsed)?;
    let project = root.layout().root().parent().unwrap_or(Path::new("."));
    plan::paths::check_plan(project, &parsed).map_err(|problem| {
        CommandError::Usage(format!(
            "{}: {problem}; nothing was published",
            plan.display()
        ))
    })?;
    let (ledger, _) = super::leadership::proven_leader(root, clock, options, "publishing tasks")?;
    let epoch = ledger.live().state().active_epoch;
    drop(ledger);
    let published = plan::publish(root, &parsed, epoch).map_err(publish_error)?;
    writeln!(
        out,
        "{} task {} at epoch {}: {} work item{}, {} criteri{}",
        if published.resumed {
            "completed the interrupted publication of"
        } else {
            "published"
        },
        display_text(&published.task_id),
        published.leader_epoch,
        published.work_items,
        if published.work_items == 1 { "" } else { "s" },
        parsed.criteria.len(),
        if parsed.criteria.len() == 1 {
            "on"
        } else {
            "a"
        },
    )?;
    writeln!(
        out,
        "plan         {} {}",
        published.plan.evidence_id.value(),
        published.plan.content_digest
    )?;
    writeln!(
        out,
        "done policy  {} {}",
        published.done_policy.evidence_id.value(),
        published.done_policy.content_digest
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses, before anything is observed or written, a task that exists and was not left by an
/// interrupted publication.
fn refuse_existing(root: &ControlRoot, parsed: &plan::Plan) -> Result<(), CommandError> {
    let journal = root
        .layout()
        .task_dir(&parsed.task_id)
        .join(valp_store::journal::JOURNAL_FILE);
    if !journal.is_file() {
        return Ok(());
    }
    match plan::of_task(root, &parsed.task_id) {
        Err(PlanError::NotPublished { .. }) => Ok(()),
        Ok((published, evidence, _)) if published == *parsed => Err(CommandError::Usage(format!(
            "task {} is already published with this plan ({}); nothing was written",
            parsed.task_id, evidence.content_digest
        ))),
        _ => Err(CommandError::Usage(format!(
            "task {} already exists; publish the plan under another task_id (nothing was \
             written)",
            parsed.task_id
        ))),
    }
}

fn publish_error(error: PlanError) -> CommandError {
    match error {
        PlanError::Store(error) => CommandError::Store(error),
        PlanError::Exists(message) => CommandError::Usage(message),
        other => CommandError::Usage(other.to_string()),
    }
}
