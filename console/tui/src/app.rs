//! The app: the current [`ConsoleView`], the UI state around it (candidate list, pane focus and
//! cursors, dialogs, help, last notice), the pure `handle`/`update` that turn events into
//! [`Effect`]s, and the layout that composes the panes.
//!
//! Nothing here does IO: the event loop in [`super::run`] (or a test) carries out the effects.
//! The UI never changes a task or the lane by itself: it sends a [`Request`] and shows the
//! backend's confirmation or refusal, then re-reads the view. State-changing requests come only
//! from:
//!
//! - confirming a dialog: a first selection ([`Request::Select`]) or a rotation from the
//!   read-only lists ([`Request::Rotate`]); on the main screen, cancelling the selected task or
//!   work item ([`Request::Cancel`]), a redirect ([`Request::Redirect`]), a review or approval
//!   decision ([`Request::Review`], [`Request::Approve`]), a retry of a blocked work item
//!   ([`Request::Retry`]) or a recovery of a blocked or fixing task ([`Request::Recover`]);
//! - on the main screen only, `interrupt` and `resume` ([`Request::Interrupt`],
//!   [`Request::Resume`]), which are reversible and need no dialog.
//!
//! The Agent pane ([`AgentPane`], opened on a work item with a terminal agent) sends a message
//! ([`Request::Message`]), the agent's interrupt keys ([`Request::InterruptAgent`]) or an
//! attach ([`Request::Attach`]), and opens the work item's cancel dialog.
//!
//! The read-only screen sends none of these, whatever the keymap says: those actions mean
//! something only in [`Mode::Main`]. The state machine view ([`Machine`]) offers the same
//! dialogs (and interrupt and resume) for the allowed transitions it lists, on the main screen
//! only; opening and closing it sends [`Request::Explain`], which changes nothing.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::Style;

use super::action::Action;
use super::agent::{AgentPane, Outcome};
use super::candidates::{CandidateList, Filter};
use super::config::Config;
use super::dialog::Dialog;
use super::event::{Effect, Event};
use super::keymap::{Key, Keymap, Mode};
use super::machine::{Choice, Machine};
use super::paint;
use super::prompt::{self, Command, Prompt, Purpose};
use super::redirect::Redirect;
use super::selection::{Pane, Selection};
use super::theme::{Slot, Theme};
use super::{
    banner, body, detail, filter, footer, help, intro, leader, motion, opening, title, workflow,
};
use std::cell::{Cell, RefCell};

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};
use std::collections::BTreeSet;

use valp_view::{ConsoleView, NeedRow, Refusal, Request, SessionCheck, TaskRow};

/// The task status in which the Leader's review decision is offered.
const REVIEWING: &str = "reviewing";
/// The task status in which the Leader's approval decision is offered.
const APPROVAL_REQUIRED: &str = "approval_required";
/// The status (of a task or a work item) from which the Leader retries or recovers.
const BLOCKED: &str = "blocked";
/// The task status in which the Leader may dispatch the task again.
const FIXING: &str = "fixing";
/// The task status in which the System runs attempts.
const EXECUTING: &str = "executing";

/// The main screen's actions that propose something or write under the control root: the
/// ones read-only mode refuses in words.
const OPERATIONS: [Action; 13] = [
    Action::CancelSelected,
    Action::Interrupt,
    Action::Resume,
    Action::Redirect,
    Action::PassReview,
    Action::RejectReview,
    Action::GrantApproval,
    Action::DenyApproval,
    Action::RetryItem,
    Action::Recover,
    Action::Acknowledge,
    Action::AllowRequest,
    Action::DenyRequest,
];

/// Rows one wheel step moves.
const WHEEL_ROWS: usize = 3;

/// How long a confirmation stays in the footer.
pub const NOTICE_MS: i64 = 15_000;
/// How long a refusal stays in the footer.
pub const REFUSAL_MS: i64 = 60_000;

/// What the footer shows after a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A request the user made, on its way: the backend has not answered yet.
    Pending(Request),
    /// The backend's confirmation.
    Done(String),
    /// The backend's refusal, shown with its code.
    Refused(Refusal),
    /// How far the backend got opening the control root (never stored: drawn while the view
    /// is a partial one and the open has taken more than [`OPENING_SHOWN_MS`]).
    Opening(String),
}

/// How long an open may take before the footer shows its progress.
pub const OPENING_SHOWN_MS: u64 = 100;

