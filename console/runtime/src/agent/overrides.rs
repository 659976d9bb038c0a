//! The operator's agent profile overrides: the user config file's `[agents.<name>]` tables,
//! each laid over the built-in profile `<name>` and judged by the profile's own parser.
//!
//! ```toml
//! [agents.claude]
//! idle_debounce_ms = 2500            # replaces the built-in value
//! interrupt_keys = ["Escape", "C-c"]
//! [[agents.claude.rules]]            # a rule named like a built-in one replaces it,
//! name = "working line"              # any other is added
//! state = "working"
//! pattern = 'esc to interrupt|ctrl\+c to stop'
//! bottom = 8
//! priority = 90
//! ```
//!
//! Settings: `description`, `process_names`, `idle_debounce_ms`, `channel_silence_ms`,
//! `launch_hooks`, `interrupt_keys`, `exit_keys`, `input` (a whole table), `readback` and `rules`. A profile's
//! `schema_version` and `name` are not settings. Every error names the file, the key and the
//! rule; an override that makes the profile invalid is refused with the profile parser's
//! words. Every valp process that uses a profile (the console, the tmux supervisors it
//! launches, `valp agent classify`) reads the same file: `VALP_CONFIG` when set (the console
//! sets it for its supervisors to the file it was given), else the platform's place (see
//! [`crate::userfiles`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::profile::{Profile, ProfileError};
use valp_view::sanitize::display_line;

/// The settings an override may carry, and the TOML type each must have.
const SETTINGS: &[(&str, Kind)] = &[
    ("description", Kind::Text),
    ("process_names", Kind::Texts),
    ("idle_debounce_ms", Kind::Millis),
    ("channel_silence_ms", Kind::Millis),
    ("launch_hooks", Kind::Text),
    ("interrupt_keys", Kind::Texts),
    ("exit_keys", Kind::Texts),
    ("input", Kind::Table),
    ("readback", Kind::Text),
    ("rules", Kind::Rules),
];

/// The largest `*_ms` an override may set (an hour).
const MAX_MILLIS: i64 = 3_600_000;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Text,
    Texts,
    Millis,
    Table,
    Rules,
}

impl Kind {
    const fn rule(self) -> &'static str {
        match self {
            Self::Text => "must be a string",
            Self::Texts => "must be an array of strings",
            Self::Millis => "must be a whole number of milliseconds from 0 to 3600000",
            Self::Table => "must be a table",
            Self::Rules => "must be an array of tables, each with a string `name`",
        }
    }

    fn fits(self, value: &toml::Value) -> bool {
        match self {
            Self::Text => value.is_str(),
            Self::Texts => value
                .as_array()
                .is_some_and(|values| values.iter().all(toml::Value::is_str)),
            Self::Millis => value
                .as_integer()
                .is_some_and(|millis| (0..=MAX_MILLIS).contains(&millis)),
            Self::Table => value.is_table(),
            Self::Rules => value.as_array().is_some_and(|rules| {
                rules.iter().all(|rule| {
                    rule.as_table()
                        .and_then(|rule| rule.get("name"))
                        .is_some_and(toml::Value::is_str)
                })
            }),
        }
    }
}

/// An override that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OverrideError {
    /// A setting that breaks a rule of its own.
    #[error("{file}: {key}: {rule}")]
    Setting {
        /// The user file.
        file: String,
        /// The setting, as a dotted path (`agents.claude.idle_debounce_ms`).
        key: String,
        /// What it must be.
        rule: String,
    },
    /// The profile the override makes is refused by the profile's parser (its file reads
    /// `<user file> [agents.<name>]`).
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The user file cannot be read or is not TOML.
    #[error("{file}: {message}")]
    File {
        /// The user file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// The overrides of one user file, checked: every one makes a valid profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentOverrides {
    file: String,
    tables: BTreeMap<String, toml::Table>,
}

