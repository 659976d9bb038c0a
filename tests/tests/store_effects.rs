//! The effect ledger (`valp_store::effects`) under the store's damage, fault and concurrency
//! suites: torn tails of every kind are reported by readers and repaired by writers with
//! byte-exact quarantine copies; a flipped bit in any complete line refuses the ledger with
//! file, line and byte and rewrites nothing; every injected I/O failure is the right error and
//! the ledger verifies afterwards; records are strict; a second record for an obligation is
//! never written, by threads or processes racing; the layout-1 `effects.jsonl` converts; and
//! `verify` checks every record against the task journal. Like a task journal, the ledger is
//! checked against its head anchor: a ledger cut at any line boundary, rolled back, without its
//! head or with a damaged head is refused by readers, writers and `valp verify`; a lagging head
//! is caught up by the next append.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use valp_kernel::canonical::Canonical;
use valp_store::effects::{
    Conversion, EFFECT_LEDGER_FILE, EffectAppended, EffectLedger, EffectRecord,
    LAYOUT1_EFFECTS_FILE, Outcome, convert_layout1,
};
use valp_store::head::head_path;
use valp_store::io::{Fault, FaultyStorage, Operation, OsStorage, Storage};
use valp_store::{Access, ControlRoot, StoreCode, StoreError, Warning};
use valp_tests::child::Reporter;

/// The `recorded_at` of the lines these tests write by hand.
const AT: valp_store::clock::Timestamp =
    valp_store::clock::Timestamp::from_millis(1_796_042_096_789);
use valp_tests::cli::valp_in;
use valp_tests::store::{
    History, Rng, assert_repaired, clear_quarantine, corrupt_location, create_journal,
    effect_ledger_path, init_root_with, line_ranges, obligation, open_effects, outcome,
    quarantine_files, write_anchored,
};

/// Records in the ledger under test.
const RECORDS: usize = 6;

/// A control root over `FaultyStorage` (healthy until told otherwise) with the walk task and
/// an effect ledger of `records` records.
struct Fixture {
    temp: tempfile::TempDir,
    storage: Arc<FaultyStorage>,
    root: ControlRoot,
    path: PathBuf,
    /// The ledger with one record more than the one under test.
    full: Vec<u8>,
    lines: Vec<Range<usize>>,
}

impl Fixture {
    fn new(records: usize) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let storage = Arc::new(FaultyStorage::default());
        let root = init_root_with(temp.path(), Arc::clone(&storage) as Arc<dyn Storage>);
        drop(create_journal(&root, &mut History::new(31, 2), 0));
        let mut ledger = open_effects(&root, Access::Write).unwrap();
        for number in 0..=records {
            record(&mut ledger, number);
        }
        let path = effect_ledger_path(&root);
        let full = std::fs::read(&path).unwrap();
        let lines = line_ranges(&full);
        assert_eq!(lines.len(), records + 1);
        Self {
            temp,
            storage,
            root,
            path,
            full,
            lines,
        }
    }

    /// The ledger holding the first `records` records.
    fn ledger(&self, records: usize) -> &[u8] {
        &self.full[..records
            .checked_sub(1)
            .map_or(0, |last| self.lines[last].end)]
    }

    /// Writes the first `records` (at least one) records followed by `tail`, with the head of
    /// the last record: as a ledger holding them is after its appends (or after a crash, for
    /// the records before a torn tail).
    fn write(&self, records: usize, tail: &[u8]) {
        write_anchored(&self.path, self.ledger(records), tail);
    }

    /// Writes the first `records` records followed by `torn`, then checks that a reader
    /// reports the torn bytes and changes nothing, that a writer quarantines exactly them and
    /// cuts them off, and that the next record lands where an undamaged ledger has it.
    fn check_torn_tail(&self, records: usize, torn: &[u8], what: &str) {
        clear_quarantine(&self.root);
        let good = self.ledger(records).to_vec();
        let damaged = [good.as_slice(), torn].concat();
        self.write(records, torn);
        let (offset, len) = (good.len() as u64, torn.len() as u64);

        let reader = open_effects(&self.root, Access::ReadOnly)
            .unwrap_or_else(|error| panic!("{what}: a reader refuses the ledger: {error}"));
        assert_eq!(
            reader.warnings(),
            [Warning::IncompleteTail { offset, len }],
            "{what}"
        );
        assert_eq!(reader.records().len(), records, "{what}");
        assert!(std::fs::read(&self.path).unwrap() == damaged, "{what}");
        assert_eq!(quarantine_files(&self.root), Vec::<PathBuf>::new());

        let mut writer = open_effects(&self.root, Access::Write)
            .unwrap_or_else(|error| panic!("{what}: a writer refuses the ledger: {error}"));
        let quarantined = assert_repaired(&self.root, writer.warnings(), offset, torn, what);
        let name = quarantined.file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with(&format!("task-1.effect-ledger.{offset}.")),
            "{name}"
        );
        assert!(std::fs::read(&self.path).unwrap() == good, "{what}");
        record(&mut writer, records);
        assert!(
            std::fs::read(&self.path).unwrap() == self.ledger(records + 1),
            "{what}: the next record is the one an undamaged ledger gets"
        );
        let again = open_effects(&self.root, Access::ReadOnly).unwrap();
        assert_eq!(
            (again.records().len(), again.warnings()),
            (records + 1, &[][..])
        );
    }
}

/// Records test obligation `number`, which must be new.
fn record(ledger: &mut EffectLedger, number: usize) -> EffectRecord {
    match ledger
        .append(&obligation(number), &outcome(number, "fixture"))
        .unwrap()
    {
        EffectAppended::Recorded(record) => record,
        other @ EffectAppended::AlreadyRecorded(_) => panic!("obligation {number}: {other:?}"),
    }
}

