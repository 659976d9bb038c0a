//! The demo agent's behaviour (`valp demo-agent`): a pure state machine that looks and acts
//! like a terminal coding agent, so the tmux adapter, its tests and the demo have an agent that
//! needs no network and no vendor account.
//!
//! It has a prompt box; Enter on a non-empty input starts a *turn*: a working phase that
//! streams a few lines under a spinner, sometimes stops on a permission question and waits
//! (blocked), then writes every file the prompt names (`@path` words; each holds a header line
//! and the whole prompt, byte for byte) and returns to the prompt. Escape stops a turn (and
//! answers "no" to a question); Ctrl-C clears the input or stops the turn, and a second Ctrl-C within [`EXIT_WINDOW_MS`] exits. Everything a turn does
//! (how many lines, how fast, whether it asks) comes from the seed and the turn number, never
//! from timing, so a seed replays the same session. Time comes in with every input as
//! milliseconds since start; the terminal loop of `valp demo-agent` (in the binary) supplies it.

use valp_view::sanitize::display_line;

/// A second Ctrl-C within this many milliseconds exits.
pub const EXIT_WINDOW_MS: u64 = 2_000;

/// The spinner's frames, one per tick while working.
const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Words the working phase streams.
const VERBS: &[&str] = &[
    "Reading",
    "Planning",
    "Editing",
    "Checking",
    "Testing",
    "Reviewing",
];

/// When the demo agent asks a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Ask {
    /// In every turn.
    Always,
    /// Never.
    Never,
    /// In about one turn in three, as the seed decides.
    Sometimes,
}

/// What the agent was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A typed character.
    Char(char),
    /// A bracketed paste: inserted into the input as it is, never submitted.
    Paste(String),
    /// Enter.
    Enter,
    /// Backspace.
    Backspace,
    /// Escape.
    Escape,
    /// Ctrl-C.
    CtrlC,
    /// Time passed.
    Tick,
    /// The answer of the `PermissionRequest` hook ([`Effect::Permission`]): allow (`true`),
    /// deny, or nothing (the agent asks on its own screen).
    Answer(Option<bool>),
}

/// What the terminal loop must do for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Write `contents` to `path` (relative to the agent's folder, checked by [`file_path`]).
    Write {
        /// The path the prompt named.
        path: String,
        /// What to write.
        contents: String,
    },
    /// Run the hook command with this payload on stdin, as Claude Code runs a command hook
    /// (only with [`DemoAgent::with_hooks`]; the payload uses Claude's hook layout).
    Hook(String),
    /// Run the hook command with this `PermissionRequest` payload, wait for it, and hand its
    /// decision back as [`Input::Answer`] (only with hooks: Claude asks its hooks before it
    /// shows its own question).
    Permission(String),
    /// Exit.
    Exit,
}

/// What the agent is doing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Idle,
    Working(Turn),
    Blocked(Turn),
}

/// One turn's script, fixed when the prompt is submitted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Turn {
    prompt: String,
    files: Vec<String>,
    steps: u64,
    step: u64,
    ask_at: Option<u64>,
    step_ms: u64,
    next_step_at: u64,
    spinner: usize,
}

/// The demo agent.
#[derive(Debug, Clone)]
pub struct DemoAgent {
    seed: u64,
    ask: Ask,
    phase: Phase,
    input: String,
    transcript: Vec<String>,
    turns: u64,
    last_ctrl_c: Option<u64>,
    hooks: bool,
}

impl DemoAgent {
    /// A fresh agent at its prompt.
    pub fn new(seed: u64, ask: Ask) -> Self {
        Self {
            seed,
            ask,
            phase: Phase::Idle,
            input: String::new(),
            transcript: vec![format!("✻ Welcome to the valp demo agent (seed {seed})")],
            turns: 0,
            last_ctrl_c: None,
            hooks: false,
        }
    }

    /// The same agent, emitting Claude Code's hook events as [`Effect::Hook`]:
    /// `UserPromptSubmit` (with the exact prompt) on submit, `PermissionRequest` when it asks
    /// ([`Effect::Permission`]: the hook's allow or deny answers the question; without one,
    /// `Notification` `permission_prompt` and its own question), `Stop` when a turn completes. Like Claude, it fires no
    /// `Stop` for an interrupted or denied turn. `SessionStart` and `SessionEnd` are the
    /// terminal loop's ([`hook_payload`]).
    #[must_use]
    pub fn with_hooks(mut self) -> Self {
        self.hooks = true;
        self
    }

