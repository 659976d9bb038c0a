//! The Needs-you pane: what waits for the Leader across tasks, most severe first, then oldest
//! first (the order the view comes in), acknowledged needs last and muted. Each row says how
//! long the need has waited (against the view's clock), its kind, task and work item, what is
//! needed, and the keys that answer it, from the keymap (never a CLI command).

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;

use super::action::Action;
use super::app::Ctx;
use super::keymap::{Mode, keys_text};
use super::list::{self, Entries, Listing};
use super::selection::Pane;
use super::text::{Cut, cell, pieces, row, widths};
use super::theme::Slot;
use valp_view::needs::age_text;
use valp_view::{NeedKind, NeedRow, Severity, TaskRow};

/// The keys that answer a need of `kind` on the main screen.
pub const fn answers(kind: NeedKind) -> &'static [Action] {
    match kind {
        NeedKind::Review => &[Action::PassReview, Action::RejectReview],
        NeedKind::Approval => &[Action::GrantApproval, Action::DenyApproval],
        NeedKind::FailedAttempt => &[Action::RetryItem, Action::CancelSelected],
        NeedKind::NothingToRun => &[Action::Recover, Action::Redirect],
        NeedKind::EvidenceMissing => &[Action::Redirect],
        NeedKind::AgentRequest => &[Action::AllowRequest, Action::DenyRequest],
        NeedKind::AgentBlocked | NeedKind::UnconfirmedSubmission => {
            &[Action::Agent, Action::CancelSelected]
        }
        NeedKind::CorrectionRound => &[Action::RetryItem, Action::Recover],
    }
}

