//! The Activity pane: what the System did lately (proposals and their verdicts, launches),
//! newest first. The line under the cursor of the focused pane is shown whole, over a few rows.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::app::Ctx;
use super::list::{self, Entries, Listing};
use super::selection::Pane;
use super::text::{Cut, cell, pieces, row};
use super::theme::Slot;

/// Most rows the line under the cursor takes.
const MAX_ROWS: usize = 4;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let activity = &ctx.view.activity;
    let focused = ctx.selection.focus() == Pane::Activity;
    let cursor = ctx.selection.cursor(Pane::Activity);
    let text_width = area.width.saturating_sub(4);
    let entries = Entries::new(activity.len(), |at| {
        let line = &activity[at];
        if focused && at == cursor {
            pieces(line, text_width, MAX_ROWS)
                .iter()
                .enumerate()
                .map(|(piece_at, piece)| {
                    let marker = if piece_at == 0 { "›" } else { "" };
                    row([
                        cell(marker, 1, Cut::End, ctx.style(Slot::Accent)),
                        cell(piece, text_width, Cut::End, ctx.style(Slot::Base)),
                    ])
                })
                .collect()
        } else {
            vec![row([
                cell("", 1, Cut::End, ctx.style(Slot::Accent)),
                cell(line, text_width, Cut::End, ctx.style(Slot::Base)),
            ])]
        }
    });
    list::render(
        frame,
        area,
        ctx,
        Listing::counted(ctx, Pane::Activity, None, entries, "Nothing yet."),
    );
}