    fn hook(&self, event: &str, members: &[(&str, &str)]) -> Vec<Effect> {
        if !self.hooks {
            return Vec::new();
        }
        vec![Effect::Hook(hook_payload(self.seed, event, members))]
    }

    /// The text in the input box.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// Takes `input` at `now` (milliseconds since start) and returns what must be done.
    pub fn handle(&mut self, input: Input, now: u64) -> Vec<Effect> {
        if input != Input::CtrlC {
            self.last_ctrl_c = self.last_ctrl_c.filter(|_| input == Input::Tick);
        }
        match (&mut self.phase, input) {
            (_, Input::CtrlC) => return self.ctrl_c(now),
            (Phase::Idle, Input::Char(ch)) => self.input.push(ch),
            (Phase::Idle, Input::Paste(text)) => self.input.push_str(&text),
            (Phase::Idle, Input::Backspace) => {
                self.input.pop();
            }
            (Phase::Idle, Input::Enter) if !self.input.trim().is_empty() => {
                return self.submit(now);
            }
            (Phase::Working(_), Input::Escape) => self.stop("⎿ Interrupted by user"),
            (Phase::Working(_), Input::Tick) => return self.step(now),
            (Phase::Blocked(_), Input::Answer(None)) => {
                return self.hook(
                    "Notification",
                    &[
                        ("notification_type", "permission_prompt"),
                        ("message", "The demo agent needs your permission"),
                    ],
                );
            }
            (
                Phase::Blocked(turn),
                Input::Char('y' | '1') | Input::Enter | Input::Answer(Some(true)),
            ) => {
                let mut turn = turn.clone();
                self.transcript.push("  ⎿ Allowed".to_owned());
                turn.next_step_at = now + turn.step_ms;
                self.phase = Phase::Working(turn);
            }
            (
                Phase::Blocked(_),
                Input::Char('n' | '2') | Input::Escape | Input::Answer(Some(false)),
            ) => {
                self.stop("⎿ Denied: turn stopped");
            }
            // Typing while busy is ignored, as the agents we imitate queue nothing here.
            _ => {}
        }
        Vec::new()
    }

    fn ctrl_c(&mut self, now: u64) -> Vec<Effect> {
        if self
            .last_ctrl_c
            .is_some_and(|then| now.saturating_sub(then) <= EXIT_WINDOW_MS)
        {
            return vec![Effect::Exit];
        }
        self.last_ctrl_c = Some(now);
        if matches!(self.phase, Phase::Idle) {
            self.input.clear();
        } else {
            self.stop("⎿ Interrupted by user");
        }
        self.transcript
            .push("  Press Ctrl-C again to exit".to_owned());
        Vec::new()
    }

    fn submit(&mut self, now: u64) -> Vec<Effect> {
        let prompt = std::mem::take(&mut self.input);
        let effects = self.hook("UserPromptSubmit", &[("prompt", &prompt)]);
        self.turns += 1;
        let mut random = Random::new(self.seed, self.turns);
        let steps = 3 + random.below(5);
        let asks = match self.ask {
            Ask::Always => true,
            Ask::Never => false,
            Ask::Sometimes => random.below(3) == 0,
        };
        let step_ms = 150 + 50 * random.below(5);
        let first_line = prompt.lines().next().unwrap_or_default();
        self.transcript
            .push(format!("> {}", display_line(first_line)));
        self.phase = Phase::Working(Turn {
            files: named_files(&prompt),
            prompt,
            steps,
            step: 0,
            ask_at: asks.then(|| 1 + random.below(steps - 1)),
            step_ms,
            next_step_at: now + step_ms,
            spinner: 0,
        });
        effects
    }

