//! The detail view (Enter on a row): everything the view knows about the selected task, work
//! item, observation, need, rejected file or Activity line, with a "why" line for the state,
//! absolute times beside ages, and for a task or work item its observations (with where each
//! was read from and its proof chain) and needs. It scrolls like the help overlay.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::app::Ctx;
use super::keymap::Mode;
use super::selection::Pane;
use super::text::{Cut, cell, fit, pieces, row, span};
use super::theme::Slot;
use super::{foreign, labels, needs, overlay};
use valp_view::needs::age_text;
use valp_view::{AgentAsk, CorrectionView, NeedRow, ObservationRow, UsageRow};

/// Columns for a field's name.
const LABEL: u16 = 14;

/// What the detail view shows, built from the focused pane's selected row.
struct Page {
    title: String,
    lines: Vec<Line<'static>>,
    width: u16,
}

impl Page {
    fn new(title: String, width: u16) -> Self {
        Self {
            title,
            lines: Vec::new(),
            width,
        }
    }

    /// `label  value`, the value wrapped under itself.
    fn field(&mut self, ctx: &Ctx, label: &str, value: &str, slot: Slot) {
        if value.is_empty() {
            return;
        }
        let value_width = self.width.saturating_sub(LABEL + 1);
        for (at, piece) in pieces(value, value_width, usize::MAX).iter().enumerate() {
            let label = if at == 0 { label } else { "" };
            self.lines.push(row([
                cell(label, LABEL, Cut::End, ctx.style(Slot::Muted)),
                cell(piece, value_width, Cut::End, ctx.style(slot)),
            ]));
        }
    }

    /// A task's or work item's foreign observations, one section each.
    fn foreign(&mut self, ctx: &Ctx, task_id: &str, work_item_id: Option<&str>) {
        for row in foreign::of(ctx.view, task_id, work_item_id) {
            self.heading(ctx, &foreign::heading(row));
            for (label, value, slot) in foreign::fields(row) {
                self.field(ctx, label, &value, slot);
            }
        }
    }

    fn heading(&mut self, ctx: &Ctx, text: &str) {
        self.lines.push(Line::default());
        self.lines.push(fit(
            Line::from(span(text, ctx.style(Slot::Title))),
            self.width,
        ));
    }

    fn observation(&mut self, ctx: &Ctx, observation: &ObservationRow) {
        let when = seen(ctx, observation);
        self.field(
            ctx,
            "status",
            &format!(
                "{}  (sequence {})",
                observation.status, observation.sequence
            ),
            Slot::of_status(&observation.status),
        );
        self.field(ctx, "attempt", &observation.attempt_id, Slot::Base);
        self.field(ctx, "read", &when, Slot::Base);
        self.field(ctx, "from", &observation.source, Slot::Base);
        self.field(ctx, "provenance", &observation.provenance, Slot::Base);
        self.field(ctx, "detail", &observation.detail, Slot::Base);
    }

    fn need(&mut self, ctx: &Ctx, need: &NeedRow) {
        self.field(ctx, need.kind.title(), &need.summary, Slot::StatusAttention);
        if let Some(ask) = &need.ask {
            self.ask(ctx, ask);
        }
        self.field(
            ctx,
            "since",
            &format!(
                "{} ago ({}){}",
                age_text(need.since_ms, ctx.view.now_ms),
                need.since_at,
                if need.acknowledged { ", seen" } else { "" }
            ),
            Slot::Base,
        );
        self.field(
            ctx,
            "answer",
            &needs::answer_text(ctx, need.kind),
            Slot::Key,
        );
    }
}

impl Page {
    /// An agent's permission request: what it asks, and until when.
    fn ask(&mut self, ctx: &Ctx, ask: &AgentAsk) {
        self.field(ctx, "agent", &ask.agent, Slot::Base);
        self.field(ctx, "tool", &ask.tool, Slot::Base);
        self.field(ctx, &ask.subject.0, &ask.subject.1, Slot::AlertWarn);
        self.field(ctx, "attempt", &ask.attempt_id, Slot::Base);
        self.field(ctx, "request", &ask.request_id, Slot::Base);
        self.field(
            ctx,
            "deadline",
            &format!(
                "in {} ({}): then the hook answers without you, never allow",
                age_text(ctx.view.now_ms, ask.deadline_ms),
                ask.deadline_at
            ),
            Slot::Base,
        );
    }

