//! The effect record, `valp-kernel-effect-record.v1`: its canonical form, its strict decoding
//! and its rules (`schemas/console/effect-record.schema.json` plus what a schema cannot say:
//! the record's own chain, digest and effect id).

use std::collections::BTreeMap;

use valp_kernel::canonical::{Canonical, form_digest, is_digest};
use valp_kernel::json::write::Fields;
use valp_kernel::json::{Number, Value};
use valp_kernel::reduce::ADAPTER_CANCEL_PREFIX;

use crate::layout::is_safe_relative;

/// `valp-kernel-effect-record.v1`
pub const EFFECT_SCHEMA: &str = "valp-kernel-effect-record.v1";

/// How an obligation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The adapter confirmed (proof: its final observation).
    Fulfilled {
        /// The proof file, relative to the control root.
        proof_ref: String,
        /// Its digest.
        proof_digest: String,
    },
    /// It could not be carried out.
    Blocked {
        /// Why.
        reason: String,
    },
}

/// One record (`valp-kernel-effect-record.v1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectRecord {
    /// [`EFFECT_SCHEMA`]
    pub schema_version: String,
    /// [`effect_id`] of the obligation.
    pub effect_id: String,
    /// The obligation, as the kernel's Result raised it.
    pub obligation: String,
    /// `fulfilled` or `blocked`.
    pub status: String,
    /// The proof (fulfilled) or empty.
    pub proof_ref: String,
    /// Its digest (fulfilled) or empty.
    pub proof_digest: String,
    /// Why (blocked) or empty.
    pub reason: String,
    /// 1, 2, … in ledger order.
    pub ledger_revision: u64,
    /// The previous record's digest ([`empty_ledger_digest`] for the first).
    pub prior_record_digest: String,
    /// `sha256:` of this record without this member.
    pub record_digest: String,
}

/// The members of a record, in canonical order, and whether each is the integer one.
const MEMBERS: [(&str, bool); 10] = [
    ("effect_id", false),
    ("ledger_revision", true),
    ("obligation", false),
    ("prior_record_digest", false),
    ("proof_digest", false),
    ("proof_ref", false),
    ("reason", false),
    ("record_digest", false),
    ("schema_version", false),
    ("status", false),
];

impl EffectRecord {
    /// The record of `outcome` for `obligation`, chained after `prior` (the last record).
    pub fn new(obligation: &str, outcome: &Outcome, prior: Option<&Self>) -> Self {
        let (status, proof_ref, proof_digest, reason) = match outcome {
            Outcome::Fulfilled {
                proof_ref,
                proof_digest,
            } => ("fulfilled", proof_ref.as_str(), proof_digest.as_str(), ""),
            Outcome::Blocked { reason } => ("blocked", "", "", reason.as_str()),
        };
        let mut record = Self {
            schema_version: EFFECT_SCHEMA.to_owned(),
            effect_id: effect_id(obligation),
            obligation: obligation.to_owned(),
            status: status.to_owned(),
            proof_ref: proof_ref.to_owned(),
            proof_digest: proof_digest.to_owned(),
            reason: reason.to_owned(),
            ledger_revision: prior.map_or(1, |prior| prior.ledger_revision + 1),
            prior_record_digest: prior
                .map_or_else(empty_ledger_digest, |prior| prior.record_digest.clone()),
            record_digest: String::new(),
        };
        record.record_digest = record.own_digest();
        record
    }

    /// How the obligation ended.
    pub fn outcome(&self) -> Outcome {
        if self.status == "fulfilled" {
            Outcome::Fulfilled {
                proof_ref: self.proof_ref.clone(),
                proof_digest: self.proof_digest.clone(),
            }
        } else {
            Outcome::Blocked {
                reason: self.reason.clone(),
            }
        }
    }

