//! The console's task desk: the task rows and work-item frontier it shows, the System runtime
//! it runs while the Leader is re-proven (one [`Driver`] per unfinished task of the active
//! epoch), and the Leader's operations on tasks.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use valp_store::{Access, ControlRoot, Journal, StoreError};

use valp_kernel::dimension::GateResult;

use super::corrections::Cycles;
use super::shown::Shown;
use crate::clock::Timestamp;
use crate::flow;
use crate::needs::{self, Found, TaskFacts};
use crate::runtime::control::{self, Actor, Operation, Verdict};
use crate::runtime::driver::{self, Driver, Progress};
use crate::runtime::effects;
use crate::runtime::workflow::{self, Wait};
use valp_view::sanitize::display_text;
use valp_view::{ItemRow, MachineView, Refusal, RejectionRow, TaskRow, Workflow};

/// Activity lines kept (newest first).
pub const ACTIVITY_ROWS: usize = 200;
/// How long a cancel waits for the adapter to confirm.
const CANCEL_PATIENCE: Duration = Duration::from_secs(10);

/// The task the state machine view shows, and the view last computed for it.
struct Focus {
    task: String,
    /// `(revision, active epoch, view)`: recomputed when either moved.
    computed: Option<(i128, i128, MachineView)>,
}

/// The runtime side of the console.
pub struct Desk {
    valp_binary: Option<PathBuf>,
    drivers: BTreeMap<String, Driver>,
    /// Task folders the runtime will never drive (finished, on a fenced epoch, not published
    /// from a plan, or failing to open a driver, which was logged once): epochs only grow and
    /// those states are final, so they are not looked at again.
    settled: BTreeSet<PathBuf>,
    /// Read-only handles kept open and caught up by [`Journal::refresh`], so drawing the
    /// console costs the entries appended since the last view, not a full replay. Opened from
    /// the newest snapshot, they hold the lean idempotency index, not the accepted-event
    /// history; the dimension gates read the driver's handle when there is one
    /// ([`Self::with_history`]).
    journals: BTreeMap<PathBuf, Journal>,
    waiting: BTreeMap<String, String>,
    /// Each task's gates (and their line, [`TaskRow::gates`]) and the revision they were
    /// measured at: the measurement reads the plan and the journal, so it is redone only when
    /// the task moved.
    gates: BTreeMap<PathBuf, (i128, String, Vec<GateResult>)>,
    /// The task whose state machine every view carries ([`valp_view::Request::Explain`]).
    machine: Option<Focus>,
    activity: VecDeque<String>,
    /// Task folders whose journal history is already in [`Self::activity`].
    history_read: BTreeSet<PathBuf>,
    /// Each task's correction cycle, derived again when the task moved.
    cycles: Cycles,
    /// The revision of each task folder [`Self::cycles`] was last asked about, and the views of
    /// the cycles as of those revisions (`None`: to be made again, a cycle moved): every view
    /// of the console carries them, and a long history's cycle has thousands of rounds.
    cycles_at: BTreeMap<PathBuf, i128>,
    correction_views: Option<Arc<[valp_view::CorrectionView]>>,
    /// Each task's rows, built again when its journal moved.
    shown: Shown,
}

impl Desk {
    /// A desk that runs tasks with `valp_binary` as the adapter supervisor (or only shows them
    /// when `None`).
    pub fn new(valp_binary: Option<PathBuf>) -> Self {
        Self {
            valp_binary,
            drivers: BTreeMap::new(),
            settled: BTreeSet::new(),
            journals: BTreeMap::new(),
            waiting: BTreeMap::new(),
            gates: BTreeMap::new(),
            machine: None,
            activity: VecDeque::new(),
            history_read: BTreeSet::new(),
            cycles: Cycles::default(),
            cycles_at: BTreeMap::new(),
            correction_views: None,
            shown: Shown::default(),
        }
    }

    /// Each task's correction cycle (tasks with a correction signal), as of the last
    /// [`Self::tasks`]: the same shared views until a task moved.
    pub fn corrections(&mut self) -> Arc<[valp_view::CorrectionView]> {
        let cycles = &self.cycles;
        Arc::clone(
            self.correction_views
                .get_or_insert_with(|| cycles.views().into()),
        )
    }

