//! The title line: how many needs wait for the Leader, installation, lane status (and
//! `READ-ONLY` while the Leader session is not re-proven) and control root.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::app::Ctx;
use super::needs;
use super::text::{fit, span};
use super::theme::Slot;
use valp_view::SessionCheck;

/// Draws the title line into `area` (one row).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let view = ctx.view;
    let muted = ctx.style(Slot::Muted);
    let waiting = needs::waiting(&view.needs);
    let mut spans = vec![span("valp", ctx.style(Slot::Title))];
    if waiting > 0 {
        spans.push(span(
            &format!(
                "  {waiting} need{} you",
                if waiting == 1 { "s" } else { "" }
            ),
            ctx.style(Slot::StatusAttention),
        ));
    }
    if matches!(view.lane.session, SessionCheck::Unproven { .. }) {
        spans.push(span("  READ-ONLY", ctx.style(Slot::AlertWarn)));
    }
    if !ctx.filter.is_empty() {
        spans.push(span(
            &format!("  filter /{}", ctx.filter),
            ctx.style(Slot::Accent),
        ));
    }
    spans.extend([
        span("  installation ", muted),
        span(&view.installation_id, ctx.style(Slot::Base)),
        span("  lane ", muted),
        span(&view.lane.status, ctx.style(Slot::Base)),
        span("  root ", muted),
        span(&view.root, ctx.style(Slot::Base)),
    ]);
    let line = Line::from(spans);
    frame.render_widget(Paragraph::new(fit(line, area.width)), area);
}
