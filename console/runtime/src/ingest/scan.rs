//! What the watcher knows about each file, and how it reads one: the `*.json` digests, the
//! `*.jsonl` read positions, the rejections already reported. No threads and no `notify`
//! here: the watcher calls [`Tracker::visit`] for a path something happened to and
//! [`Tracker::rescan`] to walk every tree.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::digest_text;

use super::{Ingested, Limits, Reason, Rejection};
use valp_view::sanitize::display_text;

/// Folders nested deeper than this below the control root are not read.
pub(super) const MAX_DEPTH: usize = 32;
/// Bytes read at a time from a `*.jsonl` file.
const CHUNK: usize = 64 << 10;
/// Bytes before the read position re-checked on every read of a `*.jsonl` file.
const GUARD: usize = 64;

/// The receiver is gone or the watcher is stopping: stop working.
#[derive(Debug)]
pub(super) struct Stopped;

/// Where items go.
pub(super) type Emit<'a> = dyn FnMut(Ingested) -> Result<(), Stopped> + 'a;

/// Whether the ingest skips a name without a word: hidden and temporary names of atomic
/// writers, editor backups, lock files.
pub(super) fn is_ignored(name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    bytes.starts_with(b".")
        || bytes.ends_with(b".tmp")
        || bytes.ends_with(b"~")
        || bytes.ends_with(b".lock")
}

/// Whether any component of a relative path is ignored.
pub(super) fn has_ignored_component(path: &Path) -> bool {
    path.components().any(|component| match component {
        Component::Normal(name) => is_ignored(name),
        _ => true,
    })
}

/// What `lstat` says, enough to tell whether a file changed since it was last read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    fn of(meta: &Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// What is known about one path.
#[derive(Debug, Default)]
struct Entry {
    /// The fingerprint when the file was last handled: a rescan skips it while it is unchanged.
    seen: Option<Fingerprint>,
    /// The last rejection of the whole file: its code and the file it was about (device and
    /// inode), so it is reported once per file until the file is read successfully.
    rejected: Option<(&'static str, Option<(u64, u64)>)>,
    /// `*.json`: the SHA-256 of the last content emitted.
    digest: Option<[u8; 32]>,
    /// `*.jsonl`: the read position.
    tail: Option<Tail>,
}

/// The read position in a `*.jsonl` file and what it rests on.
#[derive(Debug, Clone)]
struct Tail {
    dev: u64,
    ino: u64,
    /// Bytes consumed: the first byte of the first incomplete line (or, while `skipping`, a
    /// byte inside the oversized line).
    offset: u64,
    /// SHA-256 of the bytes `0..offset`.
    prefix: Sha256,
    /// The last (at most [`GUARD`]) bytes before `offset`.
    guard: Vec<u8>,
    /// Inside a line already rejected as too long: drop bytes up to its LF.
    skipping: bool,
}

impl Tail {
    fn new(dev: u64, ino: u64) -> Self {
        Self {
            dev,
            ino,
            offset: 0,
            prefix: Sha256::new(),
            guard: Vec::new(),
            skipping: false,
        }
    }

