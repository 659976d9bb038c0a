//! The `/` filter: the view with every list cut down to the rows that contain the text
//! (case-insensitive). A task stays when it or one of its work items or needs matches; a work
//! item when it or its task matches; observations, rejected files, activity lines and needs
//! when any of their words do. The lane (Leader, candidates, epochs) is never filtered.

use valp_view::ConsoleView;

/// `view` with only the rows that contain `text`; all of it when `text` is blank.
pub fn filtered(view: &ConsoleView, text: &str) -> ConsoleView {
    let text = text.trim().to_lowercase();
    if text.is_empty() {
        return view.clone();
    }
    let has = |fields: &[&str]| {
        fields
            .iter()
            .any(|field| field.to_lowercase().contains(&text))
    };
    let task_matches = |task_id: &str| {
        view.tasks.iter().any(|task| {
            task.task_id == task_id && has(&[&task.task_id, &task.status, &task.waiting])
        })
    };
    let item_matches = |item: &valp_view::ItemRow| {
        has(&[
            &item.work_item_id,
            &item.status,
            &item.position,
            &item.attempt,
        ])
    };
    let need_matches = |need: &valp_view::NeedRow| {
        has(&[
            &need.task_id,
            need.work_item_id.as_deref().unwrap_or_default(),
            need.kind.title(),
            &need.summary,
        ])
    };
    let mut shown = view.clone();
    shown.tasks.retain(|task| {
        task_matches(&task.task_id)
            || view
                .items
                .iter()
                .any(|item| item.task_id == task.task_id && item_matches(item))
            || view
                .needs
                .iter()
                .any(|need| need.task_id == task.task_id && need_matches(need))
    });
    shown
        .items
        .retain(|item| item_matches(item) || task_matches(&item.task_id));
    shown.observations.retain(|row| {
        has(&[
            &row.task_id,
            &row.work_item_id,
            &row.attempt_id,
            &row.status,
            &row.detail,
        ])
    });
    shown
        .rejections
        .retain(|row| has(&[&row.path, &row.reason]));
    shown.activity.retain(|line| has(&[line]));
    shown.needs.retain(|need| need_matches(need));
    shown
}
