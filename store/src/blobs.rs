//! Content-addressed evidence: `evidence/sha256/<hex>` holds exactly the bytes whose SHA-256 is
//! `<hex>`.
//!
//! A blob is written to `evidence/tmp/`, synced, renamed into place and the folder synced, so it
//! is either completely present or absent. Storing bytes that are already there is a no-op;
//! finding *different* bytes under a digest is an integrity failure, never an overwrite.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::sha256_digest;

use crate::error::StoreError;
use crate::files::write_atomically;
use crate::io::Storage;

/// The evidence store of one control root.
#[derive(Debug, Clone)]
pub struct BlobStore {
    dir: PathBuf,
    tmp: PathBuf,
    storage: Arc<dyn Storage>,
}

/// What [`BlobStore::put`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// Whether identical bytes were already stored.
    pub existed: bool,
}

impl BlobStore {
    /// The store in `dir` (`evidence/sha256`), writing temporaries to `tmp`.
    pub fn new(dir: PathBuf, tmp: PathBuf, storage: Arc<dyn Storage>) -> Self {
        Self { dir, tmp, storage }
    }

    /// Where the blob with this digest lives (`None` unless the digest is well formed).
    pub fn path_of(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        valp_kernel::canonical::is_digest(digest).then(|| self.dir.join(hex))
    }

    /// Stores `bytes`; returns their digest.
    pub fn put(&self, bytes: &[u8]) -> Result<Stored, StoreError> {
        let digest = sha256_digest(bytes);
        let path = self.dir.join(&digest[7..]);
        if path.exists() {
            let existing =
                std::fs::read(&path).map_err(|source| StoreError::io(&path, "read", source))?;
            if existing == bytes {
                return Ok(Stored {
                    digest,
                    existed: true,
                });
            }
            return Err(StoreError::BlobConflict { path, digest });
        }
        write_atomically(self.storage.as_ref(), &self.tmp, &path, bytes)?;
        Ok(Stored {
            digest,
            existed: false,
        })
    }

    /// The bytes stored under `digest`, verified against it.
    pub fn get(&self, digest: &str) -> Result<Vec<u8>, StoreError> {
        let path = self
            .path_of(digest)
            .ok_or_else(|| StoreError::Invalid(format!("{digest:?} is not a sha256 digest")))?;
        let bytes = std::fs::read(&path).map_err(|source| StoreError::io(&path, "read", source))?;
        check(&path, &bytes)?;
        Ok(bytes)
    }

    /// Every blob file, checked: its name must be 64 lowercase hex digits and its bytes must
    /// hash to that name. Returns the number of good blobs and the problems found.
    pub fn verify_all(&self) -> Result<(usize, Vec<StoreError>), StoreError> {
        let mut good = 0;
        let mut problems = Vec::new();
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|source| StoreError::io(&self.dir, "list", source))?;
        for entry in entries {
            let path = entry
                .map_err(|source| StoreError::io(&self.dir, "list", source))?
                .path();
            match std::fs::read(&path) {
                Ok(bytes) => match check(&path, &bytes) {
                    Ok(()) => good += 1,
                    Err(problem) => problems.push(problem),
                },
                Err(source) => problems.push(StoreError::io(&path, "read", source)),
            }
        }
        Ok((good, problems))
    }
}

fn check(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let well_named = name.len() == 64
        && name
            .bytes()
            .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
    let actual = sha256_digest(bytes);
    if well_named && actual[7..] == name {
        return Ok(());
    }
    Err(StoreError::Corrupt {
        path: path.to_owned(),
        line: 0,
        byte: 0,
        reason: if well_named {
            format!("content hashes to {actual}, not to its name")
        } else {
            "a blob's name must be 64 lowercase hex digits".to_owned()
        },
    })
}
