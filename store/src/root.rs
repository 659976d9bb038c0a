//! An open control root: the installation, its task journals and its evidence store.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::Canonical;
use valp_kernel::installation::{
    InstallationEvent, InstallationGenesis, InstallationLive, InstallationState,
};
use valp_kernel::live::LiveState;
use valp_kernel::replay::{GenesisRoot, Replayer};
use valp_kernel::{Identity, IdentityKind, InstallationEventKind};

use crate::blobs::BlobStore;
use crate::chain::encode_line;
use crate::clock::{Clock, SystemClock};
use crate::done::DoneGuard;
use crate::error::StoreError;
use crate::fence::EpochFence;
use crate::files::{create_dir_durably, create_exclusively, write_atomically};
use crate::installation::Installation;
use crate::io::Storage;
use crate::journal::{Access, Anchoring, JOURNAL_FILE, Journal, LOCK_FILE, create_journal};
use crate::layout::{FOLDERS, Layout};
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use crate::machine::TaskGuard;

/// The folder of the console's own files under the control root.
const CONSOLE_DIR: &str = "console";

/// An opened control root. Its clones share one read-only ledger handle for the epoch fence of
/// their task journals (see [`fence`](crate::fence)).
#[derive(Debug, Clone)]
pub struct ControlRoot {
    layout: Layout,
    installation: Installation,
    storage: Arc<dyn Storage>,
    fence: EpochFence,
    /// Stamps every line written through this root (`recorded_at`).
    clock: Arc<dyn Clock>,
}

impl ControlRoot {
    /// Creates a control root at `root` (the `.valp` folder) for a new installation. Refuses a
    /// folder that already holds an installation. `installation.json` is created exclusively
    /// (see [`create_exclusively`]): of several concurrent inits exactly one succeeds, the others
    /// are refused and write nothing else, so every file agrees on one installation id.
    pub fn init(
        root: &Path,
        installation_id: Identity,
        storage: Arc<dyn Storage>,
    ) -> Result<Self, StoreError> {
        let layout = Layout::new(root);
        let already = || {
            StoreError::Invalid(format!(
                "{} is already initialised ({} exists); valp init never overwrites an \
                 installation",
                root.display(),
                layout.installation_file().display()
            ))
        };
        if layout.installation_file().exists() {
            return Err(already());
        }
        for folder in FOLDERS {
            create_dir_durably(storage.as_ref(), &root.join(folder))?;
        }
        let installation = Installation::new(installation_id);
        if !create_exclusively(
            storage.as_ref(),
            &layout.blobs_tmp_dir(),
            &layout.installation_file(),
            &installation.canonical_bytes(),
        )? {
            return Err(already());
        }
        let root = Self::assemble(layout, installation, storage);
        root.ledger()?;
        Ok(root)
    }

    /// The installation's authority ledger (`installation/journal.jsonl`), opened for writing
    /// and verified; created (genesis, then `installation_initialized`) when the root has none.
    pub fn ledger(&self) -> Result<Journal<InstallationLive>, StoreError> {
        let dir = self.layout.installation_dir();
        if !dir.join(JOURNAL_FILE).is_file() {
            self.create_ledger(&dir)?;
        }
        self.clocked(Journal::open(
            &dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            Access::Write,
        ))
    }

    /// Opens the authority ledger read-only (nothing is created or repaired).
    pub fn ledger_read_only(&self) -> Result<Journal<InstallationLive>, StoreError> {
        self.ledger_anchored(Access::ReadOnly, Anchoring::Required)
    }

    /// Opens the existing authority ledger with the head anchor required or not.
    pub(crate) fn ledger_anchored(
        &self,
        access: Access,
        anchoring: Anchoring,
    ) -> Result<Journal<InstallationLive>, StoreError> {
        self.clocked(Journal::open_anchored(
            &self.layout.installation_dir(),
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            access,
            crate::machine::NoGuard,
            anchoring,
        ))
    }

