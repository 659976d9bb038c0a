//! The operator console: a full-screen terminal UI over a [`Backend`].
//!
//! The system fills a [`ConsoleView`](valp_view::ConsoleView); the UI renders it and turns
//! keys into [`Request`](valp_view::Request)s for the backend, showing its confirmation or
//! refusal. The pieces:
//!
//! - [`App`] holds the view and the UI state; [`App::handle`] turns an [`Event`] into
//!   [`Effect`]s without doing IO, and [`App::render`] composes one pane per module (`title`,
//!   `intro`, `banner`, `leader`, `candidates`, `footer`, `dialog`, `redirect`, `help`, and the
//!   task panes `needs` (the needs-you queue), `tasks`, `items`, `observations`, `rejections`,
//!   `activity`, laid out by `body`
//!   over the shared `list`; `selection` holds the focus and cursors).
//! - [`run`] is the one event loop, a tokio task that owns the terminal and the app and never
//!   waits for the backend: it selects over terminal input (crossterm's `EventStream`), the
//!   backend's answers, whatever a [`Notifier`] sends (something changed on disk), the slow
//!   refresh tick, a redraw deadline and SIGTERM/SIGHUP/SIGINT. The backend lives on its own
//!   thread (`worker`), which carries out requests and view reads in order and sends the
//!   answers back as events; meanwhile the footer shows the request as pending. Frames are
//!   drawn only when the app says something changed, at most 60 a second.
//!   The backend opens the control root piece by piece ([`Backend::open_next`]): the first
//!   frame is drawn before any task journal is opened, tasks fill in as they open, and an open
//!   that takes a moment shows its progress in the footer (after `OPENING_SHOWN_MS`).
//! - [`dispatch`] is the same work done inline, for tests that drive the app without a
//!   terminal.
//! - The [`Keymap`] and [`Theme`] are data: compiled-in TOML files, parsed into
//!   mode → key → [`Action`] and semantic [`Slot`] → style.

mod action;
mod activity;
mod agent;
mod app;
mod banner;
mod body;
mod candidates;
mod config;
mod detail;
mod dialog;
mod event;
mod filter;
mod footer;
mod foreign;
mod help;
mod intro;
mod items;
mod keymap;
mod labels;
mod leader;
mod list;
mod machine;
mod motion;
mod needs;
mod observations;
mod opening;
mod overlay;
mod paint;
mod prompt;
mod redirect;
mod rejections;
mod selection;
mod tasks;
mod text;
mod theme;
mod title;
mod worker;
mod workflow;

use std::io;
use std::time::Duration;

use crossterm::event::{Event as Terminal, EventStream};
use futures_util::StreamExt;
use ratatui::DefaultTerminal;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::time::{Instant, MissedTickBehavior};

pub use action::Action;
pub use app::{App, NOTICE_MS, Notice, OPENING_SHOWN_MS, REFUSAL_MS};
pub use config::{Config, ConfigError, Notify, NotifyHow, Sources};
pub use event::{Effect, Event};
pub use keymap::{DEFAULT_KEYMAP, Key, Keymap, KeymapError, Mode};
pub use redirect::MAX_INTENT;
pub use selection::Pane;
pub use theme::{DEFAULT_THEME, Slot, Theme, ThemeError};
pub use worker::dispatch;

use valp_view::Backend;

/// The shortest time between two frames: at most 60 a second, however fast events come.
const FRAME: Duration = Duration::from_micros(16_667);

/// How often the opening progress is brought up to date while the backend opens.
const OPENING_EVERY: Duration = Duration::from_millis(100);

/// Whether the loop goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// The user quit.
    Quit,
}

