//! The authority lane's file formats against their schemas: `installation/journal.jsonl` (line
//! 0 the installation genesis, then entries), `installation/rejections.jsonl`,
//! `leader/binding.json`, the approval and observation evidence, and every installation State
//! the ledger passes through. The artifacts are produced here, by the console's authority
//! library over a real control root: observations (the local human operator, no tmux needed,
//! plus observations derived from it with another candidate), a selection, a reopen, two
//! rotations and refused proposals; kinds the console does not propose yet (a task handoff, a
//! failed health check) are appended through the store. Malformed instances must be refused,
//! each for the reason named.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use serde_json::{Value, json};
use valp_kernel::canonical::Canonical;
use valp_kernel::installation::{
    InstallationEvent, InstallationLive, InstallationState, decode_installation_entry,
    decode_installation_genesis, reduce_installation,
};
use valp_kernel::{Evidence, Identity, IdentityKind, InstallationEventKind, Outcome};
use valp_runtime::authority::{self, Approval, AuthorityError, Confirmation, SessionCheck};
use valp_runtime::clock::{Clock, FixedClock, Timestamp};
use valp_runtime::doctor::{Candidate, Observation, ObserveOptions, Session, observe};
use valp_store::io::OsStorage;
use valp_store::{Appended, ControlRoot, Journal};
use valp_tests::observations::{human_of, with_pane};
use valp_tests::schemas::{SCHEMA_BASE, errors, read_json, validator};
use valp_tests::workspace_root;

const DAY_MS: i64 = 86_400_000;

/// The schemas this file is about.
const SCHEMAS: [&str; 8] = [
    "kernel/installation-state.schema.json",
    "kernel/installation-event.schema.json",
    "kernel/installation-genesis.schema.json",
    "kernel/installation-entry.schema.json",
    "store/installation-journal-line.schema.json",
    "store/installation-rejection.schema.json",
    "console/leader-binding.schema.json",
    "console/leader-approval.schema.json",
];

/// `(instance path, keyword)` of every error.
fn failures(validator: &Validator, instance: &Value) -> Vec<(String, String)> {
    validator
        .iter_errors(instance)
        .map(|error| {
            (
                error.instance_path().as_str().to_owned(),
                error.kind().keyword().to_owned(),
            )
        })
        .collect()
}

fn json_of<T: Canonical>(artifact: &T) -> Value {
    serde_json::from_slice(&artifact.canonical_bytes()).unwrap()
}

