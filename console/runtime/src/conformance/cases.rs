//! Running one vector line against our kernel.

use std::collections::BTreeMap;

use valp_kernel::canonical::{Canonical, first_difference, sha256_digest};
use valp_kernel::decode::{
    DecodeError, decode_checkpoint_authentication, decode_checkpoint_root, decode_event,
    decode_evidence_set, decode_genesis_root, decode_replay_entry, decode_state,
};
use valp_kernel::json::write::canonical_bytes;
use valp_kernel::json::{self, Value};
use valp_kernel::replay::{ReplayEntry, ReplayError, Replayer};
use valp_kernel::{Outcome, reduce};

use super::deviations::{DeclaredOutcome, DeviationFile};
use super::report::{CaseResult, CaseVerdict};

/// The prefix the reference's error messages carry in the vectors.
const PYTHON_ERROR_PREFIX: &str = "ValueError: ";

/// What our kernel did with a vector.
enum Ours {
    /// A `reduce` Result.
    Reduced(Box<Outcome>),
    /// A successful replay, as canonical bytes of the Replay envelope.
    Replayed(Vec<u8>),
    /// A replay that failed closed.
    ReplayFailed(ReplayError),
    /// The input did not decode.
    Undecodable(DecodeError),
}

impl Ours {
    fn describe(&self) -> String {
        match self {
            Self::Reduced(outcome) => match outcome.error_code() {
                Some(code) => format!("rejected {code}"),
                None => outcome.variant().to_string(),
            },
            Self::Replayed(_) => "a successful replay".to_owned(),
            Self::ReplayFailed(error) => format!("replay error: {error}"),
            Self::Undecodable(error) => format!("decode error {}: {error}", error.code()),
        }
    }
}

/// What the vector expects.
enum Expected {
    /// Exactly these canonical bytes (`None` when the expected value cannot be written
    /// canonically, e.g. it holds a float).
    Bytes(Option<Vec<u8>>),
    /// A replay failure with this reference message.
    ReplayError(String),
}

/// Runs one vector line.
pub(super) fn run_line(line: &[u8], location: &str, deviations: &DeviationFile) -> CaseResult {
    let parsed = std::str::from_utf8(line)
        .map_err(|error| format!("vector is not UTF-8: {error}"))
        .and_then(|text| json::parse(text).map_err(|error| format!("vector is not JSON: {error}")));
    let vector = match parsed {
        Ok(Value::Object(vector)) => vector,
        Ok(_) => return unnamed(location, "vector is not a JSON object".to_owned()),
        Err(message) => return unnamed(location, message),
    };
    let Some(name) = vector.get("name").and_then(Value::as_str) else {
        return unnamed(location, "vector has no string \"name\"".to_owned());
    };
    let verdict = match run_vector(&vector) {
        Ok((ours, expected, input_state)) => {
            judge(name, &ours, &expected, input_state.as_deref(), deviations)
        }
        Err(message) => CaseVerdict::Failed(message),
    };
    CaseResult {
        name: printable(name),
        location: location.to_owned(),
        verdict,
    }
}

fn unnamed(location: &str, message: String) -> CaseResult {
    CaseResult {
        name: "<unreadable vector>".to_owned(),
        location: location.to_owned(),
        verdict: CaseVerdict::Failed(message),
    }
}

/// Replaces control characters so untrusted names cannot drive the terminal.
fn printable(text: &str) -> String {
    text.chars()
        .map(|character| {
            if character.is_control() {
                '?'
            } else {
                character
            }
        })
        .collect()
}

type Run = (Ours, Expected, Option<Vec<u8>>);

fn member<'v>(vector: &'v BTreeMap<String, Value>, key: &str) -> Result<&'v Value, String> {
    vector
        .get(key)
        .ok_or_else(|| format!("vector has no {key:?}"))
}

fn run_vector(vector: &BTreeMap<String, Value>) -> Result<Run, String> {
    if vector.contains_key("event") {
        run_reduce(vector)
    } else if vector.contains_key("genesis") {
        run_replay(vector, false)
    } else if vector.contains_key("checkpoint_root") {
        run_replay(vector, true)
    } else {
        Err("vector is none of the three formats (no event, genesis or checkpoint_root)".to_owned())
    }
}

fn run_reduce(vector: &BTreeMap<String, Value>) -> Result<Run, String> {
    let expected_value = member(vector, "expected_result")?;
    let expected = canonical_bytes(expected_value).ok();
    if let (Some(bytes), Some(Value::String(declared))) =
        (&expected, vector.get("expected_result_bytes_sha256"))
        && &sha256_digest(bytes) != declared
    {
        return Err(
            "vector is corrupt: expected_result_bytes_sha256 does not match expected_result"
                .to_owned(),
        );
    }
    let state_value = member(vector, "state")?;
    let decoded = decode_state(state_value).and_then(|state| {
        let event = decode_event(member(vector, "event").unwrap_or(&Value::Null))?;
        let evidence = decode_evidence_set(member(vector, "evidence_set").unwrap_or(&Value::Null))?;
        Ok((state, event, evidence))
    });
    let input_state = canonical_bytes(state_value).ok();
    let ours = match decoded {
        Ok((state, event, evidence)) => Ours::Reduced(Box::new(reduce(&state, &event, &evidence))),
        Err(error) => Ours::Undecodable(error),
    };
    Ok((ours, Expected::Bytes(expected), input_state))
}

