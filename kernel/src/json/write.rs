//! The canonical JSON writer (RFC 0002 §5.3).
//!
//! Strings are escaped exactly as the VALP reference does (`json.dumps(ensure_ascii=False)`):
//! `"` and `\` are backslash-escaped, `\b \f \n \r \t` use their short forms, every other C0
//! control character is written as `\u00xx` with lowercase hex, and everything else (including
//! DEL, U+2028 and U+2029) is emitted as raw UTF-8.
//!
//! Typed artifacts write themselves through [`Fields`], which emits keys in the order the caller
//! gives them and checks in debug builds that the order is strictly ascending, so a typed writer
//! cannot silently produce non-canonical bytes.

use super::strict::run_end;
use super::value::{Number, Value};

/// A value the canonical writer cannot encode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// Kernel artifacts carry integers only; floats, exponents and out-of-range integers are
    /// refused rather than written in a form another implementation might print differently.
    #[error("non-integer number {0} cannot be written canonically")]
    NonInteger(String),
}

/// Appends the canonical form of `value` (without the trailing LF).
pub fn write_value(out: &mut Vec<u8>, value: &Value) -> Result<(), WriteError> {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(Number::Int(number)) => write_int(out, *number),
        Value::Number(Number::Other(text)) => return Err(WriteError::NonInteger(text.clone())),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item)?;
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map)?,
    }
    Ok(())
}

/// Appends the canonical form of the object `members` (what [`write_value`] of
/// `Value::Object(members)` appends, without a copy of them to make that value).
pub fn write_object(
    out: &mut Vec<u8>,
    members: &std::collections::BTreeMap<String, Value>,
) -> Result<(), WriteError> {
    out.push(b'{');
    for (index, (key, item)) in members.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, item)?;
    }
    out.push(b'}');
    Ok(())
}

/// The canonical bytes of a whole artifact: its canonical form plus one trailing LF.
pub fn canonical_bytes(value: &Value) -> Result<Vec<u8>, WriteError> {
    let mut out = Vec::new();
    write_value(&mut out, value)?;
    out.push(b'\n');
    Ok(out)
}

/// Bytes that must be escaped inside a JSON string: C0 controls, `"` and `\`.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Appends a JSON string literal.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    emit_str(text, |bytes| out.extend_from_slice(bytes));
}

/// Hands the bytes of the JSON string literal of `text` to `emit`, in pieces (for a hash fed
/// without a buffer); [`write_str`] appends the same bytes.
pub(crate) fn emit_str(text: &str, mut emit: impl FnMut(&[u8])) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = text.as_bytes();
    emit(b"\"");
    let mut run_start = 0;
    loop {
        // The next byte that needs escaping, found eight bytes at a time.
        let index = run_end(bytes, run_start);
        let Some(&byte) = bytes.get(index) else {
            break;
        };
        emit(&bytes[run_start..index]);
        run_start = index + 1;
        match byte {
            b'"' => emit(b"\\\""),
            b'\\' => emit(b"\\\\"),
            b'\n' => emit(b"\\n"),
            b'\r' => emit(b"\\r"),
            b'\t' => emit(b"\\t"),
            0x08 => emit(b"\\b"),
            0x0c => emit(b"\\f"),
            _ => emit(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0x0f)],
            ]),
        }
    }
    emit(&bytes[run_start..]);
    emit(b"\"");
}

