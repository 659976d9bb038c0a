//! Agent profiles: what a terminal coding agent's screen looks like in each state, as data
//! (`console/assets/agents/<name>.toml`, schema `schemas/console/agent-profile.schema.json`).
//!
//! A profile names the agent's process names (for the Doctor's labels), the keys that
//! interrupt a turn and exit the agent, how long idle must hold before it is believed
//! (`idle_debounce_ms`: agents pause between outputs, and a premature idle is the failure peers
//! are known for), where the input line is and which texts in it mean "empty" (placeholders),
//! and the screen rules: a regular expression matched against each line of a screen region,
//! with the state it means and a priority (the highest matching rule wins; ties go to the rule
//! written first). Agent UIs change: a profile is a file a user can tune and check with
//! `valp agent classify`, not code. Loading is fail-closed: every malformed profile is refused
//! with the file and the reason.

use regex::Regex;
use serde::Deserialize;

/// The `schema_version` every profile carries.
pub const PROFILE_VERSION: &str = "valp-agent-profile.v1";

/// The built-in profiles, by name.
const BUILTIN: &[(&str, &str)] = &[
    ("aider", include_str!("../../../assets/agents/aider.toml")),
    ("claude", include_str!("../../../assets/agents/claude.toml")),
    ("codex", include_str!("../../../assets/agents/codex.toml")),
    ("demo", include_str!("../../../assets/agents/demo.toml")),
    ("gemini", include_str!("../../../assets/agents/gemini.toml")),
    (
        "generic",
        include_str!("../../../assets/agents/generic.toml"),
    ),
];

/// Keys a profile may ask to press (tmux key names).
pub const KEYS: &[&str] = &["Escape", "C-c", "C-d", "C-\\", "Enter"];

/// What an agent is doing, as its screen shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Not yet at its prompt.
    Starting,
    /// Working on a turn.
    Working,
    /// At its prompt, waiting for input.
    Idle,
    /// Waiting for an answer (a permission question).
    Blocked,
    /// Gone.
    Exited,
    /// Not recognised, or a set-up screen valp must not type into.
    Unknown,
}

impl AgentState {
    /// The state's name, as profiles and output spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Working => "working",
            Self::Idle => "idle",
            Self::Blocked => "blocked",
            Self::Exited => "exited",
            Self::Unknown => "unknown",
        }
    }
}

/// Which lines of the screen a pattern is matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// Every line.
    All,
    /// The first `n` lines.
    Top(usize),
    /// The last `n` non-blank-trailing lines.
    Bottom(usize),
}

/// One screen rule.
#[derive(Debug, Clone)]
pub struct Rule {
    /// What the rule recognises (shown as the reason of a state).
    pub name: String,
    /// The state it means.
    pub state: AgentState,
    /// Matched against each line of the region (escape sequences removed).
    pub pattern: Regex,
    /// Where.
    pub region: Region,
    /// Higher wins.
    pub priority: i32,
}

/// Where the input line is.
#[derive(Debug, Clone)]
pub struct InputLine {
    /// Has a named group `input`: the text typed so far.
    pub pattern: Regex,
    /// Where.
    pub region: Region,
    /// Texts shown in an empty input.
    pub placeholders: Vec<String>,
}

/// How a submission checks that a pasted prompt landed in the input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Readback {
    /// The input line shows the end of the prompt as typed (line breaks shown as `⏎`, as
    /// display text): the demo agent echoes every byte.
    Echo,
    /// The input line is no longer empty (real CLIs show a placeholder such as `[Pasted text
    /// #1 +40 lines]` for a long paste, so the text itself cannot be compared).
    Changed,
}

/// How the tmux adapter connects a started agent's hooks to valp (`launch_hooks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaunchHooks {
    /// Nothing: the agent starts with the command line the plan gave (the default).
    #[default]
    None,
    /// A Claude Code settings file of the attempt's own (`--settings FILE`) whose hooks call
    /// `valp hook claude` for the attempt (see [`crate::adapter::tmux::launch`]).
    ClaudeSettings,
}

