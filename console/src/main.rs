//! The `valp` binary: parses the command line and runs the chosen command.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;
use color_eyre::eyre::{Result, WrapErr as _};
use valp_console::cli::{Cli, Command};
use valp_console::conformance::{self, DeviationFile};

/// Replay allocates and frees many short strings per event; glibc's allocator fragments under
/// that load and makes journal replay about twice as slow (see `kernel/benches`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<ExitCode> {
    color_eyre::install()?;
    let cli = Cli::parse();
    match cli.command {
        Command::Conformance {
            files,
            deviations,
            no_deviations,
            quiet,
        } => {
            let deviations = match (deviations, no_deviations) {
                (_, true) => DeviationFile::parse(
                    r#"{"schema_version":"valp-kernel-deviations.v1","deviations":[]}"#,
                    "--no-deviations",
                )?,
                (Some(path), false) => {
                    let text = std::fs::read_to_string(&path)
                        .wrap_err_with(|| format!("reading deviations file {}", path.display()))?;
                    DeviationFile::parse(&text, &path.display().to_string())?
                }
                (None, false) => DeviationFile::builtin()?,
            };
            let report = conformance::run_files(&files, &deviations)?;
            let mut out = std::io::stdout().lock();
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
    }
}
