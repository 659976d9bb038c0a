//! Support for valp's cross-crate, CLI and end-to-end tests (the tests live in `tests/tests/`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(PathBuf::new, Path::to_path_buf)
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

/// The `valp` binary built for this test run (`target/<profile>/valp`).
///
/// `cargo test --workspace` builds every workspace binary before running tests; the binary sits
/// next to the `deps/` directory holding this test executable.
pub fn valp_binary() -> PathBuf {
    let executable = std::env::current_exe().unwrap_or_default();
    let profile_dir = executable
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("."));
    profile_dir.join(format!("valp{}", std::env::consts::EXE_SUFFIX))
}

/// Runs `valp` with `args` from the workspace root.
pub fn run_valp(args: &[&str]) -> std::io::Result<Output> {
    Command::new(valp_binary())
        .args(args)
        .current_dir(workspace_root())
        .output()
}
