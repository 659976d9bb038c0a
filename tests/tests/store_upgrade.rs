//! Layout 2 and `valp upgrade`, on a real control root of layout 1 made by the code before the
//! change (`tests/fixtures/roots/layout-1/`, see its PROVENANCE.md): every command but the
//! upgrade refuses it and says to run `valp upgrade`; the upgrade keeps a byte-identical backup,
//! anchors every journal (and writes the converted effect ledger with its head), bumps the version last and can be re-run after a crash; afterwards the
//! root verifies and runs. Any other `layout_version` is refused with
//! `VALP-E-MIGRATION-UNSUPPORTED`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_store::io::OsStorage;
use valp_store::{ControlRoot, StoreCode, StoreError};
use valp_tests::cli::{Run, valp_in};
use valp_tests::workspace_root;

/// A temporary project holding a copy of the layout-1 fixture root.
fn layout_1_project() -> tempfile::TempDir {
    let temp = tempfile::tempdir().unwrap();
    copy_tree(
        &workspace_root().join("tests/fixtures/roots/layout-1/.valp"),
        &temp.path().join(".valp"),
    );
    temp
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
            format!(
                "valp: VALP-E-STORE-UPGRADE-REQUIRED: {}: this control root has layout_version \
                 1; this valp reads layout 2. Run `valp upgrade` (it keeps a full backup) \
                 before anything else",
                root.join("installation.json").display()
            ),
            "{args:?}"
        );
    }
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
        "upgraded".to_owned(),
        "effects   demo-build              1  ok".to_owned(),
        "verify: 3 journals ok, 0 problems".to_owned(),
    ] {
        assert!(upgraded.contains(&needle), "{needle:?} in\n{upgraded}");
    }
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
        installation.contains(r#""layout_version":2,"#),
        "{installation}"
    );
    assert!(ok(dir, &["verify"]).contains("verify: 3 journals ok, 0 problems"));
    assert!(ok(dir, &["upgrade", "--yes"]).contains("is at layout 2: nothing to upgrade"));

    // The root runs: the task waits for the Leader's review. The fixture's Leader is the OS
    // account uid 0; as that account the task is reviewed and closed through the Done gate,
    // as any other the Leader is rotated to this account and a new plan is published and run.
    let status = ok(dir, &["task", "status", "demo-build"]);
    assert!(
        status.starts_with("task demo-build  reviewing  revision 30"),
        "{status}"
    );
    if uid() == Some(0) {
        ok(dir, &["review", "demo-build", "pass"]);
        let run = ok(dir, &["run", "--timeout", "60"]);
        assert!(run.contains("demo-build: done at revision 32"), "{run}");
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
    for found in ["3", "0", "-1", r#""2""#, "null", "2.5"] {
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
            matches!(&refusal, StoreError::MigrationUnsupported { path, found: text, current: 2 }
                if path == &file && text == found),
            "{found}: {refusal:?}"
        );
        let message = format!(
            "VALP-E-MIGRATION-UNSUPPORTED: {}: layout_version {found} is not supported (this \
             valp reads layout 2 and upgrades layout 1); use the valp that wrote it",
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
