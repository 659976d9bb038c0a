//! The console's layers, as its manifests declare them (ARCHITECTURE.md, Layers): valp-view at
//! the bottom, valp-runtime and valp-tui beside each other on it, the `valp` binary on top.
//!
//! Each crate's normal dependencies (`[dependencies]`, `[build-dependencies]` and every
//! `[target.*]` variant; dev-dependencies are for its tests only) are followed through the
//! workspace's own crates, so a forbidden crate reached through another workspace crate is
//! caught here too; what a registry crate pulls in is `.ci/run`'s `cargo tree` check. A broken
//! layer fails with the crate that broke it and the path it came by.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::path::PathBuf;

use valp_tests::workspace_root;

/// A crate's manifest, parsed.
fn manifest(path: &str) -> toml::Table {
    let file = workspace_root().join(path).join("Cargo.toml");
    std::fs::read_to_string(&file)
        .unwrap_or_else(|error| panic!("{}: {error}", file.display()))
        .parse()
        .unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// The names of the crates a manifest depends on for its library and binaries (a renamed
/// dependency by its `package`).
fn normal_dependencies(manifest: &toml::Table) -> Vec<String> {
    let mut tables: Vec<&toml::Table> = ["dependencies", "build-dependencies"]
        .iter()
        .filter_map(|key| manifest.get(*key)?.as_table())
        .collect();
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for target in targets.values().filter_map(toml::Value::as_table) {
            tables.extend(
                ["dependencies", "build-dependencies"]
                    .iter()
                    .filter_map(|key| target.get(*key)?.as_table()),
            );
        }
    }
    tables
        .into_iter()
        .flat_map(|table| {
            table.iter().map(|(key, spec)| {
                spec.get("package")
                    .and_then(toml::Value::as_str)
                    .unwrap_or(key)
                    .to_owned()
            })
        })
        .collect()
}

/// The workspace's own crates: package name -> folder, from the root manifest's
/// `[workspace.dependencies]` path entries.
fn workspace_crates() -> BTreeMap<String, PathBuf> {
    let root = manifest(".");
    root["workspace"]["dependencies"]
        .as_table()
        .unwrap()
        .iter()
        .filter_map(|(name, spec)| Some((name.clone(), PathBuf::from(spec.get("path")?.as_str()?))))
        .collect()
}

/// Whether `dependency` is one of `forbidden` or of its family (`ratatui` stands for
/// `ratatui-core`, `ratatui-crossterm`, ...).
fn is_forbidden(dependency: &str, forbidden: &[&str]) -> bool {
    forbidden.iter().any(|name| {
        dependency
            .strip_prefix(name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
    })
}

/// Every way `package` reaches a crate in `forbidden`, as `a -> b -> c` paths, following
/// normal dependencies through the workspace's crates (`manifests` maps a package to its
/// manifest).
fn forbidden_paths(
    package: &str,
    forbidden: &[&str],
    manifests: &dyn Fn(&str) -> Option<toml::Table>,
) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![vec![package.to_owned()]];
    while let Some(path) = stack.pop() {
        let Some(manifest) = manifests(path.last().unwrap()) else {
            continue;
        };
        for dependency in normal_dependencies(&manifest) {
            let mut next = path.clone();
            next.push(dependency.clone());
            if is_forbidden(&dependency, forbidden) {
                found.push(next.join(" -> "));
            } else if !path.contains(&dependency) {
                stack.push(next);
            }
        }
    }
    found.sort();
    found
}

/// Fails, naming each path, when the workspace crate `package` reaches a crate in `forbidden`.
fn assert_layer(package: &str, forbidden: &[&str], rule: &str) {
    let crates = workspace_crates();
    assert!(
        crates.contains_key(package),
        "{package} is not a workspace dependency of the root Cargo.toml"
    );
    let breaks = forbidden_paths(package, forbidden, &|name| {
        crates
            .get(name)
            .map(|path| manifest(path.to_str().unwrap()))
    });
    assert!(breaks.is_empty(), "{rule}: {breaks:?}");
}

#[test]
fn the_tui_reaches_neither_the_store_nor_the_runtime() {
    assert_layer(
        "valp-tui",
        &["valp-store", "valp-runtime", "valp-console"],
        "valp-tui must talk to the runtime only through valp-view's Backend",
    );
}

#[test]
fn the_runtime_has_no_terminal_ui() {
    assert_layer(
        "valp-runtime",
        &["ratatui", "crossterm", "valp-tui", "valp-console"],
        "valp-runtime must not depend on a terminal UI",
    );
}

#[test]
fn the_view_is_the_bottom_layer() {
    assert_layer(
        "valp-view",
        &[
            "ratatui",
            "crossterm",
            "valp-store",
            "valp-runtime",
            "valp-tui",
            "valp-console",
        ],
        "valp-view must depend on nothing but the kernel",
    );
}

#[test]
fn the_binary_sits_on_every_layer() {
    let dependencies = normal_dependencies(&manifest("console"));
    for layer in ["valp-view", "valp-runtime", "valp-tui"] {
        assert!(
            dependencies.iter().any(|name| name == layer),
            "valp-console does not depend on {layer}: {dependencies:?}"
        );
    }
}

/// The check itself fails on a broken layer, naming the offending crate and how it is reached:
/// directly, through another workspace crate, by a target-specific or renamed dependency;
/// dev-dependencies do not count.
#[test]
fn a_broken_layer_is_named_with_its_path() {
    let manifests = |name: &str| -> Option<toml::Table> {
        let text = match name {
            "ui" => {
                "[dependencies]\nmiddle = { path = \"m\" }\n\
                 [dev-dependencies]\nstore = \"1\"\n\
                 [target.'cfg(unix)'.dependencies]\nterm = { package = \"crossterm\", version = \"1\" }\n\
                 widgets = { package = \"ratatui-widgets\", version = \"1\" }\n"
            }
            "middle" => "[dependencies]\nstore = { workspace = true }\nui = { path = \"..\" }\n",
            _ => return None,
        };
        Some(text.parse().unwrap())
    };
    assert_eq!(
        forbidden_paths("ui", &["store", "crossterm"], &manifests),
        ["ui -> crossterm", "ui -> middle -> store"]
    );
    assert_eq!(
        forbidden_paths("ui", &["ratatui"], &manifests),
        ["ui -> ratatui-widgets"]
    );
    assert_eq!(
        forbidden_paths("ui", &["rata", "tui"], &manifests),
        Vec::<String>::new()
    );
}
