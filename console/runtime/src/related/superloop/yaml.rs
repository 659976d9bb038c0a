//! The block-style YAML subset SuperLoop contracts are written in, read into the JSON data
//! model (YAML 1.2 core schema), and nothing more.
//!
//! Taken: block mappings and block sequences by indentation (spaces only), `- key: value` items,
//! plain, single- and double-quoted scalars on one line, `[]` and `{}`, `#` comments, `true` /
//! `false` / `null` / `~` in the core schema's spellings and decimal integers. Refused, with the
//! line: tabs in indentation, anchors, aliases, tags, block scalars (`|`, `>`), flow
//! collections with content, multiple documents, floats and other number forms, keys given
//! twice (SuperLoop's reader refuses them too). A refusal means "cannot be read the way
//! SuperLoop reads it": the caller reports the contract as unverifiable, never as corrupt.

use serde_json::{Map, Value};

/// One meaningful line: its indentation and its text without the comment.
struct Line<'a> {
    number: usize,
    indent: usize,
    text: &'a str,
}

/// Parses `text` into the JSON data model, or says which line could not be read and why.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut lines = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let body = raw.trim_start_matches(' ');
        if body.starts_with('\t') {
            return Err(format!("line {number}: a tab in the indentation"));
        }
        let body = strip_comment(body).trim_end();
        if body.is_empty() {
            continue;
        }
        if body == "---" || body == "..." {
            if lines.is_empty() && body == "---" {
                continue;
            }
            return Err(format!("line {number}: more than one document"));
        }
        lines.push(Line {
            number,
            indent: raw.len() - raw.trim_start_matches(' ').len(),
            text: body,
        });
    }
    let mut parser = Parser { lines, next: 0 };
    let Some(first) = parser.lines.first() else {
        return Ok(Value::Null);
    };
    let value = parser.block(first.indent)?;
    match parser.lines.get(parser.next) {
        Some(line) => Err(format!("line {}: unexpected indentation", line.number)),
        None => Ok(value),
    }
}

/// `text` up to a `#` that starts a comment (outside quotes, after a space or at the start).
fn strip_comment(text: &str) -> &str {
    let mut quote = None;
    let mut previous = ' ';
    let mut escaped = false;
    for (at, c) in text.char_indices() {
        if std::mem::take(&mut escaped) {
            previous = c;
            continue;
        }
        match quote {
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && previous == ' ' => return &text[..at],
            Some(_) | None => {}
        }
        previous = c;
    }
    text
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    next: usize,
}

impl Parser<'_> {
    /// The block (mapping or sequence) whose lines start at `indent`.
    fn block(&mut self, indent: usize) -> Result<Value, String> {
        match self.lines.get(self.next) {
            Some(line) if line.text == "-" || line.text.starts_with("- ") => self.sequence(indent),
            Some(_) => self.mapping(indent),
            None => Ok(Value::Null),
        }
    }

    fn sequence(&mut self, indent: usize) -> Result<Value, String> {
        let mut items = Vec::new();
        while let Some(line) = self.lines.get(self.next) {
            if line.indent < indent {
                break;
            }
            let number = line.number;
            if line.indent > indent {
                return Err(format!("line {number}: unexpected indentation"));
            }
            let Some(rest) = line.text.strip_prefix('-') else {
                break;
            };
            let rest = rest.trim_start_matches(' ');
            let inner = indent + (line.text.len() - rest.len());
            if rest.is_empty() {
                self.next += 1;
                items.push(self.nested(indent)?);
            } else if key_split(rest).is_some() {
                // `- key: value`: a mapping whose lines are indented like `key`.
                self.lines[self.next].indent = inner;
                self.lines[self.next].text = rest;
                items.push(self.mapping(inner)?);
            } else {
                self.next += 1;
                items.push(scalar(rest, number)?);
            }
        }
        Ok(Value::Array(items))
    }

    fn mapping(&mut self, indent: usize) -> Result<Value, String> {
        let mut map = Map::new();
        while let Some(line) = self.lines.get(self.next) {
            if line.indent < indent {
                break;
            }
            let number = line.number;
            if line.indent > indent {
                return Err(format!("line {number}: unexpected indentation"));
            }
            if line.text.starts_with("- ") || line.text == "-" {
                break;
            }
            let (key, rest) =
                key_split(line.text).ok_or_else(|| format!("line {number}: not a `key: value`"))?;
            let Value::String(key) = scalar(key, number)? else {
                return Err(format!("line {number}: a key that is not a string"));
            };
            self.next += 1;
            let value = if rest.is_empty() {
                self.nested(indent)?
            } else {
                scalar(rest, number)?
            };
            if map.insert(key.clone(), value).is_some() {
                return Err(format!("line {number}: key {key:?} given twice"));
            }
        }
        Ok(Value::Object(map))
    }

    /// The value under a `key:` or `-` of `indent`: a deeper block, a sequence at the same
    /// indentation (after a key), or null.
    fn nested(&mut self, indent: usize) -> Result<Value, String> {
        match self.lines.get(self.next) {
            Some(line) if line.indent > indent => {
                let deeper = line.indent;
                self.block(deeper)
            }
            Some(line)
                if line.indent == indent && (line.text.starts_with("- ") || line.text == "-") =>
            {
                self.sequence(indent)
            }
            _ => Ok(Value::Null),
        }
    }
}

