//! The command line.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// valp: supervise AI coding agents under the Visible Agent Loop Protocol (VALP 0.3).
///
/// Without a command, opens the operator console on the control root: it observes this
/// machine's Leader candidates, re-proves the bound Leader session (or asks you, once, to select
/// one) and shows the installation's tasks.
#[derive(Debug, Parser)]
#[command(name = "valp", version, about, long_about)]
pub struct Cli {
    /// The options every command takes.
    #[command(flatten)]
    pub globals: Globals,
    /// What to do; without a command valp opens the operator console on the control root.
    #[command(subcommand)]
    pub command: Option<Command>,
}

// The options every command takes, before or after its name (`global`); on their own for
// `valp verify`'s short way in (`crate::fast_hook::verify`).
#[allow(
    missing_docs,
    reason = "no doc comment on flattened arguments: it would become the command's about text"
)]
#[derive(Debug, Clone, Args)]
pub struct Globals {
    /// The control root: a `.valp` folder, or a project folder holding one. Without it valp uses
    /// `VALP_ROOT`, then the nearest `.valp/` from the current folder upward.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Where the Doctor looks for Leader candidates.
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// The console's configuration file (keymap, theme, refresh period, agent profile
    /// overrides) instead of `$VALP_CONFIG` or the one in the platform's config folder (`valp
    /// doctor` shows where that is).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Colours in the console: `auto` follows `NO_COLOR`; this flag beats it and the config.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The console's theme: default (ANSI-16), dark, light or high-contrast; beats the config
    /// file's `[console] theme` (`:theme NAME` switches while it runs).
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,
}

impl Cli {
    /// Whether the console to open is the demo's (`valp demo --console`).
    pub fn is_demo(&self) -> bool {
        matches!(&self.command, Some(Command::Demo(_)))
    }

    /// Whether this is `valp verify` (which runs without transparent huge pages:
    /// [`crate::small_pages`]).
    pub fn is_verify(&self) -> bool {
        matches!(&self.command, Some(Command::Verify))
    }

    /// Whether this command line ends in the full-screen console.
    pub fn opens_console(&self) -> bool {
        match &self.command {
            None => true,
            Some(Command::Demo(args)) => args.console,
            Some(_) => false,
        }
    }
}

// `valp hook AGENT …` (parsed on its own first: `crate::fast_hook`).
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Clone, Args)]
pub struct HookArgs {
    /// The agent calling.
    #[arg(value_enum)]
    pub agent: valp_runtime::agent::channel::setup::Agent,
    /// How long a permission request waits for the Leader, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 45_000)]
    pub wait_ms: u64,
    /// The answer when no decision came in time.
    #[arg(long, value_enum, default_value_t = valp_runtime::agent::channel::approval::TimeoutAnswer::Deny)]
    pub on_timeout: valp_runtime::agent::channel::approval::TimeoutAnswer,
    /// The payload (default: read from stdin).
    #[arg(value_name = "JSON")]
    pub payload: Option<String>,
}

// `valp notify codex …` (parsed on its own first: `crate::fast_hook`).
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Clone, Args)]
pub struct NotifyArgs {
    /// The agent calling (codex).
    #[arg(value_parser = ["codex"])]
    pub agent: String,
    /// The payload (Codex passes it as the last argument; default: stdin).
    #[arg(value_name = "JSON")]
    pub payload: Option<String>,
}

/// Whether the console draws in colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Unless `NO_COLOR` is set.
    Auto,
    /// Even with `NO_COLOR`.
    Always,
    /// Never.
    Never,
}

impl ColorChoice {
    /// What the flag decides by itself: `None` leaves it to `NO_COLOR` and the config.
    pub const fn forced(self) -> Option<bool> {
        match self {
            Self::Auto => None,
            Self::Always => Some(true),
            Self::Never => Some(false),
        }
    }
}

