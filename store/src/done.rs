//! The Done gate, enforced by the store (`kernel/DEVIATIONS.md`, D2).
//!
//! The kernel's reducer accepts `recording_completed -> done` without evidence, as the reference
//! does; the store does not write one unless [`valp_kernel::done`]'s gate passes, and verifying a
//! journal re-runs the gate for every `recording_completed` it holds.
//!
//! **Where the gate's inputs are.** The Done policy is frozen with the task's first accepted
//! entry (revision 1, normally `routing_validation_started`): its EvidenceSet carries the
//! policy as evidence `done-policy-…`, whose blob (in the root's evidence store) is the
//! canonical `valp-kernel-done-policy.v1` (or `.v2`, with dimension gates) record. A `recording_completed` must carry that same
//! evidence (id and digest) and exactly one closure, evidence `done-closure-…`, whose blob is a
//! canonical `valp-kernel-done-closure.v1` (`.v2` for a v2 policy) record naming the policy's digest. Every evidence id
//! the closure cites must be in the same EvidenceSet.
//!
//! **Append.** A proposal the kernel would accept is checked against the State before it: the
//! revision-1 entry's policy evidence must be unique and its blob a valid policy whose
//! dimension-policy version and operators (v2) are supported (so a task can never freeze a
//! policy that no closure could satisfy:
//! `done_policy_unsupported:VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION:<version>` or
//! `…-OPERATOR:<rule>:<operator>`), and a `recording_completed` must pass the gate. A refusal
//! writes nothing to the journal, is logged to `rejections.jsonl` with code `VALP-E-DONE-GATE`,
//! and is returned as [`StoreError::DoneGate`] with the reasons. Proposals the kernel refuses
//! (or answers as duplicates) are left to the kernel.
//!
//! **Open.** Every recorded `recording_completed` is gated again against the State before it;
//! its blobs must be present and match their digests. A failure refuses the journal
//! (`VALP-E-KERNEL-STORE-CORRUPT`, naming file, line and the reasons).
//!
//! **Reasons** (besides the matrix's, see [`valp_kernel::done`]): `done_policy_missing`,
//! `done_policy_ambiguous`, `done_policy_not_bound:<id>`, `done_policy_changed:<id>`,
//! `done_closure_missing`, `done_closure_ambiguous` (where the evidence is), then for each of the
//! two blobs (`<label>` = `done_policy` or `done_closure`): `<label>_blob_missing:<digest>`,
//! `<label>_blob_corrupt:<digest>` (the stored bytes do not hash to it),
//! `<label>_digest_invalid:<digest>`, `<label>_invalid:<why>` (not canonical, or not the record),
//! and `evidence_store_unavailable` for a guard without an evidence store.
//!
//! **Correction cycle** (seed 003, [`valp_kernel::done::correction`]). The guard keeps the
//! correction signals of the entries it has seen. Under a `valp-kernel-done-policy.v3`, a
//! `recording_completed` after a signal must also bind one `correction-cycle-…` evidence
//! whose blob (canonical JSON: the task's `correction-cycle.json`) satisfies the seed's audit
//! rule; on append its refs are looked up in the task folder ([`DoneGuard::in_task`]; a guard
//! without one adds `task_folder_unavailable`), on open only what the journal binds is judged
//! (the blob, by digest). Blob reasons use the label `correction_cycle`. Without a signal, and
//! under a v1 or v2 policy, nothing changes: tasks frozen before verify as they did.
//!
//! **Reference journals.** A journal whose revision 1 carries no `done-policy-…` evidence was
//! written under the reference's rule (an imported reference store: the reference enforces no
//! gate). The store never appends `recording_completed` to it (`done_policy_missing`); one it
//! already holds verifies by replay alone and is reported by [`DoneGuard::ungated_done`] (and
//! by `valp verify` as a warning).

use std::path::{Path, PathBuf};
use valp_kernel::canonical::decode_canonical;
use valp_kernel::decode::DecodeError;
use valp_kernel::dimension;

use valp_kernel::done::{
    self, DoneGate, DonePolicy, POLICY_EVIDENCE_PREFIX, correction, decode_done_closure,
    decode_done_policy, evidence_with_prefix,
};
use valp_kernel::json::Value;
use valp_kernel::live::LiveState;
use valp_kernel::{Event, EventKind, Evidence, StateBody, Variant};

use crate::blobs::BlobStore;
use crate::error::StoreError;
use crate::machine::{Guard, Refusal};

/// The Done gate over the control root's evidence store; with the epoch fence, the task
/// journal's guard ([`TaskGuard`](crate::machine::TaskGuard)).
#[derive(Debug, Clone, Default)]
pub struct DoneGuard {
    /// Where policy and closure blobs are read; without one every gated `recording_completed`
    /// is refused (`evidence_store_unavailable`).
    blobs: Option<BlobStore>,
    /// The `done-policy-…` evidence of the journal's revision-1 entry.
    frozen: Vec<Evidence>,
    /// The revision of a `recording_completed` held without a Done policy (reference rule).
    ungated_done: Option<u64>,
    /// The correction signals of the entries observed, each once, in order.
    signals: Vec<String>,
    /// The task's folder, where a correction cycle's refs are looked up.
    task_dir: Option<PathBuf>,
}