/// A loaded, checked profile.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Its name.
    pub name: String,
    /// What it is for (free text from the file).
    pub description: String,
    /// Process names the Doctor labels as this agent.
    pub process_names: Vec<String>,
    /// How long idle must hold before it is reported, in milliseconds.
    pub idle_debounce_ms: u64,
    /// How long a structured channel (hooks, notify, stream) may stay silent before the screen
    /// rules decide the state again, in milliseconds (see [`crate::agent::channel::precedence`]).
    pub channel_silence_ms: u64,
    /// How a started agent's hooks reach valp.
    pub launch_hooks: LaunchHooks,
    /// Keys that stop a turn.
    pub interrupt_keys: Vec<String>,
    /// Keys that exit the agent.
    pub exit_keys: Vec<String>,
    /// The input line, if the profile knows it (without it valp never submits to the agent).
    pub input: Option<InputLine>,
    /// How a pasted prompt is checked.
    pub readback: Readback,
    /// The rules, highest priority first (ties in file order).
    pub rules: Vec<Rule>,
}

/// Why a profile was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProfileError {
    /// Not a profile at all, or a field is missing, unknown or of the wrong type.
    #[error("{file}: {message}")]
    Toml {
        /// The profile file.
        file: String,
        /// The parser's complaint (with line and column).
        message: String,
    },
    /// Another schema version.
    #[error("{file}: schema_version is {found:?}, expected {PROFILE_VERSION:?}")]
    Version {
        /// The profile file.
        file: String,
        /// What it says.
        found: String,
    },
    /// A pattern that is not a regular expression.
    #[error("{file}: rule {rule:?}: pattern does not compile: {message}")]
    Pattern {
        /// The profile file.
        file: String,
        /// The rule (`input` for the input line).
        rule: String,
        /// The regex parser's complaint.
        message: String,
    },
    /// An input pattern without the `input` group.
    #[error("{file}: input pattern has no named group `input`")]
    InputGroup {
        /// The profile file.
        file: String,
    },
    /// Both `top` and `bottom`, or a zero-line region.
    #[error("{file}: rule {rule:?}: give at most one of top and bottom, and more than 0 lines")]
    Region {
        /// The profile file.
        file: String,
        /// The rule.
        rule: String,
    },
    /// No rules.
    #[error("{file}: a profile needs at least one rule")]
    NoRules {
        /// The profile file.
        file: String,
    },
    /// Two rules with one name (the name is the reason shown: it must say which rule).
    #[error("{file}: two rules are named {rule:?}")]
    DuplicateRule {
        /// The profile file.
        file: String,
        /// The name.
        rule: String,
    },
    /// A key tmux would not press as one key.
    #[error("{file}: key {key:?} is not one of {KEYS:?}")]
    Key {
        /// The profile file.
        file: String,
        /// The key.
        key: String,
    },
    /// `--agent` named no built-in profile.
    #[error("no built-in agent profile {0:?} (known: aider, claude, codex, demo, gemini, generic)")]
    Unknown(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    schema_version: String,
    name: String,
    #[serde(default)]
    description: String,
    process_names: Vec<String>,
    idle_debounce_ms: u64,
    #[serde(default = "channel_silence")]
    channel_silence_ms: u64,
    #[serde(default)]
    launch_hooks: LaunchHooks,
    interrupt_keys: Vec<String>,
    exit_keys: Vec<String>,
    input: Option<InputFile>,
    #[serde(default = "changed")]
    readback: Readback,
    rules: Vec<RuleFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputFile {
    pattern: String,
    top: Option<usize>,
    bottom: Option<usize>,
    #[serde(default)]
    placeholders: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    name: String,
    state: AgentState,
    pattern: String,
    top: Option<usize>,
    bottom: Option<usize>,
    #[serde(default)]
    priority: i32,
}

impl Profile {
    /// The built-in profile `name`.
    pub fn builtin(name: &str) -> Result<Self, ProfileError> {
        let (_, text) = BUILTIN
            .iter()
            .find(|(known, _)| *known == name)
            .ok_or_else(|| ProfileError::Unknown(name.to_owned()))?;
        Self::parse(text, &format!("console/assets/agents/{name}.toml"))
    }

    /// Every built-in profile's name and text.
    pub fn builtin_texts() -> &'static [(&'static str, &'static str)] {
        BUILTIN
    }

    /// Parses and checks the profile `text`, read from `file` (named in errors).
    pub fn parse(text: &str, file: &str) -> Result<Self, ProfileError> {
        let file = file.to_owned();
        let parsed: ProfileFile = toml::from_str(text).map_err(|error| ProfileError::Toml {
            file: file.clone(),
            message: error.to_string().trim_end().to_owned(),
        })?;
        if parsed.schema_version != PROFILE_VERSION {
            return Err(ProfileError::Version {
                file,
                found: parsed.schema_version,
            });
        }
        if let Some(key) = parsed
            .interrupt_keys
            .iter()
            .chain(&parsed.exit_keys)
            .find(|key| !KEYS.contains(&key.as_str()))
        {
            return Err(ProfileError::Key {
                file,
                key: key.clone(),
            });
        }
        if parsed.rules.is_empty() {
            return Err(ProfileError::NoRules { file });
        }
        let mut rules = Vec::with_capacity(parsed.rules.len());
        for rule in parsed.rules {
            if rules.iter().any(|known: &Rule| known.name == rule.name) {
                return Err(ProfileError::DuplicateRule {
                    file,
                    rule: rule.name,
                });
            }
            rules.push(Rule {
                pattern: compile(&file, &rule.name, &rule.pattern)?,
                region: region(&file, &rule.name, rule.top, rule.bottom)?,
                name: rule.name,
                state: rule.state,
                priority: rule.priority,
            });
        }
        // Stable: ties keep file order.
        rules.sort_by_key(|rule| std::cmp::Reverse(rule.priority));
        let input = parsed
            .input
            .map(|input| {
                let pattern = compile(&file, "input", &input.pattern)?;
                if !pattern.capture_names().any(|name| name == Some("input")) {
                    return Err(ProfileError::InputGroup { file: file.clone() });
                }
                Ok(InputLine {
                    pattern,
                    region: region(&file, "input", input.top, input.bottom)?,
                    placeholders: input.placeholders,
                })
            })
            .transpose()?;
        Ok(Self {
            name: parsed.name,
            description: parsed.description,
            process_names: parsed.process_names,
            idle_debounce_ms: parsed.idle_debounce_ms,
            channel_silence_ms: parsed.channel_silence_ms,
            launch_hooks: parsed.launch_hooks,
            interrupt_keys: parsed.interrupt_keys,
            exit_keys: parsed.exit_keys,
            input,
            readback: parsed.readback,
            rules,
        })
    }
}

