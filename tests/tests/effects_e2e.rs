//! The effect ledger end to end, through the real `valp` binary and real processes: a cancel
//! whose reconciliation meets what a crash creating the ledger leaves (its head, no ledger)
//! still carries the obligation out and records it; `valp run` and `valp cancel` killed with SIGKILL at random
//! points while they reconcile cancels lose no acknowledged effect and never record one twice;
//! `valp report` killed at random points loses no acknowledged report, and one that follows the
//! torn remnant of an earlier report is kept.
//!
//! `VALP_RECONCILE_ROUNDS` (projects of 8 cancelled items, default 4) and `VALP_REPORT_TRIALS`
//! (default 120) ask for more trials.
//!
//! An acknowledged effect is one a command printed (`effect fulfilled: …`); an acknowledged
//! report one whose command printed `reported …`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use valp_runtime::abi::{AdapterObservation, attempt_folder};
use valp_store::effects::{EffectLedger, EffectRecord, Outcome};
use valp_store::io::OsStorage;
use valp_store::{Access, ControlRoot};
use valp_tests::project::{Project, item, plan, wait_until, work_item};
use valp_tests::store::Rng;

/// The obligation the kernel raises when attempt `a1` of `item` in `task` is cancelled.
fn cancel_obligation(task: &str, item: &str) -> String {
    format!(
        "adapter_cancel:{{\"attempt_id\":\"{task}:{item}:a1\",\"dispatch_generation\":1,\
         \"dispatch_id\":\"{task}:{item}:1\",\"task_id\":\"{task}\",\"work_item_id\":\"{item}\"}}\n"
    )
}

fn effects_of(project: &Project, task: &str, access: Access) -> EffectLedger {
    let root = ControlRoot::open(&project.control_root(), Arc::new(OsStorage)).unwrap();
    EffectLedger::of_task(&root, task, access).unwrap()
}

#[test]
fn a_cancel_after_a_reconciler_killed_creating_the_ledger_is_carried_out_and_recorded() {
    let project = Project::new();
    project.sleeping("nap", "sleep");
    // What a reconciler killed in the middle of recording this very cancel leaves: the first
    // line of a ledger is created after its head, atomically, so the head of the line it was
    // writing and no ledger (a torn first line cannot happen).
    let obligation = cancel_obligation("nap", "sleep");
    let record = EffectRecord::new(
        &obligation,
        &Outcome::Blocked {
            reason: "a crashed reconciler's record".to_owned(),
        },
        None,
    );
    let (line, _) = valp_store::chain::encode_line(
        0,
        None,
        valp_store::clock::Timestamp::from_millis(1_796_042_096_789),
        &record,
    );
    let ledger = project.control_root().join("tasks/nap/effect-ledger.jsonl");
    let crashed = valp_store::head::of_lines(&line).unwrap();
    std::fs::write(
        valp_store::head::head_path(&ledger),
        valp_kernel::canonical::Canonical::canonical_bytes(&crashed),
    )
    .unwrap();

    let cancelled = project.ok(&["cancel", "nap", "--item", "sleep"]);
    assert!(
        cancelled.contains("effect fulfilled: adapter_cancel:"),
        "{cancelled}"
    );
    assert_eq!(project.item_status("nap", "sleep"), "cancelled");
    let effects = effects_of(&project, "nap", Access::ReadOnly);
    assert_eq!(effects.records().len(), 1);
    assert_eq!(effects.records()[0].obligation, obligation);
    assert_eq!(effects.records()[0].status, "fulfilled");
    // The crashed reconciler's head was replaced by the head of the record now there.
    assert_eq!(
        effects.head(),
        valp_store::head::of_lines(&std::fs::read(&ledger).unwrap()).as_ref()
    );
    assert_ne!(effects.head(), Some(&crashed));
    let verified = project.ok(&["verify"]);
    // (Columns are as wide as the longest name, e.g. `nap/correction-fold.json`.)
    assert!(
        verified
            .lines()
            .any(|line| line.split_whitespace().eq(["effects", "nap", "1", "ok"])),
        "{verified}"
    );
    // A flipped bit in the (complete, last) line is damage: `valp verify` names it and fails,
    // and the next cancel's reconciler refuses the ledger instead of cutting it off.
    let mut damaged = std::fs::read(&ledger).unwrap();
    damaged[40] ^= 1;
    std::fs::write(&ledger, &damaged).unwrap();
    let run = project.valp(&["verify"]);
    assert_eq!(run.code, Some(1), "{}", run.stdout);
    assert!(
        run.stdout.lines().any(|line| {
            line.starts_with("effects   nap ")
                && line.contains(&format!(
                    " 0  PROBLEM VALP-E-KERNEL-STORE-CORRUPT: {}:1: byte 0: ",
                    ledger.display()
                ))
        }),
        "{}",
        run.stdout
    );
    // The damaged task is a problem line of its own (per-task isolation) and the run exits 3.
    let run = project.valp(&["run", "--once"]);
    assert_eq!(run.code, Some(3), "{}", run.stdout);
    assert!(
        run.stdout.contains("problem: ") && run.stdout.contains("VALP-E-KERNEL-STORE-CORRUPT"),
        "{}",
        run.stdout
    );
    assert!(std::fs::read(&ledger).unwrap() == damaged);
}

