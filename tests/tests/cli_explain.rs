//! `valp task explain TASK [--item ID] [--json]` on a demo task: the JSON is the kernel
//! lister's answer for the journal as the store holds it (the active epoch and the frozen Done
//! policy fed in), allowed transitions first; the text has one line per transition; `--item`
//! keeps that item's transitions; an unknown item is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::explain::{Guards, Judgement, explain};
use valp_store::io::OsStorage;
use valp_store::{Access, ControlRoot};
use valp_tests::cli::{Run, valp_in};

fn valp(cwd: &Path, args: &[&str]) -> Run {
    valp_in(cwd, None, args).unwrap()
}

#[test]
fn explain_prints_the_kernel_lister_as_text_and_json() {
    let project = tempfile::tempdir().unwrap();
    let demo = valp(
        project.path(),
        &[
            "demo",
            "--entries",
            "40",
            "--work-items",
            "4",
            "--seed",
            "3",
        ],
    );
    assert_eq!(demo.code, Some(0), "{demo:?}");

    let root = ControlRoot::open(&project.path().join(".valp"), Arc::new(OsStorage)).unwrap();
    let journal = root.open_task("demo-1", Access::ReadOnly).unwrap();
    let active_epoch = root.ledger_read_only().unwrap().live().state().active_epoch;
    let guards = Guards {
        active_epoch: Some(active_epoch),
        frozen_policy: journal.guard().done().frozen_policy(),
        ..Guards::default()
    };
    let mut expected = explain(journal.live(), &guards);
    expected.sort_by_key(|transition| !transition.is_allowed());

    let json = valp(project.path(), &["task", "explain", "demo-1", "--json"]);
    assert_eq!(json.code, Some(0), "{json:?}");
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(value["task"], "demo-1");
    assert_eq!(value["revision"], "40");
    let listed = value["transitions"].as_array().unwrap();
    assert_eq!(listed.len(), expected.len());
    assert!(
        expected
            .iter()
            .any(valp_kernel::explain::Transition::is_allowed)
            && expected.iter().any(|t| !t.is_allowed())
    );
    for (got, want) in listed.iter().zip(&expected) {
        assert_eq!(got["kind"], want.kind.as_str());
        assert_eq!(got["target"], want.target.describe());
        assert_eq!(got["actor"], want.actor);
        assert_eq!(got["allowed"], want.is_allowed());
        match &want.judgement {
            Judgement::Allowed { next_status, .. } => {
                assert_eq!(got["next_status"], next_status.as_str());
            }
            Judgement::Refused { code, reasons } => {
                assert_eq!(got["code"], code.as_str());
                assert_eq!(got["reasons"], serde_json::json!(reasons));
            }
        }
    }

    let text = valp(project.path(), &["task", "explain", "demo-1"]);
    assert_eq!(text.code, Some(0), "{text:?}");
    let lines: Vec<&str> = text.stdout.lines().collect();
    assert_eq!(lines.len(), expected.len() + 1);
    assert!(lines[0].starts_with("task demo-1 status "), "{}", lines[0]);
    for (line, want) in lines[1..].iter().zip(&expected) {
        let verdict = if want.is_allowed() {
            "allowed "
        } else {
            "refused "
        };
        assert!(
            line.starts_with(&format!("{verdict}{} ", want.kind.as_str())),
            "{line}"
        );
    }

    let item = valp(
        project.path(),
        &["task", "explain", "demo-1", "--item", "wi-00", "--json"],
    );
    let value: serde_json::Value = serde_json::from_str(&item.stdout).unwrap();
    let targets: Vec<&str> = value["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert!(!targets.is_empty());
    assert!(
        targets
            .iter()
            .all(|t| *t == "item wi-00" || t.ends_with(" of wi-00")),
        "{targets:?}"
    );

    let unknown = valp(
        project.path(),
        &["task", "explain", "demo-1", "--item", "nope"],
    );
    assert_ne!(unknown.code, Some(0));
    assert!(
        unknown.stderr.contains("task demo-1 has no work item nope"),
        "{}",
        unknown.stderr
    );
}
