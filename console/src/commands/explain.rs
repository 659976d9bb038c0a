//! `valp task explain TASK [--item ID] [--json]`: what the protocol allows next for a task,
//! read-only. The transitions come from [`valp_runtime::flow::transitions`] (the kernel's
//! lister: the reducer's rules with the store's Done gate and epoch fence, fed with the
//! installation's active epoch and the task's frozen Done policy, without a Done closure), the
//! text lines from [`valp_view::flow::TransitionRow::line`], the words the console's state
//! machine view shows.
//!
//! Text: a header line, then one line per transition: `allowed <kind> <target> by <actor>
//! [<guard>] -> <next status>` or `refused <kind> <target> <code>: <reason>`, allowed first.
//! JSON: `{"task", "status", "revision", "leader_epoch", "transitions": [{"kind", "target",
//! "actor", "guard", "evidence", "allowed", "next_status", "obligations", "audit_facts",
//! "code", "reasons"}]}`.

use std::io::Write;
use std::process::ExitCode;

use valp_kernel::explain::{Judgement, Transition};
use valp_store::{Access, ControlRoot};

use super::CommandError;
use crate::cli::ExplainArgs;
use valp_runtime::flow;
use valp_view::sanitize::display_text;

/// The transitions of task `task` now, and its journal's State in words.
fn transitions(
    root: &ControlRoot,
    task: &str,
) -> Result<(valp_kernel::StateBody, Vec<Transition>), CommandError> {
    let journal = root.open_task(task, Access::ReadOnly)?;
    let active_epoch = root.ledger_read_only()?.live().state().active_epoch;
    let listed = flow::transitions(root, &journal, active_epoch)?;
    Ok((journal.live().body().clone(), listed))
}

/// Whether `transition` concerns work item `item` (or its attempt).
fn concerns(transition: &Transition, item: &str) -> bool {
    use valp_kernel::explain::Target;
    match &transition.target {
        Target::Task => false,
        Target::WorkItem(id) | Target::Attempt { work_item: id, .. } => id.value() == item,
    }
}

pub(super) fn run(
    root: &ControlRoot,
    args: &ExplainArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let task = args.task.as_str();
    let item = args.item.as_deref();
    let (body, mut listed) = transitions(root, task)?;
    if let Some(item) = item {
        if !body
            .work_items
            .iter()
            .any(|w| w.work_item_id.value() == item)
        {
            return Err(CommandError::Usage(format!(
                "task {task} has no work item {}",
                display_text(item)
            )));
        }
        listed.retain(|transition| concerns(transition, item));
    }
    // Allowed first, each group in the lister's order (event kind, then target).
    listed.sort_by_key(|transition| !transition.is_allowed());
    let status = body.status.as_str().to_owned();
    if args.json {
        let value = serde_json::json!({
            "task": body.task_id.value(),
            "status": status,
            "revision": body.revision.to_string(),
            "leader_epoch": body.leader_epoch.to_string(),
            "transitions": listed.iter().map(to_json).collect::<Vec<_>>(),
        });
        writeln!(out, "{value}")?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "task {} status {status} revision {} epoch {}",
        display_text(body.task_id.value()),
        body.revision,
        body.leader_epoch
    )?;
    for transition in &listed {
        writeln!(out, "{}", flow::row(&body, transition).line())?;
    }
    Ok(ExitCode::SUCCESS)
}

fn to_json(transition: &Transition) -> serde_json::Value {
    let (allowed, next_status, obligations, audit_facts, code, reasons) =
        match &transition.judgement {
            Judgement::Allowed {
                next_status,
                obligations,
                audit_facts,
            } => (
                true,
                Some(next_status.as_str()),
                obligations.clone(),
                audit_facts.clone(),
                None,
                Vec::new(),
            ),
            Judgement::Refused { code, reasons } => (
                false,
                None,
                Vec::new(),
                Vec::new(),
                Some(code.as_str()),
                reasons.clone(),
            ),
        };
    serde_json::json!({
        "kind": transition.kind.as_str(),
        "target": transition.target.describe(),
        "actor": transition.actor,
        "guard": transition.guard,
        "evidence": transition.evidence,
        "allowed": allowed,
        "next_status": next_status,
        "obligations": obligations,
        "audit_facts": audit_facts,
        "code": code,
        "reasons": reasons,
    })
}
