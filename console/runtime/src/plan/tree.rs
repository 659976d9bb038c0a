//! The document a plan is read from, independent of its syntax: a TOML plan file and the
//! canonical JSON of a published plan both become a [`Node`] tree, so one reader
//! ([`super::check`]) judges both.
//!
//! Nodes carry the byte offset where they start in the source (the TOML file), so a problem can
//! name its line and column; nodes from JSON carry offset 0 (a published plan is one line).

use toml::Spanned;
use toml::de::{DeTable, DeValue};
use valp_kernel::json::{Number, Value as Json};

/// A value with the offset of its first byte in the source.
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// Byte offset in the source.
    pub at: usize,
    /// The value.
    pub value: Value,
}

/// One member of a table, in source order.
#[derive(Debug, Clone)]
pub(super) struct Member {
    /// The key.
    pub key: String,
    /// Byte offset of the key in the source.
    pub key_at: usize,
    /// The value.
    pub node: Node,
}

/// The value kinds of TOML and JSON together.
#[derive(Debug, Clone)]
pub(super) enum Value {
    /// A string.
    Str(String),
    /// An integer; `None` when it does not fit in an `i128` (always out of range for a plan).
    Int(Option<i128>),
    /// A float, or a JSON number that is not an integer.
    Float,
    /// A boolean.
    Bool(bool),
    /// A TOML date or time.
    Datetime,
    /// JSON `null`.
    Null,
    /// An array.
    Array(Vec<Node>),
    /// A table (TOML) or object (JSON).
    Table(Vec<Member>),
}

impl Value {
    /// The kind, with its article, for "expected …, found …" messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Str(_) => "a string",
            Self::Int(_) => "an integer",
            Self::Float => "a float",
            Self::Bool(_) => "a boolean",
            Self::Datetime => "a date-time",
            Self::Null => "null",
            Self::Array(_) => "an array",
            Self::Table(_) => "a table",
        }
    }
}

/// The tree of a parsed TOML document.
pub(super) fn from_toml(table: &Spanned<DeTable<'_>>) -> Node {
    Node {
        at: table.span().start,
        value: Value::Table(members(table.get_ref())),
    }
}

fn members(table: &DeTable<'_>) -> Vec<Member> {
    table
        .iter()
        .map(|(key, value)| Member {
            key: key.get_ref().to_string(),
            key_at: key.span().start,
            node: toml_node(value),
        })
        .collect()
}

fn toml_node(value: &Spanned<DeValue<'_>>) -> Node {
    let converted = match value.get_ref() {
        DeValue::String(text) => Value::Str(text.to_string()),
        DeValue::Integer(integer) => Value::Int(
            i128::from_str_radix(&integer.as_str().replace('_', ""), integer.radix()).ok(),
        ),
        DeValue::Float(_) => Value::Float,
        DeValue::Boolean(flag) => Value::Bool(*flag),
        DeValue::Datetime(_) => Value::Datetime,
        DeValue::Array(items) => Value::Array(items.iter().map(toml_node).collect()),
        DeValue::Table(table) => Value::Table(members(table)),
    };
    Node {
        at: value.span().start,
        value: converted,
    }
}

/// The tree of a JSON value (every offset 0).
pub(super) fn from_json(value: &Json) -> Node {
    let converted = match value {
        Json::Null => Value::Null,
        Json::Bool(flag) => Value::Bool(*flag),
        Json::Number(Number::Int(number)) => Value::Int(Some(*number)),
        Json::Number(Number::Other(_)) => Value::Float,
        Json::String(text) => Value::Str(text.clone()),
        Json::Array(items) => Value::Array(items.iter().map(from_json).collect()),
        Json::Object(map) => Value::Table(
            map.iter()
                .map(|(key, item)| Member {
                    key: key.clone(),
                    key_at: 0,
                    node: from_json(item),
                })
                .collect(),
        ),
    };
    Node {
        at: 0,
        value: converted,
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
pub(super) fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&byte| byte == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn positions_are_one_based_and_count_characters() {
        let text = "a = 1\nbé = \"x\"\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 4), (1, 5));
        assert_eq!(line_column(text, 6), (2, 1));
        // `=` after the two-byte `é` is the fourth character of line 2.
        assert_eq!(line_column(text, 10), (2, 4));
        assert_eq!(line_column(text, 1000), (3, 1));
    }

    #[test]
    fn toml_integers_of_every_radix_are_read() {
        let (table, errors) = DeTable::parse_recoverable("a = 0x1F\nb = 1_000\nc = -3\nd = 0o7");
        assert!(errors.is_empty());
        let Value::Table(members) = from_toml(&table).value else {
            panic!("not a table");
        };
        let numbers: Vec<_> = members
            .iter()
            .map(|member| match member.node.value {
                Value::Int(number) => number,
                _ => None,
            })
            .collect();
        assert_eq!(numbers, [Some(31), Some(1000), Some(-3), Some(7)]);
    }
}
