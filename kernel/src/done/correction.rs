//! The correction-cycle part of the Done gate (seed 003, "Correction Cycle Evidence"), which a
//! `valp-kernel-done-policy.v3` adds: pure, the store and the runtime supply what it reads.
//!
//! **Signals.** [`signal`] names the seed signal an accepted event shows (the same map the
//! runtime's derivation of `correction-cycle.json` uses): `attempt_fenced`, `attempt_failed`,
//! `work_item_failed` and `attempt_cancelled` for `runtime_failed` are `runtime_failed`;
//! `work_item_blocked` and `task_blocked` `dispatch_blocked`; `verification_failed`;
//! `review_rejected` `review_finding`; `approval_denied` `approval_blocked`; a
//! `redirect_authorized` that supersedes work items `evidence_superseded`.
//!
//! **The rule.** Under a v3 policy, when the history before `recording_completed` holds a
//! signal, its EvidenceSet must bind exactly one `correction-cycle-…` evidence whose blob is the
//! task's `correction-cycle.json`, and [`judge`] refuses unless the seed's audit rule holds.
//! Each failure is one blocking reason, in this order:
//!
//! | check | reason |
//! |---|---|
//! | the cycle is bound | `correction_cycle_missing:<signals>` |
//! | only one is bound | `correction_cycle_ambiguous` |
//! | its blob is a JSON object | `correction_cycle_invalid:<why>` |
//! | `schema_version` is `valp-correction-cycle.v1` | `correction_cycle_schema:<found or missing>` |
//! | it is this task's | `correction_cycle_task:<found or missing>` |
//! | `rounds` is a list | `correction_cycle_rounds_not_list` |
//! | at least one round | `correction_cycle_no_rounds` |
//! | `final_outcome` is `fixed` | `correction_cycle_outcome:<found or missing>` |
//! | every ref is a task-relative safe path | `correction_cycle_unsafe_ref:<ref>` |
//! | every safe ref exists in the task folder | `correction_cycle_missing_ref:<ref>` |
//!
//! The refs are each round's `rejected_refs` and `evidence_refs` and the cycle's
//! `final_evidence_refs`. Without a signal the part is skipped; under a v1 or v2 policy it
//! never applies (those tasks keep the rule they were frozen under).

use crate::json::Value;
use crate::model::{Event, EventKind, Evidence, IdentityKind};

use super::evidence_with_prefix;

/// Evidence ids of a bound correction cycle start with this.
pub const CYCLE_EVIDENCE_PREFIX: &str = "correction-cycle-";
/// The `schema_version` a correction cycle must carry.
pub const CYCLE_SCHEMA: &str = "valp-correction-cycle.v1";

/// The seed signal an event of `kind` shows, if any; `control_reason` is the event's control
/// reason, `supersedes` whether it supersedes work items.
pub fn signal_of(
    kind: EventKind,
    control_reason: Option<&str>,
    supersedes: bool,
) -> Option<&'static str> {
    Some(match kind {
        EventKind::AttemptFenced | EventKind::AttemptFailed | EventKind::WorkItemFailed => {
            "runtime_failed"
        }
        EventKind::AttemptCancelled if control_reason == Some("runtime_failed") => "runtime_failed",
        EventKind::WorkItemBlocked | EventKind::TaskBlocked => "dispatch_blocked",
        EventKind::VerificationFailed => "verification_failed",
        EventKind::ReviewRejected => "review_finding",
        EventKind::ApprovalDenied => "approval_blocked",
        EventKind::RedirectAuthorized if supersedes => "evidence_superseded",
        _ => return None,
    })
}

/// [`signal_of`] for an accepted event.
pub fn signal(event: &Event) -> Option<&'static str> {
    signal_of(
        event.kind.known()?,
        event
            .control_reason
            .as_ref()
            .map(crate::model::vocabulary::Open::<crate::model::ControlReason>::as_str),
        event
            .superseded_work_item_ids
            .iter()
            .any(|id| id.is(IdentityKind::WorkItem)),
    )
}

/// Whether `policy`'s Done needs the correction cycle, given the `signals` of the history
/// before `recording_completed`: a v3 policy and at least one signal.
pub fn required(policy: &super::DonePolicy, signals: &[String]) -> bool {
    policy.correction_cycle && !signals.is_empty()
}

