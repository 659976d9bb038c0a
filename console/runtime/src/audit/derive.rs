//! A control-root task's correction cycle, derived from its journal (seed 003): a pure function
//! from the task's accepted history, one [`Fact`] per journal line, to the
//! `valp-correction-cycle.v1` document, or `None` when the history holds no correction signal.
//!
//! Which journal fact shows which seed signal (the trigger a round gets):
//! - `attempt_fenced` (how the System ends an attempt that failed, timed out or whose runtime
//!   was lost: the workflow fences it before retrying or blocking its item), `attempt_failed`,
//!   `work_item_failed`, `attempt_cancelled` with reason `runtime_failed`: `runtime_failed` (the
//!   journal does not tell a timeout or a lost runtime from a failure, so none is
//!   `runtime_timeout`);
//! - `work_item_blocked`, `task_blocked`: `dispatch_blocked`;
//! - `verification_failed`: `verification_failed`;
//! - `review_rejected`: `review_finding` (the journal carries no severity, so every rejection
//!   counts);
//! - `approval_denied`: `approval_blocked`;
//! - `redirect_authorized` superseding work items: `evidence_superseded`.
//!
//! A round moves to `fixing` on the next `attempt_created` of its work item (the System's or the
//! Leader's `valp retry`: both name the next attempt generation), `fix_dispatch_requested` or
//! `blocked_recovery_to_fixing`; it is `fixed` by the next `attempt_completed` of its work item or
//! a task-level pass (`verification_passed`, `review_passed`, `recording_completed`); an end of
//! the task first leaves it `blocked` (`task_failed`) or `cancelled` (`task_cancelled`).
//! Times are the journal lines' `recorded_at`; a line without one gives `null`, never a made-up
//! time. Evidence lives in the root's content-addressed store, not the task folder, so the only
//! task-relative ref is the journal itself, which binds the evidence ids of every accepted event.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use serde::Serialize;
use valp_kernel::done::correction::signal_of;
use valp_kernel::model::{EventKind, IdentityKind};
use valp_kernel::replay::CompactEntry;
use valp_store::clock::Timestamp;
use valp_store::journal::{JOURNAL_FILE, Recorded};

use super::correction::SCHEMA_VERSION;

/// The owner written when the attempt's adapter is not known.
const UNKNOWN_OWNER: &str = "unknown";

/// One journal line, as the derivation reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// The revision the line produced.
    pub revision: u64,
    /// When the store wrote the line (RFC 3339); `None` before layout 3.
    pub recorded_at: Option<String>,
    /// The event kind.
    pub kind: String,
    /// The work item the event names.
    pub work_item: Option<String>,
    /// The attempt the event names.
    pub attempt: Option<String>,
    /// The control reason of an authority-bound event.
    pub control_reason: Option<String>,
    /// The work items a redirect supersedes.
    pub superseded: Vec<String>,
}

impl Fact {
    /// The fact of one recorded task-journal line.
    pub fn of(recorded: &Recorded<CompactEntry>) -> Self {
        Self::of_entry(recorded.seq, recorded.recorded_at, &recorded.entry)
    }

    /// The fact of the task-journal line `seq`, written at `recorded_at`, holding `entry`.
    pub fn of_entry(seq: u64, recorded_at: Option<Timestamp>, entry: &CompactEntry) -> Self {
        Self::of_event(seq, recorded_at, &entry.event)
    }

    /// The fact of the task-journal line `seq`, written at `recorded_at`, whose entry records
    /// `event` (all a fact reads of an entry).
    pub fn of_event(seq: u64, recorded_at: Option<Timestamp>, event: &valp_kernel::Event) -> Self {
        Self {
            revision: seq,
            recorded_at: recorded_at.map(Timestamp::to_rfc3339),
            kind: event.kind.as_str().to_owned(),
            work_item: event.work_item_id.as_ref().map(|id| id.value().to_owned()),
            attempt: event.attempt_id.as_ref().map(|id| id.value().to_owned()),
            control_reason: event.control_reason.as_ref().map(|r| r.as_str().to_owned()),
            superseded: event
                .superseded_work_item_ids
                .iter()
                .filter(|id| id.is(IdentityKind::WorkItem))
                .map(|id| id.value().to_owned())
                .collect(),
        }
    }
}

