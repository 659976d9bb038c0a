//! `valp cancel | interrupt | resume | redirect | review | approve | retry | unblock`: the
//! Leader's operations on a task, each proposed to the kernel with its authority evidence.
//! Prints the kernel's verdict; a refusal exits non-zero with the kernel's code. Accepted
//! cancels are carried out at once through the adapters (the effect ledger records the
//! outcome).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use valp_store::{Access, ControlRoot, Journal};

use super::CommandError;
use valp_runtime::authority;
use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::runtime::control::{self, Actor, Operation, Verdict};
use valp_runtime::runtime::effects;
use valp_view::sanitize::display_text;

/// How long a cancel waits for the adapter to confirm before recording it as blocked.
const CANCEL_PATIENCE: Duration = Duration::from_secs(10);

/// `--signal`: asks the supervisor of every attempt of the task still in flight to interrupt it
/// (SIGINT to a command, the interrupt keys to a tmux agent), and says which ones were asked.
pub(super) fn signal_running(
    root: &ControlRoot,
    task_id: &str,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let journal = root.open_task(task_id, Access::ReadOnly)?;
    for (attempt_id, adapter, outcome) in control::signal_running(root, journal.live().body()) {
        let what = if adapter == valp_runtime::adapter::tmux::ADAPTER_ID {
            "the agent's interrupt keys"
        } else {
            "SIGINT"
        };
        match outcome {
            Ok(()) => writeln!(
                out,
                "signal: {what} requested for {}",
                display_text(&attempt_id)
            )?,
            Err(error) => writeln!(
                out,
                "signal: {} not signalled: {}",
                display_text(&attempt_id),
                display_text(&error.to_string())
            )?,
        }
    }
    Ok(())
}

/// [`control::apply`], again when the task journal moved while it was proposing: another
/// command took the revision the event was built at (event ids name the revision, so the
/// kernel refuses the loser as an idempotency conflict or a stale revision). A refusal at a
/// revision nobody else took is the kernel's answer to the operation, and final.
fn apply_settled(
    root: &ControlRoot,
    journal: &mut Journal,
    active_epoch: i128,
    operation: &Operation,
    actor: &Actor,
) -> Result<Verdict, CommandError> {
    let mut lost = 0;
    loop {
        journal.refresh()?;
        let before = journal.live().body().revision;
        let verdict =
            control::apply(root, journal, active_epoch, operation, actor).map_err(|error| {
                match error {
                    control::ControlError::Store(error) => CommandError::Store(error),
                    control::ControlError::Invalid(message) => CommandError::Usage(message),
                }
            })?;
        match verdict {
            Verdict::Refused { .. }
                if journal.live().body().revision != before && lost < authority::RACE_RETRIES =>
            {
                std::thread::sleep(Duration::from_millis(1 << lost.min(5)));
                lost += 1;
            }
            verdict => return Ok(verdict),
        }
    }
}

pub(super) fn run(
    root: &ControlRoot,
    task_id: &str,
    operation: &Operation,
    note: &str,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (ledger, observation) =
        super::leadership::proven_leader(root, clock, options, "acting on tasks")?;
    let actor = Actor {
        principal: authority::operator(&observation)?,
        at: clock.now(),
        note: note.to_owned(),
    };
    let mut journal = root.open_task(task_id, Access::Write)?;
    let active = ledger.live().state().active_epoch;
    let verdict = apply_settled(root, &mut journal, active, operation, &actor)?;
    match verdict {
        Verdict::Accepted {
            revision,
            obligations,
        } => {
            let body = journal.live().body();
            writeln!(
                out,
                "accepted: task {} is {} at revision {revision}",
                display_text(task_id),
                body.status.as_str()
            )?;
            if let Operation::Redirect { superseded, .. } = operation {
                for id in superseded {
                    let status = body
                        .work_items
                        .iter()
                        .find(|item| item.work_item_id.value() == id)
                        .map_or("not in the task", |item| item.status.as_str());
                    writeln!(out, "superseded {}: {status}", display_text(id))?;
                }
            }
            if !obligations.is_empty() {
                let records = effects::reconcile(root, task_id, CANCEL_PATIENCE)
                    .map_err(|error| CommandError::Usage(error.to_string()))?;
                for record in records {
                    writeln!(out, "effect {}", effects::Shown(&record))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Refused { code, reason } => {
            writeln!(out, "refused: {code}: {}", display_text(&reason))?;
            Ok(ExitCode::FAILURE)
        }
    }
}
