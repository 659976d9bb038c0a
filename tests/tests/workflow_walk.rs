//! The System's decisions against the real kernel, on random plans: whatever the dependency
//! graph, requirements, budgets and adapter outcomes, `workflow::decide` never proposes an event
//! the kernel refuses, and every task comes to rest (done, blocked or failed) in a bounded
//! number of steps. The adapters are simulated (each launched attempt reports `accepted`, then
//! `completed` or `blocked` at random); the Leader passes every review and, in a second walk,
//! also interrupts, resumes, cancels work items or the task and redirects at random moments
//! (built by the console's own `control::event_for`; the kernel may refuse those, never the
//! System's proposals).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use valp_kernel::{Event, EventKind, Evidence, IdentityKind, Outcome, State, TaskStatus, reduce};
use valp_runtime::abi::ObservationStatus;
use valp_runtime::runtime::control::Operation;
use valp_runtime::runtime::workflow::{
    AttemptReport, EvidenceNeed, ExecutionPolicy, Step, Wait, decide,
};
use valp_tests::store::Rng;
use valp_tests::workflow::{event_of, evidence, id, leader};

/// A random valid plan: 1 to 7 items, each depending on earlier ones with random kinds.
fn random_plan(rng: &mut Rng) -> String {
    let mut text = String::from(
        "schema_version = \"valp-plan.v1\"\ntask_id = \"walk\"\ngoal = \"g\"\n\n\
         [[criteria]]\nid = \"c\"\ndescription = \"d\"\n\n",
    );
    let items = 1 + rng.below(7);
    for index in 0..items {
        let requirement = ["required", "optional", "soft"][rng.below(3)];
        let mut dependencies = Vec::new();
        for earlier in 0..index {
            if rng.below(3) == 0 {
                let kind = ["hard", "soft", "optional"][rng.below(3)];
                dependencies.push(format!("{{ id = \"i{earlier}\", kind = \"{kind}\" }}"));
            }
        }
        write!(
            text,
            "[[work_items]]\nid = \"i{index}\"\nrequirement = \"{requirement}\"\n\
             dependencies = [{}]\nrun = {{ adapter = \"process\", argv = [\"true\"] }}\n\n",
            dependencies.join(", ")
        )
        .unwrap();
    }
    write!(
        text,
        "[execution]\nmax_concurrency = {}\nretry_budget = {}\n",
        1 + rng.below(3),
        1 + rng.below(3)
    )
    .unwrap();
    text
}

fn apply(state: &State, event: &Event, evidence: &[Evidence], context: &str) -> State {
    match reduce(state, event, evidence) {
        Outcome::Accepted(accepted) => accepted.state,
        Outcome::Rejected(rejected) => panic!(
            "the kernel refused {} ({:?}) {context}",
            event.kind.as_str(),
            rejected.error_code
        ),
        Outcome::NoOp(_) => panic!("{} was a duplicate {context}", event.kind.as_str()),
    }
}

/// A random operation of the Leader on the task, applied when the kernel accepts it.
fn leader_acts(state: &State, rng: &mut Rng) -> Option<State> {
    let items = &state.body.work_items;
    let item = items[rng.below(items.len())]
        .work_item_id
        .value()
        .to_owned();
    let operation = match rng.below(20) {
        0..=5 => Operation::Interrupt,
        6..=11 => Operation::CancelItem(item),
        12..=18 => Operation::Redirect {
            superseded: vec![item],
            intent: b"new intent".to_vec(),
        },
        _ => Operation::CancelTask,
    };
    leader(state, &operation, false).map(|(state, _)| state)
}

