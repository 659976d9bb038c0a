//! `valp run`: the System runtime headless. Drives every chosen task until it waits for the
//! Leader or is finished, printing each step; between steps it sleeps until an adapter writes
//! (file watching) or a short poll interval passes. Obligations (cancels) accepted meanwhile by
//! other commands are carried out too.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use valp_store::{Access, ControlRoot};

use super::CommandError;
use crate::cli::RunArgs;
use crate::clock::Clock;
use crate::doctor::ObserveOptions;
use crate::doctor::sanitize::display_text;
use crate::runtime::driver::{Driver, Progress};
use crate::runtime::workflow::Wait;
use crate::system::feed::Feed;

/// How often the runner looks at the adapters' folders when nothing woke it.
const POLL: Duration = Duration::from_millis(200);

pub(super) fn run(
    root: &ControlRoot,
    args: &RunArgs,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (ledger, _) = super::leadership::proven_leader(root, clock, options, "running tasks")?;
    let active = ledger.live().state().active_epoch;
    let valp = std::env::current_exe()
        .map_err(|error| CommandError::Usage(format!("cannot find the valp binary: {error}")))?;
    let tasks = if args.tasks.is_empty() {
        runnable_tasks(root, active)?
    } else {
        args.tasks.clone()
    };
    if tasks.is_empty() {
        writeln!(out, "nothing to run: no unfinished task of epoch {active}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut drivers = Vec::new();
    for task in &tasks {
        drivers.push(Driver::open(root, task, valp.clone()).map_err(runtime_error)?);
    }
    let deadline = args
        .timeout
        .map(|seconds| Instant::now() + Duration::from_secs(seconds));
    let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
    let feed = Feed::start(root.layout().root(), move || {
        !matches!(
            wake.try_send(()),
            Err(std::sync::mpsc::TrySendError::Disconnected(()))
        )
    })
    .map_err(|error| CommandError::Usage(format!("cannot watch for observations: {error}")))?;
    let mut reported = std::collections::BTreeSet::new();
    // What each task waits for from the Leader, as its last step said.
    let mut waits = std::collections::BTreeMap::new();
    let mut failed = false;
    loop {
        for rejection in feed.rows().1.into_iter().rev() {
            let line = format!("rejected {}: {}", rejection.path, rejection.reason);
            if reported.insert(line.clone()) {
                writeln!(out, "{line}")?;
            }
        }
        let mut in_flight = false;
        for driver in &mut drivers {
            let task = driver.body().task_id.value().to_owned();
            for record in driver
                .reconcile_effects(Duration::from_secs(10))
                .map_err(|error| CommandError::Usage(error.to_string()))?
            {
                writeln!(out, "{task}  effect {record}")?;
            }
            let steps = driver.run_until_idle(active).map_err(runtime_error)?;
            if let Some(Progress::Waiting(Wait::Leader(why))) = steps.last() {
                waits.insert(task.clone(), why.clone());
            } else {
                waits.remove(&task);
            }
            let (working, refused) = report(&task, &steps, out)?;
            in_flight |= working;
            failed |= refused;
        }
        let timed_out = deadline.is_some_and(|deadline| Instant::now() >= deadline);
        if !in_flight || args.once || timed_out || failed {
            break;
        }
        // An adapter's write wakes the loop at once; the poll covers anything the watcher
        // could not see.
        let _ = woken.recv_timeout(POLL);
    }
    summary(&drivers, &waits, out)?;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints a task's steps; returns whether an attempt is in flight and whether the kernel
/// refused a proposal.
fn report(
    task: &str,
    steps: &[Progress],
    out: &mut dyn Write,
) -> Result<(bool, bool), CommandError> {
    let (mut in_flight, mut refused_any) = (false, false);
    for step in steps {
        match step {
            Progress::Proposed { kind, why, refused } => match refused {
                None => writeln!(out, "{task}  {}  ({})", kind.as_str(), display_text(why))?,
                Some((code, reason)) => {
                    refused_any = true;
                    writeln!(
                        out,
                        "{task}  {} refused: {code}: {}",
                        kind.as_str(),
                        display_text(reason)
                    )?;
                }
            },
            Progress::Launched { attempt_id } => {
                writeln!(out, "{task}  launched {}", display_text(attempt_id))?;
            }
            Progress::Waiting(Wait::InFlight(_)) => in_flight = true,
            Progress::Waiting(_) => {}
        }
    }
    Ok((in_flight, refused_any))
}

/// Where every task ended, what it waits for from the Leader, and the adapter files that were
/// not acted on.
fn summary(
    drivers: &[Driver],
    waits: &std::collections::BTreeMap<String, String>,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    for driver in drivers {
        let body = driver.body();
        writeln!(
            out,
            "{}: {} at revision {}",
            body.task_id.value(),
            body.status.as_str(),
            body.revision
        )?;
        if let Some(why) = waits.get(body.task_id.value()) {
            writeln!(out, "  waits for the Leader: {}", display_text(why))?;
        }
        for (location, reason) in driver.rejections() {
            writeln!(out, "  rejected {location}: {reason}")?;
        }
    }
    Ok(())
}

/// Every task of the active epoch that is not finished and has a plan.
fn runnable_tasks(root: &ControlRoot, active: i128) -> Result<Vec<String>, CommandError> {
    let mut tasks = Vec::new();
    for dir in root.task_dirs()? {
        let journal = root.open_task_dir(&dir, Access::ReadOnly)?;
        let body = journal.live().body();
        let finished = body
            .status
            .known()
            .is_some_and(valp_kernel::TaskStatus::is_terminal);
        let task = body.task_id.value().to_owned();
        if !finished && body.leader_epoch == active && crate::plan::of_task(root, &task).is_ok() {
            tasks.push(task);
        }
    }
    Ok(tasks)
}

fn runtime_error(error: crate::runtime::driver::RuntimeError) -> CommandError {
    CommandError::Runtime(error)
}