    fn write_members(&self, out: &mut Vec<u8>, with_digest: bool) {
        let mut fields = Fields::begin(out);
        fields.str("effect_id", &self.effect_id);
        fields.int("ledger_revision", i128::from(self.ledger_revision));
        fields.str("obligation", &self.obligation);
        fields.str("prior_record_digest", &self.prior_record_digest);
        fields.str("proof_digest", &self.proof_digest);
        fields.str("proof_ref", &self.proof_ref);
        fields.str("reason", &self.reason);
        if with_digest {
            fields.str("record_digest", &self.record_digest);
        }
        fields.str("schema_version", &self.schema_version);
        fields.str("status", &self.status);
        fields.end();
    }

    fn own_digest(&self) -> String {
        form_digest(|out| self.write_members(out, false))
    }

    /// Decodes a record with exactly the v1 members and types (its rules are checked by
    /// [`EffectRecord::check`]).
    pub fn decode(value: &Value) -> Result<Self, String> {
        let Value::Object(members) = value else {
            return Err(format!(
                "an effect record is a JSON object, found {}",
                value.type_name()
            ));
        };
        if let Some(unknown) = members
            .keys()
            .find(|key| !MEMBERS.iter().any(|(name, _)| name == key))
        {
            return Err(format!("unknown member {unknown:?}"));
        }
        let mut texts = BTreeMap::new();
        let mut revision = 0;
        for (name, integer) in MEMBERS {
            match (members.get(name), integer) {
                (None, _) => return Err(format!("missing member {name:?}")),
                (Some(Value::Number(Number::Int(number))), true) => {
                    revision = u64::try_from(*number)
                        .map_err(|_| format!("{name} must be a non-negative integer"))?;
                }
                (Some(Value::String(text)), false) => {
                    texts.insert(name, text.clone());
                }
                (Some(other), _) => {
                    let expected = if integer { "an integer" } else { "a string" };
                    return Err(format!(
                        "{name} must be {expected}, found {}",
                        other.type_name()
                    ));
                }
            }
        }
        let mut take = |name| texts.remove(name).unwrap_or_default();
        Ok(Self {
            schema_version: take("schema_version"),
            effect_id: take("effect_id"),
            obligation: take("obligation"),
            status: take("status"),
            proof_ref: take("proof_ref"),
            proof_digest: take("proof_digest"),
            reason: take("reason"),
            ledger_revision: revision,
            prior_record_digest: take("prior_record_digest"),
            record_digest: take("record_digest"),
        })
    }

    /// Checks the record's own rules and that it follows `prior` (the previous record) in the
    /// ledger; the first broken rule, named.
    pub fn check(&self, prior: Option<&Self>) -> Result<(), String> {
        let expected_prior =
            prior.map_or_else(empty_ledger_digest, |prior| prior.record_digest.clone());
        let revision = prior.map_or(1, |prior| prior.ledger_revision + 1);
        let fulfilled = self.status == "fulfilled";
        let rules = [
            (
                self.schema_version == EFFECT_SCHEMA,
                format!("schema_version must be {EFFECT_SCHEMA:?}"),
            ),
            (
                self.obligation.starts_with(ADAPTER_CANCEL_PREFIX),
                format!("obligation must start with {ADAPTER_CANCEL_PREFIX:?}"),
            ),
            (
                self.effect_id == effect_id(&self.obligation),
                "effect_id is not the obligation's effect id".to_owned(),
            ),
            (
                matches!(self.status.as_str(), "fulfilled" | "blocked"),
                format!("status {:?} is not fulfilled or blocked", self.status),
            ),
            (
                !fulfilled || (is_safe_relative(&self.proof_ref) && is_digest(&self.proof_digest)),
                "a fulfilled record needs a safe relative proof_ref and a proof_digest".to_owned(),
            ),
            (
                !fulfilled || self.reason.is_empty(),
                "a fulfilled record has no reason".to_owned(),
            ),
            (
                fulfilled || (self.proof_ref.is_empty() && self.proof_digest.is_empty()),
                "a blocked record has no proof".to_owned(),
            ),
            (
                fulfilled || !self.reason.is_empty(),
                "a blocked record needs a reason".to_owned(),
            ),
            (
                self.ledger_revision == revision,
                format!(
                    "ledger_revision is {}, expected {revision}",
                    self.ledger_revision
                ),
            ),
            (
                self.prior_record_digest == expected_prior,
                format!("prior_record_digest does not chain to {expected_prior}"),
            ),
            (
                self.record_digest == self.own_digest(),
                "record_digest does not match the record".to_owned(),
            ),
        ];
        match rules.into_iter().find(|(ok, _)| !ok) {
            Some((_, rule)) => Err(rule),
            None => Ok(()),
        }
    }
}

