//! A journal kept on disk for profiling an open under `valgrind --tool=callgrind`.
//!
//! `cargo bench -p valp-store --bench profile` builds a task journal of
//! `VALP_STORE_PROFILE_ENTRIES` entries (default 2,000) over 20 work items, verifies it once,
//! keeps its control root and prints its path. Run the same binary under callgrind with
//! `VALP_STORE_BENCH_PROBE_ROOT=<path>` and `--toggle-collect='*open_task*'` to count only the
//! instructions of the open (ARCHITECTURE.md, "Where an open's instructions go", gives the
//! command and the breakdown per entry). The path is printed, never deleted: remove it by hand.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{WORK_ITEMS, build_journals, run_probe_if_asked};

fn main() {
    if run_probe_if_asked() {
        return;
    }
    let entries = std::env::var("VALP_STORE_PROFILE_ENTRIES")
        .ok()
        .map_or(2_000, |text| text.parse().expect("a number of entries"));
    let built = build_journals(WORK_ITEMS, &[entries])
        .pop()
        .expect("one journal");
    built.verify();
    let root = built.root.layout().root().to_owned();
    let _kept = built.temp.keep();
    println!("{}", root.display());
}
