//! `valp init` creates `installation.json` exclusively: of 8 `valp init` processes started
//! together on one new root exactly one initialises it, the others are refused with "already
//! initialised", and every file agrees on the one installation id.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};

use valp_tests::valp_binary;

const PROCESSES: usize = 8;
const ROUNDS: usize = 5;

#[test]
fn concurrent_inits_of_one_root_make_one_installation() {
    for round in 0..ROUNDS {
        let project = tempfile::tempdir().unwrap();
        let root = project.path().join(".valp");
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                Command::new(valp_binary().unwrap())
                    .args(["--root", root.to_str().unwrap(), "init"])
                    .env_remove("VALP_ROOT")
                    .env("RUST_BACKTRACE", "0")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<_> = children
            .into_iter()
            .map(|child| child.wait_with_output().unwrap())
            .collect();
        let winners: Vec<String> = outputs
            .iter()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {outputs:?}");
        let id = winners[0]
            .strip_prefix("initialised installation ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap()
            .to_owned();
        for output in outputs.iter().filter(|output| !output.status.success()) {
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "round {round}: {stderr}");
            assert_eq!(
                stderr.trim_end(),
                format!(
                    "valp: {} is already initialised ({} exists); valp init never overwrites \
                     an installation",
                    root.display(),
                    root.join("installation.json").display()
                ),
                "round {round}"
            );
        }
        let installation = std::fs::read_to_string(root.join("installation.json")).unwrap();
        assert!(
            installation.contains(&format!(r#"{{"kind":"installation","value":"{id}"}}"#)),
            "round {round}: {installation}"
        );
        let ledger = std::fs::read_to_string(root.join("installation/journal.jsonl")).unwrap();
        let mentioned: Vec<&str> = ledger
            .match_indices(r#""kind":"installation","value":""#)
            .map(|(at, found)| {
                let rest = &ledger[at + found.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect();
        assert!(!mentioned.is_empty(), "round {round}: {ledger}");
        assert!(
            mentioned.iter().all(|value| *value == id),
            "round {round}: the ledger names {mentioned:?}, installation.json {id}"
        );
        let verified = Command::new(valp_binary().unwrap())
            .args(["--root", root.to_str().unwrap(), "verify"])
            .env_remove("VALP_ROOT")
            .output()
            .unwrap();
        assert!(
            verified.status.success()
                && String::from_utf8_lossy(&verified.stdout).contains("1 journals ok, 0 problems"),
            "round {round}: {verified:?}"
        );
    }
}
