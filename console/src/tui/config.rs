//! What the console is configured with: keymap, theme and refresh period.

use std::time::Duration;

use super::keymap::{Keymap, KeymapError};
use super::theme::{Theme, ThemeError};

/// How often the console re-runs the Doctor on its own.
const REFRESH_EVERY: Duration = Duration::from_secs(5);

/// The console's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Which key does what.
    pub keymap: Keymap,
    /// How things look.
    pub theme: Theme,
    /// The period of the slow tick that sends [`Request::Refresh`](crate::view::Request).
    pub refresh_every: Duration,
}

/// A configuration file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The keymap.
    #[error(transparent)]
    Keymap(#[from] KeymapError),
    /// The theme.
    #[error(transparent)]
    Theme(#[from] ThemeError),
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
}