/// Splits `key: rest` (a `:` followed by a space or the end, outside quotes).
fn key_split(text: &str) -> Option<(&str, &str)> {
    let mut quote = None;
    let bytes = text.as_bytes();
    for (at, c) in text.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            None if (c == '"' || c == '\'') && at == 0 => quote = Some(c),
            None if c == ':' && bytes.get(at + 1).is_none_or(|next| *next == b' ') => {
                return Some((text[..at].trim_end(), text[at + 1..].trim_start()));
            }
            Some(_) | None => {}
        }
    }
    None
}

/// One scalar on one line.
fn scalar(text: &str, number: usize) -> Result<Value, String> {
    let refuse = |what: &str| Err(format!("line {number}: {what} is not supported"));
    if let Some(inner) = text.strip_prefix('"') {
        return double_quoted(inner, number).map(Value::String);
    }
    if let Some(inner) = text.strip_prefix('\'') {
        let Some(inner) = inner.strip_suffix('\'') else {
            return refuse("an unterminated or multi-line quoted scalar");
        };
        return Ok(Value::String(inner.replace("''", "'")));
    }
    match text {
        "[]" => return Ok(Value::Array(Vec::new())),
        "{}" => return Ok(Value::Object(Map::new())),
        "true" | "True" | "TRUE" => return Ok(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(Value::Bool(false)),
        "null" | "Null" | "NULL" | "~" => return Ok(Value::Null),
        _ => {}
    }
    match text.chars().next() {
        Some('&' | '*') => return refuse("an anchor or alias"),
        Some('!') => return refuse("a tag"),
        Some('|' | '>') => return refuse("a block scalar"),
        Some('[' | '{') => return refuse("a flow collection"),
        Some('@' | '`' | '%') => return refuse("a reserved indicator"),
        _ => {}
    }
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .trim_start_matches('+')
            .parse::<i64>()
            .map(Value::from)
            .or_else(|_| refuse("an integer out of range"));
    }
    let numeric = |c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E');
    if text.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && (text.chars().all(numeric)
            || text.starts_with("0x")
            || text.starts_with("0o")
            || matches!(text, ".inf" | ".Inf" | ".INF" | ".nan" | ".NaN" | ".NAN"))
    {
        return refuse("a number that is not a decimal integer");
    }
    if matches!(text, "-.inf" | "-.Inf" | "-.INF" | "+.inf") {
        return refuse("a number that is not a decimal integer");
    }
    if text.contains(": ") || text.ends_with(':') {
        return refuse("a `: ` inside a plain scalar");
    }
    Ok(Value::String(text.to_owned()))
}

fn double_quoted(inner: &str, number: usize) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                return if chars.as_str().is_empty() {
                    Ok(out)
                } else {
                    Err(format!("line {number}: text after a quoted scalar"))
                };
            }
            '\\' => {
                let escaped = match chars.next() {
                    Some('"') => '"',
                    Some('\\') => '\\',
                    Some('/') => '/',
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('0') => '\0',
                    Some('u') => {
                        let hex: String = chars.by_ref().take(4).collect();
                        u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| format!("line {number}: a bad \\u escape"))?
                    }
                    _ => return Err(format!("line {number}: an escape that is not supported")),
                };
                out.push(escaped);
            }
            c => out.push(c),
        }
    }
    Err(format!(
        "line {number}: an unterminated or multi-line quoted scalar is not supported"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_subset_reads_into_the_json_data_model() {
        let text = "# comment\na: 1\nb:\n- x\n- 'it''s'\nc:\n  d: \"q\\\"\" # trailing\n  e: []\n  f:\n    - g: true\n      h: ~\n    -\n      i: -3\nj: \"quoted: yes\"\n";
        assert_eq!(
            parse(text),
            Ok(serde_json::json!({
                "a": 1,
                "b": ["x", "it's"],
                "c": {"d": "q\"", "e": [], "f": [{"g": true, "h": null}, {"i": -3}]},
                "j": "quoted: yes",
            }))
        );
    }

    #[test]
    fn what_superloop_might_read_otherwise_is_refused_with_its_line() {
        for (text, error) in [
            ("a: 1\na: 2\n", "line 2: key \"a\" given twice"),
            (
                "a: 1.5\n",
                "line 1: a number that is not a decimal integer is not supported",
            ),
            (
                "a: 0x1F\n",
                "line 1: a number that is not a decimal integer is not supported",
            ),
            ("a: |\n  x\n", "line 1: a block scalar is not supported"),
            ("a: !tag x\n", "line 1: a tag is not supported"),
            ("a: [1]\n", "line 1: a flow collection is not supported"),
            ("a:\n\tb: 1\n", "line 2: a tab in the indentation"),
            ("a: 1\n---\nb: 2\n", "line 2: more than one document"),
            (
                "a: \"open\n",
                "line 1: an unterminated or multi-line quoted scalar is not supported",
            ),
            ("a:\n  b: 1\n c: 2\n", "line 3: unexpected indentation"),
            (
                "a: plain: no\n",
                "line 1: a `: ` inside a plain scalar is not supported",
            ),
        ] {
            assert_eq!(parse(text), Err(error.to_owned()), "{text:?}");
        }
    }
}