/// The one `correction-cycle-…` evidence of a `recording_completed` EvidenceSet, or the reason
/// it cannot be found (`signals` name what made it required).
pub fn locate<'a>(
    evidence_set: &'a [Evidence],
    signals: &[String],
) -> Result<&'a Evidence, String> {
    match evidence_with_prefix(evidence_set, CYCLE_EVIDENCE_PREFIX).as_slice() {
        [] => Err(format!("correction_cycle_missing:{}", signals.join(","))),
        [cycle] => Ok(cycle),
        _ => Err("correction_cycle_ambiguous".to_owned()),
    }
}

/// Judges a bound correction cycle of `task_id` by the seed's audit rule; `exists` answers
/// whether a task-relative safe path names something in the task folder. The blocking reasons,
/// empty when the cycle satisfies the rule.
pub fn judge(task_id: &str, cycle: &Value, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    let Some(map) = cycle.as_object() else {
        return vec![format!(
            "correction_cycle_invalid:not an object but {}",
            cycle.type_name()
        )];
    };
    let text = |key: &str| match map.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => "missing".to_owned(),
        Some(other) => other.type_name().to_owned(),
    };
    let schema = text("schema_version");
    if schema != CYCLE_SCHEMA {
        return vec![format!("correction_cycle_schema:{schema}")];
    }
    let mut reasons = Vec::new();
    let task = text("task_id");
    if task != task_id {
        reasons.push(format!("correction_cycle_task:{task}"));
    }
    let Some(Value::Array(rounds)) = map.get("rounds") else {
        reasons.push("correction_cycle_rounds_not_list".to_owned());
        return reasons;
    };
    if rounds.is_empty() {
        reasons.push("correction_cycle_no_rounds".to_owned());
    }
    let outcome = text("final_outcome");
    if outcome != "fixed" {
        reasons.push(format!("correction_cycle_outcome:{outcome}"));
    }
    let mut refs = Vec::new();
    for round in rounds.iter().filter_map(Value::as_object) {
        for field in ["rejected_refs", "evidence_refs"] {
            collect_refs(round.get(field), &mut refs);
        }
    }
    collect_refs(map.get("final_evidence_refs"), &mut refs);
    refs.sort_unstable();
    refs.dedup();
    for reference in &refs {
        let Ok(reference) = reference else {
            reasons.push("correction_cycle_unsafe_ref:<not a string>".to_owned());
            continue;
        };
        if !is_safe_task_ref(reference) {
            reasons.push(format!("correction_cycle_unsafe_ref:{reference}"));
        } else if !exists(reference) {
            reasons.push(format!("correction_cycle_missing_ref:{reference}"));
        }
    }
    reasons
}

/// The elements of a ref list (`Err` for an element that is not a string).
fn collect_refs(list: Option<&Value>, refs: &mut Vec<Result<String, ()>>) {
    if let Some(Value::Array(items)) = list {
        refs.extend(
            items
                .iter()
                .map(|item| item.as_str().map(str::to_owned).ok_or(())),
        );
    }
}

