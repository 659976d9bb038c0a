//! The state machine view (RFC 0002 §6, Protocol State Machine): an overlay listing every
//! transition the kernel lists for a task from its current State, allowed ones first, with the
//! row under the cursor spelled out below (actor, guard, evidence, effect; or the refusal's
//! code and its reasons in words).
//!
//! Opened with a key from a task, or from a work item (then only that item's and its attempt's
//! transitions are listed). The view comes from the backend ([`valp_view::ConsoleView::machine`],
//! asked for with [`Request::Explain`]) and follows the task as it moves. Choosing an allowed
//! transition the Leader sends from the console opens the same confirmation dialog as its key
//! (interrupt and resume, which need none, are sent at once), so it takes the same path to the
//! kernel.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::action::Action;
use super::app::Ctx;
use super::dialog::Dialog;
use super::keymap::{Mode, keys_text};
use super::list::{self, Listing};
use super::text::{Cut, cell, fit, row, span};
use super::theme::Slot;
use valp_view::flow::{TransitionRow, TransitionVerdict};
use valp_view::{ConsoleView, MachineView, Request};

/// Widest the overlay gets.
const MAX_WIDTH: u16 = 120;
/// Fewest rows of the detail box under the list (border included); it grows with what it says,
/// up to half the overlay.
const DETAIL_HEIGHT: u16 = 7;
/// Columns of the event kind in a row.
const KIND_WIDTH: u16 = 26;
/// Columns of the target in a row (a narrow list gives it fewer).
const TARGET_WIDTH: u16 = 22;
const NARROW_TARGET_WIDTH: u16 = 12;
/// Inner width below which the list is narrow.
const NARROW: u16 = 100;

/// The open state machine view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    task_id: String,
    work_item: Option<String>,
    cursor: usize,
}

/// What choosing a transition does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Ask to confirm, as the key does.
    Confirm(Dialog),
    /// Send at once (interrupt, resume), as the key does.
    Send(Request),
}

impl Machine {
    /// The view for `task_id`, or only for `work_item` of it.
    pub fn new(task_id: &str, work_item: Option<&str>) -> Self {
        Self {
            task_id: task_id.to_owned(),
            work_item: work_item.map(str::to_owned),
            cursor: 0,
        }
    }

    /// The backend's state machine of this task, once it came.
    fn machine<'v>(&self, view: &'v ConsoleView) -> Option<&'v MachineView> {
        view.machine
            .as_ref()
            .filter(|machine| machine.task_id == self.task_id)
    }

    /// The transitions listed, in the backend's order.
    fn rows<'v>(&self, view: &'v ConsoleView) -> Vec<&'v TransitionRow> {
        self.machine(view)
            .map(|machine| {
                machine
                    .transitions
                    .iter()
                    .filter(|row| {
                        self.work_item.is_none()
                            || row.work_item.as_ref() == self.work_item.as_ref()
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Moves the cursor.
    pub fn step(&mut self, up: bool, view: &ConsoleView) {
        let count = self.rows(view).len();
        self.cursor = if up {
            self.cursor.saturating_sub(1)
        } else {
            (self.cursor + 1).min(count.saturating_sub(1))
        };
    }

    /// What choosing the row under the cursor does: the same dialog (or request) as the key of
    /// the Leader's action it stands for; nothing for a refused transition or one the Leader
    /// does not send from here.
    pub fn choose(&self, view: &ConsoleView) -> Option<Choice> {
        let rows = self.rows(view);
        let request = rows.get(self.cursor)?.action.clone()?;
        let task = view
            .tasks
            .iter()
            .find(|task| task.task_id == self.task_id)?;
        let item = |id: &str| {
            view.items
                .iter()
                .find(|item| item.task_id == self.task_id && item.work_item_id == id)
        };
        Some(Choice::Confirm(match &request {
            Request::Review { pass, .. } => Dialog::review(task, *pass),
            Request::Approve { grant, .. } => Dialog::approval(task, *grant),
            Request::Cancel {
                work_item_id: None, ..
            } => Dialog::cancel_task(task),
            Request::Cancel {
                work_item_id: Some(id),
                ..
            } => Dialog::cancel_item(item(id)?),
            Request::Retry { work_item_id, .. } => Dialog::retry(task, item(work_item_id)?),
            Request::Recover { .. } => Dialog::recover(task),
            Request::Interrupt { .. } | Request::Resume { .. } => {
                return Some(Choice::Send(request));
            }
            Request::Select { .. }
            | Request::Rotate { .. }
            | Request::Refresh
            | Request::Redirect { .. }
            | Request::Explain { .. }
            | Request::Message { .. }
            | Request::InterruptAgent { .. }
            | Request::Attach { .. }
            | Request::Acknowledge { .. }
            | Request::DecideAgentRequest { .. } => return None,
        }))
    }

    /// Draws the overlay over `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let popup = area.centered(
            Constraint::Length(area.width.min(MAX_WIDTH)),
            Constraint::Length(area.height.saturating_sub(2).max(DETAIL_HEIGHT + 3)),
        );
        frame.render_widget(Clear, popup);
        let rows = self.rows(ctx.view);
        let cursor = self.cursor.min(rows.len().saturating_sub(1));
        let details = rows
            .get(cursor)
            .map(|row| detail(ctx, row))
            .unwrap_or_default();
        let detail_height = wrapped_height(&details, popup.width.saturating_sub(2))
            .saturating_add(2)
            .clamp(DETAIL_HEIGHT, (popup.height / 2).max(DETAIL_HEIGHT));
        let [list_area, detail_area] = popup.layout(&Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(detail_height),
        ]));
        let inner_width = list_area.width.saturating_sub(2);
        let title = match &self.work_item {
            Some(item) => format!("State machine · task {} · item {item}", self.task_id),
            None => format!("State machine · task {}", self.task_id),
        };
        let header = self.machine(ctx.view).map(|machine| {
            let allowed = rows.iter().filter(|row| row.is_allowed()).count();
            fit(
                Line::from(span(
                    &format!(
                        "status {} · revision {} · epoch {} · {allowed} allowed, {} refused",
                        machine.status,
                        machine.revision,
                        machine.epoch,
                        rows.len() - allowed
                    ),
                    ctx.style(Slot::Muted),
                )),
                inner_width,
            )
        });
        let entries = list::Entries::new(rows.len(), |at| vec![line(ctx, rows[at], inner_width)]);
        let keys = |action| keys_text(&ctx.keymap.keys(Mode::Machine, action));
        list::render(
            frame,
            list_area,
            ctx,
            Listing {
                title,
                note: Some(Line::from(vec![
                    span(&format!(" {}", keys(Action::Choose)), ctx.style(Slot::Key)),
                    span(" propose  ", ctx.style(Slot::Muted)),
                    span(&keys(Action::Cancel), ctx.style(Slot::Key)),
                    span(" close ", ctx.style(Slot::Muted)),
                ])),
                focused: true,
                header,
                entries,
                cursor,
                empty: if self.machine(ctx.view).is_some() {
                    "No transitions listed.".to_owned()
                } else {
                    "Asking the kernel…".to_owned()
                },
                // The view is an overlay, not a pane: a click on it selects nothing.
                pane: None,
            },
        );
        let block = Block::bordered().border_style(ctx.style(Slot::FocusBorder));
        let inner = block.inner(detail_area);
        frame.render_widget(block, detail_area);
        frame.render_widget(Paragraph::new(details).wrap(Wrap { trim: true }), inner);
    }
}