/// One round of the cycle (the schema's `round`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Round {
    /// 1-based.
    pub round: u64,
    /// The signal that opened it.
    pub trigger: String,
    /// The adapter of the work item's attempt, or `unknown`.
    pub owner: String,
    /// `open`, `fixing`, `fixed`, `blocked` or `cancelled`.
    pub status: &'static str,
    /// The opening line's `recorded_at`.
    pub started_at: Option<String>,
    /// The closing line's `recorded_at`, once closed.
    pub ended_at: Option<String>,
    /// What happened, naming the journal revision.
    pub reason: String,
    /// Refs of rejected artifacts (none: rejected attempts' output is not in the task folder).
    pub rejected_refs: Vec<String>,
    /// What the fix took, in order.
    pub required_actions: Vec<String>,
    /// Refs proving the fix.
    pub evidence_refs: Vec<String>,
    /// Refs of the records that show the round.
    pub receipt_refs: Vec<String>,
    /// The work item it concerns (`None`: the task as a whole); not written.
    #[serde(skip)]
    pub work_item: Option<String>,
}

/// The derived `correction-cycle.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cycle {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: &'static str,
    /// The task.
    pub task_id: String,
    /// Where the cycle stands.
    pub status: &'static str,
    /// The rounds, oldest first.
    pub rounds: Vec<Round>,
    /// Equal to `status`: the outcome so far.
    pub final_outcome: &'static str,
    /// The evidence proving the result once fixed.
    pub final_evidence_refs: Vec<String>,
}

impl Round {
    /// Whether the round is not yet `fixed`, `blocked` or `cancelled`.
    pub fn is_open(&self) -> bool {
        matches!(self.status, "open" | "fixing")
    }
}

impl Cycle {
    /// Rounds not yet `fixed`, `blocked` or `cancelled`.
    pub fn open_rounds(&self) -> usize {
        self.rounds.iter().filter(|round| round.is_open()).count()
    }
}

/// The seed signal a fact shows, if any (the kernel's map, which the Done gate also reads).
fn trigger(fact: &Fact) -> Option<&'static str> {
    signal_of_kind(
        &fact.kind,
        fact.control_reason.as_deref(),
        !fact.superseded.is_empty(),
    )
}

/// The seed signal of an event of kind `kind` (its wire name) with `control_reason`, that
/// `supersedes` work items or not.
fn signal_of_kind(
    kind: &str,
    control_reason: Option<&str>,
    supersedes: bool,
) -> Option<&'static str> {
    signal_of(EventKind::from_wire(kind)?, control_reason, supersedes)
}

