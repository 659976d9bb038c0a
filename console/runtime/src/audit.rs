//! `valp audit`'s gates over a task folder in the VALP reference repository's task-folder
//! layout (`state.json`, `routing.json`, `dispatch-receipts.jsonl`, `evidence-status.json`,
//! `correction-cycle.json`, `agents/…`, `evidence/…`): reads the files (a missing or malformed
//! file reads as empty, as the reference audit does, so hostile input gives a verdict, never a
//! crash) and judges each gate. The correction-cycle rule itself is [`correction::judge`].
//! Tasks of the control root are audited by [`task::audit_task`].

pub mod correction;
pub mod cycle_file;
pub mod derive;
pub mod fold;
pub mod fold_cache;
pub mod fold_check;
pub mod task;

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use correction::{Reason, Verdict};

/// Evidence statuses that are a correction signal (seed 003: "evidence marked invalid,
/// superseded, rejected, or blocked").
const SIGNAL_STATUSES: [&str; 4] = ["invalid", "superseded", "rejected", "blocked"];

/// One gate's line of an audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateResult {
    /// The gate's name (`done_matrix`, `correction_cycle`, `journal_integrity`, `evidence`).
    pub gate: &'static str,
    /// The verdict.
    pub verdict: Verdict,
    /// The reason's category (stable, for tools).
    pub category: &'static str,
    /// The reason, for a person (unsanitized).
    pub detail: String,
}

/// The audit of one task folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderAudit {
    /// The folder.
    pub dir: PathBuf,
    /// One result per gate, in a fixed order.
    pub gates: Vec<GateResult>,
}

impl FolderAudit {
    /// Whether any gate failed.
    pub fn failed(&self) -> bool {
        self.gates.iter().any(|gate| gate.verdict == Verdict::Fail)
    }
}

/// The files of a reference-layout task folder that the gates read.
struct Folder {
    dir: PathBuf,
    state: Map<String, Value>,
    routing: Map<String, Value>,
    evidence_status: Map<String, Value>,
    receipts: Vec<Map<String, Value>>,
    cycle: Value,
}

impl Folder {
    fn read(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            state: object_file(&dir.join("state.json")),
            routing: object_file(&dir.join("routing.json")),
            evidence_status: object_file(&dir.join("evidence-status.json")),
            receipts: jsonl_objects(&dir.join("dispatch-receipts.jsonl")),
            cycle: Value::Object(object_file(&dir.join(correction::FILE_NAME))),
        }
    }

    /// The correction signals this layout records: a `dispatch_blocked` receipt, and evidence
    /// whose status is one of [`SIGNAL_STATUSES`] (listed by ref, sorted).
    fn signals(&self) -> Vec<String> {
        let mut signals = Vec::new();
        if self
            .receipts
            .iter()
            .any(|receipt| receipt.get("event").and_then(Value::as_str) == Some("dispatch_blocked"))
        {
            signals.push("dispatch_blocked".to_owned());
        }
        let flagged: Vec<String> = self
            .evidence_statuses()
            .into_iter()
            .filter(|(_, status)| SIGNAL_STATUSES.contains(&status.as_str()))
            .map(|(reference, status)| format!("{reference}={status}"))
            .collect();
        if !flagged.is_empty() {
            signals.push(format!("evidence_status:{}", flagged.join(", ")));
        }
        signals
    }

    /// `evidence-status.json`'s statuses by ref, lowercased (`valid` when a record has none):
    /// `evidence` (or, when that is empty, `items`) as a map of ref to status or `{status}`,
    /// or as a list of `{ref, status}`.
    fn evidence_statuses(&self) -> std::collections::BTreeMap<String, String> {
        let records = [
            self.evidence_status.get("evidence"),
            self.evidence_status.get("items"),
        ]
        .into_iter()
        .flatten()
        .find(|value| truthy(value));
        let status_of = |record: &Value| match record {
            Value::String(status) => Some(status.to_lowercase()),
            Value::Object(map) => Some(match map.get("status") {
                Some(value) if truthy(value) => text(value).to_lowercase(),
                _ => "valid".to_owned(),
            }),
            _ => None,
        };
        match records {
            Some(Value::Object(map)) => map
                .iter()
                .filter_map(|(reference, record)| Some((reference.clone(), status_of(record)?)))
                .collect(),
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(Value::as_object)
                .filter_map(|record| {
                    let reference = record.get("ref").filter(|value| truthy(value))?;
                    let status = match record.get("status") {
                        Some(value) if truthy(value) => text(value).to_lowercase(),
                        _ => "valid".to_owned(),
                    };
                    Some((text(reference), status))
                })
                .collect(),
            _ => std::collections::BTreeMap::new(),
        }
    }

    /// A cycle declared in `state.json` (`correction_cycle`, `gates.correction`) or
    /// `routing.json` (`correction_cycle`).
    fn declared(&self) -> bool {
        let gates = self.state.get("gates").and_then(Value::as_object);
        [
            self.state.get("correction_cycle"),
            self.routing.get("correction_cycle"),
            gates.and_then(|gates| gates.get("correction")),
        ]
        .into_iter()
        .flatten()
        .any(truthy)
    }

    fn exists(&self, reference: &str) -> bool {
        self.dir.join(reference).exists()
    }

    /// The expected evidence the latest receipt of each agent names (`expected_refs`).
    fn expected_refs(&self) -> Vec<String> {
        let mut latest: std::collections::BTreeMap<String, &Map<String, Value>> =
            std::collections::BTreeMap::new();
        for receipt in &self.receipts {
            if let Some(agent) = receipt.get("agent").filter(|value| truthy(value)) {
                latest.insert(text(agent), receipt);
            }
        }
        let mut refs: Vec<String> = latest
            .values()
            .filter_map(|receipt| receipt.get("expected_refs").and_then(Value::as_array))
            .flatten()
            .map(text)
            .collect();
        refs.sort();
        refs.dedup();
        refs
    }
}

