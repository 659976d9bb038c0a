//! The redirect dialog: the Leader types the task's new intent (one line) and marks the work
//! items it supersedes, then reviews the whole in a confirmation [`Dialog`].
//!
//! Two fields share the keys: while the intent has the focus, printable keys and Backspace edit
//! it (they never reach the keymap); Tab moves to the work-item list, where the `[redirect]`
//! table applies (cursor keys, Space marks). Enter opens the confirmation, Esc closes the dialog.
//! The list holds the task's work items as they were when the dialog opened; their statuses are
//! read from the current view.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph};
use unicode_width::UnicodeWidthStr;

use super::action::Action;
use super::app::Ctx;
use super::dialog::Dialog;
use super::keymap::{Mode, keys_text};
use super::selection::items_of;
use super::text::{Cut, cell, fit, is_unsafe, row, span, widths};
use super::theme::Slot;
use valp_view::ItemRow;

/// Widest the dialog gets.
const MAX_WIDTH: u16 = 76;
/// Longest intent, in characters.
pub const MAX_INTENT: usize = 500;
/// What the dialog says when Enter is pressed with no intent typed.
const NO_INTENT: &str = "Type the new intent first.";

/// Which part of the dialog has the keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The intent text.
    Intent,
    /// The work-item list.
    Items,
}

/// A redirect being prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    task_id: String,
    /// The task's work items when the dialog opened, each with whether it is marked.
    items: Vec<(String, bool)>,
    intent: String,
    field: Field,
    cursor: usize,
    problem: Option<&'static str>,
}

impl Redirect {
    /// A dialog for `task_id`, listing `items`, nothing typed or marked.
    pub fn new(task_id: &str, items: &[&ItemRow]) -> Self {
        Self {
            task_id: task_id.to_owned(),
            items: items
                .iter()
                .map(|item| (item.work_item_id.clone(), false))
                .collect(),
            intent: String::new(),
            field: Field::Intent,
            cursor: 0,
            problem: None,
        }
    }

    /// Whether `key` edits the intent rather than going to the keymap.
    pub fn captures(&self, key: &KeyEvent) -> bool {
        self.field == Field::Intent
            && key.kind != KeyEventKind::Release
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            && matches!(key.code, KeyCode::Char(_) | KeyCode::Backspace)
    }

    /// Edits the intent with a key [`Self::captures`]: a printable character is appended (up to
    /// [`MAX_INTENT`]), Backspace removes the last one. Control characters are never typed.
    pub fn edit(&mut self, key: &KeyEvent) {
        match key.code {
            KeyCode::Backspace => {
                self.intent.pop();
            }
            KeyCode::Char(ch) if !is_unsafe(ch) && self.intent.chars().count() < MAX_INTENT => {
                self.intent.push(ch);
            }
            _ => return,
        }
        self.problem = None;
    }

    /// Whether `action` does anything in the current field.
    pub const fn offers(&self, action: Action) -> bool {
        match action {
            Action::Up | Action::Down | Action::Toggle => matches!(self.field, Field::Items),
            _ => true,
        }
    }

    /// Carries out `action`; a confirmation returns the dialog that reviews the redirect (or
    /// nothing, and a reminder on screen, when no intent is typed).
    pub fn update(&mut self, action: Action) -> Option<Dialog> {
        match action {
            Action::NextPane | Action::PreviousPane => {
                self.field = match self.field {
                    Field::Intent if !self.items.is_empty() => Field::Items,
                    _ => Field::Intent,
                };
            }
            Action::Up if self.field == Field::Items => self.cursor = self.cursor.saturating_sub(1),
            Action::Down if self.field == Field::Items => {
                self.cursor = (self.cursor + 1).min(self.items.len().saturating_sub(1));
            }
            Action::Toggle if self.field == Field::Items => {
                if let Some((_, marked)) = self.items.get_mut(self.cursor) {
                    *marked = !*marked;
                }
            }
            Action::Confirm => {
                let intent = self.intent.trim();
                if intent.is_empty() {
                    self.problem = Some(NO_INTENT);
                    self.field = Field::Intent;
                    return None;
                }
                let superseded = self
                    .items
                    .iter()
                    .filter(|(_, marked)| *marked)
                    .map(|(id, _)| id.clone())
                    .collect();
                return Some(Dialog::redirect(&self.task_id, intent, superseded));
            }
            _ => {}
        }
        None
    }

    /// Draws the dialog centred over `area`.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        let (key, muted) = (ctx.style(Slot::Key), ctx.style(Slot::Muted));
        let confirm = keys_text(&ctx.keymap.keys(Mode::Redirect, Action::Confirm));
        let cancel = keys_text(&ctx.keymap.keys(Mode::Redirect, Action::Cancel));
        let width = area.width.min(MAX_WIDTH);
        let inner_width = width.saturating_sub(4);
        let block = Block::bordered()
            .border_style(ctx.style(Slot::FocusBorder))
            .padding(Padding::horizontal(1))
            .title(fit(
                Line::from(span(
                    &format!(" Redirect task {} ", self.task_id),
                    ctx.style(Slot::Title),
                )),
                width.saturating_sub(2),
            ))
            .title_bottom(fit(
                Line::from(vec![
                    span(" ", muted),
                    span(&confirm, key),
                    span(" to review, ", muted),
                    span(&cancel, key),
                    span(" to cancel ", muted),
                ]),
                width.saturating_sub(2),
            ));

