//! The foreign-evidence section of the task and work-item detail: each foreign observation
//! (an AgentOps verdict, a SuperLoop record) with its origin (format and file), its foreign
//! digest with the scheme, the VALP evidence digest, its verification levels, the claim it
//! carries and the independence as declared.
//!
//! Display only: nothing here sends a request. A foreign pass is drawn as evidence in the base
//! colour, never as a done status and never as a review the Leader made.

use valp_view::{ConsoleView, ForeignRow};

use super::theme::Slot;

/// The rows of `task` (all of them) or of one of its work items.
pub fn of<'v>(
    view: &'v ConsoleView,
    task_id: &'v str,
    work_item_id: Option<&'v str>,
) -> impl Iterator<Item = &'v ForeignRow> {
    view.foreign.iter().filter(move |row| {
        row.task_id == task_id
            && (work_item_id.is_none() || row.work_item_id.as_deref() == work_item_id)
    })
}

/// The section heading of one row: `Foreign evidence: agentops review (work item stage)`.
pub fn heading(row: &ForeignRow) -> String {
    format!(
        "Foreign evidence: {} {} ({})",
        row.source,
        row.kind.replace('_', " "),
        row.work_item_id
            .as_deref()
            .map_or_else(|| "the task".to_owned(), |item| format!("work item {item}"))
    )
}

/// The labelled fields of one row, in order; empty values are left out by the page.
pub fn fields(row: &ForeignRow) -> Vec<(&'static str, String, Slot)> {
    let claim_slot = match row.claim.as_ref().map(|(claim, _)| claim.as_str()) {
        Some("fail") => Slot::StatusFailed,
        Some("unknown") => Slot::StatusAttention,
        _ => Slot::Base,
    };
    vec![
        ("claim", row.claim_text().unwrap_or_default(), claim_slot),
        ("origin", row.origin.clone(), Slot::Base),
        ("digest", row.foreign_digest.clone(), Slot::Base),
        ("evidence", row.content_digest.clone(), Slot::Muted),
        ("levels", row.levels_text(), Slot::Base),
        ("independence", row.independence.clone(), Slot::Base),
        ("validated at", row.validated_at.clone(), Slot::Base),
        ("summary", row.summary.clone(), Slot::Muted),
    ]
}
