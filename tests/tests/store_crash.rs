//! Crash safety of journal appends: a writer in a separate process (`journal_appender`) is
//! killed with SIGKILL at random points, again and again on the same journal. After every kill
//! every acknowledged entry is there, nothing is duplicated or invented, the journal verifies
//! (a torn tail is reported to readers and repaired by writers, its bytes quarantined), and the
//! State is exactly the walk's State after that many steps.
//!
//! The same for effect ledgers: a `journal_appender effects` child recording obligations is
//! killed again and again; every acknowledged record is there exactly once, at most the one in
//! flight beyond them, and a torn tail is repaired by the next writer.
//!
//! The same for pipelined writers (`Journal::append_pipelined`, batches of 4): every entry of an
//! acknowledged batch is there, and at most two batches beyond them (the one whose
//! acknowledgement was on its way, the one being written).
//!
//! 200 trials each by default (100 for the pipelined writers); set `VALP_CRASH_TRIALS=N` for
//! more.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::{Duration, Instant};

use valp_store::{Access, ControlRoot, Warning};
use valp_tests::child::Reporter;
use valp_tests::store::{
    History, Rng, effect_ledger_path, init_root, journal_path, obligation, open_effects, open_task,
    outcome, quarantine_files,
};

const DEFAULT_TRIALS: usize = 200;
/// Trials share a journal in runs of this many, then start over in a fresh root (so that the
/// journal stays short and the suite fast, while repairs still meet earlier repairs).
const TRIALS_PER_ROOT: usize = 25;
const SEED: u64 = 0xC4A5_4ED5;
const WORK_ITEMS: usize = 3;

#[derive(Debug, Default)]
struct Tally {
    acked: usize,
    unacked_entries: usize,
    torn_tails_repaired: usize,
    left_for_the_next_writer: usize,
    killed_before_ready: usize,
}

fn trials() -> usize {
    std::env::var("VALP_CRASH_TRIALS").map_or(DEFAULT_TRIALS, |value| {
        value.parse().expect("VALP_CRASH_TRIALS is a number")
    })
}

#[test]
fn killed_writers_lose_no_acknowledged_entry() {
    kill_writers(None, SEED);
}

#[test]
fn killed_pipelined_writers_lose_no_acknowledged_batch() {
    // Half the trials: each writer appends batches of 4 with `append_pipelined`.
    kill_writers(Some(4), SEED ^ 0x0B17_C4ED);
}

/// Kills writers appending one by one (`batch` `None`) or pipelined in batches of `batch`
/// again and again, checking the journal after each kill.
fn kill_writers(batch: Option<usize>, seed: u64) {
    let trials = if batch.is_some() {
        trials().div_ceil(2)
    } else {
        trials()
    };
    let started = Instant::now();
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    let mut trial = 0;
    while trial < trials {
        let temp = tempfile::tempdir().unwrap();
        let root = init_root(temp.path());
        let walk_seed = rng.next_u64() % 1_000_000;
        let mut history = History::new(walk_seed, WORK_ITEMS);
        root.create_task(history.genesis()).unwrap();
        let mut entries = 0;
        for _ in 0..TRIALS_PER_ROOT.min(trials - trial) {
            let context =
                format!("trial {trial} (seed {seed:#x}, walk seed {walk_seed}, batch {batch:?})");
            let acked = kill_a_writer(
                &root, walk_seed, batch, entries, &mut rng, &mut tally, &context,
            );
            // Beyond the acknowledged entries: the one append in flight, or for a pipelined
            // writer the batch whose acknowledgement was on its way and the one being written.
            let in_flight = batch.map_or(1, |batch| 2 * batch);
            entries = check_after_kill(
                &root,
                &mut history,
                (entries, in_flight),
                &acked,
                &context,
                &mut tally,
            );
            // Now and then only read, and leave any torn tail for the next writer to repair.
            if rng.chance(70) {
                entries = repair(&root, &mut history, entries, &context, &mut tally);
            } else {
                tally.left_for_the_next_writer += 1;
            }
            trial += 1;
        }
    }
    eprintln!("{trials} trials in {:.1?}: {tally:?}", started.elapsed());
    assert!(
        tally.acked >= trials,
        "the writers acknowledged too little to test anything: {tally:?}"
    );
}

