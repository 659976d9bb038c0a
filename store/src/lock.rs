//! The journal lock: an exclusive `flock` on a lock file that is never renamed or deleted.
//!
//! The operating system releases the lock when its holder exits, however it exits, so a writer
//! killed mid-append never leaves the journal locked. Waiters poll with a short back-off, which
//! bounds how long after a release another process notices it.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::StoreError;

/// How long an append waits for the lock by default.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest pause between two attempts.
const MAX_BACKOFF: Duration = Duration::from_millis(5);

/// A held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
}

impl LockGuard {
    /// Takes the lock on `path` (creating the file), waiting at most `timeout`.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<Self, StoreError> {
        let unavailable = |source| StoreError::LockUnavailable {
            path: path.to_owned(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(unavailable)?;
        let started = Instant::now();
        let mut pause = Duration::from_micros(100);
        loop {
            match file.try_lock() {
                Ok(()) => {
                    return Ok(Self {
                        file,
                        path: path.to_owned(),
                    });
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(source)) => return Err(unavailable(source)),
            }
            let waited = started.elapsed();
            if waited >= timeout {
                return Err(StoreError::LockTimeout {
                    path: path.to_owned(),
                    waited_ms: waited.as_millis(),
                });
            }
            std::thread::sleep(pause.min(timeout.saturating_sub(waited)));
            pause = (pause * 2).min(MAX_BACKOFF);
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first makes the release immediate
        // even if something else still holds a duplicate of the descriptor.
        let _ = self.file.unlock();
    }
}