fn lines_of(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// One change to a valid instance, at a JSON Pointer.
enum Edit {
    /// Sets (or adds) the member or element.
    Set(&'static str, Value),
    /// Removes the member.
    Remove(&'static str),
}

fn set(pointer: &'static str, value: impl Into<Value>) -> Edit {
    Edit::Set(pointer, value.into())
}

fn remove(pointer: &'static str) -> Edit {
    Edit::Remove(pointer)
}

impl Edit {
    fn apply(&self, instance: &mut Value) {
        let pointer = match self {
            Self::Set(pointer, _) | Self::Remove(pointer) => *pointer,
        };
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        let parent = instance
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("{pointer}: no parent"));
        match (self, parent) {
            (Self::Set(_, value), Value::Object(members)) => {
                members.insert(key.to_owned(), value.clone());
            }
            (Self::Set(_, value), Value::Array(items)) => {
                items[key.parse::<usize>().unwrap()] = value.clone();
            }
            (Self::Remove(_), Value::Object(members)) => {
                assert!(
                    members.remove(key).is_some(),
                    "{pointer}: nothing to remove"
                );
            }
            _ => panic!("{pointer}: cannot edit"),
        }
    }
}

/// A change, and the error it must cause: `(name, edit, instance path, keyword)`.
type Case = (&'static str, Edit, &'static str, &'static str);

/// Every case must be refused, with (at least) the error it names.
fn assert_refused(schema: &str, good: &Value, cases: &[Case]) {
    let validator = validator(schema);
    assert_eq!(errors(&validator, good), Vec::<String>::new(), "{schema}");
    for (name, edit, path, keyword) in cases {
        let mut bad = good.clone();
        edit.apply(&mut bad);
        assert_ne!(&bad, good, "{schema}: {name} changes nothing");
        let found = failures(&validator, &bad);
        assert!(
            found.iter().any(|(at, what)| at == path && what == keyword),
            "{schema}: {name} must be refused with {keyword} at {path:?}; got {found:?}"
        );
    }
}

/// Everything the scenario wrote, read back from disk.
struct Artifacts {
    journal: Vec<Value>,
    rejections: Vec<Value>,
    /// `leader/binding.json` after each selection or rotation.
    bindings: Vec<Value>,
    /// Every approval record in the evidence store, by how the ledger or a rejection names it.
    approvals: Vec<Value>,
    /// Every observation in the evidence store.
    observations: Vec<Value>,
    /// The genesis State and every State the ledger's entries lead to, in order.
    states: Vec<Value>,
}

fn artifacts() -> &'static Artifacts {
    static ARTIFACTS: OnceLock<Artifacts> = OnceLock::new();
    ARTIFACTS.get_or_init(produce)
}

fn approval(observation: &Observation, confirmation: Confirmation, at: Timestamp) -> Approval {
    Approval {
        approved_by: authority::operator(observation).unwrap(),
        confirmation,
        at,
    }
}

fn refused_code(result: Result<impl std::fmt::Debug, AuthorityError>) -> String {
    match result {
        Err(AuthorityError::Refused { code, .. }) => code,
        other => panic!("expected a refusal by the kernel, got {other:?}"),
    }
}

/// The observation with its human operator replaced by another OS account (a new session of
/// the human principal kind: another uid, so another fingerprint).
fn with_other_human(observation: &Observation) -> Observation {
    let human = human_of(observation);
    let Session::Human { uid, .. } = human.session else {
        unreachable!()
    };
    let other = uid.wrapping_add(1);
    let mut replacement = Candidate::new(
        format!("human:uid-{other}"),
        format!("user:uid-{other}"),
        Session::Human {
            uid: other,
            login: None,
        },
        human.health.clone(),
        format!("can approve and redirect; OS account uid {other}"),
    );
    replacement
        .known_limitations
        .clone_from(&human.known_limitations);
    let mut observation = observation.clone();
    for candidate in &mut observation.candidates {
        if matches!(candidate.session, Session::Human { .. }) {
            *candidate = replacement.clone();
        }
    }
    observation
}

/// An event at the ledger's current epoch and revision (as the console builds them).
fn next_event(
    ledger: &Journal<InstallationLive>,
    kind: InstallationEventKind,
) -> InstallationEvent {
    let state = ledger.live().state();
    InstallationEvent::new(
        Identity::new(
            IdentityKind::Event,
            format!("{}-r{}", kind.as_str(), state.revision),
        )
        .unwrap(),
        state.installation_id.clone(),
        state.active_epoch,
        kind,
        state.revision,
    )
}

fn accepted(ledger: &mut Journal<InstallationLive>, event: &InstallationEvent, set: &[Evidence]) {
    let appended = ledger.append(event, set).unwrap();
    assert!(
        matches!(appended, Appended::Accepted { .. }),
        "{}: {appended:?}",
        event.kind.as_str()
    );
}

#[allow(clippy::too_many_lines)] // one scenario, read top to bottom
fn produce() -> Artifacts {
    let temp = tempfile::tempdir().unwrap();
    let folder = temp.path().join(".valp");
    let id = Identity::new(IdentityKind::Installation, "inst-schemas").unwrap();
    let root = ControlRoot::init(&folder, id, Arc::new(OsStorage)).unwrap();
    let mut ledger = root.ledger().unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(1_796_042_096_789));
    let options = ObserveOptions {
        tmux_binary: Some("/nonexistent/tmux".into()),
        ..ObserveOptions::only_sockets([])
    };
    let mut bindings = Vec::new();
    let binding_file = root.layout().binding_file();

    // Day 1: the first observation (the human operator only) and the explicit selection.
    let first = observe(&clock, &options);
    assert_eq!(first.candidates.len(), 1, "only the local human operator");
    let human = human_of(&first).candidate_id.clone();
    authority::record_observation(&root, &mut ledger, &first).unwrap();
    clock.advance(1_000);
    let unobserved = authority::select(
        &root,
        &mut ledger,
        "human:uid-4294967295",
        &approval(&first, Confirmation::Flag, clock.now()),
    );
    assert_eq!(refused_code(unobserved), "VALP-E-PERMISSION-DENIED");
    clock.advance(1_000);
    authority::select(
        &root,
        &mut ledger,
        &human,
        &approval(&first, Confirmation::TypedId, clock.now()),
    )
    .unwrap();
    bindings.push(read_json(&binding_file));

    // Day 2: the console starts, observes again and reopens the bound session; rotating to the
    // very same session is refused.
    clock.advance(DAY_MS);
    let second = observe(&clock, &options);
    let check = authority::open_session(&root, &mut ledger, &second).unwrap();
    assert!(
        matches!(check, SessionCheck::Reopened { epoch: 1, .. }),
        "{check:?}"
    );
    let same = authority::rotate(
        &root,
        &mut ledger,
        &human,
        &approval(&second, Confirmation::Dialog, clock.now()),
    );
    assert_eq!(refused_code(same), "VALP-E-PERMISSION-DENIED");

    // Day 3: a tmux pane is observed too; the Leader role rotates to it (epoch 2).
    clock.advance(DAY_MS);
    let third = with_pane(&observe(&clock, &options), "/tmp/valp-schemas/tmux.sock");
    authority::record_observation(&root, &mut ledger, &third).unwrap();
    let pane = third.candidates[1].candidate_id.clone();
    authority::rotate(
        &root,
        &mut ledger,
        &pane,
        &approval(&third, Confirmation::Dialog, clock.now()),
    )
    .unwrap();
    bindings.push(read_json(&binding_file));

    // Day 4: another OS account; the role rotates to it (epoch 3), which is then reopened.
    clock.advance(DAY_MS);
    let fourth = with_other_human(&observe(&clock, &options));
    let fourth_evidence = authority::record_observation(&root, &mut ledger, &fourth).unwrap();
    let other = human_of(&fourth).candidate_id.clone();
    let rotated = authority::rotate(
        &root,
        &mut ledger,
        &other,
        &approval(&fourth, Confirmation::Flag, clock.now()),
    )
    .unwrap();
    bindings.push(read_json(&binding_file));
    let check = authority::reopen(&mut ledger, &fourth, &fourth_evidence).unwrap();
    assert!(
        matches!(check, SessionCheck::Reopened { epoch: 3, .. }),
        "{check:?}"
    );

    // Kinds the console does not propose yet, through the store: a task on fenced epoch 1
    // handed over (authorised by the last approval), and a failed health check.
    let before = ledger.live().state().clone();
    let mut handoff = next_event(&ledger, InstallationEventKind::TaskHandedOver);
    handoff.authority_principal_id = Some(before.leader.as_ref().unwrap().approved_by.clone());
    handoff.authority_evidence_id = Some(rotated.approval.evidence_id.clone());
    handoff.task_id = Some(Identity::new(IdentityKind::Task, "task-a").unwrap());
    handoff.successor_task_id = Some(Identity::new(IdentityKind::Task, "task-b").unwrap());
    handoff.fenced_epoch = Some(1);
    accepted(
        &mut ledger,
        &handoff,
        std::slice::from_ref(&rotated.approval),
    );
    let mut health = next_event(&ledger, InstallationEventKind::LeaderHealthFailed);
    health.observation_id = Some(fourth_evidence.evidence_id.clone());
    health.reason = Some("the pane stopped answering".to_owned());
    accepted(&mut ledger, &health, std::slice::from_ref(&fourth_evidence));
    // A proposal from a fenced epoch.
    let mut stale = next_event(&ledger, InstallationEventKind::LeaderCandidatesObserved);
    stale.leader_epoch = 1;
    stale.observation_id = Some(fourth_evidence.evidence_id.clone());
    stale.candidates = Some(before.observation.as_ref().unwrap().candidates.clone());
    let appended = ledger
        .append(&stale, std::slice::from_ref(&fourth_evidence))
        .unwrap();
    assert!(
        matches!(&appended, Appended::Rejected { error_code, .. } if error_code.as_str() == "VALP-E-LEADER-EPOCH"),
        "{appended:?}"
    );

    let dir = root.layout().installation_dir();
    let journal = lines_of(&dir.join("journal.jsonl"));
    let rejections = lines_of(&dir.join("rejections.jsonl"));
    let states = replayed_states(&journal, ledger.live().state());

    // Evidence named by the ledger and by the rejections, read from the evidence store.
    let mut named = BTreeSet::new();
    for evidence_set in journal
        .iter()
        .skip(1)
        .map(|line| &line["entry"]["evidence_set"])
        .chain(rejections.iter().map(|line| &line["evidence_set"]))
    {
        for evidence in evidence_set.as_array().unwrap() {
            named.insert((
                evidence["evidence_id"]["value"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                evidence["content_digest"].as_str().unwrap().to_owned(),
            ));
        }
    }
    let blobs = root.blobs();
    let blob =
        |digest: &str| -> Value { serde_json::from_slice(&blobs.get(digest).unwrap()).unwrap() };
    let of_kind = |prefix: &str| -> Vec<Value> {
        named
            .iter()
            .filter(|(id, _)| id.starts_with(prefix))
            .map(|(_, digest)| blob(digest))
            .collect()
    };
    let approvals = of_kind("approval-");
    let observations = of_kind("observation-");
    // Every binding names its approval, and that approval is among those read.
    for binding in &bindings {
        let approval = blob(binding["approval"]["content_digest"].as_str().unwrap());
        assert!(approvals.contains(&approval));
    }
    // The blob files are exactly the named evidence (no orphan was left unchecked).
    let stored = std::fs::read_dir(root.layout().blobs_dir())
        .unwrap()
        .count();
    assert_eq!(stored, named.len());
    drop(ledger);
    drop(temp);
    Artifacts {
        journal,
        rejections,
        bindings,
        approvals,
        observations,
        states,
    }
}

/// Replays the ledger's lines with the pure reducer and returns every State, from the genesis
/// on; the last must be the State the store holds.
fn replayed_states(journal: &[Value], held: &InstallationState) -> Vec<Value> {
    let decode =
        |value: &Value| valp_kernel::json::parse(&serde_json::to_string(value).unwrap()).unwrap();
    let genesis = decode_installation_genesis(&decode(&journal[0]["entry"])).unwrap();
    let mut state = genesis.state;
    let mut states = vec![json_of(&state)];
    for line in &journal[1..] {
        let entry = decode_installation_entry(&decode(&line["entry"])).unwrap();
        let Outcome::Accepted(accepted) =
            reduce_installation(&state, &entry.event, &entry.evidence_set)
        else {
            panic!("a ledger entry replays as accepted")
        };
        assert_eq!(accepted.record(), entry.result);
        state = accepted.state;
        states.push(json_of(&state));
    }
    assert_eq!(&state, held);
    states
}

fn schema_path(relative: &str) -> PathBuf {
    workspace_root().join("schemas").join(relative)
}

#[test]
fn the_authority_schemas_are_valid_draft_2020_12_schemas() {
    for relative in SCHEMAS {
        let schema = read_json(&schema_path(relative));
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["$id"], format!("{SCHEMA_BASE}{relative}"));
        jsonschema::meta::validate(&schema).unwrap_or_else(|e| panic!("{relative}: {e}"));
        validator(relative);
    }
    let readme = std::fs::read_to_string(workspace_root().join("schemas/README.md")).unwrap();
    for relative in SCHEMAS {
        assert!(
            readme.contains(relative),
            "schemas/README.md lists {relative}"
        );
    }
}

#[test]
fn the_ledger_validates_line_by_line() {
    let artifacts = artifacts();
    let line = validator("store/installation-journal-line.schema.json");
    let genesis = validator("kernel/installation-genesis.schema.json");
    let entry = validator("kernel/installation-entry.schema.json");
    let event = validator("kernel/installation-event.schema.json");
    let kinds: Vec<&str> = artifacts.journal[1..]
        .iter()
        .map(|value| value["entry"]["event"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "installation_initialized",
            "bootstrap_discovery_started",
            "leader_candidate_discovery_completed",
            "leader_selection_approved",
            "leader_activated",
            "leader_session_reopened",
            "leader_candidates_observed",
            "leader_rotation_approved",
            "leader_rotation_completed",
            "leader_candidates_observed",
            "leader_rotation_approved",
            "leader_rotation_completed",
            "leader_session_reopened",
            "task_handed_over",
            "leader_health_failed",
        ]
    );
    for (seq, value) in artifacts.journal.iter().enumerate() {
        assert_eq!(value["seq"], seq);
        assert_eq!(errors(&line, value), Vec::<String>::new(), "line {seq}");
        if seq == 0 {
            assert_eq!(errors(&genesis, &value["entry"]), Vec::<String>::new());
        } else {
            assert_eq!(errors(&entry, &value["entry"]), Vec::<String>::new());
            assert_eq!(
                errors(&event, &value["entry"]["event"]),
                Vec::<String>::new()
            );
        }
    }
    // The task journal's schema does not describe the ledger, nor the reverse.
    let task_line = validator("store/journal-line.schema.json");
    assert!(
        artifacts
            .journal
            .iter()
            .all(|value| !task_line.is_valid(value))
    );
}

#[test]
fn every_state_the_ledger_passes_through_validates() {
    let artifacts = artifacts();
    let state = validator("kernel/installation-state.schema.json");
    for (revision, value) in artifacts.states.iter().enumerate() {
        assert_eq!(value["revision"], revision);
        assert_eq!(
            errors(&state, value),
            Vec::<String>::new(),
            "revision {revision}"
        );
    }
    let statuses: BTreeSet<&str> = artifacts
        .states
        .iter()
        .map(|value| value["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        BTreeSet::from([
            "uninitialized",
            "bootstrapping",
            "discovering_leader_candidates",
            "awaiting_leader_selection",
            "activating_leader",
            "active",
            "rotating_leader",
            "degraded",
        ])
    );
    // Every optional member occurs: a pending first selection and a pending rotation, then
    // fenced bindings, a reopen and a handoff.
    let has = |key: &str| {
        artifacts
            .states
            .iter()
            .any(|value| value.get(key).is_some())
    };
    for key in [
        "observation",
        "leader",
        "fenced",
        "pending",
        "reopened",
        "handoffs",
    ] {
        assert!(has(key), "some State has {key}");
    }
    assert!(
        artifacts
            .states
            .iter()
            .any(|value| value["pending"].get("fenced_epoch").is_some())
    );
    let last = artifacts.states.last().unwrap();
    assert_eq!(last["fenced"].as_array().unwrap().len(), 2);
    assert_eq!(last["active_epoch"], 3);
}

