//! What the console is configured with: keymap, theme and refresh period, from the built-in
//! files with the user's configuration file on top.
//!
//! Precedence, strongest first: the command line (`--color`, `--config`), then `NO_COLOR`, then
//! the user file, then the built-in keymap and theme. The user file is TOML with three optional
//! tables of the console's, each laid over the built-in settings entry by entry (and `[agents]`,
//! the agent profile overrides the runtime reads: `valp_runtime::agent::overrides`):
//!
//! ```toml
//! [keymap.main]          # the keymap file's format: mode -> key = "action"
//! c = "cancel_selected"
//! [theme]                # the theme file's format: slot = { fg, bg, bold, ... }
//! title = { fg = "yellow", bold = true }
//! [console]
//! refresh_seconds = 10   # the slow refresh tick, 1 to 3600
//! ```
//!
//! Anything else is an error naming the file, the key and the rule it breaks.

use std::path::Path;
use std::time::Duration;

use super::keymap::{Keymap, KeymapError};
use super::theme::{Theme, ThemeError};

/// How often the console re-runs the Doctor on its own.
const REFRESH_EVERY: Duration = Duration::from_secs(5);
/// The longest refresh period a user file may ask for.
const MAX_REFRESH_SECONDS: u64 = 3600;

/// The console's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Which key does what.
    pub keymap: Keymap,
    /// How things look.
    pub theme: Theme,
    /// The period of the slow tick that sends [`Request::Refresh`](valp_view::Request).
    pub refresh_every: Duration,
}

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The keymap.
    #[error(transparent)]
    Keymap(#[from] KeymapError),
    /// The theme.
    #[error(transparent)]
    Theme(#[from] ThemeError),
    /// Not TOML.
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A setting that breaks a rule.
    #[error("{key}: {rule}")]
    Setting {
        /// The setting, as a dotted path.
        key: String,
        /// What it must be.
        rule: String,
    },
    /// Something wrong in (or with) a user file.
    #[error("{file}: {source}")]
    InFile {
        /// The file, as given or found.
        file: String,
        /// What is wrong.
        source: Box<Self>,
    },
}

/// Where the configuration comes from.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sources<'a> {
    /// `--color always` (`Some(true)`) or `--color never` (`Some(false)`).
    pub color_flag: Option<bool>,
    /// `NO_COLOR` is set to something.
    pub no_color: bool,
    /// The user file's name and text, if there is one.
    pub user: Option<(&'a Path, &'a str)>,
}

impl Config {
    /// The compiled-in defaults.
    pub fn builtin() -> Result<Self, ConfigError> {
        Ok(Self {
            keymap: Keymap::builtin()?,
            theme: Theme::builtin()?,
            refresh_every: REFRESH_EVERY,
        })
    }

    /// The built-in configuration under the user file, then `NO_COLOR`, then the flag.
    pub fn resolve(sources: &Sources) -> Result<Self, ConfigError> {
        let mut config = Self::builtin()?;
        if let Some((file, text)) = sources.user {
            config.overlay(text).map_err(|source| ConfigError::InFile {
                file: valp_view::sanitize::display_line(&file.to_string_lossy()),
                source: Box::new(source),
            })?;
        }
        if !sources.color_flag.unwrap_or(!sources.no_color) {
            config.theme = config.theme.without_color();
        }
        Ok(config)
    }

    /// Reads the user file (`explicit`, from `--config`, must exist; `found`, the platform's
    /// place, may be missing) and resolves the configuration.
    pub fn load(
        explicit: Option<&Path>,
        found: Option<&Path>,
        color_flag: Option<bool>,
        no_color: bool,
    ) -> Result<Self, ConfigError> {
        let file = explicit.or_else(|| found.filter(|path| path.exists()));
        let text = file
            .map(|path| {
                std::fs::read_to_string(path).map_err(|error| ConfigError::InFile {
                    file: valp_view::sanitize::display_line(&path.to_string_lossy()),
                    source: Box::new(ConfigError::Setting {
                        key: "(file)".to_owned(),
                        rule: format!("cannot be read: {error}"),
                    }),
                })
            })
            .transpose()?;
        Self::resolve(&Sources {
            color_flag,
            no_color,
            user: file.zip(text.as_deref()),
        })
    }

    fn overlay(&mut self, text: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text.parse()?;
        for (section, value) in &table {
            let entries = value.as_table().ok_or_else(|| ConfigError::Setting {
                key: section.clone(),
                rule: "must be a table".to_owned(),
            })?;
            // Each table in the built-in files' own format, so their parsers judge it.
            let own_text = || toml::to_string(entries).unwrap_or_default();
            match section.as_str() {
                "keymap" => self.keymap.overlay(Keymap::from_toml(&own_text())?),
                "theme" => self.theme.overlay(Theme::from_toml(&own_text())?),
                "console" => self.console(entries)?,
                // Agent profile overrides: the runtime's, judged there (`agent::overrides`).
                "agents" => {}
                _ => {
                    return Err(ConfigError::Setting {
                        key: section.clone(),
                        rule: "unknown table (tables: keymap, theme, console, agents)".to_owned(),
                    });
                }
            }
        }
        Ok(())
    }

