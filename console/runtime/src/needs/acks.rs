//! The Leader's acknowledgements of needs: `console/acknowledged.json` under the control root.
//!
//! ```json
//! {"acknowledged":[{"at":"2026-12-02T07:00:00.000Z","key":"review:demo-build:r9"}],
//!  "schema_version":"valp-console-acknowledgements.v1"}
//! ```
//!
//! (`schemas/console/acknowledgements.schema.json`; written as one line, keys sorted, LF,
//! replaced atomically.) The file is the Leader's note to themself, not protocol truth: it
//! changes no task. Reading is strict and a bad file is never rewritten: every problem is an
//! [`AcksError`] naming the file and the rule, the queue shows every need unacknowledged, and
//! acknowledging is refused until the file is fixed or removed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{Map, Value};
use valp_store::ControlRoot;

use crate::clock::Timestamp;

/// The file's name in the control root's `console/` folder.
pub const FILE: &str = "acknowledged.json";
/// Its schema version.
pub const SCHEMA_VERSION: &str = "valp-console-acknowledgements.v1";

/// An acknowledgements file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {rule}")]
pub struct AcksError {
    /// The file.
    pub file: String,
    /// The rule it breaks.
    pub rule: String,
}

impl AcksError {
    /// The code a refusal carries.
    pub const CODE: &'static str = "VALP-CONSOLE-ACKNOWLEDGEMENTS";
}

/// The acknowledgements file of one control root.
pub struct Acks {
    root: ControlRoot,
    path: PathBuf,
}

impl Acks {
    /// The file under `root`.
    pub fn new(root: &ControlRoot) -> Self {
        Self {
            root: root.clone(),
            path: root.console_file(FILE),
        }
    }

    fn error(&self, rule: impl Into<String>) -> AcksError {
        AcksError {
            file: self.path.display().to_string(),
            rule: rule.into(),
        }
    }

    /// Every acknowledged key with when it was acknowledged; a missing file is none.
    pub fn read(&self) -> Result<BTreeMap<String, Timestamp>, AcksError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => parse(&bytes).map_err(|rule| self.error(rule)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(error) => Err(self.error(format!("cannot be read: {error}"))),
        }
    }

    /// Acknowledges `key` at `at` (or takes it back with `None`), keeping only the other keys
    /// `keep` accepts, and replaces the file.
    pub fn set(
        &self,
        key: &str,
        at: Option<Timestamp>,
        keep: impl Fn(&str) -> bool,
    ) -> Result<(), AcksError> {
        let mut keys = self.read()?;
        keys.retain(|kept, _| keep(kept));
        match at {
            Some(at) => {
                keys.insert(key.to_owned(), at);
            }
            None => {
                keys.remove(key);
            }
        }
        self.root
            .write_console_file(FILE, &write(&keys))
            .map_err(|error| self.error(format!("cannot be written: {error}")))
    }
}

