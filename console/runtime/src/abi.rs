//! The Adapter ABI 1.0 records (RFC 0002 §5.4; protocol digest §13.1): what the System asks an
//! adapter to do (`valp-adapter-request.v1`) and what an adapter reports
//! (`valp-adapter-observation.v1`, with one provenance segment per proof).
//!
//! Adapters write observations as files; the System reads them as untrusted input. So
//! [`AdapterObservation::decode`] is strict (exact shape, closed vocabularies, no unknown
//! members) and [`AdapterObservation::check`] enforces the ABI rules the shape cannot: the
//! observation and request ids are the digests of their own content, provenance sequences are
//! exactly `0..n`, each segment's input is the previous segment's output, segment ids are
//! unique, a segment is unacknowledged exactly when it names a failure code, an unsupported
//! operation carries a reason and no proof, every reference is a safe relative path, and the
//! last segment is the observing adapter's. Digests are computed over the canonical encoding,
//! whatever formatting the file used.

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, form_digest, is_digest, sha256_digest};
use valp_kernel::json::write::Fields;
pub use valp_store::layout::is_safe_relative;

/// `valp-adapter-request.v1`
pub const REQUEST_SCHEMA: &str = "valp-adapter-request.v1";
/// `valp-adapter-observation.v1`
pub const OBSERVATION_SCHEMA: &str = "valp-adapter-observation.v1";
/// The ABI version every segment carries.
pub const ABI_VERSION: &str = "1.0";

/// A closed vocabulary: an enum read from its `snake_case` wire text, with `as_str` (also
/// used for the agent-signal record's vocabularies).
macro_rules! closed {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// The wire text.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }
    };
}
pub(crate) use closed;

closed! {
    /// An adapter operation.
    Operation {
        /// Is the runtime there?
        Probe => "probe",
        /// Start work.
        Submit => "submit",
        /// Report on work.
        Observe => "observe",
        /// Stop work.
        Cancel => "cancel",
        /// Continue interrupted work.
        Resume => "resume",
        /// Produce proof.
        Prove => "prove",
    }
}

closed! {
    /// What an observation says about the request.
    ObservationStatus {
        /// Taken on (e.g. the process started).
        Accepted => "accepted",
        /// Still going.
        Waiting => "waiting",
        /// Finished successfully as far as the runtime knows.
        Completed => "completed",
        /// Could not finish (the reason says why).
        Blocked => "blocked",
        /// Stopped on request.
        Cancelled => "cancelled",
        /// The adapter does not support the operation.
        Unsupported => "unsupported",
    }
}

closed! {
    /// What a proof binds (closed, not ordered).
    ProofKind {
        /// To a process/run/job identity and the causal submission.
        ProcessBound => "process_bound",
        /// To exact payload/output digests.
        ContentBound => "content_bound",
        /// To a named person's attestation.
        ManualAttested => "manual_attested",
        /// Only that bytes were transported.
        TransportOnly => "transport_only",
    }
}

/// `valp-adapter-request.v1`: one operation on one attempt.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterRequest {
    /// Must be [`REQUEST_SCHEMA`].
    pub schema_version: String,
    /// `sha256:` of the request's canonical form without this member.
    pub request_id: String,
    /// The operation.
    pub operation: Operation,
    /// The installation.
    pub installation_id: String,
    /// The Leader epoch the request was made under.
    pub leader_epoch: i64,
    /// The task.
    pub task_id: String,
    /// The work item.
    pub work_item_id: String,
    /// The attempt.
    pub attempt_id: String,
    /// The dispatch.
    pub dispatch_id: String,
    /// The dispatch generation (higher on every retry).
    pub dispatch_generation: i64,
    /// `sha256:` of the payload (for the process adapter: its run specification).
    pub payload_digest: String,
    /// Files the work must produce, relative to the task's working folder.
    pub expected_evidence_refs: Vec<String>,
}

