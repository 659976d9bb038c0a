//! A short run of the pty harness (`valp_tests::pty`) over the real `valp` console: every key
//! is answered by a frame, the idle measurement reads the process, and `q` ends the console.
//! Nothing here is timed against a target (CI machines vary); the figures come from the
//! `console_pty` benchmark (`cargo bench -p valp-tests --bench console_pty`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use valp_tests::project::Project;
use valp_tests::pty::{Console, Fixture};

#[test]
fn the_harness_drives_the_console_and_sees_a_frame_for_every_key() {
    let fixture = Fixture::new(3, 10, 1);
    let mut console = Console::start(fixture.project.path(), 120, 40);
    console.wait_for("task-002", Duration::from_secs(20));
    for at in 0..20 {
        let key: &[u8] = if at % 4 < 2 { b"j" } else { b"k" };
        assert!(
            console.key_to_frame(key).is_some(),
            "key {at} ({key:?}) got no frame"
        );
    }
    let (share, _frames) = console.idle_cpu(Duration::from_secs(2));
    assert!(share >= 0.0, "a CPU share of {share}");
    assert_eq!(console.quit(Duration::from_secs(5)), Some(0));
}

/// A control root whose task journal takes a while to verify: the first frame comes before it
/// is open, the footer says how far the open got, and `q` ends the console at once meanwhile.
#[test]
fn a_long_open_draws_at_once_shows_its_progress_and_q_quits_during_it() {
    let project = Project::new();
    project.ok(&["demo", "--entries", "30000", "--work-items", "20"]);
    // Without its snapshots the open replays every line. (With them it ends within 100 ms
    // now that the Activity history reads back from the tip and the demo leaves the
    // correction fold's file: nothing left to show progress of.)
    std::fs::remove_dir_all(project.path().join(".valp/tasks/demo-1/snapshots")).unwrap();
    let mut console = Console::start(project.path(), 120, 40);
    assert!(console.first_frame(Duration::from_secs(20)).is_some());
    // Drawn only while the open goes on (after 100 ms).
    console.wait_for("verified", Duration::from_secs(20));
    assert_eq!(console.quit(Duration::from_secs(1)), Some(0));
}

/// The console runs for hours, mostly idle: it turns transparent huge pages off for itself
/// (`prctl(PR_SET_THP_DISABLE)`), so its heap is not held in 2 MiB pages it only partly uses.
#[test]
fn the_console_runs_without_transparent_huge_pages() {
    let project = Project::new();
    project.ok(&["demo", "--entries", "10"]);
    let mut console = Console::start(project.path(), 80, 24);
    assert!(console.first_frame(Duration::from_secs(20)).is_some());
    let status = std::fs::read_to_string(format!("/proc/{}/status", console.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|line| line.split_whitespace().eq(["THP_enabled:", "0"])),
        "{status}"
    );
    assert_eq!(console.quit(Duration::from_secs(5)), Some(0));
}
