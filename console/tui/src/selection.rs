//! Which pane of the main screen has the focus, and the cursor of each pane.
//!
//! The selected task (the Tasks cursor) drives the Work items pane. When the view is re-read,
//! the Tasks and Work items cursors stay on their task and work item; the log panes
//! (Observations, Rejected files, Activity) keep following the newest row while their cursor is
//! on it, and otherwise stay on the row they were on.

use super::action::Action;
use super::motion;
use valp_view::{ConsoleView, ItemRow, TaskRow};

/// A pane of the main screen's body, in focus order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// Every task journal.
    Tasks,
    /// The selected task's work items (its frontier).
    Items,
    /// Live adapter observations, newest first.
    Observations,
    /// Adapter and inbox files that were not acted on, newest first.
    Rejections,
    /// What the System did, newest first.
    Activity,
    /// What waits for the Leader, across tasks.
    Needs,
}

impl Pane {
    /// Every pane, in focus order.
    pub const ALL: [Self; 6] = [
        Self::Tasks,
        Self::Items,
        Self::Observations,
        Self::Rejections,
        Self::Activity,
        Self::Needs,
    ];

    /// The pane's name on screen.
    pub const fn title(self) -> &'static str {
        match self {
            Self::Tasks => "Tasks",
            Self::Items => "Work items",
            Self::Observations => "Observations",
            Self::Rejections => "Rejected files",
            Self::Activity => "Activity",
            Self::Needs => "Needs you",
        }
    }

    const fn index(self) -> usize {
        match self {
            Self::Tasks => 0,
            Self::Items => 1,
            Self::Observations => 2,
            Self::Rejections => 3,
            Self::Activity => 4,
            Self::Needs => 5,
        }
    }

    /// The pane after this one (wrapping).
    #[must_use]
    pub const fn next(self) -> Self {
        Self::ALL[(self.index() + 1) % Self::ALL.len()]
    }

    /// The pane before this one (wrapping).
    #[must_use]
    pub const fn previous(self) -> Self {
        Self::ALL[(self.index() + Self::ALL.len() - 1) % Self::ALL.len()]
    }

    /// Whether the cursor of this pane follows the newest row (the log panes).
    const fn is_log(self) -> bool {
        matches!(self, Self::Observations | Self::Rejections | Self::Activity)
    }
}

/// The focus and one cursor per pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    focus: Pane,
    cursors: [usize; Pane::ALL.len()],
}

impl Default for Selection {
    fn default() -> Self {
        Self::new()
    }
}

impl Selection {
    /// The Tasks pane focused, every cursor on its first row.
    pub const fn new() -> Self {
        Self {
            focus: Pane::Tasks,
            cursors: [0; Pane::ALL.len()],
        }
    }

    /// The focused pane.
    pub const fn focus(&self) -> Pane {
        self.focus
    }

    /// The cursor of `pane` (an index into its rows).
    pub const fn cursor(&self, pane: Pane) -> usize {
        self.cursors[pane.index()]
    }

