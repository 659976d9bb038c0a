//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// valp: supervise AI coding agents under the Visible Agent Loop Protocol (VALP 0.3).
#[derive(Debug, Parser)]
#[command(name = "valp", version, about, long_about = None)]
pub struct Cli {
    /// The control root: a `.valp` folder, or a project folder holding one. Without it valp uses
    /// `VALP_ROOT`, then the nearest `.valp/` from the current folder upward.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a control root (`.valp/`) for a new installation.
    ///
    /// Creates `.valp/` in the current folder (or at --root / `VALP_ROOT`) with
    /// `installation.json` and the folders for tasks, evidence, adapter runtime files, the inbox
    /// and quarantine. Never overwrites an existing installation.
    Init {
        /// Installation id to use (default: `inst-` and 20 random hex digits).
        #[arg(long, value_name = "ID")]
        installation_id: Option<String>,
    },
    /// Verify every task journal and evidence blob in the control root.
    ///
    /// Re-runs the kernel over every journal entry and checks every chained digest and every
    /// blob's content digest, without changing anything. Prints a table and ends with
    /// `verify: N journals ok, M problems`; exits non-zero when there are problems.
    Verify,
    /// Write a task's journal in the VALP reference kernel store's layout.
    ///
    /// Writes DIR/runtime/kernel/genesis.json and DIR/runtime/kernel/replay.jsonl exactly as the
    /// reference store does (one full canonical ReplayEntry per line; the size grows with the
    /// square of the history).
    Export {
        /// Required: the reference layout is the only export format.
        #[arg(long, required = true)]
        reference: bool,
        /// The task id.
        #[arg(value_name = "TASK")]
        task: String,
        /// Where to write.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Import a task from the VALP reference kernel store's layout.
    ///
    /// Reads DIR/runtime/kernel/genesis.json and replay.jsonl (or DIR itself holding them),
    /// verifies every entry by replay, and creates the task's journal in one atomic step. The
    /// task must belong to this installation and must not exist yet.
    Import {
        /// The exported folder.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Create a demo task from a seeded legal history (initialising the control root if needed).
    Demo(DemoArgs),
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

/// Options of `valp demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Task id of the demo task.
    #[arg(long, default_value = "demo-1")]
    pub task: String,
    /// Accepted entries to write.
    #[arg(long, default_value_t = 120)]
    pub entries: usize,
    /// Work items in the task.
    #[arg(long, default_value_t = 6)]
    pub work_items: usize,
    /// Seed of the history.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}
