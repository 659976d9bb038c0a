//! `valp task status [TASK]`: where a task stands, read-only. Without TASK, every task; one
//! that cannot be read is listed as `problem: task folder tasks/<folder>: <error>` in its
//! place, the others are shown, and the command exits with 3 at the end. Per task: status,
//! revision, epoch (and whether it is fenced), control, every work item with its attempt and
//! frontier position (and, for a live tmux attempt, its agent's state: `    agent …`), effects, the four dimension gates of a task frozen with them
//! (`  gate <dimension> <required|advisory> <verdict>…`), and the inbox observations naming a current external attempt
//! that the runtime rejects, the correction cycle its journal derives (`  correction <outcome>:
//! N rounds, M open` and one `  round …` line per open round and per round among the newest 20,
//! after `  (N earlier closed rounds not listed)` when there are more; nothing without a signal), the cost and
//! tokens the agents' channels reported (`    usage <attempt>: cost N micro-USD, tokens N in /
//! N out` per attempt, `  usage (task, N attempts): …`; `unknown` where no signal said, never 0;
//! nothing for a task whose agents reported nothing), (`  rejected <file>: <reason>`, sorted out exactly as the runtime
//! does it; see [`valp_runtime::adapter::external`]).

use std::io::Write;
use std::process::ExitCode;

use valp_kernel::frontier::frontier;
use valp_kernel::{ControlStatus, StateBody};
use valp_store::{ControlRoot, Journal};

use super::CommandError;
use valp_runtime::adapter::external::{self, Inbox};
use valp_runtime::audit::cycle_file;
use valp_runtime::runtime::{driver, effects};
use valp_view::sanitize::display_text;

pub(super) fn run(
    root: &ControlRoot,
    task: Option<&str>,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let active = root.ledger_read_only()?.live().state().active_epoch;
    let journals = match task {
        Some(task) => vec![Ok(root.open_task_to_show(task)?)],
        None => root
            .task_dirs()?
            .iter()
            .map(|dir| {
                root.open_task_dir_to_show(dir)
                    .map_err(|error| super::problem_line(&super::task_folder(root, dir), &error))
            })
            .collect(),
    };
    if journals.is_empty() {
        writeln!(out, "no tasks")?;
    }
    let mut damaged = 0;
    for (index, journal) in journals.iter().enumerate() {
        if index > 0 {
            writeln!(out)?;
        }
        match journal {
            Ok(journal) => {
                write_task(root, journal.live().body(), active, out)?;
                write_gates(root, journal, out)?;
                write_correction(journal, out)?;
            }
            Err(problem) => {
                damaged += 1;
                writeln!(out, "{problem}")?;
            }
        }
    }
    if damaged > 0 {
        return Err(CommandError::Damaged { count: damaged });
    }
    Ok(ExitCode::SUCCESS)
}

fn write_task(
    root: &ControlRoot,
    body: &StateBody,
    active: i128,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let task = body.task_id.value();
    let control = body
        .control
        .clone()
        .unwrap_or(valp_kernel::Control::INITIAL);
    writeln!(
        out,
        "task {}  {}  revision {}  epoch {}{}  intent {}{}",
        display_text(task),
        body.status.as_str(),
        body.revision,
        body.leader_epoch,
        if body.leader_epoch == active {
            ""
        } else {
            " (FENCED)"
        },
        control.intent_version,
        if control.status == ControlStatus::Interrupted {
            "  INTERRUPTED"
        } else {
            ""
        }
    )?;
    // What the agents' channels reported spending (`usage …` lines only where one did).
    let usage = valp_runtime::agent::channel::summary::task_usage(root.layout().root(), body);
    for item in frontier(body) {
        let attempt = body
            .work_item(&item.work_item_id)
            .and_then(|work| work.current_attempt.as_ref())
            .map_or_else(String::new, |attempt| {
                format!(
                    "attempt {} g{} {}",
                    attempt.attempt_id.value(),
                    attempt.dispatch_generation,
                    attempt.status.as_str()
                )
            });
        let position = valp_view::position_text(&item.position);
        writeln!(
            out,
            "  {:<20} {:<9} {:<10} {:<20} {}",
            display_text(item.work_item_id.value()),
            item.requirement.as_str(),
            item.status.as_str(),
            position,
            display_text(&attempt)
        )?;
        if let Some(agent) = agent_state(root, body, &item.work_item_id) {
            writeln!(out, "    {agent}")?;
        }
        for line in worktree_lines(root, body, &item.work_item_id) {
            writeln!(out, "    {line}")?;
        }
        for attempt in usage
            .attempts
            .iter()
            .filter(|attempt| attempt.work_item_id == item.work_item_id.value())
        {
            writeln!(
                out,
                "    usage {}: {}",
                display_text(&attempt.attempt_id),
                attempt.usage.text()
            )?;
        }
    }
    if !usage.attempts.is_empty() {
        writeln!(
            out,
            "  usage (task, {} attempts): {}",
            usage.attempts.len(),
            usage.total.text()
        )?;
    }
    match effects::read_ledger(root, task) {
        Ok(records) => {
            for record in &records {
                writeln!(out, "  effect {}", effects::Shown(record))?;
            }
        }
        Err(error) => writeln!(out, "  effects: {}", display_text(&error.to_string()))?,
    }
    write_inbox_rejections(root, body, out)
}

