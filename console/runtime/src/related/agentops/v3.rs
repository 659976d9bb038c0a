//! `verdict.v3`, the successor AgentOps verdict (schema at boshu2/agentops `d1847ba2…`), read
//! alongside v2 and turned into the same [`Verdict`] the rest of the reader uses.
//!
//! Decoding is strict like v2's: all 25 keys required, no unknown or duplicate keys, ids
//! matching `^[a-zA-Z0-9][a-zA-Z0-9._:-]*$`, digests 64 lowercase hex, refs relative without a
//! `..` segment, context ids and freshness mandatory and non-null. The digest rule is v2's
//! (canonical form without `artifact_digest`, no trailing LF). The PASS rule: author and
//! validator differ, `not_checked` is empty, `checked` is not, and every criterion that is not
//! `EXCLUDED` is `PASS` with at least one receipt, one of them at least.
//!
//! What it becomes: the claim's subject is `final_manifest_digest`, its acceptance
//! `intent_digest`; evidence receipts are carried as unbound `receipt:<hex>` labels (valp does
//! not resolve them); an `EXCLUDED` criterion becomes `unknown` (never `not_applicable`: that
//! needs the scope index to predeclare it, and valp does not resolve the scope index), with
//! why in its reason. The v3-only bindings are kept in [`Binding`].

use serde::Deserialize;
use serde_json::Value;

use super::{Criterion, Finding, Freshness, Outcome, Reason, Verdict, bound, is_bare_hex, typed};

/// The schema this module decodes.
pub const VERDICT_V3: &str = "verdict.v3";

/// The 25 keys of a `verdict.v3` object, all required.
const KEYS: [&str; 25] = [
    "schema_version",
    "invocation_id",
    "judgment_id",
    "intent_ref",
    "intent_digest",
    "proof_identity",
    "schema_digests",
    "before_manifest_ref",
    "before_manifest_digest",
    "final_manifest_ref",
    "final_manifest_digest",
    "scope_index_ref",
    "scope_index_digest",
    "effect_receipt_ref",
    "effect_receipt_digest",
    "author_context_id",
    "validator_context_id",
    "freshness_attestation",
    "verdict",
    "criteria",
    "findings",
    "checked",
    "not_checked",
    "validated_at",
    "artifact_digest",
];

