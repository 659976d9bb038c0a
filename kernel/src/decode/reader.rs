//! Shape-checking helpers shared by every decoder, and the decode error.

use std::collections::BTreeMap;
use std::fmt;

use crate::json::{Number, Value};
use crate::model::{ErrorCode, Identity, IdentityKind, Int};

/// Where in a document a member is, built lazily: only an error formats it.
#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    /// The document itself, named for messages (`event`, `state`, …).
    Root(&'static str),
    /// A member of an object.
    Key(&'a Self, &'a str),
    /// An element of an array.
    Index(&'a Self, usize),
}

impl Path<'_> {
    pub fn key<'k>(&'k self, key: &'k str) -> Path<'k> {
        Path::Key(self, key)
    }

    pub fn index(&self, index: usize) -> Path<'_> {
        Path::Index(self, index)
    }

    fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError {
            path: self.to_string(),
            kind,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Root(name) => formatter.write_str(name),
            Self::Key(parent, key) => write!(formatter, "{parent}.{key}"),
            Self::Index(parent, index) => write!(formatter, "{parent}[{index}]"),
        }
    }
}

/// A JSON value that does not have the shape of the expected kernel artifact.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct DecodeError {
    /// Path of the offending member, e.g. `state.work_items[2].status`.
    pub path: String,
    /// What is wrong with it.
    pub kind: DecodeErrorKind,
}

/// The kinds of [`DecodeError`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    /// A required member is absent.
    #[error("missing required member")]
    Missing,
    /// A member this artifact does not have.
    #[error("unknown member {0:?}")]
    UnknownMember(String),
    /// The JSON type is wrong.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// Expected JSON type.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// A value outside a closed vocabulary.
    #[error("{value:?} is not a {vocabulary} value")]
    UnknownEnumValue {
        /// Vocabulary name.
        vocabulary: &'static str,
        /// The text found.
        value: String,
    },
    /// An identity with an empty value.
    #[error("identity value must be a non-empty string")]
    EmptyIdentity,
    /// `schema_version` names another artifact or version.
    #[error("schema_version must be {expected:?}, found {found:?}")]
    WrongSchema {
        /// The schema this decoder reads.
        expected: &'static str,
        /// The schema found.
        found: String,
    },
    /// A member that breaks a rule of its artifact (named in the message).
    #[error("{0}")]
    Invalid(&'static str),
}

impl DecodeError {
    /// The kernel error code for this refusal: `VALP-E-UNKNOWN-ENUM-VALUE` for a value outside a
    /// closed vocabulary, `VALP-E-STATE-CONFLICT` (invalid input) for everything else.
    pub fn code(&self) -> ErrorCode {
        match self.kind {
            DecodeErrorKind::UnknownEnumValue { .. } => ErrorCode::UnknownEnumValue,
            _ => ErrorCode::StateConflict,
        }
    }

    pub(crate) fn invalid(path: &Path<'_>, rule: &'static str) -> Self {
        path.error(DecodeErrorKind::Invalid(rule))
    }
}

fn wrong_type(path: &Path<'_>, expected: &'static str, found: &Value) -> DecodeError {
    path.error(DecodeErrorKind::WrongType {
        expected,
        found: found.type_name(),
    })
}

/// Reads the members of one JSON object, refusing members the decoder never asked for.
pub(crate) struct ObjectReader<'v, 'p> {
    map: &'v BTreeMap<String, Value>,
    path: &'p Path<'p>,
    read: usize,
    asked: [&'static str; MAX_MEMBERS],
    asked_len: usize,
}

impl<'v, 'p> ObjectReader<'v, 'p> {
    /// Starts reading `value`, which must be an object.
    pub fn new(value: &'v Value, path: &'p Path<'p>) -> Result<Self, DecodeError> {
        match value {
            Value::Object(map) => Ok(Self {
                map,
                path,
                read: 0,
                asked: [""; MAX_MEMBERS],
                asked_len: 0,
            }),
            other => Err(wrong_type(path, "object", other)),
        }
    }

    /// The path of this object.
    pub fn path(&self) -> &'p Path<'p> {
        self.path
    }

