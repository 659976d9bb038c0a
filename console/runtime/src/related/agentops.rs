//! AgentOps verdicts (`verdict.v2`) read as foreign review evidence, never as VALP reviews.
//!
//! [`ingest_dir`] reads one folder (by default `.agents/ao/verdicts/sha256/`) without writing
//! anything: every `*.json` file is decoded strictly (exact field set of its schema, no unknown
//! or duplicate keys, no trailing data), every `*.intent` file is an intent snapshot. Files that
//! fail are listed as [`Rejection`]s with the file and the exact reason, never repaired.
//! Names starting with `.` or ending in `.tmp` are writes in progress and skipped.
//!
//! For each verdict the reader computes the verification levels it reached
//! ([`Levels`]): `structurally_valid` (schema and the PASS rules), `digest_bound` (the
//! embedded `artifact_digest` equals the recomputed AgentOps canonical digest, and a
//! content-addressed file name equals it too; otherwise the file is refused as
//! digest-unbound), `subject_resolved` (a `subject-manifest.v1` in the folder has that
//! canonical digest and verifies), `intent_resolved` (an `<acceptance_digest>.intent` whose
//! bytes hash to its name is in the folder).
//!
//! The outcome maps exactly ([`Mapped`]): `PASS` -> claim `pass` supported by a foreign
//! review (never a kernel `review_passed`, never Done by itself); `FAIL` -> `fail`;
//! `NOT_PROVEN` -> claim `unknown`, review `blocked`: never pass, never fail. The task a
//! verdict speaks for is only the one named explicitly by the caller; nothing is guessed.
//! Independence is shown as declared: both context ids present and different, or "not
//! established" with why; a missing id is never made up. The validation time is the
//! verdict's `validated_at`, never a file time; `evidence_refs` are shown as unbound labels.

pub mod v3;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// The schema this reader decodes.
pub const VERDICT_V2: &str = "verdict.v2";
/// The subject manifest schema this reader decodes.
pub const MANIFEST_V1: &str = "subject-manifest.v1";
/// Where AgentOps stores verdicts, relative to its workspace.
pub const DEFAULT_DIR: &str = ".agents/ao/verdicts/sha256";
/// The largest file read; AgentOps verdicts are a few kilobytes.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// The fourteen keys a `verdict.v2` object has, all required (nullable ones too).
const VERDICT_KEYS: [&str; 14] = [
    "schema_version",
    "acceptance_digest",
    "subject_manifest_digest",
    "author_context_id",
    "validator_context_id",
    "freshness_attestation",
    "verdict",
    "criteria",
    "findings",
    "evidence_refs",
    "checked",
    "not_checked",
    "validated_at",
    "artifact_digest",
];

/// A verdict outcome, exactly as AgentOps spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Outcome {
    /// `PASS`.
    #[serde(rename = "PASS")]
    Pass,
    /// `FAIL`.
    #[serde(rename = "FAIL")]
    Fail,
    /// `NOT_PROVEN`.
    #[serde(rename = "NOT_PROVEN")]
    NotProven,
}

/// `freshness_attestation`: a declared trust fact, not process isolation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Freshness {
    /// `runtime` or `caller`.
    pub source: FreshnessSource,
    /// Who attests.
    pub attester_identity: String,
}

/// Who declared the freshness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FreshnessSource {
    /// The AgentOps runtime.
    Runtime,
    /// The caller.
    Caller,
}

/// One acceptance criterion's result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Criterion id.
    pub id: String,
    /// Its result.
    pub result: Outcome,
    /// Declared references (unbound labels).
    pub evidence_refs: Vec<String>,
    /// Why, when given.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One finding.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Finding id (`validate.integrity` and `validate.scope` come from the writer itself).
    pub id: String,
    /// What was found.
    pub summary: String,
    /// Declared references (unbound labels).
    pub evidence_refs: Vec<String>,
    /// The stable defect kind, when given.
    #[serde(default)]
    pub class: Option<String>,
}

