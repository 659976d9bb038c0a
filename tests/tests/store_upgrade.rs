//! Layout 4 and `valp upgrade`, on real control roots of layouts 1, 2 and 3 made by the code
//! before each change (`tests/fixtures/roots/layout-1/`, `layout-2/` and `layout-3/`, see their
//! PROVENANCE.md): every command but the upgrade refuses them and says to run `valp upgrade`;
//! the upgrade keeps a byte-identical backup, anchors every journal of a layout-1 root (and
//! writes the converted effect ledger with its head), leaves every existing line without a
//! time (shown as unknown), bumps the version last and can be re-run after a crash; afterwards
//! the root verifies and runs, and new lines carry their time. Any other `layout_version` is
//! refused with `VALP-E-MIGRATION-UNSUPPORTED`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_store::io::OsStorage;
use valp_store::{ControlRoot, StoreCode, StoreError};
use valp_tests::cli::{Run, valp_in};
use valp_tests::workspace_root;

/// A temporary project holding a copy of the layout-`layout` fixture root.
fn fixture_project(layout: u32) -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    copy_tree(
        &workspace_root().join(format!("tests/fixtures/roots/layout-{layout}/.valp")),
        &temp.path().join(".valp"),
    );
    temp
}

/// A temporary project holding a copy of the layout-1 fixture root.
fn layout_1_project() -> tempfile::TempDir {
    fixture_project(1)
}

/// The `recorded_at` of every entry of the demo task's journal in `root`.
fn entry_times(root: &Path) -> Vec<Option<valp_store::clock::Timestamp>> {
    let mut times = Vec::new();
    valp_store::journal::read_entries::<valp_kernel::live::LiveState>(
        &root.join("tasks/demo-build/journal.jsonl"),
        |entry| times.push(entry.recorded_at),
    )
    .unwrap();
    times
}

/// What every command but `valp upgrade` answers on a root of layout `found`.
/// Status, verify, run and recover on the root at `dir` are each refused with
/// [`upgrade_required`] for layout `found`.
fn refuses_every_command_until_upgraded(dir: &Path, root: &Path, found: u32) {
    for args in [
        &["task", "status"][..],
        &["verify"],
        &["run", "--once"],
        &["recover", "demo-build"],
    ] {
        let refused = valp(dir, args);
        assert_eq!(refused.code, Some(1), "{args:?}: {refused:?}");
        assert_eq!(
            refused.stderr.trim_end(),
            upgrade_required(root, found),
            "{args:?}"
        );
    }
}

fn upgrade_required(root: &Path, found: u32) -> String {
    format!(
        "valp: VALP-E-STORE-UPGRADE-REQUIRED: {}: this control root has layout_version {found}; \
         this valp reads layout 4. Run `valp upgrade` (it keeps a full backup) before anything \
         else",
        root.join("installation.json").display()
    )
}