    fn create_ledger(&self, dir: &Path) -> Result<(), StoreError> {
        create_dir_durably(self.storage.as_ref(), dir)?;
        let lock = LockGuard::acquire(&dir.join(LOCK_FILE), DEFAULT_LOCK_TIMEOUT)?;
        let path = dir.join(JOURNAL_FILE);
        if path.exists() {
            return Ok(());
        }
        let id = self.installation.installation_id.clone();
        let genesis = InstallationGenesis {
            state: InstallationState::genesis(id.clone()),
        };
        let (line, _) = encode_line(0, None, self.clock.now(), &genesis);
        create_journal(self.storage.as_ref(), &path, &line)?;
        drop(lock);
        let mut ledger: Journal<InstallationLive> = self.clocked(Journal::open(
            dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            Access::Write,
        ))?;
        let event_id = Identity::new(IdentityKind::Event, "installation-initialized")
            .map_err(|error| StoreError::Invalid(error.to_string()))?;
        let initialized = InstallationEvent::new(
            event_id,
            id,
            0,
            InstallationEventKind::InstallationInitialized,
            0,
        );
        match ledger.append(&initialized, &[])? {
            crate::Appended::Accepted { .. } | crate::Appended::Duplicate { .. } => Ok(()),
            crate::Appended::Rejected { error_code, reason } => Err(StoreError::Invalid(format!(
                "the new ledger refused installation_initialized: {error_code}: {reason}"
            ))),
        }
    }

    /// Opens the control root at `root`, checking `installation.json` (which must have the
    /// current layout) and the folders.
    pub fn open(root: &Path, storage: Arc<dyn Storage>) -> Result<Self, StoreError> {
        Self::open_layouts(root, storage, &[crate::installation::LAYOUT_VERSION])
    }

    /// Opens the control root at `root` whose `installation.json` has one of the `accepted`
    /// layouts (for [`upgrade`](crate::upgrade)).
    pub(crate) fn open_layouts(
        root: &Path,
        storage: Arc<dyn Storage>,
        accepted: &[i128],
    ) -> Result<Self, StoreError> {
        let layout = Layout::new(root);
        if !layout.installation_file().is_file() {
            return Err(StoreError::Invalid(format!(
                "{} is not a valp control root (no {}); run `valp init` first",
                root.display(),
                crate::layout::INSTALLATION_FILE
            )));
        }
        let installation = Installation::read_layouts(&layout.installation_file(), accepted)?;
        for folder in FOLDERS {
            create_dir_durably(storage.as_ref(), &root.join(folder))?;
        }
        Ok(Self::assemble(layout, installation, storage))
    }

    fn assemble(layout: Layout, installation: Installation, storage: Arc<dyn Storage>) -> Self {
        let fence = EpochFence::new(
            layout.installation_dir(),
            layout.quarantine_dir(),
            Arc::clone(&storage),
        );
        Self {
            layout,
            installation,
            storage,
            fence,
            clock: Arc::new(SystemClock),
        }
    }

    /// This root with `clock` stamping every line written through it and through the journals
    /// and ledgers it opens (`recorded_at`; tests pass a
    /// [`FixedClock`](crate::clock::FixedClock)).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The installation's epoch fence (shared by the clones of this root).
    pub fn epoch_fence(&self) -> &EpochFence {
        &self.fence
    }

    /// The clock that stamps the lines written through this root.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// `journal` (opened from this root) stamping its lines with the root's clock.
    fn clocked<M: crate::machine::Machine>(
        &self,
        journal: Result<Journal<M>, StoreError>,
    ) -> Result<Journal<M>, StoreError> {
        let mut journal = journal?;
        journal.set_clock(Arc::clone(&self.clock));
        Ok(journal)
    }

    /// The folder layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The installation.
    pub fn installation(&self) -> &Installation {
        &self.installation
    }

    /// The storage in use.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Replaces `leader/binding.json` atomically with `bytes` (the caller owns the format: the
    /// store only guarantees readers see the old file or the whole new one).
    pub fn write_leader_binding(&self, bytes: &[u8]) -> Result<(), StoreError> {
        let path = self.layout.binding_file();
        let dir = path.parent().unwrap_or(self.layout.root());
        create_dir_durably(self.storage.as_ref(), dir)?;
        write_atomically(self.storage.as_ref(), dir, &path, bytes)
    }

