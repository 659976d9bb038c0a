//! The execution lane end to end with real processes, as a person runs it from the command
//! line: publish a plan, `valp run`, review, and the Leader's operations. Every expectation is
//! about what the kernel accepted (task status, work-item statuses, the journal verifying) and
//! what the processes really did (files, /proc).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use valp_tests::project::{Project, alive, item, plan, recorded_pid, wait_until};

#[test]
fn a_dependency_chain_runs_to_done_with_evidence() {
    let project = Project::new();
    let body = [
        item("make", "required", &[], &["mkdir", "-p", "out"], &[]),
        item(
            "write",
            "required",
            &[("make", "hard")],
            &["cp", "make.toml", "out/copy.toml"],
            &["out/copy.toml"],
        ),
        item(
            "check",
            "required",
            &[("write", "hard")],
            &["cmp", "make.toml", "out/copy.toml"],
            &[],
        ),
    ]
    .concat();
    project.publish("make", &format!(
        "{}[[verification]]\nid = \"copy-exists\"\nargv = [\"test\", \"-s\", \"out/copy.toml\"]\n",
        plan("make", &body)
    ));
    let ran = project.ok(&["run", "--timeout", "60"]);
    for expected in [
        "make  routing_validation_passed",
        "make  attempt_completed  (write completed with its expected evidence)",
        "make  work_completed",
        "make  verification_passed  (1 verification checks passed)",
        "make: reviewing",
    ] {
        assert!(ran.contains(expected), "missing {expected:?} in:\n{ran}");
    }
    // The runtime never passes the Leader's review by itself.
    assert_eq!(project.task_status("make"), "reviewing");
    assert!(
        project
            .ok(&["review", "make", "pass"])
            .starts_with("accepted: task make is recording")
    );
    let closed = project.ok(&["run"]);
    assert!(
        closed.contains("make  recording_completed  (the Done gate passes)"),
        "{closed}"
    );
    assert_eq!(project.task_status("make"), "done");
    for item in ["make", "write", "check"] {
        assert_eq!(project.item_status("make", item), "completed");
    }
    assert_eq!(
        std::fs::read(project.path().join("out/copy.toml")).unwrap(),
        std::fs::read(project.path().join("make.toml")).unwrap()
    );
    let verified = project.ok(&["verify"]);
    assert!(verified.ends_with("0 problems\n"), "{verified}");
    // The copied file is evidence: its bytes are in the evidence store under their digest.
    let digest = valp_kernel::canonical::sha256_digest(
        &std::fs::read(project.path().join("out/copy.toml")).unwrap(),
    );
    assert!(
        project
            .path()
            .join(".valp/evidence/sha256")
            .join(&digest["sha256:".len()..])
            .is_file()
    );
}

#[test]
fn a_hard_dependency_failure_blocks_its_dependents() {
    let project = Project::new();
    let body = [
        item("fail", "required", &[], &["false"], &[]),
        item("after", "required", &[("fail", "hard")], &["true"], &[]),
    ]
    .concat();
    project.publish("hard", &plan("hard", &body));
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("hard  attempt_created  (retry 2 of 2 for work_item:fail)"),
        "{ran}"
    );
    assert!(
        ran.contains(
            "hard  work_item_blocked  (fail spent its retry budget; the Leader may retry it)"
        ),
        "{ran}"
    );
    assert!(!ran.contains("attempt_failed"), "{ran}");
    assert!(ran.contains("hard  work_item_blocked  (hard dependency work_item:fail of work_item:after can no longer complete)"), "{ran}");
    assert_eq!(project.item_status("hard", "fail"), "blocked");
    assert_eq!(project.item_status("hard", "after"), "blocked");
    assert_eq!(project.task_status("hard"), "blocked");
    assert!(
        ran.contains(
            "  waits for the Leader: blocked: fail spent the retry budget; `valp retry hard \
             ITEM` gives one a new attempt, `valp unblock hard` returns the task to fixing, or \
             redirect or cancel it"
        ),
        "{ran}"
    );
}

