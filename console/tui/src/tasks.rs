//! The Tasks pane: every task journal with its status, revision, progress and epoch, FENCED on
//! tasks bound to a fenced epoch, INTERRUPTED on tasks the Leader interrupted, and what the
//! System waits for on each. The selected task (`›`) drives the Work items pane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::Line;

use super::app::Ctx;
use super::list::{self, Entries, Listing};
use super::needs;
use super::selection::Pane;
use super::text::{Cut, cell, group, row_of, widths};
use super::theme::Slot;
use valp_view::TaskRow;

/// Inner width from which the pane has room for the revision and waiting columns.
const WIDE: u16 = 100;

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let tasks = &ctx.view.tasks;
    let cursor = ctx.selection.cursor(Pane::Tasks);
    let inner_width = area.width.saturating_sub(2);
    let wide = inner_width >= WIDE;
    let header = line(
        ctx,
        inner_width,
        wide,
        [
            "",
            "task",
            "status",
            "revision",
            "items",
            "epoch",
            "",
            "waiting for",
        ]
        .map(|text| (text, Slot::Muted)),
        &[],
    );
    let entries = Entries::new(tasks.len(), |at| {
        vec![task_line(ctx, inner_width, wide, &tasks[at], at == cursor)]
    });
    list::render(
        frame,
        area,
        ctx,
        Listing::counted(
            ctx,
            Pane::Tasks,
            Some(header),
            entries,
            "No task journals yet.",
        ),
    );
}

fn task_line(ctx: &Ctx, width: u16, wide: bool, task: &TaskRow, selected: bool) -> Line<'static> {
    let mut flags = Vec::new();
    if task.fenced {
        flags.push(("FENCED", ctx.style(Slot::Fenced)));
    }
    if task.interrupted {
        flags.push(("INTERRUPTED", ctx.style(Slot::AlertWarn)));
    }
    let epoch_slot = if task.fenced {
        Slot::Fenced
    } else {
        Slot::Base
    };
    line(
        ctx,
        width,
        wide,
        [
            (if selected { "›" } else { "" }, Slot::Accent),
            (&task.task_id, Slot::Base),
            (&task.status, Slot::of_status(&task.status)),
            (&task.revision.to_string(), Slot::Base),
            (
                &format!("{}/{}", task.items_completed, task.items_total),
                Slot::Base,
            ),
            (&task.epoch.to_string(), epoch_slot),
            ("", Slot::Base),
            (&needs::waiting_for(ctx, task), Slot::Muted),
        ],
        &flags,
    )
}

/// One row: marker, task, status, revision, items, epoch, flags, waiting; the revision and
/// waiting columns only when `wide`. `texts[6]` is replaced by `flags`.
fn line(
    ctx: &Ctx,
    width: u16,
    wide: bool,
    texts: [(&str, Slot); 8],
    flags: &[(&str, Style)],
) -> Line<'static> {
    let cut = |at: usize| if at == 1 { Cut::Middle } else { Cut::End };
    let shown: &[usize] = if wide {
        &[0, 1, 2, 3, 4, 5, 6, 7]
    } else {
        &[0, 1, 2, 4, 5, 6]
    };
    let constraint = |at: usize| match at {
        0 => Constraint::Length(1),
        1 | 7 => Constraint::Fill(1),
        2 => Constraint::Length(18),
        3 => Constraint::Length(8),
        4 => Constraint::Length(7),
        5 => Constraint::Length(5),
        _ => Constraint::Length(11),
    };
    let columns: Vec<u16> = if wide {
        widths(width, [0, 1, 2, 3, 4, 5, 6, 7].map(constraint)).to_vec()
    } else {
        widths(width, [0, 1, 2, 4, 5, 6].map(constraint)).to_vec()
    };
    row_of(shown.iter().zip(columns).map(|(&at, column)| {
        let (text, slot) = texts[at];
        if at == 6 && !flags.is_empty() {
            group(flags, column)
        } else {
            vec![cell(text, column, cut(at), ctx.style(slot))]
        }
    }))
}
