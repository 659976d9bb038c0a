//! The one place display text becomes spans: a last control-character filter, and cutting text
//! to a width with an ellipsis.
//!
//! Text in a [`ConsoleView`](valp_view::ConsoleView) was sanitized at ingest, so the filter
//! should never fire; it is here so that a bug upstream still cannot reach the terminal as an
//! escape sequence. Every control character (C0, DEL, C1) and bidirectional control becomes
//! U+FFFD, visibly. Panes build every span through [`span`] or [`cell`].

use std::borrow::Cow;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What replaces a character that must not reach the terminal.
const REPLACEMENT: char = '\u{fffd}';
/// What marks a cut.
const ELLIPSIS: char = '…';

/// Whether `ch` must never reach the terminal (nor be typed into a text field).
pub fn is_unsafe(ch: char) -> bool {
    ch.is_control() || matches!(ch, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character replaced.
fn clean(text: &str) -> Cow<'_, str> {
    if text.chars().any(is_unsafe) {
        Cow::Owned(
            text.chars()
                .map(|ch| if is_unsafe(ch) { REPLACEMENT } else { ch })
                .collect(),
        )
    } else {
        Cow::Borrowed(text)
    }
}

/// A span of `text`, filtered.
pub fn span(text: &str, style: Style) -> Span<'static> {
    Span::styled(clean(text).into_owned(), style)
}

/// Where a cell loses characters when it is too wide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// At the end (sentences, summaries).
    End,
    /// In the middle (ids and paths, whose ends tell them apart).
    Middle,
}

/// A span of `text`, filtered, cut to `width` columns and padded to exactly `width`.
pub fn cell(text: &str, width: u16, cut: Cut, style: Style) -> Span<'static> {
    let width = usize::from(width);
    let text = clean(text);
    let mut fitted = if text.width() <= width {
        text.into_owned()
    } else {
        match cut {
            Cut::Middle if width >= 5 => {
                let budget = width - 1;
                let tail = take_width(text.chars().rev(), budget / 2);
                let head = take_width(text.chars(), budget - budget / 2);
                format!("{head}{ELLIPSIS}{}", tail.chars().rev().collect::<String>())
            }
            _ if width == 0 => String::new(),
            _ => format!("{}{ELLIPSIS}", take_width(text.chars(), width - 1)),
        }
    };
    let padding = width.saturating_sub(fitted.width());
    fitted.extend(std::iter::repeat_n(' ', padding));
    Span::styled(fitted, style)
}

/// `text`, filtered, in pieces of at most `width` columns, broken after a space where one is at
/// hand (at most `max` pieces, the last one ending in an ellipsis when text is left over): how
/// a focused row shows all of a long text.
pub fn pieces(text: &str, width: u16, max: usize) -> Vec<String> {
    let width = usize::from(width);
    if width == 0 || max == 0 {
        return Vec::new();
    }
    let text = clean(text);
    let mut rest: &str = &text;
    let mut pieces = Vec::new();
    while !rest.is_empty() && pieces.len() < max {
        let mut piece = take_width(rest.chars(), width);
        if piece.is_empty() {
            // A character wider than the whole width.
            break;
        }
        let ends_inside_a_word = rest.len() > piece.len()
            && !piece.ends_with(' ')
            && !rest[piece.len()..].starts_with(' ');
        if ends_inside_a_word && let Some(space) = piece.rfind(' ') {
            piece.truncate(space + 1);
        }
        rest = rest[piece.len()..].trim_start_matches(' ');
        pieces.push(piece.trim_end_matches(' ').to_owned());
    }
    if !rest.is_empty()
        && let Some(last) = pieces.last_mut()
    {
        let kept = take_width(last.chars(), width - 1);
        *last = format!("{kept}{ELLIPSIS}");
    }
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    pieces
}

/// The longest prefix of `chars` that fits in `width` columns.
fn take_width(chars: impl Iterator<Item = char>, width: usize) -> String {
    let mut used = 0;
    chars
        .take_while(|ch| {
            used += ch.width().unwrap_or(0);
            used <= width
        })
        .collect()
}

/// `line` cut to `width` columns, with an ellipsis (in the style of the span it cuts) when it
/// loses anything. The spans must come from [`span`] or [`cell`].
pub fn fit(line: Line<'static>, width: u16) -> Line<'static> {
    let width = usize::from(width);
    if line.width() <= width {
        return line;
    }
    let mut room = width.saturating_sub(1);
    let mut spans = Vec::new();
    for span in line.spans {
        let kept = take_width(span.content.chars(), room);
        room -= kept.width();
        let full = kept.len() == span.content.len();
        spans.push(Span::styled(kept, span.style));
        if !full {
            break;
        }
    }
    if width > 0
        && let Some(last) = spans.last_mut()
    {
        last.content.to_mut().push(ELLIPSIS);
    }
    Line::from(spans).style(line.style)
}

/// The widths of columns laid out across `total` columns with one space between them.
pub fn widths<const N: usize>(total: u16, constraints: [Constraint; N]) -> [u16; N] {
    let areas: [Rect; N] = Layout::horizontal(constraints)
        .spacing(1)
        .areas(Rect::new(0, 0, total, 1));
    areas.map(|area| area.width)
}

/// Several differently styled `parts` in one cell: one space apart, filtered, cut to `width`
/// columns and padded to exactly `width` (join them into a row with [`row_of`]).
pub fn group(parts: &[(&str, Style)], width: u16) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    for (text, style) in parts {
        if !spans.is_empty() {
            spans.push(Span::raw(" "));
        }
        spans.push(span(text, *style));
    }
    let mut line = fit(Line::from(spans), width);
    let padding = usize::from(width).saturating_sub(line.width());
    if padding > 0 {
        line.spans.push(Span::raw(" ".repeat(padding)));
    }
    line.spans
}