    fn console(&mut self, entries: &toml::Table) -> Result<(), ConfigError> {
        for (key, value) in entries {
            if key != "refresh_seconds" {
                return Err(ConfigError::Setting {
                    key: format!("console.{key}"),
                    rule: "unknown setting (settings: refresh_seconds)".to_owned(),
                });
            }
            let seconds = value
                .as_integer()
                .and_then(|seconds| u64::try_from(seconds).ok())
                .filter(|seconds| (1..=MAX_REFRESH_SECONDS).contains(seconds))
                .ok_or_else(|| ConfigError::Setting {
                    key: "console.refresh_seconds".to_owned(),
                    rule: format!(
                        "must be a whole number from 1 to {MAX_REFRESH_SECONDS}, not {value}"
                    ),
                })?;
            self.refresh_every = Duration::from_secs(seconds);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use crossterm::event::{KeyCode, KeyEvent};
    use ratatui::style::Color;

    use super::*;
    use crate::{Action, Mode, Slot};

    fn user(text: &str) -> Result<Config, ConfigError> {
        Config::resolve(&Sources {
            user: Some((Path::new("/home/op/.config/valp/config.toml"), text)),
            ..Sources::default()
        })
    }

    fn error(text: &str) -> String {
        user(text).unwrap_err().to_string()
    }

    #[test]
    fn the_user_file_overlays_keys_styles_and_the_refresh_period() {
        let builtin = Config::builtin().unwrap();
        let config = user(
            "[keymap.main]\nc = \"cancel_selected\"\n[theme]\ntitle = { fg = \"#102030\" }\n\
             [console]\nrefresh_seconds = 30\n",
        )
        .unwrap();
        let c = KeyEvent::from(KeyCode::Char('c'));
        let x = KeyEvent::from(KeyCode::Char('x'));
        assert_eq!(builtin.keymap.action(Mode::Main, &c), None);
        assert_eq!(
            config.keymap.action(Mode::Main, &c),
            Some(Action::CancelSelected)
        );
        // The built-in binding stays beside the new one.
        assert_eq!(
            config.keymap.action(Mode::Main, &x),
            builtin.keymap.action(Mode::Main, &x)
        );
        assert_eq!(
            config.theme.style(Slot::Title).fg,
            Some(Color::Rgb(0x10, 0x20, 0x30))
        );
        assert_eq!(
            config.theme.style(Slot::Base),
            builtin.theme.style(Slot::Base)
        );
        assert_eq!(config.refresh_every, Duration::from_secs(30));
    }

    #[test]
    fn flag_beats_no_color_beats_the_user_file() {
        let text = "[theme]\ntitle = { fg = \"red\", bold = true }\n";
        let file = Path::new("config.toml");
        let title = |color_flag, no_color| {
            Config::resolve(&Sources {
                color_flag,
                no_color,
                user: Some((file, text)),
            })
            .unwrap()
            .theme
            .style(Slot::Title)
        };
        assert_eq!(title(None, false).fg, Some(Color::Red));
        assert_eq!(title(None, true).fg, None);
        assert!(
            title(None, true)
                .add_modifier
                .contains(ratatui::style::Modifier::BOLD)
        );
        assert_eq!(title(Some(true), true).fg, Some(Color::Red));
        assert_eq!(title(Some(false), false).fg, None);
    }

    #[test]
    fn errors_name_the_file_the_key_and_the_rule() {
        let file = "/home/op/.config/valp/config.toml";
        assert_eq!(
            error("[colours]\n"),
            format!("{file}: colours: unknown table (tables: keymap, theme, console, agents)")
        );
        assert_eq!(
            error("keymap = 3\n"),
            format!("{file}: keymap: must be a table")
        );
        assert_eq!(
            error("[console]\nrefresh_seconds = 0\n"),
            format!(
                "{file}: console.refresh_seconds: must be a whole number from 1 to 3600, not 0"
            )
        );
        assert_eq!(
            error("[console]\nrefresh = 5\n"),
            format!("{file}: console.refresh: unknown setting (settings: refresh_seconds)")
        );
        assert!(
            error("[keymap.main]\nc = \"explode\"\n").starts_with(&format!(
                "{file}: keymap: [main] key \"c\": unknown action \"explode\""
            )),
            "{}",
            error("[keymap.main]\nc = \"explode\"\n")
        );
        assert!(
            error("[theme]\ntitle = { fg = \"mauve\" }\n")
                .starts_with(&format!("{file}: theme: slot \"title\": ")),
            "{}",
            error("[theme]\ntitle = { fg = \"mauve\" }\n")
        );
        assert!(
            error("[console\n").starts_with(&format!("{file}: TOML parse error at line 1")),
            "{}",
            error("[console\n")
        );
    }

    #[test]
    fn a_given_file_must_exist_a_found_one_may_be_missing() {
        let temp = tempfile::tempdir().unwrap();
        let missing = temp.path().join("config.toml");
        assert_eq!(
            Config::load(None, Some(&missing), None, false).unwrap(),
            Config::builtin().unwrap()
        );
        let error = Config::load(Some(&missing), None, None, false)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!(
                "{}: (file): cannot be read: No such file or directory",
                missing.display()
            )),
            "{error}"
        );
        std::fs::write(&missing, "[console]\nrefresh_seconds = 9\n").unwrap();
        let found = Config::load(None, Some(&missing), None, false).unwrap();
        assert_eq!(found.refresh_every, Duration::from_secs(9));
    }
}