/// Continues the fixture's demo task after an upgrade: as the fixture's Leader (uid 0) it is
/// reviewed and closed through the Done gate; as any other account the Leader is rotated to
/// this account and a new plan is published and run.
fn runs_after_upgrade(dir: &Path, revision: u32) {
    let status = ok(dir, &["task", "status", "demo-build"]);
    assert!(
        status.starts_with(&format!("task demo-build  reviewing  revision {revision}")),
        "{status}"
    );
    if uid() == Some(0) {
        ok(dir, &["review", "demo-build", "pass"]);
        let run = ok(dir, &["run", "--timeout", "60"]);
        assert!(
            run.contains(&format!("demo-build: done at revision {}", revision + 2)),
            "{run}"
        );
    } else {
        let me = format!("human:uid-{}", uid().unwrap());
        ok(dir, &["leader", "rotate", &me, "--yes"]);
        let plan = workspace_root().join("examples/plans/minimal.toml");
        ok(dir, &["task", "publish", plan.to_str().unwrap()]);
        let run = ok(dir, &["run", "hello", "--timeout", "60"]);
        assert!(run.contains("hello: done"), "{run}");
    }
    assert!(ok(dir, &["verify"]).contains(" 0 problems"));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `dir` (relative path → bytes).
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(
                    path.strip_prefix(base).unwrap().to_owned(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn valp(project: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--no-default-sockets"];
    all.extend_from_slice(args);
    valp_in(project, None, &all).unwrap()
}

fn ok(project: &Path, args: &[&str]) -> String {
    let run = valp(project, args);
    assert_eq!(run.code, Some(0), "valp {args:?}: {run:?}");
    run.stdout
}

/// The uid of this process (`/proc/self/status`).
fn uid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn a_layout_1_root_is_refused_until_upgraded_then_verifies_and_runs() {
    let project = layout_1_project();
    let dir = project.path();
    let root = dir.join(".valp");
    let original = files(&root);
    assert!(original.contains_key(Path::new("tasks/demo-build/effects.jsonl")));

    refuses_every_command_until_upgraded(dir, &root, 1);
    assert!(
        files(&root) == original,
        "a refused command changed the root"
    );

    let tmux = tempfile::tempdir().unwrap();
    let declined =
        valp_tests::cli::valp_answering(dir, tmux.path(), &["upgrade"], "yes\n").unwrap();
    assert_eq!(declined.code, Some(2), "{declined:?}");
    assert!(declined.stderr.contains("the control root was not changed"));
    assert!(
        files(&root) == original,
        "a declined upgrade changed the root"
    );

    let upgraded = ok(dir, &["upgrade", "--yes"]);
    let backup = dir.join(".valp.layout1-backup-1");
    for needle in [
        format!("backup: {}", backup.display()),
        "anchor the installation ledger: root: verified 15 entries, anchored at seq 15".to_owned(),
        "anchor the task journal: demo-build: verified 30 entries, anchored at seq 30".to_owned(),
        "convert the effect ledger: demo-build: converted 1 effect records".to_owned(),
        "keep the recorded times unknown: demo-build: verified 30 entries; the time of the \
         lines written so far stays unknown"
            .to_owned(),
        "write the snapshot: demo-build: verified 30 entries; snapshot \
         00000000000000000030-"
            .to_owned(),
        "upgraded".to_owned(),
        "verify: 3 journals ok, 0 problems".to_owned(),
    ] {
        assert!(upgraded.contains(&needle), "{needle:?} in\n{upgraded}");
    }
    assert!(
        has_row(&upgraded, &["effects", "demo-build", "1", "ok"]),
        "{upgraded}"
    );
    assert!(
        files(&backup) == original,
        "the backup is the layout-1 root byte for byte"
    );
    let now = files(&root);
    for head in ["installation/journal.head", "tasks/demo-build/journal.head"] {
        assert!(now.contains_key(Path::new(head)), "{head}");
    }
    // The converted effect ledger is written with its head, which names its last record, and
    // it opens (verifying against that head) with the layout-1 record.
    let ledger = &now[Path::new("tasks/demo-build/effect-ledger.jsonl")];
    let head = valp_store::head::of_lines(ledger).unwrap();
    assert_eq!(
        now[Path::new("tasks/demo-build/effect-ledger.head")],
        valp_kernel::canonical::Canonical::canonical_bytes(&head)
    );
    let opened = valp_store::effects::EffectLedger::open(
        &root.join("tasks/demo-build"),
        &root.join("quarantine"),
        Arc::new(OsStorage),
        valp_store::Access::ReadOnly,
    )
    .unwrap();
    assert_eq!(opened.head(), Some(&head));
    assert_eq!(opened.records().len() as u64, head.seq + 1);
    let installation = String::from_utf8(now[Path::new("installation.json")].clone()).unwrap();
    assert!(
        installation.contains(r#""layout_version":4,"#),
        "{installation}"
    );
    // The effect records converted from layout 1 keep no time either.
    assert!(!String::from_utf8_lossy(ledger).contains("recorded_at"));
    assert_eq!(entry_times(&root), vec![None; 30]);
    assert!(ok(dir, &["verify"]).contains("verify: 3 journals ok, 0 problems"));
    assert!(ok(dir, &["upgrade", "--yes"]).contains("is at layout 4: nothing to upgrade"));
    runs_after_upgrade(dir, 30);
}

#[test]
fn a_layout_2_root_is_refused_until_upgraded_then_verifies_and_runs() {
    let project = fixture_project(2);
    let dir = project.path();
    let root = dir.join(".valp");
    let original = files(&root);
    assert!(original.contains_key(Path::new("tasks/demo-build/journal.head")));
    // It opens at layout 2 only through the upgrade: its lines have no time.
    assert!(
        !String::from_utf8_lossy(&original[Path::new("tasks/demo-build/journal.jsonl")])
            .contains("recorded_at")
    );
    refuses_every_command_until_upgraded(dir, &root, 2);
    let refusal = ControlRoot::open(&root, Arc::new(OsStorage)).unwrap_err();
    assert!(
        matches!(
            refusal,
            StoreError::UpgradeRequired {
                found: 2,
                current: 4,
                ..
            }
        ),
        "{refusal:?}"
    );
    assert!(
        files(&root) == original,
        "a refused command changed the root"
    );

    let upgraded = ok(dir, &["upgrade", "--yes"]);
    let backup = dir.join(".valp.layout2-backup-1");
    for needle in [
        format!("backup: {}", backup.display()),
        "keep the recorded times unknown: demo-build: verified 30 entries; the time of the \
         lines written so far stays unknown"
            .to_owned(),
        "upgraded".to_owned(),
        "verify: 3 journals ok, 0 problems".to_owned(),
    ] {
        assert!(upgraded.contains(&needle), "{needle:?} in\n{upgraded}");
    }
    assert!(
        has_row(&upgraded, &["effects", "demo-build", "1", "ok"]),
        "{upgraded}"
    );
    assert!(
        !upgraded.contains("anchor the"),
        "a layout-2 root is anchored already:\n{upgraded}"
    );
    assert!(
        files(&backup) == original,
        "the backup is the layout-2 root byte for byte"
    );
    // Nothing but installation.json changed (and the snapshot was added): no time was invented
    // for an existing line.
    let now = files(&root);
    assert_eq!(
        changed_besides_snapshots(&original, &now),
        [Path::new("installation.json")]
    );
    assert!(
        String::from_utf8_lossy(&now[Path::new("installation.json")])
            .contains(r#""layout_version":4,"#)
    );
    assert_eq!(entry_times(&root), vec![None; 30]);
    assert_eq!(valp_store::chain::shown(entry_times(&root)[0]), "unknown");
    assert!(ok(dir, &["upgrade", "--yes"]).contains("is at layout 4: nothing to upgrade"));

    runs_after_upgrade(dir, 30);
    // The lines written since carry their time, after the 30 that have none.
    let times = entry_times(&root);
    assert!(times.len() > 30 || uid() != Some(0), "{times:?}");
    assert!(times[..30].iter().all(Option::is_none));
    assert!(times[30..].iter().all(Option::is_some), "{times:?}");
}

/// Whether the table `text` has a row of these cells.
fn has_row(text: &str, cells: &[&str]) -> bool {
    text.lines()
        .any(|line| line.split_whitespace().collect::<Vec<_>>() == cells)
}

/// The files of `now` that are not byte-identical in `original`, but for the task snapshots
/// (checked to be there: one JSON and its index).
fn changed_besides_snapshots<'a>(
    original: &BTreeMap<PathBuf, Vec<u8>>,
    now: &'a BTreeMap<PathBuf, Vec<u8>>,
) -> Vec<&'a PathBuf> {
    let snapshots = Path::new("tasks/demo-build/snapshots");
    assert_eq!(
        now.keys()
            .filter(|path| path.starts_with(snapshots))
            .count(),
        2,
        "{:?}",
        now.keys().collect::<Vec<_>>()
    );
    now.iter()
        .filter(|(path, bytes)| original.get(*path) != Some(bytes) && !path.starts_with(snapshots))
        .map(|(path, _)| path)
        .collect()
}

#[test]
fn a_layout_3_root_is_refused_until_upgraded_then_opens_from_its_snapshot_and_runs() {
    let project = fixture_project(3);
    let dir = project.path();
    let root = dir.join(".valp");
    let original = files(&root);
    assert!(
        !original
            .keys()
            .any(|path| path.to_string_lossy().contains("snapshots"))
    );
    refuses_every_command_until_upgraded(dir, &root, 3);
    assert!(
        files(&root) == original,
        "a refused command changed the root"
    );

    let upgraded = ok(dir, &["upgrade", "--yes"]);
    let backup = dir.join(".valp.layout3-backup-1");
    for needle in [
        format!("backup: {}", backup.display()),
        "write the snapshot: demo-build: verified 45 entries; snapshot 00000000000000000045-"
            .to_owned(),
        "upgraded".to_owned(),
        "verify: 3 journals ok, 0 problems".to_owned(),
    ] {
        assert!(upgraded.contains(&needle), "{needle:?} in\n{upgraded}");
    }
    assert!(!upgraded.contains("keep the recorded times"), "{upgraded}");
    assert!(
        files(&backup) == original,
        "the backup is the layout-3 root byte for byte"
    );
    let now = files(&root);
    assert_eq!(
        changed_besides_snapshots(&original, &now),
        [Path::new("installation.json")]
    );
    let verified = ok(dir, &["verify"]);
    assert!(
        verified.contains("snapshot  demo-build/00000000000000000045-"),
        "{verified}"
    );
    // The task opens from its snapshot: the State is the one a replay from the genesis gives.
    let opened = ControlRoot::open(&root, Arc::new(OsStorage))
        .unwrap()
        .open_task("demo-build", valp_store::Access::ReadOnly)
        .unwrap();
    assert!(!opened.live().keeps_history(), "opened from the snapshot");
    assert!(opened.warnings().is_empty(), "{:?}", opened.warnings());
    let full = ControlRoot::open(&root, Arc::new(OsStorage))
        .unwrap()
        .verify_task_dir(&root.join("tasks/demo-build"))
        .unwrap();
    assert_eq!(opened.live().state_digest(), full.live().state_digest());
    assert!(ok(dir, &["upgrade", "--yes"]).contains("is at layout 4: nothing to upgrade"));
    runs_after_upgrade(dir, 45);
}

#[test]
fn an_upgrade_interrupted_before_the_version_bump_is_finished_by_running_it_again() {
    let project = layout_1_project();
    let dir = project.path();
    let root = dir.join(".valp");
    let original = files(&root);
    ok(dir, &["upgrade", "--yes"]);
    // As if the crash came just before installation.json was replaced: anchors written, the
    // version still 1, and a backup folder that never completed.
    std::fs::write(
        root.join("installation.json"),
        &original[Path::new("installation.json")],
    )
    .unwrap();
    std::fs::create_dir(dir.join(".valp.layout1-backup-2.partial")).unwrap();
    let again = ok(dir, &["upgrade", "--yes"]);
    let backup = dir.join(".valp.layout1-backup-3");
    assert!(
        again.contains(&format!("backup: {}", backup.display())),
        "{again}"
    );
    assert!(
        again.contains(
            "convert the effect ledger: demo-build: already converted (1 effect records)"
        ) && again.contains("verify: 3 journals ok, 0 problems"),
        "{again}"
    );
    // The second backup is the root as the crash left it: the heads are there.
    assert!(files(&backup).contains_key(Path::new("tasks/demo-build/journal.head")));
    assert!(ok(dir, &["verify"]).contains("verify: 3 journals ok, 0 problems"));
}

#[test]
fn other_layout_versions_are_refused_as_unsupported() {
    let project = layout_1_project();
    let dir = project.path();
    let root = dir.join(".valp");
    let file = root.join("installation.json");
    let text = std::fs::read_to_string(&file).unwrap();
    for found in ["5", "0", "-1", r#""2""#, "null", "2.5"] {
        std::fs::write(
            &file,
            text.replace(
                r#""layout_version":1"#,
                &format!(r#""layout_version":{found}"#),
            ),
        )
        .unwrap();
        let refusal = ControlRoot::open(&root, Arc::new(OsStorage)).unwrap_err();
        if found == "2.5" {
            // Not canonical JSON (integers only): damage, before any version is read.
            assert_eq!(refusal.code(), StoreCode::Corrupt, "{refusal}");
            continue;
        }
        assert!(
            matches!(&refusal, StoreError::MigrationUnsupported { path, found: text, current: 4 }
                if path == &file && text == found),
            "{found}: {refusal:?}"
        );
        let message = format!(
            "VALP-E-MIGRATION-UNSUPPORTED: {}: layout_version {found} is not supported (this \
             valp reads layout 4 and upgrades layouts 1, 2 and 3); use the valp that wrote it",
            file.display()
        );
        assert_eq!(refusal.to_string(), message);
        for args in [&["task", "status"][..], &["upgrade", "--yes"]] {
            let run = valp(dir, args);
            assert_eq!(run.code, Some(1), "{found} {args:?}: {run:?}");
            assert_eq!(
                run.stderr.trim_end(),
                format!("valp: {message}"),
                "{args:?}"
            );
        }
    }
}
