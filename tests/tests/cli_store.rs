//! The store commands of the `valp` binary: init, demo, verify, export, import, and their
//! refusals.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;

use valp_tests::cli::{Run, valp_in};

fn valp(cwd: &Path, args: &[&str]) -> Run {
    valp_in(cwd, None, args).unwrap()
}

fn installation_id(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join("installation.json")).unwrap();
    let value = valp_kernel::json::parse(text.trim_end()).unwrap();
    value.as_object().unwrap()["installation_id"]
        .as_object()
        .unwrap()["value"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn init_creates_the_layout_once_and_refuses_to_overwrite() {
    let project = tempfile::tempdir().unwrap();
    let run = valp(project.path(), &["init"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let root = project.path().join(".valp");
    let id = installation_id(&root);
    assert!(id.starts_with("inst-") && id.len() == 25, "{id}");
    assert_eq!(
        run.stdout,
        format!("initialised installation {id} at {}\n", root.display())
    );
    for folder in [
        "installation",
        "leader",
        "tasks",
        "evidence/sha256",
        "evidence/tmp",
        "runtime",
        "inbox",
        "quarantine",
    ] {
        assert!(root.join(folder).is_dir(), "{folder}");
    }
    assert!(
        root.join("installation/journal.jsonl").is_file(),
        "the authority ledger"
    );
    let before = std::fs::read(root.join("installation.json")).unwrap();
    let again = valp(project.path(), &["init"]);
    assert_eq!(again.code, Some(1));
    assert!(
        again.stderr.starts_with("valp: ") && again.stderr.contains("is already initialised"),
        "{again:?}"
    );
    assert_eq!(
        std::fs::read(root.join("installation.json")).unwrap(),
        before
    );
}

#[test]
fn commands_find_the_root_from_a_subfolder_or_via_root_and_env() {
    let project = tempfile::tempdir().unwrap();
    assert_eq!(
        valp(project.path(), &["init", "--installation-id", "inst-x"]).code,
        Some(0)
    );
    let deep = project.path().join("a/b");
    std::fs::create_dir_all(&deep).unwrap();
    assert_eq!(
        valp(&deep, &["verify"]).stdout.lines().last(),
        Some("verify: 1 journals ok, 0 problems")
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let run = valp(elsewhere.path(), &["verify"]);
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .starts_with("valp: no valp control root found from "),
        "{run:?}"
    );
    let root = project.path().display().to_string();
    assert_eq!(
        valp(elsewhere.path(), &["--root", &root, "verify"]).code,
        Some(0)
    );
    let env = valp_in(elsewhere.path(), Some(project.path()), &["verify"]).unwrap();
    assert_eq!(env.code, Some(0), "{env:?}");
}

#[test]
fn demo_verify_export_import_round_trip() {
    let project = tempfile::tempdir().unwrap();
    let run = valp(
        project.path(),
        &[
            "demo",
            "--entries",
            "60",
            "--work-items",
            "4",
            "--seed",
            "3",
        ],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let journal = project.path().join(".valp/tasks/demo-1/journal.jsonl");
    let expected = format!(
        "created demo task demo-1 with 60 accepted entries and 4 work items in {}\n",
        journal.display()
    );
    assert!(run.stdout.ends_with(&expected), "{}", run.stdout);
    let verified = valp(project.path(), &["verify"]);
    assert_eq!(verified.code, Some(0));
    // (Columns are as wide as the longest name: the demo's `demo-1/correction-fold.json`.)
    assert!(
        verified.stdout.lines().any(|line| line
            .split_whitespace()
            .eq(["journal", "demo-1", "60", "ok"])),
        "{}",
        verified.stdout
    );
    let out = project.path().join("export");
    let export = valp(
        project.path(),
        &["export", "--reference", "demo-1", out.to_str().unwrap()],
    );
    assert_eq!(export.code, Some(0), "{export:?}");
    assert!(
        export
            .stdout
            .starts_with("exported task demo-1: 60 entries to "),
        "{}",
        export.stdout
    );

    let other = tempfile::tempdir().unwrap();
    let id = installation_id(&project.path().join(".valp"));
    assert_eq!(
        valp(other.path(), &["init", "--installation-id", &id]).code,
        Some(0)
    );
    let import = valp(other.path(), &["import", out.to_str().unwrap()]);
    assert_eq!(import.code, Some(0), "{import:?}");
    assert!(
        import
            .stdout
            .starts_with("imported task demo-1: 60 entries verified by replay into ")
    );
    // The import reproduces every line's entry; each line carries the time the importing
    // store wrote it (the reference records none), so only the entries are compared.
    let entries = |dir: &Path| -> Vec<(serde_json::Value, serde_json::Value)> {
        std::fs::read_to_string(dir.join(".valp/tasks/demo-1/journal.jsonl"))
            .unwrap()
            .lines()
            .map(|line| {
                let line: serde_json::Value = serde_json::from_str(line).unwrap();
                assert!(line["recorded_at"].is_string(), "{line}");
                (line["seq"].clone(), line["entry"].clone())
            })
            .collect()
    };
    assert_eq!(entries(project.path()).len(), 61);
    assert_eq!(entries(project.path()), entries(other.path()));
    let twice = valp(other.path(), &["import", out.to_str().unwrap()]);
    assert_eq!(twice.code, Some(1));
    assert!(
        twice.stderr.contains("task demo-1 already has a journal"),
        "{twice:?}"
    );
}

#[test]
fn import_refuses_a_foreign_installation_and_a_tampered_export() {
    let project = tempfile::tempdir().unwrap();
    assert_eq!(
        valp(project.path(), &["demo", "--entries", "10"]).code,
        Some(0)
    );
    let out = project.path().join("export");
    assert_eq!(
        valp(
            project.path(),
            &["export", "--reference", "demo-1", out.to_str().unwrap()]
        )
        .code,
        Some(0)
    );
    let other = tempfile::tempdir().unwrap();
    assert_eq!(
        valp(other.path(), &["init", "--installation-id", "inst-other"]).code,
        Some(0)
    );
    let foreign = valp(other.path(), &["import", out.to_str().unwrap()]);
    assert_eq!(foreign.code, Some(1));
    assert!(
        foreign.stderr.contains("this control root is inst-other"),
        "{foreign:?}"
    );

    let replay = out.join("runtime/kernel/replay.jsonl");
    let text = std::fs::read_to_string(&replay).unwrap();
    let tampered = text.replacen("\"revision\":3", "\"revision\":4", 1);
    assert_ne!(tampered, text);
    std::fs::write(&replay, tampered).unwrap();
    let id = installation_id(&project.path().join(".valp"));
    let third = tempfile::tempdir().unwrap();
    assert_eq!(
        valp(third.path(), &["init", "--installation-id", &id]).code,
        Some(0)
    );
    let refused = valp(third.path(), &["import", out.to_str().unwrap()]);
    assert_eq!(refused.code, Some(1));
    assert!(
        refused.stderr.contains("VALP-E-KERNEL-STORE-CORRUPT")
            && refused.stderr.contains("replay.jsonl:"),
        "{refused:?}"
    );
    assert!(
        !third
            .path()
            .join(".valp/tasks/demo-1/journal.jsonl")
            .exists(),
        "nothing is created on failure"
    );
}

#[test]
fn verify_names_a_damaged_line_and_reports_a_torn_tail_without_changing_it() {
    let project = tempfile::tempdir().unwrap();
    assert_eq!(
        valp(project.path(), &["demo", "--entries", "12"]).code,
        Some(0)
    );
    let journal = project.path().join(".valp/tasks/demo-1/journal.jsonl");
    let good = std::fs::read(&journal).unwrap();
    let lines: Vec<&[u8]> = good.split_inclusive(|&byte| byte == b'\n').collect();
    let fifth_start: usize = lines[..4].iter().map(|line| line.len()).sum();
    let mut damaged = good.clone();
    damaged[fifth_start + 40] ^= 0x01;
    std::fs::write(&journal, &damaged).unwrap();
    let run = valp(project.path(), &["verify"]);
    assert_eq!(run.code, Some(1));
    let expected = format!(
        "PROBLEM VALP-E-KERNEL-STORE-CORRUPT: {}:5: byte {fifth_start}: ",
        journal.display()
    );
    assert!(run.stdout.contains(&expected), "{}", run.stdout);
    assert_eq!(
        run.stdout.lines().last(),
        Some("verify: 1 journals ok, 1 problems")
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        damaged,
        "verify never rewrites"
    );

    let mut torn = good.clone();
    torn.extend_from_slice(b"{\"entry\":{\"ev");
    std::fs::write(&journal, &torn).unwrap();
    let run = valp(project.path(), &["verify"]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("12  ok, warning: 13 bytes at byte "),
        "{}",
        run.stdout
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        torn,
        "a reader never repairs"
    );
}

#[test]
fn export_needs_the_reference_flag_and_an_existing_task() {
    let project = tempfile::tempdir().unwrap();
    assert_eq!(valp(project.path(), &["init"]).code, Some(0));
    let missing_flag = valp(project.path(), &["export", "demo-1", "out"]);
    assert_eq!(missing_flag.code, Some(2));
    assert!(
        missing_flag.stderr.contains("--reference"),
        "{missing_flag:?}"
    );
    let missing_task = valp(project.path(), &["export", "--reference", "nope", "out"]);
    assert_eq!(missing_task.code, Some(1));
    assert!(
        missing_task
            .stderr
            .starts_with("valp: no task \"nope\" in "),
        "{missing_task:?}"
    );
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly_with_141() {
    let project = tempfile::tempdir().unwrap();
    let demo = valp(project.path(), &["demo", "--work-items", "60"]);
    assert_eq!(demo.code, Some(0), "{demo:?}");
    // `valp task explain` prints well over a pipe's 64 KiB here, so the command is still
    // writing when the reader's end closes, as with `valp task explain demo-1 | head -1`.
    let mut child = std::process::Command::new(valp_tests::valp_binary().unwrap())
        .args(["task", "explain", "demo-1"])
        .current_dir(project.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(141));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}