#[test]
fn records_round_trip_and_an_obligation_is_recorded_once() {
    let fixture = Fixture::new(RECORDS);
    let reader = open_effects(&fixture.root, Access::ReadOnly).unwrap();
    assert_eq!(reader.records().len(), RECORDS + 1);
    for (number, (record, range)) in reader.records().iter().zip(&fixture.lines).enumerate() {
        assert_eq!(record.obligation, obligation(number));
        assert_eq!(record.outcome(), outcome(number, "fixture"));
        assert_eq!(record.ledger_revision, number as u64 + 1);
        // The line is the store's journal line wrapping the record's canonical bytes.
        let line: serde_json::Value = serde_json::from_slice(&fixture.full[range.clone()]).unwrap();
        assert_eq!(line["schema_version"], "valp-store-journal.v2");
        assert_eq!(line["recorded_at"], "2026-11-30T12:34:56.789Z");
        assert_eq!(line["seq"], number);
        let entry = serde_json::to_vec(&line["entry"]).unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&record.canonical_bytes()).unwrap(),
            serde_json::from_slice::<serde_json::Value>(&entry).unwrap()
        );
    }
    // Another outcome for a recorded obligation is answered with the record, not written.
    let mut writer = open_effects(&fixture.root, Access::Write).unwrap();
    let again = writer
        .append(
            &obligation(2),
            &Outcome::Blocked {
                reason: "late".to_owned(),
            },
        )
        .unwrap();
    assert_eq!(
        again,
        EffectAppended::AlreadyRecorded(reader.records()[2].clone())
    );
    assert!(std::fs::read(&fixture.path).unwrap() == fixture.full);
    // A reader never appends; a record breaking the rules is refused before anything is written.
    let mut reader = reader;
    let refused = reader
        .append(&obligation(99), &outcome(99, "x"))
        .unwrap_err();
    assert!(
        refused.to_string().contains("opened read-only"),
        "{refused}"
    );
    for (bad, rule) in [
        ("notify:x", "obligation must start with \"adapter_cancel:\""),
        (obligation(98).as_str(), "a blocked record needs a reason"),
    ] {
        let error = writer
            .append(
                bad,
                &Outcome::Blocked {
                    reason: String::new(),
                },
            )
            .unwrap_err();
        assert!(
            matches!(&error, StoreError::Invalid(message) if message.ends_with(rule)),
            "{error}"
        );
    }
    assert!(std::fs::read(&fixture.path).unwrap() == fixture.full);
}

#[test]
fn torn_tails_of_every_kind_are_reported_then_repaired() {
    let fixture = Fixture::new(RECORDS);
    let last = fixture.full[fixture.lines[RECORDS].clone()].to_vec();
    let mut cuts: Vec<usize> = (1..last.len()).step_by(23).collect();
    cuts.extend([1, 2, last.len() - 2, last.len() - 1]);
    for cut in cuts {
        fixture.check_torn_tail(RECORDS, &last[..cut], &format!("cut at {cut}"));
    }
    // The line cut after each JSON separator: a well-formed JSON prefix.
    for (index, _) in last
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b, b',' | b':'))
    {
        fixture.check_torn_tail(RECORDS, &last[..=index], &format!("JSON cut at {index}"));
    }
    // NUL residue in place of the last line, after it, with and without LF; a torn first line.
    let mut nul_line = vec![0; last.len() - 1];
    nul_line.push(b'\n');
    fixture.check_torn_tail(RECORDS, &vec![0; last.len()], "NULs in place of the line");
    fixture.check_torn_tail(RECORDS, &nul_line, "NULs and LF in place of the line");
    let mut partly = last[..last.len() / 2].to_vec();
    partly.resize(last.len() - 1, 0);
    partly.push(b'\n');
    fixture.check_torn_tail(RECORDS, &partly, "half a line, then NULs and LF");
    for run in [1, 4096] {
        fixture.check_torn_tail(RECORDS, &vec![0; run], &format!("{run} NULs after"));
    }
    // A torn first line cannot be a crash's remnant: the first line is created atomically,
    // after its head. Without a head it is refused like any ledger that holds bytes.
    let first = &fixture.full[fixture.lines[0].clone()];
    std::fs::remove_file(head_path(&fixture.path)).unwrap();
    std::fs::write(&fixture.path, &first[..first.len() / 3]).unwrap();
    let refused = open_effects(&fixture.root, Access::Write).unwrap_err();
    assert!(
        matches!(&refused, StoreError::HeadMissing { path, .. } if path == &fixture.path),
        "{refused}"
    );
}

