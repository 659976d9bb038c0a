//! The `valp` binary: parses the command line and runs the chosen command.
//!
//! A command that cannot do its job prints one line, `valp: <what and where>`, to stderr and
//! exits with 2 for a usage problem and 1 otherwise; color-eyre reports only what no command
//! expected.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;
use color_eyre::eyre::Result;
use valp_console::cli::Cli;
use valp_console::commands::{self, CommandError};

/// Replay allocates and frees many short strings per event; glibc's allocator fragments under
/// that load and makes journal replay about twice as slow (see `kernel/benches`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<ExitCode> {
    color_eyre::install()?;
    let cli = Cli::parse();
    let console = cli
        .opens_console()
        .then(|| (cli.root.clone(), cli.observe.clone(), cli.is_demo()));
    let code = {
        let mut out = std::io::stdout().lock();
        let mut input = std::io::stdin().lock();
        let result = commands::run(cli, &mut input, &mut out);
        out.flush()?;
        result
    };
    let code = match (code, console) {
        (Ok(code), Some((root, observe, demo))) if code == ExitCode::SUCCESS => {
            commands::open_console(root.as_deref(), &observe, demo)
        }
        (other, _) => other,
    };
    Ok(code.unwrap_or_else(|error| {
        eprintln!("valp: {error}");
        ExitCode::from(if matches!(error, CommandError::Usage(_)) {
            2
        } else {
            1
        })
    }))
}
