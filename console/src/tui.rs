//! The operator console: a full-screen terminal UI over a [`Backend`].
//!
//! The system fills a [`ConsoleView`](crate::view::ConsoleView); the UI renders it and turns
//! keys into [`Request`](crate::view::Request)s for the backend, showing its confirmation or
//! refusal. The pieces:
//!
//! - [`App`] holds the view and the UI state; [`App::handle`] turns an [`Event`] into
//!   [`Effect`]s without doing IO, and [`App::render`] composes one pane per module (`title`,
//!   `intro`, `banner`, `leader`, `candidates`, `footer`, `dialog`, `redirect`, `help`, and the
//!   task panes `tasks`, `items`, `observations`, `rejections`, `activity`, laid out by `body`
//!   over the shared `list`; `selection` holds the focus and cursors).
//! - [`dispatch`] carries out effects against the backend and feeds the answers back.
//! - [`run`] is the one event loop: terminal keys and resizes, a slow tick that asks for a
//!   refresh, and whatever a [`Notifier`] sends (something changed on disk) arrive on one
//!   channel; the screen is drawn only when the app says something changed.
//! - The [`Keymap`] and [`Theme`] are data: compiled-in TOML files, parsed into
//!   mode → key → [`Action`] and semantic [`Slot`] → style.

mod action;
mod activity;
mod app;
mod banner;
mod body;
mod candidates;
mod config;
mod dialog;
mod event;
mod footer;
mod help;
mod intro;
mod items;
mod keymap;
mod leader;
mod list;
mod observations;
mod redirect;
mod rejections;
mod selection;
mod tasks;
mod text;
mod theme;
mod title;

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::thread;
use std::time::{Duration, Instant};

use ratatui::DefaultTerminal;

pub use action::Action;
pub use app::{App, Notice};
pub use config::{Config, ConfigError};
pub use event::{Effect, Event};
pub use keymap::{DEFAULT_KEYMAP, Key, Keymap, KeymapError, Mode};
pub use redirect::MAX_INTENT;
pub use selection::Pane;
pub use theme::{DEFAULT_THEME, Slot, Theme, ThemeError};

use crate::view::Backend;

/// Events that may wait for the loop before senders block (keys) or give up (notifications).
const INBOX_CAPACITY: usize = 64;
/// How often the terminal reader checks whether the loop has ended.
const READER_POLL: Duration = Duration::from_millis(50);

/// Whether the loop goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// The user quit.
    Quit,
}

/// What the loop's channel carries.
enum Input {
    Event(Event),
    /// The terminal could not be read.
    Failed(io::Error),
}

/// The loop's channel. Create it before [`run`] to hand out [`Notifier`]s.
pub struct Inbox {
    sender: SyncSender<Input>,
    receiver: Receiver<Input>,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Self {
        let (sender, receiver) = std::sync::mpsc::sync_channel(INBOX_CAPACITY);
        Self { sender, receiver }
    }

    /// A handle that tells the loop something changed on disk.
    pub fn notifier(&self) -> Notifier {
        Notifier(self.sender.clone())
    }
}

impl Default for Inbox {
    fn default() -> Self {
        Self::new()
    }
}

/// Tells a running console that something changed on disk, so it re-reads the view.
#[derive(Clone)]
pub struct Notifier(SyncSender<Input>);

impl Notifier {
    /// Sends [`Event::Changed`]; it is dropped when the inbox is full (the slow tick refreshes
    /// anyway). Returns `false` once the console has ended.
    pub fn changed(&self) -> bool {
        !matches!(
            self.0.try_send(Input::Event(Event::Changed)),
            Err(TrySendError::Disconnected(_))
        )
    }
}

/// Runs the console full-screen until the user quits.
///
/// Takes over the terminal (raw mode, alternate screen, and a panic hook that gives it back, so
/// call this after installing any other panic hook), reads the first view from `backend`, and
/// restores the terminal on every way out.
pub fn run(backend: &mut dyn Backend, config: Config, inbox: Inbox) -> io::Result<()> {
    let mut terminal = match ratatui::try_init() {
        Ok(terminal) => terminal,
        Err(error) => {
            ratatui::restore();
            return Err(error);
        }
    };
    let result = event_loop(&mut terminal, backend, config, inbox);
    ratatui::restore();
    result
}