#[test]
fn a_flipped_bit_in_any_complete_line_is_refused_where_it_is() {
    const FLIPS: usize = 600;
    let fixture = Fixture::new(RECORDS);
    let original = fixture.full.clone();
    let last = fixture.lines[RECORDS].clone();
    let mut rng = Rng::new(0xEFF_EC75);
    let mut nul_made = 0;
    for flip in 0..FLIPS {
        // Every third flip lands in the last line.
        let position = if flip % 3 == 0 {
            last.start + rng.below(last.len() - 1)
        } else {
            rng.below(original.len() - 1)
        };
        let bit = rng.below(8);
        let mut damaged = original.clone();
        damaged[position] ^= 1 << bit;
        if damaged[position] == b'\n' {
            continue; // splits a line in two: not a flip inside one line
        }
        std::fs::write(&fixture.path, &damaged).unwrap();
        let index = fixture
            .lines
            .iter()
            .position(|line| line.contains(&position))
            .unwrap();
        let what = format!(
            "flip {flip}: bit {bit} of byte {position} (line {})",
            index + 1
        );
        if damaged[position] == 0 && index == RECORDS {
            // A NUL in the last line would be a torn tail (the rule shared with task
            // journals), but the head anchors that line: bytes at or before it are never torn.
            nul_made += 1;
            let refused = open_effects(&fixture.root, Access::ReadOnly).unwrap_err();
            assert!(
                matches!(&refused, StoreError::HeadMismatch { seq, .. } if *seq == RECORDS as u64),
                "{what}: {refused}"
            );
            continue;
        }
        for access in [Access::ReadOnly, Access::Write] {
            let (path, line, byte) = corrupt_location(open_effects(&fixture.root, access));
            assert_eq!(path, fixture.path, "{what}, {access:?}");
            assert_eq!(line, index as u64 + 1, "{what}, {access:?}");
            assert_eq!(
                byte, fixture.lines[index].start as u64,
                "{what}, {access:?}"
            );
        }
        assert!(
            std::fs::read(&fixture.path).unwrap() == damaged,
            "{what}: rewritten"
        );
    }
    eprintln!("{FLIPS} flips, {nul_made} made a NUL in the anchored last line");
    assert_eq!(quarantine_files(&fixture.root), Vec::<PathBuf>::new());
    std::fs::write(&fixture.path, &original).unwrap();
    assert_eq!(
        open_effects(&fixture.root, Access::ReadOnly)
            .unwrap()
            .records()
            .len(),
        RECORDS + 1
    );
}

/// Writes `records` as a ledger, each wrapped in a chained line as the store writes it.
fn write_ledger(path: &Path, records: &[EffectRecord]) {
    let mut bytes = Vec::new();
    let mut prior: Option<String> = None;
    for (seq, record) in (0_u64..).zip(records) {
        let (line, digest) = valp_store::chain::encode_line(seq, prior.as_deref(), AT, record);
        bytes.extend_from_slice(&line);
        prior = Some(digest);
    }
    write_anchored(path, &bytes, b"");
}

#[test]
fn records_are_checked_strictly_with_exact_errors() {
    let fixture = Fixture::new(2);
    let good = open_effects(&fixture.root, Access::ReadOnly)
        .unwrap()
        .records()
        .to_vec();
    let reason = |records: &[EffectRecord]| {
        write_ledger(&fixture.path, records);
        match open_effects(&fixture.root, Access::ReadOnly).unwrap_err() {
            StoreError::Corrupt { line, reason, .. } => (line, reason),
            other => panic!("{other:?}"),
        }
    };
    let mut forged = good[1].clone();
    forged.status = "fulfilled".to_owned();
    assert_eq!(
        reason(&[good[0].clone(), forged]),
        (
            2,
            "effect record: a fulfilled record needs a safe relative proof_ref and a proof_digest"
                .to_owned()
        )
    );
    let mut forged = good[0].clone();
    forged.status = "blocked".to_owned();
    assert_eq!(
        reason(&[forged]),
        (1, "effect record: a blocked record has no proof".to_owned())
    );
    let mut forged = good[0].clone();
    forged.reason = "changed".to_owned();
    assert_eq!(
        reason(&[forged, good[1].clone()]),
        (
            1,
            "effect record: a fulfilled record has no reason".to_owned()
        )
    );
    let mut rehashed = EffectRecord::new(&obligation(0), &outcome(1, "other"), None);
    rehashed.ledger_revision = 1;
    assert_eq!(
        reason(&[rehashed, good[1].clone()]),
        (
            2,
            format!(
                "effect record: prior_record_digest does not chain to {}",
                EffectRecord::new(&obligation(0), &outcome(1, "other"), None).record_digest
            )
        )
    );
    assert_eq!(
        reason(&[good[1].clone()]),
        (
            1,
            "effect record: ledger_revision is 2, expected 1".to_owned()
        )
    );
    let twice = EffectRecord::new(&obligation(0), &outcome(3, "again"), Some(&good[1]));
    assert_eq!(
        reason(&[good[0].clone(), good[1].clone(), twice]),
        (3, "the obligation already has a record (line 1)".to_owned())
    );
    let mut digest = good[0].clone();
    digest.record_digest = good[1].record_digest.clone();
    assert_eq!(
        reason(&[digest]),
        (
            1,
            "effect record: record_digest does not match the record".to_owned()
        )
    );
    // A payload that is not a record at all.
    let (line, _) = valp_store::chain::encode_line(0, None, AT, &Text);
    write_anchored(&fixture.path, &line, b"");
    assert!(matches!(
        open_effects(&fixture.root, Access::ReadOnly).unwrap_err(),
        StoreError::Corrupt { line: 1, ref reason, .. }
            if reason == "not an effect record: an effect record is a JSON object, found string"
    ));
}

/// A payload that is a JSON string, not a record.
struct Text;

impl Canonical for Text {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        valp_kernel::json::write::write_str(out, "a record");
    }
}

/// What a failed append left in the ledger file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    Nothing,
    Record,
    Half,
}

