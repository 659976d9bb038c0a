//! What the event loop feeds the [`App`](super::App) ([`Event`]) and what the app asks of the
//! loop in return ([`Effect`]).

use crossterm::event::{KeyEvent, MouseEvent};

use valp_view::{ConsoleView, Refusal, Request};

/// Something that happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A key from the terminal.
    Key(KeyEvent),
    /// The terminal changed size.
    Resize,
    /// The wheel or a click (only when the mouse is on: `[console] mouse`).
    Mouse(MouseEvent),
    /// The slow tick: time to observe again.
    Tick,
    /// Something changed on disk (sent through a [`Notifier`](super::Notifier)).
    Changed,
    /// The backend answered a request.
    Answered {
        /// What was asked.
        request: Request,
        /// Whether only a refusal is worth showing (a request the user did not make).
        quiet: bool,
        /// The backend's confirmation or refusal.
        outcome: Result<String, Refusal>,
    },
    /// The backend's current view (while it is still opening the control root, the view so
    /// far: [`ConsoleView::opening`]).
    Loaded(Box<ConsoleView>),
    /// Time passes while the backend is still opening: how long since the console started, so
    /// an open that takes more than a moment shows its progress.
    Opening {
        /// Milliseconds since the console started.
        elapsed_ms: u64,
    },
}

/// Something the app needs the loop to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send a request to the backend; its answer comes back as [`Event::Answered`].
    Send {
        /// The request.
        request: Request,
        /// Passed back in [`Event::Answered`].
        quiet: bool,
    },
    /// Read the backend's view again; it comes back as [`Event::Loaded`].
    Reload,
    /// Leave the console.
    Quit,
}
