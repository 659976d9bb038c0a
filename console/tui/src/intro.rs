//! The first-run explanation: no Leader is selected, and valp never picks one.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::span;
use super::theme::Slot;

/// Rows the explanation needs at `width` columns, with a blank row below it.
pub fn height(ctx: &Ctx, width: u16) -> u16 {
    u16::try_from(paragraph(ctx).line_count(width) + 1).unwrap_or(u16::MAX)
}

/// Draws the explanation into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    frame.render_widget(paragraph(ctx), area);
}

fn paragraph(ctx: &Ctx) -> Paragraph<'static> {
    let base = ctx.style(Slot::Base);
    let refresh = keys_text(&ctx.keymap.keys(Mode::Global, Action::Refresh));
    let again = if refresh.is_empty() {
        ".".to_owned()
    } else {
        format!(" ({refresh} observes again).")
    };
    Paragraph::new(vec![
        Line::from(span(
            "No Leader is selected for this installation.",
            ctx.style(Slot::Title),
        )),
        Line::from(vec![
            span(
                "valp never picks one for you: choose the session you supervise your agents \
                 from, then confirm. The candidates below are the Doctor's latest observation",
                base,
            ),
            span(&again, base),
        ]),
    ])
    .wrap(Wrap { trim: true })
}
