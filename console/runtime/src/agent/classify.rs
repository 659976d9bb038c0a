//! Reading an agent's state from one screen sample, and holding idle back until it lasts.
//!
//! [`classify`] is pure: a captured screen (`capture-pane -p`, with or without `-e`) and a
//! [`Profile`] give the state, the rule that matched and the line it matched on, and the text in
//! the input line. Screen text is untrusted: every line is cleaned as display text (escape
//! sequences removed, controls dropped, bidi and invisible characters escaped) before any
//! pattern sees it, so an agent's output cannot smuggle a sequence into what valp stores or
//! shows, and patterns match what a person sees. The screen's trailing blank lines (tmux pads a
//! pane to its height) are ignored, so `bottom = N` means the last N lines with content.
//!
//! [`Debouncer`] turns samples into the state reported: working, blocked and the rest are
//! believed at once (missing them costs the Leader time), idle only once it held for the
//! profile's `idle_debounce_ms` (agents pause between outputs, and believing a premature idle
//! would submit into or complete a turn that is still running).

use super::profile::{AgentState, Profile, Region};
use valp_view::sanitize::display_line;

/// What a screen shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// The state.
    pub state: AgentState,
    /// The rule that matched and its 1-based line on the screen; `None` when no rule did.
    pub rule: Option<(String, usize)>,
    /// The input line's text (placeholders read as empty); `None` when no input line was seen
    /// or the state is neither idle nor working.
    pub input: Option<String>,
}

