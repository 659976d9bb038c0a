//! The app: the current [`ConsoleView`], the UI state around it (candidate list, dialog, help,
//! last notice), the pure `handle`/`update` that turn events into [`Effect`]s, and the layout
//! that composes the panes.
//!
//! Nothing here does IO: the event loop in [`super::run`] (or a test) carries out the effects.
//! Only two things ever send a state-changing request: confirming a dialog opened from the
//! first-run list ([`Request::Select`]) and confirming one opened from a read-only rebind or
//! select list ([`Request::Rotate`]).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Style;
use ratatui::widgets::Block;

use super::action::Action;
use super::candidates::{CandidateList, Filter};
use super::config::Config;
use super::dialog::Dialog;
use super::event::{Effect, Event};
use super::keymap::{Keymap, Mode};
use super::theme::{Slot, Theme};
use super::{banner, footer, help, intro, leader, tasks, title};
use crate::view::{ConsoleView, Refusal, Request, SessionCheck};

/// What the footer shows after a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// The backend's confirmation.
    Done(String),
    /// The backend's refusal, shown with its code.
    Refused(Refusal),
}

/// What panes read while they draw.
pub struct Ctx<'a> {
    /// The view.
    pub view: &'a ConsoleView,
    /// The keymap, for hints.
    pub keymap: &'a Keymap,
    /// The mode keys are read in.
    pub mode: Mode,
    theme: &'a Theme,
}

impl Ctx<'_> {
    /// The theme's style for `slot`.
    pub fn style(&self, slot: Slot) -> Style {
        self.theme.style(slot)
    }
}

/// Which screen the lane's state calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Screen {
    FirstRun,
    Main,
    ReadOnly,
}

/// The console's state.
#[derive(Debug)]
pub struct App {
    config: Config,
    view: ConsoleView,
    /// The candidate list on screen: always on first run, on `r`/`s` in read-only mode.
    list: Option<CandidateList>,
    dialog: Option<Dialog>,
    help: bool,
    notice: Option<Notice>,
    dirty: bool,
}

impl App {
    /// An app showing `view`.
    pub fn new(config: Config, view: ConsoleView) -> Self {
        let mut app = Self {
            config,
            view,
            list: None,
            dialog: None,
            help: false,
            notice: None,
            dirty: true,
        };
        app.sync_list();
        app
    }

    /// The view on screen.
    pub fn view(&self) -> &ConsoleView {
        &self.view
    }

    /// The last confirmation or refusal.
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    /// The mode keys are read in.
    pub fn mode(&self) -> Mode {
        if self.help {
            Mode::Help
        } else if self.dialog.is_some() {
            Mode::Dialog
        } else {
            match self.screen() {
                Screen::FirstRun => Mode::FirstRun,
                Screen::Main => Mode::Main,
                Screen::ReadOnly if self.list.is_some() => Mode::Picker,
                Screen::ReadOnly => Mode::ReadOnly,
            }
        }
    }

    /// Whether something changed since the last call (the loop draws only then).
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    fn screen(&self) -> Screen {
        match self.view.lane.session {
            SessionCheck::Unbound => Screen::FirstRun,
            SessionCheck::Reopened { .. } => Screen::Main,
            SessionCheck::Unproven { .. } => Screen::ReadOnly,
        }
    }

    /// Handles one event; the loop carries out the returned effects in order.
    pub fn handle(&mut self, event: Event) -> Vec<Effect> {
        match event {
            Event::Key(key) => match self.config.keymap.action(self.mode(), &key) {
                Some(action) => self.update(action),
                None => Vec::new(),
            },
            Event::Resize => {
                self.dirty = true;
                Vec::new()
            }
            Event::Tick => vec![Effect::Send {
                request: Request::Refresh,
                quiet: true,
            }],
            Event::Changed => vec![Effect::Reload],
            Event::Answered {
                request,
                quiet,
                outcome,
            } => match outcome {
                Ok(message) => {
                    if !quiet {
                        self.notice = Some(Notice::Done(message));
                        self.dirty = true;
                    }
                    if matches!(request, Request::Rotate { .. }) {
                        self.list = None;
                    }
                    vec![Effect::Reload]
                }
                Err(refusal) => {
                    self.notice = Some(Notice::Refused(refusal));
                    self.dirty = true;
                    Vec::new()
                }
            },
            Event::Loaded(view) => {
                self.load(*view);
                Vec::new()
            }
        }
    }

