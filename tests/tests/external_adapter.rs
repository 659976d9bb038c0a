//! The external adapter end to end, through the real `valp` binary: a plan work item run by a
//! tool outside valp. The test plays the tool: it reads the request valp wrote under
//! `runtime/external/attempts/<H>/`, builds observations with the ABI types and drops them into
//! `inbox/` (an atomically renamed `*.json`, lines appended to a `*.jsonl`). Every expectation
//! is about what the kernel accepted (task and item statuses, the journal's events and their
//! evidence) and what valp wrote (the request, the cancel request, the effect ledger).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::io::Write as _;
use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::replay::CompactEntry;
use valp_runtime::abi::{
    ABI_VERSION, AdapterObservation, AdapterRequest, ObservationStatus, ProofKind,
    ProvenanceSegment, attempt_folder,
};
use valp_store::chain::ChainReader;
use valp_tests::entry_names;
use valp_tests::project::{Project, external_item, item, plan};

/// The attempt folder valp writes for an external attempt.
fn attempt_dir(project: &Project, attempt_id: &str) -> PathBuf {
    project
        .control_root()
        .join("runtime/external/attempts")
        .join(attempt_folder(attempt_id))
}

/// What the tool finds: the request of `attempt_id`.
fn request_of(project: &Project, attempt_id: &str) -> AdapterRequest {
    let path = attempt_dir(project, attempt_id).join("request.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let request: AdapterRequest = serde_json::from_slice(&bytes).unwrap();
    request.check().unwrap();
    assert_eq!(request.canonical_bytes(), bytes, "written canonically");
    request
}

/// An observation of `request` as the tool reports it: one transport segment of its own.
fn observation(
    request: &AdapterRequest,
    sequence: u64,
    status: ObservationStatus,
    reason: Option<&str>,
) -> AdapterObservation {
    let output = format!("ci-bot:run-{sequence}");
    let segment = ProvenanceSegment {
        segment_id: format!("ci-bot-{sequence}"),
        sequence: 0,
        adapter_id: "ci-bot".to_owned(),
        abi_version: ABI_VERSION.to_owned(),
        input_identity: request.request_id.clone(),
        input_digest: request.payload_digest.clone(),
        output_digest: sha256_digest(output.as_bytes()),
        output_identity: output,
        proof_kind: ProofKind::TransportOnly,
        evidence_refs: vec!["ci/log.txt".to_owned()],
        acknowledged: true,
        failure_code: None,
    };
    let evidence_refs = if status == ObservationStatus::Completed {
        request.expected_evidence_refs.clone()
    } else {
        Vec::new()
    };
    let observation = AdapterObservation::new(
        request.clone(),
        sequence,
        status,
        vec![segment],
        evidence_refs,
        Some("ci-bot:job-7".to_owned()),
        reason.map(str::to_owned),
    );
    observation.check("ci-bot").unwrap();
    observation
}

/// Drops `observation` into `inbox/<name>` as a whole file: written under a temporary name,
/// then renamed into place, as the inbox contract asks.
fn drop_file(project: &Project, name: &str, observation: &AdapterObservation) {
    let path = project.control_root().join("inbox").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let temporary = path.with_file_name(format!(
        ".{}.tmp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&temporary, observation.canonical_bytes()).unwrap();
    std::fs::rename(&temporary, &path).unwrap();
}

/// Appends `observation` to `inbox/<name>` as one line (one `write`, ended by LF); returns the
/// line's byte offset.
fn append_line(project: &Project, name: &str, observation: &AdapterObservation) -> u64 {
    let path = project.control_root().join("inbox").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap();
    let offset = file.metadata().unwrap().len();
    let line = observation.canonical_bytes();
    assert_eq!(line.last(), Some(&b'\n'));
    file.write_all(&line).unwrap();
    offset
}

fn journal_path(project: &Project, task: &str) -> PathBuf {
    project
        .control_root()
        .join("tasks")
        .join(task)
        .join("journal.jsonl")
}

/// Every accepted entry of the task journal.
fn entries(project: &Project, task: &str) -> Vec<CompactEntry> {
    let mut reader = ChainReader::open(&journal_path(project, task)).unwrap();
    let mut found = Vec::new();
    while let Some(line) = reader.next_line().unwrap() {
        if line.seq > 0 {
            found.push(valp_kernel::decode::decode_compact_entry(&line.entry()).unwrap());
        }
    }
    found
}

/// The evidence digests of the journal's `kind` event about `attempt_id`.
fn evidence_of(project: &Project, task: &str, kind: &str, attempt_id: &str) -> Vec<String> {
    let entry = entries(project, task)
        .into_iter()
        .find(|entry| {
            entry.event.kind.as_str() == kind
                && entry
                    .event
                    .attempt_id
                    .as_ref()
                    .is_some_and(|id| id.value() == attempt_id)
        })
        .unwrap_or_else(|| panic!("no {kind} event for {attempt_id}"));
    entry
        .evidence_set
        .into_iter()
        .map(|evidence| evidence.content_digest)
        .collect()
}

/// Whether the evidence store holds `digest`.
fn stored(project: &Project, digest: &str) -> bool {
    project
        .control_root()
        .join("evidence/sha256")
        .join(&digest["sha256:".len()..])
        .is_file()
}

/// After the first `valp run --once` (printing `ran`) of the plan `text` of task `ext`: the
/// request of `ext:review:a1` is written, and nothing else (no supervisor, no process folder),
/// and it binds the work item as published.
fn launched_alone(project: &Project, ran: &str, text: &str) -> AdapterRequest {
    assert!(ran.contains("ext  launched ext:review:a1"), "{ran}");
    assert!(
        ran.contains("ext  attempt_submitted  (review was handed to its adapter)"),
        "{ran}"
    );
    let dir = attempt_dir(project, "ext:review:a1");
    assert_eq!(entry_names(&dir), ["request.json"]);
    assert!(
        !project
            .attempts_dir()
            .join(attempt_folder("ext:review:a1"))
            .exists(),
        "no process supervisor for an external item"
    );
    let request = request_of(project, "ext:review:a1");
    assert_eq!(
        (
            request.task_id.as_str(),
            request.work_item_id.as_str(),
            request.dispatch_id.as_str(),
            request.dispatch_generation,
            request.operation.as_str(),
        ),
        ("ext", "review", "ext:review:1", 1, "submit")
    );
    assert_eq!(request.expected_evidence_refs, ["out/review.md"]);
    // The payload is the work item as published.
    let published = valp_runtime::plan::parse(Path::new("ext.toml"), text.as_bytes()).unwrap();
    assert_eq!(
        request.payload_digest,
        sha256_digest(&published.work_item("review").unwrap().canonical_bytes())
    );
    let status = project.ok(&["task", "status", "ext"]);
    assert!(
        status.contains("attempt ext:review:a1 g1 submitted"),
        "{status}"
    );
    request
}

#[test]
fn an_external_item_reports_through_the_inbox_and_its_dependent_runs_to_done() {
    let project = Project::new();
    let body = [
        external_item("review", &[], &["out/review.md"]),
        item(
            "publish",
            "required",
            &[("review", "hard")],
            &["cp", "out/review.md", "out/published.md"],
            &["out/published.md"],
        ),
    ]
    .concat();
    let text = plan("ext", &body);
    project.publish("ext", &text);

    // The runner hands the attempt to the external adapter: the request, and nothing else.
    let first = project.ok(&["run", "--once"]);
    let request = launched_alone(&project, &first, &text);

    // Without a report nothing happens, however often the runner looks.
    let journal = journal_path(&project, "ext");
    let before = std::fs::read(&journal).unwrap();
    let idle = project.ok(&["run", "--once"]);
    assert!(!idle.contains("attempt_"), "{idle}");
    assert_eq!(std::fs::read(&journal).unwrap(), before);

    // The tool takes the work on (a renamed file, one folder down), does it, and reports the
    // end as a line of its log. Another task's observation in the inbox is none of ours.
    let accepted = observation(&request, 1, ObservationStatus::Accepted, None);
    drop_file(&project, "ci/review-accepted.json", &accepted);
    let elsewhere = AdapterRequest::new(
        request.operation,
        &request.installation_id,
        request.leader_epoch,
        "another-task",
        "review",
        "another-task:review:a1",
        "another-task:review:1",
        1,
        &request.payload_digest,
        Vec::new(),
    );
    drop_file(
        &project,
        "unrelated.json",
        &observation(&elsewhere, 1, ObservationStatus::Accepted, None),
    );
    std::fs::create_dir_all(project.path().join("out")).unwrap();
    std::fs::write(project.path().join("out/review.md"), "looks good\n").unwrap();
    let completed = observation(&request, 2, ObservationStatus::Completed, None);
    append_line(&project, "ci/log.jsonl", &completed);

    let ran = project.ok(&["run", "--timeout", "60"]);
    for expected in [
        "ext  attempt_running  (the adapter started review)",
        "ext  attempt_completed  (review completed with its expected evidence)",
        "ext  attempt_completed  (publish completed with its expected evidence)",
        "ext  work_completed",
        "ext: reviewing",
    ] {
        assert!(ran.contains(expected), "missing {expected:?} in:\n{ran}");
    }
    // Nothing the runtime read was rejected. (The console's feed, which judges order by
    // arrival, may list the earlier observation when the runner found both files at once.)
    assert!(
        !ran.lines().any(|line| line.starts_with("  rejected")),
        "{ran}"
    );
    assert_eq!(project.item_status("ext", "review"), "completed");
    assert_eq!(project.item_status("ext", "publish"), "completed");
    assert_eq!(
        std::fs::read(project.path().join("out/published.md")).unwrap(),
        b"looks good\n"
    );

    // The journal holds the events with the observations and the evidence file as evidence,
    // stored content-addressed.
    let running = evidence_of(&project, "ext", "attempt_running", "ext:review:a1");
    assert_eq!(running, [sha256_digest(&accepted.canonical_bytes())]);
    let finished = evidence_of(&project, "ext", "attempt_completed", "ext:review:a1");
    let artifact = sha256_digest(b"looks good\n");
    let observed = sha256_digest(&completed.canonical_bytes());
    assert!(finished.contains(&observed), "{finished:?}");
    assert!(finished.contains(&artifact), "{finished:?}");
    let submitted = evidence_of(&project, "ext", "attempt_submitted", "ext:review:a1");
    assert_eq!(submitted, [sha256_digest(&request.canonical_bytes())]);
    for digest in running.iter().chain(&finished).chain(&submitted) {
        assert!(
            stored(&project, digest),
            "{digest} is not in the evidence store"
        );
    }

    project.ok(&["review", "ext", "pass"]);
    let closed = project.ok(&["run"]);
    assert!(
        closed.contains("ext  recording_completed  (the Done gate passes)"),
        "{closed}"
    );
    assert_eq!(project.task_status("ext"), "done");
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
}

#[test]
fn a_failed_report_is_retried_and_a_completion_without_its_evidence_fails() {
    let project = Project::new();
    project.publish(
        "flaky",
        &plan("flaky", &external_item("build", &[], &["out/build.txt"])),
    );
    let first = project.ok(&["run", "--once"]);
    assert!(first.contains("flaky  launched flaky:build:a1"), "{first}");
    let request = request_of(&project, "flaky:build:a1");
    append_line(
        &project,
        "build.jsonl",
        &observation(&request, 1, ObservationStatus::Accepted, None),
    );
    append_line(
        &project,
        "build.jsonl",
        &observation(
            &request,
            2,
            ObservationStatus::Blocked,
            Some("tests failed"),
        ),
    );

    // The failure fences the attempt and the budget (2) gives the item a second one.
    let retried = project.ok(&["run", "--once"]);
    for expected in [
        "flaky  attempt_running",
        "flaky  attempt_fenced  (build attempt 1 failed)",
        "flaky  attempt_created  (retry 2 of 2 for work_item:build)",
        "flaky  launched flaky:build:a2",
    ] {
        assert!(
            retried.contains(expected),
            "missing {expected:?} in:\n{retried}"
        );
    }
    let fenced = evidence_of(&project, "flaky", "attempt_fenced", "flaky:build:a1");
    let blocked = observation(
        &request,
        2,
        ObservationStatus::Blocked,
        Some("tests failed"),
    );
    assert!(fenced.contains(&sha256_digest(&blocked.canonical_bytes())));
    let second = request_of(&project, "flaky:build:a2");
    assert_eq!(second.dispatch_generation, 2);
    assert_ne!(second.request_id, request.request_id);

    // The second attempt reports completed, but the file it had to produce is not there: that
    // is no completion, and the budget is spent.
    append_line(
        &project,
        "build.jsonl",
        &observation(&second, 1, ObservationStatus::Accepted, None),
    );
    append_line(
        &project,
        "build.jsonl",
        &observation(&second, 2, ObservationStatus::Completed, None),
    );
    let failed = project.ok(&["run", "--once"]);
    assert!(
        failed.contains(
            "flaky  attempt_fenced  (build attempt 2 failed: reported completed, but expected \
             evidence is missing: out/build.txt)"
        ),
        "{failed}"
    );
    // The budget is spent: blocked, not failed, so the Leader may still retry it.
    assert!(
        failed.contains(
            "flaky  work_item_blocked  (build spent its retry budget; the Leader may retry it)"
        ),
        "{failed}"
    );
    assert!(!failed.contains("attempt_completed"), "{failed}");
    assert_eq!(project.item_status("flaky", "build"), "blocked");
    assert_eq!(project.task_status("flaky"), "blocked");
}

#[test]
fn forged_and_out_of_order_observations_are_listed_and_change_nothing() {
    let project = Project::new();
    project.publish("guarded", &plan("guarded", &external_item("job", &[], &[])));
    project.ok(&["run", "--once"]);
    let request = request_of(&project, "guarded:job:a1");
    let accepted = observation(&request, 1, ObservationStatus::Accepted, None);
    drop_file(&project, "accepted.json", &accepted);
    let running = project.ok(&["run", "--once"]);
    assert!(running.contains("guarded  attempt_running"), "{running}");
    assert_eq!(project.item_status("guarded", "job"), "running");

    // Same task, work item and attempt ids, another request: a valid record in every other
    // respect, claiming completion.
    let forged_request = AdapterRequest::new(
        request.operation,
        &request.installation_id,
        request.leader_epoch,
        &request.task_id,
        &request.work_item_id,
        &request.attempt_id,
        &request.dispatch_id,
        request.dispatch_generation,
        &sha256_digest(b"some other work"),
        Vec::new(),
    );
    drop_file(
        &project,
        "forged.json",
        &observation(&forged_request, 2, ObservationStatus::Completed, None),
    );
    // The accepted observation again, then a completion that reuses its sequence number.
    let duplicate_at = append_line(&project, "late.jsonl", &accepted);
    let late_at = append_line(
        &project,
        "late.jsonl",
        &observation(&request, 1, ObservationStatus::Completed, None),
    );

    let journal = journal_path(&project, "guarded");
    let before = std::fs::read(&journal).unwrap();
    let ran = project.ok(&["run", "--once"]);
    assert!(!ran.contains("attempt_completed"), "{ran}");
    assert!(
        ran.contains("  rejected inbox/forged.json: forged or stale: names attempt guarded:job:a1"),
        "{ran}"
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        before,
        "nothing rejected reaches the journal"
    );
    assert_eq!(project.item_status("guarded", "job"), "running");

    let status = project.ok(&["task", "status", "guarded"]);
    let rejected: Vec<&str> = status
        .lines()
        .filter(|line| line.starts_with("  rejected "))
        .collect();
    assert_eq!(rejected.len(), 3, "{status}");
    assert!(
        rejected[0].starts_with(
            "  rejected inbox/forged.json: forged or stale: names attempt guarded:job:a1 of \
             task guarded but carries another request ("
        ),
        "{status}"
    );
    assert_eq!(
        rejected[1],
        format!(
            "  rejected inbox/late.jsonl (line at byte {duplicate_at}): duplicate: sequence 1 \
             of request {} was already admitted",
            request.request_id
        )
    );
    assert_eq!(
        rejected[2],
        format!(
            "  rejected inbox/late.jsonl (line at byte {late_at}): out of order: sequence 1 of \
             request {}, after 1",
            request.request_id
        )
    );

    // The genuine report still counts; the rejected ones stay listed and unused.
    let completed = observation(&request, 2, ObservationStatus::Completed, None);
    append_line(&project, "late.jsonl", &completed);
    let finished = project.ok(&["run", "--once"]);
    assert!(
        finished.contains("guarded  attempt_completed"),
        "{finished}"
    );
    assert_eq!(
        evidence_of(&project, "guarded", "attempt_completed", "guarded:job:a1"),
        [sha256_digest(&completed.canonical_bytes())]
    );
    let status = project.ok(&["task", "status", "guarded"]);
    assert_eq!(
        status
            .lines()
            .filter(|line| line.starts_with("  rejected "))
            .count(),
        3,
        "{status}"
    );
}

/// A task `halt` with one external item `job`, its attempt running (the tool reported
/// `accepted`); returns the attempt's request.
fn running_external_attempt(project: &Project) -> AdapterRequest {
    project.publish("halt", &plan("halt", &external_item("job", &[], &[])));
    project.ok(&["run", "--once"]);
    let request = request_of(project, "halt:job:a1");
    drop_file(
        project,
        "job-1.json",
        &observation(&request, 1, ObservationStatus::Accepted, None),
    );
    project.ok(&["run", "--once"]);
    assert_eq!(project.item_status("halt", "job"), "running");
    request
}

/// The records of the task's effect ledger (each line's entry).
fn effect_records(project: &Project, task: &str) -> Vec<serde_json::Value> {
    let path = project
        .control_root()
        .join("tasks")
        .join(task)
        .join("effect-ledger.jsonl");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["entry"].clone())
        .collect()
}

/// The cancel request valp wrote into an external attempt's folder.
fn cancel_request(project: &Project, attempt_id: &str) -> serde_json::Value {
    let path = attempt_dir(project, attempt_id).join("control/cancel.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn cancelling_a_silent_external_attempt_asks_the_tool_to_stop_and_says_so() {
    let project = Project::new();
    let request = running_external_attempt(&project);
    let cancelled = project.ok(&["cancel", "halt", "--item", "job", "--note", "not needed"]);
    assert!(
        cancelled.starts_with("accepted: task halt is executing"),
        "{cancelled}"
    );
    assert!(
        cancelled.contains("effect blocked: adapter_cancel:{\"attempt_id\":\"halt:job:a1\""),
        "{cancelled}"
    );
    let relative = format!(
        "runtime/external/attempts/{}/control/cancel.json",
        attempt_folder("halt:job:a1")
    );
    assert!(
        cancelled.contains(&format!(
            "(an external runtime was asked to stop at {relative}; valp cannot prove it did)"
        )),
        "{cancelled}"
    );
    let asked = cancel_request(&project, "halt:job:a1");
    assert_eq!(asked["schema_version"], "valp-process-control.v1");
    assert_eq!(asked["action"], "cancel");
    assert_eq!(asked["reason"], "cancelled by the Leader");
    assert_eq!(project.item_status("halt", "job"), "cancelled");
    let records = effect_records(&project, "halt");
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0]["status"].as_str(),
            records[0]["proof_ref"].as_str()
        ),
        (Some("blocked"), Some(""))
    );
    let status = project.ok(&["task", "status", "halt"]);
    assert!(
        status.contains("  effect blocked: adapter_cancel:"),
        "{status}"
    );

    // What the tool reports after the cancel changes nothing, and nothing is carried out
    // twice.
    drop_file(
        &project,
        "job-2.json",
        &observation(
            &request,
            2,
            ObservationStatus::Cancelled,
            Some("asked to stop"),
        ),
    );
    let attempt_events = |project: &Project| {
        entries(project, "halt")
            .iter()
            .filter(|entry| entry.event.attempt_id.is_some())
            .count()
    };
    let before = attempt_events(&project);
    let again = project.ok(&["run", "--once"]);
    assert!(!again.contains("effect"), "{again}");
    assert!(!again.contains("attempt_"), "{again}");
    assert_eq!(attempt_events(&project), before);
    assert_eq!(effect_records(&project, "halt").len(), 1);
    assert_eq!(project.item_status("halt", "job"), "cancelled");
}

