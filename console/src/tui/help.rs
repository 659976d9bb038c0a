//! The help overlay: the whole keymap, mode by mode, generated from the keymap itself.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Padding, Paragraph};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::{Cut, cell, fit, row, span};
use super::theme::Slot;

/// Widest the overlay gets.
const MAX_WIDTH: u16 = 84;
/// Columns for the keys of one action.
const KEYS_WIDTH: u16 = 12;
/// Narrowest inner width that still takes two columns of sections.
const TWO_COLUMNS_FROM: u16 = 60;

/// Draws the overlay centred over `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let sections: Vec<(Mode, Vec<(Action, String)>)> = Mode::ALL
        .into_iter()
        .map(|mode| {
            let rows = ctx.keymap.table(mode);
            let rows = rows
                .into_iter()
                .map(|(action, keys)| (action, keys_text(&keys)))
                .collect();
            (mode, rows)
        })
        .filter(|(_, rows): &(Mode, Vec<_>)| !rows.is_empty())
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

    let two = usize::from(inner.height) < total && inner.width >= TWO_COLUMNS_FROM;
    let areas = if two {
        Layout::horizontal([Constraint::Fill(1); 2])
            .spacing(2)
            .split(inner)
            .to_vec()
    } else {
        vec![inner]
    };
    let per_column = total.div_ceil(areas.len());
    let mut sections = sections.into_iter().peekable();
    for column in areas {
        let mut lines = Vec::new();
        while let Some((mode, rows)) = sections.next_if(|_| lines.len() < per_column) {
            lines.push(fit(
                Line::from(span(mode.title(), ctx.style(Slot::Title))),
                column.width,
            ));
            for (action, keys) in rows {
                let describe_width = column.width.saturating_sub(KEYS_WIDTH + 1);
                lines.push(row([
                    cell(&keys, KEYS_WIDTH, Cut::End, ctx.style(Slot::Key)),
                    cell(
                        action.describe(),
                        describe_width,
                        Cut::End,
                        ctx.style(Slot::Base),
                    ),
                ]));
            }
        }
        frame.render_widget(Paragraph::new(lines), column);
    }
}
