//! Typed identities: `{"kind": <IdentityKind>, "value": <non-empty string>}`.

use crate::canonical::Canonical;
use crate::json::write::Fields;
use crate::model::vocabulary::IdentityKind;

/// A protocol identity. The kind is part of the identity: an `event` identity never equals a
/// `result` identity with the same value, and the kernel checks the kind of every slot.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Identity {
    kind: IdentityKind,
    value: String,
}

/// An identity value must be a non-empty string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("identity value must be a non-empty string (kind {kind})")]
pub struct EmptyIdentityValue {
    /// The kind the empty value was given for.
    pub kind: IdentityKind,
}

impl Identity {
    /// An identity of `kind` with a non-empty `value`.
    pub fn new(kind: IdentityKind, value: impl Into<String>) -> Result<Self, EmptyIdentityValue> {
        let value = value.into();
        if value.is_empty() {
            return Err(EmptyIdentityValue { kind });
        }
        Ok(Self { kind, value })
    }

    /// Builds an identity whose value the kernel derived from another, non-empty identity.
    pub(crate) fn derived(kind: IdentityKind, value: String) -> Self {
        debug_assert!(!value.is_empty());
        Self { kind, value }
    }

    /// A slot a decoder has not filled in yet (empty value, no allocation); it never leaves
    /// the decoder, which refuses to answer unless every such slot was filled in.
    pub(crate) const fn unset(kind: IdentityKind) -> Self {
        Self {
            kind,
            value: String::new(),
        }
    }

    /// The identity kind.
    pub fn kind(&self) -> IdentityKind {
        self.kind
    }

    /// The identity value.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether this identity has the given kind.
    pub fn is(&self, kind: IdentityKind) -> bool {
        self.kind == kind
    }
}

/// Whether an optional identity slot is present and of the given kind.
pub(crate) fn has_kind(identity: Option<&Identity>, kind: IdentityKind) -> bool {
    identity.is_some_and(|identity| identity.is(kind))
}

impl Canonical for Identity {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("kind", self.kind.as_str());
        fields.str("value", &self.value);
        fields.end();
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}", self.kind, self.value)
    }
}
