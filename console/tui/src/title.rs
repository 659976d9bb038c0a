//! The title line: installation, lane status and control root.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::app::Ctx;
use super::text::{fit, span};
use super::theme::Slot;

/// Draws the title line into `area` (one row).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let view = ctx.view;
    let muted = ctx.style(Slot::Muted);
    let line = Line::from(vec![
        span("valp", ctx.style(Slot::Title)),
        span("  installation ", muted),
        span(&view.installation_id, ctx.style(Slot::Base)),
        span("  lane ", muted),
        span(&view.lane.status, ctx.style(Slot::Base)),
        span("  root ", muted),
        span(&view.root, ctx.style(Slot::Base)),
    ]);
    frame.render_widget(Paragraph::new(fit(line, area.width)), area);
}
