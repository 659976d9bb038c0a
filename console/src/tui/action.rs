//! What a key asks the console to do: the one [`Action`] enum, named as in the keymap file.

/// A user intent, after the keymap resolved a key in the current mode.
///
/// Actions are UI intents; the requests they may lead to are [`crate::view::Request`]s, built by
/// the [`App`](super::App) from what is on screen, never by the keymap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Leave the console.
    Quit,
    /// Re-run the Doctor and re-read the view.
    Refresh,
    /// Show or hide the help overlay.
    Help,
    /// Move the cursor up.
    Up,
    /// Move the cursor down.
    Down,
    /// Open the confirmation dialog for the candidate under the cursor.
    Choose,
    /// Confirm the dialog: send its request.
    Confirm,
    /// Close the dialog, the help overlay or the candidate list.
    Cancel,
    /// Read-only: list new sessions of the bound principal.
    Rebind,
    /// Read-only: list every candidate but the bound session.
    SelectOther,
}

impl Action {
    /// Every action, in the order help lists them.
    pub const ALL: [Self; 10] = [
        Self::Quit,
        Self::Refresh,
        Self::Help,
        Self::Up,
        Self::Down,
        Self::Choose,
        Self::Confirm,
        Self::Cancel,
        Self::Rebind,
        Self::SelectOther,
    ];

    /// The name used in keymap files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Quit => "quit",
            Self::Refresh => "refresh",
            Self::Help => "help",
            Self::Up => "up",
            Self::Down => "down",
            Self::Choose => "choose",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel",
            Self::Rebind => "rebind",
            Self::SelectOther => "select_other",
        }
    }

    /// The action a keymap file names, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.name() == name)
    }

    /// A word or two for the footer.
    pub const fn label(self) -> &'static str {
        match self {
            Self::Quit => "quit",
            Self::Refresh => "refresh",
            Self::Help => "help",
            Self::Up => "up",
            Self::Down => "down",
            Self::Choose => "choose",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel",
            Self::Rebind => "rebind",
            Self::SelectOther => "select another",
        }
    }

    /// A sentence for the help overlay and the read-only banner.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Quit => "quit the console",
            Self::Refresh => "observe the sessions again and refresh",
            Self::Help => "show this help",
            Self::Up => "previous candidate",
            Self::Down => "next candidate",
            Self::Choose => "choose the candidate under the cursor (asks to confirm)",
            Self::Confirm => "confirm",
            Self::Cancel => "cancel or close",
            Self::Rebind => "rebind the same principal to a newly observed session",
            Self::SelectOther => "select another candidate",
        }
    }
}