/// A decoded `verdict.v2`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verdict {
    /// Always `verdict.v2`.
    pub schema_version: String,
    /// SHA-256 (bare hex) of the exact acceptance bytes.
    pub acceptance_digest: String,
    /// Canonical digest of the judged subject manifest.
    pub subject_manifest_digest: String,
    /// The implementing context, as declared.
    pub author_context_id: Option<String>,
    /// The validating context, as declared.
    pub validator_context_id: Option<String>,
    /// The declared freshness.
    pub freshness_attestation: Option<Freshness>,
    /// The outcome.
    pub verdict: Outcome,
    /// Per-criterion results.
    pub criteria: Vec<Criterion>,
    /// Findings.
    pub findings: Vec<Finding>,
    /// Declared references (unbound labels).
    pub evidence_refs: Vec<String>,
    /// Surfaces verified.
    pub checked: Vec<String>,
    /// In-scope surfaces not verified.
    pub not_checked: Vec<String>,
    /// When the validation ran (RFC 3339, as written).
    pub validated_at: String,
    /// The self digest.
    pub artifact_digest: String,
    /// What only a `verdict.v3` carries (`None` for v2).
    #[serde(skip)]
    pub v3: Option<Box<v3::Binding>>,
}

/// One subject manifest entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Relative path.
    pub path: String,
    /// `file`, `symlink` or `deletion`.
    pub kind: EntryKind,
    /// Any executable bit.
    pub executable: bool,
    /// Content digest; required for files and symlinks, forbidden for deletions.
    #[serde(default)]
    pub digest: Option<String>,
}

/// What a manifest entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A path gone since the base manifest.
    Deletion,
}

/// A decoded `subject-manifest.v1`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always `subject-manifest.v1`.
    pub schema_version: String,
    /// What was observed.
    pub declared_roots: Vec<String>,
    /// Excluded prefixes or globs.
    pub exclusions: Vec<String>,
    /// A prior manifest's digest, when given.
    #[serde(default)]
    pub base_manifest_digest: Option<String>,
    /// Entries sorted by path.
    pub entries: Vec<ManifestEntry>,
    /// The canonical digest.
    pub canonical_manifest_digest: String,
    /// Descriptive only: never part of identity, never a reason to believe anything.
    #[serde(default)]
    pub git_metadata: Option<BTreeMap<String, Option<String>>>,
}

/// Why a file was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// The file could not be read.
    #[error("unreadable: {0}")]
    Unreadable(String),
    /// Over [`MAX_FILE_BYTES`].
    #[error("too large: {0} bytes")]
    TooLarge(u64),
    /// Not JSON, or not the schema's exact shape (serde's message names line and column).
    #[error("malformed: {0}")]
    Malformed(String),
    /// A required key is absent.
    #[error("missing field `{0}`")]
    MissingField(&'static str),
    /// A schema this reader does not decode (`rpi-report.v1`, `subject-manifest.v2`, anything
    /// else).
    #[error("not a verdict.v2, verdict.v3 or subject-manifest.v1 file (schema_version {0})")]
    UnknownSchema(String),
    /// A file that is not JSON and not an intent snapshot (a `.agents/council` markdown
    /// verdict.v1 among them: WARN has no v2 meaning).
    #[error("not an AgentOps verdict.v2 file")]
    NotAVerdict,
    /// A digest field is not 64 lowercase hex digits.
    #[error("`{0}` is not 64 lowercase hex digits")]
    DigestText(&'static str),
    /// A rule of the schema is broken (a PASS without its requirements, a deletion with a
    /// digest, an empty id).
    #[error("schema rule: {0}")]
    Rule(String),
    /// The recomputed digest is not the embedded one, or a content-addressed name is not it:
    /// the bytes are not the ones the digest was made of.
    #[error("digest-unbound: {field} says {stated}, the bytes give {recomputed}")]
    DigestUnbound {
        /// Which digest (`artifact_digest`, `canonical_manifest_digest`, `file name`).
        field: &'static str,
        /// What the file states.
        stated: String,
        /// What its bytes give.
        recomputed: String,
    },
}

/// A file that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The file name inside the folder read.
    pub file: String,
    /// Why.
    pub reason: Reason,
}

