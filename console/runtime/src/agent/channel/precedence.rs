//! Which source the runtime believes about an attempt's agent state, and whether a submission
//! was acknowledged.
//!
//! A structured channel (hook, notify, stream) is the agent's own word and outranks the screen
//! rules. But hooks are known to be silent exactly when it matters (Claude's `Stop` does not
//! fire on an API error, a user interrupt or a silent tool stop; Codex's `notify` reports only
//! turn completion), so the channel's word holds only while it is fresh: once the channel has
//! been silent longer than the profile's `channel_silence_ms`, the screen decides again. A
//! session the channel reported ended stays ended. Every [`Viewed`] state names its source.
//!
//! Submission: a `prompt_submitted` signal whose prompt digest equals the digest of the
//! prompt valp pasted is a content-bound acknowledgement (the agent itself says it received
//! exactly those bytes); a `turn_started` after the submission (Codex's stream) is causal only.

use super::signal::{AgentSignal, Channel, SignalKind};
use crate::agent::profile::AgentState;
use crate::clock::Timestamp;

/// The state a signal kind implies, if any (`opaque` and answers imply nothing).
pub const fn implied_state(kind: SignalKind) -> Option<AgentState> {
    match kind {
        SignalKind::SessionStarted
        | SignalKind::IdlePrompt
        | SignalKind::TurnCompleted
        | SignalKind::TurnFailed => Some(AgentState::Idle),
        SignalKind::PromptSubmitted
        | SignalKind::TurnStarted
        | SignalKind::ToolRequested
        | SignalKind::ToolCompleted
        | SignalKind::PermissionAnswered => Some(AgentState::Working),
        SignalKind::PermissionRequested
        | SignalKind::PermissionPrompt
        | SignalKind::Elicitation => Some(AgentState::Blocked),
        SignalKind::SessionEnded => Some(AgentState::Exited),
        SignalKind::Opaque => None,
    }
}

/// Where a state came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A structured channel's signal.
    Channel {
        /// Which channel.
        channel: Channel,
        /// The signal's kind.
        kind: SignalKind,
        /// Its sequence in the attempt.
        sequence: u64,
    },
    /// The screen rules.
    Screen {
        /// The rule that matched, if any.
        rule: Option<String>,
        /// Why the channel did not decide: `None` when the attempt has no channel signal,
        /// else how long it had been silent, in milliseconds.
        channel_silent_ms: Option<i64>,
    },
}

impl Source {
    /// A short label for the console: `claude_hook:prompt_submitted#3`, `screen (working
    /// line; channel silent 31000 ms)`.
    pub fn label(&self) -> String {
        match self {
            Self::Channel {
                channel,
                kind,
                sequence,
            } => format!("{}:{}#{sequence}", channel.as_str(), kind.as_str()),
            Self::Screen {
                rule,
                channel_silent_ms,
            } => {
                let rule = rule.as_deref().unwrap_or("no rule");
                match channel_silent_ms {
                    Some(ms) => format!("screen ({rule}; channel silent {ms} ms)"),
                    None => format!("screen ({rule}; no channel)"),
                }
            }
        }
    }
}

/// A state and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Viewed {
    /// The state.
    pub state: AgentState,
    /// Its source.
    pub source: Source,
}

/// What the screen rules read last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenReading {
    /// The (debounced) state.
    pub state: AgentState,
    /// The rule that matched.
    pub rule: Option<String>,
}

/// The state to believe at `now`, from the attempt's signals (in sequence order) and the
/// latest screen reading, with the profile's `channel_silence_ms`.
pub fn resolve(
    signals: &[AgentSignal],
    screen: Option<&ScreenReading>,
    now: Timestamp,
    channel_silence_ms: u64,
) -> Viewed {
    let latest = signals
        .iter()
        .rev()
        .find_map(|signal| Some((signal, implied_state(signal.kind)?, signal.observed()?)));
    let silent_ms = latest.map(|(_, _, at)| now.millis().saturating_sub(at.millis()));
    if let Some((signal, state, _)) = latest {
        let fresh =
            silent_ms.is_some_and(|ms| ms <= i64::try_from(channel_silence_ms).unwrap_or(i64::MAX));
        if fresh || state == AgentState::Exited || screen.is_none() {
            return Viewed {
                state,
                source: Source::Channel {
                    channel: signal.channel,
                    kind: signal.kind,
                    sequence: signal.sequence,
                },
            };
        }
    }
    let (state, rule) = screen.map_or((AgentState::Unknown, None), |reading| {
        (reading.state, reading.rule.clone())
    });
    Viewed {
        state,
        source: Source::Screen {
            rule,
            channel_silent_ms: silent_ms,
        },
    }
}