impl Canonical for EffectRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_members(out, true);
    }
}

/// The digest the first record chains from (`{"records":[],"schema_version":
/// "valp-kernel-effect-ledger.v1"}` + LF, a preimage only).
pub fn empty_ledger_digest() -> String {
    form_digest(|out| {
        let mut fields = Fields::begin(out);
        fields.strs("records", &[]);
        fields.str("schema_version", "valp-kernel-effect-ledger.v1");
        fields.end();
    })
}

/// The effect id of an obligation (`{"obligation":…,"schema_version":
/// "valp-kernel-effect-identity.v1"}` + LF, a preimage only).
pub fn effect_id(obligation: &str) -> String {
    form_digest(|out| {
        let mut fields = Fields::begin(out);
        fields.str("obligation", obligation);
        fields.str("schema_version", "valp-kernel-effect-identity.v1");
        fields.end();
    })
}

#[cfg(test)]
mod tests {
    use valp_kernel::canonical::sha256_digest;

    use super::*;

    #[test]
    fn the_digest_preimages_are_the_documented_texts() {
        assert_eq!(
            effect_id("x"),
            sha256_digest(
                b"{\"obligation\":\"x\",\"schema_version\":\"valp-kernel-effect-identity.v1\"}\n"
            )
        );
        assert_ne!(effect_id("adapter_cancel:a"), effect_id("adapter_cancel:b"));
        assert_eq!(
            empty_ledger_digest(),
            sha256_digest(
                b"{\"records\":[],\"schema_version\":\"valp-kernel-effect-ledger.v1\"}\n"
            )
        );
    }

    #[test]
    fn a_new_record_chains_and_checks() {
        let outcome = Outcome::Blocked {
            reason: "why".to_owned(),
        };
        let first = EffectRecord::new("adapter_cancel:a", &outcome, None);
        let second = EffectRecord::new("adapter_cancel:b", &outcome, Some(&first));
        assert_eq!(first.check(None), Ok(()));
        assert_eq!(second.check(Some(&first)), Ok(()));
        assert_eq!(
            (second.ledger_revision, second.prior_record_digest.as_str()),
            (2, first.record_digest.as_str())
        );
        assert_eq!(second.outcome(), outcome);
        let value = valp_kernel::json::parse(
            std::str::from_utf8(&second.canonical_bytes())
                .unwrap()
                .trim_end(),
        )
        .unwrap();
        assert_eq!(EffectRecord::decode(&value), Ok(second));
    }

    #[test]
    fn decoding_names_the_first_bad_member() {
        let record = EffectRecord::new(
            "adapter_cancel:a",
            &Outcome::Blocked {
                reason: "why".to_owned(),
            },
            None,
        );
        let text = String::from_utf8(record.canonical_bytes()).unwrap();
        let decode = |text: &str| {
            EffectRecord::decode(&valp_kernel::json::parse(text.trim_end()).unwrap()).unwrap_err()
        };
        assert_eq!(
            decode(&text.replacen('{', "{\"attempt_id\":\"x\",", 1)),
            "unknown member \"attempt_id\""
        );
        for (from, to, error) in [
            ("\"reason\":\"why\",", "", "missing member \"reason\""),
            (
                "\"ledger_revision\":1",
                "\"ledger_revision\":\"1\"",
                "ledger_revision must be an integer, found string",
            ),
            (
                "\"ledger_revision\":1",
                "\"ledger_revision\":-1",
                "ledger_revision must be a non-negative integer",
            ),
            (
                "\"reason\":\"why\"",
                "\"reason\":null",
                "reason must be a string, found null",
            ),
        ] {
            assert_eq!(decode(&text.replace(from, to)), error);
        }
    }
}