#[test]
fn a_soft_failure_takes_the_degraded_path_to_done() {
    let project = Project::new();
    let body = [
        item("extra", "soft", &[], &["false"], &[]),
        item("main", "required", &[("extra", "soft")], &["true"], &[]),
    ]
    .concat();
    project.publish(
        "soft",
        &format!(
            "{}[done]\ndegradable_soft_items = [\"extra\"]\n",
            plan("soft", &body)
        ),
    );
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("soft  work_item_degraded  (soft item extra degrades)"),
        "{ran}"
    );
    assert!(ran.contains("soft  work_completed"), "{ran}");
    assert_eq!(project.item_status("soft", "extra"), "degraded");
    assert_eq!(project.item_status("soft", "main"), "completed");
    project.ok(&["review", "soft", "pass"]);
    let closed = project.ok(&["run"]);
    assert!(
        closed.contains("recording_completed  (the Done gate passes (soft_degraded:extra))"),
        "{closed}"
    );
    assert_eq!(project.task_status("soft"), "done");
}

#[test]
fn cancel_kills_the_running_attempt_and_records_the_effect() {
    let project = Project::new();
    project.publish(
        "nap",
        &plan(
            "nap",
            &item("sleep", "required", &[], &["sleep", "60"], &[]),
        ),
    );
    project.ok(&["run", "--once"]);
    wait_until("the sleep to start", || {
        project.ok(&["run", "--once"]);
        project.item_status("nap", "sleep") == "running"
            && project
                .ok(&["task", "status", "nap"])
                .contains("g1 running")
    });
    let pid = recorded_pid_of(&project, "nap:sleep:a1");
    assert!(alive(pid));
    let cancelled = project.ok(&["cancel", "nap", "--item", "sleep", "--note", "too slow"]);
    assert!(
        cancelled.starts_with("accepted: task nap is executing"),
        "{cancelled}"
    );
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:"),
        "{cancelled}"
    );
    assert!(
        !alive(pid),
        "the process is gone once the cancel is fulfilled"
    );
    assert_eq!(project.item_status("nap", "sleep"), "cancelled");
    let status = project.ok(&["task", "status", "nap"]);
    assert!(
        status.contains("  effect fulfilled: adapter_cancel:"),
        "{status}"
    );
    // Nothing is carried out twice.
    let again = project.ok(&["run", "--once"]);
    assert!(!again.contains("effect"), "{again}");
}

#[test]
fn interrupt_stops_dispatch_and_resume_continues() {
    let project = Project::new();
    project.publish(
        "pause",
        &plan("pause", &item("one", "required", &[], &["true"], &[])),
    );
    let interrupted = project.ok(&["interrupt", "pause"]);
    assert!(
        interrupted.starts_with("accepted: task pause is"),
        "{interrupted}"
    );
    let (head, _) = project.status("pause");
    assert!(head.ends_with("INTERRUPTED"), "{head}");
    project.ok(&["run", "--once"]);
    assert_eq!(
        project.item_status("pause", "one"),
        "pending",
        "nothing is dispatched"
    );
    assert!(
        !project.attempts_dir().exists()
            || std::fs::read_dir(project.attempts_dir()).unwrap().count() == 0
    );
    // Interrupting twice is refused by the kernel, with its code.
    let twice = project.valp(&["interrupt", "pause"]);
    assert_eq!(twice.code, Some(1));
    assert!(
        twice.stdout.starts_with("refused: VALP-E-STATE-CONFLICT"),
        "{}",
        twice.stdout
    );
    project.ok(&["resume", "pause"]);
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("pause  work_completed"), "{ran}");
}

#[test]
fn redirect_cancels_superseded_items_and_lands_in_fixing() {
    let project = Project::new();
    let body = [
        item("keep", "required", &[], &["true"], &[]),
        item("drop", "optional", &[], &["sleep", "60"], &[]),
    ]
    .concat();
    project.publish("turn", &plan("turn", &body));
    project.run_until("turn", "turn:drop:a1 g1 running");
    let pid = recorded_pid_of(&project, "turn:drop:a1");
    let redirected = project.redirect("turn", "drop the slow part\n", "drop");
    assert!(
        redirected.starts_with("accepted: task turn is fixing"),
        "{redirected}"
    );
    assert!(redirected.contains("effect fulfilled"), "{redirected}");
    assert!(
        redirected
            .lines()
            .any(|line| line == "superseded drop: cancelled"),
        "{redirected}"
    );
    assert!(!alive(pid));
    assert_eq!(project.item_status("turn", "drop"), "cancelled");
    let (head, _) = project.status("turn");
    assert!(head.contains("intent 1"), "{head}");
}

