#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The process adapter with real processes: the `valp` binary's detached supervisor runs
//! commands without a shell, and every file it writes is checked (ABI rules, schemas, digests
//! computed independently with `sha256sum`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;
use valp_kernel::canonical::Canonical;
use valp_runtime::abi::{
    AdapterObservation, AdapterRequest, ObservationStatus, Operation, ProofKind,
};
use valp_runtime::adapter::process::{
    self, ContentProof, ProcessBoundProof, ProcessError, RunSpec, Supervisor, SupervisorState,
};
use valp_tests::schemas::{errors, validator};
use valp_tests::valp_binary;

/// The environment variable that turns `launcher_helper` into a short-lived launcher.
const LAUNCH_DIR: &str = "VALP_TEST_PROCESS_LAUNCH_DIR";
const LAUNCH_VALP: &str = "VALP_TEST_PROCESS_LAUNCH_VALP";

struct Attempt {
    _temp: TempDir,
    /// The control root (`.valp`).
    root: PathBuf,
    /// The working folder.
    work: PathBuf,
    /// The attempt folder.
    dir: PathBuf,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

/// The request of `attempt_id` to run `spec`.
fn request_for(attempt_id: &str, spec: &RunSpec) -> AdapterRequest {
    submit_request(attempt_id, &spec.digest(), spec.expected_evidence.clone())
}

/// A `submit` request of `attempt_id` of `TASK-1:build`, generation 1.
fn submit_request(attempt_id: &str, payload_digest: &str, expected: Vec<String>) -> AdapterRequest {
    operation_request(Operation::Submit, attempt_id, payload_digest, expected)
}

/// An `operation` request of `attempt_id` of `TASK-1:build`, generation 1.
fn operation_request(
    operation: Operation,
    attempt_id: &str,
    payload_digest: &str,
    expected: Vec<String>,
) -> AdapterRequest {
    AdapterRequest::new(
        operation,
        "inst-1",
        1,
        "TASK-1",
        "build",
        attempt_id,
        "TASK-1:build:1",
        1,
        payload_digest,
        expected,
    )
}

fn attempt(argv: &[&str], timeout_ms: u64, edit: impl FnOnce(&mut RunSpec)) -> Attempt {
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().join(".valp");
    let work = temp.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut spec = RunSpec::new(strings(argv), work.to_str().unwrap(), timeout_ms);
    edit(&mut spec);
    let request = request_for("attempt-1", &spec);
    let dir = process::prepare(&root.join("runtime/process"), &request, &spec).unwrap();
    Attempt {
        _temp: temp,
        root,
        work,
        dir,
    }
}

fn launch(attempt: &Attempt) -> Supervisor {
    process::launch(&attempt.dir, &valp_binary().unwrap()).unwrap()
}

/// Polls until `condition` holds (panics after `limit`).
fn eventually<T>(limit: Duration, what: &str, mut condition: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the final observation and for the supervisor to exit 0; returns every observation.
fn finish(attempt: &Attempt, supervisor: &mut Supervisor) -> Vec<AdapterObservation> {
    let observations = eventually(Duration::from_secs(15), "the final observation", || {
        let observations = process::read_observations(&attempt.dir)
            .unwrap()
            .observations;
        observations
            .last()
            .is_some_and(|last| process::is_final(last.status))
            .then_some(observations)
    });
    let status = eventually(Duration::from_secs(5), "the supervisor's exit", || {
        supervisor.try_wait().unwrap()
    });
    assert!(status.success(), "supervisor exited with {status}");
    check_files(attempt, &observations);
    observations
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn assert_valid(schema: &str, bytes: &[u8]) {
    let found = errors(&validator(schema), &json(bytes));
    assert!(found.is_empty(), "{schema}: {found:#?}");
}

/// Every file of the folder: canonical, valid against its schema, segments consistent with the
/// proof files they name.
fn check_files(attempt: &Attempt, observations: &[AdapterObservation]) {
    for observation in observations {
        assert_valid(
            "console/adapter-observation.schema.json",
            &observation.canonical_bytes(),
        );
        for segment in &observation.provenance {
            for reference in &segment.evidence_refs {
                assert!(attempt.root.join(reference).is_file(), "{reference}");
            }
            let proof = std::fs::read(attempt.root.join(&segment.evidence_refs[0])).unwrap();
            assert_eq!(segment.output_digest, sha256sum_bytes(&proof));
        }
    }
    for (file, schema) in [
        ("run.json", "console/process-run-spec.schema.json"),
        ("supervisor.json", "console/process-supervisor.schema.json"),
        (
            "proofs/process_bound.json",
            "console/process-bound-proof.schema.json",
        ),
        (
            "proofs/content_bound.json",
            "console/process-content-proof.schema.json",
        ),
    ] {
        if let Ok(bytes) = std::fs::read(attempt.dir.join(file)) {
            assert_valid(schema, &bytes);
        }
    }
    if let Ok(entries) = std::fs::read_dir(attempt.dir.join("control")) {
        for entry in entries {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert_valid("console/process-control.schema.json", &bytes);
        }
    }
}

fn sha256sum(path: &Path) -> String {
    let output = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    format!("sha256:{}", text.split_whitespace().next().unwrap())
}

fn sha256sum_bytes(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bytes");
    std::fs::write(&path, bytes).unwrap();
    sha256sum(&path)
}

fn process_proof(attempt: &Attempt) -> ProcessBoundProof {
    ProcessBoundProof::decode(
        &std::fs::read(attempt.dir.join("proofs/process_bound.json")).unwrap(),
    )
    .unwrap()
}

fn content_proof(attempt: &Attempt) -> ContentProof {
    ContentProof::decode(&std::fs::read(attempt.dir.join("proofs/content_bound.json")).unwrap())
        .unwrap()
}

fn stdout_of(attempt: &Attempt) -> String {
    std::fs::read_to_string(attempt.dir.join("stdout")).unwrap_or_default()
}

/// Whether `pid` runs (a zombie waiting for a parent that never reaps it does not).
fn runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .next();
        !matches!(state, Some("Z" | "X"))
    })
}