/// One link of an observation's proof chain.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceSegment {
    /// Unique within the observation.
    pub segment_id: String,
    /// Position: exactly `0..n`.
    pub sequence: u64,
    /// The adapter that produced this segment.
    pub adapter_id: String,
    /// Must be [`ABI_VERSION`].
    pub abi_version: String,
    /// What went in (the previous segment's output, or the request id for the first).
    pub input_identity: String,
    /// Its digest.
    pub input_digest: String,
    /// What came out.
    pub output_identity: String,
    /// Its digest.
    pub output_digest: String,
    /// What the proof binds.
    pub proof_kind: ProofKind,
    /// The proof records (at least one).
    pub evidence_refs: Vec<String>,
    /// Whether the runtime acknowledged it.
    pub acknowledged: bool,
    /// Present exactly when unacknowledged.
    #[serde(default)]
    pub failure_code: Option<String>,
}

/// `valp-adapter-observation.v1`
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdapterObservation {
    /// Must be [`OBSERVATION_SCHEMA`].
    pub schema_version: String,
    /// `sha256:` of the observation's canonical form without this member.
    pub observation_id: String,
    /// The request observed.
    pub request: AdapterRequest,
    /// Per request, strictly increasing from 1 (a later observation supersedes).
    pub sequence: u64,
    /// The status.
    pub status: ObservationStatus,
    /// The proof chain.
    pub provenance: Vec<ProvenanceSegment>,
    /// Outputs (safe relative paths).
    pub evidence_refs: Vec<String>,
    /// The runtime's own identity for the work (e.g. `process:<pid>:<start ticks>`).
    #[serde(default)]
    pub runtime_identity: Option<String>,
    /// Why (blocked, cancelled, unsupported).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Why bytes are not an acceptable observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AbiError {
    /// Not JSON of the observation's shape (unknown member, wrong type, unknown enum value…).
    #[error("not a valp-adapter-observation.v1: {0}")]
    Shape(String),
    /// The shape is right but an ABI rule is broken.
    #[error("{field}: {rule}")]
    Rule {
        /// Where (`provenance[1].input_identity`).
        field: String,
        /// Which rule.
        rule: String,
    },
}

fn rule(field: impl Into<String>, rule: impl Into<String>) -> AbiError {
    AbiError::Rule {
        field: field.into(),
        rule: rule.into(),
    }
}

impl AdapterRequest {
    /// A request with its id computed from its content.
    #[allow(clippy::too_many_arguments)] // the ABI's members, named at every call site
    pub fn new(
        operation: Operation,
        installation_id: &str,
        leader_epoch: i64,
        task_id: &str,
        work_item_id: &str,
        attempt_id: &str,
        dispatch_id: &str,
        dispatch_generation: i64,
        payload_digest: &str,
        expected_evidence_refs: Vec<String>,
    ) -> Self {
        let mut request = Self {
            schema_version: REQUEST_SCHEMA.to_owned(),
            request_id: String::new(),
            operation,
            installation_id: installation_id.to_owned(),
            leader_epoch,
            task_id: task_id.to_owned(),
            work_item_id: work_item_id.to_owned(),
            attempt_id: attempt_id.to_owned(),
            dispatch_id: dispatch_id.to_owned(),
            dispatch_generation,
            payload_digest: payload_digest.to_owned(),
            expected_evidence_refs,
        };
        request.request_id = request.content_digest();
        request
    }

    /// `sha256:` of the canonical form without `request_id`.
    pub fn content_digest(&self) -> String {
        form_digest(|out| self.write_members(out, false))
    }

