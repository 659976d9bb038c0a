//! Plan files (`valp-plan.v1`): every validation rule with its exact text and place, the
//! canonical form and its strict reader, the frozen Done policy, the genesis work-item table,
//! the example plans (which really run), and the schema `schemas/console/plan.schema.json`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use jsonschema::Validator;
use serde_json::Value;
use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::done::decode_done_policy;
use valp_kernel::{Identity, IdentityKind, Requirement, WorkItemStatus};
use valp_runtime::plan::{self, DependencyKind, Plan};
use valp_tests::schemas::{SCHEMA_BASE, errors, read_json, validator};
use valp_tests::workspace_root;

const SCHEMA: &str = "console/plan.schema.json";
const EXAMPLES: &[&str] = &[
    "examples/plans/docs-bundle.toml",
    "examples/plans/minimal.toml",
    "examples/plans/demo.toml",
    "examples/plans/agents.toml",
    "examples/plans/headless.toml",
];

/// A valid plan the rule tests change one piece of (18 lines).
const BASE: &str = r#"schema_version = "valp-plan.v1"
task_id = "t"
goal = "g"

[[criteria]]
id = "c"
description = "d"

[[work_items]]
id = "a"
requirement = "required"
run = { adapter = "process", argv = ["true"] }

[[work_items]]
id = "b"
requirement = "soft"
dependencies = [{ id = "a" }]
run = { adapter = "process", argv = ["true"] }
"#;

/// The problems of `text` as `valp task publish` prints them (empty when the plan is valid).
fn problems(text: &str) -> Vec<String> {
    match plan::parse(Path::new("plan.toml"), text.as_bytes()) {
        Ok(_) => Vec::new(),
        Err(errors) => {
            assert!(!errors.problems.is_empty());
            errors.problems.iter().map(ToString::to_string).collect()
        }
    }
}

/// [`BASE`] with `from` replaced by `to` (which must occur exactly once).
fn base_with(from: &str, to: &str) -> String {
    assert_eq!(BASE.matches(from).count(), 1, "{from:?}");
    BASE.replace(from, to)
}

/// [`BASE`] followed by `extra`.
fn base_and(extra: &str) -> String {
    format!("{BASE}{extra}")
}

fn example(path: &str) -> (String, Plan) {
    let text = std::fs::read_to_string(workspace_root().join(path)).unwrap();
    let plan = plan::parse(Path::new(path), text.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    (text, plan)
}

#[test]
fn the_base_plan_is_valid() {
    assert_eq!(problems(BASE), Vec::<String>::new());
}

#[test]
fn toml_syntax_errors_are_reported_with_their_position() {
    assert_eq!(
        problems("schema_version = \"valp-plan.v1\"\ntask_id = \"x\ngoal = 1\n[[work_items]\n"),
        [
            "plan.toml:2:13: (syntax): invalid TOML: invalid basic string, expected `\"`",
            "plan.toml:4:14: (syntax): invalid TOML: unclosed array table, expected `]`",
        ]
    );
    assert_eq!(
        problems(&base_with("goal = \"g\"\n", "goal = \"g\"\ngoal = \"h\"\n")),
        ["plan.toml:4:1: (syntax): invalid TOML: duplicate key"]
    );
    let mut bytes = BASE.as_bytes().to_vec();
    bytes[40] = 0xff;
    let refused = plan::parse(Path::new("plan.toml"), &bytes).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "plan.toml:2:9: (file): not UTF-8 (invalid byte at offset 40)"
    );
}

#[test]
fn unknown_keys_are_refused_at_every_level() {
    let text = BASE
        .replace("goal = \"g\"\n", "goal = \"g\"\ntitle = \"x\"\n")
        .replace("description = \"d\"\n", "description = \"d\"\nweight = 2\n")
        .replace(
            "id = \"a\"\nrequirement",
            "id = \"a\"\nowner = \"me\"\nrequirement",
        )
        .replace(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], shell = true }\n\n",
        )
        .replace("[{ id = \"a\" }]", "[{ id = \"a\", why = \"x\" }]")
        + "[[verification]]\nid = \"v\"\nargv = [\"true\"]\nenv = {}\n"
        + "[done]\nskip = true\n[execution]\nthreads = 4\n";
    assert_eq!(
        problems(&text),
        [
            "plan.toml:4:1: title: unknown key (expected one of: schema_version, task_id, goal, \
             non_goals, criteria, work_items, verification, done, execution, dimensions, related)",
            "plan.toml:9:1: criteria[0].weight: unknown key (expected one of: id, description, \
             required, not_applicable_allowed, verify)",
            "plan.toml:13:1: work_items[0].owner: unknown key (expected one of: id, description, \
             requirement, dependencies, run, expected_evidence)",
            "plan.toml:15:47: work_items[0].run.shell: unknown key (expected one of: adapter, \
             argv, cwd, timeout_seconds, env, agent, command, target, prompt, socket, workdir)",
            "plan.toml:20:29: work_items[1].dependencies[0].why: unknown key (expected one of: \
             id, kind)",
            "plan.toml:25:1: verification[0].env: unknown key (expected one of: id, argv, cwd, \
             timeout_seconds)",
            "plan.toml:27:1: done.skip: unknown key (expected one of: skippable_optional_items, \
             degradable_soft_items)",
            "plan.toml:29:1: execution.threads: unknown key (expected one of: max_concurrency, \
             retry_budget, approval)",
        ]
    );
}

#[test]
fn wrong_types_are_named() {
    let text = BASE
        .replace("task_id = \"t\"", "task_id = 7")
        .replace("goal = \"g\"", "goal = \"g\"\nnon_goals = \"all\"")
        .replace(
            "description = \"d\"\n",
            "description = \"d\"\nrequired = \"yes\"\n",
        )
        .replace(
            "id = \"b\"\nrequirement = \"soft\"",
            "id = \"b\"\nrequirement = true",
        )
        .replace("[{ id = \"a\" }]", "[\"a\", { id = 1, kind = 2 }]")
        + "[work_items.run2]\n";
    let text = text.replacen(
        "run = { adapter = \"process\", argv = [\"true\"] }",
        "run = { adapter = \"process\", argv = [\"true\", 1], timeout_seconds = 1.5, env = { A = 1 } }",
        1,
    );
    let text = text.replace("[work_items.run2]\n", "[done]\nskippable_optional_items = 1\ndegradable_soft_items = \"b\"\n[execution]\nmax_concurrency = \"2\"\n");
    assert_eq!(
        problems(&text),
        [
            "plan.toml:2:11: task_id: expected a string, found an integer",
            "plan.toml:4:13: non_goals: expected an array of strings, found a string",
            "plan.toml:9:12: criteria[0].required: expected a boolean, found a string",
            "plan.toml:14:46: work_items[0].run.argv[1]: expected a string, found an integer",
            "plan.toml:14:68: work_items[0].run.timeout_seconds: expected an integer, found a float",
            "plan.toml:14:85: work_items[0].run.env.A: expected a string, found an integer",
            "plan.toml:18:15: work_items[1].requirement: expected a string, found a boolean",
            "plan.toml:19:17: work_items[1].dependencies[0]: expected a table such as { id = \"a\", \
             kind = \"hard\" }, found a string",
            "plan.toml:19:29: work_items[1].dependencies[1].id: expected a string, found an integer",
            "plan.toml:19:39: work_items[1].dependencies[1].kind: expected a string, found an integer",
            "plan.toml:22:28: done.skippable_optional_items: expected a boolean, found an integer",
            "plan.toml:23:25: done.degradable_soft_items: expected an array of strings, found a string",
            "plan.toml:25:19: execution.max_concurrency: expected an integer, found a string",
        ]
    );
    assert_eq!(
        problems(
            "schema_version = \"valp-plan.v1\"\ntask_id = \"t\"\ngoal = \"g\"\ncriteria = \"c\"\n[work_items]\nid = \"a\"\n"
        ),
        [
            "plan.toml:4:12: criteria: expected an array of tables, found a string",
            "plan.toml:5:1: work_items: expected an array of tables, found a table",
        ]
    );
}

