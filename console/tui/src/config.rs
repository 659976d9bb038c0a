//! What the console is configured with: keymap, theme and refresh period, from the built-in
//! files with the user's configuration file on top.
//!
//! Precedence, strongest first: the command line (`--color`, `--config`, `--theme`), then
//! `NO_COLOR`, then the user file, then the built-in keymap and theme. The theme is the named
//! one (`--theme`, else `[console] theme`, else `default`) with the user file's `[theme]` table
//! over it, colours dropped last. The user file is TOML with three optional tables of the
//! console's, each laid over the built-in settings entry by entry (and `[agents]`, the agent
//! profile overrides the runtime reads: `valp_runtime::agent::overrides`):
//!
//! ```toml
//! [keymap.main]          # the keymap file's format: mode -> key = "action"
//! c = "cancel_selected"
//! [theme]                # the theme file's format: slot = { fg, bg, bold, ... }
//! title = { fg = "yellow", bold = true }
//! [console]
//! refresh_seconds = 10   # the slow refresh tick, 1 to 3600
//! notify = "bell"        # announce needs that still wait: "off" (default), "bell", "osc9"
//! notify_after_seconds = 300   # after how long (0 to 86400; default 300)
//! theme = "dark"         # a compiled-in theme: default (ANSI-16), dark, light, high-contrast
//! mouse = false          # the wheel scrolls, a click focuses a pane (default true)
//! ```
//!
//! Anything else is an error naming the file, the key and the rule it breaks.

use std::path::Path;
use std::time::Duration;

use super::keymap::{Keymap, KeymapError};
use super::theme::{THEMES, Theme, ThemeError};

/// How often the console re-runs the Doctor on its own.
const REFRESH_EVERY: Duration = Duration::from_secs(5);
/// The longest refresh period a user file may ask for.
const MAX_REFRESH_SECONDS: u64 = 3600;
/// How long a need waits before it is announced, unless the user file says otherwise.
const NOTIFY_AFTER: Duration = Duration::from_secs(300);
/// The longest announcement delay a user file may ask for (a day).
const MAX_NOTIFY_SECONDS: u64 = 86_400;

/// How the console announces a need that still waits after [`Notify::after`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyHow {
    /// Not at all.
    Off,
    /// The terminal bell (BEL).
    Bell,
    /// A desktop notification through the terminal (OSC 9), which terminals without it ignore.
    Osc9,
}

/// The needs-you announcement settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notify {
    /// How.
    pub how: NotifyHow,
    /// After how long a need is announced.
    pub after: Duration,
}

impl Notify {
    /// The delay in milliseconds, or `None` when announcing is off.
    pub fn delay_ms(self) -> Option<i64> {
        (self.how != NotifyHow::Off)
            .then(|| i64::try_from(self.after.as_millis()).unwrap_or(i64::MAX))
    }

    /// What to write to the terminal to announce `text` (cleaned of control characters: it
    /// goes inside an escape sequence).
    pub fn announce(self, text: &str) -> Option<String> {
        match self.how {
            NotifyHow::Off => None,
            NotifyHow::Bell => Some("\u{7}".to_owned()),
            NotifyHow::Osc9 => Some(format!(
                "\u{1b}]9;{}\u{7}",
                valp_view::sanitize::display_line(text).replace(['\u{1b}', '\u{7}'], "")
            )),
        }
    }
}

/// The console's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Which key does what.
    pub keymap: Keymap,
    /// How things look.
    pub theme: Theme,
    /// The period of the slow tick that sends [`Request::Refresh`](valp_view::Request).
    pub refresh_every: Duration,
    /// Whether and when needs that still wait are announced.
    pub notify: Notify,
    /// The compiled-in theme [`Self::theme`] starts from.
    pub theme_name: String,
    /// The user file's `[theme]` table, laid over whichever theme is chosen.
    user_theme: Option<Theme>,
    /// Whether colours are drawn (`--color`, `NO_COLOR`).
    colors: bool,
    /// Whether the wheel scrolls and a click focuses a pane (`[console] mouse`).
    pub mouse: bool,
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
    /// `--theme NAME`.
    pub theme: Option<&'a str>,
}

