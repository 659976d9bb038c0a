//! The paths a plan names, resolved beneath the project folder through real folders only.
//!
//! A plan's `cwd` (of a work item or a verification command) and its expected evidence paths
//! are safe relative paths (no `..`, not absolute: [`super::check`]), but a relative path can
//! still leave the project through a symbolic link on the way (`cwd = "linkout/x"` with
//! `linkout -> /elsewhere`). The rule here: **every component of the path below the project
//! folder that exists is a real folder** (the last component of an expected evidence path: not
//! a link either), checked component by component with `symlink_metadata` (the workspace
//! forbids `unsafe`, so no `openat2(RESOLVE_BENEATH)`).
//!
//! It is applied twice:
//!
//! - **at publish** ([`check_plan`]): every path the plan names, as the disk is then; a part
//!   that does not exist yet passes (it may be created by the work);
//! - **at launch** ([`working_folder`]): the item's `cwd` again, creating the missing folders
//!   one at a time (`create_dir`, never following a link) and checking each component as it
//!   goes, since a link may have appeared since the publication.
//!
//! What this guarantees: at the instant of each check, no component is a link, so valp never
//! creates a folder or starts a command through a link that was there when it looked. It does
//! not hold the folders open: someone who can write the project folder and swaps a component
//! for a link between the check and the supervisor's `chdir` (a window of milliseconds) is not
//! excluded; closing it needs a handle-based `chdir` (`fchdir` on a descriptor opened with
//! `O_NOFOLLOW` at each step) in the supervisor. Expected evidence is looked up at every read
//! through [`evidence_file`]: the `cwd` checked again, then
//! [`files::beneath`], which refuses links below it (the same window between the check and
//! the read applies).

use std::io;
use std::path::{Path, PathBuf};

use super::Plan;
use crate::adapter::files;

/// Why a path of a plan is refused.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// A component is a symbolic link.
    #[error(
        "{what} {path:?}: {component} is a symbolic link (a plan's paths must lie beneath the \
         project through real folders only)"
    )]
    Symlink {
        /// Which path of the plan (`cwd`, `expected evidence`).
        what: &'static str,
        /// The path as the plan names it.
        path: String,
        /// The offending component, relative to the project.
        component: String,
    },
    /// A component that must be a folder is something else.
    #[error("{what} {path:?}: {component} is not a folder")]
    NotAFolder {
        /// Which path of the plan.
        what: &'static str,
        /// The path as the plan names it.
        path: String,
        /// The offending component, relative to the project.
        component: String,
    },
    /// Looking at or creating a component failed.
    #[error("{what} {path:?}: {component}: {source}")]
    Io {
        /// Which path of the plan.
        what: &'static str,
        /// The path as the plan names it.
        path: String,
        /// The component, relative to the project.
        component: String,
        /// The error.
        source: io::Error,
    },
}

/// Every path `plan` names, checked against the disk beneath `project` as it is now; the
/// first problem, prefixed by where the plan names the path (`work item ID: `,
/// `verification ID: `).
pub fn check_plan(project: &Path, plan: &Plan) -> Result<(), String> {
    for item in &plan.work_items {
        let at = |error: PathError| format!("work item {}: {error}", item.id);
        walk(project, "cwd", &item.run.cwd, &item.run.cwd, false).map_err(at)?;
        for evidence in &item.expected_evidence {
            let joined = joined(&item.run.cwd, evidence);
            walk(project, "expected evidence", evidence, &joined, false).map_err(at)?;
        }
    }
    for check in &plan.verification {
        walk(project, "cwd", &check.cwd, &check.cwd, false)
            .map_err(|error| format!("verification {}: {error}", check.id))?;
    }
    Ok(())
}

/// The folder `cwd` (a plan's safe relative path, or `.`) beneath `project`, created if
/// missing, reached through real folders only; absolute (the project folder itself is
/// canonicalized: how it is reached is the operator's choice, not the plan's).
pub fn working_folder(project: &Path, cwd: &str) -> Result<PathBuf, PathError> {
    let project = std::fs::canonicalize(project).map_err(|source| PathError::Io {
        what: "cwd",
        path: cwd.to_owned(),
        component: ".".to_owned(),
        source,
    })?;
    walk(&project, "cwd", cwd, cwd, true)
}

/// The expected evidence file `relative` of an item whose `cwd` is `cwd`, when the `cwd` lies
/// beneath `project` through real folders and the file below it is a regular file reached
/// through real folders ([`files::beneath`]); else `None`, as if missing. Checked at every
/// read: an external item's `cwd` is never entered by valp, so its launch checks nothing.
pub fn evidence_file(project: &Path, cwd: &str, relative: &str) -> Option<PathBuf> {
    walk(project, "cwd", cwd, cwd, false).ok()?;
    files::beneath(&project.join(cwd), relative)
}

