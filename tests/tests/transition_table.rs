//! `schemas/transitions.md` is the kernel's transition table as
//! `valp_kernel::explain::transition_table` generates it now. `VALP_BLESS=1` rewrites it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::EventKind;
use valp_kernel::explain::transition_table;
use valp_tests::workspace_root;

#[test]
fn the_generated_transition_table_is_current() {
    let path = workspace_root().join("schemas/transitions.md");
    let table = transition_table();
    if std::env::var_os("VALP_BLESS").is_some() {
        std::fs::write(&path, &table).unwrap();
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == table,
        "{} is stale: regenerate it with VALP_BLESS=1 cargo test -p valp-tests --test \
         transition_table",
        path.display()
    );
    let rows = table.lines().filter(|line| line.starts_with("| `")).count();
    assert_eq!(rows, EventKind::ALL.len());
}
