//! The external adapter: a work item done by a tool outside valp, which reports through the
//! inbox (`.valp/inbox/`, see "The inbox contract" in [`crate::ingest`]).
//!
//! valp runs nothing for an external item and supervises nothing. Launching an attempt means
//! writing its request, and nothing else, where a tool can find it:
//!
//! ```text
//! <control root>/runtime/external/attempts/<H>/     H = attempt_folder(attempt_id)
//!   request.json          AdapterRequest (submit), canonical JSON + LF, written    System
//!                         atomically once; the attempt counts as launched once
//!                         this file exists
//!   control/cancel.json   valp-process-control.v1 {action "cancel", reason,      System
//!                         requested_at} (the process adapter's control record),
//!                         written when the Leader cancels the attempt
//! ```
//!
//! The request is the record the process adapter gets, built the same way; only its
//! `payload_digest` differs: the SHA-256 of the work item's canonical JSON as published in the
//! plan (the `work_items` entry of the plan evidence), so the request binds exactly what was
//! asked. `expected_evidence_refs` are the item's `expected_evidence`, relative to its `cwd`.
//!
//! # What the tool does
//!
//! 1. Finds pending work: every `runtime/external/attempts/*/request.json` it has not finished.
//!    A retry is a new attempt (new attempt id, higher `dispatch_generation`), so a new folder.
//! 2. Reports, as `valp-adapter-observation.v1` records dropped into the inbox (a `*.json` file
//!    renamed into place, or lines appended to a `*.jsonl` file), each carrying the request
//!    file's record exactly as `request`: `accepted` when it takes the work on, then one final
//!    observation (`completed`, `blocked`, `cancelled` or `unsupported`, with a `reason` when it
//!    did not complete), with strictly increasing `sequence` numbers (1, 2, …). A final
//!    observation without an earlier `accepted` means the work never started: the attempt
//!    fails, as when the process adapter refuses a request.
//!    `valp report ATTEMPT STATUS` ([`super::report`]) writes such records for a tool that does
//!    not build them itself.
//! 3. Watches `control/cancel.json` in the attempt folder and, if it appears, stops and reports
//!    `cancelled`. valp cannot see or stop an outside runtime, so it only asks.
//!
//! # How the inbox is read for one attempt
//!
//! [`Inbox`] reads the inbox incrementally ([`Scanner`]: a file is read again only when its
//! `lstat` changed, a `*.jsonl` file from where the last read stopped) and keeps the decoded
//! observations of its task. [`Inbox::classify`] then sorts out those that name the attempt:
//!
//! - an observation whose request is not exactly the attempt's request (canonical bytes
//!   differ, e.g. an altered payload digest or another generation under the same attempt id)
//!   is rejected as forged or stale;
//! - the others are taken in order: first those already recorded as evidence in the task's
//!   journal (what the kernel accepted stays admitted, whatever arrives later), then by
//!   sequence, then by file and line offset; each must move the request forward (the ingest
//!   [`Sequencer`]: the same observation again is a duplicate, any other sequence not greater
//!   than the last admitted one is out of order), and nothing is admitted after the final
//!   observation.
//!
//! The order depends only on the inbox's content and the journal, never on when a file was
//! seen, so every `valp run` and `valp task status` classifies the same inbox the same way. A
//! rejected observation is listed with its file and reason and never acted on. Observations
//! about other attempts or tasks, and files that do not decode, are not this attempt's
//! business (the console's feed lists the files that do not decode), except in the attempt's
//! own `valp report` file (`inbox/valp-report/<H>.jsonl`, see [`super::report`]): a line
//! there that does not decode (the fragment a reporter left when it died mid-line) is listed
//! as a rejection of the attempt, with its offset, and the lines after it are read as usual.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, sha256_digest};

use crate::abi::{
    AdapterObservation, AdapterRequest, ObservationStatus, Operation, attempt_folder,
};
use crate::adapter::files;
use crate::adapter::process::{self, ProcessError, invalid, io_error};
use crate::ingest::{Ingested, Limits, Reason, Scanner, Sequencer};
use valp_view::sanitize::display_text;

