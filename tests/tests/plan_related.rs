//! The plan's `[related]` section: the explicit mapping of AgentOps verdicts onto the task and
//! its work items (every rule with its exact text and place, the canonical form, the schema),
//! and `valp ingest agentops --record --task T` placing the real fixture verdicts by it when no
//! `--item` is given: mapped ones recorded where the plan says, the others listed, never guessed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;

use serde_json::Value;
use valp_kernel::canonical::Canonical;
use valp_runtime::plan::related::{MapKey, Target};
use valp_runtime::plan::{self, Plan};
use valp_tests::project::{Project, external_item, plan as plan_text};
use valp_tests::schemas::validator;
use valp_tests::workspace_root;

const PASS: &str = "b4d8bd3b9db67ef51a251a928b749d5f95b1262570751e9890033937bd678f40";
const PASS_SUBJECT: &str = "c7cb66d707aa75c0cb2bb07a82678964f9e285c9d2c783969507554c8d9f17b0";
const FAIL: &str = "3c297141dd11978fc3c741733773373a57028b88f24e73b24df5c55fa4e932f7";

/// A plan with items `build` and `review` and the given `[related]` text.
fn with_related(related: &str) -> String {
    format!(
        "{}{related}",
        plan_text(
            "t",
            &format!(
                "{}{}",
                external_item("build", &[], &[]),
                external_item("review", &[], &[])
            )
        )
    )
}

fn problems(text: &str) -> Vec<String> {
    match plan::parse(Path::new("plan.toml"), text.as_bytes()) {
        Ok(_) => Vec::new(),
        Err(errors) => errors.problems.iter().map(ToString::to_string).collect(),
    }
}

fn parsed(text: &str) -> Plan {
    plan::parse(Path::new("plan.toml"), text.as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|line| line.contains(needle)).unwrap() + 1
}

#[test]
fn a_mapping_parses_places_verdicts_and_keeps_its_canonical_form() {
    let text = with_related(&format!(
        "[related]\nagentops_watch = \".agents/ao/verdicts/sha256\"\n\
         [[related.agentops]]\nsubject = \"{PASS_SUBJECT}\"\nwork_item = \"review\"\n\
         [[related.agentops]]\nverdict = \"{FAIL}\"\n"
    ));
    let plan = parsed(&text);
    let related = plan.related.clone().unwrap();
    assert_eq!(
        related.agentops_watch.as_deref(),
        Some(".agents/ao/verdicts/sha256")
    );
    assert_eq!(
        related.agentops[0].key,
        MapKey::Subject(PASS_SUBJECT.to_owned())
    );
    assert_eq!(
        related.target(PASS, PASS_SUBJECT),
        Target::Mapped(Some("review".to_owned()))
    );
    assert_eq!(
        related.target(FAIL, "0".repeat(64).as_str()),
        Target::Mapped(None)
    );
    assert_eq!(
        related.target(&"1".repeat(64), &"2".repeat(64)),
        Target::Unmapped
    );
    // A verdict named by its digest and by its subject, to different places: ambiguous.
    let mut twice = related.clone();
    twice
        .agentops
        .push(valp_runtime::plan::related::AgentopsMapping {
            key: MapKey::Verdict(PASS.to_owned()),
            work_item: Some("build".to_owned()),
        });
    assert_eq!(
        twice.target(PASS, PASS_SUBJECT),
        Target::Ambiguous(vec![Some("review".to_owned()), Some("build".to_owned())])
    );
    // The canonical form carries it and reads back; a plan without it keeps its bytes.
    let bytes = plan.canonical_bytes();
    let json: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        json["related"],
        serde_json::json!({
            "agentops": [
                {"subject": PASS_SUBJECT, "work_item": "review"},
                {"verdict": FAIL}
            ],
            "agentops_watch": ".agents/ao/verdicts/sha256"
        })
    );
    assert_eq!(Plan::from_canonical("plan-x", &bytes).unwrap(), plan);
    let bare = parsed(&with_related(""));
    assert!(
        !String::from_utf8(bare.canonical_bytes())
            .unwrap()
            .contains("related")
    );
    // The schema agrees.
    let schema = validator("console/plan.schema.json");
    assert!(schema.is_valid(&json));
    assert!(schema.is_valid(&serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap()));
}

