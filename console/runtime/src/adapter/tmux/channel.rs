//! The tmux supervisor's hook-in to the agent's structured channel ([`crate::agent::channel`]):
//! the signals the agent's hooks appended to the inbox for this attempt, weighed against the
//! screen by [`precedence::resolve`], and the channel's acknowledgement of the submission.
//!
//! The supervisor finds the attempt's signal file through the environment it gave the agent
//! (`VALP_CONTROL_ROOT`, `VALP_ATTEMPT_ID`), never through the payloads. The file is re-read
//! only when its size changed (a `stat` per tick otherwise), and only signals observed since the
//! submission began count for the turn: a `SessionStart` before the prompt says nothing about
//! the turn the prompt started.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::agent::channel::inbox;
use crate::agent::channel::precedence::{self, Acknowledgement, ScreenReading, Source, Viewed};
use crate::agent::channel::signal::AgentSignal;
use crate::clock::{Clock as _, SystemClock, Timestamp};

/// How long the supervisor waits, after a submission the screen judged, for a live channel's
/// acknowledgement (hooks run synchronously at Enter: it is normally there already).
const ACK_PATIENCE: Duration = Duration::from_secs(2);

/// The attempt's channel as the supervisor reads it.
#[derive(Debug)]
pub(super) struct Channel {
    control_root: PathBuf,
    attempt_id: String,
    /// The signal file's size when last read.
    size: Option<u64>,
    /// Every valid signal of the attempt, in sequence order.
    signals: Vec<AgentSignal>,
    /// Signals before this time do not count for the turn (the submission's start).
    since: Timestamp,
}

impl Channel {
    /// The channel of the attempt the agent's environment names (`None` without it).
    pub(super) fn new(env: &std::collections::BTreeMap<String, String>) -> Option<Self> {
        let root = env.get("VALP_CONTROL_ROOT")?;
        let attempt_id = env.get("VALP_ATTEMPT_ID")?;
        Some(Self {
            control_root: PathBuf::from(root),
            attempt_id: attempt_id.clone(),
            size: None,
            signals: Vec::new(),
            since: SystemClock.now(),
        })
    }

    /// Marks the start of the submission: earlier signals no longer decide the turn's state.
    pub(super) fn submitting(&mut self) {
        self.since = SystemClock.now();
    }

    /// Re-reads the signal file if it changed.
    fn refresh(&mut self) {
        let path = self.control_root.join(inbox::signal_file(&self.attempt_id));
        let size = std::fs::metadata(&path).ok().map(|meta| meta.len());
        if size == self.size {
            return;
        }
        if let Ok(signals) = inbox::read(&self.control_root, &self.attempt_id) {
            self.signals = signals;
            self.size = size;
        }
    }

    /// The state to believe now: the channel's while fresh, else the (debounced) screen's.
    /// Only signals from the first one observed since the submission began count.
    pub(super) fn view(&mut self, screen: &ScreenReading, silence_ms: u64) -> Viewed {
        self.refresh();
        let first = self
            .signals
            .iter()
            .position(|signal| signal.observed().is_some_and(|at| at >= self.since))
            .unwrap_or(self.signals.len());
        precedence::resolve(
            &self.signals[first..],
            Some(screen),
            SystemClock.now(),
            silence_ms,
        )
    }

    /// The channel's acknowledgement of the prompt with `prompt_digest`: whether it is
    /// content-bound, and a line for the submission proof. Waits up to [`ACK_PATIENCE`] for a
    /// content-bound one when the channel is live (the attempt has signals), not at all
    /// otherwise; a causal one is taken when nothing better came.
    pub(super) fn acknowledged(&mut self, prompt_digest: &str) -> Option<(bool, String)> {
        let deadline = Instant::now() + ACK_PATIENCE;
        loop {
            self.refresh();
            let ack = precedence::acknowledgement(&self.signals, prompt_digest, self.since);
            let bound = matches!(ack, Some(Acknowledgement::ContentBound { .. }));
            if let Some(ack) = ack.filter(|_| bound || Instant::now() >= deadline) {
                return Some((bound, self.describe(&ack)));
            }
            if self.signals.is_empty() || Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn describe(&self, ack: &Acknowledgement) -> String {
        let (sequence, how) = match ack {
            Acknowledgement::ContentBound { sequence } => (*sequence, "content-bound"),
            Acknowledgement::Causal { sequence } => (*sequence, "causal"),
        };
        let signal = self
            .signals
            .iter()
            .find(|signal| signal.sequence == sequence);
        let label = signal.map_or_else(String::new, |signal| {
            Source::Channel {
                channel: signal.channel,
                kind: signal.kind,
                sequence,
            }
            .label()
        });
        let id = signal.map_or("", |signal| signal.signal_id.as_str());
        format!("{label} ({how}; signal {id})")
    }
}

/// The viewed state when the agent has no channel: the screen's, labelled as such.
pub(super) fn screen_only(screen: &ScreenReading) -> Viewed {
    precedence::resolve(&[], Some(screen), SystemClock.now(), 0)
}
