//! The commands of the `valp` binary, written against `std::io::Write` so tests can run them.

mod conformance;
mod demo;
mod init;
mod interop;
mod verify;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use valp_store::io::OsStorage;
use valp_store::layout::{ROOT_DIR, ROOT_ENV, control_root_of, resolve_root};
use valp_store::{ControlRoot, StoreError};

use crate::cli::{Cli, Command};
use crate::conformance::ConformanceError;

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The conformance inputs were unusable.
    #[error(transparent)]
    Conformance(#[from] ConformanceError),
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// The command cannot run as asked.
    #[error("{0}")]
    Usage(String),
}

/// Runs the parsed command line, writing its output to `out`.
pub fn run(cli: Cli, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    let root = cli.root;
    match cli.command {
        Command::Init { installation_id } => {
            init::run(&init_target(root.as_deref())?, installation_id, out)
        }
        Command::Verify => verify::run(&open_root(root.as_deref())?, out),
        Command::Export {
            reference: _,
            task,
            dir,
        } => interop::export(&open_root(root.as_deref())?, &task, &dir, out),
        Command::Import { dir } => interop::import(&open_root(root.as_deref())?, &dir, out),
        Command::Demo(args) => demo::run(&init_target(root.as_deref())?, &args, out),
        Command::Conformance {
            files,
            deviations,
            no_deviations,
            quiet,
        } => conformance::run(&files, deviations.as_deref(), no_deviations, quiet, out),
    }
}

fn env_root() -> Option<PathBuf> {
    std::env::var_os(ROOT_ENV)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

fn current_dir() -> Result<PathBuf, CommandError> {
    std::env::current_dir()
        .map_err(|error| CommandError::Usage(format!("cannot read the current folder: {error}")))
}

/// Where `init` creates a control root: --root, `VALP_ROOT`, or `./.valp`.
fn init_target(explicit: Option<&Path>) -> Result<PathBuf, CommandError> {
    match explicit.map(Path::to_path_buf).or_else(env_root) {
        Some(folder) => Ok(control_root_of(&folder)),
        None => Ok(current_dir()?.join(ROOT_DIR)),
    }
}

/// Opens the control root named by --root, `VALP_ROOT` or found from the current folder up.
fn open_root(explicit: Option<&Path>) -> Result<ControlRoot, CommandError> {
    let cwd = current_dir()?;
    let found = resolve_root(explicit, env_root().as_deref(), &cwd).ok_or_else(|| {
        CommandError::Usage(format!(
            "no valp control root found from {} upward (looked for {ROOT_DIR}/installation.json); \
             run `valp init`, or name one with --root DIR or {ROOT_ENV}",
            cwd.display()
        ))
    })?;
    Ok(ControlRoot::open(&found, Arc::new(OsStorage))?)
}
