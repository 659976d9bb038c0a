//! The strict decoding stage: bytes of an observation file or line → a checked
//! [`AdapterObservation`], or a [`Rejection`] naming the file and the exact reason.

use std::collections::HashMap;
use std::path::{Component, Path};

use super::{Limits, Reason, Rejection};
use crate::abi::{AbiError, AdapterObservation};
use valp_view::sanitize::display_text;

/// Where an observation file lies, which decides who may have written it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `runtime/<adapter>/…`: the observation must be that adapter's.
    Runtime {
        /// The folder name under `runtime/`.
        adapter: String,
    },
    /// `inbox/…`: any runtime; the adapter is the one the observation claims.
    Inbox,
}

/// The origin of `path` (relative to the control root, as in [`Ingested`](super::Ingested)).
pub fn origin(path: &Path) -> Result<Origin, Rejection> {
    let misplaced = || Rejection::new(path, Reason::Misplaced);
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => match part.to_str() {
                Some(part) => parts.push(part),
                None => return Err(Rejection::new(path, Reason::NonUtf8Name)),
            },
            Component::CurDir => {}
            _ => return Err(misplaced()),
        }
    }
    match parts.as_slice() {
        ["runtime", adapter, _, ..] if !adapter.is_empty() && !adapter.starts_with('.') => {
            Ok(Origin::Runtime {
                adapter: (*adapter).to_owned(),
            })
        }
        ["inbox", _, ..] => Ok(Origin::Inbox),
        _ => Err(misplaced()),
    }
}

/// How many `{` of a line that is not one JSON value [`glued_record`] tries as the start of
/// the record glued to a fragment (a record holds a few dozen objects at most).
const GLUE_TRIES: usize = 64;

/// Where the record of a glued `*.jsonl` line starts, if it is one: a writer died halfway
/// through a line (no LF) and the next writer appended a complete record without starting a
/// new line, so the line is a fragment followed by exactly one JSON value. `None` when the
/// line is one JSON value (or none at all), or no suffix starting at one of its first
/// [`GLUE_TRIES`] `{` after byte 0 is one. Only well-formedness is judged here: the record
/// is then decoded like any line, and so is the fragment (which fails as malformed).
pub fn glued_record(line: &[u8]) -> Option<usize> {
    let one_value = |bytes: &[u8]| serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
    if one_value(line) {
        return None;
    }
    line.iter()
        .enumerate()
        .skip(1)
        .filter(|&(_, &byte)| byte == b'{')
        .map(|(at, _)| at)
        .take(GLUE_TRIES)
        .find(|&at| one_value(&line[at..]))
}

/// Decodes and checks one observation read from `path` (relative to the control root).
///
/// In order: the origin (`runtime/<adapter>/…` or `inbox/…`, else [`Reason::Misplaced`]); the
/// size cap ([`Limits::max_line_bytes`] for a `*.jsonl` line, [`Limits::max_file_bytes`]
/// otherwise: [`Reason::TooLarge`]); the exact shape ([`Reason::Malformed`]); every ABI rule
/// with the claimed adapter as observer ([`Reason::Invalid`], e.g. a tampered
/// `observation_id`); then, under `runtime/<adapter>/`, that the last provenance segment is
/// that adapter's ([`Reason::Foreign`]). Texts from the file are sanitized for display.
pub fn decode_observation(
    path: &Path,
    bytes: &[u8],
    limits: &Limits,
) -> Result<AdapterObservation, Rejection> {
    let origin = origin(path)?;
    let limit = if path.extension().is_some_and(|ext| ext == "jsonl") {
        limits.max_line_bytes
    } else {
        limits.max_file_bytes
    };
    let size = bytes.len() as u64;
    if size > limit {
        return Err(Rejection::new(path, Reason::TooLarge { size, limit }));
    }
    let reject = |error: AbiError| {
        Rejection::new(
            path,
            match error {
                AbiError::Shape(text) => Reason::Malformed(display_text(&text)),
                AbiError::Rule { field, rule } => Reason::Invalid {
                    field: display_text(&field),
                    rule: display_text(&rule),
                },
            },
        )
    };
    let observation = AdapterObservation::decode(bytes).map_err(reject)?;
    let claimed = observation
        .provenance
        .last()
        .map(|segment| segment.adapter_id.clone());
    // Every other rule first, so a tampered or broken record is named as such before its
    // placement is judged.
    observation
        .check(claimed.as_deref().unwrap_or_default())
        .map_err(reject)?;
    if let (Origin::Runtime { adapter }, Some(claimed)) = (&origin, claimed)
        && claimed != *adapter
    {
        return Err(Rejection::new(
            path,
            Reason::Foreign {
                observer: display_text(adapter),
                claimed: display_text(&claimed),
            },
        ));
    }
    Ok(observation)
}