/// A task-relative POSIX path that cannot leave the task folder: not empty (after trimming),
/// not absolute, no backslash, no line break, no `..` component.
pub fn is_safe_task_ref(reference: &str) -> bool {
    let trimmed = reference.trim();
    !trimmed.is_empty()
        && !trimmed.starts_with('/')
        && !trimmed.contains(['\\', '\n', '\r'])
        && !trimmed.split('/').any(|part| part == "..")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::{Canonical, decode_canonical};
    use crate::done::{DonePolicy, POLICY_SCHEMA_V3, decode_done_policy};
    use crate::json::parse;

    fn policy(correction_cycle: bool) -> DonePolicy {
        DonePolicy {
            criteria: Vec::new(),
            skippable_optional_items: false,
            degradable_soft_items: Vec::new(),
            dimensions: None,
            correction_cycle,
        }
    }

    #[test]
    fn a_v3_policy_round_trips_and_names_the_cycle_version() {
        let bytes = policy(true).canonical_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!(
                "{{\"correction_cycle\":\"{CYCLE_SCHEMA}\",\"criteria\":[],\
                 \"degradable_soft_items\":[],\"schema_version\":\"{POLICY_SCHEMA_V3}\",\
                 \"skippable_optional_items\":false}}\n"
            )
        );
        let value = decode_canonical(&bytes).unwrap();
        assert_eq!(decode_done_policy(&value).unwrap(), policy(true));
        // v1 stays byte for byte what it was.
        assert!(
            !String::from_utf8(policy(false).canonical_bytes())
                .unwrap()
                .contains("correction_cycle")
        );
        let other = parse(
            "{\"correction_cycle\":\"valp-correction-cycle.v2\",\"criteria\":[],\
             \"degradable_soft_items\":[],\"schema_version\":\"valp-kernel-done-policy.v3\",\
             \"skippable_optional_items\":false}",
        )
        .unwrap();
        assert_eq!(
            decode_done_policy(&other).unwrap_err().to_string(),
            "policy.correction_cycle: schema_version must be \"valp-correction-cycle.v1\", \
             found \"valp-correction-cycle.v2\""
        );
    }

    #[test]
    fn the_rule_applies_to_a_v3_policy_with_a_signal_only() {
        let signals = vec!["runtime_failed".to_owned()];
        assert!(required(&policy(true), &signals));
        assert!(!required(&policy(true), &[]));
        assert!(!required(&policy(false), &signals));
    }

    #[test]
    fn each_signal_maps_to_its_seed_name() {
        let cases = [
            (
                EventKind::AttemptFenced,
                None,
                false,
                Some("runtime_failed"),
            ),
            (
                EventKind::AttemptFailed,
                None,
                false,
                Some("runtime_failed"),
            ),
            (
                EventKind::WorkItemFailed,
                None,
                false,
                Some("runtime_failed"),
            ),
            (
                EventKind::AttemptCancelled,
                Some("runtime_failed"),
                false,
                Some("runtime_failed"),
            ),
            (
                EventKind::AttemptCancelled,
                Some("leader_cancel"),
                false,
                None,
            ),
            (
                EventKind::WorkItemBlocked,
                None,
                false,
                Some("dispatch_blocked"),
            ),
            (
                EventKind::TaskBlocked,
                None,
                false,
                Some("dispatch_blocked"),
            ),
            (
                EventKind::VerificationFailed,
                None,
                false,
                Some("verification_failed"),
            ),
            (
                EventKind::ReviewRejected,
                None,
                false,
                Some("review_finding"),
            ),
            (
                EventKind::ApprovalDenied,
                None,
                false,
                Some("approval_blocked"),
            ),
            (
                EventKind::RedirectAuthorized,
                None,
                true,
                Some("evidence_superseded"),
            ),
            (EventKind::RedirectAuthorized, None, false, None),
            (EventKind::AttemptCompleted, None, false, None),
        ];
        for (kind, reason, supersedes, expected) in cases {
            assert_eq!(signal_of(kind, reason, supersedes), expected, "{kind:?}");
        }
    }

    #[test]
    fn judge_names_each_failure() {
        let judged = |text: &str, exists: bool| judge("t", &parse(text).unwrap(), &|_| exists);
        assert_eq!(
            judged("[]", true),
            ["correction_cycle_invalid:not an object but array"]
        );
        assert_eq!(judged("{}", true), ["correction_cycle_schema:missing"]);
        let head = format!("\"schema_version\":\"{CYCLE_SCHEMA}\",\"task_id\":\"t\"");
        assert_eq!(
            judged(&format!("{{{head},\"rounds\":{{}}}}"), true),
            ["correction_cycle_rounds_not_list"]
        );
        assert_eq!(
            judged(&format!("{{{head},\"rounds\":[]}}"), true),
            [
                "correction_cycle_no_rounds",
                "correction_cycle_outcome:missing"
            ]
        );
        let cycle = format!(
            "{{{head},\"rounds\":[{{\"evidence_refs\":[\"a.md\",7]}}],\
             \"final_outcome\":\"fixed\",\"final_evidence_refs\":[\"a.md\"]}}"
        );
        assert_eq!(
            judged(&cycle, false),
            [
                "correction_cycle_missing_ref:a.md",
                "correction_cycle_unsafe_ref:<not a string>"
            ]
        );
    }
}
