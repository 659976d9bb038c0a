//! Handing a prompt to a terminal agent with proof (RFC 0002: typed text is
//! `dispatch_inserted`, transport only; only an acknowledged, causal submission is delivery).
//!
//! [`submit`] does, in order, and records each step with the screen's content digest:
//! 1. waits until the profile reads the agent idle (debounced) with an empty input line; it
//!    refuses, having typed nothing, when the agent is blocked on a question (an Enter would
//!    answer it), on a set-up screen a rule recognises (`unknown` with a rule: at once), or does
//!    not settle in time;
//! 2. pastes the prompt (`load-buffer` + `paste-buffer -p`), never `send-keys` of its text;
//! 3. reads the pane back and checks the inserted text as the profile says ([`Readback`]):
//!    the *inserted* proof, transport only;
//! 4. checks once more that the agent is idle and not blocked, then presses Enter;
//! 5. waits until the agent leaves idle with its input cleared: only then is the submission
//!    [`Submission::Proven`].
//!
//! It never retries: a paste not seen, or an Enter the agent did not act on, gives
//! [`Submission::Unconfirmed`] with what was done, to be raised to the Leader, never resent
//! (a resend is how peers sent prompts twice, agent-deck #479).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use valp_kernel::canonical::sha256_digest;

use super::pane::{Pane, PaneError};
use crate::agent::classify::{Classification, Debouncer, classify};
use crate::agent::profile::{AgentState, Profile, Readback};
use valp_view::sanitize::display_line;

/// How often the pane is sampled while waiting.
const SAMPLE: Duration = Duration::from_millis(50);

/// One step of a submission, as its proof records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// What was done or seen (`idle, input empty`, `paste-buffer -p`, …).
    pub what: String,
    /// The digest of the screen captured after it.
    pub screen: String,
    /// Milliseconds since the submission began.
    pub at_ms: u64,
}

/// What a submission did, step by step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    /// The digest of the prompt's bytes.
    pub prompt: String,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// How a submission ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submission {
    /// The agent took the prompt: it left idle with its input cleared after Enter.
    Proven(Proof),
    /// Something was typed but delivery is not proven; never to be retried blindly.
    Unconfirmed {
        /// What was done.
        proof: Proof,
        /// Why it is not proven.
        why: String,
    },
}

/// Why nothing was typed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubmitError {
    /// The agent is not ready for a prompt; nothing was typed.
    #[error("not submitted (nothing typed): agent {state}{rule}: {why}")]
    Refused {
        /// The state read.
        state: &'static str,
        /// ` (<rule>)` when a rule matched.
        rule: String,
        /// Why that refuses.
        why: &'static str,
    },
    /// The profile has no input line, so an empty input cannot be checked.
    #[error("not submitted (nothing typed): agent profile {0:?} has no input line")]
    NoInputLine(String),
    /// The prompt could not be staged for tmux.
    #[error("not submitted (nothing typed): writing the prompt file {file}: {why}")]
    Stage {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// tmux failed.
    #[error(transparent)]
    Pane(#[from] PaneError),
}

/// A submission in progress.
struct Run<'a> {
    pane: &'a Pane,
    profile: &'a Profile,
    started: Instant,
    proof: Proof,
}