/// How far a verdict could be verified.
// Four independent facts, not a state: a subject can resolve while the intent does not.
#[expect(
    clippy::struct_excessive_bools,
    reason = "four independent verification facts"
)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Levels {
    /// Schema and PASS rules hold.
    pub structurally_valid: bool,
    /// The embedded digest recomputes (and a content-addressed name matches it).
    pub digest_bound: bool,
    /// A verifying manifest with the subject digest is in the folder.
    pub subject_resolved: bool,
    /// An intent snapshot with the acceptance digest is in the folder.
    pub intent_resolved: bool,
}

impl Levels {
    /// The names of the levels reached, in order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.structurally_valid, "structurally_valid"),
            (self.digest_bound, "digest_bound"),
            (self.subject_resolved, "subject_resolved"),
            (self.intent_resolved, "intent_resolved"),
        ]
        .into_iter()
        .filter_map(|(reached, name)| reached.then_some(name))
        .collect()
    }
}

/// A VALP claim result a foreign result maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimResult {
    /// Supported by a foreign review; not a VALP review, not Done.
    Pass,
    /// Rejected by a foreign review.
    Fail,
    /// Cannot be proven: neither pass nor fail.
    Unknown,
}

/// A VALP review verdict a foreign outcome maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVerdict {
    /// `pass`.
    Pass,
    /// `fail`.
    Fail,
    /// `blocked`: the reviewer could not prove it.
    Blocked,
}

/// The exact mapping of an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapped {
    /// Claim result.
    pub claim: ClaimResult,
    /// Review verdict.
    pub review: ReviewVerdict,
}

/// The one mapping of AgentOps outcomes onto VALP claim results and review verdicts.
pub const fn map_outcome(outcome: Outcome) -> Mapped {
    match outcome {
        Outcome::Pass => Mapped {
            claim: ClaimResult::Pass,
            review: ReviewVerdict::Pass,
        },
        Outcome::Fail => Mapped {
            claim: ClaimResult::Fail,
            review: ReviewVerdict::Fail,
        },
        Outcome::NotProven => Mapped {
            claim: ClaimResult::Unknown,
            review: ReviewVerdict::Blocked,
        },
    }
}

/// Independence of author and validator, as declared and no further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Independence {
    /// Both ids are declared and differ.
    Declared {
        /// The author context.
        author: String,
        /// The validator context.
        validator: String,
    },
    /// Not established, with why.
    NotEstablished(&'static str),
}

/// One verdict taken as foreign review evidence.
#[derive(Debug, Clone)]
pub struct Ingested {
    /// The file name inside the folder.
    pub file: String,
    /// `"sha256:"` + SHA-256 of the file bytes: the VALP evidence content digest.
    pub content_digest: String,
    /// The decoded verdict.
    pub verdict: Verdict,
    /// The exact mapping of its outcome.
    pub mapped: Mapped,
    /// Levels reached.
    pub levels: Levels,
    /// Independence as declared.
    pub independence: Independence,
    /// Whether the file bytes are exactly the canonical form plus LF (what AgentOps writes).
    pub byte_canonical: bool,
    /// The file's bytes as read (the ones every digest above was computed from).
    pub bytes: Vec<u8>,
}

/// Everything one folder held.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Verdicts taken, by file name.
    pub verdicts: Vec<Ingested>,
    /// Verifying subject manifests, by their canonical digest -> file name.
    pub manifests: BTreeMap<String, String>,
    /// Intent snapshots whose bytes hash to their name, by digest -> file name.
    pub intents: BTreeMap<String, String>,
    /// Files not taken.
    pub rejections: Vec<Rejection>,
}

