//! The confirmation dialog: every state change is spelled out (who, which session, which epoch
//! starts, which is fenced; which task or work item is cancelled; which review decision; which
//! intent and which superseded work items) and sent only after an explicit confirmation.

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
use valp_view::{AgentAsk, CandidateRow, ConsoleView, ItemRow, NeedRow, Request, TaskRow};

/// Widest the dialog gets.
const MAX_WIDTH: u16 = 72;

/// A request waiting for confirmation, with the sentences that describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    request: Request,
    question: String,
    details: Vec<String>,
    consequence: String,
}

impl Dialog {
    /// The dialog for choosing `candidate` from a list with `filter` in `view`: a first
    /// selection, or a rotation that fences the active epoch.
    pub fn choose(filter: Filter, candidate: &CandidateRow, view: &ConsoleView) -> Self {
        let epoch = view.lane.active_epoch;
        let (who, session) = (&candidate.principal_id, &candidate.candidate_id);
        let candidate_id = session.clone();
        match filter {
            Filter::All => Self {
                request: Request::Select { candidate_id },
                question: format!("Select {who} ({session}) as the Leader?"),
                details: Vec::new(),
                consequence: format!("This starts epoch {}.", epoch + 1),
            },
            Filter::Rebind | Filter::Others => Self {
                request: Request::Rotate { candidate_id },
                details: Vec::new(),
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

    /// The dialog for cancelling the whole of `task`.
    pub fn cancel_task(task: &TaskRow) -> Self {
        let id = &task.task_id;
        Self {
            request: Request::Cancel {
                task_id: id.clone(),
                work_item_id: None,
            },
            question: format!("Cancel task {id}?"),
            details: vec![format!(
                "It is {}, with {} of {} work items completed.",
                task.status, task.items_completed, task.items_total
            )],
            consequence: "Its unfinished work items and running attempts are cancelled; a \
                          cancelled task cannot be resumed."
                .to_owned(),
        }
    }

    /// The dialog for cancelling one work item of its task.
    pub fn cancel_item(item: &ItemRow) -> Self {
        let (task, id) = (&item.task_id, &item.work_item_id);
        let mut details = vec![format!("It is {} ({}).", item.status, item.position)];
        if !item.attempt.is_empty() {
            details.push(format!("Its attempt {} is stopped.", item.attempt));
        }
        Self {
            request: Request::Cancel {
                task_id: task.clone(),
                work_item_id: Some(id.clone()),
            },
            question: format!("Cancel work item {id} of task {task}?"),
            details,
            consequence: "The rest of the task goes on; a cancelled work item is not retried."
                .to_owned(),
        }
    }

    /// The dialog for the Leader's review decision on `task`.
    pub fn review(task: &TaskRow, pass: bool) -> Self {
        let id = &task.task_id;
        let (question, consequence) = if pass {
            (
                format!("Pass the review of task {id}?"),
                "The task goes on to recording.",
            )
        } else {
            (
                format!("Reject the review of task {id}?"),
                "The task goes back to fixing.",
            )
        };
        Self {
            request: Request::Review {
                task_id: id.clone(),
                pass,
            },
            question,
            details: Vec::new(),
            consequence: consequence.to_owned(),
        }
    }

    /// The dialog for the Leader's approval decision on `task`.
    pub fn approval(task: &TaskRow, grant: bool) -> Self {
        let id = &task.task_id;
        let (question, consequence) = if grant {
            (
                format!("Grant the approval of task {id}?"),
                "The task goes on to recording.",
            )
        } else {
            (
                format!("Deny the approval of task {id}?"),
                "The task goes back to fixing.",
            )
        };
        Self {
            request: Request::Approve {
                task_id: id.clone(),
                grant,
            },
            question,
            details: Vec::new(),
            consequence: consequence.to_owned(),
        }
    }

    /// The dialog for retrying a blocked work item of `task`.
    pub fn retry(task: &TaskRow, item: &ItemRow) -> Self {
        let (task_id, id) = (&item.task_id, &item.work_item_id);
        let mut details = vec![format!("It is {} ({}).", item.status, item.position)];
        if !item.attempt.is_empty() {
            details.push(format!("Its last attempt was {}.", item.attempt));
        }
        if task.status == "blocked" {
            details.push("The task is blocked: it is recovered to fixing first.".to_owned());
        }
        Self {
            request: Request::Retry {
                task_id: task_id.clone(),
                work_item_id: id.clone(),
            },
            question: format!("Retry work item {id} of task {task_id}?"),
            details,
            consequence: "A new attempt is created in your name and runs like any other."
                .to_owned(),
        }
    }

    /// The dialog for recovering `task` (blocked or fixing).
    pub fn recover(task: &TaskRow) -> Self {
        let id = &task.task_id;
        let consequence = if task.status == "blocked" {
            "The task goes back to fixing; the System dispatches what can still run."
        } else {
            "The task is dispatched again; verification runs again once every required work \
             item completed."
        };
        Self {
            request: Request::Recover {
                task_id: id.clone(),
            },
            question: format!("Recover task {id}?"),
            details: vec![format!("It is {}.", task.status)],
            consequence: consequence.to_owned(),
        }
    }

    /// The dialog for the Leader's decision on `need`'s agent permission request `ask`.
    pub fn agent_request(need: &NeedRow, ask: &AgentAsk, allow: bool) -> Self {
        let (word, subject) = &ask.subject;
        let (question, consequence) = if allow {
            (
                format!(
                    "Allow {} to use {} on task {}?",
                    ask.agent, ask.tool, need.task_id
                ),
                "The agent runs the tool. Your decision is recorded in the task's \
                 operator-action journal before the agent gets it.",
            )
        } else {
            (
                format!(
                    "Deny {} the use of {} on task {}?",
                    ask.agent, ask.tool, need.task_id
                ),
                "The agent does not run the tool. Your decision is recorded in the task's \
                 operator-action journal before the agent gets it.",
            )
        };
        Self {
            request: Request::DecideAgentRequest {
                task_id: need.task_id.clone(),
                request_id: ask.request_id.clone(),
                allow,
            },
            question,
            details: vec![
                format!("{word}: {subject}"),
                format!("Attempt {}, request {}.", ask.attempt_id, ask.request_id),
                format!(
                    "Without a decision by {} the hook answers for you (never allow).",
                    ask.deadline_at
                ),
            ],
            consequence: consequence.to_owned(),
        }
    }

    /// The dialog for redirecting `task_id` to `intent`, superseding `superseded`.
    pub fn redirect(task_id: &str, intent: &str, superseded: Vec<String>) -> Self {
        let marked = if superseded.is_empty() {
            "Superseded work items: none.".to_owned()
        } else {
            format!("Superseded work items: {}.", superseded.join(", "))
        };
        Self {
            request: Request::Redirect {
                task_id: task_id.to_owned(),
                superseded,
                intent: intent.to_owned(),
            },
            question: format!("Redirect task {task_id} to this intent?"),
            details: vec![format!("“{intent}”"), marked],
            consequence: "The superseded work items are cancelled and the task goes to fixing."
                .to_owned(),
        }
    }

    /// The request a confirmation sends.
    pub fn request(&self) -> &Request {
        &self.request
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
        let mut lines = vec![Line::from(span(&self.question, ctx.style(Slot::Base)))];
        lines.extend(
            self.details
                .iter()
                .map(|detail| Line::from(span(detail, ctx.style(Slot::Muted)))),
        );
        lines.push(Line::from(span(
            &self.consequence,
            ctx.style(Slot::AlertWarn),
        )));
        let paragraph = Paragraph::new(lines).block(block).wrap(Wrap { trim: true });

        let width = area.width.min(MAX_WIDTH);
        let rows = paragraph.line_count(width.saturating_sub(4));
        let height = u16::try_from(rows).unwrap_or(u16::MAX);
        let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
        frame.render_widget(Clear, popup);
        frame.render_widget(paragraph, popup);
    }
}