/// The pid the process adapter recorded for an attempt of the project.
fn recorded_pid_of(project: &Project, attempt_id: &str) -> u32 {
    recorded_pid(&project.control_root(), attempt_id)
}

#[test]
fn work_outlives_the_runner_and_is_reconciled_on_the_next_run() {
    let project = Project::new();
    project.publish(
        "long",
        &plan("long", &item("wait", "required", &[], &["sleep", "1"], &[])),
    );
    // The runner hands the work to the adapter and leaves.
    let first = project.ok(&["run", "--once"]);
    assert!(first.contains("long  launched long:wait:a1"), "{first}");
    let pid = recorded_pid_of(&project, "long:wait:a1");
    wait_until("the process to finish on its own", || !alive(pid));
    // A new runner finds the finished attempt and carries on from there.
    let second = project.ok(&["run", "--timeout", "60"]);
    assert!(second.contains("long  attempt_completed"), "{second}");
    assert!(second.contains("long  work_completed"), "{second}");
    assert!(
        !second.contains("launched long:wait"),
        "never launched twice:\n{second}"
    );
}

#[test]
fn corrupt_oversized_and_forged_observations_are_rejected_and_listed() {
    let project = Project::new();
    project.publish(
        "tidy",
        &plan("tidy", &item("one", "required", &[], &["true"], &[])),
    );
    let inbox = project.path().join(".valp/inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(inbox.join("corrupt.json"), b"{not json").unwrap();
    std::fs::write(inbox.join("huge.json"), vec![b' '; 2 << 20]).unwrap();
    std::fs::write(
        inbox.join("forged.json"),
        br#"{"schema_version":"valp-adapter-observation.v1","observation_id":"sha256:0000000000000000000000000000000000000000000000000000000000000000","request":{"schema_version":"valp-adapter-request.v1","request_id":"x","operation":"submit","installation_id":"i","leader_epoch":1,"task_id":"tidy","work_item_id":"one","attempt_id":"a","dispatch_id":"d","dispatch_generation":1,"payload_digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","expected_evidence_refs":[]},"sequence":1,"status":"completed","provenance":[],"evidence_refs":[]}"#,
    )
    .unwrap();
    let journal = project.path().join(".valp/tasks/tidy/journal.jsonl");
    let ran = project.ok(&["run", "--timeout", "60"]);
    for file in ["inbox/corrupt.json", "inbox/huge.json", "inbox/forged.json"] {
        assert!(
            ran.lines()
                .any(|line| line.starts_with(&format!("rejected {file}: "))),
            "{file} not listed in:\n{ran}"
        );
    }
    // The task ran normally: the rejected files changed nothing.
    assert_eq!(project.task_status("tidy"), "reviewing");
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
    assert!(journal.is_file());
}

#[test]
fn a_bad_file_in_an_attempt_folder_is_listed_and_the_attempt_goes_on() {
    let project = Project::new();
    project.publish(
        "steady",
        &plan(
            "steady",
            &item("nap", "required", &[], &["sleep", "1"], &[]),
        ),
    );
    project.ok(&["run", "--once"]);
    let folder = project
        .attempts_dir()
        .join(valp_runtime::abi::attempt_folder("steady:nap:a1"))
        .join("observations");
    wait_until("the attempt's folder", || folder.is_dir());
    std::fs::write(folder.join("000003.json"), b"{not json").unwrap();
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("steady  attempt_completed"),
        "the attempt's own observations still count:\n{ran}"
    );
    assert!(
        ran.lines()
            .any(|line| line.starts_with("  rejected ") && line.contains("000003.json: ")),
        "{ran}"
    );
    assert_eq!(project.task_status("steady"), "reviewing");
}

#[test]
fn interrupt_with_signal_stops_running_commands_and_resume_retries_them() {
    let project = Project::new();
    project.publish(
        "hush",
        &plan("hush", &item("nap", "required", &[], &["sleep", "60"], &[])),
    );
    project.run_until("hush", "hush:nap:a1 g1 running");
    let pid = recorded_pid_of(&project, "hush:nap:a1");
    let interrupted = project.ok(&["interrupt", "hush", "--signal"]);
    assert!(
        interrupted.contains("signal: SIGINT requested for hush:nap:a1"),
        "{interrupted}"
    );
    wait_until("the command to stop", || !alive(pid));
    // While interrupted, the attempt's end is not recorded.
    project.ok(&["run", "--once"]);
    assert_eq!(project.item_status("hush", "nap"), "running");
    project.ok(&["resume", "hush"]);
    let ran = project.ok(&["run", "--once"]);
    assert!(ran.contains("hush  attempt_fenced"), "{ran}");
    assert!(
        ran.contains("hush  attempt_created  (retry 2 of 2 for work_item:nap)"),
        "{ran}"
    );
    project.ok(&["cancel", "hush"]);
}

/// Path 3 of issue 11: commands stopped by `interrupt --signal` fail, the budget of 1 is spent
/// and the task is blocked. The Leader's retry (recorded, through the kernel) runs the item
/// again; a plain recovery and a redirect each lead somewhere the Leader can act, never into a
/// state that only cancel leaves.
#[test]
fn blocked_after_an_interrupt_with_signal_is_left_by_a_retry() {
    let project = Project::new();
    // Sleeps until the file `go` exists (at most 60 s), then succeeds.
    let wait_for_go = [
        "sh",
        "-c",
        "i=0; while [ ! -f go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; test -f go",
    ];
    project.publish(
        "hush",
        &format!(
            "{}[execution]\nretry_budget = 1\n",
            plan("hush", &item("nap", "required", &[], &wait_for_go, &[]))
        ),
    );
    project.run_until("hush", "hush:nap:a1 g1 running");
    let pid = recorded_pid_of(&project, "hush:nap:a1");
    project.ok(&["interrupt", "hush", "--signal"]);
    wait_until("the command to stop", || !alive(pid));
    project.ok(&["resume", "hush"]);
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("hush  attempt_fenced"), "{ran}");
    assert!(
        ran.contains(
            "hush  work_item_blocked  (nap spent its retry budget; the Leader may retry it)"
        ),
        "{ran}"
    );
    assert!(ran.contains("hush: blocked at revision"), "{ran}");
    assert!(ran.contains("`valp retry hush ITEM`"), "{ran}");
    assert_eq!(project.item_status("hush", "nap"), "blocked");

    // A recovery alone: the task is fixing, and the System says what is left (a retry).
    let recovered = project.ok(&["unblock", "hush", "--note", "look again"]);
    assert!(
        recovered.starts_with("accepted: task hush is fixing"),
        "{recovered}"
    );
    let ran = project.ok(&["run", "--once"]);
    assert!(
        ran.contains(
            "waits for the Leader: fixing: nap spent the retry budget; `valp retry hush ITEM`"
        ),
        "{ran}"
    );
    // Refusals say what is true.
    let early = project.valp(&["retry", "hush", "nope"]);
    assert_eq!(early.code, Some(2), "{}", early.stdout);
    assert!(
        early.stderr.contains("task hush has no work item nope"),
        "{}",
        early.stderr
    );

    // The Leader's retry: attempt 2 (past the budget), recorded with who decided it; it runs
    // like any other attempt and completes once `go` exists.
    let retried = project.ok(&["retry", "hush", "nap", "--note", "the cause is fixed"]);
    assert!(
        retried.starts_with("accepted: task hush is fixing"),
        "{retried}"
    );
    assert_eq!(project.item_status("hush", "nap"), "submitted");
    std::fs::write(project.path().join("go"), "").unwrap();
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("hush  fix_dispatch_requested"), "{ran}");
    assert!(ran.contains("hush  launched hush:nap:a2"), "{ran}");
    assert!(ran.contains("hush  attempt_completed"), "{ran}");
    assert!(ran.contains("hush: reviewing"), "{ran}");
    // The operator action record names the Leader and the note.
    let journal =
        std::fs::read_to_string(project.control_root().join("tasks/hush/journal.jsonl")).unwrap();
    assert!(journal.contains("attempt_created-r"), "{journal}");
    let records: Vec<String> = std::fs::read_dir(project.control_root().join("evidence/sha256"))
        .unwrap()
        .filter_map(|entry| std::fs::read_to_string(entry.unwrap().path()).ok())
        .filter(|text| {
            text.contains("\"action\":\"retry_work_item\"")
                && text.contains("\"work_item_id\":\"nap\"")
        })
        .collect();
    assert_eq!(records.len(), 1, "{records:?}");
    assert!(
        records[0].contains("\"note\":\"the cause is fixed\""),
        "{}",
        records[0]
    );
    assert!(
        records[0].contains("\"principal_id\":\"user:"),
        "{}",
        records[0]
    );
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