impl Config {
    /// The compiled-in defaults.
    pub fn builtin() -> Result<Self, ConfigError> {
        Ok(Self {
            keymap: Keymap::builtin()?,
            theme: Theme::builtin()?,
            refresh_every: REFRESH_EVERY,
            notify: Notify {
                how: NotifyHow::Off,
                after: NOTIFY_AFTER,
            },
            theme_name: THEMES[0].0.to_owned(),
            user_theme: None,
            colors: true,
            mouse: true,
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
        config.colors = sources.color_flag.unwrap_or(!sources.no_color);
        let name = sources
            .theme
            .map_or_else(|| config.theme_name.clone(), str::to_owned);
        config.use_theme(&name)?;
        Ok(config)
    }

    /// Draws with the compiled-in theme `name` from now on: the user file's `[theme]` table
    /// laid over it, colours dropped if `--color never` or `NO_COLOR` said so.
    pub fn use_theme(&mut self, name: &str) -> Result<(), ConfigError> {
        let mut theme = Theme::named(name)?;
        if let Some(user) = &self.user_theme {
            theme.overlay(user.clone());
        }
        self.theme = if self.colors {
            theme
        } else {
            theme.without_color()
        };
        name.clone_into(&mut self.theme_name);
        Ok(())
    }

    /// Reads the user file (`explicit`, from `--config`, must exist; `found`, the platform's
    /// place, may be missing) and resolves the configuration.
    pub fn load(
        explicit: Option<&Path>,
        found: Option<&Path>,
        color_flag: Option<bool>,
        no_color: bool,
        theme: Option<&str>,
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
            theme,
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
                "theme" => self.user_theme = Some(Theme::from_toml(&own_text())?),
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
            let seconds = |low: u64, high: u64| {
                value
                    .as_integer()
                    .and_then(|seconds| u64::try_from(seconds).ok())
                    .filter(|seconds| (low..=high).contains(seconds))
                    .map(Duration::from_secs)
                    .ok_or_else(|| ConfigError::Setting {
                        key: format!("console.{key}"),
                        rule: format!("must be a whole number from {low} to {high}, not {value}"),
                    })
            };
            match key.as_str() {
                "refresh_seconds" => self.refresh_every = seconds(1, MAX_REFRESH_SECONDS)?,
                "notify_after_seconds" => self.notify.after = seconds(0, MAX_NOTIFY_SECONDS)?,
                "mouse" => {
                    self.mouse = value.as_bool().ok_or_else(|| ConfigError::Setting {
                        key: "console.mouse".to_owned(),
                        rule: format!("must be true or false, not {value}"),
                    })?;
                }
                "theme" => {
                    let name = value.as_str().ok_or_else(|| ConfigError::Setting {
                        key: "console.theme".to_owned(),
                        rule: format!("must be a theme name, not {value}"),
                    })?;
                    // Judged now, so the error names this file.
                    Theme::named(name)?;
                    name.clone_into(&mut self.theme_name);
                }
                "notify" => {
                    self.notify.how = match value.as_str() {
                        Some("off") => NotifyHow::Off,
                        Some("bell") => NotifyHow::Bell,
                        Some("osc9") => NotifyHow::Osc9,
                        _ => {
                            return Err(ConfigError::Setting {
                                key: "console.notify".to_owned(),
                                rule: format!("must be \"off\", \"bell\" or \"osc9\", not {value}"),
                            });
                        }
                    }
                }
                _ => {
                    return Err(ConfigError::Setting {
                        key: format!("console.{key}"),
                        rule: "unknown setting (settings: refresh_seconds, notify, \
                               notify_after_seconds, theme, mouse)"
                            .to_owned(),
                    });
                }
            }
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
    use crate::{Action, Mode, Slot, Theme};

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
    fn the_theme_is_the_flag_then_the_file_with_the_users_table_over_it() {
        let text = "[console]\ntheme = \"dark\"\n[theme]\ntitle = { fg = \"red\" }\n";
        let resolve = |theme, no_color| {
            Config::resolve(&Sources {
                user: Some((Path::new("config.toml"), text)),
                theme,
                no_color,
                ..Sources::default()
            })
            .unwrap()
        };
        let dark = Theme::named("dark").unwrap();
        let light = Theme::named("light").unwrap();
        let from_file = resolve(None, false);
        assert_eq!(from_file.theme_name, "dark");
        assert_eq!(from_file.theme.style(Slot::Base), dark.style(Slot::Base));
        assert_eq!(from_file.theme.style(Slot::Title).fg, Some(Color::Red));
        let flagged = resolve(Some("light"), false);
        assert_eq!(flagged.theme.style(Slot::Base), light.style(Slot::Base));
        assert_eq!(flagged.theme.style(Slot::Title).fg, Some(Color::Red));
        // NO_COLOR still drops every colour, whichever theme.
        let plain = resolve(Some("light"), true);
        assert!(
            Slot::ALL
                .iter()
                .all(|slot| plain.theme.style(*slot).fg.is_none())
        );
        // Switching while running keeps the user's table and NO_COLOR.
        let mut switched = resolve(None, true);
        switched.use_theme("high-contrast").unwrap();
        assert_eq!(switched.theme_name, "high-contrast");
        assert!(switched.theme.style(Slot::Title).fg.is_none());
        assert!(
            switched
                .theme
                .style(Slot::Fenced)
                .add_modifier
                .contains(ratatui::style::Modifier::UNDERLINED)
        );
        assert_eq!(
            switched.use_theme("mauve").unwrap_err().to_string(),
            "theme: unknown theme \"mauve\" (themes: default, dark, light, high-contrast)"
        );
        assert_eq!(
            switched.theme_name, "high-contrast",
            "a refused switch changes nothing"
        );
        assert_eq!(
            Config::resolve(&Sources {
                theme: Some("mauve"),
                ..Sources::default()
            })
            .unwrap_err()
            .to_string(),
            "theme: unknown theme \"mauve\" (themes: default, dark, light, high-contrast)"
        );
        assert_eq!(
            error("[console]\ntheme = \"sepia\"\n"),
            "/home/op/.config/valp/config.toml: theme: unknown theme \"sepia\" (themes: default, \
             dark, light, high-contrast)"
        );
        assert_eq!(
            error("[console]\nmouse = \"yes\"\n"),
            "/home/op/.config/valp/config.toml: console.mouse: must be true or false, not \"yes\""
        );
        assert!(!user("[console]\nmouse = false\n").unwrap().mouse);
        assert!(Config::builtin().unwrap().mouse);
        assert_eq!(
            error("[console]\ntheme = 3\n"),
            "/home/op/.config/valp/config.toml: console.theme: must be a theme name, not 3"
        );
    }

    #[test]
    fn needs_are_announced_as_the_user_file_says() {
        let builtin = Config::builtin().unwrap();
        assert_eq!(builtin.notify.delay_ms(), None);
        assert_eq!(builtin.notify.announce("x"), None);
        let bell = user("[console]\nnotify = \"bell\"\nnotify_after_seconds = 0\n").unwrap();
        assert_eq!(bell.notify.delay_ms(), Some(0));
        assert_eq!(bell.notify.announce("x").unwrap(), "\u{7}");
        let osc = user("[console]\nnotify = \"osc9\"\n").unwrap();
        assert_eq!(osc.notify.delay_ms(), Some(300_000));
        assert_eq!(
            osc.notify.announce("review t\u{1b}]0;x\u{7}").unwrap(),
            "\u{1b}]9;review t\u{7}",
            "an escape sequence in the text is dropped, not passed on"
        );
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
                theme: None,
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
            format!(
                "{file}: console.refresh: unknown setting (settings: refresh_seconds, notify, \
                 notify_after_seconds, theme, mouse)"
            )
        );
        assert_eq!(
            error("[console]\nnotify = \"loud\"\n"),
            format!("{file}: console.notify: must be \"off\", \"bell\" or \"osc9\", not \"loud\"")
        );
        assert_eq!(
            error("[console]\nnotify_after_seconds = 90000\n"),
            format!(
                "{file}: console.notify_after_seconds: must be a whole number from 0 to 86400, \
                 not 90000"
            )
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
            Config::load(None, Some(&missing), None, false, None).unwrap(),
            Config::builtin().unwrap()
        );
        let error = Config::load(Some(&missing), None, None, false, None)
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
        let found = Config::load(None, Some(&missing), None, false, None).unwrap();
        assert_eq!(found.refresh_every, Duration::from_secs(9));
    }
}
