//! A watched AgentOps source: the verdict folder a task's plan names in `[related]
//! agentops_watch`, watched read-only with the runtime's notify watcher
//! ([`crate::ingest::Watcher`]), each new or changed verdict recorded in the task's
//! foreign-observation journal by the plan's mapping ([`record::record_agentops_by_plan`]).
//!
//! The watcher is only the trigger: on every change the whole folder is read again with
//! [`agentops::ingest_dir`] (strict decoding, digests recomputed) and recorded; recording is
//! idempotent per verdict digest, so a verdict seen twice is written once. Files that are
//! refused (corrupt, digest-unbound, unknown fields) and verdicts the mapping does not place
//! are listed ([`AgentopsWatch::problems`]), never repaired and never recorded. Nothing is ever
//! written into the watched folder (files starting with `.`, the writer's temporaries, are not
//! even read), and no control root lock other than the foreign journal's own is taken.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use valp_store::ControlRoot;

use super::{agentops, record};
use crate::ingest::{IngestError, WatchConfig, Watcher};
use crate::plan::related::{Related, Target};

/// A running watch of one task's AgentOps folder; dropping it stops the watcher.
pub struct AgentopsWatch {
    problems: Arc<Mutex<Vec<String>>>,
    watcher: Option<Watcher>,
    thread: Option<JoinHandle<()>>,
    folder: PathBuf,
}

impl AgentopsWatch {
    /// Watches `folder` (an existing folder; its verdicts are recorded into `task` of `root`
    /// by `related`'s mapping); `wake` is called after each pass and the watch stops once it
    /// returns `false`.
    pub fn start(
        root: ControlRoot,
        task: String,
        folder: &Path,
        related: Related,
        wake: impl Fn() -> bool + Send + 'static,
    ) -> Result<Self, IngestError> {
        let invalid = || IngestError::Root {
            path: folder.to_owned(),
            reason: "not a folder with a parent".to_owned(),
        };
        let base = folder.parent().ok_or_else(invalid)?;
        let name = folder.file_name().ok_or_else(invalid)?;
        let mut config = WatchConfig::control_root(base);
        config.roots = vec![PathBuf::from(name)];
        config.reject_other_files_under = Vec::new();
        let (watcher, items) = Watcher::start(config)?;
        let problems = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&problems);
        let dir = folder.to_owned();
        let thread = std::thread::spawn(move || {
            while items.recv().is_ok() {
                // A burst of changes is one pass.
                while items.try_recv().is_ok() {}
                let found = pass(&root, &task, &dir, &related);
                *shared.lock().unwrap_or_else(PoisonError::into_inner) = found;
                if !wake() {
                    return;
                }
            }
        });
        Ok(Self {
            problems,
            watcher: Some(watcher),
            thread: Some(thread),
            folder: folder.to_owned(),
        })
    }

    /// What the last pass could not record, one line each (`<file>: <why>`).
    pub fn problems(&self) -> Vec<String> {
        self.problems
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The watched folder.
    pub fn folder(&self) -> &Path {
        &self.folder
    }
}

impl Drop for AgentopsWatch {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.stop();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads the folder and records what the mapping places; returns what it could not record.
pub fn pass(root: &ControlRoot, task: &str, dir: &Path, related: &Related) -> Vec<String> {
    let report = match agentops::ingest_dir(dir) {
        Ok(report) => report,
        Err(error) => return vec![format!("{}: {error}", dir.display())],
    };
    let mut problems: Vec<String> = report
        .rejections
        .iter()
        .map(|rejection| format!("{}: {}", rejection.file, rejection.reason))
        .collect();
    match record::record_agentops_by_plan(root, task, related, &report) {
        Ok((_, unplaced)) => problems.extend(unplaced.into_iter().map(|verdict| {
            let why = match verdict.target {
                Target::Ambiguous(_) => "mapped to two places by the plan (ambiguous)",
                Target::Unmapped | Target::Mapped(_) => "not named by the plan's mapping",
            };
            format!("{}: {why}; not recorded", verdict.file)
        })),
        Err(error) => problems.push(format!("recording in task {task}: {error}")),
    }
    problems
}
