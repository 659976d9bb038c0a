//! The read-only banner: why the bound session was not re-proven, and the two explicit ways out.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::span;
use super::theme::Slot;
use valp_view::SessionCheck;

/// Rows the banner needs at `width` columns, borders included.
pub fn height(ctx: &Ctx, width: u16) -> u16 {
    let rows = paragraph(ctx).line_count(width.saturating_sub(2));
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// Draws the banner into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    frame.render_widget(paragraph(ctx), area);
}

fn paragraph(ctx: &Ctx) -> Paragraph<'static> {
    let warn = ctx.style(Slot::AlertWarn);
    let block = Block::bordered()
        .border_style(warn)
        .title(span(" Read-only ", warn));
    let reason = match &ctx.view.lane.session {
        SessionCheck::Unproven { reason } => reason.as_str(),
        SessionCheck::Unbound | SessionCheck::Reopened { .. } => "",
    };
    let mut lines = vec![Line::from(span(
        &format!("Leader session not re-proven: {reason}. The console is read-only."),
        warn,
    ))];
    let principal = ctx
        .view
        .lane
        .leader
        .as_ref()
        .map_or("the Leader's principal", |leader| &leader.principal_id);
    for (action, what) in [
        (
            Action::Rebind,
            format!("rebind {principal} to a newly observed session"),
        ),
        (Action::SelectOther, "select another candidate".to_owned()),
    ] {
        let keys = ctx.keymap.keys(Mode::ReadOnly, action);
        if !keys.is_empty() {
            lines.push(Line::from(vec![
                span(&keys_text(&keys), ctx.style(Slot::Key)),
                span(&format!("  {what}"), ctx.style(Slot::Base)),
            ]));
        }
    }
    Paragraph::new(lines).block(block).wrap(Wrap { trim: true })
}