/// The subcommands.
///
/// Every subcommand enum here is `defer`red: clap builds a subcommand's arguments only when that
/// subcommand is parsed or its help is shown, not all of them for every command line (building
/// the whole tree was a third of the instructions of a `valp verify` of an empty root). Names,
/// `about` texts and help output are unchanged, as long as the argument struct of a newtype
/// variant (`Run(RunArgs)`) has no doc comment: its deferred build would make that the
/// subcommand's `about` over the variant's own.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
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
    /// Convert a control root of layout 1, 2 or 3 to layout 4 (task snapshots).
    ///
    /// Shows what it will do, asks you to type `upgrade` (or takes --yes), copies the whole
    /// control root byte for byte to `.valp.layout<N>-backup-<n>/` beside it, verifies every
    /// journal by replay (writing the head anchors a layout-1 root lacks; lines written before
    /// layout 3 keep no time, shown as unknown), writes a snapshot of every task journal, and
    /// sets `layout_version` 4 last. Running it again after a crash finishes the job. Every
    /// other command refuses a root of an earlier layout.
    Upgrade {
        /// Do not ask for the typed confirmation.
        #[arg(long)]
        yes: bool,
    },
    /// Recover a journal refused for damage, truncation, rollback or a missing head anchor.
    ///
    /// Shows exactly what it would keep (the entries that verify from the genesis on), what it
    /// would cut and why, and how many acknowledged entries that loses; asks you to type the
    /// task id (`installation` for --ledger) or takes --yes; copies the journal and its head to
    /// `quarantine/` first, then cuts the journal and anchors it. Never run automatically.
    Recover {
        /// The task whose journal to recover (its id, or its folder name as `valp verify`
        /// lists it).
        #[arg(value_name = "TASK", required_unless_present = "ledger")]
        task: Option<String>,
        /// Recover the installation ledger instead.
        #[arg(long, conflicts_with = "task")]
        ledger: bool,
        /// Recover the task's operator-action journal (`actions.jsonl`) instead of its journal.
        #[arg(long, requires = "task")]
        actions: bool,
        /// Do not ask for the typed confirmation.
        #[arg(long)]
        yes: bool,
    },
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
    /// Audit tasks: one line per gate (Done matrix, correction cycle, journal integrity,
    /// evidence present and bound), each pass, fail or skip with its reason.
    ///
    /// Each TASK is a task id of the control root (no argument: every task of it); each DIR
    /// (an existing folder) a task folder in the VALP reference repository's layout
    /// (`state.json`, `dispatch-receipts.jsonl`, `evidence-status.json`,
    /// `correction-cycle.json`, `agents/`, `evidence/`). The correction-cycle gate applies the
    /// audit rule of seed 003: when a correction signal exists (a failed, blocked or rejected
    /// step in the journal; a `dispatch_blocked` receipt or evidence marked invalid,
    /// superseded, rejected or blocked in a reference folder) `correction-cycle.json` must
    /// exist, be `valp-correction-cycle.v1`, hold at least one round, end `fixed`, and every
    /// ref must be a task-relative safe path that exists. Exits 1 when a gate fails.
    Audit {
        /// Print one JSON document instead of lines.
        #[arg(long)]
        json: bool,
        /// Task ids of the control root, or reference-layout task folders.
        #[arg(value_name = "TASK|DIR")]
        targets: Vec<PathBuf>,
    },
    /// Observe the Leader candidates on this machine and record the observation.
    ///
    /// Prints every surface (the local OS account, each tmux server) and every candidate: the
    /// local human operator and each tmux pane, with principal, runtime identity, presence,
    /// health, permission boundary, known limitations and labels. With a control root the
    /// observation is stored as content-addressed evidence and its candidates recorded in the
    /// installation ledger. It never selects anything: see `valp leader select`.
    Doctor,
    /// The Leader: candidates, the one explicit selection, rotation, and the binding.
    #[command(subcommand)]
    Leader(LeaderCommand),
    /// Read another loop system's files as foreign evidence (read-only).
    #[command(subcommand)]
    Ingest(IngestCommand),
    /// Tasks: publishing a plan, handing a task over from a fenced Leader epoch.
    #[command(subcommand)]
    Task(TaskCommand),
    /// Drive published tasks: propose the Operator Workflow's events, hand work items to their
    /// adapters (process, external), verify, and close through the Done gate.
    ///
    /// Runs headless until every task waits for the Leader or is finished (or, with --once,
    /// takes the steps possible now and returns). Needs the re-proven Leader. Prints one line
    /// per step: the event proposed and why, or the kernel's refusal with its code. Without a
    /// task named, a task that cannot be read or driven is listed as a `problem:` line and the
    /// others run; the exit code is then 3.
    Run(RunArgs),
    /// Cancel a task, or one work item (and its running attempt), as the Leader.
    Cancel {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// Only this work item.
        #[arg(long, value_name = "ID")]
        item: Option<String>,
        /// Why (recorded with the authority evidence).
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Interrupt a task: nothing more is dispatched, and no attempt outcome is recorded, until
    /// `valp resume`. Running commands go on unless `--signal` is given.
    Interrupt {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
        /// Also deliver SIGINT to the command of every attempt running on the process adapter
        /// (and the agent profile's interrupt keys to every tmux agent) once the kernel
        /// accepted the interrupt (a command that exits on it fails its attempt, which is
        /// retried after `valp resume` while the retry budget lasts).
        #[arg(long)]
        signal: bool,
    },
    /// Lift a task's interrupt.
    Resume {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Redirect a task to a new intent: the superseded work items are cancelled (their
    /// running attempts too) and the task goes to `fixing`.
    Redirect {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// The new intent (any text file; stored as evidence).
        #[arg(long, value_name = "FILE")]
        intent: PathBuf,
        /// A work item the new intent supersedes (repeatable).
        #[arg(long = "supersede", value_name = "ID")]
        superseded: Vec<String>,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// The Leader's review of a task in `reviewing`: `pass` records it (or, when its plan
    /// requires approval, asks for the approval), `reject` sends it to `fixing`.
    Review {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// `pass` or `reject`.
        #[arg(value_name = "DECISION", value_parser = ["pass", "reject"])]
        decision: String,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// The Leader's decision on a task in `approval_required` (a plan with
    /// `approval = "required"` asks for it when the review passes): `grant` records the task,
    /// `deny` sends it to `fixing`.
    Approve {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// `grant` or `deny`.
        #[arg(value_name = "DECISION", value_parser = ["grant", "deny"])]
        decision: String,
        /// Why.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Give a blocked work item a new attempt, as the Leader.
    ///
    /// The System retries a failed attempt by itself while the plan's retry budget lasts; then
    /// the item is blocked and only the Leader retries it. The new attempt (next generation) is
    /// recorded with who decided it and why, and runs like any other once `valp run` (or the
    /// console) drives the task. A blocked task is first recovered to `fixing`.
    Retry {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// The blocked work item.
        #[arg(value_name = "ITEM")]
        item: String,
        /// Why (recorded with the operator action).
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Move a task that waits for the Leader forward again: a `blocked` task goes to `fixing`
    /// (`blocked_recovery_to_fixing`); a `fixing` task with nothing left to run is dispatched
    /// again (`fix_dispatch_requested`), so verification runs again once every required work
    /// item completed. (Not `valp recover`, which repairs a damaged journal.)
    Unblock {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// Why (recorded with the operator action).
        #[arg(long, default_value = "")]
        note: String,
    },
    /// Report on an external work item's attempt, for a tool (or person) outside valp.
    ///
    /// Appends a `valp-adapter-observation.v1` record carrying the attempt's request to
    /// `.valp/inbox/valp-report/`, with the next sequence; the System then takes it like any
    /// inbox report. Pending attempts are the folders under
    /// `.valp/runtime/external/attempts/` (`valp task status` names them). Report `accepted`
    /// when the work starts, then one of `completed`, `blocked` or `cancelled`.
    Report(ReportArgs),
    /// Adapter processes (started by valp itself; not for direct use).
    #[command(subcommand, hide = true)]
    Adapter(AdapterCommand),
    /// Create a demo task from a seeded legal history (initialising the control root if needed).
    ///
    /// With --console, opens the console on it afterwards and, once a Leader is bound,
    /// publishes and runs the demo plan (`examples/plans/demo.toml`, outputs under
    /// `target/valp-demo/`); run it again to reopen (the demo tasks are kept, and the Leader
    /// you selected is re-proven without asking).
    Demo(DemoArgs),
    /// Terminal coding agents: check what an agent profile reads from a screen.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// The hook bridge: called by Claude Code or Codex as a hook (not for direct use).
    ///
    /// Reads the hook's JSON payload (the last argument, else stdin) and records it as an
    /// agent signal of the attempt named by `VALP_CONTROL_ROOT`, `VALP_TASK_ID`,
    /// `VALP_WORK_ITEM_ID` and `VALP_ATTEMPT_ID` (set by the tmux adapter); without them it records nothing and says
    /// so on stderr. A `PermissionRequest` waits for the Leader's `valp agent approve|deny`, at
    /// most --wait-ms, then answers deny (or, with --on-timeout ask, leaves it to the agent's
    /// own prompt); never allow. Always exits 0: a hook must never break the agent.
    Hook(HookArgs),
    /// Codex's `notify` program (not for direct use): records `agent-turn-complete` and any
    /// other notification as an agent signal of the attempt, as `valp hook` does.
    Notify(NotifyArgs),
    /// A scripted terminal coding agent, for the tmux adapter's demo and tests.
    ///
    /// Shows a prompt box; Enter submits the input as a turn: a working phase streaming lines
    /// under a spinner, sometimes a permission question (answer y/1/Enter or n/2/Escape), then
    /// every `@path` the prompt names is written under the current folder. Escape stops a
    /// turn; Ctrl-C twice within 2 s exits. The same seed replays the same session.
    DemoAgent {
        /// Seed of the session.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// When to ask a permission question.
        #[arg(long, value_enum, default_value_t = valp_runtime::agent::demo::Ask::Sometimes)]
        ask: valp_runtime::agent::demo::Ask,
        /// Run this shell command for every hook event with a Claude Code hook payload on
        /// stdin, as Claude does (e.g. `valp hook claude`).
        #[arg(long, value_name = "COMMAND", conflicts_with = "settings")]
        hook_command: Option<String>,
        /// Run the hooks of this Claude Code settings file (`hooks.<Event>`: each event's own
        /// command), as Claude does with `--settings FILE` (the tmux adapter passes it when the
        /// profile says `launch_hooks = "claude_settings"`).
        #[arg(long, value_name = "FILE")]
        settings: Option<PathBuf>,
    },
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

// Options of `valp demo`.
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Task id of the demo task.
    #[arg(long, default_value = "demo-1")]
    pub task: String,
    /// Accepted entries to write (120 without `--console`). With `--console` the seeded task
    /// is written only when this is given: the console opens on the live demo plan.
    #[arg(long)]
    pub entries: Option<usize>,
    /// Work items in the task.
    #[arg(long, default_value_t = 6)]
    pub work_items: usize,
    /// Seed of the history.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Then open the console on the demo installation (an existing demo task is kept).
    #[arg(long)]
    pub console: bool,
}

// `valp report`.
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The attempt (as `valp task status` shows it, e.g. `TASK:ITEM:a1`).
    #[arg(value_name = "ATTEMPT")]
    pub attempt: String,
    /// What happened.
    #[arg(
        value_name = "STATUS",
        value_parser = ["accepted", "waiting", "completed", "blocked", "cancelled", "unsupported"]
    )]
    pub status: String,
    /// Why (shown with the attempt's outcome; required for `unsupported`).
    #[arg(long)]
    pub reason: Option<String>,
    /// Who reports (the provenance segment's adapter id).
    #[arg(long = "as", value_name = "NAME", default_value = valp_runtime::adapter::report::DEFAULT_REPORTER)]
    pub reporter: String,
}

/// Options of the Doctor's observation (every command that observes takes them).
#[derive(Debug, Clone, Args)]
pub struct ObserveArgs {
    /// Also ask the tmux server listening on this socket (repeatable; e.g. a `tmux -S PATH`
    /// server).
    #[arg(long = "tmux-socket", global = true, value_name = "PATH")]
    pub tmux_sockets: Vec<PathBuf>,
    /// Do not look for servers in the default tmux socket folder
    /// (`$TMUX_TMPDIR/tmux-UID/`, else `/tmp/tmux-UID/`).
    #[arg(long, global = true)]
    pub no_default_sockets: bool,
}

/// `valp leader …`
#[derive(Debug, Subcommand)]
#[command(defer = true)] // as `Command`
pub enum LeaderCommand {
    /// List the observed Leader candidates, one per line (observes only; selects nothing).
    ///
    /// The order is a display order, not a recommendation. With --json prints the observation
    /// as canonical JSON (`valp-doctor-observation.v1`).
    Candidates {
        /// Print the observation as canonical JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a candidate the Leader: the first, explicit selection (epoch 1).
    ///
    /// Observes afresh, records the observation, shows the candidate and asks you to type its
    /// id to confirm. The approval (who, how, when) is recorded as evidence and the binding
    /// written to `leader/binding.json`. A candidate that was not observed is refused by the
    /// kernel (VALP-E-PERMISSION-DENIED).
    Select {
        /// The candidate id, as `valp leader candidates` prints it.
        #[arg(value_name = "CANDIDATE")]
        candidate: String,
        /// Confirm without the typed prompt (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Bind the Leader role to another observed session: fences the active epoch, starts the
    /// next one.
    ///
    /// Use it to rebind the same principal to a new session (its pane was closed, the tmux
    /// server or the machine restarted) or to hand the role to another candidate. Needs the
    /// same typed confirmation as `select`. Epochs are never reused.
    Rotate {
        /// The candidate id, as `valp leader candidates` prints it.
        #[arg(value_name = "CANDIDATE")]
        candidate: String,
        /// Confirm without the typed prompt (for scripts).
        #[arg(long)]
        yes: bool,
    },
    /// Print the binding, whether a fresh observation proves it now, whether
    /// `leader/binding.json` matches the ledger, and the epoch history. Changes nothing.
    Show,
}

// Options of `valp run`.
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The tasks (default: every unfinished task of the active epoch that has a plan).
    #[arg(value_name = "TASK")]
    pub tasks: Vec<String>,
    /// Take the steps possible now, then return (do not wait for adapters).
    #[arg(long)]
    pub once: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
}

/// `valp adapter …`
#[derive(Debug, Subcommand)]
#[command(defer = true)] // as `Command`
pub enum AdapterCommand {
    /// The process adapter's supervisor for one attempt: runs the attempt folder's command
    /// without a shell and writes its observations there. valp starts it detached.
    Process {
        /// The attempt folder (`runtime/process/attempts/<H>/`, holding request.json and
        /// run.json).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
    /// The tmux adapter's supervisor for one attempt: starts (or finds) the agent's pane,
    /// submits the prompt with proof, watches the agent and writes its observations in the
    /// attempt folder. valp starts it detached.
    Tmux {
        /// The attempt folder (`runtime/tmux/attempts/<H>/`, holding request.json and run.json).
        #[arg(long, value_name = "DIR")]
        dir: PathBuf,
    },
}

/// `valp agent …`
#[derive(Debug, Subcommand)]
#[command(defer = true)] // as `Command`
pub enum AgentCommand {
    /// Print the state an agent profile reads from a captured screen, and the rule that
    /// matched: for tuning a profile.
    ///
    /// FILE is a screen as `tmux capture-pane -p [-e] -t PANE > FILE` saves it (escape
    /// sequences are removed before any rule sees the text). Prints `state:`, `rule:` (name
    /// and line, or `none`) and `input:` (the input line's text, `empty`, or `not seen`).
    Classify {
        /// A built-in profile: claude, codex, aider, gemini, generic or demo.
        #[arg(long, value_name = "NAME", required_unless_present = "profile")]
        agent: Option<String>,
        /// A profile file instead (`valp-agent-profile.v1` TOML, as in console/assets/agents/).
        #[arg(long, value_name = "FILE", conflicts_with = "agent")]
        profile: Option<PathBuf>,
        /// The captured screen.
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// List an attempt's agent signals, the state they give (with its source) and what the
    /// agent reported spending ("unknown" when it did not say).
    Signals {
        /// The attempt (as `valp task status` shows it).
        #[arg(value_name = "ATTEMPT")]
        attempt: String,
    },
    /// Record an agent's headless JSON stream (`claude -p --output-format stream-json
    /// --verbose`, `codex exec --json`) as the attempt's signals: turns, tool calls, cost,
    /// tokens, errors, the result. Reads FILE or stdin (pipe the agent into it); the attempt
    /// is the one `VALP_CONTROL_ROOT`, `VALP_TASK_ID`, `VALP_WORK_ITEM_ID` and `VALP_ATTEMPT_ID`
    /// name.
    Stream {
        /// Which stream.
        #[arg(value_enum)]
        agent: valp_runtime::agent::channel::stream::Stream,
        /// A transcript (default: stdin).
        #[arg(value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Run a headless agent for an `agent-stream` work item (the process adapter runs this):
    /// its JSON stream is passed on to stdout and recorded as the attempt's signals; an
    /// interrupt (SIGINT) reaches the agent as its control message where it has one, else as
    /// SIGINT. Exits with the agent's exit code.
    #[command(name = "run-stream")]
    RunStream {
        /// Whose stream ARGV prints.
        #[arg(value_enum)]
        agent: valp_runtime::agent::channel::stream::Stream,
        /// The prompt for the agent's stdin (claude: a stream-json user message).
        #[arg(long, value_name = "TEXT")]
        prompt: Option<String>,
        /// The agent's command, after `--`.
        #[arg(last = true, required = true, value_name = "ARGV")]
        argv: Vec<String>,
    },
    /// List a task's permission requests from its agents, with their answers.
    Requests {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
    },
    /// Allow an agent's pending permission request (the Leader only).
    ///
    /// Needs the bound Leader session, re-proven (a read-only console cannot decide). The
    /// decision (who, from which session, for which tool call) is recorded before the agent
    /// is answered; a request already answered (by a timeout) is refused as stale.
    Approve {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// The request id (`perm-…`, as `valp agent requests` lists it).
        #[arg(value_name = "REQUEST")]
        request: String,
    },
    /// Deny an agent's pending permission request (the Leader only; as `approve`).
    Deny {
        /// The task.
        #[arg(value_name = "TASK")]
        task: String,
        /// The request id.
        #[arg(value_name = "REQUEST")]
        request: String,
    },
    /// Print the hook settings that connect an agent to valp, or write them (confirmed).
    ///
    /// Writes `.valp/runtime/agent-channel/claude-settings.json` (for `claude --settings
    /// FILE`) or `codex-hooks.json`: files of valp's own, so the agent's settings stay
    /// untouched. --remove deletes what --write wrote.
    Setup {
        /// The agent.
        #[arg(value_enum)]
        agent: valp_runtime::agent::channel::setup::Agent,
        /// Write the file (asks to type `yes` unless --yes).
        #[arg(long, conflicts_with = "remove")]
        write: bool,
        /// Delete the file setup wrote.
        #[arg(long)]
        remove: bool,
        /// Confirm without the typed prompt.
        #[arg(long)]
        yes: bool,
    },
}

/// `valp ingest …`
#[derive(Debug, Subcommand)]
#[command(defer = true)] // as `Command`
pub enum IngestCommand {
    /// Read AgentOps `verdict.v2` files as foreign review evidence (never writes anything).
    ///
    /// Lists every verdict with its outcome mapped (`PASS` -> claim pass supported by a foreign
    /// review, never a VALP review or Done; `FAIL` -> fail; `NOT_PROVEN` -> unknown, review
    /// blocked), its verification levels, declared independence, criteria and findings, and
    /// every file not taken with the exact reason. Exit code 3 when a file was not taken.
    Agentops {
        /// The verdict folder (default: `.agents/ao/verdicts/sha256`).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The VALP task these verdicts speak for; without it none is named (never guessed).
        #[arg(long, value_name = "TASK")]
        task: Option<String>,
        /// The task's work item they speak for (with --task; never guessed).
        #[arg(long, value_name = "ID", requires = "task")]
        item: Option<String>,
        /// Record each verdict in the task's foreign-observation journal (Evidence + Claim +
        /// Review observation; never a kernel review, never Done). Needs --task.
        #[arg(long, requires = "task")]
        record: bool,
    },
}

// `valp task explain TASK [--item ID] [--json]`
#[allow(
    missing_docs,
    reason = "no doc comment on a subcommand's arguments: see `Command`"
)]
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The task.
    #[arg(value_name = "TASK")]
    pub task: String,
    /// Only the transitions of this work item and its attempt.
    #[arg(long, value_name = "ID")]
    pub item: Option<String>,
    /// Print JSON (one object with a `transitions` array) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `valp task …`
#[derive(Debug, Subcommand)]
#[command(defer = true)] // as `Command`
pub enum TaskCommand {
    /// Where a task stands: status, epoch, control, every work item with its attempt and
    /// frontier position, adapter files that were rejected, and effects. Without a task named,
    /// a task that cannot be read is listed as a `problem:` line, the others are shown, and the
    /// exit code is 3.
    Status {
        /// The task (default: every task).
        #[arg(value_name = "TASK")]
        task: Option<String>,
    },
    /// What the protocol allows next for a task (RFC 0002 §6, the Protocol State Machine):
    /// every event kind and target with its actor, guard and evidence, and either the next
    /// status with the obligations and audit facts it would record, or the exact failure code
    /// and reason it would get (kernel rules, the Done gate and the epoch fence). Read-only.
    Explain(ExplainArgs),
    /// Publish a plan (`valp-plan.v1`, TOML) as a new task at the active Leader epoch.
    ///
    /// Validates the plan (ids, dependencies acyclic, safe relative paths, known adapters) and
    /// reports every problem with file, line and field; stores the plan as evidence; creates the
    /// task journal whose genesis holds the frozen work-item table.
    Publish {
        /// The plan file.
        #[arg(value_name = "PLAN")]
        plan: PathBuf,
    },
    /// Import a SuperLoop finite Work Plan (`superloop/v2` loop folder) as a new task, read-only.
    ///
    /// Parts become required work items (external adapter) with hard dependencies, criteria
    /// and expected artifacts carried; the contract digest is frozen into the plan; the
    /// recorded state, runs, Part results and a completed Goal evaluation become foreign
    /// observations (a Done claim, which still needs the Done gate). The frontier is
    /// recomputed from loop.yaml and state.json. Never runs loopctl, takes no SuperLoop lock,
    /// writes nothing into the loop folder.
    ImportSuperloop {
        /// The loop folder (holding loop.yaml and state.json).
        #[arg(value_name = "LOOPDIR")]
        dir: PathBuf,
        /// The task id (default: superloop-<loop name>).
        #[arg(long = "as", value_name = "ID")]
        task: Option<String>,
    },
    /// Hand a task bound to a fenced Leader epoch over to the active epoch.
    ///
    /// After a rotation, a task journal of an older epoch accepts nothing more. This records
    /// `task_handed_over` in the installation ledger (approved by the re-proven active Leader,
    /// with the task's final state as evidence) and creates the successor task at the active
    /// epoch holding the task's unfinished work items, back to pending. Asks you to type the
    /// task id to confirm.
    Handoff {
        /// The fenced task.
        #[arg(value_name = "TASK")]
        task: String,
        /// The successor's task id (default: TASK-eEPOCH).
        #[arg(long = "as", value_name = "ID")]
        successor: Option<String>,
        /// Confirm without the typed prompt (for scripts).
        #[arg(long)]
        yes: bool,
    },
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::Cli;

    /// The about texts of a subcommand, as its parent lists it or as its own help shows it.
    fn about_texts(command: &clap::Command) -> (Option<String>, Option<String>) {
        (
            command.get_about().map(ToString::to_string),
            command.get_long_about().map(ToString::to_string),
        )
    }

    /// Every subcommand is deferred: building one (to parse it, or to show its own help) must
    /// leave the about texts its parent lists as they were; the doc comment of an argument
    /// struct would replace them.
    #[test]
    fn building_a_deferred_subcommand_keeps_its_about_texts() {
        let mut parents = vec![Cli::command()];
        let mut checked = 0;
        while let Some(parent) = parents.pop() {
            for listed in parent.get_subcommands() {
                let mut built = listed.clone();
                built.build();
                assert_eq!(
                    about_texts(&built),
                    about_texts(listed),
                    "valp … {}",
                    listed.get_name()
                );
                parents.push(listed.clone());
                checked += 1;
            }
        }
        assert!(checked > 40, "only {checked} subcommands");
    }

    /// Only `valp verify` turns huge pages off on its way in (`main`): its global options
    /// and a `--root` do not change that, and no other command does it.
    #[test]
    fn only_the_verify_command_line_is_a_verify() {
        let verify = |words: &[&str]| {
            use clap::Parser as _;
            Cli::try_parse_from(words).map(|cli| cli.is_verify())
        };
        assert_eq!(verify(&["valp", "verify"]).ok(), Some(true));
        assert_eq!(
            verify(&["valp", "--root", "/x", "verify", "--no-default-sockets"]).ok(),
            Some(true)
        );
        for other in [
            &["valp", "task", "status"][..],
            &["valp", "doctor"],
            &["valp"],
        ] {
            assert_eq!(verify(other).ok(), Some(false), "{other:?}");
        }
    }
}