    /// What happened lately, newest first.
    pub fn activity(&self) -> Vec<String> {
        self.activity.iter().cloned().collect()
    }

    /// The task journal in `dir`, caught up with what was appended since the last call. A
    /// journal that fails to open or refresh is dropped and opened afresh next time.
    fn journal(&mut self, root: &ControlRoot, dir: &Path) -> Result<&Journal, StoreError> {
        let cached = self.journals.remove(dir);
        let journal = match cached {
            Some(mut journal) => {
                journal.refresh()?;
                journal
            }
            None => root.open_task_dir(dir, Access::ReadOnly)?,
        };
        Ok(self.journals.entry(dir.to_owned()).or_insert(journal))
    }

    /// `read` over the task journal in `dir` with its history: the driver's handle when the
    /// runtime drives the task, else one opened for the occasion (a task nobody drives moves
    /// rarely, and its gates are measured once per revision).
    fn with_history<T>(
        &self,
        root: &ControlRoot,
        dir: &Path,
        read: impl FnOnce(&Journal) -> T,
    ) -> Result<T, StoreError> {
        let task = self
            .journals
            .get(dir)
            .map(|journal| journal.live().body().task_id.value());
        if let Some(driver) = task.and_then(|task| self.drivers.get(task)) {
            return Ok(read(driver.journal()));
        }
        Ok(read(&root.open_task_dir(dir, Access::ReadOnly)?))
    }

    /// What the runtime refused to act on, per running task: observations in an attempt
    /// folder that name another attempt, a folder that fails the checks, inbox reports that
    /// are forged, duplicated or out of order. Paths are shown relative to `control_root`.
    pub fn runtime_rejections(&self, control_root: &Path) -> Vec<RejectionRow> {
        let prefix = format!("{}/", control_root.display());
        self.drivers
            .iter()
            .flat_map(|(task, driver)| {
                let prefix = prefix.clone();
                driver
                    .rejections()
                    .into_iter()
                    .map(move |(location, reason)| RejectionRow {
                        path: location
                            .strip_prefix(&prefix)
                            .unwrap_or(&location)
                            .to_owned(),
                        reason: format!("{reason} (task {})", display_text(task)),
                    })
            })
            .collect()
    }

    /// Adds a line, unless it repeats the newest one: a task whose step keeps failing the same
    /// way is pumped on every redraw, and one line says it as well as two hundred.
    pub(super) fn log(&mut self, line: &str) {
        let line = display_text(line);
        if self.activity.front() == Some(&line) {
            return;
        }
        self.activity.push_front(line);
        self.activity.truncate(ACTIVITY_ROWS);
    }

    /// Puts the history of the task journal in `dir` into the Activity log, once per console:
    /// what a restart would otherwise lose. Called once the journal is open in
    /// [`Self::journals`]; a history that cannot be read is tried again next time.
    fn read_history(&mut self, dir: &Path) {
        if self.history_read.contains(dir) {
            return;
        }
        let Some(journal) = self.journals.get(dir) else {
            return;
        };
        let task = journal.live().body().task_id.value();
        if let Ok(lines) = super::history::of_task(task, journal, ACTIVITY_ROWS) {
            for line in lines {
                self.log(&line);
            }
            self.history_read.insert(dir.to_owned());
        }
    }

    /// Lets the System take every step it can on every unfinished task of `active_epoch`:
    /// carry out pending obligations, then drive each task until it waits.
    /// Opens the task journal in `dir` for the console (its history into the Activity log)
    /// and, when `run` names the active epoch, the task's [`Driver`] if the runtime will drive
    /// it: one step of the console's start ([`super::opening`]). Returns the entries verified.
    pub fn open_task(&mut self, root: &ControlRoot, dir: &Path, run: Option<i128>) -> u64 {
        let entries = match self.journal(root, dir) {
            Ok(journal) => journal.len(),
            Err(_) => return 0,
        };
        self.read_history(dir);
        if let (Some(active_epoch), Some(valp)) = (run, self.valp_binary.clone()) {
            self.admit(root, dir, &valp, active_epoch);
        }
        entries
    }

