//! The keymap: which key does what in which mode, read from TOML.
//!
//! The defaults (`console/assets/keymap.toml`, schema `schemas/console/keymap.schema.json`) are
//! compiled in. A file is one table per [`Mode`] of `key = "action"` entries; an unknown mode,
//! key or action, a key bound twice in one mode, or a value that is not a string is a
//! [`KeymapError`] naming the mode and the key. Screens fall back to `[global]` for keys they
//! do not bind; the dialog and help overlays use only their own table. The footer and the help
//! overlay are generated from here, in file order.

use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::action::Action;

/// The compiled-in default keymap.
pub const DEFAULT_KEYMAP: &str = include_str!("../../assets/keymap.toml");

/// Where the console is, for key lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// Keys every screen understands.
    Global,
    /// No Leader yet: the candidate list.
    FirstRun,
    /// A re-proven Leader: the Leader pane and the task panes.
    Main,
    /// The bound session was not re-proven.
    ReadOnly,
    /// A candidate list opened from the read-only screen.
    Picker,
    /// The confirmation dialog.
    Dialog,
    /// The redirect dialog: a typed intent and the superseded work items.
    Redirect,
    /// The Agent pane of a work item's terminal agent.
    Agent,
    /// The state machine view of a task or work item.
    Machine,
    /// The help overlay.
    Help,
    /// The `:` palette or the `/` filter prompt.
    Prompt,
    /// The detail view of a row.
    Detail,
}

impl Mode {
    /// Every mode, in the order help lists them.
    pub const ALL: [Self; 12] = [
        Self::Global,
        Self::FirstRun,
        Self::Main,
        Self::ReadOnly,
        Self::Picker,
        Self::Dialog,
        Self::Redirect,
        Self::Agent,
        Self::Machine,
        Self::Prompt,
        Self::Detail,
        Self::Help,
    ];

    /// The table name in keymap files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::FirstRun => "first_run",
            Self::Main => "main",
            Self::ReadOnly => "read_only",
            Self::Picker => "picker",
            Self::Dialog => "dialog",
            Self::Redirect => "redirect",
            Self::Agent => "agent",
            Self::Machine => "machine",
            Self::Help => "help",
            Self::Prompt => "prompt",
            Self::Detail => "detail",
        }
    }

    /// A heading for the help overlay.
    pub const fn title(self) -> &'static str {
        match self {
            Self::Global => "Everywhere",
            Self::FirstRun => "Choosing the first Leader",
            Self::Main => "Main screen",
            Self::ReadOnly => "Read-only",
            Self::Picker => "Candidate list",
            Self::Dialog => "Confirmation",
            Self::Redirect => "Redirect dialog",
            Self::Agent => "Agent pane",
            Self::Machine => "State machine",
            Self::Help => "Help",
            Self::Prompt => "Command palette and filter",
            Self::Detail => "Detail view",
        }
    }

    /// Whether keys this mode does not bind are looked up in [`Mode::Global`] (not in the
    /// overlays: a dialog or the help must not quit on `q`, and the redirect dialog types it).
    const fn uses_global(self) -> bool {
        !matches!(
            self,
            Self::Global
                | Self::Dialog
                | Self::Redirect
                | Self::Machine
                | Self::Help
                | Self::Prompt
                | Self::Detail
        )
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|mode| mode.name() == name)
    }
}

/// A key with its modifiers (Shift is part of the character, so it is not kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    code: KeyCode,
    ctrl: bool,
    alt: bool,
}