fn final_of(observations: &[AdapterObservation]) -> &AdapterObservation {
    observations.last().unwrap()
}

fn wait_for_stdout(attempt: &Attempt, text: &str) {
    eventually(Duration::from_secs(10), text, || {
        stdout_of(attempt).contains(text).then_some(())
    });
}

fn wait_for_accepted(attempt: &Attempt) {
    eventually(Duration::from_secs(10), "the accepted observation", || {
        (!process::read_observations(&attempt.dir)
            .unwrap()
            .observations
            .is_empty())
        .then_some(())
    });
}

#[test]
fn success_with_expected_evidence() {
    let attempt = attempt(
        &[
            "sh",
            "-c",
            "mkdir -p out && printf 'report\\n' > out/a.txt && printf x > b.txt && echo done && \
             echo warn >&2",
        ],
        10_000,
        |spec| spec.expected_evidence = strings(&["out/a.txt", "b.txt"]),
    );
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);

    assert_eq!(observations.len(), 2);
    let accepted = &observations[0];
    assert_eq!(accepted.status, ObservationStatus::Accepted);
    assert_eq!(accepted.provenance.len(), 1);
    assert_eq!(accepted.provenance[0].proof_kind, ProofKind::ProcessBound);
    let done = final_of(&observations);
    assert_eq!(
        done.status,
        ObservationStatus::Completed,
        "{:?}",
        done.reason
    );
    assert_eq!(done.reason, None);
    assert_eq!(done.evidence_refs, strings(&["out/a.txt", "b.txt"]));
    let kinds: Vec<_> = done.provenance.iter().map(|s| s.proof_kind).collect();
    assert_eq!(kinds, [ProofKind::ProcessBound, ProofKind::ContentBound]);
    assert_eq!(done.provenance[0], accepted.provenance[0]);
    assert_eq!(done.request, accepted.request);

    let bound = process_proof(&attempt);
    let identity = format!("process:{}:{}", bound.pid, bound.start_ticks);
    assert_eq!(bound.runtime_identity, identity);
    assert_eq!(done.runtime_identity.as_deref(), Some(identity.as_str()));
    assert_eq!(done.provenance[0].output_identity, identity);
    assert_eq!(bound.submission_id, done.request.request_id);
    assert_eq!(bound.argv_digest.len(), 71);
    assert!(!runs(bound.pid));

    let content = content_proof(&attempt);
    assert_eq!((content.exit_code, content.signal), (Some(0), None));
    assert!(!content.timed_out && !content.cancelled);
    assert_eq!(content.submission_id, done.request.request_id);
    assert_eq!(stdout_of(&attempt), "done\n");
    assert_eq!(
        content.stdout.digest,
        sha256sum(&attempt.dir.join("stdout"))
    );
    assert_eq!(content.stdout.bytes, 5);
    assert_eq!(
        content.stderr.digest,
        sha256sum(&attempt.dir.join("stderr"))
    );
    assert_eq!(content.stderr.bytes, 5);
    for (record, path) in content.expected_evidence.iter().zip(["out/a.txt", "b.txt"]) {
        assert_eq!(record.path, path);
        assert_eq!(
            record.digest.as_deref(),
            Some(sha256sum(&attempt.work.join(path)).as_str())
        );
    }
    assert_eq!(content.expected_evidence[0].bytes, Some(7));

    // Segment references are relative to the control root and name the proofs and streams.
    let prefix = process::attempt_ref("attempt-1");
    assert_eq!(
        done.provenance[1].evidence_refs,
        [
            format!("{prefix}/proofs/content_bound.json"),
            format!("{prefix}/stdout"),
            format!("{prefix}/stderr"),
        ]
    );
    assert_eq!(
        supervisor_state(&attempt),
        SupervisorState::Finished {
            status: ObservationStatus::Completed
        }
    );
    // A folder is run once: neither a second launch nor a second supervisor runs it again.
    assert!(matches!(
        process::launch(&attempt.dir, &valp_binary().unwrap()),
        Err(ProcessError::AlreadySupervised { .. })
    ));
    let again = Command::new(valp_binary().unwrap())
        .args(["adapter", "process", "--dir"])
        .arg(&attempt.dir)
        .output()
        .unwrap();
    assert!(!again.status.success());
    assert_eq!(
        process::read_observations(&attempt.dir)
            .unwrap()
            .observations
            .len(),
        2
    );
}