#[test]
fn required_keys_must_be_present() {
    assert_eq!(
        problems("[[criteria]]\n[[work_items]]\nrun = {}\n[[verification]]\n"),
        [
            "plan.toml:1:1: schema_version: missing required key",
            "plan.toml:1:1: task_id: missing required key",
            "plan.toml:1:1: goal: missing required key",
            "plan.toml:1:1: criteria[0].id: missing required key",
            "plan.toml:1:1: criteria[0].description: missing required key",
            "plan.toml:2:1: work_items[0].id: missing required key",
            "plan.toml:2:1: work_items[0].requirement: missing required key",
            "plan.toml:3:7: work_items[0].run.adapter: missing required key",
            "plan.toml:3:7: work_items[0].run.argv: missing required key",
            "plan.toml:4:1: verification[0].id: missing required key",
            "plan.toml:4:1: verification[0].argv: missing required key",
        ]
    );
    assert_eq!(
        problems("schema_version = \"valp-plan.v1\"\ntask_id = \"t\"\ngoal = \"g\"\n"),
        [
            "plan.toml:1:1: criteria: missing required key",
            "plan.toml:1:1: work_items: missing required key",
        ]
    );
    assert_eq!(
        problems(&base_with(
            "dependencies = [{ id = \"a\" }]\nrun = { adapter = \"process\", argv = [\"true\"] }\n",
            "dependencies = [{ kind = \"soft\" }]\n",
        )),
        [
            "plan.toml:14:1: work_items[1].run: missing required key",
            "plan.toml:17:17: work_items[1].dependencies[0].id: missing required key",
        ]
    );
}

#[test]
fn plans_need_criteria_and_work_items() {
    assert_eq!(
        problems(
            "schema_version = \"valp-plan.v1\"\ntask_id = \"t\"\ngoal = \"g\"\ncriteria = []\n\
             work_items = []\n"
        ),
        [
            "plan.toml:4:12: criteria: must list at least one criterion",
            "plan.toml:5:14: work_items: must list at least one work item",
        ]
    );
}

#[test]
fn texts_must_not_be_empty() {
    let text = base_with("goal = \"g\"", "goal = \"\"\nnon_goals = [\"ok\", \"\"]")
        .replace("description = \"d\"", "description = \"\"")
        .replacen("id = \"a\"\n", "id = \"a\"\ndescription = \"\"\n", 1);
    assert_eq!(
        problems(&text),
        [
            "plan.toml:3:8: goal: must not be empty",
            "plan.toml:4:20: non_goals[1]: must not be empty",
            "plan.toml:8:15: criteria[0].description: must not be empty",
            "plan.toml:12:15: work_items[0].description: must not be empty",
        ]
    );
}