    fn consume(&mut self, bytes: &[u8]) {
        self.prefix.update(bytes);
        self.offset += bytes.len() as u64;
        if bytes.len() >= GUARD {
            self.guard.clear();
            self.guard.extend_from_slice(&bytes[bytes.len() - GUARD..]);
        } else {
            self.guard.extend_from_slice(bytes);
            let excess = self.guard.len().saturating_sub(GUARD);
            self.guard.drain(..excess);
        }
    }
}

/// Where an opened file really is.
enum Location {
    /// Where it was opened.
    Here,
    /// Elsewhere in the control root, or unlinked (replaced while being opened): its new state
    /// has its own event.
    Moved,
    /// Outside the control root: a symbolic link was followed on the way.
    Outside,
}

/// `O_NOFOLLOW | O_NONBLOCK` where their values are known: the last component is never
/// followed, and a FIFO swapped in after `lstat` cannot block the open.
pub(crate) const fn open_flags() -> i32 {
    if cfg!(target_os = "linux")
        && (cfg!(target_arch = "aarch64")
            || cfg!(target_arch = "arm")
            || cfg!(target_arch = "powerpc")
            || cfg!(target_arch = "powerpc64"))
    {
        0o100_000 | 0o4000
    } else if cfg!(target_os = "linux")
        && (cfg!(target_arch = "x86_64")
            || cfg!(target_arch = "x86")
            || cfg!(target_arch = "riscv64")
            || cfg!(target_arch = "loongarch64")
            || cfg!(target_arch = "s390x"))
    {
        0o400_000 | 0o4000
    } else if cfg!(any(
        target_os = "macos",
        target_os = "ios",
        target_os = "freebsd",
        target_os = "openbsd",
        target_os = "netbsd",
        target_os = "dragonfly"
    )) {
        0x0100 | 0x0004
    } else {
        0
    }
}

/// Everything the watcher has seen, keyed by path relative to the control root.
pub(super) struct Tracker {
    base: PathBuf,
    roots: Vec<PathBuf>,
    /// Folders where a file of another kind is rejected rather than skipped.
    strict: Vec<PathBuf>,
    limits: Limits,
    entries: HashMap<PathBuf, Entry>,
    buffer: Vec<u8>,
}

impl Tracker {
    /// `base` must be canonical; `roots` and `strict` are relative to it.
    pub(super) fn new(
        base: PathBuf,
        roots: Vec<PathBuf>,
        strict: Vec<PathBuf>,
        limits: Limits,
    ) -> Self {
        Self {
            base,
            roots,
            strict,
            limits,
            entries: HashMap::new(),
            buffer: Vec::new(),
        }
    }

    /// Walks every root and emits what is new or changed since it was last read.
    pub(super) fn rescan(&mut self, emit: &mut Emit<'_>) -> Result<(), Stopped> {
        for root in self.roots.clone() {
            self.walk(&root, emit)?;
        }
        Ok(())
    }