/// A redirect from `blocked` lands in `fixing`, and with nothing the System can run, the task
/// waits there for the Leader's retry or recovery (no longer back in `blocked` by itself).
#[test]
fn a_redirect_from_blocked_waits_in_fixing_for_the_leader() {
    let project = Project::new();
    project.publish(
        "stuck",
        &format!(
            "{}[execution]\nretry_budget = 1\n",
            plan("stuck", &item("no", "required", &[], &["false"], &[]))
        ),
    );
    project.ok(&["run", "--timeout", "60"]);
    assert_eq!(project.task_status("stuck"), "blocked");
    project.redirect("stuck", "try differently\n", "no");
    let ran = project.ok(&["run", "--once"]);
    assert!(ran.contains("stuck: fixing"), "{ran}");
    assert!(
        ran.contains(
            "waits for the Leader: fixing: every work item is settled; `valp unblock stuck`"
        ),
        "{ran}"
    );
    // Recovering dispatches the task again: the cancelled required item sends it to blocked,
    // where the Leader is told that nothing can be retried and why.
    project.ok(&["unblock", "stuck"]);
    let ran = project.ok(&["run", "--once"]);
    assert!(ran.contains("stuck  task_blocked"), "{ran}");
    assert!(
        ran.contains("no blocked work item can be retried: no is cancelled"),
        "{ran}"
    );
    let wrong = project.valp(&["retry", "stuck", "no"]);
    assert_eq!(wrong.code, Some(2));
    assert!(
        wrong
            .stderr
            .contains("work item no is cancelled: only a blocked work item can be retried"),
        "{}",
        wrong.stderr
    );
}

