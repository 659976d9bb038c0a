//! `valp hook`, `valp notify` (called by agents) and `valp agent requests | approve | deny |
//! setup` (the Leader's side of agent channels).

use std::io::{BufRead, Read as _, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use valp_store::ControlRoot;

use super::CommandError;
use crate::cli::{AgentCommand, Command, HookArgs, NotifyArgs};
use valp_runtime::agent::channel::action_log::ActionLog;
use valp_runtime::agent::channel::approval::{
    self, ApprovalError, Decider, Outcome, TimeoutAnswer,
};
use valp_runtime::agent::channel::bridge::{self, ApprovalOptions, Handled};
use valp_runtime::agent::channel::hook::{MAX_PAYLOAD_BYTES, Source};
use valp_runtime::agent::channel::precedence;
use valp_runtime::agent::channel::setup::{self, Agent};
use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;
use valp_view::sanitize::{display_line, display_text};

/// Runs one of the agent-channel commands.
pub(super) fn run(
    command: Command,
    root: Option<&Path>,
    clock: &dyn Clock,
    options: &ObserveOptions,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let mut err = std::io::stderr();
    match command {
        Command::Hook(args) => hook_command(&args, clock, input, out),
        Command::Notify(args) => notify_command(&args, clock, input, out),
        Command::Agent(AgentCommand::Stream { agent, file }) => {
            stream(agent, file.as_deref(), clock, input, out)
        }
        Command::Agent(AgentCommand::RunStream {
            agent,
            prompt,
            argv,
        }) => run_stream(agent, prompt.as_deref(), &argv, &mut err),
        Command::Agent(AgentCommand::Signals { attempt }) => {
            signals(&super::open_root(root)?, &attempt, clock, out)
        }
        Command::Agent(AgentCommand::Requests { task }) => {
            requests(&super::open_root(root)?, &task, out)
        }
        Command::Agent(AgentCommand::Approve { task, request }) => decide(
            &super::open_root(root)?,
            &task,
            &request,
            Outcome::Allow,
            clock,
            options,
            out,
        ),
        Command::Agent(AgentCommand::Deny { task, request }) => decide(
            &super::open_root(root)?,
            &task,
            &request,
            Outcome::Deny,
            clock,
            options,
            out,
        ),
        Command::Agent(AgentCommand::Setup {
            agent,
            write,
            remove,
            yes,
        }) => setup(
            &super::open_root(root)?,
            agent,
            write,
            remove,
            yes,
            input,
            out,
        ),
        // `valp agent classify` needs no control root.
        other => super::without_root(other, out),
    }
}

/// `valp hook AGENT …`.
pub(super) fn hook_command(
    args: &HookArgs,
    clock: &dyn Clock,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let source = match args.agent {
        Agent::Claude => Source::ClaudeHook,
        Agent::Codex => Source::CodexHook,
    };
    let options = ApprovalOptions {
        wait: Duration::from_millis(args.wait_ms),
        poll: POLL,
        on_timeout: args.on_timeout,
    };
    hook(source, args.payload.as_deref(), &options, clock, input, out)
}

/// `valp notify codex …`: notify payloads never ask permission, so nothing waits.
pub(super) fn notify_command(
    args: &NotifyArgs,
    clock: &dyn Clock,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let options = ApprovalOptions {
        wait: Duration::ZERO,
        poll: POLL,
        on_timeout: TimeoutAnswer::Deny,
    };
    let payload = args.payload.as_deref();
    hook(Source::CodexNotify, payload, &options, clock, input, out)
}

/// How often the waiting hook looks for a decision.
const POLL: Duration = Duration::from_millis(20);
/// How long `approve`/`deny` waits past the request's deadline for the hook's answer.
const ANSWER_PATIENCE: Duration = Duration::from_secs(2);

/// `valp hook AGENT` / `valp notify codex`: never fails the agent; every problem goes to
/// stderr and the exit code is 0.
fn hook(
    source: Source,
    payload: Option<&str>,
    options: &ApprovalOptions,
    clock: &dyn Clock,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let err = &mut std::io::stderr();
    let name = match source {
        Source::ClaudeHook => "valp hook claude",
        Source::CodexHook => "valp hook codex",
        Source::CodexNotify => "valp notify codex",
    };
    let env = match bridge::attempt_from_env(|name| std::env::var_os(name)) {
        Ok(env) => env,
        Err(problem) => {
            writeln!(err, "{name}: {problem}")?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    let bytes = if let Some(text) = payload {
        text.as_bytes().to_vec()
    } else {
        let mut bytes = Vec::new();
        // One byte past the cap, so an oversized payload is named as such.
        input
            .take(MAX_PAYLOAD_BYTES as u64 + 1)
            .read_to_end(&mut bytes)?;
        bytes
    };
    match bridge::handle(source, &bytes, &env, options, clock, out) {
        Ok(Handled::Recorded { .. }) => {}
        Ok(Handled::Rejected(rejection)) => writeln!(
            err,
            "{name}: rejected ({}): {}; listed in {}",
            rejection.code(),
            display_line(&rejection.to_string()),
            bridge::rejections_file(&env.attempt.attempt_id)
        )?,
        Err(error) => writeln!(
            err,
            "{name}: not recorded: {}",
            display_line(&error.to_string())
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `valp agent stream AGENT [FILE]`
pub(super) fn stream(
    stream: valp_runtime::agent::channel::stream::Stream,
    file: Option<&std::path::Path>,
    clock: &dyn Clock,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let env = bridge::attempt_from_env(|name| std::env::var_os(name))
        .map_err(|problem| CommandError::Usage(problem.to_string()))?;
    let report = match file {
        Some(path) => {
            let opened = std::fs::File::open(path).map_err(|error| {
                CommandError::Usage(format!(
                    "{}: {error}",
                    display_line(&path.to_string_lossy())
                ))
            })?;
            bridge::record_stream(stream, &mut std::io::BufReader::new(opened), &env, clock)
        }
        None => bridge::record_stream(stream, input, &env, clock),
    }
    .map_err(|error| CommandError::Usage(error.to_string()))?;
    for (line, rejection) in &report.rejected {
        writeln!(
            out,
            "line {line}: rejected ({}): {}",
            rejection.code(),
            display_line(&rejection.to_string())
        )?;
    }
    writeln!(
        out,
        "recorded {} signals for attempt {}; {} lines rejected",
        report.recorded,
        display_text(&env.attempt.attempt_id),
        report.rejected.len()
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `valp agent run-stream AGENT [--prompt TEXT] -- ARGV…`: the agent's exit code; problems
/// recording its stream go to `err` (the agent's work is not undone by them).
fn run_stream(
    agent: valp_runtime::agent::channel::stream::Stream,
    prompt: Option<&str>,
    argv: &[String],
    err: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    use valp_runtime::agent::channel::headless;
    let env = bridge::attempt_from_env(|name| std::env::var_os(name))
        .map_err(|problem| CommandError::Usage(problem.to_string()))?;
    let ended = headless::run(agent, prompt, argv, &env)
        .map_err(|error| CommandError::Usage(display_line(&error.to_string())))?;
    match &ended.report {
        Ok(report) => writeln!(
            err,
            "valp agent run-stream: recorded {} signals for attempt {}; {} lines rejected; \
             interrupts: {}",
            report.recorded,
            display_text(&env.attempt.attempt_id),
            report.rejected.len(),
            if ended.interrupts.is_empty() {
                "none".to_owned()
            } else {
                ended.interrupts.join(", ")
            }
        )?,
        Err(error) => writeln!(
            err,
            "valp agent run-stream: recording stopped: {}",
            display_line(&error.to_string())
        )?,
    }
    Ok(ExitCode::from(u8::try_from(ended.code).unwrap_or(1)))
}

/// `valp agent signals ATTEMPT`
pub(super) fn signals(
    root: &ControlRoot,
    attempt: &str,
    clock: &dyn Clock,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let signals = valp_runtime::agent::channel::inbox::read(root.layout().root(), attempt)
        .map_err(|error| CommandError::Usage(error.to_string()))?;
    if signals.is_empty() {
        writeln!(
            out,
            "no agent signals for attempt {}",
            display_text(attempt)
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    for signal in &signals {
        writeln!(
            out,
            "#{} {} {} {}: {}",
            signal.sequence,
            signal.observed_at,
            signal.channel.as_str(),
            signal.kind.as_str(),
            display_text(&signal.summary)
        )?;
    }
    let silence = valp_runtime::agent::profile::Profile::builtin(&signals[0].agent)
        .map_or(30_000, |profile| profile.channel_silence_ms);
    let viewed = precedence::resolve(&signals, None, clock.now(), silence);
    writeln!(
        out,
        "state: {} (from {}; the screen is read by the tmux adapter, not here)",
        viewed.state.name(),
        viewed.source.label()
    )?;
    let usage = precedence::usage(&signals);
    let shown = |value: Option<u64>| value.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
    writeln!(
        out,
        "cost: {} micro-USD; tokens: {} in, {} out",
        shown(usage.cost_micro_usd),
        shown(usage.input_tokens),
        shown(usage.output_tokens)
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `valp agent requests TASK`
pub(super) fn requests(
    root: &ControlRoot,
    task: &str,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let found = approval::requests(root.layout().root(), task).map_err(usage)?;
    if found.is_empty() {
        writeln!(
            out,
            "no permission requests for task {}",
            display_text(task)
        )?;
    }
    for (request, dir) in found {
        let state = match approval::answer_of(&dir, &request.request_id).map_err(usage)? {
            Some(answered) => format!(
                "answered {} ({}) at {}",
                serde_json::to_value(answered.answer)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or("?"),
                serde_json::to_value(answered.by)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or("?"),
                answered.answered_at
            ),
            None => format!("pending until {}", request.deadline),
        };
        writeln!(
            out,
            "{}  {}  {} {}: {}  [{}]",
            request.request_id,
            display_text(&request.attempt_id),
            display_text(&request.agent),
            display_text(request.tool_name.as_deref().unwrap_or("tool")),
            display_text(&request.detail),
            state
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::needless_pass_by_value)] // used as `map_err(usage)`
fn usage(error: ApprovalError) -> CommandError {
    CommandError::Usage(error.to_string())
}

/// `valp agent approve|deny TASK REQUEST`: the proven Leader only.
pub(super) fn decide(
    root: &ControlRoot,
    task: &str,
    request: &str,
    outcome: Outcome,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (ledger, observation) =
        super::leadership::proven_leader(root, clock, options, "deciding an agent's request")?;
    let state = ledger.live().state();
    let decider = Decider {
        principal: valp_runtime::authority::operator(&observation)?,
        session: state
            .leader
            .as_ref()
            .map(|binding| binding.candidate.candidate_id.clone())
            .unwrap_or_default(),
        epoch: i64::try_from(state.active_epoch).unwrap_or(i64::MAX),
    };
    // The revision the Leader decides against: the task journal as it is now.
    let task_revision = root
        .open_task(task, valp_store::Access::ReadOnly)?
        .live()
        .revision();
    let log = ActionLog {
        root,
        task_revision,
    };
    let answered = approval::decide(
        root.layout().root(),
        task,
        request,
        outcome,
        &decider,
        &log,
        clock,
        ANSWER_PATIENCE,
    )
    .map_err(usage)?;
    writeln!(
        out,
        "delivered: request {} answered {} by the Leader's decision ({} from {}) at {}",
        display_text(request),
        match outcome {
            Outcome::Allow => "allow",
            Outcome::Deny => "deny",
        },
        display_text(&decider.principal),
        display_text(&decider.session),
        answered.answered_at
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `valp agent setup AGENT [--write | --remove] [--yes]`
pub(super) fn setup(
    root: &ControlRoot,
    agent: Agent,
    write: bool,
    remove: bool,
    yes: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let relative = agent.settings_file();
    let path = root.layout().root().join(&relative);
    if remove {
        if !path.exists() {
            writeln!(
                out,
                "nothing to remove: {} does not exist",
                display_line(&relative)
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        if !yes {
            super::confirm::typed(
                input,
                out,
                &format!("remove {relative}? type yes"),
                "yes",
                "nothing removed",
            )?;
        }
        std::fs::remove_file(&path)?;
        writeln!(out, "removed {}", display_line(&relative))?;
        return Ok(ExitCode::SUCCESS);
    }
    let valp = std::env::current_exe()
        .map_err(|error| CommandError::Usage(format!("cannot find the valp binary: {error}")))?;
    let settings = setup::hooks(agent, &valp.to_string_lossy());
    let text = serde_json::to_string_pretty(&settings).unwrap_or_default() + "\n";
    match agent {
        Agent::Claude => writeln!(
            out,
            "claude: the hooks below record every event as an agent signal and send permission \
             requests to the Leader (valp waits {} s, the hook's timeout is {} s; no decision \
             means deny).\nsettings file: {} (the tmux adapter starts claude with --settings \
             FILE; your own settings are not touched)",
            setup::APPROVAL_WAIT.as_secs(),
            setup::PERMISSION_HOOK_TIMEOUT_S,
            display_line(&path.to_string_lossy())
        )?,
        Agent::Codex => writeln!(
            out,
            "codex: hooks.json below (Claude's layout). Codex skips untrusted hooks silently: \
             the codex hook channel is OFF unless codex runs with \
             --dangerously-bypass-hook-trust or you trust these hooks in codex. The notify \
             channel needs no trust: add to ~/.codex/config.toml\n  {}\nhooks file: {}",
            setup::codex_notify(&valp.to_string_lossy()),
            display_line(&path.to_string_lossy())
        )?,
    }
    out.write_all(text.as_bytes())?;
    if write {
        if !yes {
            super::confirm::typed(
                input,
                out,
                &format!("write {relative}? type yes"),
                "yes",
                "nothing written",
            )?;
        }
        setup::write(root.layout().root(), agent, text.as_bytes())
            .map_err(|error| CommandError::Usage(error.to_string()))?;
        writeln!(out, "wrote {}", display_line(&relative))?;
    }
    Ok(ExitCode::SUCCESS)
}
