//! The live observation feed: a file watcher over the control root's `runtime/` and `inbox/`
//! turns every adapter observation file into a row for the console, and every file that fails
//! the strict decoding or arrives out of order into a rejection row. Each new item pokes the
//! console (a wake-up callback) so the System steps and the screen redraws at once.
//!
//! Under `runtime/`, only observation files (`…/observations/*.json`) are observations; the
//! other files of an attempt folder (request, run specification, proofs, control requests)
//! are the adapter's own and are not fed. An adapter writes its observations one after the
//! other, so their arrival order is their order and the feed checks it. Everything in `inbox/`
//! is an observation from an external tool and passes the same decoding, but its order is not
//! judged here: files found together by a rescan arrive in name order, not sequence order, and
//! the runtime decides the order of an attempt's inbox reports from their content and the
//! journal (its refusals are listed beside the feed's). Lines of `inbox/agent-signals/` are
//! agents' own signals (`valp-agent-signal.v1`, [`crate::agent::channel`]), not observations:
//! they become rows `agent <kind>` with their channel, and a line that is not a valid signal
//! a rejection.

use std::collections::VecDeque;
use std::path::{Component, Path};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::ingest::{Ingested, Sequencer, WatchConfig, Watcher};
use valp_view::{ObservationRow, RejectionRow};

/// Rows kept (newest first); older ones are dropped.
pub const FEED_ROWS: usize = 200;

/// What the watcher has seen so far.
#[derive(Debug, Default)]
pub struct FeedState {
    /// Newest first.
    pub observations: VecDeque<ObservationRow>,
    /// Newest first.
    pub rejections: VecDeque<RejectionRow>,
    /// The generation of the last full rescan whose files are all in the rows.
    rescanned: Option<u64>,
}

/// A running feed; dropping it stops the watcher.
pub struct Feed {
    state: Arc<Mutex<FeedState>>,
    /// Signalled whenever a full rescan has been fed ([`Feed::caught_up`]).
    rescanned: Arc<Condvar>,
    watcher: Option<Watcher>,
    thread: Option<JoinHandle<()>>,
}

impl Feed {
    /// Starts watching `control_root`; `wake` is called on every new row and the feed stops
    /// once it returns `false`.
    pub fn start(
        control_root: &Path,
        wake: impl Fn() -> bool + Send + 'static,
    ) -> Result<Self, crate::ingest::IngestError> {
        for folder in ["runtime", "inbox"] {
            let _ = std::fs::create_dir_all(control_root.join(folder));
        }
        let config = WatchConfig::control_root(control_root);
        let limits = config.limits;
        let (watcher, items) = Watcher::start(config)?;
        let state = Arc::new(Mutex::new(FeedState::default()));
        let shared = Arc::clone(&state);
        let rescanned = Arc::new(Condvar::new());
        let signal = Arc::clone(&rescanned);
        let thread = std::thread::spawn(move || {
            let mut sequencer = Sequencer::new();
            for item in items {
                if let Ingested::Rescanned { generation } = item {
                    shared
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .rescanned = Some(generation);
                    signal.notify_all();
                    continue;
                }
                let Some(path) = item.path().map(Path::to_path_buf) else {
                    continue;
                };
                if !is_observation(&path) && !matches!(item, Ingested::Rejected(_)) {
                    continue;
                }
                let row = match signal_row(&item) {
                    Some(row) => row,
                    None => match item.decode(&limits) {
                        Some(Ok(observation)) if path.starts_with("inbox") => {
                            Ok(observation_row(&observation, &path))
                        }
                        Some(Ok(observation)) => match sequencer.admit(&path, &observation) {
                            Ok(()) => Ok(observation_row(&observation, &path)),
                            Err(rejection) => Err(rejection),
                        },
                        Some(Err(rejection)) => Err(rejection),
                        None => continue,
                    },
                };
                {
                    let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    match row {
                        Ok(row) => push(&mut state.observations, row),
                        Err(rejection) => push(
                            &mut state.rejections,
                            RejectionRow {
                                path: rejection.display_file(),
                                reason: rejection.reason.to_string(),
                            },
                        ),
                    }
                }
                if !wake() {
                    return;
                }
            }
        });
        Ok(Self {
            state,
            rescanned,
            watcher: Some(watcher),
            thread: Some(thread),
        })
    }

    /// Rescans the whole control root and waits (at most `timeout`) until every file found
    /// is in the rows; `false` when the time ran out first. The watcher feeds rows as it
    /// sees files, so a caller about to report what was rejected catches up first: a file
    /// written just before the feed started is otherwise seen only after the caller is done.
    pub fn caught_up(&self, timeout: Duration) -> bool {
        let Some(ticket) = self.watcher.as_ref().map(Watcher::rescan) else {
            return false;
        };
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while state.rescanned.is_none_or(|generation| generation < ticket) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .rescanned
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }

    /// A copy of the rows.
    pub fn rows(&self) -> (Vec<ObservationRow>, Vec<RejectionRow>) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (
            state.observations.iter().cloned().collect(),
            state.rejections.iter().cloned().collect(),
        )
    }
}

