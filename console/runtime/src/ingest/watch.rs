//! The transport: `notify` events → a set of dirty paths → one worker thread that reads them
//! and sends [`Ingested`] items on a bounded channel.
//!
//! Threads: `notify`'s own (inotify reader or poller) only records which paths changed, in a
//! set bounded by [`MAX_DIRTY`] (past it the set is dropped and a full rescan is asked for),
//! so it never waits for the consumer. The worker takes the whole set at once (a burst of
//! events on one file is read once), reads each path, and delivers items with backpressure:
//! while the channel is full it waits, so memory is bounded by the channel's capacity times
//! the largest item (a `*.json` file or one line), whatever the write rate. Stopping (drop or
//! [`Watcher::stop`]) is seen by a waiting worker within 2 ms, and dropping the receiver stops
//! it too.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, PollWatcher, RecommendedWatcher, RecursiveMode};

use super::scan::{Stopped, Tracker, has_ignored_component};
use super::{Ingested, Limits};
use valp_view::sanitize::display_text;

/// Distinct changed paths kept between two passes of the worker; past it, a full rescan
/// replaces them.
pub const MAX_DIRTY: usize = 65_536;

/// What to watch and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchConfig {
    /// The control root (`.valp/`); item paths are relative to it.
    pub base: PathBuf,
    /// Folders under `base` watched recursively (relative, no `..`); they must exist.
    pub roots: Vec<PathBuf>,
    /// Folders (relative to `base`) where a file that is neither `*.json` nor `*.jsonl` is
    /// rejected; elsewhere it is skipped (adapters keep logs and captured output in their
    /// folders). Default: `inbox`.
    pub reject_other_files_under: Vec<PathBuf>,
    /// Size caps.
    pub limits: Limits,
    /// Capacity of the item channel (default 1024).
    pub capacity: usize,
    /// Full rescan period (default 5 s).
    pub rescan_every: Duration,
    /// `PollWatcher` period when polling (default 1 s).
    pub poll_interval: Duration,
    /// Poll even when the native watcher works.
    pub force_polling: bool,
}

impl WatchConfig {
    /// `runtime/` and `inbox/` of the control root `base`, with the defaults.
    pub fn control_root(base: impl Into<PathBuf>) -> Self {
        Self {
            base: base.into(),
            roots: vec![PathBuf::from("runtime"), PathBuf::from("inbox")],
            reject_other_files_under: vec![PathBuf::from("inbox")],
            limits: Limits::default(),
            capacity: 1024,
            rescan_every: Duration::from_secs(5),
            poll_interval: Duration::from_secs(1),
            force_polling: false,
        }
    }
}

/// How changes are noticed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The platform's watcher (inotify on Linux).
    Native,
    /// `notify`'s `PollWatcher`, plus a full rescan every poll interval.
    Polling {
        /// Why (`forced`, or the native watcher's error).
        reason: String,
    },
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Native => f.write_str("native"),
            Self::Polling { reason } => write!(f, "polling ({reason})"),
        }
    }
}

/// Why the watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// The configuration cannot work.
    #[error("invalid watch configuration: {0}")]
    Config(String),
    /// The control root or a watched folder is missing, not a folder, or a link.
    #[error("{}: {reason}", display_text(&.path.to_string_lossy()))]
    Root {
        /// Which.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Neither the native watcher nor polling could watch a folder.
    #[error("cannot watch {}: {source}", display_text(&.path.to_string_lossy()))]
    Watch {
        /// Which.
        path: PathBuf,
        /// `notify`'s error.
        source: notify::Error,
    },
    /// The worker thread could not be started.
    #[error("cannot start the ingest thread: {0}")]
    Thread(std::io::Error),
}

#[derive(Default)]
struct Pending {
    dirty: BTreeSet<PathBuf>,
    rescan: bool,
    /// The last [`Watcher::rescan`] ticket handed out.
    requested: u64,
}