    fn write_members(&self, out: &mut Vec<u8>, with_id: bool) {
        let mut fields = Fields::begin(out);
        fields.str("attempt_id", &self.attempt_id);
        fields.int("dispatch_generation", i128::from(self.dispatch_generation));
        fields.str("dispatch_id", &self.dispatch_id);
        fields.strs("expected_evidence_refs", &self.expected_evidence_refs);
        fields.str("installation_id", &self.installation_id);
        fields.int("leader_epoch", i128::from(self.leader_epoch));
        fields.str("operation", self.operation.as_str());
        fields.str("payload_digest", &self.payload_digest);
        if with_id {
            fields.str("request_id", &self.request_id);
        }
        fields.str("schema_version", &self.schema_version);
        fields.str("task_id", &self.task_id);
        fields.str("work_item_id", &self.work_item_id);
        fields.end();
    }

    /// Checks the request's own rules (schema, id, digests, references).
    pub fn check(&self) -> Result<(), AbiError> {
        if self.schema_version != REQUEST_SCHEMA {
            return Err(rule(
                "request.schema_version",
                format!("must be {REQUEST_SCHEMA}"),
            ));
        }
        if self.request_id != self.content_digest() {
            return Err(rule(
                "request.request_id",
                "is not the digest of the request's content",
            ));
        }
        if !is_digest(&self.payload_digest) {
            return Err(rule("request.payload_digest", "is not a sha256: digest"));
        }
        if self.dispatch_generation < 1 || self.leader_epoch < 1 {
            return Err(rule(
                "request",
                "dispatch_generation and leader_epoch must be at least 1",
            ));
        }
        for (field, value) in [
            ("installation_id", &self.installation_id),
            ("task_id", &self.task_id),
            ("work_item_id", &self.work_item_id),
            ("attempt_id", &self.attempt_id),
            ("dispatch_id", &self.dispatch_id),
        ] {
            if value.is_empty() {
                return Err(rule(format!("request.{field}"), "must not be empty"));
            }
        }
        check_refs(
            "request.expected_evidence_refs",
            &self.expected_evidence_refs,
        )
    }
}

impl Canonical for AdapterRequest {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_members(out, true);
    }
}

impl Canonical for ProvenanceSegment {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("abi_version", &self.abi_version);
        fields
            .key("acknowledged")
            .extend_from_slice(if self.acknowledged { b"true" } else { b"false" });
        fields.str("adapter_id", &self.adapter_id);
        fields.strs("evidence_refs", &self.evidence_refs);
        if let Some(code) = &self.failure_code {
            fields.str("failure_code", code);
        }
        fields.str("input_digest", &self.input_digest);
        fields.str("input_identity", &self.input_identity);
        fields.str("output_digest", &self.output_digest);
        fields.str("output_identity", &self.output_identity);
        fields.str("proof_kind", self.proof_kind.as_str());
        fields.str("segment_id", &self.segment_id);
        fields.int("sequence", i128::from(self.sequence));
        fields.end();
    }
}

impl AdapterObservation {
    /// An observation with its id computed from its content.
    pub fn new(
        request: AdapterRequest,
        sequence: u64,
        status: ObservationStatus,
        provenance: Vec<ProvenanceSegment>,
        evidence_refs: Vec<String>,
        runtime_identity: Option<String>,
        reason: Option<String>,
    ) -> Self {
        let mut observation = Self {
            schema_version: OBSERVATION_SCHEMA.to_owned(),
            observation_id: String::new(),
            request,
            sequence,
            status,
            provenance,
            evidence_refs,
            runtime_identity,
            reason,
        };
        observation.observation_id = observation.content_digest();
        observation
    }

    /// Reads an observation file's bytes (any JSON formatting; exact shape).
    pub fn decode(bytes: &[u8]) -> Result<Self, AbiError> {
        serde_json::from_slice(bytes).map_err(|error| AbiError::Shape(error.to_string()))
    }

    /// `sha256:` of the canonical form without `observation_id`.
    pub fn content_digest(&self) -> String {
        form_digest(|out| self.write_members(out, false))
    }

