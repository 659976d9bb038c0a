//! The theme: a style per semantic [`Slot`], read from TOML.
//!
//! The default (`themes/default.toml`, schema `schemas/console/theme.schema.json`) is compiled
//! in. Panes ask for meanings (`muted`, `alert_error`, `fenced`), never for colours. A slot the
//! file leaves out is drawn in `base`; an unknown slot or field, or a bad colour, is a
//! [`ThemeError`] naming the slot.

use ratatui::style::{Color, Modifier, Style};

/// The compiled-in default theme: named colours only, the ANSI-16 fallback every terminal
/// draws.
pub const DEFAULT_THEME: &str = include_str!("../../../themes/default.toml");

/// Every compiled-in theme by name (`--theme`, `[console] theme`, `:theme`), the default first.
pub const THEMES: [(&str, &str); 4] = [
    ("default", DEFAULT_THEME),
    ("dark", include_str!("../../../themes/dark.toml")),
    ("light", include_str!("../../../themes/light.toml")),
    (
        "high-contrast",
        include_str!("../../../themes/high-contrast.toml"),
    ),
];

/// What a piece of the screen means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Everything without a more specific meaning; the fallback of every other slot.
    Base,
    /// Secondary text: explanations, column headings, details.
    Muted,
    /// The title line and pane titles.
    Title,
    /// Identities worth the eye: principals, the active epoch.
    Accent,
    /// The row under the cursor.
    Selection,
    /// Pane borders.
    Border,
    /// Borders of what has the keys (dialog, help, candidate list).
    FocusBorder,
    /// Key names in hints and help.
    Key,
    /// Confirmations.
    AlertInfo,
    /// The read-only banner, interrupted tasks, rejected files, what a dialog will do.
    AlertWarn,
    /// Refusals.
    AlertError,
    /// Fenced epochs and tasks bound to them.
    Fenced,
    /// Not started yet: `pending`, `published`, an attempt `created`.
    StatusPending,
    /// Ready to go: an `eligible` work item.
    StatusReady,
    /// Work in progress: `submitted`, `running`, `executing`, an adapter's `accepted`, …
    StatusRunning,
    /// Waiting for someone: `blocked`, `reviewing`, `approval_required`, an adapter's `waiting`.
    StatusAttention,
    /// Finished well: `completed`, `done`.
    StatusDone,
    /// Finished with less than asked: `partial`, `degraded`.
    StatusPartial,
    /// Failed: `failed`, a `fenced` attempt, an adapter's `unsupported`.
    StatusFailed,
    /// Stopped on purpose: `cancelled`, `skipped`.
    StatusCancelled,
}

impl Slot {
    /// Every slot, in file order.
    pub const ALL: [Self; 20] = [
        Self::Base,
        Self::Muted,
        Self::Title,
        Self::Accent,
        Self::Selection,
        Self::Border,
        Self::FocusBorder,
        Self::Key,
        Self::AlertInfo,
        Self::AlertWarn,
        Self::AlertError,
        Self::Fenced,
        Self::StatusPending,
        Self::StatusReady,
        Self::StatusRunning,
        Self::StatusAttention,
        Self::StatusDone,
        Self::StatusPartial,
        Self::StatusFailed,
        Self::StatusCancelled,
    ];

    /// The name used in theme files.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Base => "base",
            Self::Muted => "muted",
            Self::Title => "title",
            Self::Accent => "accent",
            Self::Selection => "selection",
            Self::Border => "border",
            Self::FocusBorder => "focus_border",
            Self::Key => "key",
            Self::AlertInfo => "alert_info",
            Self::AlertWarn => "alert_warn",
            Self::AlertError => "alert_error",
            Self::Fenced => "fenced",
            Self::StatusPending => "status_pending",
            Self::StatusReady => "status_ready",
            Self::StatusRunning => "status_running",
            Self::StatusAttention => "status_attention",
            Self::StatusDone => "status_done",
            Self::StatusPartial => "status_partial",
            Self::StatusFailed => "status_failed",
            Self::StatusCancelled => "status_cancelled",
        }
    }

    /// The slot a task, work-item, attempt or observation status is drawn in (`base` for a
    /// status it does not know).
    pub fn of_status(status: &str) -> Self {
        match status {
            "pending" | "published" | "created" => Self::StatusPending,
            "eligible" | "ready" => Self::StatusReady,
            "submitted" | "running" | "accepted" | "routing_validation" | "dispatching"
            | "executing" | "verifying" | "fixing" | "recording" => Self::StatusRunning,
            "blocked" | "reviewing" | "approval_required" | "waiting" => Self::StatusAttention,
            "completed" | "done" => Self::StatusDone,
            "partial" | "degraded" => Self::StatusPartial,
            "failed" | "fenced" | "unsupported" => Self::StatusFailed,
            "cancelled" | "skipped" => Self::StatusCancelled,
            _ => Self::Base,
        }
    }
}

