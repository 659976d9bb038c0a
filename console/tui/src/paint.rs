//! Puts a line of plain ASCII text into the frame's buffer cell by cell, the way ratatui's
//! `Line` widget would, without its grapheme segmentation.
//!
//! Drawing a `Line` segments every span into graphemes and measures each one's width, several
//! hundred instructions a cell; most of the console's rows (ids, statuses, counts) are plain
//! ASCII, where every byte is one grapheme one column wide. [`line`] draws such a line straight
//! into the cells (same symbols, same styles: the line's style over the row, then each span's
//! style over its cells) and hands any other line (wide or combining characters, an alignment
//! other than left) to ratatui. [`style`] lays a style over an area without looking each cell
//! up by its position. The snapshots of every pane are the proof that both draw the
//! same cells.

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Widget};

/// Draws `line` into the first row of `area`, as `Line`'s own rendering does.
pub fn line(buf: &mut Buffer, area: Rect, line: &Line) {
    // Any alignment puts a line exactly as wide as the area in the same place.
    let plain = (matches!(line.alignment, None | Some(Alignment::Left))
        || line.width() == usize::from(area.width))
        && line.spans.iter().all(|span| {
            span.content
                .bytes()
                .all(|byte| (0x20..0x7f).contains(&byte))
        });
    if !plain {
        line.render(area, buf);
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() || line.spans.iter().all(|span| span.content.is_empty()) {
        return;
    }
    let row = Rect { height: 1, ..area };
    style(buf, row, line.style);
    let Some(cells) = cells(buf, row.x, row.y, row.width) else {
        return;
    };
    let mut cells = cells.iter_mut();
    for span in &line.spans {
        for byte in span.content.bytes() {
            let Some(cell) = cells.next() else {
                return;
            };
            cell.set_char(char::from(byte)).set_style(span.style);
        }
    }
}

/// Draws `lines` one to a row from the top of `area` (those that fit), each as [`line`] does:
/// what `Paragraph::new(lines)` draws when every line is already cut to the width.
pub fn lines(buf: &mut Buffer, area: Rect, lines: &[Line]) {
    for (text, y) in lines.iter().zip(area.top()..area.bottom()) {
        line(
            buf,
            Rect {
                y,
                height: 1,
                ..area
            },
            text,
        );
    }
}

/// Draws a plain border around `area` in `border` style with `top` and `bottom` titles (each
/// left or right aligned: lefts from the left, rights from the right), the cells
/// `Block::bordered().border_style(border)` with those titles draws, without laying its empty
/// style over every cell of the area first. A centred title goes to the `Block` itself.
pub fn bordered(buf: &mut Buffer, area: Rect, border: Style, top: &[Line], bottom: &[Line]) {
    let centred = |titles: &[Line]| {
        titles
            .iter()
            .any(|title| title.alignment == Some(Alignment::Center))
    };
    if centred(top) || centred(bottom) {
        let mut block = Block::bordered().border_style(border);
        for title in top {
            block = block.title_top(title.clone());
        }
        for title in bottom {
            block = block.title_bottom(title.clone());
        }
        block.render(area, buf);
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let set = ratatui::symbols::border::PLAIN;
    let (right, bottom_row) = (area.right() - 1, area.bottom() - 1);
    let mut put = |x: u16, y: u16, symbol: &str| {
        if let Some([cell]) = cells(buf, x, y, 1) {
            cell.set_symbol(symbol).set_style(border);
        }
    };
    for y in area.top()..area.bottom() {
        put(area.left(), y, set.vertical_left);
        put(right, y, set.vertical_right);
    }
    for x in area.left()..area.right() {
        put(x, area.top(), set.horizontal_top);
        put(x, bottom_row, set.horizontal_bottom);
    }
    put(right, bottom_row, set.bottom_right);
    put(right, area.top(), set.top_right);
    put(area.left(), bottom_row, set.bottom_left);
    put(area.left(), area.top(), set.top_left);
    let room = Rect::new(area.x + 1, area.y, area.width.saturating_sub(2), 1);
    titles(buf, room, top);
    titles(
        buf,
        Rect {
            y: bottom_row,
            ..room
        },
        bottom,
    );
}

/// One border row's titles, placed as `Block` places them.
fn titles(buf: &mut Buffer, room: Rect, titles: &[Line]) {
    let is_right = |title: &&Line| title.alignment == Some(Alignment::Right);
    let mut lefts = room;
    for title in titles.iter().filter(|title| !is_right(title)) {
        if lefts.is_empty() {
            break;
        }
        let width = u16::try_from(title.width()).unwrap_or(u16::MAX);
        line(
            buf,
            Rect {
                width: width.min(lefts.width),
                ..lefts
            },
            title,
        );
        let advance = width.saturating_add(1);
        lefts.x = lefts.x.saturating_add(advance);
        lefts.width = lefts.width.saturating_sub(advance);
    }
    let mut rights = room;
    for title in titles.iter().filter(is_right).rev() {
        if rights.is_empty() {
            break;
        }
        let width = u16::try_from(title.width()).unwrap_or(u16::MAX);
        let x = rights.right().saturating_sub(width).max(rights.left());
        line(
            buf,
            Rect {
                x,
                width: width.min(rights.width),
                ..rights
            },
            title,
        );
        rights.width = rights.width.saturating_sub(width).saturating_sub(1);
    }
}

/// Lays `style` over every cell of `area`, as `Buffer::set_style` does, a row at a time.
pub fn style(buf: &mut Buffer, area: Rect, style: Style) {
    if style == Style::default() {
        return;
    }
    let area = area.intersection(buf.area);
    for y in area.top()..area.bottom() {
        for cell in cells(buf, area.x, y, area.width).into_iter().flatten() {
            cell.set_style(style);
        }
    }
}

/// The `width` cells of `buf` from (`x`, `y`) on, if they are all in it.
fn cells(buf: &mut Buffer, x: u16, y: u16, width: u16) -> Option<&mut [Cell]> {
    let area = buf.area;
    if x < area.x || y < area.y || x.saturating_add(width) > area.right() || y >= area.bottom() {
        return None;
    }
    let start = usize::from(y - area.y) * usize::from(area.width) + usize::from(x - area.x);
    buf.content.get_mut(start..start + usize::from(width))
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier, Style, Stylize};
    use ratatui::text::{Line, Span};

    use super::*;

    /// `line` drawn by ratatui and by [`line`] into the same `width` x 2 buffer, a row down and
    /// a column in, over a styled background.
    fn both(line: &Line, width: u16) -> (Buffer, Buffer) {
        let whole = Rect::new(0, 0, width, 2);
        let area = Rect::new(1, 1, width.saturating_sub(1), 1);
        let mut theirs = Buffer::empty(whole);
        theirs.set_style(whole, Style::new().bg(Color::Blue));
        let mut ours = theirs.clone();
        line.render(area, &mut theirs);
        super::line(&mut ours, area, line);
        (theirs, ours)
    }

    #[test]
    fn a_border_and_its_titles_are_those_a_block_draws() {
        let border = Style::new().fg(Color::Cyan);
        let title = Line::from(Span::styled(" Tasks (3) ", Style::new().bold()));
        let note = Line::from(" waiting for: review ");
        let range = Line::from(" 1–3 of 9 ").right_aligned();
        let wide = Line::from(" 界 ").right_aligned();
        let centred = Line::from("mid").centered();
        let cases: [(Vec<Line>, Vec<Line>); 6] = [
            (vec![], vec![]),
            (vec![title.clone()], vec![]),
            (vec![title.clone()], vec![note.clone(), range.clone()]),
            (vec![title.clone(), title], vec![range.clone(), wide]),
            (vec![centred], vec![note]),
            (vec![], vec![range]),
        ];
        for (top, bottom) in &cases {
            for (width, height) in [(40, 6), (12, 3), (2, 2), (1, 1), (30, 1)] {
                let area = Rect::new(1, 1, width, height);
                let whole = Rect::new(0, 0, 42, 8);
                let mut theirs = Buffer::empty(whole);
                theirs.set_style(whole, Style::new().bg(Color::Black));
                let mut ours = theirs.clone();
                let mut block = Block::bordered().border_style(border);
                for line in top {
                    block = block.title_top(line.clone());
                }
                for line in bottom {
                    block = block.title_bottom(line.clone());
                }
                block.render(area, &mut theirs);
                bordered(&mut ours, area, border, top, bottom);
                assert_eq!(ours, theirs, "{top:?} {bottom:?} in {width}x{height}");
            }
        }
    }

    #[test]
    fn lines_cut_to_the_width_are_drawn_as_a_paragraph_draws_them() {
        let lines = vec![
            Line::from(vec![
                Span::styled("epoch", Style::new().dim()),
                Span::raw(" 3"),
            ]),
            Line::from("user:alice · fenced"),
            Line::from(""),
            Line::from("one row too many"),
        ];
        let area = Rect::new(1, 1, 24, 3);
        let mut theirs = Buffer::empty(Rect::new(0, 0, 26, 5));
        let mut ours = theirs.clone();
        ratatui::widgets::Paragraph::new(lines.clone()).render(area, &mut theirs);
        super::lines(&mut ours, area, &lines);
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_style_is_laid_as_ratatui_lays_it() {
        let whole = Rect::new(0, 0, 6, 4);
        let mut theirs = Buffer::with_lines(["abcdef", "ghijkl", "mnopqr", "stuvwx"]);
        theirs.set_style(Rect::new(0, 0, 6, 2), Style::new().red().bold());
        let mut ours = theirs.clone();
        for (area, over) in [
            (Rect::new(1, 1, 3, 2), Style::new().on_blue().not_bold()),
            (Rect::new(4, 2, 9, 9), Style::new().italic()),
            (Rect::new(0, 0, 2, 2), Style::default()),
            (Rect::new(7, 7, 2, 2), Style::new().green()),
        ] {
            theirs.set_style(area, over);
            style(&mut ours, area, over);
        }
        assert_eq!(ours, theirs);
        assert_eq!(ours.area, whole);
    }

    #[test]
    fn the_cells_are_those_ratatui_draws() {
        let lines = [
            Line::from(vec![
                Span::styled("task-001 ", Style::new().fg(Color::Yellow)),
                Span::styled("executing", Style::new().add_modifier(Modifier::BOLD)),
            ]),
            Line::from("plain").style(Style::new().reversed()),
            Line::from("cut off at the edge of the area"),
            Line::from(vec![Span::raw(""), Span::raw("")]),
            Line::from(""),
            Line::from(vec![Span::raw("wide: "), Span::raw("界界 é\u{301}")]),
            Line::from("right").right_aligned(),
            Line::from("centred").centered().red(),
        ];
        for line in &lines {
            for width in [0, 1, 4, 12, 40] {
                let (theirs, ours) = both(line, width);
                assert_eq!(ours, theirs, "{line:?} in {width}");
            }
        }
    }
}