/// The loop's change notifications. Create it before [`run`] to hand out [`Notifier`]s.
pub struct Inbox {
    sender: mpsc::Sender<()>,
    receiver: mpsc::Receiver<()>,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Self {
        // One slot: changes that arrive while one waits are the same news (re-read the view).
        let (sender, receiver) = mpsc::channel(1);
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
pub struct Notifier(mpsc::Sender<()>);

impl Notifier {
    /// Queues [`Event::Changed`] (coalesced with one already waiting). Returns `false` once the
    /// console has ended.
    pub fn changed(&self) -> bool {
        !matches!(self.0.try_send(()), Err(TrySendError::Closed(())))
    }
}

/// Runs the console full-screen until the user quits or a signal asks it to end.
///
/// Takes over the terminal (raw mode, alternate screen, and a panic hook that gives it back, so
/// call this after installing any other panic hook), moves `backend` to its own thread, and
/// restores the terminal on every way out. It returns without waiting for a request the
/// backend is still carrying out: that thread ends with the process (whatever it had not yet
/// written is redone by the next start, as after any interruption).
pub async fn run(backend: Box<dyn Backend + Send>, config: Config, inbox: Inbox) -> io::Result<()> {
    let mut terminal = match ratatui::try_init() {
        Ok(terminal) => terminal,
        Err(error) => {
            ratatui::restore();
            return Err(error);
        }
    };
    // The wheel and clicks, unless the user file turns them off (a terminal that reports the
    // mouse no longer selects text by itself).
    let mouse = config.mouse;
    if mouse {
        crossterm::execute!(io::stdout(), crossterm::event::EnableMouseCapture)?;
    }
    let result = event_loop(&mut terminal, backend, config, inbox).await;
    if mouse {
        let _ = crossterm::execute!(io::stdout(), crossterm::event::DisableMouseCapture);
    }
    ratatui::restore();
    result
}

/// The one loop: draw when dirty (at most every [`FRAME`]), else wait for whatever comes first.
async fn event_loop(
    terminal: &mut DefaultTerminal,
    backend: Box<dyn Backend + Send>,
    config: Config,
    mut inbox: Inbox,
) -> io::Result<()> {
    let tick_every = config.refresh_every;
    let started = Instant::now();
    let (mut worker, first_view) = worker::Worker::start(backend)?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut keys = EventStream::new();
    let view = tokio::select! {
        view = first_view => view.map_err(|_| io::Error::other("the backend ended before its first view"))?,
        _ = terminate.recv() => return Ok(()),
        _ = hangup.recv() => return Ok(()),
        _ = interrupt.recv() => return Ok(()),
    };
    worker.first_view(&view);
    let mut app = App::new(config, view);
    // While the backend is still opening: how long it has been, every OPENING_EVERY.
    let mut opening = tokio::time::interval(OPENING_EVERY);
    opening.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut tick = tokio::time::interval_at(Instant::now() + tick_every, tick_every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut dirty = app.take_dirty();
    let mut last_frame: Option<Instant> = None;
    loop {
        let next_frame = last_frame.map_or_else(Instant::now, |at| at + FRAME);
        let event = tokio::select! {
            biased;
            () = tokio::time::sleep_until(next_frame), if dirty => {
                terminal.draw(|frame| app.render(frame))?;
                last_frame = Some(Instant::now());
                dirty = false;
                continue;
            }
            _ = terminate.recv() => return Ok(()),
            _ = hangup.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
            input = keys.next() => match input {
                None => return Ok(()),
                Some(Err(error)) => return Err(error),
                Some(Ok(Terminal::Key(key))) => Event::Key(key),
                Some(Ok(Terminal::Resize(..))) => Event::Resize,
                Some(Ok(Terminal::Mouse(mouse))) => Event::Mouse(mouse),
                Some(Ok(_)) => continue,
            },
            Some(event) = worker.answers.recv() => event,
            Some(()) = inbox.receiver.recv() => Event::Changed,
            _ = opening.tick(), if app.opening() => Event::Opening {
                elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            },
            _ = tick.tick() => Event::Tick,
        };
        let flow = worker.apply(&mut app, event);
        dirty |= app.take_dirty();
        if let Some(alert) = app.take_alert() {
            // Between frames: a bell or an OSC 9 notification draws nothing.
            let mut out = io::stdout();
            io::Write::write_all(&mut out, alert.as_bytes())?;
            io::Write::flush(&mut out)?;
        }
        if flow == Flow::Quit {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::Inbox;

    #[test]
    fn a_notifier_queues_one_change_until_the_console_is_gone() {
        let mut inbox = Inbox::new();
        let notifier = inbox.notifier();
        assert!(notifier.changed());
        // A second change while one waits is the same news.
        assert!(notifier.changed());
        assert_eq!(inbox.receiver.try_recv(), Ok(()));
        assert!(inbox.receiver.try_recv().is_err());
        drop(inbox);
        assert!(!notifier.changed());
    }
}