/// What panes read while they draw.
pub struct Ctx<'a> {
    /// The view.
    pub view: &'a ConsoleView,
    /// The keymap, for hints.
    pub keymap: &'a Keymap,
    /// The pane focus and cursors.
    pub selection: &'a Selection,
    /// What the footer offers: the mode's actions that mean something right now, with keys.
    pub hints: Vec<(Action, Vec<Key>)>,
    theme: &'a Theme,
    /// The `/` filter in force (empty: none), for the title line.
    pub filter: &'a str,
    /// Where each task pane is drawn (the body records it, clicks read it).
    pub pane_areas: &'a RefCell<Vec<(Pane, Rect)>>,
    /// Where each row of a task pane is drawn (the lists record it, clicks read it).
    pub row_areas: &'a RefCell<Vec<(Pane, Rect, usize)>>,
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
    /// The view as the backend gave it.
    full: ConsoleView,
    /// What is on screen: [`Self::full`] through the `/` filter (the cursors index it).
    view: ConsoleView,
    /// The `/` filter in force (empty: none).
    filter: String,
    /// The `:` palette or the `/` prompt, while open.
    prompt: Option<Prompt>,
    /// The candidate list on screen: always on first run, on `r`/`s` in read-only mode.
    list: Option<CandidateList>,
    dialog: Option<Dialog>,
    /// The redirect dialog (under the confirmation dialog while that reviews it).
    redirect: Option<Redirect>,
    /// The Agent pane, in the body's place while open (main screen only).
    agent: Option<AgentPane>,
    /// The state machine view, over the screen until closed.
    machine: Option<Machine>,
    selection: Selection,
    help: bool,
    notice: Option<Notice>,
    dirty: bool,
    /// Needs already announced by the bell or desktop notification (each once).
    alerted: BTreeSet<String>,
    /// What the loop should write to the terminal to announce needs, if anything.
    alert: Option<String>,
    /// The need `n` jumped to last (its key), so the next `n` goes on from it.
    jumped: Option<String>,
    /// How far the help overlay is scrolled down, and the most its text allowed when last
    /// drawn (drawing takes `&self`; the keys that scroll stop there).
    help_scroll: usize,
    help_most: Cell<usize>,
    /// The detail view, while open: how far it is scrolled, and the most its text allowed when
    /// last drawn.
    detail: Option<usize>,
    detail_most: Cell<usize>,
    /// The notice on screen and the view time it was first drawn at, for expiry.
    noted: Option<(Notice, i64)>,
    /// Where each task pane was drawn last (for clicks; drawing takes `&self`).
    pane_areas: RefCell<Vec<(Pane, Rect)>>,
    /// Where each row of those panes was drawn last: pane, rows, index.
    row_areas: RefCell<Vec<(Pane, Rect, usize)>>,
    /// How long the console had been opening at the last [`Event::Opening`].
    opening_ms: u64,
}

impl App {
    /// An app showing `view`.
    pub fn new(config: Config, view: ConsoleView) -> Self {
        let mut app = Self {
            config,
            full: view.clone(),
            view,
            filter: String::new(),
            prompt: None,
            list: None,
            dialog: None,
            redirect: None,
            agent: None,
            machine: None,
            selection: Selection::new(),
            help: false,
            notice: None,
            dirty: true,
            alerted: BTreeSet::new(),
            alert: None,
            jumped: None,
            help_scroll: 0,
            help_most: Cell::new(0),
            detail: None,
            detail_most: Cell::new(0),
            noted: None,
            pane_areas: RefCell::new(Vec::new()),
            row_areas: RefCell::new(Vec::new()),
            opening_ms: 0,
        };
        app.sync_list();
        app.check_alerts();
        app
    }

    /// Whether the backend is still opening the control root (the view is a partial one).
    pub fn opening(&self) -> bool {
        self.full.opening.is_some()
    }

    /// The footer's word on the open in progress, once it has taken a moment.
    fn opening_notice(&self) -> Option<Notice> {
        let progress = self.full.opening.as_ref()?;
        (self.opening_ms >= OPENING_SHOWN_MS)
            .then(|| Notice::Opening(opening::progress(progress, self.opening_ms)))
    }

    /// The view on screen.
    pub fn view(&self) -> &ConsoleView {
        &self.view
    }

    /// The last confirmation or refusal.
    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    /// The focused pane of the main (or read-only) screen.
    pub fn focus(&self) -> Pane {
        self.selection.focus()
    }

    /// The cursor of `pane` (an index into its rows).
    pub fn cursor(&self, pane: Pane) -> usize {
        self.selection.cursor(pane)
    }

    /// The selected task, if any.
    pub fn selected_task(&self) -> Option<&TaskRow> {
        self.selection.task(&self.view)
    }

    /// The id of the work item under the Work items cursor, if any.
    pub fn selected_item(&self) -> Option<&str> {
        self.selection
            .item(&self.view)
            .map(|item| item.work_item_id.as_str())
    }