impl Drop for Feed {
    fn drop(&mut self) {
        if let Some(watcher) = self.watcher.take() {
            watcher.stop();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn push<T>(rows: &mut VecDeque<T>, row: T) {
    rows.push_front(row);
    rows.truncate(FEED_ROWS);
}

/// `runtime/<adapter>/…/observations/<file>` or anything under `inbox/`.
fn is_observation(path: &Path) -> bool {
    let parts: Vec<&str> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => part.to_str(),
            _ => None,
        })
        .collect();
    matches!(
        parts.as_slice(),
        ["inbox", ..] | ["runtime", .., "observations", _]
    )
}

/// An agent signal line (`inbox/agent-signals/…`) as a row: its kind and channel in the
/// status, the summary as detail; a line that is not a valid signal is a rejection. `None` for
/// anything else.
fn signal_row(item: &Ingested) -> Option<Result<ObservationRow, crate::ingest::Rejection>> {
    use crate::agent::channel::signal::AgentSignal;
    use crate::ingest::{Reason, Rejection};
    use valp_view::sanitize::display_text;
    let Ingested::Line {
        path,
        offset,
        bytes,
    } = item
    else {
        return None;
    };
    if !path.starts_with(crate::agent::channel::inbox::SIGNAL_DIR) {
        return None;
    }
    let decoded = AgentSignal::decode(bytes).and_then(|signal| signal.check().map(|()| signal));
    Some(match decoded {
        Ok(signal) => Ok(ObservationRow {
            task_id: display_text(&signal.task_id),
            work_item_id: display_text(&signal.work_item_id),
            attempt_id: display_text(&signal.attempt_id),
            sequence: signal.sequence,
            status: format!("agent {}", signal.kind.as_str()),
            detail: display_text(&format!("{}: {}", signal.channel.as_str(), signal.summary)),
            source: display_text(&path.display().to_string()),
            provenance: display_text(&format!("agent channel {}", signal.channel.as_str())),
            // Stamped by the System when it reads the feed.
            seen_ms: 0,
            seen_at: String::new(),
        }),
        Err(error) => Err(Rejection::new(
            path.clone(),
            Reason::Malformed(display_text(&error.to_string())),
        )
        .at_offset(*offset)),
    })
}

fn observation_row(observation: &crate::abi::AdapterObservation, path: &Path) -> ObservationRow {
    use valp_view::sanitize::display_text;
    let request = &observation.request;
    ObservationRow {
        task_id: display_text(&request.task_id),
        work_item_id: display_text(&request.work_item_id),
        attempt_id: display_text(&request.attempt_id),
        sequence: observation.sequence,
        status: observation.status.as_str().to_owned(),
        detail: display_text(
            observation
                .reason
                .as_deref()
                .or(observation.runtime_identity.as_deref())
                .unwrap_or(""),
        ),
        source: display_text(&path.display().to_string()),
        provenance: display_text(
            &observation
                .provenance
                .iter()
                .map(|segment| format!("{} ({})", segment.adapter_id, segment.proof_kind.as_str()))
                .collect::<Vec<_>>()
                .join(" → "),
        ),
        // Stamped by the System when it reads the feed (the watcher has no clock).
        seen_ms: 0,
        seen_at: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_signals_are_rows_and_broken_ones_rejections() {
        use valp_kernel::canonical::{Canonical as _, sha256_digest};

        use crate::agent::channel::signal::{AttemptIds, Channel, Draft, SignalKind};
        let signal = Draft::new(
            SignalKind::PromptSubmitted,
            Channel::ClaudeHook,
            "claude",
            "UserPromptSubmit",
            sha256_digest(b"{}"),
            "prompt submitted (5 bytes)",
        )
        .into_signal(
            &AttemptIds {
                task_id: "T".into(),
                work_item_id: "w".into(),
                attempt_id: "a".into(),
            },
            2,
            crate::clock::Timestamp::from_millis(0),
        );
        let mut bytes = signal.canonical_bytes();
        bytes.pop();
        let line = |bytes: Vec<u8>| Ingested::Line {
            path: "inbox/agent-signals/ab.jsonl".into(),
            offset: 7,
            bytes,
        };
        let row = signal_row(&line(bytes)).unwrap().unwrap();
        assert_eq!(
            (row.status.as_str(), row.detail.as_str(), row.sequence),
            (
                "agent prompt_submitted",
                "claude_hook: prompt submitted (5 bytes)",
                2
            )
        );
        let rejection = signal_row(&line(b"{\"kind\":1}".to_vec()))
            .unwrap()
            .unwrap_err();
        assert_eq!(rejection.offset, Some(7));
        assert_eq!(rejection.reason.code(), "malformed");
        let elsewhere = Ingested::Line {
            path: "inbox/tool/x.jsonl".into(),
            offset: 0,
            bytes: Vec::new(),
        };
        assert!(signal_row(&elsewhere).is_none());
    }

    #[test]
    fn only_observation_files_are_fed() {
        for (path, fed) in [
            ("runtime/process/attempts/ab/observations/000001.json", true),
            ("inbox/tool/report.json", true),
            ("inbox/report.json", true),
            ("runtime/process/attempts/ab/request.json", false),
            (
                "runtime/process/attempts/ab/proofs/content_bound.json",
                false,
            ),
            ("runtime/process/attempts/ab/control/cancel.json", false),
            ("tasks/t/journal.jsonl", false),
        ] {
            assert_eq!(is_observation(Path::new(path)), fed, "{path}");
        }
    }

    #[test]
    fn a_feed_that_caught_up_holds_every_file_written_before_it_started_and_after() {
        let root = tempfile::tempdir().unwrap();
        let inbox = root.path().join("inbox");
        std::fs::create_dir_all(&inbox).unwrap();
        std::fs::write(inbox.join("before.json"), b"{not json").unwrap();
        let feed = Feed::start(root.path(), || true).unwrap();
        assert!(feed.caught_up(Duration::from_secs(20)));
        let rejected = |feed: &Feed| -> Vec<String> {
            feed.rows().1.into_iter().map(|row| row.path).collect()
        };
        assert_eq!(rejected(&feed), ["inbox/before.json"]);
        std::fs::write(inbox.join("after.json"), b"[").unwrap();
        assert!(feed.caught_up(Duration::from_secs(20)));
        assert_eq!(rejected(&feed), ["inbox/after.json", "inbox/before.json"]);
    }
}