struct Shared {
    stop: AtomicBool,
    pending: Mutex<Pending>,
    wake: Condvar,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Watches folders of a control root and sends what it reads (see the [module
/// docs](super)). Dropping it stops its threads.
pub struct Watcher {
    shared: Arc<Shared>,
    backend: Option<Box<dyn notify::Watcher + Send>>,
    worker: Option<JoinHandle<()>>,
    mode: Mode,
    base: PathBuf,
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("base", &self.base)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Watcher {
    /// Starts watching: the native watcher (or polling, if it fails or is forced), then a full
    /// scan (answered by [`Ingested::Rescanned`] with generation 0), then changes as they come.
    pub fn start(config: WatchConfig) -> Result<(Self, Receiver<Ingested>), IngestError> {
        validate(&config)?;
        let base = std::fs::canonicalize(&config.base).map_err(|error| IngestError::Root {
            path: config.base.clone(),
            reason: error.to_string(),
        })?;
        for root in &config.roots {
            let path = base.join(root);
            match std::fs::symlink_metadata(&path) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(IngestError::Root {
                        path,
                        reason: "not a folder (links are not followed)".to_owned(),
                    });
                }
                Err(error) => {
                    return Err(IngestError::Root {
                        path,
                        reason: error.to_string(),
                    });
                }
            }
        }
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
        });
        let (backend, mode) = backend(&config, &base, &shared)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel(config.capacity);
        let rescan_every = match mode {
            Mode::Native => config.rescan_every,
            // The poller compares modification times in whole seconds, so an append in the
            // same second as its last look is invisible to it; our rescan compares
            // nanosecond times and sizes.
            Mode::Polling { .. } => config.rescan_every.min(config.poll_interval),
        };
        let tracker = Tracker::new(
            base.clone(),
            config.roots,
            config.reject_other_files_under,
            config.limits,
        );
        let worker = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("valp-ingest".to_owned())
                .spawn(move || work(&shared, tracker, &sender, rescan_every))
                .map_err(IngestError::Thread)?
        };
        Ok((
            Self {
                shared,
                backend: Some(backend),
                worker: Some(worker),
                mode,
                base,
            },
            receiver,
        ))
    }

    /// Asks for a full rescan; the returned ticket is answered by an [`Ingested::Rescanned`]
    /// whose generation is at least the ticket.
    pub fn rescan(&self) -> u64 {
        let ticket = {
            let mut pending = self.shared.pending();
            pending.requested += 1;
            pending.rescan = true;
            pending.requested
        };
        self.shared.wake.notify_one();
        ticket
    }

    /// How changes are noticed.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The control root, canonical; item paths are relative to it.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Stops the threads and waits for the worker (the same as dropping the watcher).
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        // Taking the lock orders the flag before a worker that is about to wait.
        drop(self.shared.pending());
        self.shared.wake.notify_all();
        self.backend = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn validate(config: &WatchConfig) -> Result<(), IngestError> {
    let invalid = |text: &str| Err(IngestError::Config(text.to_owned()));
    if config.capacity == 0 {
        return invalid("the channel capacity must be at least 1");
    }
    if config.roots.is_empty() {
        return invalid("nothing to watch");
    }
    if config.rescan_every.is_zero() || config.poll_interval.is_zero() {
        return invalid("the rescan and poll periods must be positive");
    }
    if config.limits.max_file_bytes == 0 || config.limits.max_line_bytes == 0 {
        return invalid("the size caps must be positive");
    }
    for root in &config.roots {
        let mut components = root.components();
        if !components.all(|c| matches!(c, Component::Normal(_))) || root.as_os_str().is_empty() {
            return Err(IngestError::Config(format!(
                "{} is not a relative folder path",
                display_text(&root.to_string_lossy())
            )));
        }
    }
    Ok(())
}

/// The native watcher on every root, or the poller when it is forced or the native one fails.
fn backend(
    config: &WatchConfig,
    base: &Path,
    shared: &Arc<Shared>,
) -> Result<(Box<dyn notify::Watcher + Send>, Mode), IngestError> {
    let notify_config = notify::Config::default().with_follow_symlinks(false);
    let reason = if config.force_polling {
        "forced".to_owned()
    } else {
        let native = <RecommendedWatcher as notify::Watcher>::new(
            handler(Arc::clone(shared), base.to_path_buf()),
            notify_config,
        )
        .and_then(|mut watcher| {
            for root in &config.roots {
                notify::Watcher::watch(&mut watcher, &base.join(root), RecursiveMode::Recursive)?;
            }
            Ok(watcher)
        });
        match native {
            Ok(watcher) => return Ok((Box::new(watcher), Mode::Native)),
            Err(error) => display_text(&error.to_string()),
        }
    };
    let mut poller = PollWatcher::new(
        handler(Arc::clone(shared), base.to_path_buf()),
        notify_config.with_poll_interval(config.poll_interval),
    )
    .map_err(|source| IngestError::Watch {
        path: base.to_path_buf(),
        source,
    })?;
    for root in &config.roots {
        let path = base.join(root);
        notify::Watcher::watch(&mut poller, &path, RecursiveMode::Recursive)
            .map_err(|source| IngestError::Watch { path, source })?;
    }
    Ok((Box::new(poller), Mode::Polling { reason }))
}

/// Whether an event can mean new content. Opening and reading (ours included) cannot.
fn matters(kind: EventKind) -> bool {
    match kind {
        EventKind::Access(access) => access == AccessKind::Close(AccessMode::Write),
        EventKind::Any
        | EventKind::Create(_)
        | EventKind::Modify(_)
        | EventKind::Remove(_)
        | EventKind::Other => true,
    }
}

