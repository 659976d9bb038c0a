//! Short labels for long ids. An attempt id is `<task>:<work item>:a<generation>` (the
//! runtime's scheme; ids of other tools need not follow it), and a row that already names its
//! task (and work item) says the rest: `warm-up:a1` in the Observations pane, `a1` in the Work
//! items pane. Ids outside the scheme are shown whole.
//!
//! A candidate's address `tmux:<socket path>:<pane>` is shown, when the column is too narrow
//! for the addresses, as `tmux <socket file>:<pane>` (`tmux default:%3`), provided those labels
//! still tell every candidate apart; otherwise the addresses stay (cut in the middle).

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

/// `tmux:<socket path>:<pane>` as `tmux <socket file>:<pane>`.
fn short_candidate(id: &str) -> Option<String> {
    let (socket, pane) = id.strip_prefix("tmux:")?.rsplit_once(':')?;
    let file = socket.rsplit('/').next().filter(|file| !file.is_empty())?;
    Some(format!("tmux {file}:{pane}"))
}

/// The labels of candidates `ids` in a column `width` wide: the ids when they fit, else the
/// short tmux labels when they are all distinct, else the ids.
pub fn candidates(ids: &[&str], width: usize) -> Vec<String> {
    let whole = || ids.iter().map(|id| (*id).to_owned()).collect::<Vec<_>>();
    if ids.iter().all(|id| id.chars().count() <= width) {
        return whole();
    }
    let short: Vec<String> = ids
        .iter()
        .map(|id| short_candidate(id).unwrap_or_else(|| (*id).to_owned()))
        .collect();
    let distinct: std::collections::BTreeSet<&String> = short.iter().collect();
    if distinct.len() == ids.len() {
        short
    } else {
        whole()
    }
}

#[cfg(test)]
mod tests {
    use super::{attempt_in_item, attempt_in_task, candidates};

    #[test]
    fn candidates_get_short_labels_only_when_narrow_and_still_distinct() {
        let ids = [
            "human:uid-1000",
            "tmux:/tmp/tmux-1000/default:%3",
            "tmux:/tmp/tmux-1000/default:%7",
        ];
        assert_eq!(candidates(&ids, 40), ids);
        assert_eq!(
            candidates(&ids, 18),
            ["human:uid-1000", "tmux default:%3", "tmux default:%7"]
        );
        // Two sockets of one name in different folders: the labels would not tell them apart.
        let clash = ["tmux:/a/default:%3", "tmux:/b/default:%3"];
        assert_eq!(candidates(&clash, 10), clash);
    }

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