/// The adapter id (the plan's `adapter = "external"`, the folder under `runtime/`).
pub const ADAPTER_ID: &str = "external";
/// `request.json`
pub const REQUEST_FILE: &str = process::REQUEST_FILE;
/// `control/cancel.json`
pub const CANCEL_FILE: &str = process::CANCEL_FILE;
/// The inbox, relative to the control root.
pub const INBOX_DIR: &str = "inbox";

/// `runtime/external/attempts/<attempt_folder(attempt_id)>`: the attempt folder relative to the
/// control root.
pub fn attempt_ref(attempt_id: &str) -> String {
    format!(
        "runtime/{ADAPTER_ID}/attempts/{}",
        attempt_folder(attempt_id)
    )
}

/// Writes the attempt folder of `request` under `external_root`
/// (`<control root>/runtime/external`): `attempts/<H>/request.json`, atomically. Returns the
/// folder. Writing the same request again is a no-op; another request in the folder is refused.
pub fn prepare(external_root: &Path, request: &AdapterRequest) -> Result<PathBuf, ProcessError> {
    request
        .check()
        .map_err(|error| ProcessError::Refused(error.to_string()))?;
    if request.operation != Operation::Submit {
        return Err(ProcessError::Refused(format!(
            "the external adapter is handed submit requests, not {}",
            request.operation.as_str()
        )));
    }
    let dir = external_root
        .join("attempts")
        .join(attempt_folder(&request.attempt_id));
    files::create_dir_durably(&dir).map_err(io_error(&dir, "create"))?;
    let path = dir.join(REQUEST_FILE);
    files::write_new_or_same(&path, &request.canonical_bytes())
        .map_err(io_error(&path, "write"))?;
    Ok(dir)
}

/// Whether the attempt folder `dir` holds its request (the attempt reached the adapter).
pub fn launched(dir: &Path) -> bool {
    dir.join(REQUEST_FILE).is_file()
}

/// Reads the request of the attempt folder `dir` (canonical, valid, a submit).
pub fn read_request(dir: &Path) -> Result<AdapterRequest, ProcessError> {
    let request = process::read_request(dir)?;
    if request.operation != Operation::Submit {
        return Err(invalid(&dir.join(REQUEST_FILE), "not a submit request"));
    }
    Ok(request)
}

/// Asks the outside runtime to stop: writes `control/cancel.json` (replacing an earlier one)
/// with the process adapter's control record. Nothing proves the runtime saw it.
pub fn request_cancel(dir: &Path, reason: &str) -> Result<(), ProcessError> {
    process::request_cancel(dir, reason)
}

/// Where an inbox observation was read: a file relative to the control root, and for a line
/// of a `*.jsonl` file its byte offset.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Relative to the control root (`inbox/…`).
    pub file: PathBuf,
    /// The line's byte offset, for a `*.jsonl` line.
    pub offset: Option<u64>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&display_text(&self.file.to_string_lossy()))?;
        if let Some(offset) = self.offset {
            write!(f, " (line at byte {offset})")?;
        }
        Ok(())
    }
}

/// The observations of one task found in the inbox so far.
pub struct Inbox {
    control_root: PathBuf,
    task_id: String,
    limits: Limits,
    scanner: Option<Scanner>,
    found: BTreeMap<Location, AdapterObservation>,
    /// Lines of `valp report` files that do not decode, with why.
    undecodable: BTreeMap<Location, String>,
}

impl Inbox {
    /// Reads `<control_root>/inbox/` for observations of `task_id` (nothing is read before
    /// [`Inbox::refresh`]).
    pub fn new(control_root: &Path, task_id: &str) -> Self {
        Self {
            control_root: control_root.to_owned(),
            task_id: task_id.to_owned(),
            limits: Limits::default(),
            scanner: None,
            found: BTreeMap::new(),
            undecodable: BTreeMap::new(),
        }
    }

