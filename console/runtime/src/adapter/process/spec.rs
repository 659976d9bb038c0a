//! The run specification `valp-process-run-spec.v1` (`run.json`): what the supervisor runs.
//!
//! The System writes it; the request's `payload_digest` is the digest of its canonical bytes, so
//! the request names exactly one command. Decoding is strict: the bytes must be the canonical
//! encoding of a spec with every member present (no defaults on disk), so one spec has one
//! digest.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::json::write::{Fields, write_str};

use crate::abi::is_safe_relative;

/// `valp-process-run-spec.v1`
pub const RUN_SPEC_SCHEMA: &str = "valp-process-run-spec.v1";
/// The default grace between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE_MS: u64 = 2000;
/// The default cap on each captured stream (8 MiB).
pub const DEFAULT_CAP_BYTES: u64 = 8 * 1024 * 1024;
/// The largest integer a spec may hold (2^53 - 1: exact in every JSON reader).
pub const MAX_INTEGER: u64 = (1 << 53) - 1;
/// The environment variables the command inherits from the supervisor (when set there); the
/// spec's `env` is added to (and overrides) them. Nothing else is inherited.
pub const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// `valp-process-run-spec.v1`: one command, run without a shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSpec {
    /// The program (resolved through `PATH` when it has no `/`) and its arguments, passed as
    /// they are: no shell, no globbing, no variable expansion. Non-empty.
    pub argv: Vec<String>,
    /// The absolute path of the working folder.
    pub cwd: String,
    /// Added to the minimal inherited environment ([`INHERITED_ENV`]).
    pub env: BTreeMap<String, String>,
    /// After this many milliseconds the process group is terminated (at least 1).
    pub timeout_ms: u64,
    /// Between SIGTERM and SIGKILL on cancel and timeout.
    pub grace_ms: u64,
    /// Files the command must leave, relative to `cwd` (safe relative paths, unique); the same
    /// list as the request's `expected_evidence_refs`.
    pub expected_evidence: Vec<String>,
    /// Captured stdout bytes at most (the rest is read and dropped; the proof says truncated).
    pub stdout_cap_bytes: u64,
    /// Captured stderr bytes at most.
    pub stderr_cap_bytes: u64,
}

/// Why a run spec is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct SpecError {
    /// Where (`argv[0]`, `env.PATH`, `run.json`).
    pub field: String,
    /// Which rule.
    pub rule: String,
}

fn refuse(field: impl Into<String>, rule: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        rule: rule.into(),
    }
}

/// The wire shape (every member required, nothing else allowed).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Wire {
    schema_version: String,
    argv: Vec<String>,
    cwd: String,
    env: BTreeMap<String, String>,
    timeout_ms: u64,
    grace_ms: u64,
    expected_evidence: Vec<String>,
    stdout_cap_bytes: u64,
    stderr_cap_bytes: u64,
}

impl RunSpec {
    /// A spec with the defaults: no extra environment, [`DEFAULT_GRACE_MS`], no expected
    /// evidence, [`DEFAULT_CAP_BYTES`] per stream.
    pub fn new(argv: Vec<String>, cwd: impl Into<String>, timeout_ms: u64) -> Self {
        Self {
            argv,
            cwd: cwd.into(),
            env: BTreeMap::new(),
            timeout_ms,
            grace_ms: DEFAULT_GRACE_MS,
            expected_evidence: Vec::new(),
            stdout_cap_bytes: DEFAULT_CAP_BYTES,
            stderr_cap_bytes: DEFAULT_CAP_BYTES,
        }
    }

    /// Reads `run.json`: canonical bytes of a spec with every member, nothing else, valid.
    pub fn decode(bytes: &[u8]) -> Result<Self, SpecError> {
        decode_canonical(bytes).map_err(|error| refuse("run.json", error.to_string()))?;
        let wire: Wire = serde_json::from_slice(bytes)
            .map_err(|error| refuse("run.json", format!("not a {RUN_SPEC_SCHEMA}: {error}")))?;
        if wire.schema_version != RUN_SPEC_SCHEMA {
            return Err(refuse(
                "schema_version",
                format!("must be {RUN_SPEC_SCHEMA}"),
            ));
        }
        let spec = Self {
            argv: wire.argv,
            cwd: wire.cwd,
            env: wire.env,
            timeout_ms: wire.timeout_ms,
            grace_ms: wire.grace_ms,
            expected_evidence: wire.expected_evidence,
            stdout_cap_bytes: wire.stdout_cap_bytes,
            stderr_cap_bytes: wire.stderr_cap_bytes,
        };
        spec.validate()?;
        if spec.canonical_bytes() != bytes {
            return Err(refuse("run.json", "not the spec's canonical encoding"));
        }
        Ok(spec)
    }

