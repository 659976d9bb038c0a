//! Kernel conformance: run the reference kernel's vectors against our kernel.
//!
//! `valp conformance FILE...` and the test suite both call [`run_files`]. Each vector is one
//! line of a `.jsonl` or `.jsonl.gz` file in one of the three formats of the reference vectors
//! (single `reduce` calls, genesis replays, checkpoint suffix replays; see
//! `tests/fixtures/conformance/PROVENANCE.md`). A case passes when our kernel produces exactly
//! the expected bytes (or, for a replay that must fail, the same failure). A case that differs
//! counts as a *deviation* only when `kernel/deviations.json` declares one for its name and our
//! kernel produced exactly the declared outcome; anything else fails.

mod cases;
mod deviations;
mod report;
mod vectors;

use std::path::{Path, PathBuf};

pub use deviations::{DEFAULT_DEVIATIONS, DeclaredOutcome, Deviation, DeviationFile};
pub use report::{CaseVerdict, Report};

/// A problem with the inputs of a run (not with our kernel).
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    /// A vector file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The deviations file is not valid.
    #[error("deviations file {origin}: {message}")]
    Deviations {
        /// Where the deviations came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// No vectors were found in the given files.
    #[error("no conformance vectors found in {0}")]
    Empty(String),
}

/// Runs every vector of every file and returns the report.
///
/// Malformed vector lines are reported as failed cases naming the file and line; they never
/// stop the run.
pub fn run_files(
    paths: &[PathBuf],
    deviations: &DeviationFile,
) -> Result<Report, ConformanceError> {
    let mut report = Report::default();
    for path in paths {
        run_file(path, deviations, &mut report)?;
    }
    if report.total() == 0 {
        let names: Vec<String> = paths
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        return Err(ConformanceError::Empty(names.join(", ")));
    }
    Ok(report)
}

fn run_file(
    path: &Path,
    deviations: &DeviationFile,
    report: &mut Report,
) -> Result<(), ConformanceError> {
    let io_error = |source| ConformanceError::Io {
        path: path.to_owned(),
        source,
    };
    let mut lines = vectors::VectorLines::open(path).map_err(io_error)?;
    while let Some((line_number, line)) = lines.next_line().map_err(io_error)? {
        let location = format!("{}:{line_number}", path.display());
        report.record(cases::run_line(&line, &location, deviations));
    }
    Ok(())
}
