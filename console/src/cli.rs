//! The command line.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// valp: supervise AI coding agents under the Visible Agent Loop Protocol (VALP 0.3).
#[derive(Debug, Parser)]
#[command(name = "valp", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check the kernel against reference conformance vectors.
    ///
    /// Reads vector files (`.jsonl` or `.jsonl.gz`) in the three formats of the VALP reference
    /// kernel's vectors (single reduce calls, genesis replays, checkpoint suffix replays), runs
    /// every case, prints each failure with the vector name and the first differing byte, a
    /// table per category, and ends with `conformance: N passed, D deviations, F failed`.
    /// Exits non-zero when any case failed.
    ///
    /// Example: valp conformance tests/fixtures/conformance/*.jsonl.gz
    Conformance {
        /// Vector files.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Declared deviations to use instead of the built-in `kernel/deviations.json`.
        #[arg(long, value_name = "FILE", conflicts_with = "no_deviations")]
        deviations: Option<PathBuf>,
        /// Count every difference from the reference as a failure.
        #[arg(long)]
        no_deviations: bool,
        /// Print only failures and the summary line, not the category table.
        #[arg(long, short)]
        quiet: bool,
    },
}