#[test]
fn failed_appends_are_unknown_or_committed_and_the_ledger_verifies_after() {
    for (operation, fault, failing, left) in [
        (Operation::Append, Fault::Once, "write", Left::Nothing),
        (Operation::Append, Fault::Always, "write", Left::Nothing),
        (Operation::Append, Fault::TornOnce, "write", Left::Half),
        (Operation::Sync, Fault::Once, "sync", Left::Record),
        (Operation::Sync, Fault::Always, "sync", Left::Record),
    ] {
        let what = format!("{operation:?} {fault:?}");
        let fixture = Fixture::new(RECORDS);
        fixture.write(RECORDS, b"");
        let before = fixture.ledger(RECORDS).to_vec();
        let mut ledger = open_effects(&fixture.root, Access::Write).unwrap();
        fixture.storage.fail(operation, fault);
        let error = ledger
            .append(&obligation(RECORDS), &outcome(RECORDS, "fixture"))
            .unwrap_err();
        match &error {
            StoreError::UnknownOrCommitted {
                path,
                operation,
                seq,
                ..
            } => assert_eq!(
                (path, *operation, *seq),
                (&fixture.path, failing, RECORDS as u64),
                "{what}"
            ),
            other => panic!("{what}: {other:?}"),
        }
        fixture.storage.heal();
        let refused = ledger
            .append(&obligation(99), &outcome(99, "x"))
            .unwrap_err();
        assert!(
            matches!(refused, StoreError::Poisoned { .. }),
            "{what}: {refused}"
        );
        let after = std::fs::read(&fixture.path).unwrap();
        let written = &after[before.len()..];
        let mut reopened = open_effects(&fixture.root, Access::Write).unwrap();
        match left {
            Left::Nothing => assert_eq!(written, b"", "{what}"),
            Left::Record => {
                assert!(after == fixture.full, "{what}: the whole record is there");
                assert_eq!(reopened.records().len(), RECORDS + 1, "{what}");
            }
            Left::Half => {
                let [Warning::TornTailRepaired { quarantined, .. }] = reopened.warnings() else {
                    panic!("{what}: {:?}", reopened.warnings());
                };
                assert_eq!(std::fs::read(quarantined).unwrap(), written, "{what}");
                assert!(std::fs::read(&fixture.path).unwrap() == before, "{what}");
            }
        }
        // Retrying the obligation records it once, whatever the failure left.
        let retried = reopened
            .append(&obligation(RECORDS), &outcome(RECORDS, "fixture"))
            .unwrap();
        assert_eq!(
            matches!(retried, EffectAppended::AlreadyRecorded(_)),
            left == Left::Record,
            "{what}"
        );
        assert!(
            std::fs::read(&fixture.path).unwrap() == fixture.full,
            "{what}"
        );
        assert_eq!(
            open_effects(&fixture.root, Access::ReadOnly)
                .unwrap()
                .warnings(),
            []
        );
    }
}

#[test]
fn a_failed_folder_sync_after_the_first_record_is_reported() {
    for fault in [Fault::Once, Fault::Always] {
        let fixture = Fixture::new(0);
        std::fs::remove_file(&fixture.path).unwrap();
        let mut ledger = open_effects(&fixture.root, Access::Write).unwrap();
        fixture.storage.fail(Operation::SyncDir, fault);
        let error = ledger
            .append(&obligation(0), &outcome(0, "fixture"))
            .unwrap_err();
        assert!(
            matches!(
                &error,
                StoreError::UnknownOrCommitted { operation: "sync directory", path, .. }
                    if path == fixture.path.parent().unwrap()
            ),
            "{fault:?}: {error}"
        );
        fixture.storage.heal();
        // The first line's head is written (and its folder synced) before the file: that
        // sync failed, so no ledger was created, and the head alone names no record.
        assert!(!fixture.path.exists(), "{fault:?}");
        let mut reopened = open_effects(&fixture.root, Access::Write).unwrap();
        assert_eq!(reopened.records().len(), 0, "{fault:?}");
        record(&mut reopened, 0);
        assert_eq!(
            reopened.head().map(|head| head.seq),
            Some(0),
            "{fault:?}: the retry is anchored"
        );
        assert!(
            std::fs::read(&fixture.path).unwrap() == fixture.ledger(1),
            "{fault:?}"
        );
    }
}

#[test]
fn failed_repairs_change_nothing_and_heal() {
    for (operation, fault) in [
        (Operation::Append, Fault::Once),
        (Operation::Append, Fault::TornOnce),
        (Operation::Sync, Fault::Once),
        (Operation::Sync, Fault::Always),
        (Operation::Rename, Fault::Once),
        (Operation::Rename, Fault::Always),
        (Operation::SyncDir, Fault::Once),
        (Operation::SyncDir, Fault::Always),
    ] {
        let what = format!("{operation:?} {fault:?}");
        let fixture = Fixture::new(RECORDS);
        let last = &fixture.full[fixture.lines[RECORDS].clone()];
        let torn = last[..last.len() / 2].to_vec();
        let damaged = [fixture.ledger(RECORDS), &torn].concat();
        fixture.write(RECORDS, &torn);
        fixture.storage.fail(operation, fault);
        let error = open_effects(&fixture.root, Access::Write).unwrap_err();
        let expected = match operation {
            Operation::SyncDir => StoreCode::DurabilityUnknownOrCommitted,
            _ => StoreCode::DurabilityPrecommit,
        };
        assert_eq!(error.code(), expected, "{what}: {error}");
        assert!(std::fs::read(&fixture.path).unwrap() == damaged, "{what}");
        fixture.storage.heal();
        let ledger = open_effects(&fixture.root, Access::Write).unwrap();
        let [Warning::TornTailRepaired { quarantined, .. }] = ledger.warnings() else {
            panic!("{what}: {:?}", ledger.warnings());
        };
        assert!(std::fs::read(quarantined).unwrap() == torn, "{what}");
        assert_eq!(ledger.records().len(), RECORDS, "{what}");
    }
}