/// How a submission was acknowledged by the agent's channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acknowledgement {
    /// The agent reported receiving exactly the pasted bytes (`UserPromptSubmit` with the
    /// prompt's digest).
    ContentBound {
        /// The signal's sequence.
        sequence: u64,
    },
    /// The agent started a turn after the submission (no content to compare).
    Causal {
        /// The signal's sequence.
        sequence: u64,
    },
}

/// The channel's acknowledgement of a prompt with digest `prompt_digest` submitted at
/// `submitted_at`, if the signals hold one. A `prompt_submitted` with another digest is no
/// acknowledgement (another prompt was submitted: the Leader must look), and nothing observed
/// before the submission counts.
pub fn acknowledgement(
    signals: &[AgentSignal],
    prompt_digest: &str,
    submitted_at: Timestamp,
) -> Option<Acknowledgement> {
    let after = signals
        .iter()
        .filter(|signal| signal.observed().is_some_and(|at| at >= submitted_at));
    let mut causal = None;
    for signal in after {
        match signal.kind {
            SignalKind::PromptSubmitted
                if signal.prompt_digest.as_deref() == Some(prompt_digest) =>
            {
                return Some(Acknowledgement::ContentBound {
                    sequence: signal.sequence,
                });
            }
            SignalKind::TurnStarted if causal.is_none() => {
                causal = Some(Acknowledgement::Causal {
                    sequence: signal.sequence,
                });
            }
            _ => {}
        }
    }
    causal
}

/// What an attempt's channels reported spending, summed over its signals; `None` when no
/// signal said (unknown, never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Micro-USD.
    pub cost_micro_usd: Option<u64>,
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
}

impl Usage {
    /// This and `more` together: a figure is known when either said it (unknown, never 0).
    #[must_use]
    pub fn plus(self, more: Self) -> Self {
        let add = |total: Option<u64>, more: Option<u64>| match (total, more) {
            (Some(total), Some(more)) => Some(total.saturating_add(more)),
            (total, more) => total.or(more),
        };
        Self {
            cost_micro_usd: add(self.cost_micro_usd, more.cost_micro_usd),
            input_tokens: add(self.input_tokens, more.input_tokens),
            output_tokens: add(self.output_tokens, more.output_tokens),
        }
    }

    /// Whether no figure is known.
    pub fn is_unknown(&self) -> bool {
        *self == Self::default()
    }

    /// `cost 62346 micro-USD, tokens 1300 in / 252 out`; an unknown figure reads `unknown`.
    pub fn text(&self) -> String {
        let shown =
            |value: Option<u64>| value.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
        format!(
            "cost {} micro-USD, tokens {} in / {} out",
            shown(self.cost_micro_usd),
            shown(self.input_tokens),
            shown(self.output_tokens)
        )
    }
}

