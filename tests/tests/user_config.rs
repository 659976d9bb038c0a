//! The operator's configuration file (`schemas/console/user-config.schema.json`): the example
//! `examples/config.toml` validates against the schema and is accepted by both readers (the
//! console's settings by valp-tui, the agent profile overrides by valp-runtime); broken files
//! are refused by the schema as the readers refuse them, naming the file, the key and the rule.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::path::Path;

use serde_json::Value;
use valp_runtime::agent::overrides::AgentOverrides;
use valp_tests::schemas::{SCHEMA_BASE, errors, read_json, validator};
use valp_tests::workspace_root;
use valp_tui::{Config, Sources};

const SCHEMA: &str = "console/user-config.schema.json";
const EXAMPLE: &str = "examples/config.toml";

fn toml_as_json(text: &str) -> Value {
    serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap()
}

/// What each reader says of `text`: the console's settings, then the agent overrides.
fn readers(text: &str) -> (Result<(), String>, Result<(), String>) {
    let file = Path::new("config.toml");
    (
        Config::resolve(&Sources {
            user: Some((file, text)),
            ..Sources::default()
        })
        .map(drop)
        .map_err(|error| error.to_string()),
        AgentOverrides::parse(text, "config.toml")
            .map(drop)
            .map_err(|error| error.to_string()),
    )
}

#[test]
fn the_example_validates_names_its_schema_and_both_readers_take_it() {
    let schema = read_json(&workspace_root().join("schemas").join(SCHEMA));
    assert_eq!(schema["$id"], format!("{SCHEMA_BASE}{SCHEMA}"));
    jsonschema::meta::validate(&schema).unwrap();
    let text = std::fs::read_to_string(workspace_root().join(EXAMPLE)).unwrap();
    assert_eq!(
        errors(&validator(SCHEMA), &toml_as_json(&text)),
        Vec::<String>::new()
    );
    assert_eq!(
        text.lines().next(),
        Some("#:schema ../schemas/console/user-config.schema.json")
    );
    assert_eq!(readers(&text), (Ok(()), Ok(())));
    let overrides = AgentOverrides::parse(&text, EXAMPLE).unwrap();
    assert_eq!(overrides.agents().collect::<Vec<_>>(), ["claude"]);
    assert_eq!(overrides.profile("claude").unwrap().idle_debounce_ms, 2500);
}

#[test]
fn what_the_readers_refuse_the_schema_refuses() {
    let schema = validator(SCHEMA);
    let refused = [
        "[colours]\n",
        "keymap = 3\n",
        "[console]\nrefresh_seconds = 0\n",
        "[console]\nrefresh = 5\n",
        "[console]\nnotify = \"loud\"\n",
        "[console]\ntheme = \"neon\"\n",
        "[console]\nmouse = 1\n",
        "[keymap.main]\nc = \"explode\"\n",
        "[theme]\ntitle = { fg = \"mauve\" }\n",
        "[agents.vim]\nidle_debounce_ms = 1\n",
        "[agents.claude]\nname = \"x\"\n",
        "[agents.claude]\nidle_debounce_ms = -1\n",
        "[agents.claude]\nexit_keys = \"C-c\"\n",
        "[agents.claude]\ninterrupt_keys = [\"C-x\"]\n",
        "[agents.claude]\nreadback = \"maybe\"\n",
        "[agents.claude]\nrules = [{ state = \"idle\" }]\n",
    ];
    for text in refused {
        assert!(
            !schema.is_valid(&toml_as_json(text)),
            "the schema accepts {text:?}"
        );
        let (console, agents) = readers(text);
        assert!(
            console.is_err() || agents.is_err(),
            "the readers accept {text:?}"
        );
        for error in [console, agents].into_iter().filter_map(Result::err) {
            assert!(error.starts_with("config.toml"), "{error}");
        }
    }
    let accepted = "[console]\nrefresh_seconds = 3600\n[agents.codex]\nchannel_silence_ms = 0\n\
                    [[agents.codex.rules]]\nname = \"mine\"\nstate = \"idle\"\npattern = \"^>\"\n";
    assert!(schema.is_valid(&toml_as_json(accepted)));
    assert_eq!(readers(accepted), (Ok(()), Ok(())));
}

/// `valp demo --console` with a user file the console refuses (through `--config` or
/// `VALP_CONFIG`): the refusal names the file, the key and the rule, and comes before the demo
/// writes anything (no root, no demo task), whether or not a terminal is there.
#[test]
fn a_bad_user_file_refuses_the_demo_console_before_it_writes_anything() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[console]\nrefresh_seconds = \"soon\"\n").unwrap();
    let root = dir.path().join("root");
    let demo = |through_variable: bool| {
        let mut command = std::process::Command::new(valp_tests::valp_binary().unwrap());
        command.args(["demo", "--console", "--entries", "10", "--root"]);
        command.arg(&root);
        if through_variable {
            command.env("VALP_CONFIG", &config);
        } else {
            command
                .arg("--config")
                .arg(&config)
                .env_remove("VALP_CONFIG");
        }
        let output = command.output().unwrap();
        (
            output.status.code(),
            String::from_utf8(output.stdout).unwrap(),
            String::from_utf8(output.stderr).unwrap(),
        )
    };
    for through_variable in [false, true] {
        let (code, stdout, stderr) = demo(through_variable);
        assert_eq!((code, stdout.as_str()), (Some(1), ""), "{stderr}");
        assert_eq!(
            stderr,
            format!(
                "valp: {}: console.refresh_seconds: must be a whole number from 1 to 3600, not \
                 \"soon\"\n",
                config.display()
            )
        );
        assert!(!root.exists(), "the demo wrote {}", root.display());
    }
}