impl AgentOverrides {
    /// No overrides: every profile is the built-in one.
    pub fn none() -> Self {
        Self::default()
    }

    /// The `[agents]` table of the user file `file` (its text `text`); the file's other tables
    /// are the console's, not judged here.
    pub fn parse(text: &str, file: &str) -> Result<Self, OverrideError> {
        let file = display_line(file);
        let table: toml::Table =
            text.parse()
                .map_err(|error: toml::de::Error| OverrideError::File {
                    file: file.clone(),
                    message: error.to_string().trim_end().to_owned(),
                })?;
        let setting = |key: String, rule: &str| OverrideError::Setting {
            file: file.clone(),
            key,
            rule: rule.to_owned(),
        };
        let mut overrides = Self {
            file: file.clone(),
            tables: BTreeMap::new(),
        };
        let Some(agents) = table.get("agents") else {
            return Ok(overrides);
        };
        let agents = agents
            .as_table()
            .ok_or_else(|| setting("agents".to_owned(), "must be a table"))?;
        let known = Profile::builtin_texts()
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ");
        for (name, value) in agents {
            let key = format!("agents.{name}");
            if !Profile::builtin_texts()
                .iter()
                .any(|(known, _)| known == name)
            {
                return Err(setting(
                    key,
                    &format!("no built-in agent profile of that name (profiles: {known})"),
                ));
            }
            let entries = value
                .as_table()
                .ok_or_else(|| setting(key.clone(), "must be a table"))?;
            for (setting_name, value) in entries {
                let key = format!("{key}.{setting_name}");
                let Some((_, kind)) = SETTINGS.iter().find(|(known, _)| known == setting_name)
                else {
                    let names: Vec<&str> = SETTINGS.iter().map(|(name, _)| *name).collect();
                    return Err(setting(
                        key,
                        &format!("unknown setting (settings: {})", names.join(", ")),
                    ));
                };
                if !kind.fits(value) {
                    return Err(setting(key, kind.rule()));
                }
            }
            overrides.tables.insert(name.clone(), entries.clone());
            // Judged now, so a bad override is refused where it is written, not when an agent
            // starts.
            overrides.profile(name)?;
        }
        Ok(overrides)
    }

    /// Reads the user file at `path` (which must exist) and takes its overrides.
    pub fn read(path: &Path) -> Result<Self, OverrideError> {
        let file = path.to_string_lossy();
        let text = std::fs::read_to_string(path).map_err(|error| OverrideError::File {
            file: display_line(&file),
            message: format!("cannot be read: {error}"),
        })?;
        Self::parse(&text, &file)
    }

    /// The overrides a valp process uses: those of the file `VALP_CONFIG` names (`env` looks a
    /// variable up), else of the platform's user file if there is one, else none.
    pub fn for_process(
        env: impl Fn(&str) -> Option<std::ffi::OsString>,
        platform: Option<&Path>,
    ) -> Result<Self, OverrideError> {
        match env(crate::userfiles::CONFIG_VARIABLE).filter(|value| !value.is_empty()) {
            Some(path) => Self::read(Path::new(&path)),
            None => platform
                .filter(|path| path.is_file())
                .map_or_else(|| Ok(Self::none()), Self::read),
        }
    }

    /// This process's overrides (see [`Self::for_process`]).
    pub fn of_this_process() -> Result<Self, OverrideError> {
        Self::for_process(
            |name| std::env::var_os(name),
            crate::userfiles::UserFiles::locate().config.as_deref(),
        )
    }