#[test]
fn ids_must_be_identities() {
    let long = "x".repeat(129);
    let cases = [
        ("", "must not be empty"),
        (long.as_str(), "not a valid id: longer than 128 characters"),
        ("a\\tb", "not a valid id: contains a control character"),
        ("a\\u007fb", "not a valid id: contains a control character"),
        (
            "a/b",
            "not a valid id: contains a path separator ('/' or '\\')",
        ),
        (
            "a\\\\b",
            "not a valid id: contains a path separator ('/' or '\\')",
        ),
        (".", "not a valid id: \".\" is not a usable name"),
        ("..", "not a valid id: \"..\" is not a usable name"),
    ];
    for (id, rule) in cases {
        assert_eq!(
            problems(&base_with(
                "task_id = \"t\"",
                &format!("task_id = \"{id}\"")
            )),
            [format!("plan.toml:2:11: task_id: {rule}")],
            "{id:?}"
        );
        assert_eq!(
            problems(&base_with("id = \"c\"", &format!("id = \"{id}\""))),
            [format!("plan.toml:6:6: criteria[0].id: {rule}")],
            "{id:?}"
        );
    }
    // 128 characters, non-ASCII and spaces are fine: the store hashes such task ids into
    // folder names.
    let longest = "é".repeat(128);
    assert_eq!(
        problems(&base_with(
            "task_id = \"t\"",
            &format!("task_id = \"{longest}\"")
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        problems(&base_with("task_id = \"t\"", "task_id = \"id-1 .hidden\"")),
        Vec::<String>::new()
    );
}

#[test]
fn ids_are_unique_among_their_kind() {
    let text = base_and(
        "[[criteria]]\nid = \"c\"\ndescription = \"again\"\n\
         [[work_items]]\nid = \"a\"\nrequirement = \"optional\"\nrun = { adapter = \"process\", argv = [\"x\"] }\n\
         [[verification]]\nid = \"c\"\nargv = [\"x\"]\n[[verification]]\nid = \"c\"\nargv = [\"y\"]\n",
    );
    assert_eq!(
        problems(&text),
        [
            "plan.toml:20:6: criteria[1].id: duplicate criterion id \"c\" (first at criteria[0].id)",
            "plan.toml:23:6: work_items[2].id: duplicate work item id \"a\" (first at \
             work_items[0].id)",
            "plan.toml:30:6: verification[1].id: duplicate verification id \"c\" (first at \
             verification[0].id)",
        ]
    );
}

#[test]
fn dependencies_name_other_work_items_once() {
    assert_eq!(
        problems(&base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }, { id = \"b\" }, { id = \"a\", kind = \"soft\" }, { id = \"nope\" }, \
             { id = \"a\", kind = \"strong\" }]",
        )),
        [
            "plan.toml:17:38: work_items[1].dependencies[1].id: work item \"b\" depends on itself",
            "plan.toml:17:52: work_items[1].dependencies[2].id: \"a\" is listed twice",
            "plan.toml:17:81: work_items[1].dependencies[3].id: unknown work item \"nope\"",
            "plan.toml:17:98: work_items[1].dependencies[4].id: \"a\" is listed twice",
            "plan.toml:17:110: work_items[1].dependencies[4].kind: unknown dependency kind \
             \"strong\" (expected hard, soft or optional)",
        ]
    );
}

#[test]
fn dependency_cycles_of_any_kind_are_named() {
    // a -> b (soft, added), b -> a (hard, in BASE); c -> d -> e -> c (optional edges).
    let text = base_with(
        "id = \"a\"\nrequirement = \"required\"\n",
        "id = \"a\"\nrequirement = \"required\"\ndependencies = [{ id = \"b\", kind = \"soft\" }]\n",
    ) + "[[work_items]]\nid = \"c\"\nrequirement = \"optional\"\ndependencies = [{ id = \"d\", kind = \"optional\" }]\nrun = { adapter = \"process\", argv = [\"x\"] }\n\
         [[work_items]]\nid = \"d\"\nrequirement = \"optional\"\ndependencies = [{ id = \"e\", kind = \"optional\" }]\nrun = { adapter = \"process\", argv = [\"x\"] }\n\
         [[work_items]]\nid = \"e\"\nrequirement = \"optional\"\ndependencies = [{ id = \"c\", kind = \"optional\" }, { id = \"a\" }]\nrun = { adapter = \"process\", argv = [\"x\"] }\n";
    assert_eq!(
        problems(&text),
        [
            "plan.toml:12:24: work_items[0].dependencies[0].id: dependency cycle: a -> b -> a",
            "plan.toml:23:24: work_items[2].dependencies[0].id: dependency cycle: c -> d -> e -> c",
        ]
    );
}

#[test]
fn paths_must_be_safe_and_relative() {
    let text = base_with(
        "run = { adapter = \"process\", argv = [\"true\"] }\n\n",
        "run = { adapter = \"process\", argv = [\"true\"], cwd = \"../up\" }\n\
         expected_evidence = [\"out/a\", \"/etc/passwd\", \"out/../a\", \"out//a\", \"./a\", \"out\\\\a\", \"out/a\", \"a/\"]\n\n",
    ) + "[[verification]]\nid = \"v\"\nargv = [\"x\"]\ncwd = \"/tmp\"\n\
         [[verification]]\nid = \"w\"\nargv = [\"x\"]\ncwd = \"sub/dir\"\n\
         [[verification]]\nid = \"x\"\nargv = [\"x\"]\ncwd = \"\"\n";
    assert_eq!(
        problems(&text),
        [
            "plan.toml:12:53: work_items[0].run.cwd: \"../up\" is neither \".\" nor a safe \
             relative path",
            "plan.toml:13:31: work_items[0].expected_evidence[1]: \"/etc/passwd\" is not a safe \
             relative path",
            "plan.toml:13:46: work_items[0].expected_evidence[2]: \"out/../a\" is not a safe \
             relative path",
            "plan.toml:13:58: work_items[0].expected_evidence[3]: \"out//a\" is not a safe \
             relative path",
            "plan.toml:13:68: work_items[0].expected_evidence[4]: \"./a\" is not a safe relative \
             path",
            "plan.toml:13:75: work_items[0].expected_evidence[5]: \"out\\\\a\" is not a safe \
             relative path",
            "plan.toml:13:85: work_items[0].expected_evidence[6]: \"out/a\" is listed twice",
            "plan.toml:13:94: work_items[0].expected_evidence[7]: \"a/\" is not a safe relative \
             path",
            "plan.toml:23:7: verification[0].cwd: \"/tmp\" is neither \".\" nor a safe relative \
             path",
            "plan.toml:31:7: verification[2].cwd: \"\" is neither \".\" nor a safe relative path",
        ]
    );
}

#[test]
fn only_the_known_adapters_exist() {
    assert_eq!(
        problems(&base_with(
            "id = \"a\"\nrequirement = \"required\"\nrun = { adapter = \"process\"",
            "id = \"a\"\nrequirement = \"required\"\nrun = { adapter = \"docker\"",
        )),
        [
            "plan.toml:12:19: work_items[0].run.adapter: unknown adapter \"docker\" (known: \"process\", \"external\", \"tmux\", \"agent-stream\")"
        ]
    );
}

/// [`BASE`] with work item `a` run by the external adapter, its `run` table being `run`.
fn external_base(run: &str) -> String {
    base_with(
        "id = \"a\"\nrequirement = \"required\"\nrun = { adapter = \"process\", argv = [\"true\"] }",
        &format!(
            "id = \"a\"\nrequirement = \"required\"\nexpected_evidence = [\"out/a.md\"]\n{run}"
        ),
    )
}

#[test]
fn external_work_items_run_no_command() {
    let plan = |text: &str| plan::parse(Path::new("plan.toml"), text.as_bytes()).unwrap();
    let external = plan(&external_base("run = { adapter = \"external\" }"));
    let item = external.work_item("a").unwrap();
    assert_eq!(item.run.adapter, plan::Adapter::External);
    assert_eq!(item.run.adapter.as_str(), "external");
    assert_eq!(
        (
            item.run.argv.len(),
            item.run.cwd.as_str(),
            item.run.timeout_seconds
        ),
        (0, ".", 0),
        "no command, the project folder, no timeout"
    );
    assert!(item.run.env.is_empty());
    let placed = plan(&external_base(
        "run = { adapter = \"external\", cwd = \"work/a\" }",
    ));
    assert_eq!(placed.work_item("a").unwrap().run.cwd, "work/a");
    // A command, its environment or a timeout are refused, each where its key is written.
    assert_eq!(
        problems(&external_base(
            "run = { adapter = \"external\", argv = [\"true\"], env = { A = \"b\" }, \
             timeout_seconds = 5, cwd = \"../x\" }"
        )),
        [
            "plan.toml:13:31: work_items[0].run.argv: only the process adapter runs a command",
            "plan.toml:13:48: work_items[0].run.env: only the process adapter runs a command",
            "plan.toml:13:67: work_items[0].run.timeout_seconds: only the process adapter \
             enforces a timeout (stop an external attempt with `valp cancel`)",
            "plan.toml:13:94: work_items[0].run.cwd: \"../x\" is neither \".\" nor a safe relative \
             path",
        ]
    );
    // A table-style run is checked the same way.
    assert_eq!(
        problems(&external_base(
            "[work_items.run]\nadapter = \"external\"\nargv = []\n"
        )),
        ["plan.toml:15:1: work_items[0].run.argv: only the process adapter runs a command"]
    );
    // A process run still needs its command.
    assert_eq!(
        problems(&external_base("run = { adapter = \"process\" }")),
        ["plan.toml:13:7: work_items[0].run.argv: missing required key"]
    );
}

#[test]
fn an_external_run_is_encoded_with_its_adapter_and_folder_only() {
    let external = plan::parse(
        Path::new("plan.toml"),
        external_base("run = { adapter = \"external\", cwd = \"work\" }").as_bytes(),
    )
    .unwrap();
    let bytes = external.canonical_bytes();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains(
            r#"{"dependencies":[],"expected_evidence":["out/a.md"],"id":"a","requirement":"required","run":{"adapter":"external","cwd":"work"}}"#
        ),
        "{text}"
    );
    // The process item next to it keeps its encoding (published digests do not change).
    assert!(
        text.contains(
            r#""run":{"adapter":"process","argv":["true"],"cwd":".","timeout_seconds":300}"#
        ),
        "{text}"
    );
    let again = Plan::from_canonical("plan-evidence", &bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, external);
    assert_eq!(again.canonical_bytes(), bytes);
    // A published external run that names a command is refused on the way back.
    let forged = text.replace(
        r#""adapter":"external","cwd":"work""#,
        r#""adapter":"external","argv":["true"],"cwd":"work""#,
    );
    assert_eq!(
        Plan::from_canonical("plan-0123", forged.as_bytes())
            .unwrap_err()
            .to_string(),
        "plan-0123:1:1: work_items[0].run.argv: only the process adapter runs a command"
    );
    // The schema agrees with valp on both sides of the rule.
    let validator = validator(SCHEMA);
    assert!(validator.is_valid(&serde_json::from_slice::<Value>(&bytes).unwrap()));
    assert!(validator.is_valid(&toml_as_json(&external_base(
        "run = { adapter = \"external\" }"
    ))));
    for run in [
        "run = { adapter = \"external\", argv = [\"true\"] }",
        "run = { adapter = \"external\", env = { A = \"b\" } }",
        "run = { adapter = \"external\", timeout_seconds = 5 }",
        "run = { adapter = \"process\" }",
    ] {
        let text = external_base(run);
        assert_refused(&validator, &text);
        assert_ne!(problems(&text), Vec::<String>::new(), "valp accepts {run}");
    }
}

#[test]
fn commands_need_a_program_and_no_nul() {
    let text = base_with(
        "description = \"d\"\n",
        "description = \"d\"\nverify = []\n",
    )
    .replacen("argv = [\"true\"]", "argv = [\"\", \"x\"]", 1)
    .replacen("argv = [\"true\"]", "argv = [\"true\", \"a\\u0000b\"]", 1)
        + "[[verification]]\nid = \"v\"\nargv = []\n";
    assert_eq!(
        problems(&text),
        [
            "plan.toml:8:10: criteria[0].verify: must not be empty (argv[0] is the program to run)",
            "plan.toml:13:38: work_items[0].run.argv[0]: the program must not be empty",
            "plan.toml:19:46: work_items[1].run.argv[1]: contains a NUL character",
            "plan.toml:22:8: verification[0].argv: must not be empty (argv[0] is the program to \
             run)",
        ]
    );
    assert_eq!(
        problems(&base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], env = { \"A=B\" = \"1\", \"\" = \"2\", C = \"x\\u0000\" } }\n\n",
        )),
        [
            "plan.toml:12:55: work_items[0].run.env.\"A=B\": not a valid environment variable \
             name (empty, or contains '=' or NUL)",
            "plan.toml:12:68: work_items[0].run.env.\"\": not a valid environment variable name \
             (empty, or contains '=' or NUL)",
            "plan.toml:12:82: work_items[0].run.env.C: contains a NUL character",
        ]
    );
}