    /// Opens a [`Driver`] for the task journal in `dir` unless the runtime already drives it
    /// or never will (then the folder is settled).
    fn admit(&mut self, root: &ControlRoot, dir: &Path, valp: &Path, active_epoch: i128) {
        if self.settled.contains(dir) {
            return;
        }
        let Ok(journal) = self.journal(root, dir) else {
            return;
        };
        let body = journal.live().body();
        let (task, epoch) = (body.task_id.value().to_owned(), body.leader_epoch);
        let finished = body
            .status
            .known()
            .is_some_and(valp_kernel::TaskStatus::is_terminal);
        // What happened before this console started comes first.
        self.read_history(dir);
        if self.drivers.contains_key(&task) {
            return;
        }
        if finished || epoch != active_epoch || crate::plan::of_task(root, &task).is_err() {
            self.settled.insert(dir.to_owned());
            return;
        }
        match Driver::open(root, &task, valp.to_owned()) {
            Ok(driver) => {
                self.drivers.insert(task, driver);
            }
            Err(error) => {
                self.log(&format!("{task}: cannot run: {error}"));
                self.settled.insert(dir.to_owned());
            }
        }
    }

    pub fn pump(&mut self, root: &ControlRoot, active_epoch: i128) {
        let Some(valp) = self.valp_binary.clone() else {
            return;
        };
        let Ok(dirs) = root.task_dirs() else {
            return;
        };
        for dir in dirs {
            self.admit(root, &dir, &valp, active_epoch);
        }
        let tasks: Vec<String> = self.drivers.keys().cloned().collect();
        for task in tasks {
            let Some(driver) = self.drivers.get_mut(&task) else {
                continue;
            };
            match driver.reconcile_effects(CANCEL_PATIENCE) {
                Ok(records) => {
                    for record in records {
                        self.log(&format!(
                            "{task}  {}",
                            super::effect_words::in_words(&record)
                        ));
                    }
                }
                Err(error) => self.log(&format!("{task}: effects: {error}")),
            }
            let Some(driver) = self.drivers.get_mut(&task) else {
                continue;
            };
            let steps = driver.run_until_idle(active_epoch);
            let finished = driver.finished().is_some();
            match steps {
                Ok(steps) => {
                    for step in steps {
                        let line = match step {
                            Progress::Proposed { kind, why, refused } => match refused {
                                None => format!("{task}  {}  ({why})", kind.as_str()),
                                Some((code, reason)) => {
                                    format!("{task}  {} refused: {code}: {reason}", kind.as_str())
                                }
                            },
                            Progress::Launched { attempt_id } => {
                                format!("{task}  launched {attempt_id}")
                            }
                            Progress::Waiting(wait) => {
                                self.waiting.insert(task.clone(), waiting_text(&wait));
                                continue;
                            }
                        };
                        self.log(&line);
                    }
                }
                Err(error) => {
                    self.waiting.insert(task.clone(), error.to_string());
                    self.log(&format!("{task}: {error}"));
                }
            }
            if finished {
                self.drivers.remove(&task);
            }
        }
    }

    /// One row per task journal (a journal that does not open is shown with its error), the
    /// work items, and the Operator Workflow of each readable task.
    pub fn tasks(
        &mut self,
        root: &ControlRoot,
        active_epoch: i128,
    ) -> (Vec<TaskRow>, Vec<ItemRow>, Vec<Workflow>) {
        let Ok(dirs) = root.task_dirs() else {
            return (Vec::new(), Vec::new(), Vec::new());
        };
        self.rows(root, &dirs, active_epoch)
    }

    /// [`Self::tasks`] of the task journals already open only, without opening more: the view
    /// while the console is still opening the others.
    pub fn open_tasks(
        &mut self,
        root: &ControlRoot,
        active_epoch: i128,
    ) -> (Vec<TaskRow>, Vec<ItemRow>, Vec<Workflow>) {
        let dirs: Vec<PathBuf> = self.journals.keys().cloned().collect();
        self.rows(root, &dirs, active_epoch)
    }

