//! The Done gate as the store enforces it (`kernel/DEVIATIONS.md` D2, `store/src/done.rs`): a
//! real task journal is driven to `recording` with a Done policy frozen at revision 1, then
//! `recording_completed` is proposed without a closure, with failing closures and with a
//! passing one; verification on open re-runs the gate (tampered blob, forged line); reference
//! import and export keep working.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use valp_kernel::canonical::Canonical;
use valp_kernel::done::{ClosureCriterion, DoneClosure, DonePolicy, PolicyCriterion};
use valp_kernel::json::{self, Value};
use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::replay::{GenesisRoot, ReplayEntry};
use valp_kernel::{
    ClaimResult, Dependency, ErrorCode, Event, EventKind, Evidence, Identity, IdentityKind,
    Requirement, State, TaskStatus, WorkItem, WorkItemStatus,
};
use valp_store::io::OsStorage;
use valp_store::journal::REJECTIONS_FILE;
use valp_store::reference::{self, GENESIS_FILE, KERNEL_DIR, REPLAY_FILE};
use valp_store::verify::verify;
use valp_store::{Access, Appended, ControlRoot, Journal, StoreCode, StoreError};

const INSTALLATION: &str = "inst-1";
const TASK: &str = "task-done";

fn id(kind: IdentityKind, value: &str) -> Identity {
    Identity::new(kind, value).unwrap()
}

/// A root stamping every line with one stopped clock (an import reproduces a journal byte for
/// byte only under the same time).
fn init_root(dir: &Path) -> ControlRoot {
    ControlRoot::init(
        &dir.join(".valp"),
        id(IdentityKind::Installation, INSTALLATION),
        Arc::new(OsStorage),
    )
    .unwrap()
    .with_clock(Arc::new(valp_store::clock::FixedClock::new(
        valp_tests::store::RECORDED_AT,
    )))
}

/// Stores `bytes` in the root's evidence store as evidence `<prefix><first 16 hex digits>`.
fn store_evidence(root: &ControlRoot, prefix: &str, bytes: &[u8]) -> Evidence {
    let stored = root.blobs().put(bytes).unwrap();
    Evidence {
        evidence_id: id(
            IdentityKind::Evidence,
            &format!("{prefix}{}", &stored.digest[7..23]),
        ),
        content_digest: stored.digest,
    }
}

/// Evidence whose bytes are `text`, stored.
fn observation(root: &ControlRoot, name: &str, text: &str) -> Evidence {
    let stored = root.blobs().put(text.as_bytes()).unwrap();
    Evidence {
        evidence_id: id(IdentityKind::Evidence, name),
        content_digest: stored.digest,
    }
}

/// `wi-a` (required), `wi-b` (optional, hard edge to `wi-a`), `wi-c` (soft).
fn work_items() -> Vec<WorkItem> {
    let item = |value: &str, requirement, deps: &[&str]| WorkItem {
        task_id: id(IdentityKind::Task, TASK),
        work_item_id: id(IdentityKind::WorkItem, value),
        requirement,
        status: WorkItemStatus::Pending,
        dependencies: deps
            .iter()
            .map(|target| Dependency {
                work_item_id: id(IdentityKind::WorkItem, target),
                requirement: Requirement::Required,
            })
            .collect(),
        current_attempt: None,
    };
    vec![
        item("wi-a", Requirement::Required, &[]),
        item("wi-b", Requirement::Optional, &["wi-a"]),
        item("wi-c", Requirement::Soft, &[]),
    ]
}

fn genesis() -> GenesisRoot {
    GenesisRoot {
        state: State::genesis(
            id(IdentityKind::Installation, INSTALLATION),
            1,
            id(IdentityKind::Task, TASK),
            work_items(),
        ),
    }
}

/// `tests` (required), `docs` (required, may be `not_applicable`); optional items may be
/// skipped; `wi-c` may end degraded.
fn done_policy() -> DonePolicy {
    DonePolicy {
        criteria: vec![
            PolicyCriterion {
                criterion_id: "tests".to_owned(),
                required: true,
                not_applicable_allowed: false,
            },
            PolicyCriterion {
                criterion_id: "docs".to_owned(),
                required: true,
                not_applicable_allowed: true,
            },
        ],
        skippable_optional_items: true,
        degradable_soft_items: vec!["wi-c".to_owned()],
        dimensions: None,
        correction_cycle: false,
    }
}

fn claim(criterion_id: &str, result: ClaimResult, evidence: &[&str]) -> ClosureCriterion {
    ClosureCriterion {
        criterion_id: criterion_id.to_owned(),
        result,
        evidence_ids: evidence.iter().map(|&id| id.to_owned()).collect(),
    }
}

/// The passing closure: tests pass (evidence `ev-tests`), docs not applicable (`ev-no-docs`).
fn passing_closure() -> DoneClosure {
    DoneClosure {
        policy_digest: done_policy().digest(),
        completion_claim: ClaimResult::Pass,
        criteria: vec![
            claim("tests", ClaimResult::Pass, &["ev-tests"]),
            claim("docs", ClaimResult::NotApplicable, &["ev-no-docs"]),
        ],
        measures: None,
    }
}