/// Path 1 of issue 11: redirecting while another item runs does not strand it. The task is
/// dispatched again; the running item's completion is recorded; the task goes on to review.
#[test]
fn a_redirect_while_another_item_runs_settles_it_and_goes_on() {
    let project = Project::new();
    let body = [
        item("drop", "optional", &[], &["sleep", "60"], &[]),
        item("c", "required", &[], &["sleep", "2"], &[]),
    ]
    .concat();
    project.publish("turn", &plan("turn", &body));
    project.run_until("turn", "turn:c:a1 g1 running");
    wait_until("drop to run", || {
        project.ok(&["run", "--once"]);
        project
            .ok(&["task", "status", "turn"])
            .contains("turn:drop:a1 g1 running")
    });
    let c_pid = recorded_pid_of(&project, "turn:c:a1");
    let redirected = project.redirect("turn", "drop the slow part\n", "drop");
    assert!(
        redirected.starts_with("accepted: task turn is fixing"),
        "{redirected}"
    );
    // `c` still runs; the System dispatches the task again instead of waiting for the Leader.
    assert!(alive(c_pid), "c is still running");
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains(
            "turn  fix_dispatch_requested  (work items remain to run or are still running)"
        ),
        "{ran}"
    );
    assert!(
        ran.contains("turn  attempt_completed  (c completed"),
        "{ran}"
    );
    assert!(ran.contains("turn: reviewing"), "{ran}");
    assert_eq!(project.item_status("turn", "c"), "completed");
    assert_eq!(project.item_status("turn", "drop"), "cancelled");
}

