//! The observation decoder of the inbox and the adapter ABI ([`decode_observation`],
//! [`AdapterObservation`]).

use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_runtime::abi::AdapterObservation;
use valp_runtime::ingest::{Limits, decode_observation};

use crate::display::assert_display_safe;

/// Where the bytes are read from: the inbox (adapter claimed) and an adapter's runtime folder
/// (adapter proven by the folder), as a whole file and as a line.
const PATHS: [&str; 3] = [
    "inbox/fuzz.json",
    "inbox/tool/fuzz.jsonl",
    "runtime/process/attempts/fuzz/observation.json",
];

/// An accepted observation passes every ABI rule and its canonical form is accepted as the
/// same observation; a rejection prints without any control sequence. The bytes are also
/// decoded with their `observation_id` recomputed, so the fuzzer reaches the rules behind the
/// id check.
pub fn observation(data: &[u8]) {
    for path in PATHS {
        decode_at(Path::new(path), data);
    }
    if let Ok(mut observation) = AdapterObservation::decode(data) {
        observation.observation_id = observation.content_digest();
        let bytes = observation.canonical_bytes();
        for path in PATHS {
            decode_at(Path::new(path), &bytes);
        }
    }
}

fn decode_at(path: &Path, data: &[u8]) {
    let limits = Limits::default();
    match decode_observation(path, data, &limits) {
        Ok(observation) => {
            let observer = observation
                .provenance
                .last()
                .map(|segment| segment.adapter_id.clone())
                .unwrap_or_default();
            assert_eq!(
                observation.check(&observer),
                Ok(()),
                "accepted but breaks a rule"
            );
            let bytes = observation.canonical_bytes();
            assert_eq!(
                decode_observation(path, &bytes, &limits),
                Ok(observation),
                "the canonical form of an accepted observation is not accepted as the same"
            );
        }
        Err(rejection) => assert_display_safe(&rejection.to_string(), "a rejection"),
    }
}
