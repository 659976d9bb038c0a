//! Typed identities: `{"kind": <IdentityKind>, "value": <non-empty string>}`.

use crate::canonical::Canonical;
use crate::json::write::write_str;
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
    /// `{"kind":…,"value":…}`, written without [`Fields`](crate::json::write::Fields): an
    /// applied event writes about a dozen identities (issue 20), and the kind is a vocabulary
    /// spelling (lowercase ASCII and `_`), which never needs escaping, so everything up to the
    /// value is three plain copies.
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let kind = self.kind.as_str();
        debug_assert!(
            kind.bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte == b'_')
        );
        out.reserve(kind.len() + self.value.len() + 24);
        out.extend_from_slice(b"{\"kind\":\"");
        out.extend_from_slice(kind.as_bytes());
        out.extend_from_slice(b"\",\"value\":");
        write_str(out, &self.value);
        out.push(b'}');
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}:{}", self.kind, self.value)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::json::write::Fields;

    /// The identity as the generic object writer gives it.
    fn through_fields(identity: &Identity) -> Vec<u8> {
        let mut out = Vec::new();
        let mut fields = Fields::begin(&mut out);
        fields.str("kind", identity.kind().as_str());
        fields.str("value", identity.value());
        fields.end();
        out
    }

    #[test]
    fn an_identity_is_written_as_the_object_writer_writes_it_for_every_kind_and_value() {
        let values = [
            "x",
            "ev-1-92",
            "a\"b",
            "back\\slash",
            "line\nbreak",
            "\u{1}",
            "é\u{2028}",
        ];
        for &kind in IdentityKind::ALL {
            for value in values {
                let identity = Identity::new(kind, value).unwrap();
                // Appends: what is in the buffer stays.
                let mut out = b"[".to_vec();
                identity.write_canonical(&mut out);
                assert_eq!(out[1..], through_fields(&identity), "{kind} {value:?}");
                assert_eq!(out[0], b'[');
            }
        }
    }
}
