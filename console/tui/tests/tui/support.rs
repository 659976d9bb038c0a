//! A scripted backend, the views the tests show, and helpers to press keys and render.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use valp_tui::{App, Config, Event, Flow, dispatch};
use valp_view::{
    Backend, CandidateRow, ConsoleView, EpochRow, ItemRow, LaneView, LeaderView, NeedKind, NeedRow,
    ObservationRow, Refusal, RejectionRow, Request, SessionCheck, TaskRow,
};

/// Asserts the insta snapshots of `app` at 120x40 and 80x24, named `<name>_<width>x<height>`.
/// A macro rather than a function so that insta names the files after the calling test module.
macro_rules! snapshots {
    ($name:expr, $app:expr) => {
        for (width, height) in [(120, 40), (80, 24)] {
            insta::assert_snapshot!(
                format!("{}_{width}x{height}", $name),
                $crate::support::draw($app, width, height).backend()
            );
        }
    };
}
pub(crate) use snapshots;

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
        items: Vec::new(),
        observations: Vec::new(),
        rejections: Vec::new(),
        activity: Vec::new(),
        agents: Vec::new(),
        needs: Vec::new(),
        now_ms: NOW_MS,
        workflows: Vec::new(),
        machine: None,
        corrections: Vec::new().into(),
        usage: Vec::new(),
        opening: None,
        foreign: Vec::new(),
    }
}

/// The view's clock in every test view: 2026-11-30T12:00:00Z.
pub const NOW_MS: i64 = 1_796_040_000_000;

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
        interrupted: false,
        waiting: String::new(),
        gates: String::new(),
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

pub const BUILD: &str = "task-build-index";
pub const MIGRATE: &str = "task-migrate-store-to-compact-entries";
pub const REVIEW: &str = "task-review-docs";
pub const TUNE: &str = "task-tune-bench";

fn item(
    task_id: &str,
    work_item_id: &str,
    requirement: &str,
    status: &str,
    position: &str,
    attempt: &str,
) -> ItemRow {
    ItemRow {
        task_id: task_id.to_owned(),
        work_item_id: work_item_id.to_owned(),
        requirement: requirement.to_owned(),
        status: status.to_owned(),
        position: position.to_owned(),
        attempt: attempt.to_owned(),
        // Attempts in these views started a few minutes ago.
        attempt_since_ms: if attempt.is_empty() {
            0
        } else {
            NOW_MS - 4 * 60_000
        },
    }
}

pub fn observation(
    task_id: &str,
    work_item_id: &str,
    attempt_id: &str,
    sequence: u64,
    status: &str,
    detail: &str,
) -> ObservationRow {
    ObservationRow {
        task_id: task_id.to_owned(),
        work_item_id: work_item_id.to_owned(),
        attempt_id: attempt_id.to_owned(),
        sequence,
        status: status.to_owned(),
        detail: detail.to_owned(),
        source: format!("runtime/process/attempts/{attempt_id}/observations/{sequence:06}.json"),
        provenance: "valp-process-adapter (process_bound) → valp-process-adapter (content_bound)"
            .to_owned(),
        seen_ms: NOW_MS - i64::try_from(sequence).unwrap_or(0) * 60_000,
        seen_at: format!("2026-11-30T11:5{}:00.000Z", 10 - sequence.min(9)),
    }
}

/// `task` with its progress, interrupt and wait.
fn progress(mut row: TaskRow, completed: usize, total: usize, waiting: &str) -> TaskRow {
    row.items_completed = completed;
    row.items_total = total;
    row.interrupted = waiting == "interrupted by the Leader";
    waiting.clone_into(&mut row.waiting);
    row
}

/// The reopened Leader with work going on: four tasks (one running, one fenced, one in review,
/// one interrupted), the running task's frontier, live observations, two rejected files and the
/// System's activity.
pub fn working() -> ConsoleView {
    let mut view = reopened();
    view.tasks = vec![
        progress(
            task(BUILD, "executing", 12, 2, false),
            1,
            5,
            "2 attempt(s) running",
        ),
        task(MIGRATE, "blocked", 40, 1, true),
        progress(
            task(REVIEW, "reviewing", 31, 2, false),
            3,
            3,
            "the Leader's review",
        ),
        progress(
            task(TUNE, "fixing", 9, 2, false),
            0,
            2,
            "interrupted by the Leader",
        ),
    ];
    view.items = working_items();
    view.observations = working_observations();
    view.rejections = vec![
        RejectionRow {
            path: "inbox/obs-17.json".to_owned(),
            reason: "sequence 5 arrived after 3 for attempt att-index-1 (4 is missing)".to_owned(),
        },
        RejectionRow {
            path: "runtime/process/attempts/9f/observations/000004.json".to_owned(),
            reason: "not an adapter observation: unknown member \"stdout\" at $.result".to_owned(),
        },
    ];
    view.activity = vec![
        format!("{BUILD}  launched att-index-1"),
        format!("{BUILD}  work_item_running  (adapter accepted att-index-1)"),
        format!("{REVIEW}  verification_passed  (every check passed)"),
        format!("{TUNE}  interrupt accepted: fixing at revision 9"),
        format!("{BUILD}  work_item_completed  (scan exited 0)"),
    ];
    view.needs = vec![
        need(
            NeedKind::FailedAttempt,
            BUILD,
            Some("lint"),
            "att-lint-2",
            "lint is blocked: attempt att-lint-2 did not complete and the System retries no more",
            7 * 60,
        ),
        need(
            NeedKind::Review,
            REVIEW,
            None,
            "r31",
            "the work is verified: review it",
            42 * 60,
        ),
    ];
    view
}

