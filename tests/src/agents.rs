//! Real agent CLIs (Claude Code, Codex, Aider) in private tmux panes, talking to a scripted
//! model ([`crate::model`]) on loopback.
//!
//! The CLIs are the versions pinned in `.ci/agents.lock`, installed by `.ci/agents` into
//! `$VALP_AGENTS_DIR` (default `~/.cache/valp/agents`). A test asks for one with
//! [`Cli::installed`]: when it is missing the test says it skipped and passes, unless
//! `VALP_REQUIRE_AGENTS=1` (set by `.ci/run`), which makes a missing CLI a failure.
//!
//! [`AgentPane::start`] gives each CLI a fresh temporary `HOME` and project folder, a clean
//! environment (`env -i`) pointing it at the scripted model, and the first-run state that takes
//! it straight to its prompt (`docs/real-agents-offline.md` of the shared notes): Claude Code's
//! `~/.claude.json` (onboarding done, API key approved, folder trusted), Codex's
//! `config.toml` (the mock provider, the project trusted, no update check, no background
//! daemon), Aider's command-line flags (no git, no update check, no analytics). A
//! [`Setup::Unprepared`] start leaves the last set-up screen in place.

#![allow(clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use tempfile::TempDir;
use valp_runtime::adapter::tmux::pane::Pane;
use valp_runtime::agent::classify::{Classification, classify};
use valp_runtime::agent::profile::{AgentState, Profile};

use crate::model::{ModelServer, Script};
use crate::tmux::{TmuxServer, tmux_at};
use crate::workspace_root;

/// The API key the CLIs send the scripted model.
const API_KEY: &str = "sk-ant-scripted-0123456789abcdefghij";

/// How long a CLI may take to reach a state (Aider starts in 6-20 s).
pub const AGENT_PATIENCE: Duration = Duration::from_secs(60);

/// A real agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// Claude Code (npm `@anthropic-ai/claude-code`).
    Claude,
    /// Codex CLI (npm `@openai/codex`).
    Codex,
    /// Aider (the Python package `aider-chat`).
    Aider,
}

/// An installed, pinned CLI.
#[derive(Debug, Clone)]
pub struct Installed {
    /// Which.
    pub cli: Cli,
    /// Its pinned version.
    pub version: String,
    /// Its install folder.
    pub folder: PathBuf,
}

/// How much first-run state a start writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// Everything that takes the CLI straight to its prompt.
    Ready,
    /// All but the last step, which the CLI then asks on its screen: the folder trust of
    /// Claude Code and Codex (in a git repository: Codex asks only there), Aider's question
    /// whether to create a git repository.
    Unprepared,
}

impl Cli {
    /// Its name: the `.ci/agents.lock` entry and the agent profile.
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Aider => "aider",
        }
    }

    /// Its version pinned in `.ci/agents.lock`.
    pub fn pinned_version(self) -> String {
        let lock = std::fs::read_to_string(workspace_root().join(".ci/agents.lock"))
            .expect("reading .ci/agents.lock");
        lock.lines()
            .map(str::split_whitespace)
            .find_map(|mut words| {
                (words.next() == Some(self.name())).then(|| words.nth(2).map(str::to_owned))?
            })
            .unwrap_or_else(|| panic!("no {} in .ci/agents.lock", self.name()))
    }

    /// The pinned CLI if `.ci/agents` installed it; otherwise `None` after saying the test
    /// is skipped, or a panic when `VALP_REQUIRE_AGENTS=1`.
    pub fn installed(self) -> Option<Installed> {
        let version = self.pinned_version();
        let root = std::env::var_os("VALP_AGENTS_DIR").map_or_else(
            || Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/valp/agents"),
            PathBuf::from,
        );
        let folder = root.join(format!("{}-{version}", self.name()));
        let recorded = std::fs::read_to_string(folder.join("VERSION")).unwrap_or_default();
        if recorded.trim() == version {
            return Some(Installed {
                cli: self,
                version,
                folder,
            });
        }
        let why = format!(
            "{} {version} is not installed in {} (run .ci/agents)",
            self.name(),
            folder.display()
        );
        assert!(
            std::env::var("VALP_REQUIRE_AGENTS").as_deref() != Ok("1"),
            "VALP_REQUIRE_AGENTS=1 and {why}"
        );
        // Straight to stderr, past the test harness's capture: a skip must show.
        let _ = writeln!(
            std::io::stderr(),
            "skipped: {why}; VALP_REQUIRE_AGENTS=1 makes this a failure"
        );
        None
    }
}