    fn write_members(&self, out: &mut Vec<u8>, with_id: bool) {
        let mut fields = Fields::begin(out);
        fields.strs("evidence_refs", &self.evidence_refs);
        if with_id {
            fields.str("observation_id", &self.observation_id);
        }
        fields.list("provenance", &self.provenance);
        if let Some(reason) = &self.reason {
            fields.str("reason", reason);
        }
        fields.canonical("request", &self.request);
        if let Some(identity) = &self.runtime_identity {
            fields.str("runtime_identity", identity);
        }
        fields.str("schema_version", &self.schema_version);
        fields.int("sequence", i128::from(self.sequence));
        fields.str("status", self.status.as_str());
        fields.end();
    }

    /// Checks every ABI rule; `observer` is the adapter whose folder the file came from.
    pub fn check(&self, observer: &str) -> Result<(), AbiError> {
        if self.schema_version != OBSERVATION_SCHEMA {
            return Err(rule(
                "schema_version",
                format!("must be {OBSERVATION_SCHEMA}"),
            ));
        }
        if self.observation_id != self.content_digest() {
            return Err(rule(
                "observation_id",
                "is not the digest of the observation's content",
            ));
        }
        self.request.check()?;
        if self.sequence < 1 {
            return Err(rule("sequence", "must be at least 1"));
        }
        check_refs("evidence_refs", &self.evidence_refs)?;
        if self.status == ObservationStatus::Unsupported {
            if self.reason.as_deref().is_none_or(str::is_empty) {
                return Err(rule("reason", "an unsupported operation must say why"));
            }
            if !self.provenance.is_empty() || self.runtime_identity.is_some() {
                return Err(rule(
                    "provenance",
                    "an unsupported operation carries no proof and no runtime identity",
                ));
            }
            return Ok(());
        }
        self.check_provenance(observer)
    }

    fn check_provenance(&self, observer: &str) -> Result<(), AbiError> {
        let mut seen = std::collections::BTreeSet::new();
        for (index, segment) in self.provenance.iter().enumerate() {
            let at = |member: &str| format!("provenance[{index}].{member}");
            if segment.sequence != index as u64 {
                return Err(rule(at("sequence"), format!("must be {index}")));
            }
            if !seen.insert(segment.segment_id.as_str()) || segment.segment_id.is_empty() {
                return Err(rule(at("segment_id"), "must be non-empty and unique"));
            }
            if segment.abi_version != ABI_VERSION {
                return Err(rule(at("abi_version"), format!("must be {ABI_VERSION}")));
            }
            if segment.evidence_refs.is_empty() {
                return Err(rule(
                    at("evidence_refs"),
                    "a segment names at least one proof",
                ));
            }
            check_refs(&at("evidence_refs"), &segment.evidence_refs)?;
            if segment.acknowledged == segment.failure_code.is_some() {
                return Err(rule(
                    at("failure_code"),
                    "present exactly when the segment is unacknowledged",
                ));
            }
            for (member, digest) in [
                ("input_digest", &segment.input_digest),
                ("output_digest", &segment.output_digest),
            ] {
                if !is_digest(digest) {
                    return Err(rule(at(member), "is not a sha256: digest"));
                }
            }
            let (identity, digest) = match index.checked_sub(1) {
                Some(previous) => {
                    let previous = &self.provenance[previous];
                    (
                        previous.output_identity.as_str(),
                        previous.output_digest.as_str(),
                    )
                }
                None => (
                    self.request.request_id.as_str(),
                    self.request.payload_digest.as_str(),
                ),
            };
            if segment.input_identity != identity || segment.input_digest != digest {
                return Err(rule(
                    at("input_identity"),
                    "must be the previous segment's output (the request for the first)",
                ));
            }
        }
        match self.provenance.last() {
            Some(last) if last.adapter_id != observer => Err(rule(
                format!("provenance[{}].adapter_id", self.provenance.len() - 1),
                format!("the last segment must be the observing adapter's ({observer})"),
            )),
            _ => Ok(()),
        }
    }
}

impl Canonical for AdapterObservation {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        self.write_members(out, true);
    }
}