/// Starts a writer (pipelined in batches of `batch`, if given), kills it at a random point and
/// returns the sequence numbers it acknowledged. `entries` is the journal's length before.
fn kill_a_writer(
    root: &ControlRoot,
    walk_seed: u64,
    batch: Option<usize>,
    entries: usize,
    rng: &mut Rng,
    tally: &mut Tally,
    context: &str,
) -> Vec<usize> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_journal_appender"));
    match batch {
        None => command.arg("append"),
        Some(_) => command.arg("append-pipelined"),
    };
    command
        .arg(root.layout().root())
        .args([walk_seed.to_string(), WORK_ITEMS.to_string()])
        .args(batch.map(|batch| batch.to_string()))
        .arg("10000");
    let acked = kill_a_child(&mut command, entries, rng, tally, context);
    let expected: Vec<usize> = (entries + 1..=entries + acked.len()).collect();
    assert_eq!(acked, expected, "{context}: acknowledged sequence numbers");
    acked
}

/// Runs a `journal_appender` child that prints `ready <len>` then `acked <n>` lines, kills it at
/// a random point and returns the numbers it acknowledged. `entries` is the length before.
fn kill_a_child(
    command: &mut Command,
    entries: usize,
    rng: &mut Rng,
    tally: &mut Tally,
    context: &str,
) -> Vec<usize> {
    let mut child = Reporter::spawn(command, context);
    let mut lines = Vec::new();
    if rng.chance(15) {
        // Somewhere in start-up: opening, verifying, repairing a torn tail.
        std::thread::sleep(Duration::from_micros(rng.below(20_000) as u64));
    } else {
        let acks = rng.below(8);
        lines.push(child.expect_line());
        while lines.len() <= acks {
            lines.push(child.expect_line());
        }
        // Then somewhere in the appends that follow.
        std::thread::sleep(Duration::from_micros(rng.below(3_000) as u64));
    }
    child.kill();
    let status = child.wait();
    assert!(
        !status.success(),
        "{context}: the writer was killed, not done"
    );
    lines.extend(child.remaining_lines());
    let mut acked = Vec::new();
    match lines.first().map(|line| line.split_once(' ')) {
        None => tally.killed_before_ready += 1,
        Some(Some(("ready", len))) => assert_eq!(len.parse::<usize>().unwrap(), entries),
        Some(_) => panic!("{context}: the writer began with {:?}", lines[0]),
    }
    for line in lines.iter().skip(1) {
        let seq = line
            .strip_prefix("acked ")
            .unwrap_or_else(|| panic!("{context}: unexpected line {line:?}"));
        acked.push(seq.parse().unwrap());
    }
    tally.acked += acked.len();
    acked
}