    fn rows(
        &mut self,
        root: &ControlRoot,
        dirs: &[PathBuf],
        active_epoch: i128,
    ) -> (Vec<TaskRow>, Vec<ItemRow>, Vec<Workflow>) {
        let mut rows = Vec::new();
        let mut workflows = Vec::new();
        let mut shown = Vec::new();
        for dir in dirs {
            if let Err(error) = self.journal(root, dir) {
                rows.push(unreadable(dir, &error));
                continue;
            }
            let Some(journal) = self.journals.get(dir) else {
                continue;
            };
            let built = self.shown.of(dir, journal, active_epoch);
            let (task, revision, mut row) =
                (built.task_id.clone(), built.revision, built.row.clone());
            workflows.push(built.workflow.clone());
            self.read_history(dir);
            row.waiting = self.waiting.get(&task).cloned().unwrap_or_default();
            row.gates = self.gate_line(root, dir, revision);
            if self.cycles_at.insert(dir.clone(), revision) != Some(revision) {
                self.correction_views = None;
            }
            self.cycles.refresh(dir, &task, revision);
            rows.push(row);
            shown.push(dir);
        }
        // One allocation for the 10^4 rows of 100 tasks, each cloned once into it.
        let mut items =
            Vec::with_capacity(shown.iter().map(|dir| self.shown.items(dir).len()).sum());
        for dir in shown {
            items.extend_from_slice(self.shown.items(dir));
        }
        rows.sort_by(|left, right| left.task_id.cmp(&right.task_id));
        items.sort_by(|left, right| left.task_id.cmp(&right.task_id));
        workflows.sort_by(|left, right| left.task_id.cmp(&right.task_id));
        (rows, items, workflows)
    }

    /// Keeps `task`'s state machine in the views from now on (`None`: none).
    pub fn focus_machine(&mut self, task: Option<String>) {
        self.machine = task.map(|task| Focus {
            task,
            computed: None,
        });
    }

    /// The state machine of the focused task, recomputed only when the task or the active
    /// epoch moved. A task that does not open (or whose Done policy does not decode) has none.
    pub fn machine(&mut self, root: &ControlRoot, active_epoch: i128) -> Option<MachineView> {
        let task = self.machine.as_ref()?.task.clone();
        let dir = root.layout().task_dir(&task);
        let revision = self.journal(root, &dir).ok()?.live().body().revision;
        if let Some(Focus {
            computed: Some((at, epoch, view)),
            ..
        }) = &self.machine
            && (*at, *epoch) == (revision, active_epoch)
        {
            return Some(view.clone());
        }
        let journal = self.journals.get(&dir)?;
        let view = match flow::transitions(root, journal, active_epoch) {
            Ok(listed) => flow::machine(journal.live().body(), &listed),
            Err(error) => {
                self.log(&format!("{task}: state machine: {error}"));
                return None;
            }
        };
        self.machine = Some(Focus {
            task,
            computed: Some((revision, active_epoch, view.clone())),
        });
        Some(view)
    }

