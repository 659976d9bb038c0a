//! Canonical bytes and digests of kernel artifacts, and the strict decoder for them.
//!
//! `digest(x) = "sha256:" + lowercase hex(SHA-256(canonical bytes of x))`, where the canonical
//! bytes are the [`json::write`](crate::json::write) form plus exactly one trailing LF. The same
//! writer produces the bytes that are stored and the bytes that are hashed.
//!
//! [`decode_canonical`] is the fail-closed reader for stored artifacts: it accepts a text only if
//! it is byte-for-byte the canonical encoding of what it parses to.

use sha2::{Digest as _, Sha256};

use crate::json::write::{self, Fields, WriteError};
use crate::json::{self, ParseError, Value};

/// Length of a digest text: `sha256:` plus 64 hex digits.
pub const DIGEST_LEN: usize = 71;

/// The digest of the empty replay prefix
/// `{"entries":[],"schema_version":"valp-kernel-replay-prefix.v1"}` + LF (RFC 0002 §5.3).
pub const EMPTY_REPLAY_PREFIX_DIGEST: &str =
    "sha256:fa1f226ad4960367691ffda3176c5f45a463c102a791799d33dcf2bbfa08b54d";

/// A kernel type with a canonical JSON form.
pub trait Canonical {
    /// Appends the canonical form (without the trailing LF).
    fn write_canonical(&self, out: &mut Vec<u8>);

    /// The canonical bytes, including the one trailing LF.
    fn canonical_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        self.write_canonical(&mut out);
        out.push(b'\n');
        out
    }

    /// `sha256:` + hex of the canonical bytes.
    fn digest(&self) -> String {
        sha256_digest(&self.canonical_bytes())
    }
}

/// The digest of the canonical form `write` appends, closed by the one trailing LF: for forms
/// that are not a whole [`Canonical`] value, such as a record's members without its own id.
pub fn form_digest(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut out = Vec::new();
    write(&mut out);
    out.push(b'\n');
    sha256_digest(&out)
}

/// `sha256:` + lowercase hex of the SHA-256 of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    digest_text(&Sha256::digest(bytes).into())
}

/// Formats a raw SHA-256 output as digest text.
pub fn digest_text(hash: &[u8; 32]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; DIGEST_LEN];
    text[..7].copy_from_slice(b"sha256:");
    for (pair, byte) in text[7..].chunks_exact_mut(2).zip(hash) {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0x0f)];
    }
    // Only ASCII was written: the check passes (and costs one pass over 71 bytes).
    String::from_utf8(text.to_vec()).unwrap_or_default()
}

/// The value of each lowercase hex digit, [`NOT_HEX`] for every other byte.
const HEX_VALUE: [u8; 256] = {
    let mut table = [NOT_HEX; 256];
    let mut value: u8 = 0;
    while value < 16 {
        let digit = if value < 10 {
            b'0' + value
        } else {
            b'a' + value - 10
        };
        table[digit as usize] = value;
        value += 1;
    }
    table
};

/// [`HEX_VALUE`] of a byte that is not a lowercase hex digit.
const NOT_HEX: u8 = 0xff;

/// The raw bytes of a `sha256:` + 64 lowercase hex digest text (the inverse of [`digest_text`]).
pub fn raw_digest(text: &str) -> Option<[u8; 32]> {
    let hex = text.strip_prefix("sha256:")?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut raw = [0; 32];
    let mut seen = 0;
    for (out, pair) in raw.iter_mut().zip(hex.chunks_exact(2)) {
        let (high, low) = (
            HEX_VALUE[usize::from(pair[0])],
            HEX_VALUE[usize::from(pair[1])],
        );
        seen |= high | low;
        *out = (high << 4) | (low & 0x0f);
    }
    // A digit is at most 15; a byte that is not one sets the high bits.
    (seen & 0xf0 == 0).then_some(raw)
}