/// A task journal driven event by event.
struct Task {
    root: ControlRoot,
    journal: Journal,
    counter: u64,
}

impl Task {
    /// A new task whose revision-1 entry (`routing_validation_started`) carries `first`.
    fn new(root: ControlRoot, first: &[Evidence]) -> Self {
        let journal = root.create_task(&genesis()).unwrap();
        let mut task = Self {
            root,
            journal,
            counter: 0,
        };
        task.accept(EventKind::RoutingValidationStarted, None, first);
        task
    }

    fn event(&mut self, kind: EventKind, item: Option<&str>) -> Event {
        self.counter += 1;
        let mut event = Event::new(
            id(IdentityKind::Event, &format!("ev-{}", self.counter)),
            id(IdentityKind::Installation, INSTALLATION),
            1,
            id(IdentityKind::Task, TASK),
            kind,
            self.journal.live().revision(),
        );
        event.work_item_id = item.map(|value| id(IdentityKind::WorkItem, value));
        event
    }

    fn accept(&mut self, kind: EventKind, item: Option<&str>, evidence: &[Evidence]) {
        let event = self.event(kind, item);
        self.accept_event(&event, evidence);
    }

    fn accept_event(&mut self, event: &Event, evidence: &[Evidence]) {
        let appended = self.journal.append(event, evidence).unwrap();
        assert!(
            matches!(appended, Appended::Accepted { .. }),
            "{:?}: {appended:?}",
            event.kind
        );
    }

    /// Creates, submits and runs an attempt of `item` (which must be eligible).
    fn run_attempt(&mut self, item: &str) {
        let attempt = |event: &mut Event| {
            event.attempt_id = Some(id(IdentityKind::Attempt, &format!("att-{item}")));
            event.dispatch_id = Some(id(IdentityKind::Dispatch, &format!("dsp-{item}")));
            event.dispatch_generation = Some(0);
        };
        for kind in [
            EventKind::AttemptCreated,
            EventKind::AttemptSubmitted,
            EventKind::AttemptRunning,
        ] {
            let mut event = self.event(kind, Some(item));
            attempt(&mut event);
            self.accept_event(&event, &[]);
        }
    }

    fn complete_attempt(&mut self, item: &str) {
        self.end_attempt(item, EventKind::AttemptCompleted);
    }

    fn end_attempt(&mut self, item: &str, kind: EventKind) {
        let mut event = self.event(kind, Some(item));
        event.attempt_id = Some(id(IdentityKind::Attempt, &format!("att-{item}")));
        event.dispatch_id = Some(id(IdentityKind::Dispatch, &format!("dsp-{item}")));
        event.dispatch_generation = Some(0);
        self.accept_event(&event, &[]);
    }

    /// Drives the task to `recording`: wi-a completed, wi-b skipped, wi-c degraded.
    fn drive_to_recording(&mut self) {
        self.drive(false);
    }

    /// Drives the task to `recording`: wi-a completed, wi-b skipped (or, with `fail_b`, its
    /// attempt failed: a `runtime_failed` correction signal), wi-c degraded.
    fn drive(&mut self, fail_b: bool) {
        self.accept(EventKind::RoutingValidationPassed, None, &[]);
        self.accept(EventKind::DispatchAccepted, None, &[]);
        self.accept(EventKind::WorkItemEligible, Some("wi-a"), &[]);
        self.run_attempt("wi-a");
        self.complete_attempt("wi-a");
        if fail_b {
            self.accept(EventKind::WorkItemEligible, Some("wi-b"), &[]);
            self.run_attempt("wi-b");
            self.end_attempt("wi-b", EventKind::AttemptFailed);
        } else {
            self.accept(EventKind::WorkItemSkipped, Some("wi-b"), &[]);
        }
        self.accept(EventKind::WorkItemEligible, Some("wi-c"), &[]);
        self.run_attempt("wi-c");
        self.accept(EventKind::WorkItemDegraded, Some("wi-c"), &[]);
        self.accept(EventKind::WorkCompleted, None, &[]);
        self.accept(EventKind::VerificationPassed, None, &[]);
        self.accept(EventKind::ReviewPassed, None, &[]);
        assert_eq!(
            self.journal.live().body().status.known(),
            Some(TaskStatus::Recording)
        );
    }

    /// Stores `closure` and returns the EvidenceSet of a `recording_completed` that carries it
    /// with the frozen policy and the cited evidence.
    fn closure_set(&self, policy: &Evidence, closure: &DoneClosure) -> Vec<Evidence> {
        let closure = store_evidence(&self.root, "done-closure-", &closure.canonical_bytes());
        vec![
            policy.clone(),
            closure,
            observation(&self.root, "ev-tests", "cargo test: 412 passed"),
            observation(&self.root, "ev-no-docs", "no user-facing change"),
        ]
    }

    fn journal_bytes(&self) -> Vec<u8> {
        std::fs::read(self.journal.path()).unwrap()
    }

    fn rejections(&self) -> Vec<Value> {
        let path = self.journal.dir().join(REJECTIONS_FILE);
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(|line| json::parse(line).unwrap())
            .collect()
    }
}

