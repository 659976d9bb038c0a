//! The Rejected files pane: adapter and inbox files the System did not act on, newest first,
//! each as its path and, below it, why. The reason under the cursor of the focused pane is shown
//! whole, over a few rows.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::app::Ctx;
use super::list::{self, Entries, Listing};
use super::selection::Pane;
use super::text::{Cut, cell, pieces, row};
use super::theme::Slot;

/// Most rows the reason under the cursor takes.
const MAX_REASON_ROWS: usize = 4;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let rejections = &ctx.view.rejections;
    let focused = ctx.selection.focus() == Pane::Rejections;
    let cursor = ctx.selection.cursor(Pane::Rejections);
    let text_width = area.width.saturating_sub(4);
    let entries = Entries::new(rejections.len(), |at| {
        let rejection = &rejections[at];
        let under_cursor = focused && at == cursor;
        let reason = if under_cursor {
            pieces(&rejection.reason, text_width, MAX_REASON_ROWS)
        } else {
            vec![rejection.reason.clone()]
        };
        let path = row([
            cell(
                if under_cursor { "›" } else { "" },
                1,
                Cut::End,
                ctx.style(Slot::Accent),
            ),
            cell(
                &rejection.path,
                text_width,
                Cut::Middle,
                ctx.style(Slot::AlertWarn),
            ),
        ]);
        std::iter::once(path)
            .chain(
                reason
                    .iter()
                    .map(|piece| list::continuation(ctx, piece, text_width, Slot::Muted)),
            )
            .collect()
    });
    list::render(
        frame,
        area,
        ctx,
        Listing::counted(
            ctx,
            Pane::Rejections,
            None,
            entries,
            "No file was rejected.",
        ),
    );
}
