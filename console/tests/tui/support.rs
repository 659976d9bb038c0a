//! A scripted backend, the views the tests show, and helpers to press keys and render.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use valp_console::tui::{App, Config, Event, Flow, dispatch};
use valp_console::view::{
    Backend, CandidateRow, ConsoleView, EpochRow, LaneView, LeaderView, Refusal, Request,
    SessionCheck, TaskRow,
};

/// A backend that answers from a script and records what it was asked.
pub struct Scripted {
    /// What `view` returns.
    pub view: ConsoleView,
    /// What `view` returns after the first accepted Select or Rotate.
    pub after: Option<ConsoleView>,
    /// Answers to requests, in order; `Ok("observed again")` once they run out.
    pub answers: VecDeque<Result<String, Refusal>>,
    /// Every request, in order.
    pub requests: Vec<Request>,
    /// How often `view` was called.
    pub views_read: usize,
}

impl Scripted {
    pub fn new(view: ConsoleView) -> Self {
        Self {
            view,
            after: None,
            answers: VecDeque::new(),
            requests: Vec::new(),
            views_read: 0,
        }
    }
}

impl Backend for Scripted {
    fn view(&mut self) -> ConsoleView {
        self.views_read += 1;
        self.view.clone()
    }

    fn request(&mut self, request: &Request) -> Result<String, Refusal> {
        self.requests.push(request.clone());
        let answer = self
            .answers
            .pop_front()
            .unwrap_or_else(|| Ok("observed again".to_owned()));
        if answer.is_ok()
            && *request != Request::Refresh
            && let Some(after) = self.after.take()
        {
            self.view = after;
        }
        answer
    }
}

/// The app as `run` starts it: the backend's first view and the built-in configuration.
pub fn start(backend: &mut Scripted) -> App {
    App::new(Config::builtin().unwrap(), backend.view())
}

/// Presses `code` and lets the app and backend settle.
pub fn press(app: &mut App, backend: &mut Scripted, code: KeyCode) -> Flow {
    dispatch(app, backend, Event::Key(KeyEvent::from(code)))
}

/// Presses each character of `keys`.
pub fn type_keys(app: &mut App, backend: &mut Scripted, keys: &str) {
    for key in keys.chars() {
        press(app, backend, KeyCode::Char(key));
    }
}

/// The app drawn on a `width` x `height` test terminal.
pub fn draw(app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| app.render(frame)).unwrap();
    terminal
}

/// The screen text of the app at `width` x `height`.
pub fn screen_text(app: &App, width: u16, height: u16) -> String {
    draw(app, width, height).backend().to_string()
}

fn candidate(
    candidate_id: &str,
    principal_id: &str,
    principal_kind: &str,
    labels: &[&str],
    summary: &str,
    bound: bool,
) -> CandidateRow {
    CandidateRow {
        candidate_id: candidate_id.to_owned(),
        principal_id: principal_id.to_owned(),
        principal_kind: principal_kind.to_owned(),
        health: "live (observed 2026-11-30T11:59:58Z)".to_owned(),
        labels: labels.iter().map(|label| (*label).to_owned()).collect(),
        summary: summary.to_owned(),
        bound,
    }
}

pub const HUMAN: &str = "human:uid-1000";
pub const PANE_3: &str = "tmux:/tmp/tmux-1000/default:%3";
pub const PANE_5: &str = "tmux:/tmp/tmux-1000/default:%5";
pub const PANE_7: &str = "tmux:/tmp/tmux-1000/default:%7";
pub const PANE_8: &str = "tmux:/tmp/tmux-1000/default:%8";

fn human(bound: bool) -> CandidateRow {
    candidate(
        HUMAN,
        "user:alice",
        "human",
        &[],
        "alice on /dev/pts/3, bash in /home/alice/work/valp",
        bound,
    )
}

fn base_view(lane: LaneView) -> ConsoleView {
    ConsoleView {
        installation_id: "inst-7f3a9c".to_owned(),
        root: "/home/alice/work/valp/.valp".to_owned(),
        lane,
        tasks: Vec::new(),
    }
}