/// A root with a task in `recording` whose policy was frozen at revision 1; also returns the
/// policy's evidence.
fn recording_task(dir: &Path) -> (Task, Evidence) {
    let root = init_root(dir);
    let policy = store_evidence(&root, "done-policy-", &done_policy().canonical_bytes());
    let plan = store_evidence(&root, "plan-", b"{\"plan\":\"demo\"}\n");
    let mut task = Task::new(root, &[plan, policy.clone()]);
    task.drive_to_recording();
    (task, policy)
}

fn member<'v>(value: &'v Value, key: &str) -> &'v Value {
    value.as_object().unwrap().get(key).unwrap()
}

/// Proposes `recording_completed` with `evidence` and expects the Done gate to refuse it with
/// exactly `reasons`, writing nothing to the journal and logging the refusal.
#[track_caller]
fn refused(task: &mut Task, evidence: &[Evidence], reasons: &[String]) {
    let before = task.journal_bytes();
    let logged = task.rejections().len();
    let event = task.event(EventKind::RecordingCompleted, None);
    let error = task.journal.append(&event, evidence).unwrap_err();
    assert_eq!(error.code(), StoreCode::DoneGate, "{error}");
    assert_eq!(error.code().as_str(), "VALP-E-DONE-GATE");
    let StoreError::DoneGate {
        path,
        reasons: found,
    } = &error
    else {
        panic!("not a Done gate refusal: {error}");
    };
    assert_eq!(path, task.journal.path());
    assert_eq!(found, reasons);
    assert!(
        error.to_string().ends_with(&format!(
            "refused by the Done gate, nothing written: {}",
            reasons.join("; ")
        )),
        "{error}"
    );
    assert_eq!(task.journal_bytes(), before, "nothing was written");
    assert_eq!(
        task.journal.live().body().status.known(),
        Some(TaskStatus::Recording)
    );
    let rejections = task.rejections();
    assert_eq!(rejections.len(), logged + 1);
    let last = rejections.last().unwrap();
    assert_eq!(
        member(last, "error_code").as_str(),
        Some("VALP-E-DONE-GATE")
    );
    assert_eq!(
        member(last, "reason").as_str().unwrap(),
        format!("refused by the Done gate: {}", reasons.join("; "))
    );
    // The journal on disk still verifies and is still recording.
    let reopened = task.root.open_task(TASK, Access::ReadOnly).unwrap();
    assert_eq!(reopened.len(), task.journal.len());
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}

#[test]
fn recording_completed_without_a_closure_is_refused_and_nothing_is_written() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task(temp.path());
    let policy_id = policy.evidence_id.value().to_owned();

    refused(
        &mut task,
        &[],
        &strings(&[
            &format!("done_policy_not_bound:{policy_id}"),
            "done_closure_missing",
        ]),
    );
    refused(
        &mut task,
        std::slice::from_ref(&policy),
        &strings(&["done_closure_missing"]),
    );

    // A relaxed policy in place of the frozen one.
    let mut relaxed = done_policy();
    relaxed.criteria.clear();
    let relaxed = store_evidence(&task.root, "done-policy-", &relaxed.canonical_bytes());
    let mut set = task.closure_set(&policy, &passing_closure());
    set[0] = relaxed.clone();
    refused(
        &mut task,
        &set,
        &[
            format!("done_policy_not_bound:{policy_id}"),
            format!("done_policy_changed:{}", relaxed.evidence_id.value()),
        ],
    );

    // Two closures.
    let mut set = task.closure_set(&policy, &passing_closure());
    let mut other = passing_closure();
    other.criteria.reverse();
    set.push(store_evidence(
        &task.root,
        "done-closure-",
        &other.canonical_bytes(),
    ));
    refused(&mut task, &set, &strings(&["done_closure_ambiguous"]));
}

#[test]
fn a_failing_closure_is_refused_with_its_reasons() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task(temp.path());

    let mut failing = passing_closure();
    failing.completion_claim = ClaimResult::Partial;
    failing.criteria[0] = claim("tests", ClaimResult::Fail, &["ev-tests"]);
    failing.criteria[1] = claim("docs", ClaimResult::NotApplicable, &[]);
    let set = task.closure_set(&policy, &failing);
    refused(
        &mut task,
        &set,
        &strings(&[
            "completion_claim:partial",
            "criterion:tests:fail",
            "not_applicable_without_evidence:docs",
        ]),
    );

    // A closure against another policy.
    let mut stale = passing_closure();
    stale.policy_digest = format!("sha256:{}", "1".repeat(64));
    let set = task.closure_set(&policy, &stale);
    refused(&mut task, &set, &strings(&["policy_digest_mismatch"]));

    // Cited evidence missing from the EvidenceSet.
    let mut set = task.closure_set(&policy, &passing_closure());
    set.retain(|evidence| evidence.evidence_id.value() != "ev-tests");
    refused(
        &mut task,
        &set,
        &strings(&["criterion_evidence_not_bound:tests:ev-tests"]),
    );

    // The closure's blob was never stored.
    let mut never = passing_closure();
    never.criteria.reverse();
    let never_digest = valp_kernel::canonical::sha256_digest(&never.canonical_bytes());
    let mut set = task.closure_set(&policy, &passing_closure());
    set[1] = Evidence {
        evidence_id: id(IdentityKind::Evidence, "done-closure-unstored"),
        content_digest: never_digest.clone(),
    };
    refused(
        &mut task,
        &set,
        &[format!("done_closure_blob_missing:{never_digest}")],
    );

    // A closure blob that is not canonical, and one that is not a closure.
    let mut set = task.closure_set(&policy, &passing_closure());
    set[1] = store_evidence(
        &task.root,
        "done-closure-",
        b"{ \"completion_claim\": \"pass\" }\n",
    );
    refused(
        &mut task,
        &set,
        &strings(&["done_closure_invalid:not canonical: first difference at byte 1"]),
    );
    set[1] = store_evidence(
        &task.root,
        "done-closure-",
        &done_policy().canonical_bytes(),
    );
    refused(
        &mut task,
        &set,
        &strings(&[
            "done_closure_invalid:closure.schema_version: schema_version must be \
             \"valp-kernel-done-closure.v1 or .v2\", found \"valp-kernel-done-policy.v1\"",
        ]),
    );
}

