//! `schemas/console/doctor-observation.schema.json` against real observations (a live tmux
//! server with a dead pane, an agent label and a hostile folder name, a stale socket) and
//! against broken ones. The schema refers to nothing outside itself, so no local retriever is
//! needed (tests/tests/schemas.rs has one for the kernel and store schemas).
//!
//! Needs tmux (CI installs it); without it this test fails, it does not skip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use jsonschema::Validator;
use serde_json::{Value, json};
use valp_kernel::canonical::Canonical;
use valp_runtime::clock::{FixedClock, Timestamp};
use valp_runtime::doctor::{ObserveOptions, observe};
use valp_tests::tmux::TmuxServer;
use valp_tests::workspace_root;

const SCHEMA: &str = "schemas/console/doctor-observation.schema.json";

fn schema() -> Value {
    let text = std::fs::read_to_string(workspace_root().join(SCHEMA)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn validator() -> Validator {
    jsonschema::options()
        .build(&schema())
        .unwrap_or_else(|error| panic!("{SCHEMA}: {error}"))
}

fn errors(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect()
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let schema = schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(
        schema["$id"],
        "https://schemas.valp.dev/console/doctor-observation.schema.json"
    );
    jsonschema::meta::validate(&schema).unwrap();
}

/// A real observation with every kind of candidate and surface, as JSON.
fn real_observation() -> Value {
    let temp = tempfile::tempdir().unwrap();
    let claude = temp.path().join("claude");
    std::fs::copy("/bin/sleep", &claude).unwrap();
    let hostile = temp.path().join("x\t\n\u{1b}[31m\u{202e}dir");
    std::fs::create_dir(&hostile).unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(
        &socket,
        "main",
        &hostile,
        &[claude.to_str().unwrap(), "600"],
    );
    server.run(&["set-option", "-g", "remain-on-exit", "on"]);
    server.run(&["split-window", "-t", "%0", "true"]);
    server.wait_for("%1", "#{pane_dead}", "1");
    let stale = temp.path().join("stale");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let clock = FixedClock::new(Timestamp::from_millis(1_796_042_096_789));
    let observation = observe(&clock, &ObserveOptions::only_sockets([socket, stale]));
    let value: Value = serde_json::from_slice(&observation.canonical_bytes()).unwrap();
    let candidates = value["candidates"].as_array().unwrap();
    assert_eq!(candidates.len(), 3, "{value:#}");
    assert_eq!(candidates[1]["labels"], json!(["agent:claude"]));
    assert_eq!(candidates[2]["health"]["status"], "unreachable");
    let statuses: Vec<&str> = value["surfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|surface| surface["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["available", "available", "available", "unavailable"]
    );
    value
}

/// Breaks one thing in a valid observation.
type Breakage = fn(&mut Value);

fn human(observation: &mut Value) -> &mut Value {
    &mut observation["candidates"][0]
}

fn pane(observation: &mut Value) -> &mut Value {
    &mut observation["candidates"][1]
}

#[test]
fn observations_validate_and_broken_ones_are_refused() {
    let validator = validator();
    let good = real_observation();
    assert_eq!(errors(&validator, &good), Vec::<String>::new());

    let cases: Vec<(&str, Breakage)> = vec![
        ("a title in the identity tuple", |v| {
            pane(v)["session"]["title"] = "Leader".into();
        }),
        ("focus in the identity tuple", |v| {
            pane(v)["session"]["pane_active"] = true.into();
        }),
        ("a label in the human's tuple", |v| {
            human(v)["session"]["labels"] = json!(["agent:claude"]);
        }),
        ("a pane with a human's tuple", |v| {
            pane(v)["session"] = json!({"kind": "human", "uid": 0});
        }),
        ("an unknown display member", |v| {
            pane(v)["display"]["leader"] = true.into();
        }),
        ("a control character in a title", |v| {
            pane(v)["display"]["title"] = "a\u{1b}[31mb".into();
        }),
        ("a malformed fingerprint", |v| {
            pane(v)["fingerprint"] = "sha256:ABC".into();
        }),
        ("a missing fingerprint", |v| {
            pane(v).as_object_mut().unwrap().remove("fingerprint");
        }),
        ("an absent presence", |v| {
            pane(v)["presence"] = "absent".into();
        }),
        ("an unknown health status", |v| {
            pane(v)["health"]["status"] = "selected".into();
        }),
        ("a time with an offset", |v| {
            v["observed_at"] = "2026-11-30T12:34:56.789+01:00".into();
        }),
        ("a bad pane id", |v| {
            pane(v)["session"]["pane_id"] = "0".into();
        }),
        ("a relative socket", |v| {
            pane(v)["session"]["socket"] = "sock".into();
        }),
        ("an unknown surface status", |v| {
            v["surfaces"][0]["status"] = "maybe".into();
        }),
        ("a selection member", |v| {
            v["selected"] = "human:uid-0".into();
        }),
        ("another schema version", |v| {
            v["schema_version"] = "valp-doctor-observation.v2".into();
        }),
    ];
    for (name, break_it) in cases {
        let mut bad = good.clone();
        break_it(&mut bad);
        assert!(!validator.is_valid(&bad), "{name} must be refused");
    }
}
