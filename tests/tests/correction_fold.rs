//! The correction cycle's fold carried forward (issue 20): `Fold::advance` reads only the lines
//! appended since the line it stands after, and `correction-fold.json` (`fold_cache`) carries it
//! across processes, never trusted.
//!
//! - A fold resumed (in process, or from the file) equals the fold from the genesis, over seeded
//!   walks with correction rounds, and reads only the suffix (counted entries); a fold that holds
//!   only its open and newest rounds folds on exactly.
//! - A file bound to a line `valp recover` cut, a tampered file, and a file of another task or
//!   another journal are not used: the fold starts from the genesis with the same answer, and
//!   `valp verify` names the file with `VALP-E-STORE-SNAPSHOT-MISMATCH`.
//! - `valp task status` reads the file and writes nothing; the driver's and the console's fold
//!   (`CycleFold`) writes it and starts from it; `valp recover` sets aside a file bound after
//!   its cut.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use valp_runtime::audit::cycle_file::{CycleFold, summarized};
use valp_runtime::audit::fold::Fold;
use valp_runtime::audit::fold_cache;
use valp_runtime::audit::fold_check::{FoldCheck, FoldChecks};
use valp_store::ControlRoot;
use valp_store::verify::verify_observed;
use valp_tests::cli::valp_in;
use valp_tests::schemas::{errors, read_json, validator};
use valp_tests::store::{History, TASK_ID, append_step, create_journal, init_root, journal_path};

const WORK_ITEMS: usize = 4;

fn task_dir(root: &ControlRoot) -> PathBuf {
    journal_path(root).parent().unwrap().to_owned()
}

/// The fold of the whole journal in `dir`, from the genesis.
fn genesis_fold(dir: &Path) -> Fold {
    let mut fold = Fold::genesis();
    let advanced = fold.advance(&dir.join("journal.jsonl")).unwrap();
    assert_eq!(advanced.restarted, None);
    fold
}

/// A root whose walk task (`seed`) has `entries` entries.
fn walk_root(temp: &Path, seed: u64, entries: usize) -> (ControlRoot, History) {
    let root = init_root(temp);
    let mut history = History::new(seed, WORK_ITEMS);
    drop(create_journal(&root, &mut history, entries));
    (root, history)
}

/// `valp verify`'s checks of the root's `correction-fold.json` files.
fn fold_checks(root: &ControlRoot) -> Vec<Option<FoldCheck>> {
    let mut checks = FoldChecks::default();
    let verification = verify_observed(root, &mut |dir| checks.observer(dir)).unwrap();
    assert_eq!(verification.problems(), 0);
    checks.results(|_| true)
}

#[test]
fn a_resumed_fold_is_the_genesis_fold_and_reads_only_the_suffix() {
    let owners = BTreeMap::from([("wi-1".to_owned(), "process".to_owned())]);
    let mut rounds = 0;
    for seed in [1, 7, 13, 21] {
        let temp = tempfile::tempdir().unwrap();
        let root = init_root(temp.path());
        let mut history = History::new(seed, WORK_ITEMS);
        let mut journal = create_journal(&root, &mut history, 0);
        let dir = task_dir(&root);
        let path = dir.join("journal.jsonl");
        let mut kept = Fold::genesis();
        let mut written: Option<Vec<u8>> = None;
        let mut partial: Option<Fold> = None;
        let mut at = 0;
        for cut in [1, 37, 120, 121, 121, 260] {
            for index in at..cut {
                append_step(&mut journal, &mut history, index);
            }
            let appended = (cut - at) as u64;
            let genesis = genesis_fold(&dir);
            // In process: only the lines appended since.
            let advanced = kept.advance(&path).unwrap();
            assert_eq!((advanced.entries, advanced.restarted), (appended, None));
            assert_eq!(kept, genesis, "seed {seed}, cut {cut}");
            assert_eq!(
                kept.cycle(TASK_ID, &owners),
                genesis.cycle(TASK_ID, &owners)
            );
            // Across processes: the file written at the last cut, resumed.
            if let Some(bytes) = written.take() {
                let mut resumed = fold_cache::decode(&bytes, TASK_ID).unwrap();
                let advanced = resumed.advance(&path).unwrap();
                assert_eq!((advanced.entries, advanced.restarted), (appended, None));
                assert_eq!(resumed, genesis, "seed {seed}, cut {cut}");
            }
            // A fold holding only its open rounds and the newest two folds on exactly.
            if let Some(mut trimmed) = partial.take() {
                trimmed.advance(&path).unwrap();
                assert_eq!(
                    trimmed.deriver().kept(2),
                    genesis.deriver().kept(2),
                    "seed {seed}, cut {cut}"
                );
                assert_eq!(trimmed.deriver().summary(), genesis.deriver().summary());
            }
            written = fold_cache::encode(TASK_ID, &kept);
            let at_line = kept.at().unwrap().clone();
            partial = Some(Fold::resumed(kept.deriver().kept(2), at_line));
            at = cut;
        }
        rounds += genesis_fold(&dir).deriver().opened();
    }
    assert!(rounds >= 8, "the walks have correction rounds: {rounds}");
}

