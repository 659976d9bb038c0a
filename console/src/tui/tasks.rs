//! The Tasks pane: every task journal with its status, revision, progress and epoch, and a
//! FENCED marker on tasks bound to a fenced epoch.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::app::Ctx;
use super::text::{Cut, cell, row, span, widths};
use super::theme::Slot;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let tasks = &ctx.view.tasks;
    let block = Block::bordered()
        .border_style(ctx.style(Slot::Border))
        .title(span(
            &format!(" Tasks ({}) ", tasks.len()),
            ctx.style(Slot::Title),
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if tasks.is_empty() {
        let empty = span("No task journals yet.", ctx.style(Slot::Muted));
        frame.render_widget(Paragraph::new(Line::from(empty)), inner);
        return;
    }

    let columns = widths(
        inner.width,
        [
            Constraint::Fill(3),
            Constraint::Fill(2),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(5),
            Constraint::Length(6),
        ],
    );
    let cells = |texts: [&str; 6], styles: [Slot; 6]| {
        row((0..6).map(|at| {
            let cut = if at == 0 { Cut::Middle } else { Cut::End };
            cell(texts[at], columns[at], cut, ctx.style(styles[at]))
        }))
    };
    let mut lines = vec![cells(
        ["task", "status", "revision", "items", "epoch", ""],
        [Slot::Muted; 6],
    )];
    for task in tasks {
        let (marker, fenced) = if task.fenced {
            ("FENCED", Slot::Fenced)
        } else {
            ("", Slot::Base)
        };
        lines.push(cells(
            [
                &task.task_id,
                &task.status,
                &task.revision.to_string(),
                &format!("{}/{}", task.items_completed, task.items_total),
                &task.epoch.to_string(),
                marker,
            ],
            [
                Slot::Base,
                Slot::Base,
                Slot::Base,
                Slot::Base,
                fenced,
                fenced,
            ],
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
