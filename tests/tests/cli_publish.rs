//! `valp task publish PLAN` as a person runs it: the task it creates (journal, genesis
//! work-item table, evidence), its refusals (no re-proven Leader, an invalid plan, an existing
//! task) that write nothing, the completion of an interrupted publication, and
//! `plan::of_task`, which finds the plan again and refuses tampered evidence.
//!
//! The Leader is the OS account (`human:uid-N`), which needs no tmux; one test binds a tmux
//! pane on a private server to see an unproven session refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::decode_compact_entry;
use valp_kernel::{EventKind, TaskStatus};
use valp_runtime::plan::{self, Plan, PlanError};
use valp_store::chain::ChainReader;
use valp_store::io::OsStorage;
use valp_store::{Access, ControlRoot};
use valp_tests::cli::Run;
use valp_tests::leader_project::LeaderProject;
use valp_tests::schemas::{errors, validator};
use valp_tests::workspace_root;

const BUNDLE: &str = "examples/plans/docs-bundle.toml";
const MINIMAL: &str = "examples/plans/minimal.toml";
const AGENTS: &str = "examples/plans/agents.toml";

struct Project(LeaderProject);

impl Project {
    /// An initialised control root, no Leader bound.
    fn new() -> Self {
        Self(LeaderProject::new("inst-publish"))
    }

    /// An initialised control root whose Leader is the OS account.
    fn with_leader() -> Self {
        let project = Self::new();
        let human = project.0.human();
        let selected = project.run(&["leader", "select", &human, "--yes"]);
        assert_eq!(selected.code, Some(0), "{}", selected.stderr);
        project
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    /// `valp` with the Doctor limited to the project's own tmux socket.
    fn run(&self, args: &[&str]) -> Run {
        self.0.run(args, "")
    }

    /// `valp task publish` of a plan file written into the project.
    fn publish_text(&self, name: &str, text: &str) -> Run {
        std::fs::write(self.path().join(name), text).unwrap();
        self.run(&["task", "publish", name])
    }

    fn publish_example(&self, example: &str) -> Run {
        let text = std::fs::read_to_string(workspace_root().join(example)).unwrap();
        self.publish_text("plan.toml", &text)
    }

    fn root(&self) -> ControlRoot {
        ControlRoot::open(&self.path().join(".valp"), Arc::new(OsStorage)).unwrap()
    }

    /// Every file under `.valp/` with its bytes (lock files included).
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, into: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, into);
                } else {
                    into.insert(path.clone(), std::fs::read(&path).unwrap());
                }
            }
        }
        let mut files = BTreeMap::new();
        walk(&self.path().join(".valp"), &mut files);
        files
    }
}

fn example(path: &str) -> Plan {
    let text = std::fs::read(workspace_root().join(path)).unwrap();
    plan::parse(Path::new(path), &text).unwrap()
}

#[test]
fn publishing_creates_the_task_with_its_work_items_and_plan_evidence() {
    let project = Project::with_leader();
    let expected = example(BUNDLE);
    let published = project.publish_example(BUNDLE);
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    let plan_digest = expected.digest();
    let policy_digest = expected.done_policy().digest();
    assert_eq!(
        published.stdout,
        format!(
            "published task docs-bundle at epoch 1: 6 work items, 3 criteria\n\
             plan         plan-{} {plan_digest}\n\
             done policy  done-policy-{} {policy_digest}\n",
            &plan_digest[7..23],
            &policy_digest[7..23]
        )
    );

    let verified = project.run(&["verify"]);
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);
    assert!(
        verified
            .stdout
            .ends_with("verify: 2 journals ok, 0 problems\n"),
        "{}",
        verified.stdout
    );

    // The journal: genesis at epoch 1 with the plan's work items, then the first event.
    let root = project.root();
    let journal = root.open_task("docs-bundle", Access::ReadOnly).unwrap();
    let genesis = &journal.genesis().state.body;
    assert_eq!(genesis.leader_epoch, 1);
    assert_eq!(genesis.installation_id.value(), "inst-publish");
    assert_eq!(
        genesis.work_items,
        expected.genesis_work_items(&genesis.task_id).unwrap()
    );
    let state = journal.live().body();
    assert_eq!(state.revision, 1);
    assert_eq!(state.status.known(), Some(TaskStatus::RoutingValidation));

    let mut reader = ChainReader::open(journal.path()).unwrap();
    reader.next_line().unwrap().unwrap();
    let entry = decode_compact_entry(&reader.next_line().unwrap().unwrap().entry()).unwrap();
    assert_eq!(entry.event.event_id.value(), plan::PUBLISH_EVENT_ID);
    assert_eq!(
        entry.event.kind.known(),
        Some(EventKind::RoutingValidationStarted)
    );
    assert_eq!(entry.event.expected_revision, 0);
    assert_eq!(entry.event.leader_epoch, 1);
    let mut carried: Vec<(String, String)> = entry
        .evidence_set
        .iter()
        .map(|evidence| {
            (
                evidence.evidence_id.value().to_owned(),
                evidence.content_digest.clone(),
            )
        })
        .collect();
    carried.sort();
    assert_eq!(
        carried,
        [
            (
                format!("done-policy-{}", &policy_digest[7..23]),
                policy_digest.clone()
            ),
            (format!("plan-{}", &plan_digest[7..23]), plan_digest.clone()),
        ]
    );

    // The evidence: the canonical plan and policy, and `of_task` finds them again.
    let (found, plan_evidence, policy_evidence) = plan::of_task(&root, "docs-bundle").unwrap();
    assert_eq!(found, expected);
    assert_eq!(plan_evidence.content_digest, plan_digest);
    assert_eq!(policy_evidence.content_digest, policy_digest);
    let blob = root.blobs().get(&plan_digest).unwrap();
    assert_eq!(blob, expected.canonical_bytes());
    assert_eq!(
        errors(
            &validator("console/plan.schema.json"),
            &serde_json::from_slice(&blob).unwrap()
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        root.blobs().get(&policy_digest).unwrap(),
        expected.done_policy().canonical_bytes()
    );
}