    /// The agents that have an override, by name.
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// The built-in profile `name` with its override, if any, laid over it.
    pub fn profile(&self, name: &str) -> Result<Profile, ProfileError> {
        let Some(over) = self.tables.get(name) else {
            return Profile::builtin(name);
        };
        let text = Profile::builtin_texts()
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, text)| *text)
            .ok_or_else(|| ProfileError::Unknown(name.to_owned()))?;
        let file = format!("{} [agents.{name}]", self.file);
        let mut base: toml::Table =
            text.parse()
                .map_err(|error: toml::de::Error| ProfileError::Toml {
                    file: file.clone(),
                    message: error.to_string(),
                })?;
        for (key, value) in over {
            if key == "rules" {
                merge_rules(&mut base, value);
            } else {
                base.insert(key.clone(), value.clone());
            }
        }
        let merged = toml::to_string(&base).map_err(|error| ProfileError::Toml {
            file: file.clone(),
            message: error.to_string(),
        })?;
        Profile::parse(&merged, &file)
    }
}

/// Lays the override's rules over the profile's: one with a known rule's name replaces it, any
/// other is added at the end.
fn merge_rules(base: &mut toml::Table, rules: &toml::Value) {
    let name = |rule: &toml::Value| {
        rule.get("name")
            .and_then(toml::Value::as_str)
            .map(str::to_owned)
    };
    let entry = base
        .entry("rules")
        .or_insert_with(|| toml::Value::Array(Vec::new()));
    let (Some(existing), Some(added)) = (entry.as_array_mut(), rules.as_array()) else {
        return;
    };
    for rule in added {
        match existing.iter_mut().find(|known| name(known) == name(rule)) {
            Some(known) => *known = rule.clone(),
            None => existing.push(rule.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::ffi::OsString;

    use super::*;
    use crate::agent::profile::AgentState;

    const FILE: &str = "/home/op/.config/valp/config.toml";

    fn error(text: &str) -> String {
        AgentOverrides::parse(text, FILE).unwrap_err().to_string()
    }

    #[test]
    fn an_override_replaces_settings_and_rules_by_name_and_adds_new_rules() {
        let overrides = AgentOverrides::parse(
            "[console]\nrefresh_seconds = 3\n\
             [agents.claude]\nidle_debounce_ms = 2500\ninterrupt_keys = [\"Escape\", \"C-c\"]\n\
             [[agents.claude.rules]]\nname = \"working line\"\nstate = \"working\"\n\
             pattern = 'ctrl\\+c to stop'\nbottom = 8\npriority = 90\n\
             [[agents.claude.rules]]\nname = \"spinner\"\nstate = \"working\"\npattern = '✻'\n",
            FILE,
        )
        .unwrap();
        assert_eq!(overrides.agents().collect::<Vec<_>>(), ["claude"]);
        let builtin = Profile::builtin("claude").unwrap();
        let claude = overrides.profile("claude").unwrap();
        assert_eq!(claude.idle_debounce_ms, 2500);
        assert_eq!(claude.interrupt_keys, ["Escape", "C-c"]);
        assert_eq!(claude.exit_keys, builtin.exit_keys);
        assert_eq!(claude.rules.len(), builtin.rules.len() + 1);
        let working = claude
            .rules
            .iter()
            .find(|rule| rule.name == "working line")
            .unwrap();
        assert_eq!(working.pattern.as_str(), "ctrl\\+c to stop");
        assert_eq!(working.state, AgentState::Working);
        // Another agent is untouched.
        assert_eq!(
            overrides.profile("codex").unwrap().idle_debounce_ms,
            Profile::builtin("codex").unwrap().idle_debounce_ms
        );
        assert_eq!(
            AgentOverrides::parse("", FILE).unwrap(),
            AgentOverrides {
                file: FILE.to_owned(),
                tables: BTreeMap::new()
            }
        );
    }

    #[test]
    fn every_malformed_override_names_the_file_the_key_and_the_rule() {
        let cases = [
            ("agents = 3\n", "agents: must be a table".to_owned()),
            (
                "[agents.vim]\nidle_debounce_ms = 1\n",
                "agents.vim: no built-in agent profile of that name (profiles: aider, claude, \
                 codex, demo, gemini, generic)"
                    .to_owned(),
            ),
            (
                "[agents]\nclaude = 1\n",
                "agents.claude: must be a table".to_owned(),
            ),
            (
                "[agents.claude]\nname = \"x\"\n",
                "agents.claude.name: unknown setting (settings: description, process_names, \
                 idle_debounce_ms, channel_silence_ms, launch_hooks, interrupt_keys, exit_keys, \
                 input, readback, rules)"
                    .to_owned(),
            ),
            (
                "[agents.claude]\nidle_debounce_ms = -1\n",
                "agents.claude.idle_debounce_ms: must be a whole number of milliseconds from 0 \
                 to 3600000"
                    .to_owned(),
            ),
            (
                "[agents.claude]\nexit_keys = \"C-c\"\n",
                "agents.claude.exit_keys: must be an array of strings".to_owned(),
            ),
            (
                "[agents.claude]\ninput = 1\n",
                "agents.claude.input: must be a table".to_owned(),
            ),
            (
                "[agents.claude]\nrules = [{ state = \"idle\" }]\n",
                "agents.claude.rules: must be an array of tables, each with a string `name`"
                    .to_owned(),
            ),
            (
                "[agents.claude]\ndescription = 1\n",
                "agents.claude.description: must be a string".to_owned(),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(error(text), format!("{FILE}: {expected}"), "{text}");
        }
        // What only the profile's parser can judge, in its words.
        assert_eq!(
            error("[agents.claude]\ninterrupt_keys = [\"C-x\"]\n"),
            format!(
                "{FILE} [agents.claude]: key \"C-x\" is not one of [\"Escape\", \"C-c\", \"C-d\", \
                 \"C-\\\\\", \"Enter\"]"
            )
        );
        assert_eq!(
            error("[[agents.demo.rules]]\nname = \"bad\"\nstate = \"idle\"\npattern = \"(\"\n"),
            format!(
                "{FILE} [agents.demo]: rule \"bad\": pattern does not compile: error: unclosed \
                 group"
            )
        );
        assert_eq!(
            error("[agents.demo]\nreadback = \"maybe\"\n")
                .split_once(": ")
                .map(|(file, _)| file),
            Some(format!("{FILE} [agents.demo]").as_str())
        );
        assert!(
            error("[agents\n").starts_with(&format!("{FILE}: TOML parse error at line 1")),
            "{}",
            error("[agents\n")
        );
    }

    #[test]
    fn a_process_reads_valp_config_else_the_platform_file() {
        let temp = tempfile::tempdir().unwrap();
        let named = temp.path().join("named.toml");
        let platform = temp.path().join("config.toml");
        std::fs::write(&named, "[agents.demo]\nidle_debounce_ms = 7\n").unwrap();
        std::fs::write(&platform, "[agents.demo]\nidle_debounce_ms = 9\n").unwrap();
        let debounce = |env: Option<&Path>, platform: Option<&Path>| {
            let variable = env.map(|path| OsString::from(path.as_os_str()));
            AgentOverrides::for_process(
                |name| (name == "VALP_CONFIG").then(|| variable.clone()).flatten(),
                platform,
            )
            .unwrap()
            .profile("demo")
            .unwrap()
            .idle_debounce_ms
        };
        let builtin = Profile::builtin("demo").unwrap().idle_debounce_ms;
        assert_eq!(debounce(Some(&named), Some(&platform)), 7);
        assert_eq!(debounce(None, Some(&platform)), 9);
        assert_eq!(
            debounce(None, Some(&temp.path().join("absent.toml"))),
            builtin
        );
        assert_eq!(debounce(None, None), builtin);
        let missing = temp.path().join("missing.toml");
        let error =
            AgentOverrides::for_process(|_| Some(OsString::from(missing.as_os_str())), None)
                .unwrap_err()
                .to_string();
        assert!(
            error.starts_with(&format!(
                "{}: cannot be read: No such file or directory",
                missing.display()
            )),
            "{error}"
        );
    }
}