/// The answering keys in words, e.g. `p pass review · f reject review`.
pub fn answer_text(ctx: &Ctx, kind: NeedKind) -> String {
    answers(kind)
        .iter()
        .filter_map(|action| {
            let keys = ctx.keymap.keys(Mode::Main, *action);
            (!keys.is_empty()).then(|| {
                format!(
                    "{} {}",
                    keys_text(&keys),
                    action.label().trim_end_matches('…')
                )
            })
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

/// What the System waits for on `task`, in words for the Tasks and Work items panes: the
/// task's first need with the keys that answer it (`review: p pass review · f reject review`),
/// else the System's own words.
pub fn waiting_for(ctx: &Ctx, task: &TaskRow) -> String {
    ctx.view
        .needs
        .iter()
        .find(|need| need.task_id == task.task_id)
        .map_or_else(
            || task.waiting.clone(),
            |need| format!("{}: {}", need.kind.title(), answer_text(ctx, need.kind)),
        )
}

/// How many needs are not acknowledged (the title line's count).
pub fn waiting(needs: &[NeedRow]) -> usize {
    needs.iter().filter(|need| !need.acknowledged).count()
}

/// Rows the pane takes in the full layout: up to four needs, and its borders.
pub fn height(needs: &[NeedRow]) -> u16 {
    u16::try_from(needs.len().clamp(1, 4)).unwrap_or(1) + 2
}

/// Draws the pane into `area`.
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx) {
    let needs = &ctx.view.needs;
    let inner_width = area.width.saturating_sub(2);
    let cursor = ctx.selection.cursor(Pane::Needs);
    let wide = inner_width >= 100;
    let focused = ctx.selection.focus() == Pane::Needs;
    let answers: Vec<String> = needs
        .iter()
        .map(|need| answer_text(ctx, need.kind))
        .collect();
    let keys_width = answers
        .iter()
        .map(|text| u16::try_from(text.chars().count()).unwrap_or(u16::MAX))
        .max()
        .unwrap_or(0)
        .min(MAX_KEYS_WIDTH);
    let entries = Entries::new(needs.len(), move |at| {
        let (need, answer) = (&needs[at], &answers[at]);
        let columns = Columns {
            width: inner_width,
            keys: keys_width,
            wide,
        };
        let mut lines = vec![need_line(ctx, columns, need, answer, at == cursor)];
        // The focused need shows what is needed in full, under its row.
        if focused && at == cursor {
            lines.extend(
                pieces(
                    &shown_summary(ctx, need),
                    inner_width.saturating_sub(8),
                    MAX_ROWS,
                )
                .iter()
                .map(|piece| {
                    list::continuation(
                        ctx,
                        &format!("      {piece}"),
                        inner_width.saturating_sub(2),
                        Slot::Muted,
                    )
                }),
            );
        }
        lines
    });
    let mut listing = Listing::counted(ctx, Pane::Needs, None, entries, "Nothing waits for you.");
    listing.title = format!("Needs you ({})", waiting(needs));
    list::render(frame, area, ctx, listing);
}

/// What is needed, in words: an agent's request says how long until its hook answers alone.
pub fn shown_summary(ctx: &Ctx, need: &NeedRow) -> String {
    match &need.ask {
        Some(ask) => format!(
            "{} · answered without you in {}",
            need.summary,
            age_text(ctx.view.now_ms, ask.deadline_ms)
        ),
        None => need.summary.clone(),
    }
}

/// Most rows the focused need's summary takes under it.
const MAX_ROWS: usize = 3;

/// Most columns the answering keys take.
const MAX_KEYS_WIDTH: u16 = 36;

/// How a row is cut into columns.
#[derive(Clone, Copy)]
struct Columns {
    /// The pane's inner width.
    width: u16,
    /// The answering keys' column.
    keys: u16,
    /// Whether there is room for the summary.
    wide: bool,
}

fn need_line(
    ctx: &Ctx,
    columns: Columns,
    need: &NeedRow,
    answer: &str,
    selected: bool,
) -> Line<'static> {
    let Columns { width, keys, wide } = columns;
    let slot = if need.acknowledged {
        Slot::Muted
    } else {
        match need.kind.severity() {
            Severity::Urgent | Severity::Failure => Slot::StatusFailed,
            Severity::Decision => Slot::StatusAttention,
            Severity::Stalled => Slot::AlertWarn,
        }
    };
    let subject = match &need.work_item_id {
        Some(item) => format!("{} / {item}", need.task_id),
        None => need.task_id.clone(),
    };
    let kind = if need.acknowledged {
        format!("✓ {}", need.kind.title())
    } else {
        need.kind.title().to_owned()
    };
    let what = &shown_summary(ctx, need);
    let marker = if selected { "›" } else { "" };
    let age = age_text(need.since_ms, ctx.view.now_ms);
    if wide {
        let [marker_w, age_w, kind_w, subject_w, what_w, keys] = widths(
            width,
            [
                Constraint::Length(1),
                Constraint::Length(5),
                Constraint::Length(20),
                Constraint::Fill(1),
                Constraint::Fill(1),
                Constraint::Length(keys),
            ],
        );
        row([
            cell(marker, marker_w, Cut::End, ctx.style(Slot::Accent)),
            cell(&age, age_w, Cut::End, ctx.style(Slot::Muted)),
            cell(&kind, kind_w, Cut::End, ctx.style(slot)),
            cell(&subject, subject_w, Cut::Middle, ctx.style(Slot::Base)),
            cell(what, what_w, Cut::End, ctx.style(Slot::Muted)),
            cell(answer, keys, Cut::End, ctx.style(Slot::Key)),
        ])
    } else {
        let [marker_w, age_w, kind_w, subject_w, keys] = widths(
            width,
            [
                Constraint::Length(1),
                Constraint::Length(5),
                Constraint::Length(17),
                Constraint::Fill(1),
                Constraint::Length(keys),
            ],
        );
        row([
            cell(marker, marker_w, Cut::End, ctx.style(Slot::Accent)),
            cell(&age, age_w, Cut::End, ctx.style(Slot::Muted)),
            cell(&kind, kind_w, Cut::End, ctx.style(slot)),
            cell(&subject, subject_w, Cut::Middle, ctx.style(Slot::Base)),
            cell(answer, keys, Cut::End, ctx.style(Slot::Key)),
        ])
    }
}