#[test]
fn publishing_needs_a_bound_and_re_proven_leader() {
    let project = Project::new();
    let refused = project.publish_example(MINIMAL);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        "valp: no Leader is bound: select one first (`valp leader select`)\n"
    );
    assert_eq!(project.root().task_dirs().unwrap(), Vec::<PathBuf>::new());

    // A tmux pane bound as Leader, then its server gone: the session is not re-proven.
    let server = project.0.server();
    let pane = project.0.pane("%0");
    let selected = project.run(&["leader", "select", &pane, "--yes"]);
    assert_eq!(selected.code, Some(0), "{}", selected.stderr);
    server.kill();
    let refused = project.publish_example(MINIMAL);
    assert_eq!(refused.code, Some(1), "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        format!(
            "valp: the Leader session is not re-proven (the bound session {pane} was not \
             observed (pane closed, tmux server stopped, or another OS user)); rebind it with \
             `valp leader rotate` before publishing tasks\n"
        )
    );
    assert_eq!(project.root().task_dirs().unwrap(), Vec::<PathBuf>::new());
}

#[test]
fn an_invalid_plan_is_reported_whole_and_nothing_is_written() {
    let project = Project::with_leader();
    let before = project.snapshot();
    let refused = project.publish_text(
        "broken.toml",
        "schema_version = \"valp-plan.v1\"\ntask_id = \"a/b\"\ngoal = \"g\"\n\n[[criteria]]\n\
         id = \"c\"\ndescription = \"d\"\n\n[[work_items]]\nid = \"a\"\nrequirement = \
         \"required\"\ndependencies = [{ id = \"a\" }]\nrun = { adapter = \"docker\", argv = [] }\n",
    );
    assert_eq!(refused.code, Some(2), "{}", refused.stdout);
    assert_eq!(refused.stdout, "");
    assert_eq!(
        refused.stderr,
        "valp: broken.toml: the plan is invalid (4 problems); nothing was published\n\
         broken.toml:2:11: task_id: not a valid id: contains a path separator ('/' or '\\')\n\
         broken.toml:12:24: work_items[0].dependencies[0].id: work item \"a\" depends on itself\n\
         broken.toml:13:19: work_items[0].run.adapter: unknown adapter \"docker\" (known: \
         \"process\", \"external\", \"tmux\", \"agent-stream\")\n\
         broken.toml:13:36: work_items[0].run.argv: must not be empty (argv[0] is the program \
         to run)\n"
    );
    let syntax = project.publish_text("syntax.toml", "task_id = \"unterminated\n");
    assert_eq!(syntax.code, Some(2));
    assert_eq!(
        syntax.stderr,
        "valp: syntax.toml: the plan is invalid (1 problem); nothing was published\n\
         syntax.toml:1:24: (syntax): invalid TOML: invalid basic string, expected `\"`\n"
    );
    let missing = project.run(&["task", "publish", "nowhere.toml"]);
    assert_eq!(missing.code, Some(2));
    assert!(
        missing
            .stderr
            .starts_with("valp: cannot read nowhere.toml: "),
        "{}",
        missing.stderr
    );
    assert_eq!(project.snapshot(), before, "a refused plan writes nothing");
}