fn entries(
    vector: &BTreeMap<String, Value>,
) -> Result<Result<Vec<ReplayEntry>, DecodeError>, String> {
    match member(vector, "entries")? {
        Value::Array(items) => Ok(items.iter().map(decode_replay_entry).collect()),
        _ => Err("vector \"entries\" is not an array".to_owned()),
    }
}

fn run_replay(vector: &BTreeMap<String, Value>, checkpoint: bool) -> Result<Run, String> {
    let expected = match member(vector, "expected")? {
        Value::Object(object) if object.contains_key("error") => {
            let message = object
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or_default();
            Expected::ReplayError(
                message
                    .strip_prefix(PYTHON_ERROR_PREFIX)
                    .unwrap_or(message)
                    .to_owned(),
            )
        }
        value => Expected::Bytes(canonical_bytes(value).ok()),
    };
    let entries = entries(vector)?;
    let start = if checkpoint {
        let root = decode_checkpoint_root(member(vector, "checkpoint_root")?);
        let authentication = match member(vector, "checkpoint_authentication")? {
            Value::Null => Ok(None),
            value => decode_checkpoint_authentication(value).map(Some),
        };
        root.and_then(|root| Ok((root, authentication?)))
            .map(|(root, authentication)| Replayer::from_checkpoint(&root, authentication.as_ref()))
    } else {
        decode_genesis_root(member(vector, "genesis")?).map(|root| Replayer::from_genesis(&root))
    };
    let ours = match (start, entries) {
        (Err(error), _) | (Ok(_), Err(error)) => Ours::Undecodable(error),
        (Ok(start), Ok(entries)) => {
            let replayed = start.and_then(|mut replayer| {
                entries.iter().try_for_each(|entry| replayer.apply(entry))?;
                Ok(replayer.finish())
            });
            match replayed {
                Ok(replay) => Ours::Replayed(replay.canonical_bytes()),
                Err(error) => Ours::ReplayFailed(error),
            }
        }
    };
    Ok((ours, expected, None))
}

fn judge(
    name: &str,
    ours: &Ours,
    expected: &Expected,
    input_state: Option<&[u8]>,
    deviations: &DeviationFile,
) -> CaseVerdict {
    let difference = match (ours, expected) {
        (Ours::Reduced(outcome), Expected::Bytes(Some(bytes))) => {
            let ours = outcome.canonical_bytes();
            if &ours == bytes {
                return CaseVerdict::Passed;
            }
            byte_difference(&ours, bytes)
        }
        (Ours::Replayed(ours), Expected::Bytes(Some(bytes))) => {
            if ours == bytes {
                return CaseVerdict::Passed;
            }
            byte_difference(ours, bytes)
        }
        (Ours::ReplayFailed(error), Expected::ReplayError(message)) => {
            if error.reference_message() == message {
                return CaseVerdict::Passed;
            }
            format!(
                "expected replay error {message:?}, ours is {:?} ({error})",
                error.reference_message()
            )
        }
        (ours, Expected::ReplayError(message)) => {
            format!(
                "expected replay error {message:?}, ours is {}",
                ours.describe()
            )
        }
        (ours, Expected::Bytes(_)) => {
            format!("expected the vector's outcome, ours is {}", ours.describe())
        }
    };
    let Some(deviation) = deviations.find(name) else {
        return CaseVerdict::Failed(difference);
    };
    if declared_outcome_matches(&deviation.outcome, ours, input_state) {
        CaseVerdict::Deviated(deviation.id.clone())
    } else {
        CaseVerdict::Failed(format!(
            "deviation {} declares {:?}, ours is {} ({difference})",
            deviation.id,
            deviation.outcome,
            ours.describe()
        ))
    }
}

fn declared_outcome_matches(
    declared: &DeclaredOutcome,
    ours: &Ours,
    input_state: Option<&[u8]>,
) -> bool {
    match (declared, ours) {
        (DeclaredOutcome::DecodeRejected(code), Ours::Undecodable(error)) => {
            error.code().as_str() == code
        }
        (DeclaredOutcome::Rejected(code), Ours::Reduced(outcome)) => match outcome.as_ref() {
            Outcome::Rejected(rejected) => {
                rejected.error_code.as_str() == code
                    && input_state == Some(rejected.state.canonical_bytes().as_slice())
            }
            _ => false,
        },
        (DeclaredOutcome::ReplayError(message), Ours::ReplayFailed(error)) => {
            error.reference_message() == message
        }
        _ => false,
    }
}

/// Where two byte strings first differ, with a little context from each.
fn byte_difference(ours: &[u8], expected: &[u8]) -> String {
    let offset = first_difference(ours, expected);
    let context = |bytes: &[u8]| {
        let start = offset.saturating_sub(40);
        let end = (offset + 40).min(bytes.len());
        printable(&String::from_utf8_lossy(&bytes[start.min(end)..end]))
    };
    format!(
        "first difference at byte {offset}: ours …{}… expected …{}…",
        context(ours),
        context(expected)
    )
}