/// The Python interpreter itself (a pyenv shim needs the real `HOME`, which the agent's
/// environment replaces).
fn python() -> String {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs (Aider needs it)");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A real CLI in a private tmux pane, with its scripted model; everything goes when dropped.
#[derive(Debug)]
pub struct AgentPane {
    /// The CLI.
    pub installed: Installed,
    /// Its model.
    pub model: ModelServer,
    /// Its pane, for the submission core.
    pub pane: Pane,
    /// Its profile.
    pub profile: Profile,
    /// The project folder it runs in (its real path).
    pub project: PathBuf,
    server: TmuxServer,
    dir: TempDir,
}

impl AgentPane {
    /// Starts `installed` in a fresh `HOME` and project against a model answering the script
    /// `script` makes of the project's path.
    pub fn start(
        installed: &Installed,
        script: impl FnOnce(&Path) -> Script,
        setup: Setup,
    ) -> Self {
        Self::start_with(installed, script, setup, &[], &[])
    }

    /// [`Self::start`], with `arguments` added to the CLI's command line and `home_files`
    /// (a path relative to `HOME`, its text) written before it starts.
    pub fn start_with(
        installed: &Installed,
        script: impl FnOnce(&Path) -> Script,
        setup: Setup,
        arguments: &[&str],
        home_files: &[(&str, &str)],
    ) -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        for folder in [&home, &project] {
            std::fs::create_dir_all(folder).expect("creating the agent's folders");
        }
        for (file, text) in home_files {
            let path = home.join(file);
            if let Some(folder) = path.parent() {
                std::fs::create_dir_all(folder).expect("creating a folder in HOME");
            }
            write(&path, text);
        }
        let project = project.canonicalize().expect("the project's real path");
        let model = ModelServer::start(script(&project));
        let mut command = agent_command(installed, &home, &project, &model, setup);
        command.extend(arguments.iter().map(|argument| (*argument).to_owned()));
        let argv: Vec<&str> = command.iter().map(String::as_str).collect();
        let server = TmuxServer::start(&dir.path().join("sock"), "agents", &project, &argv);
        let id = server.display("agents", "#{pane_id}");
        let pane = Pane::new(
            Path::new("tmux"),
            server.socket(),
            &id,
            Duration::from_secs(5),
        );
        Self {
            installed: installed.clone(),
            model,
            pane,
            profile: Profile::builtin(installed.cli.name()).expect("a built-in profile"),
            project,
            server,
            dir,
        }
    }

    /// A scratch folder outside the project (for staged prompts).
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// The screen with its escape sequences (`capture-pane -p -e`).
    pub fn screen(&self) -> String {
        self.pane.capture().expect("capture-pane")
    }

    /// Waits until the profile reads `state`; returns that reading and the screen. Panics with
    /// the last screen after `patience`.
    pub fn wait_for(&self, state: AgentState, patience: Duration) -> (Classification, String) {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            let read = classify(&self.profile, &screen);
            if read.state == state {
                return (read, screen);
            }
            assert!(
                started.elapsed() < patience,
                "{} did not turn {} within {patience:?}; last read {read:?} of:\n{}",
                self.installed.cli.name(),
                state.name(),
                strip(&screen)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Types `keys` (tmux key names or literal letters such as `y`).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "agents"];
        args.extend_from_slice(keys);
        let output = tmux_at(self.server.socket(), &args);
        assert!(output.status.success(), "send-keys {keys:?}");
    }

    /// Saves `screen` as the fixture `<cli>/<version>/<name>.txt` when
    /// `VALP_RECORD_AGENT_SCREENS=1`; the committed fixtures are what the profile tests read.
    pub fn record(&self, name: &str, screen: &str) {
        self.record_file(&format!("{name}.txt"), screen);
    }

    /// Saves `text` as the fixture `<cli>/<version>/<file>` when
    /// `VALP_RECORD_AGENT_SCREENS=1`.
    pub fn record_file(&self, file: &str, text: &str) {
        if std::env::var("VALP_RECORD_AGENT_SCREENS").as_deref() != Ok("1") {
            return;
        }
        let path = fixture_folder(self.installed.cli).join(file);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).expect("creating the fixture folder");
        }
        write(&path, text);
    }
}

/// The argv that starts `installed` in `project` with `home` as its `HOME` (whose first-run
/// files it writes for `setup`), in a clean environment (`env -i …`) pointing it at `model`.
pub fn agent_command(
    installed: &Installed,
    home: &Path,
    project: &Path,
    model: &ModelServer,
    setup: Setup,
) -> Vec<String> {
    let mut command: Vec<String> = ["env", "-i"].map(str::to_owned).to_vec();
    command.extend(
        [
            ("PATH", std::env::var("PATH").unwrap_or_default()),
            ("HOME", home.display().to_string()),
            ("TERM", "xterm-256color".to_owned()),
            ("LANG", "C.UTF-8".to_owned()),
        ]
        .map(|(key, value)| format!("{key}={value}")),
    );
    let place = Place {
        home,
        project,
        base_url: model.base_url(),
        setup,
        folder: &installed.folder,
    };
    command.extend(match installed.cli {
        Cli::Claude => place.claude(),
        Cli::Codex => place.codex(),
        Cli::Aider => place.aider(),
    });
    command
}

