//! The Observations pane: the live adapter observations the System ingested, newest first, with
//! how long ago the System read each (its clock, against the view's). The detail of the row
//! under the cursor of the focused pane is shown whole, below it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use unicode_width::UnicodeWidthStr;

use super::app::Ctx;
use super::labels;
use super::list::{self, Entries, Listing};
use super::selection::Pane;
use super::text::{Cut, cell, pieces, row, widths};
use super::theme::Slot;
use valp_view::needs::age_text;

/// Most rows the detail under the cursor takes.
const MAX_DETAIL_ROWS: usize = 3;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let observations = &ctx.view.observations;
    let focused = ctx.selection.focus() == Pane::Observations;
    let cursor = ctx.selection.cursor(Pane::Observations);
    let columns = widths(
        area.width.saturating_sub(2),
        [
            Constraint::Length(1),
            Constraint::Fill(3),
            Constraint::Fill(2),
            Constraint::Fill(2),
            Constraint::Length(4),
            Constraint::Length(4),
            Constraint::Length(11),
            Constraint::Fill(3),
        ],
    );
    let cells = |texts: [(&str, Slot); 8]| {
        row((0..8).map(|at| {
            let cut = if matches!(at, 1..=3) {
                Cut::Middle
            } else {
                Cut::End
            };
            cell(texts[at].0, columns[at], cut, ctx.style(texts[at].1))
        }))
    };
    let header = cells(
        [
            "",
            "task",
            "work item",
            "attempt",
            "seq",
            "age",
            "status",
            "detail",
        ]
        .map(|text| (text, Slot::Muted)),
    );
    let entries = Entries::new(observations.len(), |at| {
        let observation = &observations[at];
        let under_cursor = focused && at == cursor;
        let age = if observation.seen_ms > 0 {
            age_text(observation.seen_ms, ctx.view.now_ms)
        } else {
            String::new()
        };
        let mut lines = vec![cells([
            (if under_cursor { "›" } else { "" }, Slot::Accent),
            (&observation.task_id, Slot::Base),
            (&observation.work_item_id, Slot::Base),
            (
                labels::attempt_in_task(&observation.attempt_id, &observation.task_id),
                Slot::Muted,
            ),
            (&observation.sequence.to_string(), Slot::Muted),
            (&age, Slot::Muted),
            (&observation.status, Slot::of_status(&observation.status)),
            (&observation.detail, Slot::Base),
        ])];
        if under_cursor && observation.detail.width() > usize::from(columns[7]) {
            let width = area.width.saturating_sub(4);
            for piece in pieces(&observation.detail, width, MAX_DETAIL_ROWS) {
                lines.push(list::continuation(ctx, &piece, width, Slot::Base));
            }
        }
        lines
    });
    list::render(
        frame,
        area,
        ctx,
        Listing::counted(
            ctx,
            Pane::Observations,
            Some(header),
            entries,
            "No adapter observation yet.",
        ),
    );
}
