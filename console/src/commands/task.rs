//! `valp task handoff`: move a task bound to a fenced Leader epoch to the active one.
//!
//! Only the active Leader, re-proven by a fresh observation, approves a handoff; the person at
//! the keyboard types the task id to confirm (or passes `--yes`).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use valp_store::ControlRoot;

use super::CommandError;
use valp_runtime::authority::handoff::{self, default_successor};
use valp_runtime::authority::{self, Approval, Confirmation};
use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;

/// The handoff as asked on the command line.
pub(super) struct HandoffRequest<'a> {
    /// The fenced task.
    pub task_id: &'a str,
    /// `--as`: the successor's id.
    pub successor_id: Option<&'a str>,
    /// `--yes`.
    pub yes: bool,
}

pub(super) fn handoff(
    root: &ControlRoot,
    request: &HandoffRequest<'_>,
    clock: &dyn Clock,
    options: &ObserveOptions,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (mut ledger, observation) =
        super::leadership::proven_leader(root, clock, options, "handing tasks over")?;
    let active = ledger.live().state().active_epoch;
    let successor = request
        .successor_id
        .map_or_else(|| default_successor(request.task_id, active), str::to_owned);
    let confirmation = if request.yes {
        Confirmation::Flag
    } else {
        writeln!(
            out,
            "Hand task {} over to epoch {active} as {successor}? Its unfinished work items \
             continue there; the fenced journal stays as it is.",
            request.task_id
        )?;
        super::confirm::typed(
            input,
            out,
            "Type the task id to confirm",
            request.task_id,
            "nothing was handed over",
        )?;
        Confirmation::TypedId
    };
    let approval = Approval {
        approved_by: authority::operator(&observation)?,
        confirmation,
        at: clock.now(),
    };
    let done = handoff::hand_over(root, &mut ledger, request.task_id, &successor, &approval)?;
    writeln!(
        out,
        "{} task {} -> {} (epoch {} -> {}): {} work items carried over, {} completed left behind",
        if done.resumed {
            "completed the recorded handoff of"
        } else {
            "handed over"
        },
        done.task_id,
        done.successor_task_id,
        done.from_epoch,
        done.to_epoch,
        done.carried,
        done.completed
    )?;
    for stopped in &done.stopped {
        writeln!(out, "stopped {stopped}")?;
    }
    Ok(ExitCode::SUCCESS)
}