/// The default `channel_silence_ms`: 30 s, longer than a hook-free stretch of a normal turn
/// (tool calls fire hooks), short enough that a missed interrupt or API error shows.
const fn channel_silence() -> u64 {
    30_000
}

fn changed() -> Readback {
    Readback::Changed
}

fn compile(file: &str, rule: &str, pattern: &str) -> Result<Regex, ProfileError> {
    Regex::new(pattern).map_err(|error| ProfileError::Pattern {
        file: file.to_owned(),
        rule: rule.to_owned(),
        message: error
            .to_string()
            .lines()
            .last()
            .unwrap_or_default()
            .to_owned(),
    })
}

fn region(
    file: &str,
    rule: &str,
    top: Option<usize>,
    bottom: Option<usize>,
) -> Result<Region, ProfileError> {
    match (top, bottom) {
        (None, None) => Ok(Region::All),
        (Some(lines), None) if lines > 0 => Ok(Region::Top(lines)),
        (None, Some(lines)) if lines > 0 => Ok(Region::Bottom(lines)),
        _ => Err(ProfileError::Region {
            file: file.to_owned(),
            rule: rule.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
schema_version = "valp-agent-profile.v1"
name = "t"
process_names = ["t"]
idle_debounce_ms = 500
interrupt_keys = ["Escape"]
exit_keys = ["C-c", "C-c"]

[[rules]]
name = "low"
state = "idle"
pattern = "^> "

[[rules]]
name = "high"
state = "working"
pattern = "esc to interrupt"
bottom = 3
priority = 10
"#;

    fn refused(text: &str) -> ProfileError {
        Profile::parse(text, "p.toml")
            .err()
            .unwrap_or_else(|| unreachable!("accepted: {text}"))
    }

    #[test]
    fn every_builtin_profile_loads() {
        for (name, _) in Profile::builtin_texts() {
            let profile = Profile::builtin(name).unwrap_or_else(|error| unreachable!("{error}"));
            assert_eq!(&profile.name, name);
        }
        assert_eq!(
            Profile::builtin("vim").err(),
            Some(ProfileError::Unknown("vim".to_owned()))
        );
    }

    #[test]
    fn rules_are_ordered_by_priority_then_file_order() {
        let profile = Profile::parse(MINIMAL, "p.toml").unwrap_or_else(|e| unreachable!("{e}"));
        let names: Vec<_> = profile
            .rules
            .iter()
            .map(|rule| rule.name.as_str())
            .collect();
        assert_eq!(names, ["high", "low"]);
        assert_eq!(profile.rules[0].region, Region::Bottom(3));
        assert_eq!(profile.rules[1].region, Region::All);
    }

    #[test]
    fn malformed_profiles_are_refused_exactly() {
        assert_eq!(
            refused(&MINIMAL.replace(".v1", ".v2")),
            ProfileError::Version {
                file: "p.toml".into(),
                found: "valp-agent-profile.v2".into()
            }
        );
        assert_eq!(
            refused(&MINIMAL.replace("\"^> \"", "\"(\"")).to_string(),
            "p.toml: rule \"low\": pattern does not compile: error: unclosed group"
        );
        assert_eq!(
            refused(&MINIMAL.replace("bottom = 3", "bottom = 3\ntop = 1")),
            ProfileError::Region {
                file: "p.toml".into(),
                rule: "high".into()
            }
        );
        assert_eq!(
            refused(&MINIMAL.replace("bottom = 3", "bottom = 0")),
            ProfileError::Region {
                file: "p.toml".into(),
                rule: "high".into()
            }
        );
        assert_eq!(
            refused(&MINIMAL.replace("\"high\"", "\"low\"")),
            ProfileError::DuplicateRule {
                file: "p.toml".into(),
                rule: "low".into()
            }
        );
        assert_eq!(
            refused(&MINIMAL.replace("[\"Escape\"]", "[\"rm -rf\"]")),
            ProfileError::Key {
                file: "p.toml".into(),
                key: "rm -rf".into()
            }
        );
        let head = MINIMAL.split("[[rules]]").next().unwrap_or_default();
        assert_eq!(
            refused(&format!("{head}rules = []\n")),
            ProfileError::NoRules {
                file: "p.toml".into()
            }
        );
        assert_eq!(
            refused(&format!("{MINIMAL}\n[input]\npattern = \"^> (.*)\"\n")),
            ProfileError::InputGroup {
                file: "p.toml".into()
            }
        );
        let ProfileError::Toml { file, message } =
            refused(&MINIMAL.replace("state = \"idle\"", "state = \"sleepy\""))
        else {
            unreachable!("not a toml error")
        };
        assert_eq!(file, "p.toml");
        assert!(
            message.starts_with("TOML parse error at line 11"),
            "{message}"
        );
        assert!(message.contains("unknown variant `sleepy`"), "{message}");
        let ProfileError::Toml { message, .. } = refused(&format!("colour = 1\n{MINIMAL}")) else {
            unreachable!("not a toml error")
        };
        assert!(message.contains("unknown field `colour`"), "{message}");
    }
}