#[test]
fn the_file_validates_against_its_schema_and_the_driver_fold_starts_from_it() {
    let temp = tempfile::tempdir().unwrap();
    let (root, mut history) = walk_root(temp.path(), 7, 90);
    let dir = task_dir(&root);
    let none = BTreeMap::new();
    let mut first = CycleFold::default();
    let cycle = first.refresh(&dir, TASK_ID, &none).unwrap();
    assert_eq!(first.last_read(), 90);
    assert_eq!(cycle, genesis_fold(&dir).cycle(TASK_ID, &none));
    let file = fold_cache::path(&dir);
    let schema = validator("console/correction-fold.schema.json");
    let good = read_json(&file);
    assert_eq!(errors(&schema, &good), Vec::<String>::new());
    assert_eq!(
        (good["seq"].as_u64(), good["task_id"].as_str()),
        (Some(90), Some(TASK_ID))
    );
    let mut bad = good.clone();
    bad["rounds"][0]["status"] = "escalated".into();
    assert!(!schema.is_valid(&bad));
    bad = good.clone();
    bad["owner"] = "process".into();
    assert!(!schema.is_valid(&bad));

    // Another process: it starts from the file and reads only what was appended since.
    let mut journal = root.open_task(TASK_ID, valp_store::Access::Write).unwrap();
    for index in 90..100 {
        append_step(&mut journal, &mut history, index);
    }
    drop(journal);
    let mut second = CycleFold::default();
    let cycle = second.refresh(&dir, TASK_ID, &none).unwrap();
    assert_eq!(second.last_read(), 10);
    assert_eq!(cycle, genesis_fold(&dir).cycle(TASK_ID, &none));
    assert_eq!(second.refresh(&dir, TASK_ID, &none).unwrap(), cycle);
    assert_eq!(second.last_read(), 0);
    assert_eq!(fold_checks(&root)[0].as_ref().unwrap().problem, None);
}

#[test]
fn a_file_bound_to_a_line_recover_cut_is_not_used() {
    let temp = tempfile::tempdir().unwrap();
    let (root, _) = walk_root(temp.path(), 13, 80);
    let dir = task_dir(&root);
    fold_cache::write(&dir, TASK_ID, &genesis_fold(&dir)).unwrap();
    let length = fold_cache::load(&dir, TASK_ID)
        .unwrap()
        .at()
        .unwrap()
        .length;
    // Line 61 is damaged; the store's recover keeps the 60 entries before it (and leaves the
    // file: `valp recover` sets it aside, below).
    damage_line_61(&root);
    let path = journal_path(&root);
    let plan = valp_store::recover::task_plan(&root, TASK_ID).unwrap();
    assert_eq!(plan.keep_entries, 60);
    valp_store::recover::recover_task(&root, TASK_ID, &plan).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();

    let mut cached = fold_cache::load(&dir, TASK_ID).unwrap();
    let advanced = cached.advance(&path).unwrap();
    assert_eq!(
        advanced.restarted.as_deref(),
        Some(
            format!(
                "it is bound to line 81 (seq 80) ending at byte {length}, which is not there: \
                 the journal is {size} bytes"
            )
            .as_str()
        )
    );
    assert_eq!(advanced.entries, 60);
    let genesis = genesis_fold(&dir);
    assert_eq!(cached, genesis);
    assert_eq!(summarized(&dir, TASK_ID).unwrap(), genesis);
    let check = fold_checks(&root).remove(0).unwrap();
    assert_eq!(
        check.problem.as_deref(),
        Some("it is bound to line 81 (seq 80), which the verified journal does not reach")
    );
}

#[test]
fn valp_recover_sets_aside_a_file_bound_after_its_cut() {
    let temp = tempfile::tempdir().unwrap();
    let (root, _) = walk_root(temp.path(), 13, 80);
    let dir = task_dir(&root);
    fold_cache::write(&dir, TASK_ID, &genesis_fold(&dir)).unwrap();
    damage_line_61(&root);
    let valp_root = temp.path().join(".valp");
    let run = valp_in(
        temp.path(),
        Some(&valp_root),
        &["recover", TASK_ID, "--yes"],
    )
    .unwrap();
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    let moved = root
        .layout()
        .quarantine_dir()
        .join("task-1.correction-fold.json.beyond-recover");
    assert!(
        run.stdout.contains(&format!(
            "correction fold beyond the cut moved to {}\n",
            moved.display()
        )),
        "{}",
        run.stdout
    );
    assert!(moved.exists() && !fold_cache::path(&dir).exists());
    let run = valp_in(temp.path(), Some(&valp_root), &["verify"]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stdout);
}

