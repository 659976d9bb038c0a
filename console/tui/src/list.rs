//! A bordered pane of rows with a cursor: what the task panes have in common.
//!
//! An entry is one or more lines (a rejected file takes two). The pane scrolls so that the
//! cursor's entry is visible, and says which entries it shows when it cannot show them all; the
//! focused pane has the focus border and its cursor entry drawn in the selection style.
//!
//! Entries are built only when drawn ([`Entries`]): a pane over 10,000 work items builds the
//! few dozen rows its area shows, so a frame costs what is on screen, not what is in the view.

use std::collections::VecDeque;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::app::Ctx;
use super::paint;
use super::selection::Pane;
use super::text::{Cut, cell, fit, row, span};
use super::theme::Slot;

/// A pane's entries, each built (as one or more lines) only if it is drawn.
pub struct Entries<'a> {
    count: usize,
    build: Box<dyn Fn(usize) -> Vec<Line<'static>> + 'a>,
}

impl<'a> Entries<'a> {
    /// `count` entries; `build(at)` makes entry `at` (`at < count`).
    pub fn new(count: usize, build: impl Fn(usize) -> Vec<Line<'static>> + 'a) -> Self {
        Self {
            count,
            build: Box::new(build),
        }
    }

    /// How many entries there are.
    pub const fn len(&self) -> usize {
        self.count
    }

    /// Whether there is none.
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    fn entry(&self, at: usize) -> Vec<Line<'static>> {
        (self.build)(at)
    }
}

/// One pane's rows, ready to draw.
pub struct Listing<'a> {
    /// The title, e.g. `Tasks (2)`.
    pub title: String,
    /// A line for the bottom border (cut to fit), if any.
    pub note: Option<Line<'static>>,
    /// Whether the pane has the focus.
    pub focused: bool,
    /// Column headings, kept on top while the rows scroll.
    pub header: Option<Line<'static>>,
    /// The entries, each one or more lines.
    pub entries: Entries<'a>,
    /// The cursor's entry.
    pub cursor: usize,
    /// What an empty pane says.
    pub empty: String,
    /// The pane it lists, so a click on a row selects it.
    pub pane: Option<Pane>,
}

impl<'a> Listing<'a> {
    /// `pane`'s listing, titled with the pane's name and its number of entries, with the pane's
    /// focus and cursor and no bottom note: what the panes that list one kind of record share.
    pub fn counted(
        ctx: &Ctx,
        pane: Pane,
        header: Option<Line<'static>>,
        entries: Entries<'a>,
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
    let border = ctx.style(border);
    let room = area.width.saturating_sub(2);
    let top = [fit(
        Line::from(span(
            &format!(" {} ", listing.title),
            ctx.style(Slot::Title),
        )),
        room,
    )];
    let mut bottom: Vec<Line> = listing
        .note
        .map(|note| fit(note, room))
        .into_iter()
        .collect();
    let inner = Block::bordered().inner(area);
    if listing.entries.is_empty() {
        paint::bordered(frame.buffer_mut(), area, border, &top, &bottom);
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
    let (start, shown) = window(&listing.entries, cursor, visible);
    let selection = ctx.style(Slot::Selection);
    let mut end = start;
    for (at, entry) in (start..).zip(shown) {
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
        bottom.push(fit(Line::from(span(&shown, ctx.style(Slot::Muted))), room).right_aligned());
    }
    // The border and titles straight into the cells (see `paint`).
    paint::bordered(frame.buffer_mut(), area, border, &top, &bottom);
    // Line by line rather than as a `Paragraph`: the lines are already cut to the width, so
    // the paragraph's reflow (a second pass over every grapheme of the pane) buys nothing; and
    // plain ASCII lines straight into the cells (see `paint`).
    for (line, y) in lines.into_iter().zip(inner.top()..inner.bottom()) {
        paint::line(
            frame.buffer_mut(),
            Rect::new(inner.x, y, inner.width, 1),
            &line,
        );
    }
}

/// The entries to draw, built once each, and the index of the first: `cursor`'s entry with as
/// many entries before it as fit in `visible` rows, then the entries after it until the rows are
/// full (the last one may not fit whole).
fn window(
    entries: &Entries,
    cursor: usize,
    visible: usize,
) -> (usize, VecDeque<Vec<Line<'static>>>) {
    let first = entries.entry(cursor);
    let mut used = first.len();
    let mut shown = VecDeque::from([first]);
    let mut start = cursor;
    while start > 0 {
        let before = entries.entry(start - 1);
        if used + before.len() > visible {
            break;
        }
        used += before.len();
        start -= 1;
        shown.push_front(before);
    }
    let mut next = cursor + 1;
    while used < visible && next < entries.len() {
        let after = entries.entry(next);
        used += after.len();
        shown.push_back(after);
        next += 1;
    }
    (start, shown)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use ratatui::text::Line;

    use super::{Entries, window};

    /// `count` entries of `height` lines each, each line naming its entry.
    fn entries(count: usize, height: usize) -> Entries<'static> {
        Entries::new(count, move |at| vec![Line::from(at.to_string()); height])
    }

    fn start(entries: &Entries, cursor: usize, visible: usize) -> usize {
        window(entries, cursor, visible).0
    }

    #[test]
    fn the_cursor_entry_is_always_shown() {
        let one = entries(10, 1);
        assert_eq!(start(&one, 0, 4), 0);
        assert_eq!(start(&one, 3, 4), 0);
        assert_eq!(start(&one, 4, 4), 1);
        assert_eq!(start(&one, 9, 1), 9);
        let two = entries(5, 2);
        assert_eq!(start(&two, 4, 4), 3);
        assert_eq!(
            start(&two, 4, 1),
            4,
            "an entry taller than the pane still starts"
        );
        let (_, shown) = window(&one, 4, 4);
        let names: Vec<String> = shown.iter().map(|entry| entry[0].to_string()).collect();
        assert_eq!(names, ["1", "2", "3", "4"]);
        let (_, shown) = window(&one, 0, 4);
        assert_eq!(shown.len(), 4, "the rows after the cursor fill the pane");
    }

    #[test]
    fn only_what_fits_is_built() {
        let built = Cell::new(0);
        let many = Entries::new(10_000, |at| {
            built.set(built.get() + 1);
            vec![Line::from(at.to_string())]
        });
        let (start, shown) = window(&many, 5_000, 20);
        assert_eq!((start, shown.len()), (4_981, 20));
        // The twenty shown, and the one before them that did not fit.
        assert_eq!(built.get(), 21);
    }
}