fn supervisor_state(attempt: &Attempt) -> SupervisorState {
    process::supervisor_state(&attempt.dir)
}

#[test]
fn a_non_zero_exit_blocks() {
    let attempt = attempt(&["sh", "-c", "echo failing; exit 3"], 10_000, |_| {});
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    let done = final_of(&observations);
    assert_eq!(done.status, ObservationStatus::Blocked);
    assert_eq!(done.reason.as_deref(), Some("exit_code:3"));
    assert_eq!(content_proof(&attempt).exit_code, Some(3));
    assert_eq!(stdout_of(&attempt), "failing\n");
}

#[test]
fn missing_expected_evidence_blocks() {
    let attempt = attempt(&["true"], 10_000, |spec| {
        spec.expected_evidence = strings(&["out/missing.txt"]);
    });
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    let done = final_of(&observations);
    assert_eq!(done.status, ObservationStatus::Blocked);
    assert_eq!(
        done.reason.as_deref(),
        Some("missing_expected_evidence:out/missing.txt")
    );
    assert!(done.evidence_refs.is_empty());
    let content = content_proof(&attempt);
    assert_eq!(content.exit_code, Some(0));
    assert_eq!(content.expected_evidence[0].digest, None);
    assert_eq!(content.expected_evidence[0].bytes, None);
}

#[test]
fn a_timeout_terminates_the_process() {
    let attempt = attempt(&["sleep", "30"], 300, |_| {});
    let started = Instant::now();
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert!(started.elapsed() < Duration::from_secs(5));
    let done = final_of(&observations);
    assert_eq!(done.status, ObservationStatus::Blocked);
    assert_eq!(done.reason.as_deref(), Some("timeout"));
    let content = content_proof(&attempt);
    assert!(content.timed_out);
    assert_eq!((content.exit_code, content.signal), (None, Some(15)));
    assert!(!runs(process_proof(&attempt).pid));
}

