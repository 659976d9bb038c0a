//! A git worktree per agent attempt (`workdir = "worktree"` on a tmux item): concurrent agents
//! never edit the same checkout, and what each changed is recorded before the Leader reviews.
//!
//! ```text
//! <control root>/runtime/worktrees/<H>/          H = attempt_folder(attempt_id): a worktree
//!                                                 of the project's repository, detached at the
//!                                                 project's HEAD when the attempt started
//! <attempt folder>/worktree.json                  valp-worktree.v1: repository, path, base
//! <attempt folder>/worktree-diff.json             valp-worktree-diff.v1: every file changed
//!                                                 against the base (tracked and new), written
//!                                                 once when the attempt ends; bound as evidence
//! ```
//!
//! **The rule for cleaning up.** When the attempt ends its diff is recorded, then the worktree
//! is removed if the agent left nothing in it (no change against the base, no new file, no
//! ignored file either); otherwise it is kept for the Leader's review, with its path and diff
//! shown by `valp task status`, until the Leader merges what they want and removes it
//! (`git worktree remove PATH`). valp never deletes work an agent did.
//!
//! git runs as `git -C <folder>` with the caller's `GIT_*` location variables removed, so the
//! project's repository is the one the folder belongs to.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::files;
use super::tmux::Record;
use crate::abi::attempt_folder;

/// Where the worktrees go, relative to the control root.
pub const WORKTREES_DIR: &str = "runtime/worktrees";
/// The worktree of an attempt, in its attempt folder.
pub const RECORD_FILE: &str = "worktree.json";
/// Its diff once the attempt ended, in its attempt folder.
pub const DIFF_FILE: &str = "worktree-diff.json";
/// `valp-worktree.v1`
pub const WORKTREE_SCHEMA: &str = "valp-worktree.v1";
/// `valp-worktree-diff.v1`
pub const DIFF_SCHEMA: &str = "valp-worktree-diff.v1";
/// Files listed in a diff record; the rest are counted in `more_files`.
pub const MAX_FILES: usize = 500;
/// Files shown per attempt by `valp task status`.
pub const SHOWN_FILES: usize = 20;

/// Why a worktree could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The project is not in a git repository with a commit.
    #[error("workdir = \"worktree\" needs the project in a git repository with a commit: {why}")]
    NotARepository {
        /// git's answer.
        why: String,
    },
    /// A git command failed.
    #[error("git {operation} failed: {why}")]
    Git {
        /// What was asked.
        operation: &'static str,
        /// git's answer.
        why: String,
    },
    /// A record could not be written or read.
    #[error("{path}: {why}")]
    Record {
        /// The file.
        path: String,
        /// What went wrong.
        why: String,
    },
}

/// `valp-worktree.v1`: an attempt's worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeRecord {
    /// [`WORKTREE_SCHEMA`]
    pub schema_version: String,
    /// The attempt.
    pub attempt_id: String,
    /// The project's repository (its top folder).
    pub repository: String,
    /// The worktree (absolute).
    pub path: String,
    /// The commit it was made at (the project's `HEAD` then).
    pub base: String,
}

/// One file changed in a worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileChange {
    /// The path, relative to the worktree (sanitized when shown).
    pub path: String,
    /// Lines added (`None`: a binary file).
    pub insertions: Option<u64>,
    /// Lines deleted (`None`: a binary file).
    pub deletions: Option<u64>,
    /// A new file git does not track yet.
    pub new: bool,
}

/// `valp-worktree-diff.v1`: what an attempt changed in its worktree, recorded when it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiffRecord {
    /// [`DIFF_SCHEMA`]
    pub schema_version: String,
    /// The attempt.
    pub attempt_id: String,
    /// The worktree.
    pub path: String,
    /// The commit the diff is against.
    pub base: String,
    /// The files changed (at most [`MAX_FILES`]), by path.
    pub files: Vec<FileChange>,
    /// Files changed beyond those listed.
    pub more_files: u64,
    /// Lines added in all text files.
    pub insertions: u64,
    /// Lines deleted in all text files.
    pub deletions: u64,
    /// Whether the worktree was kept (it has changes or other files) or removed.
    pub kept: bool,
}

macro_rules! record {
    ($name:ident, $schema:expr) => {
        impl Record for $name {
            const SCHEMA: &'static str = $schema;
            fn schema_version(&self) -> &str {
                &self.schema_version
            }
        }
    };
}
record!(WorktreeRecord, WORKTREE_SCHEMA);
record!(DiffRecord, DIFF_SCHEMA);

/// Runs `git -C folder args…`; its standard output.
fn git(folder: &Path, operation: &'static str, args: &[&OsStr]) -> Result<Vec<u8>, WorktreeError> {
    let output = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_COMMON_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| WorktreeError::Git {
            operation,
            why: error.to_string(),
        })?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(WorktreeError::Git {
            operation,
            why: valp_view::sanitize::display_line(String::from_utf8_lossy(&output.stderr).trim()),
        })
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).trim().to_owned()
}

