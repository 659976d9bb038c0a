//! The head anchor and the torn-tail rule together: a journal that was damaged, cut or rolled
//! back is refused, never repaired, whatever byte was hit.
//!
//! - Byte flips (XOR with a seeded non-zero mask) at every byte of a journal and of its head,
//!   the complete LF-terminated last line included: each is refused by a reader, by a writer
//!   and by `verify`, the file is byte-identical afterwards and nothing is quarantined. The
//!   suite flips every byte of the last two lines, of the head and 1,500 seeded others; the
//!   `--ignored` long version (`cargo test -p valp-tests --test store_anchor -- --ignored
//!   --nocapture`) flips every byte of the journal (at least 10,000) and prints the count.
//! - Truncation after every line of a 300-entry journal, and a whole other history in its
//!   place: refused with `HeadMismatch` naming the journal, its head and seq 300.
//! - A head that lags (a crash between the line's fsync and the head's rename) is not damage:
//!   the journal opens and the next append catches the head up.
//! - `valp recover` says what it would keep and cut and how many acknowledged entries that
//!   loses, asks for the task id, keeps byte-for-byte copies, and leaves a journal that verifies.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use valp_kernel::canonical::Canonical;
use valp_store::head::{self, Head};
use valp_store::verify::verify;
use valp_store::{Access, ControlRoot, StoreError};
use valp_tests::cli::valp_in;
use valp_tests::store::{
    History, Rng, append_step, create_journal, init_root, journal_path, line_ranges, open_task,
    quarantine_files,
};

const WORK_ITEMS: usize = 4;

/// A task journal of `entries` entries in a fresh root.
struct Anchored {
    temp: tempfile::TempDir,
    root: ControlRoot,
    history: History,
    path: PathBuf,
    head_path: PathBuf,
    journal: Vec<u8>,
    head: Vec<u8>,
}

impl Anchored {
    fn new(seed: u64, entries: usize) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = init_root(temp.path());
        let mut history = History::new(seed, WORK_ITEMS);
        drop(create_journal(&root, &mut history, entries));
        let path = journal_path(&root);
        let head_path = head::head_path(&path);
        let journal = std::fs::read(&path).unwrap();
        let head = std::fs::read(&head_path).unwrap();
        assert_eq!(
            head::read(&head_path).unwrap(),
            head::of_lines(&journal),
            "the head names the last line"
        );
        Self {
            temp,
            root,
            history,
            path,
            head_path,
            journal,
            head,
        }
    }

    /// Writes `journal` and `head` in place of the good ones and checks that a reader, a
    /// writer and `verify` refuse them, that nothing changed and nothing was quarantined.
    /// Returns the reader's refusal.
    fn check_refused(&self, journal: &[u8], head: &[u8], what: &str) -> StoreError {
        std::fs::write(&self.path, journal).unwrap();
        std::fs::write(&self.head_path, head).unwrap();
        let refusal = match open_task(&self.root, Access::ReadOnly) {
            Ok(opened) => panic!("{what}: a reader opens it: {:?}", opened.warnings()),
            Err(error) => error,
        };
        if let Ok(opened) = open_task(&self.root, Access::Write) {
            panic!("{what}: a writer opens it: {:?}", opened.warnings());
        }
        let verification = verify(&self.root).unwrap();
        assert_eq!(verification.problems(), 1, "{what}");
        assert!(
            std::fs::read(&self.path).unwrap() == journal,
            "{what}: the journal was changed"
        );
        assert!(
            std::fs::read(&self.head_path).unwrap() == head,
            "{what}: the head was changed"
        );
        assert_eq!(
            quarantine_files(&self.root),
            Vec::<PathBuf>::new(),
            "{what}"
        );
        refusal
    }

    fn restore(&self) {
        std::fs::write(&self.path, &self.journal).unwrap();
        std::fs::write(&self.head_path, &self.head).unwrap();
    }
}

/// Flips the byte at each of `positions` of the journal (`journal: true`) or its head with a
/// seeded non-zero mask and checks every flip is refused. Returns how many were checked.
fn flip_all(fixture: &Anchored, positions: &[usize], journal: bool, rng: &mut Rng) -> usize {
    for &position in positions {
        let mask = u8::try_from(1 + rng.below(255)).unwrap();
        let (mut damaged_journal, mut damaged_head) =
            (fixture.journal.clone(), fixture.head.clone());
        let target = if journal {
            &mut damaged_journal
        } else {
            &mut damaged_head
        };
        target[position] ^= mask;
        let what = format!(
            "{} byte {position} ^ {mask:#04x}",
            if journal { "journal" } else { "head" }
        );
        let refusal = fixture.check_refused(&damaged_journal, &damaged_head, &what);
        assert_eq!(
            refusal.code(),
            valp_store::StoreCode::Corrupt,
            "{what}: {refusal}"
        );
    }
    fixture.restore();
    positions.len()
}

