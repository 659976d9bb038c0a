//! `valp upgrade`: converting a control root of layout 1, 2 or 3 to layout 4 (see
//! [`installation`](crate::installation) for the layouts), one [`TRANSITIONS`] entry per layout
//! on the way (1 → 2 → 3 → 4).
//!
//! **Order, and why it is crash-safe.**
//! 1. A full copy of the root is made beside it, `<root>.layout<N>-backup-<n>/` (`N` the layout
//!    found; for `.valp/` of layout 2: `.valp.layout2-backup-<n>/`, `n` the first free number
//!    from 1): every file byte for byte, each made durable, written under `<name>.partial/` and
//!    renamed to its name once complete (a crash leaves a `.partial` folder, never a backup that
//!    looks complete but is not).
//! 2. For each transition from the layout found on: its root steps, then its task steps for every
//!    task folder holding a journal. Each step only adds files and is idempotent. 1 → 2 anchors
//!    every journal (verified by replay first; an existing head is checked, so a re-run checks
//!    what the crashed run wrote) and converts the effect ledger. 2 → 3 changes no file: the
//!    lines written before keep no `recorded_at` (their time was never recorded and is not
//!    invented; readers show it as "unknown"), so the step only verifies each task journal.
//!    3 → 4 writes a snapshot of every task journal at its last line (verified by replay from
//!    the genesis first; see [`snapshot`](crate::snapshot)).
//! 3. Every journal is opened again with its head required.
//! 4. `installation.json` gets `layout_version` 4, atomically, last. Until then every other
//!    command refuses the root (`VALP-E-STORE-UPGRADE-REQUIRED`), so nothing but this upgrade
//!    runs on a half-converted root, and running `valp upgrade` again after a crash finishes the
//!    job (with a new backup of the root as it was then). A root already at layout 4 is left
//!    alone. The bump is what keeps a layout-2 valp off a layout-3 root: it would take the
//!    timed lines for damage, and it refuses the root instead.
//!
//! A journal that does not verify stops the upgrade before the version is bumped, naming it;
//! the root stays at its layout with its backup.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use valp_kernel::canonical::Canonical;

use crate::error::StoreError;
use crate::files::write_atomically;
use crate::installation::{Installation, LAYOUT_VERSION, PREVIOUS_LAYOUT_VERSIONS};
use crate::io::Storage;
use crate::journal::{Access, Anchoring};
use crate::lock::{DEFAULT_LOCK_TIMEOUT, LockGuard};
use crate::root::ControlRoot;

/// A step on the whole root; returns what it did, in words.
pub type RootStep = fn(&ControlRoot) -> Result<String, StoreError>;
/// A step on one task folder (`tasks/<task>/`); returns what it did, in words.
pub type TaskStep = fn(&ControlRoot, &Path) -> Result<String, StoreError>;

/// The steps from one layout to the next.
#[derive(Debug)]
pub struct Transition {
    /// The layout converted from (to `from + 1`).
    pub from: i128,
    /// The steps on the whole root, in order.
    pub root_steps: &'static [(&'static str, RootStep)],
    /// The steps on every task folder, in order. A conversion of another per-task file is one
    /// more line here.
    pub task_steps: &'static [(&'static str, TaskStep)],
}

/// Every transition, in order.
pub const TRANSITIONS: &[Transition] = &[
    Transition {
        from: 1,
        root_steps: &[("anchor the installation ledger", anchor_ledger)],
        task_steps: &[
            ("anchor the task journal", anchor_task),
            ("convert the effect ledger", convert_effects),
        ],
    },
    Transition {
        from: 2,
        root_steps: &[],
        task_steps: &[("keep the recorded times unknown", times_unknown)],
    },
    Transition {
        from: 3,
        root_steps: &[],
        task_steps: &[("write the snapshot", write_snapshot)],
    },
];

/// What an upgrade will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The control root.
    pub root: PathBuf,
    /// Its layout now.
    pub layout_version: i128,
    /// Where the backup will be made (`None` when there is nothing to do).
    pub backup: Option<PathBuf>,
    /// The task folders the task steps will run on.
    pub task_dirs: Vec<PathBuf>,
}

/// What an upgrade did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upgraded {
    /// The backup made (`None` when the root was already at the current layout).
    pub backup: Option<PathBuf>,
    /// One line per step run: `<step>: <task folder or "root">: <what it did>`.
    pub steps: Vec<String>,
}

