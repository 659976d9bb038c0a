//! The console's correction cycles (issue 20, console memory): every view the System backend
//! reads carries each task's cycle, which holds a round per correction of the task's history
//! (~30,000 rounds at 10^5 demo entries). The backend hands the same shared cycles to every view
//! until a task moves, so the views read on every tick, the console's copy and the filtered one
//! on screen hold them once, and compare them by pointer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use valp_runtime::clock::SystemClock;
use valp_runtime::doctor::ObserveOptions;
use valp_runtime::system::SystemBackend;
use valp_store::ControlRoot;
use valp_store::io::OsStorage;
use valp_tests::project::Project;
use valp_view::Backend as _;

fn demo(project: &Project, task: &str) {
    project.ok(&[
        "demo",
        "--task",
        task,
        "--entries",
        "150",
        "--work-items",
        "4",
        "--no-default-sockets",
    ]);
}

#[test]
fn views_share_the_correction_cycles_until_a_task_moves() {
    let project = Project::new();
    demo(&project, "demo-1");
    let root = ControlRoot::open(&project.control_root(), Arc::new(OsStorage)).unwrap();
    let options = ObserveOptions {
        scan_default_sockets: false,
        ..ObserveOptions::default()
    };
    let mut backend = SystemBackend::open(root, &SystemClock, options).unwrap();
    let first = backend.view();
    assert_eq!(
        first
            .corrections
            .iter()
            .map(|cycle| cycle.task_id.as_str())
            .collect::<Vec<_>>(),
        ["demo-1"],
        "the demo history has corrections"
    );
    assert!(!first.corrections[0].rounds.is_empty());
    let second = backend.view();
    assert!(
        Arc::ptr_eq(&first.corrections, &second.corrections),
        "nothing moved: the same cycles"
    );

    demo(&project, "demo-2");
    let third = backend.view();
    assert!(!Arc::ptr_eq(&second.corrections, &third.corrections));
    assert_eq!(
        third
            .corrections
            .iter()
            .map(|cycle| cycle.task_id.as_str())
            .collect::<Vec<_>>(),
        ["demo-1", "demo-2"],
        "a new task's cycle is derived and shown"
    );
    assert_eq!(third.corrections[0], first.corrections[0]);
}