/// `relative` below `cwd`, as a path relative to the project.
fn joined(cwd: &str, relative: &str) -> String {
    if cwd == "." {
        relative.to_owned()
    } else {
        format!("{cwd}/{relative}")
    }
}

/// Walks `relative` beneath `project` component by component: each one that exists must not
/// be a link, and every one but the last must be a folder (the last too when `create`, which
/// creates the missing ones). `path` is how the plan names it, for errors. Without `create`
/// the walk stops at the first missing component (nothing below it exists), so only an `Ok`
/// matters then, not the path returned.
fn walk(
    project: &Path,
    what: &'static str,
    path: &str,
    relative: &str,
    create: bool,
) -> Result<PathBuf, PathError> {
    let mut at = project.to_path_buf();
    let parts: Vec<&str> = relative
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    for (index, part) in parts.iter().enumerate() {
        at.push(part);
        let component = parts[..=index].join("/");
        let error = |source: io::Error| PathError::Io {
            what,
            path: path.to_owned(),
            component: component.clone(),
            source,
        };
        let must_be_folder = create || index + 1 < parts.len();
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(PathError::Symlink {
                    what,
                    path: path.to_owned(),
                    component,
                });
            }
            Ok(meta) if must_be_folder && !meta.is_dir() => {
                return Err(PathError::NotAFolder {
                    what,
                    path: path.to_owned(),
                    component,
                });
            }
            Ok(_) => {}
            Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                if !create {
                    // Nothing below a missing component exists yet.
                    break;
                }
                match std::fs::create_dir(&at) {
                    Ok(()) => {}
                    // Created meanwhile by someone else: looked at again on the next pass.
                    Err(raced) if raced.kind() == io::ErrorKind::AlreadyExists => {
                        let meta = std::fs::symlink_metadata(&at).map_err(error)?;
                        if !meta.is_dir() {
                            return Err(PathError::NotAFolder {
                                what,
                                path: path.to_owned(),
                                component,
                            });
                        }
                    }
                    Err(other) => return Err(error(other)),
                }
            }
            Err(other) => return Err(error(other)),
        }
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_working_folder_is_created_through_real_folders() {
        let project = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(project.path()).unwrap();
        let folder = working_folder(project.path(), "a/b/c").unwrap();
        assert_eq!(folder, canonical.join("a/b/c"));
        assert!(folder.is_dir());
        assert_eq!(working_folder(project.path(), ".").unwrap(), canonical);
    }

    #[test]
    fn a_link_anywhere_on_the_way_is_refused_and_nothing_is_created_beyond_it() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("a/out")).unwrap();
        let refused = working_folder(project.path(), "a/out/x").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "cwd \"a/out/x\": a/out is a symbolic link (a plan's paths must lie beneath the \
             project through real folders only)"
        );
        assert!(!outside.path().join("x").exists());
        // A link to a file named as a folder on the way.
        std::fs::write(project.path().join("file"), "").unwrap();
        assert_eq!(
            working_folder(project.path(), "file/x")
                .unwrap_err()
                .to_string(),
            "cwd \"file/x\": file is not a folder"
        );
    }

    #[test]
    fn evidence_is_not_read_through_a_linked_cwd() {
        let project = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path(), project.path().join("out")).unwrap();
        assert_eq!(evidence_file(project.path(), "out", "secret.txt"), None);
        std::fs::create_dir(project.path().join("real")).unwrap();
        std::fs::write(project.path().join("real/notes.txt"), "ok").unwrap();
        assert_eq!(
            evidence_file(project.path(), "real", "notes.txt"),
            Some(project.path().join("real/notes.txt"))
        );
        assert_eq!(evidence_file(project.path(), "missing", "notes.txt"), None);
    }

    #[test]
    fn at_publish_a_missing_part_passes_and_an_evidence_link_is_refused() {
        let project = tempfile::tempdir().unwrap();
        walk(project.path(), "cwd", "new/x", "new/x", false).unwrap();
        assert!(!project.path().join("new").exists());
        std::os::unix::fs::symlink("/etc/hostname", project.path().join("leak.txt")).unwrap();
        assert_eq!(
            walk(
                project.path(),
                "expected evidence",
                "leak.txt",
                "leak.txt",
                false
            )
            .unwrap_err()
            .to_string(),
            "expected evidence \"leak.txt\": leak.txt is a symbolic link (a plan's paths must \
             lie beneath the project through real folders only)"
        );
    }
}