    /// Carries out `action` in the current mode; an action that means nothing there changes
    /// nothing.
    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        let mode = self.mode();
        match (mode, action) {
            (_, Action::Quit) => return vec![Effect::Quit],
            (_, Action::Refresh) => {
                return vec![Effect::Send {
                    request: Request::Refresh,
                    quiet: false,
                }];
            }
            (Mode::Help, Action::Help | Action::Cancel) => self.help = false,
            (_, Action::Help) => self.help = true,
            (Mode::Dialog, Action::Confirm) => {
                if let Some(dialog) = self.dialog.take() {
                    self.notice = None;
                    self.dirty = true;
                    return vec![Effect::Send {
                        request: dialog.into_request(),
                        quiet: false,
                    }];
                }
            }
            (Mode::Dialog, Action::Cancel) => self.dialog = None,
            (Mode::Picker, Action::Cancel) => self.list = None,
            (Mode::FirstRun | Mode::Picker, Action::Up | Action::Down) => {
                if let Some(list) = &mut self.list {
                    list.update(action, &self.view);
                }
            }
            (Mode::FirstRun | Mode::Picker, Action::Choose) => {
                if let Some(list) = &self.list
                    && let Some(row) = list.selected(&self.view)
                {
                    self.dialog = Some(Dialog::new(list.filter(), row, &self.view));
                }
            }
            (Mode::ReadOnly, Action::Rebind) => {
                self.list = Some(CandidateList::new(Filter::Rebind));
            }
            (Mode::ReadOnly, Action::SelectOther) => {
                self.list = Some(CandidateList::new(Filter::Others));
            }
            _ => return Vec::new(),
        }
        self.dirty = true;
        Vec::new()
    }

    /// Replaces the view; the cursor stays on its candidate, and a dialog opened for another
    /// screen closes.
    fn load(&mut self, view: ConsoleView) {
        if view == self.view {
            return;
        }
        let old_screen = self.screen();
        let old = std::mem::replace(&mut self.view, view);
        if self.screen() != old_screen {
            self.dialog = None;
        }
        if let Some(list) = &mut self.list {
            list.reload(&old, &self.view);
        }
        self.sync_list();
        self.dirty = true;
    }

    /// Opens or closes the candidate list the screen calls for.
    fn sync_list(&mut self) {
        let filter = self.list.as_ref().map(CandidateList::filter);
        match self.screen() {
            Screen::FirstRun if filter != Some(Filter::All) => {
                self.list = Some(CandidateList::new(Filter::All));
            }
            Screen::Main => self.list = None,
            Screen::ReadOnly if filter == Some(Filter::All) => self.list = None,
            Screen::FirstRun | Screen::ReadOnly => {}
        }
    }

    /// Draws the whole screen.
    pub fn render(&self, frame: &mut Frame) {
        let area = frame.area();
        let ctx = Ctx {
            view: &self.view,
            keymap: &self.config.keymap,
            mode: self.mode(),
            theme: &self.config.theme,
        };
        frame.render_widget(Block::new().style(ctx.style(Slot::Base)), area);
        let notice = self.notice.as_ref();
        match self.screen() {
            Screen::FirstRun => {
                let [title_area, intro_area, list_area, footer_area] =
                    area.layout(&Layout::vertical([
                        Constraint::Length(1),
                        Constraint::Length(intro::height(&ctx, area.width)),
                        Constraint::Fill(1),
                        Constraint::Length(footer::height(&ctx, notice, area.width)),
                    ]));
                title::render(frame, title_area, &ctx);
                intro::render(frame, intro_area, &ctx);
                if let Some(list) = &self.list {
                    list.render(frame, list_area, &ctx);
                }
                footer::render(frame, footer_area, &ctx, notice);
            }
            screen @ (Screen::Main | Screen::ReadOnly) => {
                let banner_height = if screen == Screen::ReadOnly {
                    banner::height(&ctx, area.width)
                } else {
                    0
                };
                let [title_area, banner_area, leader_area, body_area, footer_area] =
                    area.layout(&Layout::vertical([
                        Constraint::Length(1),
                        Constraint::Length(banner_height),
                        Constraint::Length(leader::height(&self.view)),
                        Constraint::Fill(1),
                        Constraint::Length(footer::height(&ctx, notice, area.width)),
                    ]));
                title::render(frame, title_area, &ctx);
                if screen == Screen::ReadOnly {
                    banner::render(frame, banner_area, &ctx);
                }
                leader::render(frame, leader_area, &ctx);
                match &self.list {
                    Some(list) => list.render(frame, body_area, &ctx),
                    None => tasks::render(frame, body_area, &ctx),
                }
                footer::render(frame, footer_area, &ctx, notice);
            }
        }
        if let Some(dialog) = &self.dialog {
            dialog.render(frame, area, &ctx);
        }
        if self.help {
            help::render(frame, area, &ctx);
        }
    }
}