/// Makes the worktree of `attempt_id` for the repository of `project`, under
/// `control_root` ([`WORKTREES_DIR`]), detached at the project's `HEAD`. A worktree already
/// there (a runner restarted before the attempt was launched) is taken as it is.
pub fn create(
    project: &Path,
    control_root: &Path,
    attempt_id: &str,
) -> Result<WorktreeRecord, WorktreeError> {
    let not_a_repository = |error: WorktreeError| WorktreeError::NotARepository {
        why: match error {
            WorktreeError::Git { why, .. } => why,
            other => other.to_string(),
        },
    };
    let top = |folder: &Path| {
        git(
            folder,
            "rev-parse",
            &["rev-parse", "--show-toplevel"].map(OsStr::new),
        )
        .map(|out| text(&out))
    };
    let head = |folder: &Path| {
        git(
            folder,
            "rev-parse",
            &["rev-parse", "--verify", "HEAD^{commit}"].map(OsStr::new),
        )
        .map(|out| text(&out))
    };
    let repository = top(project).map_err(not_a_repository)?;
    let path = control_root
        .join(WORKTREES_DIR)
        .join(attempt_folder(attempt_id));
    let base = if path.join(".git").exists() {
        head(&path)?
    } else {
        let base = head(project).map_err(not_a_repository)?;
        if let Some(parent) = path.parent() {
            files::create_dir_durably(parent).map_err(|error| WorktreeError::Record {
                path: parent.display().to_string(),
                why: error.to_string(),
            })?;
        }
        git(
            project,
            "worktree add",
            &[
                OsStr::new("worktree"),
                OsStr::new("add"),
                OsStr::new("--detach"),
                path.as_os_str(),
                OsStr::new(&base),
            ],
        )?;
        base
    };
    Ok(WorktreeRecord {
        schema_version: WORKTREE_SCHEMA.to_owned(),
        attempt_id: attempt_id.to_owned(),
        repository,
        path: path.display().to_string(),
        base,
    })
}

fn write(dir: &Path, file: &str, bytes: &[u8]) -> Result<(), WorktreeError> {
    let path = dir.join(file);
    files::write_new_or_same(&path, bytes)
        .map(|_| ())
        .map_err(|error| WorktreeError::Record {
            path: path.display().to_string(),
            why: error.to_string(),
        })
}

fn read<T: Record>(dir: &Path, file: &str) -> Result<Option<T>, WorktreeError> {
    super::tmux::read_record::<T>(dir, file).map_err(|error| WorktreeError::Record {
        path: dir.join(file).display().to_string(),
        why: error.to_string(),
    })
}

/// Writes `record` as the attempt folder's [`RECORD_FILE`] (the same bytes again are fine).
pub fn write_record(dir: &Path, record: &WorktreeRecord) -> Result<(), WorktreeError> {
    let bytes = record.canonical().map_err(|error| WorktreeError::Record {
        path: dir.join(RECORD_FILE).display().to_string(),
        why: error.to_string(),
    })?;
    write(dir, RECORD_FILE, &bytes)
}

/// The files changed in the worktree against its base now: tracked files (`git diff
/// --numstat`, no rename detection) and new files git does not ignore, by path.
pub fn changes(record: &WorktreeRecord) -> Result<Vec<FileChange>, WorktreeError> {
    let folder = Path::new(&record.path);
    let numstat = git(
        folder,
        "diff",
        &[
            OsStr::new("diff"),
            OsStr::new("--numstat"),
            OsStr::new("--no-renames"),
            OsStr::new("-z"),
            OsStr::new(&record.base),
            OsStr::new("--"),
        ],
    )?;
    let mut changes: Vec<FileChange> = numstat
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
        .filter_map(|entry| {
            let line = String::from_utf8_lossy(entry);
            let mut parts = line.splitn(3, '\t');
            let (added, deleted, path) = (parts.next()?, parts.next()?, parts.next()?);
            Some(FileChange {
                path: path.to_owned(),
                insertions: added.parse().ok(),
                deletions: deleted.parse().ok(),
                new: false,
            })
        })
        .collect();
    for path in untracked(folder, false)? {
        let bytes = std::fs::read(folder.join(&path)).ok();
        let lines = bytes
            .filter(|bytes| !bytes.contains(&0))
            .map(|bytes| bytecount_lines(&bytes));
        changes.push(FileChange {
            path,
            insertions: lines,
            deletions: lines.map(|_| 0),
            new: true,
        });
    }
    changes.sort_by(|left, right| left.path.cmp(&right.path));
    Ok(changes)
}

