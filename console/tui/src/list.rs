//! A bordered pane of rows with a cursor: what the task panes have in common.
//!
//! An entry is one or more lines (a rejected file takes two). The pane scrolls so that the
//! cursor's entry is visible, and says which entries it shows when it cannot show them all; the
//! focused pane has the focus border and its cursor entry drawn in the selection style.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::app::Ctx;
use super::selection::Pane;
use super::text::{Cut, cell, fit, row, span};
use super::theme::Slot;

/// One pane's rows, ready to draw.
pub struct Listing {
    /// The title, e.g. `Tasks (2)`.
    pub title: String,
    /// A line for the bottom border (cut to fit), if any.
    pub note: Option<Line<'static>>,
    /// Whether the pane has the focus.
    pub focused: bool,
    /// Column headings, kept on top while the rows scroll.
    pub header: Option<Line<'static>>,
    /// The entries, each one or more lines.
    pub entries: Vec<Vec<Line<'static>>>,
    /// The cursor's entry.
    pub cursor: usize,
    /// What an empty pane says.
    pub empty: String,
    /// The pane it lists, so a click on a row selects it.
    pub pane: Option<Pane>,
}

impl Listing {
    /// `pane`'s listing, titled with the pane's name and its number of entries, with the pane's
    /// focus and cursor and no bottom note: what the panes that list one kind of record share.
    pub fn counted(
        ctx: &Ctx,
        pane: Pane,
        header: Option<Line<'static>>,
        entries: Vec<Vec<Line<'static>>>,
        empty: &str,
    ) -> Self {
        Self {
            title: format!("{} ({})", pane.title(), entries.len()),
            note: None,
            focused: ctx.selection.focus() == pane,
            header,
            entries,
            cursor: ctx.selection.cursor(pane),
            empty: empty.to_owned(),
            pane: Some(pane),
        }
    }
}

/// A line that goes on with the entry above it: a blank marker column, then `text` in `slot`,
/// cut to `width`.
pub fn continuation(ctx: &Ctx, text: &str, width: u16, slot: Slot) -> Line<'static> {
    row([
        cell("", 1, Cut::End, ctx.style(Slot::Base)),
        cell(text, width, Cut::End, ctx.style(slot)),
    ])
}

/// Draws `listing` into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, listing: Listing) {
    let border = if listing.focused {
        Slot::FocusBorder
    } else {
        Slot::Border
    };
    let room = area.width.saturating_sub(2);
    let mut block = Block::bordered().border_style(ctx.style(border)).title(fit(
        Line::from(span(
            &format!(" {} ", listing.title),
            ctx.style(Slot::Title),
        )),
        room,
    ));
    if let Some(note) = listing.note {
        block = block.title_bottom(fit(note, room));
    }
    let inner = block.inner(area);
    if listing.entries.is_empty() {
        frame.render_widget(block, area);
        let empty = Paragraph::new(Line::from(span(&listing.empty, ctx.style(Slot::Muted))))
            .wrap(Wrap { trim: true });
        frame.render_widget(empty, inner);
        return;
    }

    let mut lines = Vec::new();
    if let Some(header) = listing.header {
        lines.push(header);
    }
    let visible = usize::from(inner.height).saturating_sub(lines.len()).max(1);
    let count = listing.entries.len();
    let cursor = listing.cursor.min(count - 1);
    let start = first_shown(&listing.entries, cursor, visible);
    let selection = ctx.style(Slot::Selection);
    let mut end = start;
    for (at, entry) in listing.entries.into_iter().enumerate().skip(start) {
        let rows = entry.len();
        if let Some(pane) = listing.pane {
            // Where the entry is drawn, for clicks (what falls below the pane is never hit).
            let top = inner.y + u16::try_from(lines.len()).unwrap_or(u16::MAX);
            let area = Rect::new(inner.x, top, inner.width, u16::try_from(rows).unwrap_or(1))
                .intersection(inner);
            ctx.row_areas.borrow_mut().push((pane, area, at));
        }
        for line in entry {
            let line = fit(line, inner.width);
            lines.push(if listing.focused && at == cursor {
                line.style(selection)
            } else {
                line
            });
        }
        if lines.len() <= usize::from(inner.height) || rows > visible {
            end = at + 1;
        }
        if lines.len() >= usize::from(inner.height) {
            break;
        }
    }
    if start > 0 || end < count {
        let shown = format!(" {}–{} of {count} ", start + 1, end.max(start + 1));
        block = block.title_bottom(
            fit(Line::from(span(&shown, ctx.style(Slot::Muted))), room).right_aligned(),
        );
    }
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The first entry to draw so that `cursor`'s entry fits in `visible` rows with as many entries
/// before it as fit.
fn first_shown(entries: &[Vec<Line<'static>>], cursor: usize, visible: usize) -> usize {
    let mut start = cursor;
    let mut used = entries[cursor].len();
    while start > 0 && used + entries[start - 1].len() <= visible {
        start -= 1;
        used += entries[start].len();
    }
    start
}

#[cfg(test)]
mod tests {
    use ratatui::text::Line;

    use super::first_shown;

    #[test]
    fn the_cursor_entry_is_always_shown() {
        let one = |count: usize| vec![vec![Line::default()]; count];
        assert_eq!(first_shown(&one(10), 0, 4), 0);
        assert_eq!(first_shown(&one(10), 3, 4), 0);
        assert_eq!(first_shown(&one(10), 4, 4), 1);
        assert_eq!(first_shown(&one(10), 9, 1), 9);
        let two = vec![vec![Line::default(); 2]; 5];
        assert_eq!(first_shown(&two, 4, 4), 3);
        assert_eq!(
            first_shown(&two, 4, 1),
            4,
            "an entry taller than the pane still starts"
        );
    }
}