#[test]
fn a_passing_closure_is_accepted_and_reopens_verified() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task(temp.path());
    let set = task.closure_set(&policy, &passing_closure());

    // The gate the console shows before proposing: passed, with the allowed exceptions.
    let gate = task
        .journal
        .guard()
        .done()
        .gate(task.journal.live().body(), &set)
        .unwrap();
    assert!(gate.passed, "{gate:?}");
    assert_eq!(
        gate.notes,
        strings(&[
            "not_applicable:docs",
            "optional_skipped:wi-b",
            "soft_degraded:wi-c"
        ])
    );

    let event = task.event(EventKind::RecordingCompleted, None);
    let appended = task.journal.append(&event, &set).unwrap();
    let Appended::Accepted { seq, .. } = appended else {
        panic!("{appended:?}");
    };
    assert_eq!(seq, task.journal.len());
    assert_eq!(
        task.journal.live().body().status.known(),
        Some(TaskStatus::Done)
    );
    // A retry of the same proposal is answered as a duplicate, not judged again.
    assert!(matches!(
        task.journal.append(&event, &set).unwrap(),
        Appended::Duplicate { .. }
    ));

    let reopened = task.root.open_task(TASK, Access::ReadOnly).unwrap();
    assert_eq!(reopened.len(), seq);
    assert_eq!(reopened.guard().done().frozen_policy(), [policy]);
    assert_eq!(reopened.guard().done().ungated_done(), None);
    let verification = verify(&task.root).unwrap();
    assert_eq!(verification.problems(), 0, "{verification:?}");
    assert!(
        verification
            .checks
            .iter()
            .all(|check| check.warnings.is_empty())
    );

    // Export and import into a root holding the same evidence: byte for byte.
    let out = temp.path().join("export");
    reference::export(&reopened, &out).unwrap();
    let other = tempfile::tempdir().unwrap();
    let other_root = init_root(other.path());
    copy_blobs(&task.root, &other_root);
    let imported = reference::import(&other_root, &out).unwrap();
    assert_eq!(
        std::fs::read(imported.path()).unwrap(),
        std::fs::read(reopened.path()).unwrap()
    );

    // Into a root without the evidence: refused before anything is written.
    let bare = tempfile::tempdir().unwrap();
    let bare_root = init_root(bare.path());
    let error = reference::import(&bare_root, &out).unwrap_err();
    let StoreError::Corrupt {
        path, line, reason, ..
    } = &error
    else {
        panic!("{error}");
    };
    assert_eq!(path, &out.join(KERNEL_DIR).join(REPLAY_FILE));
    assert_eq!(*line, seq);
    assert!(
        reason.starts_with(
            "done gate: the recorded recording_completed does not pass: done_policy_blob_missing:"
        ),
        "{reason}"
    );
    assert!(bare_root.task_dirs().unwrap().is_empty());
}

fn copy_blobs(from: &ControlRoot, to: &ControlRoot) {
    let (source, target) = (from.layout().blobs_dir(), to.layout().blobs_dir());
    for entry in std::fs::read_dir(source).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, target.join(path.file_name().unwrap())).unwrap();
    }
}

/// The 1-based line of the last journal entry, for a journal of `len` entries (line 1 is the
/// genesis).
fn last_line(len: u64) -> u64 {
    len + 1
}

