//! Reading an accepted event back from its task journal, for a verify that does not hold the
//! digests of the events it indexed ([`LiveState::forget_history_recalling`]): `valp verify`
//! keeps 16 bytes per entry instead of 80.
//!
//! History position `p` is the accepted event of revision `p + 1`, recorded on line `p + 1`
//! (line 0 holds the GenesisRoot). The kernel asks only when an event id is seen again, which
//! in a journal being verified is the line that gets it refused, so a recall reads the file from
//! its start to that line: at most once or twice per verify, never per entry. A line that
//! cannot be read or decoded answers `None`, which the kernel refuses (failing closed).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use valp_kernel::AcceptedEvent;
use valp_kernel::canonical::decode_canonical;
use valp_kernel::decode::decode_compact_entry;
use valp_kernel::json::Value;
use valp_kernel::live::{LiveState, Recall};

/// Recalls accepted events from the task journal at `path`.
#[derive(Debug)]
pub(crate) struct JournalRecall {
    path: PathBuf,
}

impl JournalRecall {
    /// Recalls from the journal file at `path`.
    pub(crate) fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The bytes of line `index` (0-based, with its LF).
    fn line(&self, index: usize) -> Option<Vec<u8>> {
        let file = File::open(&self.path).ok()?;
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let mut line = Vec::new();
        for _ in 0..=index {
            line.clear();
            if reader.read_until(b'\n', &mut line).ok()? == 0 {
                return None;
            }
        }
        Some(line)
    }
}

impl Recall for JournalRecall {
    fn recall(&self, position: usize) -> Option<AcceptedEvent> {
        let line = self.line(position.checked_add(1)?)?;
        let Value::Object(mut members) = decode_canonical(&line).ok()? else {
            return None;
        };
        let entry = decode_compact_entry(&members.remove("entry")?).ok()?;
        Some(AcceptedEvent {
            event_id: entry.event.event_id,
            result_id: entry.result.result_id,
            input_digest: entry.result.input_digest,
            result_digest: entry.result.result_digest,
        })
    }
}

/// Makes `live` (started from its genesis) forget its history, recalling from `path`.
pub(crate) fn forget_recalling(live: &mut LiveState, path: PathBuf) {
    // A history the lean index cannot hold exactly is kept whole (never the case from a
    // genesis); either way every answer is the same.
    let _lean = live.forget_history_recalling(std::sync::Arc::new(JournalRecall::new(path)));
}
