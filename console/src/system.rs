//! The console's system side: the real [`Backend`] over a control root.
//!
//! Opening it is the daily start of the console: observe, record the observation, and re-prove
//! the bound Leader session ([`authority::open_session`]). What it shows is read back from the
//! ledger and the task journals after every change, so the screen shows only what the kernel
//! accepted; a refusal comes back as a [`Refusal`] with the kernel's code.

use valp_kernel::WorkItemStatus;
use valp_kernel::installation::InstallationLive;
use valp_store::{Access, ControlRoot, Journal};

use crate::authority::{self, Approval, AuthorityError, Confirmation, SessionCheck};
use crate::clock::Clock;
use crate::doctor::report::shows;
use crate::doctor::sanitize::display_text;
use crate::doctor::{self, HealthStatus, Observation, ObserveOptions};
use crate::view::{
    Backend, CandidateRow, ConsoleView, EpochRow, LaneView, LeaderView, Refusal, Request, TaskRow,
};

/// The console's backend over one control root.
pub struct SystemBackend<'c> {
    root: ControlRoot,
    ledger: Journal<InstallationLive>,
    clock: &'c dyn Clock,
    options: ObserveOptions,
    observation: Observation,
    session: SessionCheck,
}

impl<'c> SystemBackend<'c> {
    /// Opens the ledger, observes, and re-proves the bound session. An unproven session is not
    /// an error: it is [`SessionCheck::Unproven`] and the console opens read-only.
    pub fn open(
        root: ControlRoot,
        clock: &'c dyn Clock,
        options: ObserveOptions,
    ) -> Result<Self, AuthorityError> {
        let mut ledger = root.ledger()?;
        let observation = doctor::observe(clock, &options);
        let session = authority::open_session(&root, &mut ledger, &observation)?;
        Ok(Self {
            root,
            ledger,
            clock,
            options,
            observation,
            session,
        })
    }

    /// What this start found.
    pub fn session(&self) -> &SessionCheck {
        &self.session
    }

    /// Observes afresh and checks the binding again, writing only what changed
    /// ([`authority::recheck`]): the console refreshes every few seconds, and an unchanged
    /// machine must not grow the ledger.
    fn refresh(&mut self) -> Result<(), AuthorityError> {
        self.ledger.refresh()?;
        self.observation = doctor::observe(self.clock, &self.options);
        self.session = authority::recheck(
            &self.root,
            &mut self.ledger,
            &self.observation,
            &self.session,
        )?;
        Ok(())
    }

    /// A selection or rotation approved in the console's confirmation dialog.
    fn choose(&mut self, candidate_id: &str, rotate: bool) -> Result<String, AuthorityError> {
        self.ledger.refresh()?;
        self.observation = doctor::observe(self.clock, &self.options);
        authority::record_observation(&self.root, &mut self.ledger, &self.observation)?;
        let approval = Approval {
            approved_by: authority::operator(&self.observation)?,
            confirmation: Confirmation::Dialog,
            at: self.clock.now(),
        };
        let bound = if rotate {
            authority::rotate(&self.root, &mut self.ledger, candidate_id, &approval)?
        } else {
            authority::select(&self.root, &mut self.ledger, candidate_id, &approval)?
        };
        self.session = authority::open_session(&self.root, &mut self.ledger, &self.observation)?;
        Ok(format!(
            "Leader {}: {}, epoch {}",
            if rotate { "rotated" } else { "selected" },
            display_text(&bound.candidate_id),
            bound.epoch
        ))
    }