        let label = |text: &str, field: Field| {
            let slot = if self.field == field {
                Slot::Title
            } else {
                Slot::Muted
            };
            fit(Line::from(span(text, ctx.style(slot))), inner_width)
        };
        let mut top = vec![
            label("New intent", Field::Intent),
            self.intent_line(ctx, inner_width),
            Line::default(),
            label(
                "Superseded work items (marked ones are cancelled)",
                Field::Items,
            ),
        ];
        let mut bottom = Vec::new();
        if let Some(problem) = self.problem {
            bottom.push(Line::default());
            bottom.push(fit(
                Line::from(span(problem, ctx.style(Slot::AlertError))),
                inner_width,
            ));
        }
        let fixed = u16::try_from(top.len() + bottom.len()).unwrap_or(u16::MAX) + 2;
        let wanted = u16::try_from(self.items.len().max(1)).unwrap_or(u16::MAX);
        let height = fixed.saturating_add(wanted).min(area.height);
        let rows = usize::from(height.saturating_sub(fixed)).max(1);
        top.extend(self.item_lines(ctx, inner_width, rows));
        top.extend(bottom);

        let popup = area.centered(Constraint::Length(width), Constraint::Length(height));
        frame.render_widget(Clear, popup);
        frame.render_widget(Paragraph::new(top).block(block), popup);
    }

    /// The intent as typed, its end in view, with a cursor while it has the focus.
    fn intent_line(&self, ctx: &Ctx, width: u16) -> Line<'static> {
        let focused = self.field == Field::Intent;
        let room = usize::from(width.saturating_sub(3));
        let shown = if self.intent.width() <= room {
            self.intent.clone()
        } else {
            let mut tail: Vec<char> = Vec::new();
            let mut used = 1;
            for ch in self.intent.chars().rev() {
                used += unicode_width::UnicodeWidthChar::width(ch).unwrap_or(0);
                if used > room {
                    break;
                }
                tail.push(ch);
            }
            format!("…{}", tail.iter().rev().collect::<String>())
        };
        let mut spans: Vec<Span<'static>> = vec![
            span("› ", ctx.style(Slot::Key)),
            span(&shown, ctx.style(Slot::Base)),
        ];
        if focused {
            spans.push(span(" ", ctx.style(Slot::Selection)));
        } else if self.intent.is_empty() {
            spans.push(span("(nothing typed yet)", ctx.style(Slot::Muted)));
        }
        fit(Line::from(spans), width)
    }

    /// At most `rows` rows of the work-item list, scrolled to the cursor.
    fn item_lines(&self, ctx: &Ctx, width: u16, rows: usize) -> Vec<Line<'static>> {
        if self.items.is_empty() {
            return vec![fit(
                Line::from(span("This task has no work items.", ctx.style(Slot::Muted))),
                width,
            )];
        }
        let current = items_of(ctx.view, &self.task_id);
        let columns = widths(
            width,
            [
                Constraint::Length(1),
                Constraint::Length(3),
                Constraint::Fill(2),
                Constraint::Length(9),
                Constraint::Fill(3),
            ],
        );
        let focused = self.field == Field::Items;
        let offset = (self.cursor + 1).saturating_sub(rows);
        self.items
            .iter()
            .enumerate()
            .skip(offset)
            .take(rows)
            .map(|(at, (id, marked))| {
                let item = current.iter().find(|item| item.work_item_id == *id);
                let status = item.map_or("gone", |item| item.status.as_str());
                let position = item.map_or("", |item| item.position.as_str());
                let under_cursor = focused && at == self.cursor;
                let line = row([
                    cell(
                        if under_cursor { "›" } else { "" },
                        columns[0],
                        Cut::End,
                        ctx.style(Slot::Accent),
                    ),
                    cell(
                        if *marked { "[x]" } else { "[ ]" },
                        columns[1],
                        Cut::End,
                        ctx.style(if *marked {
                            Slot::AlertWarn
                        } else {
                            Slot::Muted
                        }),
                    ),
                    cell(id, columns[2], Cut::Middle, ctx.style(Slot::Base)),
                    cell(
                        status,
                        columns[3],
                        Cut::End,
                        ctx.style(Slot::of_status(status)),
                    ),
                    cell(position, columns[4], Cut::End, ctx.style(Slot::Muted)),
                ]);
                if under_cursor {
                    line.style(ctx.style(Slot::Selection))
                } else {
                    line
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::{Field, MAX_INTENT, Redirect};
    use crate::Action;

    fn typed(redirect: &mut Redirect, text: &str) {
        for ch in text.chars() {
            let key = KeyEvent::from(KeyCode::Char(ch));
            assert!(redirect.captures(&key));
            redirect.edit(&key);
        }
    }

    #[test]
    fn the_intent_takes_printable_keys_only_and_is_bounded() {
        let mut redirect = Redirect::new("task", &[]);
        typed(&mut redirect, "ab c");
        redirect.edit(&KeyEvent::from(KeyCode::Backspace));
        redirect.edit(&KeyEvent::from(KeyCode::Char('\u{1b}')));
        redirect.edit(&KeyEvent::from(KeyCode::Char('\u{202e}')));
        assert_eq!(redirect.intent, "ab ");
        assert!(!redirect.captures(&KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
        assert!(!redirect.captures(&KeyEvent::from(KeyCode::Enter)));
        typed(&mut redirect, &"x".repeat(MAX_INTENT));
        assert_eq!(redirect.intent.chars().count(), MAX_INTENT);
    }

    #[test]
    fn with_no_work_items_the_focus_stays_on_the_intent() {
        let mut redirect = Redirect::new("task", &[]);
        redirect.update(Action::NextPane);
        assert_eq!(redirect.field, Field::Intent);
        assert!(redirect.update(Action::Confirm).is_none());
        assert!(redirect.problem.is_some());
    }
}