#[test]
fn an_existing_task_is_never_published_over() {
    let project = Project::with_leader();
    let first = project.publish_example(BUNDLE);
    assert_eq!(first.code, Some(0), "{}", first.stderr);
    let before = project.snapshot();

    let again = project.publish_example(BUNDLE);
    assert_eq!(again.code, Some(2));
    assert_eq!(
        again.stderr,
        format!(
            "valp: task docs-bundle is already published with this plan ({}); nothing was \
             written\n",
            example(BUNDLE).digest()
        )
    );
    let text = std::fs::read_to_string(workspace_root().join(BUNDLE))
        .unwrap()
        .replace("max_concurrency = 2", "max_concurrency = 4");
    let other = project.publish_text("other.toml", &text);
    assert_eq!(other.code, Some(2));
    assert_eq!(
        other.stderr,
        "valp: task docs-bundle already exists; publish the plan under another task_id \
         (nothing was written)\n"
    );
    assert_eq!(
        project.snapshot(),
        before,
        "a refused publication writes nothing"
    );

    // Another task id is another task.
    let renamed = project.publish_text(
        "renamed.toml",
        &text.replace("task_id = \"docs-bundle\"", "task_id = \"docs-bundle-2\""),
    );
    assert_eq!(renamed.code, Some(0), "{}", renamed.stderr);
    assert_eq!(project.root().task_dirs().unwrap().len(), 2);
}

#[test]
fn an_interrupted_publication_is_completed() {
    let project = Project::with_leader();
    let root = project.root();
    let expected = example(MINIMAL);
    // The journal was created, then the publication stopped before its first event.
    let genesis = expected
        .genesis(root.installation().installation_id.clone(), 1)
        .unwrap();
    root.create_task(&genesis).unwrap();
    assert!(matches!(
        plan::of_task(&root, "hello"),
        Err(PlanError::NotPublished { .. })
    ));

    let completed = project.publish_example(MINIMAL);
    assert_eq!(completed.code, Some(0), "{}", completed.stderr);
    assert!(
        completed.stdout.starts_with(
            "completed the interrupted publication of task hello at epoch 1: 1 work item, 1 \
             criterion\n"
        ),
        "{}",
        completed.stdout
    );
    let (found, _, _) = plan::of_task(&root, "hello").unwrap();
    assert_eq!(found, expected);
    let verified = project.run(&["verify"]);
    assert_eq!(verified.code, Some(0), "{}", verified.stdout);

    // A journal of the same task id with another genesis is not "interrupted": refused.
    let root = project.root();
    let mut other = example(BUNDLE);
    other.task_id = "bundle-elsewhere".to_owned();
    let mut genesis = other
        .genesis(root.installation().installation_id.clone(), 1)
        .unwrap();
    genesis.state.body.work_items.pop();
    root.create_task(&genesis).unwrap();
    let error = plan::publish(&root, &other, 1).unwrap_err();
    assert_eq!(
        error.to_string(),
        "task bundle-elsewhere already exists with another genesis (epoch 1, 5 work items); \
         publish the plan under another task_id"
    );
}

#[test]
fn of_task_refuses_tampered_evidence() {
    let project = Project::with_leader();
    let published = project.publish_example(BUNDLE);
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    let root = project.root();
    let expected = example(BUNDLE);

    assert!(matches!(
        plan::of_task(&root, "no-such-task"),
        Err(PlanError::NoTask { .. })
    ));

    for (digest, id_prefix) in [
        (expected.digest(), "plan-"),
        (expected.done_policy().digest(), "done-policy-"),
    ] {
        let path = root.blobs().path_of(&digest).unwrap();
        let original = std::fs::read(&path).unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        permissions.set_readonly(false);
        std::fs::set_permissions(&path, permissions).unwrap();
        let mut tampered = original.clone();
        let last = tampered.len() - 3;
        tampered[last] ^= 0x01;
        std::fs::write(&path, &tampered).unwrap();

        let error = plan::of_task(&root, "docs-bundle").unwrap_err();
        let PlanError::BadEvidence {
            evidence_id,
            reason,
            ..
        } = &error
        else {
            panic!("{error}");
        };
        assert_eq!(evidence_id, &format!("{id_prefix}{}", &digest[7..23]));
        assert!(reason.contains(&digest[7..]), "{reason}");
        let verified = project.run(&["verify"]);
        assert_ne!(verified.code, Some(0), "{}", verified.stdout);

        std::fs::write(&path, &original).unwrap();
        plan::of_task(&root, "docs-bundle").unwrap();
    }
}

#[test]
fn the_agents_example_publishes_three_tmux_items() {
    let project = Project::with_leader();
    let published = project.publish_example(AGENTS);
    assert_eq!(published.code, Some(0), "{}", published.stderr);
    assert!(
        published
            .stdout
            .starts_with("published task agents at epoch 1: 3 work items, 1 criterion\n"),
        "{}",
        published.stdout
    );
}