    /// Reads what is new in the inbox. Decoding is the ingest's ([`Ingested::decode`]: size
    /// caps, strict shape, every ABI check); what does not decode, or is about another task,
    /// is not kept.
    pub fn refresh(&mut self) {
        if self.scanner.is_none() {
            // The control root always exists once a task does; if it cannot be opened now,
            // the next refresh tries again.
            self.scanner = Scanner::new(
                &self.control_root,
                vec![PathBuf::from(INBOX_DIR)],
                self.limits,
            )
            .ok();
        }
        let Some(scanner) = self.scanner.as_mut() else {
            return;
        };
        for item in scanner.scan() {
            let location = match &item {
                // New content replaces whatever the file held before.
                Ingested::File { path, .. } => {
                    self.found.retain(|location, _| location.file != *path);
                    Location {
                        file: path.clone(),
                        offset: None,
                    }
                }
                Ingested::Line { path, offset, .. } => Location {
                    file: path.clone(),
                    offset: Some(*offset),
                },
                // A log whose history changed is read again from its start: its lines are
                // emitted again, so what was kept from it goes.
                Ingested::Rejected(rejection)
                    if matches!(
                        rejection.reason,
                        Reason::Truncated { .. }
                            | Reason::Replaced { .. }
                            | Reason::Rewritten { .. }
                    ) =>
                {
                    self.found
                        .retain(|location, _| location.file != rejection.file);
                    self.undecodable
                        .retain(|location, _| location.file != rejection.file);
                    continue;
                }
                Ingested::Rejected(_) | Ingested::Rescanned { .. } => continue,
            };
            match item.decode(&self.limits) {
                Some(Ok(observation)) if observation.request.task_id == self.task_id => {
                    self.found.insert(location, observation);
                }
                Some(Err(rejection)) if location.file.starts_with(super::report::REPORT_DIR) => {
                    self.undecodable
                        .insert(location, rejection.reason.to_string());
                }
                _ => {}
            }
        }
    }

    /// The observations naming `request`'s attempt, sorted out as the module documentation
    /// says. `recorded` holds the digests of the evidence already in the task's journal.
    pub fn classify(&self, request: &AdapterRequest, recorded: &BTreeSet<String>) -> Classified {
        let ours = request.canonical_bytes();
        let report_file = Path::new(super::report::REPORT_DIR)
            .join(format!("{}.jsonl", attempt_folder(&request.attempt_id)));
        let mut rejected: Vec<(Location, String)> = self
            .undecodable
            .iter()
            .filter(|(location, _)| location.file == report_file)
            .map(|(location, reason)| (location.clone(), reason.clone()))
            .collect();
        let mut candidates = Vec::new();
        for (location, observation) in &self.found {
            if observation.request.attempt_id != request.attempt_id {
                continue;
            }
            if observation.request.canonical_bytes() != ours {
                rejected.push((
                    location.clone(),
                    format!(
                        "forged or stale: names attempt {} of task {} but carries another \
                         request ({}, not the {} valp wrote)",
                        display_text(&request.attempt_id),
                        display_text(&request.task_id),
                        display_text(&observation.request.request_id),
                        request.request_id
                    ),
                ));
                continue;
            }
            let digest = sha256_digest(&observation.canonical_bytes());
            candidates.push((!recorded.contains(&digest), location, observation));
        }
        candidates.sort_by(|left, right| {
            (left.0, left.2.sequence, left.1).cmp(&(right.0, right.2.sequence, right.1))
        });
        let mut sequencer = Sequencer::new();
        let mut admitted: Vec<(Location, AdapterObservation)> = Vec::new();
        let mut ended: Option<(u64, ObservationStatus)> = None;
        for (_, location, observation) in candidates {
            if let Err(rejection) = sequencer.admit(&location.file, observation) {
                rejected.push((location.clone(), rejection.reason.to_string()));
                continue;
            }
            if let Some((sequence, status)) = ended {
                rejected.push((
                    location.clone(),
                    format!(
                        "after the end: sequence {} of request {} follows the final {} \
                         observation (sequence {sequence})",
                        observation.sequence,
                        request.request_id,
                        status.as_str()
                    ),
                ));
                continue;
            }
            if process::is_final(observation.status) {
                ended = Some((observation.sequence, observation.status));
            }
            admitted.push((location.clone(), observation.clone()));
        }
        rejected.sort();
        Classified { admitted, rejected }
    }
}