fn check_refs(field: &str, refs: &[String]) -> Result<(), AbiError> {
    let mut seen = std::collections::BTreeSet::new();
    for (index, path) in refs.iter().enumerate() {
        if !is_safe_relative(path) {
            return Err(rule(
                format!("{field}[{index}]"),
                format!("{path:?} is not a safe relative path"),
            ));
        }
        if !seen.insert(path) {
            return Err(rule(format!("{field}[{index}]"), "is listed twice"));
        }
    }
    Ok(())
}

/// The folder name of an attempt under `runtime/<adapter>/attempts/`: the 64 hex digits of the
/// SHA-256 of the attempt id's canonical JSON string form (as the reference names them).
pub fn attempt_folder(attempt_id: &str) -> String {
    let mut out = Vec::new();
    valp_kernel::json::write::write_str(&mut out, attempt_id);
    out.push(b'\n');
    sha256_digest(&out)["sha256:".len()..].to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn request() -> AdapterRequest {
        AdapterRequest::new(
            Operation::Submit,
            "inst-1",
            1,
            "TASK-1",
            "build",
            "attempt-1",
            "TASK-1:build:1",
            1,
            &sha256_digest(b"payload"),
            vec!["out/report.txt".to_owned()],
        )
    }

    fn segment(
        sequence: u64,
        kind: ProofKind,
        input: (&str, &str),
        output: &str,
    ) -> ProvenanceSegment {
        ProvenanceSegment {
            segment_id: format!("seg-{sequence}"),
            sequence,
            adapter_id: "process".to_owned(),
            abi_version: ABI_VERSION.to_owned(),
            input_identity: input.0.to_owned(),
            input_digest: input.1.to_owned(),
            output_identity: output.to_owned(),
            output_digest: sha256_digest(output.as_bytes()),
            proof_kind: kind,
            evidence_refs: vec![format!("proofs/{sequence}.json")],
            acknowledged: true,
            failure_code: None,
        }
    }

    fn observation() -> AdapterObservation {
        let request = request();
        let first = segment(
            0,
            ProofKind::ProcessBound,
            (&request.request_id, &request.payload_digest),
            "process:42",
        );
        let second = segment(
            1,
            ProofKind::ContentBound,
            (&first.output_identity, &first.output_digest),
            "output",
        );
        AdapterObservation::new(
            request,
            2,
            ObservationStatus::Completed,
            vec![first, second],
            vec!["out/report.txt".to_owned()],
            Some("process:42:7".to_owned()),
            None,
        )
    }

    #[test]
    fn a_well_formed_observation_round_trips_and_checks() {
        let observation = observation();
        observation.check("process").unwrap();
        let decoded = AdapterObservation::decode(&observation.canonical_bytes()).unwrap();
        assert_eq!(decoded, observation);
        // Formatting does not matter, content does.
        let pretty = serde_json::to_vec_pretty(
            &serde_json::from_slice::<serde_json::Value>(&observation.canonical_bytes()).unwrap(),
        )
        .unwrap();
        let decoded = AdapterObservation::decode(&pretty).unwrap();
        decoded.check("process").unwrap();
    }

    fn refused(edit: impl FnOnce(&mut AdapterObservation), rehash: bool) -> AbiError {
        let mut observation = observation();
        edit(&mut observation);
        if rehash {
            observation.observation_id = observation.content_digest();
        }
        observation.check("process").unwrap_err()
    }

    #[test]
    fn every_rule_is_enforced() {
        let cases: Vec<(&str, AbiError)> = vec![
            ("observation_id", refused(|o| o.sequence = 3, false)),
            ("sequence", refused(|o| o.sequence = 0, true)),
            (
                "provenance[1].sequence",
                refused(|o| o.provenance[1].sequence = 2, true),
            ),
            (
                "provenance[1].segment_id",
                refused(|o| o.provenance[1].segment_id = "seg-0".into(), true),
            ),
            (
                "provenance[1].input_identity",
                refused(
                    |o| o.provenance[1].input_identity = "elsewhere".into(),
                    true,
                ),
            ),
            (
                "provenance[0].input_identity",
                refused(|o| o.provenance[0].input_digest = sha256_digest(b"x"), true),
            ),
            (
                "provenance[1].failure_code",
                refused(|o| o.provenance[1].acknowledged = false, true),
            ),
            (
                "provenance[0].failure_code",
                refused(|o| o.provenance[0].failure_code = Some("E".into()), true),
            ),
            (
                "provenance[1].evidence_refs",
                refused(|o| o.provenance[1].evidence_refs.clear(), true),
            ),
            (
                "provenance[1].evidence_refs[0]",
                refused(
                    |o| o.provenance[1].evidence_refs = vec!["../x".into()],
                    true,
                ),
            ),
            (
                "provenance[1].adapter_id",
                refused(|o| o.provenance[1].adapter_id = "queue".into(), true),
            ),
            (
                "provenance[0].abi_version",
                refused(|o| o.provenance[0].abi_version = "2.0".into(), true),
            ),
            (
                "provenance[0].output_digest",
                refused(|o| o.provenance[0].output_digest = "md5:1".into(), true),
            ),
            (
                "evidence_refs[0]",
                refused(|o| o.evidence_refs = vec!["/etc/passwd".into()], true),
            ),
            (
                "evidence_refs[1]",
                refused(|o| o.evidence_refs = vec!["a".into(), "a".into()], true),
            ),
            (
                "request.request_id",
                refused(|o| o.request.attempt_id = "attempt-2".into(), true),
            ),
            (
                "reason",
                refused(
                    |o| {
                        o.status = ObservationStatus::Unsupported;
                        o.provenance.clear();
                        o.runtime_identity = None;
                    },
                    true,
                ),
            ),
            (
                "provenance",
                refused(
                    |o| {
                        o.status = ObservationStatus::Unsupported;
                        o.reason = Some("no cancel".into());
                    },
                    true,
                ),
            ),
        ];
        for (field, error) in cases {
            match error {
                AbiError::Rule { field: got, .. } => assert_eq!(got, field),
                AbiError::Shape(shape) => panic!("{field}: {shape}"),
            }
        }
    }

    #[test]
    fn unknown_members_and_values_are_shape_errors() {
        let mut value: serde_json::Value =
            serde_json::from_slice(&observation().canonical_bytes()).unwrap();
        value["extra"] = serde_json::json!(1);
        let error = AdapterObservation::decode(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        assert!(matches!(&error, AbiError::Shape(text) if text.contains("unknown field `extra`")));
        let mut value: serde_json::Value =
            serde_json::from_slice(&observation().canonical_bytes()).unwrap();
        value["status"] = serde_json::json!("finished");
        let error = AdapterObservation::decode(&serde_json::to_vec(&value).unwrap()).unwrap_err();
        assert!(
            matches!(&error, AbiError::Shape(text) if text.contains("unknown variant `finished`"))
        );
    }

    #[test]
    fn safe_relative_paths() {
        for good in ["a", "a/b.txt", "out/report.txt", ".hidden/x"] {
            assert!(is_safe_relative(good), "{good}");
        }
        for bad in [
            "", "/a", "a/../b", "..", "./a", "a//b", "a/", "a\\b", "a\nb", "a/./b",
        ] {
            assert!(!is_safe_relative(bad), "{bad:?}");
        }
    }

    #[test]
    fn attempt_folders_hash_the_canonical_string() {
        // sha256 of the 12 bytes `"attempt-1"` + LF, computed independently.
        let expected = sha256_digest(b"\"attempt-1\"\n");
        assert_eq!(attempt_folder("attempt-1"), expected["sha256:".len()..]);
        assert_eq!(attempt_folder("attempt-1").len(), 64);
    }
}
