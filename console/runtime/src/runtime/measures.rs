//! What the System measures for the dimension gates (RFC 0002 §10.1) at closure: the values
//! of [`crate::plan::dimensions::MEASURES`] that the task's journal and its final verification
//! round show. Only accepted entries count (the journal holds nothing else). A failed attempt
//! is an `attempt_failed` (budget spent) or an `attempt_fenced` (the runtime fences an attempt
//! only when it failed with budget left, or a soft item degrades); a timeout is a failed attempt
//! whose evidence holds the process supervisor's observation `blocked` with reason `timeout`
//! (read back from the evidence store, checked as an observation). A measure valp
//! cannot take (`cost.*`: no agent channel reports cost or tokens) is left out, so a rule over
//! it makes its gate `unverifiable`; it is never reported as zero.

use std::collections::BTreeMap;

use valp_kernel::{EventKind, Int};
use valp_store::{ControlRoot, StoreError};

use crate::abi::{AdapterObservation, ObservationStatus};

/// How the final verification round ended: checks that passed and checks that did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Round {
    /// Checks that completed.
    pub passed: usize,
    /// Checks that failed, timed out or could not be read.
    pub failed: usize,
}

/// The measured values for task `task_id`, whose final verification round is `round`.
pub fn measure(
    root: &ControlRoot,
    task_id: &str,
    round: Round,
) -> Result<BTreeMap<String, Int>, StoreError> {
    let mut counts: BTreeMap<EventKind, Int> = BTreeMap::new();
    let mut attempts: BTreeMap<String, Int> = BTreeMap::new();
    let mut failures = Vec::new();
    valp_store::effects::journal_entries(&root.layout().task_dir(task_id), |entry| {
        let Some(kind) = entry.event.kind.known() else {
            return;
        };
        *counts.entry(kind).or_default() += 1;
        if kind == EventKind::AttemptCreated
            && let Some(item) = &entry.event.work_item_id
        {
            *attempts.entry(item.value().to_owned()).or_default() += 1;
        }
        if matches!(kind, EventKind::AttemptFailed | EventKind::AttemptFenced) {
            failures.push(entry.evidence_set);
        }
    })?;
    let failed_attempts = Int::try_from(failures.len()).unwrap_or(Int::MAX);
    let mut timeouts: Int = 0;
    for evidence_set in failures {
        let mut timed_out = false;
        for evidence in evidence_set {
            timed_out |= is_timeout(&root.blobs().get(&evidence.content_digest)?);
        }
        timeouts += Int::from(timed_out);
    }
    let count = |kind| counts.get(&kind).copied().unwrap_or(0);
    let passed = Int::try_from(round.passed).unwrap_or(Int::MAX);
    let failed = Int::try_from(round.failed).unwrap_or(Int::MAX);
    let mut values = BTreeMap::from([
        ("quality.verification_passed", passed),
        ("quality.verification_failed", failed),
        (
            "quality.review_rejections",
            count(EventKind::ReviewRejected),
        ),
        ("experience.review_passed", count(EventKind::ReviewPassed)),
        (
            "stability.retries",
            attempts.values().map(|n| n.saturating_sub(1)).sum(),
        ),
        ("stability.attempts_failed", failed_attempts),
        ("stability.timeouts", timeouts),
        (
            "stability.verification_failures",
            count(EventKind::VerificationFailed),
        ),
    ]);
    // A percentage of no checks means nothing: not measured.
    if passed + failed > 0 {
        values.insert(
            "quality.verification_percent",
            passed * 100 / (passed + failed),
        );
    }
    Ok(values
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect())
}

/// Whether `bytes` are an adapter observation that reports a timeout.
fn is_timeout(bytes: &[u8]) -> bool {
    AdapterObservation::decode(bytes).is_ok_and(|observation| {
        observation.status == ObservationStatus::Blocked
            && observation.reason.as_deref() == Some("timeout")
    })
}
