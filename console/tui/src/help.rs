//! The help overlay: the whole keymap, mode by mode, generated from the keymap itself, in one
//! column whose descriptions wrap (never cut) and which scrolls when it is taller than the
//! terminal (80x24 among others). Up and down, the page keys, the ends and the two focus moves
//! share a row.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Key, Mode, keys_text};
use super::overlay;
use super::text::{Cut, cell, fit, pieces, row, span};
use super::theme::Slot;

/// Columns for the keys of one row.
const KEYS_WIDTH: u16 = 14;
/// Actions shown on one row, with what the row says.
const PAIRS: [(Action, Action, &str); 4] = [
    (Action::Up, Action::Down, "move the cursor up / down"),
    (
        Action::PageUp,
        Action::PageDown,
        "move the cursor a page up / down",
    ),
    (Action::First, Action::Last, "move to the first / last row"),
    (
        Action::NextPane,
        Action::PreviousPane,
        "focus the next / previous pane (or field)",
    ),
];

/// The rows of `mode`, in keymap order, pairs merged into the first one's row.
fn rows(ctx: &Ctx, mode: Mode) -> Vec<(String, &'static str)> {
    let table = ctx.keymap.table(mode);
    let keys_of = |wanted: Action| -> Option<&Vec<Key>> {
        table
            .iter()
            .find(|(action, _)| *action == wanted)
            .map(|(_, keys)| keys)
    };
    let mut rows = Vec::new();
    for (action, keys) in &table {
        let pair = PAIRS.iter().find(|(first, second, _)| {
            (*first == *action || *second == *action)
                && keys_of(*first).is_some()
                && keys_of(*second).is_some()
        });
        match pair {
            Some((first, second, what)) if first == action => {
                let second_keys = keys_of(*second).map_or_else(String::new, |k| keys_text(k));
                rows.push((format!("{} {second_keys}", keys_text(keys)), *what));
            }
            Some(_) => {}
            None => rows.push((keys_text(keys), action.describe())),
        }
    }
    rows
}

/// Draws the overlay centred over `area`, scrolled down by `scroll` lines (kept within the
/// text); returns the largest scroll the text allows at this size.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, scroll: usize) -> usize {
    let text_width = overlay::text_width(area.width);
    let describe_width = text_width.saturating_sub(KEYS_WIDTH + 1);
    let mut lines = Vec::new();
    for mode in Mode::ALL {
        let rows = rows(ctx, mode);
        if rows.is_empty() {
            continue;
        }
        lines.push(fit(
            Line::from(span(mode.title(), ctx.style(Slot::Title))),
            text_width,
        ));
        for (keys, what) in rows {
            // A description wraps under itself rather than being cut.
            for (at, piece) in pieces(what, describe_width, usize::MAX).iter().enumerate() {
                let keys = if at == 0 { keys.as_str() } else { "" };
                lines.push(row([
                    cell(keys, KEYS_WIDTH, Cut::End, ctx.style(Slot::Key)),
                    cell(piece, describe_width, Cut::End, ctx.style(Slot::Base)),
                ]));
            }
        }
    }
    overlay::render(frame, area, ctx, ("Keys", Mode::Help), lines, scroll)
}
