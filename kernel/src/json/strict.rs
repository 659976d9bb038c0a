//! A parser that accepts only canonical JSON text (RFC 0002 §5.3), so that reading a stored
//! artifact is one pass over its bytes: no write-back and comparison.
//!
//! [`parse_canonical`] returns the value only when the text is byte for byte what the canonical
//! writer ([`write`](super::write)) gives for it: no whitespace, object keys strictly ascending
//! by their decoded bytes, integers only and in their one decimal spelling (no `-0`, no leading
//! zeros, within `i128`), strings escaped exactly as the writer escapes (`\"`, `\\`, the five
//! short forms, `\u00xx` in lowercase hex for the other C0 controls, nothing else escaped), and
//! nesting no deeper than [`MAX_DEPTH`]. On anything else it answers `None` without saying why:
//! the caller ([`decode_canonical`](crate::canonical::decode_canonical)) then takes the
//! general path (parse, write back, compare), which names the exact error, so every refusal is
//! the one it always was. The value it returns is the one [`parse`](super::parse()) gives.

use std::collections::BTreeMap;

use super::parse::MAX_DEPTH;
use super::value::{Number, Value};

/// The value of `text` if `text` is exactly its canonical form (without the trailing LF).
pub fn parse_canonical(text: &str) -> Option<Value> {
    let mut parser = Strict {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    let value = parser.value(0)?;
    (parser.pos == parser.bytes.len()).then_some(value)
}

struct Strict<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Strict<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.pos += usize::from(next);
        next
    }

    fn literal(&mut self, literal: &[u8], value: Value) -> Option<Value> {
        self.bytes.get(self.pos..)?.starts_with(literal).then(|| {
            self.pos += literal.len();
            value
        })
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => self.string().map(Value::String),
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'n' => self.literal(b"null", Value::Null),
            b'-' | b'0'..=b'9' => self.integer(),
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let mut members: Vec<(String, Value)> = Vec::new();
        if !self.eat(b'}') {
            loop {
                if self.peek() != Some(b'"') {
                    return None;
                }
                let key = self.string()?;
                if members.last().is_some_and(|(last, _)| *last >= key) || !self.eat(b':') {
                    return None;
                }
                let value = self.value(depth)?;
                members.push((key, value));
                if self.eat(b'}') {
                    break;
                }
                if !self.eat(b',') {
                    return None;
                }
            }
        }
        // Sorted and unique: built in one pass.
        Some(Value::Object(
            members.into_iter().collect::<BTreeMap<_, _>>(),
        ))
    }

    fn array(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.pos += 1;
        let mut items = Vec::new();
        if self.eat(b']') {
            return Some(Value::Array(items));
        }
        loop {
            items.push(self.value(depth)?);
            if self.eat(b']') {
                return Some(Value::Array(items));
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)`, not `-0`, within `i128`.
    fn integer(&mut self) -> Option<Value> {
        let start = self.pos;
        let negative = self.eat(b'-');
        match self.peek()? {
            b'0' => {
                self.pos += 1;
                if negative {
                    return None;
                }
            }
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let number = self.text.get(start..self.pos)?.parse::<i128>().ok()?;
        Some(Value::Number(Number::Int(number)))
    }

    /// A string escaped exactly as the canonical writer escapes it.
    fn string(&mut self) -> Option<String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let run_start = self.pos;
            while let Some(byte) = self.peek() {
                if byte == b'"' || byte == b'\\' || byte < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            out.push_str(self.text.get(run_start..self.pos)?);
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                _ => return None,
            }
        }
    }

    fn escape(&mut self) -> Option<char> {
        let byte = self.peek()?;
        self.pos += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                // Only `\u00xx` in lowercase hex, for a C0 control without a short form.
                let digits = self.bytes.get(self.pos..self.pos + 4)?;
                let nibble = |digit: u8| match digit {
                    b'0'..=b'9' => Some(digit - b'0'),
                    b'a'..=b'f' => Some(digit - b'a' + 10),
                    _ => None,
                };
                if digits[..2] != *b"00" {
                    return None;
                }
                let code = (nibble(digits[2])? << 4) | nibble(digits[3])?;
                if code >= 0x20 || matches!(code, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                    return None;
                }
                self.pos += 4;
                char::from(code)
            }
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::json::{parse, write};

    /// The strict parser accepts `text` exactly when parse + write-back reproduces it, with the
    /// same value.
    fn agrees(text: &str) {
        let general = parse(text).ok().filter(|value| {
            write::canonical_bytes(value).ok().as_deref()
                == Some(&[text.as_bytes(), b"\n"].concat())
        });
        assert_eq!(parse_canonical(text), general, "{text:?}");
    }

    #[test]
    fn accepts_exactly_the_canonical_texts() {
        for text in [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a" :1}"#,
            r#"{"a":1 }"#,
            "[1, 2]",
            " 1",
            "1 ",
            "-0",
            "0",
            "-1",
            "01",
            "1.0",
            "1e3",
            "170141183460469231731687303715884105727",
            "170141183460469231731687303715884105728",
            "-170141183460469231731687303715884105728",
            r#""\/""#,
            r#""/""#,
            r#""\u0041""#,
            r#""\u001f""#,
            r#""\u001F""#,
            r#""\u000a""#,
            r#""\n""#,
            r#""\u0000""#,
            r#""\ud83d\ude00""#,
            "\"\u{1f600}\u{7f}\u{2028}\"",
            r#""a\"b\\c\b\f\r\t""#,
            r#"{"\u0001":1,"\u0002":2}"#,
            r#"{"\t":1,"\b":2}"#,
            r#"{"":0}"#,
            "{}",
            "[]",
            "[[]]",
            "tru",
            "nul",
            "\"abc",
            "[1,]",
            "{\"a\":1,}",
            "",
            "-",
            "[-]",
        ] {
            agrees(text);
        }
        agrees(&"[".repeat(MAX_DEPTH));
        agrees(&format!(
            "{}{}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        ));
        agrees(&format!(
            "{}{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        ));
    }

    #[test]
    fn agrees_on_every_one_byte_change_of_a_canonical_line() {
        let text = r#"{"entry":{"event":{"a":[1,-2,"x\ty"],"b":null},"n":-170141183460469231731687303715884105728},"z":"\u0001é"}"#;
        agrees(text);
        let bytes = text.as_bytes();
        for index in 0..bytes.len() {
            for replacement in [
                b' ', b'"', b'\\', b'0', b'1', b'-', b'a', b'z', b'{', b'}', b'[', b']', b',',
                b':', b'e', b'.',
            ] {
                let mut changed = bytes.to_vec();
                changed[index] = replacement;
                if let Ok(changed) = std::str::from_utf8(&changed) {
                    agrees(changed);
                }
                let mut cut = bytes.to_vec();
                cut.remove(index);
                if let Ok(cut) = std::str::from_utf8(&cut) {
                    agrees(cut);
                }
            }
        }
    }
}