#[test]
fn racing_threads_record_each_obligation_once() {
    const OBLIGATIONS: usize = 24;
    const THREADS: usize = 4;
    let fixture = Fixture::new(0);
    std::fs::remove_file(&fixture.path).unwrap();
    let recorded: Vec<Vec<usize>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|thread| {
                let root = fixture.root.clone();
                scope.spawn(move || {
                    let mut ledger = open_effects(&root, Access::Write).unwrap();
                    let mut mine = Vec::new();
                    let writer = format!("thread-{thread}");
                    // Each thread walks the obligations from a different start.
                    for step in 0..OBLIGATIONS {
                        let number = (step + thread * 5) % OBLIGATIONS;
                        match ledger.append(&obligation(number), &outcome(number, &writer)) {
                            Ok(EffectAppended::Recorded(_)) => mine.push(number),
                            Ok(EffectAppended::AlreadyRecorded(_)) => {}
                            Err(error) => panic!("{writer}: {error}"),
                        }
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    let mut all: Vec<usize> = recorded.concat();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..OBLIGATIONS).collect::<Vec<_>>(),
        "each recorded by one thread"
    );
    let ledger = open_effects(&fixture.root, Access::ReadOnly).unwrap();
    assert_eq!(ledger.records().len(), OBLIGATIONS);
    for (thread, numbers) in recorded.iter().enumerate() {
        for &number in numbers {
            assert_eq!(
                ledger.record_of(&obligation(number)).unwrap().outcome(),
                outcome(number, &format!("thread-{thread}"))
            );
        }
    }
}

#[test]
fn racing_processes_record_each_obligation_once() {
    const OBLIGATIONS: usize = 30;
    const PROCESSES: usize = 3;
    let fixture = Fixture::new(0);
    std::fs::remove_file(&fixture.path).unwrap();
    let mut children: Vec<Reporter> = (0..PROCESSES)
        .map(|process| {
            let mut command = Command::new(env!("CARGO_BIN_EXE_journal_appender"));
            command
                .arg("effects-contend")
                .arg(fixture.root.layout().root())
                .args([OBLIGATIONS.to_string(), format!("process-{process}")]);
            let mut child = Reporter::spawn(&mut command, format!("process {process}"));
            assert_eq!(child.expect_line(), "ready");
            child
        })
        .collect();
    for child in &mut children {
        child.send("go");
    }
    let mut winners = vec![Vec::new(); OBLIGATIONS];
    for (process, child) in children.iter_mut().enumerate() {
        let lines = child.remaining_lines();
        assert!(child.wait().success(), "process {process}");
        assert_eq!(lines.last().map(String::as_str), Some("done"));
        for line in &lines[..lines.len() - 1] {
            if let Some(number) = line.strip_prefix("recorded ") {
                winners[number.parse::<usize>().unwrap()].push(process);
            } else {
                assert!(line.starts_with("already "), "{line}");
            }
        }
    }
    let ledger = open_effects(&fixture.root, Access::ReadOnly).unwrap();
    assert_eq!(ledger.records().len(), OBLIGATIONS);
    for (number, winners) in winners.iter().enumerate() {
        assert_eq!(
            winners.len(),
            1,
            "obligation {number} recorded by {winners:?}"
        );
        assert_eq!(
            ledger.record_of(&obligation(number)).unwrap().outcome(),
            outcome(number, &format!("process-{}", winners[0]))
        );
    }
}

/// The layout-1 ledger written by the previous `valp` (see its PROVENANCE.md).
fn layout1_fixture() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/layout1-effects/effects.jsonl"),
    )
    .unwrap()
}

/// A task folder holding `bytes` as its layout-1 `effects.jsonl`.
fn layout1_folder(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("legacy");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join(LAYOUT1_EFFECTS_FILE), bytes).unwrap();
    (temp, dir)
}

fn open_folder(dir: &Path, access: Access) -> Result<EffectLedger, StoreError> {
    EffectLedger::open(dir, &dir.join("quarantine"), Arc::new(OsStorage), access)
}

#[test]
fn a_layout1_ledger_converts_once_keeping_every_record() {
    let old = layout1_fixture();
    let (_temp, dir) = layout1_folder(&old);
    // Before the conversion the ledger is refused: empty, it would have every obligation
    // carried out again.
    for access in [Access::ReadOnly, Access::Write] {
        let refused = open_folder(&dir, access).unwrap_err();
        assert_eq!(refused.to_string(), unconverted(&dir));
    }
    assert!(!dir.join(EFFECT_LEDGER_FILE).exists());
    assert_eq!(
        convert_layout1(&dir, &OsStorage).unwrap(),
        Conversion::Converted {
            records: 2,
            torn_tail: None
        }
    );
    let converted = std::fs::read(dir.join(EFFECT_LEDGER_FILE)).unwrap();
    let mut ledger = open_folder(&dir, Access::Write).unwrap();
    // Every record is byte for byte the old line.
    let records: Vec<u8> = ledger
        .records()
        .iter()
        .flat_map(Canonical::canonical_bytes)
        .collect();
    assert!(records == old);
    assert_eq!(ledger.records()[0].status, "fulfilled");
    assert_eq!(ledger.records()[1].status, "blocked");
    // Idempotent, also after a record was appended in the new format; the old file is kept.
    assert_eq!(
        convert_layout1(&dir, &OsStorage).unwrap(),
        Conversion::AlreadyConverted { records: 2 }
    );
    record(&mut ledger, 0);
    let grown = std::fs::read(dir.join(EFFECT_LEDGER_FILE)).unwrap();
    assert!(grown.starts_with(&converted) && grown.len() > converted.len());
    assert_eq!(
        convert_layout1(&dir, &OsStorage).unwrap(),
        Conversion::AlreadyConverted { records: 2 }
    );
    assert!(std::fs::read(dir.join(EFFECT_LEDGER_FILE)).unwrap() == grown);
    assert!(std::fs::read(dir.join(LAYOUT1_EFFECTS_FILE)).unwrap() == old);
    // A ledger holding something else is never overwritten.
    std::fs::write(dir.join(EFFECT_LEDGER_FILE), &grown[converted.len()..]).unwrap();
    let refused = convert_layout1(&dir, &OsStorage).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("does not start with the records of"),
        "{refused}"
    );
    // An empty layout-1 ledger converts to an empty ledger; none, to nothing.
    let (_empty, empty) = layout1_folder(b"");
    assert_eq!(
        convert_layout1(&empty, &OsStorage).unwrap(),
        Conversion::Converted {
            records: 0,
            torn_tail: None
        }
    );
    assert_eq!(std::fs::read(empty.join(EFFECT_LEDGER_FILE)).unwrap(), b"");
    assert_eq!(
        open_folder(&empty, Access::Write).unwrap().records().len(),
        0
    );
    assert_eq!(
        convert_layout1(&empty, &OsStorage).unwrap(),
        Conversion::AlreadyConverted { records: 0 }
    );
    std::fs::remove_file(empty.join(EFFECT_LEDGER_FILE)).unwrap();
    std::fs::remove_file(empty.join(LAYOUT1_EFFECTS_FILE)).unwrap();
    assert_eq!(
        convert_layout1(&empty, &OsStorage).unwrap(),
        Conversion::Nothing
    );
    assert!(!empty.join(EFFECT_LEDGER_FILE).exists());
}

