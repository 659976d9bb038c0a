//! The Work items pane: the selected task's frontier, one row per work item with its
//! requirement, status (in its status colour), frontier position and current attempt. The
//! bottom border says what the System waits for on the task.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;

use super::app::Ctx;
use super::labels;
use super::list::{self, Entries, Listing};
use super::needs;
use super::selection::Pane;
use super::text::{Cut, cell, row, span, widths};
use super::theme::Slot;
use valp_view::needs::age_text;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let selection = ctx.selection;
    let task = selection.task(ctx.view);
    let items = selection.items(ctx.view);
    let cursor = selection.cursor(Pane::Items);
    let columns = widths(
        area.width.saturating_sub(2),
        [
            Constraint::Length(1),
            Constraint::Fill(2),
            Constraint::Length(8),
            Constraint::Length(9),
            Constraint::Fill(3),
            Constraint::Fill(3),
        ],
    );
    let cells = |texts: [(&str, Slot); 6]| {
        row((0..6).map(|at| {
            let cut = if at == 1 { Cut::Middle } else { Cut::End };
            cell(texts[at].0, columns[at], cut, ctx.style(texts[at].1))
        }))
    };
    let header = cells(
        ["", "work item", "required", "status", "position", "attempt"]
            .map(|text| (text, Slot::Muted)),
    );
    let entries = Entries::new(items.len(), |at| {
        let item = items[at];
        let mut attempt =
            labels::attempt_in_item(&item.attempt, &item.task_id, &item.work_item_id).to_owned();
        // How long an attempt still in flight has been going.
        if let Some(since) = item.in_flight_since_ms() {
            attempt.push_str(" · ");
            attempt.push_str(&age_text(since, ctx.view.now_ms));
        }
        vec![cells([
            (if at == cursor { "›" } else { "" }, Slot::Accent),
            (&item.work_item_id, Slot::Base),
            (&item.requirement, Slot::Muted),
            (&item.status, Slot::of_status(&item.status)),
            (&item.position, Slot::Base),
            (&attempt, Slot::Muted),
        ])]
    });
    let title = match task {
        Some(task) => format!(
            "{} · {} ({})",
            Pane::Items.title(),
            task.task_id,
            items.len()
        ),
        None => Pane::Items.title().to_owned(),
    };
    let note = task.and_then(|task| {
        let mut parts = Vec::new();
        if !task.gates.is_empty() {
            parts.push(format!("gates: {}", task.gates));
        }
        let waiting = needs::waiting_for(ctx, task);
        if !waiting.is_empty() {
            parts.push(format!("waiting for: {waiting}"));
        }
        (!parts.is_empty()).then(|| {
            Line::from(span(
                &format!(" {} ", parts.join(" · ")),
                ctx.style(Slot::Muted),
            ))
        })
    });
    list::render(
        frame,
        area,
        ctx,
        Listing {
            pane: Some(Pane::Items),
            title,
            note,
            focused: selection.focus() == Pane::Items,
            header: Some(header),
            entries,
            cursor,
            empty: if task.is_some() {
                "This task has no work items.".to_owned()
            } else {
                "No task selected.".to_owned()
            },
        },
    );
}