/// No Leader yet; one human and two tmux panes running agents.
pub fn first_run() -> ConsoleView {
    base_view(LaneView {
        status: "awaiting_leader_selection".to_owned(),
        active_epoch: 0,
        leader: None,
        session: SessionCheck::Unbound,
        candidates: vec![
            human(false),
            candidate(
                PANE_3,
                "tmux:alice",
                "tmux_pane",
                &["agent:claude"],
                "work:1.0 claude 200x50",
                false,
            ),
            candidate(
                PANE_7,
                "tmux:alice",
                "tmux_pane",
                &["agent:codex"],
                "work:2.0 codex 200x50",
                false,
            ),
        ],
        epochs: Vec::new(),
    })
}

fn epoch(epoch: i128, principal_id: &str, candidate_id: &str, how: &str, fenced: bool) -> EpochRow {
    EpochRow {
        epoch,
        principal_id: principal_id.to_owned(),
        candidate_id: candidate_id.to_owned(),
        how: how.to_owned(),
        fenced,
    }
}

fn task(task_id: &str, status: &str, revision: i128, epoch: i128, fenced: bool) -> TaskRow {
    TaskRow {
        task_id: task_id.to_owned(),
        status: status.to_owned(),
        revision,
        epoch,
        fenced,
        items_completed: 3,
        items_total: 5,
    }
}

/// user:alice leads in epoch 2 (reopened); epoch 1 (a tmux pane) is fenced, and so is one of
/// the two tasks.
pub fn reopened() -> ConsoleView {
    let mut view = base_view(LaneView {
        status: "active".to_owned(),
        active_epoch: 2,
        leader: Some(LeaderView {
            principal_id: "user:alice".to_owned(),
            principal_kind: "human".to_owned(),
            candidate_id: HUMAN.to_owned(),
            epoch: 2,
            session_summary: "alice on /dev/pts/3, bash in /home/alice/work/valp".to_owned(),
        }),
        session: SessionCheck::Reopened {
            at: "2026-11-30T12:00:00Z".to_owned(),
            epoch: 2,
        },
        candidates: vec![human(true)],
        epochs: vec![
            epoch(1, "tmux:alice", PANE_3, "selected", true),
            epoch(2, "user:alice", HUMAN, "rotated", false),
        ],
    });
    view.tasks = vec![
        task("task-build-index", "active", 12, 2, false),
        task(
            "task-migrate-store-to-compact-entries",
            "blocked",
            40,
            1,
            true,
        ),
    ];
    view
}

/// tmux:alice leads in epoch 1 on pane %3, whose fingerprint changed: read-only. The Doctor
/// sees %3 (bound), a new pane %8 of the same principal, the human and bob's pane.
pub fn unproven() -> ConsoleView {
    let mut view = base_view(LaneView {
        status: "active".to_owned(),
        active_epoch: 1,
        leader: Some(LeaderView {
            principal_id: "tmux:alice".to_owned(),
            principal_kind: "tmux_pane".to_owned(),
            candidate_id: PANE_3.to_owned(),
            epoch: 1,
            session_summary: "work:1.0 claude 200x50".to_owned(),
        }),
        session: SessionCheck::Unproven {
            reason: "pane %3 answers with another fingerprint (the tmux server restarted)"
                .to_owned(),
        },
        candidates: vec![
            candidate(
                PANE_3,
                "tmux:alice",
                "tmux_pane",
                &["agent:claude"],
                "work:1.0 claude 200x50",
                true,
            ),
            candidate(
                PANE_8,
                "tmux:alice",
                "tmux_pane",
                &["agent:claude"],
                "work:1.0 zsh 200x50",
                false,
            ),
            human(false),
            candidate(
                PANE_5,
                "tmux:bob",
                "tmux_pane",
                &["agent:codex"],
                "review:0.0 codex 120x40",
                false,
            ),
        ],
        epochs: vec![epoch(1, "tmux:alice", PANE_3, "selected", false)],
    });
    view.tasks = vec![
        task("task-build-index", "active", 12, 1, false),
        task("task-write-docs", "completed", 7, 1, false),
    ];
    view
}

/// The refusal the tests script.
pub fn permission_denied() -> Refusal {
    Refusal {
        code: "VALP-E-PERMISSION-DENIED".to_owned(),
        message: "the OS user running valp (uid 1001) may not select a session of uid 1000"
            .to_owned(),
    }
}