/// The file's bytes for `keys`.
fn write(keys: &BTreeMap<String, Timestamp>) -> Vec<u8> {
    let acknowledged: Vec<Value> = keys
        .iter()
        .map(|(key, at)| serde_json::json!({"at": at.to_rfc3339(), "key": key}))
        .collect();
    let mut bytes = serde_json::to_vec(&serde_json::json!({
        "acknowledged": acknowledged,
        "schema_version": SCHEMA_VERSION,
    }))
    .unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Reads the file's bytes; an error is the rule broken, naming the member.
fn parse(bytes: &[u8]) -> Result<BTreeMap<String, Timestamp>, String> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|error| format!("not JSON: {error}"))?;
    let object = value
        .as_object()
        .ok_or_else(|| "must be a JSON object".to_owned())?;
    only(object, &["acknowledged", "schema_version"], "")?;
    if object.get("schema_version").and_then(Value::as_str) != Some(SCHEMA_VERSION) {
        return Err(format!("schema_version: must be \"{SCHEMA_VERSION}\""));
    }
    let entries = object
        .get("acknowledged")
        .and_then(Value::as_array)
        .ok_or_else(|| "acknowledged: must be an array".to_owned())?;
    let mut keys = BTreeMap::new();
    for (index, entry) in entries.iter().enumerate() {
        let at_path = format!("acknowledged[{index}]");
        let entry = entry
            .as_object()
            .ok_or_else(|| format!("{at_path}: must be an object"))?;
        only(entry, &["at", "key"], &format!("{at_path}."))?;
        let key = entry
            .get("key")
            .and_then(Value::as_str)
            .filter(|key| !key.is_empty())
            .ok_or_else(|| format!("{at_path}.key: must be a non-empty string"))?;
        let at = entry
            .get("at")
            .and_then(Value::as_str)
            .and_then(Timestamp::parse_rfc3339)
            .ok_or_else(|| {
                format!("{at_path}.at: must be a UTC time like 2026-12-02T07:00:00.000Z")
            })?;
        if keys.insert(key.to_owned(), at).is_some() {
            return Err(format!("{at_path}.key: {key:?} is listed twice"));
        }
    }
    Ok(keys)
}

/// Refuses a member of `object` not in `allowed`.
fn only(object: &Map<String, Value>, allowed: &[&str], prefix: &str) -> Result<(), String> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(format!(
            "{prefix}{key}: unknown member (members: {})",
            allowed.join(", ")
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::{SCHEMA_VERSION, parse, write};
    use crate::clock::Timestamp;
    use std::collections::BTreeMap;

    #[test]
    fn what_is_written_reads_back() {
        let mut keys = BTreeMap::new();
        keys.insert(
            "review:t:r9".to_owned(),
            Timestamp::from_millis(1_700_000_000_000),
        );
        let bytes = write(&keys);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!(
                "{{\"acknowledged\":[{{\"at\":\"2023-11-14T22:13:20.000Z\",\"key\":\"review:t:r9\"}}],\
                 \"schema_version\":\"{SCHEMA_VERSION}\"}}\n"
            )
        );
        assert_eq!(parse(&bytes).unwrap(), keys);
    }

    #[test]
    fn every_malformed_file_names_the_rule() {
        let cases: [(&str, &str); 9] = [
            ("[]", "must be a JSON object"),
            (
                "{\"schema_version\":\"v0\",\"acknowledged\":[]}",
                "schema_version: must be \"valp-console-acknowledgements.v1\"",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\"}",
                "acknowledged: must be an array",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[],\"x\":1}",
                "x: unknown member (members: acknowledged, schema_version)",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[3]}",
                "acknowledged[0]: must be an object",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[{\"key\":\"\",\"at\":\"2026-12-02T07:00:00.000Z\"}]}",
                "acknowledged[0].key: must be a non-empty string",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[{\"key\":\"k\",\"at\":\"yesterday\"}]}",
                "acknowledged[0].at: must be a UTC time like 2026-12-02T07:00:00.000Z",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[{\"key\":\"k\",\"at\":\"2026-12-02T07:00:00.000Z\"},{\"key\":\"k\",\"at\":\"2026-12-02T07:00:00.000Z\"}]}",
                "acknowledged[1].key: \"k\" is listed twice",
            ),
            (
                "{\"schema_version\":\"valp-console-acknowledgements.v1\",\"acknowledged\":[{\"key\":\"k\",\"at\":\"2026-12-02T07:00:00.000Z\",\"by\":\"me\"}]}",
                "acknowledged[0].by: unknown member (members: at, key)",
            ),
        ];
        for (text, rule) in cases {
            assert_eq!(parse(text.as_bytes()).unwrap_err(), rule, "{text}");
        }
        assert!(
            parse(b"{\"acknowledged\":")
                .unwrap_err()
                .starts_with("not JSON: EOF while parsing"),
        );
    }
}
