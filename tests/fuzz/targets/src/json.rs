//! The kernel's strict JSON parser ([`valp_kernel::json::parse`]).

use valp_kernel::canonical::decode_canonical;
use valp_kernel::json::{self, write};

/// An accepted text parses to a value whose canonical bytes parse back to the same value (and
/// are accepted by the canonical decoder), unless it holds a non-integer number, which the
/// canonical writer refuses; a refused text names an offset inside it.
pub fn json_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let value = match json::parse(text) {
        Ok(value) => value,
        Err(error) => {
            assert!(error.offset <= text.len(), "offset past the end: {error}");
            return;
        }
    };
    let Ok(bytes) = write::canonical_bytes(&value) else {
        return;
    };
    let body = std::str::from_utf8(&bytes[..bytes.len() - 1]).expect("canonical bytes are UTF-8");
    assert_eq!(
        json::parse(body).as_ref(),
        Ok(&value),
        "canonical form parses differently"
    );
    assert_eq!(
        decode_canonical(&bytes),
        Ok(value),
        "canonical form not canonical"
    );
}
