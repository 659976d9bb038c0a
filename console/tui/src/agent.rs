//! The Agent pane: the terminal coding agent (tmux) of one work item's current attempt, as its
//! supervisor last recorded it: the state with the rule and line that matched and the sample's
//! age (`blocked: permission question (line 12) matched 2 s ago`), the supervisor's note, and
//! the screen's tail (sanitized and redacted by the supervisor, sanitized again by the view).
//!
//! It takes the body's place while open. The tail follows the screen's end until the Leader
//! scrolls up; `follow` goes back to the end. The Leader may type a message for the running
//! agent: while it is typed, printable keys and Backspace edit it (they never reach the
//! keymap); Enter sends it ([`Request::Message`]), Esc drops it. The pane sends nothing itself:
//! [`AgentPane::update`] says what the app should do.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Padding, Paragraph};

use super::action::Action;
use super::app::Ctx;
use super::text::{fit, is_unsafe, span};
use super::theme::Slot;
use valp_view::{AgentView, Request};

/// Longest message, in characters.
pub const MAX_MESSAGE: usize = 2000;
/// The state in which an agent takes no message or interrupt.
const EXITED: &str = "exited";

/// What the app does after an action in the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing beyond redrawing.
    Stay,
    /// Close the pane.
    Close,
    /// Send this request.
    Send(Request),
    /// Ask to confirm cancelling the work item (the existing cancel dialog).
    CancelItem {
        /// The task.
        task_id: String,
        /// The work item.
        work_item_id: String,
    },
}

/// The Agent pane of one attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPane {
    task_id: String,
    work_item_id: String,
    attempt_id: String,
    /// Lines scrolled up from the tail's end (0: following the end).
    back: usize,
    /// The message being typed, if any.
    message: Option<String>,
}

impl AgentPane {
    /// The pane of `agent`, following its screen.
    pub fn new(agent: &AgentView) -> Self {
        Self {
            task_id: agent.task_id.clone(),
            work_item_id: agent.work_item_id.clone(),
            attempt_id: agent.attempt_id.clone(),
            back: 0,
            message: None,
        }
    }