/// What the inbox says about one attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classified {
    /// The observations acted on, in order (the final one, if any, last).
    pub admitted: Vec<(Location, AdapterObservation)>,
    /// The observations that name the attempt but are not acted on, with why (sanitized).
    pub rejected: Vec<(Location, String)>,
}

impl Classified {
    /// The latest `accepted` observation.
    pub fn accepted(&self) -> Option<&AdapterObservation> {
        self.admitted
            .iter()
            .rev()
            .map(|(_, observation)| observation)
            .find(|observation| observation.status == ObservationStatus::Accepted)
    }

    /// The final observation (anything but `accepted` and `waiting`), with where it was read.
    pub fn final_observation(&self) -> Option<&(Location, AdapterObservation)> {
        self.admitted
            .last()
            .filter(|(_, observation)| process::is_final(observation.status))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn request(payload: &[u8]) -> AdapterRequest {
        AdapterRequest::new(
            Operation::Submit,
            "inst-1",
            1,
            "T",
            "ext",
            "T:ext:a1",
            "T:ext:1",
            1,
            &sha256_digest(payload),
            Vec::new(),
        )
    }

    fn observation(
        request: &AdapterRequest,
        sequence: u64,
        status: ObservationStatus,
    ) -> AdapterObservation {
        let reason = (status != ObservationStatus::Accepted
            && status != ObservationStatus::Completed)
            .then(|| "why".to_owned());
        AdapterObservation::new(
            request.clone(),
            sequence,
            status,
            Vec::new(),
            Vec::new(),
            None,
            reason,
        )
    }

    fn inbox(entries: &[(&str, Option<u64>, AdapterObservation)]) -> Inbox {
        let mut inbox = Inbox::new(Path::new("/nonexistent"), "T");
        for (file, offset, observation) in entries {
            inbox.found.insert(
                Location {
                    file: PathBuf::from(file),
                    offset: *offset,
                },
                observation.clone(),
            );
        }
        inbox
    }

    fn files(list: &[(Location, impl Sized)]) -> Vec<String> {
        list.iter()
            .map(|(location, _)| location.to_string())
            .collect()
    }

    #[test]
    fn the_attempts_own_observations_are_admitted_in_sequence_order() {
        let ours = request(b"item");
        let inbox = inbox(&[
            (
                "inbox/b.json",
                None,
                observation(&ours, 2, ObservationStatus::Completed),
            ),
            (
                "inbox/a.jsonl",
                Some(0),
                observation(&ours, 1, ObservationStatus::Accepted),
            ),
        ]);
        let classified = inbox.classify(&ours, &BTreeSet::new());
        assert_eq!(
            files(&classified.admitted),
            ["inbox/a.jsonl (line at byte 0)", "inbox/b.json"]
        );
        assert!(classified.rejected.is_empty());
        assert!(classified.accepted().is_some());
        assert_eq!(
            classified.final_observation().unwrap().1.status,
            ObservationStatus::Completed
        );
    }

    #[test]
    fn forged_duplicate_conflicting_and_late_observations_are_rejected() {
        let ours = request(b"item");
        let forged = request(b"other item");
        let accepted = observation(&ours, 1, ObservationStatus::Accepted);
        let inbox = inbox(&[
            ("inbox/1.json", None, accepted.clone()),
            ("inbox/2.json", None, accepted),
            (
                "inbox/3.json",
                None,
                observation(&ours, 1, ObservationStatus::Completed),
            ),
            (
                "inbox/4.json",
                None,
                observation(&forged, 2, ObservationStatus::Completed),
            ),
            (
                "inbox/5.json",
                None,
                observation(&ours, 3, ObservationStatus::Blocked),
            ),
            (
                "inbox/6.json",
                None,
                observation(&ours, 4, ObservationStatus::Completed),
            ),
        ]);
        let classified = inbox.classify(&ours, &BTreeSet::new());
        assert_eq!(
            files(&classified.admitted),
            ["inbox/1.json", "inbox/5.json"]
        );
        let reasons: Vec<String> = classified
            .rejected
            .iter()
            .map(|(location, reason)| format!("{location}: {reason}"))
            .collect();
        assert_eq!(reasons.len(), 4, "{reasons:#?}");
        assert!(reasons[0].starts_with("inbox/2.json: duplicate: sequence 1"));
        assert!(reasons[1].starts_with("inbox/3.json: out of order: sequence 1"));
        assert!(reasons[2].starts_with("inbox/4.json: forged or stale: names attempt T:ext:a1"));
        assert!(reasons[3].starts_with("inbox/6.json: after the end: sequence 4"));
        assert!(reasons[3].ends_with("follows the final blocked observation (sequence 3)"));
    }

    #[test]
    fn what_the_journal_recorded_stays_admitted_whatever_arrives_later() {
        let ours = request(b"item");
        let completed = observation(&ours, 3, ObservationStatus::Completed);
        let recorded: BTreeSet<String> = [sha256_digest(&completed.canonical_bytes())].into();
        let inbox = inbox(&[
            // Sorts first by name and by sequence, but arrived after the recorded one.
            (
                "inbox/0-late.json",
                None,
                observation(&ours, 2, ObservationStatus::Blocked),
            ),
            ("inbox/9.json", None, completed),
        ]);
        let classified = inbox.classify(&ours, &recorded);
        assert_eq!(files(&classified.admitted), ["inbox/9.json"]);
        assert_eq!(files(&classified.rejected), ["inbox/0-late.json"]);
        assert!(
            classified.rejected[0]
                .1
                .starts_with("out of order: sequence 2")
        );
        // Without the journal, the lower sequence is the end and the later one comes after it.
        let classified = inbox.classify(&ours, &BTreeSet::new());
        assert_eq!(files(&classified.admitted), ["inbox/0-late.json"]);
    }

    #[test]
    fn the_inbox_keeps_only_its_tasks_observations_and_reads_new_content() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(INBOX_DIR).join("deep");
        std::fs::create_dir_all(&dir).unwrap();
        let ours = request(b"item");
        let other = AdapterRequest::new(
            Operation::Submit,
            "inst-1",
            1,
            "OTHER",
            "ext",
            "OTHER:ext:a1",
            "OTHER:ext:1",
            1,
            &sha256_digest(b"x"),
            Vec::new(),
        );
        let line = |observation: &AdapterObservation| observation.canonical_bytes();
        let mut log = line(&observation(&ours, 1, ObservationStatus::Accepted));
        log.extend(line(&observation(&other, 1, ObservationStatus::Accepted)));
        std::fs::write(dir.join("log.jsonl"), &log).unwrap();
        std::fs::write(dir.join("junk.json"), b"{").unwrap();
        let mut inbox = Inbox::new(root.path(), "T");
        inbox.refresh();
        assert_eq!(inbox.found.len(), 1);
        // A line appended is read from where the last read stopped; the old line stays.
        let mut appended = log.clone();
        appended.extend(line(&observation(&ours, 2, ObservationStatus::Completed)));
        std::fs::write(dir.join("log.jsonl"), &appended).unwrap();
        inbox.refresh();
        let classified = inbox.classify(&ours, &BTreeSet::new());
        assert_eq!(classified.admitted.len(), 2);
        // A truncated log is read again from its start: what it no longer holds is gone.
        std::fs::write(dir.join("log.jsonl"), b"").unwrap();
        inbox.refresh();
        assert!(inbox.classify(&ours, &BTreeSet::new()).admitted.is_empty());
    }
}
