//! The Leader pane: who leads, on which session, whether this start re-proved it, and the epoch
//! history with fenced epochs marked. On a small terminal it shrinks to two lines: who and
//! where, then the session check and the fenced epochs.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::Block;

use super::app::Ctx;
use super::paint;
use super::text::{Cut, cell, fit, row, span, widths};
use super::theme::Slot;
use valp_view::{ConsoleView, SessionCheck};

/// Rows about the Leader: who and where, the session check, the session summary.
const LEADER_ROWS: u16 = 3;
/// Most epochs shown at once (the latest ones).
const MAX_EPOCH_ROWS: u16 = 6;

/// Rows of the compact pane, borders included.
pub const COMPACT_HEIGHT: u16 = 4;

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

/// Draws the pane's border and title into `area`; the area inside them.
fn block(frame: &mut Frame, area: Rect, ctx: &Ctx) -> Rect {
    paint::bordered(
        frame.buffer_mut(),
        area,
        ctx.style(Slot::Border),
        &[Line::from(span(" Leader ", ctx.style(Slot::Title)))],
        &[],
    );
    Block::bordered().inner(area)
}

/// Who leads and where, and how this start went (the first two lines of the pane).
fn leader_lines(ctx: &Ctx) -> Vec<Line<'static>> {
    let lane = &ctx.view.lane;
    let (base, muted) = (ctx.style(Slot::Base), ctx.style(Slot::Muted));
    let Some(leader) = &lane.leader else {
        return vec![Line::from(span("No Leader is bound.", muted))];
    };
    vec![
        Line::from(vec![
            span("Leader ", base),
            span(&leader.principal_id, ctx.style(Slot::Accent)),
            span(&format!(" ({}) on ", leader.principal_kind), base),
            span(&leader.candidate_id, base),
        ]),
        match &lane.session {
            SessionCheck::Reopened { at, epoch } => Line::from(span(
                &format!("reopened {at}, epoch {epoch}"),
                ctx.style(Slot::AlertInfo),
            )),
            SessionCheck::Unproven { .. } => Line::from(span(
                &format!("session not re-proven, epoch {}: read-only", leader.epoch),
                ctx.style(Slot::AlertWarn),
            )),
            SessionCheck::Unbound => Line::from(span("no Leader bound", muted)),
        },
    ]
}

/// Draws the two-line pane into `area` ([`COMPACT_HEIGHT`] rows).
pub fn render_compact(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let inner = block(frame, area, ctx);
    let mut lines = leader_lines(ctx);
    let fenced: Vec<String> = ctx
        .view
        .lane
        .epochs
        .iter()
        .filter(|epoch| epoch.fenced)
        .map(|epoch| epoch.epoch.to_string())
        .collect();
    if !fenced.is_empty()
        && let Some(last) = lines.last_mut()
    {
        last.spans
            .push(span("  fenced epochs ", ctx.style(Slot::Muted)));
        last.spans
            .push(span(&fenced.join(", "), ctx.style(Slot::Fenced)));
    }
    let lines: Vec<Line> = lines
        .into_iter()
        .map(|line| fit(line, inner.width))
        .collect();
    paint::lines(frame.buffer_mut(), inner, &lines);
}

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let inner = block(frame, area, ctx);

    let lane = &ctx.view.lane;
    let muted = ctx.style(Slot::Muted);
    let mut lines = leader_lines(ctx);
    if let Some(leader) = &lane.leader {
        lines.push(Line::from(span(&leader.session_summary, muted)));
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
    paint::lines(frame.buffer_mut(), inner, &lines);
}