/// Reads `dir` (not recursively) without writing anything.
///
/// # Errors
/// The folder itself cannot be listed.
pub fn ingest_dir(dir: &Path) -> std::io::Result<Report> {
    let mut names: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Writes in progress (`.verdict-*.tmp`, `.intent-*.tmp`) are not corruption.
        if name.starts_with('.') || extension_is(&name, "tmp") {
            continue;
        }
        if entry.file_type()?.is_file() {
            names.push((name, entry.path()));
        }
    }
    names.sort();
    let mut report = Report::default();
    let mut verdicts = Vec::new();
    for (name, path) in names {
        let bytes = match read_capped(&path) {
            Ok(bytes) => bytes,
            Err(reason) => {
                report.rejections.push(Rejection { file: name, reason });
                continue;
            }
        };
        let outcome = if let Some(stem) = name.strip_suffix(".intent") {
            intent(stem, &bytes).map(|digest| {
                report.intents.insert(digest, name.clone());
            })
        } else if extension_is(&name, "json") {
            decode_json(&name, &bytes).map(|decoded| match decoded {
                Decoded::Verdict(verdict) => verdicts.push((name.clone(), bytes, *verdict)),
                Decoded::Manifest(digest) => {
                    report.manifests.insert(digest, name.clone());
                }
            })
        } else {
            Err(Reason::NotAVerdict)
        };
        if let Err(reason) = outcome {
            report.rejections.push(Rejection { file: name, reason });
        }
    }
    for (file, bytes, verdict) in verdicts {
        report.verdicts.push(resolve(
            file,
            &bytes,
            verdict,
            &report.manifests,
            &report.intents,
        ));
    }
    Ok(report)
}

/// Whether `name` ends in `.<extension>`, in any case.
fn extension_is(name: &str, extension: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|found| found.eq_ignore_ascii_case(extension))
}

/// What a JSON file decoded to.
enum Decoded {
    /// A verdict whose digest recomputes.
    Verdict(Box<Verdict>),
    /// A manifest's verified canonical digest.
    Manifest(String),
}

fn read_capped(path: &Path) -> Result<Vec<u8>, Reason> {
    let size = std::fs::metadata(path)
        .map_err(|error| Reason::Unreadable(error.kind().to_string()))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(Reason::TooLarge(size));
    }
    std::fs::read(path).map_err(|error| Reason::Unreadable(error.kind().to_string()))
}

/// An intent snapshot: its name must be the SHA-256 of its bytes.
fn intent(stem: &str, bytes: &[u8]) -> Result<String, Reason> {
    let recomputed = bare_sha256(bytes);
    if stem != recomputed {
        return Err(Reason::DigestUnbound {
            field: "file name",
            stated: stem.to_owned(),
            recomputed,
        });
    }
    Ok(recomputed)
}

fn decode_json(name: &str, bytes: &[u8]) -> Result<Decoded, Reason> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|error| Reason::Malformed(error.to_string()))?;
    let schema = value
        .get("schema_version")
        .map_or_else(|| "absent".to_owned(), Value::to_string);
    match value.get("schema_version").and_then(Value::as_str) {
        Some(VERDICT_V2) => decode_verdict(name, bytes, &value).map(|v| Decoded::Verdict(v.into())),
        Some(MANIFEST_V1) => decode_manifest(bytes, value).map(Decoded::Manifest),
        Some(v3::VERDICT_V3) => v3::decode(name, bytes, &value).map(|v| Decoded::Verdict(v.into())),
        _ => Err(Reason::UnknownSchema(schema)),
    }
}

fn decode_verdict(name: &str, bytes: &[u8], value: &Value) -> Result<Verdict, Reason> {
    let (object, verdict) = typed::<Verdict>(bytes, value, &VERDICT_KEYS)?;
    for (field, text) in [
        ("acceptance_digest", &verdict.acceptance_digest),
        ("subject_manifest_digest", &verdict.subject_manifest_digest),
        ("artifact_digest", &verdict.artifact_digest),
    ] {
        if !is_bare_hex(text) {
            return Err(Reason::DigestText(field));
        }
    }
    check_verdict_rules(&verdict)?;
    bound(name, object, &verdict.artifact_digest)?;
    Ok(verdict)
}

/// A verdict file's object, with every one of `keys` present, and its typed decoding (v2 and
/// v3 alike).
pub(super) fn typed<'v, T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    value: &'v Value,
    keys: &[&'static str],
) -> Result<(&'v serde_json::Map<String, Value>, T), Reason> {
    let object = value
        .as_object()
        .ok_or_else(|| Reason::Malformed("not an object".to_owned()))?;
    // Nullable keys are still required: serde would read an absent one as null.
    if let Some(missing) = keys.iter().find(|key| !object.contains_key(**key)) {
        return Err(Reason::MissingField(missing));
    }
    // Typed decoding from the bytes, not the value: it refuses duplicate keys at any depth.
    let typed =
        serde_json::from_slice(bytes).map_err(|error| Reason::Malformed(error.to_string()))?;
    Ok((object, typed))
}