/// Lines of a text file as git counts them (a last line without LF counts).
fn bytecount_lines(bytes: &[u8]) -> u64 {
    let breaks = bytes
        .iter()
        .fold(0_u64, |count, byte| count + u64::from(*byte == b'\n'));
    breaks + u64::from(bytes.last().is_some_and(|byte| *byte != b'\n'))
}

/// The files git does not track in `folder`: those it does not ignore, or (`ignored`) only
/// those it ignores.
fn untracked(folder: &Path, ignored: bool) -> Result<Vec<String>, WorktreeError> {
    let mut args = vec!["ls-files", "-z", "--others", "--exclude-standard"];
    if ignored {
        args.push("--ignored");
    }
    let args: Vec<&OsStr> = args.into_iter().map(OsStr::new).collect();
    let listed = git(folder, "ls-files", &args)?;
    Ok(listed
        .split(|byte| *byte == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .collect())
}

/// When the attempt of folder `dir` ended: records its worktree's diff as [`DIFF_FILE`] (once:
/// a diff already recorded is read back) and removes the worktree if nothing is left in it
/// (see the module documentation). Returns the diff record's bytes, the attempt's evidence;
/// `None` when the attempt has no worktree.
pub fn finish(dir: &Path) -> Result<Option<Vec<u8>>, WorktreeError> {
    if let Ok(bytes) = std::fs::read(dir.join(DIFF_FILE))
        && DiffRecord::decode(&bytes).is_ok()
    {
        return Ok(Some(bytes));
    }
    let Some(record) = read::<WorktreeRecord>(dir, RECORD_FILE)? else {
        return Ok(None);
    };
    let folder = Path::new(&record.path);
    let mut files = changes(&record)?;
    let kept = !files.is_empty() || !untracked(folder, true)?.is_empty();
    let diff = DiffRecord {
        schema_version: DIFF_SCHEMA.to_owned(),
        attempt_id: record.attempt_id.clone(),
        path: record.path.clone(),
        base: record.base.clone(),
        insertions: files.iter().filter_map(|file| file.insertions).sum(),
        deletions: files.iter().filter_map(|file| file.deletions).sum(),
        more_files: files.len().saturating_sub(MAX_FILES) as u64,
        files: {
            files.truncate(MAX_FILES);
            files
        },
        kept,
    };
    let bytes = diff.canonical().map_err(|error| WorktreeError::Record {
        path: dir.join(DIFF_FILE).display().to_string(),
        why: error.to_string(),
    })?;
    write(dir, DIFF_FILE, &bytes)?;
    if !kept {
        git(
            Path::new(&record.repository),
            "worktree remove",
            &[
                OsStr::new("worktree"),
                OsStr::new("remove"),
                OsStr::new("--force"),
                folder.as_os_str(),
            ],
        )?;
    }
    Ok(Some(bytes))
}

/// What `valp task status` shows of the worktree of attempt folder `dir` (nothing when it has
/// none): the path, the base and the diff (recorded once the attempt ended, else as it is now),
/// then up to [`SHOWN_FILES`] files. Every text is sanitized.
pub fn status_lines(dir: &Path) -> Vec<String> {
    use valp_view::sanitize::display_text;
    let record = match read::<WorktreeRecord>(dir, RECORD_FILE) {
        Ok(Some(record)) => record,
        Ok(None) => return Vec::new(),
        Err(error) => return vec![format!("worktree: {}", display_text(&error.to_string()))],
    };
    let recorded = read::<DiffRecord>(dir, DIFF_FILE).ok().flatten();
    let (files, more, fate) = match &recorded {
        Some(diff) => (
            diff.files.clone(),
            diff.more_files,
            if diff.kept {
                "kept for review (git worktree remove PATH when done)"
            } else {
                "removed: nothing changed"
            },
        ),
        None => match changes(&record) {
            Ok(files) => (files, 0, "as it is now (recorded when the attempt ends)"),
            Err(error) => {
                return vec![format!(
                    "worktree {}: {}",
                    display_text(&record.path),
                    display_text(&error.to_string())
                )];
            }
        },
    };
    let total = files.len() as u64 + more;
    let plus: u64 = files.iter().filter_map(|file| file.insertions).sum();
    let minus: u64 = files.iter().filter_map(|file| file.deletions).sum();
    let short: String = record.base.chars().take(12).collect();
    let mut lines = vec![format!(
        "worktree {} (base {}): {total} file{} changed, +{plus} -{minus}; {fate}",
        display_text(&record.path),
        display_text(&short),
        if total == 1 { "" } else { "s" },
    )];
    for file in files.iter().take(SHOWN_FILES) {
        let counts = match (file.insertions, file.deletions) {
            (Some(plus), Some(minus)) => format!("+{plus} -{minus}"),
            _ => "binary".to_owned(),
        };
        lines.push(format!(
            "  {} {counts}{}",
            display_text(&file.path),
            if file.new { " (new)" } else { "" }
        ));
    }
    if total > SHOWN_FILES as u64 {
        lines.push(format!("  … and {} more", total - SHOWN_FILES as u64));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_git(folder: &Path, args: &[&str]) {
        let status = Command::new("git")
            .arg("-C")
            .arg(folder)
            .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// A repository with `a.txt` (two lines) and a `.gitignore` of `*.log`, committed, and a
    /// control root inside it.
    fn repository() -> (tempfile::TempDir, std::path::PathBuf) {
        let temp = tempfile::tempdir().unwrap();
        let project = temp.path().canonicalize().unwrap();
        run_git(&project, &["init", "-q"]);
        std::fs::write(project.join("a.txt"), "one\ntwo\n").unwrap();
        std::fs::write(project.join(".gitignore"), "*.log\n.valp/\n").unwrap();
        run_git(&project, &["add", "."]);
        run_git(&project, &["commit", "-q", "-m", "base"]);
        (temp, project)
    }

    /// A worktree for `attempt` and its attempt folder.
    fn tree(project: &Path, attempt: &str) -> (WorktreeRecord, std::path::PathBuf) {
        let record = create(project, &project.join(".valp"), attempt).unwrap();
        let dir = project.join(".valp/attempts").join(attempt_folder(attempt));
        std::fs::create_dir_all(&dir).unwrap();
        write_record(&dir, &record).unwrap();
        (record, dir)
    }

    #[test]
    fn a_changed_worktree_is_kept_with_its_diff_and_an_untouched_one_removed() {
        let (_temp, project) = repository();
        let (changed, dir) = tree(&project, "t:w:a1");
        let path = Path::new(&changed.path);
        assert_eq!(
            create(&project, &project.join(".valp"), "t:w:a1").unwrap(),
            changed
        );
        std::fs::write(path.join("a.txt"), "one\n2\nthree\n").unwrap();
        std::fs::write(path.join("new.md"), "x\ny").unwrap();
        std::fs::write(path.join("bin.dat"), [0_u8, 1, 2]).unwrap();
        let bytes = finish(&dir).unwrap().unwrap();
        let diff = DiffRecord::decode(&bytes).unwrap();
        let shown: Vec<_> = diff
            .files
            .iter()
            .map(|file| {
                (
                    file.path.as_str(),
                    file.insertions,
                    file.deletions,
                    file.new,
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("a.txt", Some(2), Some(1), false),
                ("bin.dat", None, None, true),
                ("new.md", Some(2), Some(0), true),
            ]
        );
        assert_eq!((diff.insertions, diff.deletions, diff.kept), (4, 1, true));
        assert!(path.is_dir());
        // Once recorded, the diff is read back, not made again.
        std::fs::write(path.join("later.md"), "z\n").unwrap();
        assert_eq!(finish(&dir).unwrap().unwrap(), bytes);
        let lines = status_lines(&dir);
        assert_eq!(
            lines[0],
            format!(
                "worktree {} (base {}): 3 files changed, +4 -1; kept for review (git worktree \
                 remove PATH when done)",
                changed.path,
                &changed.base[..12]
            )
        );
        assert_eq!(
            lines[1..],
            [
                "  a.txt +2 -1",
                "  bin.dat binary (new)",
                "  new.md +2 -0 (new)"
            ]
        );
        // Untouched: removed. Only an ignored file: kept (valp never deletes an agent's work).
        let (untouched, dir) = tree(&project, "t:w:a2");
        let diff = DiffRecord::decode(&finish(&dir).unwrap().unwrap()).unwrap();
        assert!(!diff.kept && diff.files.is_empty());
        assert!(!Path::new(&untouched.path).exists());
        let (ignored, dir) = tree(&project, "t:w:a3");
        std::fs::write(Path::new(&ignored.path).join("build.log"), "log\n").unwrap();
        let diff = DiffRecord::decode(&finish(&dir).unwrap().unwrap()).unwrap();
        assert!(diff.kept && diff.files.is_empty());
        assert!(Path::new(&ignored.path).join("build.log").is_file());
    }

    #[test]
    fn a_folder_outside_a_repository_is_refused_with_gits_reason() {
        let temp = tempfile::tempdir().unwrap();
        let error = create(temp.path(), &temp.path().join(".valp"), "t:w:a1").unwrap_err();
        assert!(
            error.to_string().starts_with(
                "workdir = \"worktree\" needs the project in a git repository with a commit: \
                 fatal: not a git repository"
            ),
            "{error}"
        );
    }

    #[test]
    fn lines_are_counted_as_git_counts_them() {
        assert_eq!(bytecount_lines(b""), 0);
        assert_eq!(bytecount_lines(b"a\nb\n"), 2);
        assert_eq!(bytecount_lines(b"a\nb"), 2);
    }
}