    fn step(&mut self, now: u64) -> Vec<Effect> {
        let Phase::Working(turn) = &mut self.phase else {
            return Vec::new();
        };
        turn.spinner = (turn.spinner + 1) % SPINNER.len();
        if now < turn.next_step_at {
            return Vec::new();
        }
        turn.step += 1;
        turn.next_step_at = now + turn.step_ms;
        let index = usize::try_from(turn.step).unwrap_or_default();
        let verb = VERBS[index.wrapping_add(turn.prompt.len()) % VERBS.len()];
        self.transcript
            .push(format!("  ● {verb} (step {} of {})", turn.step, turn.steps));
        if turn.ask_at == Some(turn.step) {
            turn.ask_at = None;
            let turn = turn.clone();
            let payload = permission_payload(self.seed, self.turns, &turn);
            self.phase = Phase::Blocked(turn);
            if !self.hooks {
                return Vec::new();
            }
            return vec![Effect::Permission(payload)];
        }
        if turn.step < turn.steps {
            return Vec::new();
        }
        let turn = turn.clone();
        // The whole prompt, byte for byte: a file is where a test can see what arrived.
        let contents = format!(
            "written by valp demo-agent (seed {}, turn {})\n{}",
            self.seed, self.turns, turn.prompt
        );
        let mut effects = Vec::new();
        for path in &turn.files {
            if file_path(path).is_some() {
                effects.push(Effect::Write {
                    path: path.clone(),
                    contents: contents.clone(),
                });
                self.transcript
                    .push(format!("  ⎿ Wrote {}", display_line(path)));
            } else {
                self.transcript.push(format!(
                    "  ⎿ Refused to write {}: not a relative path inside this folder",
                    display_line(path)
                ));
            }
        }
        self.transcript.push("✓ Done".to_owned());
        self.phase = Phase::Idle;
        effects.extend(self.hook("Stop", &[("last_assistant_message", "Done")]));
        effects
    }

    fn stop(&mut self, why: &str) {
        self.transcript.push(format!("  {why}"));
        self.phase = Phase::Idle;
    }

    /// The screen: `height` lines (transcript, status, input box, footer), each at most `width`
    /// characters.
    pub fn screen(&self, width: usize, height: usize) -> Vec<String> {
        let inner = width.saturating_sub(4).max(1);
        let rule = "─".repeat(width.saturating_sub(2));
        let mut bottom = Vec::new();
        match &self.phase {
            Phase::Idle => {
                bottom.push(String::new());
                bottom.push(format!("╭{rule}╮"));
                bottom.push(format!(
                    "│ > {} │",
                    fit(&shown_input(&self.input), inner - 2)
                ));
                bottom.push(format!("╰{rule}╯"));
                bottom.push("  ? for shortcuts · ctrl-c twice to exit".to_owned());
            }
            Phase::Working(turn) => {
                bottom.push(format!(
                    "{} Working… ({} of {}) · esc to interrupt",
                    SPINNER[turn.spinner], turn.step, turn.steps
                ));
                bottom.push(format!("╭{rule}╮"));
                bottom.push(format!("│ > {} │", fit("", inner - 2)));
                bottom.push(format!("╰{rule}╯"));
                bottom.push("  esc to interrupt".to_owned());
            }
            Phase::Blocked(turn) => {
                let what = turn.files.first().map_or_else(
                    || "run `cargo test`".to_owned(),
                    |file| format!("write {}", display_line(file)),
                );
                bottom.push(format!("╭{rule}╮"));
                bottom.push(format!(
                    "│ {} │",
                    fit(&format!("Allow demo-agent to {what}?"), inner)
                ));
                bottom.push(format!("│ {} │", fit("❯ 1. Yes", inner)));
                bottom.push(format!("│ {} │", fit("  2. No, and stop (esc)", inner)));
                bottom.push(format!("╰{rule}╯"));
            }
        }
        let room = height.saturating_sub(bottom.len());
        let skip = self.transcript.len().saturating_sub(room);
        let mut lines: Vec<String> = self.transcript[skip..]
            .iter()
            .map(|line| fit(line, width).trim_end().to_owned())
            .collect();
        lines.resize(room, String::new());
        lines.extend(bottom);
        lines
    }
}

/// The input as the box shows it: line breaks as `⏎`, the end when it does not fit.
/// A hook payload in Claude Code's layout: `hook_event_name`, a `session_id` naming the seed,
/// and `members`.
pub fn hook_payload(seed: u64, event: &str, members: &[(&str, &str)]) -> String {
    let mut payload = serde_json::Map::new();
    payload.insert("hook_event_name".into(), event.into());
    payload.insert("session_id".into(), format!("demo-agent-{seed}").into());
    for (name, value) in members {
        payload.insert((*name).to_owned(), (*value).into());
    }
    serde_json::Value::Object(payload).to_string()
}