/// What a fact that is no signal does to the rounds it concerns.
enum Change {
    /// They move to `fixing` (an attempt, a fix dispatched, a recovery to fixing).
    Fixing,
    /// They are `fixed`: every live round when `task_level`, else those of the fact's item.
    Fixed { task_level: bool },
    /// Every live round ends with this status (the task failed or was cancelled).
    Ended(&'static str),
}

/// The change a fact of kind `kind` that is no signal makes, if any.
fn change_of(kind: &str) -> Option<Change> {
    Some(match kind {
        "attempt_created" | "fix_dispatch_requested" | "blocked_recovery_to_fixing" => {
            Change::Fixing
        }
        "attempt_completed" => Change::Fixed { task_level: false },
        "verification_passed" | "review_passed" | "recording_completed" => {
            Change::Fixed { task_level: true }
        }
        "task_failed" => Change::Ended("blocked"),
        "task_cancelled" => Change::Ended("cancelled"),
        _ => return None,
    })
}

/// Derives the cycle of `task_id` from its history; `owners` maps a work item to its adapter.
/// `None` when no fact is a correction signal (the seed lets such a task omit the file).
pub fn derive(task_id: &str, facts: &[Fact], owners: &BTreeMap<String, String>) -> Option<Cycle> {
    let mut deriver = Deriver::default();
    for fact in facts {
        deriver.push(fact);
    }
    deriver.finish(task_id, owners)
}

/// [`derive`] one fact at a time, so a journal can be folded as it is read without holding
/// a fact per entry. Its state can be written down and resumed ([`Deriver::rounds`],
/// [`Deriver::opened`], [`Deriver::unfixed`], [`Deriver::resume`]); owners are named only by
/// [`Deriver::finish`]. A fold may also hold only some of its rounds ([`Deriver::kept`]: the
/// open ones and the newest): it then still folds on exactly, knows how many rounds there are
/// and the outcome ([`Deriver::summary`]), but has no [`Cycle`] to give.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deriver {
    /// The rounds held, in round order: every round, or those [`Deriver::kept`] kept. Owners
    /// are `unknown` here.
    rounds: Vec<Round>,
    /// The rounds still `open` or `fixing`, oldest first: a fact only ever changes those, and
    /// a long history holds thousands of closed rounds, so walking every round for every fact
    /// made a derivation quadratic in the task's length. Always the indexes of the open rounds,
    /// in order (rounds are only appended, and a closed round never reopens).
    live: Vec<usize>,
    /// Rounds opened so far.
    opened: u64,
    /// The newest round that ended `blocked` or `cancelled` (its number and status).
    unfixed: Option<(u64, &'static str)>,
}

/// Where a fold's cycle stands, without its rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The cycle's outcome so far (`None`: no correction signal).
    pub outcome: Option<&'static str>,
    /// Rounds opened.
    pub rounds: u64,
    /// Rounds still `open` or `fixing`.
    pub open: usize,
}