impl Run<'_> {
    fn sample(&self) -> Result<(Classification, String), PaneError> {
        let screen = self.pane.capture()?;
        Ok((
            classify(self.profile, &screen),
            sha256_digest(screen.as_bytes()),
        ))
    }

    fn record(&mut self, what: &str, screen: String) {
        self.proof.steps.push(Step {
            what: what.to_owned(),
            screen,
            at_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    }

    /// Samples until `done` holds of a reading (`Some`), or `patience` passed (`None`).
    fn wait(
        &self,
        patience: Duration,
        mut done: impl FnMut(&Classification, u64) -> bool,
    ) -> Result<Option<(Classification, String)>, PaneError> {
        let deadline = Instant::now() + patience;
        loop {
            let (read, digest) = self.sample()?;
            let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            if done(&read, now) {
                return Ok(Some((read, digest)));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(SAMPLE);
        }
    }
}

fn refused(read: &Classification, why: &'static str) -> SubmitError {
    SubmitError::Refused {
        state: read.state.name(),
        rule: read
            .rule
            .as_ref()
            .map(|(name, _)| format!(" ({})", display_line(name)))
            .unwrap_or_default(),
        why,
    }
}

/// Whether the input line shows `prompt` as `readback` expects.
fn inserted(readback: Readback, prompt: &str, input: Option<&str>) -> bool {
    match (readback, input) {
        (_, None | Some("")) => false,
        (Readback::Changed, Some(_)) => true,
        (Readback::Echo, Some(input)) => display_line(&prompt.replace('\n', "⏎"))
            .trim_end()
            .ends_with(input),
    }
}

/// Submits `prompt` to the agent in `pane` read with `profile`, staging the prompt's bytes in
/// a file under `scratch` (removed afterwards); each wait lasts at most `patience`.
pub fn submit(
    pane: &Pane,
    profile: &Profile,
    prompt: &str,
    scratch: &Path,
    patience: Duration,
) -> Result<Submission, SubmitError> {
    if profile.input.is_none() {
        return Err(SubmitError::NoInputLine(profile.name.clone()));
    }
    let mut run = Run {
        pane,
        profile,
        started: Instant::now(),
        proof: Proof {
            prompt: sha256_digest(prompt.as_bytes()),
            steps: Vec::new(),
        },
    };
    // 1. Idle (debounced) with an empty input; a question or set-up screen refuses at once.
    let mut debouncer = Debouncer::new(profile.idle_debounce_ms);
    let mut last = None;
    let ready = run.wait(patience, |read, now| {
        last = Some(read.clone());
        let settled = debouncer.sample(read.state, now) == AgentState::Idle;
        settled || matches!(read.state, AgentState::Blocked | AgentState::Exited) || set_up(read)
    })?;
    let Some((read, digest)) = ready else {
        let last = last.unwrap_or_else(unknown_reading);
        return Err(refused(
            &last,
            "the agent did not settle at its prompt in time",
        ));
    };
    ready_for_a_prompt(&read)?;
    run.record("idle, input empty", digest);
    // 2. Paste.
    let file = scratch.join(format!("prompt-{}.txt", std::process::id()));
    std::fs::write(&file, prompt).map_err(|error| SubmitError::Stage {
        file: file.display().to_string(),
        why: error.to_string(),
    })?;
    let buffer = format!("valp-{}", std::process::id());
    let pasted = pane.paste(&buffer, &file);
    let _ = std::fs::remove_file(&file);
    pasted?;
    let (_, digest) = run.sample()?;
    run.record("load-buffer + paste-buffer -p", digest);
    // 3. Read back: the inserted proof (transport only).
    let seen = run.wait(patience, |read, _| {
        read.state != AgentState::Idle || inserted(profile.readback, prompt, read.input.as_deref())
    })?;
    let Some((_, digest)) = seen.filter(|(read, _)| read.state == AgentState::Idle) else {
        return Ok(Submission::Unconfirmed {
            proof: run.proof,
            why: "the pasted text was not seen in the input line; Enter was not pressed".to_owned(),
        });
    };
    run.record(
        &format!("dispatch_inserted ({:?} readback)", profile.readback),
        digest,
    );
    // 4. Enter, only into an idle agent.
    let (read_now, digest) = run.sample()?;
    if read_now.state != AgentState::Idle {
        run.record(&format!("{} before Enter", read_now.state.name()), digest);
        return Ok(Submission::Unconfirmed {
            proof: run.proof,
            why: format!(
                "the agent turned {} after the paste; Enter was not pressed",
                read_now.state.name()
            ),
        });
    }
    pane.press(&["Enter"])?;
    let (_, digest) = run.sample()?;
    run.record("send-keys Enter", digest);
    // 5. The agent leaves idle with its input cleared.
    let taken = run.wait(patience, |read, _| {
        !matches!(read.state, AgentState::Idle | AgentState::Unknown)
            && read.input.as_deref().is_none_or(str::is_empty)
    })?;
    match taken {
        Some((read, digest)) => {
            run.record(
                &format!("{}, input cleared: submitted", read.state.name()),
                digest,
            );
            Ok(Submission::Proven(run.proof))
        }
        None => Ok(Submission::Unconfirmed {
            proof: run.proof,
            why: "the agent did not leave idle with its input cleared after Enter".to_owned(),
        }),
    }
}

/// Refuses, with the reason, a settled reading that is not an idle agent with an empty input.
fn ready_for_a_prompt(read: &Classification) -> Result<(), SubmitError> {
    let why = match read.state {
        AgentState::Blocked => "it waits for an answer; Enter would answer it",
        AgentState::Exited => "it is gone",
        _ if set_up(read) => {
            "it shows a set-up screen (trust, API key, first run) that only the Leader answers"
        }
        _ if read.input.as_deref() != Some("") => {
            "its input line is not empty (someone's draft would merge with the prompt)"
        }
        _ => return Ok(()),
    };
    Err(refused(read, why))
}

/// Whether the screen is a set-up dialog a profile rule recognised (`unknown` with a rule):
/// valp never types into one, and waiting does not make it go away.
fn set_up(read: &Classification) -> bool {
    read.state == AgentState::Unknown && read.rule.is_some()
}

fn unknown_reading() -> Classification {
    Classification {
        state: AgentState::Unknown,
        rule: None,
        input: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readback_echo_needs_the_end_of_the_prompt_and_changed_any_text() {
        let prompt = "first line\nsecond $(x) C-c";
        assert!(inserted(
            Readback::Echo,
            prompt,
            Some("line⏎second $(x) C-c")
        ));
        assert!(!inserted(Readback::Echo, prompt, Some("second $(x) C-")));
        assert!(!inserted(Readback::Echo, prompt, Some("")));
        assert!(!inserted(Readback::Echo, prompt, None));
        assert!(inserted(
            Readback::Changed,
            prompt,
            Some("[Pasted text #1 +2 lines]")
        ));
        assert!(!inserted(Readback::Changed, prompt, Some("")));
    }
}
