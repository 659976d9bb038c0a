//! An effect record in words for the Activity pane: the kernel's obligation text
//! (`adapter_cancel:{"attempt_id":…}`) is a machine's; the Leader reads "cancelled attempt
//! T:w:a1 (work item w, generation 1) through its adapter". An obligation this module does not
//! know is shown as the ledger has it (`status: obligation (reason)`).

use serde::Deserialize;
use valp_kernel::reduce::ADAPTER_CANCEL_PREFIX;
use valp_view::sanitize::display_text;

use crate::runtime::effects::{EffectRecord, Shown};

/// The members of an `adapter_cancel:` obligation the words name.
#[derive(Deserialize)]
struct Cancel {
    attempt_id: String,
    work_item_id: String,
    dispatch_generation: i64,
}

/// `record` in words (sanitized).
pub fn in_words(record: &EffectRecord) -> String {
    let cancel = record
        .obligation
        .strip_prefix(ADAPTER_CANCEL_PREFIX)
        .and_then(|text| serde_json::from_str::<Cancel>(text.trim_end()).ok());
    let Some(cancel) = cancel else {
        return Shown(record).to_string();
    };
    let what = format!(
        "attempt {} (work item {}, generation {})",
        display_text(&cancel.attempt_id),
        display_text(&cancel.work_item_id),
        cancel.dispatch_generation
    );
    match record.status.as_str() {
        "fulfilled" => format!("cancelled {what} through its adapter"),
        "blocked" => format!(
            "could not cancel {what} through its adapter: {}",
            display_text(&record.reason)
        ),
        other => format!("cancel of {what}: {}", display_text(other)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use valp_store::effects::{EffectRecord, Outcome};

    use super::in_words;

    const OBLIGATION: &str = "adapter_cancel:{\"attempt_id\":\"t:w:a2\",\"dispatch_generation\":2,\
                              \"dispatch_id\":\"t:w:d2\",\"task_id\":\"t\",\"work_item_id\":\"w\"}\n";

    #[test]
    fn a_cancel_reads_in_words_and_anything_else_as_the_ledger_has_it() {
        let done = EffectRecord::new(
            OBLIGATION,
            &Outcome::Fulfilled {
                proof_ref: "p".into(),
                proof_digest: "sha256:00".into(),
            },
            None,
        );
        assert_eq!(
            in_words(&done),
            "cancelled attempt t:w:a2 (work item w, generation 2) through its adapter"
        );
        let blocked = EffectRecord::new(
            OBLIGATION,
            &Outcome::Blocked {
                reason: "no supervisor\u{1b}[2J".into(),
            },
            Some(&done),
        );
        assert_eq!(
            in_words(&blocked),
            "could not cancel attempt t:w:a2 (work item w, generation 2) through its adapter: \
             no supervisor"
        );
        let odd = EffectRecord::new(
            "adapter_cancel:{}\n",
            &Outcome::Blocked { reason: "x".into() },
            None,
        );
        assert_eq!(in_words(&odd), "blocked: adapter_cancel:{} (x)");
    }
}