impl Deriver {
    /// No fact yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Continues a fold that held `rounds` (in round order) of the `opened` rounds, the newest
    /// that ended blocked or cancelled being `unfixed`; why not, when these do not fit together.
    pub fn resume(
        rounds: Vec<Round>,
        opened: u64,
        unfixed: Option<(u64, &'static str)>,
    ) -> Result<Self, String> {
        let ordered = rounds.windows(2).all(|pair| pair[0].round < pair[1].round);
        if !ordered || rounds.last().is_some_and(|round| round.round > opened) {
            return Err(format!(
                "rounds must be numbered in increasing order up to {opened}"
            ));
        }
        if unfixed.is_some_and(|(round, status)| {
            round > opened || round == 0 || !matches!(status, "blocked" | "cancelled")
        }) {
            return Err("unfixed must name a round that ended blocked or cancelled".to_owned());
        }
        Ok(Self {
            live: live_of(&rounds),
            rounds,
            opened,
            unfixed,
        })
    }

    /// The rounds held, in round order, owners `unknown`.
    pub fn rounds(&self) -> &[Round] {
        &self.rounds
    }

    /// Rounds opened so far.
    pub fn opened(&self) -> u64 {
        self.opened
    }

    /// The newest round that ended `blocked` or `cancelled`: its number and status.
    pub fn unfixed(&self) -> Option<(u64, &'static str)> {
        self.unfixed
    }

    /// Whether every round is held (then [`Deriver::finish`] gives the cycle).
    pub fn complete(&self) -> bool {
        self.rounds.len() as u64 == self.opened
    }

    /// The same fold holding only the open rounds and the newest `newest` rounds.
    #[must_use]
    pub fn kept(&self, newest: u64) -> Self {
        let rounds: Vec<Round> = self
            .rounds
            .iter()
            .filter(|round| self.keeps(round, newest))
            .cloned()
            .collect();
        Self {
            live: live_of(&rounds),
            rounds,
            ..*self
        }
    }

    /// Drops, in place, every round [`Deriver::kept`] would not keep (no copy of the rounds
    /// kept: what a long fold trims with as it goes).
    pub fn keep(&mut self, newest: u64) {
        let mut rounds = std::mem::take(&mut self.rounds);
        rounds.retain(|round| self.keeps(round, newest));
        self.live = live_of(&rounds);
        self.rounds = rounds;
    }

    /// Whether [`Deriver::kept`] keeps `round`: it is open or among the newest `newest`.
    fn keeps(&self, round: &Round, newest: u64) -> bool {
        round.is_open() || round.round + newest > self.opened
    }

    /// Where the cycle stands: the outcome is the status of the newest round not `fixed`
    /// (`fixed` when there is none).
    pub fn summary(&self) -> Summary {
        let newest_open = self.live.last().map(|&index| &self.rounds[index]);
        let outcome = match (newest_open, self.unfixed) {
            _ if self.opened == 0 => None,
            (Some(open), Some((round, status))) if round > open.round => Some(status),
            (Some(open), _) => Some(open.status),
            (None, Some((_, status))) => Some(status),
            (None, None) => Some("fixed"),
        };
        Summary {
            outcome,
            rounds: self.opened,
            open: self.live.len(),
        }
    }

    /// Folds in the line `seq`, written at `recorded_at`, recording `event`: what
    /// [`Deriver::push`] of its [`Fact`] does, without making the fact when folding it in would
    /// change nothing (most lines: no signal, and no round open that it could move).
    pub fn push_event(
        &mut self,
        seq: u64,
        recorded_at: Option<Timestamp>,
        event: &valp_kernel::Event,
    ) {
        let kind = event.kind.as_str();
        let signal = || {
            signal_of_kind(
                kind,
                event
                    .control_reason
                    .as_ref()
                    .map(valp_kernel::Open::<valp_kernel::ControlReason>::as_str),
                event
                    .superseded_work_item_ids
                    .iter()
                    .any(|id| id.is(IdentityKind::WorkItem)),
            )
        };
        let moves = !self.live.is_empty() && change_of(kind).is_some();
        if moves || signal().is_some() {
            // The time is written only if a round opens or closes: most facts only move a
            // round to `fixing`, and formatting it was ~3 K instructions per line of a verify.
            let fact = Fact::of_event(seq, None, event);
            self.fold(&fact, &|| recorded_at.map(Timestamp::to_rfc3339));
        }
    }

    /// Folds the next fact of the history in.
    pub fn push(&mut self, fact: &Fact) {
        self.fold(fact, &|| fact.recorded_at.clone());
    }

    /// [`Deriver::push`] of `fact`, whose `recorded_at` is what `at` gives (the fact's own
    /// is not read; `at` is asked once at most, however many rounds the fact ends).
    fn fold(&mut self, fact: &Fact, at: &dyn Fn() -> Option<String>) {
        let written = OnceCell::new();
        self.apply(fact, &|| written.get_or_init(at).clone());
        let (rounds, unfixed) = (&self.rounds, &mut self.unfixed);
        self.live.retain(|&index| {
            let round = &rounds[index];
            let ended = matches!(round.status, "blocked" | "cancelled");
            if ended && unfixed.is_none_or(|(newest, _)| newest < round.round) {
                *unfixed = Some((round.round, round.status));
            }
            round.is_open()
        });
    }

    fn apply(&mut self, fact: &Fact, at: &dyn Fn() -> Option<String>) {
        let concerns = |round: &Round| {
            round.work_item.is_none()
                || fact.work_item.is_none()
                || round.work_item == fact.work_item
        };
        if let Some(trigger) = trigger(fact) {
            let scope = fact.work_item.clone();
            // A signal that follows from an open round (the item blocked after its attempt
            // failed, the task blocked after its item) is part of that round, not a new one.
            let already = self.live.iter().any(|&index| {
                let round = &self.rounds[index];
                round.status == "open" && (scope.is_none() || round.work_item == scope)
            });
            if !already {
                self.opened += 1;
                self.live.push(self.rounds.len());
                self.rounds.push(opened(self.opened, trigger, fact, at()));
            }
            return;
        }
        let mut each_live = |change: &mut dyn FnMut(&mut Round)| {
            for &index in &self.live {
                change(&mut self.rounds[index]);
            }
        };
        match change_of(&fact.kind) {
            Some(Change::Fixing) => {
                // The same text for every round it concerns: written once.
                let mut text = None;
                each_live(&mut |round| {
                    if concerns(round) {
                        round.status = "fixing";
                        let text: &String = text.get_or_insert_with(|| action(fact));
                        round.required_actions.push(text.clone());
                    }
                });
            }
            Some(Change::Fixed { task_level }) => {
                each_live(&mut |round| {
                    if task_level || concerns(round) {
                        round.status = "fixed";
                        round.ended_at = at();
                        round.evidence_refs = vec![JOURNAL_FILE.to_owned()];
                    }
                });
            }
            Some(Change::Ended(end)) => {
                each_live(&mut |round| {
                    round.status = end;
                    round.ended_at = at();
                });
            }
            None => {}
        }
    }

    /// The cycle of `task_id` after every fact pushed, each round's owner the adapter `owners`
    /// maps its work item to (or `unknown`); `None` without a correction signal, or when the
    /// fold does not hold every round ([`Deriver::complete`]).
    pub fn finish(&self, task_id: &str, owners: &BTreeMap<String, String>) -> Option<Cycle> {
        let status = self.summary().outcome?;
        if !self.complete() {
            return None;
        }
        let rounds = self
            .rounds
            .iter()
            .map(|round| named(round, owners))
            .collect();
        Some(Cycle {
            schema_version: SCHEMA_VERSION,
            task_id: task_id.to_owned(),
            status,
            rounds,
            final_outcome: status,
            final_evidence_refs: if status == "fixed" {
                vec![JOURNAL_FILE.to_owned()]
            } else {
                Vec::new()
            },
        })
    }
}

/// The indexes of the open rounds of `rounds`, in order.
fn live_of(rounds: &[Round]) -> Vec<usize> {
    (0..rounds.len())
        .filter(|&index| rounds[index].is_open())
        .collect()
}

/// `round` with its owner: the adapter `owners` maps its work item to, or `unknown`.
pub fn named(round: &Round, owners: &BTreeMap<String, String>) -> Round {
    Round {
        owner: round
            .work_item
            .as_ref()
            .and_then(|item| owners.get(item))
            .map_or(UNKNOWN_OWNER, String::as_str)
            .to_owned(),
        ..round.clone()
    }
}

/// Round `number`, opened by `fact` (written at `started_at`) with `trigger`.
fn opened(number: u64, trigger: &str, fact: &Fact, started_at: Option<String>) -> Round {
    Round {
        round: number,
        trigger: trigger.to_owned(),
        owner: UNKNOWN_OWNER.to_owned(),
        status: "open",
        started_at,
        ended_at: None,
        reason: describe(fact),
        rejected_refs: Vec::new(),
        required_actions: Vec::new(),
        evidence_refs: Vec::new(),
        receipt_refs: vec![JOURNAL_FILE.to_owned()],
        work_item: fact.work_item.clone(),
    }
}

/// `kind at revision N (work item W, attempt A, superseding X, Y)`.
fn describe(fact: &Fact) -> String {
    let mut parts = Vec::new();
    if let Some(item) = &fact.work_item {
        parts.push(format!("work item {item}"));
    }
    if let Some(attempt) = &fact.attempt {
        parts.push(format!("attempt {attempt}"));
    }
    if let Some(reason) = &fact.control_reason {
        parts.push(format!("reason {reason}"));
    }
    if !fact.superseded.is_empty() {
        parts.push(format!("superseding {}", fact.superseded.join(", ")));
    }
    let head = format!("{} at revision {}", fact.kind, fact.revision);
    if parts.is_empty() {
        head
    } else {
        format!("{head} ({})", parts.join(", "))
    }
}

fn action(fact: &Fact) -> String {
    match &fact.attempt {
        Some(attempt) => format!("{} {attempt} at revision {}", fact.kind, fact.revision),
        None => describe(fact),
    }
}

/// The canonical bytes of `cycle` (sorted keys, no whitespace, a final newline).
pub fn canonical_bytes(cycle: &Cycle) -> Result<Vec<u8>, serde_json::Error> {
    // serde_json's Map sorts keys (the workspace does not enable preserve_order).
    let value = serde_json::to_value(cycle)?;
    let mut bytes = serde_json::to_vec(&value)?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests;
