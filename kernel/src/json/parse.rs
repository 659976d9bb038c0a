//! A strict RFC 8259 parser.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use super::value::{Number, Value};

/// Objects and arrays nested deeper than this are refused, so hostile input cannot exhaust the
/// stack.
pub const MAX_DEPTH: usize = 128;

/// Why a text is not acceptable JSON, with the byte offset where the problem was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind} at byte {offset}")]
pub struct ParseError {
    /// Byte offset into the parsed text.
    pub offset: usize,
    /// What is wrong there.
    pub kind: ParseErrorKind,
}

/// The kinds of [`ParseError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// The text ended inside a value.
    #[error("unexpected end of input")]
    UnexpectedEnd,
    /// A byte that cannot start or continue the current token.
    #[error("unexpected character {0:?}")]
    UnexpectedChar(char),
    /// Non-whitespace after the top-level value.
    #[error("trailing characters after the JSON value")]
    TrailingCharacters,
    /// The same key twice in one object.
    #[error("duplicate object key {0:?}")]
    DuplicateKey(String),
    /// A malformed number.
    #[error("invalid number")]
    InvalidNumber,
    /// A malformed escape sequence.
    #[error("invalid escape sequence")]
    InvalidEscape,
    /// A `\u` escape that encodes half of a surrogate pair.
    #[error("lone UTF-16 surrogate in \\u escape")]
    LoneSurrogate,
    /// A raw control character inside a string.
    #[error("unescaped control character U+{0:04X} in string")]
    ControlCharacter(u32),
    /// Nesting deeper than [`MAX_DEPTH`].
    #[error("nesting deeper than {MAX_DEPTH} levels")]
    TooDeep,
}

/// Parses one JSON text. Whitespace around the value is allowed; anything else after it is not.
pub fn parse(text: &str) -> Result<Value, ParseError> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        text,
        pos: 0,
    };
    parser.skip_whitespace();
    let value = parser.value(0)?;
    parser.skip_whitespace();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error(ParseErrorKind::TrailingCharacters));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            offset: self.pos,
            kind,
        }
    }

    fn unexpected(&self) -> ParseError {
        match self.text[self.pos..].chars().next() {
            Some(character) => self.error(ParseErrorKind::UnexpectedChar(character)),
            None => self.error(ParseErrorKind::UnexpectedEnd),
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn expect_literal(&mut self, literal: &str, value: Value) -> Result<Value, ParseError> {
        if self.bytes[self.pos..].starts_with(literal.as_bytes()) {
            self.pos += literal.len();
            Ok(value)
        } else {
            Err(self.unexpected())
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, ParseError> {
        match self.peek() {
            None => Err(self.error(ParseErrorKind::UnexpectedEnd)),
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => self.string().map(Value::String),
            Some(b't') => self.expect_literal("true", Value::Bool(true)),
            Some(b'f') => self.expect_literal("false", Value::Bool(false)),
            Some(b'n') => self.expect_literal("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.unexpected()),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error(ParseErrorKind::TooDeep));
        }
        self.pos += 1;
        let mut map = BTreeMap::new();
        self.skip_whitespace();
        if self.peek() == Some(b'}') {
            self.pos += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected());
            }
            let key_offset = self.pos;
            let key = self.string()?;
            self.skip_whitespace();
            if self.peek() != Some(b':') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.skip_whitespace();
            let value = self.value(depth)?;
            match map.entry(key) {
                Entry::Occupied(entry) => {
                    return Err(ParseError {
                        offset: key_offset,
                        kind: ParseErrorKind::DuplicateKey(entry.key().clone()),
                    });
                }
                Entry::Vacant(entry) => {
                    entry.insert(value);
                }
            }
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ParseError> {
        if depth > MAX_DEPTH {
            return Err(self.error(ParseErrorKind::TooDeep));
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.peek() == Some(b']') {
            self.pos += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_whitespace();
            items.push(self.value(depth)?);
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected()),
            }
        }
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => self.skip_digits(),
            _ => return Err(self.error(ParseErrorKind::InvalidNumber)),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.pos += 1;
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
            self.skip_digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            integral = false;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !matches!(self.peek(), Some(b'0'..=b'9')) {
                return Err(self.error(ParseErrorKind::InvalidNumber));
            }
            self.skip_digits();
        }
        let literal = &self.text[start..self.pos];
        let number = match literal.parse::<i128>() {
            Ok(integer) if integral => Number::Int(integer),
            _ => Number::Other(literal.to_owned()),
        };
        Ok(Value::Number(number))
    }

    fn skip_digits(&mut self) {
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
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
            out.push_str(&self.text[run_start..self.pos]);
            match self.peek() {
                None => return Err(self.error(ParseErrorKind::UnexpectedEnd)),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(control) => {
                    return Err(self.error(ParseErrorKind::ControlCharacter(u32::from(control))));
                }
            }
        }
    }

    fn escape(&mut self) -> Result<char, ParseError> {
        let Some(byte) = self.peek() else {
            return Err(self.error(ParseErrorKind::UnexpectedEnd));
        };
        self.pos += 1;
        Ok(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => {
                self.pos -= 1;
                return Err(self.error(ParseErrorKind::InvalidEscape));
            }
        })
    }

    fn unicode_escape(&mut self) -> Result<char, ParseError> {
        let first = self.hex4()?;
        let code = match first {
            0xD800..=0xDBFF => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(self.error(ParseErrorKind::LoneSurrogate));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&second) {
                    return Err(self.error(ParseErrorKind::LoneSurrogate));
                }
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(self.error(ParseErrorKind::LoneSurrogate)),
            _ => first,
        };
        char::from_u32(code).ok_or_else(|| self.error(ParseErrorKind::InvalidEscape))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        let digits = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| self.error(ParseErrorKind::UnexpectedEnd))?;
        let mut code = 0;
        for &digit in digits {
            let nibble = char::from(digit)
                .to_digit(16)
                .ok_or_else(|| self.error(ParseErrorKind::InvalidEscape))?;
            code = code * 16 + nibble;
        }
        self.pos += 4;
        Ok(code)
    }
}
