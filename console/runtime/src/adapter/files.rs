//! Whole-file writes that readers never see half done: a temporary file next to the target
//! (so inside the attempt folder), fsync, then rename (replace) or hard link (create only), then
//! fsync of the folder. Shared by the adapters that write attempt folders (process, external).

use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes temporary files written by one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

fn parent_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Writes `bytes` to a new temporary file beside `target`, synced. Temporary names start with
/// `.` and end with `.tmp`, so readers of a folder can skip them.
fn write_temporary(target: &Path, bytes: &[u8]) -> io::Result<PathBuf> {
    let stem = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = parent_of(target).join(format!(".{stem}.{}.{count}.tmp", std::process::id()));
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    match result {
        Ok(()) => Ok(temp),
        Err(error) => {
            let _ = std::fs::remove_file(&temp);
            Err(error)
        }
    }
}

/// Makes the folder's entries durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes `bytes` to `target` atomically, replacing any file there.
pub fn write_replacing(target: &Path, bytes: &[u8]) -> io::Result<()> {
    let temp = write_temporary(target, bytes)?;
    if let Err(error) = std::fs::rename(&temp, target) {
        let _ = std::fs::remove_file(&temp);
        return Err(error);
    }
    sync_dir(parent_of(target))
}

/// Writes `bytes` to `target` atomically if no file is there; never replaces one.
///
/// Returns `Ok(false)` without writing when `target` exists (whatever its content): the caller
/// decides whether the existing bytes are acceptable.
pub fn write_new(target: &Path, bytes: &[u8]) -> io::Result<bool> {
    let temp = write_temporary(target, bytes)?;
    // A hard link fails when the target exists: rename without replace, with std only.
    let linked = std::fs::hard_link(&temp, target);
    let _ = std::fs::remove_file(&temp);
    match linked {
        Ok(()) => {
            sync_dir(parent_of(target))?;
            Ok(true)
        }
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(error),
    }
}

/// Writes `bytes` to `target` unless it exists; when it exists its bytes must be `bytes`.
pub fn write_new_or_same(target: &Path, bytes: &[u8]) -> io::Result<bool> {
    if write_new(target, bytes)? {
        return Ok(true);
    }
    if std::fs::read(target)? == bytes {
        Ok(false)
    } else {
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "exists with other content",
        ))
    }
}

/// Creates `dir` and its missing parents, making every new entry durable.
pub fn create_dir_durably(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dir_durably(parent)?;
    }
    match std::fs::create_dir(dir) {
        Ok(()) => sync_dir(parent_of(dir)),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(error),
    }
}

/// The file `relative` (a safe relative path) below `cwd` when it is a regular file reached
/// through real folders only (no symbolic link anywhere below `cwd`), else `None`, as if
/// missing. Expected evidence is looked up this way, so a link cannot make valp digest a file
/// outside the working folder.
pub fn beneath(cwd: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = cwd.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for (index, part) in parts.iter().enumerate() {
        path.push(part);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        let last = index + 1 == parts.len();
        if (last && !meta.file_type().is_file()) || (!last && !meta.file_type().is_dir()) {
            return None;
        }
    }
    Some(path)
}

/// Reads the file [`beneath`] finds, else `None`.
pub fn read_beneath(cwd: &Path, relative: &str) -> Option<Vec<u8>> {
    std::fs::read(beneath(cwd, relative)?).ok()
}

/// Reads at most `cap` bytes of `path`; `Ok(None)` when the file is larger (untrusted files
/// are never read whole into memory).
pub fn read_capped(path: &Path, cap: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    File::open(path)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// Whether `name` is one of [`write_temporary`]'s temporary files.
pub fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && Path::new(name).extension().is_some_and(|ext| ext == "tmp")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn new_files_are_never_replaced() {
        let dir = std::env::temp_dir().join(format!("valp-files-{}", std::process::id()));
        create_dir_durably(&dir.join("a/b")).unwrap();
        let target = dir.join("a/b/x.json");
        assert!(write_new(&target, b"one").unwrap());
        assert!(!write_new(&target, b"two").unwrap());
        assert_eq!(std::fs::read(&target).unwrap(), b"one");
        assert!(!write_new_or_same(&target, b"one").unwrap());
        assert!(write_new_or_same(&target, b"two").is_err());
        write_replacing(&target, b"three").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"three");
        let leftovers: Vec<_> = std::fs::read_dir(dir.join("a/b"))
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from("x.json")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