    /// A member that must be present (it may be `null` only if the caller accepts that).
    pub fn required(&mut self, key: &'static str) -> Result<&'v Value, DecodeError> {
        self.note(key);
        match self.map.get(key) {
            Some(value) => {
                self.read += 1;
                Ok(value)
            }
            None => Err(self.path.key(key).error(DecodeErrorKind::Missing)),
        }
    }

    /// A member that must be present but may be `null` (`None`).
    pub fn nullable(&mut self, key: &'static str) -> Result<Option<&'v Value>, DecodeError> {
        let value = self.required(key)?;
        Ok((!matches!(value, Value::Null)).then_some(value))
    }

    /// A member that may be absent; `null` counts as absent.
    pub fn optional(&mut self, key: &'static str) -> Option<&'v Value> {
        self.note(key);
        let value = self.map.get(key)?;
        self.read += 1;
        (!matches!(value, Value::Null)).then_some(value)
    }

    /// `schema_version`, which must equal `expected`.
    pub fn schema(&mut self, expected: &'static str) -> Result<(), DecodeError> {
        let found = string(
            self.required("schema_version")?,
            &self.path.key("schema_version"),
        )?;
        if found == expected {
            Ok(())
        } else {
            Err(self
                .path
                .key("schema_version")
                .error(DecodeErrorKind::WrongSchema {
                    expected,
                    found: found.to_owned(),
                }))
        }
    }

    /// A required string member.
    pub fn string(&mut self, key: &'static str) -> Result<String, DecodeError> {
        string(self.required(key)?, &self.path.key(key)).map(str::to_owned)
    }

    /// A required boolean member.
    pub fn bool(&mut self, key: &'static str) -> Result<bool, DecodeError> {
        let value = self.required(key)?;
        match value {
            Value::Bool(flag) => Ok(*flag),
            other => Err(wrong_type(&self.path.key(key), "boolean", other)),
        }
    }

    /// A required integer member.
    pub fn int(&mut self, key: &'static str) -> Result<Int, DecodeError> {
        int(self.required(key)?, &self.path.key(key))
    }

    /// An optional integer member.
    pub fn optional_int(&mut self, key: &'static str) -> Result<Option<Int>, DecodeError> {
        self.optional(key)
            .map(|value| int(value, &self.path.key(key)))
            .transpose()
    }

    /// An optional string member.
    pub fn optional_string(&mut self, key: &'static str) -> Result<Option<String>, DecodeError> {
        self.optional(key)
            .map(|value| string(value, &self.path.key(key)).map(str::to_owned))
            .transpose()
    }

    /// A required identity member.
    pub fn identity(&mut self, key: &'static str) -> Result<Identity, DecodeError> {
        identity(self.required(key)?, &self.path.key(key))
    }

    /// An optional identity member.
    pub fn optional_identity(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Identity>, DecodeError> {
        self.optional(key)
            .map(|value| identity(value, &self.path.key(key)))
            .transpose()
    }

    /// An optional array member (absent means empty), each element decoded by `item`.
    pub fn list<T>(
        &mut self,
        key: &'static str,
        item: impl Fn(&'v Value, &Path<'_>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        match self.optional(key) {
            None => Ok(Vec::new()),
            Some(value) => list(value, &self.path.key(key), item),
        }
    }

    /// A required array member, each element decoded by `item`.
    pub fn required_list<T>(
        &mut self,
        key: &'static str,
        item: impl Fn(&'v Value, &Path<'_>) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        list(self.required(key)?, &self.path.key(key), item)
    }

    /// Refuses members that were never read.
    pub fn finish(self) -> Result<(), DecodeError> {
        if self.read == self.map.len() {
            return Ok(());
        }
        let asked = &self.asked[..self.asked_len];
        let unknown = self.map.keys().find(|key| !asked.contains(&key.as_str()));
        let key = unknown.cloned().unwrap_or_default();
        Err(self.path.error(DecodeErrorKind::UnknownMember(key)))
    }

    fn note(&mut self, key: &'static str) {
        if let Some(slot) = self.asked.get_mut(self.asked_len) {
            *slot = key;
            self.asked_len += 1;
        }
    }
}

/// The most members any kernel artifact has (an Event has 27).
const MAX_MEMBERS: usize = 32;

/// A string value.
pub(crate) fn string<'v>(value: &'v Value, path: &Path<'_>) -> Result<&'v str, DecodeError> {
    value
        .as_str()
        .ok_or_else(|| wrong_type(path, "string", value))
}

/// An integer value. Booleans and non-integer numbers are refused.
pub(crate) fn int(value: &Value, path: &Path<'_>) -> Result<Int, DecodeError> {
    match value {
        Value::Number(Number::Int(number)) => Ok(*number),
        other => Err(wrong_type(path, "integer", other)),
    }
}

/// An identity `{"kind","value"}` with a known kind and a non-empty value.
pub(crate) fn identity(value: &Value, path: &Path<'_>) -> Result<Identity, DecodeError> {
    let mut object = ObjectReader::new(value, path)?;
    let kind = vocabulary(
        object.required("kind")?,
        &path.key("kind"),
        IdentityKind::from_wire,
        IdentityKind::NAME,
    )?;
    let text = object.string("value")?;
    object.finish()?;
    Identity::new(kind, text).map_err(|_| path.key("value").error(DecodeErrorKind::EmptyIdentity))
}

/// A closed-vocabulary value; unknown text is refused.
pub(crate) fn vocabulary<T>(
    value: &Value,
    path: &Path<'_>,
    from_wire: fn(&str) -> Option<T>,
    name: &'static str,
) -> Result<T, DecodeError> {
    let text = string(value, path)?;
    from_wire(text).ok_or_else(|| {
        path.error(DecodeErrorKind::UnknownEnumValue {
            vocabulary: name,
            value: text.to_owned(),
        })
    })
}

/// An array, each element decoded by `item`.
pub(crate) fn list<'v, T>(
    value: &'v Value,
    path: &Path<'_>,
    item: impl Fn(&'v Value, &Path<'_>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    let Value::Array(items) = value else {
        return Err(wrong_type(path, "array", value));
    };
    items
        .iter()
        .enumerate()
        .map(|(index, element)| item(element, &path.index(index)))
        .collect()
}
