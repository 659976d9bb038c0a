//! Our journals against the VALP reference vectors: every replay vector the reference accepts,
//! written in the reference store's layout (`runtime/kernel/genesis.json` and `replay.jsonl`,
//! canonical bytes and LF each), imported into a journal and exported again, comes back byte
//! for byte, and the journal's State is the reference's replayed State.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::json::Value;
use valp_kernel::json::write::canonical_bytes;
use valp_kernel::{Identity, IdentityKind};
use valp_store::io::OsStorage;
use valp_store::reference::{self, GENESIS_FILE, KERNEL_DIR, REPLAY_FILE};
use valp_store::{Access, ControlRoot};
use valp_tests::workspace_root;

/// The replay vectors, decoded (each line must be canonical).
fn replay_vectors() -> Vec<Value> {
    let path = workspace_root().join("tests/fixtures/conformance/replay-vectors.jsonl.gz");
    let file = std::fs::File::open(&path).unwrap();
    BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .map(|line| decode_canonical(format!("{}\n", line.unwrap()).as_bytes()).unwrap())
        .collect()
}

/// `value[key]`, which must exist.
fn member<'v>(value: &'v Value, key: &str) -> &'v Value {
    value
        .as_object()
        .and_then(|object| object.get(key))
        .unwrap_or_else(|| panic!("no {key:?} in {}", value.type_name()))
}

/// `value.kind.value` of an identity member.
fn identity_value<'v>(value: &'v Value, key: &str) -> &'v str {
    member(member(value, key), "value").as_str().unwrap()
}

#[test]
fn importing_and_exporting_accepted_replay_vectors_reproduces_their_bytes() {
    let mut checked = 0;
    for vector in replay_vectors() {
        let name = member(&vector, "name").as_str().unwrap().to_owned();
        let expected = member(&vector, "expected");
        if expected.as_object().unwrap().contains_key("error") {
            continue;
        }
        let genesis = member(&vector, "genesis");
        let Value::Array(entries) = member(&vector, "entries") else {
            panic!("{name}: entries is not an array");
        };
        let temp = tempfile::tempdir().unwrap();
        let source = temp.path().join("source");
        let kernel_dir = source.join(KERNEL_DIR);
        std::fs::create_dir_all(&kernel_dir).unwrap();
        let genesis_bytes = canonical_bytes(genesis).unwrap();
        let replay_bytes: Vec<u8> = entries
            .iter()
            .flat_map(|entry| canonical_bytes(entry).unwrap())
            .collect();
        std::fs::write(kernel_dir.join(GENESIS_FILE), &genesis_bytes).unwrap();
        std::fs::write(kernel_dir.join(REPLAY_FILE), &replay_bytes).unwrap();

        let state = member(genesis, "state");
        let installation = Identity::new(
            IdentityKind::Installation,
            identity_value(state, "installation_id"),
        )
        .unwrap();
        let root = ControlRoot::init(
            &temp.path().join(".valp"),
            installation,
            Arc::new(OsStorage),
        )
        .unwrap();
        let imported = reference::import(&root, &source)
            .unwrap_or_else(|error| panic!("{name}: import refused: {error}"));
        assert_eq!(imported.len(), entries.len() as u64, "{name}");
        drop(imported);

        let journal = root
            .open_task(identity_value(state, "task_id"), Access::ReadOnly)
            .unwrap();
        assert_eq!(journal.warnings(), [], "{name}");
        assert_eq!(
            journal.live().to_state().canonical_bytes(),
            canonical_bytes(member(expected, "state")).unwrap(),
            "{name}: the journal's State is the reference's replayed State"
        );
        let out = temp.path().join("out");
        let exported = reference::export(&journal, &out).unwrap();
        assert_eq!(exported.entries, entries.len() as u64, "{name}");
        assert_eq!(exported.dir, out.join(KERNEL_DIR), "{name}");
        assert_same_file(&exported.dir.join(GENESIS_FILE), &genesis_bytes, &name);
        assert_same_file(&exported.dir.join(REPLAY_FILE), &replay_bytes, &name);
        checked += 1;
    }
    // 479 vectors, of which the reference accepts these.
    assert_eq!(checked, 123);
}

fn assert_same_file(path: &Path, expected: &[u8], name: &str) {
    let actual = std::fs::read(path).unwrap();
    if actual != expected {
        let at = valp_kernel::canonical::first_difference(&actual, expected);
        panic!(
            "{name}: {} differs from the reference at byte {at} ({} vs {} bytes)",
            path.display(),
            actual.len(),
            expected.len()
        );
    }
}
