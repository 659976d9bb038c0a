//! The console's shipped data files (the default keymap and theme) against their schemas in
//! `schemas/console/`: the TOML, converted to JSON, validates; broken files are refused; and the
//! schemas list exactly the modes, actions and slots the console's parser knows.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use jsonschema::Validator;
use serde_json::{Value, json};
use valp_tests::schemas::{SCHEMA_BASE, errors, read_json, validator};
use valp_tests::workspace_root;
use valp_tui::{Action, Keymap, Mode, Slot, Theme};

const KEYMAP: &str = "console/assets/keymap.toml";
const THEME: &str = "themes/default.toml";
const KEYMAP_SCHEMA: &str = "console/keymap.schema.json";
const THEME_SCHEMA: &str = "console/theme.schema.json";

/// A TOML file as the JSON value it converts to.
fn toml_as_json(text: &str) -> Value {
    serde_json::to_value(text.parse::<toml::Table>().unwrap()).unwrap()
}

fn shipped(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join(path)).unwrap()
}

/// The member names of a JSON object, sorted.
fn names(object: &Value) -> Vec<String> {
    sorted(object.as_object().unwrap().keys().map(String::as_str))
}

fn sorted<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
    names.sort();
    names
}

fn assert_refused(validator: &Validator, toml_text: &str) {
    assert!(
        !validator.is_valid(&toml_as_json(toml_text)),
        "the schema accepts {toml_text:?}"
    );
}