/// Drives one random task to rest; returns its final status and whether every attempt
/// completed. With `leader`, the Leader also acts at random moments.
fn walk(seed: u64, with_leader: bool) -> (TaskStatus, bool) {
    let mut rng = Rng::new(seed);
    let text = random_plan(&mut rng);
    let context = format!("(seed {seed}, plan:\n{text})");
    let plan = valp_runtime::plan::parse(Path::new("walk.toml"), text.as_bytes())
        .unwrap_or_else(|errors| panic!("{errors} {context}"));
    let policy = ExecutionPolicy::from(&plan.execution);
    let genesis = plan
        .genesis(id(IdentityKind::Installation, "inst-walk"), 1)
        .unwrap();
    let publish = event_of(&genesis.state, EventKind::RoutingValidationStarted, None);
    let mut state = apply(
        &genesis.state,
        &publish,
        &evidence(&EvidenceNeed::Request, &publish),
        &context,
    );
    let mut reports: BTreeMap<String, AttemptReport> = BTreeMap::new();
    let mut all_completed = true;
    let mut verified = false;
    for _ in 0..2_000 {
        if with_leader && rng.below(12) == 0 {
            if let Some(next) = leader_acts(&state, &mut rng) {
                state = next;
                all_completed = false;
            }
            continue;
        }
        let step = decide(&state.body, &policy, &reports, verified);
        let (event, evidence) = match step {
            Step::Propose(proposal) => {
                let event = event_of(&state, proposal.kind, Some(&proposal));
                let evidence = evidence(&proposal.evidence, &event);
                (event, evidence)
            }
            Step::Launch(slots) => {
                let completed = rng.below(10) < 7;
                all_completed &= completed;
                reports.insert(
                    slots.attempt_id,
                    AttemptReport {
                        launched: true,
                        accepted: true,
                        last: Some(if completed {
                            ObservationStatus::Completed
                        } else {
                            ObservationStatus::Blocked
                        }),
                        supervisor_lost: false,
                    },
                );
                continue;
            }
            Step::Verify => {
                verified = true;
                let event = event_of(&state, EventKind::VerificationPassed, None);
                let evidence = evidence(&EvidenceNeed::Final, &event);
                (event, evidence)
            }
            Step::Record => (
                event_of(&state, EventKind::RecordingCompleted, None),
                Vec::new(),
            ),
            Step::Wait(Wait::Leader(_))
                if state.body.status.known() == Some(TaskStatus::Reviewing) =>
            {
                (event_of(&state, EventKind::ReviewPassed, None), Vec::new())
            }
            Step::Wait(Wait::Interrupted) => {
                state = leader(&state, &Operation::Resume, false)
                    .unwrap_or_else(|| panic!("the resume was refused {context}"))
                    .0;
                continue;
            }
            Step::Wait(Wait::Finished(status)) => return (status, all_completed),
            Step::Wait(Wait::Leader(_)) => {
                return (state.body.status.known().unwrap(), all_completed);
            }
            Step::Wait(other) => {
                panic!("the task waits for {other:?} with nothing in flight {context}")
            }
        };
        state = apply(&state, &event, &evidence, &context);
    }
    panic!("no rest after 2,000 steps {context}");
}

#[test]
fn decisions_are_always_accepted_and_every_task_comes_to_rest() {
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..400 {
        let (status, all_completed) = walk(seed, false);
        assert!(
            matches!(
                status,
                TaskStatus::Done | TaskStatus::Blocked | TaskStatus::Failed
            ),
            "seed {seed} rests in {}",
            status.as_str()
        );
        if all_completed {
            assert_eq!(
                status,
                TaskStatus::Done,
                "seed {seed}: every attempt completed"
            );
        }
        *ends.entry(status.as_str()).or_default() += 1;
    }
    // The walks cover every way to rest, so the property is not vacuous.
    for status in ["done", "blocked"] {
        assert!(ends.get(status).copied().unwrap_or(0) > 10, "{ends:?}");
    }
}

#[test]
fn the_leaders_operations_at_any_moment_never_lead_the_system_astray() {
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..400 {
        let (status, _) = walk(seed, true);
        assert!(
            matches!(
                status,
                TaskStatus::Done | TaskStatus::Blocked | TaskStatus::Cancelled | TaskStatus::Fixing
            ),
            "seed {seed} rests in {}",
            status.as_str()
        );
        *ends.entry(status.as_str()).or_default() += 1;
    }
    for status in ["done", "blocked", "cancelled"] {
        assert!(ends.get(status).copied().unwrap_or(0) > 5, "{ends:?}");
    }
}