#[test]
fn concurrent_reconcilers_carry_a_cancel_out_once() {
    let project = Project::new();
    project.sleeping("duo", "sleep");
    // Hold the reconcilers' turn so that the cancel's own reconciler and two others all wait
    // for it with the obligation outstanding, then let them race.
    let turn = project.control_root().join("tasks/duo/effects.lock");
    let held = valp_store::lock::LockGuard::acquire(&turn, Duration::from_secs(5)).unwrap();
    let spawn = |args: &[&str]| {
        Command::new(valp_tests::valp_binary().unwrap())
            .env_remove("VALP_ROOT")
            .current_dir(project.path())
            .arg("--no-default-sockets")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let cancel = spawn(&["cancel", "duo", "--item", "sleep"]);
    wait_until("the cancel to be accepted", || {
        project.item_status("duo", "sleep") == "cancelled"
    });
    // Two more reconcilers in this process (two `valp run` processes started together would
    // race on the daily start's observation, not on effects).
    let root = ControlRoot::open(&project.control_root(), Arc::new(OsStorage)).unwrap();
    let recorded = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let root = root.clone();
                scope.spawn(move || {
                    valp_runtime::runtime::effects::reconcile(&root, "duo", Duration::from_secs(10))
                        .unwrap()
                        .len()
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
        threads
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum::<usize>()
    });
    let output = cancel.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let printed = recorded + stdout.matches("effect fulfilled: adapter_cancel:").count();
    assert_eq!(printed, 1, "the effect is carried out and reported once");
    let effects = effects_of(&project, "duo", Access::ReadOnly);
    assert_eq!(effects.records().len(), 1);
    assert_eq!(
        effects.records()[0].obligation,
        cancel_obligation("duo", "sleep")
    );
}

/// The number in the environment variable `name` (more trials than the default), or `default`.
fn count_from_env(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} is a number"))
    })
}

/// Spawns `valp args…` in the project, kills it after `delay` unless it ended, and returns its
/// standard output and whether it ended on its own with success.
fn run_killed(project: &Project, args: &[&str], delay: Duration) -> (String, bool) {
    let mut child = Command::new(valp_tests::valp_binary().unwrap())
        .env_remove("VALP_ROOT")
        .current_dir(project.path())
        .arg("--no-default-sockets")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + delay;
    let mut ended = None;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            ended = Some(status);
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    if ended.is_none() {
        child.kill().unwrap();
    }
    let output = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        ended.is_some_and(|status| status.success()),
    )
}

/// The effects a command's output acknowledged: obligation → status.
fn acknowledged(output: &str, into: &mut BTreeMap<String, String>) {
    for line in output.lines() {
        let Some((_, effect)) = line.split_once("effect ") else {
            continue;
        };
        let Some((status, rest)) = effect.split_once(": ") else {
            continue;
        };
        let obligation = rest.split_once("} (").map_or(rest, |(text, _)| text);
        let obligation = format!("{}}}\n", obligation.trim_end_matches('}'));
        assert!(
            into.insert(obligation, status.to_owned()).is_none(),
            "acknowledged twice: {line}"
        );
    }
}