#[test]
fn the_schemas_are_valid_draft_2020_12_schemas_with_their_ids() {
    for name in [KEYMAP_SCHEMA, THEME_SCHEMA] {
        let schema = read_json(&workspace_root().join("schemas").join(name));
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        assert_eq!(schema["$id"], format!("{SCHEMA_BASE}{name}"));
        jsonschema::meta::validate(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn the_shipped_files_validate_and_name_their_schema() {
    for (file, schema) in [
        (KEYMAP, KEYMAP_SCHEMA),
        (THEME, THEME_SCHEMA),
        ("themes/dark.toml", THEME_SCHEMA),
        ("themes/light.toml", THEME_SCHEMA),
        ("themes/high-contrast.toml", THEME_SCHEMA),
    ] {
        let text = shipped(file);
        assert_eq!(
            errors(&validator(schema), &toml_as_json(&text)),
            Vec::<String>::new(),
            "{file}"
        );
        // The `#:schema` line editors follow points at the schema.
        let header = text.lines().next().unwrap();
        let relative = header
            .strip_prefix("#:schema ")
            .expect("a #:schema first line");
        let target = workspace_root().join(file).parent().unwrap().join(relative);
        assert_eq!(
            target.canonicalize().unwrap(),
            workspace_root()
                .join("schemas")
                .join(schema)
                .canonicalize()
                .unwrap(),
            "{file}"
        );
    }
    // The files the console compiles in are these files.
    assert_eq!(
        Keymap::builtin().unwrap(),
        Keymap::from_toml(&shipped(KEYMAP)).unwrap()
    );
    assert_eq!(
        Theme::builtin().unwrap(),
        Theme::from_toml(&shipped(THEME)).unwrap()
    );
    for name in ["dark", "light", "high-contrast"] {
        let theme = Theme::from_toml(&shipped(&format!("themes/{name}.toml"))).unwrap();
        assert_eq!(Theme::named(name).unwrap(), theme);
        assert_ne!(theme, Theme::named("default").unwrap(), "{name}");
        // Every slot is styled: a theme made for one background leaves nothing unstyled.
        let unstyled = Theme::from_toml("").unwrap();
        for slot in Slot::ALL {
            assert_ne!(
                theme.style(slot),
                unstyled.style(slot),
                "{name}: {}",
                slot.name()
            );
        }
    }
}

#[test]
fn broken_files_are_refused_by_the_schemas() {
    let keymap = validator(KEYMAP_SCHEMA);
    assert_refused(&keymap, "[mian]\nq = \"quit\"\n");
    assert_refused(&keymap, "[main]\nq = \"explode\"\n");
    assert_refused(&keymap, "[main]\nctlr-q = \"quit\"\n");
    assert_refused(&keymap, "[main]\nqq = \"quit\"\n");
    assert_refused(&keymap, "[main]\nf13 = \"quit\"\n");
    assert_refused(&keymap, "main = \"quit\"\n");
    assert_refused(&keymap, "[main]\nx = \"cancel_task\"\n");
    assert_refused(&keymap, "[redirct]\nspace = \"toggle\"\n");
    assert!(keymap.is_valid(&toml_as_json(
        "[main]\nctrl-alt-f12 = \"quit\"\n\"?\" = \"help\"\n"
    )));
    assert!(keymap.is_valid(&toml_as_json(
        "[main]\nX = \"cancel_selected\"\nctrl-r = \"redirect\"\n\
         [redirect]\nspace = \"toggle\"\nenter = \"confirm\"\n"
    )));

    let theme = validator(THEME_SCHEMA);
    assert_refused(&theme, "fenceed = { bold = true }\n");
    assert_refused(&theme, "title = { fg = \"teal\" }\n");
    assert_refused(&theme, "title = { fg = \"#12345g\" }\n");
    assert_refused(&theme, "title = { blink = true }\n");
    assert_refused(&theme, "title = { bold = \"yes\" }\n");
    assert_refused(&theme, "status_runing = { bold = true }\n");
    assert!(theme.is_valid(&toml_as_json(
        "base = { fg = \"#A0b0C0\", bg = \"reset\" }\n"
    )));
}

#[test]
fn the_schemas_list_exactly_what_the_parser_knows() {
    let keymap = read_json(&workspace_root().join("schemas").join(KEYMAP_SCHEMA));
    assert_eq!(
        names(&keymap["properties"]),
        sorted(Mode::ALL.map(Mode::name))
    );
    assert_eq!(
        keymap["$defs"]["action"]["enum"],
        json!(Action::ALL.map(Action::name).to_vec())
    );

    let theme = read_json(&workspace_root().join("schemas").join(THEME_SCHEMA));
    assert_eq!(
        names(&theme["properties"]),
        sorted(Slot::ALL.map(Slot::name))
    );
    // Every colour the schema names is one the console parses.
    for color in theme["$defs"]["color"]["anyOf"][0]["enum"]
        .as_array()
        .unwrap()
    {
        let text = format!("base = {{ fg = {color} }}\n");
        Theme::from_toml(&text).unwrap_or_else(|e| panic!("{color}: {e}"));
    }
}

/// The needs-you acknowledgements file as the console writes it validates against its schema;
/// the shapes the console's reader refuses, the schema refuses too.
#[test]
fn the_acknowledgements_file_follows_its_schema() {
    use valp_runtime::clock::{FixedClock, Timestamp};
    use valp_runtime::needs::{Queue, acks};

    const SCHEMA: &str = "console/acknowledgements.schema.json";
    let temp = tempfile::tempdir().unwrap();
    let root = valp_store::ControlRoot::init(
        temp.path(),
        valp_kernel::Identity::new(valp_kernel::IdentityKind::Installation, "inst").unwrap(),
        std::sync::Arc::new(valp_store::io::OsStorage),
    )
    .unwrap();
    let clock = FixedClock::new(Timestamp::from_millis(1_796_040_000_000));
    let mut queue = Queue::new(&root);
    queue.acknowledge("review:t:r9", true, &[], &clock).unwrap();
    let written: Value =
        serde_json::from_slice(&std::fs::read(root.console_file(acks::FILE)).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"acknowledged": [{"at": "2026-11-30T12:00:00.000Z", "key": "review:t:r9"}],
               "schema_version": "valp-console-acknowledgements.v1"})
    );
    let schema = validator(SCHEMA);
    assert_eq!(errors(&schema, &written), Vec::<String>::new());
    for broken in [
        json!({"acknowledged": [], "schema_version": "v0"}),
        json!({"schema_version": "valp-console-acknowledgements.v1"}),
        json!({"acknowledged": [{"key": "", "at": "2026-11-30T12:00:00.000Z"}],
               "schema_version": "valp-console-acknowledgements.v1"}),
        json!({"acknowledged": [{"key": "k", "at": "yesterday"}],
               "schema_version": "valp-console-acknowledgements.v1"}),
        json!({"acknowledged": [{"key": "k", "at": "2026-11-30T12:00:00.000Z", "by": "me"}],
               "schema_version": "valp-console-acknowledgements.v1"}),
        json!({"acknowledged": [], "schema_version": "valp-console-acknowledgements.v1", "x": 1}),
    ] {
        assert!(!schema.is_valid(&broken), "the schema accepts {broken}");
    }
}
