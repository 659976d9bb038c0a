//! The console's watched AgentOps sources: for each task whose plan names a folder in
//! `[related] agentops_watch`, one [`AgentopsWatch`] recording new verdicts by the plan's
//! mapping while the console runs (started with the live feed, and for tasks published later
//! when the view first sees them). What a watch could not record is listed with the rejected
//! files. A folder that does not exist (yet) is listed too, and looked for again at the next
//! view.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use valp_store::ControlRoot;
use valp_view::RejectionRow;
use valp_view::sanitize::{display_line, display_text};

use crate::related::watch::AgentopsWatch;

/// The wake-up callback shared by every watch.
type Wake = Arc<Mutex<Box<dyn Fn() -> bool + Send>>>;

/// The watches, per task (`None`: the task's plan watches nothing).
#[derive(Default)]
pub struct Watched {
    wake: Option<Wake>,
    by_task: BTreeMap<String, Result<Option<AgentopsWatch>, String>>,
}

impl Watched {
    /// From now on, watches are started (calling `wake` after each pass).
    pub fn enable(&mut self, wake: Box<dyn Fn() -> bool + Send>) {
        self.wake = Some(Arc::new(Mutex::new(wake)));
    }

    /// Starts the watches of `task_ids` not looked at yet (a task whose folder was missing is
    /// looked at again).
    pub fn refresh(&mut self, root: &ControlRoot, task_ids: &[String]) {
        let Some(wake) = &self.wake else {
            return;
        };
        for task in task_ids {
            if matches!(self.by_task.get(task), Some(Ok(_))) {
                continue;
            }
            let started = start(root, task, wake);
            self.by_task.insert(task.clone(), started);
        }
    }

    /// What the watches could not record, as rejected-file rows.
    pub fn rejections(&self) -> Vec<RejectionRow> {
        let mut rows = Vec::new();
        for (task, watch) in &self.by_task {
            match watch {
                Ok(Some(watch)) => {
                    rows.extend(watch.problems().iter().map(|problem| RejectionRow {
                        path: display_text(&watch.folder().display().to_string()),
                        reason: display_line(&format!("agentops (task {task}): {problem}")),
                    }));
                }
                Ok(None) => {}
                Err(why) => rows.push(RejectionRow {
                    path: format!("agentops_watch of task {}", display_text(task)),
                    reason: display_line(why),
                }),
            }
        }
        rows
    }
}

fn start(root: &ControlRoot, task: &str, wake: &Wake) -> Result<Option<AgentopsWatch>, String> {
    let Ok((plan, _, _)) = crate::plan::of_task(root, task) else {
        return Ok(None);
    };
    let Some(related) = plan.related else {
        return Ok(None);
    };
    let Some(folder) = related.agentops_watch.clone() else {
        return Ok(None);
    };
    let project = root
        .layout()
        .root()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let folder = project.join(folder);
    let wake = Arc::clone(wake);
    AgentopsWatch::start(root.clone(), task.to_owned(), &folder, related, move || {
        (wake.lock().unwrap_or_else(PoisonError::into_inner))()
    })
    .map(Some)
    .map_err(|error| format!("not watched: {error}"))
}