#[test]
fn a_tampered_or_missing_closure_blob_refuses_the_journal_naming_the_line() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task(temp.path());
    let set = task.closure_set(&policy, &passing_closure());
    let event = task.event(EventKind::RecordingCompleted, None);
    task.journal.append(&event, &set).unwrap();
    let len = task.journal.len();
    let journal_path = task.journal.path().to_owned();
    let blob = task.root.blobs().path_of(&set[1].content_digest).unwrap();
    let digest = set[1].content_digest.clone();

    // Replace the closure's bytes by a failing closure (a different blob under its name).
    let original = std::fs::read(&blob).unwrap();
    let mut failing = passing_closure();
    failing.completion_claim = ClaimResult::Fail;
    std::fs::write(&blob, failing.canonical_bytes()).unwrap();
    for access in [Access::ReadOnly, Access::Write] {
        let error = task.root.open_task(TASK, access).unwrap_err();
        let StoreError::Corrupt {
            path, line, reason, ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(path, &journal_path);
        assert_eq!(*line, last_line(len));
        assert_eq!(
            reason,
            &format!(
                "done gate: the recorded recording_completed does not pass: \
                 done_closure_blob_corrupt:{digest}"
            )
        );
        assert_eq!(error.code().as_str(), "VALP-E-KERNEL-STORE-CORRUPT");
    }
    let verification = verify(&task.root).unwrap();
    assert!(
        verification.problems() >= 2,
        "the journal and the blob: {verification:?}"
    );

    // Delete it.
    std::fs::remove_file(&blob).unwrap();
    let error = task.root.open_task(TASK, Access::ReadOnly).unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&format!(":{}: byte ", last_line(len)))
            && error
                .to_string()
                .ends_with(&format!("done_closure_blob_missing:{digest}")),
        "{error}"
    );

    // Restored, the journal verifies again.
    std::fs::write(&blob, original).unwrap();
    assert_eq!(
        task.root.open_task(TASK, Access::ReadOnly).unwrap().len(),
        len
    );
}

#[test]
fn a_forged_ungated_done_line_refuses_the_journal() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task(temp.path());
    let len = task.journal.len();

    // Another writer bypasses the store: the kernel accepts the bare recording_completed (as
    // the reference does) and the line is chained correctly.
    let event = task.event(EventKind::RecordingCompleted, None);
    let mut kernel: LiveState = task.journal.live().clone();
    let Verdict::Accepted(record) = kernel.apply(&event, &[]) else {
        panic!("the kernel itself does not gate Done");
    };
    let entry = <LiveState as valp_store::machine::Machine>::entry(&event, &[], record);
    let bytes = task.journal_bytes();
    let text = String::from_utf8(bytes.clone()).unwrap();
    let last = json::parse(text.lines().last().unwrap()).unwrap();
    let (line, _) = valp_store::chain::encode_line(
        len + 1,
        Some(member(&last, "entry_digest").as_str().unwrap()),
        valp_store::clock::Timestamp::from_millis(1_796_042_096_789),
        &entry,
    );
    let mut forged = bytes;
    forged.extend_from_slice(&line);
    std::fs::write(task.journal.path(), &forged).unwrap();

    let error = task.root.open_task(TASK, Access::ReadOnly).unwrap_err();
    let StoreError::Corrupt { line, reason, .. } = &error else {
        panic!("{error}");
    };
    assert_eq!(*line, last_line(len + 1));
    assert_eq!(
        reason,
        &format!(
            "done gate: the recorded recording_completed does not pass: \
             done_policy_not_bound:{}; done_closure_missing",
            policy.evidence_id.value()
        )
    );
    // A writer that was open before is poisoned by the refresh and appends nothing.
    assert!(task.journal.refresh().is_err());
}

#[test]
fn the_kernel_answers_first_for_proposals_it_refuses_or_has_seen() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, _policy) = recording_task(temp.path());
    // A stale expected revision: the compare-and-swap answer, not the gate.
    let mut stale = task.event(EventKind::RecordingCompleted, None);
    stale.expected_revision -= 1;
    let appended = task.journal.append(&stale, &[]).unwrap();
    let Appended::Rejected { error_code, reason } = appended else {
        panic!("{appended:?}");
    };
    assert_eq!(error_code, ErrorCode::StateConflict);
    assert!(reason.starts_with("stale expected_revision"), "{reason}");
    let last = task.rejections().pop().unwrap();
    assert_eq!(
        member(&last, "error_code").as_str(),
        Some("VALP-E-STATE-CONFLICT")
    );
}

#[test]
fn recording_completed_outside_recording_is_the_kernels_refusal() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let policy = store_evidence(&root, "done-policy-", &done_policy().canonical_bytes());
    let mut task = Task::new(root, &[policy]);
    let event = task.event(EventKind::RecordingCompleted, None);
    let appended = task.journal.append(&event, &[]).unwrap();
    assert!(
        matches!(
            appended,
            Appended::Rejected {
                error_code: ErrorCode::StateConflict,
                ..
            }
        ),
        "{appended:?}"
    );
}