/// Where and how one CLI starts.
struct Place<'a> {
    home: &'a Path,
    project: &'a Path,
    base_url: String,
    setup: Setup,
    folder: &'a Path,
}

impl Place<'_> {
    /// Claude Code: `~/.claude.json` and its environment; the command's tail.
    fn claude(&self) -> Vec<String> {
        let (home, project, setup, folder) = (self.home, self.project, self.setup, self.folder);
        let mut command = Vec::new();
        let mut state = json!({
            "hasCompletedOnboarding": true,
            "customApiKeyResponses": {
                "approved": [&API_KEY[API_KEY.len() - 20..]],
                "rejected": [],
            },
        });
        if setup == Setup::Ready {
            state["projects"] =
                json!({project.display().to_string(): {"hasTrustDialogAccepted": true}});
        }
        write(&home.join(".claude.json"), &state.to_string());
        command.extend(
            [
                format!("ANTHROPIC_BASE_URL={}", self.base_url),
                format!("ANTHROPIC_API_KEY={API_KEY}"),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1".to_owned(),
                "DISABLE_AUTOUPDATER=1".to_owned(),
                "DISABLE_TELEMETRY=1".to_owned(),
                "DISABLE_ERROR_REPORTING=1".to_owned(),
            ]
            .into_iter()
            .chain([folder
                .join("node_modules/.bin/claude")
                .display()
                .to_string()]),
        );
        command
    }

    /// Codex: `~/.codex/config.toml`; the command's tail.
    fn codex(&self) -> Vec<String> {
        let (home, project, setup, folder) = (self.home, self.project, self.setup, self.folder);
        let mut command = Vec::new();
        let trust = if setup == Setup::Ready {
            format!(
                "[projects.{:?}]\ntrust_level = \"trusted\"\n",
                project.display().to_string()
            )
        } else {
            String::new()
        };
        let config = format!(
            "model = \"scripted-model\"\nmodel_provider = \"mock\"\n\
             check_for_update_on_startup = false\napproval_policy = \"on-request\"\n\
             sandbox_mode = \"read-only\"\n\n[model_providers.mock]\nname = \"mock\"\n\
             base_url = \"{}/v1\"\nenv_key = \"MOCK_API_KEY\"\nwire_api = \"responses\"\n\n\
             {trust}\n[features]\ndaemon_auto_start = false\n",
            self.base_url
        );
        if setup == Setup::Unprepared {
            // Codex asks about trust only in a git repository.
            let init = Command::new("git")
                .args(["init", "-q"])
                .current_dir(project)
                .status();
            assert!(init.is_ok_and(|status| status.success()), "git init");
        }
        std::fs::create_dir_all(home.join(".codex")).expect("creating ~/.codex");
        write(&home.join(".codex/config.toml"), &config);
        command.extend([
            "MOCK_API_KEY=scripted".to_owned(),
            folder.join("node_modules/.bin/codex").display().to_string(),
        ]);
        command
    }

    /// Aider: its flags; the command's tail.
    fn aider(&self) -> Vec<String> {
        let (setup, folder) = (self.setup, self.folder);
        let mut command = Vec::new();
        command.extend([
            format!("PYTHONPATH={}", folder.display()),
            "LITELLM_LOCAL_MODEL_COST_MAP=True".to_owned(),
            python(),
            "-m".to_owned(),
            "aider".to_owned(),
            "--openai-api-base".to_owned(),
            format!("{}/v1", self.base_url),
        ]);
        command.extend(
            [
                "--openai-api-key",
                "scripted",
                "--model",
                "openai/gpt-4o-mini",
                "--no-check-update",
                "--no-analytics",
                "--no-show-model-warnings",
                "--no-show-release-notes",
                "--no-gitignore",
            ]
            .map(str::to_owned),
        );
        if setup == Setup::Ready {
            command.push("--no-git".to_owned());
        }
        command
    }
}

/// `tests/fixtures/agents/<cli>/<pinned version>`.
pub fn fixture_folder(cli: Cli) -> PathBuf {
    workspace_root()
        .join("tests/fixtures/agents")
        .join(cli.name())
        .join(cli.pinned_version())
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text)
        .unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
}

/// A screen without its escape sequences, for failure messages.
fn strip(screen: &str) -> String {
    valp_view::sanitize::display_text(screen)
}