impl DoneGuard {
    /// A guard reading blobs from `blobs` (the root's evidence store), before any entry.
    pub fn new(blobs: BlobStore) -> Self {
        Self {
            blobs: Some(blobs),
            frozen: Vec::new(),
            ungated_done: None,
            signals: Vec::new(),
            task_dir: None,
        }
    }

    /// The same guard, looking a correction cycle's refs up in `dir` (the task's folder).
    #[must_use]
    pub fn in_task(mut self, dir: &Path) -> Self {
        self.task_dir = Some(dir.to_path_buf());
        self
    }

    /// The same evidence store, nothing observed yet (to re-verify a journal from its start).
    #[must_use]
    pub fn restart(&self) -> Self {
        Self {
            blobs: self.blobs.clone(),
            frozen: Vec::new(),
            ungated_done: None,
            signals: Vec::new(),
            task_dir: self.task_dir.clone(),
        }
    }

    /// The same guard as it stood after the entries a snapshot stands for.
    #[must_use]
    pub(crate) fn restored(mut self, parts: &crate::snapshot::GuardParts) -> Self {
        self.frozen.clone_from(&parts.frozen_policy);
        self.ungated_done = parts.ungated_done;
        self.signals.clone_from(&parts.correction_signals);
        self
    }

    /// What a snapshot keeps of this guard.
    pub(crate) fn parts(&self) -> crate::snapshot::GuardParts {
        crate::snapshot::GuardParts {
            correction_signals: self.signals.clone(),
            frozen_policy: self.frozen.clone(),
            ungated_done: self.ungated_done,
        }
    }

    /// The correction signals of the entries observed so far, each once, in order.
    pub fn correction_signals(&self) -> &[String] {
        &self.signals
    }

    /// The frozen Done policy's evidence (from revision 1): normally one, empty for a journal
    /// without a Done policy.
    pub fn frozen_policy(&self) -> &[Evidence] {
        &self.frozen
    }

    /// The revision (entry number) of a `recording_completed` this journal holds without a
    /// Done policy (accepted by replay under the reference's rule), if any.
    pub fn ungated_done(&self) -> Option<u64> {
        self.ungated_done
    }

    /// Runs the Done gate for a `recording_completed` with `evidence_set`, against the State
    /// `before` it: locates the frozen policy and the closure, reads and decodes their blobs and
    /// evaluates the matrix. Errors are I/O failures other than a missing or damaged blob (those
    /// are reasons).
    pub fn gate(
        &self,
        before: &StateBody,
        evidence_set: &[Evidence],
    ) -> Result<DoneGate, StoreError> {
        self.gate_with(before, evidence_set, Refs::Checked)
    }

    /// [`DoneGuard::gate`], looking a correction cycle's refs up in the task folder or not.
    fn gate_with(
        &self,
        before: &StateBody,
        evidence_set: &[Evidence],
        refs: Refs,
    ) -> Result<DoneGate, StoreError> {
        let located = match done::locate(&self.frozen, evidence_set) {
            Ok(located) => located,
            Err(reasons) => return Ok(DoneGate::refused(reasons)),
        };
        let mut reasons = Vec::new();
        let policy = self.read(
            located.policy,
            "done_policy",
            decode_done_policy,
            &mut reasons,
        )?;
        let closure = self.read(
            located.closure,
            "done_closure",
            decode_done_closure,
            &mut reasons,
        )?;
        Ok(match (policy, closure) {
            (Some(policy), Some(closure)) => {
                let gate = done::evaluate_bound(before, evidence_set, &policy, &closure);
                let mut reasons = gate.reasons;
                reasons.extend(self.correction(before, evidence_set, &policy, refs)?);
                DoneGate::from_findings(reasons, gate.notes)
            }
            _ => DoneGate::refused(reasons),
        })
    }

    /// The correction-cycle reasons of a `recording_completed` with `evidence_set` under
    /// `policy` (none unless it is v3 and a signal was observed).
    fn correction(
        &self,
        before: &StateBody,
        evidence_set: &[Evidence],
        policy: &DonePolicy,
        refs: Refs,
    ) -> Result<Vec<String>, StoreError> {
        if !correction::required(policy, &self.signals) {
            return Ok(Vec::new());
        }
        let evidence = match correction::locate(evidence_set, &self.signals) {
            Ok(evidence) => evidence,
            Err(reason) => return Ok(vec![reason]),
        };
        let mut reasons = Vec::new();
        let Some(cycle) = self.read(
            evidence,
            "correction_cycle",
            |v| Ok(v.clone()),
            &mut reasons,
        )?
        else {
            return Ok(reasons);
        };
        let task = before.task_id.value();
        Ok(match (refs, &self.task_dir) {
            (Refs::Bound, _) => correction::judge(task, &cycle, &|_| true),
            (Refs::Checked, Some(dir)) => correction::judge(task, &cycle, &|reference| {
                dir.join(reference.trim()).exists()
            }),
            (Refs::Checked, None) => vec!["task_folder_unavailable".to_owned()],
        })
    }

