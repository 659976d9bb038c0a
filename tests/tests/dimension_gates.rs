//! The dimension gates (RFC 0002 §10.1) end to end, through the real `valp` binary: a plan with
//! a `[dimensions]` section freezes the dimension gates in the Done policy (v3), the runtime measures at closure, and the
//! Done gate passes or refuses naming the dimension; an unsupported operator or version is
//! refused at publish with the spec's exact code.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::sync::Arc;

use valp_runtime::runtime::driver::{Driver, Progress};
use valp_runtime::runtime::workflow::Wait;
use valp_store::ControlRoot;
use valp_store::io::OsStorage;
use valp_tests::project::{Project, item, plan};
use valp_view::Backend as _;

/// A task with one work item, `checks` verification commands that pass, and a required Quality
/// gate: at least two verification checks passed in the final round. Cost has an advisory rule
/// over tokens, which valp does not measure.
fn gated(task: &str, checks: usize) -> String {
    let mut body = item("work", "required", &[], &["true"], &[]);
    body.extend(
        (0..checks)
            .map(|index| format!("[[verification]]\nid = \"check-{index}\"\nargv = [\"true\"]\n")),
    );
    body.push_str(
        "[dimensions]\nversion = 1\n\
         [dimensions.quality]\nrequired = true\n\
         rules = [{ rule_id = \"two-checks\", measure = \"quality.verification_passed\", \
         operator = \"ge\", threshold = 2 }]\n\
         [dimensions.cost]\n\
         rules = [{ rule_id = \"tokens\", measure = \"cost.tokens\", operator = \"le\", \
         threshold = 1000 }]\n",
    );
    plan(task, &body)
}

/// Runs `task` to `recording` (run, review pass) and returns what the closing run printed.
fn close(project: &Project, task: &str) -> String {
    project.ok(&["run", "--timeout", "60"]);
    assert_eq!(project.task_status(task), "reviewing");
    project.ok(&["review", task, "pass"]);
    project.ok(&["run", "--timeout", "60"])
}

#[test]
fn a_passing_quality_gate_reaches_done_and_the_journal_verifies() {
    let project = Project::new();
    project.publish("pass", &gated("pass", 2));
    let closed = close(&project, "pass");
    assert!(
        closed.contains(
            "pass  recording_completed  (the Done gate passes (advisory_dimension:cost:unverifiable))"
        ),
        "{closed}"
    );
    assert_eq!(project.task_status("pass"), "done");
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
    // A plan without [dimensions] freezes v1: no gate lines, no gate errors.
    project.publish(
        "plain",
        &plan("plain", &item("work", "required", &[], &["true"], &[])),
    );
    let status = project.ok(&["task", "status", "plain"]);
    assert!(!status.contains("  gate"), "{status}");
    // Nor does a task that was never published from a plan (its journal has no first event).
    let root = ControlRoot::open(&project.control_root(), Arc::new(OsStorage)).unwrap();
    let installation = root.installation().installation_id.clone();
    let genesis = valp_kernel::replay::GenesisRoot {
        state: valp_kernel::State::genesis(
            installation,
            1,
            valp_kernel::Identity::new(valp_kernel::IdentityKind::Task, "bare").unwrap(),
            Vec::new(),
        ),
    };
    root.create_task(&genesis).unwrap();
    let status = project.ok(&["task", "status", "bare"]);
    assert!(!status.contains("  gate"), "{status}");
}