/// Flips a byte inside line 61 of the walk task's journal (recover then keeps 60 entries).
fn damage_line_61(root: &ControlRoot) {
    let path = journal_path(root);
    let mut bytes = std::fs::read(&path).unwrap();
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, byte)| **byte == b'\n')
        .map(|(at, _)| at + 1)
        .collect();
    bytes[ends[60] + 30] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
}

#[test]
fn a_tampered_file_is_refused_status_gives_the_same_answer_and_verify_names_it() {
    let temp = tempfile::tempdir().unwrap();
    let (root, _) = walk_root(temp.path(), 21, 120);
    let dir = task_dir(&root);
    let valp_root = temp.path().join(".valp");
    let status = |expect: &str| {
        let run = valp_in(temp.path(), Some(&valp_root), &["task", "status", TASK_ID]).unwrap();
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        assert!(run.stdout.contains("  correction "), "{}", run.stdout);
        if !expect.is_empty() {
            assert_eq!(run.stdout, expect);
        }
        run.stdout
    };
    // Without a file: `task status` folds from the genesis and writes nothing.
    let answer = status("");
    assert!(!fold_cache::path(&dir).exists());
    fold_cache::write(&dir, TASK_ID, &genesis_fold(&dir)).unwrap();
    status(&answer);

    // One byte changed inside a round's reason: still canonical JSON, not the fold written.
    let file = fold_cache::path(&dir);
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.windows(11).position(|w| w == b"at revision").unwrap();
    bytes[at] = b'b';
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(
        fold_cache::load(&dir, TASK_ID),
        Err("fold_digest does not match its contents".to_owned())
    );
    assert_eq!(summarized(&dir, TASK_ID).unwrap(), genesis_fold(&dir));
    status(&answer);
    assert_eq!(std::fs::read(&file).unwrap(), bytes, "status wrote nothing");
    let run = valp_in(temp.path(), Some(&valp_root), &["verify"]).unwrap();
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    let row = run
        .stdout
        .lines()
        .find(|line| line.contains("correction-fold.json"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(
        row.contains(&format!(
            "PROBLEM VALP-E-STORE-SNAPSHOT-MISMATCH: {}: the snapshot of seq 120 does not match \
             its journal: fold_digest does not match its contents",
            file.display()
        )),
        "{row}"
    );

    // A writer's fold refuses it, folds from the genesis and writes it again.
    let mut kept = CycleFold::default();
    kept.refresh(&dir, TASK_ID, &BTreeMap::new()).unwrap();
    assert_eq!(kept.last_read(), 120);
    assert_eq!(fold_cache::load(&dir, TASK_ID).unwrap(), genesis_fold(&dir));
    let run = valp_in(temp.path(), Some(&valp_root), &["verify"]).unwrap();
    assert_eq!(run.code, Some(0), "{}", run.stdout);
}

#[test]
fn a_file_with_its_digest_that_is_not_the_fold_is_named_by_verify() {
    let temp = tempfile::tempdir().unwrap();
    let (root, _) = walk_root(temp.path(), 21, 120);
    let dir = task_dir(&root);
    let fold = genesis_fold(&dir);
    let mut value = read_json_bytes(&fold_cache::encode(TASK_ID, &fold).unwrap());
    assert_ne!(value["opened"], 0);
    // Re-signed with one round fewer opened: it decodes, its digest matches, it is not the fold.
    let opened = value["opened"].as_u64().unwrap();
    value["opened"] = (opened + 1).into();
    let resigned = resign(value);
    std::fs::write(fold_cache::path(&dir), &resigned).unwrap();
    assert!(fold_cache::load(&dir, TASK_ID).is_ok());
    let check = fold_checks(&root).remove(0).unwrap();
    assert_eq!(
        check.problem.as_deref(),
        Some(
            "its fold (rounds, opened, unfixed) differs from the fold from the genesis at that \
             line"
        )
    );
}

#[test]
fn a_file_of_another_task_or_journal_is_not_used() {
    let temp = tempfile::tempdir().unwrap();
    let (short, _) = walk_root(&temp.path().join("a"), 1, 50);
    let (long, _) = walk_root(&temp.path().join("b"), 7, 80);
    let (short_dir, long_dir) = (task_dir(&short), task_dir(&long));
    let theirs = genesis_fold(&short_dir);
    let bytes = fold_cache::encode(TASK_ID, &theirs).unwrap();
    assert_eq!(
        fold_cache::decode(&bytes, "task-2"),
        Err("it is the fold of task \"task-1\", not of task \"task-2\"".to_owned())
    );
    // The same task id in another root: bound to a line this journal does not have.
    std::fs::write(fold_cache::path(&long_dir), &bytes).unwrap();
    let mut cached = fold_cache::load(&long_dir, TASK_ID).unwrap();
    let advanced = cached.advance(&long_dir.join("journal.jsonl")).unwrap();
    assert!(advanced.restarted.is_some());
    assert_eq!(advanced.entries, 80);
    assert_eq!(cached, genesis_fold(&long_dir));
    let at = theirs.at().unwrap();
    let check = fold_checks(&long).remove(0).unwrap();
    let problem = check.problem.unwrap();
    assert!(
        problem.starts_with(&format!(
            "it is bound to line 51 (seq 50) with entry_digest {} ending at byte {}, the \
             journal's line there has ",
            at.entry_digest, at.length
        )),
        "{problem}"
    );
}

fn read_json_bytes(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes).unwrap()
}

/// `value` (a fold file's object) with `fold_digest` computed again, as canonical bytes.
fn resign(mut value: serde_json::Value) -> Vec<u8> {
    value.as_object_mut().unwrap().remove("fold_digest");
    let digest = valp_kernel::canonical::sha256_digest(&canonical(&value));
    value["fold_digest"] = digest.into();
    canonical(&value)
}

/// Canonical bytes of a serde value (sorted keys, no whitespace, LF), checked by the kernel.
fn canonical(value: &serde_json::Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(value).unwrap();
    bytes.push(b'\n');
    valp_kernel::canonical::decode_canonical(&bytes).unwrap();
    bytes
}

#[test]
fn a_summarizing_fold_holds_only_the_open_and_newest_rounds_and_agrees_with_the_whole_fold() {
    let mut checked = 0;
    for seed in [1, 7, 13, 21] {
        let temp = tempfile::tempdir().unwrap();
        let (root, _history) = walk_root(temp.path(), seed, 400);
        let dir = task_dir(&root);
        let genesis = genesis_fold(&dir);
        let open = genesis
            .deriver()
            .rounds()
            .iter()
            .filter(|round| round.is_open())
            .count();
        for newest in [1u64, 2, 3] {
            let bound = open + 2 * usize::try_from(newest).unwrap();
            let mut kept = Fold::genesis();
            kept.advance_keeping(&dir.join("journal.jsonl"), Some(newest))
                .unwrap();
            let held = kept.deriver().rounds().len();
            assert!(
                held <= bound,
                "seed {seed}, newest {newest}: {held} rounds held, {open} open"
            );
            assert_eq!(kept.deriver().summary(), genesis.deriver().summary());
            assert_eq!(
                kept.deriver().kept(newest),
                genesis.deriver().kept(newest),
                "seed {seed}, newest {newest}"
            );
            if genesis.deriver().rounds().len() > bound {
                checked += 1;
            }
        }
    }
    assert!(
        checked > 0,
        "some walk has more rounds than a summarizing fold holds"
    );
}

/// `valp demo` ends with the task folder's `correction-fold.json`, folded batch by batch as
/// the demo wrote the lines: the file of the whole journal's fold (the open and the newest
/// rounds), bound to the last line, and `valp verify` checks it (a row `ok`).
#[test]
fn valp_demo_leaves_the_fold_of_its_journal_and_verify_checks_it() {
    let project = tempfile::tempdir().unwrap();
    // 2,500 entries in three batches: ~700 rounds, more than one batch's worth of lines.
    let demo = valp_in(
        project.path(),
        None,
        &["demo", "--entries", "2500", "--work-items", "4"],
    )
    .unwrap();
    assert_eq!(demo.code, Some(0), "{demo:?}");
    let dir = project.path().join(".valp/tasks/demo-1");
    let fold = genesis_fold(&dir);
    assert_eq!(fold.at().unwrap().seq, 2500);
    assert!(
        fold.deriver().opened() > 0,
        "the walk opens correction rounds"
    );
    assert_eq!(
        std::fs::read(fold_cache::path(&dir)).unwrap(),
        fold_cache::encode("demo-1", &fold).unwrap()
    );
    let verified = valp_in(project.path(), None, &["verify"]).unwrap();
    assert_eq!(verified.code, Some(0), "{verified:?}");
    assert!(
        verified
            .stdout
            .lines()
            .any(|line| line.split_whitespace().eq([
                "snapshot",
                "demo-1/correction-fold.json",
                "2500",
                "ok"
            ])),
        "{}",
        verified.stdout
    );
}
