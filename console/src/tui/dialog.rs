//! The confirmation dialog: every state change is spelled out (who, which session, which epoch
//! starts, which is fenced) and sent only after an explicit confirmation.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Padding, Paragraph, Wrap};

use super::action::Action;
use super::app::Ctx;
use super::candidates::Filter;
use super::keymap::{Mode, keys_text};
use super::text::span;
use super::theme::Slot;
use crate::view::{CandidateRow, ConsoleView, Request};

/// Widest the dialog gets.
const MAX_WIDTH: u16 = 72;

/// A request waiting for confirmation, with the sentences that describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    request: Request,
    question: String,
    consequence: String,
}

impl Dialog {
    /// The dialog for choosing `candidate` from a list with `filter` in `view`: a first
    /// selection, or a rotation that fences the active epoch.
    pub fn new(filter: Filter, candidate: &CandidateRow, view: &ConsoleView) -> Self {
        let epoch = view.lane.active_epoch;
        let (who, session) = (&candidate.principal_id, &candidate.candidate_id);
        let candidate_id = session.clone();
        match filter {
            Filter::All => Self {
                request: Request::Select { candidate_id },
                question: format!("Select {who} ({session}) as the Leader?"),
                consequence: format!("This starts epoch {}.", epoch + 1),
            },
            Filter::Rebind | Filter::Others => Self {
                request: Request::Rotate { candidate_id },
                question: if filter == Filter::Rebind {
                    format!("Rebind {who} to the session {session}?")
                } else {
                    format!("Select {who} ({session}) as the Leader?")
                },
                consequence: format!(
                    "Epoch {epoch} will be fenced and epoch {} starts.",
                    epoch + 1
                ),
            },
        }
    }

    /// The request a confirmation sends.
    pub fn into_request(self) -> Request {
        self.request
    }

    /// Draws the dialog centred over `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let key = ctx.style(Slot::Key);
        let muted = ctx.style(Slot::Muted);
        let confirm = keys_text(&ctx.keymap.keys(Mode::Dialog, Action::Confirm));
        let cancel = keys_text(&ctx.keymap.keys(Mode::Dialog, Action::Cancel));
        let block = Block::bordered()
            .border_style(ctx.style(Slot::FocusBorder))
            .padding(Padding::new(1, 1, 1, 1))
            .title(span(" Confirm ", ctx.style(Slot::Title)))
            .title_bottom(Line::from(vec![
                span(" ", muted),
                span(&confirm, key),
                span(" to confirm, ", muted),
                span(&cancel, key),
                span(" to cancel ", muted),
            ]));
        let paragraph = Paragraph::new(vec![
            Line::from(span(&self.question, ctx.style(Slot::Base))),
            Line::from(span(&self.consequence, ctx.style(Slot::AlertWarn))),
        ])
        .block(block)
        .wrap(Wrap { trim: true });

        let width = area.width.min(MAX_WIDTH);
        let rows = paragraph.line_count(width.saturating_sub(4));
        let height = u16::try_from(rows).unwrap_or(u16::MAX);
        let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
        frame.render_widget(Clear, popup);
        frame.render_widget(paragraph, popup);
    }
}