/// Audits one reference-layout task folder.
pub fn audit_folder(dir: &Path) -> FolderAudit {
    let folder = Folder::read(dir);
    let signals = folder.signals();
    let finding = correction::judge(
        &correction::Inputs {
            signals: &signals,
            declared: folder.declared(),
            cycle: Some(&folder.cycle),
        },
        &|reference| folder.exists(reference),
    );
    let gates = vec![
        GateResult {
            gate: "done_matrix",
            verdict: Verdict::Skip,
            category: "reference_layout",
            detail: "a reference task folder has no valp Done policy".to_owned(),
        },
        GateResult {
            gate: "correction_cycle",
            verdict: finding.reason.verdict(),
            category: finding.reason.as_str(),
            detail: finding.detail,
        },
        GateResult {
            gate: "journal_integrity",
            verdict: Verdict::Skip,
            category: "reference_layout",
            detail: "a reference task folder has no valp journal (import it with valp import)"
                .to_owned(),
        },
        evidence_gate(&folder),
    ];
    FolderAudit {
        dir: dir.to_path_buf(),
        gates,
    }
}

/// Expected evidence is present and valid: every ref the latest receipts expect is a safe path
/// that exists and whose status is not a correction signal.
fn evidence_gate(folder: &Folder) -> GateResult {
    let refs = folder.expected_refs();
    let result = |verdict, category, detail: String| GateResult {
        gate: "evidence",
        verdict,
        category,
        detail,
    };
    if refs.is_empty() {
        return result(
            Verdict::Skip,
            "no_expected_refs",
            "no expected evidence refs in dispatch-receipts.jsonl".to_owned(),
        );
    }
    let unsafe_refs = correction::unsafe_refs(&refs);
    if !unsafe_refs.is_empty() {
        return result(
            Verdict::Fail,
            "unsafe_ref",
            format!(
                "expected evidence refs must be task-relative safe paths: {}",
                unsafe_refs.join(", ")
            ),
        );
    }
    let missing: Vec<&str> = refs
        .iter()
        .map(String::as_str)
        .filter(|r| !folder.exists(r))
        .collect();
    if !missing.is_empty() {
        return result(
            Verdict::Fail,
            "missing_ref",
            format!("missing expected evidence: {}", missing.join(", ")),
        );
    }
    let statuses = folder.evidence_statuses();
    let invalid: Vec<String> = refs
        .iter()
        .filter_map(|r| {
            let status = statuses.get(r)?;
            SIGNAL_STATUSES
                .contains(&status.as_str())
                .then(|| format!("{r}={status}"))
        })
        .collect();
    if !invalid.is_empty() {
        return result(
            Verdict::Fail,
            "invalid_evidence",
            format!("expected evidence is not valid: {}", invalid.join(", ")),
        );
    }
    result(
        Verdict::Pass,
        "present",
        format!("all {} expected evidence refs exist", refs.len()),
    )
}

/// Python's truthiness, which the reference layout's optional fields are read by.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(flag) => *flag,
        Value::Number(number) => number.as_f64().is_some_and(|n| n != 0.0),
        Value::String(text) => !text.is_empty(),
        Value::Array(list) => !list.is_empty(),
        Value::Object(map) => !map.is_empty(),
    }
}

/// A value as text: a string as is, anything else as its JSON text.
fn text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A JSON object file; missing, unreadable, malformed or not an object reads as empty.
fn object_file(path: &Path) -> Map<String, Value> {
    std::fs::read(path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .and_then(|value| match value {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default()
}

/// A JSON Lines file's object lines; other lines are skipped.
fn jsonl_objects(path: &Path) -> Vec<Map<String, Value>> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| match serde_json::from_str::<Value>(line.trim()) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        })
        .collect()
}
