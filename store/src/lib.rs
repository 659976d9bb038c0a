//! The valp control root on disk (RFC 0002 §5.2, State subdomain).
//!
//! Not built yet: the store lands with its own issue (append-only journals, locks,
//! crash-safe writes, fail-closed verification on open). Until then valp keeps no state on disk.
