//! The footer: the last confirmation or refusal (wrapped, never cut), and key hints generated
//! from the keymap: the current mode's actions that mean something right now, wrapped between
//! hints when they do not fit on one row.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::app::{Ctx, Notice};
use super::keymap::keys_text;
use super::text::{fit, span};
use super::theme::Slot;
use valp_view::Request;

/// Columns between two hints.
const GAP: &str = "  ";

/// The footer rows the layout plan counts on: one notice row and one row of hints.
pub const PLANNED_HEIGHT: u16 = 2;

/// Rows the footer needs at `width` columns.
pub fn height(ctx: &Ctx, notice: Option<&Notice>, width: u16) -> u16 {
    let rows =
        notice_paragraph(ctx, notice).line_count(width).max(1) + hint_lines(ctx, width).len();
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// Draws the notice and the hints into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, notice: Option<&Notice>) {
    let hints = hint_lines(ctx, area.width);
    let rows = u16::try_from(hints.len()).unwrap_or(u16::MAX);
    let [notice_area, hints_area] = area.layout(&Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(rows),
    ]));
    frame.render_widget(notice_paragraph(ctx, notice), notice_area);
    frame.render_widget(Paragraph::new(hints), hints_area);
}

/// The hints packed into rows of `width` columns (at least one row; a hint wider than a row is
/// cut).
fn hint_lines(ctx: &Ctx, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    let mut lines: Vec<Vec<Span<'static>>> = vec![Vec::new()];
    let mut used = 0;
    for (action, keys) in &ctx.hints {
        let hint = [
            span(&keys_text(keys), ctx.style(Slot::Key)),
            span(&format!(" {}", action.label()), ctx.style(Slot::Muted)),
        ];
        let hint_width: usize = hint.iter().map(Span::width).sum();
        let current = lines.last().map_or(0, Vec::len);
        if current > 0 && used + GAP.len() + hint_width > width {
            lines.push(Vec::new());
            used = 0;
        }
        if let Some(line) = lines.last_mut() {
            if !line.is_empty() {
                line.push(span(GAP, ctx.style(Slot::Muted)));
                used += GAP.len();
            }
            line.extend(hint);
            used += hint_width;
        }
    }
    lines
        .into_iter()
        .map(|spans| fit(Line::from(spans), u16::try_from(width).unwrap_or(u16::MAX)))
        .collect()
}

fn notice_paragraph(ctx: &Ctx, notice: Option<&Notice>) -> Paragraph<'static> {
    let line = match notice {
        Some(Notice::Pending(request)) => Line::from(span(
            &format!("pending: {}…", pending_text(request)),
            ctx.style(Slot::AlertInfo),
        )),
        Some(Notice::Done(message) | Notice::Opening(message)) => {
            Line::from(span(message, ctx.style(Slot::AlertInfo)))
        }
        Some(Notice::Refused(refusal)) => Line::from(span(
            &format!("{}: {}", refusal.code, refusal.message),
            ctx.style(Slot::AlertError),
        )),
        None => Line::default(),
    };
    Paragraph::new(line).wrap(Wrap { trim: true })
}

/// What a request in flight is doing, in words (ids come sanitized in the view).
fn pending_text(request: &Request) -> String {
    match request {
        Request::Select { candidate_id } => format!("selecting {candidate_id} as the Leader"),
        Request::Rotate { candidate_id } => format!("rotating the Leader to {candidate_id}"),
        Request::Refresh => "observing again".to_owned(),
        Request::Cancel {
            task_id,
            work_item_id: Some(item),
        } => format!("cancelling work item {item} of task {task_id}"),
        Request::Cancel {
            task_id,
            work_item_id: None,
        } => format!("cancelling task {task_id}"),
        Request::Interrupt { task_id } => format!("interrupting task {task_id}"),
        Request::Resume { task_id } => format!("resuming task {task_id}"),
        Request::Redirect { task_id, .. } => format!("redirecting task {task_id}"),
        Request::Review {
            task_id,
            pass: true,
        } => format!("passing the review of task {task_id}"),
        Request::Review {
            task_id,
            pass: false,
        } => format!("rejecting the review of task {task_id}"),
        Request::Approve {
            task_id,
            grant: true,
        } => format!("granting the approval of task {task_id}"),
        Request::Approve {
            task_id,
            grant: false,
        } => format!("denying the approval of task {task_id}"),
        Request::Retry {
            task_id,
            work_item_id,
        } => format!("retrying work item {work_item_id} of task {task_id}"),
        Request::Recover { task_id } => format!("unblocking task {task_id}"),
        Request::Message { attempt_id, .. } => format!("sending a message to {attempt_id}"),
        Request::InterruptAgent { attempt_id, .. } => {
            format!("interrupting the agent of {attempt_id}")
        }
        Request::Attach { attempt_id } => format!("attaching to the agent of {attempt_id}"),
        Request::Acknowledge { key, seen: true } => format!("acknowledging {key}"),
        Request::Acknowledge { key, seen: false } => {
            format!("taking back the acknowledgement of {key}")
        }
        Request::DecideAgentRequest {
            task_id,
            request_id,
            allow,
        } => format!(
            "{} request {request_id} of task {task_id} (waiting for the agent's hook)",
            if *allow { "allowing" } else { "denying" }
        ),
        Request::Explain {
            task_id: Some(task_id),
        } => format!("listing the transitions of task {task_id}"),
        Request::Explain { task_id: None } => "closing the state machine".to_owned(),
    }
}