    /// The request the open confirmation dialog would send.
    pub fn pending(&self) -> Option<&Request> {
        self.dialog.as_ref().map(Dialog::request)
    }

    /// The mode keys are read in.
    pub fn mode(&self) -> Mode {
        if self.help {
            Mode::Help
        } else if self.prompt.is_some() {
            Mode::Prompt
        } else if self.detail.is_some() {
            Mode::Detail
        } else if self.dialog.is_some() {
            Mode::Dialog
        } else if self.redirect.is_some() {
            Mode::Redirect
        } else if self.agent.is_some() {
            Mode::Agent
        } else if self.machine.is_some() {
            Mode::Machine
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

    /// The bytes the loop should write to the terminal to announce needs that still wait after
    /// the configured delay (a bell, or an OSC 9 desktop notification), once per need.
    pub fn take_alert(&mut self) -> Option<String> {
        self.alert.take()
    }

    /// Clears a confirmation [`NOTICE_MS`] (a refusal [`REFUSAL_MS`]) after the view it was
    /// first seen with, by the view's clock; a request still pending stays.
    fn expire_notice(&mut self) {
        let now = self.view.now_ms;
        match (&self.notice, &self.noted) {
            (Some(notice), Some((noted, at))) if notice == noted => {
                let lasts = match notice {
                    Notice::Pending(_) | Notice::Opening(_) => return,
                    Notice::Done(_) => NOTICE_MS,
                    Notice::Refused(_) => REFUSAL_MS,
                };
                if now.saturating_sub(*at) >= lasts {
                    self.notice = None;
                    self.noted = None;
                    self.dirty = true;
                }
            }
            (Some(notice), _) => self.noted = Some((notice.clone(), now)),
            (None, _) => self.noted = None,
        }
    }

    /// Announces the unacknowledged needs that have waited the configured delay and were not
    /// announced yet.
    fn check_alerts(&mut self) {
        let Some(delay) = self.config.notify.delay_ms() else {
            return;
        };
        let due: Vec<&NeedRow> = self
            .view
            .needs
            .iter()
            .filter(|need| {
                !need.acknowledged
                    && self.view.now_ms.saturating_sub(need.since_ms) >= delay
                    && !self.alerted.contains(&need.key)
            })
            .collect();
        let Some(first) = due.first() else {
            return;
        };
        let text = format!(
            "valp: {} {} waits for you{}",
            first.kind.title(),
            first.task_id,
            if due.len() > 1 {
                format!(" (and {} more)", due.len() - 1)
            } else {
                String::new()
            }
        );
        self.alert = self.config.notify.announce(&text);
        let keys: Vec<String> = due.iter().map(|need| need.key.clone()).collect();
        self.alerted.extend(keys);
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
            Event::Key(key) => {
                if self.mode() == Mode::Prompt
                    && Prompt::captures(&key)
                    && let Some(prompt) = &mut self.prompt
                {
                    prompt.edit(&key);
                    self.dirty = true;
                    return Vec::new();
                }
                if self.mode() == Mode::Redirect
                    && let Some(redirect) = &mut self.redirect
                    && redirect.captures(&key)
                {
                    redirect.edit(&key);
                    self.dirty = true;
                    return Vec::new();
                }
                if self.mode() == Mode::Agent
                    && let Some(agent) = &mut self.agent
                    && agent.captures(&key)
                {
                    agent.edit(&key);
                    self.dirty = true;
                    return Vec::new();
                }
                match self.config.keymap.action(self.mode(), &key) {
                    Some(action) => self.update(action),
                    None if self.mode() == Mode::ReadOnly => {
                        match self.config.keymap.action(Mode::Main, &key) {
                            Some(action) => self.refuse_read_only(action),
                            None => Vec::new(),
                        }
                    }
                    None => Vec::new(),
                }
            }
            Event::Resize => {
                self.dirty = true;
                Vec::new()
            }
            Event::Mouse(mouse) => self.mouse(mouse),
            Event::Tick => vec![Effect::Send {
                request: Request::Refresh,
                quiet: true,
            }],
            Event::Changed => vec![Effect::Reload],
            Event::Opening { elapsed_ms } => {
                let shown = |ms| ms >= OPENING_SHOWN_MS;
                self.dirty |= self.opening() && (shown(elapsed_ms) || shown(self.opening_ms));
                self.opening_ms = elapsed_ms;
                Vec::new()
            }
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
                    // Shown as is; the view is read again (it may be what the kernel judged
                    // against), unless nobody asked.
                    self.notice = Some(Notice::Refused(refusal));
                    self.dirty = true;
                    if quiet {
                        Vec::new()
                    } else {
                        vec![Effect::Reload]
                    }
                }
            },
            Event::Loaded(view) => {
                self.load(*view);
                self.check_alerts();
                self.expire_notice();
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
            (_, Action::Refresh) => return self.send(Request::Refresh),
            (Mode::Help, Action::Help | Action::Cancel) => self.help = false,
            (Mode::Detail, Action::Cancel) => self.detail = None,
            (Mode::Detail, action) if motion::is_motion(action) => {
                let most = self.detail_most.get();
                self.detail = self
                    .detail
                    .map(|scroll| motion::moved(scroll, most + 1, action));
            }
            // Only on a row: an empty pane has nothing to show.
            (Mode::Main | Mode::ReadOnly, Action::Details)
                if self.selection.len(self.selection.focus(), &self.view) > 0 =>
            {
                self.detail = Some(0);
            }
            (Mode::Prompt, Action::Cancel) => self.prompt = None,
            (Mode::Prompt, Action::Confirm) => return self.run_prompt(),
            (Mode::Prompt, action) => {
                if let Some(prompt) = &mut self.prompt {
                    prompt.update(action, &prompt::commands(&self.view));
                }
            }
            (Mode::Main | Mode::ReadOnly, Action::Palette) => {
                self.prompt = Some(Prompt::palette());
            }
            (Mode::Main | Mode::ReadOnly, Action::Filter) => {
                self.prompt = Some(Prompt::filter(&self.filter));
            }
            (Mode::Help, action) if motion::is_motion(action) => {
                let most = self.help_most.get();
                self.help_scroll = motion::moved(self.help_scroll, most + 1, action);
            }
            (_, Action::Help) => {
                self.help = true;
                self.help_scroll = 0;
            }
            (Mode::Dialog, Action::Confirm) => {
                if let Some(dialog) = self.dialog.take() {
                    self.redirect = None;
                    return self.send(dialog.into_request());
                }
            }
            // Back to the redirect dialog, if the confirmation reviewed one.
            (Mode::Dialog, Action::Cancel) => self.dialog = None,
            (Mode::Redirect, Action::Cancel) => self.redirect = None,
            (Mode::Redirect, action) => {
                if let Some(redirect) = &mut self.redirect
                    && let Some(dialog) = redirect.update(action)
                {
                    self.dialog = Some(dialog);
                }
            }
            (Mode::Agent, action) => return self.agent_action(action),
            (Mode::Main | Mode::ReadOnly, Action::StateMachine) => return self.open_machine(),
            (Mode::Machine, action) => return self.on_machine(action),
            (Mode::Main | Mode::ReadOnly, Action::NextPane) => self.selection.focus_next(),
            (Mode::Main | Mode::ReadOnly, Action::PreviousPane) => {
                self.selection.focus_previous();
            }
            (Mode::Main | Mode::ReadOnly, action) if motion::is_motion(action) => {
                self.selection.step(action, &self.view);
            }
            (Mode::Main | Mode::ReadOnly, Action::NextNeed) => {
                let next = self.next_need();
                self.selection.jump(&self.view, next);
                self.jumped = self.view.needs.get(next).map(|need| need.key.clone());
            }
            (Mode::Main, Action::Acknowledge) => return self.acknowledge(),
            (Mode::Main | Mode::Detail, Action::AllowRequest | Action::DenyRequest) => {
                return self.decide_request(action);
            }
            (Mode::Main, _) if self.offers(action) => return self.operate(action),
            (Mode::Picker, Action::Cancel) => self.list = None,
            (Mode::FirstRun | Mode::Picker, action) if motion::is_motion(action) => {
                if let Some(list) = &mut self.list {
                    list.update(action, &self.view);
                }
            }
            (Mode::FirstRun | Mode::Picker, Action::Choose) => {
                if let Some(list) = &self.list
                    && let Some(row) = list.selected(&self.view)
                {
                    self.dialog = Some(Dialog::choose(list.filter(), row, &self.view));
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

    /// An action in the state machine view: move, close (the backend stops carrying the
    /// machine), or choose an allowed transition (on the main screen only: same dialog, or same
    /// request, as its key).
    fn on_machine(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Cancel => {
                self.machine = None;
                self.dirty = true;
                vec![Effect::Send {
                    request: Request::Explain { task_id: None },
                    quiet: true,
                }]
            }
            Action::Up | Action::Down => {
                if let Some(machine) = &mut self.machine {
                    machine.step(action == Action::Up, &self.view);
                }
                self.dirty = true;
                Vec::new()
            }
            Action::Choose if self.screen() == Screen::Main => {
                match self.machine.as_ref().and_then(|m| m.choose(&self.view)) {
                    Some(Choice::Confirm(dialog)) => {
                        self.dialog = Some(dialog);
                        self.dirty = true;
                        Vec::new()
                    }
                    Some(Choice::Send(request)) => self.send(request),
                    None => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    /// Whether `action` means something right now (the footer offers only those). On the main
    /// screen the task actions need a selected task in the focused Tasks or Work items pane:
    /// cancel needs the selected row of the focused pane, interrupt a task that is not
    /// interrupted, resume one that is, the review decisions a task in `reviewing`, the approval
    /// decisions a task in `approval_required`, retry a blocked work item in the focused Work
    /// items pane, recover a task that is `blocked` or `fixing`.
    pub fn offers(&self, action: Action) -> bool {
        match self.mode() {
            Mode::Main => {
                let focus = self.selection.focus();
                let task = self
                    .selection
                    .task(&self.view)
                    .filter(|_| matches!(focus, Pane::Tasks | Pane::Items));
                match action {
                    Action::CancelSelected => match focus {
                        Pane::Tasks => task.is_some(),
                        Pane::Items => self.selection.item(&self.view).is_some(),
                        Pane::Observations | Pane::Rejections | Pane::Activity | Pane::Needs => {
                            false
                        }
                    },
                    Action::Interrupt => task.is_some_and(|task| !task.interrupted),
                    Action::Resume => task.is_some_and(|task| task.interrupted),
                    Action::Redirect | Action::StateMachine => task.is_some(),
                    Action::PassReview | Action::RejectReview => {
                        task.is_some_and(|task| task.status == REVIEWING)
                    }
                    Action::GrantApproval | Action::DenyApproval => {
                        task.is_some_and(|task| task.status == APPROVAL_REQUIRED)
                    }
                    Action::RetryItem => {
                        focus == Pane::Items
                            && task.is_some_and(|task| {
                                [EXECUTING, FIXING, BLOCKED].contains(&task.status.as_str())
                            })
                            && self
                                .selection
                                .item(&self.view)
                                .is_some_and(|item| item.status == BLOCKED)
                    }
                    Action::Recover => {
                        task.is_some_and(|task| task.status == BLOCKED || task.status == FIXING)
                    }
                    Action::Agent => focus == Pane::Items && self.selected_agent().is_some(),
                    Action::NextNeed | Action::Acknowledge => !self.view.needs.is_empty(),
                    Action::AllowRequest | Action::DenyRequest => self.selected_ask().is_some(),
                    _ => true,
                }
            }
            Mode::Agent => self
                .agent
                .as_ref()
                .is_none_or(|agent| agent.offers(action, &self.view.agents)),
            Mode::ReadOnly => action != Action::NextNeed || !self.view.needs.is_empty(),
            Mode::Detail => {
                !matches!(action, Action::AllowRequest | Action::DenyRequest)
                    || self.selected_ask().is_some()
            }
            Mode::Redirect => self
                .redirect
                .as_ref()
                .is_none_or(|redirect| redirect.offers(action)),
            _ => true,
        }
    }

    /// The need `n` goes to: the first unacknowledged one from the Needs-you cursor on
    /// (wrapping), after it when `n` already went there; the one after the cursor when every
    /// need is acknowledged.
    fn next_need(&self) -> usize {
        let needs = &self.view.needs;
        let cursor = self
            .selection
            .cursor(Pane::Needs)
            .min(needs.len().saturating_sub(1));
        let there = needs
            .get(cursor)
            .is_some_and(|need| self.jumped.as_ref() == Some(&need.key));
        let start = if there { cursor + 1 } else { cursor };
        let count = needs.len().max(1);
        (0..count)
            .map(|step| (start + step) % count)
            .find(|at| needs.get(*at).is_some_and(|need| !need.acknowledged))
            .unwrap_or(start % count)
    }

    /// In read-only mode, a task action (its main-screen key, or its palette command) is
    /// refused in words: why, and the two ways on (anything else does nothing, as before).
    fn refuse_read_only(&mut self, action: Action) -> Vec<Effect> {
        if self.mode() != Mode::ReadOnly || !OPERATIONS.contains(&action) {
            return Vec::new();
        }
        let reason = match &self.view.lane.session {
            SessionCheck::Unproven { reason } => reason.as_str(),
            SessionCheck::Unbound | SessionCheck::Reopened { .. } => "",
        };
        let ways: Vec<String> = [Action::Rebind, Action::SelectOther]
            .into_iter()
            .filter_map(|way| {
                let keys = self.config.keymap.keys(Mode::ReadOnly, way);
                (!keys.is_empty())
                    .then(|| format!("{} {}", crate::keymap::keys_text(&keys), way.describe()))
            })
            .collect();
        self.notice = Some(Notice::Refused(Refusal {
            code: "VALP-CONSOLE-READ-ONLY".to_owned(),
            message: format!(
                "{}: refused, the console is read-only because the Leader session is not \
                 re-proven ({reason}). Ways on: {}",
                action.label().trim_end_matches('…'),
                ways.join("; or ")
            ),
        }));
        self.dirty = true;
        Vec::new()
    }

    /// The wheel moves the cursor of the focused list (or scrolls the help and the detail
    /// view) three rows; a left click selects the row under the pointer (or focuses the pane).
    fn mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let steps = match mouse.kind {
            MouseEventKind::ScrollUp => Some(Action::Up),
            MouseEventKind::ScrollDown => Some(Action::Down),
            MouseEventKind::Down(MouseButton::Left) => {
                let at = Position::new(mouse.column, mouse.row);
                let row = self
                    .row_areas
                    .borrow()
                    .iter()
                    .find(|(_, area, _)| area.contains(at))
                    .map(|(pane, _, index)| (*pane, *index));
                let pane = self
                    .pane_areas
                    .borrow()
                    .iter()
                    .find(|(_, area)| area.contains(at))
                    .map(|(pane, _)| *pane);
                if matches!(self.mode(), Mode::Main | Mode::ReadOnly) {
                    if let Some((pane, index)) = row {
                        self.selection.focus_on(pane);
                        self.selection.select(pane, index);
                    } else if let Some(pane) = pane {
                        self.selection.focus_on(pane);
                    }
                    self.dirty = true;
                }
                None
            }
            _ => None,
        };
        let Some(action) = steps else {
            return Vec::new();
        };
        let mut effects = Vec::new();
        for _ in 0..WHEEL_ROWS {
            effects.extend(self.update(action));
        }
        effects
    }

    /// Runs the open prompt: the palette's chosen command, or the typed filter.
    fn run_prompt(&mut self) -> Vec<Effect> {
        let Some(prompt) = self.prompt.take() else {
            return Vec::new();
        };
        self.dirty = true;
        match prompt.purpose() {
            Purpose::Filter => {
                self.set_filter(prompt.text().trim());
                Vec::new()
            }
            Purpose::Palette => match prompt.chosen(&prompt::commands(&self.view)).cloned() {
                Some(Command::Act(action)) if self.mode() == Mode::ReadOnly => {
                    match self.update(action) {
                        effects if effects.is_empty() => self.refuse_read_only(action),
                        effects => effects,
                    }
                }
                Some(Command::Act(action)) => self.update(action),
                Some(Command::Theme(name)) => {
                    self.notice = Some(match self.config.use_theme(&name) {
                        Ok(()) => Notice::Done(format!("theme {name}")),
                        Err(error) => Notice::Refused(Refusal {
                            code: "VALP-CONSOLE-THEME".to_owned(),
                            message: error.to_string(),
                        }),
                    });
                    Vec::new()
                }
                Some(Command::Task(task)) => {
                    self.selection.select_task(&self.view, &task);
                    Vec::new()
                }
                None => {
                    self.notice = Some(Notice::Refused(Refusal {
                        code: "VALP-CONSOLE-NO-COMMAND".to_owned(),
                        message: format!(
                            "no command matches {:?}",
                            valp_view::sanitize::display_line(prompt.text())
                        ),
                    }));
                    Vec::new()
                }
            },
        }
    }

    /// Shows every list through `text` (empty: everything).
    fn set_filter(&mut self, text: &str) {
        text.clone_into(&mut self.filter);
        let old = std::mem::replace(&mut self.view, filter::filtered(&self.full, &self.filter));
        self.selection.reload(&old, &self.view);
    }

    /// The `/` filter in force (empty: none).
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Carries out a task action the main screen [offers](Self::offers).
    fn operate(&mut self, action: Action) -> Vec<Effect> {
        let Some(task) = self.selection.task(&self.view) else {
            return Vec::new();
        };
        let task_id = task.task_id.clone();
        match action {
            Action::CancelSelected if self.selection.focus() == Pane::Items => {
                if let Some(item) = self.selection.item(&self.view) {
                    self.dialog = Some(Dialog::cancel_item(item));
                }
            }
            Action::CancelSelected => self.dialog = Some(Dialog::cancel_task(task)),
            Action::PassReview => self.dialog = Some(Dialog::review(task, true)),
            Action::RejectReview => self.dialog = Some(Dialog::review(task, false)),
            Action::GrantApproval => self.dialog = Some(Dialog::approval(task, true)),
            Action::DenyApproval => self.dialog = Some(Dialog::approval(task, false)),
            Action::RetryItem => {
                if let Some(item) = self.selection.item(&self.view) {
                    self.dialog = Some(Dialog::retry(task, item));
                }
            }
            Action::Recover => self.dialog = Some(Dialog::recover(task)),
            Action::Redirect => {
                self.redirect = Some(Redirect::new(&task_id, &self.selection.items(&self.view)));
            }
            Action::Agent => {
                self.agent = self.selected_agent().map(AgentPane::new);
            }
            Action::Interrupt => return self.send(Request::Interrupt { task_id }),
            Action::Resume => return self.send(Request::Resume { task_id }),
            _ => return Vec::new(),
        }
        self.dirty = true;
        Vec::new()
    }

    /// The agent's pending permission request the request keys act on: the need under the
    /// Needs-you cursor while that pane has the focus; else the first request of the selected
    /// task (of the selected work item, from the Work items pane).
    fn selected_ask(&self) -> Option<(&NeedRow, &valp_view::AgentAsk)> {
        let needs = &self.view.needs;
        let with_ask = |need: &'_ NeedRow| need.ask.is_some();
        let need = match self.selection.focus() {
            Pane::Needs => needs
                .get(self.selection.cursor(Pane::Needs))
                .filter(|need| with_ask(need)),
            Pane::Tasks | Pane::Items => {
                let task = self.selection.task(&self.view)?;
                let item = self
                    .selection
                    .item(&self.view)
                    .filter(|_| self.selection.focus() == Pane::Items);
                needs.iter().find(|need| {
                    with_ask(need)
                        && need.task_id == task.task_id
                        && item.is_none_or(|item| {
                            need.work_item_id.as_deref() == Some(item.work_item_id.as_str())
                        })
                })
            }
            Pane::Observations | Pane::Rejections | Pane::Activity => None,
        }?;
        need.ask.as_ref().map(|ask| (need, ask))
    }

    /// Acknowledges the need under the Needs-you cursor (or takes its acknowledgement back).
    fn acknowledge(&mut self) -> Vec<Effect> {
        match self.view.needs.get(self.selection.cursor(Pane::Needs)) {
            Some(need) => self.send(Request::Acknowledge {
                key: need.key.clone(),
                seen: !need.acknowledged,
            }),
            None => Vec::new(),
        }
    }

    /// Opens the confirmation of an allow or deny of the selected agent request (closing the
    /// detail view it may come from); in read-only mode, the refusal in words.
    fn decide_request(&mut self, action: Action) -> Vec<Effect> {
        self.detail = None;
        self.dirty = true;
        if self.screen() != Screen::Main {
            return self.refuse_read_only(action);
        }
        if let Some((need, ask)) = self.selected_ask() {
            self.dialog = Some(Dialog::agent_request(
                need,
                ask,
                action == Action::AllowRequest,
            ));
        }
        Vec::new()
    }

    /// The terminal agent of the selected work item, if it has one.
    fn selected_agent(&self) -> Option<&valp_view::AgentView> {
        let item = self.selection.item(&self.view)?;
        self.view
            .agents
            .iter()
            .find(|agent| agent.task_id == item.task_id && agent.work_item_id == item.work_item_id)
    }

    /// Carries out an action of the Agent pane.
    fn agent_action(&mut self, action: Action) -> Vec<Effect> {
        let Some(agent) = &mut self.agent else {
            return Vec::new();
        };
        self.dirty = true;
        match agent.update(action, &self.view.agents) {
            Outcome::Stay => {}
            Outcome::Close => self.agent = None,
            Outcome::Send(request) => return self.send(request),
            Outcome::CancelItem {
                task_id,
                work_item_id,
            } => {
                let item = self
                    .view
                    .items
                    .iter()
                    .find(|item| item.task_id == task_id && item.work_item_id == work_item_id);
                if let Some(item) = item {
                    self.dialog = Some(Dialog::cancel_item(item));
                }
            }
        }
        Vec::new()
    }

    /// Opens the state machine view of the selected task (of the selected work item, from the
    /// Work items pane) and asks the backend to keep it in the view.
    fn open_machine(&mut self) -> Vec<Effect> {
        let Some(task) = self.selection.task(&self.view) else {
            return Vec::new();
        };
        let task_id = task.task_id.clone();
        let item = self
            .selection
            .item(&self.view)
            .filter(|_| self.selection.focus() == Pane::Items)
            .map(|item| item.work_item_id.clone());
        self.machine = Some(Machine::new(&task_id, item.as_deref()));
        self.dirty = true;
        vec![Effect::Send {
            request: Request::Explain {
                task_id: Some(task_id),
            },
            quiet: true,
        }]
    }

    /// Sends a request the user made; the footer shows it pending until the answer comes.
    fn send(&mut self, request: Request) -> Vec<Effect> {
        self.notice = Some(Notice::Pending(request.clone()));
        self.dirty = true;
        vec![Effect::Send {
            request,
            quiet: false,
        }]
    }

    /// Replaces the view; the cursors stay on their rows, and a dialog opened for another
    /// screen closes.
    fn load(&mut self, mut view: ConsoleView) {
        // Every read carries a new clock: a view that differs only in it is drawn again only
        // when an age on screen reads differently (an idle console drew a frame per tick).
        let now = std::mem::replace(&mut view.now_ms, self.full.now_ms);
        if view == self.full {
            self.dirty |= self.full.ages_read_differently_at(now);
            self.full.now_ms = now;
            self.view.now_ms = now;
            return;
        }
        view.now_ms = now;
        let old_screen = self.screen();
        let shown = filter::filtered(&view, &self.filter);
        self.full = view;
        let old = std::mem::replace(&mut self.view, shown);
        if self.screen() != old_screen {
            self.dialog = None;
            self.redirect = None;
            self.agent = None;
            self.detail = None;
        }
        if let Some(list) = &mut self.list {
            list.reload(&old, &self.view);
        }
        self.selection.reload(&old, &self.view);
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
        let mode = self.mode();
        let ctx = Ctx {
            view: &self.view,
            keymap: &self.config.keymap,
            selection: &self.selection,
            hints: self
                .config
                .keymap
                .hints(mode)
                .into_iter()
                .filter(|(action, _)| self.offers(*action))
                .collect(),
            theme: &self.config.theme,
            filter: &self.filter,
            pane_areas: &self.pane_areas,
            row_areas: &self.row_areas,
        };
        self.pane_areas.borrow_mut().clear();
        self.row_areas.borrow_mut().clear();
        paint::style(frame.buffer_mut(), area, ctx.style(Slot::Base));
        let opening = self.opening_notice();
        let notice = self.notice.as_ref().or(opening.as_ref());
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
                let footer_height = footer::height(&ctx, notice, area.width);
                // The workflow strip takes its rows from the body: the layout plan (full or
                // compact Leader pane, tabs) stays what the screen's size calls for.
                let strip = workflow::selected(&ctx).filter(|_| self.list.is_none());
                let strip_height = strip.map_or(0, |_| workflow::height(area.width));
                // The plan counts the footer as one notice row and one row of hints: a long
                // notice or hints that wrap take their extra rows from the body, so the Leader
                // pane does not flip to its compact form when a refusal shows or a key applies.
                let spare = area
                    .height
                    .saturating_sub(banner_height.saturating_add(1))
                    .saturating_sub(footer_height.min(footer::PLANNED_HEIGHT));
                let plan = body::plan(area.width, spare, leader::height(&self.view));
                let leader_height = if plan.compact_leader {
                    leader::COMPACT_HEIGHT
                } else {
                    leader::height(&self.view)
                };
                let [
                    title_area,
                    banner_area,
                    leader_area,
                    strip_area,
                    body_area,
                    footer_area,
                ] = area.layout(&Layout::vertical([
                    Constraint::Length(1),
                    Constraint::Length(banner_height),
                    Constraint::Length(leader_height),
                    Constraint::Length(strip_height),
                    Constraint::Fill(1),
                    Constraint::Length(footer_height),
                ]));
                if let Some(strip) = strip {
                    workflow::render(frame, strip_area, &ctx, strip);
                }
                title::render(frame, title_area, &ctx);
                if screen == Screen::ReadOnly {
                    banner::render(frame, banner_area, &ctx);
                }
                if plan.compact_leader {
                    leader::render_compact(frame, leader_area, &ctx);
                } else {
                    leader::render(frame, leader_area, &ctx);
                }
                match (&self.list, &self.agent) {
                    (Some(list), _) => list.render(frame, body_area, &ctx),
                    (None, Some(agent)) => agent.render(frame, body_area, &ctx),
                    (None, None) => body::render(frame, body_area, &ctx, plan.tabbed),
                }
                footer::render(frame, footer_area, &ctx, notice);
            }
        }
        self.render_overlays(frame, area, &ctx);
    }

    /// Draws what lies over the screen, bottom to top: the state machine view, the redirect
    /// dialog, the detail view, the palette or filter prompt, a confirmation, help.
    fn render_overlays(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        if let Some(machine) = &self.machine {
            machine.render(frame, area, ctx);
        }
        if let Some(redirect) = &self.redirect {
            redirect.render(frame, area, ctx);
        }
        if let Some(scroll) = self.detail {
            self.detail_most
                .set(detail::render(frame, area, ctx, scroll));
        }
        if let Some(prompt) = &self.prompt {
            prompt.render(frame, area, ctx, &prompt::commands(&self.view));
        }
        if let Some(dialog) = &self.dialog {
            dialog.render(frame, area, ctx);
        }
        if self.help {
            self.help_most
                .set(help::render(frame, area, ctx, self.help_scroll));
        }
    }
}