/// A need first seen `age_seconds` before [`NOW_MS`].
pub fn need(
    kind: NeedKind,
    task_id: &str,
    work_item_id: Option<&str>,
    occurrence: &str,
    summary: &str,
    age_seconds: i64,
) -> NeedRow {
    NeedRow {
        key: NeedRow::key_of(kind, task_id, occurrence),
        kind,
        task_id: task_id.to_owned(),
        work_item_id: work_item_id.map(str::to_owned),
        summary: summary.to_owned(),
        since_ms: NOW_MS - age_seconds * 1000,
        // NOW_MS less a whole number of minutes under an hour.
        since_at: format!("2026-11-30T11:{:02}:00.000Z", 60 - age_seconds / 60),
        acknowledged: false,
        ask: None,
    }
}

fn working_items() -> Vec<ItemRow> {
    let settled = "settled (completed)";
    vec![
        item(
            BUILD,
            "scan",
            "required",
            "completed",
            settled,
            "att-scan-1 g1 completed",
        ),
        item(
            BUILD,
            "index",
            "required",
            "running",
            "in flight",
            "att-index-1 g1 running",
        ),
        item(
            BUILD,
            "lint",
            "soft",
            "blocked",
            "blocked",
            "att-lint-2 g2 failed",
        ),
        item(BUILD, "docs", "optional", "eligible", "ready", ""),
        item(
            BUILD,
            "publish",
            "required",
            "pending",
            "locked by index (running)",
            "",
        ),
        item(
            MIGRATE,
            "convert",
            "required",
            "blocked",
            "blocked",
            "att-convert-1 g1 failed",
        ),
        item(
            REVIEW,
            "outline",
            "required",
            "completed",
            settled,
            "att-outline-1 g1 completed",
        ),
        item(
            REVIEW,
            "draft",
            "required",
            "completed",
            settled,
            "att-draft-1 g1 completed",
        ),
        item(
            REVIEW,
            "proofread",
            "optional",
            "completed",
            settled,
            "att-proofread-1 g1 completed",
        ),
        item(
            TUNE,
            "measure",
            "required",
            "cancelled",
            "settled (cancelled)",
            "att-measure-1 g1 cancelled",
        ),
        item(
            TUNE,
            "tune",
            "required",
            "pending",
            "locked by measure (cancelled)",
            "",
        ),
    ]
}

fn working_observations() -> Vec<ObservationRow> {
    vec![
        observation(
            BUILD,
            "index",
            "att-index-1",
            3,
            "accepted",
            "pid 4242 (started 2026-11-30T12:00:03Z)",
        ),
        observation(
            BUILD,
            "lint",
            "att-lint-2",
            2,
            "blocked",
            "the linter wants to rewrite 212 files under store/src and kernel/src; it stopped and \
             waits for a decision before it touches anything",
        ),
        observation(BUILD, "scan", "att-scan-1", 2, "completed", "exit status 0"),
        observation(BUILD, "scan", "att-scan-1", 1, "accepted", "pid 4100"),
    ]
}

/// [`working`] with the bound session not re-proven (read-only).
pub fn working_read_only() -> ConsoleView {
    let mut view = working();
    view.lane.session = SessionCheck::Unproven {
        reason: "no observed session has the fingerprint of human:uid-1000 (another OS user?)"
            .to_owned(),
    };
    view.lane.candidates = unproven().lane.candidates;
    view
}

/// A refusal of an operation on a task bound to a fenced epoch.
pub fn epoch_refusal() -> Refusal {
    Refusal {
        code: "VALP-E-LEADER-EPOCH".to_owned(),
        message: format!(
            "task {MIGRATE} is bound to fenced epoch 1 (the active epoch is 2); hand it over \
             with `valp task handoff` first"
        ),
    }
}

/// The words of the detail popup at 120x40 (100 columns wide, centred: columns 10 to 109), its
/// border and wrapping taken out, one space apart.
pub fn popup(app: &App) -> String {
    screen_text(app, 120, 40)
        .lines()
        .map(|line| {
            line.trim_matches('"')
                .chars()
                .skip(11)
                .take(98)
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