/// The one loop: draw when dirty, wait for an input or the tick, dispatch.
fn event_loop(
    terminal: &mut DefaultTerminal,
    backend: &mut dyn Backend,
    config: Config,
    inbox: Inbox,
) -> io::Result<()> {
    let tick = config.refresh_every;
    let mut app = App::new(config, backend.view());
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (sender, stop) = (inbox.sender.clone(), Arc::clone(&stop));
        thread::spawn(move || read_terminal(&sender, &stop))
    };
    let result = pump(terminal, backend, &mut app, &inbox.receiver, tick);
    stop.store(true, Ordering::Relaxed);
    // Dropping the receiver also releases a reader blocked on a full inbox.
    drop(inbox);
    let _ = reader.join();
    result
}

fn pump(
    terminal: &mut DefaultTerminal,
    backend: &mut dyn Backend,
    app: &mut App,
    inbox: &Receiver<Input>,
    tick: Duration,
) -> io::Result<()> {
    let mut next_tick = Instant::now() + tick;
    loop {
        if app.take_dirty() {
            terminal.draw(|frame| app.render(frame))?;
        }
        let first = match inbox.recv_timeout(next_tick.saturating_duration_since(Instant::now())) {
            Ok(input) => input,
            Err(RecvTimeoutError::Timeout) => {
                next_tick = Instant::now() + tick;
                Input::Event(Event::Tick)
            }
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        // Everything already waiting is handled before the next draw.
        for input in std::iter::once(first).chain(inbox.try_iter()) {
            match input {
                Input::Failed(error) => return Err(error),
                Input::Event(event) => {
                    if dispatch(app, backend, event) == Flow::Quit {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// Forwards terminal keys and resizes to the loop until `stop` is set or the loop is gone.
fn read_terminal(sender: &SyncSender<Input>, stop: &AtomicBool) {
    use crossterm::event::{self, Event as Terminal};
    while !stop.load(Ordering::Relaxed) {
        let input = match event::poll(READER_POLL) {
            Ok(false) => continue,
            Ok(true) => match event::read() {
                Ok(Terminal::Key(key)) => Input::Event(Event::Key(key)),
                Ok(Terminal::Resize(..)) => Input::Event(Event::Resize),
                Ok(_) => continue,
                Err(error) => Input::Failed(error),
            },
            Err(error) => Input::Failed(error),
        };
        let failed = matches!(input, Input::Failed(_));
        if sender.send(input).is_err() || failed {
            return;
        }
    }
}

/// Hands `event` to the app and carries out its effects against `backend`, feeding answers and
/// re-read views back to the app, until nothing is left to do.
pub fn dispatch(app: &mut App, backend: &mut dyn Backend, event: Event) -> Flow {
    let mut pending = VecDeque::from([event]);
    while let Some(event) = pending.pop_front() {
        for effect in app.handle(event) {
            match effect {
                Effect::Send { request, quiet } => {
                    let outcome = backend.request(&request);
                    pending.push_back(Event::Answered {
                        request,
                        quiet,
                        outcome,
                    });
                }
                Effect::Reload => pending.push_back(Event::Loaded(Box::new(backend.view()))),
                Effect::Quit => return Flow::Quit,
            }
        }
    }
    Flow::Continue
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::{Event, Inbox, Input};

    #[test]
    fn a_notifier_queues_a_change_until_the_console_is_gone() {
        let inbox = Inbox::new();
        let notifier = inbox.notifier();
        assert!(notifier.changed());
        assert!(matches!(
            inbox.receiver.try_recv(),
            Ok(Input::Event(Event::Changed))
        ));
        drop(inbox);
        assert!(!notifier.changed());
    }
}
