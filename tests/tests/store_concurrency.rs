//! Concurrent writers: four processes (`journal_appender contend`) propose 500 events each to
//! one journal, with expected revisions at, just ahead of or behind the current one. The
//! journal ends up one gapless chain of exactly the accepted entries, every line intact, the
//! State the walk's State, and every stale proposal refused as a state conflict. And a lock
//! whose holder is killed is free again at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use valp_kernel::ErrorCode;
use valp_kernel::canonical::decode_canonical;
use valp_kernel::json::{Number, Value};
use valp_store::journal::REJECTIONS_FILE;
use valp_store::lock::LockGuard;
use valp_store::{Access, ControlRoot, StoreError};
use valp_tests::child::Reporter;
use valp_tests::store::{
    History, TASK_ID, init_root, journal_path, line_ranges, lock_path, open_task,
};

const PROCESSES: u64 = 4;
const PROPOSALS: usize = 500;
const WALK_SEED: u64 = 31;
const WORK_ITEMS: usize = 4;

/// The tests here each load the machine with processes; they run one at a time so that one's
/// load does not distort the other's timing.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What the children answered, over all of them.
#[derive(Debug, Default)]
struct Answers {
    acked: Vec<u64>,
    duplicates: usize,
    rejected: usize,
    stale: usize,
}

impl Answers {
    /// Checks and counts one child's report of one proposal.
    fn record(&mut self, line: &str, context: &str) {
        let words: Vec<&str> = line.splitn(4, ' ').collect();
        match words.as_slice() {
            ["acked", seq, revision] => {
                assert_eq!(
                    seq, revision,
                    "{context}: an entry landed at the wrong revision"
                );
                self.acked.push(seq.parse().unwrap());
            }
            ["duplicate", kind] => {
                assert_ne!(*kind, "stale", "{context}: {line}");
                self.duplicates += 1;
            }
            ["rejected", kind, code, reason] => {
                assert_eq!(
                    *code,
                    ErrorCode::StateConflict.as_str(),
                    "{context}: {line}"
                );
                self.rejected += 1;
                if *kind == "stale" {
                    self.stale += 1;
                    let (proposed, current) =
                        stale_revisions(reason).unwrap_or_else(|| panic!("{context}: {line}"));
                    assert!(proposed < current, "{context}: {line}");
                }
            }
            _ => panic!("{context}: unexpected line {line:?}"),
        }
    }
}

/// The two revisions of `stale expected_revision E: the journal is at revision R`.
fn stale_revisions(reason: &str) -> Option<(i128, i128)> {
    let rest = reason.strip_prefix("stale expected_revision ")?;
    let (proposed, current) = rest.split_once(": the journal is at revision ")?;
    Some((proposed.parse().ok()?, current.parse().ok()?))
}

/// A fresh control root holding the (empty) walk task.
fn walk_task() -> (tempfile::TempDir, ControlRoot) {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    root.create_task(History::new(WALK_SEED, WORK_ITEMS).genesis())
        .unwrap();
    (temp, root)
}

/// `journal_appender MODE PATH ARGS…`.
fn appender(mode: &str, path: &Path, args: &[String]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_journal_appender"));
    command.arg(mode).arg(path).args(args);
    command
}