#[test]
fn numbers_must_be_in_range() {
    let text = base_with(
        "argv = [\"true\"] }\n\n",
        "argv = [\"true\"], timeout_seconds = 0 }\n\n",
    )
    .replace(
        "argv = [\"true\"] }\n",
        "argv = [\"true\"], timeout_seconds = 86401 }\n",
    ) + "[[verification]]\nid = \"v\"\nargv = [\"x\"]\ntimeout_seconds = -5\n\
         [[verification]]\nid = \"w\"\nargv = [\"x\"]\ntimeout_seconds = 170141183460469231731687303715884105728\n\
         [execution]\nmax_concurrency = 65\nretry_budget = 0\n";
    assert_eq!(
        problems(&text),
        [
            "plan.toml:12:65: work_items[0].run.timeout_seconds: 0 is out of range (1..=86400)",
            "plan.toml:18:65: work_items[1].run.timeout_seconds: 86401 is out of range \
             (1..=86400)",
            "plan.toml:22:19: verification[0].timeout_seconds: -5 is out of range (1..=86400)",
            "plan.toml:26:19: verification[1].timeout_seconds: the number is out of range \
             (1..=86400)",
            "plan.toml:28:19: execution.max_concurrency: 65 is out of range (1..=64)",
            "plan.toml:29:16: execution.retry_budget: 0 is out of range (1..=10)",
        ]
    );
    let limits = base_and(
        "[[verification]]\nid = \"v\"\nargv = [\"x\"]\ntimeout_seconds = 86400\n\
         [execution]\nmax_concurrency = 64\nretry_budget = 10\n",
    );
    assert_eq!(problems(&limits), Vec::<String>::new());
}

#[test]
fn approval_is_none_or_required() {
    assert_eq!(
        problems(&base_and("[execution]\napproval = \"maybe\"\n")),
        [
            "plan.toml:20:12: execution.approval: unknown approval \"maybe\" (known: \"none\", \
             \"required\")"
        ]
    );
    let parse = |text: &str| plan::parse(Path::new("plan.toml"), text.as_bytes()).unwrap();
    let required = parse(&base_and("[execution]\napproval = \"required\"\n"));
    assert!(required.execution.approval_required);
    assert!(
        !parse(&base_and("[execution]\napproval = \"none\"\n"))
            .execution
            .approval_required
    );
    // The canonical form names the approval only when it is required, so the plans published
    // before the field existed keep their bytes; both forms read back as they were written.
    let bytes = required.canonical_bytes();
    let canonical = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        canonical.contains(r#""execution":{"approval":"required","max_concurrency":2,"#),
        "{canonical}"
    );
    assert_eq!(
        Plan::from_canonical("plan-evidence", &bytes).unwrap(),
        required
    );
    let none = String::from_utf8(parse(BASE).canonical_bytes()).unwrap();
    assert!(!none.contains("approval"), "{none}");
}

#[test]
fn only_soft_work_items_may_be_degradable() {
    let text = base_and("[done]\ndegradable_soft_items = [\"b\", \"a\", \"nope\", \"b\", \"\"]\n");
    assert_eq!(
        problems(&text),
        [
            "plan.toml:20:31: done.degradable_soft_items[1]: \"a\" is not a soft work item (its \
             requirement is required)",
            "plan.toml:20:36: done.degradable_soft_items[2]: unknown work item \"nope\"",
            "plan.toml:20:44: done.degradable_soft_items[3]: \"b\" is listed twice",
            "plan.toml:20:49: done.degradable_soft_items[4]: must not be empty",
        ]
    );
}

#[test]
fn the_schema_version_and_the_requirement_are_closed() {
    let text = base_with("\"valp-plan.v1\"", "\"valp-plan.v2\"")
        .replace("requirement = \"soft\"", "requirement = \"mandatory\"");
    assert_eq!(
        problems(&text),
        [
            "plan.toml:1:18: schema_version: expected \"valp-plan.v1\", found \"valp-plan.v2\"",
            "plan.toml:16:15: work_items[1].requirement: unknown requirement \"mandatory\" \
             (expected required, optional or soft)",
        ]
    );
}

#[test]
fn every_problem_is_reported_in_file_order() {
    let text = r#"schema_version = "valp-plan.v1"
task_id = "a/b"
goal = ""
extra = 1

[[criteria]]
id = "c1"
description = "x"
verify = []

[[criteria]]
id = "c1"
description = "y"

[[work_items]]
id = "a"
requirement = "required"
dependencies = [{ id = "b" }, { id = "zz" }]
expected_evidence = ["../x"]
[work_items.run]
adapter = "docker"
argv = ["true"]
timeout_seconds = 0

[[work_items]]
id = "b"
requirement = "optional"
dependencies = [{ id = "a", kind = "optional" }]
run = { adapter = "process", argv = ["true"] }

[done]
degradable_soft_items = ["b"]
"#;
    let refused = plan::parse(Path::new("dir/plan.toml"), text.as_bytes()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "dir/plan.toml:2:11: task_id: not a valid id: contains a path separator ('/' or '\\')
dir/plan.toml:3:8: goal: must not be empty
dir/plan.toml:4:1: extra: unknown key (expected one of: schema_version, task_id, goal, non_goals, criteria, work_items, verification, done, execution, dimensions, related)
dir/plan.toml:9:10: criteria[0].verify: must not be empty (argv[0] is the program to run)
dir/plan.toml:12:6: criteria[1].id: duplicate criterion id \"c1\" (first at criteria[0].id)
dir/plan.toml:18:24: work_items[0].dependencies[0].id: dependency cycle: a -> b -> a
dir/plan.toml:18:38: work_items[0].dependencies[1].id: unknown work item \"zz\"
dir/plan.toml:19:22: work_items[0].expected_evidence[0]: \"../x\" is not a safe relative path
dir/plan.toml:21:11: work_items[0].run.adapter: unknown adapter \"docker\" (known: \"process\", \"external\", \"tmux\", \"agent-stream\")
dir/plan.toml:23:19: work_items[0].run.timeout_seconds: 0 is out of range (1..=86400)
dir/plan.toml:32:26: done.degradable_soft_items[0]: \"b\" is not a soft work item (its requirement is optional)"
    );
    let problem = &refused.problems[0];
    assert_eq!(
        (problem.line, problem.column, problem.field.as_str()),
        (2, 11, "task_id")
    );
}

#[test]
fn defaults_are_filled_in() {
    let (_, plan) = example("examples/plans/minimal.toml");
    assert_eq!(plan.non_goals, Vec::<String>::new());
    let criterion = &plan.criteria[0];
    assert!(criterion.required && !criterion.not_applicable_allowed);
    let item = &plan.work_items[0];
    assert_eq!(item.description, None);
    assert_eq!(item.dependencies, []);
    assert_eq!(item.run.cwd, ".");
    assert_eq!(item.run.timeout_seconds, 300);
    assert!(item.run.env.is_empty());
    assert_eq!(plan.verification, []);
    assert!(!plan.done.skippable_optional_items);
    assert_eq!(plan.done.degradable_soft_items, Vec::<String>::new());
    assert_eq!(
        (plan.execution.max_concurrency, plan.execution.retry_budget),
        (2, 2)
    );
    let (_, bundle) = example("examples/plans/docs-bundle.toml");
    let schemas = bundle.work_item("stage-schemas").unwrap();
    assert_eq!(schemas.dependencies[0].kind, DependencyKind::Hard);
}

