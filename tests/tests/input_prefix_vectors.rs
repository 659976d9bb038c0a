//! The input digest from an entry's own canonical bytes gives, on every reference kernel vector,
//! the digest the reference computed: each vector's Event and EvidenceSet (as the vector holds
//! them, in the order given) are written into a compact entry's text; where the kernel takes
//! its input digest's preimage from that text (`EntrySpans::input`), `LiveState::apply_from`
//! gives the very Verdict `LiveState::apply` gives (which encodes the input), whose input
//! digest is the vector's expected one. Texts whose bytes encoding would not give back (the
//! evidence out of canonical order) are never hashed as they stand.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{InputPrefix, decode_compact_entry_spans, decode_state};
use valp_kernel::json::write::canonical_bytes;
use valp_kernel::json::{Value, parse};
use valp_kernel::live::{AcceptedRecord, LiveState, Verdict};
use valp_kernel::replay::COMPACT_ENTRY_SCHEMA;
use valp_kernel::{Identity, IdentityKind};
use valp_tests::conformance_fixtures;

/// The canonical text of `value`, without the LF; `None` for a value with a float in it.
fn text_of(value: &Value) -> Option<String> {
    let mut bytes = canonical_bytes(value).ok()?;
    bytes.pop();
    String::from_utf8(bytes).ok()
}

/// A compact entry's text holding `event` and `evidence_set` exactly as given.
fn entry_text(event: &Value, evidence_set: &Value) -> Option<String> {
    let record = AcceptedRecord {
        result_id: Identity::new(IdentityKind::Result, "r").unwrap(),
        input_digest: format!("sha256:{}", "0".repeat(64)),
        result_digest: format!("sha256:{}", "0".repeat(64)),
        obligations: Vec::new(),
        audit_facts: Vec::new(),
    };
    let record = String::from_utf8(record.canonical_bytes()).unwrap();
    Some(format!(
        "{{\"event\":{},\"evidence_set\":{},\"result\":{},\"schema_version\":\"{COMPACT_ENTRY_SCHEMA}\"}}",
        text_of(event)?,
        text_of(evidence_set)?,
        record.trim_end()
    ))
}

fn input_digest(verdict: &Verdict) -> &str {
    match verdict {
        Verdict::Accepted(record) => &record.input_digest,
        Verdict::NoOp { input_digest, .. } | Verdict::Rejected { input_digest, .. } => input_digest,
    }
}

#[test]
fn the_line_bytes_give_the_reference_input_digest_on_every_kernel_vector() {
    let file = std::fs::File::open(&conformance_fixtures()[0]).unwrap();
    let (mut vectors, mut hashed_as_they_stand, mut encoded) = (0, 0, 0);
    for line in BufReader::new(flate2::read::GzDecoder::new(file)).lines() {
        let vector = parse(&line.unwrap()).unwrap();
        let Value::Object(members) = &vector else {
            panic!("a vector is an object");
        };
        vectors += 1;
        let name = text_of(&members["name"]).unwrap();
        let expected = match &members["expected_result"] {
            Value::Object(result) => result["input_digest"].clone(),
            other => panic!("{name}: {other:?}"),
        };
        // Vectors with malformed inputs do not decode into an entry: nothing to compare.
        let Some(text) = entry_text(&members["event"], &members["evidence_set"]) else {
            continue;
        };
        let (Some((entry, spans)), Ok(state)) = (
            decode_compact_entry_spans(&text),
            decode_state(&members["state"]),
        ) else {
            continue;
        };
        let mut live = LiveState::new(state);
        let encoding = live.clone().apply(&entry.event, &entry.evidence_set);
        assert_eq!(
            Value::String(input_digest(&encoding).to_owned()),
            expected,
            "{name}"
        );
        let Some(prefix) = InputPrefix::of(text.as_bytes(), &spans) else {
            // Only evidence out of canonical order keeps the kernel encoding the input.
            assert!(entry.evidence_set.len() > 1, "{name}");
            encoded += 1;
            continue;
        };
        let from_bytes = live.apply_from(&entry.event, &entry.evidence_set, Some(prefix));
        assert_eq!(from_bytes, encoding, "{name}");
        hashed_as_they_stand += 1;
    }
    assert_eq!(vectors, 2_650);
    // The three others have a float or a malformed type in their Event: they are not an entry.
    assert_eq!((hashed_as_they_stand, encoded), (2_641, 6));
    eprintln!(
        "{vectors} vectors: {hashed_as_they_stand} hashed from their bytes, {encoded} encoded \
         (evidence out of canonical order)"
    );
}
