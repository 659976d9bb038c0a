//! The console's system side: the real [`Backend`] over a control root.
//!
//! Opening it is the daily start of the console: observe, record the observation, and re-prove
//! the bound Leader session ([`authority::open_session`]). What it shows is read back from the
//! ledger and the task journals after every change, so the screen shows only what the kernel
//! accepted; a refusal comes back as a [`Refusal`] with the kernel's code.
//!
//! With a runtime attached ([`SystemBackend::with_runtime`]) it is also the System: while the
//! Leader is re-proven, every view first lets the runtime take the steps it can on the active
//! epoch's tasks (`tasks`), and a file watcher feeds live adapter observations and rejections
//! (`feed`), waking the console when something arrives.

mod agents;
mod corrections;
mod effect_words;
pub mod feed;
pub mod foreign;
mod history;
mod opening;
mod shown;
mod tasks;
#[cfg(test)]
mod walk_root;
mod watched;

use std::path::PathBuf;

use valp_kernel::PrincipalKind;
use valp_kernel::installation::InstallationLive;
use valp_store::{ControlRoot, Journal};

use crate::authority::{self, Approval, AuthorityError, Confirmation, SessionCheck};
use crate::clock::Clock;
use crate::doctor::report::shows;
use crate::doctor::{self, HealthStatus, Observation, ObserveOptions};
use crate::needs;
use crate::runtime::control::{Actor, Operation};
use valp_view::sanitize::display_text;
use valp_view::{
    Backend, CandidateRow, ConsoleView, EpochRow, LaneView, LeaderView, Refusal, Request,
};