/// The embedded `artifact_digest` must be the AgentOps canonical digest of the object without
/// it, and a content-addressed file name must be it too (verdict.v2 and verdict.v3 alike).
fn bound(name: &str, object: &serde_json::Map<String, Value>, stated: &str) -> Result<(), Reason> {
    let mut preimage = object.clone();
    preimage.remove("artifact_digest");
    let recomputed = bare_sha256(&canonical(&Value::Object(preimage))?);
    if recomputed != stated {
        return Err(Reason::DigestUnbound {
            field: "artifact_digest",
            stated: stated.to_owned(),
            recomputed,
        });
    }
    if let Some(stem) = name.strip_suffix(".json").filter(|stem| is_bare_hex(stem))
        && stem != recomputed
    {
        return Err(Reason::DigestUnbound {
            field: "file name",
            stated: stem.to_owned(),
            recomputed,
        });
    }
    Ok(())
}

/// The schema's rules beyond shape: non-empty ids and the PASS tightening.
pub(super) fn check_verdict_rules(verdict: &Verdict) -> Result<(), Reason> {
    let empty = |text: &Option<String>| text.as_deref().is_some_and(str::is_empty);
    if empty(&verdict.author_context_id) || empty(&verdict.validator_context_id) {
        return Err(Reason::Rule("a context id is an empty string".to_owned()));
    }
    if verdict.criteria.is_empty() {
        return Err(Reason::Rule("no criteria".to_owned()));
    }
    if verdict.criteria.iter().any(|c| c.id.is_empty()) {
        return Err(Reason::Rule("a criterion id is empty".to_owned()));
    }
    if verdict.findings.iter().any(|f| f.evidence_refs.is_empty()) {
        return Err(Reason::Rule("a finding has no evidence_refs".to_owned()));
    }
    if verdict.verdict != Outcome::Pass {
        return Ok(());
    }
    let problem = if !matches!(independence(verdict), Independence::Declared { .. }) {
        Some("PASS without two distinct declared context ids")
    } else if verdict.freshness_attestation.is_none() {
        Some("PASS without a freshness attestation")
    } else if verdict
        .criteria
        .iter()
        .any(|c| c.result != Outcome::Pass || c.evidence_refs.is_empty())
    {
        Some("PASS with a criterion not PASS or without evidence")
    } else if verdict.evidence_refs.is_empty() || verdict.checked.is_empty() {
        Some("PASS without evidence_refs or checked")
    } else if !verdict.not_checked.is_empty() {
        Some("PASS with not_checked surfaces")
    } else {
        None
    };
    problem.map_or(Ok(()), |problem| Err(Reason::Rule(problem.to_owned())))
}

fn decode_manifest(bytes: &[u8], value: Value) -> Result<String, Reason> {
    let manifest: Manifest =
        serde_json::from_slice(bytes).map_err(|error| Reason::Malformed(error.to_string()))?;
    if !is_bare_hex(&manifest.canonical_manifest_digest) {
        return Err(Reason::DigestText("canonical_manifest_digest"));
    }
    for entry in &manifest.entries {
        let digest_ok = match entry.kind {
            EntryKind::Deletion => entry.digest.is_none(),
            EntryKind::File | EntryKind::Symlink => {
                entry.digest.as_deref().is_some_and(is_bare_hex)
            }
        };
        if !digest_ok {
            return Err(Reason::Rule(format!(
                "entry {}: digest required for files and symlinks, forbidden for deletions",
                entry.path
            )));
        }
    }
    // The later writer's rule: neither the digest itself nor the descriptive git metadata is
    // part of the subject's identity.
    let Value::Object(mut preimage) = value else {
        return Err(Reason::Malformed("not an object".to_owned()));
    };
    preimage.remove("canonical_manifest_digest");
    preimage.remove("git_metadata");
    let recomputed = bare_sha256(&canonical(&Value::Object(preimage))?);
    if recomputed != manifest.canonical_manifest_digest {
        return Err(Reason::DigestUnbound {
            field: "canonical_manifest_digest",
            stated: manifest.canonical_manifest_digest,
            recomputed,
        });
    }
    Ok(recomputed)
}

