//! Activity that survives a restart: the lines the console's Activity pane starts with, rebuilt
//! from a task journal (every accepted event, and whether the Leader proposed it), so a new
//! console shows the same history the last one did. The journal is the record; this only reads
//! it (chain-verified, not replayed: [`valp_store::effects::journal_entries`]).
//!
//! Journal lines carry no time yet, so the lines are in journal order per task, tasks in the
//! order they are read.

use std::path::Path;

use valp_kernel::replay::CompactEntry;
use valp_store::StoreError;

/// The evidence-id prefix of a Leader's operator-action record (`runtime::control`).
const OPERATOR_ACTION: &str = "operator-action-";

/// One Activity line for an accepted journal entry of `task`.
pub fn line(task: &str, entry: &CompactEntry) -> String {
    let by_leader = entry
        .evidence_set
        .iter()
        .any(|evidence| evidence.evidence_id.value().starts_with(OPERATOR_ACTION));
    let target = entry
        .event
        .attempt_id
        .as_ref()
        .or(entry.event.work_item_id.as_ref())
        .map_or_else(String::new, |id| format!(" {}", id.value()));
    format!(
        "{task}  {}{target} accepted at revision {}{}",
        entry.event.kind.as_str(),
        entry.event.expected_revision + 1,
        if by_leader { " (the Leader's)" } else { "" }
    )
}

/// The last `keep` Activity lines of the task journal in `task_dir`, oldest first (the pane
/// keeps no more: a long journal is streamed, never held as lines).
pub fn of_task(task: &str, task_dir: &Path, keep: usize) -> Result<Vec<String>, StoreError> {
    let mut lines = std::collections::VecDeque::with_capacity(keep.min(1024));
    valp_store::effects::journal_entries(task_dir, |entry| {
        if keep == 0 {
            return;
        }
        if lines.len() == keep {
            lines.pop_front();
        }
        lines.push_back(line(task, &entry));
    })?;
    Ok(lines.into())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;

    use valp_kernel::walk::{Walk, WalkConfig};
    use valp_kernel::{Identity, IdentityKind};
    use valp_store::ControlRoot;
    use valp_store::io::OsStorage;

    #[test]
    fn every_accepted_entry_is_one_line_in_journal_order() {
        let temp = tempfile::tempdir().unwrap();
        let root = ControlRoot::init(
            temp.path(),
            Identity::new(IdentityKind::Installation, "inst").unwrap(),
            Arc::new(OsStorage),
        )
        .unwrap();
        let task = Identity::new(IdentityKind::Task, "t").unwrap();
        let config = WalkConfig {
            seed: 3,
            work_items: 2,
            may_terminate: false,
        };
        let mut walk =
            Walk::for_task_at(config, root.installation().installation_id.clone(), 1, task);
        let mut journal = root.create_task(walk.genesis()).unwrap();
        let mut kinds = Vec::new();
        for step in walk.by_ref().take(12) {
            kinds.push(step.event.kind.as_str().to_owned());
            journal.append(&step.event, &step.evidence_set).unwrap();
        }
        let lines = super::of_task("t", journal.dir(), 100).unwrap();
        assert_eq!(lines.len(), 12);
        assert_eq!(super::of_task("t", journal.dir(), 5).unwrap(), lines[7..]);
        assert!(super::of_task("t", journal.dir(), 0).unwrap().is_empty());
        for (at, (line, kind)) in lines.iter().zip(&kinds).enumerate() {
            assert!(line.starts_with(&format!("t  {kind}")), "{line}");
            assert!(
                line.contains(&format!("accepted at revision {}", at + 1)),
                "{line}"
            );
            assert!(
                !line.contains("the Leader's"),
                "a walk has no operator actions: {line}"
            );
        }
    }
}