/// Looks at the root at `root` without changing anything.
pub fn plan(root: &Path, storage: Arc<dyn Storage>) -> Result<Plan, StoreError> {
    let opened = open(root, storage)?;
    let layout_version = opened.installation().layout_version;
    if layout_version == LAYOUT_VERSION {
        return Ok(Plan {
            root: root.to_owned(),
            layout_version,
            backup: None,
            task_dirs: Vec::new(),
        });
    }
    Ok(Plan {
        root: root.to_owned(),
        layout_version,
        backup: Some(free_backup_path(root, layout_version)?),
        task_dirs: opened.task_dirs()?,
    })
}

/// Upgrades the root at `root` (see the module documentation).
pub fn upgrade(root: &Path, storage: &Arc<dyn Storage>) -> Result<Upgraded, StoreError> {
    // Two upgrades of one root are kept apart by a lock on its installation.json (not a new
    // file, which the backup would copy); the one that waited then finds layout 3.
    let _lock = LockGuard::acquire(
        &root.join(crate::layout::INSTALLATION_FILE),
        DEFAULT_LOCK_TIMEOUT,
    )?;
    let opened = open(root, Arc::clone(storage))?;
    if opened.installation().layout_version == LAYOUT_VERSION {
        return Ok(Upgraded {
            backup: None,
            steps: Vec::new(),
        });
    }
    let found = opened.installation().layout_version;
    let backup = free_backup_path(root, found)?;
    copy_tree(root, &backup, storage.as_ref())?;
    let mut steps = Vec::new();
    let task_dirs = opened.task_dirs()?;
    for transition in TRANSITIONS.iter().filter(|step| step.from >= found) {
        for (name, step) in transition.root_steps {
            steps.push(format!("{name}: root: {}", step(&opened)?));
        }
        for dir in &task_dirs {
            let folder = folder_name(dir);
            for (name, step) in transition.task_steps {
                steps.push(format!("{name}: {folder}: {}", step(&opened, dir)?));
            }
        }
    }
    // Every journal again, with its head required, before the version says layout 3.
    if opened
        .layout()
        .installation_dir()
        .join(crate::journal::JOURNAL_FILE)
        .is_file()
    {
        opened.ledger_anchored(Access::ReadOnly, Anchoring::Required)?;
    }
    for dir in &task_dirs {
        opened.open_task_dir_anchored(dir, Access::ReadOnly, Anchoring::Required)?;
    }
    let installation = Installation {
        layout_version: LAYOUT_VERSION,
        ..opened.installation().clone()
    };
    let file = opened.layout().installation_file();
    write_atomically(
        storage.as_ref(),
        &opened.layout().blobs_tmp_dir(),
        &file,
        &installation.canonical_bytes(),
    )?;
    Ok(Upgraded {
        backup: Some(backup),
        steps,
    })
}

fn open(root: &Path, storage: Arc<dyn Storage>) -> Result<ControlRoot, StoreError> {
    let mut accepted = PREVIOUS_LAYOUT_VERSIONS.to_vec();
    accepted.push(LAYOUT_VERSION);
    ControlRoot::open_layouts(root, storage, &accepted)
}

/// Task step (2 → 3): verifies the task journal in `dir` against its head; its lines keep no
/// `recorded_at` (nothing is written).
fn times_unknown(root: &ControlRoot, dir: &Path) -> Result<String, StoreError> {
    let journal = root.open_task_dir_anchored(dir, Access::ReadOnly, Anchoring::Required)?;
    Ok(format!(
        "verified {} entries; the time of the lines written so far stays unknown",
        journal.len()
    ))
}

/// Task step (3 → 4): verifies the task journal in `dir` from the genesis and writes its
/// snapshot at the last line (an existing one that does not match is refused and replaced).
fn write_snapshot(root: &ControlRoot, dir: &Path) -> Result<String, StoreError> {
    let mut journal = root.open_task_dir_anchored(dir, Access::Write, Anchoring::Required)?;
    let written = journal.write_snapshot()?;
    Ok(match written {
        Some(path) => format!(
            "verified {} entries; snapshot {}",
            journal.len(),
            path.file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default()
        ),
        None => format!(
            "verified {} entries; no snapshot (nothing after the genesis, or the head lags)",
            journal.len()
        ),
    })
}

