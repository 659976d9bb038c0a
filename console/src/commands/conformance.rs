//! `valp conformance`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use valp_runtime::conformance::{self, DeviationFile};

use super::CommandError;

pub(super) fn run(
    files: &[PathBuf],
    deviations: Option<&Path>,
    no_deviations: bool,
    quiet: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let deviations = match (deviations, no_deviations) {
        (_, true) => DeviationFile::none(),
        (Some(path), false) => {
            let text = std::fs::read_to_string(path).map_err(|error| {
                CommandError::Usage(format!(
                    "reading deviations file {}: {error}",
                    path.display()
                ))
            })?;
            DeviationFile::parse(&text, &path.display().to_string())?
        }
        (None, false) => DeviationFile::builtin()?,
    };
    let report = conformance::run_files(files, &deviations)?;
    for failure in report.failures() {
        writeln!(
            out,
            "FAIL {} ({}): {}",
            failure.name, failure.location, failure.message
        )?;
    }
    if !quiet {
        write!(out, "{}", report.table())?;
        for (id, count) in report.deviation_counts() {
            writeln!(
                out,
                "deviation {id}: {count} cases (see kernel/DEVIATIONS.md)"
            )?;
        }
    }
    writeln!(out, "{}", report.summary_line())?;
    Ok(if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