#[test]
fn cancel_kills_the_process_group() {
    let attempt = attempt(
        &["sh", "-c", "sleep 30 & echo grandchild $!; sleep 30"],
        30_000,
        |_| {},
    );
    let mut supervisor = launch(&attempt);
    wait_for_stdout(&attempt, "grandchild ");
    let grandchild: u32 = stdout_of(&attempt)
        .trim()
        .strip_prefix("grandchild ")
        .unwrap()
        .parse()
        .unwrap();
    let child = process_proof(&attempt).pid;
    assert!(runs(child) && runs(grandchild));
    let asked = Instant::now();
    process::request_cancel(&attempt.dir, "operator stop").unwrap();
    let observations = finish(&attempt, &mut supervisor);
    // Both sleeps last 30 s: ending well before that is the cancel's doing. The bound is loose
    // because on a loaded machine the supervisor's poll and the kill can wait seconds for a core.
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    let done = final_of(&observations);
    assert_eq!(done.status, ObservationStatus::Cancelled);
    assert_eq!(done.reason.as_deref(), Some("cancelled:operator stop"));
    assert!(content_proof(&attempt).cancelled);
    // A process sent SIGKILL keeps its last state in /proc until it is scheduled to die, and the
    // grandchild is reaped by init, not by the supervisor: wait for both to be gone.
    eventually(Duration::from_secs(5), "the child to die", || {
        (!runs(child)).then_some(())
    });
    eventually(Duration::from_secs(5), "the grandchild to die", || {
        (!runs(grandchild)).then_some(())
    });
}

#[test]
fn sigkill_follows_an_ignored_sigterm_after_the_grace_period() {
    let attempt = attempt(
        &["sh", "-c", "trap '' TERM; echo ready; sleep 30"],
        30_000,
        |spec| spec.grace_ms = 500,
    );
    let mut supervisor = launch(&attempt);
    wait_for_stdout(&attempt, "ready");
    let asked = Instant::now();
    process::request_cancel(&attempt.dir, "stop").unwrap();
    let observations = finish(&attempt, &mut supervisor);
    let took = asked.elapsed();
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(took < Duration::from_millis(3500), "{took:?}");
    assert_eq!(final_of(&observations).status, ObservationStatus::Cancelled);
    let content = content_proof(&attempt);
    assert_eq!(content.signal, Some(9));
    assert!(!runs(process_proof(&attempt).pid));
}

#[test]
fn interrupt_delivers_sigint() {
    let attempt = attempt(
        &[
            "sh",
            "-c",
            "trap 'echo interrupted; exit 7' INT; echo ready; while :; do sleep 0.05; done",
        ],
        30_000,
        |_| {},
    );
    let mut supervisor = launch(&attempt);
    wait_for_stdout(&attempt, "ready");
    process::request_interrupt(&attempt.dir).unwrap();
    let observations = finish(&attempt, &mut supervisor);
    let done = final_of(&observations);
    assert_eq!(done.status, ObservationStatus::Blocked);
    assert_eq!(done.reason.as_deref(), Some("exit_code:7"));
    assert_eq!(stdout_of(&attempt), "ready\ninterrupted\n");
    assert_eq!(content_proof(&attempt).interrupts, 1);
}

#[test]
fn arguments_are_not_interpreted_by_a_shell() {
    let attempt = attempt(&["echo", "a;b", "$HOME", "*"], 10_000, |_| {});
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(final_of(&observations).status, ObservationStatus::Completed);
    assert_eq!(stdout_of(&attempt), "a;b $HOME *\n");
}

#[test]
fn the_environment_is_minimal() {
    let attempt = attempt(&["env"], 10_000, |spec| {
        spec.env.insert("VALP_EXTRA".into(), "x y".into());
    });
    let mut supervisor = launch(&attempt);
    finish(&attempt, &mut supervisor);
    let mut names: Vec<String> = stdout_of(&attempt)
        .lines()
        .map(|line| line.split('=').next().unwrap().to_owned())
        .collect();
    names.sort();
    let mut expected: Vec<String> = ["HOME", "LANG", "PATH"]
        .into_iter()
        .filter(|name| std::env::var_os(name).is_some())
        .map(str::to_owned)
        .collect();
    expected.push("VALP_EXTRA".into());
    expected.sort();
    assert_eq!(names, expected);
    assert!(stdout_of(&attempt).contains("VALP_EXTRA=x y\n"));
}

