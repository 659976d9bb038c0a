//! The fuzz targets of valp: one check per parser of untrusted input, each taking arbitrary
//! bytes, never expected to panic, and asserting the parser's properties (round trips,
//! positions in range, no control sequence in display text).
//!
//! The same functions run in two places: the cargo-fuzz targets in `tests/fuzz/fuzz_targets/`
//! (nightly, `tests/fuzz/run`), whose files are one line each, and the stable regression test
//! `tests/tests/fuzz_corpus.rs`, which runs every committed corpus file of every target through
//! them. A property that does not hold panics: that is what the fuzzer reports as a crash.

// A broken property must crash the target, so the checks assert and unwrap by design.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod canonical;
mod display;
mod journal;
mod json;
mod observation;
mod plan;
mod procfs;
mod sanitize;
mod tmux;

pub use canonical::canonical_decode;
pub use display::assert_display_safe;
pub use journal::journal;
pub use json::json_parse;
pub use observation::observation;
pub use plan::plan_toml;
pub use procfs::procfs;
pub use sanitize::sanitize;
pub use tmux::tmux_records;

/// One fuzz target: its name (the file in `fuzz_targets/` and the corpus folder) and its check.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The cargo-fuzz target and corpus folder name.
    pub name: &'static str,
    /// Runs one input; panics when a property does not hold.
    pub check: fn(&[u8]),
}

/// Every target, in the order `tests/fuzz/run` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "json_parse",
        check: json_parse,
    },
    Target {
        name: "canonical_decode",
        check: canonical_decode,
    },
    Target {
        name: "journal",
        check: journal,
    },
    Target {
        name: "plan_toml",
        check: plan_toml,
    },
    Target {
        name: "observation",
        check: observation,
    },
    Target {
        name: "tmux_records",
        check: tmux_records,
    },
    Target {
        name: "procfs",
        check: procfs,
    },
    Target {
        name: "sanitize",
        check: sanitize,
    },
];