#[test]
fn concurrent_writers_build_one_gapless_chain() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let started = Instant::now();
    let (_temp, root) = walk_task();
    let mut history = History::new(WALK_SEED, WORK_ITEMS);
    let mut children: Vec<Reporter> = (1..=PROCESSES)
        .map(|process| {
            let args = [WALK_SEED, WORK_ITEMS as u64, PROPOSALS as u64, process];
            let mut command = appender(
                "contend",
                root.layout().root(),
                &args.map(|number| number.to_string()),
            );
            Reporter::spawn(&mut command, format!("writer {process}"))
        })
        .collect();
    // Start them together, once all have opened the journal.
    for child in &mut children {
        assert_eq!(child.expect_line(), "ready");
    }
    for child in &mut children {
        child.send("go");
    }
    let mut answers = Answers::default();
    for (process, child) in children.iter_mut().enumerate() {
        let context = format!("writer {}", process + 1);
        let lines = child.remaining_lines();
        assert!(child.wait().success(), "{context} failed");
        assert_eq!(
            lines.len(),
            PROPOSALS + 1,
            "{context}: one line per proposal"
        );
        assert_eq!(lines[PROPOSALS], "done", "{context}");
        let first_ack = answers.acked.len();
        for line in &lines[..PROPOSALS] {
            answers.record(line, &context);
        }
        let own = &answers.acked[first_ack..];
        assert!(
            own.windows(2).all(|pair| pair[0] < pair[1]),
            "{context}: its entries are in order: {own:?}"
        );
    }

    // Exactly the acknowledged entries, at revisions 1..=N without gaps or repeats.
    let mut acked = answers.acked.clone();
    acked.sort_unstable();
    let entries = acked.len() as u64;
    assert_eq!(acked, (1..=entries).collect::<Vec<_>>(), "{answers:?}");
    // Every line intact and canonical, numbered in order.
    let path = journal_path(&root);
    let bytes = std::fs::read(&path).unwrap();
    let lines = line_ranges(&bytes);
    assert_eq!(lines.last().map(|line| line.end), Some(bytes.len()));
    assert_eq!(lines.len() as u64, entries + 1);
    for (index, range) in lines.iter().enumerate() {
        let value = decode_canonical(&bytes[range.clone()])
            .unwrap_or_else(|error| panic!("line {}: {error}", index + 1));
        assert_eq!(
            value.as_object().and_then(|line| line.get("seq")),
            Some(&Value::Number(Number::Int(index as i128)))
        );
    }
    // The journal verifies, and is the walk.
    for access in [Access::ReadOnly, Access::Write] {
        let journal = open_task(&root, access).unwrap();
        assert_eq!(journal.warnings(), []);
        assert_eq!(journal.len(), entries);
        // The State, whether opened from a snapshot (no history held) or from the genesis.
        let expected = history.state_after(usize::try_from(entries).unwrap());
        assert_eq!(journal.live().body(), &expected.body);
        assert_eq!(
            journal.live().state_digest(),
            valp_kernel::live::LiveState::new(expected).state_digest()
        );
    }
    // Every refusal was logged, one intact line each.
    let rejections = std::fs::read(root.layout().task_dir(TASK_ID).join(REJECTIONS_FILE)).unwrap();
    let logged = line_ranges(&rejections);
    assert_eq!(logged.last().map(|line| line.end), Some(rejections.len()));
    assert_eq!(logged.len(), answers.rejected);
    for range in logged {
        decode_canonical(&rejections[range]).unwrap();
    }
    eprintln!(
        "{entries} entries, {} duplicates, {} refusals ({} stale) in {:.1?}",
        answers.duplicates,
        answers.rejected,
        answers.stale,
        started.elapsed()
    );
    assert!(answers.stale > 0 && entries > 0, "{answers:?}");
}

#[test]
fn the_lock_of_a_killed_holder_is_free_within_100_ms() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let (_temp, root) = walk_task();
    let lock = lock_path(&root);
    for round in 0..5 {
        let mut command = appender("hold-lock", &lock, &[]);
        let mut holder = Reporter::spawn(&mut command, format!("lock holder {round}"));
        assert_eq!(holder.expect_line(), "locked");
        match LockGuard::acquire(&lock, Duration::from_millis(20)) {
            Err(StoreError::LockTimeout { path, .. }) => assert_eq!(path, lock),
            other => panic!("round {round}: the lock is not held: {other:?}"),
        }
        let killed = Instant::now();
        holder.kill();
        let guard = LockGuard::acquire(&lock, Duration::from_secs(10)).unwrap();
        let waited = killed.elapsed();
        assert!(
            waited < Duration::from_millis(100),
            "round {round}: the lock was free only {waited:?} after its holder was killed"
        );
        assert_eq!(guard.path(), lock);
        drop(guard);
        assert!(!holder.wait().success());
    }
}

#[test]
fn a_reader_racing_a_writer_never_sees_damage() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner);
    let (_temp, root) = walk_task();
    let args = [WALK_SEED, WORK_ITEMS as u64, 300];
    let mut command = appender(
        "append",
        root.layout().root(),
        &args.map(|number| number.to_string()),
    );
    let mut writer = Reporter::spawn(&mut command, "writer");
    assert_eq!(writer.expect_line(), "ready 0");
    let mut reader = open_task(&root, Access::ReadOnly).unwrap();
    let mut refreshes = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while reader.len() < 300 {
        assert!(
            Instant::now() < deadline,
            "the writer stalled at {}",
            reader.len()
        );
        if let Err(error) = reader.refresh() {
            panic!("refresh {refreshes}, at {} entries: {error}", reader.len());
        }
        refreshes += 1;
    }
    assert_eq!(writer.remaining_lines().len(), 300);
    assert!(writer.wait().success());
}