/// Colour names a file may use (besides `#rrggbb`).
const COLORS: [(&str, Color); 17] = [
    ("reset", Color::Reset),
    ("black", Color::Black),
    ("red", Color::Red),
    ("green", Color::Green),
    ("yellow", Color::Yellow),
    ("blue", Color::Blue),
    ("magenta", Color::Magenta),
    ("cyan", Color::Cyan),
    ("gray", Color::Gray),
    ("dark_gray", Color::DarkGray),
    ("light_red", Color::LightRed),
    ("light_green", Color::LightGreen),
    ("light_yellow", Color::LightYellow),
    ("light_blue", Color::LightBlue),
    ("light_magenta", Color::LightMagenta),
    ("light_cyan", Color::LightCyan),
    ("white", Color::White),
];

/// Style fields that switch a modifier on.
const MODIFIERS: [(&str, Modifier); 5] = [
    ("bold", Modifier::BOLD),
    ("dim", Modifier::DIM),
    ("italic", Modifier::ITALIC),
    ("underlined", Modifier::UNDERLINED),
    ("reversed", Modifier::REVERSED),
];

/// A theme file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    /// Not TOML.
    #[error("theme: {0}")]
    Toml(#[from] toml::de::Error),
    /// A slot that does not exist.
    #[error("theme: unknown slot {slot:?} (slots: {})", Slot::ALL.map(Slot::name).join(", "))]
    UnknownSlot {
        /// The slot as written.
        slot: String,
    },
    /// A theme name that is not compiled in.
    #[error("theme: unknown theme {name:?} (themes: {})", THEMES.map(|(name, _)| name).join(", "))]
    UnknownTheme {
        /// The name as given.
        name: String,
    },
    /// A slot whose style is wrong.
    #[error("theme: slot {slot:?}: {reason}")]
    BadStyle {
        /// The slot.
        slot: String,
        /// What is wrong.
        reason: String,
    },
}

/// A style per slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    styles: Vec<(Slot, Style)>,
}

impl Theme {
    /// The compiled-in default theme.
    pub fn builtin() -> Result<Self, ThemeError> {
        Self::from_toml(DEFAULT_THEME)
    }

    /// The compiled-in theme called `name`.
    pub fn named(name: &str) -> Result<Self, ThemeError> {
        THEMES
            .iter()
            .find(|(known, _)| *known == name)
            .ok_or_else(|| ThemeError::UnknownTheme {
                name: valp_view::sanitize::display_line(name),
            })
            .and_then(|(_, text)| Self::from_toml(text))
    }

    /// Parses a theme file.
    pub fn from_toml(text: &str) -> Result<Self, ThemeError> {
        let table: toml::Table = text.parse()?;
        let mut styles = Vec::new();
        for (name, value) in &table {
            let slot = Slot::ALL
                .into_iter()
                .find(|slot| slot.name() == name)
                .ok_or_else(|| ThemeError::UnknownSlot { slot: name.clone() })?;
            let style = parse_style(value).map_err(|reason| ThemeError::BadStyle {
                slot: name.clone(),
                reason,
            })?;
            styles.push((slot, style));
        }
        Ok(Self { styles })
    }

    /// Lays `other` over this theme: a slot `other` styles takes its style, whole.
    pub fn overlay(&mut self, other: Self) {
        for (slot, style) in other.styles {
            match self.styles.iter_mut().find(|(bound, _)| *bound == slot) {
                Some(own) => own.1 = style,
                None => self.styles.push((slot, style)),
            }
        }
    }

    /// This theme in the terminal's own colours: modifiers (bold, reversed, …) stay, so
    /// focus and alerts still show (`NO_COLOR`, `--color never`).
    #[must_use]
    pub fn without_color(mut self) -> Self {
        for (_, style) in &mut self.styles {
            style.fg = None;
            style.bg = None;
        }
        self
    }

    /// The style of `slot`, or of `base` when the theme leaves `slot` out.
    pub fn style(&self, slot: Slot) -> Style {
        let find = |wanted: Slot| {
            self.styles
                .iter()
                .find(|(slot, _)| *slot == wanted)
                .map(|(_, style)| *style)
        };
        find(slot).or_else(|| find(Slot::Base)).unwrap_or_default()
    }
}