/// The state of the terminal agent of a work item's live tmux attempt, as its supervisor last
/// wrote it ([`valp_runtime::adapter::tmux::state_line`]).
fn agent_state(
    root: &ControlRoot,
    body: &StateBody,
    work_item: &valp_kernel::Identity,
) -> Option<String> {
    use valp_runtime::adapter::tmux;
    use valp_runtime::clock::Clock as _;
    let attempt = body.work_item(work_item)?.current_attempt.as_ref()?;
    if !attempt.status.is_live() {
        return None;
    }
    let dir = root
        .layout()
        .root()
        .join(tmux::attempt_ref(attempt.attempt_id.value()));
    tmux::state_line(&dir, valp_runtime::clock::SystemClock.now())
}

/// The worktree of a work item's current tmux attempt, live or ended, with its diff
/// ([`valp_runtime::adapter::worktree::status_lines`]): what the Leader reviews.
fn worktree_lines(
    root: &ControlRoot,
    body: &StateBody,
    work_item: &valp_kernel::Identity,
) -> Vec<String> {
    use valp_runtime::adapter::{tmux, worktree};
    body.work_item(work_item)
        .and_then(|work| work.current_attempt.as_ref())
        .map(|attempt| {
            let dir = root
                .layout()
                .root()
                .join(tmux::attempt_ref(attempt.attempt_id.value()));
            worktree::status_lines(&dir)
        })
        .unwrap_or_default()
}

/// The four dimension gates of a task whose frozen Done policy has them (v2), as the Done gate
/// would see them now: `  gate <dimension> <required|advisory> <verdict>[ <code>][: <reasons>]`.
fn write_gates(
    root: &ControlRoot,
    journal: &Journal,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    match driver::task_gates(root, journal) {
        Ok(None) => {}
        Ok(Some(gates)) => {
            for gate in gates {
                let code = gate
                    .code()
                    .map_or_else(String::new, |code| format!(" {code}"));
                let reasons = if gate.reasons.is_empty() {
                    String::new()
                } else {
                    format!(": {}", gate.reasons.join(", "))
                };
                writeln!(
                    out,
                    "  gate {:<10} {:<8} {}{code}{}",
                    gate.dimension.as_str(),
                    if gate.required {
                        "required"
                    } else {
                        "advisory"
                    },
                    gate.verdict.as_str(),
                    display_text(&reasons)
                )?;
            }
        }
        Err(error) => writeln!(out, "  gates: {}", display_text(&error.to_string()))?,
    }
    Ok(())
}

/// The rejected inbox observations of every current external attempt (an attempt whose
/// request is in `runtime/external/attempts/<H>/`).
fn write_inbox_rejections(
    root: &ControlRoot,
    body: &StateBody,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let requests: Vec<_> = body
        .work_items
        .iter()
        .filter_map(|item| item.current_attempt.as_ref())
        .map(|attempt| {
            root.layout()
                .root()
                .join(external::attempt_ref(attempt.attempt_id.value()))
        })
        .filter(|dir| external::launched(dir))
        .map(|dir| external::read_request(&dir))
        .collect();
    if requests.is_empty() {
        return Ok(());
    }
    let task = body.task_id.value();
    let recorded = match effects::recorded_evidence(root, task) {
        Ok(recorded) => recorded,
        Err(error) => {
            writeln!(out, "  inbox: {}", display_text(&error.to_string()))?;
            return Ok(());
        }
    };
    let mut inbox = Inbox::new(root.layout().root(), task);
    inbox.refresh();
    for request in requests {
        match request {
            Ok(request) => {
                for (location, reason) in inbox.classify(&request, &recorded).rejected {
                    writeln!(out, "  rejected {location}: {reason}")?;
                }
            }
            Err(error) => writeln!(out, "  inbox: {}", display_text(&error.to_string()))?,
        }
    }
    Ok(())
}

/// Rounds `valp task status` lists besides the open ones: the newest.
const SHOWN_ROUNDS: u64 = 20;

/// The correction cycle the task's journal derives ([`valp_runtime::audit::derive`], from the
/// task folder's `correction-fold.json` and the lines after it, read-only): a summary and one
/// line per open round and per round among the newest [`SHOWN_ROUNDS`], and how many earlier
/// rounds are not listed.
fn write_correction(journal: &Journal, out: &mut dyn Write) -> Result<(), CommandError> {
    let task = journal.live().body().task_id.value();
    let fold = match cycle_file::summarized(journal.dir(), task) {
        Ok(fold) => fold,
        Err(error) => {
            writeln!(out, "  correction: {}", display_text(&error.to_string()))?;
            return Ok(());
        }
    };
    let summary = fold.deriver().summary();
    let Some(outcome) = summary.outcome else {
        return Ok(());
    };
    writeln!(
        out,
        "  correction {outcome}: {} rounds, {} open",
        summary.rounds, summary.open
    )?;
    let shown = fold.deriver().kept(SHOWN_ROUNDS);
    let earlier = summary.rounds - shown.rounds().len() as u64;
    if earlier > 0 {
        writeln!(out, "  ({earlier} earlier closed rounds not listed)")?;
    }
    for round in shown.rounds() {
        writeln!(
            out,
            "  round {} {} {} {} .. {}  {}",
            round.round,
            round.trigger,
            round.status,
            round.started_at.as_deref().unwrap_or("unknown"),
            round.ended_at.as_deref().unwrap_or("-"),
            display_text(&round.reason)
        )?;
    }
    Ok(())
}