    /// The agent in `view`, if its attempt still has one.
    fn agent<'v>(&self, agents: &'v [AgentView]) -> Option<&'v AgentView> {
        agents
            .iter()
            .find(|agent| agent.attempt_id == self.attempt_id)
    }

    /// Whether the agent takes messages and interrupts (it is there and not exited).
    fn live(&self, agents: &[AgentView]) -> bool {
        self.agent(agents)
            .is_some_and(|agent| agent.state != EXITED)
    }

    /// Whether `key` edits the message rather than going to the keymap.
    pub fn captures(&self, key: &KeyEvent) -> bool {
        self.message.is_some()
            && key.kind != KeyEventKind::Release
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            && matches!(key.code, KeyCode::Char(_) | KeyCode::Backspace)
    }

    /// Edits the message with a key [`Self::captures`]; control characters are never typed.
    pub fn edit(&mut self, key: &KeyEvent) {
        let Some(message) = &mut self.message else {
            return;
        };
        match key.code {
            KeyCode::Backspace => {
                message.pop();
            }
            KeyCode::Char(ch) if !is_unsafe(ch) && message.chars().count() < MAX_MESSAGE => {
                message.push(ch);
            }
            _ => {}
        }
    }

    /// Whether `action` means something now.
    pub fn offers(&self, action: Action, agents: &[AgentView]) -> bool {
        let typing = self.message.is_some();
        match action {
            Action::Confirm => typing,
            Action::Cancel => true,
            Action::Up | Action::Down | Action::Attach | Action::CancelSelected => !typing,
            Action::Follow => !typing && self.back > 0,
            Action::Message | Action::Interrupt => !typing && self.live(agents),
            _ => false,
        }
    }

    /// Carries out `action` (one the pane [offers](Self::offers)).
    pub fn update(&mut self, action: Action, agents: &[AgentView]) -> Outcome {
        if !self.offers(action, agents) {
            return Outcome::Stay;
        }
        let lines = self.agent(agents).map_or(0, |agent| agent.tail.len());
        match action {
            Action::Up => self.back = (self.back + 1).min(lines.saturating_sub(1)),
            Action::Down => self.back = self.back.saturating_sub(1),
            Action::Follow => self.back = 0,
            Action::Message => self.message = Some(String::new()),
            Action::Cancel if self.message.is_some() => self.message = None,
            Action::Cancel => return Outcome::Close,
            Action::Confirm => {
                let text = self.message.take().unwrap_or_default();
                if text.trim().is_empty() {
                    return Outcome::Stay;
                }
                return Outcome::Send(Request::Message {
                    task_id: self.task_id.clone(),
                    attempt_id: self.attempt_id.clone(),
                    text,
                });
            }
            Action::Interrupt => {
                return Outcome::Send(Request::InterruptAgent {
                    task_id: self.task_id.clone(),
                    attempt_id: self.attempt_id.clone(),
                });
            }
            Action::Attach => {
                return Outcome::Send(Request::Attach {
                    attempt_id: self.attempt_id.clone(),
                });
            }
            Action::CancelSelected => {
                return Outcome::CancelItem {
                    task_id: self.task_id.clone(),
                    work_item_id: self.work_item_id.clone(),
                };
            }
            _ => {}
        }
        Outcome::Stay
    }

    /// Draws the pane into `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let muted = ctx.style(Slot::Muted);
        let title = format!(
            " Agent · {} / {} · {} ",
            self.task_id, self.work_item_id, self.attempt_id
        );
        let agent = self.agent(&ctx.view.agents);
        let lines = agent.map_or(0, |agent| agent.tail.len());
        let position = if self.back == 0 {
            " following ".to_owned()
        } else {
            format!(" {} of {lines} lines up ", self.back)
        };
        let block = Block::bordered()
            .border_style(ctx.style(Slot::FocusBorder))
            .padding(Padding::horizontal(1))
            .title(fit(
                Line::from(span(&title, ctx.style(Slot::Title))),
                area.width.saturating_sub(2),
            ))
            .title_bottom(fit(
                Line::from(span(&position, muted)),
                area.width.saturating_sub(2),
            ));
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = inner.width;
        let Some(agent) = agent else {
            frame.render_widget(
                Paragraph::new(fit(
                    Line::from(span("No agent state recorded for this attempt.", muted)),
                    width,
                )),
                inner,
            );
            return;
        };
        let mut head = vec![fit(
            Line::from(span(&agent.headline(), ctx.style(state_slot(&agent.state)))),
            width,
        )];
        head.push(fit(
            Line::from(span(
                &format!(
                    "{} for {} s{}",
                    agent.state,
                    agent.for_ms / 1000,
                    agent
                        .note
                        .as_ref()
                        .map(|note| format!(" · {note}"))
                        .unwrap_or_default()
                ),
                muted,
            )),
            width,
        ));
        let mut foot = Vec::new();
        if let Some(message) = &self.message {
            foot.push(fit(
                Line::from(vec![
                    span("message › ", ctx.style(Slot::Key)),
                    span(message, ctx.style(Slot::Base)),
                    span("▏", ctx.style(Slot::Accent)),
                ]),
                width,
            ));
        } else if !agent.attach.is_empty() {
            foot.push(fit(
                Line::from(span(&format!("attach: {}", agent.attach), muted)),
                width,
            ));
        }
        let rows = |lines: &[Line]| u16::try_from(lines.len()).unwrap_or(u16::MAX);
        let [head_area, tail_area, foot_area] = inner.layout(&Layout::vertical([
            Constraint::Length(rows(&head)),
            Constraint::Fill(1),
            Constraint::Length(rows(&foot)),
        ]));
        frame.render_widget(Paragraph::new(head), head_area);
        frame.render_widget(Paragraph::new(foot), foot_area);
        let end = lines.saturating_sub(self.back);
        let start = end.saturating_sub(usize::from(tail_area.height));
        let tail: Vec<Line> = agent.tail[start..end]
            .iter()
            .map(|line| fit(Line::from(span(line, ctx.style(Slot::Base))), width))
            .collect();
        let block = Block::new().style(ctx.style(Slot::Base));
        frame.render_widget(Paragraph::new(tail).block(block), tail_area);
    }
}

/// The style of an agent state: blocked needs the Leader, working runs, idle is ready.
fn state_slot(state: &str) -> Slot {
    match state {
        "blocked" => Slot::StatusAttention,
        "working" => Slot::StatusRunning,
        "idle" => Slot::StatusReady,
        "exited" => Slot::StatusFailed,
        "starting" => Slot::StatusPending,
        _ => Slot::Base,
    }
}
