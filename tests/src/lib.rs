//! Support for valp's cross-crate, CLI and end-to-end tests (the tests live in `tests/tests/`).

pub mod agents;
pub mod child;
pub mod cli;
pub mod leader_project;
pub mod model;
pub mod observations;
pub mod project;
pub mod pty;
pub mod schemas;
pub mod store;
pub mod tmux;
pub mod workflow;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(PathBuf::new, Path::to_path_buf)
}

/// The names of the entries of a folder, sorted.
#[allow(clippy::unwrap_used)] // test support: a folder that cannot be listed is a failed test
pub fn entry_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The committed reference conformance vectors.
pub fn conformance_fixtures() -> Vec<PathBuf> {
    let directory = workspace_root().join("tests/fixtures/conformance");
    [
        "kernel-vectors",
        "replay-vectors",
        "checkpoint-replay-vectors",
    ]
    .iter()
    .map(|name| directory.join(format!("{name}.jsonl.gz")))
    .collect()
}

/// The `valp` binary, built on first use.
///
/// Cargo builds a package's binaries only for that package's own integration tests, so this
/// package asks cargo (the one running the tests) to build `valp` in the same profile, once per
/// test process, and returns its path next to the `deps/` directory of this test executable.
pub fn valp_binary() -> std::io::Result<PathBuf> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let executable = std::env::current_exe().map_err(|error| error.to_string())?;
            let profile_dir = executable
                .parent()
                .and_then(Path::parent)
                .ok_or("test executable has no profile directory")?;
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let mut build = Command::new(cargo);
            build
                .args(["build", "--quiet", "-p", "valp-console", "--bin", "valp"])
                .current_dir(workspace_root());
            if profile_dir
                .file_name()
                .is_some_and(|name| name == "release")
            {
                build.arg("--release");
            }
            let status = build
                .status()
                .map_err(|error| format!("running cargo build: {error}"))?;
            if !status.success() {
                return Err(format!("cargo build of valp failed: {status}"));
            }
            Ok(profile_dir.join(format!("valp{}", std::env::consts::EXE_SUFFIX)))
        })
        .clone()
        .map_err(std::io::Error::other)
}

/// Runs `valp` with `args` from the workspace root.
pub fn run_valp(args: &[&str]) -> std::io::Result<Output> {
    Command::new(valp_binary()?)
        .args(args)
        .current_dir(workspace_root())
        .output()
}