#[test]
fn the_canonical_form_writes_every_default_and_omits_absent_members() {
    let (_, plan) = example("examples/plans/minimal.toml");
    assert_eq!(
        String::from_utf8(plan.canonical_bytes()).unwrap(),
        concat!(
            r#"{"criteria":[{"description":"target/hello exists and is a folder","id":"marker-exists","#,
            r#""not_applicable_allowed":false,"required":true,"verify":["test","-d","target/hello"]}],"#,
            r#""done":{"degradable_soft_items":[],"skippable_optional_items":false},"#,
            r#""execution":{"max_concurrency":2,"retry_budget":2},"#,
            r#""goal":"Leave a marker folder in target/","non_goals":[],"#,
            r#""schema_version":"valp-plan.v1","task_id":"hello","verification":[],"#,
            r#""work_items":[{"dependencies":[],"expected_evidence":["target/hello"],"#,
            r#""id":"make-marker","requirement":"required","#,
            r#""run":{"adapter":"process","argv":["mkdir","-p","target/hello"],"cwd":".","timeout_seconds":300}}]}"#,
            "\n"
        )
    );
}

#[test]
fn the_examples_round_trip_through_their_canonical_form() {
    for path in EXAMPLES {
        let (_, plan) = example(path);
        let bytes = plan.canonical_bytes();
        decode_canonical(&bytes).unwrap();
        let again = Plan::from_canonical("plan-evidence", &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(again, plan, "{path}");
        assert_eq!(again.canonical_bytes(), bytes, "{path}");
        assert_eq!(again.digest(), plan.digest());
    }
}

#[test]
fn a_published_plan_is_read_back_strictly() {
    let (_, plan) = example("examples/plans/docs-bundle.toml");
    let bytes = plan.canonical_bytes();
    let refused = |bytes: &[u8]| {
        Plan::from_canonical("plan-0123", bytes)
            .unwrap_err()
            .to_string()
    };
    // Not canonical JSON at all.
    let mut pretty =
        serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&bytes).unwrap()).unwrap();
    pretty.push(b'\n');
    assert!(refused(&pretty).starts_with("plan-0123:1:1: (file): not canonical JSON: "));
    // Canonical JSON of a plan with a default left out, or an empty env written.
    let (_, minimal) = example("examples/plans/minimal.toml");
    let minimal_text = String::from_utf8(minimal.canonical_bytes()).unwrap();
    let without_default = minimal_text.replace(r#""non_goals":[],"#, "");
    assert_eq!(
        refused(without_default.as_bytes()),
        "plan-0123:1:1: (file): not the canonical form of the plan it holds (first difference at \
         byte 337: a default left out, or an empty optional member written)"
    );
    let empty_env = minimal_text.replace(r#""cwd":".","#, r#""cwd":".","env":{},"#);
    assert!(refused(empty_env.as_bytes()).contains("not the canonical form"));
    // Canonical, but not a valid plan.
    let unknown = minimal_text.replace(r#""goal":"#, r#""extra":1,"goal":"#);
    assert!(refused(unknown.as_bytes()).starts_with("plan-0123:1:1: extra: unknown key"));
    let bad_id = minimal_text.replace(r#""task_id":"hello""#, r#""task_id":"a/b""#);
    assert_eq!(
        refused(bad_id.as_bytes()),
        "plan-0123:1:1: task_id: not a valid id: contains a path separator ('/' or '\\')"
    );
}

#[test]
fn the_done_policy_is_frozen_in_plan_order() {
    let (_, plan) = example("examples/plans/docs-bundle.toml");
    let policy = plan.done_policy();
    let bytes = policy.canonical_bytes();
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        concat!(
            r#"{"correction_cycle":"valp-correction-cycle.v1","#,
            r#""criteria":[{"criterion_id":"docs-staged","not_applicable_allowed":false,"required":true},"#,
            r#"{"criterion_id":"archive-intact","not_applicable_allowed":false,"required":true},"#,
            r#"{"criterion_id":"checksums-listed","not_applicable_allowed":true,"required":false}],"#,
            r#""degradable_soft_items":["checksums"],"schema_version":"valp-kernel-done-policy.v3","#,
            r#""skippable_optional_items":true}"#,
            "\n"
        )
    );
    assert_eq!(
        decode_done_policy(&decode_canonical(&bytes).unwrap()).unwrap(),
        policy
    );
}

/// A genesis work item: id, requirement, and its edges (target, edge requirement).
type Row = (String, Requirement, Vec<(String, Requirement)>);

#[test]
fn the_genesis_holds_every_work_item_pending_with_its_edges() {
    let (_, plan) = example("examples/plans/docs-bundle.toml");
    let task = Identity::new(IdentityKind::Task, "docs-bundle").unwrap();
    let items = plan.genesis_work_items(&task).unwrap();
    let table: Vec<Row> = items
        .iter()
        .map(|item| {
            assert_eq!(item.task_id, task);
            assert_eq!(item.status, WorkItemStatus::Pending);
            assert_eq!(item.current_attempt, None);
            assert!(item.work_item_id.is(IdentityKind::WorkItem));
            (
                item.work_item_id.value().to_owned(),
                item.requirement,
                item.dependencies
                    .iter()
                    .map(|edge| (edge.work_item_id.value().to_owned(), edge.requirement))
                    .collect(),
            )
        })
        .collect();
    let edge = |id: &str, requirement| (id.to_owned(), requirement);
    assert_eq!(
        table,
        [
            ("prepare".to_owned(), Requirement::Required, vec![]),
            (
                "stage-docs".to_owned(),
                Requirement::Required,
                vec![edge("prepare", Requirement::Required)]
            ),
            (
                "stage-schemas".to_owned(),
                Requirement::Required,
                vec![edge("prepare", Requirement::Required)]
            ),
            (
                "checksums".to_owned(),
                Requirement::Soft,
                vec![
                    edge("stage-docs", Requirement::Required),
                    edge("stage-schemas", Requirement::Required)
                ]
            ),
            (
                "archive".to_owned(),
                Requirement::Required,
                vec![
                    edge("stage-docs", Requirement::Required),
                    edge("stage-schemas", Requirement::Required),
                    edge("checksums", Requirement::Soft)
                ]
            ),
            (
                "list-archive".to_owned(),
                Requirement::Optional,
                vec![edge("archive", Requirement::Optional)]
            ),
        ]
    );
}

/// Runs `argv` without a shell in `dir`; whether it exited 0.
fn runs(dir: &Path, argv: &[String], env: &[(String, String)]) -> bool {
    Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(dir)
        .envs(env.iter().cloned())
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .status
        .success()
}

/// Runs every work item of `plan` in dependency order (hard and soft edges first), then checks
/// the expected evidence, every criterion's `verify` and every verification command.
fn run_plan(project: &Path, plan: &Plan) {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    while done.len() < plan.work_items.len() {
        let ready: Vec<_> = plan
            .work_items
            .iter()
            .filter(|item| !done.contains(item.id.as_str()))
            .filter(|item| {
                item.dependencies
                    .iter()
                    .all(|edge| done.contains(edge.id.as_str()))
            })
            .collect();
        assert!(!ready.is_empty(), "no work item is ready: a cycle");
        for item in ready {
            let env: Vec<_> = item.run.env.clone().into_iter().collect();
            assert!(
                runs(&project.join(&item.run.cwd), &item.run.argv, &env),
                "{}: {:?}",
                item.id,
                item.run.argv
            );
            for path in &item.expected_evidence {
                assert!(project.join(path).exists(), "{}: {path}", item.id);
            }
            done.insert(&item.id);
        }
    }
    for criterion in &plan.criteria {
        if let Some(verify) = &criterion.verify {
            assert!(runs(project, verify, &[]), "{}", criterion.id);
        }
    }
    for verification in &plan.verification {
        assert!(
            runs(&project.join(&verification.cwd), &verification.argv, &[]),
            "{}",
            verification.id
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn the_example_plans_really_run() {
    let project = tempfile::tempdir().unwrap();
    let root = workspace_root();
    for file in ["README.md", "ARCHITECTURE.md"] {
        std::fs::copy(root.join(file), project.path().join(file)).unwrap();
    }
    copy_tree(&root.join("schemas"), &project.path().join("schemas"));
    // The demo plan sleeps two minutes on purpose (something to cancel in the console);
    // tests/tests/console_e2e.rs runs it through the real console. The agents plan's items are
    // terminal agents in tmux, not commands: tests/tests/tmux_adapter.rs runs it to done. The
    // headless plan needs Claude Code and its credentials (tests/tests/agent_channel_supervision.rs
    // runs a real claude headless against a scripted model).
    for path in EXAMPLES.iter().filter(|path| {
        !path.ends_with("demo.toml")
            && !path.ends_with("agents.toml")
            && !path.ends_with("headless.toml")
    }) {
        let (_, plan) = example(path);
        run_plan(project.path(), &plan);
    }
    assert!(
        project
            .path()
            .join("target/plan-example/bundle/schemas/console/plan.schema.json")
            .is_file()
    );
}

/// A TOML file as the JSON value it converts to.
fn toml_as_json(text: &str) -> Value {
    serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap()
}

fn assert_refused(validator: &Validator, toml_text: &str) {
    assert!(
        !validator.is_valid(&toml_as_json(toml_text)),
        "the schema accepts {toml_text:?}"
    );
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema_with_its_id() {
    let schema = read_json(&workspace_root().join("schemas").join(SCHEMA));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$id"], format!("{SCHEMA_BASE}{SCHEMA}"));
    jsonschema::meta::validate(&schema).unwrap();
}

#[test]
fn the_examples_and_their_canonical_forms_validate() {
    let validator = validator(SCHEMA);
    for path in EXAMPLES {
        let (text, plan) = example(path);
        assert_eq!(
            errors(&validator, &toml_as_json(&text)),
            Vec::<String>::new(),
            "{path}"
        );
        let canonical: Value = serde_json::from_slice(&plan.canonical_bytes()).unwrap();
        assert_eq!(
            errors(&validator, &canonical),
            Vec::<String>::new(),
            "{path}"
        );
        // The `#:schema` line editors follow points at the schema.
        let relative = text
            .lines()
            .next()
            .unwrap()
            .strip_prefix("#:schema ")
            .unwrap();
        let target = workspace_root().join(path).parent().unwrap().join(relative);
        assert_eq!(
            target.canonicalize().unwrap(),
            workspace_root()
                .join("schemas")
                .join(SCHEMA)
                .canonicalize()
                .unwrap()
        );
    }
    assert!(validator.is_valid(&toml_as_json(BASE)));
}

#[test]
fn broken_plans_are_refused_by_the_schema() {
    let validator = validator(SCHEMA);
    let broken = [
        base_with("\"valp-plan.v1\"", "\"valp-plan.v2\""),
        base_with("task_id = \"t\"\n", ""),
        base_with("task_id = \"t\"", "task_id = \"a/b\""),
        base_with("task_id = \"t\"", "task_id = \"..\""),
        base_with("task_id = \"t\"", "task_id = \"a\\tb\""),
        base_with(
            "task_id = \"t\"",
            &format!("task_id = \"{}\"", "x".repeat(129)),
        ),
        base_with("goal = \"g\"", "goal = \"\""),
        base_with("goal = \"g\"", "goal = \"g\"\ntitle = \"x\""),
        base_with(
            "description = \"d\"",
            "description = \"d\"\nrequired = \"yes\"",
        ),
        base_with("description = \"d\"", "description = \"d\"\nverify = []"),
        base_with(
            "description = \"d\"",
            "description = \"d\"\nverify = [\"\"]",
        ),
        base_with("requirement = \"soft\"", "requirement = \"mandatory\""),
        base_with("[{ id = \"a\" }]", "[{ id = \"a\", kind = \"strong\" }]"),
        base_with("[{ id = \"a\" }]", "[\"a\"]"),
        base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }]\nexpected_evidence = [\"../x\"]",
        ),
        base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }]\nexpected_evidence = [\"a//b\"]",
        ),
        base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }]\nexpected_evidence = [\"/abs\"]",
        ),
        base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }]\nexpected_evidence = [\"./a\"]",
        ),
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], cwd = \"../x\" }\n\n",
        ),
        base_with("argv = [\"true\"] }\n\n", "argv = [] }\n\n"),
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], timeout_seconds = 0 }\n\n",
        ),
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], timeout_seconds = 86401 }\n\n",
        ),
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], env = { \"A=B\" = \"x\" } }\n\n",
        ),
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], shell = true }\n\n",
        ),
        base_with(
            "adapter = \"process\", argv = [\"true\"] }\n\n",
            "adapter = \"docker\", argv = [\"true\"] }\n\n",
        ),
        base_and("[execution]\nmax_concurrency = 0\n"),
        base_and("[execution]\nretry_budget = 11\n"),
        base_and("[execution]\napproval = \"maybe\"\n"),
        base_and("[execution]\napproval = true\n"),
        base_and("[done]\ndegradable_soft_items = [\"\"]\n"),
        base_and("[done]\nskip = true\n"),
        base_and("[[verification]]\nid = \"v\"\n"),
    ];
    for text in &broken {
        assert_refused(&validator, text);
        assert_ne!(
            problems(text),
            Vec::<String>::new(),
            "valp accepts {text:?}"
        );
    }
    // What the schema accepts at the edges, valp accepts too.
    for text in [
        base_with(
            "argv = [\"true\"] }\n\n",
            "argv = [\"true\"], cwd = \".\", env = { LC_ALL = \"C\" } }\n\n",
        ),
        base_with(
            "[{ id = \"a\" }]",
            "[{ id = \"a\" }]\nexpected_evidence = [\"...\", \".a/..b\", \"a b/c\"]",
        ),
        base_with("task_id = \"t\"", "task_id = \"é .x\""),
        base_and("[execution]\napproval = \"required\"\n"),
        base_and("[execution]\napproval = \"none\"\n"),
    ] {
        assert!(validator.is_valid(&toml_as_json(&text)), "{text}");
        assert_eq!(problems(&text), Vec::<String>::new());
    }
}

