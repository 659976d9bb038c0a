//! `valp demo-agent` on a real terminal: raw mode, bracketed paste, the alternate screen, a
//! tick every [`TICK`], and the demo agent's effects carried out (files written under the
//! current folder). The behaviour itself is [`DemoAgent`]'s.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crossterm::event::{
    self, DisableBracketedPaste, EnableBracketedPaste, Event, KeyCode, KeyEventKind, KeyModifiers,
};
use crossterm::{cursor, execute, queue, style, terminal};

use valp_runtime::agent::demo::{Ask, DemoAgent, Effect, Input, file_path, hook_payload};

/// How often time passes for the agent (the spinner's speed).
const TICK: Duration = Duration::from_millis(100);

/// The hook commands of a session: none, one for every event (`--hook-command`), or each
/// event's own from a Claude Code settings file (`--settings FILE`).
#[derive(Debug, Default)]
pub struct Hooks {
    every: Option<String>,
    by_event: std::collections::BTreeMap<String, String>,
}

impl Hooks {
    /// From `--hook-command` or the settings file `settings` (`hooks.<Event>[0].hooks[0]
    /// .command`, as valp writes it); an unreadable or malformed file is refused.
    pub fn new(every: Option<String>, settings: Option<&Path>) -> std::io::Result<Self> {
        let mut by_event = std::collections::BTreeMap::new();
        if let Some(file) = settings {
            let parsed: serde_json::Value = serde_json::from_slice(&std::fs::read(file)?)
                .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))?;
            for (event, groups) in parsed["hooks"].as_object().into_iter().flatten() {
                if let Some(command) = groups[0]["hooks"][0]["command"].as_str() {
                    by_event.insert(event.clone(), command.to_owned());
                }
            }
        }
        Ok(Self { every, by_event })
    }

    /// The command hook of `event`, if any.
    fn of(&self, event: &str) -> Option<&str> {
        self.every
            .as_deref()
            .or_else(|| self.by_event.get(event).map(String::as_str))
    }

    /// The command hook of the event a payload names.
    fn of_payload(&self, payload: &str) -> Option<&str> {
        let parsed: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
        self.of(parsed["hook_event_name"].as_str().unwrap_or_default())
    }

    fn any(&self) -> bool {
        self.every.is_some() || !self.by_event.is_empty()
    }
}

/// Runs the demo agent on this terminal until it exits; its files are written under `dir`.
/// Every hook event that has a command in `hooks` runs `sh -c COMMAND` with the payload on
/// stdin and is waited for, as Claude Code runs a command hook (`valp hook claude` records
/// them).
pub fn run(seed: u64, ask: Ask, dir: &Path, hooks: &Hooks) -> std::io::Result<()> {
    let mut out = std::io::stdout();
    terminal::enable_raw_mode()?;
    execute!(
        out,
        terminal::EnterAlternateScreen,
        EnableBracketedPaste,
        cursor::Hide
    )?;
    let result = session(&mut out, seed, ask, dir, hooks);
    // Restore the terminal whatever happened, then report the session's own failure first.
    let restored = execute!(
        out,
        cursor::Show,
        DisableBracketedPaste,
        terminal::LeaveAlternateScreen
    )
    .and_then(|()| terminal::disable_raw_mode());
    result.and(restored)
}

fn session(
    out: &mut impl Write,
    seed: u64,
    ask: Ask,
    dir: &Path,
    hooks: &Hooks,
) -> std::io::Result<()> {
    let started = Instant::now();
    let mut agent = DemoAgent::new(seed, ask);
    if hooks.any() {
        agent = agent.with_hooks();
    }
    if let Some(command) = hooks.of("SessionStart") {
        run_hook(
            command,
            &hook_payload(seed, "SessionStart", &[("source", "startup")]),
        )?;
    }
    let mut shown = Vec::new();
    loop {
        let (width, height) = terminal::size()?;
        let screen = agent.screen(usize::from(width), usize::from(height));
        if screen != shown {
            draw(out, &screen)?;
            shown = screen;
        }
        let input = if event::poll(TICK)? {
            match to_input(event::read()?) {
                Some(input) => input,
                None => continue,
            }
        } else {
            Input::Tick
        };
        let now = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let mut effects = agent.handle(input, now);
        if !matches!(effects.first(), Some(Effect::Exit)) {
            // A key does not stop time: the tick keeps the turn moving while someone types.
            effects.extend(agent.handle(Input::Tick, now));
        }
        let mut effects: std::collections::VecDeque<Effect> = effects.into();
        while let Some(effect) = effects.pop_front() {
            match effect {
                Effect::Exit => {
                    if let Some(command) = hooks.of("SessionEnd") {
                        run_hook(
                            command,
                            &hook_payload(seed, "SessionEnd", &[("reason", "exit")]),
                        )?;
                    }
                    return Ok(());
                }
                Effect::Write { path, contents } => write_file(dir, &path, &contents)?,
                Effect::Hook(payload) => {
                    if let Some(command) = hooks.of_payload(&payload) {
                        run_hook(command, &payload)?;
                    }
                }
                Effect::Permission(payload) => {
                    // The question is on screen while the hook waits for the Leader.
                    let (width, height) = terminal::size()?;
                    shown = agent.screen(usize::from(width), usize::from(height));
                    draw(out, &shown)?;
                    let answer = match hooks.of("PermissionRequest") {
                        Some(command) => ask_hook(command, &payload)?,
                        None => None,
                    };
                    effects.extend(agent.handle(Input::Answer(answer), now));
                }
            }
        }
    }
}

/// Runs `sh -c command` with `payload` on stdin and waits for it; its output is discarded
/// (the demo agent asks nothing of its hooks).
fn run_hook(command: &str, payload: &str) -> std::io::Result<()> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(payload.as_bytes())?;
    }
    child.wait().map(|_| ())
}

/// Runs the `PermissionRequest` hook and reads its decision from its stdout, as Claude Code
/// does (`hookSpecificOutput.decision.behavior`: `allow` or `deny`); anything else is no
/// decision.
fn ask_hook(command: &str, payload: &str) -> std::io::Result<Option<bool>> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(payload.as_bytes())?;
    }
    let output = child.wait_with_output()?;
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
    Ok(
        match answer["hookSpecificOutput"]["decision"]["behavior"].as_str() {
            Some("allow") => Some(true),
            Some("deny") => Some(false),
            _ => None,
        },
    )
}

fn write_file(dir: &Path, path: &str, contents: &str) -> std::io::Result<()> {
    let Some(relative) = file_path(path) else {
        return Ok(());
    };
    let target = dir.join(relative);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(target, contents)
}

fn draw(out: &mut impl Write, screen: &[String]) -> std::io::Result<()> {
    for (row, line) in screen.iter().enumerate() {
        queue!(
            out,
            cursor::MoveTo(0, u16::try_from(row).unwrap_or(u16::MAX)),
            style::Print(line),
            terminal::Clear(terminal::ClearType::UntilNewLine)
        )?;
    }
    out.flush()
}

fn to_input(event: Event) -> Option<Input> {
    match event {
        Event::Paste(text) => Some(Input::Paste(text)),
        Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                Some(Input::CtrlC)
            }
            KeyCode::Char(ch) => Some(Input::Char(ch)),
            KeyCode::Enter => Some(Input::Enter),
            KeyCode::Backspace => Some(Input::Backspace),
            KeyCode::Esc => Some(Input::Escape),
            _ => None,
        },
        _ => None,
    }
}
