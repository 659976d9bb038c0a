//! The one-line prompts: the `:` command palette and the `/` filter.
//!
//! Both take typed text (printable keys and Backspace never reach the keymap while a prompt is
//! open, as in the redirect dialog's intent field); the `[prompt]` keymap table gives the rest
//! (Enter runs, Esc closes, Tab completes, the cursor keys choose a palette entry).
//!
//! The palette lists every command that means something on the main screen: the actions (by
//! their keymap names, with their keys), `theme <name>` for each compiled-in theme, and
//! `task <id>` for each task (selects it). What is typed narrows the list to the entries that
//! contain it; Tab completes the typed text to the chosen entry, Enter runs it. The filter
//! keeps, in every list, the rows that contain the typed text (see [`super::filter`]); an
//! empty filter shows everything again.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::text::{Cut, cell, fit, is_unsafe, row, span};
use super::theme::{Slot, THEMES};
use valp_view::ConsoleView;

/// Longest text a prompt takes.
pub const MAX_TEXT: usize = 200;
/// Most palette entries shown at once.
const SHOWN: usize = 8;

/// What a prompt is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `:` run a command.
    Palette,
    /// `/` filter every list.
    Filter,
}

/// What running a palette entry does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// A keymap action, as if its key was pressed on the main screen.
    Act(Action),
    /// Switch to a compiled-in theme.
    Theme(String),
    /// Select a task.
    Task(String),
}

impl Command {
    /// The entry's text, which the typed text is matched against and completes to.
    pub fn text(&self) -> String {
        match self {
            Self::Act(action) => action.name().to_owned(),
            Self::Theme(name) => format!("theme {name}"),
            Self::Task(task) => format!("task {task}"),
        }
    }
}

/// An open prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    purpose: Purpose,
    text: String,
    /// The chosen entry among the matching ones (palette).
    chosen: usize,
}

impl Prompt {
    /// An empty palette.
    pub const fn palette() -> Self {
        Self {
            purpose: Purpose::Palette,
            text: String::new(),
            chosen: 0,
        }
    }

    /// The filter prompt, starting from the filter in force.
    pub fn filter(current: &str) -> Self {
        Self {
            purpose: Purpose::Filter,
            text: current.to_owned(),
            chosen: 0,
        }
    }

    /// What the prompt is for.
    pub const fn purpose(&self) -> Purpose {
        self.purpose
    }

    /// The typed text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the prompt takes `key` as typing.
    pub fn captures(key: &KeyEvent) -> bool {
        key.kind != KeyEventKind::Release
            && !key
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            && matches!(key.code, KeyCode::Char(_) | KeyCode::Backspace)
    }

    /// Types `key` (one [`Self::captures`]): a printable character is appended (up to
    /// [`MAX_TEXT`]), Backspace removes the last one.
    pub fn edit(&mut self, key: &KeyEvent) {
        match key.code {
            KeyCode::Backspace => {
                self.text.pop();
            }
            KeyCode::Char(ch) if !is_unsafe(ch) && self.text.chars().count() < MAX_TEXT => {
                self.text.push(ch);
            }
            _ => return,
        }
        self.chosen = 0;
    }

    /// Moves the choice (palette) or completes the typed text to the chosen entry.
    pub fn update(&mut self, action: Action, commands: &[Command]) {
        let count = self.matching(commands).len();
        match action {
            Action::Up => self.chosen = self.chosen.saturating_sub(1),
            Action::Down => self.chosen = (self.chosen + 1).min(count.saturating_sub(1)),
            Action::Complete => {
                if let Some(command) = self.matching(commands).get(self.chosen) {
                    self.text = command.text();
                    self.chosen = 0;
                }
            }
            _ => {}
        }
    }

