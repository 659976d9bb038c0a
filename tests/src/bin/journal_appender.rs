//! A journal writer that the store reliability tests run as a separate process (to kill it, or
//! to race several of them against one journal).
//!
//! Every mode reports on stdout, one line per thing done, flushed at once; the parent reads
//! those lines to know where the child is. `ROOT` is a control root (a `.valp` folder) whose
//! walk task (`task-1`, created by the parent from `History::new(SEED, WORK_ITEMS)`) exists.
//!
//! - `append ROOT SEED WORK_ITEMS LIMIT`: opens the journal for writing (repairing a torn tail),
//!   prints `ready <len>`, then appends the walk steps that follow, one by one, printing
//!   `acked <seq>` after each accepted (durable) append; stops after LIMIT appends.
//! - `append-pipelined ROOT SEED WORK_ITEMS BATCH LIMIT`: the same with one
//!   `Journal::append_pipelined` of LIMIT steps in batches of BATCH, printing `acked <seq>` for
//!   each entry of a batch once the store acknowledges the batch.
//! - `contend ROOT SEED WORK_ITEMS PROPOSALS PROCESS`: opens the journal, prints `ready`, waits
//!   for a line on stdin, then makes PROPOSALS proposals. Each takes the revision `r` the
//!   journal had at this writer's last append and proposes, at random (seeded by the number
//!   PROCESS): the walk step for revision `r + 1` (`current`), the one for `r + 2` (`ahead`),
//!   or a copy of the current one under a fresh event id whose expected revision is 1 to 3
//!   below `r` (`stale`). Prints `acked <seq> <revision the step produces>`,
//!   `duplicate <kind>` or `rejected <kind> <code> <reason>`, then `done`.
//! - `hold-lock PATH`: takes the journal lock at PATH, prints `locked`, and holds it until stdin
//!   ends.
//! - `effects ROOT LIMIT`: opens the walk task's effect ledger for writing (repairing a torn
//!   tail), prints `ready <records>`, then records the test obligations that follow
//!   ([`valp_tests::store::obligation`] `records`, `records + 1`, …), printing `acked <n>`
//!   after each durable record; stops after LIMIT.
//! - `effects-contend ROOT COUNT PROCESS`: opens the effect ledger, prints `ready`, waits for a
//!   line on stdin, then records obligations 0 to COUNT - 1 with an outcome naming PROCESS,
//!   printing `recorded <n>` or `already <n>` (another writer recorded it first), then `done`.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use valp_kernel::{Identity, IdentityKind, Int};
use valp_store::effects::{EffectAppended, EffectLedger};
use valp_store::io::OsStorage;
use valp_store::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use valp_store::{Access, Appended, ControlRoot, Journal};
use valp_tests::store::{History, Rng, TASK_ID, obligation, outcome};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["append", root, seed, items, limit] => (|| {
            append(
                open(root)?,
                History::new(number(seed)?, number(items)?),
                number(limit)?,
            )
        })(),
        ["append-pipelined", root, seed, items, batch, limit] => (|| {
            append_pipelined(
                open(root)?,
                History::new(number(seed)?, number(items)?),
                number(batch)?,
                number(limit)?,
            )
        })(),
        ["contend", root, seed, items, proposals, process] => (|| {
            contend(
                open(root)?,
                History::new(number(seed)?, number(items)?),
                number(proposals)?,
                number(process)?,
            )
        })(),
        ["hold-lock", path] => hold_lock(Path::new(path)),
        ["effects", root, limit] => (|| record_effects(effect_ledger(root)?, number(limit)?))(),
        ["effects-contend", root, count, process] => {
            (|| contend_effects(effect_ledger(root)?, number(count)?, process))()
        }
        _ => Err(format!("usage: see the module documentation; got {args:?}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("journal_appender: {message}");
            ExitCode::FAILURE
        }
    }
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a number"))
}

fn open(root: &str) -> Result<Journal, String> {
    let root = ControlRoot::open(Path::new(root), Arc::new(OsStorage)).map_err(text)?;
    root.open_task(TASK_ID, Access::Write).map_err(text)
}

fn effect_ledger(root: &str) -> Result<EffectLedger, String> {
    let root = ControlRoot::open(Path::new(root), Arc::new(OsStorage)).map_err(text)?;
    EffectLedger::of_task(&root, TASK_ID, Access::Write).map_err(text)
}

fn text(error: impl std::fmt::Display) -> String {
    error.to_string()
}

