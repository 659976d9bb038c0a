//! The in-memory JSON value.

use std::collections::BTreeMap;

/// A JSON number as it appeared in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Number {
    /// An integer that fits in `i128` (written without fraction or exponent).
    Int(i128),
    /// Any other number (a fraction, an exponent, or an integer outside `i128`), kept as its
    /// source text. The canonical writer refuses it: kernel artifacts carry integers only.
    Other(String),
}

/// A parsed JSON value. Objects keep their keys sorted (by byte, which is code point order for
/// UTF-8), so writing a `Value` back out is canonical by construction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A number.
    Number(Number),
    /// A string.
    String(String),
    /// An array, in source order.
    Array(Vec<Self>),
    /// An object with unique keys.
    Object(BTreeMap<String, Self>),
}

impl Value {
    /// A short name of the JSON type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::Number(Number::Int(_)) => "integer",
            Self::Number(Number::Other(_)) => "non-integer or out-of-range number",
            Self::String(_) => "string",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
        }
    }

    /// The object map, if this is an object.
    pub fn as_object(&self) -> Option<&BTreeMap<String, Self>> {
        match self {
            Self::Object(map) => Some(map),
            _ => None,
        }
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(text) => Some(text),
            _ => None,
        }
    }
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Self::String(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Self::String(text)
    }
}

impl From<i128> for Value {
    fn from(number: i128) -> Self {
        Self::Number(Number::Int(number))
    }
}