// ---------------------------------------------------------------------------------------------
// The dimension gates (`[dimensions]`, console/runtime/src/plan/dimensions.rs)

const DIMENSIONS: &str = r#"
[dimensions]
version = 1
[dimensions.quality]
required = true
rules = [{ rule_id = "no-failed", measure = "quality.verification_failed", operator = "eq", threshold = 0 }]
[dimensions.stability]
rules = [{ rule_id = "few-retries", measure = "stability.retries", operator = "le", threshold = 2 }]
"#;

#[test]
fn a_dimensions_section_freezes_dimension_gates_and_round_trips() {
    let text = base_and(DIMENSIONS);
    let parsed = plan::parse(Path::new("plan.toml"), text.as_bytes()).unwrap();
    let bytes = parsed.canonical_bytes();
    let canonical = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        canonical.contains(concat!(
            r#""dimensions":{"cost":{"required":false,"rules":[]},"#,
            r#""experience":{"required":false,"rules":[]},"#,
            r#""quality":{"required":true,"rules":[{"measure":"quality.verification_failed","operator":"eq","rule_id":"no-failed","threshold":0}]},"#,
            r#""stability":{"required":false,"rules":[{"measure":"stability.retries","operator":"le","rule_id":"few-retries","threshold":2}]},"version":1},"#
        )),
        "{canonical}"
    );
    assert_eq!(Plan::from_canonical("plan", &bytes).unwrap(), parsed);
    let policy = parsed.done_policy();
    let policy_text = String::from_utf8(policy.canonical_bytes()).unwrap();
    // A plan freezes v3 (the correction cycle), which carries the dimension section.
    assert!(policy_text.contains(r#""schema_version":"valp-kernel-done-policy.v3""#));
    assert!(policy_text.contains(
        r#""policy_id":"t:dimensions","scope_task_id":"t","version":"valp-kernel-dimension-policy.v1""#
    ));
    assert_eq!(
        decode_done_policy(&decode_canonical(&policy.canonical_bytes()).unwrap()).unwrap(),
        policy
    );
    // Without the section the policy has no dimension gates.
    let plain = plan::parse(Path::new("plan.toml"), BASE.as_bytes()).unwrap();
    assert!(plain.done_policy().dimensions.is_none());
    assert!(
        !String::from_utf8(plain.canonical_bytes())
            .unwrap()
            .contains("dimensions")
    );
}

#[test]
fn dimension_rules_are_checked_at_parse_with_the_spec_codes() {
    let cases = [
        (
            DIMENSIONS.replace("version = 1", "version = 3"),
            "plan.toml:21:11: dimensions.version: VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION: \
             version 3 is not supported (supported: 1)",
        ),
        (
            DIMENSIONS.replace("version = 1", "version = \"1\""),
            "plan.toml:21:11: dimensions.version: expected an integer, found a string",
        ),
        (
            DIMENSIONS.replace("operator = \"eq\"", "operator = \"~=\""),
            "plan.toml:24:87: dimensions.quality.rules[0].operator: \
             VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR: operator \"~=\" is not supported \
             (expected one of: eq, ne, lt, le, gt, ge)",
        ),
        (
            DIMENSIONS.replace("quality.verification_failed", "quality.vibes"),
            "plan.toml:24:45: dimensions.quality.rules[0].measure: unknown measure \
             \"quality.vibes\" (expected one of: quality.verification_passed, \
             quality.verification_failed, quality.verification_percent, quality.review_rejections)",
        ),
        (
            DIMENSIONS.replace("stability.retries", "cost.tokens"),
            "plan.toml:26:47: dimensions.stability.rules[0].measure: \"cost.tokens\" is a cost \
             measure, not a stability one",
        ),
        (
            DIMENSIONS.replace("few-retries", "no-failed"),
            "plan.toml:26:22: dimensions.stability.rules[0].rule_id: duplicate dimension rule id \
             \"no-failed\" (first at dimensions.quality.rules[0].rule_id)",
        ),
        (
            DIMENSIONS.replace(
                "rules = [{ rule_id = \"no-failed\", measure = \"quality.verification_failed\", \
                 operator = \"eq\", threshold = 0 }]",
                "",
            ),
            "plan.toml:22:1: dimensions.quality.rules: a required gate needs at least one rule",
        ),
        (
            DIMENSIONS.replace("threshold = 2", "threshold = 2.5"),
            "plan.toml:26:97: dimensions.stability.rules[0].threshold: expected an integer, \
             found a float",
        ),
        (
            DIMENSIONS.replace("[dimensions.stability]", "[dimensions.speed]"),
            "plan.toml:25:13: dimensions.speed: unknown key (expected one of: version, quality, \
             experience, cost, stability)",
        ),
    ];
    let mut mismatched = Vec::new();
    let validator = validator(SCHEMA);
    let parsed = plan::parse(Path::new("plan.toml"), base_and(DIMENSIONS).as_bytes()).unwrap();
    let canonical: Value = serde_json::from_slice(&parsed.canonical_bytes()).unwrap();
    assert_eq!(errors(&validator, &canonical), Vec::<String>::new());
    assert!(validator.is_valid(&toml_as_json(&base_and(DIMENSIONS))));
    for (section, expected) in cases {
        // The schema refuses what the reader refuses (duplicate rule ids aside: a schema
        // cannot compare ids across gates).
        if section.contains("few-retries") {
            assert!(
                !validator.is_valid(&toml_as_json(&base_and(&section))),
                "{section}"
            );
        }
        let found = problems(&base_and(&section));
        if found != [expected.to_owned()] {
            mismatched.push(format!("{found:?}\n  expected {expected:?}"));
        }
    }
    assert!(mismatched.is_empty(), "{}", mismatched.join("\n"));
}

/// [`BASE`] with work item `a` run by the tmux adapter, its `run` table being `run`.
fn tmux_base(run: &str) -> String {
    base_with(
        "id = \"a\"\nrequirement = \"required\"\nrun = { adapter = \"process\", argv = [\"true\"] }",
        &format!(
            "id = \"a\"\nrequirement = \"required\"\nexpected_evidence = [\"out/a.md\"]\n{run}"
        ),
    )
}

#[test]
fn a_tmux_work_item_names_its_agent_pane_and_prompt() {
    let parse = |text: &str| plan::parse(Path::new("plan.toml"), text.as_bytes()).unwrap();
    let started = parse(&tmux_base(
        "run = { adapter = \"tmux\", agent = \"demo\", command = [\"valp\", \"demo-agent\"], \
         prompt = \"write @out/a.md\", timeout_seconds = 60 }",
    ));
    let run = &started.work_item("a").unwrap().run;
    assert_eq!(run.adapter, plan::Adapter::Tmux);
    assert_eq!(
        (run.argv.len(), run.env.len(), run.timeout_seconds),
        (0, 0, 60)
    );
    assert_eq!(
        run.tmux,
        Some(plan::TmuxRun {
            agent: "demo".to_owned(),
            pane: plan::TmuxPane::Command(vec!["valp".to_owned(), "demo-agent".to_owned()]),
            prompt: "write @out/a.md".to_owned(),
            socket: None,
            workdir: plan::Workdir::Shared,
        })
    );
    let attached = parse(&tmux_base(
        "run = { adapter = \"tmux\", agent = \"claude\", target = \"%12\", prompt = \"p\", \
         socket = \"work-1\" }",
    ));
    let tmux = attached.work_item("a").unwrap().run.tmux.clone().unwrap();
    assert_eq!(tmux.pane, plan::TmuxPane::Target("%12".to_owned()));
    assert_eq!(tmux.socket.as_deref(), Some("work-1"));
    let isolated = parse(&tmux_base(
        "run = { adapter = \"tmux\", agent = \"codex\", command = [\"codex\"], cwd = \"sub\", \
         prompt = \"p\", workdir = \"worktree\" }",
    ));
    let workdir = |plan: &Plan| {
        plan.work_item("a")
            .unwrap()
            .run
            .tmux
            .clone()
            .unwrap()
            .workdir
    };
    assert_eq!(workdir(&isolated), plan::Workdir::Worktree);
    assert_eq!(workdir(&started), plan::Workdir::Shared);
    // The canonical form carries exactly the tmux members, and reads back the same.
    for (plan, encoded) in [
        (
            &started,
            r#""run":{"adapter":"tmux","agent":"demo","command":["valp","demo-agent"],"cwd":".","prompt":"write @out/a.md","timeout_seconds":60}"#,
        ),
        (
            &attached,
            r#""run":{"adapter":"tmux","agent":"claude","cwd":".","prompt":"p","socket":"work-1","target":"%12","timeout_seconds":300}"#,
        ),
        (
            &isolated,
            r#""run":{"adapter":"tmux","agent":"codex","command":["codex"],"cwd":"sub","prompt":"p","timeout_seconds":300,"workdir":"worktree"}"#,
        ),
    ] {
        let bytes = plan.canonical_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(encoded), "{text}");
        let again = Plan::from_canonical("plan-evidence", &bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&again, plan);
        assert!(
            validator(SCHEMA).is_valid(&serde_json::from_slice::<Value>(&bytes).unwrap()),
            "{text}"
        );
    }
}