    /// The bytes of `leader/binding.json`, or `None` when there is none.
    pub fn read_leader_binding(&self) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.layout.binding_file();
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::io(&path, "read", source)),
        }
    }

    /// Replaces `console/<name>` atomically with `bytes`: the console's own state (the
    /// needs-you acknowledgements), which the store does not interpret. `name` is a plain file
    /// name the caller owns.
    pub fn write_console_file(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let dir = self.layout.root().join(CONSOLE_DIR);
        create_dir_durably(self.storage.as_ref(), &dir)?;
        write_atomically(self.storage.as_ref(), &dir, &dir.join(name), bytes)
    }

    /// The path of `console/<name>`, for reading and for messages.
    pub fn console_file(&self, name: &str) -> PathBuf {
        self.layout.root().join(CONSOLE_DIR).join(name)
    }

    /// The evidence store.
    pub fn blobs(&self) -> BlobStore {
        BlobStore::new(
            self.layout.blobs_dir(),
            self.layout.blobs_tmp_dir(),
            Arc::clone(&self.storage),
        )
    }

    /// Creates the journal of a new task from its GenesisRoot, which must be a valid empty
    /// Task State of this installation. Refuses a task that already has a journal. Task
    /// journals enforce the epoch fence and the Done gate ([`ControlRoot::task_guard`]).
    pub fn create_task(&self, genesis: &GenesisRoot) -> Result<Journal, StoreError> {
        let (line, _) = encode_line(0, None, self.clock.now(), genesis);
        self.create_task_with_lines(genesis, &line)
    }

    /// Creates a task journal holding `lines` (already encoded chain lines starting with the
    /// genesis line) in one atomic step: all of it or nothing.
    pub(crate) fn create_task_with_lines(
        &self,
        genesis: &GenesisRoot,
        lines: &[u8],
    ) -> Result<Journal, StoreError> {
        self.check_genesis(genesis)?;
        let dir = self.layout.task_dir(genesis.state.body.task_id.value());
        create_dir_durably(self.storage.as_ref(), &dir)?;
        let _lock = LockGuard::acquire(&dir.join(LOCK_FILE), DEFAULT_LOCK_TIMEOUT)?;
        let path = dir.join(JOURNAL_FILE);
        if path.exists() {
            return Err(StoreError::Invalid(format!(
                "task {} already has a journal at {}",
                genesis.state.body.task_id.value(),
                path.display()
            )));
        }
        create_journal(self.storage.as_ref(), &path, lines)?;
        self.clocked(Journal::open_guarded(
            &dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            Access::Write,
            self.task_guard().in_task(&dir),
        ))
    }

    /// The guard every task journal of this root is opened with: the epoch fence over the
    /// installation ledger (see [`fence`](crate::fence)) and the Done gate over the root's
    /// evidence store (see [`done`](crate::done)).
    pub fn task_guard(&self) -> TaskGuard {
        TaskGuard::new(self.fence.clone(), DoneGuard::new(self.blobs()))
    }

    fn check_genesis(&self, genesis: &GenesisRoot) -> Result<(), StoreError> {
        Replayer::from_genesis(genesis).map_err(|error| StoreError::Invalid(error.to_string()))?;
        let installation = &genesis.state.body.installation_id;
        if installation != &self.installation.installation_id {
            return Err(StoreError::Invalid(format!(
                "the task belongs to installation {}, this control root is {}",
                installation.value(),
                self.installation.installation_id.value()
            )));
        }
        Ok(())
    }

    /// The folder of task `task_id`, if it holds a journal.
    fn task_journal_dir(&self, task_id: &str) -> Result<PathBuf, StoreError> {
        let dir = self.layout.task_dir(task_id);
        if !dir.join(JOURNAL_FILE).is_file() {
            return Err(StoreError::Invalid(format!(
                "no task {task_id:?} in {}",
                self.layout.root().display()
            )));
        }
        Ok(dir)
    }

    /// Opens and verifies the journal of `task_id`.
    pub fn open_task(&self, task_id: &str, access: Access) -> Result<Journal, StoreError> {
        let dir = self.task_journal_dir(task_id)?;
        self.clocked(Journal::open_guarded(
            &dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            access,
            self.task_guard().in_task(&dir),
        ))
    }

    /// [`ControlRoot::open_task`] replaying every line from the genesis and keeping the
    /// accepted-event history (`live().history()`, `live().to_state()`), which a journal opened
    /// from a snapshot does not hold: for the few readers that need the whole State (a task
    /// handoff records it). O(history).
    pub fn open_task_with_history(
        &self,
        task_id: &str,
        access: Access,
    ) -> Result<Journal, StoreError> {
        let dir = self.task_journal_dir(task_id)?;
        self.clocked(Journal::open_with(
            &dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            access,
            Anchoring::Required,
            self.task_guard().in_task(&dir),
            crate::journal::History::KeptFromGenesis,
            crate::journal::Watch::none(),
        ))
    }

    /// The task folders that hold a journal, sorted.
    pub fn task_dirs(&self) -> Result<Vec<PathBuf>, StoreError> {
        let tasks = self.layout.tasks_dir();
        let entries =
            std::fs::read_dir(&tasks).map_err(|source| StoreError::io(&tasks, "list", source))?;
        let mut dirs = Vec::new();
        for entry in entries {
            let path = entry
                .map_err(|source| StoreError::io(&tasks, "list", source))?
                .path();
            if path.join(JOURNAL_FILE).is_file() {
                dirs.push(path);
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// Opens and verifies the journal in a task folder (as listed by [`ControlRoot::task_dirs`]).
    pub fn open_task_dir(&self, dir: &Path, access: Access) -> Result<Journal, StoreError> {
        self.open_task_dir_anchored(dir, access, Anchoring::Required)
    }

    /// [`ControlRoot::open_task`] read-only, to show the State at the tip (`valp task status`):
    /// opened from a snapshot bound to the last line, the snapshot's index file is read (its
    /// keys) but checked against its digest only before a line is applied to the handle (a
    /// refresh that finds new lines; a handle that finds it does not match refuses to go on),
    /// so such an open reads 16 bytes per entry and hashes none instead of reading and hashing
    /// 80. Everything shown of the State comes from the checked snapshot; only the
    /// idempotency index, which a State shown is not asked, waits for its check.
    pub fn open_task_to_show(&self, task_id: &str) -> Result<Journal, StoreError> {
        self.open_task_dir_to_show(&self.task_journal_dir(task_id)?)
    }

    /// [`ControlRoot::open_task_to_show`] for a task folder (as listed by
    /// [`ControlRoot::task_dirs`]).
    pub fn open_task_dir_to_show(&self, dir: &Path) -> Result<Journal, StoreError> {
        self.open_reader(
            dir,
            self.task_guard().in_task(dir),
            crate::journal::History::KeptIndexDeferred,
            crate::journal::Watch::none(),
        )
    }

    /// A read-only open of the task journal in `dir`, its head anchor required, with `guard`,
    /// keeping `history`, calling `watch` with every verified line.
    fn open_reader(
        &self,
        dir: &Path,
        guard: TaskGuard,
        history: crate::journal::History,
        watch: crate::journal::Watch<LiveState>,
    ) -> Result<Journal, StoreError> {
        self.clocked(Journal::open_with(
            dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            Access::ReadOnly,
            Anchoring::Required,
            guard,
            history,
            watch,
        ))
    }

    /// Opens the journal in a task folder read-only to verify it (as [`verify`](crate::verify)
    /// does), holding the lean idempotency index instead of the history: memory stays at 16
    /// bytes per entry (an event seen again is read back from the journal). The journal's `live().history()` is empty.
    pub fn verify_task_dir(&self, dir: &Path) -> Result<Journal, StoreError> {
        self.verify_task_dir_watched(dir, crate::journal::Watch::none())
    }

    /// [`ControlRoot::verify_task_dir`], calling `watch` with every verified line.
    pub(crate) fn verify_task_dir_watched(
        &self,
        dir: &Path,
        watch: crate::journal::Watch<LiveState>,
    ) -> Result<Journal, StoreError> {
        self.open_reader(
            dir,
            self.task_guard(),
            crate::journal::History::Forgotten,
            watch,
        )
    }

    /// [`ControlRoot::open_task_dir`] with the head anchor required or not.
    pub(crate) fn open_task_dir_anchored(
        &self,
        dir: &Path,
        access: Access,
        anchoring: Anchoring,
    ) -> Result<Journal, StoreError> {
        self.clocked(Journal::open_anchored(
            dir,
            &self.layout.quarantine_dir(),
            Arc::clone(&self.storage),
            access,
            self.task_guard().in_task(dir),
            anchoring,
        ))
    }
}
