//! The Leader pane: who leads, on which session, whether this start re-proved it, and the epoch
//! history with fenced epochs marked.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::app::Ctx;
use super::text::{Cut, cell, fit, row, span, widths};
use super::theme::Slot;
use crate::view::{ConsoleView, SessionCheck};

/// Rows about the Leader: who and where, the session check, the session summary.
const LEADER_ROWS: u16 = 3;
/// Most epochs shown at once (the latest ones).
const MAX_EPOCH_ROWS: u16 = 6;

/// Rows the pane wants for `view`, borders included.
pub fn height(view: &ConsoleView) -> u16 {
    let epochs = u16::try_from(view.lane.epochs.len()).unwrap_or(u16::MAX);
    let history = if epochs == 0 {
        0
    } else {
        1 + epochs.min(MAX_EPOCH_ROWS)
    };
    2 + LEADER_ROWS + history
}

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let block = Block::bordered()
        .border_style(ctx.style(Slot::Border))
        .title(span(" Leader ", ctx.style(Slot::Title)));
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let lane = &ctx.view.lane;
    let (base, muted) = (ctx.style(Slot::Base), ctx.style(Slot::Muted));
    let mut lines = Vec::new();
    match &lane.leader {
        Some(leader) => {
            lines.push(Line::from(vec![
                span("Leader ", base),
                span(&leader.principal_id, ctx.style(Slot::Accent)),
                span(&format!(" ({}) on ", leader.principal_kind), base),
                span(&leader.candidate_id, base),
            ]));
            lines.push(match &lane.session {
                SessionCheck::Reopened { at, epoch } => Line::from(span(
                    &format!("reopened {at}, epoch {epoch}"),
                    ctx.style(Slot::AlertInfo),
                )),
                SessionCheck::Unproven { .. } => Line::from(span(
                    &format!("session not re-proven, epoch {}: read-only", leader.epoch),
                    ctx.style(Slot::AlertWarn),
                )),
                SessionCheck::Unbound => Line::from(span("no Leader bound", muted)),
            });
            lines.push(Line::from(span(&leader.session_summary, muted)));
        }
        None => lines.push(Line::from(span("No Leader is bound.", muted))),
    }

    let columns = widths(
        inner.width,
        [
            Constraint::Length(5),
            Constraint::Fill(2),
            Constraint::Fill(3),
            Constraint::Length(8),
            Constraint::Length(6),
        ],
    );
    let cells = |texts: [&str; 5], styles: [Slot; 5]| {
        row((0..5).map(|at| {
            let cut = if at == 2 { Cut::Middle } else { Cut::End };
            cell(texts[at], columns[at], cut, ctx.style(styles[at]))
        }))
    };
    if !lane.epochs.is_empty() {
        lines.push(cells(
            ["epoch", "principal", "session", "how", ""],
            [Slot::Muted; 5],
        ));
    }
    let room = usize::from(inner.height).saturating_sub(lines.len());
    let skipped = lane.epochs.len().saturating_sub(room);
    for epoch in &lane.epochs[skipped..] {
        let (marker, marker_slot) = if epoch.fenced {
            ("FENCED", Slot::Fenced)
        } else {
            ("active", Slot::Accent)
        };
        lines.push(cells(
            [
                &epoch.epoch.to_string(),
                &epoch.principal_id,
                &epoch.candidate_id,
                &epoch.how,
                marker,
            ],
            [Slot::Base, Slot::Base, Slot::Base, Slot::Muted, marker_slot],
        ));
    }
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|line| fit(line, inner.width))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
