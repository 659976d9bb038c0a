//! What the console shows of a task's foreign observations (`foreign.jsonl`): what a
//! neighbouring loop system (AgentOps, SuperLoop) said about the task, where it was read from,
//! and how far it was verified.
//!
//! A row is evidence the Leader can look at, never a review: a foreign `pass` is shown as
//! "supported by a foreign review", and nothing in a row is a request. Every text is sanitized
//! by the runtime before it gets here.

/// The four AgentOps verification levels, in order (the ones a row did not reach are shown as
/// not reached).
pub const LEVELS: [&str; 4] = [
    "structurally_valid",
    "digest_bound",
    "subject_resolved",
    "intent_resolved",
];

/// One foreign observation of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignRow {
    /// The task.
    pub task_id: String,
    /// The work item it speaks for (`None`: the task as a whole), as mapped explicitly.
    pub work_item_id: Option<String>,
    /// `<source>:<foreign id>`.
    pub observation_id: String,
    /// `agentops` or `superloop`.
    pub source: String,
    /// `review`, `contract`, `state`, `run`, `attempt` or `done_claim`.
    pub kind: String,
    /// Where it came from: the foreign format and file (`agentops verdict.v2 b4d8….json`).
    pub origin: String,
    /// The foreign digest, tagged with its scheme (`agentops-c14n-nolf:b4d8…`), or empty.
    pub foreign_digest: String,
    /// The VALP evidence content digest of the file's bytes (`sha256:…`).
    pub content_digest: String,
    /// The verification levels reached, in order (for AgentOps: [`LEVELS`]).
    pub levels: Vec<String>,
    /// The levels that apply to this source (reached or not), in order.
    pub applicable_levels: Vec<String>,
    /// The claim result and the foreign review's verdict (`pass`/`pass`, `fail`/`fail`,
    /// `unknown`/`blocked`), when the observation carries a claim.
    pub claim: Option<(String, String)>,
    /// Author and validator independence, as declared (empty when not applicable).
    pub independence: String,
    /// When the foreign system says it validated (never a file time), or empty.
    pub validated_at: String,
    /// The record's summary.
    pub summary: String,
}

impl ForeignRow {
    /// The claim in words; a pass is evidence, never a VALP review or Done.
    pub fn claim_text(&self) -> Option<String> {
        self.claim
            .as_ref()
            .map(|(claim, review)| match claim.as_str() {
                "pass" => format!(
                    "pass, foreign review {review}: evidence only (not a VALP review, not Done)"
                ),
                "unknown" => {
                    format!("unknown, foreign review {review}: not proven (neither pass nor fail)")
                }
                _ => format!("{claim}, foreign review {review}"),
            })
    }

    /// The levels in words: `structurally_valid ✓ · digest_bound ✓ · subject_resolved ✗`.
    pub fn levels_text(&self) -> String {
        let mut shown: Vec<String> = self
            .applicable_levels
            .iter()
            .map(|level| {
                let mark = if self.levels.contains(level) {
                    "yes"
                } else {
                    "no"
                };
                format!("{} {mark}", level.replace('_', " "))
            })
            .collect();
        shown.extend(
            self.levels
                .iter()
                .filter(|level| !self.applicable_levels.contains(level))
                .map(|level| format!("{} yes", level.replace('_', " "))),
        );
        shown.join(" · ")
    }
}
