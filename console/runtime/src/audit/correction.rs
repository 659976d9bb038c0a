//! The correction cycle's audit rule (seed 003, "Correction Cycle Evidence"): a pure function
//! from the task's correction signals, whether a cycle is declared, the parsed
//! `correction-cycle.json` and a "does this task-relative path exist" probe to one verdict.
//!
//! The order of the checks and the reason categories follow the reference audit
//! (`valp_cli/audit.py`, `check_correction_cycle`), so a task folder gets the same verdict and
//! category from both: skip without a signal, a declaration or a file; then the file, its
//! `schema_version`, `rounds` being a list, at least one round and `final_outcome: fixed` (these
//! two only when a signal exists), every ref task-relative and safe, and, once fixed, every ref
//! present.

use serde_json::{Map, Value};

/// The `schema_version` a correction cycle must carry.
pub const SCHEMA_VERSION: &str = valp_kernel::done::correction::CYCLE_SCHEMA;

/// The file's name in a task folder.
pub const FILE_NAME: &str = "correction-cycle.json";

/// A gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The gate holds.
    Pass,
    /// The gate refuses Done.
    Fail,
    /// The gate does not apply.
    Skip,
}

impl Verdict {
    /// The word printed and written to JSON.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pass => "pass",
            Self::Fail => "fail",
            Self::Skip => "skip",
        }
    }
}

/// Why the correction-cycle gate decided as it did; the category is what `valp audit --json`
/// reports as `category` and what tests compare with the reference audit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// No signal, no declaration and no file: the gate is skipped.
    NoSignal,
    /// A signal or a declaration exists but `correction-cycle.json` is missing (or is not a
    /// non-empty JSON object).
    MissingFile,
    /// `schema_version` is not `valp-correction-cycle.v1`.
    WrongSchemaVersion,
    /// `rounds` is not a list.
    RoundsNotList,
    /// A signal exists and no round is recorded.
    NoRounds,
    /// A signal exists and `final_outcome` is not `fixed`.
    OutcomeNotFixed,
    /// A rejected, evidence or final evidence ref is not a task-relative safe path.
    UnsafeRef,
    /// The cycle is fixed but a safe ref names no file in the task folder.
    MissingRef,
    /// A signal exists and the cycle is recorded and fixed.
    Fixed,
    /// No signal, but a cycle is declared or present and well formed.
    Declared,
}

impl Reason {
    /// The category's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::NoSignal => "no_signal",
            Self::MissingFile => "missing_file",
            Self::WrongSchemaVersion => "wrong_schema_version",
            Self::RoundsNotList => "rounds_not_list",
            Self::NoRounds => "no_rounds",
            Self::OutcomeNotFixed => "outcome_not_fixed",
            Self::UnsafeRef => "unsafe_ref",
            Self::MissingRef => "missing_ref",
            Self::Fixed => "fixed",
            Self::Declared => "declared",
        }
    }

    /// The verdict this reason carries.
    pub const fn verdict(self) -> Verdict {
        match self {
            Self::NoSignal => Verdict::Skip,
            Self::Fixed | Self::Declared => Verdict::Pass,
            _ => Verdict::Fail,
        }
    }
}

/// The gate's finding: the reason and the text naming what is missing or wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Why.
    pub reason: Reason,
    /// What, for a person (unsanitized: it holds refs from the file).
    pub detail: String,
}

impl Finding {
    fn new(reason: Reason, detail: impl Into<String>) -> Self {
        Self {
            reason,
            detail: detail.into(),
        }
    }
}

/// What the rule reads about one task.
pub struct Inputs<'a> {
    /// The correction signals found, each as a short label (`dispatch_blocked`,
    /// `evidence_status:agents/x.md=superseded`).
    pub signals: &'a [String],
    /// A correction cycle is declared elsewhere in the task's records.
    pub declared: bool,
    /// The parsed `correction-cycle.json`, `None` when absent or unreadable.
    pub cycle: Option<&'a Value>,
}

