//! Activity that survives a restart: the lines the console's Activity pane starts with, rebuilt
//! from a task journal (every accepted event, and whether the Leader proposed it), so a new
//! console shows the same history the last one did. The journal is the record; this only reads
//! its newest entries back from the tip the console's open handle verified
//! ([`Journal::newest_entries`]: each line chain-verified and chained to that tip, not
//! replayed), so a long journal costs what the pane keeps, not what the journal holds.
//!
//! Journal lines carry no time yet, so the lines are in journal order per task, tasks in the
//! order they are read.

use valp_kernel::replay::CompactEntry;
use valp_store::{Journal, StoreError};

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

/// The last `keep` Activity lines of the task `task` whose journal `journal` has open, oldest
/// first (the pane keeps no more): its newest `keep` entries, read back from the verified tip.
pub fn of_task(task: &str, journal: &Journal, keep: usize) -> Result<Vec<String>, StoreError> {
    Ok(journal
        .newest_entries(keep as u64)?
        .iter()
        .map(|recorded| line(task, &recorded.entry))
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::super::walk_root::walk_root;

    #[test]
    fn every_accepted_entry_is_one_line_in_journal_order() {
        let mut setup = walk_root(3, 2);
        let mut kinds = Vec::new();
        for step in setup.walk.by_ref().take(12) {
            kinds.push(step.event.kind.as_str().to_owned());
            setup
                .journal
                .append(&step.event, &step.evidence_set)
                .unwrap();
        }
        let journal = &setup.journal;
        let lines = super::of_task("t", journal, 100).unwrap();
        assert_eq!(lines.len(), 12);
        assert_eq!(super::of_task("t", journal, 5).unwrap(), lines[7..]);
        assert!(super::of_task("t", journal, 0).unwrap().is_empty());
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

    /// The lines read back from the tip of a handle opened from a snapshot are the last lines of
    /// the whole journal streamed from the genesis (what the pane showed before).
    #[test]
    fn the_lines_from_the_tip_are_the_last_of_the_whole_journal() {
        let mut setup = walk_root(5, 3);
        let steps: Vec<_> = setup.walk.by_ref().take(300).collect();
        setup
            .journal
            .append_batch(
                steps
                    .iter()
                    .map(|step| (&step.event, step.evidence_set.as_slice())),
            )
            .unwrap();
        let dir = setup.journal.dir().to_owned();
        // The writer leaves a snapshot as it closes.
        let root = setup.root.clone();
        drop(setup.journal);
        let reader = root
            .open_task_dir(&dir, valp_store::Access::ReadOnly)
            .unwrap();
        assert!(reader.live().history().is_empty(), "opened from a snapshot");
        let mut streamed = Vec::new();
        valp_store::effects::journal_entries(&dir, |entry| streamed.push(super::line("t", &entry)))
            .unwrap();
        assert_eq!(streamed.len(), 300);
        assert_eq!(super::of_task("t", &reader, 200).unwrap(), streamed[100..]);
        assert_eq!(super::of_task("t", &reader, 1000).unwrap(), streamed);
    }
}
