//! `valp agent classify`: the state a profile reads from a captured screen file.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::classify::classify;
use super::overrides::{AgentOverrides, OverrideError};
use super::profile::{Profile, ProfileError};
use valp_view::sanitize::display_line;

/// Why `valp agent classify` could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    /// The profile was refused.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The user config file's override of the profile was refused.
    #[error(transparent)]
    Override(#[from] OverrideError),
    /// A file could not be read.
    #[error("{file}: {error}")]
    Read {
        /// The file, as shown.
        file: String,
        /// Why.
        error: std::io::Error,
    },
    /// Writing the answer failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

fn read(path: &Path) -> Result<String, ClassifyError> {
    let bytes = std::fs::read(path).map_err(|error| ClassifyError::Read {
        file: display_line(&path.to_string_lossy()),
        error,
    })?;
    // A screen is untrusted bytes: invalid UTF-8 is shown as U+FFFD, never refused.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Classifies the screen in `file` with the built-in profile `agent` (with the user config
/// file's override, see [`AgentOverrides`]) or the profile file `profile` and prints the state, the rule that matched and the input line.
pub fn classify_file(
    agent: Option<&str>,
    profile: Option<&Path>,
    file: &Path,
    out: &mut dyn Write,
) -> Result<ExitCode, ClassifyError> {
    let profile = match (profile, agent) {
        (Some(path), _) => Profile::parse(&read(path)?, &display_line(&path.to_string_lossy()))?,
        (None, name) => AgentOverrides::of_this_process()?.profile(name.unwrap_or("generic"))?,
    };
    let read = classify(&profile, &read(file)?);
    writeln!(out, "agent: {}", display_line(&profile.name))?;
    writeln!(out, "state: {}", read.state.name())?;
    match read.rule {
        Some((rule, line)) => writeln!(out, "rule: {} (line {line})", display_line(&rule))?,
        None => writeln!(out, "rule: none")?,
    }
    match read.input.as_deref() {
        None => writeln!(out, "input: not seen")?,
        Some("") => writeln!(out, "input: empty")?,
        Some(text) => writeln!(out, "input: {text}")?,
    }
    Ok(ExitCode::SUCCESS)
}