    /// Something happened to `path` (relative): read it again (a folder: walk it). Returns
    /// whether it was a folder.
    pub(super) fn visit(&mut self, path: &Path, emit: &mut Emit<'_>) -> Result<bool, Stopped> {
        if has_ignored_component(path) || !self.roots.iter().any(|root| path.starts_with(root)) {
            return Ok(false);
        }
        let full = self.base.join(path);
        match fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => self.walk(path, emit).map(|()| true),
            Ok(meta) => self.file(path, &meta, true, emit).map(|()| false),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // Gone: a file of that name later is read whatever its fingerprint.
                if let Some(entry) = self.entries.get_mut(path) {
                    entry.seen = None;
                }
                Ok(false)
            }
            Err(error) => self
                .reject(path, Reason::Unreadable(io_text(&error)), None, emit)
                .map(|()| false),
        }
    }

    fn walk(&mut self, dir: &Path, emit: &mut Emit<'_>) -> Result<(), Stopped> {
        // Depth-first with an explicit stack; folders are never entered through a link.
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            if dir.components().count() > MAX_DEPTH {
                self.reject(&dir, Reason::TooDeep, None, emit)?;
                continue;
            }
            if dir.to_str().is_none() {
                self.reject(&dir, Reason::NonUtf8Name, None, emit)?;
                continue;
            }
            let listing = match fs::read_dir(self.base.join(&dir)) {
                Ok(listing) => listing,
                // A watched folder that is gone is blind; anything else that vanished is not
                // news.
                Err(error)
                    if error.kind() == io::ErrorKind::NotFound && !self.roots.contains(&dir) =>
                {
                    continue;
                }
                Err(error) => {
                    self.reject(&dir, Reason::Unreadable(io_text(&error)), None, emit)?;
                    continue;
                }
            };
            if let Some(entry) = self.entries.get_mut(&dir) {
                entry.rejected = None;
            }
            let mut names: Vec<_> = listing
                .filter_map(Result::ok)
                .map(|entry| entry.file_name())
                .filter(|name| !is_ignored(name))
                .collect();
            names.sort_unstable();
            let mut folders = Vec::new();
            for name in names {
                let path = dir.join(&name);
                match fs::symlink_metadata(self.base.join(&path)) {
                    Ok(meta) if meta.is_dir() => folders.push(path),
                    Ok(meta) => self.file(&path, &meta, false, emit)?,
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => {
                        self.reject(&path, Reason::Unreadable(io_text(&error)), None, emit)?;
                    }
                }
            }
            stack.extend(folders.into_iter().rev());
        }
        Ok(())
    }

    /// A non-folder entry: `meta` is its `lstat`; `forced` reads it even if it looks unchanged.
    fn file(
        &mut self,
        path: &Path,
        meta: &Metadata,
        forced: bool,
        emit: &mut Emit<'_>,
    ) -> Result<(), Stopped> {
        let print = Fingerprint::of(meta);
        if !forced
            && self
                .entries
                .get(path)
                .is_some_and(|entry| entry.seen == Some(print))
        {
            return Ok(());
        }
        let kind = meta.file_type();
        if kind.is_symlink() {
            return self.reject(path, Reason::Symlink, Some(print), emit);
        }
        if !kind.is_file() {
            return self.reject(path, Reason::NotAFile, Some(print), emit);
        }
        if path.to_str().is_none() {
            return self.reject(path, Reason::NonUtf8Name, Some(print), emit);
        }
        match path.extension().and_then(OsStr::to_str) {
            Some("json") => self.json(path, print, emit),
            Some("jsonl") => self.jsonl(path, print, emit),
            _ if self.strict.iter().any(|folder| path.starts_with(folder)) => {
                self.reject(path, Reason::UnknownKind, Some(print), emit)
            }
            // An adapter's own files (captured output, logs): not for the ingest.
            _ => Ok(()),
        }
    }

    /// Opens a regular file without following a link, and checks it is the one `lstat` saw,
    /// where it was expected. `Ok(None)`: it changed meanwhile (its change has its own event).
    fn open(
        &mut self,
        path: &Path,
        print: Fingerprint,
        emit: &mut Emit<'_>,
    ) -> Result<Option<(File, Metadata)>, Stopped> {
        let full = self.base.join(path);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(open_flags())
            .open(&full)
        {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return self
                    .reject(path, Reason::Unreadable(io_text(&error)), Some(print), emit)
                    .map(|()| None);
            }
        };
        let meta = match file.metadata() {
            Ok(meta) => meta,
            Err(error) => {
                return self
                    .reject(path, Reason::Unreadable(io_text(&error)), Some(print), emit)
                    .map(|()| None);
            }
        };
        if (meta.dev(), meta.ino()) != (print.dev, print.ino) || !meta.is_file() {
            return Ok(None);
        }
        match self.location(&file, &full) {
            Location::Here => Ok(Some((file, meta))),
            Location::Moved => Ok(None),
            Location::Outside => self
                .reject(path, Reason::Symlink, Some(print), emit)
                .map(|()| None),
        }
    }

    /// Where `file` (opened as `full`) really is: `/proc/self/fd` names the file that was
    /// opened, so a folder swapped for a link between `lstat` and `open` is caught.
    fn location(&self, file: &File, full: &Path) -> Location {
        let real = proc_path(file).or_else(|| fs::canonicalize(full).ok());
        match real {
            Some(real) if real == full => Location::Here,
            Some(real) if real.starts_with(&self.base) => Location::Moved,
            Some(_) => Location::Outside,
            None => Location::Moved,
        }
    }

    fn json(
        &mut self,
        path: &Path,
        print: Fingerprint,
        emit: &mut Emit<'_>,
    ) -> Result<(), Stopped> {
        let limit = self.limits.max_file_bytes;
        if print.len > limit {
            let reason = Reason::TooLarge {
                size: print.len,
                limit,
            };
            return self.reject(path, reason, Some(print), emit);
        }
        let Some((file, _)) = self.open(path, print, emit)? else {
            return Ok(());
        };
        let mut bytes = Vec::with_capacity(usize::try_from(print.len).unwrap_or(0));
        if let Err(error) = file.take(limit.saturating_add(1)).read_to_end(&mut bytes) {
            return self.reject(path, Reason::Unreadable(io_text(&error)), Some(print), emit);
        }
        let size = bytes.len() as u64;
        if size > limit {
            return self.reject(path, Reason::TooLarge { size, limit }, Some(print), emit);
        }
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        let entry = self.entries.entry(path.to_path_buf()).or_default();
        entry.seen = Some(print);
        entry.rejected = None;
        if entry.digest == Some(digest) {
            return Ok(());
        }
        entry.digest = Some(digest);
        emit(Ingested::File {
            path: path.to_path_buf(),
            bytes,
            digest: digest_text(&digest),
        })
    }

    fn jsonl(
        &mut self,
        path: &Path,
        print: Fingerprint,
        emit: &mut Emit<'_>,
    ) -> Result<(), Stopped> {
        let Some((mut file, meta)) = self.open(path, print, emit)? else {
            return Ok(());
        };
        let len = meta.len();
        let known = self
            .entries
            .get_mut(path)
            .and_then(|entry| entry.tail.take());
        let mut tail = match known {
            None => Tail::new(print.dev, print.ino),
            Some(tail) if (tail.dev, tail.ino) != (print.dev, print.ino) => {
                if tail.offset == 0 {
                    Tail::new(print.dev, print.ino)
                } else if len >= tail.offset && continues(&mut file, &tail).unwrap_or(false) {
                    Tail {
                        dev: print.dev,
                        ino: print.ino,
                        ..tail
                    }
                } else {
                    let reason = Reason::Replaced { from: tail.offset };
                    emit(Ingested::Rejected(Rejection::new(path, reason)))?;
                    Tail::new(print.dev, print.ino)
                }
            }
            Some(tail) if len < tail.offset => {
                let reason = Reason::Truncated {
                    from: tail.offset,
                    to: len,
                };
                emit(Ingested::Rejected(Rejection::new(path, reason)))?;
                Tail::new(print.dev, print.ino)
            }
            Some(tail) => {
                if guarded(&mut file, &tail).unwrap_or(false) {
                    tail
                } else {
                    let reason = Reason::Rewritten { from: tail.offset };
                    emit(Ingested::Rejected(Rejection::new(path, reason)))?;
                    Tail::new(print.dev, print.ino)
                }
            }
        };
        let mut buffer = std::mem::take(&mut self.buffer);
        let read = self.read_lines(path, &mut file, &mut tail, &mut buffer, emit);
        buffer.clear();
        if buffer.capacity() > 4 * CHUNK {
            buffer.shrink_to(CHUNK);
        }
        self.buffer = buffer;
        let entry = self.entries.entry(path.to_path_buf()).or_default();
        entry.tail = Some(tail);
        match read? {
            Ok(()) => {
                entry.seen = Some(print);
                entry.rejected = None;
                Ok(())
            }
            Err(error) => self.reject(path, Reason::Unreadable(io_text(&error)), Some(print), emit),
        }
    }

    /// Emits every complete line after `tail.offset`, advancing it.
    fn read_lines(
        &self,
        path: &Path,
        file: &mut File,
        tail: &mut Tail,
        buffer: &mut Vec<u8>,
        emit: &mut Emit<'_>,
    ) -> Result<io::Result<()>, Stopped> {
        let max_line = usize::try_from(self.limits.max_line_bytes).unwrap_or(usize::MAX);
        if let Err(error) = file.seek(SeekFrom::Start(tail.offset)) {
            return Ok(Err(error));
        }
        buffer.clear();
        loop {
            let old = buffer.len();
            buffer.resize(old + CHUNK, 0);
            let read = loop {
                match file.read(&mut buffer[old..]) {
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    other => break other,
                }
            };
            let read = match read {
                Ok(read) => read,
                Err(error) => return Ok(Err(error)),
            };
            buffer.truncate(old + read);
            if read == 0 {
                return Ok(Ok(()));
            }
            // Bytes before `old` hold no LF.
            let mut start = 0;
            let mut from = old;
            while let Some(at) = buffer[from..].iter().position(|&byte| byte == b'\n') {
                let end = from + at;
                let offset = tail.offset;
                let line = &buffer[start..end];
                if tail.skipping {
                    tail.skipping = false;
                } else if line.len() > max_line {
                    let reason = Reason::LineTooLong {
                        limit: self.limits.max_line_bytes,
                    };
                    emit(Ingested::Rejected(
                        Rejection::new(path, reason).at_offset(offset),
                    ))?;
                } else {
                    // A record glued to a torn line is emitted as a line of its own, after the
                    // fragment (which the decoder rejects): the record is not lost.
                    let parts = match super::decode::glued_record(line) {
                        Some(at) => vec![(0, &line[..at]), (at, &line[at..])],
                        None => vec![(0, line)],
                    };
                    for (at, part) in parts {
                        emit(Ingested::Line {
                            path: path.to_path_buf(),
                            offset: offset + at as u64,
                            bytes: part.to_vec(),
                        })?;
                    }
                }
                tail.consume(&buffer[start..=end]);
                start = end + 1;
                from = start;
            }
            buffer.drain(..start);
            if buffer.len() > max_line || (tail.skipping && !buffer.is_empty()) {
                // An incomplete line already over the cap: report it once, then drop its bytes
                // as they come, up to its LF.
                if !tail.skipping {
                    let reason = Reason::LineTooLong {
                        limit: self.limits.max_line_bytes,
                    };
                    emit(Ingested::Rejected(
                        Rejection::new(path, reason).at_offset(tail.offset),
                    ))?;
                    tail.skipping = true;
                }
                tail.consume(buffer);
                buffer.clear();
            }
        }
    }

    /// Emits a rejection of the whole file unless the same one was already emitted for the
    /// same state of the file.
    fn reject(
        &mut self,
        path: &Path,
        reason: Reason,
        print: Option<Fingerprint>,
        emit: &mut Emit<'_>,
    ) -> Result<(), Stopped> {
        let entry = self.entries.entry(path.to_path_buf()).or_default();
        entry.seen = print;
        // Once per file, whatever is written into it meanwhile (a file growing past the cap is
        // not reported at every write); another file under the name is reported again.
        let key = (reason.code(), print.map(|print| (print.dev, print.ino)));
        if entry.rejected == Some(key) {
            return Ok(());
        }
        entry.rejected = Some(key);
        emit(Ingested::Rejected(Rejection::new(path, reason)))
    }
}