#[test]
fn flipped_bytes_in_the_last_lines_the_head_and_anywhere_are_refused() {
    let fixture = Anchored::new(31, 12);
    let lines = line_ranges(&fixture.journal);
    let last_two = lines[lines.len() - 2].start..fixture.journal.len();
    let mut rng = Rng::new(0xF11B);
    let mut positions: Vec<usize> = last_two.clone().collect();
    positions.extend((0..1_500).map(|_| rng.below(last_two.start)));
    let journal_flips = flip_all(&fixture, &positions, true, &mut rng);
    let head_positions: Vec<usize> = (0..fixture.head.len()).collect();
    let head_flips = flip_all(&fixture, &head_positions, false, &mut rng);
    eprintln!(
        "byte flips refused: {journal_flips} in the journal ({} in its last two lines), \
         {head_flips} in its head",
        last_two.len()
    );
    assert!(journal_flips > 3_000, "{journal_flips}");
    // `valp verify` itself, on flips in the complete last line.
    let last = lines[lines.len() - 1].clone();
    for position in (last.start..last.end).step_by(last.len() / 20) {
        let mut damaged = fixture.journal.clone();
        damaged[position] ^= 0x20;
        std::fs::write(&fixture.path, &damaged).unwrap();
        let run = valp_in(fixture.temp.path(), None, &["verify"]).unwrap();
        assert_eq!(run.code, Some(1), "byte {position}: {run:?}");
        assert!(
            run.stdout.ends_with(
                "to see what can be kept of task-1: valp recover task-1\nverify: 1 journals \
                 ok, 1 problems\n"
            ),
            "byte {position}: {}",
            run.stdout
        );
        assert!(std::fs::read(&fixture.path).unwrap() == damaged);
    }
    fixture.restore();
    let reopened = open_task(&fixture.root, Access::ReadOnly).unwrap();
    assert_eq!((reopened.len(), reopened.warnings()), (12, &[][..]));
}

#[test]
#[ignore = "long: flips every byte of a journal of at least 10,000 bytes (a few minutes)"]
fn every_flipped_byte_of_a_journal_is_refused() {
    let fixture = Anchored::new(32, 12);
    assert!(
        fixture.journal.len() >= 10_000,
        "{} bytes",
        fixture.journal.len()
    );
    let mut rng = Rng::new(0xA11);
    let positions: Vec<usize> = (0..fixture.journal.len()).collect();
    let flips = flip_all(&fixture, &positions, true, &mut rng);
    eprintln!("byte flips refused: {flips} of {flips} journal positions");
    assert_eq!(flips, fixture.journal.len());
}

/// The refusal's journal, head and anchored seq; panics on any other error.
fn mismatch(error: &StoreError) -> (&Path, &Path, u64, &str) {
    match error {
        StoreError::HeadMismatch {
            path,
            head,
            seq,
            reason,
        } => (path, head, *seq, reason),
        other => panic!("expected a head mismatch, got {other}"),
    }
}

#[test]
fn a_journal_cut_after_any_line_or_rolled_back_is_refused() {
    const ENTRIES: usize = 300;
    let fixture = Anchored::new(33, ENTRIES);
    let lines = line_ranges(&fixture.journal);
    assert_eq!(lines.len(), ENTRIES + 1);
    let mut detected = 0;
    for (index, line) in lines[..ENTRIES].iter().enumerate() {
        let what = format!("cut after line {}", index + 1);
        let refusal = fixture.check_refused(&fixture.journal[..line.end], &fixture.head, &what);
        let (path, head, seq, reason) = mismatch(&refusal);
        assert_eq!(
            (path, head, seq),
            (
                fixture.path.as_path(),
                fixture.head_path.as_path(),
                ENTRIES as u64
            ),
            "{what}"
        );
        assert!(
            reason.starts_with(&format!(
                "the file's lines end with line {} (seq {index}) at byte {}, the anchor \
                 names seq {ENTRIES}",
                index + 1,
                line.end
            )),
            "{what}: {reason}"
        );
        detected += 1;
    }
    eprintln!("truncations refused: {detected} of {ENTRIES} line boundaries");
    assert_eq!(detected, ENTRIES);

    // Another history of the same length in its place (the genesis is the same task's).
    let other = Anchored::new(34, ENTRIES);
    let refusal = fixture.check_refused(&other.journal, &fixture.head, "another history");
    let (_, _, seq, reason) = mismatch(&refusal);
    assert_eq!(seq, ENTRIES as u64);
    assert!(reason.contains("rolled back or replaced"), "{reason}");

    // No head at all.
    std::fs::remove_file(&fixture.head_path).unwrap();
    let refusal = open_task(&fixture.root, Access::ReadOnly).unwrap_err();
    assert!(
        matches!(&refusal, StoreError::HeadMissing { path, head } if path == &fixture.path && head == &fixture.head_path),
        "{refusal}"
    );
    fixture.restore();
}

