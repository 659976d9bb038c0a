//! Cross-crate, CLI and end-to-end tests of valp live in `tests/tests/`.
