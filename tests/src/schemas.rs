//! Validating instances against the JSON Schemas in `schemas/`, offline: a schema's `$ref` to
//! `https://schemas.valp.dev/<path>` is served from the local `schemas/<path>`.
//!
//! Everything here panics on failure: a helper that cannot do its job is a failed test.

#![allow(clippy::panic)] // test support: a failure is a test failure

use std::path::Path;

use jsonschema::{Retrieve, Uri, Validator};
use serde_json::Value;

use crate::workspace_root;

/// Where every valp schema's `$id` starts.
pub const SCHEMA_BASE: &str = "https://schemas.valp.dev/";

/// Serves `https://schemas.valp.dev/<path>` from the local `schemas/<path>`; nothing is fetched.
struct LocalSchemas;

impl Retrieve for LocalSchemas {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let path = uri
            .as_str()
            .strip_prefix(SCHEMA_BASE)
            .ok_or_else(|| format!("not a valp schema: {}", uri.as_str()))?;
        Ok(read_json(&workspace_root().join("schemas").join(path)))
    }
}

/// The JSON file at `path`.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A validator for `schemas/<path>`.
pub fn validator(path: &str) -> Validator {
    let schema = read_json(&workspace_root().join("schemas").join(path));
    jsonschema::options()
        .with_retriever(LocalSchemas)
        .build(&schema)
        .unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Every way `instance` fails `validator`, with where (empty when it validates).
pub fn errors(validator: &Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

/// The observations a supervisor wrote into its attempt folder `dir` (`observations/*.json`),
/// in file-name order; none when the folder does not exist yet.
pub fn attempt_observations(dir: &Path) -> Vec<Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir.join("observations"))
        .map(|entries| entries.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    names.sort();
    names.iter().map(|path| read_json(path)).collect()
}

/// The attempt's record `file` in `dir` validates against `schemas/console/<schema>`.
pub fn assert_record_valid(dir: &Path, file: &str, schema: &str) {
    let found = errors(
        &validator(&format!("console/{schema}")),
        &read_json(&dir.join(file)),
    );
    assert!(found.is_empty(), "{file}: {found:?}");
}