    /// The task's correction rounds (trigger, status, reason, times).
    fn corrections(&mut self, ctx: &Ctx, cycle: &CorrectionView) {
        self.heading(
            ctx,
            &format!(
                "Correction cycle: {} ({} rounds)",
                cycle.outcome,
                cycle.rounds.len()
            ),
        );
        for round in &cycle.rounds {
            let scope = round
                .work_item_id
                .as_deref()
                .map_or_else(|| "the task".to_owned(), |item| format!("work item {item}"));
            let when = format!(
                "{} .. {}",
                round.started_at.as_deref().unwrap_or("unknown"),
                round.ended_at.as_deref().unwrap_or("-")
            );
            self.field(
                ctx,
                &format!("round {}", round.round),
                &format!(
                    "{} · {} · {scope} · {} · {when}",
                    round.status, round.trigger, round.reason
                ),
                Slot::of_status(&round.status),
            );
        }
    }

    /// What an attempt's agent channels reported spending ("unknown" is never 0).
    fn usage(&mut self, ctx: &Ctx, usage: &UsageRow) {
        let shown =
            |value: Option<u64>| value.map_or_else(|| "unknown".to_owned(), |v| v.to_string());
        let cost = usage.cost_micro_usd.map_or_else(
            || "unknown".to_owned(),
            |micro| format!("{}.{:06} USD", micro / 1_000_000, micro % 1_000_000),
        );
        self.field(
            ctx,
            &usage.work_item_id,
            &format!(
                "{} · cost {cost} · tokens {} in, {} out",
                usage.attempt_id,
                shown(usage.input_tokens),
                shown(usage.output_tokens)
            ),
            Slot::Base,
        );
    }
}

/// When an observation was read, as an age and an absolute time.
fn seen(ctx: &Ctx, observation: &ObservationRow) -> String {
    if observation.seen_at.is_empty() {
        return String::new();
    }
    format!(
        "{} ago ({})",
        age_text(observation.seen_ms, ctx.view.now_ms),
        observation.seen_at
    )
}

/// Draws the detail view of the focused pane's selected row over `area`; returns the largest
/// scroll its text allows (0 when there is nothing selected).
pub fn render(frame: &mut Frame, area: Rect, ctx: &Ctx, scroll: usize) -> usize {
    let Some(page) = page(ctx, overlay::text_width(area.width)) else {
        return 0;
    };
    overlay::render(
        frame,
        area,
        ctx,
        (&page.title, Mode::Detail),
        page.lines,
        scroll,
    )
}

fn page(ctx: &Ctx, width: u16) -> Option<Page> {
    let view = ctx.view;
    let selection = ctx.selection;
    let cursor = selection.cursor(selection.focus());
    match selection.focus() {
        Pane::Tasks => task_page(ctx, width),
        Pane::Items => item_page(ctx, width),
        Pane::Observations => {
            let observation = view.observations.get(cursor)?;
            let mut page = Page::new(
                format!(
                    "Observation {} of {}",
                    observation.sequence, observation.attempt_id
                ),
                width,
            );
            page.field(ctx, "task", &observation.task_id, Slot::Base);
            page.field(ctx, "work item", &observation.work_item_id, Slot::Base);
            page.observation(ctx, observation);
            Some(page)
        }
        Pane::Needs => {
            let need = view.needs.get(cursor)?;
            let mut page = Page::new(format!("Needs you: {}", need.kind.title()), width);
            page.field(ctx, "task", &need.task_id, Slot::Base);
            page.field(
                ctx,
                "work item",
                need.work_item_id.as_deref().unwrap_or_default(),
                Slot::Base,
            );
            page.field(ctx, "severity", need.kind.severity().as_str(), Slot::Base);
            page.need(ctx, need);
            Some(page)
        }
        Pane::Rejections => {
            let rejection = view.rejections.get(cursor)?;
            let mut page = Page::new("Rejected file".to_owned(), width);
            page.field(ctx, "file", &rejection.path, Slot::Base);
            page.field(ctx, "why", &rejection.reason, Slot::AlertWarn);
            Some(page)
        }
        Pane::Activity => {
            let line = view.activity.get(cursor)?;
            let mut page = Page::new("Activity".to_owned(), width);
            page.field(ctx, "", line, Slot::Base);
            Some(page)
        }
    }
}

