//! The console's start, task by task: the task journals are listed, then opened (each verified
//! on open, which costs a replay until the store keeps snapshots) a few at a time, so the screen
//! is drawn before any of them and fills in as they open ([`valp_view::Backend::open_next`]).
//!
//! One step opens task journals until [`STEP`] has passed (at least one), so a root of many
//! small tasks is not drawn once per task, and a root of one large task says which one it is
//! waiting on before it starts.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use valp_store::ControlRoot;
use valp_view::Opening;
use valp_view::sanitize::display_text;

use super::tasks::Desk;

/// How long one step opens journals before the console gets a view to draw.
pub const STEP: Duration = Duration::from_millis(50);

/// What is left to open.
#[derive(Debug, Default)]
pub struct Opener {
    /// Task folders not yet opened; `None` before they are listed.
    left: Option<VecDeque<PathBuf>>,
    progress: Opening,
    done: bool,
}

impl Opener {
    /// Takes the next step: the first lists the task folders and opens nothing, each later one
    /// opens journals (through `desk`, with its driver when `run` names the active epoch) for
    /// about [`STEP`]. `None` once everything is open.
    pub fn step(
        &mut self,
        root: &ControlRoot,
        desk: &mut Desk,
        run: Option<i128>,
    ) -> Option<Opening> {
        if self.done {
            return None;
        }
        let Some(left) = &mut self.left else {
            // A root whose task folder cannot be listed opens nothing: the view says why.
            let left: VecDeque<PathBuf> = root.task_dirs().unwrap_or_default().into();
            self.progress.tasks_total = left.len();
            self.left = Some(left);
            return Some(self.progress_before_next());
        };
        let started = Instant::now();
        while let Some(dir) = left.pop_front() {
            self.progress.entries += desk.open_task(root, &dir, run);
            self.progress.tasks_open += 1;
            if started.elapsed() >= STEP {
                break;
            }
        }
        if self.left.as_ref().is_none_or(VecDeque::is_empty) {
            self.done = true;
            return None;
        }
        Some(self.progress_before_next())
    }

    /// The progress so far, naming the folder the next step opens first.
    fn progress_before_next(&mut self) -> Opening {
        let next = self.left.as_ref().and_then(VecDeque::front);
        self.progress.next = next
            .and_then(|dir| dir.file_name())
            .map_or_else(String::new, |name| display_text(&name.to_string_lossy()));
        self.progress.next_bytes = next
            .and_then(|dir| std::fs::metadata(dir.join(valp_store::journal::JOURNAL_FILE)).ok())
            .map_or(0, |meta| meta.len());
        self.progress.clone()
    }
}