fn resolve(
    file: String,
    bytes: &[u8],
    verdict: Verdict,
    manifests: &BTreeMap<String, String>,
    intents: &BTreeMap<String, String>,
) -> Ingested {
    let byte_canonical = serde_json::from_slice::<Value>(bytes)
        .ok()
        .and_then(|value| canonical(&value).ok())
        .is_some_and(|mut form| {
            form.push(b'\n');
            form == bytes
        });
    Ingested {
        file,
        content_digest: valp_kernel::canonical::sha256_digest(bytes),
        mapped: map_outcome(verdict.verdict),
        levels: Levels {
            structurally_valid: true,
            digest_bound: true,
            subject_resolved: manifests.contains_key(&verdict.subject_manifest_digest),
            intent_resolved: intents.contains_key(&verdict.acceptance_digest),
        },
        independence: independence(&verdict),
        byte_canonical,
        bytes: bytes.to_vec(),
        verdict,
    }
}

/// Independence exactly as declared: never strengthened, never made up.
pub fn independence(verdict: &Verdict) -> Independence {
    match (&verdict.author_context_id, &verdict.validator_context_id) {
        (None, _) => Independence::NotEstablished("author_context_id is null"),
        (_, None) => Independence::NotEstablished("validator_context_id is null"),
        (Some(author), Some(validator)) if author == validator => {
            Independence::NotEstablished("author and validator context ids are equal")
        }
        (Some(author), Some(validator)) => Independence::Declared {
            author: author.clone(),
            validator: validator.clone(),
        },
    }
}

/// AgentOps canonical bytes: keys sorted by code point, compact, raw UTF-8, no trailing LF
/// (Python `json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`).
/// Integers are written as Python writes them (v3's `proof_identity.epoch`); any other number is
/// refused: no verdict field holds one, and Python and serde render floats differently.
pub(super) fn canonical(value: &Value) -> Result<Vec<u8>, Reason> {
    if has_number(value) {
        return Err(Reason::Rule(
            "a number that is not an integer (no verdict field holds one)".to_owned(),
        ));
    }
    // serde_json's map is a BTreeMap here (no `preserve_order`), so keys come out sorted by
    // code point, and its string escaping is Python's with `ensure_ascii=False`.
    serde_json::to_vec(value).map_err(|error| Reason::Malformed(error.to_string()))
}

fn has_number(value: &Value) -> bool {
    match value {
        Value::Number(number) => !(number.is_i64() || number.is_u64()),
        Value::Array(items) => items.iter().any(has_number),
        Value::Object(map) => map.values().any(has_number),
        Value::Null | Value::Bool(_) | Value::String(_) => false,
    }
}

pub(super) fn bare_sha256(bytes: &[u8]) -> String {
    let digest = valp_kernel::canonical::sha256_digest(bytes);
    digest.strip_prefix("sha256:").unwrap_or(&digest).to_owned()
}

pub(super) fn is_bare_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_exactly() {
        assert_eq!(
            map_outcome(Outcome::Pass),
            Mapped {
                claim: ClaimResult::Pass,
                review: ReviewVerdict::Pass
            }
        );
        assert_eq!(
            map_outcome(Outcome::Fail),
            Mapped {
                claim: ClaimResult::Fail,
                review: ReviewVerdict::Fail
            }
        );
        assert_eq!(
            map_outcome(Outcome::NotProven),
            Mapped {
                claim: ClaimResult::Unknown,
                review: ReviewVerdict::Blocked
            }
        );
    }

    #[test]
    fn numbers_other_than_integers_are_refused_in_the_canonical_form() {
        let value: Value = serde_json::json!({"a": [1.5]});
        assert_eq!(
            canonical(&value),
            Err(Reason::Rule(
                "a number that is not an integer (no verdict field holds one)".to_owned()
            ))
        );
        let value: Value = serde_json::json!({"b": 1, "a": [-2]});
        assert_eq!(canonical(&value), Ok(br#"{"a":[-2],"b":1}"#.to_vec()));
    }
}