#[test]
fn the_policy_frozen_at_revision_one_must_be_a_readable_policy() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut journal = root.create_task(&genesis()).unwrap();
    let event = Event::new(
        id(IdentityKind::Event, "ev-start"),
        id(IdentityKind::Installation, INSTALLATION),
        1,
        id(IdentityKind::Task, TASK),
        EventKind::RoutingValidationStarted,
        0,
    );
    let good = store_evidence(&root, "done-policy-", &done_policy().canonical_bytes());
    let mut other = done_policy();
    other.skippable_optional_items = false;
    let second = store_evidence(&root, "done-policy-", &other.canonical_bytes());
    let missing = Evidence {
        evidence_id: id(IdentityKind::Evidence, "done-policy-0000000000000000"),
        content_digest: format!("sha256:{}", "0".repeat(64)),
    };
    let not_a_policy = store_evidence(&root, "done-policy-", &passing_closure().canonical_bytes());
    // v2 policies no closure could pass: an unsupported dimension operator, or version.
    let (mut approx, _) = dimension_policy_and_closure(0);
    let dimensions = approx.dimensions.as_mut().unwrap();
    dimensions.gates.quality.rules[0].operator = "approx".to_owned();
    let approx = store_evidence(&root, "done-policy-", &approx.canonical_bytes());
    let (mut future, _) = dimension_policy_and_closure(0);
    future.dimensions.as_mut().unwrap().version = "valp-kernel-dimension-policy.v7".to_owned();
    let future = store_evidence(&root, "done-policy-", &future.canonical_bytes());
    let cases = [
        (
            vec![approx],
            strings(&[
                "done_policy_unsupported:VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR:no-failed:approx",
            ]),
        ),
        (
            vec![future],
            strings(&[
                "done_policy_unsupported:VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION:\
                 valp-kernel-dimension-policy.v7",
            ]),
        ),
        (
            vec![good.clone(), second],
            strings(&["done_policy_ambiguous"]),
        ),
        (
            vec![missing.clone()],
            vec![format!(
                "done_policy_blob_missing:{}",
                missing.content_digest
            )],
        ),
        (
            vec![not_a_policy],
            strings(&[
                "done_policy_invalid:policy.schema_version: schema_version must be \
                 \"valp-kernel-done-policy.v1, .v2 or .v3\", found \"valp-kernel-done-closure.v1\"",
            ]),
        ),
    ];
    for (set, reasons) in cases {
        let error = journal.append(&event, &set).unwrap_err();
        let StoreError::DoneGate { reasons: found, .. } = &error else {
            panic!("{error}");
        };
        assert_eq!(found, &reasons);
        assert_eq!(journal.len(), 0);
    }
    assert!(matches!(
        journal.append(&event, std::slice::from_ref(&good)).unwrap(),
        Appended::Accepted { seq: 1, .. }
    ));
    assert_eq!(journal.guard().done().frozen_policy(), [good]);
}

#[test]
fn a_task_without_a_frozen_policy_is_never_done_through_the_store() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut task = Task::new(root, &[]);
    task.drive_to_recording();
    let policy = store_evidence(&task.root, "done-policy-", &done_policy().canonical_bytes());
    let set = task.closure_set(&policy, &passing_closure());
    refused(&mut task, &set, &strings(&["done_policy_missing"]));
}

/// Writes the reference layout of `genesis` + `events` (every event must be accepted).
fn write_reference(dir: &Path, genesis: &GenesisRoot, events: &[(Event, Vec<Evidence>)]) {
    let kernel = dir.join(KERNEL_DIR);
    std::fs::create_dir_all(&kernel).unwrap();
    std::fs::write(kernel.join(GENESIS_FILE), genesis.canonical_bytes()).unwrap();
    let mut state = genesis.state.clone();
    let mut replay = Vec::new();
    for (event, evidence_set) in events {
        let result = valp_kernel::reduce(&state, event, evidence_set);
        let valp_kernel::Outcome::Accepted(accepted) = &result else {
            panic!("{:?} refused: {result:?}", event.kind);
        };
        state = accepted.state.clone();
        let entry = ReplayEntry {
            event: event.clone(),
            evidence_set: evidence_set.clone(),
            result,
        };
        replay.extend_from_slice(&entry.canonical_bytes());
    }
    std::fs::write(kernel.join(REPLAY_FILE), replay).unwrap();
}

#[test]
fn a_reference_store_done_without_a_policy_imports_under_the_reference_rule() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let genesis = GenesisRoot {
        state: State::genesis(
            id(IdentityKind::Installation, INSTALLATION),
            1,
            id(IdentityKind::Task, TASK),
            Vec::new(),
        ),
    };
    let kinds = [
        EventKind::RoutingValidationStarted,
        EventKind::RoutingValidationPassed,
        EventKind::DispatchAccepted,
        EventKind::WorkCompleted,
        EventKind::VerificationPassed,
        EventKind::ReviewPassed,
        EventKind::RecordingCompleted,
    ];
    let events: Vec<(Event, Vec<Evidence>)> = kinds
        .iter()
        .zip(0..)
        .map(|(&kind, revision)| {
            let event = Event::new(
                id(IdentityKind::Event, &format!("ref-{revision}")),
                id(IdentityKind::Installation, INSTALLATION),
                1,
                id(IdentityKind::Task, TASK),
                kind,
                revision,
            );
            (event, Vec::new())
        })
        .collect();
    let source = temp.path().join("reference");
    write_reference(&source, &genesis, &events);

    let imported = reference::import(&root, &source).unwrap();
    assert_eq!(imported.len(), 7);
    assert_eq!(imported.guard().done().ungated_done(), Some(7));
    assert!(imported.guard().done().frozen_policy().is_empty());
    drop(imported);
    let reopened = root.open_task(TASK, Access::ReadOnly).unwrap();
    assert_eq!(reopened.warnings(), []);
    assert_eq!(
        reopened.live().body().status.known(),
        Some(TaskStatus::Done)
    );
    let verification = verify(&root).unwrap();
    assert_eq!(verification.problems(), 0);
    let check = verification
        .checks
        .iter()
        .find(|check| check.kind == "journal")
        .unwrap();
    assert_eq!(
        check.warnings,
        strings(&[
            "entry 7: recording_completed without a Done policy (accepted under the reference's \
             rule, e.g. an imported reference store): no Done gate was evaluated"
        ])
    );
    let out = temp.path().join("out");
    reference::export(&reopened, &out).unwrap();
    assert_eq!(
        std::fs::read(out.join(KERNEL_DIR).join(REPLAY_FILE)).unwrap(),
        std::fs::read(source.join(KERNEL_DIR).join(REPLAY_FILE)).unwrap()
    );
}

