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

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::parse::MAX_DEPTH;
use super::value::{Number, Value};

/// The value of `text` if `text` is exactly its canonical form (without the trailing LF).
pub fn parse_canonical(text: &str) -> Option<Value> {
    let mut parser = Strict::new(text);
    let value = parser.value(0)?;
    parser.at_end().then_some(value)
}

/// [`parse_canonical`] over bytes: a canonical text is valid UTF-8 (raw bytes above ASCII only
/// inside strings, each string checked), has no BOM, CR or LF, so a caller that gets a value
/// needs no other check of the text.
pub fn parse_canonical_bytes(bytes: &[u8]) -> Option<Value> {
    parse_canonical(std::str::from_utf8(bytes).ok()?)
}

/// Whether `bytes` is exactly a canonical text, checked as [`parse_canonical_bytes`] checks it
/// but building nothing (no value, no owned string unless a key holds an escape).
pub fn is_canonical(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| {
        let mut parser = Strict::new(text);
        parser.skip(0).is_some() && parser.at_end()
    })
}

/// How many bytes the canonical value at the start of `text` takes, read as the value of a member
/// of a top-level object (nesting counted from there, as [`parse_canonical_lazy`] counts it for
/// the member it leaves out); `None` when no canonical value starts there. For a caller that
/// reads an object's frame by position and only needs one member's value checked.
pub fn member_value_len(text: &str) -> Option<usize> {
    let mut parser = Strict::new(text);
    parser.skip(1)?;
    Some(parser.pos)
}

/// How a caller reads one member of a canonical object itself: given the text from the member's
/// value to the end, it answers how many bytes the value took (it must be a whole canonical
/// value), or `None` to have it checked without being read.
pub type ReadMember<'r> = &'r mut dyn FnMut(&str) -> Option<usize>;

/// The members of the canonical object `bytes` (or the canonical value, if it is not an
/// object), except `lazy`: that member is left out of the map and its byte range in `bytes`
/// returned instead (`None` if there is no such member). Its value is handed to `read` first;
/// where `read` does not take it, it is checked as [`is_canonical`] checks a text. For a caller
/// that decodes one large member straight from its bytes, in the same pass.
pub fn parse_canonical_lazy(
    bytes: &[u8],
    lazy: &str,
    read: ReadMember<'_>,
) -> Option<(Value, Option<std::ops::Range<usize>>)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut parser = Strict::new(text);
    if parser.peek() != Some(b'{') {
        return parse_canonical(text).map(|value| (value, None));
    }
    let mut members: Vec<(String, Value)> = Vec::new();
    let mut range = None;
    parser.members(1, |parser, key, depth| {
        if key == lazy {
            let start = parser.pos;
            let taken = parser
                .text
                .get(start..)
                .and_then(&mut *read)
                .filter(|taken| parser.text.is_char_boundary(start + taken));
            match taken {
                Some(taken) => parser.pos += taken,
                None => parser.skip(depth)?,
            }
            range = Some(start..parser.pos);
        } else {
            members.push((key.into_owned(), parser.value(depth)?));
        }
        Some(())
    })?;
    parser.at_end().then_some(())?;
    Some((Value::Object(members.into_iter().collect()), range))
}

