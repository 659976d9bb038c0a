//! The durable-write operations the store performs, behind a trait so that tests can make any
//! of them fail (once or persistently) and check that a failure never panics and never leaves a
//! journal that does not verify.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use crate::error::StoreError;

/// The operations whose failure matters for durability.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Writes all of `bytes` at the end of `file` (opened for appending).
    fn append(&self, file: &mut File, bytes: &[u8]) -> io::Result<()>;
    /// Makes `file`'s data durable (`fdatasync`).
    fn sync(&self, file: &File) -> io::Result<()>;
    /// Atomically renames `from` to `to`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes `to` a new name of `from`; fails with `AlreadyExists` when `to` exists (the
    /// exclusive form of [`Storage::rename`]).
    fn link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes a directory's entries durable (after a create or rename in it).
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// Writes one chained line at the end of `file` (`path`) and makes it durable: the append of
/// every chained file (journals, effect ledgers). Line `seq` is named in the error, which is
/// always [`StoreError::UnknownOrCommitted`]: once the write began, the line may or may not be
/// on disk, and only a re-read under the lock can tell.
pub(crate) fn append_line(
    storage: &dyn Storage,
    file: &mut File,
    path: &Path,
    seq: u64,
    line: &[u8],
) -> Result<(), StoreError> {
    storage
        .append(file, line)
        .map_err(|source| ("write", source))
        .and_then(|()| storage.sync(file).map_err(|source| ("sync", source)))
        .map_err(|(operation, source)| StoreError::UnknownOrCommitted {
            path: path.to_owned(),
            operation,
            seq,
            source,
        })
}

/// The operating system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsStorage;

impl Storage for OsStorage {
    fn append(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
        file.write_all(bytes)
    }

    fn sync(&self, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }
}

#[cfg(feature = "fault-injection")]
pub use faults::{Fault, FaultyStorage, Operation};

#[cfg(feature = "fault-injection")]
mod faults {
    use std::fs::File;
    use std::io::{self, Write};
    use std::path::Path;
    use std::sync::Mutex;

    use super::{OsStorage, Storage};

    /// A storage operation.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Operation {
        /// [`Storage::append`]
        Append,
        /// [`Storage::sync`]
        Sync,
        /// [`Storage::rename`], and [`Storage::link`] (both put a written file into place)
        Rename,
        /// [`Storage::sync_dir`]
        SyncDir,
    }

    /// When an operation fails.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Fault {
        /// The next call fails, later calls succeed.
        Once,
        /// Every call from now on fails.
        Always,
        /// The next append writes only its first half, then fails (a torn write).
        TornOnce,
    }

    /// A [`Storage`] over the real file system that fails the operations it is told to.
    #[derive(Debug, Default)]
    pub struct FaultyStorage {
        faults: Mutex<Vec<(Operation, Fault)>>,
    }

    impl FaultyStorage {
        /// Makes `operation` fail as `fault` says.
        pub fn fail(&self, operation: Operation, fault: Fault) {
            if let Ok(mut faults) = self.faults.lock() {
                faults.push((operation, fault));
            }
        }

        /// Stops failing.
        pub fn heal(&self) {
            if let Ok(mut faults) = self.faults.lock() {
                faults.clear();
            }
        }

        fn take(&self, operation: Operation) -> Option<Fault> {
            let mut faults = self.faults.lock().ok()?;
            let index = faults.iter().position(|(op, _)| *op == operation)?;
            let fault = faults[index].1;
            if fault != Fault::Always {
                faults.remove(index);
            }
            Some(fault)
        }
    }

    fn injected(operation: Operation) -> io::Error {
        io::Error::other(format!("injected {operation:?} failure"))
    }

    impl Storage for FaultyStorage {
        fn append(&self, file: &mut File, bytes: &[u8]) -> io::Result<()> {
            match self.take(Operation::Append) {
                None => OsStorage.append(file, bytes),
                Some(Fault::TornOnce) => {
                    file.write_all(&bytes[..bytes.len() / 2])?;
                    Err(injected(Operation::Append))
                }
                Some(_) => Err(injected(Operation::Append)),
            }
        }

        fn sync(&self, file: &File) -> io::Result<()> {
            match self.take(Operation::Sync) {
                None => OsStorage.sync(file),
                Some(_) => Err(injected(Operation::Sync)),
            }
        }

        fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
            match self.take(Operation::Rename) {
                None => OsStorage.rename(from, to),
                Some(_) => Err(injected(Operation::Rename)),
            }
        }

        fn link(&self, from: &Path, to: &Path) -> io::Result<()> {
            match self.take(Operation::Rename) {
                None => OsStorage.link(from, to),
                Some(_) => Err(injected(Operation::Rename)),
            }
        }

        fn sync_dir(&self, dir: &Path) -> io::Result<()> {
            match self.take(Operation::SyncDir) {
                None => OsStorage.sync_dir(dir),
                Some(_) => Err(injected(Operation::SyncDir)),
            }
        }
    }
}