#[test]
fn output_past_the_cap_is_dropped_and_noted() {
    let attempt = attempt(&["head", "-c", "100000", "/dev/zero"], 10_000, |spec| {
        spec.stdout_cap_bytes = 1000;
    });
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(final_of(&observations).status, ObservationStatus::Completed);
    let content = content_proof(&attempt);
    assert_eq!(content.stdout.bytes, 1000);
    assert!(content.stdout.truncated);
    assert!(!content.stderr.truncated);
    assert_eq!(
        std::fs::read(attempt.dir.join("stdout")).unwrap(),
        vec![0; 1000]
    );
}

#[test]
fn a_payload_digest_mismatch_runs_nothing() {
    let attempt = attempt(&["sh", "-c", "echo ran > ran.txt"], 10_000, |_| {});
    // Someone changes run.json after the request was made.
    let other = RunSpec::new(
        strings(&["sh", "-c", "echo other > ran.txt"]),
        attempt.work.to_str().unwrap(),
        10_000,
    );
    std::fs::write(attempt.dir.join("run.json"), other.canonical_bytes()).unwrap();
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(observations.len(), 1);
    let refused = &observations[0];
    assert_eq!(refused.status, ObservationStatus::Blocked);
    assert_eq!(refused.reason.as_deref(), Some("payload_digest_mismatch"));
    assert!(refused.provenance.is_empty());
    assert_eq!(refused.runtime_identity, None);
    assert!(!attempt.work.join("ran.txt").exists());
    assert!(!attempt.dir.join("stdout").exists());
    assert!(!attempt.dir.join("proofs/process_bound.json").exists());
}

#[test]
fn prepare_refuses_a_mismatched_request() {
    let temp = tempfile::tempdir().unwrap();
    let spec = RunSpec::new(strings(&["true"]), "/", 1000);
    let mut other = spec.clone();
    other.timeout_ms = 2000;
    let request = request_for("attempt-1", &other);
    let root = temp.path().join("runtime/process");
    let refused =
        |request: &AdapterRequest, spec: &RunSpec| match process::prepare(&root, request, spec) {
            Err(ProcessError::Refused(reason)) => reason,
            other => panic!("not refused: {other:?}"),
        };
    assert_eq!(
        refused(&request, &spec),
        "the request's payload_digest is not the run spec's digest"
    );
    let mut expects = spec.clone();
    expects.expected_evidence = strings(&["a.txt"]);
    let request = submit_request("attempt-1", &expects.digest(), Vec::new());
    assert_eq!(
        refused(&request, &expects),
        "the request and the run spec expect different evidence"
    );
    let cancel = operation_request(Operation::Cancel, "attempt-1", &spec.digest(), Vec::new());
    assert_eq!(
        refused(&cancel, &spec),
        "the process adapter runs submit requests, not cancel"
    );
    assert!(!root.exists(), "a refused request writes no attempt folder");
    // Preparing the same thing twice is fine; something else in the same folder is not.
    let request = request_for("attempt-1", &spec);
    let dir = process::prepare(&root, &request, &spec).unwrap();
    assert_eq!(process::prepare(&root, &request, &spec).unwrap(), dir);
    assert!(process::prepare(&root, &request_for("attempt-1", &other), &other).is_err());
    assert_eq!(
        process::supervisor_state(&dir),
        SupervisorState::NotLaunched
    );
}

/// Not a test on its own: with [`LAUNCH_DIR`] set, this process launches a supervisor and exits
/// at once (see `the_supervisor_outlives_its_launcher`).
#[test]
fn launcher_helper() {
    let (Some(dir), Some(valp)) = (std::env::var_os(LAUNCH_DIR), std::env::var_os(LAUNCH_VALP))
    else {
        return;
    };
    let supervisor = process::launch(Path::new(&dir), Path::new(&valp)).unwrap();
    println!("launched {}", supervisor.pid());
}