/// A criterion's result in v3 (`EXCLUDED` is new).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Result3 {
    #[serde(rename = "PASS")]
    Pass,
    #[serde(rename = "FAIL")]
    Fail,
    #[serde(rename = "NOT_PROVEN")]
    NotProven,
    #[serde(rename = "EXCLUDED")]
    Excluded,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Criterion3 {
    id: String,
    result: Result3,
    evidence_receipt_digests: Vec<String>,
    reason: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Finding3 {
    id: String,
    summary: String,
    evidence_receipt_digests: Vec<String>,
}

/// `proof_identity`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProofIdentity {
    /// The proof epoch.
    pub epoch: u64,
    /// The proof contract, relative.
    pub contract_ref: String,
    /// Its digest.
    pub contract_digest: String,
    /// The activation transition's digest, if any.
    pub activation_transition_digest: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaDigests {
    verdict: String,
    rpi_report: String,
    subject_manifest: String,
    scope_index: String,
    effect_receipt: String,
    check_receipt: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Verdict3 {
    schema_version: String,
    invocation_id: String,
    judgment_id: String,
    intent_ref: String,
    intent_digest: String,
    proof_identity: ProofIdentity,
    schema_digests: SchemaDigests,
    before_manifest_ref: String,
    before_manifest_digest: String,
    final_manifest_ref: String,
    final_manifest_digest: String,
    scope_index_ref: String,
    scope_index_digest: String,
    effect_receipt_ref: String,
    effect_receipt_digest: String,
    author_context_id: String,
    validator_context_id: String,
    freshness_attestation: Freshness,
    verdict: Outcome,
    criteria: Vec<Criterion3>,
    findings: Vec<Finding3>,
    checked: Vec<String>,
    not_checked: Vec<String>,
    validated_at: String,
    artifact_digest: String,
}

/// What only a v3 verdict binds (all as declared; none of it resolved by valp).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// The invocation.
    pub invocation_id: String,
    /// The judgment.
    pub judgment_id: String,
    /// Where the intent is, relative.
    pub intent_ref: String,
    /// The proof identity.
    pub proof_identity: ProofIdentity,
    /// The subject before the change.
    pub before_manifest_digest: String,
    /// The scope index (`EXCLUDED` would need it resolved).
    pub scope_index_digest: String,
    /// The effect receipt.
    pub effect_receipt_digest: String,
    /// The criteria reported `EXCLUDED` (shown as unknown).
    pub excluded: Vec<String>,
}

fn is_id(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

fn is_ref(text: &str) -> bool {
    !text.is_empty() && !text.starts_with('/') && !text.split('/').any(|part| part == "..")
}

/// Decodes a `verdict.v3` file (see the module documentation).
pub(super) fn decode(name: &str, bytes: &[u8], value: &Value) -> Result<Verdict, Reason> {
    let (object, verdict) = typed::<Verdict3>(bytes, value, &KEYS)?;
    check(&verdict)?;
    bound(name, object, &verdict.artifact_digest)?;
    Ok(normalized(verdict))
}

fn check(verdict: &Verdict3) -> Result<(), Reason> {
    let digests = [
        ("intent_digest", &verdict.intent_digest),
        (
            "proof_identity.contract_digest",
            &verdict.proof_identity.contract_digest,
        ),
        ("before_manifest_digest", &verdict.before_manifest_digest),
        ("final_manifest_digest", &verdict.final_manifest_digest),
        ("scope_index_digest", &verdict.scope_index_digest),
        ("effect_receipt_digest", &verdict.effect_receipt_digest),
        ("artifact_digest", &verdict.artifact_digest),
        ("schema_digests.verdict", &verdict.schema_digests.verdict),
        (
            "schema_digests.rpi_report",
            &verdict.schema_digests.rpi_report,
        ),
        (
            "schema_digests.subject_manifest",
            &verdict.schema_digests.subject_manifest,
        ),
        (
            "schema_digests.scope_index",
            &verdict.schema_digests.scope_index,
        ),
        (
            "schema_digests.effect_receipt",
            &verdict.schema_digests.effect_receipt,
        ),
        (
            "schema_digests.check_receipt",
            &verdict.schema_digests.check_receipt,
        ),
    ];
    if let Some((field, _)) = digests.iter().find(|(_, text)| !is_bare_hex(text)) {
        return Err(Reason::DigestText(field));
    }
    let receipts = verdict
        .criteria
        .iter()
        .flat_map(|c| &c.evidence_receipt_digests)
        .chain(
            verdict
                .findings
                .iter()
                .flat_map(|f| &f.evidence_receipt_digests),
        );
    if receipts.into_iter().any(|digest| !is_bare_hex(digest)) {
        return Err(Reason::DigestText("evidence_receipt_digests"));
    }
    let rule = |text: &str| Err(Reason::Rule(text.to_owned()));
    let ids = [&verdict.invocation_id, &verdict.judgment_id];
    if ids.iter().any(|id| !is_id(id))
        || verdict.criteria.iter().any(|c| !is_id(&c.id))
        || verdict.findings.iter().any(|f| !is_id(&f.id))
    {
        return rule("an id does not match ^[a-zA-Z0-9][a-zA-Z0-9._:-]*$");
    }
    let refs = [
        &verdict.intent_ref,
        &verdict.proof_identity.contract_ref,
        &verdict.before_manifest_ref,
        &verdict.final_manifest_ref,
        &verdict.scope_index_ref,
        &verdict.effect_receipt_ref,
    ];
    if refs.iter().any(|text| !is_ref(text)) {
        return rule("a ref is empty, absolute or has a .. segment");
    }
    if verdict.author_context_id.is_empty() || verdict.validator_context_id.is_empty() {
        return rule("a context id is an empty string");
    }
    if verdict.criteria.is_empty() {
        return rule("no criteria");
    }
    if verdict
        .findings
        .iter()
        .any(|f| f.evidence_receipt_digests.is_empty())
    {
        return rule("a finding has no evidence_receipt_digests");
    }
    if verdict.verdict == Outcome::Pass {
        pass_rule(verdict)
    } else {
        Ok(())
    }
}

/// What a PASS needs beyond the shape.
fn pass_rule(verdict: &Verdict3) -> Result<(), Reason> {
    let rule = |text: &str| Err(Reason::Rule(text.to_owned()));
    let judged: Vec<&Criterion3> = verdict
        .criteria
        .iter()
        .filter(|c| c.result != Result3::Excluded)
        .collect();
    if verdict.author_context_id == verdict.validator_context_id {
        rule("PASS with equal author and validator context ids")
    } else if !verdict.not_checked.is_empty() || verdict.checked.is_empty() {
        rule("PASS with not_checked surfaces or nothing checked")
    } else if judged.is_empty()
        || judged
            .iter()
            .any(|c| c.result != Result3::Pass || c.evidence_receipt_digests.is_empty())
    {
        rule("PASS with a criterion not PASS or without a receipt")
    } else {
        Ok(())
    }
}

fn labels(digests: &[String]) -> Vec<String> {
    digests
        .iter()
        .map(|digest| format!("receipt:{digest}"))
        .collect()
}

fn normalized(verdict: Verdict3) -> Verdict {
    let excluded = verdict
        .criteria
        .iter()
        .filter(|c| c.result == Result3::Excluded)
        .map(|c| c.id.clone())
        .collect();
    let criteria: Vec<Criterion> = verdict
        .criteria
        .into_iter()
        .map(|criterion| Criterion {
            id: criterion.id,
            result: match criterion.result {
                Result3::Pass => Outcome::Pass,
                Result3::Fail => Outcome::Fail,
                Result3::NotProven | Result3::Excluded => Outcome::NotProven,
            },
            evidence_refs: labels(&criterion.evidence_receipt_digests),
            reason: Some(if criterion.result == Result3::Excluded {
                format!(
                    "EXCLUDED, shown as unknown: the scope index is not resolved, so it is not \
                     known to predeclare the exclusion ({})",
                    criterion.reason
                )
            } else {
                criterion.reason
            }),
        })
        .collect();
    let evidence_refs = criteria
        .iter()
        .flat_map(|c| c.evidence_refs.iter().cloned())
        .collect();
    Verdict {
        schema_version: verdict.schema_version,
        acceptance_digest: verdict.intent_digest,
        subject_manifest_digest: verdict.final_manifest_digest,
        author_context_id: Some(verdict.author_context_id),
        validator_context_id: Some(verdict.validator_context_id),
        freshness_attestation: Some(verdict.freshness_attestation),
        verdict: verdict.verdict,
        criteria,
        findings: verdict
            .findings
            .into_iter()
            .map(|finding| Finding {
                id: finding.id,
                summary: finding.summary,
                evidence_refs: labels(&finding.evidence_receipt_digests),
                class: None,
            })
            .collect(),
        evidence_refs,
        checked: verdict.checked,
        not_checked: verdict.not_checked,
        validated_at: verdict.validated_at,
        artifact_digest: verdict.artifact_digest,
        v3: Some(Box::new(Binding {
            invocation_id: verdict.invocation_id,
            judgment_id: verdict.judgment_id,
            intent_ref: verdict.intent_ref,
            proof_identity: verdict.proof_identity,
            before_manifest_digest: verdict.before_manifest_digest,
            scope_index_digest: verdict.scope_index_digest,
            effect_receipt_digest: verdict.effect_receipt_digest,
            excluded,
        })),
    }
}
