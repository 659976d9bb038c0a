//! Short labels for long ids. An attempt id is `<task>:<work item>:a<generation>` (the
//! runtime's scheme; ids of other tools need not follow it), and a row that already names its
//! task (and work item) says the rest: `warm-up:a1` in the Observations pane, `a1` in the Work
//! items pane. Ids outside the scheme are shown whole.

/// `id` without the `<prefix>:` it starts with, or whole.
fn without<'a>(id: &'a str, prefix: &str) -> &'a str {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix(':'))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(id)
}

/// An attempt id in a row that names its task.
pub fn attempt_in_task<'a>(attempt: &'a str, task: &str) -> &'a str {
    without(attempt, task)
}

/// An attempt (or the `<attempt> g<generation> <status>` line that starts with it) in a row
/// that names its task and work item.
pub fn attempt_in_item<'a>(attempt: &'a str, task: &str, item: &str) -> &'a str {
    without(without(attempt, task), item)
}

#[cfg(test)]
mod tests {
    use super::{attempt_in_item, attempt_in_task};

    #[test]
    fn known_prefixes_are_dropped_and_other_ids_kept_whole() {
        assert_eq!(
            attempt_in_task("demo-build:warm-up:a1", "demo-build"),
            "warm-up:a1"
        );
        assert_eq!(
            attempt_in_item("demo-build:warm-up:a1 g1 running", "demo-build", "warm-up"),
            "a1 g1 running"
        );
        assert_eq!(attempt_in_task("att-index-1", "demo-build"), "att-index-1");
        assert_eq!(attempt_in_task("demo-build:", "demo-build"), "demo-build:");
        assert_eq!(
            attempt_in_task("demo-builder:x:a1", "demo-build"),
            "demo-builder:x:a1"
        );
    }
}
