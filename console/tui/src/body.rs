//! The body of the main (and read-only) screen: the task panes, laid out for the terminal.
//!
//! When the terminal is [`FULL_WIDTH`] columns wide and leaves the body [`FULL_BODY`] rows,
//! every pane is on screen: Tasks, Work items and Observations across the whole width, Rejected
//! files and Activity side by side below (the Leader pane shrinks to two lines first if that is
//! what it takes). On a smaller terminal the panes become tabs: a strip names them all (with
//! their counts) and the focused one fills the body; Tab moves along the strip.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::app::Ctx;
use super::leader::COMPACT_HEIGHT;
use super::selection::Pane;
use super::text::{fit, span};
use super::theme::Slot;
use super::{activity, items, needs, observations, rejections, tasks};

/// Narrowest terminal that shows every pane at once.
pub const FULL_WIDTH: u16 = 100;
/// Fewest body rows that show every pane at once.
pub const FULL_BODY: u16 = 24;
/// Most task rows the Tasks pane takes room for in the full layout (it scrolls beyond).
const MAX_TASK_ROWS: usize = 6;

/// How the screen is shared out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Whether the Leader pane is the two-line one.
    pub compact_leader: bool,
    /// Whether the body is tabbed.
    pub tabbed: bool,
}

/// The plan for a terminal `width` columns wide that leaves `spare` rows for the Leader pane
/// and the body, when the full Leader pane takes `leader` rows.
pub const fn plan(width: u16, spare: u16, leader: u16) -> Plan {
    let wide = width >= FULL_WIDTH;
    if wide && spare >= leader.saturating_add(FULL_BODY) {
        Plan {
            compact_leader: false,
            tabbed: false,
        }
    } else {
        Plan {
            compact_leader: true,
            tabbed: !wide || spare < COMPACT_HEIGHT.saturating_add(FULL_BODY),
        }
    }
}

/// Draws the body into `area`, tabbed or not.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, tabbed: bool) {
    if tabbed {
        let [strip, pane] = area.layout(&Layout::vertical([
            Constraint::Length(1),
            Constraint::Fill(1),
        ]));
        render_strip(frame, strip, ctx);
        render_pane(frame, pane, ctx, ctx.selection.focus());
        return;
    }
    let task_rows = u16::try_from(ctx.view.tasks.len().clamp(1, MAX_TASK_ROWS)).unwrap_or(1);
    let [
        needs_area,
        tasks_area,
        items_area,
        observations_area,
        logs_area,
    ] = area.layout(&Layout::vertical([
        Constraint::Length(needs::height(&ctx.view.needs)),
        Constraint::Length(task_rows + 3),
        Constraint::Fill(3),
        Constraint::Fill(2),
        Constraint::Fill(2),
    ]));
    let [rejections_area, activity_area] = logs_area.layout(&Layout::horizontal([
        Constraint::Fill(2),
        Constraint::Fill(3),
    ]));
    render_pane(frame, needs_area, ctx, Pane::Needs);
    render_pane(frame, tasks_area, ctx, Pane::Tasks);
    render_pane(frame, items_area, ctx, Pane::Items);
    render_pane(frame, observations_area, ctx, Pane::Observations);
    render_pane(frame, rejections_area, ctx, Pane::Rejections);
    render_pane(frame, activity_area, ctx, Pane::Activity);
}

fn render_pane(frame: &mut Frame, area: Rect, ctx: &Ctx, pane: Pane) {
    ctx.pane_areas.borrow_mut().push((pane, area));
    match pane {
        Pane::Tasks => tasks::render(frame, area, ctx),
        Pane::Items => items::render(frame, area, ctx),
        Pane::Observations => observations::render(frame, area, ctx),
        Pane::Rejections => rejections::render(frame, area, ctx),
        Pane::Activity => activity::render(frame, area, ctx),
        Pane::Needs => needs::render(frame, area, ctx),
    }
}

/// The tab strip: every pane with its count, the focused one in the selection style, a
/// non-empty Rejected tab in the warning style.
fn render_strip(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let mut spans = Vec::new();
    for pane in Pane::ALL {
        if !spans.is_empty() {
            spans.push(span("│", ctx.style(Slot::Border)));
        }
        let count = match pane {
            Pane::Needs => needs::waiting(&ctx.view.needs),
            other => ctx.selection.len(other, ctx.view),
        };
        let name = match pane {
            Pane::Rejections => "Rejected",
            Pane::Needs => "Needs",
            other => other.title(),
        };
        let slot = if pane == ctx.selection.focus() {
            Slot::Selection
        } else if matches!(pane, Pane::Rejections | Pane::Needs) && count > 0 {
            Slot::AlertWarn
        } else {
            Slot::Muted
        };
        spans.push(span(&format!(" {name} {count} "), ctx.style(slot)));
    }
    frame.render_widget(Paragraph::new(fit(Line::from(spans), area.width)), area);
}

#[cfg(test)]
mod tests {
    use super::{Plan, plan};

    #[test]
    fn the_leader_pane_shrinks_before_the_body_becomes_tabs() {
        let full = Plan {
            compact_leader: false,
            tabbed: false,
        };
        let short_leader = Plan {
            compact_leader: true,
            tabbed: false,
        };
        let tabs = Plan {
            compact_leader: true,
            tabbed: true,
        };
        // 120x40 with a one-row notice: 40 - title - footer.
        assert_eq!(plan(120, 37, 8), full);
        // The same with the read-only banner.
        assert_eq!(plan(120, 31, 8), short_leader);
        assert_eq!(plan(120, 27, 8), tabs);
        assert_eq!(plan(99, 60, 8), tabs);
        assert_eq!(plan(0, 0, 0), tabs);
    }
}