/// A v2 Done policy (`done_policy()` with a required Quality gate: no failed check) and a
/// closure of it measuring `failed` failed checks.
fn dimension_policy_and_closure(failed: i128) -> (DonePolicy, DoneClosure) {
    use valp_kernel::dimension::{
        DimensionMeasures, DimensionPolicy, DimensionRule, POLICY_VERSION,
    };
    let mut policy = done_policy();
    let mut dimensions = DimensionPolicy {
        policy_id: format!("{TASK}:dimensions"),
        version: POLICY_VERSION.to_owned(),
        scope_task_id: TASK.to_owned(),
        gates: valp_kernel::dimension::DimensionGates::default(),
    };
    dimensions.gates.quality.required = true;
    dimensions.gates.quality.rules.push(DimensionRule {
        rule_id: "no-failed".to_owned(),
        measure: "quality.verification_failed".to_owned(),
        operator: "eq".to_owned(),
        threshold: 0,
    });
    let measures = DimensionMeasures {
        policy_id: dimensions.policy_id.clone(),
        policy_digest: dimensions.digest(),
        values: [("quality.verification_failed".to_owned(), failed)].into(),
    };
    policy.dimensions = Some(dimensions);
    let mut closure = passing_closure();
    closure.policy_digest = policy.digest();
    closure.measures = Some(measures);
    (policy, closure)
}

#[test]
fn a_v2_policy_s_required_quality_gate_is_enforced_on_append_and_its_done_verifies() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let (policy, failing) = dimension_policy_and_closure(2);
    let policy_evidence = store_evidence(&root, "done-policy-", &policy.canonical_bytes());
    let mut task = Task::new(root, std::slice::from_ref(&policy_evidence));
    task.drive_to_recording();
    let set = task.closure_set(&policy_evidence, &failing);
    refused(&mut task, &set, &strings(&["dimension_gate:quality:fail"]));
    // The same closure without its measurement: a v2 policy needs one.
    let mut unmeasured = failing.clone();
    unmeasured.measures = None;
    let set = task.closure_set(&policy_evidence, &unmeasured);
    refused(&mut task, &set, &strings(&["dimension_measures_missing"]));

    let (_, passing) = dimension_policy_and_closure(0);
    let set = task.closure_set(&policy_evidence, &passing);
    let event = task.event(EventKind::RecordingCompleted, None);
    assert!(matches!(
        task.journal.append(&event, &set).unwrap(),
        Appended::Accepted { .. }
    ));
    let verification = verify(&task.root).unwrap();
    assert_eq!(verification.problems(), 0, "{verification:?}");
}

/// The v3 policy: the same criteria, and Done needs the correction cycle after a signal.
fn v3_policy() -> DonePolicy {
    DonePolicy {
        correction_cycle: true,
        ..done_policy()
    }
}

fn v3_closure() -> DoneClosure {
    DoneClosure {
        policy_digest: v3_policy().digest(),
        ..passing_closure()
    }
}

/// A task in `recording` whose `policy` was frozen at revision 1; with `fail_b`, wi-b's
/// attempt failed on the way (a `runtime_failed` signal).
fn recording_task_under(dir: &Path, policy: &DonePolicy, fail_b: bool) -> (Task, Evidence) {
    let root = init_root(dir);
    let policy = store_evidence(&root, "done-policy-", &policy.canonical_bytes());
    let plan = store_evidence(&root, "plan-", b"{\"plan\":\"demo\"}\n");
    let mut task = Task::new(root, &[plan, policy.clone()]);
    task.drive(fail_b);
    (task, policy)
}

/// A fixed correction cycle of the task whose refs are the journal (which exists).
fn fixed_cycle() -> Value {
    json::parse(&format!(
        r#"{{"schema_version":"valp-correction-cycle.v1","task_id":"{TASK}","status":"fixed",
        "rounds":[{{"round":1,"trigger":"runtime_failed","owner":"process","status":"fixed",
        "started_at":null,"ended_at":null,"reason":"attempt_failed","rejected_refs":[],
        "required_actions":[],"evidence_refs":["journal.jsonl"],"receipt_refs":["journal.jsonl"]}}],
        "final_outcome":"fixed","final_evidence_refs":["journal.jsonl"]}}"#
    ))
    .unwrap()
}

/// `cycle`'s canonical bytes stored as evidence `correction-cycle-…`.
fn cycle_evidence(task: &Task, cycle: &Value) -> Evidence {
    let bytes = json::write::canonical_bytes(cycle).unwrap();
    store_evidence(&task.root, "correction-cycle-", &bytes)
}