/// The screen's lines, cleaned, without the trailing blank ones.
pub fn screen_lines(screen: &str) -> Vec<String> {
    let mut lines: Vec<String> = screen
        .split('\n')
        .map(|line| display_line(line).trim_end().to_owned())
        .collect();
    while lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// The `(index, line)` pairs of `region`.
fn region(lines: &[String], region: Region) -> impl Iterator<Item = (usize, &String)> {
    let (start, end) = match region {
        Region::All => (0, lines.len()),
        Region::Top(count) => (0, count.min(lines.len())),
        Region::Bottom(count) => (lines.len().saturating_sub(count), lines.len()),
    };
    lines.iter().enumerate().take(end).skip(start)
}

/// The state `profile` reads from `screen`.
pub fn classify(profile: &Profile, screen: &str) -> Classification {
    let lines = screen_lines(screen);
    let matched = profile.rules.iter().find_map(|rule| {
        region(&lines, rule.region)
            .find(|(_, line)| rule.pattern.is_match(line))
            .map(|(index, _)| (rule, index + 1))
    });
    let state = matched.map_or(AgentState::Unknown, |(rule, _)| rule.state);
    // Only at or past the prompt is there an input line: a question's options are not input.
    let at_prompt = matches!(state, AgentState::Idle | AgentState::Working);
    let input = profile
        .input
        .as_ref()
        .filter(|_| at_prompt)
        .and_then(|input| {
            region(&lines, input.region)
                .filter_map(|(_, line)| input.pattern.captures(line))
                .last()
                .map(|captures| {
                    let text = captures.name("input").map_or("", |m| m.as_str()).trim();
                    if input.placeholders.iter().any(|shown| shown == text) {
                        String::new()
                    } else {
                        text.to_owned()
                    }
                })
        });
    Classification {
        state,
        rule: matched.map(|(rule, line)| (rule.name.clone(), line)),
        input,
    }
}

/// Reports sampled states, idle only once it held for the debounce delay.
#[derive(Debug, Clone)]
pub struct Debouncer {
    delay_ms: u64,
    reported: AgentState,
    idle_since: Option<u64>,
}

impl Debouncer {
    /// Starts in `starting`, idle believed after `delay_ms`.
    pub fn new(delay_ms: u64) -> Self {
        Self {
            delay_ms,
            reported: AgentState::Starting,
            idle_since: None,
        }
    }

    /// Takes the state sampled at `now` (milliseconds, never decreasing) and returns the state
    /// to report.
    pub fn sample(&mut self, state: AgentState, now: u64) -> AgentState {
        if state == AgentState::Idle {
            let since = *self.idle_since.get_or_insert(now);
            if now.saturating_sub(since) >= self.delay_ms {
                self.reported = AgentState::Idle;
            }
        } else {
            self.idle_since = None;
            self.reported = state;
        }
        self.reported
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::demo::{Ask, DemoAgent, Input};

    fn demo() -> Profile {
        Profile::builtin("demo").unwrap_or_else(|error| unreachable!("{error}"))
    }

    fn state_of(agent: &DemoAgent) -> Classification {
        classify(&demo(), &agent.screen(80, 24).join("\n"))
    }

    #[test]
    fn the_demo_profile_reads_every_demo_phase() {
        let mut agent = DemoAgent::new(3, Ask::Always);
        let idle = state_of(&agent);
        assert_eq!(idle.state, AgentState::Idle);
        assert_eq!(idle.input.as_deref(), Some(""));
        agent.handle(Input::Paste("fix @a.txt".to_owned()), 0);
        assert_eq!(state_of(&agent).input.as_deref(), Some("fix @a.txt"));
        agent.handle(Input::Enter, 0);
        let working = state_of(&agent);
        assert_eq!(working.state, AgentState::Working);
        assert_eq!(working.input.as_deref(), Some(""));
        let mut now = 0;
        while state_of(&agent).state == AgentState::Working {
            now += 100;
            agent.handle(Input::Tick, now);
            assert!(now < 10_000, "the demo never asked");
        }
        let blocked = state_of(&agent);
        assert_eq!(blocked.state, AgentState::Blocked);
        assert_eq!(
            blocked.rule.map(|(name, _)| name).as_deref(),
            Some("permission question")
        );
        assert_eq!(
            blocked.input, None,
            "no input line while a question is open"
        );
    }

    #[test]
    fn escape_sequences_and_bidi_never_reach_the_patterns_or_the_result() {
        let profile = demo();
        let screen = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;title\u{7}\u{1b}[31m│ > evil\u{202e}txt \u{1b}[0m│\n";
        let read = classify(&profile, screen);
        assert_eq!(read.state, AgentState::Idle);
        assert_eq!(read.input.as_deref(), Some("evil\\u{202e}txt"));
        assert_eq!(
            screen_lines("a\u{1b}[2J\u{9b}1mb\n\n\n"),
            ["ab".to_owned()],
            "CSI (7- and 8-bit) removed, trailing blank lines dropped"
        );
    }

    #[test]
    fn no_rule_is_unknown_and_regions_bound_where_rules_look() {
        let profile = demo();
        let read = classify(&profile, "hello\nworld\n");
        assert_eq!(read.state, AgentState::Unknown);
        assert_eq!(read.rule, None);
        assert_eq!(read.input, None);
        // A question scrolled far above the bottom region is history, not a question.
        let mut screen = vec!["│ Allow demo-agent to write a.txt? │"];
        screen.extend(["x"; 30]);
        screen.push("│ > │");
        assert_eq!(
            classify(&profile, &screen.join("\n")).state,
            AgentState::Idle
        );
    }

    #[test]
    fn idle_is_believed_only_after_the_debounce_delay() {
        let mut debouncer = Debouncer::new(500);
        assert_eq!(debouncer.sample(AgentState::Idle, 0), AgentState::Starting);
        assert_eq!(
            debouncer.sample(AgentState::Idle, 499),
            AgentState::Starting
        );
        assert_eq!(debouncer.sample(AgentState::Idle, 500), AgentState::Idle);
        assert_eq!(
            debouncer.sample(AgentState::Working, 600),
            AgentState::Working
        );
        // A pause between outputs shorter than the delay is no idle.
        assert_eq!(debouncer.sample(AgentState::Idle, 700), AgentState::Working);
        assert_eq!(
            debouncer.sample(AgentState::Working, 1_100),
            AgentState::Working
        );
        assert_eq!(
            debouncer.sample(AgentState::Idle, 1_200),
            AgentState::Working
        );
        assert_eq!(
            debouncer.sample(AgentState::Blocked, 1_300),
            AgentState::Blocked
        );
        assert_eq!(
            debouncer.sample(AgentState::Idle, 1_400),
            AgentState::Blocked
        );
        assert_eq!(debouncer.sample(AgentState::Idle, 1_900), AgentState::Idle);
    }
}
