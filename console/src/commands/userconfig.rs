//! The console's user configuration file: which one (`--config`, else `VALP_CONFIG`, else the
//! platform's place, see `valp_runtime::userfiles`), the console's settings in it (judged by
//! valp-tui), its agent profile overrides (judged by valp-runtime, so a bad one stops the
//! console at start rather than an agent later), and the file handed to the supervisors the
//! console launches, so they read the same overrides.

use std::path::{Path, PathBuf};

use valp_runtime::agent::overrides::AgentOverrides;
use valp_runtime::userfiles::{self, UserFiles};

use super::{CommandError, ConsoleArgs};

/// The console's configuration from the user file the console uses (see the module).
pub fn load(args: &ConsoleArgs, files: &UserFiles) -> Result<valp_tui::Config, CommandError> {
    let named = args.config.clone().or_else(|| {
        std::env::var_os(userfiles::CONFIG_VARIABLE)
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
    });
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    let config = valp_tui::Config::load(
        named.as_deref(),
        files.config.as_deref(),
        args.color,
        no_color,
        args.theme.as_deref(),
    )?;
    let chosen = named
        .as_deref()
        .or_else(|| files.config.as_deref().filter(|path| path.is_file()));
    if let Some(file) = chosen {
        check_overrides(file)?;
        userfiles::hand_to_children(file);
    }
    Ok(config)
}

fn check_overrides(file: &Path) -> Result<(), CommandError> {
    AgentOverrides::read(file)
        .map(drop)
        .map_err(|error| CommandError::Usage(error.to_string()))
}