    fn lane(&self) -> LaneView {
        let state = self.ledger.live().state();
        let bound = state.leader.as_ref();
        let leader = bound.map(|binding| LeaderView {
            principal_id: display_text(binding.candidate.principal_id.value()),
            principal_kind: binding.candidate.principal_kind.as_str().to_owned(),
            candidate_id: display_text(&binding.candidate.candidate_id),
            epoch: binding.epoch,
            session_summary: match self.observation.candidate(&binding.candidate.candidate_id) {
                None => "not observed now".to_owned(),
                Some(current) if current.fingerprint() != binding.candidate.session_fingerprint => {
                    "another session is at this address now".to_owned()
                }
                Some(current) => shows(current),
            },
        });
        let candidates = self
            .observation
            .candidates
            .iter()
            .map(|candidate| CandidateRow {
                candidate_id: display_text(&candidate.candidate_id),
                principal_id: display_text(&candidate.principal_id),
                principal_kind: candidate.principal_kind.as_str().to_owned(),
                health: match candidate.health.status {
                    HealthStatus::Live => "live".to_owned(),
                    HealthStatus::Unreachable => format!(
                        "unreachable: {}",
                        candidate
                            .health
                            .reason
                            .as_deref()
                            .unwrap_or("no reason recorded")
                    ),
                },
                labels: candidate
                    .labels
                    .iter()
                    .map(|label| display_text(label))
                    .collect(),
                summary: shows(candidate),
                bound: bound.is_some_and(|binding| {
                    binding.candidate.candidate_id == candidate.candidate_id
                        && binding.candidate.session_fingerprint == candidate.fingerprint()
                }),
            })
            .collect();
        let epochs = state
            .fenced
            .iter()
            .map(|binding| (binding, true))
            .chain(bound.map(|binding| (binding, false)))
            .map(|(binding, fenced)| EpochRow {
                epoch: binding.epoch,
                principal_id: display_text(binding.candidate.principal_id.value()),
                candidate_id: display_text(&binding.candidate.candidate_id),
                how: if binding.epoch == 1 {
                    "selected"
                } else {
                    "rotated"
                }
                .to_owned(),
                fenced,
            })
            .collect();
        LaneView {
            status: state.status.as_str().to_owned(),
            active_epoch: state.active_epoch,
            leader,
            session: self.session.clone(),
            candidates,
            epochs,
        }
    }

    /// One row per task journal; a journal that does not open is shown with its error as its
    /// status rather than hiding it.
    fn tasks(&self, active_epoch: i128) -> Vec<TaskRow> {
        let Ok(dirs) = self.root.task_dirs() else {
            return Vec::new();
        };
        let mut rows: Vec<TaskRow> = dirs
            .iter()
            .map(|dir| match self.root.open_task_dir(dir, Access::ReadOnly) {
                Ok(journal) => {
                    let body = journal.live().body();
                    TaskRow {
                        task_id: display_text(body.task_id.value()),
                        status: body.status.as_str().to_owned(),
                        revision: body.revision,
                        epoch: body.leader_epoch,
                        fenced: body.leader_epoch != active_epoch,
                        items_completed: body
                            .work_items
                            .iter()
                            .filter(|item| item.status == WorkItemStatus::Completed)
                            .count(),
                        items_total: body.work_items.len(),
                    }
                }
                Err(error) => TaskRow {
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
                },
            })
            .collect();
        rows.sort_by(|left, right| left.task_id.cmp(&right.task_id));
        rows
    }
}

impl Backend for SystemBackend<'_> {
    fn view(&mut self) -> ConsoleView {
        let lane = self.lane();
        let tasks = self.tasks(lane.active_epoch);
        ConsoleView {
            installation_id: display_text(self.root.installation().installation_id.value()),
            root: display_text(&self.root.layout().root().display().to_string()),
            lane,
            tasks,
        }
    }

    fn request(&mut self, request: &Request) -> Result<String, Refusal> {
        let result = match request {
            Request::Select { candidate_id } => self.choose(candidate_id, false),
            Request::Rotate { candidate_id } => self.choose(candidate_id, true),
            Request::Refresh => self.refresh().map(|()| match &self.session {
                SessionCheck::Unbound => "observed: no Leader selected yet".to_owned(),
                SessionCheck::Reopened { epoch, .. } => {
                    format!("observed: Leader session re-proven, epoch {epoch}")
                }
                SessionCheck::Unproven { reason } => format!("observed: {reason}"),
            }),
        };
        result.map_err(refusal)
    }
}

fn refusal(error: AuthorityError) -> Refusal {
    match error {
        AuthorityError::Refused { code, reason } => Refusal {
            code,
            message: reason,
        },
        AuthorityError::Store(error) => Refusal {
            code: error.code().as_str().to_owned(),
            message: error.to_string(),
        },
        AuthorityError::Invalid(message) => Refusal {
            code: "VALP-CONSOLE-INVALID".to_owned(),
            message,
        },
    }
}
