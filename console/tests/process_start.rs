//! The allocator settings a `valp` process takes before anything allocates
//! (`src/process_start.c`), read back from mimalloc's own report: with `MIMALLOC_VERBOSE=1` it
//! prints every option's value as it starts, and `process done` when it tears down at exit.
#![cfg(all(target_os = "linux", target_env = "gnu"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

/// What mimalloc reports on stderr for `valp ARGS` (run in an empty folder, no stdin), with
/// `environment` added.
fn allocator_report(args: &[&str], environment: &[(&str, &str)]) -> String {
    let folder = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_valp"));
    command
        .args(args)
        .current_dir(folder.path())
        .env("MIMALLOC_VERBOSE", "1")
        .env_remove("MIMALLOC_ALLOW_THP")
        .env_remove("MIMALLOC_DESTROY_ON_EXIT")
        .env_remove("VALP_ROOT");
    for (name, value) in environment {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The value mimalloc reports for option `name`.
fn option(report: &str, name: &str) -> String {
    let prefix = format!("option '{name}': ");
    report
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no option {name} in {report}"))
        .trim()
        .to_owned()
}

#[test]
fn huge_pages_are_off_from_the_first_allocation_for_verify_and_the_hooks() {
    for args in [
        &["verify", "--no-default-sockets"][..],
        &["hook", "gemini"],
        &["notify", "claude"],
    ] {
        assert_eq!(
            option(&allocator_report(args, &[]), "allow_thp"),
            "0",
            "{args:?}"
        );
    }
}

#[test]
fn other_command_lines_start_with_huge_pages_allowed() {
    // Only argv[1] is looked at: a global option first leaves it to `main` (after clap).
    for args in [
        &["--version"][..],
        &["--root", ".", "verify", "--no-default-sockets"],
        &["init", "--no-default-sockets"],
        &["verifyx"],
    ] {
        assert_eq!(
            option(&allocator_report(args, &[]), "allow_thp"),
            "1",
            "{args:?}"
        );
    }
}

#[test]
fn the_allocator_is_not_torn_down_at_exit() {
    for args in [&["--version"][..], &["verify", "--no-default-sockets"]] {
        let report = allocator_report(args, &[]);
        assert_eq!(option(&report, "destroy_on_exit"), "2", "{args:?}");
        assert!(!report.contains("process done"), "{args:?}: {report}");
    }
}

#[test]
fn the_mimalloc_variables_still_win() {
    let report = allocator_report(
        &["verify", "--no-default-sockets"],
        &[
            ("MIMALLOC_ALLOW_THP", "1"),
            ("MIMALLOC_DESTROY_ON_EXIT", "0"),
        ],
    );
    assert_eq!(option(&report, "allow_thp"), "1");
    assert_eq!(option(&report, "destroy_on_exit"), "0");
    assert!(report.contains("process done"), "{report}");
}