#[test]
fn a_layout1_ledger_is_verified_before_anything_is_written() {
    let old = layout1_fixture();
    let lines = line_ranges(&old);
    // A torn tail a crashed layout-1 writer left is not converted and stays in the old file.
    let torn = [&old[..], &old[lines[1].clone()][..40]].concat();
    let (_temp, dir) = layout1_folder(&torn);
    assert_eq!(
        convert_layout1(&dir, &OsStorage).unwrap(),
        Conversion::Converted {
            records: 2,
            torn_tail: Some((old.len() as u64, 40))
        }
    );
    assert!(std::fs::read(dir.join(LAYOUT1_EFFECTS_FILE)).unwrap() == torn);
    // Damage in a complete line: refused where it is, nothing written.
    let mut rng = Rng::new(0x1A_70F1);
    for flip in 0..200 {
        let position = rng.below(old.len() - 1);
        let mut damaged = old.clone();
        damaged[position] ^= 1 << rng.below(8);
        if damaged[position] == b'\n' || damaged[position] == 0 {
            continue;
        }
        let (_temp, dir) = layout1_folder(&damaged);
        let index = lines
            .iter()
            .position(|line| line.contains(&position))
            .unwrap();
        let (path, line, byte) = corrupt_location(convert_layout1(&dir, &OsStorage));
        let what = format!("flip {flip} at {position}");
        assert_eq!(path, dir.join(LAYOUT1_EFFECTS_FILE), "{what}");
        assert_eq!(
            (line, byte),
            (index as u64 + 1, lines[index].start as u64),
            "{what}"
        );
        assert!(!dir.join(EFFECT_LEDGER_FILE).exists(), "{what}");
    }
    // A failed write commits nothing; running it again converts.
    for (operation, fault) in [
        (Operation::Append, Fault::TornOnce),
        (Operation::Sync, Fault::Once),
        (Operation::Rename, Fault::Once),
    ] {
        let (_temp, dir) = layout1_folder(&old);
        let storage = FaultyStorage::default();
        storage.fail(operation, fault);
        let error = convert_layout1(&dir, &storage).unwrap_err();
        assert_eq!(
            error.code(),
            StoreCode::DurabilityPrecommit,
            "{operation:?}"
        );
        assert!(!dir.join(EFFECT_LEDGER_FILE).exists(), "{operation:?}");
        assert_eq!(
            convert_layout1(&dir, &storage).unwrap(),
            Conversion::Converted {
                records: 2,
                torn_tail: None
            }
        );
        assert_eq!(
            open_folder(&dir, Access::ReadOnly).unwrap().records().len(),
            2
        );
    }
    // A failed folder sync: the first is the head's, written before the ledger, so the
    // ledger is not there yet and running it again converts it, with its head.
    let (_temp, dir) = layout1_folder(&old);
    let storage = FaultyStorage::default();
    storage.fail(Operation::SyncDir, Fault::Once);
    let error = convert_layout1(&dir, &storage).unwrap_err();
    assert_eq!(error.code(), StoreCode::DurabilityUnknownOrCommitted);
    assert!(!dir.join(EFFECT_LEDGER_FILE).exists());
    assert_eq!(
        convert_layout1(&dir, &storage).unwrap(),
        Conversion::Converted {
            records: 2,
            torn_tail: None
        }
    );
    assert_eq!(
        convert_layout1(&dir, &storage).unwrap(),
        Conversion::AlreadyConverted { records: 2 }
    );
    assert_eq!(
        open_folder(&dir, Access::ReadOnly).unwrap().records().len(),
        2
    );
}