#[test]
fn cancelling_an_external_attempt_that_already_reported_its_end_is_fulfilled() {
    let project = Project::new();
    let request = running_external_attempt(&project);
    // The tool finished before the cancel came; the runner has not read it yet.
    let done = observation(&request, 2, ObservationStatus::Completed, None);
    drop_file(&project, "job-2.json", &done);
    let cancelled = project.ok(&["cancel", "halt", "--item", "job"]);
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:{\"attempt_id\":\"halt:job:a1\""),
        "{cancelled}"
    );
    assert_eq!(cancel_request(&project, "halt:job:a1")["action"], "cancel");
    let records = effect_records(&project, "halt");
    assert_eq!(records.len(), 1);
    assert_eq!(
        (
            records[0]["status"].as_str(),
            records[0]["proof_ref"].as_str()
        ),
        (Some("fulfilled"), Some("inbox/job-2.json"))
    );
    assert_eq!(
        records[0]["proof_digest"].as_str(),
        Some(sha256_digest(&done.canonical_bytes()).as_str())
    );
    let status = project.ok(&["task", "status", "halt"]);
    assert!(
        status.contains("  effect fulfilled: adapter_cancel:"),
        "{status}"
    );
    // The kernel cancelled the item; the late completion is not acted on.
    let again = project.ok(&["run", "--once"]);
    assert!(!again.contains("attempt_completed"), "{again}");
    assert_eq!(project.item_status("halt", "job"), "cancelled");
}