/// A cursor over canonical text: the one parser behind [`parse_canonical`], [`is_canonical`]
/// and the typed decoders that read kernel artifacts straight from their bytes
/// ([`decode_compact_entry_canonical`](crate::decode::decode_compact_entry_canonical)). Every
/// method answers `None` on anything that is not canonical (or not the shape asked for);
/// callers then take the general path.
pub(crate) struct Strict<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Strict<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    /// How many bytes were read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Whether every byte was read.
    pub(crate) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    /// Consumes `byte` if it is next.
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.pos += usize::from(next);
        next
    }

    /// Consumes `literal` if it is next.
    pub(crate) fn eat_literal(&mut self, literal: &[u8]) -> bool {
        let next = self
            .bytes
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(literal));
        if next {
            self.pos += literal.len();
        }
        next
    }

    fn literal(&mut self, literal: &[u8], value: Value) -> Option<Value> {
        self.eat_literal(literal).then_some(value)
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        match self.peek()? {
            b'{' => {
                let mut members: Vec<(String, Value)> = Vec::new();
                self.members(depth + 1, |parser, key, depth| {
                    members.push((key.into_owned(), parser.value(depth)?));
                    Some(())
                })?;
                // Sorted and unique: built in one pass.
                Some(Value::Object(
                    members.into_iter().collect::<BTreeMap<_, _>>(),
                ))
            }
            b'[' => {
                let mut items = Vec::new();
                self.items(depth + 1, |parser, depth| {
                    items.push(parser.value(depth)?);
                    Some(())
                })?;
                Some(Value::Array(items))
            }
            b'"' => self.string().map(|text| Value::String(text.into_owned())),
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'n' => self.literal(b"null", Value::Null),
            b'-' | b'0'..=b'9' => self
                .integer()
                .map(|number| Value::Number(Number::Int(number))),
            _ => None,
        }
    }

    /// Reads one canonical value, building nothing.
    pub(crate) fn skip(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'{' => self.members(depth + 1, |parser, _, depth| parser.skip(depth)),
            b'[' => self.items(depth + 1, Self::skip),
            b'"' => self.string().map(drop),
            _ => self.value(depth).map(drop),
        }
    }

    /// An object at nesting `depth`: each member's key (strictly ascending) is handed to
    /// `member`, which must read its value (at the depth it is given).
    pub(crate) fn members(
        &mut self,
        depth: usize,
        mut member: impl FnMut(&mut Self, Cow<'a, str>, usize) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        let mut last: Option<Cow<'a, str>> = None;
        loop {
            if self.peek() != Some(b'"') {
                return None;
            }
            let key = self.string()?;
            if last.as_ref().is_some_and(|last| *last >= key) || !self.eat(b':') {
                return None;
            }
            member(self, key.clone(), depth)?;
            last = Some(key);
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// An object at nesting `depth` whose keys are all among `known` (its keys in ascending
    /// order, as canonical text orders them, each with what it names; every key plain ASCII
    /// that needs no escape, so its canonical text is the key in quotes): each member is handed
    /// to `member` as what its key names. Each key is looked for, as those bytes, only after
    /// the one before, so a key that is unknown, out of order, repeated or escaped where the
    /// writer would not escape answers `None`, as [`Strict::members`] with a caller refusing
    /// unknown keys does; a key is not read as a string first.
    pub(crate) fn known_members<K: Copy>(
        &mut self,
        depth: usize,
        known: &[(&str, K)],
        mut member: impl FnMut(&mut Self, K) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        let mut next = 0;
        loop {
            let rest = self.bytes.get(self.pos..)?;
            let found = next
                + known
                    .get(next..)?
                    .iter()
                    .position(|(key, _)| is_key(rest, key))?;
            let (key, named) = known[found];
            next = found + 1;
            // `"`, the key, `":`.
            self.pos += key.len() + 3;
            member(self, named)?;
            if self.eat(b'}') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// An array at nesting `depth`, each element read by `item`.
    pub(crate) fn items(
        &mut self,
        depth: usize,
        mut item: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        if depth > MAX_DEPTH || !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(());
        }
        loop {
            item(self, depth)?;
            if self.eat(b']') {
                return Some(());
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)`, not `-0`, within `i128`.
    pub(crate) fn integer(&mut self) -> Option<i128> {
        /// Up to this many digits the magnitude fits a `u64` (10^18 < 2^63) and is summed as
        /// it is read; longer ones are parsed as `i128` (which also refuses what does not fit).
        const SUMMED_DIGITS: usize = 18;
        let start = self.pos;
        let negative = self.eat(b'-');
        let digits_start = self.pos;
        let mut magnitude: u64 = 0;
        match self.peek()? {
            b'0' => {
                self.pos += 1;
                if negative {
                    return None;
                }
            }
            b'1'..=b'9' => {
                while let Some(digit @ b'0'..=b'9') = self.peek() {
                    magnitude = magnitude
                        .wrapping_mul(10)
                        .wrapping_add(u64::from(digit - b'0'));
                    self.pos += 1;
                }
            }
            _ => return None,
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        if self.pos - digits_start <= SUMMED_DIGITS {
            let magnitude = i128::from(magnitude);
            return Some(if negative { -magnitude } else { magnitude });
        }
        self.text.get(start..self.pos)?.parse::<i128>().ok()
    }

    /// A string escaped exactly as the canonical writer escapes it, borrowed from the text when
    /// it holds no escape.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.pos;
        self.pos = run_end(self.bytes, start);
        match self.peek()? {
            // The common case, kept short: no escape. A run ends at an ASCII byte, so on a
            // character boundary.
            b'"' => {
                let run = self.text.get(start..self.pos)?;
                self.pos += 1;
                Some(Cow::Borrowed(run))
            }
            b'\\' => self.escaped_string(start).map(Cow::Owned),
            _ => None,
        }
    }

    /// The rest of a string whose text from `start` holds an escape, at `self.pos`.
    #[cold]
    fn escaped_string(&mut self, start: usize) -> Option<String> {
        let mut text = self.text.get(start..self.pos)?.to_owned();
        loop {
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(text);
                }
                b'\\' => {
                    self.pos += 1;
                    text.push(self.escape()?);
                }
                _ => return None,
            }
            let run_start = self.pos;
            self.pos = run_end(self.bytes, run_start);
            text.push_str(self.text.get(run_start..self.pos)?);
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

/// Whether `text` starts with the member key `key` (which needs no escape) and its colon. Most
/// keys asked about are not the one there: the bytes after a key as long as `key`, then its
/// first letter, rule them out before the rest is compared.
fn is_key(text: &[u8], key: &str) -> bool {
    let key = key.as_bytes();
    text.get(key.len() + 1..key.len() + 3) == Some(b"\":")
        && text.first() == Some(&b'"')
        && key.first().is_none_or(|first| text.get(1) == Some(first))
        && text.get(1..=key.len()) == Some(key)
}

/// Where the run of plain string bytes from `pos` ends: the first `"`, `\\` or C0 control (or
/// the end). Eight bytes at a time (the classic "has a zero byte" and "has a byte below n" word
/// tests: a borrow only runs upward, from a byte that is one, so the lowest flagged byte of a
/// word is exactly the first such byte in it), then byte by byte over the last few.
pub(crate) fn run_end(bytes: &[u8], mut pos: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    while let Some(chunk) = bytes.get(pos..pos + 8) {
        let Ok(chunk) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(chunk);
        let quote = has_zero(word ^ (ONES * u64::from(b'"')));
        let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
        let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
        let flagged = quote | backslash | control;
        if flagged != 0 {
            // At most 63 / 8.
            return pos + (flagged.trailing_zeros() / 8) as usize;
        }
        pos += 8;
    }
    while let Some(&byte) = bytes.get(pos) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        pos += 1;
    }
    pos
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
        assert_eq!(is_canonical(text.as_bytes()), general.is_some(), "{text:?}");
        for lazy in ["a", "entry", "z"] {
            let split =
                parse_canonical_lazy(text.as_bytes(), lazy, &mut |_| None).map(|(value, range)| {
                    let member = range.map(|range| parse_canonical(&text[range]).unwrap());
                    (value, member)
                });
            let expected = general.clone().map(|value| match value {
                Value::Object(mut members) => {
                    let member = members.remove(lazy);
                    (Value::Object(members), member)
                }
                other => (other, None),
            });
            assert_eq!(split, expected, "{text:?} without {lazy:?}");
            if let Some((_, Some(range))) =
                parse_canonical_lazy(text.as_bytes(), lazy, &mut |_| None)
            {
                assert_eq!(
                    member_value_len(&text[range.start..]),
                    Some(range.len()),
                    "{text:?}: the length of {lazy:?}"
                );
            }
        }
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
            "999999999999999999",
            "-999999999999999999",
            "1000000000000000000",
            "-1000000000000000000",
            "18446744073709551616",
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
    fn a_run_ends_at_the_first_quote_backslash_or_control_byte() {
        let first = |bytes: &[u8], pos: usize| {
            (pos..bytes.len())
                .find(|&at| matches!(bytes[at], b'"' | b'\\' | 0..=0x1f))
                .unwrap_or(bytes.len())
        };
        // Bytes around the ones that end a run, and bytes that borrow in the word tests.
        let fillers = [
            0x20,
            0x21,
            0x23,
            0x5b,
            0x5d,
            0x7f,
            0x80,
            0xa0,
            0xff,
            b'a',
            0x01 + b'"',
        ];
        let enders = [b'"', b'\\', 0, 0x01, 0x1f, b'\n'];
        for filler in fillers {
            for len in 0..20 {
                let plain = vec![filler; len];
                assert_eq!(run_end(&plain, 0), len);
                for at in 0..len {
                    for ender in enders {
                        for (later_at, later) in
                            [(len, None), (at + 1, Some(ender)), (at + 1, Some(0))]
                        {
                            let mut bytes = plain.clone();
                            bytes[at] = ender;
                            if let (Some(later), true) = (later, later_at < len) {
                                bytes[later_at] = later;
                            }
                            for pos in 0..=at {
                                assert_eq!(
                                    run_end(&bytes, pos),
                                    first(&bytes, pos),
                                    "{bytes:?} from {pos}"
                                );
                            }
                        }
                    }
                }
            }
        }
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