#[test]
fn the_supervisor_outlives_its_launcher() {
    let attempt = attempt(
        &["sh", "-c", "sleep 1; echo late > late.txt"],
        10_000,
        |spec| spec.expected_evidence = strings(&["late.txt"]),
    );
    let launcher = Command::new(std::env::current_exe().unwrap())
        .args([
            "launcher_helper",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(LAUNCH_DIR, &attempt.dir)
        .env(LAUNCH_VALP, valp_binary().unwrap())
        .output()
        .unwrap();
    assert!(launcher.status.success(), "{launcher:?}");
    // The launcher is gone; its supervisor is not, and the work is not done yet.
    let SupervisorState::Running { pid } = supervisor_state(&attempt) else {
        panic!("{:?}", supervisor_state(&attempt));
    };
    assert!(runs(pid));
    assert!(!attempt.work.join("late.txt").exists());
    let done = eventually(Duration::from_secs(15), "the final observation", || {
        let observations = process::read_observations(&attempt.dir)
            .unwrap()
            .observations;
        observations
            .last()
            .filter(|last| process::is_final(last.status))
            .cloned()
    });
    assert_eq!(done.status, ObservationStatus::Completed);
    assert_eq!(done.evidence_refs, strings(&["late.txt"]));
    assert_eq!(
        std::fs::read_to_string(attempt.work.join("late.txt")).unwrap(),
        "late\n"
    );
    eventually(Duration::from_secs(5), "the supervisor's exit", || {
        (!runs(pid)).then_some(())
    });
    check_files(
        &attempt,
        &process::read_observations(&attempt.dir)
            .unwrap()
            .observations,
    );
}

#[test]
fn a_killed_supervisor_is_reported_dead() {
    let attempt = attempt(&["sleep", "30"], 30_000, |_| {});
    let mut supervisor = launch(&attempt);
    wait_for_accepted(&attempt);
    assert_eq!(
        supervisor_state(&attempt),
        SupervisorState::Running {
            pid: supervisor.pid()
        }
    );
    let killed = Command::new("kill")
        .args(["-s", "KILL", &supervisor.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    supervisor.wait().unwrap();
    assert_eq!(
        supervisor_state(&attempt),
        SupervisorState::Dead {
            pid: supervisor.pid()
        }
    );
    // Its command is an orphan now; the System can stop it (and only it).
    let orphan = process_proof(&attempt).pid;
    assert!(runs(orphan));
    assert!(process::terminate_orphan(&attempt.dir).unwrap());
    eventually(Duration::from_secs(5), "the orphan's end", || {
        (!runs(orphan)).then_some(())
    });
    let observations = process::read_observations(&attempt.dir)
        .unwrap()
        .observations;
    assert_eq!(observations.len(), 1);
    check_files(&attempt, &observations);
}

#[test]
fn a_cancel_before_the_start_runs_nothing() {
    let attempt = attempt(&["sh", "-c", "echo ran > ran.txt"], 10_000, |_| {});
    process::request_cancel(&attempt.dir, "changed my mind").unwrap();
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(observations.len(), 1);
    assert_eq!(observations[0].status, ObservationStatus::Cancelled);
    assert_eq!(
        observations[0].reason.as_deref(),
        Some("cancelled:changed my mind")
    );
    assert!(observations[0].provenance.is_empty());
    assert!(!attempt.work.join("ran.txt").exists());
}

#[test]
fn a_program_that_cannot_start_blocks() {
    let attempt = attempt(&["valp-no-such-program-anywhere"], 10_000, |_| {});
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(observations.len(), 1);
    assert_eq!(observations[0].status, ObservationStatus::Blocked);
    assert_eq!(
        observations[0].reason.as_deref(),
        Some("spawn_failed:NotFound")
    );
}

#[test]
fn the_schemas_refuse_what_the_abi_refuses() {
    let attempt = attempt(&["true"], 10_000, |_| {});
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    let good = json(&final_of(&observations).canonical_bytes());
    let observation = validator("console/adapter-observation.schema.json");
    assert!(errors(&observation, &good).is_empty());
    for bad_ref in [
        "../x",
        "/etc/passwd",
        "a//b",
        "./a",
        "a/..",
        "a\\b",
        "a\nb",
        "",
    ] {
        let mut bad = good.clone();
        bad["evidence_refs"] = serde_json::json!([bad_ref]);
        assert!(!errors(&observation, &bad).is_empty(), "{bad_ref:?}");
    }
    for ok_ref in [".hidden/x", "a..b", "..a/b", "out/report.txt"] {
        let mut ok = good.clone();
        ok["evidence_refs"] = serde_json::json!([ok_ref]);
        assert!(errors(&observation, &ok).is_empty(), "{ok_ref:?}");
    }
    let mut bad = good.clone();
    bad["provenance"][0]["acknowledged"] = Value::Bool(false);
    assert!(!errors(&observation, &bad).is_empty());
    let mut bad = good;
    bad["status"] = Value::String("finished".into());
    assert!(!errors(&observation, &bad).is_empty());

    let run = validator("console/process-run-spec.schema.json");
    let spec = json(&std::fs::read(attempt.dir.join("run.json")).unwrap());
    for (member, value) in [
        ("argv", serde_json::json!([])),
        ("cwd", serde_json::json!("relative")),
        ("timeout_ms", serde_json::json!(0)),
        ("env", serde_json::json!({"A=B": "x"})),
    ] {
        let mut bad = spec.clone();
        bad[member] = value;
        assert!(!errors(&run, &bad).is_empty(), "{member}");
    }
}

#[test]
fn files_that_fail_the_checks_are_rejected_one_by_one_and_the_rest_still_count() {
    let attempt = attempt(&["true"], 10_000, |_| {});
    let mut supervisor = launch(&attempt);
    let observations = finish(&attempt, &mut supervisor);
    assert_eq!(observations.len(), 2);
    let folder = attempt.dir.join("observations");
    // Another attempt's valid observation, garbage, an oversized file, a bad name, and a
    // valid observation of this request after a gap.
    let mut foreign = observations[0].request.clone();
    foreign.attempt_id = "someone-else".to_owned();
    foreign.request_id = foreign.content_digest();
    let stranger = AdapterObservation::new(
        foreign,
        3,
        ObservationStatus::Unsupported,
        Vec::new(),
        Vec::new(),
        None,
        Some("not yours".to_owned()),
    );
    std::fs::write(folder.join("000003.json"), stranger.canonical_bytes()).unwrap();
    std::fs::write(folder.join("000004.json"), b"{not json").unwrap();
    std::fs::write(folder.join("000005.json"), vec![b' '; (1 << 20) + 1]).unwrap();
    std::fs::write(folder.join("notes.txt"), b"hello").unwrap();
    let mut late = observations[1].clone();
    late.sequence = 7;
    late.observation_id = late.content_digest();
    std::fs::write(folder.join("000007.json"), late.canonical_bytes()).unwrap();

    let read = process::read_observations(&attempt.dir).unwrap();
    assert_eq!(read.observations, observations);
    let mut rejected: Vec<String> = read
        .rejected
        .iter()
        .map(|error| match error {
            ProcessError::Invalid { path, reason } => {
                format!("{}: {reason}", path.file_name().unwrap().to_string_lossy())
            }
            other => panic!("{other}"),
        })
        .collect();
    rejected.sort();
    assert_eq!(rejected.len(), 5, "{rejected:#?}");
    assert_eq!(rejected[0], "000003.json: observes another request");
    assert!(rejected[1].starts_with("000004.json: "), "{rejected:#?}");
    assert_eq!(rejected[2], "000005.json: larger than 1048576 bytes");
    assert_eq!(
        rejected[3],
        "000007.json: observation 3 is missing before it"
    );
    assert_eq!(
        rejected[4],
        "notes.txt: not an observation file name (NNNNNN.json)"
    );
    // The attempt still stands where its own observations put it.
    assert_eq!(
        supervisor_state(&attempt),
        SupervisorState::Finished {
            status: ObservationStatus::Completed
        }
    );
}