    /// Checks every rule a spec must follow.
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.argv.first().is_none_or(String::is_empty) {
            return Err(refuse("argv", "must be non-empty with a non-empty program"));
        }
        for (index, argument) in self.argv.iter().enumerate() {
            if argument.contains('\0') {
                return Err(refuse(format!("argv[{index}]"), "holds a NUL byte"));
            }
        }
        if !self.cwd.starts_with('/') || self.cwd.contains('\0') {
            return Err(refuse("cwd", "must be an absolute path without NUL"));
        }
        for (key, value) in &self.env {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(refuse(
                    format!("env.{key}"),
                    "a name is non-empty, without `=` or NUL",
                ));
            }
            if value.contains('\0') {
                return Err(refuse(format!("env.{key}"), "holds a NUL byte"));
            }
        }
        let mut seen = BTreeSet::new();
        for (index, path) in self.expected_evidence.iter().enumerate() {
            if !is_safe_relative(path) {
                return Err(refuse(
                    format!("expected_evidence[{index}]"),
                    format!("{path:?} is not a safe relative path"),
                ));
            }
            if !seen.insert(path) {
                return Err(refuse(
                    format!("expected_evidence[{index}]"),
                    "is listed twice",
                ));
            }
        }
        if self.timeout_ms == 0 {
            return Err(refuse("timeout_ms", "must be at least 1"));
        }
        for (field, value) in [
            ("timeout_ms", self.timeout_ms),
            ("grace_ms", self.grace_ms),
            ("stdout_cap_bytes", self.stdout_cap_bytes),
            ("stderr_cap_bytes", self.stderr_cap_bytes),
        ] {
            if value > MAX_INTEGER {
                return Err(refuse(field, format!("must be at most {MAX_INTEGER}")));
            }
        }
        Ok(())
    }
}

impl Canonical for RunSpec {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.strs("argv", &self.argv);
        fields.str("cwd", &self.cwd);
        let env = fields.key("env");
        env.push(b'{');
        // BTreeMap order is UTF-8 byte order, which is code point order: canonical.
        for (index, (key, value)) in self.env.iter().enumerate() {
            if index > 0 {
                env.push(b',');
            }
            write_str(env, key);
            env.push(b':');
            write_str(env, value);
        }
        env.push(b'}');
        fields.strs("expected_evidence", &self.expected_evidence);
        fields.int("grace_ms", i128::from(self.grace_ms));
        fields.str("schema_version", RUN_SPEC_SCHEMA);
        fields.int("stderr_cap_bytes", i128::from(self.stderr_cap_bytes));
        fields.int("stdout_cap_bytes", i128::from(self.stdout_cap_bytes));
        fields.int("timeout_ms", i128::from(self.timeout_ms));
        fields.end();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn spec() -> RunSpec {
        let mut spec = RunSpec::new(
            vec!["echo".into(), "a;b".into(), "$HOME".into()],
            "/work",
            1000,
        );
        spec.env.insert("Z".into(), "last".into());
        spec.env.insert("A".into(), "é\n".into());
        spec.expected_evidence = vec!["out/a.txt".into()];
        spec
    }

    #[test]
    fn the_canonical_encoding_round_trips() {
        let spec = spec();
        let bytes = spec.canonical_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            "{\"argv\":[\"echo\",\"a;b\",\"$HOME\"],\"cwd\":\"/work\",\"env\":{\"A\":\"é\\n\",\
             \"Z\":\"last\"},\"expected_evidence\":[\"out/a.txt\"],\"grace_ms\":2000,\
             \"schema_version\":\"valp-process-run-spec.v1\",\"stderr_cap_bytes\":8388608,\
             \"stdout_cap_bytes\":8388608,\"timeout_ms\":1000}\n"
        );
        assert_eq!(RunSpec::decode(&bytes).unwrap(), spec);
    }

    #[test]
    fn decoding_is_strict() {
        let text = String::from_utf8(spec().canonical_bytes()).unwrap();
        let cases = [
            // Not canonical (whitespace, missing LF).
            text.replace("\"cwd\":", "\"cwd\": "),
            text.trim_end().to_owned(),
            // A missing member, an extra member, a wrong schema.
            text.replace("\"grace_ms\":2000,", ""),
            text.replace("\"timeout_ms\":1000}", "\"timeout_ms\":1000,\"zz\":1}"),
            text.replace("run-spec.v1", "run-spec.v2"),
            // Rule violations.
            text.replace("[\"echo\",\"a;b\",\"$HOME\"]", "[]"),
            text.replace("\"/work\"", "\"work\""),
            text.replace("out/a.txt", "../a.txt"),
            text.replace("\"timeout_ms\":1000", "\"timeout_ms\":0"),
            text.replace("\"grace_ms\":2000", "\"grace_ms\":-1"),
            text.replace("\"grace_ms\":2000", "\"grace_ms\":9007199254740992"),
            text.replace("{\"A\"", "{\"A=B\""),
        ];
        for case in cases {
            assert!(RunSpec::decode(case.as_bytes()).is_err(), "{case}");
        }
    }
}