/// Judges one task's correction cycle; `exists` answers whether a task-relative safe path
/// names something in the task folder.
pub fn judge(inputs: &Inputs<'_>, exists: &dyn Fn(&str) -> bool) -> Finding {
    // An empty object counts as absent, as the reference reads a falsy dict.
    let cycle = inputs
        .cycle
        .and_then(Value::as_object)
        .filter(|map| !map.is_empty());
    let signals = inputs.signals;
    let Some(cycle) = cycle else {
        if signals.is_empty() && !inputs.declared {
            return Finding::new(Reason::NoSignal, "no correction cycle signals found");
        }
        let named = if signals.is_empty() {
            "declared correction cycle".to_owned()
        } else {
            signals.join(", ")
        };
        return Finding::new(
            Reason::MissingFile,
            format!("missing {FILE_NAME} for: {named}"),
        );
    };
    if cycle.get("schema_version").and_then(Value::as_str) != Some(SCHEMA_VERSION) {
        return Finding::new(
            Reason::WrongSchemaVersion,
            format!(
                "{FILE_NAME} has a wrong or missing schema_version (expected {SCHEMA_VERSION})"
            ),
        );
    }
    let Some(rounds) = cycle.get("rounds").and_then(Value::as_array) else {
        return Finding::new(
            Reason::RoundsNotList,
            format!("{FILE_NAME} rounds must be a list"),
        );
    };
    let outcome = field_text(cycle, "final_outcome").to_lowercase();
    if !signals.is_empty() && rounds.is_empty() {
        return Finding::new(
            Reason::NoRounds,
            format!(
                "the correction cycle has no rounds for: {}",
                signals.join(", ")
            ),
        );
    }
    if !signals.is_empty() && outcome != "fixed" {
        let got = if outcome.is_empty() {
            "missing"
        } else {
            &outcome
        };
        return Finding::new(
            Reason::OutcomeNotFixed,
            format!("final_outcome must be fixed before Done; got {got}"),
        );
    }
    if let Some(finding) = judge_refs(cycle, rounds, outcome == "fixed", exists) {
        return finding;
    }
    if signals.is_empty() {
        let shown = if outcome.is_empty() {
            "missing"
        } else {
            &outcome
        };
        Finding::new(
            Reason::Declared,
            format!("correction cycle declared with final_outcome={shown}"),
        )
    } else {
        Finding::new(
            Reason::Fixed,
            format!(
                "correction cycle recorded and fixed: {}",
                signals.join(", ")
            ),
        )
    }
}

/// The ref checks: every ref safe, and once the cycle is fixed, every ref present.
fn judge_refs(
    cycle: &Map<String, Value>,
    rounds: &[Value],
    fixed: bool,
    exists: &dyn Fn(&str) -> bool,
) -> Option<Finding> {
    let refs = correction_refs(rounds, cycle.get("final_evidence_refs"));
    let unsafe_found = unsafe_refs(&refs);
    if !unsafe_found.is_empty() {
        return Some(Finding::new(
            Reason::UnsafeRef,
            format!(
                "correction evidence refs must be task-relative safe paths: {}",
                unsafe_found.join(", ")
            ),
        ));
    }
    let mut missing: Vec<&str> = refs
        .iter()
        .map(String::as_str)
        .filter(|r| !exists(r))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    (fixed && !missing.is_empty()).then(|| {
        Finding::new(
            Reason::MissingRef,
            format!(
                "correction evidence refs are missing: {}",
                missing.join(", ")
            ),
        )
    })
}

/// The refs that are not task-relative safe paths, in their order.
pub fn unsafe_refs(refs: &[String]) -> Vec<&str> {
    refs.iter()
        .map(String::as_str)
        .filter(|r| !is_safe_task_ref(r))
        .collect()
}