#[test]
fn a_tmux_run_is_refused_with_the_exact_rule() {
    let cases: &[(&str, &[&str])] = &[
        (
            "run = { adapter = \"tmux\", agent = \"vim\", command = [\"x\"], prompt = \"p\" }",
            &[
                "plan.toml:13:35: work_items[0].run.agent: unknown agent \"vim\" (known: \
                 \"aider\", \"claude\", \"codex\", \"demo\", \"gemini\", \"generic\")",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", command = [\"x\"], target = \"%1\", \
             prompt = \"p\" }",
            &[
                "plan.toml:13:69: work_items[0].run.target: give `command` (start the agent) or \
                 `target` (an existing pane), not both",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", prompt = \"p\" }",
            &[
                "plan.toml:13:7: work_items[0].run.command: missing: give `command` (start the \
                 agent) or `target` (an existing pane)",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", target = \"%1\", prompt = \"a\\u0000b\" }",
            &["plan.toml:13:67: work_items[0].run.prompt: contains a NUL character"],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", target = \"1\", prompt = \"p\" }",
            &[
                "plan.toml:13:52: work_items[0].run.target: \"1\" is not a tmux pane id (`%` and \
                 digits, e.g. \"%3\")",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", command = [], prompt = \"\", \
             socket = \"a/b\" }",
            &[
                "plan.toml:13:53: work_items[0].run.command: must not be empty (argv[0] is the \
                 program to run)",
                "plan.toml:13:66: work_items[0].run.prompt: must not be empty",
                "plan.toml:13:79: work_items[0].run.socket: \"a/b\" is not a socket name (1 to 64 \
                 letters, digits, '_' or '-')",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", command = [\"x\"] , argv = [\"y\"], \
             env = { A = \"b\" } }",
            &[
                "plan.toml:13:7: work_items[0].run.prompt: missing required key",
                "plan.toml:13:61: work_items[0].run.argv: a tmux item starts its agent with \
                 `command`",
                "plan.toml:13:75: work_items[0].run.env: a tmux item's agent runs in the tmux \
                 server's environment",
            ],
        ),
        (
            "run = { adapter = \"process\", argv = [\"true\"], agent = \"demo\", prompt = \"p\" }",
            &[
                "plan.toml:13:47: work_items[0].run.agent: only the tmux and agent-stream adapters run an agent",
                "plan.toml:13:63: work_items[0].run.prompt: only the tmux and agent-stream adapters take a prompt",
            ],
        ),
        (
            "run = { adapter = \"external\", target = \"%1\", socket = \"s\" }",
            &[
                "plan.toml:13:31: work_items[0].run.target: only the tmux adapter attaches to a \
                 pane",
                "plan.toml:13:46: work_items[0].run.socket: only the tmux adapter uses a tmux \
                 socket",
            ],
        ),
    ];
    assert_runs_refused(cases);
}

/// Each `run` table in a base plan is refused with exactly the `expected` problems, and by the
/// schema.
fn assert_runs_refused(cases: &[(&str, &[&str])]) {
    let validator = validator(SCHEMA);
    for (run, expected) in cases {
        let text = tmux_base(run);
        let mut found = problems(&text);
        found.sort();
        let mut expected: Vec<String> = expected.iter().map(|line| (*line).to_owned()).collect();
        expected.sort();
        assert_eq!(found, expected, "{run}");
        // The schema agrees, except on the agent's name being a built-in profile's, which it
        // lists too.
        assert_refused(&validator, &text);
    }
}

#[test]
fn a_workdir_is_refused_with_the_exact_rule() {
    let cases: &[(&str, &[&str])] = &[
        (
            "run = { adapter = \"tmux\", agent = \"demo\", target = \"%1\", prompt = \"p\", \
             workdir = \"worktree\" }",
            &[
                "plan.toml:13:82: work_items[0].run.workdir: a targeted pane works where the \
                 Leader started it; `workdir = \"worktree\"` needs `command`",
            ],
        ),
        (
            "run = { adapter = \"tmux\", agent = \"demo\", command = [\"x\"], prompt = \"p\", \
             workdir = \"tree\" }",
            &[
                "plan.toml:13:84: work_items[0].run.workdir: unknown workdir \"tree\" (known: \
                 \"shared\", \"worktree\")",
            ],
        ),
        (
            "run = { adapter = \"process\", argv = [\"true\"], workdir = \"worktree\" }",
            &[
                "plan.toml:13:47: work_items[0].run.workdir: only the tmux adapter gives an agent \
                 a worktree",
            ],
        ),
    ];
    assert_runs_refused(cases);
}

#[test]
fn the_schema_lists_exactly_the_built_in_agent_profiles() {
    let schema = read_json(&workspace_root().join("schemas").join(SCHEMA));
    let listed: BTreeSet<String> = schema["$defs"]["run"]["properties"]["agent"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|name| name.as_str().unwrap().to_owned())
        .collect();
    let built_in: BTreeSet<String> = valp_runtime::agent::profile::Profile::builtin_texts()
        .iter()
        .map(|(name, _)| (*name).to_owned())
        .collect();
    assert_eq!(listed, built_in);
}

#[test]
fn an_agent_stream_work_item_names_its_stream_command_and_prompt() {
    let parse = |text: &str| plan::parse(Path::new("plan.toml"), text.as_bytes());
    let plan = parse(&tmux_base(
        "run = { adapter = \"agent-stream\", agent = \"claude\", argv = [\"claude\", \"-p\"], \
         prompt = \"write out/a.md\", timeout_seconds = 60 }",
    ))
    .unwrap();
    let run = &plan.work_item("a").unwrap().run;
    assert_eq!(run.adapter, plan::Adapter::AgentStream);
    assert_eq!(run.argv, ["claude", "-p"]);
    assert_eq!(
        run.stream,
        Some(plan::StreamRun {
            agent: valp_runtime::agent::channel::stream::Stream::Claude,
            prompt: Some("write out/a.md".to_owned()),
        })
    );
    let bytes = plan.canonical_bytes();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains(
            r#""run":{"adapter":"agent-stream","agent":"claude","argv":["claude","-p"],"cwd":".","prompt":"write out/a.md","timeout_seconds":60}"#
        ),
        "{text}"
    );
    assert_eq!(Plan::from_canonical("evidence", &bytes).unwrap(), plan);
    let canonical: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(errors(&validator(SCHEMA), &canonical), Vec::<String>::new());
    for (run, expected) in [
        (
            "run = { adapter = \"agent-stream\", agent = \"aider\", argv = [\"aider\"] }",
            "plan.toml:13:43: work_items[0].run.agent: unknown stream agent \"aider\" (known: \
             \"claude\" for claude -p --output-format stream-json, \"codex\" for codex exec --json)",
        ),
        (
            "run = { adapter = \"agent-stream\", argv = [\"claude\"] }",
            "plan.toml:13:7: work_items[0].run.agent: missing required key",
        ),
        (
            "run = { adapter = \"agent-stream\", agent = \"codex\", argv = [\"codex\"], socket = \"s\" }",
            "plan.toml:13:70: work_items[0].run.socket: only the tmux adapter uses a tmux socket",
        ),
        (
            "run = { adapter = \"process\", argv = [\"true\"], prompt = \"p\" }",
            "plan.toml:13:47: work_items[0].run.prompt: only the tmux and agent-stream adapters take a prompt",
        ),
    ] {
        assert_eq!(problems(&tmux_base(run)), [expected.to_owned()], "{run}");
    }
}