#[test]
fn every_mapping_rule_is_refused_with_its_place() {
    let text = with_related(&format!(
        "[related]\nagentops_watch = \"../outside\"\ncolour = \"red\"\n\
         [[related.agentops]]\nsubject = \"{PASS_SUBJECT}\"\nverdict = \"{PASS}\"\n\
         [[related.agentops]]\nwork_item = \"review\"\n\
         [[related.agentops]]\nsubject = \"C7CB\"\n\
         [[related.agentops]]\nverdict = \"{FAIL}\"\nwork_item = \"nope\"\n\
         [[related.agentops]]\nverdict = \"{FAIL}\"\nwork_item = \"build\"\nnote = \"x\"\n"
    ));
    let at = |needle: &str| line_of(&text, needle);
    let first_table = text.find("[[related.agentops]]").unwrap();
    let nth_table = |n: usize| {
        let offset = text[first_table..]
            .match_indices("[[related.agentops]]")
            .nth(n)
            .unwrap()
            .0
            + first_table;
        text[..offset].lines().count() + 1
    };
    assert_eq!(
        problems(&text),
        [
            format!(
                "plan.toml:{}:18: related.agentops_watch: \"../outside\" is not a safe relative path",
                at("agentops_watch")
            ),
            format!(
                "plan.toml:{}:1: related.colour: unknown key (expected one of: agentops, agentops_watch)",
                at("colour")
            ),
            format!(
                "plan.toml:{}:1: related.agentops[0]: give exactly one of subject or verdict",
                nth_table(0)
            ),
            format!(
                "plan.toml:{}:1: related.agentops[1]: give exactly one of subject or verdict",
                nth_table(1)
            ),
            format!(
                "plan.toml:{}:11: related.agentops[2].subject: must be 64 lowercase hex digits (a bare AgentOps digest)",
                at("\"C7CB\"")
            ),
            format!(
                "plan.toml:{}:13: related.agentops[3].work_item: unknown work item \"nope\"",
                at("\"nope\"")
            ),
            format!(
                "plan.toml:{}:1: related.agentops[4]: that digest is already mapped at related.agentops[3]",
                nth_table(4)
            ),
            format!(
                "plan.toml:{}:1: related.agentops[4].note: unknown key (expected one of: subject, verdict, work_item)",
                at("note = ")
            ),
        ]
    );
}

/// `valp ingest agentops verdicts --task t --record` in a project whose plan maps only the PASS
/// verdict (by its subject) to `review`.
#[test]
fn ingest_places_verdicts_by_the_plan_and_lists_the_unmapped() {
    let project = Project::new();
    project.publish(
        "t",
        &with_related(&format!(
            "[related]\n[[related.agentops]]\nsubject = \"{PASS_SUBJECT}\"\nwork_item = \"review\"\n"
        )),
    );
    let dir = project.path().join("verdicts");
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = workspace_root().join("tests/fixtures/related/agentops");
    for name in [
        "verdict-v2-PASS-b4d8bd3b.json",
        "verdict-v2-FAIL-3c297141.json",
        "verdict-v2-NOT_PROVEN-42554461.json",
    ] {
        std::fs::copy(fixtures.join(name), dir.join(name)).unwrap();
    }
    let out = project.ok(&["ingest", "agentops", "verdicts", "--task", "t", "--record"]);
    assert!(
        out.contains("mapping: the plan's [related] section"),
        "{out}"
    );
    let not_recorded: Vec<&str> = out
        .lines()
        .filter(|line| line.starts_with("not recorded: "))
        .collect();
    assert_eq!(
        not_recorded,
        [
            "not recorded: verdict-v2-FAIL-3c297141.json: no [related.agentops] entry names its verdict or subject (never guessed)",
            "not recorded: verdict-v2-NOT_PROVEN-42554461.json: no [related.agentops] entry names its verdict or subject (never guessed)",
        ]
    );
    let recorded: Vec<&str> = out
        .lines()
        .filter(|line| line.starts_with("recorded: "))
        .collect();
    assert_eq!(recorded.len(), 1, "{out}");
    assert!(
        recorded[0].starts_with(&format!("recorded: agentops:verdict:{PASS} item review ")),
        "{out}"
    );
    let journal = std::fs::read_to_string(
        project
            .control_root()
            .join("tasks/t")
            .join(valp_store::foreign::FOREIGN_FILE),
    )
    .unwrap();
    assert_eq!(journal.lines().count(), 1);
    assert!(journal.contains("\"work_item_id\":\"review\""), "{journal}");
}