#[test]
fn a_head_that_lags_is_caught_up_by_the_next_append() {
    let mut fixture = Anchored::new(35, 6);
    let lines = line_ranges(&fixture.journal);
    // The head of entry 4: the rename of the heads of entries 5 and 6 was lost in a crash.
    let lagging = head::of_lines(&fixture.journal[..lines[4].end]).unwrap();
    std::fs::write(&fixture.head_path, lagging.canonical_bytes()).unwrap();
    let mut writer = open_task(&fixture.root, Access::Write).unwrap();
    assert_eq!((writer.len(), writer.warnings()), (6, &[][..]));
    let verification = verify(&fixture.root).unwrap();
    assert_eq!(verification.problems(), 0);
    let journal_check = verification
        .checks
        .iter()
        .find(|check| check.kind == "journal")
        .unwrap();
    assert_eq!(
        journal_check.warnings,
        [
            "the head anchor names entry 4 of 6 (it lags after a crash; the next append catches \
          it up)"
        ]
    );
    append_step(&mut writer, &mut fixture.history, 6);
    let verification = verify(&fixture.root).unwrap();
    assert!(
        verification
            .checks
            .iter()
            .all(|check| check.warnings.is_empty())
    );
    let written = std::fs::read(&fixture.path).unwrap();
    assert_eq!(
        head::read(&fixture.head_path).unwrap(),
        head::of_lines(&written)
    );
    assert_eq!(head::of_lines(&written).map(|head| head.seq), Some(7));
}

#[test]
fn a_damaged_complete_last_line_past_a_lagging_head_is_still_refused() {
    // Without the head's protection (it names entry 5, as after a crash), a complete,
    // LF-terminated last line is damage whenever a crash cannot explain it: no NUL bytes.
    let fixture = Anchored::new(37, 6);
    let lines = line_ranges(&fixture.journal);
    let lagging = head::of_lines(&fixture.journal[..lines[5].end])
        .unwrap()
        .canonical_bytes();
    let last = lines[6].clone();
    let mut rng = Rng::new(0x1A57);
    let mut refused = 0;
    for position in last.start..last.end - 1 {
        let mut damaged = fixture.journal.clone();
        damaged[position] ^= u8::try_from(1 + rng.below(255)).unwrap();
        if damaged[position] == 0 || damaged[position] == b'\n' {
            continue; // a NUL byte is what a crash leaves; an LF splits the line
        }
        let what = format!("last line byte {position}");
        let refusal = fixture.check_refused(&damaged, &lagging, &what);
        assert!(
            matches!(&refusal, StoreError::Corrupt { line: 7, .. }),
            "{what}: {refusal}"
        );
        refused += 1;
    }
    eprintln!("damaged last lines refused past a lagging head: {refused}");
    assert!(refused > 900, "{refused}");
}

#[test]
fn a_journal_cut_under_an_open_writer_is_not_appended_to() {
    let mut fixture = Anchored::new(38, 6);
    let mut writer = open_task(&fixture.root, Access::Write).unwrap();
    let lines = line_ranges(&fixture.journal);
    let cut = &fixture.journal[..lines[4].end];
    std::fs::write(&fixture.path, cut).unwrap();
    let step = fixture.history.step(6).clone();
    let refusal = writer.append(&step.event, &step.evidence_set).unwrap_err();
    let (path, _, seq, reason) = mismatch(&refusal);
    assert_eq!((path, seq), (fixture.path.as_path(), 6));
    assert!(
        reason.contains("truncated under an open writer"),
        "{reason}"
    );
    assert!(
        std::fs::read(&fixture.path).unwrap() == cut,
        "nothing was appended"
    );
    assert!(matches!(
        writer.append(&step.event, &step.evidence_set),
        Err(StoreError::Poisoned { .. })
    ));
}