fn set_member(value: &mut Value, path: &[&str], to: Value) {
    let Value::Object(map) = value else { panic!() };
    match path {
        [last] => {
            map.insert((*last).to_owned(), to);
        }
        [first, rest @ ..] => {
            let next = map.get_mut(*first).unwrap();
            let next = match next {
                Value::Array(items) => &mut items[0],
                other => other,
            };
            set_member(next, rest, to);
        }
        [] => unreachable!(),
    }
}

#[test]
fn a_v3_done_after_a_signal_needs_a_fixed_correction_cycle_naming_each_failure() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task_under(temp.path(), &v3_policy(), true);
    assert_eq!(
        task.journal.guard().done().correction_signals(),
        strings(&["runtime_failed"])
    );
    let base = task.closure_set(&policy, &v3_closure());
    let with = |task: &Task, cycle: &Value| {
        let mut set = base.clone();
        set.push(cycle_evidence(task, cycle));
        set
    };

    // No cycle bound: the refusal names the missing file and the signal that needs it.
    refused(
        &mut task,
        &base,
        &strings(&["correction_cycle_missing:runtime_failed"]),
    );
    let changed = |path: &[&str], to: Value| {
        let mut cycle = fixed_cycle();
        set_member(&mut cycle, path, to);
        cycle
    };
    let refs = |refs: &[&str]| Value::Array(refs.iter().map(|&r| r.into()).collect());
    let cases = [
        (
            changed(&["schema_version"], "valp-correction-cycle.v0".into()),
            vec!["correction_cycle_schema:valp-correction-cycle.v0"],
        ),
        (
            changed(&["rounds"], Value::Array(Vec::new())),
            vec!["correction_cycle_no_rounds"],
        ),
        (
            changed(&["final_outcome"], "blocked".into()),
            vec!["correction_cycle_outcome:blocked"],
        ),
        (
            changed(&["rounds", "evidence_refs"], refs(&["../x", "/etc/passwd"])),
            vec![
                "correction_cycle_unsafe_ref:../x",
                "correction_cycle_unsafe_ref:/etc/passwd",
            ],
        ),
        (
            changed(
                &["rounds", "rejected_refs"],
                refs(&["agents/codex/draft.md"]),
            ),
            vec!["correction_cycle_missing_ref:agents/codex/draft.md"],
        ),
        (
            changed(&["task_id"], "task-other".into()),
            vec!["correction_cycle_task:task-other"],
        ),
    ];
    for (cycle, reasons) in &cases {
        let set = with(&task, cycle);
        refused(&mut task, &set, &strings(reasons));
    }
    // Two cycles, and one whose blob was never stored.
    let mut set = with(&task, &fixed_cycle());
    let mut other = fixed_cycle();
    set_member(&mut other, &["status"], "FIXED".into());
    set.push(cycle_evidence(&task, &other));
    refused(&mut task, &set, &strings(&["correction_cycle_ambiguous"]));
    let unstored = format!("sha256:{}", "2".repeat(64));
    let mut set = base.clone();
    set.push(Evidence {
        evidence_id: id(IdentityKind::Evidence, "correction-cycle-unstored"),
        content_digest: unstored.clone(),
    });
    refused(
        &mut task,
        &set,
        &[format!("correction_cycle_blob_missing:{unstored}")],
    );

    // A fixed cycle whose refs exist: Done, and the journal reopens verified.
    let set = with(&task, &fixed_cycle());
    let event = task.event(EventKind::RecordingCompleted, None);
    assert!(matches!(
        task.journal.append(&event, &set).unwrap(),
        Appended::Accepted { .. }
    ));
    assert_eq!(
        task.journal.live().body().status.known(),
        Some(TaskStatus::Done)
    );
    let reopened = task.root.open_task(TASK, Access::ReadOnly).unwrap();
    assert_eq!(reopened.len(), task.journal.len());
    assert_eq!(verify(&task.root).unwrap().problems(), 0);
}

#[test]
fn a_v3_task_without_a_signal_skips_the_correction_cycle() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task_under(temp.path(), &v3_policy(), false);
    assert!(task.journal.guard().done().correction_signals().is_empty());
    let set = task.closure_set(&policy, &v3_closure());
    let event = task.event(EventKind::RecordingCompleted, None);
    assert!(matches!(
        task.journal.append(&event, &set).unwrap(),
        Appended::Accepted { .. }
    ));
}

#[test]
fn a_task_frozen_under_an_older_policy_keeps_its_rule_after_a_signal() {
    let temp = tempfile::tempdir().unwrap();
    let (mut task, policy) = recording_task_under(temp.path(), &done_policy(), true);
    assert_eq!(
        task.journal.guard().done().correction_signals(),
        strings(&["runtime_failed"])
    );
    let set = task.closure_set(&policy, &passing_closure());
    let event = task.event(EventKind::RecordingCompleted, None);
    assert!(matches!(
        task.journal.append(&event, &set).unwrap(),
        Appended::Accepted { .. }
    ));
    let reopened = task.root.open_task(TASK, Access::ReadOnly).unwrap();
    assert_eq!(
        reopened.live().body().status.known(),
        Some(TaskStatus::Done)
    );
    assert_eq!(verify(&task.root).unwrap().problems(), 0);
}