/// Checks the journal after a kill without writing: a reader sees every acknowledged entry, at
/// most `in_flight` entries beyond them, and exactly the walk's State; a torn tail is reported
/// and left alone. Returns the number of entries.
fn check_after_kill(
    root: &ControlRoot,
    history: &mut History,
    (entries_before, in_flight): (usize, usize),
    acked: &[usize],
    context: &str,
    tally: &mut Tally,
) -> usize {
    let path = journal_path(root);
    let before = std::fs::read(&path).unwrap();
    let reader = open_task(root, Access::ReadOnly)
        .unwrap_or_else(|error| panic!("{context}: the journal does not verify: {error}"));
    let verified = usize::try_from(reader.verified_bytes()).unwrap();
    match reader.warnings() {
        [] => assert_eq!(verified, before.len(), "{context}"),
        [Warning::IncompleteTail { offset, len }] => {
            assert_eq!(*offset, reader.verified_bytes(), "{context}");
            assert_eq!(*offset + *len, before.len() as u64, "{context}");
        }
        other => panic!("{context}: unexpected warnings {other:?}"),
    }
    let entries = usize::try_from(reader.len()).unwrap();
    let least = entries_before + acked.len();
    assert!(
        (least..=least + in_flight).contains(&entries),
        "{context}: {entries} entries after {entries_before} and {} acknowledged appends (at \
         most {in_flight} more may have been written but not acknowledged)",
        acked.len()
    );
    tally.unacked_entries += entries - least;
    // Opened from a snapshot or from the genesis: the same State (body and digest).
    let expected = history.state_after(entries);
    assert_eq!(
        reader.live().body(),
        &expected.body,
        "{context}: the State is the walk's State after {entries} steps"
    );
    assert_eq!(
        reader.live().state_digest(),
        valp_kernel::live::LiveState::new(expected).state_digest(),
        "{context}: the State digest is the walk's after {entries} steps"
    );
    let mut events = Vec::new();
    valp_store::journal::read_entries::<valp_kernel::live::LiveState>(reader.path(), |entry| {
        events.push(entry.entry.event.event_id.value().to_owned());
    })
    .unwrap();
    events.sort_unstable();
    events.dedup();
    assert_eq!(
        events.len(),
        entries,
        "{context}: no event is recorded twice"
    );
    drop(reader);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "{context}: a reader wrote"
    );
    entries
}

/// Opens the journal for writing, which repairs a torn tail: the cut bytes are quarantined
/// verbatim and the file ends at the last good line. Returns the number of entries.
fn repair(
    root: &ControlRoot,
    history: &mut History,
    entries: usize,
    context: &str,
    tally: &mut Tally,
) -> usize {
    let path = journal_path(root);
    let before = std::fs::read(&path).unwrap();
    let quarantined_before = quarantine_files(root);
    let journal = open_task(root, Access::Write)
        .unwrap_or_else(|error| panic!("{context}: a writer cannot open the journal: {error}"));
    assert_eq!(journal.len(), entries as u64, "{context}");
    let verified = usize::try_from(journal.verified_bytes()).unwrap();
    match journal.warnings() {
        [] => {
            assert_eq!(std::fs::read(&path).unwrap(), before, "{context}");
            assert_eq!(quarantine_files(root), quarantined_before, "{context}");
        }
        [
            Warning::TornTailRepaired {
                offset,
                len,
                quarantined,
            },
        ] => {
            tally.torn_tails_repaired += 1;
            assert_eq!(*offset, journal.verified_bytes(), "{context}");
            assert_eq!(*offset + *len, before.len() as u64, "{context}");
            assert_eq!(std::fs::read(quarantined).unwrap(), &before[verified..]);
            assert_eq!(std::fs::read(&path).unwrap(), &before[..verified]);
            assert_eq!(
                quarantined.parent(),
                Some(root.layout().quarantine_dir().as_path())
            );
        }
        other => panic!("{context}: unexpected warnings {other:?}"),
    }
    let expected = history.state_after(entries);
    assert_eq!(journal.live().body(), &expected.body);
    assert_eq!(
        journal.live().state_digest(),
        valp_kernel::live::LiveState::new(expected).state_digest()
    );
    entries
}

