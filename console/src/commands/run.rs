//! `valp run`: the System runtime headless. Drives every chosen task until it waits for the
//! Leader or is finished, printing each step; between steps it sleeps until an adapter writes
//! (file watching) or a short poll interval passes. Obligations (cancels) accepted meanwhile by
//! other commands are carried out too.
//!
//! Without a task named, a task that cannot be read or driven (a damaged journal, a plan that
//! does not decode, a step the runtime cannot take, such as a `cwd` that became a symbolic
//! link) is listed as a `problem:` line and left alone while the others run; the command then
//! exits with 3 (1 when the kernel refused a proposal). A task named on the command line that
//! cannot be driven stops the command, with its error.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use valp_store::{Access, ControlRoot};

use super::CommandError;
use crate::cli::RunArgs;
use valp_runtime::clock::Clock;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::runtime::driver::{Driver, Progress};
use valp_runtime::runtime::workflow::Wait;
use valp_runtime::system::feed::Feed;
use valp_view::sanitize::display_text;

/// How often the runner looks at the adapters' folders when nothing woke it.
const POLL: Duration = Duration::from_millis(200);
/// How long the end of a run waits for the observation watcher to have seen every file.
const CATCH_UP: Duration = Duration::from_secs(10);

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
    // Without a task named, a task that cannot be read or driven is listed and skipped.
    let isolate = args.tasks.is_empty();
    let mut problems = Vec::new();
    let tasks = if isolate {
        runnable_tasks(root, active, &mut problems)?
    } else {
        args.tasks.clone()
    };
    for problem in &problems {
        writeln!(out, "{problem}")?;
    }
    if tasks.is_empty() {
        writeln!(out, "nothing to run: no unfinished task of epoch {active}")?;
        return finish(false, problems.len());
    }
    let mut drivers = Vec::new();
    for task in &tasks {
        match Driver::open(root, task, valp.clone()) {
            Ok(driver) => drivers.push(driver),
            Err(error) if isolate => {
                let problem = super::problem_line(task, &error);
                writeln!(out, "{problem}")?;
                problems.push(problem);
            }
            Err(error) => return Err(runtime_error(error)),
        }
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
        report_rejections(&feed, &mut reported, out)?;
        let mut in_flight = false;
        let mut broken = Vec::new();
        for (index, driver) in drivers.iter_mut().enumerate() {
            let task = display_text(driver.body().task_id.value());
            let steps = match pass(driver, &task, active, out) {
                Ok(steps) => steps,
                Err(error) if isolate && !matches!(error, CommandError::Output(_)) => {
                    let problem = super::problem_line(driver.body().task_id.value(), &error);
                    writeln!(out, "{problem}")?;
                    problems.push(problem);
                    broken.push(index);
                    continue;
                }
                Err(error) => return Err(error),
            };
            if let Some(Progress::Waiting(Wait::Leader(why))) = steps.last() {
                waits.insert(task.clone(), why.clone());
            } else {
                waits.remove(&task);
            }
            let (working, refused) = report(&task, &steps, out)?;
            in_flight |= working;
            failed |= refused;
        }
        for index in broken.into_iter().rev() {
            drivers.remove(index);
        }
        let timed_out = deadline.is_some_and(|deadline| Instant::now() >= deadline);
        if !in_flight || args.once || timed_out || failed {
            break;
        }
        // An adapter's write wakes the loop at once; the poll covers anything the watcher
        // could not see.
        let _ = woken.recv_timeout(POLL);
    }
    // A file written just before the watcher started may not have been fed yet when a quick
    // run is already done: every file on disk now is listed before the summary.
    if !feed.caught_up(CATCH_UP) {
        writeln!(
            out,
            "the observation watcher did not catch up within {CATCH_UP:?}: files written last may not be listed"
        )?;
    }
    report_rejections(&feed, &mut reported, out)?;
    summary(&drivers, &waits, out)?;
    finish(failed, problems.len())
}

/// Lists the files the feed rejected that were not listed yet (oldest first).
fn report_rejections(
    feed: &Feed,
    reported: &mut std::collections::BTreeSet<String>,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    for rejection in feed.rows().1.into_iter().rev() {
        let line = format!("rejected {}: {}", rejection.path, rejection.reason);
        if reported.insert(line.clone()) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// One pass over a task (`task`: its id as shown): the effects it owes, then every step it
/// can take now.
fn pass(
    driver: &mut Driver,
    task: &str,
    active: i128,
    out: &mut dyn Write,
) -> Result<Vec<Progress>, CommandError> {
    for record in driver
        .reconcile_effects(Duration::from_secs(10))
        .map_err(|error| CommandError::Usage(error.to_string()))?
    {
        writeln!(
            out,
            "{task}  effect {}",
            valp_runtime::runtime::effects::Shown(&record)
        )?;
    }
    driver.run_until_idle(active).map_err(runtime_error)
}

/// Exit 1 when the kernel refused a proposal, else 3 ([`CommandError::Damaged`]) when some
/// task could not be read or driven, else 0.
fn finish(refused: bool, damaged: usize) -> Result<ExitCode, CommandError> {
    if refused {
        Ok(ExitCode::FAILURE)
    } else if damaged > 0 {
        Err(CommandError::Damaged { count: damaged })
    } else {
        Ok(ExitCode::SUCCESS)
    }
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
            display_text(body.task_id.value()),
            body.status.as_str(),
            body.revision
        )?;
        if let Some(why) = waits.get(&display_text(body.task_id.value())) {
            writeln!(out, "  waits for the Leader: {}", display_text(why))?;
        }
        for (location, reason) in driver.rejections() {
            writeln!(out, "  rejected {location}: {reason}")?;
        }
    }
    Ok(())
}

/// Every task of the active epoch that is not finished and has a plan; a task folder that
/// cannot be read goes to `problems` instead.
fn runnable_tasks(
    root: &ControlRoot,
    active: i128,
    problems: &mut Vec<String>,
) -> Result<Vec<String>, CommandError> {
    let mut tasks = Vec::new();
    for dir in root.task_dirs()? {
        let journal = match root.open_task_dir(&dir, Access::ReadOnly) {
            Ok(journal) => journal,
            Err(error) => {
                problems.push(super::problem_line(&super::task_folder(root, &dir), &error));
                continue;
            }
        };
        let body = journal.live().body();
        let finished = body
            .status
            .known()
            .is_some_and(valp_kernel::TaskStatus::is_terminal);
        let task = body.task_id.value().to_owned();
        if !finished
            && body.leader_epoch == active
            && valp_runtime::plan::of_task(root, &task).is_ok()
        {
            tasks.push(task);
        }
    }
    Ok(tasks)
}

fn runtime_error(error: valp_runtime::runtime::driver::RuntimeError) -> CommandError {
    CommandError::Runtime(error)
}