fn parse_style(value: &toml::Value) -> Result<Style, String> {
    let fields = value
        .as_table()
        .ok_or("must be a table such as { fg = \"cyan\", bold = true }")?;
    let mut style = Style::new();
    for (field, value) in fields {
        match field.as_str() {
            "fg" => style = style.fg(parse_color(value)?),
            "bg" => style = style.bg(parse_color(value)?),
            name => {
                let modifier = MODIFIERS
                    .iter()
                    .find(|(known, _)| *known == name)
                    .map(|(_, modifier)| *modifier)
                    .ok_or_else(|| {
                        format!(
                            "unknown field {name:?} (fields: fg, bg, {})",
                            MODIFIERS.map(|(known, _)| known).join(", ")
                        )
                    })?;
                match value.as_bool() {
                    Some(true) => style = style.add_modifier(modifier),
                    Some(false) => {}
                    None => return Err(format!("{name} must be true or false, not {value}")),
                }
            }
        }
    }
    Ok(style)
}

fn parse_color(value: &toml::Value) -> Result<Color, String> {
    let text = value.as_str().unwrap_or_default();
    if let Some(hex) = text
        .strip_prefix('#')
        .filter(|hex| hex.len() == 6 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
    {
        let channel = |at: usize| u8::from_str_radix(&hex[at..at + 2], 16).unwrap_or_default();
        return Ok(Color::Rgb(channel(0), channel(2), channel(4)));
    }
    COLORS
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, color)| *color)
        .ok_or_else(|| format!("unknown colour {value} (a name such as \"cyan\", or \"#rrggbb\")"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use ratatui::style::{Color, Modifier, Style};

    use super::{Slot, Theme};

    #[test]
    fn the_default_theme_parses_and_defines_every_slot() {
        let theme = Theme::builtin().unwrap();
        for slot in Slot::ALL {
            assert!(
                theme.styles.iter().any(|(defined, _)| *defined == slot),
                "default theme lacks {}",
                slot.name()
            );
        }
        assert_eq!(
            theme.style(Slot::AlertError),
            Style::new()
                .fg(Color::LightRed)
                .add_modifier(Modifier::BOLD)
        );
    }

    #[test]
    fn statuses_map_to_their_slots() {
        for (status, slot) in [
            ("pending", Slot::StatusPending),
            ("eligible", Slot::StatusReady),
            ("running", Slot::StatusRunning),
            ("executing", Slot::StatusRunning),
            ("reviewing", Slot::StatusAttention),
            ("blocked", Slot::StatusAttention),
            ("completed", Slot::StatusDone),
            ("degraded", Slot::StatusPartial),
            ("failed", Slot::StatusFailed),
            ("skipped", Slot::StatusCancelled),
            ("something new", Slot::Base),
        ] {
            assert_eq!(Slot::of_status(status), slot, "{status}");
        }
    }

    #[test]
    fn a_missing_slot_falls_back_to_base() {
        let theme =
            Theme::from_toml("base = { fg = \"#102030\" }\nmuted = { dim = true }\n").unwrap();
        assert_eq!(
            theme.style(Slot::Fenced),
            Style::new().fg(Color::Rgb(16, 32, 48))
        );
        assert_eq!(
            theme.style(Slot::Muted),
            Style::new().add_modifier(Modifier::DIM)
        );
        assert_eq!(
            Theme::from_toml("").unwrap().style(Slot::Title),
            Style::new()
        );
    }

    #[test]
    fn bad_slots_fields_and_colours_are_errors_naming_the_slot() {
        let error = |text: &str| Theme::from_toml(text).unwrap_err().to_string();
        assert!(
            error("fenceed = { bold = true }\n").starts_with("theme: unknown slot \"fenceed\"")
        );
        assert_eq!(
            error("title = { fg = \"teal\" }\n"),
            "theme: slot \"title\": unknown colour \"teal\" (a name such as \"cyan\", or \"#rrggbb\")"
        );
        assert_eq!(
            error("title = { blink = true }\n"),
            "theme: slot \"title\": unknown field \"blink\" (fields: fg, bg, bold, dim, italic, \
             underlined, reversed)"
        );
        assert_eq!(
            error("title = { bold = \"yes\" }\n"),
            "theme: slot \"title\": bold must be true or false, not \"yes\""
        );
        assert_eq!(
            error("title = \"cyan\"\n"),
            "theme: slot \"title\": must be a table such as { fg = \"cyan\", bold = true }"
        );
        assert!(error("title = { fg = \"#12345g\" }\n").contains("unknown colour \"#12345g\""));
    }
}
