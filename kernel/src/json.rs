//! The JSON data model used by every kernel artifact, with a strict parser and the canonical
//! writer.
//!
//! There is exactly one encoder ([`write`]) and it is used both for bytes written to disk and
//! for bytes that are hashed. Its rules are RFC 0002 §5.3: UTF-8, object keys sorted by code
//! point, no insignificant whitespace, non-ASCII emitted raw, integers only, and (for a whole
//! artifact) one trailing LF.
//!
//! The parser accepts any RFC 8259 text but is stricter than most: duplicate object keys, lone
//! surrogates and nesting deeper than [`parse::MAX_DEPTH`] are errors. Numbers that are not
//! integers are kept as text ([`Number::Other`]) so a caller can report them precisely;
//! the canonical writer refuses them.

pub mod parse;
pub mod strict;
pub mod value;
pub mod write;

pub use parse::{ParseError, parse};
pub use value::{Number, Value};