/// Whether `text` is a well-formed digest: `sha256:` followed by exactly 64 lowercase hex digits.
pub fn is_digest(text: &str) -> bool {
    text.len() == DIGEST_LEN
        && text.starts_with("sha256:")
        && text.as_bytes()[7..]
            .iter()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why stored bytes are not a canonical kernel artifact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CanonicalError {
    /// The text starts with a UTF-8 byte order mark.
    #[error("byte order mark at byte 0")]
    ByteOrderMark,
    /// The bytes are not valid UTF-8.
    #[error("invalid UTF-8 at byte {offset}")]
    InvalidUtf8 {
        /// First invalid byte.
        offset: usize,
    },
    /// A carriage return anywhere in the text.
    #[error("carriage return at byte {offset}")]
    CarriageReturn {
        /// Offset of the CR byte.
        offset: usize,
    },
    /// The text does not end with LF.
    #[error("missing final LF")]
    MissingFinalLf,
    /// An LF before the end of the text (a blank line or a second record).
    #[error("unexpected LF at byte {offset}")]
    UnexpectedLf {
        /// Offset of the extra LF.
        offset: usize,
    },
    /// Not JSON.
    #[error("invalid JSON: {0}")]
    Parse(#[from] ParseError),
    /// A number that is not an integer.
    #[error(transparent)]
    NonInteger(#[from] WriteError),
    /// Valid JSON whose bytes differ from its canonical encoding.
    #[error("not canonical: first difference at byte {offset}")]
    NotCanonical {
        /// First byte where the text and its canonical encoding differ.
        offset: usize,
    },
}

/// Parses one canonical artifact (`canonical form + LF`) and refuses anything else: a BOM, a CR,
/// a missing or extra LF, duplicate keys, non-integer numbers, or any byte that differs from the
/// canonical re-encoding of the parsed value.
pub fn decode_canonical(bytes: &[u8]) -> Result<Value, CanonicalError> {
    // One pass when the text is canonical (every stored artifact): a canonical text has no BOM,
    // CR or inner LF and is valid UTF-8, so the checks below only name what is wrong, in the
    // order they always did, and every refusal is the one it always was.
    if let Some((&b'\n', body)) = bytes.split_last()
        && let Some(value) = json::strict::parse_canonical_bytes(body)
    {
        return Ok(value);
    }
    if bytes.starts_with(&[0xEF, 0xBB, 0xBF]) {
        return Err(CanonicalError::ByteOrderMark);
    }
    if let Some(offset) = bytes.iter().position(|&byte| byte == b'\r') {
        return Err(CanonicalError::CarriageReturn { offset });
    }
    let Some((&b'\n', body)) = bytes.split_last() else {
        return Err(CanonicalError::MissingFinalLf);
    };
    if let Some(offset) = body.iter().position(|&byte| byte == b'\n') {
        return Err(CanonicalError::UnexpectedLf { offset });
    }
    let text = std::str::from_utf8(body).map_err(|error| CanonicalError::InvalidUtf8 {
        offset: error.valid_up_to(),
    })?;
    let value = json::parse(text)?;
    let canonical = write::canonical_bytes(&value)?;
    if canonical != bytes {
        return Err(CanonicalError::NotCanonical {
            offset: first_difference(&canonical, bytes),
        });
    }
    Ok(value)
}

/// The first offset at which two byte strings differ (the shorter length if one is a prefix).
pub fn first_difference(left: &[u8], right: &[u8]) -> usize {
    left.iter()
        .zip(right)
        .position(|(a, b)| a != b)
        .unwrap_or(left.len().min(right.len()))
}

impl Fields<'_> {
    /// Writes a member whose value is a canonical kernel type.
    pub fn canonical<T: Canonical + ?Sized>(&mut self, key: &'static str, value: &T) {
        value.write_canonical(self.key(key));
    }

    /// Writes a member only when the value is present (absent optional slots are omitted).
    pub fn optional<T: Canonical>(&mut self, key: &'static str, value: Option<&T>) {
        if let Some(value) = value {
            self.canonical(key, value);
        }
    }

    /// Writes an array member of canonical kernel types, in the given order.
    pub fn list<T: Canonical>(&mut self, key: &'static str, items: &[T]) {
        write_list(self.key(key), items);
    }
}

/// Appends a JSON array of canonical kernel types, in the given order.
pub fn write_list<'a, T: Canonical + 'a>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = &'a T>,
) {
    out.push(b'[');
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        item.write_canonical(out);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_text_and_raw_digest_are_inverse_and_raw_digest_takes_only_digest_text() {
        let hashes: Vec<[u8; 32]> = (0..=255u8)
            .map(|seed| {
                std::array::from_fn(|at| {
                    seed.wrapping_mul(31)
                        .wrapping_add(u8::try_from(at).unwrap_or(0).wrapping_mul(7))
                })
            })
            .collect();
        for hash in &hashes {
            let text = digest_text(hash);
            assert_eq!(text.len(), DIGEST_LEN);
            assert!(is_digest(&text));
            assert_eq!(raw_digest(&text), Some(*hash));
            // Any one byte of the hex part that is not a lowercase hex digit: refused, as
            // `is_digest` refuses it.
            for at in 7..DIGEST_LEN {
                for byte in (0..=127u8)
                    .filter(|byte| !byte.is_ascii_hexdigit() || byte.is_ascii_uppercase())
                {
                    let mut changed = text.clone().into_bytes();
                    changed[at] = byte;
                    let changed = String::from_utf8(changed).unwrap_or_default();
                    assert_eq!(raw_digest(&changed), None, "{changed:?}");
                    assert!(!is_digest(&changed));
                }
            }
        }
        assert_eq!(
            raw_digest(&digest_text(&[0xab; 32])[..DIGEST_LEN - 1]),
            None
        );
        assert_eq!(raw_digest(&format!("sha256:{}", "0".repeat(65))), None);
        assert_eq!(raw_digest(&format!("sha257:{}", "0".repeat(64))), None);
    }
}