/// A journal of 10 entries whose 7th line has a flipped byte.
fn damaged_at_line_7() -> (Anchored, Vec<u8>) {
    let fixture = Anchored::new(36, 10);
    let lines = line_ranges(&fixture.journal);
    let mut damaged = fixture.journal.clone();
    damaged[lines[6].start + 40] ^= 0x01;
    std::fs::write(&fixture.path, &damaged).unwrap();
    (fixture, damaged)
}

#[test]
fn recovery_says_what_it_cuts_keeps_copies_and_leaves_a_journal_that_verifies() {
    let (mut fixture, damaged) = damaged_at_line_7();
    let lines = line_ranges(&fixture.journal);
    let plan = valp_store::recover::task_plan(&fixture.root, valp_tests::store::TASK_ID).unwrap();
    assert!(plan.needed());
    assert_eq!(plan.keep_entries, 5);
    assert_eq!(plan.keep_bytes, lines[5].end as u64);
    assert_eq!(plan.cut_lines, 5);
    assert_eq!(plan.acknowledged_lost(), 5);
    let described = plan.describe().join("\n");
    for needle in [
        "refused: VALP-E-KERNEL-STORE-CORRUPT",
        &format!("keep: entries 1..=5 (bytes 0..{})", lines[5].end),
        &format!(
            "cut: bytes {}..{} ({} bytes, 5 complete lines), because \
             VALP-E-KERNEL-STORE-CORRUPT",
            lines[5].end,
            damaged.len(),
            damaged.len() - lines[5].end
        ),
        "LOST: 5 acknowledged entries (seq 6..=10)",
    ] {
        assert!(described.contains(needle), "{needle:?} in\n{described}");
    }

    // Through the CLI: a wrong answer changes nothing; the task id recovers.
    let project = fixture.temp.path();
    let refused = valp_answering(project, &["recover", "task-1"], "yes\n");
    assert_eq!(refused.code, Some(2), "{refused:?}");
    assert!(
        refused.stderr.contains("not confirmed") && refused.stderr.contains("not changed"),
        "{refused:?}"
    );
    assert!(std::fs::read(&fixture.path).unwrap() == damaged);
    let done = valp_answering(project, &["recover", "task-1"], "task-1\n");
    assert_eq!(done.code, Some(0), "{done:?}");
    assert!(
        done.stdout.contains("LOST: 5 acknowledged entries"),
        "{}",
        done.stdout
    );
    assert!(
        done.stdout
            .contains("recovered: 5 entries, anchored at seq 5"),
        "{}",
        done.stdout
    );
    let backups = quarantine_files(&fixture.root);
    let contents: Vec<Vec<u8>> = backups
        .iter()
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    assert!(
        contents.contains(&damaged),
        "the damaged journal is kept: {backups:?}"
    );
    assert!(
        contents.contains(&fixture.head),
        "the old head is kept: {backups:?}"
    );
    assert!(std::fs::read(&fixture.path).unwrap() == fixture.journal[..lines[5].end]);
    assert_eq!(
        head::read(&fixture.head_path).unwrap(),
        Some(Head {
            seq: 5,
            entry_digest: head::of_lines(&fixture.journal[..lines[5].end])
                .unwrap()
                .entry_digest,
            length: lines[5].end as u64,
        })
    );
    let verified = valp_in(project, None, &["verify"]).unwrap();
    assert_eq!(verified.code, Some(0), "{verified:?}");
    let mut writer = open_task(&fixture.root, Access::Write).unwrap();
    append_step(&mut writer, &mut fixture.history, 5);
    let again = valp_in(project, None, &["recover", "task-1", "--yes"]).unwrap();
    assert_eq!(again.code, Some(0), "{again:?}");
    assert!(
        again.stdout.contains("nothing to recover"),
        "{}",
        again.stdout
    );
}