    /// The gate line of the task journal in `dir` (open in [`Self::journals`]) at `revision`.
    fn gate_line(&mut self, root: &ControlRoot, dir: &Path, revision: i128) -> String {
        if let Some((measured, line, _)) = self.gates.get(dir)
            && *measured == revision
        {
            return line.clone();
        }
        let Some(task) = self
            .journals
            .get(dir)
            .map(|journal| journal.live().body().task_id.value().to_owned())
        else {
            return String::new();
        };
        // A task not published from a plan has no gates: its history is not read for them.
        let measured = if matches!(
            crate::plan::of_task(root, &task),
            Err(crate::plan::PlanError::NotPublished { .. })
        ) {
            Ok(None)
        } else {
            self.with_history(root, dir, |journal| driver::task_gates(root, journal))
                .map_err(driver::RuntimeError::from)
                .and_then(|measured| measured)
        };
        let line = match &measured {
            Ok(Some(gates)) => gates
                .iter()
                .map(|gate| {
                    let why = if gate.reasons.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", gate.reasons.join(", "))
                    };
                    display_text(&format!(
                        "{}{} {}{why}",
                        gate.dimension.as_str(),
                        if gate.required { "*" } else { "" },
                        gate.verdict.as_str()
                    ))
                })
                .collect::<Vec<_>>()
                .join(" · "),
            Ok(None) => String::new(),
            Err(error) => display_text(&format!("gates: {error}")),
        };
        let gates = measured.ok().flatten().unwrap_or_default();
        self.gates
            .insert(dir.to_owned(), (revision, line.clone(), gates));
        line
    }

    /// What waits for the Leader in each task of `active_epoch` read by the last
    /// [`Self::tasks`] (a task on a fenced epoch needs a handoff before anything else), with
    /// what the System reads outside the journals under `control_root` at `now`
    /// ([`needs::gather`]).
    pub fn needs(
        &self,
        control_root: &Path,
        active_epoch: i128,
        now: Timestamp,
    ) -> Vec<(String, Vec<Found>)> {
        self.journals
            .iter()
            .filter(|(_, journal)| journal.live().body().leader_epoch == active_epoch)
            .map(|(dir, journal)| {
                let body = journal.live().body();
                let gates = self
                    .gates
                    .get(dir)
                    .filter(|(measured, _, _)| *measured == body.revision)
                    .map_or(&[][..], |(_, _, gates)| gates.as_slice());
                let outside = needs::gather::gather(control_root, body, self.cycles.get(dir), now);
                (
                    body.task_id.value().to_owned(),
                    needs::find(&TaskFacts {
                        body,
                        gates,
                        last_recorded_ms: journal
                            .last_recorded_at()
                            .map(valp_store::clock::Timestamp::millis),
                        outside: &outside,
                    }),
                )
            })
            .collect()
    }

    /// Adds to every observation row carrying an adapter's final word the reason the journal
    /// does not show it, when it does not ([`workflow::unapplied`]), so the displayed work-item
    /// status (the journal's) never contradicts an observation without a word.
    pub fn explain(&self, rows: &mut [valp_view::ObservationRow]) {
        for row in rows {
            let interim = ["accepted", "waiting"].contains(&row.status.as_str());
            let Some(body) = self
                .journals
                .values()
                .map(|journal| journal.live().body())
                .find(|body| display_text(body.task_id.value()) == row.task_id)
            else {
                continue;
            };
            if let (false, Some(why)) = (interim, workflow::unapplied(body, &row.attempt_id)) {
                row.detail = if row.detail.is_empty() {
                    why
                } else {
                    format!("{why}; {}", row.detail)
                };
            }
        }
    }

    /// Proposes a Leader's operation on a task and carries out the cancels it raises.
    pub fn operate(
        &mut self,
        root: &ControlRoot,
        active_epoch: i128,
        task_id: &str,
        operation: &Operation,
        actor: &Actor,
    ) -> Result<String, Refusal> {
        let mut journal = root
            .open_task(task_id, Access::Write)
            .map_err(|error| Refusal {
                code: error.code().as_str().to_owned(),
                message: error.to_string(),
            })?;
        let verdict = control::apply(root, &mut journal, active_epoch, operation, actor).map_err(
            |error| Refusal {
                code: match &error {
                    control::ControlError::Store(error) => error.code().as_str().to_owned(),
                    control::ControlError::Invalid(_) => "VALP-CONSOLE-INVALID".to_owned(),
                },
                message: error.to_string(),
            },
        )?;
        match verdict {
            Verdict::Accepted {
                revision,
                obligations,
            } => {
                let status = journal.live().body().status.as_str().to_owned();
                self.log(&format!(
                    "{task_id}  {} accepted: {status} at revision {revision}",
                    operation_name(operation)
                ));
                let mut message = format!(
                    "{} accepted: task {task_id} is {status}",
                    operation_name(operation)
                );
                if !obligations.is_empty() {
                    match effects::reconcile(root, task_id, CANCEL_PATIENCE) {
                        Ok(records) => {
                            for record in &records {
                                self.log(&format!(
                                    "{task_id}  {}",
                                    super::effect_words::in_words(record)
                                ));
                            }
                            let _ = write!(message, "; {} cancel(s) carried out", records.len());
                        }
                        Err(error) => {
                            let _ = write!(message, "; effects: {error}");
                        }
                    }
                }
                Ok(display_text(&message))
            }
            Verdict::Refused { code, reason } => {
                // `reason` is already in the lister's words when it lists this refusal
                // (`control::apply` through `runtime::refusal`, shared with the CLI).
                self.log(&format!(
                    "{task_id}  {} refused: {code}: {reason}",
                    operation_name(operation)
                ));
                Err(Refusal {
                    code,
                    message: display_text(&reason),
                })
            }
        }
    }
}

