//! The `valp` binary: parses the command line and runs the chosen command.
//!
//! A command that cannot do its job prints `valp: <what and where>` to stderr (through
//! [`display_message`]: errors echo what the operator typed, and escape sequences must not
//! reach the terminal) and exits with 2 for a usage problem and 1 otherwise; color-eyre
//! reports only what no command expected. `valp task status` and `valp run` exit with 3 when
//! they did their job for every task they could read but some task could not be read
//! ([`CommandError::Damaged`]). When the reader of standard output goes away (`valp task
//! status | head -1`), valp stops quietly with 141, as a command ended by SIGPIPE would.

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser as _;
use color_eyre::eyre::Result;
use valp_console::cli::Cli;
use valp_console::commands::{self, CommandError};
use valp_view::sanitize::display_message;

/// The exit code when standard output was closed by its reader (as a shell reports a command
/// ended by SIGPIPE: 128 + 13), printed nothing about.
const CLOSED_OUTPUT: u8 = 141;

/// Replay allocates and frees many short strings per event; glibc's allocator fragments under
/// that load and makes journal replay about twice as slow (see `kernel/benches`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<ExitCode> {
    // Agents wait for their hooks: a hook command skips color-eyre and the full command line.
    // With glibc, `process_start.c` turned huge pages off before the first allocation already
    // (for `valp verify` too); these calls cover the command lines it does not look at.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|word| word == "hook" || word == "notify")
    {
        valp_console::small_pages::small_pages();
    }
    if let Some(hook) = valp_console::fast_hook::parse(&args) {
        let mut out = std::io::stdout().lock();
        let result = commands::run_hook(&hook, &mut std::io::stdin().lock(), &mut out);
        return Ok(exit_code(
            result.and_then(|code| Ok(out.flush().map(|()| code)?)),
        ));
    }
    color_eyre::install()?;
    // `valp verify` skips building the whole command line (`fast_hook::verify`).
    let cli = valp_console::fast_hook::verify(&args).unwrap_or_else(|| Cli::parse_from(args));
    if cli.is_verify() {
        // Huge pages cost a short verify their zeroing and a long one ~8 MiB of peak RSS.
        valp_console::small_pages::small_pages();
    }
    let console = cli.opens_console().then(|| commands::ConsoleArgs {
        root: cli.globals.root.clone(),
        observe: cli.globals.observe.clone(),
        demo: cli.is_demo(),
        config: cli.globals.config.clone(),
        color: cli.globals.color.forced(),
        theme: cli.globals.theme.clone(),
    });
    // The console's configuration is judged before the command runs: a bad user file must
    // not leave a half-made demo root behind.
    let console =
        match console.map(|args| commands::console_config(&args).map(|config| (args, config))) {
            Some(Err(error)) => return Ok(exit_code(Err(error))),
            other => other.and_then(Result::ok),
        };
    let code = {
        let mut out = std::io::stdout().lock();
        let mut input = std::io::stdin().lock();
        let result = commands::run(cli, &mut input, &mut out);
        match out.flush() {
            Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => {
                return Ok(ExitCode::from(CLOSED_OUTPUT));
            }
            flushed => flushed?,
        }
        result
    };
    // `valp task status | head -1`: the reader went away; that is not the command's failure.
    if let Err(CommandError::Output(error)) = &code
        && error.kind() == std::io::ErrorKind::BrokenPipe
    {
        return Ok(ExitCode::from(CLOSED_OUTPUT));
    }
    let code = match (code, console) {
        (Ok(code), Some((console, config))) if code == ExitCode::SUCCESS => {
            // Long-lived and mostly idle: no 2 MiB pages its heap only partly uses.
            valp_console::small_pages::small_pages();
            commands::open_console(&console, config)
        }
        (other, _) => other,
    };
    Ok(exit_code(code))
}

/// The exit code of a command's result; a failure is printed first.
fn exit_code(result: Result<ExitCode, CommandError>) -> ExitCode {
    result.unwrap_or_else(|error| {
        eprintln!("valp: {}", display_message(&error.to_string()));
        ExitCode::from(match error {
            CommandError::Usage(_) => 2,
            CommandError::Damaged { .. } => 3,
            _ => 1,
        })
    })
}