/// The console's backend over one control root.
pub struct SystemBackend<'c> {
    root: ControlRoot,
    ledger: Journal<InstallationLive>,
    clock: &'c dyn Clock,
    options: ObserveOptions,
    observation: Observation,
    session: SessionCheck,
    desk: tasks::Desk,
    needs: needs::Queue,
    /// The needs on screen, which an acknowledgement keeps in the file.
    shown_needs: Vec<valp_view::NeedRow>,
    /// When each observation on screen was first read.
    observations_seen: needs::FirstSeen,
    /// When each current attempt on screen was first seen.
    attempts_seen: needs::FirstSeen,
    feed: Option<feed::Feed>,
    /// Each task's foreign observations, read again when their journal changes.
    foreign: foreign::Foreign,
    /// The AgentOps folders task plans watch (started with the feed).
    watched: watched::Watched,
    /// A plan to publish as soon as a Leader is re-proven (the demo's), if its task is not
    /// there yet: `(file name shown in errors, TOML)`.
    pending_plan: Option<(&'static str, &'static str)>,
    /// The task journals still to open at the start ([`Backend::open_next`]).
    opener: opening::Opener,
    /// Whether the last view showed an agent in a tmux pane ([`Self::tmux_watched`]).
    tmux_agents: bool,
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
            needs: needs::Queue::new(&root),
            root,
            ledger,
            clock,
            options,
            observation,
            session,
            desk: tasks::Desk::new(None),
            shown_needs: Vec::new(),
            observations_seen: needs::FirstSeen::default(),
            attempts_seen: needs::FirstSeen::default(),
            feed: None,
            foreign: foreign::Foreign::default(),
            watched: watched::Watched::default(),
            pending_plan: None,
            opener: opening::Opener::default(),
            tmux_agents: false,
        })
    }

    /// Runs the System on the active epoch's tasks, with `valp_binary` as the adapters'
    /// supervisor program.
    #[must_use]
    pub fn with_runtime(mut self, valp_binary: PathBuf) -> Self {
        self.desk = tasks::Desk::new(Some(valp_binary));
        self
    }

    /// Publishes `plan` (TOML; `file` names it in errors) once a Leader session is re-proven,
    /// unless its task already exists: the demo installation gets real work to show after the
    /// first-run selection, through the same publication as `valp task publish`.
    #[must_use]
    pub fn with_plan_once_proven(mut self, file: &'static str, plan: &'static str) -> Self {
        self.pending_plan = Some((file, plan));
        self
    }

    fn publish_pending_plan(&mut self, active_epoch: i128) {
        let Some((file, text)) = self.pending_plan.take() else {
            return;
        };
        let outcome = crate::plan::parse(std::path::Path::new(file), text.as_bytes())
            .map_err(|errors| errors.to_string())
            .and_then(|plan| {
                let journal = self
                    .root
                    .layout()
                    .task_dir(&plan.task_id)
                    .join(valp_store::journal::JOURNAL_FILE);
                if journal.is_file() {
                    return Ok(None);
                }
                crate::plan::publish(&self.root, &plan, active_epoch)
                    .map(|_| Some(plan.task_id.clone()))
                    .map_err(|error| error.to_string())
            });
        match outcome {
            Ok(Some(task)) => self.desk.log(&format!(
                "{task}: published from {file} at epoch {active_epoch}"
            )),
            Ok(None) => {}
            Err(error) => self.desk.log(&format!("{file}: not published: {error}")),
        }
    }

    /// Starts the live observation feed; `wake` tells the screen it has news (and returns
    /// `false` once nobody listens). A callback, not the UI's type: the System knows no UI.
    pub fn watch(
        &mut self,
        wake: impl Fn() -> bool + Send + Clone + 'static,
    ) -> Result<(), crate::ingest::IngestError> {
        self.watched.enable(Box::new(wake.clone()));
        self.feed = Some(feed::Feed::start(self.root.layout().root(), wake)?);
        Ok(())
    }

    /// Whether the periodic look must ask tmux: the candidate list is on screen (no proven
    /// Leader yet), the bound Leader is a tmux pane, or an item's current attempt is an agent in
    /// a tmux pane. A proven human Leader with no tmux agent needs no tmux server observed.
    fn tmux_watched(&self) -> bool {
        let leader_in_tmux = self
            .ledger
            .live()
            .state()
            .leader
            .as_ref()
            .is_none_or(|binding| binding.candidate.principal_kind != PrincipalKind::Human);
        !self.proven() || leader_in_tmux || self.tmux_agents
    }

    fn proven(&self) -> bool {
        matches!(self.session, SessionCheck::Reopened { .. })
    }

    /// Refuses a Leader's action unless the session is re-proven.
    fn leader(&self) -> Result<(), Refusal> {
        if self.proven() {
            Ok(())
        } else {
            Err(Refusal {
                code: "VALP-CONSOLE-READ-ONLY".to_owned(),
                message: "the Leader session is not re-proven: the console is read-only".to_owned(),
            })
        }
    }

    /// The Leader acting on an agent: only with a re-proven session.
    fn agent_leader(&self) -> Result<agents::Leader, Refusal> {
        self.leader()?;
        Ok(agents::Leader {
            principal_id: authority::operator(&self.observation).map_err(refusal)?,
            epoch: self.ledger.live().state().active_epoch,
        })
    }

    /// The Leader deciding an agent's permission request: only with a re-proven session; the
    /// decider is the proven principal on the bound session at the active epoch.
    fn decide(&self, task_id: &str, request_id: &str, allow: bool) -> Result<String, Refusal> {
        let leader = self.agent_leader()?;
        let state = self.ledger.live().state();
        let decider = crate::agent::channel::approval::Decider {
            principal: leader.principal_id,
            session: state
                .leader
                .as_ref()
                .map(|binding| binding.candidate.candidate_id.clone())
                .unwrap_or_default(),
            epoch: i64::try_from(leader.epoch).unwrap_or(i64::MAX),
        };
        agents::decide(
            &self.root,
            &decider,
            (task_id, request_id),
            allow,
            self.clock,
        )
    }

    /// A Leader's operation on a task: only with a re-proven session.
    fn operate(&mut self, task_id: &str, operation: &Operation) -> Result<String, Refusal> {
        self.leader()?;
        let actor = Actor {
            principal: authority::operator(&self.observation).map_err(refusal)?,
            at: self.clock.now(),
            note: "from the console".to_owned(),
        };
        let active = self.ledger.live().state().active_epoch;
        self.desk
            .operate(&self.root, active, task_id, operation, &actor)
    }

    /// Stamps each observation row with when the System first read it (its ingest time).
    fn stamp(&mut self, rows: &mut [valp_view::ObservationRow]) {
        let now = self.clock.now().millis();
        let key = |row: &valp_view::ObservationRow| {
            format!("{}\u{0}{}\u{0}{}", row.source, row.attempt_id, row.sequence)
        };
        for row in rows.iter_mut() {
            row.seen_ms = self.observations_seen.stamp(&key(row), now);
            row.seen_at = crate::clock::Timestamp::from_millis(row.seen_ms).to_rfc3339();
        }
        let live: std::collections::BTreeSet<String> = rows.iter().map(key).collect();
        self.observations_seen.keep(|seen| live.contains(seen));
    }

    /// Stamps each work item's current attempt with when the System first saw it.
    fn stamp_attempts(&mut self, rows: &mut [valp_view::ItemRow]) {
        let now = self.clock.now().millis();
        let key = |row: &valp_view::ItemRow| {
            let attempt = row.attempt.split(' ').next().unwrap_or_default();
            format!("{}\u{0}{}\u{0}{attempt}", row.task_id, row.work_item_id)
        };
        for row in rows.iter_mut().filter(|row| !row.attempt.is_empty()) {
            row.attempt_since_ms = self.attempts_seen.stamp(&key(row), now);
        }
        let live: std::collections::BTreeSet<String> = rows.iter().map(key).collect();
        self.attempts_seen.keep(|seen| live.contains(seen));
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
}