#[test]
fn killed_effect_writers_lose_no_acknowledged_record() {
    let trials = trials();
    let started = Instant::now();
    let mut rng = Rng::new(SEED ^ 0x00EF_FEC7);
    let mut tally = Tally::default();
    let mut trial = 0;
    while trial < trials {
        let temp = tempfile::tempdir().unwrap();
        let root = init_root(temp.path());
        root.create_task(History::new(7, WORK_ITEMS).genesis())
            .unwrap();
        let mut records = 0;
        for _ in 0..TRIALS_PER_ROOT.min(trials - trial) {
            let context = format!("effects trial {trial} (seed {SEED:#x})");
            let mut command = Command::new(env!("CARGO_BIN_EXE_journal_appender"));
            command
                .arg("effects")
                .arg(root.layout().root())
                .arg("10000");
            let acked = kill_a_child(&mut command, records, &mut rng, &mut tally, &context);
            let expected: Vec<usize> = (records..records + acked.len()).collect();
            assert_eq!(acked, expected, "{context}: acknowledged obligations");
            records = check_effects_after_kill(&root, records + acked.len(), &context, &mut tally);
            if rng.chance(70) {
                repair_effects(&root, records, &context, &mut tally);
            } else {
                tally.left_for_the_next_writer += 1;
            }
            trial += 1;
        }
    }
    eprintln!(
        "{trials} effect trials in {:.1?}: {tally:?}",
        started.elapsed()
    );
    assert!(tally.acked >= trials, "too little acknowledged: {tally:?}");
}

/// A reader after a kill: every acknowledged record (obligations `0..acked`) is there once, in
/// order, with its outcome, and at most one more; a torn tail is reported and left alone.
/// Returns the number of records.
fn check_effects_after_kill(
    root: &ControlRoot,
    acked: usize,
    context: &str,
    tally: &mut Tally,
) -> usize {
    let path = effect_ledger_path(root);
    let before = std::fs::read(&path).unwrap_or_default();
    let ledger = open_effects(root, Access::ReadOnly)
        .unwrap_or_else(|error| panic!("{context}: the ledger does not verify: {error}"));
    match ledger.warnings() {
        [] => assert_eq!(ledger.verified_bytes(), before.len() as u64, "{context}"),
        [Warning::IncompleteTail { offset, len }] => {
            assert_eq!(*offset, ledger.verified_bytes(), "{context}");
            assert_eq!(*offset + *len, before.len() as u64, "{context}");
        }
        other => panic!("{context}: unexpected warnings {other:?}"),
    }
    let records = ledger.records();
    assert!(
        (acked..=acked + 1).contains(&records.len()),
        "{context}: {} records after {acked} acknowledged",
        records.len()
    );
    // The head never names a line that is not there (a kill between a line and its head
    // leaves it behind; a record found already there is acknowledged without moving it), except
    // the first line: it is created head first, so a kill between the two leaves a head naming
    // line 1 of an empty ledger (the ledger's documented crash window, which opens clean).
    let anchored = ledger.head().map_or(0, |head| head.seq + 1);
    let created_head_first = records.is_empty() && anchored == 1;
    assert!(
        usize::try_from(anchored).unwrap() <= records.len() || created_head_first,
        "{context}: the head names record {anchored} of {}",
        records.len()
    );
    tally.unacked_entries += records.len() - acked;
    for (number, record) in records.iter().enumerate() {
        assert_eq!(record.obligation, obligation(number), "{context}");
        assert_eq!(record.outcome(), outcome(number, "appender"), "{context}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap_or_default(),
        before,
        "{context}"
    );
    records.len()
}

/// A writer opens the ledger: a torn tail is quarantined verbatim and cut off.
fn repair_effects(root: &ControlRoot, records: usize, context: &str, tally: &mut Tally) {
    let path = effect_ledger_path(root);
    let before = std::fs::read(&path).unwrap_or_default();
    let ledger = open_effects(root, Access::Write)
        .unwrap_or_else(|error| panic!("{context}: a writer cannot open the ledger: {error}"));
    assert_eq!(ledger.records().len(), records, "{context}");
    let verified = usize::try_from(ledger.verified_bytes()).unwrap();
    match ledger.warnings() {
        [] => assert_eq!(
            std::fs::read(&path).unwrap_or_default(),
            before,
            "{context}"
        ),
        [Warning::TornTailRepaired { quarantined, .. }] => {
            tally.torn_tails_repaired += 1;
            assert_eq!(std::fs::read(quarantined).unwrap(), &before[verified..]);
            assert_eq!(std::fs::read(&path).unwrap(), &before[..verified]);
        }
        other => panic!("{context}: unexpected warnings {other:?}"),
    }
}
