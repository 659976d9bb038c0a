//! The commands of the `valp` binary, written against `std::io::Write` so tests can run them.

mod audit;
mod channel;
mod confirm;
mod conformance;
mod control;
mod demo;
mod doctor;
mod explain;
mod init;
mod interop;
mod leader;
mod leadership;
mod publish;
mod recover;
mod related;
mod report;
mod run;
mod status;
mod superloop;
mod task;
mod upgrade;
mod userconfig;
mod verify;

use std::io::{BufRead, IsTerminal as _, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use valp_store::io::OsStorage;
use valp_store::layout::{ROOT_DIR, ROOT_ENV, control_root_of, resolve_root};
use valp_store::{ControlRoot, StoreError};

use crate::cli::{
    AdapterCommand, AgentCommand, Cli, Command, LeaderCommand, ObserveArgs, TaskCommand,
};
use valp_runtime::authority::AuthorityError;
use valp_runtime::clock::{Clock, SystemClock};
use valp_runtime::conformance::ConformanceError;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::runtime::control::Operation;
use valp_runtime::system::SystemBackend;

/// Why a command could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The conformance inputs were unusable.
    #[error(transparent)]
    Conformance(#[from] ConformanceError),
    /// The authority lane refused or could not proceed.
    #[error(transparent)]
    Authority(AuthorityError),
    /// Writing the output failed.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
    /// The runtime could not take a step.
    #[error(transparent)]
    Runtime(#[from] valp_runtime::runtime::driver::RuntimeError),
    /// `valp report` refused or failed.
    #[error(transparent)]
    Report(#[from] valp_runtime::adapter::report::ReportError),
    /// The console's built-in configuration is broken.
    #[error(transparent)]
    Console(#[from] valp_tui::ConfigError),
    /// The command cannot run as asked.
    #[error("{0}")]
    Usage(String),
    /// `valp task status` or `valp run` served every task it could read, but `count` tasks
    /// could not be read or driven (each listed on a `problem:` line); exit code 3.
    #[error(
        "{count} task{} could not be read or driven (listed above as problem lines)",
        if *count == 1 { "" } else { "s" }
    )]
    Damaged {
        /// How many.
        count: usize,
    },
}

/// The line that lists a task that could not be read or driven, in place of its output:
/// `problem: task folder tasks/<folder>: <error>` (or `problem: task <id>: <error>` once its
/// id is known), sanitized, on one line.
fn problem_line(task: &str, error: &dyn std::fmt::Display) -> String {
    format!(
        "problem: task {}: {}",
        valp_view::sanitize::display_text(task),
        valp_view::sanitize::display_line(&error.to_string())
    )
}

/// A path (often from `--root` or the command line) as output shows it.
fn shown(path: &Path) -> String {
    valp_view::sanitize::display_line(&path.to_string_lossy())
}

/// How [`problem_line`] names a task folder: `folder tasks/<name>`, relative to the root.
fn task_folder(root: &ControlRoot, dir: &Path) -> String {
    format!(
        "folder {}",
        shown(dir.strip_prefix(root.layout().root()).unwrap_or(dir))
    )
}

/// Runs the parsed command line, reading answers to prompts from `input` and writing its
/// output to `out`.
pub fn run(
    cli: Cli,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let root = cli.globals.root;
    let clock = SystemClock;
    let options = observe_options(&cli.globals.observe);
    let Some(command) = cli.command else {
        return Ok(ExitCode::SUCCESS);
    };
    match command {
        Command::Doctor => {
            let found = find_root(root.as_deref())?;
            let opened = found
                .map(|path| ControlRoot::open(&path, Arc::new(OsStorage)))
                .transpose()?;
            doctor::run_doctor(opened.as_ref(), &clock, &options, out)
        }
        Command::Adapter(command) => supervise(&command),
        Command::Report(args) => report::run(&open_root(root.as_deref())?, &args, out),
        Command::Run(args) => run::run(&open_root(root.as_deref())?, &args, &clock, &options, out),
        Command::Task(command @ (TaskCommand::Status { .. } | TaskCommand::Explain(_))) => {
            read_task(&open_root(root.as_deref())?, &command, out)
        }
        Command::Interrupt {
            ref task,
            signal: true,
            ..
        } => {
            let root = open_root(root.as_deref())?;
            let task = task.clone();
            let (_, operation, note) = leader_operation(command)?;
            let code = control::run(&root, &task, &operation, &note, &clock, &options, out)?;
            if code == ExitCode::SUCCESS {
                control::signal_running(&root, &task, out)?;
            }
            Ok(code)
        }
        Command::Cancel { .. }
        | Command::Interrupt { .. }
        | Command::Resume { .. }
        | Command::Redirect { .. }
        | Command::Review { .. }
        | Command::Approve { .. }
        | Command::Retry { .. }
        | Command::Unblock { .. } => {
            let (task, operation, note) = leader_operation(command)?;
            control::run(
                &open_root(root.as_deref())?,
                &task,
                &operation,
                &note,
                &clock,
                &options,
                out,
            )
        }
        Command::Task(
            command @ (TaskCommand::Publish { .. } | TaskCommand::ImportSuperloop { .. }),
        ) => superloop::publish_task(&open_root(root.as_deref())?, command, &clock, &options, out),
        Command::Task(TaskCommand::Handoff {
            task,
            successor,
            yes,
        }) => {
            let request = task::HandoffRequest {
                task_id: &task,
                successor_id: successor.as_deref(),
                yes,
            };
            task::handoff(
                &open_root(root.as_deref())?,
                &request,
                &clock,
                &options,
                input,
                out,
            )
        }
        Command::Leader(command) => leader(root.as_deref(), command, &clock, &options, input, out),
        Command::Init { .. }
        | Command::Verify
        | Command::Upgrade { .. }
        | Command::Recover { .. } => root_files(root.as_deref(), command, input, out),
        Command::Export {
            reference: _,
            task,
            dir,
        } => interop::export(&open_root(root.as_deref())?, &task, &dir, out),
        Command::Import { dir } => interop::import(&open_root(root.as_deref())?, &dir, out),
        command @ (Command::Hook(_) | Command::Notify(_) | Command::Agent(_)) => {
            channel::run(command, root.as_deref(), &clock, &options, input, out)
        }
        Command::Ingest(command) => related::run(command, root.as_deref(), out),
        Command::Audit { json, targets } => audit::run(root.as_deref(), &targets, json, out),
        command @ (Command::DemoAgent { .. } | Command::Conformance { .. }) => {
            without_root(command, out)
        }
        Command::Demo(args) => demo::run(&init_target(root.as_deref())?, &args, out),
    }
}

/// The commands that work without a control root: `valp agent …`, `valp demo-agent`
/// and `valp conformance FILE…`.
fn without_root(command: Command, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    match command {
        Command::Conformance {
            files,
            deviations,
            no_deviations,
            quiet,
        } => conformance::run(&files, deviations.as_deref(), no_deviations, quiet, out),
        Command::Agent(AgentCommand::Classify {
            agent,
            profile,
            file,
        }) => valp_runtime::agent::command::classify_file(
            agent.as_deref(),
            profile.as_deref(),
            &file,
            out,
        )
        .map_err(|error| CommandError::Usage(error.to_string())),
        Command::DemoAgent {
            seed,
            ask,
            hook_command,
            settings,
        } => {
            let hooks = crate::demo_terminal::Hooks::new(hook_command, settings.as_deref())?;
            crate::demo_terminal::run(seed, ask, &current_dir()?, &hooks)?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(CommandError::Usage(format!(
            "{other:?} needs a control root"
        ))),
    }
}

/// The read-only task commands: `valp task status`, `valp task explain`.
fn read_task(
    root: &ControlRoot,
    command: &TaskCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match command {
        TaskCommand::Status { task } => status::run(root, task.as_deref(), out),
        TaskCommand::Explain(args) => explain::run(root, args, out),
        other => Err(CommandError::Usage(format!(
            "not a read-only task command: {other:?}"
        ))),
    }
}

/// The commands on the control root's files themselves: create, verify, upgrade, recover.
fn root_files(
    root: Option<&Path>,
    command: Command,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match command {
        Command::Init { installation_id } => init::run(&init_target(root)?, installation_id, out),
        Command::Upgrade { yes } => upgrade::run(&existing_root(root)?, yes, input, out),
        Command::Recover {
            task, actions, yes, ..
        } => recover::run(&open_root(root)?, task.as_deref(), actions, yes, input, out),
        Command::Verify => verify::run(&open_root(root)?, out),
        other => Err(CommandError::Usage(format!(
            "{other:?} is not a command on the control root's files"
        ))),
    }
}

/// The plan the demo console publishes once a Leader is bound.
const DEMO_PLAN: &str = include_str!("../../examples/plans/demo.toml");
/// How errors name it.
const DEMO_PLAN_FILE: &str = "examples/plans/demo.toml";

/// The console's clock: the backend moves to a thread of its own, so it lives as long as the
/// program.
static CONSOLE_CLOCK: SystemClock = SystemClock;

/// What the console is opened with.
#[derive(Debug, Clone)]
pub struct ConsoleArgs {
    /// `--root`.
    pub root: Option<PathBuf>,
    /// Where the Doctor looks.
    pub observe: ObserveArgs,
    /// `valp demo --console`.
    pub demo: bool,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--color always|never`.
    pub color: Option<bool>,
    /// `--theme NAME`.
    pub theme: Option<String>,
}

/// The console's configuration (built-in files, the user file, `--config`/`VALP_CONFIG`, the
/// colour flags), judged before anything else runs: a bad user file refuses the command before
/// `valp demo --console` initialises a root.
pub fn console_config(args: &ConsoleArgs) -> Result<valp_tui::Config, CommandError> {
    userconfig::load(args, &valp_runtime::userfiles::UserFiles::locate())
}

/// Runs a hook command [`crate::fast_hook`] parsed (no control root, no Doctor: the hook
/// finds its attempt in its environment).
pub fn run_hook(
    hook: &crate::fast_hook::FastHook,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match hook {
        crate::fast_hook::FastHook::Hook(args) => {
            channel::hook_command(args, &SystemClock, input, out)
        }
        crate::fast_hook::FastHook::Notify(args) => {
            channel::notify_command(args, &SystemClock, input, out)
        }
    }
}

/// Opens the full-screen console on the control root (the daily start: observe, record,
/// re-prove the Leader session) and runs it until the user quits.
///
/// `config` is [`console_config`]'s answer, read before the command that ends in the console
/// (`valp demo --console`) writes anything.
pub fn open_console(
    args: &ConsoleArgs,
    config: valp_tui::Config,
) -> Result<ExitCode, CommandError> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(CommandError::Usage(
            "the console needs a terminal (stdin and stdout are not both one); the commands \
             in `valp --help` work without one"
                .to_owned(),
        ));
    }
    let files = valp_runtime::userfiles::UserFiles::locate();
    // The console owns the terminal: what it has to say beyond the screen goes to the log.
    if let Some(logs) = &files.logs
        && let Err(error) = valp_runtime::userfiles::start_log(logs)
    {
        eprintln!(
            "valp: no console log: {}",
            valp_view::sanitize::display_line(&error)
        );
    }
    let root = open_root(args.root.as_deref())?;
    let valp = std::env::current_exe()
        .map_err(|error| CommandError::Usage(format!("cannot find the valp binary: {error}")))?;
    let mut backend = SystemBackend::open(root, &CONSOLE_CLOCK, observe_options(&args.observe))
        .map_err(CommandError::from)?
        .with_runtime(valp);
    if args.demo {
        backend = backend.with_plan_once_proven(DEMO_PLAN_FILE, DEMO_PLAN);
    }
    let inbox = valp_tui::Inbox::new();
    let notifier = inbox.notifier();
    backend
        .watch(move || notifier.changed())
        .map_err(|error| CommandError::Usage(format!("cannot watch for observations: {error}")))?;
    tracing::info!("console started");
    // One thread for the UI task; the backend has its own (see `valp_tui::run`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(valp_tui::run(Box::new(backend), config, inbox))?;
    Ok(ExitCode::SUCCESS)
}

/// The task, operation and note of one of the Leader's task commands.
fn leader_operation(command: Command) -> Result<(String, Operation, String), CommandError> {
    Ok(match command {
        Command::Cancel { task, item, note } => (
            task,
            item.map_or(Operation::CancelTask, Operation::CancelItem),
            note,
        ),
        Command::Interrupt { task, note, .. } => (task, Operation::Interrupt, note),
        Command::Resume { task, note } => (task, Operation::Resume, note),
        Command::Redirect {
            task,
            intent,
            superseded,
            note,
        } => {
            let intent = std::fs::read(&intent)
                .map_err(|error| CommandError::Usage(format!("{}: {error}", intent.display())))?;
            (task, Operation::Redirect { superseded, intent }, note)
        }
        Command::Review {
            task,
            decision,
            note,
        } => (task, Operation::Review(decision == "pass"), note),
        Command::Approve {
            task,
            decision,
            note,
        } => (task, Operation::Approval(decision == "grant"), note),
        Command::Retry { task, item, note } => (task, Operation::Retry(item), note),
        Command::Unblock { task, note } => (task, Operation::Recover, note),
        other => {
            return Err(CommandError::Usage(format!(
                "{other:?} is not an operation on a task"
            )));
        }
    })
}

fn leader(
    root: Option<&Path>,
    command: LeaderCommand,
    clock: &dyn Clock,
    options: &ObserveOptions,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let rotate = matches!(command, LeaderCommand::Rotate { .. });
    match command {
        LeaderCommand::Candidates { json } => doctor::run_candidates(json, clock, options, out),
        LeaderCommand::Select { candidate, yes } | LeaderCommand::Rotate { candidate, yes } => {
            let choice = leader::Choice {
                candidate_id: &candidate,
                yes,
                rotate,
            };
            leader::choose(&open_root(root)?, &choice, clock, options, input, out)
        }
        LeaderCommand::Show => leader::show(&open_root(root)?, clock, options, out),
    }
}

/// The Doctor's options from the command line; `TMUX_TMPDIR` is honoured as tmux does.
fn observe_options(args: &ObserveArgs) -> ObserveOptions {
    ObserveOptions {
        scan_default_sockets: !args.no_default_sockets,
        extra_sockets: args.tmux_sockets.clone(),
        ..ObserveOptions::default()
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

/// The control root named by --root, `VALP_ROOT` or found from the current folder up.
fn find_root(explicit: Option<&Path>) -> Result<Option<PathBuf>, CommandError> {
    Ok(resolve_root(
        explicit,
        env_root().as_deref(),
        &current_dir()?,
    ))
}

/// Opens the control root named by --root, `VALP_ROOT` or found from the current folder up.
fn open_root(explicit: Option<&Path>) -> Result<ControlRoot, CommandError> {
    Ok(ControlRoot::open(
        &existing_root(explicit)?,
        Arc::new(OsStorage),
    )?)
}

/// The control root named by --root, `VALP_ROOT` or found from the current folder up, without
/// opening it.
fn existing_root(explicit: Option<&Path>) -> Result<PathBuf, CommandError> {
    let cwd = current_dir()?;
    find_root(explicit)?.ok_or_else(|| {
        CommandError::Usage(format!(
            "no valp control root found from {} upward (looked for {ROOT_DIR}/installation.json); \
             run `valp init`, or name one with --root DIR or {ROOT_ENV}",
            cwd.display()
        ))
    })
}

/// `valp adapter …`: an attempt's supervisor.
fn supervise(command: &AdapterCommand) -> Result<ExitCode, CommandError> {
    let (name, dir, result) = match command {
        AdapterCommand::Process { dir } => (
            "process",
            dir,
            valp_runtime::adapter::process::supervise(dir),
        ),
        AdapterCommand::Tmux { dir } => ("tmux", dir, valp_runtime::adapter::tmux::supervise(dir)),
    };
    result
        .map_err(|error| CommandError::Usage(format!("{name} adapter {}: {error}", dir.display())))
}