#[test]
fn killed_reconcilers_lose_no_acknowledged_effect() {
    const ITEMS: usize = 8;
    let projects = count_from_env("VALP_RECONCILE_ROUNDS", 4);
    let mut rng = Rng::new(0x0C0F_FEE5);
    let (mut trials, mut killed, mut unacknowledged) = (0, 0, 0);
    for round in 0..projects {
        let project = Project::new();
        let names: Vec<String> = (0..ITEMS).map(|index| format!("s{index}")).collect();
        let items: String = names
            .iter()
            .map(|name| item(name, "optional", &[], &["sleep", "60"], &[]))
            .collect();
        let body = format!("{items}[execution]\nmax_concurrency = {ITEMS}\n");
        project.publish("many", &plan("many", &body));
        wait_until("every item running", || {
            project.ok(&["run", "--once"]);
            names
                .iter()
                .all(|name| project.item_status("many", name) == "running")
        });
        let mut acked = BTreeMap::new();
        for name in &names {
            let context = format!("round {round}, item {name}");
            // The cancel, killed somewhere (before, during or after its reconciliation)…
            let delay = Duration::from_micros(rng.below(150_000) as u64);
            let (output, done) = run_killed(&project, &["cancel", "many", "--item", name], delay);
            killed += usize::from(!done);
            acknowledged(&output, &mut acked);
            // …then `valp run`, which reconciles what is outstanding, killed too…
            let delay = Duration::from_micros(rng.below(150_000) as u64);
            let (output, done) = run_killed(&project, &["run", "--once"], delay);
            killed += usize::from(!done);
            acknowledged(&output, &mut acked);
            trials += 2;
            // …and every acknowledged effect is there, once, as it was acknowledged.
            let effects = effects_of(&project, "many", Access::ReadOnly);
            for (obligation, status) in &acked {
                let record = effects
                    .record_of(obligation)
                    .unwrap_or_else(|| panic!("{context}: acknowledged {obligation} lost"));
                assert_eq!(&record.status, status, "{context}");
            }
        }
        // A last unkilled run completes whatever was left; every cancel is recorded once.
        let finished = project.ok(&["run", "--once"]);
        acknowledged(&finished, &mut acked);
        let effects = effects_of(&project, "many", Access::Write);
        let cancelled = names
            .iter()
            .filter(|name| project.item_status("many", name) == "cancelled")
            .count();
        assert_eq!(effects.records().len(), cancelled, "round {round}");
        // A reconciler killed between recording and printing leaves a record nobody
        // acknowledged; never the other way round.
        assert!(acked.len() <= cancelled, "round {round}");
        unacknowledged += cancelled - acked.len();
        assert!(
            project.ok(&["verify"]).ends_with(" 0 problems\n"),
            "round {round}"
        );
    }
    eprintln!(
        "{trials} reconciler runs, {killed} killed, {unacknowledged} effects recorded but not \
         acknowledged: no acknowledged effect lost or recorded twice"
    );
    assert!(killed > trials / 4, "too few kills to test anything");
}

#[test]
fn killed_reports_lose_no_acknowledged_report() {
    let trials = count_from_env("VALP_REPORT_TRIALS", 120);
    let project = Project::new();
    let file = external_attempt(&project, "ext");
    let mut rng = Rng::new(0x5E_9047);
    let (mut acked, mut killed) = (Vec::new(), 0);
    for trial in 0..trials {
        let delay = Duration::from_micros(rng.below(25_000) as u64);
        let (output, done) = run_killed(&project, &["report", "ext:job:a1", "waiting"], delay);
        if done {
            let sequence: u64 = output
                .split(" as sequence ")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .unwrap()
                .parse()
                .unwrap();
            acked.push(sequence);
        } else {
            killed += 1;
        }
        let reports = reports_in(&file);
        let mut sequences: Vec<u64> = reports.iter().map(|report| report.sequence).collect();
        let count = sequences.len();
        sequences.dedup();
        assert_eq!(sequences.len(), count, "trial {trial}: a sequence twice");
        for sequence in &acked {
            assert!(
                sequences.contains(sequence),
                "trial {trial}: acknowledged report {sequence} lost"
            );
        }
    }
    eprintln!(
        "{trials} reports, {killed} killed, {} acknowledged: none lost",
        acked.len()
    );
    assert!(killed > 0 && !acked.is_empty(), "{killed} killed");
}

#[test]
fn a_report_after_a_torn_report_is_kept() {
    let project = Project::new();
    let file = external_attempt(&project, "torn");
    project.ok(&["report", "torn:job:a1", "accepted"]);
    // What a report killed mid-write leaves: the first bytes of its line, no LF.
    let first = std::fs::read(&file).unwrap();
    let mut bytes = first.clone();
    bytes.extend_from_slice(&first[..first.len() / 3]);
    std::fs::write(&file, &bytes).unwrap();
    let second = project.ok(&["report", "torn:job:a1", "waiting"]);
    assert!(second.contains(" as sequence 2: "), "{second}");
    let third = project.ok(&["report", "torn:job:a1", "waiting"]);
    assert!(third.contains(" as sequence 3: "), "{third}");
    let sequences: Vec<u64> = reports_in(&file).iter().map(|r| r.sequence).collect();
    assert_eq!(sequences, [1, 2, 3]);
    assert!(std::fs::read(&file).unwrap().starts_with(&bytes));
}

/// Publishes `task` with one external item `job` and launches its attempt; returns the file
/// `valp report` appends that attempt's reports to.
fn external_attempt(project: &Project, task: &str) -> std::path::PathBuf {
    let item = work_item(
        "job",
        "required",
        &[],
        &[],
        "run = { adapter = \"external\" }\n",
    );
    project.publish(task, &plan(task, &item));
    project.ok(&["run", "--once"]);
    project
        .control_root()
        .join("inbox/valp-report")
        .join(format!(
            "{}.jsonl",
            attempt_folder(&format!("{task}:job:a1"))
        ))
}

/// The reports in a report file that decode (a torn last line does not).
fn reports_in(file: &Path) -> Vec<AdapterObservation> {
    std::fs::read(file)
        .unwrap_or_default()
        .split(|&byte| byte == b'\n')
        .filter_map(|line| AdapterObservation::decode(line).ok())
        .collect()
}