#[test]
fn valp_report_lets_a_shell_tool_run_an_external_item() {
    let project = Project::new();
    project.publish(
        "manual",
        &plan("manual", &external_item("read", &[], &["notes.txt"])),
    );
    // Nothing to report on before the attempt reached the adapter.
    let early = project.valp(&["report", "manual:read:a1", "accepted"]);
    assert_eq!(early.code, Some(1));
    assert!(
        early
            .stderr
            .starts_with("valp: no external attempt manual:read:a1 is waiting for a report: "),
        "{}",
        early.stderr
    );
    project.ok(&["run", "--once"]);

    let accepted = project.ok(&["report", "manual:read:a1", "accepted"]);
    let file = format!(
        "inbox/valp-report/{}.jsonl",
        attempt_folder("manual:read:a1")
    );
    assert_eq!(
        accepted,
        format!("reported accepted for manual:read:a1 as sequence 1: {file}\n")
    );
    let unexplained = project.valp(&["report", "manual:read:a1", "unsupported"]);
    assert_eq!(unexplained.code, Some(1));
    assert_eq!(
        unexplained.stderr,
        "valp: reason: an unsupported operation must say why\n"
    );
    std::fs::write(project.path().join("notes.txt"), "read\n").unwrap();
    let completed = project.ok(&["report", "manual:read:a1", "completed", "--as", "alice"]);
    assert!(completed.contains("as sequence 2"), "{completed}");

    // Each line is an ABI observation of the attempt's own request, by the named reporter.
    let request = request_of(&project, "manual:read:a1");
    let text = std::fs::read_to_string(project.control_root().join(&file)).unwrap();
    let lines: Vec<AdapterObservation> = text
        .lines()
        .map(|line| AdapterObservation::decode(line.as_bytes()).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    let schema = valp_tests::schemas::validator("console/adapter-observation.schema.json");
    for ((observation, line), reporter) in
        lines.iter().zip(text.lines()).zip(["valp-report", "alice"])
    {
        observation.check(reporter).unwrap();
        assert_eq!(observation.request, request);
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(schema.is_valid(&value), "{line}");
    }

    // After the final report, more reports are refused and nothing is appended.
    let late = project.valp(&["report", "manual:read:a1", "blocked", "--reason", "x"]);
    assert_eq!(late.code, Some(1));
    assert!(
        late.stderr.starts_with(
            "valp: attempt manual:read:a1 was already reported completed (sequence 2)"
        ),
        "{}",
        late.stderr
    );
    assert_eq!(
        std::fs::read_to_string(project.control_root().join(&file)).unwrap(),
        text
    );
    // A closed vocabulary, and a reporter that is a name.
    assert_eq!(
        project.valp(&["report", "manual:read:a1", "done"]).code,
        Some(2)
    );
    let slash = project.valp(&["report", "manual:read:a1", "waiting", "--as", "a/b"]);
    assert_eq!(slash.code, Some(1));
    assert!(slash.stderr.contains("is not a name"), "{}", slash.stderr);

    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("manual  attempt_completed  (read completed with its expected evidence)"),
        "{ran}"
    );
    assert_eq!(project.task_status("manual"), "reviewing");
}

#[test]
fn concurrent_reports_on_one_attempt_get_distinct_sequences() {
    let project = Project::new();
    project.publish("busy", &plan("busy", &external_item("poll", &[], &[])));
    project.ok(&["run", "--once"]);
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(valp_tests::valp_binary().unwrap())
                .current_dir(project.path())
                .args(["--no-default-sockets", "report", "busy:poll:a1", "waiting"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let file = project.control_root().join(format!(
        "inbox/valp-report/{}.jsonl",
        attempt_folder("busy:poll:a1")
    ));
    let mut sequences: Vec<u64> = std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| {
            AdapterObservation::decode(line.as_bytes())
                .unwrap()
                .sequence
        })
        .collect();
    sequences.sort_unstable();
    assert_eq!(sequences, [1, 2, 3, 4]);
}