impl Backend for SystemBackend<'_> {
    /// Lets the System step first (only while the Leader is re-proven), then reads the truth
    /// back from the ledger and the journals.
    fn view(&mut self) -> ConsoleView {
        let active = self.ledger.live().state().active_epoch;
        if self.proven() {
            self.publish_pending_plan(active);
            self.desk.pump(&self.root, active);
        }
        self.read(None)
    }

    /// Opens the next task journals (with their drivers while the Leader is re-proven) and
    /// shows what is open so far; the System takes no step until everything is open.
    fn open_next(&mut self) -> Option<ConsoleView> {
        let run = self
            .proven()
            .then(|| self.ledger.live().state().active_epoch);
        let progress = self.opener.step(&self.root, &mut self.desk, run)?;
        Some(self.read(Some(progress)))
    }

    fn request(&mut self, request: &Request) -> Result<String, Refusal> {
        self.answer(request)
    }

    /// Observes afresh (as [`Request::Refresh`]) only when something on screen lives in tmux
    /// (see [`Self::tmux_watched`]) or the ledger moved (another console selected, rotated or
    /// recorded); otherwise nothing the last look judged can have changed, and not a single
    /// `tmux` process is started.
    fn tick(&mut self) -> Result<String, Refusal> {
        let moved = self
            .ledger
            .refresh()
            .map_err(|error| refusal(error.into()))?;
        if moved > 0 || self.tmux_watched() {
            return self.answer(&Request::Refresh);
        }
        Ok("nothing on screen lives in tmux: not observed again".to_owned())
    }
}