#[test]
fn verify_checks_every_record_against_the_task_journal() {
    let fixture = Fixture::new(1);
    let check = |expected_problem: Option<&str>| {
        let verification = valp_store::verify::verify(&fixture.root).unwrap();
        let effects: Vec<_> = verification
            .checks
            .iter()
            .filter(|check| check.kind == "effects")
            .collect();
        assert_eq!(effects.len(), 1);
        assert_eq!(
            effects[0]
                .problem
                .as_ref()
                .map(ToString::to_string)
                .as_deref(),
            expected_problem
        );
    };
    // The walk task raised no obligation: the first record answers none.
    check(Some(&format!(
        "VALP-E-KERNEL-STORE-CORRUPT: {}:1: byte 0: the record answers no obligation of the \
         task journal",
        fixture.path.display()
    )));
    // Damage is reported with its line; a layout-1 ledger left unconverted is a problem.
    let mut damaged = fixture.full.clone();
    let second = fixture.lines[1].start;
    damaged[second + 30] ^= 4;
    std::fs::write(&fixture.path, &damaged).unwrap();
    let verification = valp_store::verify::verify(&fixture.root).unwrap();
    let problem = verification
        .checks
        .iter()
        .find(|check| check.kind == "effects")
        .and_then(|check| check.problem.as_ref())
        .unwrap();
    assert_eq!(
        corrupt_location::<()>(Err(clone_corrupt(problem))),
        (fixture.path.clone(), 2, second as u64)
    );
    std::fs::remove_file(&fixture.path).unwrap();
    let old = fixture.path.with_file_name(LAYOUT1_EFFECTS_FILE);
    std::fs::write(&old, layout1_fixture()).unwrap();
    check(Some(&unconverted(old.parent().unwrap())));
}

/// The refusal of a task folder `dir` that holds a layout-1 `effects.jsonl` and no ledger.
fn unconverted(dir: &Path) -> String {
    format!(
        "{}: a layout-1 effect ledger that was not converted (`valp upgrade` converts it); valp \
         neither reads it nor records effects beside it",
        dir.join(LAYOUT1_EFFECTS_FILE).display()
    )
}

/// A copy of a `Corrupt` error (errors are not `Clone`).
fn clone_corrupt(error: &StoreError) -> StoreError {
    match error {
        StoreError::Corrupt {
            path,
            line,
            byte,
            reason,
        } => StoreError::Corrupt {
            path: path.clone(),
            line: *line,
            byte: *byte,
            reason: reason.clone(),
        },
        other => panic!("{other:?}"),
    }
}

/// The refusal's ledger, head and anchored seq; panics on any other result.
fn head_mismatch<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
) -> (PathBuf, PathBuf, u64, String) {
    match result {
        Err(StoreError::HeadMismatch {
            path,
            head,
            seq,
            reason,
        }) => (path, head, seq, reason),
        other => panic!("expected a head mismatch, got {other:?}"),
    }
}

impl Fixture {
    /// Writes `ledger` and `head` (the head file's bytes) and checks that a reader, a writer
    /// and `verify` refuse them with a head mismatch, changing nothing and quarantining
    /// nothing. Returns the reader's refusal.
    fn check_head_refused(
        &self,
        ledger: &[u8],
        head: &[u8],
        what: &str,
    ) -> (PathBuf, PathBuf, u64, String) {
        std::fs::write(&self.path, ledger).unwrap();
        std::fs::write(head_path(&self.path), head).unwrap();
        let refusal = head_mismatch(open_effects(&self.root, Access::ReadOnly));
        head_mismatch(open_effects(&self.root, Access::Write));
        let verification = valp_store::verify::verify(&self.root).unwrap();
        let problem = verification
            .checks
            .iter()
            .find(|check| check.kind == "effects")
            .and_then(|check| check.problem.as_ref())
            .unwrap_or_else(|| panic!("{what}: verify finds no problem"));
        assert!(
            matches!(problem, StoreError::HeadMismatch { seq, .. } if *seq == refusal.2),
            "{what}: {problem}"
        );
        assert!(std::fs::read(&self.path).unwrap() == ledger, "{what}");
        assert!(
            std::fs::read(head_path(&self.path)).unwrap() == head,
            "{what}"
        );
        assert_eq!(
            quarantine_files(&self.root),
            Vec::<PathBuf>::new(),
            "{what}"
        );
        refusal
    }
}

