//! Capped capture of a child's stdout or stderr into a file of the attempt folder.
//!
//! A thread copies the pipe into the file up to the cap, then keeps reading and dropping bytes
//! so the child never blocks on a full pipe. [`Capture::close`] stops all writing (a thread
//! still blocked on a pipe that a stray process holds open writes nothing more), so the file
//! the content proof digests cannot change afterwards.

use std::fs::File;
use std::io::{self, Read, Write as _};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Shared {
    closed: bool,
    written: u64,
    truncated: bool,
    error: Option<String>,
}

/// What a closed capture holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Bytes written to the file.
    pub bytes: u64,
    /// Whether bytes past the cap were dropped (or a write failed).
    pub truncated: bool,
    /// A write error, if one stopped the copy early.
    pub error: Option<String>,
}

/// One stream being captured.
pub struct Capture {
    shared: Arc<Mutex<Shared>>,
    thread: JoinHandle<()>,
}

impl Capture {
    /// Starts copying `from` into `file` (already created), at most `cap` bytes.
    pub fn start(from: impl Read + Send + 'static, file: File, cap: u64) -> io::Result<Self> {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let thread = std::thread::Builder::new()
            .name("valp-capture".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || copy(from, file, cap, &shared)
            })?;
        Ok(Self { shared, thread })
    }

    /// Stops the capture: waits up to `patience` for the end of the stream, then stops writing
    /// whatever happens. The file is synced by the copier before it reports the end; after a
    /// forced stop the caller syncs it.
    pub fn close(self, patience: Duration) -> Captured {
        let deadline = Instant::now() + patience;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        shared.closed = true;
        Captured {
            bytes: shared.written,
            truncated: shared.truncated,
            error: shared.error.clone(),
        }
    }
}

fn copy(mut from: impl Read, mut file: File, cap: u64, shared: &Mutex<Shared>) {
    let mut buffer = vec![0_u8; 64 * 1024];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                state.error.get_or_insert_with(|| error.to_string());
                break;
            }
        };
        let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
        if state.closed {
            return;
        }
        let room = usize::try_from(cap.saturating_sub(state.written)).unwrap_or(usize::MAX);
        let keep = read.min(room);
        if keep < read {
            state.truncated = true;
        }
        if keep > 0 && state.error.is_none() {
            match file.write_all(&buffer[..keep]) {
                Ok(()) => state.written += keep as u64,
                Err(error) => {
                    // Keep draining the pipe so the child does not block; record the failure.
                    state.truncated = true;
                    state.error = Some(error.to_string());
                }
            }
        }
    }
    let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
    if !state.closed
        && let Err(error) = file.sync_all()
    {
        state.error.get_or_insert_with(|| error.to_string());
    }
}

/// Syncs a capture file to disk (after a forced close).
pub fn sync_file(path: &Path) -> io::Result<()> {
    std::fs::OpenOptions::new()
        .append(true)
        .open(path)?
        .sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn bytes_past_the_cap_are_drained_and_dropped() {
        let path = std::env::temp_dir().join(format!("valp-capture-{}", std::process::id()));
        let file = File::create(&path).unwrap();
        let source = io::Cursor::new(vec![b'x'; 200_000]);
        let capture = Capture::start(source, file, 70_000).unwrap();
        let captured = capture.close(Duration::from_secs(5));
        assert_eq!(
            captured,
            Captured {
                bytes: 70_000,
                truncated: true,
                error: None
            }
        );
        assert_eq!(std::fs::read(&path).unwrap().len(), 70_000);
        std::fs::remove_file(&path).unwrap();
    }
}