fn operation_name(operation: &Operation) -> &'static str {
    match operation {
        Operation::CancelTask => "cancel",
        Operation::CancelItem(_) => "cancel work item",
        Operation::Interrupt => "interrupt",
        Operation::Resume => "resume",
        Operation::Redirect { .. } => "redirect",
        Operation::Review(true) => "review pass",
        Operation::Review(false) => "review reject",
        Operation::Approval(true) => "approval grant",
        Operation::Approval(false) => "approval deny",
        Operation::RequestApproval => "review pass (approval required)",
        Operation::Retry(_) => "retry",
        Operation::Recover => "recover",
    }
}

fn waiting_text(wait: &Wait) -> String {
    match wait {
        Wait::InFlight(0) => String::new(),
        Wait::InFlight(count) => format!("{count} attempt(s) running"),
        Wait::Interrupted => "interrupted by the Leader".to_owned(),
        Wait::Leader(why) => why.clone(),
        Wait::Finished(status) => status.as_str().to_owned(),
        Wait::NotStarted => "published but not started".to_owned(),
    }
}

/// The row of a task journal that does not open, with its error.
fn unreadable(dir: &Path, error: &StoreError) -> TaskRow {
    TaskRow {
        task_id: display_text(
            &dir.file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned()),
        ),
        status: format!("unreadable: {}", error.code().as_str()),
        revision: 0,
        epoch: 0,
        fenced: true,
        items_completed: 0,
        items_total: 0,
        interrupted: false,
        waiting: display_text(&error.to_string()),
        gates: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_activity_log_keeps_one_line_for_a_repeated_message() {
        let mut desk = Desk::new(None);
        desk.log("t: the attempt folder is unreadable");
        desk.log("t: the attempt folder is unreadable");
        desk.log("t  attempt_running");
        desk.log("t: the attempt folder is unreadable");
        assert_eq!(
            desk.activity(),
            [
                "t: the attempt folder is unreadable",
                "t  attempt_running",
                "t: the attempt folder is unreadable"
            ]
        );
    }

    #[test]
    fn the_activity_log_is_bounded_and_sanitized() {
        let mut desk = Desk::new(None);
        for index in 0..ACTIVITY_ROWS + 5 {
            desk.log(&format!("line {index}"));
        }
        assert_eq!(desk.activity().len(), ACTIVITY_ROWS);
        desk.log("bad \u{1b}[2Jtext");
        assert!(!desk.activity()[0].contains('\u{1b}'));
    }

    #[test]
    fn an_unchanged_journal_is_not_built_into_rows_again() {
        let super::super::walk_root::WalkRoot {
            _temp,
            root,
            mut walk,
            mut journal,
        } = super::super::walk_root::walk_root(5, 3);
        for step in walk.by_ref().take(4) {
            journal.append(&step.event, &step.evidence_set).unwrap();
        }
        let mut desk = Desk::new(None);
        let first = desk.tasks(&root, 1);
        assert_eq!(first.1.len(), 3);
        for _ in 0..3 {
            assert_eq!(desk.tasks(&root, 1), first);
        }
        assert_eq!(desk.shown.built(), 1, "the same journal, the same rows");
        // The journal moves: built again, and the same as a new desk reads it.
        for step in walk.by_ref().take(3) {
            journal.append(&step.event, &step.evidence_set).unwrap();
        }
        let moved = desk.tasks(&root, 1);
        assert_eq!(desk.shown.built(), 2);
        assert_eq!(moved, Desk::new(None).tasks(&root, 1));
        assert_ne!(moved.0, first.0);
        // Another active epoch fences the task: built again.
        let fenced = desk.tasks(&root, 2);
        assert_eq!(desk.shown.built(), 3);
        assert!(fenced.0.iter().all(|row| row.fenced));
    }
}