/// Root step: verifies the installation ledger (if the root has one yet) and anchors it.
fn anchor_ledger(root: &ControlRoot) -> Result<String, StoreError> {
    let dir = root.layout().installation_dir();
    if !dir.join(crate::journal::JOURNAL_FILE).is_file() {
        return Ok("no ledger yet (it is created with its head)".to_owned());
    }
    let mut ledger = root.ledger_anchored(Access::Write, Anchoring::Optional)?;
    ledger.anchor_under_lock()?;
    Ok(anchored(ledger.len(), ledger.warnings()))
}

/// Task step: verifies the task journal in `dir` and anchors it.
fn anchor_task(root: &ControlRoot, dir: &Path) -> Result<String, StoreError> {
    let mut journal = root.open_task_dir_anchored(dir, Access::Write, Anchoring::Optional)?;
    journal.anchor_under_lock()?;
    Ok(anchored(journal.len(), journal.warnings()))
}

/// Layout 1's `effects.jsonl` becomes the store journal `effect-ledger.jsonl` (the old file is
/// kept, and is in the backup).
fn convert_effects(root: &ControlRoot, dir: &Path) -> Result<String, StoreError> {
    Ok(
        match crate::effects::convert_layout1(dir, root.storage().as_ref())? {
            crate::effects::Conversion::Nothing => "no effect ledger".to_owned(),
            crate::effects::Conversion::Converted { records, torn_tail } => match torn_tail {
                None => format!("converted {records} effect records"),
                Some((offset, len)) => format!(
                    "converted {records} effect records; {len} torn bytes at offset {offset} \
                     left in effects.jsonl"
                ),
            },
            crate::effects::Conversion::AlreadyConverted { records } => {
                format!("already converted ({records} effect records)")
            }
        },
    )
}

fn anchored(entries: u64, warnings: &[crate::Warning]) -> String {
    let mut text = format!("verified {entries} entries, anchored at seq {entries}");
    for warning in warnings {
        text.push_str("; ");
        text.push_str(&warning.to_string());
    }
    text
}

fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `<root>.layout<layout>-backup-<n>` beside the root, `n` the first number from 1 for which
/// neither it nor its `.partial` folder exists.
fn free_backup_path(root: &Path, layout: i128) -> Result<PathBuf, StoreError> {
    let name = folder_name(root);
    let parent = root.parent().unwrap_or(Path::new("."));
    (1_u32..10_000)
        .map(|n| parent.join(format!("{name}.layout{layout}-backup-{n}")))
        .find(|path| !path.exists() && !partial(path).exists())
        .ok_or_else(|| {
            StoreError::Invalid(format!(
                "no free backup folder name beside {}",
                root.display()
            ))
        })
}

fn partial(backup: &Path) -> PathBuf {
    let mut name = backup.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// Copies the tree at `from` to `to` (which must not exist) byte for byte, durably: into
/// `to.partial`, then renamed.
fn copy_tree(from: &Path, to: &Path, storage: &dyn Storage) -> Result<(), StoreError> {
    let staging = partial(to);
    copy_dir(from, &staging, storage)?;
    storage
        .rename(&staging, to)
        .map_err(|source| StoreError::io(to, "rename", source))?;
    let parent = to.parent().unwrap_or(Path::new("."));
    storage
        .sync_dir(parent)
        .map_err(|source| StoreError::io(parent, "sync directory", source))
}

fn copy_dir(from: &Path, to: &Path, storage: &dyn Storage) -> Result<(), StoreError> {
    std::fs::create_dir(to).map_err(|source| StoreError::io(to, "create directory", source))?;
    let entries = std::fs::read_dir(from).map_err(|source| StoreError::io(from, "list", source))?;
    for entry in entries {
        let entry = entry.map_err(|source| StoreError::io(from, "list", source))?;
        let source_path = entry.path();
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|source| StoreError::io(&source_path, "stat", source))?;
        if kind.is_dir() {
            copy_dir(&source_path, &target, storage)?;
        } else if kind.is_file() {
            std::fs::copy(&source_path, &target)
                .map_err(|source| StoreError::io(&target, "copy", source))?;
            File::open(&target)
                .and_then(|file| storage.sync(&file))
                .map_err(|source| StoreError::io(&target, "sync", source))?;
        } else {
            return Err(StoreError::Invalid(format!(
                "{}: not a file or folder; the backup copies only those (move it out of the \
                 control root and run `valp upgrade` again)",
                source_path.display()
            )));
        }
    }
    storage
        .sync_dir(to)
        .map_err(|source| StoreError::io(to, "sync directory", source))
}