/// Cells of one or more spans each (from [`cell`] or [`group`]) joined into a row, one space
/// apart.
pub fn row_of(cells: impl IntoIterator<Item = Vec<Span<'static>>>) -> Line<'static> {
    let mut spans = Vec::new();
    for cell in cells {
        if !spans.is_empty() {
            spans.push(Span::raw(" "));
        }
        spans.extend(cell);
    }
    Line::from(spans)
}

/// Cells joined into a row, one space apart.
pub fn row(cells: impl IntoIterator<Item = Span<'static>>) -> Line<'static> {
    let mut spans = Vec::new();
    for cell in cells {
        if !spans.is_empty() {
            spans.push(Span::raw(" "));
        }
        spans.push(cell);
    }
    Line::from(spans)
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Constraint;
    use ratatui::style::Style;
    use ratatui::text::Line;

    use super::{Cut, cell, fit, group, pieces, row_of, span, widths};

    fn cut(text: &str, width: u16, how: Cut) -> String {
        cell(text, width, how, Style::new()).content.into_owned()
    }

    #[test]
    fn cells_are_cut_with_an_ellipsis_and_padded() {
        assert_eq!(cut("abc", 5, Cut::End), "abc  ");
        assert_eq!(cut("abcdefgh", 5, Cut::End), "abcd…");
        assert_eq!(
            cut("tmux:/tmp/tmux-1000/default:%3", 12, Cut::Middle),
            "tmux:/…lt:%3"
        );
        assert_eq!(cut("abcdef", 3, Cut::Middle), "ab…");
        assert_eq!(cut("abcdef", 1, Cut::End), "…");
        assert_eq!(cut("abcdef", 0, Cut::End), "");
        assert_eq!(cut("日本語テキスト", 6, Cut::End), "日本… ");
    }

    #[test]
    fn control_characters_never_survive() {
        let hostile = "a\u{1b}[31mb\u{7}c\u{9b}d\u{202e}e\u{0}";
        assert_eq!(
            span(hostile, Style::new()).content,
            "a\u{fffd}[31mb\u{fffd}c\u{fffd}d\u{fffd}e\u{fffd}"
        );
        assert!(!cut(hostile, 4, Cut::Middle).chars().any(char::is_control));
    }

    #[test]
    fn lines_are_cut_across_spans() {
        let line = Line::from(vec![
            span("hello ", Style::new()),
            span("world", Style::new()),
        ]);
        assert_eq!(fit(line.clone(), 8).to_string(), "hello w…");
        assert_eq!(fit(line.clone(), 11).to_string(), "hello world");
        assert_eq!(fit(line, 0).to_string(), "");
    }

    #[test]
    fn long_text_comes_in_pieces() {
        assert_eq!(pieces("abcdefgh", 3, 5), ["abc", "def", "gh"]);
        assert_eq!(
            pieces("the linter stopped and waits", 12, 5),
            ["the linter", "stopped and", "waits"]
        );
        assert_eq!(pieces("one two", 3, 5), ["one", "two"]);
        assert_eq!(pieces("a verylongword", 6, 5), ["a", "verylo", "ngword"]);
        assert_eq!(pieces("abcdefgh", 3, 2), ["abc", "de…"]);
        assert_eq!(pieces("", 3, 2), [""]);
        assert_eq!(pieces("abc", 0, 2), Vec::<String>::new());
        assert_eq!(pieces("日本語", 1, 2), [""]);
        assert_eq!(pieces("a\u{1b}b", 2, 2), ["a\u{fffd}", "b"]);
    }

    #[test]
    fn groups_are_cut_and_padded_like_cells() {
        let parts = [("FENCED", Style::new()), ("INTERRUPTED", Style::new())];
        let line = row_of([group(&parts, 11), group(&parts[..1], 8)]);
        assert_eq!(line.to_string(), "FENCED INT… FENCED  ");
        assert_eq!(row_of([group(&parts, 0)]).to_string(), "");
    }

    #[test]
    fn widths_split_like_ratatui_layouts() {
        assert_eq!(
            widths(20, [Constraint::Length(4), Constraint::Fill(1)]),
            [4, 15]
        );
        assert_eq!(
            widths(0, [Constraint::Fill(1), Constraint::Fill(1)]),
            [0, 0]
        );
    }
}