#[test]
fn interrupt_without_signal_leaves_running_commands_alone() {
    let project = Project::new();
    project.publish(
        "calm",
        &plan("calm", &item("nap", "required", &[], &["sleep", "60"], &[])),
    );
    project.run_until("calm", "calm:nap:a1 g1 running");
    let pid = recorded_pid_of(&project, "calm:nap:a1");
    let interrupted = project.ok(&["interrupt", "calm"]);
    assert!(!interrupted.contains("signal:"), "{interrupted}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(alive(pid));
    project.ok(&["cancel", "calm"]);
    assert!(!alive(pid));
}

/// A plan with `approval = "required"`: the review pass asks for the approval, the task waits
/// in `approval_required` until the Leader grants it (then it is recorded and done) or denies
/// it (then it is `fixing`, and `valp unblock` runs verification again).
#[test]
fn a_required_approval_is_asked_after_the_review_and_granted_or_denied() {
    let project = Project::new();
    for task in ["yes", "no"] {
        project.publish(
            task,
            &format!(
                "{}[execution]\napproval = \"required\"\n",
                plan(task, &item("one", "required", &[], &["true"], &[]))
            ),
        );
    }
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("waits for the Leader: review: pass or reject the task (`valp review yes pass|reject`); the plan requires approval, so a pass asks for it"),
        "{ran}"
    );
    // Approving before the review is refused by the kernel, with its code.
    let early = project.valp(&["approve", "yes", "grant"]);
    assert_eq!(early.code, Some(1));
    assert_eq!(
        early.stdout,
        "refused: VALP-E-STATE-CONFLICT: approval_granted needs task in approval_required; the \
         task is reviewing: the transition table has no edge reviewing --approval_granted--> \
         (allowed from: approval_required)\n",
    );
    for task in ["yes", "no"] {
        let reviewed = project.ok(&["review", task, "pass"]);
        assert!(
            reviewed.starts_with(&format!("accepted: task {task} is approval_required")),
            "{reviewed}"
        );
    }
    let ran = project.ok(&["run", "--once"]);
    assert!(
        ran.contains(
            "waits for the Leader: approval: grant or deny (`valp approve yes grant|deny`)"
        ),
        "{ran}"
    );
    let granted = project.ok(&["approve", "yes", "grant", "--note", "ship it"]);
    assert!(
        granted.starts_with("accepted: task yes is recording"),
        "{granted}"
    );
    let denied = project.ok(&["approve", "no", "deny"]);
    assert!(
        denied.starts_with("accepted: task no is fixing"),
        "{denied}"
    );
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(
        ran.contains("yes  recording_completed  (the Done gate passes)"),
        "{ran}"
    );
    assert_eq!(project.task_status("yes"), "done");
    assert!(
        ran.contains("waits for the Leader: fixing: every work item is settled"),
        "{ran}"
    );
    let recovered = project.ok(&["unblock", "no"]);
    assert!(
        recovered.starts_with("accepted: task no is dispatching"),
        "{recovered}"
    );
    let ran = project.ok(&["run", "--timeout", "60"]);
    assert!(ran.contains("no  dispatch_accepted"), "{ran}");
    assert!(ran.contains("no  verification_passed"), "{ran}");
    assert_eq!(project.task_status("no"), "reviewing");
    assert!(project.ok(&["verify"]).ends_with("0 problems\n"));
}

#[test]
fn help_explains_retry_recover_and_approval() {
    let project = Project::new();
    let retry = project.ok(&["retry", "--help"]);
    assert!(retry.contains("only the Leader retries it"), "{retry}");
    assert!(
        retry.contains("A blocked task is first recovered to `fixing`"),
        "{retry}"
    );
    let recover = project.ok(&["unblock", "--help"]);
    assert!(
        recover.contains("`blocked_recovery_to_fixing`"),
        "{recover}"
    );
    assert!(recover.contains("`fix_dispatch_requested`"), "{recover}");
    let approve = project.ok(&["approve", "--help"]);
    assert!(approve.contains("approval = \"required\""), "{approve}");
    let all = project.ok(&["--help"]);
    for command in ["retry", "unblock", "approve"] {
        assert!(
            all.lines()
                .any(|line| line.trim_start().starts_with(command)),
            "{all}"
        );
    }
}