/// The `PermissionRequest` payload of `turn`'s question: `Write` of the first file it names,
/// else `Bash` running `cargo test`, in Claude Code's layout.
fn permission_payload(seed: u64, turns: u64, turn: &Turn) -> String {
    let (tool, input) = turn.files.first().map_or_else(
        || ("Bash", serde_json::json!({"command": "cargo test"})),
        |file| ("Write", serde_json::json!({"file_path": file})),
    );
    let mut payload: serde_json::Value = serde_json::from_str(&hook_payload(
        seed,
        "PermissionRequest",
        &[
            ("tool_name", tool),
            ("tool_use_id", &format!("toolu_demo_{turns}")),
        ],
    ))
    .unwrap_or_default();
    payload["tool_input"] = input;
    payload.to_string()
}

fn shown_input(input: &str) -> String {
    display_line(&input.replace('\n', "⏎"))
}

/// `text` padded or cut to exactly `width` characters (the end kept when cut, as an input box
/// follows the cursor).
fn fit(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count > width {
        text.chars().skip(count - width).collect()
    } else {
        format!("{text}{}", " ".repeat(width - count))
    }
}

/// The files a prompt names: its words starting with `@`, trailing punctuation removed.
fn named_files(prompt: &str) -> Vec<String> {
    prompt
        .split_whitespace()
        .filter_map(|word| word.strip_prefix('@'))
        .map(|path| path.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']))
        .filter(|path| !path.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `path` as a relative path that stays inside the agent's folder, or `None`.
pub fn file_path(path: &str) -> Option<&std::path::Path> {
    let path = std::path::Path::new(path);
    path.components()
        .all(|part| matches!(part, std::path::Component::Normal(_)))
        .then_some(path)
}

/// splitmix64 over the seed and the turn: the same seed replays the same turns.
struct Random(u64);

impl Random {
    fn new(seed: u64, turn: u64) -> Self {
        Self(seed ^ turn.wrapping_mul(0x9e37_79b9_7f4a_7c15))
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % bound.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ticks every 50 ms until the agent is idle again or `limit` ms passed; returns the
    /// effects and the time reached.
    fn run_turn(agent: &mut DemoAgent, mut now: u64, limit: u64) -> (Vec<Effect>, u64) {
        let mut effects = Vec::new();
        let end = now + limit;
        while now < end {
            now += 50;
            effects.extend(agent.handle(Input::Tick, now));
            if agent.phase == Phase::Idle || matches!(agent.phase, Phase::Blocked(_)) {
                break;
            }
        }
        (effects, now)
    }

    fn typed(agent: &mut DemoAgent, text: &str) {
        agent.handle(Input::Paste(text.to_owned()), 0);
    }

    #[test]
    fn a_turn_works_then_writes_the_named_files() {
        let mut agent = DemoAgent::new(7, Ask::Never);
        typed(&mut agent, "please write @a.txt and @dir/b.md.");
        assert_eq!(agent.input(), "please write @a.txt and @dir/b.md.");
        agent.handle(Input::Enter, 0);
        assert!(matches!(agent.phase, Phase::Working(_)));
        assert_eq!(agent.input(), "");
        let screen = agent.screen(60, 20).join("\n");
        assert!(screen.contains("Working… (0 of"), "{screen}");
        let (effects, _) = run_turn(&mut agent, 0, 10_000);
        assert_eq!(agent.phase, Phase::Idle);
        let paths: Vec<_> = effects
            .iter()
            .map(|effect| match effect {
                Effect::Write { path, .. } => path.as_str(),
                Effect::Hook(_) => "hook",
                Effect::Permission(_) => "permission",
                Effect::Exit => "exit",
            })
            .collect();
        assert_eq!(paths, ["a.txt", "dir/b.md"]);
        assert!(agent.screen(60, 20).join("\n").contains("✓ Done"));
    }

    /// The hooks the demo agent emits map to the signals a real Claude session gives, and
    /// the submission's digest is the prompt's.
    #[test]
    fn with_hooks_it_emits_claudes_events() {
        use crate::agent::channel::hook::{Source, map};
        use crate::agent::channel::signal::SignalKind;
        let kinds = |effects: &[Effect]| -> Vec<SignalKind> {
            effects
                .iter()
                .filter_map(|effect| match effect {
                    Effect::Hook(payload) => Some(
                        map(Source::ClaudeHook, payload.as_bytes())
                            .unwrap()
                            .draft
                            .kind,
                    ),
                    _ => None,
                })
                .collect()
        };
        let mut agent = DemoAgent::new(7, Ask::Always).with_hooks();
        typed(&mut agent, "write @a.txt\nplease");
        let submitted = agent.handle(Input::Enter, 0);
        assert_eq!(kinds(&submitted), [SignalKind::PromptSubmitted]);
        let Effect::Hook(payload) = &submitted[0] else {
            panic!("{submitted:?}")
        };
        let mapped = map(Source::ClaudeHook, payload.as_bytes()).unwrap();
        assert_eq!(
            mapped.draft.prompt_digest,
            Some(valp_kernel::canonical::sha256_digest(
                b"write @a.txt\nplease"
            ))
        );
        let (asked, now) = run_turn(&mut agent, 0, 10_000);
        // Claude asks its PermissionRequest hook first; only without a decision does it show
        // its own question (and notify permission_prompt).
        let [Effect::Permission(request)] = asked.as_slice() else {
            panic!("{asked:?}")
        };
        let mapped = map(Source::ClaudeHook, request.as_bytes()).unwrap();
        assert_eq!(mapped.draft.kind, SignalKind::PermissionRequested);
        let ask = mapped.ask.unwrap();
        assert_eq!(
            (ask.tool_name.as_deref(), ask.detail.as_str()),
            (Some("Write"), "a.txt")
        );
        let shown = agent.handle(Input::Answer(None), now);
        assert_eq!(kinds(&shown), [SignalKind::PermissionPrompt]);
        agent.handle(Input::Char('y'), now);
        let (done, _) = run_turn(&mut agent, now, 10_000);
        assert_eq!(kinds(&done), [SignalKind::TurnCompleted]);
        // An interrupted turn fires no Stop, as Claude's does not.
        typed(&mut agent, "again");
        agent.handle(Input::Enter, 20_000);
        assert!(kinds(&agent.handle(Input::Escape, 20_100)).is_empty());
        // A hook's deny stops the turn; its allow goes on.
        typed(&mut agent, "write @b.txt");
        agent.handle(Input::Enter, 30_000);
        let (_, now) = run_turn(&mut agent, 30_000, 10_000);
        assert!(matches!(agent.phase, Phase::Blocked(_)));
        agent.handle(Input::Answer(Some(false)), now);
        assert_eq!(agent.phase, Phase::Idle);
        typed(&mut agent, "write @c.txt");
        agent.handle(Input::Enter, 60_000);
        let (_, now) = run_turn(&mut agent, 60_000, 10_000);
        agent.handle(Input::Answer(Some(true)), now);
        assert!(matches!(agent.phase, Phase::Working(_)));
        // Without hooks, none.
        let mut quiet = DemoAgent::new(7, Ask::Never);
        typed(&mut quiet, "x");
        assert!(quiet.handle(Input::Enter, 0).is_empty());
    }

    #[test]
    fn a_paste_is_inserted_byte_exact_and_never_submitted() {
        let mut agent = DemoAgent::new(1, Ask::Never);
        let hostile = "a;b $(rm -rf /) 'q' \"d\" C-c Enter\nsecond line";
        typed(&mut agent, hostile);
        assert_eq!(agent.input(), hostile);
        assert_eq!(agent.phase, Phase::Idle);
        let (effects, _) = run_turn(&mut agent, 0, 2_000);
        assert!(effects.is_empty());
        assert_eq!(agent.phase, Phase::Idle, "a paste alone starts no turn");
    }

    #[test]
    fn a_permission_question_blocks_until_answered() {
        let mut agent = DemoAgent::new(3, Ask::Always);
        typed(&mut agent, "write @x.txt");
        agent.handle(Input::Enter, 0);
        let (effects, now) = run_turn(&mut agent, 0, 10_000);
        assert!(effects.is_empty());
        assert!(matches!(agent.phase, Phase::Blocked(_)));
        let screen = agent.screen(60, 12).join("\n");
        assert!(
            screen.contains("Allow demo-agent to write x.txt?"),
            "{screen}"
        );
        // Blocked stays blocked however long nobody answers.
        let (_, now) = run_turn(&mut agent, now, 5_000);
        assert!(matches!(agent.phase, Phase::Blocked(_)));
        agent.handle(Input::Char('y'), now);
        let (effects, _) = run_turn(&mut agent, now, 10_000);
        assert_eq!(effects.len(), 1);
        assert_eq!(agent.phase, Phase::Idle);
    }

    #[test]
    fn escape_denies_a_question_and_stops_a_turn_without_writing() {
        let mut agent = DemoAgent::new(3, Ask::Always);
        typed(&mut agent, "write @x.txt");
        agent.handle(Input::Enter, 0);
        let (_, now) = run_turn(&mut agent, 0, 10_000);
        agent.handle(Input::Escape, now);
        assert_eq!(agent.phase, Phase::Idle);
        assert!(agent.screen(60, 12).join("\n").contains("Denied"));

        let mut agent = DemoAgent::new(3, Ask::Never);
        typed(&mut agent, "write @x.txt");
        agent.handle(Input::Enter, 0);
        agent.handle(Input::Escape, 10);
        assert_eq!(agent.phase, Phase::Idle);
        let (effects, _) = run_turn(&mut agent, 10, 10_000);
        assert!(effects.is_empty());
    }

    #[test]
    fn ctrl_c_twice_exits_once_clears() {
        let mut agent = DemoAgent::new(1, Ask::Never);
        typed(&mut agent, "draft");
        assert!(agent.handle(Input::CtrlC, 100).is_empty());
        assert_eq!(agent.input(), "");
        assert_eq!(agent.handle(Input::CtrlC, 200), [Effect::Exit]);
        // Too slow, or something else in between: no exit.
        let mut agent = DemoAgent::new(1, Ask::Never);
        agent.handle(Input::CtrlC, 0);
        assert!(agent.handle(Input::CtrlC, EXIT_WINDOW_MS + 1).is_empty());
        agent.handle(Input::Char('a'), EXIT_WINDOW_MS + 2);
        assert!(agent.handle(Input::CtrlC, EXIT_WINDOW_MS + 3).is_empty());
    }

    #[test]
    fn the_same_seed_replays_the_same_session() {
        let session = |seed| {
            let mut agent = DemoAgent::new(seed, Ask::Sometimes);
            let mut now = 0;
            for turn in 0..6 {
                typed(&mut agent, &format!("turn {turn} @f{turn}.txt"));
                agent.handle(Input::Enter, now);
                let (_, reached) = run_turn(&mut agent, now, 10_000);
                agent.handle(Input::Enter, reached);
                now = run_turn(&mut agent, reached, 10_000).1;
            }
            agent.transcript
        };
        assert_eq!(session(11), session(11));
        assert_ne!(session(11), session(12));
    }

    #[test]
    fn only_relative_paths_inside_the_folder_are_written() {
        assert!(file_path("a/b.txt").is_some());
        assert!(file_path("../escape.txt").is_none());
        assert!(file_path("/etc/passwd").is_none());
        assert!(file_path("a/../../b").is_none());
        let mut agent = DemoAgent::new(5, Ask::Never);
        typed(&mut agent, "@../x.txt @ok.txt");
        agent.handle(Input::Enter, 0);
        let (effects, _) = run_turn(&mut agent, 0, 10_000);
        assert_eq!(effects.len(), 1);
        assert!(
            agent
                .screen(80, 20)
                .join("\n")
                .contains("Refused to write ../x.txt")
        );
    }

    #[test]
    fn hostile_prompt_text_is_shown_sanitized() {
        let mut agent = DemoAgent::new(5, Ask::Never);
        typed(&mut agent, "\u{1b}]0;pwned\u{7}hi\u{202e}");
        let screen = agent.screen(80, 10).join("\n");
        assert!(
            !screen.contains('\u{1b}') && !screen.contains('\u{202e}'),
            "{screen}"
        );
        assert!(screen.contains("hi\\u{202e}"), "{screen}");
    }
}
