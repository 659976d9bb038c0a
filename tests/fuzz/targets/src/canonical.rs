//! The canonical decoder ([`decode_canonical`]) and the typed decoders of stored artifacts.

use valp_kernel::canonical::{Canonical, CanonicalError, decode_canonical, write_list};
use valp_kernel::decode::{
    decode_checkpoint_authentication, decode_checkpoint_root, decode_compact_entry,
    decode_compact_entry_canonical, decode_event, decode_evidence, decode_evidence_set,
    decode_genesis_root, decode_outcome, decode_replay_entry, decode_state, decode_trust_policy,
};
use valp_kernel::done::{decode_done_closure, decode_done_gate, decode_done_policy};
use valp_kernel::installation::{
    decode_installation_entry, decode_installation_event, decode_installation_genesis,
    decode_installation_state,
};
use valp_kernel::json::{Value, write};
use valp_runtime::plan::Plan;

/// Accepted bytes are exactly the canonical encoding of what they decode to, and every typed
/// decoder that accepts the value re-encodes it to the same bytes, up to the order of the sets
/// ([`SETS`]); refused bytes name an offset inside them.
pub fn canonical_decode(data: &[u8]) {
    // The compact entry read straight from the bytes (a journal's fast path) answers only for
    // text the general path accepts, and then with the general path's entry.
    let fast = data
        .split_last()
        .filter(|(last, _)| **last == b'\n')
        .and_then(|(_, body)| decode_compact_entry_canonical(body));
    let value = match decode_canonical(data) {
        Ok(value) => value,
        Err(error) => {
            assert_offset_in(data, &error);
            assert!(
                fast.is_none(),
                "the fast path decoded bytes that are refused: {error}"
            );
            return;
        }
    };
    if let Some(entry) = fast {
        assert_eq!(
            decode_compact_entry(&value),
            Ok(entry),
            "the two paths disagree"
        );
    }
    assert_eq!(
        write::canonical_bytes(&value).as_deref(),
        Ok(data),
        "decode_canonical accepted bytes that are not canonical"
    );
    typed(data, &value);
    if let Ok(plan) = Plan::from_canonical("fuzz", data) {
        same_bytes(data, &value, "Plan::from_canonical", &plan);
    }
}

/// Runs every typed decoder over `value` (the decoding of `data`).
fn typed(data: &[u8], value: &Value) {
    macro_rules! decoders {
        ($($decode:ident),* $(,)?) => {
            $(
                if let Ok(decoded) = $decode(value) {
                    same_bytes(data, value, stringify!($decode), &decoded);
                }
            )*
        };
    }
    decoders!(
        decode_state,
        decode_event,
        decode_evidence,
        decode_outcome,
        decode_genesis_root,
        decode_replay_entry,
        decode_compact_entry,
        decode_checkpoint_root,
        decode_trust_policy,
        decode_checkpoint_authentication,
        decode_done_policy,
        decode_done_closure,
        decode_done_gate,
        decode_installation_state,
        decode_installation_event,
        decode_installation_genesis,
        decode_installation_entry,
    );
    if let Ok(evidence_set) = decode_evidence_set(value) {
        let mut bytes = Vec::new();
        write_list(&mut bytes, &evidence_set);
        bytes.push(b'\n');
        assert_eq!(bytes, data, "decode_evidence_set does not keep the order");
    }
}

/// `decoded` (what decoder `name` made of `value`, the decoding of `data`) encodes to `data`, or to
/// `data` with its sets sorted.
fn same_bytes(data: &[u8], value: &Value, name: &str, decoded: &impl Canonical) {
    let bytes = decoded.canonical_bytes();
    if bytes == data {
        return;
    }
    let sorted = write::canonical_bytes(&with_sorted_sets(value)).unwrap();
    assert!(
        bytes == sorted,
        "{name} does not re-encode to the same bytes:\n input {}\n again {}",
        String::from_utf8_lossy(data),
        String::from_utf8_lossy(&bytes)
    );
}

fn assert_offset_in(data: &[u8], error: &CanonicalError) {
    let offset = match error {
        CanonicalError::InvalidUtf8 { offset }
        | CanonicalError::CarriageReturn { offset }
        | CanonicalError::UnexpectedLf { offset }
        | CanonicalError::NotCanonical { offset } => *offset,
        CanonicalError::Parse(error) => error.offset,
        CanonicalError::ByteOrderMark
        | CanonicalError::MissingFinalLf
        | CanonicalError::NonInteger(_) => 0,
    };
    assert!(offset <= data.len(), "offset past the end: {error}");
}

/// The members that are sets: decoded in any order, encoded sorted by their items' canonical
/// bytes (RFC 0002 §5.3 for the EvidenceSet, §8 for the trust policy's ids).
const SETS: [&str; 2] = ["evidence_set", "trusted_evidence_ids"];

/// `value` with every set ([`SETS`]) sorted by its items' canonical bytes.
fn with_sorted_sets(value: &Value) -> Value {
    match value {
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(key, member)| {
                    let mut member = with_sorted_sets(member);
                    if let (true, Value::Array(items)) = (SETS.contains(&key.as_str()), &mut member)
                    {
                        items.sort_by_cached_key(|item| write::canonical_bytes(item).unwrap());
                    }
                    (key.clone(), member)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_sorted_sets).collect()),
        other => other.clone(),
    }
}