/// Prints one line and flushes it.
fn say(line: &str) -> Result<(), String> {
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .map_err(text)
}

fn len(journal: &Journal) -> Result<usize, String> {
    usize::try_from(journal.len()).map_err(text)
}

fn append(mut journal: Journal, mut history: History, limit: usize) -> Result<(), String> {
    let start = len(&journal)?;
    say(&format!("ready {start}"))?;
    for index in start..start + limit {
        let step = history.step(index);
        match journal
            .append(&step.event, &step.evidence_set)
            .map_err(text)?
        {
            Appended::Accepted { seq, .. } => say(&format!("acked {seq}"))?,
            other => return Err(format!("walk step {index} was not accepted: {other:?}")),
        }
    }
    Ok(())
}

fn append_pipelined(
    mut journal: Journal,
    mut history: History,
    batch: usize,
    limit: usize,
) -> Result<(), String> {
    let start = len(&journal)?;
    say(&format!("ready {start}"))?;
    let proposals = (start..start + limit).map(|index| {
        let step = history.step(index);
        (step.event.clone(), step.evidence_set.clone())
    });
    let mut said = Ok(());
    journal
        .append_pipelined(proposals, batch, |answers| {
            for answer in answers {
                said = said.clone().and_then(|()| match answer {
                    Appended::Accepted { seq, .. } => say(&format!("acked {seq}")),
                    other => Err(format!("a walk step was not accepted: {other:?}")),
                });
            }
        })
        .map_err(text)?;
    said
}

fn contend(
    mut journal: Journal,
    mut history: History,
    proposals: usize,
    process: u64,
) -> Result<(), String> {
    let mut rng = Rng::new(process);
    say("ready")?;
    std::io::stdin()
        .lock()
        .read_line(&mut String::new())
        .map_err(text)?;
    for proposal in 0..proposals {
        // The revision as of this writer's last append (which read everything appended before
        // it, under the lock); other writers may have moved on since.
        let current = len(&journal)?;
        let roll = rng.below(100);
        let (kind, index) = match roll {
            0..25 if current > 0 => ("stale", current),
            0..40 => ("ahead", current + 1),
            _ => ("current", current),
        };
        let step = history.step(index);
        let mut event = step.event.clone();
        if kind == "stale" {
            let behind = 1 + rng.below(current.min(3));
            event.event_id =
                Identity::new(IdentityKind::Event, format!("stale-{process}-{proposal}"))
                    .map_err(text)?;
            event.expected_revision = Int::try_from(current - behind).map_err(text)?;
        }
        let line = match journal.append(&event, &step.evidence_set).map_err(text)? {
            Appended::Accepted { seq, .. } => format!("acked {seq} {}", index + 1),
            Appended::Duplicate { .. } => format!("duplicate {kind}"),
            Appended::Rejected { error_code, reason } => {
                format!("rejected {kind} {} {reason}", error_code.as_str())
            }
        };
        say(&line)?;
    }
    say("done")
}

fn hold_lock(path: &Path) -> Result<(), String> {
    let _guard = LockGuard::acquire(path, DEFAULT_LOCK_TIMEOUT).map_err(text)?;
    say("locked")?;
    // Hold the lock until the parent closes stdin (or kills us, which is the point).
    std::io::stdin()
        .lock()
        .read_line(&mut String::new())
        .map_err(text)?;
    Ok(())
}

fn record_effects(mut ledger: EffectLedger, limit: usize) -> Result<(), String> {
    let start = ledger.records().len();
    say(&format!("ready {start}"))?;
    for number in start..start + limit {
        match ledger
            .append(&obligation(number), &outcome(number, "appender"))
            .map_err(text)?
        {
            EffectAppended::Recorded(_) => say(&format!("acked {number}"))?,
            EffectAppended::AlreadyRecorded(_) => {
                return Err(format!("obligation {number} was recorded by someone else"));
            }
        }
    }
    Ok(())
}

fn contend_effects(mut ledger: EffectLedger, count: usize, process: &str) -> Result<(), String> {
    say("ready")?;
    std::io::stdin()
        .lock()
        .read_line(&mut String::new())
        .map_err(text)?;
    for number in 0..count {
        let line = match ledger
            .append(&obligation(number), &outcome(number, process))
            .map_err(text)?
        {
            EffectAppended::Recorded(_) => format!("recorded {number}"),
            EffectAppended::AlreadyRecorded(_) => format!("already {number}"),
        };
        say(&line)?;
    }
    say("done")
}