/// The sum of what each signal reported (each signal carries what its message said, e.g. one
/// turn's usage).
pub fn usage(signals: &[AgentSignal]) -> Usage {
    signals.iter().fold(Usage::default(), |total, signal| {
        total.plus(Usage {
            cost_micro_usd: signal.cost_micro_usd,
            input_tokens: signal.input_tokens,
            output_tokens: signal.output_tokens,
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use valp_kernel::canonical::sha256_digest;

    use super::*;
    use crate::agent::channel::signal::{AttemptIds, Draft};

    fn at(kind: SignalKind, sequence: u64, millis: i64) -> AgentSignal {
        let mut draft = Draft::new(
            kind,
            Channel::ClaudeHook,
            "claude",
            "E",
            sha256_digest(b"p"),
            "",
        );
        if kind == SignalKind::PromptSubmitted {
            draft.prompt_digest = Some(sha256_digest(b"the prompt"));
        }
        draft.into_signal(
            &AttemptIds {
                task_id: "T".into(),
                work_item_id: "w".into(),
                attempt_id: "a".into(),
            },
            sequence,
            Timestamp::from_millis(millis),
        )
    }

    fn screen(state: AgentState) -> ScreenReading {
        ScreenReading {
            state,
            rule: Some("prompt".into()),
        }
    }

    #[test]
    fn a_fresh_channel_outranks_the_screen() {
        let signals = [at(SignalKind::PromptSubmitted, 1, 1_000)];
        let viewed = resolve(
            &signals,
            Some(&screen(AgentState::Idle)),
            Timestamp::from_millis(2_000),
            30_000,
        );
        assert_eq!(viewed.state, AgentState::Working);
        assert_eq!(viewed.source.label(), "claude_hook:prompt_submitted#1");
    }

    #[test]
    fn a_silent_channel_yields_to_the_screen() {
        // An interrupt: no Stop hook fires, the screen shows the prompt again.
        let signals = [at(SignalKind::PromptSubmitted, 1, 1_000)];
        let viewed = resolve(
            &signals,
            Some(&screen(AgentState::Idle)),
            Timestamp::from_millis(31_001),
            30_000,
        );
        assert_eq!(viewed.state, AgentState::Idle);
        assert_eq!(
            viewed.source.label(),
            "screen (prompt; channel silent 30001 ms)"
        );
        // Exactly at the timeout the channel still holds.
        let viewed = resolve(
            &signals,
            Some(&screen(AgentState::Idle)),
            Timestamp::from_millis(31_000),
            30_000,
        );
        assert_eq!(viewed.state, AgentState::Working);
    }

    #[test]
    fn transitions_follow_the_latest_meaningful_signal() {
        let mut signals = vec![at(SignalKind::SessionStarted, 1, 0)];
        let now = Timestamp::from_millis(10);
        let state = |signals: &[AgentSignal]| resolve(signals, None, now, 1_000).state;
        assert_eq!(state(&signals), AgentState::Idle);
        signals.push(at(SignalKind::PromptSubmitted, 2, 1));
        assert_eq!(state(&signals), AgentState::Working);
        signals.push(at(SignalKind::PermissionRequested, 3, 2));
        assert_eq!(state(&signals), AgentState::Blocked);
        signals.push(at(SignalKind::PermissionAnswered, 4, 3));
        assert_eq!(state(&signals), AgentState::Working);
        signals.push(at(SignalKind::Opaque, 5, 4));
        assert_eq!(
            state(&signals),
            AgentState::Working,
            "opaque changes nothing"
        );
        signals.push(at(SignalKind::TurnCompleted, 6, 5));
        assert_eq!(state(&signals), AgentState::Idle);
        signals.push(at(SignalKind::SessionEnded, 7, 6));
        // An ended session stays ended, however long the channel is silent.
        let viewed = resolve(
            &signals,
            Some(&screen(AgentState::Idle)),
            Timestamp::from_millis(1_000_000),
            1_000,
        );
        assert_eq!(viewed.state, AgentState::Exited);
    }

    #[test]
    fn usage_is_unknown_until_a_signal_says() {
        let mut signals = vec![at(SignalKind::TurnCompleted, 1, 0)];
        assert_eq!(usage(&signals), Usage::default());
        signals[0].cost_micro_usd = Some(0);
        signals.push(at(SignalKind::TurnCompleted, 2, 0));
        signals[1].cost_micro_usd = Some(1500);
        signals[1].output_tokens = Some(40);
        assert_eq!(
            usage(&signals),
            Usage {
                cost_micro_usd: Some(1500),
                input_tokens: None,
                output_tokens: Some(40)
            }
        );
    }

    #[test]
    fn no_channel_means_the_screen() {
        let viewed = resolve(
            &[],
            Some(&screen(AgentState::Blocked)),
            Timestamp::from_millis(0),
            1,
        );
        assert_eq!(viewed.state, AgentState::Blocked);
        assert_eq!(viewed.source.label(), "screen (prompt; no channel)");
        let viewed = resolve(&[], None, Timestamp::from_millis(0), 1);
        assert_eq!(viewed.state, AgentState::Unknown);
    }

    #[test]
    fn submissions_are_acknowledged_by_content_only_when_digests_match() {
        let digest = sha256_digest(b"the prompt");
        let signals = [
            at(SignalKind::PromptSubmitted, 1, 100),
            at(SignalKind::TurnStarted, 2, 600),
            at(SignalKind::PromptSubmitted, 3, 700),
        ];
        assert_eq!(
            acknowledgement(&signals, &digest, Timestamp::from_millis(50)),
            Some(Acknowledgement::ContentBound { sequence: 1 })
        );
        // A submission before ours does not count; a later turn start is causal only,
        // a later matching submission content-bound.
        assert_eq!(
            acknowledgement(&signals, &digest, Timestamp::from_millis(500)),
            Some(Acknowledgement::ContentBound { sequence: 3 })
        );
        assert_eq!(
            acknowledgement(&signals[..2], &digest, Timestamp::from_millis(500)),
            Some(Acknowledgement::Causal { sequence: 2 })
        );
        // Another prompt's digest is no acknowledgement.
        assert_eq!(
            acknowledgement(
                &signals[..1],
                &sha256_digest(b"other"),
                Timestamp::from_millis(50)
            ),
            None
        );
    }
}