#[test]
fn an_effect_ledger_cut_at_any_line_boundary_or_rolled_back_is_refused() {
    const LAST: usize = 99;
    let fixture = Fixture::new(LAST);
    let head = std::fs::read(head_path(&fixture.path)).unwrap();
    assert_eq!(
        valp_store::head::read(&head_path(&fixture.path)).unwrap(),
        valp_store::head::of_lines(&fixture.full),
        "the head names the last record"
    );
    let mut detected = 0;
    for records in 0..=LAST {
        let what = format!("cut to {records} records");
        let cut = fixture.ledger(records);
        let (path, head_file, seq, reason) = fixture.check_head_refused(cut, &head, &what);
        assert_eq!(
            (path, head_file, seq),
            (fixture.path.clone(), head_path(&fixture.path), LAST as u64),
            "{what}"
        );
        let last = match records.checked_sub(1) {
            Some(seq) => format!("line {records} (seq {seq})"),
            None => "no line".to_owned(),
        };
        assert_eq!(
            reason,
            format!(
                "the file's lines end with {last} at byte {}, the anchor names seq {LAST} ending \
                 at byte {}: truncated or rolled back",
                cut.len(),
                fixture.full.len()
            ),
            "{what}"
        );
        let run = valp_in(fixture.temp.path(), None, &["verify"]).unwrap();
        assert_eq!(run.code, Some(1), "{what}: {run:?}");
        assert!(
            run.stdout.contains(&format!(
                "PROBLEM VALP-E-KERNEL-STORE-CORRUPT: {}: does not match its head anchor {} \
                 (anchored seq {LAST})",
                fixture.path.display(),
                head_path(&fixture.path).display()
            )) && run.stdout.contains(
                "the effect ledger of task-1 does not match its head (`valp recover` does not \
                 cut effect ledgers): restore tasks/task-1/effect-ledger.jsonl"
            ),
            "{what}: {}",
            run.stdout
        );
        detected += 1;
    }
    eprintln!(
        "effect ledger truncations refused: {detected} of {} line boundaries",
        LAST + 1
    );
    assert_eq!(detected, LAST + 1);

    // Removed altogether, while its head names record 100.
    std::fs::remove_file(&fixture.path).unwrap();
    let (_, _, seq, _) = head_mismatch(open_effects(&fixture.root, Access::ReadOnly));
    assert_eq!(seq, LAST as u64);

    // Another ledger of the same length in its place (other outcomes, same obligations).
    let other = Fixture::new(0);
    std::fs::remove_file(&other.path).unwrap();
    std::fs::remove_file(head_path(&other.path)).unwrap();
    let mut writer = open_effects(&other.root, Access::Write).unwrap();
    for number in 0..=LAST {
        writer
            .append(&obligation(number), &outcome(number, "other"))
            .unwrap();
    }
    let replaced = std::fs::read(&other.path).unwrap();
    let (_, _, seq, reason) = fixture.check_head_refused(&replaced, &head, "another ledger");
    assert_eq!(seq, LAST as u64);
    assert!(reason.contains("rolled back or replaced"), "{reason}");

    // No head at all.
    std::fs::write(&fixture.path, &fixture.full).unwrap();
    std::fs::remove_file(head_path(&fixture.path)).unwrap();
    let refusal = open_effects(&fixture.root, Access::ReadOnly).unwrap_err();
    assert!(
        matches!(&refusal, StoreError::HeadMissing { path, head }
            if path == &fixture.path && head == &head_path(&fixture.path)),
        "{refusal}"
    );
    std::fs::write(head_path(&fixture.path), &head).unwrap();
    assert_eq!(
        open_effects(&fixture.root, Access::ReadOnly)
            .unwrap()
            .records()
            .len(),
        LAST + 1
    );
}

#[test]
fn every_flipped_byte_of_the_effect_ledger_head_is_refused() {
    let fixture = Fixture::new(RECORDS);
    let head = std::fs::read(head_path(&fixture.path)).unwrap();
    let mut rng = Rng::new(0xEFF_EAD);
    for position in 0..head.len() {
        let mask = u8::try_from(1 + rng.below(255)).unwrap();
        let mut damaged = head.clone();
        damaged[position] ^= mask;
        let what = format!("head byte {position} ^ {mask:#04x}");
        std::fs::write(head_path(&fixture.path), &damaged).unwrap();
        for access in [Access::ReadOnly, Access::Write] {
            let refusal = open_effects(&fixture.root, access).unwrap_err();
            assert_eq!(refusal.code(), StoreCode::Corrupt, "{what}: {refusal}");
        }
        assert!(
            std::fs::read(&fixture.path).unwrap() == fixture.full,
            "{what}"
        );
        assert!(
            std::fs::read(head_path(&fixture.path)).unwrap() == damaged,
            "{what}"
        );
    }
    eprintln!("head flips refused: {} of {}", head.len(), head.len());
    std::fs::write(head_path(&fixture.path), &head).unwrap();
    assert!(open_effects(&fixture.root, Access::ReadOnly).is_ok());
}

#[test]
fn a_lagging_effect_ledger_head_is_a_warning_caught_up_by_the_next_append() {
    let fixture = Fixture::new(RECORDS);
    // The head of record 4: the renames of the later heads were lost in a crash.
    let lagging = valp_store::head::of_lines(fixture.ledger(4)).unwrap();
    std::fs::write(head_path(&fixture.path), lagging.canonical_bytes()).unwrap();
    let mut writer = open_effects(&fixture.root, Access::Write).unwrap();
    assert_eq!(
        (writer.records().len(), writer.warnings()),
        (RECORDS + 1, &[][..])
    );
    let effects_warnings = || {
        valp_store::verify::verify(&fixture.root)
            .unwrap()
            .checks
            .into_iter()
            .find(|check| check.kind == "effects")
            .unwrap()
            .warnings
    };
    assert_eq!(
        effects_warnings(),
        [format!(
            "the head anchor names record 4 of {} (it lags after a crash; the next append \
             catches it up)",
            RECORDS + 1
        )]
    );
    record(&mut writer, RECORDS + 1);
    assert_eq!(effects_warnings(), Vec::<String>::new());
    let written = std::fs::read(&fixture.path).unwrap();
    assert_eq!(
        valp_store::head::read(&head_path(&fixture.path)).unwrap(),
        valp_store::head::of_lines(&written)
    );
    assert_eq!(writer.head().map(|head| head.seq), Some(RECORDS as u64 + 1));
}

#[test]
fn an_effect_ledger_cut_under_an_open_writer_is_not_appended_to() {
    let fixture = Fixture::new(RECORDS);
    let mut writer = open_effects(&fixture.root, Access::Write).unwrap();
    std::fs::write(&fixture.path, fixture.ledger(3)).unwrap();
    let (path, _, seq, reason) =
        head_mismatch(writer.append(&obligation(50), &outcome(50, "fixture")));
    assert_eq!((path, seq), (fixture.path.clone(), RECORDS as u64));
    assert_eq!(
        reason,
        format!(
            "the file is {} bytes, shorter than the {} bytes verified through seq {RECORDS}: \
             truncated under an open writer",
            fixture.ledger(3).len(),
            fixture.full.len()
        )
    );
    assert!(std::fs::read(&fixture.path).unwrap() == fixture.ledger(3));
}