#[test]
fn recovery_of_a_truncated_journal_or_a_missing_head_reanchors_what_is_there() {
    let fixture = Anchored::new(39, 8);
    let lines = line_ranges(&fixture.journal);
    let cut = fixture.journal[..lines[5].end].to_vec();
    std::fs::write(&fixture.path, &cut).unwrap();
    let plan = valp_store::recover::task_plan(&fixture.root, valp_tests::store::TASK_ID).unwrap();
    assert_eq!(
        (
            plan.keep_entries,
            plan.keep_bytes,
            plan.cut_lines,
            plan.acknowledged_lost()
        ),
        (5, cut.len() as u64, 0, 3)
    );
    let described = plan.describe().join("\n");
    assert!(described.contains("cut: nothing"), "{described}");
    assert!(
        described.contains("LOST: 3 acknowledged entries (seq 6..=8)"),
        "{described}"
    );
    // A plan is carried out only on the journal it was made for.
    let mut stale = plan.clone();
    stale.keep_bytes += 1;
    let refused = valp_store::recover::recover_task(&fixture.root, "task-1", &stale).unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("changed since the plan was shown"),
        "{refused}"
    );
    let recovered = valp_store::recover::recover_task(&fixture.root, "task-1", &plan).unwrap();
    assert_eq!(recovered.head.map(|head| head.seq), Some(5));
    assert!(std::fs::read(&fixture.path).unwrap() == cut);
    assert_eq!(verify(&fixture.root).unwrap().problems(), 0);

    std::fs::remove_file(&fixture.head_path).unwrap();
    let plan = valp_store::recover::task_plan(&fixture.root, "task-1").unwrap();
    assert!(
        plan.refusal.as_deref().unwrap().contains("is missing"),
        "{plan:?}"
    );
    assert_eq!((plan.keep_entries, plan.acknowledged_lost()), (5, 0));
    valp_store::recover::recover_task(&fixture.root, "task-1", &plan).unwrap();
    assert_eq!(verify(&fixture.root).unwrap().problems(), 0);
}

#[test]
fn the_ledger_is_recovered_with_recover_ledger() {
    let fixture = Anchored::new(40, 1);
    let ledger = fixture
        .root
        .layout()
        .installation_dir()
        .join("journal.jsonl");
    let bytes = std::fs::read(&ledger).unwrap();
    let lines = line_ranges(&bytes);
    std::fs::write(&ledger, &bytes[..lines[0].end]).unwrap();
    let project = fixture.temp.path();
    let refused = valp_in(project, None, &["verify"]).unwrap();
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stdout.contains("ledger    installation"),
        "{}",
        refused.stdout
    );
    let recovered = valp_answering(project, &["recover", "--ledger"], "installation\n");
    assert_eq!(recovered.code, Some(0), "{recovered:?}");
    assert!(
        recovered
            .stdout
            .contains("LOST: 1 acknowledged entries (seq 1..=1)"),
        "{}",
        recovered.stdout
    );
    assert!(
        valp_in(project, None, &["verify"])
            .unwrap()
            .stdout
            .contains("0 problems")
    );
}

#[test]
fn a_task_whose_folder_is_hashed_is_recovered_by_the_name_verify_prints() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    let demo = valp_in(dir, None, &["demo", "--task", "a b", "--entries", "6"]).unwrap();
    assert_eq!(demo.code, Some(0), "{demo:?}");
    let folder = valp_store::layout::task_folder_name("a b");
    let journal = dir.join(".valp/tasks").join(&folder).join("journal.jsonl");
    let bytes = std::fs::read(&journal).unwrap();
    let lines = line_ranges(&bytes);
    std::fs::write(&journal, &bytes[..lines[4].end]).unwrap();
    let verified = valp_in(dir, None, &["verify"]).unwrap();
    let hint = format!("to see what can be kept of {folder}: valp recover {folder}\n");
    assert!(verified.stdout.contains(&hint), "{}", verified.stdout);
    let recovered = valp_in(dir, None, &["recover", &folder, "--yes"]).unwrap();
    assert_eq!(recovered.code, Some(0), "{recovered:?}");
    assert!(
        recovered
            .stdout
            .contains("LOST: 2 acknowledged entries (seq 5..=6)"),
        "{}",
        recovered.stdout
    );
    let again = valp_in(dir, None, &["recover", "a b", "--yes"]).unwrap();
    assert!(again.stdout.contains("nothing to recover"), "{again:?}");
}

/// `valp args…` in `project` with `stdin` as its input.
fn valp_answering(project: &Path, args: &[&str], stdin: &str) -> valp_tests::cli::Run {
    let tmux = tempfile::tempdir().unwrap();
    valp_tests::cli::valp_answering(project, tmux.path(), args, stdin).unwrap()
}
