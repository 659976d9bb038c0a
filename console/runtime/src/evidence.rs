//! Evidence the console proposes with: bytes put in the control root's content-addressed blob
//! store, named after what they are and their digest.

use valp_kernel::{Evidence, Identity, IdentityKind};
use valp_store::{ControlRoot, StoreError};

/// Stores `bytes` as evidence `<prefix><the first 16 hex digits of their digest>`, so the same
/// bytes always get the same id and proposing them again is answered as a duplicate.
///
/// `identity` builds the id in the caller's error type: each lane reports a bad identity its own
/// way (none is expected: the id is never empty).
pub fn store<E: From<StoreError>>(
    root: &ControlRoot,
    prefix: &str,
    bytes: &[u8],
    identity: impl FnOnce(IdentityKind, String) -> Result<Identity, E>,
) -> Result<Evidence, E> {
    let stored = root.blobs().put(bytes)?;
    Ok(Evidence {
        evidence_id: identity(
            IdentityKind::Evidence,
            format!("{prefix}{}", &stored.digest[7..23]),
        )?,
        content_digest: stored.digest,
    })
}
