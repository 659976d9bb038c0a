//! A bordered popup over the screen whose text scrolls when it is taller than the terminal:
//! the help overlay and the detail view.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Padding, Paragraph};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::span;
use super::theme::Slot;

/// Widest a popup gets.
pub const MAX_WIDTH: u16 = 100;

/// Columns a popup's text has on a terminal `width` columns wide (borders and padding off).
pub const fn text_width(width: u16) -> u16 {
    min(width, MAX_WIDTH).saturating_sub(4)
}

const fn min(left: u16, right: u16) -> u16 {
    if left < right { left } else { right }
}

/// Draws `lines` in a popup titled `title` centred over `area`, scrolled down by `scroll`
/// lines (kept within the text), with `mode`'s close and scroll keys on its bottom border;
/// returns the largest scroll the text allows at this size.
pub fn render(
    frame: &mut Frame,
    area: Rect,
    ctx: &Ctx,
    (title, mode): (&str, Mode),
    lines: Vec<Line<'static>>,
    scroll: usize,
) -> usize {
    let popup = area.centered(
        Constraint::Length(min(area.width, MAX_WIDTH)),
        Constraint::Length(u16::try_from(lines.len() + 2).unwrap_or(u16::MAX)),
    );
    let close = keys_text(&ctx.keymap.keys(mode, Action::Cancel));
    let mut block = Block::bordered()
        .border_style(ctx.style(Slot::FocusBorder))
        .padding(Padding::horizontal(1))
        .title(span(&format!(" {title} "), ctx.style(Slot::Title)))
        .title_bottom(Line::from(vec![
            span(&format!(" {close}"), ctx.style(Slot::Key)),
            span(" close ", ctx.style(Slot::Muted)),
        ]));
    let inner = block.inner(popup);
    let height = usize::from(inner.height);
    let total = lines.len();
    let most = total.saturating_sub(height);
    let scroll = scroll.min(most);
    if most > 0 {
        let scrolls = keys_text(&ctx.keymap.keys(mode, Action::Down));
        block = block.title_bottom(
            Line::from(span(
                &format!(
                    " {scrolls} scroll · {}–{} of {total} ",
                    scroll + 1,
                    (scroll + height).min(total)
                ),
                ctx.style(Slot::Muted),
            ))
            .right_aligned(),
        );
    }
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);
    let shown: Vec<Line<'static>> = lines.into_iter().skip(scroll).take(height).collect();
    frame.render_widget(Paragraph::new(shown), inner);
    most
}
