//! The control root (`.valp/`): where it is, what is in it, and how task ids map to folders.
//!
//! ```text
//! .valp/
//!   installation.json          identity of the installation and layout_version 3
//!                              (valp-installation.v1)
//!   installation/journal.jsonl the authority lane's ledger (Leader selection, epochs), same
//!                              format as a task journal
//!   installation/journal.head  its head anchor (valp-store-head.v1)
//!   leader/binding.json        projection of the active Leader binding (derived from the ledger)
//!   tasks/<task>/journal.jsonl genesis + accepted entries, hash-chained, each line with its
//!                              recorded_at (valp-store-journal.v2; v1 lines from before layout 3)
//!   tasks/<task>/journal.head  the seq, entry digest and length the journal reached
//!                              (valp-store-head.v1; `.journal.head.tmp` while it is rewritten)
//!   tasks/<task>/journal.lock  the writers' lock file (never renamed or deleted)
//!   tasks/<task>/rejections.jsonl  proposals the kernel refused (valp-store-rejection.v1)
//!   tasks/<task>/effect-ledger.jsonl  carried-out obligations, chained (see effects)
//!   tasks/<task>/effect-ledger.lock   the effect ledger's writers' lock
//!   tasks/<task>/actions.jsonl  operator actions on agents and their delivery proof, chained
//!                              (see actions; `actions.head`, `actions.lock` as for journals)
//!   evidence/sha256/<hex>      content-addressed evidence bytes
//!   evidence/tmp/              blobs being written (renamed into sha256/ when durable)
//!   runtime/                   adapter observation files (untrusted input)
//!   inbox/                     observation files dropped by other tools (untrusted input)
//!   quarantine/                torn journal tails, copies made by `valp recover`, rejected
//!                              files; never deleted silently
//! ```
//!
//! Beside it, `valp upgrade` leaves `.valp.layout<N>-backup-<n>/`, the root as it was before
//! (`N` its layout then).

use std::path::{Path, PathBuf};

use valp_kernel::canonical::sha256_digest;

/// Name of the control root folder.
pub const ROOT_DIR: &str = ".valp";
/// Environment variable naming the control root.
pub const ROOT_ENV: &str = "VALP_ROOT";
/// The installation file.
pub const INSTALLATION_FILE: &str = "installation.json";
/// Folders every control root has.
pub const FOLDERS: &[&str] = &[
    "installation",
    "leader",
    "tasks",
    "evidence/sha256",
    "evidence/tmp",
    "runtime",
    "inbox",
    "quarantine",
];

/// Paths inside one control root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The layout of the control root at `root` (the `.valp` folder itself).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The control root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `installation.json`.
    pub fn installation_file(&self) -> PathBuf {
        self.root.join(INSTALLATION_FILE)
    }

    /// `installation/`, the authority lane's ledger folder.
    pub fn installation_dir(&self) -> PathBuf {
        self.root.join("installation")
    }

    /// `leader/binding.json`.
    pub fn binding_file(&self) -> PathBuf {
        self.root.join("leader/binding.json")
    }

    /// `tasks/`.
    pub fn tasks_dir(&self) -> PathBuf {
        self.root.join("tasks")
    }

    /// The folder of one task.
    pub fn task_dir(&self, task_id: &str) -> PathBuf {
        self.tasks_dir().join(task_folder_name(task_id))
    }

    /// `evidence/sha256/`.
    pub fn blobs_dir(&self) -> PathBuf {
        self.root.join("evidence/sha256")
    }

    /// `evidence/tmp/`.
    pub fn blobs_tmp_dir(&self) -> PathBuf {
        self.root.join("evidence/tmp")
    }

    /// `quarantine/`.
    pub fn quarantine_dir(&self) -> PathBuf {
        self.root.join("quarantine")
    }

    /// `runtime/`.
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("runtime")
    }
}