/// Appends a decimal integer.
pub fn write_int(out: &mut Vec<u8>, number: i128) {
    if number < 0 {
        out.push(b'-');
    }
    let magnitude = number.unsigned_abs();
    let mut digits = [0u8; 40];
    let mut start = digits.len();
    if let Ok(mut small) = u64::try_from(magnitude) {
        loop {
            start -= 1;
            digits[start] = b'0' + digit(small % 10);
            small /= 10;
            if small == 0 {
                break;
            }
        }
    } else {
        let mut large = magnitude;
        while large > 0 {
            start -= 1;
            digits[start] = b'0' + digit128(large % 10);
            large /= 10;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

fn digit(remainder: u64) -> u8 {
    u8::try_from(remainder).unwrap_or(0)
}

fn digit128(remainder: u128) -> u8 {
    u8::try_from(remainder).unwrap_or(0)
}

/// Writes the members of one JSON object whose keys the caller supplies in ascending order.
///
/// ```
/// use valp_kernel::json::write::Fields;
/// let mut out = Vec::new();
/// let mut fields = Fields::begin(&mut out);
/// fields.str("a", "x");
/// fields.int("b", 1);
/// fields.end();
/// assert_eq!(out, br#"{"a":"x","b":1}"#);
/// ```
pub struct Fields<'o> {
    out: &'o mut Vec<u8>,
    previous: Option<&'static str>,
}

impl<'o> Fields<'o> {
    /// Opens the object.
    pub fn begin(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Self {
            out,
            previous: None,
        }
    }

    /// Continues an object whose opening brace and members up to `previous` (inclusive) the
    /// caller already wrote.
    pub fn resume(out: &'o mut Vec<u8>, previous: &'static str) -> Self {
        Self {
            out,
            previous: Some(previous),
        }
    }

    /// Writes `"key":` and returns the buffer for the member's value.
    ///
    /// Keys must be given in strictly ascending byte order; debug builds check it.
    pub fn key(&mut self, key: &'static str) -> &mut Vec<u8> {
        if let Some(previous) = self.previous {
            debug_assert!(
                previous < key,
                "canonical key order: {previous:?} before {key:?}"
            );
            self.out.push(b',');
        }
        self.previous = Some(key);
        // Member names are protocol identifiers (ASCII letters and `_`), which never need
        // escaping; debug builds check that.
        debug_assert!(key.bytes().all(|byte| !NEEDS_ESCAPE[usize::from(byte)]));
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// Writes a string member.
    pub fn str(&mut self, key: &'static str, value: &str) {
        write_str(self.key(key), value);
    }

    /// Writes an integer member.
    pub fn int(&mut self, key: &'static str, value: i128) {
        write_int(self.key(key), value);
    }

    /// Writes a boolean member.
    pub fn bool(&mut self, key: &'static str, value: bool) {
        let literal: &[u8] = if value { b"true" } else { b"false" };
        self.key(key).extend_from_slice(literal);
    }

    /// Writes an array-of-strings member.
    pub fn strs(&mut self, key: &'static str, values: &[String]) {
        let out = self.key(key);
        out.push(b'[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write_str(out, value);
        }
        out.push(b']');
    }

    /// Closes the object.
    pub fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_written_from_its_members_as_from_its_value() {
        let members = std::collections::BTreeMap::from([
            (
                "b\"".to_owned(),
                Value::Array(vec![Value::Null, Value::Bool(true)]),
            ),
            ("a".to_owned(), Value::Number(Number::Int(-12))),
            (
                "c".to_owned(),
                Value::Object(std::collections::BTreeMap::new()),
            ),
        ]);
        let mut direct = Vec::new();
        write_object(&mut direct, &members).unwrap();
        let mut whole = Vec::new();
        write_value(&mut whole, &Value::Object(members.clone())).unwrap();
        assert_eq!(direct, whole);
        assert_eq!(direct, br#"{"a":-12,"b\"":[null,true],"c":{}}"#);
        let float = std::collections::BTreeMap::from([(
            "x".to_owned(),
            Value::Number(Number::Other("1.5".to_owned())),
        )]);
        assert_eq!(
            write_object(&mut Vec::new(), &float),
            Err(WriteError::NonInteger("1.5".to_owned()))
        );
    }

    /// `write_str` as the byte-at-a-time loop it replaced wrote it.
    fn one_byte_at_a_time(text: &str) -> Vec<u8> {
        let mut out = vec![b'"'];
        for &byte in text.as_bytes() {
            match byte {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                byte if byte < 0x20 => out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
                byte => out.push(byte),
            }
        }
        out.push(b'"');
        out
    }

    #[test]
    fn write_str_escapes_every_byte_where_it_stands_in_runs_of_any_length() {
        let specials = [
            "\"", "\\", "\n", "\u{1}", "\u{1f}", "\u{7f}", "é", "\u{2028}", " ",
        ];
        for len in 0..20 {
            let plain = "a".repeat(len);
            for special in specials {
                for at in 0..=len {
                    let text = format!("{}{special}{}", &plain[..at], &plain[at..]);
                    let mut out = Vec::new();
                    write_str(&mut out, &text);
                    assert_eq!(out, one_byte_at_a_time(&text), "{text:?}");
                }
            }
        }
    }
}