    /// The entries that contain the typed text (case-insensitive), exact matches first.
    pub fn matching<'c>(&self, commands: &'c [Command]) -> Vec<&'c Command> {
        let typed = self.text.trim().to_lowercase();
        let mut found: Vec<&Command> = commands
            .iter()
            .filter(|command| command.text().to_lowercase().contains(&typed))
            .collect();
        found.sort_by_key(|command| command.text().to_lowercase() != typed);
        found
    }

    /// The palette entry Enter runs: the chosen one among those matching.
    pub fn chosen<'c>(&self, commands: &'c [Command]) -> Option<&'c Command> {
        self.matching(commands).get(self.chosen).copied()
    }

    /// Draws the prompt at the bottom of `area`, over the footer; the palette lists its
    /// matching entries above the typed line.
    pub fn render(&self, frame: &mut Frame, area: Rect, ctx: &Ctx, commands: &[Command]) {
        let (title, sign) = match self.purpose {
            Purpose::Palette => (" Command ", ":"),
            Purpose::Filter => (" Filter every list (empty: show all) ", "/"),
        };
        let matching = match self.purpose {
            Purpose::Palette => self.matching(commands),
            Purpose::Filter => Vec::new(),
        };
        let start = self.chosen.saturating_sub(SHOWN - 1);
        let shown: Vec<&Command> = matching.iter().skip(start).take(SHOWN).copied().collect();
        let rows = u16::try_from(shown.len()).unwrap_or(0) + 3;
        let height = rows.min(area.height);
        let popup = Rect {
            x: area.x,
            y: area.y + area.height.saturating_sub(height),
            width: area.width,
            height,
        };
        let complete = keys_text(&ctx.keymap.keys(Mode::Prompt, Action::Complete));
        let run = keys_text(&ctx.keymap.keys(Mode::Prompt, Action::Confirm));
        let close = keys_text(&ctx.keymap.keys(Mode::Prompt, Action::Cancel));
        let help = match self.purpose {
            Purpose::Palette => format!(" {complete} complete · {run} run · {close} close "),
            Purpose::Filter => format!(" {run} apply · {close} close "),
        };
        let block = Block::bordered()
            .border_style(ctx.style(Slot::FocusBorder))
            .title(span(title, ctx.style(Slot::Title)))
            .title_bottom(span(&help, ctx.style(Slot::Muted)));
        let inner = block.inner(popup);
        frame.render_widget(Clear, popup);
        frame.render_widget(block, popup);
        let width = inner.width;
        let mut lines: Vec<Line<'static>> = shown
            .iter()
            .enumerate()
            .map(|(at, command)| {
                let keys = match command {
                    Command::Act(action) => keys_text(&ctx.keymap.keys(Mode::Main, *action)),
                    Command::Theme(_) | Command::Task(_) => String::new(),
                };
                let what = match command {
                    Command::Act(action) => action.describe().to_owned(),
                    Command::Theme(_) => "switch to this theme".to_owned(),
                    Command::Task(_) => "select this task".to_owned(),
                };
                let line = row([
                    cell(&command.text(), 28, Cut::Middle, ctx.style(Slot::Base)),
                    cell(&keys, 10, Cut::End, ctx.style(Slot::Key)),
                    cell(
                        &what,
                        width.saturating_sub(40),
                        Cut::End,
                        ctx.style(Slot::Muted),
                    ),
                ]);
                if start + at == self.chosen {
                    line.style(ctx.style(Slot::Selection))
                } else {
                    line
                }
            })
            .collect();
        lines.push(fit(
            Line::from(vec![
                span(sign, ctx.style(Slot::Key)),
                span(&self.text, ctx.style(Slot::Base)),
                span("▏", ctx.style(Slot::Accent)),
            ]),
            width,
        ));
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

/// Every palette entry for `view`: the main screen's actions, the themes, the tasks.
pub fn commands(view: &ConsoleView) -> Vec<Command> {
    let actions = Action::ALL
        .into_iter()
        .filter(|action| {
            !matches!(
                action,
                Action::Choose
                    | Action::Confirm
                    | Action::Cancel
                    | Action::Toggle
                    | Action::Attach
                    | Action::Message
                    | Action::Follow
                    | Action::Complete
                    | Action::Palette
                    | Action::Up
                    | Action::Down
            )
        })
        .map(Command::Act);
    let themes = THEMES
        .iter()
        .map(|(name, _)| Command::Theme((*name).to_owned()));
    let tasks = view
        .tasks
        .iter()
        .map(|task| Command::Task(task.task_id.clone()));
    actions.chain(themes).chain(tasks).collect()
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent};

    use super::{Action, Command, Prompt};

    fn typed(text: &str) -> Prompt {
        let mut prompt = Prompt::palette();
        for ch in text.chars() {
            prompt.edit(&KeyEvent::from(KeyCode::Char(ch)));
        }
        prompt
    }

    #[test]
    fn typing_narrows_tab_completes_and_exact_matches_come_first() {
        let commands = [
            Command::Act(Action::PassReview),
            Command::Act(Action::RejectReview),
            Command::Theme("dark".to_owned()),
            Command::Task("review".to_owned()),
        ];
        let mut prompt = typed("review");
        let texts: Vec<String> = prompt
            .matching(&commands)
            .iter()
            .map(|c| c.text())
            .collect();
        assert_eq!(texts, ["pass_review", "reject_review", "task review"]);
        prompt.update(Action::Down, &commands);
        prompt.update(Action::Complete, &commands);
        assert_eq!(prompt.text(), "reject_review");
        assert_eq!(
            prompt.chosen(&commands),
            Some(&Command::Act(Action::RejectReview))
        );
        let mut dark = typed("DARK");
        assert_eq!(
            dark.chosen(&commands),
            Some(&Command::Theme("dark".to_owned()))
        );
        dark.edit(&KeyEvent::from(KeyCode::Backspace));
        assert_eq!(dark.text(), "DAR");
        assert_eq!(typed("nothing like it").chosen(&commands), None);
        // Control characters are never typed.
        assert_eq!(typed("a\u{1b}b").text(), "ab");
    }
}