#[test]
fn a_failing_quality_gate_refuses_done_and_names_the_dimension() {
    let project = Project::new();
    project.publish("fail", &gated("fail", 1));
    let closed = close(&project, "fail");
    assert!(closed.contains("fail: recording at revision"), "{closed}");
    assert_eq!(project.task_status("fail"), "recording");
    // The refusal the runtime hands to the Leader (the console shows it as the task's wait).
    let root = ControlRoot::open(&project.control_root(), Arc::new(OsStorage)).unwrap();
    let active = root.ledger_read_only().unwrap().live().state().active_epoch;
    let mut driver = Driver::open(&root, "fail", "valp".into()).unwrap();
    let step = driver.step(active).unwrap();
    assert_eq!(
        step,
        Progress::Waiting(Wait::Leader(
            "the Done gate refuses: dimension_gate:quality:fail; quality gate fail: \
             rule_failed:two-checks:quality.verification_passed=1:ge:2"
                .to_owned()
        ))
    );
    drop(driver);
    // The console's task row carries the four verdicts, with the reasons of those that fail.
    let options = valp_runtime::doctor::ObserveOptions {
        scan_default_sockets: false,
        ..valp_runtime::doctor::ObserveOptions::default()
    };
    let clock = valp_runtime::clock::SystemClock;
    let mut backend = valp_runtime::system::SystemBackend::open(root, &clock, options).unwrap();
    let view = backend.view();
    let row = view.tasks.iter().find(|row| row.task_id == "fail").unwrap();
    assert_eq!(
        row.gates,
        "quality* fail (rule_failed:two-checks:quality.verification_passed=1:ge:2) · \
         experience pass · cost unverifiable (measure_unavailable:tokens:cost.tokens) · \
         stability pass"
    );
    // The task's detail shows the four gates.
    let status = project.ok(&["task", "status", "fail"]);
    let gates: Vec<&str> = status
        .lines()
        .filter(|line| line.starts_with("  gate"))
        .collect();
    assert_eq!(
        gates,
        [
            "  gate quality    required fail: rule_failed:two-checks:quality.verification_passed=1:ge:2",
            "  gate experience advisory pass",
            "  gate cost       advisory unverifiable VALP-E-DIMENSION-GATE-UNVERIFIABLE: \
             measure_unavailable:tokens:cost.tokens",
            "  gate stability  advisory pass",
        ],
        "{status}"
    );
}

#[test]
fn an_unsupported_operator_or_version_is_refused_at_publish_with_its_code() {
    let project = Project::new();
    let text = gated("op", 2).replace("operator = \"ge\"", "operator = \"approx\"");
    std::fs::write(project.path().join("op.toml"), &text).unwrap();
    let refused = project.valp(&["task", "publish", "op.toml"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "dimensions.quality.rules[0].operator: VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR: \
             operator \"approx\" is not supported (expected one of: eq, ne, lt, le, gt, ge)\n"
        ),
        "{}",
        refused.stderr
    );
    let text = gated("ver", 2).replace("version = 1", "version = 2");
    std::fs::write(project.path().join("ver.toml"), &text).unwrap();
    let refused = project.valp(&["task", "publish", "ver.toml"]);
    assert_eq!(refused.code, Some(2), "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "dimensions.version: VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION: version 2 is not \
             supported (supported: 1)\n"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(project.ok(&["task", "status"]), "no tasks\n");
}

#[test]
fn timeouts_retries_and_failed_attempts_are_measured_for_stability() {
    let project = Project::new();
    let body = format!(
        "{}[execution]\nretry_budget = 2\n\
         [dimensions]\nversion = 1\n\
         [dimensions.stability]\n\
         rules = [\
         {{ rule_id = \"no-timeouts\", measure = \"stability.timeouts\", operator = \"eq\", threshold = 0 }}, \
         {{ rule_id = \"no-retries\", measure = \"stability.retries\", operator = \"eq\", threshold = 0 }}, \
         {{ rule_id = \"no-failures\", measure = \"stability.attempts_failed\", operator = \"eq\", threshold = 0 }}]\n",
        item("slow", "required", &[], &["sleep", "30"], &[])
            .replace("timeout_seconds = 60", "timeout_seconds = 1")
    );
    project.publish("slow", &plan("slow", &body));
    project.ok(&["run", "--timeout", "60"]);
    // A spent retry budget blocks the item (the Leader may still retry it).
    assert_eq!(project.item_status("slow", "slow"), "blocked");
    let status = project.ok(&["task", "status", "slow"]);
    let stability: Vec<&str> = status
        .lines()
        .filter(|line| line.starts_with("  gate stability"))
        .collect();
    assert_eq!(
        stability,
        [
            "  gate stability  advisory fail: rule_failed:no-timeouts:stability.timeouts=2:eq:0, \
          rule_failed:no-retries:stability.retries=1:eq:0, \
          rule_failed:no-failures:stability.attempts_failed=2:eq:0"
        ],
        "{status}"
    );
}