/// Key names a file may use, besides single characters and `f1` … `f12`.
const NAMED_KEYS: [(&str, KeyCode); 16] = [
    ("enter", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("space", KeyCode::Char(' ')),
];

impl Key {
    /// Parses a key as written in keymap files (`q`, `?`, `enter`, `f5`, `ctrl-c`, `alt-x`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rest = text;
        let (mut ctrl, mut alt) = (false, false);
        loop {
            if let Some(after) = rest.strip_prefix("ctrl-").filter(|after| !after.is_empty()) {
                ctrl = true;
                rest = after;
            } else if let Some(after) = rest.strip_prefix("alt-").filter(|after| !after.is_empty())
            {
                alt = true;
                rest = after;
            } else {
                break;
            }
        }
        let code = Self::parse_code(rest).ok_or_else(|| {
            format!(
                "unknown key {rest:?} (a printable character, f1 … f12, or one of: {})",
                NAMED_KEYS.map(|(name, _)| name).join(", ")
            )
        })?;
        Ok(Self { code, ctrl, alt })
    }

    fn parse_code(text: &str) -> Option<KeyCode> {
        let mut chars = text.chars();
        if let (Some(ch), None) = (chars.next(), chars.next()) {
            return (!ch.is_control() && !ch.is_whitespace()).then_some(KeyCode::Char(ch));
        }
        if let Some(number) = text.strip_prefix('f').and_then(|n| n.parse::<u8>().ok()) {
            return (1..=12)
                .contains(&number)
                .then_some(KeyCode::F(number))
                .filter(|_| !text.starts_with("f0"));
        }
        NAMED_KEYS
            .iter()
            .find(|(name, _)| *name == text)
            .map(|(_, code)| *code)
    }

    /// The key of a terminal key press (`None` for releases).
    pub fn of_event(event: &KeyEvent) -> Option<Self> {
        (event.kind != KeyEventKind::Release).then_some(Self {
            code: event.code,
            ctrl: event.modifiers.contains(KeyModifiers::CONTROL),
            alt: event.modifiers.contains(KeyModifiers::ALT),
        })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("Ctrl-")?;
        }
        if self.alt {
            f.write_str("Alt-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(ch) => write!(f, "{ch}"),
            KeyCode::F(number) => write!(f, "F{number}"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::Insert => f.write_str("Ins"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A keymap file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KeymapError {
    /// Not TOML.
    #[error("keymap: {0}")]
    Toml(#[from] toml::de::Error),
    /// A table that is not a mode.
    #[error("keymap: unknown mode [{mode}] (modes: {})", Mode::ALL.map(Mode::name).join(", "))]
    UnknownMode {
        /// The table name.
        mode: String,
    },
    /// A mode that is not a table.
    #[error("keymap: [{mode}] must be a table of key = \"action\" entries")]
    NotATable {
        /// The mode.
        mode: String,
    },
    /// A key that cannot be parsed.
    #[error("keymap: [{mode}] key {key:?}: {reason}")]
    BadKey {
        /// The mode.
        mode: String,
        /// The key as written.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An action that does not exist (or a value that is not a string).
    #[error(
        "keymap: [{mode}] key {key:?}: unknown action {action} (actions: {})",
        Action::ALL.map(Action::name).join(", ")
    )]
    UnknownAction {
        /// The mode.
        mode: String,
        /// The key as written.
        key: String,
        /// The value as written (TOML).
        action: String,
    },
    /// Two spellings of one key in one mode.
    #[error("keymap: [{mode}] key {key:?} is bound twice")]
    Duplicate {
        /// The mode.
        mode: String,
        /// The second spelling.
        key: String,
    },
}

/// Mode → key → action, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    bindings: Vec<(Mode, Vec<(Key, Action)>)>,
}

impl Keymap {
    /// The compiled-in default keymap.
    pub fn builtin() -> Result<Self, KeymapError> {
        Self::from_toml(DEFAULT_KEYMAP)
    }

    /// Parses a keymap file.
    pub fn from_toml(text: &str) -> Result<Self, KeymapError> {
        let table: toml::Table = text.parse()?;
        let mut bindings = Vec::new();
        for (mode_name, entries) in &table {
            let mode = Mode::from_name(mode_name).ok_or_else(|| KeymapError::UnknownMode {
                mode: mode_name.clone(),
            })?;
            let entries = entries.as_table().ok_or_else(|| KeymapError::NotATable {
                mode: mode_name.clone(),
            })?;
            let mut keys: Vec<(Key, Action)> = Vec::new();
            for (key_text, value) in entries {
                let key = Key::parse(key_text).map_err(|reason| KeymapError::BadKey {
                    mode: mode_name.clone(),
                    key: key_text.clone(),
                    reason,
                })?;
                let action = value.as_str().and_then(Action::from_name).ok_or_else(|| {
                    KeymapError::UnknownAction {
                        mode: mode_name.clone(),
                        key: key_text.clone(),
                        action: value.to_string(),
                    }
                })?;
                if keys.iter().any(|(bound, _)| *bound == key) {
                    return Err(KeymapError::Duplicate {
                        mode: mode_name.clone(),
                        key: key_text.clone(),
                    });
                }
                keys.push((key, action));
            }
            bindings.push((mode, keys));
        }
        Ok(Self { bindings })
    }

    /// Lays `other` over this keymap: a key `other` binds in a mode does what `other` says
    /// there; every other binding stays.
    pub fn overlay(&mut self, other: Self) {
        for (mode, keys) in other.bindings {
            let Some((_, own)) = self.bindings.iter_mut().find(|(bound, _)| *bound == mode) else {
                self.bindings.push((mode, keys));
                continue;
            };
            for (key, action) in keys {
                match own.iter_mut().find(|(bound, _)| *bound == key) {
                    Some(binding) => binding.1 = action,
                    None => own.push((key, action)),
                }
            }
        }
    }

    fn own(&self, mode: Mode) -> &[(Key, Action)] {
        self.bindings
            .iter()
            .find(|(bound, _)| *bound == mode)
            .map_or(&[], |(_, keys)| keys.as_slice())
    }

    /// The modes whose tables apply in `mode`, most specific first.
    fn layers(mode: Mode) -> impl Iterator<Item = Mode> {
        std::iter::once(mode).chain(mode.uses_global().then_some(Mode::Global))
    }

    /// What `event` does in `mode`, if anything.
    pub fn action(&self, mode: Mode, event: &KeyEvent) -> Option<Action> {
        self.action_of(mode, Key::of_event(event)?)
    }

    /// The keys of `action` in `mode` alone, in file order.
    pub fn keys(&self, mode: Mode, action: Action) -> Vec<Key> {
        self.own(mode)
            .iter()
            .filter(|(_, bound)| *bound == action)
            .map(|(key, _)| *key)
            .collect()
    }

    /// The actions of `mode` alone, each with its keys, in file order.
    pub fn table(&self, mode: Mode) -> Vec<(Action, Vec<Key>)> {
        let mut grouped: Vec<(Action, Vec<Key>)> = Vec::new();
        for (key, action) in self.own(mode) {
            match grouped.iter_mut().find(|(bound, _)| bound == action) {
                Some((_, keys)) => keys.push(*key),
                None => grouped.push((*action, vec![*key])),
            }
        }
        grouped
    }

    /// What the footer lists in `mode`: its own actions, then global ones it does not shadow
    /// (actions that are not [`Action::hinted`] are left out).
    pub fn hints(&self, mode: Mode) -> Vec<(Action, Vec<Key>)> {
        let mut hints: Vec<(Action, Vec<Key>)> = Vec::new();
        for layer in Self::layers(mode) {
            for (action, keys) in self.table(layer) {
                if !action.hinted() {
                    continue;
                }
                let free: Vec<Key> = keys
                    .into_iter()
                    .filter(|key| self.action_of(mode, *key) == Some(action))
                    .collect();
                if !free.is_empty() && !hints.iter().any(|(bound, _)| *bound == action) {
                    hints.push((action, free));
                }
            }
        }
        hints
    }

    fn action_of(&self, mode: Mode, key: Key) -> Option<Action> {
        Self::layers(mode).find_map(|layer| {
            self.own(layer)
                .iter()
                .find(|(bound, _)| *bound == key)
                .map(|(_, action)| *action)
        })
    }
}

/// `keys` as the footer and help show them: `g/F5`.
pub fn keys_text(keys: &[Key]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::{Action, Key, Keymap, KeymapError, Mode, keys_text};

    fn error(text: &str) -> String {
        Keymap::from_toml(text).unwrap_err().to_string()
    }

    #[test]
    fn the_default_keymap_parses_and_binds_the_documented_keys() {
        let keymap = Keymap::builtin().unwrap();
        let press = |mode, code| keymap.action(mode, &KeyEvent::from(code));
        assert_eq!(
            press(Mode::FirstRun, KeyCode::Char('q')),
            Some(Action::Quit)
        );
        assert_eq!(
            press(Mode::FirstRun, KeyCode::Char('j')),
            Some(Action::Down)
        );
        assert_eq!(press(Mode::FirstRun, KeyCode::Enter), Some(Action::Choose));
        assert_eq!(press(Mode::Main, KeyCode::F(5)), Some(Action::Refresh));
        assert_eq!(
            press(Mode::ReadOnly, KeyCode::Char('r')),
            Some(Action::Rebind)
        );
        // Enter in read-only mode only opens the detail view of a row.
        assert_eq!(press(Mode::ReadOnly, KeyCode::Enter), Some(Action::Details));
        assert_eq!(
            press(Mode::Dialog, KeyCode::Char('y')),
            Some(Action::Confirm)
        );
        assert_eq!(press(Mode::Dialog, KeyCode::Esc), Some(Action::Cancel));
        // Overlays do not fall back to the global table.
        assert_eq!(press(Mode::Dialog, KeyCode::Char('q')), None);
        assert_eq!(press(Mode::Help, KeyCode::Char('?')), Some(Action::Cancel));
        for (code, action) in [
            (KeyCode::Tab, Action::NextPane),
            (KeyCode::BackTab, Action::PreviousPane),
            (KeyCode::Char('x'), Action::CancelSelected),
            (KeyCode::Char('i'), Action::Interrupt),
            (KeyCode::Char('u'), Action::Resume),
            (KeyCode::Char('R'), Action::Redirect),
            (KeyCode::Char('p'), Action::PassReview),
            (KeyCode::Char('f'), Action::RejectReview),
            (KeyCode::Char('a'), Action::GrantApproval),
            (KeyCode::Char('d'), Action::DenyApproval),
            (KeyCode::Char('t'), Action::RetryItem),
            (KeyCode::Char('o'), Action::Recover),
        ] {
            assert_eq!(press(Mode::Main, code), Some(action), "{code:?}");
        }
        // Shift is part of the character: shift-r is `R`, not `r`.
        let shift_r = KeyEvent::new(KeyCode::Char('R'), KeyModifiers::SHIFT);
        assert_eq!(keymap.action(Mode::Main, &shift_r), Some(Action::Redirect));
        assert_eq!(press(Mode::Main, KeyCode::Char('r')), None);
        // The read-only screen binds none of the task keys.
        for code in ['x', 'i', 'u', 'R', 'p', 'f'] {
            assert_eq!(press(Mode::ReadOnly, KeyCode::Char(code)), None, "{code}");
        }
        assert_eq!(press(Mode::ReadOnly, KeyCode::Tab), Some(Action::NextPane));
        assert_eq!(
            press(Mode::Redirect, KeyCode::Char(' ')),
            Some(Action::Toggle)
        );
        assert_eq!(press(Mode::Redirect, KeyCode::Enter), Some(Action::Confirm));
        assert_eq!(press(Mode::Redirect, KeyCode::Char('q')), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(keymap.action(Mode::Redirect, &ctrl_c), None);
        assert_eq!(keymap.action(Mode::Main, &ctrl_c), Some(Action::Quit));
        assert_eq!(
            keymap.action(Mode::Main, &KeyEvent::from(KeyCode::Char('c'))),
            None
        );
    }

    #[test]
    fn hints_list_own_actions_first_and_skip_shadowed_global_keys() {
        let keymap = Keymap::from_toml(
            "[global]\nq = \"quit\"\n\"?\" = \"help\"\n[picker]\nq = \"cancel\"\nup = \"up\"\n",
        )
        .unwrap();
        let hints: Vec<String> = keymap
            .hints(Mode::Picker)
            .iter()
            .map(|(action, keys)| format!("{} {}", keys_text(keys), action.name()))
            .collect();
        assert_eq!(hints, ["q cancel", "↑ up", "? help"]);
    }

    #[test]
    fn key_names_parse_and_display() {
        for (text, shown) in [
            ("q", "q"),
            ("?", "?"),
            ("G", "G"),
            ("enter", "Enter"),
            ("f12", "F12"),
            ("ctrl-c", "Ctrl-c"),
            ("ctrl-alt-x", "Ctrl-Alt-x"),
            ("-", "-"),
            ("ctrl--", "Ctrl--"),
            ("space", "Space"),
        ] {
            assert_eq!(Key::parse(text).unwrap().to_string(), shown, "{text}");
        }
        for bad in [
            "", "ctrl-", "f0", "f13", "f05", "Enter", "ctlr-x", "\u{1b}", " ", "qq",
        ] {
            assert!(Key::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_unknown_action_is_an_error_naming_the_key() {
        assert_eq!(
            error("[main]\nx = \"explode\"\n"),
            "keymap: [main] key \"x\": unknown action \"explode\" (actions: quit, refresh, help, \
             next_pane, previous_pane, up, down, choose, confirm, cancel, rebind, select_other, \
             cancel_selected, interrupt, resume, redirect, pass_review, reject_review, \
             grant_approval, deny_approval, retry_item, recover, toggle, agent, attach, message, \
             follow, next_need, acknowledge, page_up, page_down, first, last, palette, filter, \
             complete, details, state_machine, allow_request, deny_request)"
        );
        assert!(error("[main]\nx = 3\n").starts_with("keymap: [main] key \"x\": unknown action 3"));
    }

    #[test]
    fn a_bad_key_is_an_error_naming_the_key() {
        let message = error("[dialog]\nctlr-y = \"confirm\"\n");
        assert!(
            message.starts_with("keymap: [dialog] key \"ctlr-y\": unknown key \"ctlr-y\""),
            "{message}"
        );
    }

    #[test]
    fn unknown_modes_non_tables_duplicates_and_bad_toml_are_errors() {
        assert!(error("[mian]\nq = \"quit\"\n").starts_with("keymap: unknown mode [mian]"));
        assert_eq!(
            error("main = \"quit\"\n"),
            "keymap: [main] must be a table of key = \"action\" entries"
        );
        assert_eq!(
            error("[main]\nspace = \"quit\"\n\" \" = \"help\"\n").as_str(),
            "keymap: [main] key \" \": unknown key \" \" (a printable character, f1 … f12, or \
             one of: enter, esc, tab, backtab, backspace, delete, insert, home, end, pageup, \
             pagedown, up, down, left, right, space)"
        );
        assert!(
            matches!(
                Keymap::from_toml("[main]\nctrl-c = \"quit\"\nctrl-ctrl-c = \"help\"\n"),
                Err(KeymapError::Duplicate { key, .. }) if key == "ctrl-ctrl-c"
            ),
            "ctrl-ctrl-c is the same key as ctrl-c"
        );
        assert!(error("[main\n").starts_with("keymap: TOML parse error"));
    }
}
