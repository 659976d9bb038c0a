//! Declared deviations from the reference kernel (`kernel/deviations.json`).
//!
//! Each deviation names the rule, the seed section that requires it, vector-name patterns
//! (`*` matches any run of characters, `/` included) and the exact outcome our kernel produces
//! instead of the reference's. `kernel/DEVIATIONS.md` explains each one.

use serde::Deserialize;
use valp_kernel::ErrorCode;

use super::ConformanceError;

/// The deviations file compiled into `valp`.
pub const DEFAULT_DEVIATIONS: &str = include_str!("../../../../kernel/deviations.json");

/// `schema_version` of the deviations file.
pub const DEVIATIONS_SCHEMA: &str = "valp-kernel-deviations.v1";

/// The whole deviations file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviationFile {
    /// Must be [`DEVIATIONS_SCHEMA`].
    pub schema_version: String,
    /// Every declared deviation.
    pub deviations: Vec<Deviation>,
}

/// One declared deviation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deviation {
    /// Short id, e.g. `D1`.
    pub id: String,
    /// The rule our kernel follows instead.
    pub rule: String,
    /// The seed section that requires it.
    pub seed_section: String,
    /// Vector-name patterns this deviation covers.
    pub patterns: Vec<String>,
    /// What our kernel produces for those vectors.
    pub outcome: DeclaredOutcome,
}

/// The outcome our kernel produces for a deviating vector.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DeclaredOutcome {
    /// The input is refused while decoding, with this error code.
    DecodeRejected(String),
    /// `reduce` returns a rejected Result with this error code and the input state.
    Rejected(String),
    /// The replay fails with this reference message.
    ReplayError(String),
}

impl DeviationFile {
    /// Parses and checks a deviations file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ConformanceError> {
        let error = |message: String| ConformanceError::Deviations {
            origin: origin.to_owned(),
            message,
        };
        let file: Self = serde_json::from_str(text).map_err(|source| error(source.to_string()))?;
        if file.schema_version != DEVIATIONS_SCHEMA {
            return Err(error(format!(
                "schema_version must be {DEVIATIONS_SCHEMA:?}, found {:?}",
                file.schema_version
            )));
        }
        for deviation in &file.deviations {
            if deviation.patterns.is_empty() {
                return Err(error(format!("deviation {} has no patterns", deviation.id)));
            }
            if let DeclaredOutcome::DecodeRejected(code) | DeclaredOutcome::Rejected(code) =
                &deviation.outcome
                && ErrorCode::from_wire(code).is_none()
            {
                return Err(error(format!(
                    "deviation {}: {code:?} is not a kernel error code",
                    deviation.id
                )));
            }
        }
        Ok(file)
    }

    /// No deviations: every difference from the reference is a failure.
    pub fn none() -> Self {
        Self {
            schema_version: DEVIATIONS_SCHEMA.to_owned(),
            deviations: Vec::new(),
        }
    }

    /// The deviations compiled into `valp`.
    pub fn builtin() -> Result<Self, ConformanceError> {
        Self::parse(DEFAULT_DEVIATIONS, "kernel/deviations.json (built in)")
    }

    /// The deviation declared for a vector name, if any.
    pub fn find(&self, name: &str) -> Option<&Deviation> {
        self.deviations.iter().find(|deviation| {
            deviation
                .patterns
                .iter()
                .any(|pattern| glob_match(pattern, name))
        })
    }
}

/// Matches `name` against `pattern`, where `*` stands for any run of characters.
pub(super) fn glob_match(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return name.is_empty();
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(index) => rest = &rest[index + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matches_prefixes_suffixes_and_middles() {
        assert!(glob_match("malformed_types/*", "malformed_types/event/x"));
        assert!(!glob_match("malformed_types/*", "unknown_enum/x"));
        assert!(glob_match("*/x", "a/b/x"));
        assert!(glob_match("a*c*e", "abcde"));
        assert!(!glob_match("a*c*e", "abcd"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(!glob_match("ab*ba", "aba"));
    }

    #[test]
    fn builtin_file_parses() {
        let file = DeviationFile::builtin().unwrap();
        assert!(
            file.find("malformed_types/state/state-revision-float")
                .is_some()
        );
        assert!(file.find("walk/seed-0000/step-001").is_none());
    }

    #[test]
    fn unknown_error_code_is_refused() {
        let text = r#"{"schema_version":"valp-kernel-deviations.v1","deviations":[{"id":"X","rule":"r","seed_section":"s","patterns":["a"],"outcome":{"rejected":"VALP-E-NOPE"}}]}"#;
        let error = DeviationFile::parse(text, "t").unwrap_err().to_string();
        assert_eq!(
            error,
            "deviations file t: deviation X: \"VALP-E-NOPE\" is not a kernel error code"
        );
    }

    #[test]
    fn wrong_schema_and_unknown_fields_are_refused() {
        let error = DeviationFile::parse(r#"{"schema_version":"v0","deviations":[]}"#, "t")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "deviations file t: schema_version must be \"valp-kernel-deviations.v1\", found \"v0\""
        );
        let error = DeviationFile::parse(
            r#"{"schema_version":"valp-kernel-deviations.v1","deviations":[],"extra":1}"#,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("deviations file t: unknown field `extra`"),
            "{error}"
        );
    }
}