impl SystemBackend<'_> {
    /// The view of what is open: every task journal (opened now if need be) once `opening` is
    /// `None`, else only those already open.
    fn read(&mut self, opening: Option<valp_view::Opening>) -> ConsoleView {
        let lane = self.lane();
        let (tasks, mut items, workflows) = if opening.is_some() {
            self.desk.open_tasks(&self.root, lane.active_epoch)
        } else {
            self.desk.tasks(&self.root, lane.active_epoch)
        };
        self.stamp_attempts(&mut items);
        let machine = self.desk.machine(&self.root, lane.active_epoch);
        let (mut observations, feed_rejections) =
            self.feed.as_ref().map(feed::Feed::rows).unwrap_or_default();
        self.desk.explain(&mut observations);
        self.stamp(&mut observations);
        // The runtime's refusals stand as long as the file does; the feed's are events.
        let mut rejections = self.desk.runtime_rejections(self.root.layout().root());
        rejections.extend(feed_rejections);
        let agents = agents::agents(self.root.layout().root(), &items, self.clock.now());
        self.tmux_agents = !agents.is_empty();
        let found = self.desk.needs(
            self.root.layout().root(),
            lane.active_epoch,
            self.clock.now(),
        );
        let (needs, acks_problem) = self.needs.rows(found, self.clock);
        let usage = agents::usage(self.root.layout().root(), &items);
        rejections.extend(acks_problem);
        let task_ids: Vec<String> = tasks.iter().map(|task| task.task_id.clone()).collect();
        self.watched.refresh(&self.root, &task_ids);
        rejections.extend(self.watched.rejections());
        let (foreign, foreign_problems) = self.foreign.rows(&self.root, &task_ids);
        rejections.extend(foreign_problems);
        self.shown_needs.clone_from(&needs);
        ConsoleView {
            installation_id: display_text(self.root.installation().installation_id.value()),
            root: display_text(&self.root.layout().root().display().to_string()),
            lane,
            tasks,
            items,
            observations,
            rejections,
            activity: self.desk.activity(),
            agents,
            needs,
            now_ms: self.clock.now().millis(),
            workflows,
            machine,
            corrections: self.desk.corrections(),
            usage,
            opening,
            foreign,
        }
    }

    /// Carries out a request ([`Backend::request`]).
    fn answer(&mut self, request: &Request) -> Result<String, Refusal> {
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
            Request::Cancel {
                task_id,
                work_item_id,
            } => {
                let operation = work_item_id
                    .clone()
                    .map_or(Operation::CancelTask, Operation::CancelItem);
                return self.operate(task_id, &operation);
            }
            Request::Interrupt { task_id } => return self.operate(task_id, &Operation::Interrupt),
            Request::Resume { task_id } => return self.operate(task_id, &Operation::Resume),
            Request::Redirect {
                task_id,
                superseded,
                intent,
            } => {
                let operation = Operation::Redirect {
                    superseded: superseded.clone(),
                    intent: intent.clone().into_bytes(),
                };
                return self.operate(task_id, &operation);
            }
            Request::Review { task_id, pass } => {
                return self.operate(task_id, &Operation::Review(*pass));
            }
            Request::Approve { task_id, grant } => {
                return self.operate(task_id, &Operation::Approval(*grant));
            }
            Request::Retry {
                task_id,
                work_item_id,
            } => return self.operate(task_id, &Operation::Retry(work_item_id.clone())),
            Request::Recover { task_id } => return self.operate(task_id, &Operation::Recover),
            Request::Message {
                task_id,
                attempt_id,
                text,
            } => {
                let leader = self.agent_leader()?;
                return agents::message(&self.root, &leader, (task_id, attempt_id), text);
            }
            Request::InterruptAgent {
                task_id,
                attempt_id,
            } => {
                let leader = self.agent_leader()?;
                return agents::interrupt(&self.root, &leader, (task_id, attempt_id));
            }
            Request::Attach { attempt_id } => {
                let inside = std::env::var("TMUX").ok();
                return agents::attach(self.root.layout().root(), attempt_id, inside.as_deref());
            }
            Request::Acknowledge { key, seen } => {
                return self
                    .needs
                    .acknowledge(key, *seen, &self.shown_needs, self.clock)
                    .map(|()| {
                        format!(
                            "{} {}",
                            if *seen {
                                "acknowledged"
                            } else {
                                "unacknowledged"
                            },
                            display_text(key)
                        )
                    })
                    .map_err(|error| Refusal {
                        code: needs::AcksError::CODE.to_owned(),
                        message: display_text(&error.to_string()),
                    });
            }
            Request::DecideAgentRequest {
                task_id,
                request_id,
                allow,
            } => return self.decide(task_id, request_id, *allow),
            Request::Explain { task_id } => {
                self.desk.focus_machine(task_id.clone());
                return Ok(task_id.as_ref().map_or_else(
                    || "state machine closed".to_owned(),
                    |task| format!("state machine of task {}", display_text(task)),
                ));
            }
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