    /// The selected task.
    pub fn task<'v>(&self, view: &'v ConsoleView) -> Option<&'v TaskRow> {
        view.tasks.get(self.cursor(Pane::Tasks))
    }

    /// The selected task's work items, in frontier order.
    pub fn items<'v>(&self, view: &'v ConsoleView) -> Vec<&'v ItemRow> {
        self.task(view)
            .map_or_else(Vec::new, |task| items_of(view, &task.task_id))
    }

    /// The work item under the Work items cursor.
    pub fn item<'v>(&self, view: &'v ConsoleView) -> Option<&'v ItemRow> {
        self.items(view).get(self.cursor(Pane::Items)).copied()
    }

    /// How many rows `pane` has in `view`.
    pub fn len(&self, pane: Pane, view: &ConsoleView) -> usize {
        match pane {
            Pane::Tasks => view.tasks.len(),
            Pane::Items => self.items(view).len(),
            Pane::Observations => view.observations.len(),
            Pane::Rejections => view.rejections.len(),
            Pane::Activity => view.activity.len(),
            Pane::Needs => view.needs.len(),
        }
    }

    /// Puts the Needs-you cursor on `need` and selects its task (and work item), focusing the
    /// pane whose keys answer it: Work items for a need about one, else Tasks.
    pub fn jump(&mut self, view: &ConsoleView, need: usize) {
        let Some(row) = view.needs.get(need) else {
            return;
        };
        self.cursors[Pane::Needs.index()] = need;
        if let Some(task) = view
            .tasks
            .iter()
            .position(|task| task.task_id == row.task_id)
        {
            self.cursors[Pane::Tasks.index()] = task;
        }
        let item = row.work_item_id.as_ref().and_then(|work_item| {
            self.items(view)
                .iter()
                .position(|item| item.work_item_id == *work_item)
        });
        self.cursors[Pane::Items.index()] = item.unwrap_or(0);
        self.focus = if item.is_some() {
            Pane::Items
        } else {
            Pane::Tasks
        };
    }

    /// Selects the task `task_id` (focusing the Tasks pane), if it is listed.
    pub fn select_task(&mut self, view: &ConsoleView, task_id: &str) {
        if let Some(at) = view.tasks.iter().position(|task| task.task_id == task_id) {
            self.cursors[Pane::Tasks.index()] = at;
            self.cursors[Pane::Items.index()] = 0;
            self.focus = Pane::Tasks;
        }
    }

    /// Puts `pane`'s cursor on row `index` (a new task starts on its first work item).
    pub fn select(&mut self, pane: Pane, index: usize) {
        let cursor = &mut self.cursors[pane.index()];
        if *cursor != index && pane == Pane::Tasks {
            self.cursors[Pane::Items.index()] = 0;
        }
        self.cursors[pane.index()] = index;
    }

    /// Focuses `pane`.
    pub const fn focus_on(&mut self, pane: Pane) {
        self.focus = pane;
    }

    /// Focuses the next pane.
    pub const fn focus_next(&mut self) {
        self.focus = self.focus.next();
    }

    /// Focuses the previous pane.
    pub const fn focus_previous(&mut self) {
        self.focus = self.focus.previous();
    }

    /// Moves the focused pane's cursor as `action` says ([`motion::moved`]), within its rows.
    /// Moving the Tasks cursor puts the Work items cursor on the new task's first item.
    pub fn step(&mut self, action: Action, view: &ConsoleView) {
        let pane = self.focus;
        let len = self.len(pane, view);
        let cursor = &mut self.cursors[pane.index()];
        let moved = motion::moved(*cursor, len, action);
        if moved != *cursor {
            *cursor = moved;
            if pane == Pane::Tasks {
                self.cursors[Pane::Items.index()] = 0;
            }
        }
    }

    /// Keeps every cursor on its row when the view changes from `old` to `new` (see the module
    /// documentation), or within the pane's rows when that row is gone.
    pub fn reload(&mut self, old: &ConsoleView, new: &ConsoleView) {
        let old_task = self.task(old).map(|task| task.task_id.clone());
        let old_item = self.item(old).map(|item| item.work_item_id.clone());
        let tasks = follow(
            self.cursor(Pane::Tasks),
            old_task.as_deref(),
            new.tasks.iter().map(|task| task.task_id.as_str()),
        );
        self.cursors[Pane::Tasks.index()] = tasks;
        let new_task = self.task(new).map(|task| task.task_id.clone());
        self.cursors[Pane::Items.index()] = if new_task.is_some() && new_task == old_task {
            let items = self.items(new);
            follow(
                self.cursor(Pane::Items),
                old_item.as_deref(),
                items.iter().map(|item| item.work_item_id.as_str()),
            )
        } else {
            0
        };
        let old_need = old
            .needs
            .get(self.cursor(Pane::Needs))
            .map(|need| need.key.as_str());
        self.cursors[Pane::Needs.index()] = follow(
            self.cursor(Pane::Needs),
            old_need,
            new.needs.iter().map(|need| need.key.as_str()),
        );
        for pane in Pane::ALL.into_iter().filter(|pane| pane.is_log()) {
            let cursor = self.cursor(pane);
            if cursor == 0 {
                continue;
            }
            let old_keys = log_keys(pane, old);
            let new_keys = log_keys(pane, new);
            self.cursors[pane.index()] = follow(
                cursor,
                old_keys.get(cursor).map(String::as_str),
                new_keys.iter().map(String::as_str),
            );
        }
    }
}

/// The work items of `task_id` in `view`, in frontier order.
pub fn items_of<'v>(view: &'v ConsoleView, task_id: &str) -> Vec<&'v ItemRow> {
    view.items
        .iter()
        .filter(|item| item.task_id == task_id)
        .collect()
}

/// Where the row `key` (at `cursor` before) is among `keys`, or `cursor` kept within them.
fn follow<'k>(cursor: usize, key: Option<&str>, keys: impl Iterator<Item = &'k str>) -> usize {
    let keys: Vec<&str> = keys.collect();
    key.and_then(|key| keys.iter().position(|candidate| *candidate == key))
        .unwrap_or_else(|| cursor.min(keys.len().saturating_sub(1)))
}

/// What identifies the rows of a log pane.
fn log_keys(pane: Pane, view: &ConsoleView) -> Vec<String> {
    match pane {
        Pane::Observations => view
            .observations
            .iter()
            .map(|row| {
                format!(
                    "{}\u{0}{}\u{0}{}\u{0}{}",
                    row.task_id, row.work_item_id, row.attempt_id, row.sequence
                )
            })
            .collect(),
        Pane::Rejections => view
            .rejections
            .iter()
            .map(|row| format!("{}\u{0}{}", row.path, row.reason))
            .collect(),
        Pane::Activity => view.activity.clone(),
        Pane::Tasks | Pane::Items | Pane::Needs => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Pane;

    #[test]
    fn focus_wraps_both_ways() {
        assert_eq!(Pane::Needs.next(), Pane::Tasks);
        assert_eq!(Pane::Tasks.previous(), Pane::Needs);
        for pane in Pane::ALL {
            assert_eq!(pane.next().previous(), pane);
        }
    }
}
