//! The foreign observations the console shows ([`ForeignRow`]): each task's
//! foreign-observation journal (`foreign.jsonl`, [`valp_store::foreign`]) read without writing,
//! with what its descriptor blob says about origin, foreign digest, verification levels,
//! declared independence and validation time.
//!
//! Read again only when the journal file changed (length or modification time). A journal that
//! does not verify is listed as a rejected file, never repaired; a missing descriptor blob
//! leaves the row with what the record itself says. Every foreign string is sanitized here.
//! Nothing read here becomes a request: a foreign pass is evidence, never a `review_passed`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

use serde_json::Value;
use valp_store::foreign::{FOREIGN_FILE, ForeignJournal, ForeignRecord, Source};
use valp_store::{Access, ControlRoot};
use valp_view::foreign::LEVELS;
use valp_view::sanitize::{display_line, display_text};
use valp_view::{ForeignRow, RejectionRow};

/// What a journal held when last read: its length and time, and its rows (or why none).
type Read = (u64, Option<SystemTime>, Result<Vec<ForeignRow>, String>);

/// The foreign rows per task folder, read again when the journal file changes.
#[derive(Debug, Default)]
pub struct Foreign(BTreeMap<PathBuf, Read>);

impl Foreign {
    /// Every listed task's foreign rows (in task order, then journal order), and a rejection per
    /// journal that does not verify.
    pub fn rows(
        &mut self,
        root: &ControlRoot,
        task_ids: &[String],
    ) -> (Vec<ForeignRow>, Vec<RejectionRow>) {
        let mut rows = Vec::new();
        let mut rejections = Vec::new();
        for task_id in task_ids {
            let dir = root.layout().task_dir(task_id);
            let file = dir.join(FOREIGN_FILE);
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            let stamp = (meta.len(), meta.modified().ok());
            let fresh = self
                .0
                .get(&dir)
                .is_some_and(|(len, time, _)| (*len, *time) == stamp);
            if !fresh {
                let read = read(root, task_id);
                self.0.insert(dir.clone(), (stamp.0, stamp.1, read));
            }
            match self.0.get(&dir).map(|(_, _, read)| read) {
                Some(Ok(found)) => rows.extend(found.iter().cloned()),
                Some(Err(why)) => rejections.push(RejectionRow {
                    path: display_text(&file.display().to_string()),
                    reason: display_line(why),
                }),
                None => {}
            }
        }
        (rows, rejections)
    }
}

fn read(root: &ControlRoot, task_id: &str) -> Result<Vec<ForeignRow>, String> {
    let journal = ForeignJournal::of_task(root, task_id, Access::ReadOnly)
        .map_err(|error| format!("foreign observations not shown: {error}"))?;
    Ok(journal
        .records()
        .iter()
        .map(|record| {
            let descriptor = root
                .blobs()
                .get(&record.descriptor_digest)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .unwrap_or(Value::Null);
            row(task_id, record, &descriptor)
        })
        .collect())
}

/// One row from a record and its descriptor (`Null` when the blob is missing or unreadable).
pub fn row(task_id: &str, record: &ForeignRecord, descriptor: &Value) -> ForeignRow {
    let text = |pointer: &str| {
        descriptor
            .pointer(pointer)
            .and_then(Value::as_str)
            .map(display_text)
            .unwrap_or_default()
    };
    let strings = |pointer: &str| -> Vec<String> {
        descriptor
            .pointer(pointer)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(display_text)
                    .collect()
            })
            .unwrap_or_default()
    };
    let agentops = record.source == Source::Agentops;
    let (origin, foreign_digest, levels, applicable) = if agentops {
        (
            format!(
                "{} {} file {}",
                text("/origin/system"),
                text("/origin/format"),
                text("/origin/file")
            ),
            text("/artifact_digest"),
            strings("/levels"),
            LEVELS.iter().map(|level| (*level).to_owned()).collect(),
        )
    } else {
        superloop_origin(descriptor, &text)
    };
    let independence = if agentops {
        match descriptor.pointer("/independence/declared") {
            Some(Value::Bool(true)) => format!(
                "declared: author {}, validator {} (as declared, not isolation)",
                text("/claim/claimant"),
                text("/review/reviewer")
            ),
            Some(Value::Bool(false)) => {
                format!("not established ({})", text("/independence/why"))
            }
            _ => "unknown (descriptor unavailable)".to_owned(),
        }
    } else {
        String::new()
    };
    ForeignRow {
        task_id: display_text(task_id),
        work_item_id: record.work_item_id.as_deref().map(display_text),
        observation_id: display_text(&record.observation_id),
        source: record.source.as_str().to_owned(),
        kind: record.kind.as_str().to_owned(),
        origin: display_text(origin.trim()),
        foreign_digest,
        content_digest: display_text(&record.content_digest),
        levels,
        applicable_levels: applicable,
        claim: record
            .claim
            .map(|(claim, review)| (claim.as_str().to_owned(), review.as_str().to_owned())),
        independence,
        validated_at: if agentops {
            text("/review/validated_at")
        } else {
            text("/evaluated_at")
        },
        summary: display_text(&record.summary),
    }
}

/// A SuperLoop descriptor's origin, its scheme-tagged digest and whether it verified.
fn superloop_origin(
    descriptor: &Value,
    text: &dyn Fn(&str) -> String,
) -> (String, String, Vec<String>, Vec<String>) {
    let schema = text("/schema_version");
    let what = schema
        .strip_prefix("valp-foreign-superloop-")
        .and_then(|rest| rest.strip_suffix(".v1"))
        .unwrap_or("record");
    let mut origin = format!("superloop {what}");
    for (pointer, label) in [("/loop", "loop"), ("/run_id", "run"), ("/part", "part")] {
        let value = text(pointer);
        if !value.is_empty() {
            origin = format!("{origin} {label} {value}");
        }
    }
    let tagged = ["/contract_digest", "/log_digest", "/basis_digest"]
        .iter()
        .find_map(|pointer| descriptor.pointer(pointer));
    let digest = tagged.map_or_else(String::new, |tagged| {
        format!("{}:{}", text_of(tagged, "scheme"), text_of(tagged, "value"))
    });
    let verified = tagged
        .and_then(|tagged| tagged.get("verified"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
        || descriptor.get("evaluator_bound").and_then(Value::as_bool) == Some(true);
    let levels = if verified {
        vec!["digest_bound".to_owned()]
    } else {
        Vec::new()
    };
    (origin, digest, levels, vec!["digest_bound".to_owned()])
}

fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(display_text)
        .unwrap_or_default()
}