#[test]
fn rejections_validate() {
    let artifacts = artifacts();
    let rejection = validator("store/installation-rejection.schema.json");
    let codes: Vec<&str> = artifacts
        .rejections
        .iter()
        .map(|value| value["error_code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "VALP-E-PERMISSION-DENIED",
            "VALP-E-PERMISSION-DENIED",
            "VALP-E-LEADER-EPOCH"
        ]
    );
    for value in &artifacts.rejections {
        assert_eq!(errors(&rejection, value), Vec::<String>::new());
    }
    // The task rejection schema does not describe them.
    let task = validator("store/rejection.schema.json");
    assert!(
        artifacts
            .rejections
            .iter()
            .all(|value| !task.is_valid(value))
    );
}

#[test]
fn bindings_approvals_and_observations_validate() {
    let artifacts = artifacts();
    let binding = validator("console/leader-binding.schema.json");
    let kinds: Vec<&str> = artifacts
        .bindings
        .iter()
        .map(|value| value["principal_kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["human", "tmux_pane", "human"]);
    for value in &artifacts.bindings {
        assert_eq!(errors(&binding, value), Vec::<String>::new());
    }
    let approval = validator("console/leader-approval.schema.json");
    // Two bound selections, one refused, one refused rotation, two completed rotations.
    assert_eq!(artifacts.approvals.len(), 5);
    let confirmations: BTreeSet<&str> = artifacts
        .approvals
        .iter()
        .map(|value| value["confirmation"].as_str().unwrap())
        .collect();
    assert_eq!(
        confirmations,
        BTreeSet::from(["console_dialog", "typed_id", "yes_flag"])
    );
    for value in &artifacts.approvals {
        assert_eq!(errors(&approval, value), Vec::<String>::new());
    }
    let observation = validator("console/doctor-observation.schema.json");
    assert_eq!(artifacts.observations.len(), 3);
    for value in &artifacts.observations {
        assert_eq!(errors(&observation, value), Vec::<String>::new());
    }
}

/// The last State: it has a leader, two fenced bindings, a reopen, a handoff and an observation.
fn last_state() -> Value {
    artifacts().states.last().unwrap().clone()
}

fn entry_of(kind: &str) -> Value {
    artifacts()
        .journal
        .iter()
        .find(|line| line["entry"]["event"]["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} entry"))["entry"]
        .clone()
}

const BAD_DIGEST: &str = "sha256:ABC";

#[test]
fn broken_states_are_refused() {
    let schema = "kernel/installation-state.schema.json";
    let good = last_state();
    let cases = [
        ("missing status", remove("/status"), "", "required"),
        (
            "unknown member",
            set("/title", "Leader"),
            "",
            "additionalProperties",
        ),
        (
            "unknown status",
            set("/status", "paused"),
            "/status",
            "enum",
        ),
        (
            "malformed fingerprint",
            set("/leader/candidate/session_fingerprint", BAD_DIGEST),
            "/leader/candidate/session_fingerprint",
            "pattern",
        ),
        (
            "malformed observation digest",
            set("/observation/observation/content_digest", BAD_DIGEST),
            "/observation/observation/content_digest",
            "pattern",
        ),
        (
            "malformed history digest",
            set("/accepted_events/0/result_digest", BAD_DIGEST),
            "/accepted_events/0/result_digest",
            "pattern",
        ),
        (
            "a fenced epoch on the active binding",
            set("/leader/fenced_epoch", 2),
            "/leader",
            "additionalProperties",
        ),
        (
            "an empty fenced list",
            set("/fenced", json!([])),
            "/fenced",
            "minItems",
        ),
        (
            "an installation id of another kind",
            set("/installation_id/kind", "task"),
            "/installation_id/kind",
            "const",
        ),
        (
            "an unknown principal kind",
            set("/observation/candidates/0/principal_kind", "agent"),
            "/observation/candidates/0/principal_kind",
            "enum",
        ),
        (
            "a negative epoch",
            set("/active_epoch", -1),
            "/active_epoch",
            "minimum",
        ),
        (
            "a handoff of a principal",
            set("/handoffs/0/task_id/kind", "principal"),
            "/handoffs/0/task_id/kind",
            "const",
        ),
        (
            "another protocol",
            set("/protocol_version", "0.4.0"),
            "/protocol_version",
            "const",
        ),
    ];
    assert_refused(schema, &good, &cases);
    let pending = artifacts()
        .states
        .iter()
        .find(|value| value["pending"].get("fenced_epoch").is_some())
        .unwrap();
    let cases = [
        (
            "a pending binding without a candidate",
            remove("/pending/candidate"),
            "/pending",
            "required",
        ),
        (
            "a pending epoch of 0",
            set("/pending/epoch", 0),
            "/pending/epoch",
            "minimum",
        ),
    ];
    assert_refused(schema, pending, &cases);
}

#[test]
fn broken_events_are_refused() {
    let mut good = entry_of("leader_rotation_approved")["event"].clone();
    good["session_fingerprint"] =
        entry_of("leader_session_reopened")["event"]["session_fingerprint"].clone();
    let cases = [
        ("missing kind", remove("/kind"), "", "required"),
        (
            "unknown member",
            set("/title", "Leader"),
            "",
            "additionalProperties",
        ),
        (
            "unknown kind",
            set("/kind", "leader_elected"),
            "/kind",
            "enum",
        ),
        (
            "malformed fingerprint",
            set("/session_fingerprint", BAD_DIGEST),
            "/session_fingerprint",
            "pattern",
        ),
        (
            "authority evidence of another kind",
            set("/authority_evidence_id/kind", "principal"),
            "/authority_evidence_id/kind",
            "const",
        ),
        (
            "a boolean revision",
            set("/expected_revision", false),
            "/expected_revision",
            "type",
        ),
        (
            "another schema version",
            set("/schema_version", "valp-kernel-installation-event.v2"),
            "/schema_version",
            "const",
        ),
    ];
    assert_refused("kernel/installation-event.schema.json", &good, &cases);
}

#[test]
fn broken_geneses_are_refused() {
    let last = last_state();
    let cases = [
        ("missing state", remove("/state"), "", "required"),
        ("unknown member", set("/seq", 0), "", "additionalProperties"),
        (
            "an initialized status",
            set("/state/status", "bootstrapping"),
            "/state/status",
            "const",
        ),
        (
            "a revision",
            set("/state/revision", 1),
            "/state/revision",
            "const",
        ),
        (
            "a leader",
            set("/state/leader", last["leader"].clone()),
            "/state/leader",
            "falseSchema",
        ),
        (
            "a history",
            set("/state/accepted_events", last["accepted_events"].clone()),
            "/state/accepted_events",
            "maxItems",
        ),
    ];
    let good = &artifacts().journal[0]["entry"];
    assert_refused("kernel/installation-genesis.schema.json", good, &cases);
}

#[test]
fn broken_entries_are_refused() {
    let schema = "kernel/installation-entry.schema.json";
    let cases = [
        (
            "a selection without its approval",
            remove("/event/authority_evidence_id"),
            "/event",
            "required",
        ),
        (
            "a selection without evidence",
            set("/evidence_set", json!([])),
            "/evidence_set",
            "minItems",
        ),
        (
            "malformed evidence digest",
            set("/evidence_set/0/content_digest", BAD_DIGEST),
            "/evidence_set/0/content_digest",
            "pattern",
        ),
        (
            "unknown evidence member",
            set("/evidence_set/0/title", "x"),
            "/evidence_set/0",
            "additionalProperties",
        ),
        (
            "an obligation",
            set("/result/obligations", json!(["notify"])),
            "/result/obligations",
            "maxItems",
        ),
        (
            "audit facts without the acceptance",
            set("/result/audit_facts/0", "leader_selected"),
            "/result/audit_facts/0",
            "pattern",
        ),
        (
            "a result id that is not an acceptance",
            set("/result/result_id/value", "x:rejected"),
            "/result/result_id/value",
            "pattern",
        ),
        (
            "malformed input digest",
            set("/result/input_digest", BAD_DIGEST),
            "/result/input_digest",
            "pattern",
        ),
        (
            "the next State",
            set("/result/state", last_state()),
            "/result",
            "additionalProperties",
        ),
    ];
    assert_refused(schema, &entry_of("leader_selection_approved"), &cases);
    let cases = [
        (
            "a reopen without its fingerprint",
            remove("/event/session_fingerprint"),
            "/event",
            "required",
        ),
        (
            "a reopen without its observation",
            remove("/event/observation_id"),
            "/event",
            "required",
        ),
        (
            "unknown entry member",
            set("/state", json!({})),
            "",
            "additionalProperties",
        ),
    ];
    assert_refused(schema, &entry_of("leader_session_reopened"), &cases);
}

#[test]
fn broken_ledger_lines_are_refused() {
    let schema = "store/installation-journal-line.schema.json";
    let cases = [
        (
            "a genesis as line 1",
            set("/seq", 1),
            "/prior_entry_digest",
            "type",
        ),
        (
            "a task GenesisRoot",
            set("/entry/schema_version", "valp-kernel-genesis-root.v1"),
            "/entry/schema_version",
            "const",
        ),
        (
            "malformed entry digest",
            set("/entry_digest", BAD_DIGEST),
            "/entry_digest",
            "pattern",
        ),
    ];
    assert_refused(schema, &artifacts().journal[0], &cases);
    let cases = [
        (
            "no prior digest",
            set("/prior_entry_digest", Value::Null),
            "/prior_entry_digest",
            "type",
        ),
        (
            "malformed prior digest",
            set("/prior_entry_digest", BAD_DIGEST),
            "/prior_entry_digest",
            "pattern",
        ),
        (
            "unknown member",
            set("/revision", 3),
            "",
            "additionalProperties",
        ),
        (
            "another envelope version",
            set("/schema_version", "valp-store-journal.v3"),
            "/schema_version",
            "enum",
        ),
        (
            "a recorded_at in seconds",
            set("/recorded_at", "2026-12-02T06:25:44Z"),
            "/recorded_at",
            "pattern",
        ),
        (
            "an unknown event kind",
            set("/entry/event/kind", "leader_elected"),
            "/entry/event/kind",
            "enum",
        ),
    ];
    assert_refused(schema, &artifacts().journal[3], &cases);
}

#[test]
fn broken_rejections_are_refused() {
    let cases = [
        ("missing reason", remove("/reason"), "", "required"),
        (
            "unknown member",
            set("/state", json!({})),
            "",
            "additionalProperties",
        ),
        (
            "unknown error code",
            set("/error_code", "VALP-E-NOPE"),
            "/error_code",
            "enum",
        ),
        (
            "a task event",
            set("/event/schema_version", "valp-kernel-event.v1"),
            "/event/schema_version",
            "const",
        ),
        (
            "malformed evidence digest",
            set("/evidence_set/0/content_digest", BAD_DIGEST),
            "/evidence_set/0/content_digest",
            "pattern",
        ),
        (
            "a negative revision",
            set("/revision", -1),
            "/revision",
            "minimum",
        ),
    ];
    let good = &artifacts().rejections[0];
    assert_refused("store/installation-rejection.schema.json", good, &cases);
}

#[test]
fn broken_bindings_are_refused() {
    let schema = "console/leader-binding.schema.json";
    let [human, pane, _] = &artifacts().bindings[..] else {
        panic!("three bindings")
    };
    let cases = [
        ("missing session", remove("/session"), "", "required"),
        (
            "unknown member",
            set("/title", "Leader"),
            "",
            "additionalProperties",
        ),
        (
            "unknown principal kind",
            set("/principal_kind", "agent"),
            "/principal_kind",
            "enum",
        ),
        (
            "malformed fingerprint",
            set("/session_fingerprint", BAD_DIGEST),
            "/session_fingerprint",
            "pattern",
        ),
        (
            "malformed approval digest",
            set("/approval/content_digest", BAD_DIGEST),
            "/approval/content_digest",
            "pattern",
        ),
        (
            "an observation as the approval",
            set("/approval", human["observation"].clone()),
            "/approval/evidence_id/value",
            "pattern",
        ),
        (
            "a pane's session on a human",
            set("/session", pane["session"].clone()),
            "/session/kind",
            "const",
        ),
        (
            "a label in the human's session",
            set("/session/labels", json!(["agent:claude"])),
            "/session",
            "additionalProperties",
        ),
        (
            "a time with an offset",
            set("/selected_at", "2026-11-30T12:34:56.789+01:00"),
            "/selected_at",
            "pattern",
        ),
        ("epoch 0", set("/epoch", 0), "/epoch", "minimum"),
        (
            "a pane as the approver",
            set("/selected_by", "tmux:root"),
            "/selected_by",
            "pattern",
        ),
    ];
    assert_refused(schema, human, &cases);
    let cases = [
        (
            "a human's address on a pane",
            set("/candidate_id", human["candidate_id"].clone()),
            "/candidate_id",
            "pattern",
        ),
        (
            "a pane without its pane id",
            remove("/session/pane_id"),
            "/session",
            "required",
        ),
        (
            "focus in the pane's session",
            set("/session/pane_active", true),
            "/session",
            "additionalProperties",
        ),
    ];
    assert_refused(schema, pane, &cases);
}

#[test]
fn broken_approvals_are_refused() {
    let cases = [
        (
            "missing confirmation",
            remove("/confirmation"),
            "",
            "required",
        ),
        (
            "unknown member",
            set("/reason", "because"),
            "",
            "additionalProperties",
        ),
        (
            "unknown confirmation",
            set("/confirmation", "typed"),
            "/confirmation",
            "enum",
        ),
        ("unknown action", set("/action", "elect"), "/action", "enum"),
        (
            "a time without milliseconds",
            set("/approved_at", "2026-11-30T12:34:56Z"),
            "/approved_at",
            "pattern",
        ),
        ("epoch 0", set("/epoch", 0), "/epoch", "minimum"),
        (
            "a pane as the approver",
            set("/approved_by", "tmux:root"),
            "/approved_by",
            "pattern",
        ),
    ];
    let good = &artifacts().approvals[0];
    assert_refused("console/leader-approval.schema.json", good, &cases);
}
