//! The footer: the last confirmation or refusal (wrapped, never cut), and key hints generated
//! from the keymap.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::app::{Ctx, Notice};
use super::keymap::keys_text;
use super::text::{fit, span};
use super::theme::Slot;

/// Rows the footer needs at `width` columns.
pub fn height(ctx: &Ctx, notice: Option<&Notice>, width: u16) -> u16 {
    let rows = notice_paragraph(ctx, notice).line_count(width).max(1) + 1;
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// Draws the notice and the hints of the current mode into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, notice: Option<&Notice>) {
    let [notice_area, hints_area] = area.layout(&Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(1),
    ]));
    frame.render_widget(notice_paragraph(ctx, notice), notice_area);

    let mut spans = Vec::new();
    for (action, keys) in ctx.keymap.hints(ctx.mode) {
        if !spans.is_empty() {
            spans.push(span("  ", ctx.style(Slot::Muted)));
        }
        spans.push(span(&keys_text(&keys), ctx.style(Slot::Key)));
        spans.push(span(
            &format!(" {}", action.label()),
            ctx.style(Slot::Muted),
        ));
    }
    let hints = fit(Line::from(spans), hints_area.width);
    frame.render_widget(Paragraph::new(hints), hints_area);
}

fn notice_paragraph(ctx: &Ctx, notice: Option<&Notice>) -> Paragraph<'static> {
    let line = match notice {
        Some(Notice::Done(message)) => Line::from(span(message, ctx.style(Slot::AlertInfo))),
        Some(Notice::Refused(refusal)) => Line::from(span(
            &format!("{}: {}", refusal.code, refusal.message),
            ctx.style(Slot::AlertError),
        )),
        None => Line::default(),
    };
    Paragraph::new(line).wrap(Wrap { trim: true })
}