/// `notify`'s event handler: records what changed and wakes the worker; never blocks on it.
fn handler(shared: Arc<Shared>, base: PathBuf) -> impl FnMut(notify::Result<Event>) + Send {
    move |result| {
        let mut pending = shared.pending();
        match result {
            Ok(event) if !event.need_rescan() => {
                if !matters(event.kind) {
                    return;
                }
                let before = (pending.dirty.len(), pending.rescan);
                for path in event.paths {
                    match path.strip_prefix(&base) {
                        Ok(relative) if has_ignored_component(relative) => {}
                        Ok(relative) => {
                            pending.dirty.insert(relative.to_path_buf());
                        }
                        // A path outside the control root: something moved; look everywhere.
                        Err(_) => pending.rescan = true,
                    }
                }
                if pending.dirty.len() > MAX_DIRTY {
                    pending.dirty.clear();
                    pending.rescan = true;
                }
                if before == (pending.dirty.len(), pending.rescan) {
                    return;
                }
            }
            // An overflow (events were lost) or an error of the watcher.
            Ok(_) | Err(_) => pending.rescan = true,
        }
        drop(pending);
        shared.wake.notify_one();
    }
}

/// The worker: the first full scan, then dirty paths as they come and rescans when due.
fn work(shared: &Shared, mut tracker: Tracker, sender: &SyncSender<Ingested>, every: Duration) {
    let mut emit = |item| deliver(shared, sender, item);
    if tracker.rescan(&mut emit).is_err() || emit(Ingested::Rescanned { generation: 0 }).is_err() {
        return;
    }
    let mut due = Instant::now() + every;
    let mut later = FollowUps::default();
    loop {
        let (dirty, rescan) = {
            let mut pending = shared.pending();
            loop {
                if shared.stop.load(Ordering::Acquire) {
                    return;
                }
                let now = Instant::now();
                if pending.rescan || !pending.dirty.is_empty() || later.next_due(now) {
                    break;
                }
                if now >= due {
                    pending.rescan = true;
                    break;
                }
                let wake = later.earliest().map_or(due, |at| at.min(due));
                pending = shared
                    .wake
                    .wait_timeout(pending, wake.saturating_duration_since(now))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            let dirty = std::mem::take(&mut pending.dirty);
            let rescan = std::mem::take(&mut pending.rescan).then_some(pending.requested);
            (dirty, rescan)
        };
        let now = Instant::now();
        let follow_ups = later.take_due(now);
        for path in dirty {
            match tracker.visit(&path, &mut emit) {
                Err(Stopped) => return,
                Ok(true) => later.add(now, &path),
                Ok(false) => {}
            }
        }
        for path in follow_ups {
            if tracker.visit(&path, &mut emit).is_err() {
                return;
            }
        }
        if let Some(generation) = rescan {
            if tracker.rescan(&mut emit).is_err()
                || emit(Ingested::Rescanned { generation }).is_err()
            {
                return;
            }
            due = Instant::now() + every;
        }
    }
}

/// Folders walked again a while after an event about them.
///
/// `notify` adds its watch on a new folder only after passing on the event that created it, so
/// a file created in the folder between our walk and that watch has no event. Walking the
/// folder again 100 ms and 1 s later catches it (files already read are skipped by their
/// fingerprint); the periodic rescan remains the last resort.
#[derive(Default)]
struct FollowUps {
    due: BTreeSet<(Instant, PathBuf)>,
}

impl FollowUps {
    const AFTER: [Duration; 2] = [Duration::from_millis(100), Duration::from_secs(1)];
    const MAX: usize = 4096;

    fn add(&mut self, now: Instant, path: &Path) {
        if self.due.len() < Self::MAX {
            for after in Self::AFTER {
                self.due.insert((now + after, path.to_path_buf()));
            }
        }
    }

    fn earliest(&self) -> Option<Instant> {
        self.due.first().map(|(at, _)| *at)
    }

    fn next_due(&self, now: Instant) -> bool {
        self.earliest().is_some_and(|at| at <= now)
    }

    fn take_due(&mut self, now: Instant) -> BTreeSet<PathBuf> {
        let mut paths = BTreeSet::new();
        while self.due.first().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, path)) = self.due.pop_first() {
                paths.insert(path);
            }
        }
        paths
    }
}

/// Sends `item`, waiting while the channel is full; gives up when the receiver is gone or the
/// watcher stops.
fn deliver(shared: &Shared, sender: &SyncSender<Ingested>, item: Ingested) -> Result<(), Stopped> {
    let mut item = item;
    let mut waits: u32 = 0;
    loop {
        match sender.try_send(item) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(_)) => return Err(Stopped),
            Err(TrySendError::Full(back)) => {
                if shared.stop.load(Ordering::Acquire) {
                    return Err(Stopped);
                }
                item = back;
                if waits < 64 {
                    thread::yield_now();
                } else {
                    // 100 µs, doubling up to 1.6 ms.
                    thread::sleep(Duration::from_micros(100 << (waits - 64).min(4)));
                }
                waits = waits.saturating_add(1);
            }
        }
    }
}