/// Refuses observations that do not move their request forward: per `request.request_id`,
/// each admitted sequence must be greater than the last one admitted.
///
/// The same observation seen again (same sequence and `observation_id`, e.g. a file and a
/// line holding it, or a `*.jsonl` read again after a truncation) is a
/// [`Reason::Duplicate`]; any other sequence not greater than the last is
/// [`Reason::OutOfOrder`]. Gaps are allowed (an adapter may replace an observation file
/// before it was read). The runtime calls [`Sequencer::check`] before proposing events from an
/// observation and [`Sequencer::admit`] once they are recorded (or `admit` alone), and may
/// seed it from the journal at start with `admit`.
#[derive(Debug, Default, Clone)]
pub struct Sequencer {
    last: HashMap<String, (u64, String)>,
}

impl Sequencer {
    /// Nothing admitted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `observation` (read from `file`) would be admitted; changes nothing.
    pub fn check(&self, file: &Path, observation: &AdapterObservation) -> Result<(), Rejection> {
        let request_id = &observation.request.request_id;
        let Some((last, last_id)) = self.last.get(request_id) else {
            return Ok(());
        };
        let sequence = observation.sequence;
        if sequence > *last {
            return Ok(());
        }
        let request_id = display_text(request_id);
        let reason = if sequence == *last && observation.observation_id == *last_id {
            Reason::Duplicate {
                request_id,
                sequence,
            }
        } else {
            Reason::OutOfOrder {
                request_id,
                sequence,
                last: *last,
            }
        };
        Err(Rejection::new(file, reason))
    }

    /// [`Sequencer::check`], then records `observation` as the request's latest.
    pub fn admit(
        &mut self,
        file: &Path,
        observation: &AdapterObservation,
    ) -> Result<(), Rejection> {
        self.check(file, observation)?;
        self.last.insert(
            observation.request.request_id.clone(),
            (observation.sequence, observation.observation_id.clone()),
        );
        Ok(())
    }

    /// The last sequence admitted for `request_id`.
    pub fn last(&self, request_id: &str) -> Option<u64> {
        self.last.get(request_id).map(|(sequence, _)| *sequence)
    }

    /// Forgets a request (its attempt is settled), so memory does not grow with history.
    pub fn forget(&mut self, request_id: &str) {
        self.last.remove(request_id);
    }

    /// How many requests are tracked.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    /// Whether no request is tracked.
    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn origins() {
        assert_eq!(
            origin(Path::new("runtime/process/attempts/ab/abi-submit.json")).unwrap(),
            Origin::Runtime {
                adapter: "process".into()
            }
        );
        assert_eq!(origin(Path::new("inbox/x.json")).unwrap(), Origin::Inbox);
        assert_eq!(
            origin(Path::new("inbox/deep/er/x.jsonl")).unwrap(),
            Origin::Inbox
        );
        for bad in [
            "runtime/x.json",
            "inbox",
            "tasks/a/journal.jsonl",
            "/runtime/p/x.json",
            "runtime/../inbox/x.json",
        ] {
            assert_eq!(
                origin(Path::new(bad)).unwrap_err().reason,
                Reason::Misplaced,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_record_glued_to_a_fragment_is_found() {
        assert_eq!(glued_record(br#"{"a":1}"#), None);
        assert_eq!(glued_record(b"not json at all"), None);
        assert_eq!(
            glued_record(br#"{"request":{"id":"x{"b":{"c":2}}"#),
            Some(19)
        );
        assert_eq!(glued_record(br#"{"torn{"b":2}"#), Some(6));
        assert_eq!(glued_record(br#"garbage {"b":2} trailing"#), None);
    }

    #[test]
    fn the_cap_depends_on_the_kind() {
        let limits = Limits {
            max_file_bytes: 10,
            max_line_bytes: 5,
        };
        let rejection =
            decode_observation(Path::new("inbox/a.jsonl"), b"{\"a\":1}", &limits).unwrap_err();
        assert_eq!(rejection.reason, Reason::TooLarge { size: 7, limit: 5 });
        let rejection =
            decode_observation(Path::new("inbox/a.json"), b"{\"a\":1}", &limits).unwrap_err();
        assert_eq!(rejection.reason.code(), "malformed");
    }

    #[test]
    fn malformed_texts_are_sanitized() {
        let rejection = decode_observation(
            Path::new("inbox/a.json"),
            br#"{"\u001b]0;owned\u0007":1}"#,
            &Limits::default(),
        )
        .unwrap_err();
        let text = rejection.to_string();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text}"
        );
        let rejection = Rejection::new("inbox/\u{1b}[2Jx.json", Reason::Misplaced);
        assert_eq!(
            rejection.to_string(),
            "inbox/x.json: not under runtime/<adapter>/ or inbox/"
        );
    }
}