/// The detail of the selected task.
fn task_page(ctx: &Ctx, width: u16) -> Option<Page> {
    let (view, selection) = (ctx.view, ctx.selection);
    let task = selection.task(view)?;
    let mut page = Page::new(format!("Task {}", task.task_id), width);
    let mut status = task.status.clone();
    if task.interrupted {
        status.push_str(" (interrupted by the Leader)");
    }
    page.field(ctx, "status", &status, Slot::of_status(&task.status));
    page.field(ctx, "why", &needs::waiting_for(ctx, task), Slot::Base);
    page.field(ctx, "revision", &task.revision.to_string(), Slot::Base);
    page.field(
        ctx,
        "epoch",
        &format!(
            "{}{}",
            task.epoch,
            if task.fenced {
                " (fenced: hand the task over first)"
            } else {
                ""
            }
        ),
        if task.fenced {
            Slot::Fenced
        } else {
            Slot::Base
        },
    );
    page.field(
        ctx,
        "work items",
        &format!("{} of {} completed", task.items_completed, task.items_total),
        Slot::Base,
    );
    page.field(ctx, "gates", &task.gates, Slot::Base);
    for need in view
        .needs
        .iter()
        .filter(|need| need.task_id == task.task_id)
    {
        page.heading(ctx, "Needs you");
        page.need(ctx, need);
    }
    let spent: Vec<&UsageRow> = view
        .usage
        .iter()
        .filter(|usage| usage.task_id == task.task_id)
        .collect();
    if !spent.is_empty() {
        page.heading(ctx, "Cost and tokens (agent channels, current attempts)");
        for usage in spent {
            page.usage(ctx, usage);
        }
    }
    if let Some(cycle) = view
        .corrections
        .iter()
        .find(|cycle| cycle.task_id == task.task_id)
    {
        page.corrections(ctx, cycle);
    }
    page.foreign(ctx, &task.task_id, None);
    let items = selection.items(view);
    if !items.is_empty() {
        page.heading(ctx, "Work items");
        for item in items {
            page.field(
                ctx,
                &item.work_item_id,
                &format!(
                    "{} · {} · {}",
                    item.status,
                    item.position,
                    labels::attempt_in_item(&item.attempt, &item.task_id, &item.work_item_id)
                ),
                Slot::of_status(&item.status),
            );
        }
    }
    Some(page)
}

/// The detail of the selected work item.
fn item_page(ctx: &Ctx, width: u16) -> Option<Page> {
    let (view, selection) = (ctx.view, ctx.selection);
    let item = selection.item(view)?;
    let mut page = Page::new(
        format!("Work item {} of {}", item.work_item_id, item.task_id),
        width,
    );
    page.field(ctx, "status", &item.status, Slot::of_status(&item.status));
    page.field(ctx, "why", &item.position, Slot::Base);
    page.field(ctx, "requirement", &item.requirement, Slot::Base);
    page.field(ctx, "attempt", &item.attempt, Slot::Base);
    for need in view.needs.iter().filter(|need| {
        need.task_id == item.task_id
            && need.work_item_id.as_deref() == Some(item.work_item_id.as_str())
    }) {
        page.heading(ctx, "Needs you");
        page.need(ctx, need);
    }
    for observation in view.observations.iter().filter(|observation| {
        observation.task_id == item.task_id && observation.work_item_id == item.work_item_id
    }) {
        page.heading(ctx, "Observation");
        page.observation(ctx, observation);
    }
    page.foreign(ctx, &item.task_id, Some(&item.work_item_id));
    Some(page)
}
