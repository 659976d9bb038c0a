//! The candidate list: the Doctor's candidates (all of them on first run, a filtered list for a
//! rebind or another selection in read-only mode) with a cursor.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::{Cut, cell, row, span, widths};
use super::theme::Slot;
use valp_view::{CandidateRow, ConsoleView};

/// Which candidates the list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Every candidate: the first selection.
    All,
    /// New sessions of the bound principal: candidates with the Leader's principal id that are
    /// not the bound session (a new session at the bound address, e.g. pane `%0` of a restarted
    /// tmux server, is one).
    Rebind,
    /// Every candidate but the bound session.
    Others,
}

/// A filtered candidate list and its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateList {
    filter: Filter,
    cursor: usize,
}

impl CandidateList {
    /// A list with the cursor on its first row.
    pub const fn new(filter: Filter) -> Self {
        Self { filter, cursor: 0 }
    }

    /// Which candidates it shows.
    pub const fn filter(&self) -> Filter {
        self.filter
    }

    /// The candidates of `view` it shows, in the Doctor's order.
    pub fn rows<'v>(&self, view: &'v ConsoleView) -> Vec<&'v CandidateRow> {
        let leader = view.lane.leader.as_ref();
        view.lane
            .candidates
            .iter()
            .filter(|candidate| match self.filter {
                Filter::All => true,
                Filter::Rebind => {
                    !candidate.bound
                        && leader
                            .is_some_and(|leader| leader.principal_id == candidate.principal_id)
                }
                Filter::Others => !candidate.bound,
            })
            .collect()
    }

    /// The candidate under the cursor.
    pub fn selected<'v>(&self, view: &'v ConsoleView) -> Option<&'v CandidateRow> {
        self.rows(view).get(self.cursor).copied()
    }

    /// Moves the cursor for [`Action::Up`] and [`Action::Down`].
    pub fn update(&mut self, action: Action, view: &ConsoleView) {
        self.cursor = super::motion::moved(self.cursor, self.rows(view).len(), action);
    }

    /// Keeps the cursor on the same candidate when the view changes from `old` to `new`, or
    /// within the list when that candidate is gone.
    pub fn reload(&mut self, old: &ConsoleView, new: &ConsoleView) {
        let rows = self.rows(new);
        let same = self.selected(old).and_then(|selected| {
            rows.iter()
                .position(|row| row.candidate_id == selected.candidate_id)
        });
        self.cursor = same.unwrap_or_else(|| self.cursor.min(rows.len().saturating_sub(1)));
    }

    /// Draws the list into `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let rows = self.rows(ctx.view);
        let title = match self.filter {
            Filter::All => format!(" Candidates ({}) ", rows.len()),
            Filter::Rebind => format!(
                " New sessions of {} ({}) ",
                ctx.view
                    .lane
                    .leader
                    .as_ref()
                    .map_or("the Leader", |leader| leader.principal_id.as_str()),
                rows.len()
            ),
            Filter::Others => format!(" Select another candidate ({}) ", rows.len()),
        };
        let block = Block::bordered()
            .border_style(ctx.style(Slot::FocusBorder))
            .title(span(&title, ctx.style(Slot::Title)));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if rows.is_empty() {
            let empty = Paragraph::new(self.empty_text(ctx)).wrap(Wrap { trim: true });
            frame.render_widget(empty, inner);
            return;
        }

        let columns = widths(
            inner.width,
            [
                Constraint::Length(1),
                Constraint::Fill(4),
                Constraint::Fill(3),
                Constraint::Length(9),
                Constraint::Fill(2),
                Constraint::Fill(3),
                Constraint::Fill(3),
            ],
        );
        let cells = |texts: [&str; 7], slot: Slot| {
            row((0..7).map(|at| {
                let cut = if matches!(at, 1 | 2) {
                    Cut::Middle
                } else {
                    Cut::End
                };
                cell(texts[at], columns[at], cut, ctx.style(slot))
            }))
        };
        let mut lines = vec![cells(
            [
                "",
                "candidate",
                "principal",
                "kind",
                "health",
                "labels",
                "summary",
            ],
            Slot::Muted,
        )];
        let ids: Vec<&str> = rows.iter().map(|row| row.candidate_id.as_str()).collect();
        let names = super::labels::candidates(&ids, usize::from(columns[1]));
        let visible = usize::from(inner.height).saturating_sub(1).max(1);
        let offset = (self.cursor + 1).saturating_sub(visible);
        for (at, candidate) in rows.iter().enumerate().skip(offset).take(visible) {
            let selected = at == self.cursor;
            let line = cells(
                [
                    if selected { "›" } else { "" },
                    &names[at],
                    &candidate.principal_id,
                    &candidate.principal_kind,
                    &candidate.health,
                    &candidate.labels.join(", "),
                    &candidate.summary,
                ],
                Slot::Base,
            );
            lines.push(if selected {
                line.style(ctx.style(Slot::Selection))
            } else {
                line
            });
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }

    /// What an empty list says.
    fn empty_text(&self, ctx: &Ctx) -> Line<'static> {
        let refresh = keys_text(&ctx.keymap.keys(Mode::Global, Action::Refresh));
        let what = match self.filter {
            Filter::All => "The Doctor observed no candidate.".to_owned(),
            Filter::Rebind => format!(
                "No new session of {} was observed.",
                ctx.view
                    .lane
                    .leader
                    .as_ref()
                    .map_or("the Leader", |leader| leader.principal_id.as_str())
            ),
            Filter::Others => "No other candidate was observed.".to_owned(),
        };
        let again = if refresh.is_empty() {
            String::new()
        } else {
            format!(" {refresh} observes again.")
        };
        Line::from(span(&format!("{what}{again}"), ctx.style(Slot::Muted)))
    }
}