/// Whether a replacement file starts with exactly the bytes already consumed from the old one.
fn continues(file: &mut File, tail: &Tail) -> io::Result<bool> {
    file.seek(SeekFrom::Start(0))?;
    let mut hasher = Sha256::new();
    let copied = io::copy(&mut file.take(tail.offset), &mut HashWriter(&mut hasher))?;
    Ok(copied == tail.offset && hasher.finalize() == tail.prefix.clone().finalize())
}

/// Whether the bytes just before the read position are still the ones consumed.
fn guarded(file: &mut File, tail: &Tail) -> io::Result<bool> {
    if tail.guard.is_empty() {
        return Ok(true);
    }
    file.seek(SeekFrom::Start(tail.offset - tail.guard.len() as u64))?;
    let mut bytes = vec![0; tail.guard.len()];
    file.read_exact(&mut bytes)?;
    Ok(bytes == tail.guard)
}

struct HashWriter<'a>(&'a mut Sha256);

impl io::Write for HashWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The path of an open file as the kernel knows it (Linux `/proc/self/fd`).
fn proc_path(file: &File) -> Option<PathBuf> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

/// An I/O error as display text.
fn io_text(error: &io::Error) -> String {
    display_text(&error.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn ignored_names() {
        for name in [
            ".x.json",
            ".tmp",
            "a.json.tmp",
            "a.json~",
            "receipts.jsonl.lock",
        ] {
            assert!(is_ignored(OsStr::new(name)), "{name}");
        }
        for name in ["a.json", "a.jsonl", "tmp.json", "a.txt"] {
            assert!(!is_ignored(OsStr::new(name)), "{name}");
        }
        assert!(has_ignored_component(Path::new("runtime/.staging/a.json")));
        assert!(has_ignored_component(Path::new("runtime/../a.json")));
        assert!(!has_ignored_component(Path::new("runtime/p/a.json")));
    }

    #[test]
    fn the_guard_keeps_the_last_bytes() {
        let mut tail = Tail::new(0, 0);
        tail.consume(b"abc\n");
        assert_eq!(tail.guard, b"abc\n");
        tail.consume(&[b'x'; 100]);
        assert_eq!(tail.guard, vec![b'x'; GUARD]);
        tail.consume(b"yz\n");
        assert_eq!(&tail.guard[GUARD - 3..], b"yz\n");
        assert_eq!(tail.guard.len(), GUARD);
        assert_eq!(tail.offset, 107);
    }

    fn collect(tracker: &mut Tracker, path: &str) -> Vec<Ingested> {
        let mut items = Vec::new();
        tracker
            .visit(Path::new(path), &mut |item| {
                items.push(item);
                Ok(())
            })
            .unwrap();
        items
    }

    #[test]
    fn lines_partial_lines_and_oversized_lines() {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(base.join("inbox")).unwrap();
        let limits = Limits {
            max_file_bytes: 100,
            max_line_bytes: 8,
        };
        let mut tracker = Tracker::new(
            base.clone(),
            vec![PathBuf::from("inbox")],
            vec![PathBuf::from("inbox")],
            limits,
        );
        let file = base.join("inbox/a.jsonl");
        fs::write(&file, b"one\ntwo\nthr").unwrap();
        let items = collect(&mut tracker, "inbox/a.jsonl");
        let lines: Vec<_> = items
            .iter()
            .map(|item| match item {
                Ingested::Line { offset, bytes, .. } => (*offset, bytes.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(lines, [(0, b"one".to_vec()), (4, b"two".to_vec())]);
        let mut append = OpenOptions::new().append(true).open(&file).unwrap();
        io::Write::write_all(&mut append, b"ee\nwaytoolongline\nok\n").unwrap();
        let items = collect(&mut tracker, "inbox/a.jsonl");
        assert_eq!(items.len(), 3, "{items:?}");
        assert!(matches!(&items[0], Ingested::Line { offset: 8, bytes, .. } if bytes == b"three"));
        assert!(matches!(&items[1], Ingested::Rejected(r)
            if r.offset == Some(14) && r.reason == Reason::LineTooLong { limit: 8 }));
        assert!(matches!(&items[2], Ingested::Line { offset: 29, bytes, .. } if bytes == b"ok"));
        // An incomplete line over the cap is reported once, then skipped to its LF.
        io::Write::write_all(&mut append, &[b'z'; 40]).unwrap();
        let items = collect(&mut tracker, "inbox/a.jsonl");
        assert!(matches!(&items[..], [Ingested::Rejected(r)] if r.offset == Some(32)));
        io::Write::write_all(&mut append, b"zzz\nfine\n").unwrap();
        let items = collect(&mut tracker, "inbox/a.jsonl");
        assert!(
            matches!(&items[..], [Ingested::Line { offset: 76, bytes, .. }] if bytes == b"fine")
        );
        assert!(collect(&mut tracker, "inbox/a.jsonl").is_empty());
    }

    #[test]
    fn a_record_glued_to_a_torn_line_comes_out_after_the_fragment() {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        fs::create_dir(base.join("inbox")).unwrap();
        let mut tracker = Tracker::new(
            base.clone(),
            vec![PathBuf::from("inbox")],
            vec![PathBuf::from("inbox")],
            Limits::default(),
        );
        fs::write(
            base.join("inbox/g.jsonl"),
            b"{\"a\":1}\n{\"torn\":\"x{\"b\":{\"c\":2}}\n{\"d\":3}\n",
        )
        .unwrap();
        let lines: Vec<_> = collect(&mut tracker, "inbox/g.jsonl")
            .into_iter()
            .map(|item| match item {
                Ingested::Line { offset, bytes, .. } => (offset, bytes),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            lines,
            [
                (0, b"{\"a\":1}".to_vec()),
                (8, b"{\"torn\":\"x".to_vec()),
                (18, b"{\"b\":{\"c\":2}}".to_vec()),
                (32, b"{\"d\":3}".to_vec()),
            ]
        );
    }
}
