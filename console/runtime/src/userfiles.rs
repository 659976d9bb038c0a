//! Where the operator's own files live, through `directories` (the platform's conventions:
//! `$XDG_CONFIG_HOME/valp/config.toml` and `$XDG_DATA_HOME/valp/logs/` on Linux; `VALP_CONFIG`
//! names another config file), and the log
//! those files hold: `tracing` events written to a file rotated daily, because the console owns
//! stdout and stderr while it runs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The name of the user configuration file in the config folder.
pub const CONFIG_FILE: &str = "config.toml";
/// The environment variable naming the user configuration file for every valp process (the
/// console's `--config` beats it; the console sets it for the supervisors it launches).
pub const CONFIG_VARIABLE: &str = "VALP_CONFIG";
/// The log files' prefix (`valp.log.YYYY-MM-DD`).
pub const LOG_PREFIX: &str = "valp.log";

/// The operator's configuration file and log folder; `None` where the platform has no home
/// folder to put them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserFiles {
    /// The configuration file (it need not exist).
    pub config: Option<PathBuf>,
    /// The folder of the log files.
    pub logs: Option<PathBuf>,
}

impl UserFiles {
    /// This platform's places for this user; the config file is the one [`CONFIG_VARIABLE`]
    /// names when it is set.
    pub fn locate() -> Self {
        let dirs = directories::ProjectDirs::from("", "", "valp");
        let named = std::env::var_os(CONFIG_VARIABLE)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        Self {
            config: named.or_else(|| {
                dirs.as_ref()
                    .map(|dirs| dirs.config_dir().join(CONFIG_FILE))
            }),
            logs: dirs.as_ref().map(|dirs| dirs.data_dir().join("logs")),
        }
    }

    /// The lines `valp doctor` prints about them.
    pub fn describe(&self) -> Vec<String> {
        let place = |path: Option<&Path>, present: fn(&Path) -> bool| match path {
            Some(path) => format!(
                "{} ({})",
                valp_view::sanitize::display_line(&path.to_string_lossy()),
                if present(path) { "present" } else { "absent" }
            ),
            None => "none (no home folder)".to_owned(),
        };
        vec![
            format!(
                "user config: {}",
                place(self.config.as_deref(), Path::is_file)
            ),
            format!("console log: {}", place(self.logs.as_deref(), Path::is_dir)),
        ]
    }
}

/// The user configuration file this process chose, handed to the processes it launches.
static FOR_CHILDREN: OnceLock<PathBuf> = OnceLock::new();

/// Hands `file` (made absolute: a supervisor works in another folder) to every process this one
/// launches from now on, as [`CONFIG_VARIABLE`]; the first call wins.
pub fn hand_to_children(file: &Path) {
    let _ = FOR_CHILDREN.set(absolute(file));
}

/// `file` from the root (as it is: a supervisor would read it relative to its own folder).
fn absolute(file: &Path) -> PathBuf {
    std::path::absolute(file).unwrap_or_else(|_| file.to_owned())
}

/// The user configuration file handed to launched processes, if any.
pub fn for_children() -> Option<&'static Path> {
    FOR_CHILDREN.get().map(PathBuf::as_path)
}

/// Sends `tracing` events at INFO and above to a daily log file in `folder` (created if
/// missing). A folder that cannot be made only means no log: the console runs without one.
pub fn start_log(folder: &Path) -> Result<(), String> {
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix(LOG_PREFIX)
        .max_log_files(7)
        .build(folder)
        .map_err(|error| format!("{}: {error}", folder.display()))?;
    tracing_subscriber::fmt()
        .with_writer(appender)
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .try_init()
        .map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn the_doctor_says_where_the_files_are_and_whether_they_exist() {
        let temp = tempfile::tempdir().unwrap();
        let files = UserFiles {
            config: Some(temp.path().join(CONFIG_FILE)),
            logs: Some(temp.path().to_owned()),
        };
        let shown = temp.path().display();
        assert_eq!(
            files.describe(),
            [
                format!("user config: {shown}/config.toml (absent)"),
                format!("console log: {shown} (present)"),
            ]
        );
        let nowhere = UserFiles {
            config: None,
            logs: None,
        };
        assert_eq!(
            nowhere.describe(),
            [
                "user config: none (no home folder)",
                "console log: none (no home folder)"
            ]
        );
    }

    #[test]
    fn the_file_handed_to_children_is_named_from_the_root() {
        let handed = absolute(Path::new("relative/config.toml"));
        assert!(handed.is_absolute(), "{}", handed.display());
        assert_eq!(
            handed,
            std::env::current_dir()
                .unwrap()
                .join("relative/config.toml")
        );
        assert_eq!(
            absolute(Path::new("/elsewhere/config.toml")),
            Path::new("/elsewhere/config.toml")
        );
    }

    #[test]
    fn events_land_in_the_days_log_file() {
        let temp = tempfile::tempdir().unwrap();
        start_log(temp.path()).unwrap();
        tracing::info!(probe = 42, "a logged event");
        let file = std::fs::read_dir(temp.path())
            .unwrap()
            .flatten()
            .find(|entry| entry.file_name().to_string_lossy().starts_with(LOG_PREFIX))
            .unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        assert!(text.contains("a logged event probe=42"), "{text}");
    }
}
