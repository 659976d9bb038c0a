//! The help overlay: the whole keymap, mode by mode, generated from the keymap itself. Up and
//! down, and the two focus moves, share a row.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Padding, Paragraph};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Key, Mode, keys_text};
use super::text::{Cut, cell, fit, row, span};
use super::theme::Slot;

/// Widest the overlay gets.
const MAX_WIDTH: u16 = 84;
/// Columns for the keys of one row.
const KEYS_WIDTH: u16 = 14;
/// Narrowest inner width that still takes two columns of sections.
const TWO_COLUMNS_FROM: u16 = 60;
/// Actions shown on one row, with what the row says.
const PAIRS: [(Action, Action, &str); 2] = [
    (Action::Up, Action::Down, "move the cursor up / down"),
    (
        Action::NextPane,
        Action::PreviousPane,
        "focus the next / previous pane (or field)",
    ),
];

/// One mode's rows: keys and what they do.
type Section = (Mode, Vec<(String, &'static str)>);

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

/// Draws the overlay centred over `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let sections: Vec<Section> = Mode::ALL
        .into_iter()
        .map(|mode| (mode, rows(ctx, mode)))
        .filter(|(_, rows)| !rows.is_empty())
        .collect();
    let total: usize = sections.iter().map(|(_, rows)| rows.len() + 1).sum();

    let popup = area.centered(
        Constraint::Length(area.width.min(MAX_WIDTH)),
        Constraint::Length(u16::try_from(total + 2).unwrap_or(u16::MAX)),
    );
    let close = keys_text(&ctx.keymap.keys(Mode::Help, Action::Cancel));
    let block = Block::bordered()
        .border_style(ctx.style(Slot::FocusBorder))
        .padding(Padding::horizontal(1))
        .title(span(" Keys ", ctx.style(Slot::Title)))
        .title_bottom(Line::from(vec![
            span(&format!(" {close}"), ctx.style(Slot::Key)),
            span(" close ", ctx.style(Slot::Muted)),
        ]));
    let inner = block.inner(popup);
    frame.render_widget(Clear, popup);
    frame.render_widget(block, popup);

    let height = usize::from(inner.height);
    let two = height < total && inner.width >= TWO_COLUMNS_FROM;
    let areas = if two {
        Layout::horizontal([Constraint::Fill(1); 2])
            .spacing(2)
            .split(inner)
            .to_vec()
    } else {
        vec![inner]
    };
    // Whole sections per column while they fit; the last column takes the rest (cut).
    let mut sections = sections.into_iter().peekable();
    let last = areas.len() - 1;
    for (at, column) in areas.into_iter().enumerate() {
        let mut lines = Vec::new();
        while let Some((mode, rows)) = sections.next_if(|(_, rows)| {
            at == last || lines.is_empty() || lines.len() + rows.len() < height
        }) {
            lines.push(fit(
                Line::from(span(mode.title(), ctx.style(Slot::Title))),
                column.width,
            ));
            for (keys, what) in rows {
                let describe_width = column.width.saturating_sub(KEYS_WIDTH + 1);
                lines.push(row([
                    cell(&keys, KEYS_WIDTH, Cut::End, ctx.style(Slot::Key)),
                    cell(what, describe_width, Cut::End, ctx.style(Slot::Base)),
                ]));
            }
        }
        frame.render_widget(Paragraph::new(lines), column);
    }
}