/// How many rows `lines` take wrapped to `width`, at most: a line that wraps is given one row
/// more than its width needs, for the room word wrapping leaves at the ends of rows.
fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let width = usize::from(width.max(1));
    let rows: usize = lines
        .iter()
        .map(|line| match line.width().div_ceil(width) {
            0 | 1 => 1,
            wrapped => wrapped + 1,
        })
        .sum();
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// One transition in one row: mark, kind, target, then the next state or the refusal.
fn line(ctx: &Ctx, transition: &TransitionRow, width: u16) -> Line<'static> {
    let target_width = if width < NARROW {
        NARROW_TARGET_WIDTH
    } else {
        TARGET_WIDTH
    };
    // Four cells, one space apart.
    let rest = width.saturating_sub(1 + KIND_WIDTH + target_width + 3);
    let (mark, slot, outcome) = match &transition.verdict {
        TransitionVerdict::Allowed { next_status, .. } => (
            "✓",
            Slot::StatusDone,
            format!("→ {next_status} · {}", transition.actor),
        ),
        TransitionVerdict::Refused { code, reasons } => {
            ("✗", Slot::Muted, format!("{code}: {}", reasons.join("; ")))
        }
    };
    row([
        cell(mark, 1, Cut::End, ctx.style(slot)),
        cell(
            &transition.kind,
            KIND_WIDTH,
            Cut::End,
            ctx.style(Slot::Base),
        ),
        cell(
            &transition.target,
            target_width,
            Cut::Middle,
            ctx.style(Slot::Muted),
        ),
        cell(&outcome, rest, Cut::End, ctx.style(slot)),
    ])
}

/// The row under the cursor in full.
fn detail(ctx: &Ctx, transition: &TransitionRow) -> Vec<Line<'static>> {
    let label = |text: &str| span(&format!("{text}: "), ctx.style(Slot::Muted));
    let base = |text: &str| span(text, ctx.style(Slot::Base));
    let mut lines = vec![Line::from(vec![
        span(
            &format!("{} on {} ", transition.kind, transition.target),
            ctx.style(Slot::Title),
        ),
        label("actor"),
        base(&transition.actor),
    ])];
    lines.push(Line::from(vec![label("guard"), base(&transition.guard)]));
    lines.push(Line::from(vec![
        label("evidence"),
        base(&transition.evidence),
    ]));
    match &transition.verdict {
        TransitionVerdict::Allowed {
            next_status,
            effect,
        } => {
            lines.push(Line::from(vec![
                label("allowed"),
                base(&format!("→ {next_status}; emits {effect}")),
            ]));
            if transition.action.is_some() {
                let keys = keys_text(&ctx.keymap.keys(Mode::Machine, Action::Choose));
                lines.push(Line::from(vec![
                    span(&keys, ctx.style(Slot::Key)),
                    span(" proposes it, as its key does", ctx.style(Slot::Muted)),
                ]));
            }
        }
        TransitionVerdict::Refused { code, reasons } => {
            lines.push(Line::from(vec![
                span(&format!("refused {code}: "), ctx.style(Slot::AlertError)),
                base(&reasons.join("; ")),
            ]));
        }
    }
    lines
}