    /// Reasons to refuse freezing the Done policy evidence of a revision-1 proposal: more than
    /// one policy, a policy blob that is missing, damaged or not a valid policy, or a v2 policy
    /// whose dimension version or an operator is unsupported (no closure could pass it).
    fn freezing(&self, evidence_set: &[Evidence]) -> Result<Vec<String>, StoreError> {
        let mut reasons = Vec::new();
        match evidence_with_prefix(evidence_set, POLICY_EVIDENCE_PREFIX).as_slice() {
            [] => {}
            [policy] => {
                let decoded = self.read(policy, "done_policy", decode_done_policy, &mut reasons)?;
                if let Some(dimensions) = decoded.and_then(|policy| policy.dimensions) {
                    reasons.extend(
                        dimension::unsupported(&dimensions)
                            .into_iter()
                            .map(|reason| format!("done_policy_unsupported:{reason}")),
                    );
                }
            }
            _ => reasons.push("done_policy_ambiguous".to_owned()),
        }
        Ok(reasons)
    }

    /// Reads, verifies and decodes the blob of `evidence`; a blob that is missing, damaged or
    /// invalid adds a reason (`<label>_blob_missing:<digest>`, `<label>_blob_corrupt:<digest>`,
    /// `<label>_digest_invalid:<digest>`, `<label>_invalid:<why>`) and gives `None`.
    fn read<T>(
        &self,
        evidence: &Evidence,
        label: &str,
        decode: fn(&Value) -> Result<T, DecodeError>,
        reasons: &mut Vec<String>,
    ) -> Result<Option<T>, StoreError> {
        let Some(blobs) = &self.blobs else {
            reasons.push("evidence_store_unavailable".to_owned());
            return Ok(None);
        };
        let digest = &evidence.content_digest;
        let bytes = match blobs.get(digest) {
            Ok(bytes) => bytes,
            Err(StoreError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                reasons.push(format!("{label}_blob_missing:{digest}"));
                return Ok(None);
            }
            Err(StoreError::Corrupt { .. }) => {
                reasons.push(format!("{label}_blob_corrupt:{digest}"));
                return Ok(None);
            }
            Err(StoreError::Invalid(_)) => {
                reasons.push(format!("{label}_digest_invalid:{digest}"));
                return Ok(None);
            }
            Err(other) => return Err(other),
        };
        let decoded = decode_canonical(&bytes)
            .map_err(|error| error.to_string())
            .and_then(|value| decode(&value).map_err(|error| error.to_string()));
        match decoded {
            Ok(record) => Ok(Some(record)),
            Err(why) => {
                reasons.push(format!("{label}_invalid:{why}"));
                Ok(None)
            }
        }
    }
}

/// Whether a correction cycle's refs are looked up in the task folder: when a Done is
/// written (and when the runtime asks before proposing one), not when a recorded Done is
/// verified, which judges only what the journal binds (an exported or imported journal has no
/// task folder; `valp audit` checks the refs of a folder).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refs {
    Checked,
    Bound,
}

fn is_recording_completed(event: &Event) -> bool {
    event.kind.known() == Some(EventKind::RecordingCompleted)
}

impl Guard<LiveState> for DoneGuard {
    fn admit(
        &self,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        let recording = is_recording_completed(event);
        let freezing = live.revision() == 0
            && !evidence_with_prefix(evidence_set, POLICY_EVIDENCE_PREFIX).is_empty();
        if !(recording || freezing) || live.preview(event, evidence_set) != Variant::Accepted {
            return Ok(());
        }
        if freezing {
            let reasons = self.freezing(evidence_set).map_err(Refusal::Store)?;
            if !reasons.is_empty() {
                return Err(Refusal::DoneGate(reasons));
            }
        }
        if recording {
            let gate = self
                .gate(live.body(), evidence_set)
                .map_err(Refusal::Store)?;
            if !gate.passed {
                return Err(Refusal::DoneGate(gate.reasons));
            }
        }
        Ok(())
    }

    fn verify(
        &self,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        if !is_recording_completed(event)
            || self.frozen.is_empty()
            || live.preview(event, evidence_set) != Variant::Accepted
        {
            // Not a gated Done, or not one the kernel accepts (replay then refuses the entry).
            return Ok(());
        }
        let gate = self
            .gate_with(live.body(), evidence_set, Refs::Bound)
            .map_err(Refusal::Store)?;
        if gate.passed {
            Ok(())
        } else {
            Err(Refusal::DoneGate(gate.reasons))
        }
    }

    fn observe(&mut self, seq: u64, event: &Event, evidence_set: &[Evidence]) {
        if seq == 1 {
            self.frozen = evidence_with_prefix(evidence_set, POLICY_EVIDENCE_PREFIX)
                .into_iter()
                .cloned()
                .collect();
        }
        if is_recording_completed(event) && self.frozen.is_empty() {
            self.ungated_done = Some(seq);
        }
        if let Some(signal) = correction::signal(event)
            && !self.signals.iter().any(|seen| seen == signal)
        {
            self.signals.push(signal.to_owned());
        }
    }
}
