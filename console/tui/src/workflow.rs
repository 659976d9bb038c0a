//! The Operator Workflow strip of the selected task (RFC 0002 §6), between the Leader pane and
//! the task panes.
//!
//! Wide (two rows): the eight stages by their short names, each with its mark (`✓` done, `▶`
//! current, `✗` blocked, `·` not reached); below, the current or blocked stages by their full
//! names with what is going on or why they are stuck, then the done stages' proofs, newest
//! first, as far as the width goes. Narrow (one row, e.g. 80x24): the marks alone, then the
//! same notes. The stages come from the runtime in the view ([`valp_view::Workflow`]); nothing
//! is computed here.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::app::Ctx;
use super::body::FULL_WIDTH;
use super::text::{fit, span};
use super::theme::Slot;
use valp_view::Workflow;
use valp_view::flow::{SHORT_STAGES, STAGES, StageState};

/// The rows the strip takes on a terminal `width` columns wide, when a task is selected.
pub const fn height(width: u16) -> u16 {
    if width >= FULL_WIDTH { 2 } else { 1 }
}

/// The workflow of the selected task, if the view has one.
pub fn selected<'v>(ctx: &Ctx<'v>) -> Option<&'v Workflow> {
    let task = ctx.selection.task(ctx.view)?;
    ctx.view
        .workflows
        .iter()
        .find(|workflow| workflow.task_id == task.task_id)
}

const fn mark(state: StageState) -> &'static str {
    match state {
        StageState::Done => "✓",
        StageState::Current => "▶",
        StageState::Blocked => "✗",
        StageState::NotReached => "·",
    }
}

fn style(ctx: &Ctx, state: StageState) -> Style {
    ctx.style(match state {
        StageState::Done => Slot::StatusDone,
        StageState::Current => Slot::Selection,
        StageState::Blocked => Slot::AlertError,
        StageState::NotReached => Slot::Muted,
    })
}

/// Draws the strip of `workflow` into `area` (one or two rows).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, workflow: &Workflow) {
    let mut marks = vec![span("Workflow ", ctx.style(Slot::Title))];
    let wide = area.height >= 2;
    for (at, stage) in workflow.stages.iter().enumerate() {
        let text = if wide {
            let name = SHORT_STAGES.get(at).copied().unwrap_or_default();
            format!("{} {name}", mark(stage.state))
        } else {
            mark(stage.state).to_owned()
        };
        if at > 0 {
            marks.push(span(if wide { " › " } else { " " }, ctx.style(Slot::Muted)));
        }
        marks.push(span(&text, style(ctx, stage.state)));
    }
    let notes = notes(ctx, workflow, wide);
    let lines = if wide {
        vec![
            fit(Line::from(marks), area.width),
            fit(Line::from(notes), area.width),
        ]
    } else {
        marks.push(span("  ", ctx.style(Slot::Base)));
        marks.extend(notes);
        vec![fit(Line::from(marks), area.width)]
    };
    frame.render_widget(Paragraph::new(lines), area);
}

/// The current and blocked stages with their notes (full names when `wide`), then the done
/// stages' proofs, newest first.
fn notes(ctx: &Ctx, workflow: &Workflow, wide: bool) -> Vec<Span<'static>> {
    let stages = || workflow.stages.iter().enumerate();
    let first = stages()
        .filter(|(_, stage)| matches!(stage.state, StageState::Current | StageState::Blocked));
    let done = stages()
        .rev()
        .filter(|(_, stage)| stage.state == StageState::Done);
    let mut spans = Vec::new();
    for (at, stage) in first.chain(done) {
        if !spans.is_empty() {
            spans.push(span(" · ", ctx.style(Slot::Muted)));
        }
        let name = if wide && stage.state != StageState::Done {
            STAGES.get(at)
        } else {
            SHORT_STAGES.get(at)
        }
        .copied()
        .unwrap_or_default();
        spans.push(span(&format!("{name}: "), style(ctx, stage.state)));
        spans.push(span(&stage.note, ctx.style(Slot::Base)));
    }
    spans
}