/// A field as text: a string as is, absent/null/false/empty as empty, anything else as its
/// JSON text (the reference converts every value with `str`).
fn field_text(map: &Map<String, Value>, key: &str) -> String {
    match map.get(key) {
        None | Some(Value::Null | Value::Bool(false)) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// Every ref the rule checks: each round's `evidence_refs` and `rejected_refs`, then the
/// `final_evidence_refs`; lists only (anything else is ignored, as the reference does).
fn correction_refs(rounds: &[Value], final_refs: Option<&Value>) -> Vec<String> {
    let fields = rounds
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|round| {
            ["evidence_refs", "rejected_refs"]
                .into_iter()
                .filter_map(|field| round.get(field))
        });
    fields
        .chain(final_refs)
        .filter_map(Value::as_array)
        .flatten()
        .map(|value| match value {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

pub use valp_kernel::done::correction::is_safe_task_ref;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fixed_cycle() -> Value {
        json!({
            "schema_version": SCHEMA_VERSION,
            "task_id": "TASK-001",
            "status": "fixed",
            "rounds": [{
                "round": 1,
                "trigger": "evidence_superseded",
                "owner": "codex",
                "status": "fixed",
                "rejected_refs": ["agents/codex/draft-evidence.md"],
                "evidence_refs": ["agents/codex/evidence.md"],
            }],
            "final_outcome": "fixed",
            "final_evidence_refs": ["evidence/verification.md"],
        })
    }

    fn signal() -> Vec<String> {
        vec!["dispatch_blocked".to_owned()]
    }

    fn judge_with(signals: &[String], cycle: Option<&Value>, exists: bool) -> Finding {
        judge(
            &Inputs {
                signals,
                declared: false,
                cycle,
            },
            &|_| exists,
        )
    }

    #[test]
    fn no_signal_skips_and_a_signal_without_a_file_fails() {
        assert_eq!(judge_with(&[], None, true).reason, Reason::NoSignal);
        assert_eq!(Reason::NoSignal.verdict(), Verdict::Skip);
        let missing = judge_with(&signal(), None, true);
        assert_eq!(missing.reason, Reason::MissingFile);
        assert_eq!(
            missing.detail,
            "missing correction-cycle.json for: dispatch_blocked"
        );
        // An empty object is no record.
        assert_eq!(
            judge_with(&signal(), Some(&json!({})), true).reason,
            Reason::MissingFile
        );
        let declared = judge(
            &Inputs {
                signals: &[],
                declared: true,
                cycle: None,
            },
            &|_| true,
        );
        assert_eq!(declared.reason, Reason::MissingFile);
        assert_eq!(
            declared.detail,
            "missing correction-cycle.json for: declared correction cycle"
        );
    }

    #[test]
    fn every_gate_failure_is_named() {
        let mut cycle = fixed_cycle();
        cycle["schema_version"] = json!("valp-correction-cycle.v0");
        assert_eq!(
            judge_with(&signal(), Some(&cycle), true).reason,
            Reason::WrongSchemaVersion
        );
        let mut cycle = fixed_cycle();
        cycle["rounds"] = json!({});
        assert_eq!(
            judge_with(&signal(), Some(&cycle), true).reason,
            Reason::RoundsNotList
        );
        let mut cycle = fixed_cycle();
        cycle["rounds"] = json!([]);
        let none = judge_with(&signal(), Some(&cycle), true);
        assert_eq!(none.reason, Reason::NoRounds);
        assert_eq!(
            none.detail,
            "the correction cycle has no rounds for: dispatch_blocked"
        );
        for outcome in [json!("blocked"), json!("escalated"), json!(null)] {
            let mut cycle = fixed_cycle();
            cycle["final_outcome"] = outcome;
            assert_eq!(
                judge_with(&signal(), Some(&cycle), true).reason,
                Reason::OutcomeNotFixed
            );
        }
        for bad in ["../x", "/etc/passwd", "agents/../../x", "a\\b", " ", "a\nb"] {
            let mut cycle = fixed_cycle();
            cycle["rounds"][0]["evidence_refs"] = json!([bad]);
            let finding = judge_with(&signal(), Some(&cycle), true);
            assert_eq!(finding.reason, Reason::UnsafeRef, "{bad:?}");
        }
        let missing = judge_with(&signal(), Some(&fixed_cycle()), false);
        assert_eq!(missing.reason, Reason::MissingRef);
        assert_eq!(
            missing.detail,
            "correction evidence refs are missing: agents/codex/draft-evidence.md, \
             agents/codex/evidence.md, evidence/verification.md"
        );
    }

    #[test]
    fn a_fixed_cycle_with_present_refs_passes() {
        let finding = judge_with(&signal(), Some(&fixed_cycle()), true);
        assert_eq!(finding.reason, Reason::Fixed);
        assert_eq!(finding.reason.verdict(), Verdict::Pass);
        // Without a signal an unfixed cycle that exists is only declared, not refused.
        let mut cycle = fixed_cycle();
        cycle["final_outcome"] = json!("blocked");
        assert_eq!(
            judge_with(&[], Some(&cycle), false).reason,
            Reason::Declared
        );
    }

    #[test]
    fn safe_refs_are_task_relative() {
        assert!(is_safe_task_ref("agents/codex/evidence.md"));
        assert!(is_safe_task_ref("./evidence/v.md"));
        assert!(!is_safe_task_ref(""));
        assert!(!is_safe_task_ref("../x"));
        assert!(!is_safe_task_ref("/x"));
    }
}