/// The folder name of a task: the task id itself when it is a plain name
/// (`[A-Za-z0-9_.-]`, at most 100 bytes, not starting with `.` or `id-`), otherwise `id-` and the
/// first 32 hex digits of the id's SHA-256. The journal's genesis records the real id either
/// way, so the folder name is only an address.
pub fn task_folder_name(task_id: &str) -> String {
    let plain = !task_id.is_empty()
        && task_id.len() <= 100
        && !task_id.starts_with('.')
        && !task_id.starts_with("id-")
        && task_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'));
    if plain {
        task_id.to_owned()
    } else {
        let digest = sha256_digest(task_id.as_bytes());
        format!("id-{}", &digest[7..39])
    }
}

/// Whether `path` is a safe path relative to the control root: non-empty, `/`-separated, no
/// empty, `.` or `..` component, not absolute, no backslash or control character. Paths read
/// from files (adapter observations, effect records) must pass before anything joins them.
pub fn is_safe_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.chars().any(|c| c == '\\' || c.is_control())
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Where the control root is, in precedence order: an explicit folder (`--root`), then
/// `VALP_ROOT`, then the nearest `.valp/` holding an `installation.json` from `cwd` upward.
///
/// An explicit folder (or `VALP_ROOT`) names the control root itself when it is called `.valp`
/// or holds an `installation.json`, and otherwise the project folder whose `.valp/` it is.
pub fn resolve_root(explicit: Option<&Path>, env: Option<&Path>, cwd: &Path) -> Option<PathBuf> {
    if let Some(folder) = explicit.or(env) {
        return Some(control_root_of(folder));
    }
    cwd.ancestors()
        .map(|folder| folder.join(ROOT_DIR))
        .find(|candidate| candidate.join(INSTALLATION_FILE).is_file())
}

/// The control root named by a folder given explicitly.
pub fn control_root_of(folder: &Path) -> PathBuf {
    if folder.file_name().is_some_and(|name| name == ROOT_DIR)
        || folder.join(INSTALLATION_FILE).is_file()
    {
        folder.to_owned()
    } else {
        folder.join(ROOT_DIR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_task_ids_are_their_own_folder_names() {
        assert_eq!(task_folder_name("task-1"), "task-1");
        assert_eq!(task_folder_name("T_2.a"), "T_2.a");
    }

    #[test]
    fn other_task_ids_are_hashed() {
        for id in ["../etc", "a/b", ".hidden", "", "id-x", "tâche", "a b"] {
            let name = task_folder_name(id);
            assert!(
                name.starts_with("id-") && name.len() == 35,
                "{id:?} -> {name}"
            );
        }
        assert_ne!(task_folder_name("a/b"), task_folder_name("a/c"));
    }

    #[test]
    fn explicit_folders_name_the_root_or_its_project() {
        let temp = tempfile::tempdir().unwrap();
        let project = temp.path();
        assert_eq!(control_root_of(project), project.join(".valp"));
        assert_eq!(
            control_root_of(&project.join(".valp")),
            project.join(".valp")
        );
        std::fs::write(project.join(INSTALLATION_FILE), "{}").unwrap();
        assert_eq!(control_root_of(project), project);
    }

    #[test]
    fn discovery_walks_up_and_prefers_explicit_then_env() {
        let temp = tempfile::tempdir().unwrap();
        let project = temp.path().join("p");
        let deep = project.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(resolve_root(None, None, &deep), None);
        std::fs::create_dir_all(project.join(".valp")).unwrap();
        std::fs::write(project.join(".valp").join(INSTALLATION_FILE), "{}").unwrap();
        assert_eq!(resolve_root(None, None, &deep), Some(project.join(".valp")));
        let other = temp.path().join("q");
        assert_eq!(
            resolve_root(None, Some(&other), &deep),
            Some(other.join(".valp"))
        );
        let explicit = temp.path().join("r");
        assert_eq!(
            resolve_root(Some(&explicit), Some(&other), &deep),
            Some(explicit.join(".valp"))
        );
    }
}
