//! A watched AgentOps source (`[related] agentops_watch`): a verdict file that appears in the
//! watched folder shows up in the task's foreign-observation journal, placed by the plan's
//! mapping; a corrupt one and an unmapped one are listed, never recorded; nothing is written
//! into the watched folder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;
use std::time::{Duration, Instant};

use valp_runtime::related::watch::AgentopsWatch;
use valp_store::foreign::{ClaimResult, ForeignJournal, ReviewVerdict};
use valp_store::{Access, ControlRoot};
use valp_tests::project::{external_item, plan};
use valp_tests::store::init_root;
use valp_tests::workspace_root;

const TASK: &str = "t";
const PASS_SUBJECT: &str = "c7cb66d707aa75c0cb2bb07a82678964f9e285c9d2c783969507554c8d9f17b0";

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        workspace_root()
            .join("tests/fixtures/related/agentops")
            .join(name),
    )
    .unwrap()
}

fn records(root: &ControlRoot) -> Vec<valp_store::foreign::ForeignRecord> {
    ForeignJournal::of_task(root, TASK, Access::ReadOnly)
        .unwrap()
        .records()
        .to_vec()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn listing(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_new_verdict_is_recorded_and_a_corrupt_or_unmapped_one_is_listed() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let text = format!(
        "{}[related]\nagentops_watch = \"agents/verdicts\"\n\
         [[related.agentops]]\nsubject = \"{PASS_SUBJECT}\"\nwork_item = \"review\"\n",
        plan(TASK, &external_item("review", &[], &[]))
    );
    let parsed = valp_runtime::plan::parse(Path::new("t.toml"), text.as_bytes()).unwrap();
    valp_runtime::plan::publish(&root, &parsed, 0).unwrap();
    let related = parsed.related.clone().unwrap();
    let folder = temp.path().join("agents/verdicts");
    std::fs::create_dir_all(&folder).unwrap();
    let watch =
        AgentopsWatch::start(root.clone(), TASK.to_owned(), &folder, related, || true).unwrap();
    assert!(records(&root).is_empty());

    // A verdict appears (written the way AgentOps writes: a temporary, then a rename).
    let pass = "b4d8bd3b9db67ef51a251a928b749d5f95b1262570751e9890033937bd678f40.json";
    std::fs::write(
        folder.join(".verdict-1.tmp"),
        fixture("verdict-v2-PASS-b4d8bd3b.json"),
    )
    .unwrap();
    std::fs::rename(folder.join(".verdict-1.tmp"), folder.join(pass)).unwrap();
    wait_for("the PASS verdict in the journal", || {
        records(&root).len() == 1
    });
    let record = &records(&root)[0];
    assert_eq!(record.work_item_id.as_deref(), Some("review"));
    assert_eq!(record.claim, Some((ClaimResult::Pass, ReviewVerdict::Pass)));

    // A corrupt one (a byte changed) and one the mapping does not name: listed, not recorded.
    let changed = String::from_utf8(fixture("verdict-v2-FAIL-3c297141.json"))
        .unwrap()
        .replacen("\"verdict\":\"FAIL\"", "\"verdict\":\"PASS\"", 1);
    std::fs::write(folder.join("broken.json"), changed).unwrap();
    std::fs::write(
        folder.join("not-proven.json"),
        fixture("verdict-v2-NOT_PROVEN-42554461.json"),
    )
    .unwrap();
    wait_for("both listed", || watch.problems().len() == 2);
    let problems = watch.problems();
    assert!(problems[0].starts_with("broken.json: "), "{problems:?}");
    assert_eq!(
        problems[1],
        "not-proven.json: not named by the plan's mapping; not recorded"
    );
    assert_eq!(records(&root).len(), 1);
    // Nothing was written into the watched folder.
    let before = listing(&folder);
    drop(watch);
    assert_eq!(listing(&folder), before);
    assert_eq!(
        before
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>(),
        [
            "b4d8bd3b9db67ef51a251a928b749d5f95b1262570751e9890033937bd678f40.json",
            "broken.json",
            "not-proven.json"
        ]
    );
}
