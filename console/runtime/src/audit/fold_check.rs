//! `valp verify`'s check of each task folder's `correction-fold.json` ([`fold_cache`]): while
//! the store verifies the task journal from the genesis, the entries it decodes are folded
//! again ([`FoldChecks::observer`], no second read or decoding of the journal) and, at the line the file is bound
//! to, compared with it: the line (entry digest and end), the task, and the fold (rounds held,
//! rounds opened, the newest unfixed). A file that does not decode, is not that fold, or names a
//! line the verified journal does not reach is a problem naming the file.
//!
//! The file is decoded on its own thread while the journal is verified (a 10^5-entry demo's is
//! ~1.1 MB: decoding it first held up the start of the journal's verification). Folding needs
//! only the task and seq it names, read from its bytes at once: in canonical JSON the only
//! `"seq":` and `"task_id":"` are its own members' (round objects have neither, and a string
//! holds no bare quote), so for a file that decodes they are exactly what it decodes to. When
//! they cannot be read that way (an escaped task id, a file that is not canonical), the first
//! line waits for the decoding.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use valp_kernel::replay::CompactEntry;
use valp_store::chain::ChainLine;
use valp_store::verify::LineObserver;

use super::derive::Deriver;
use super::fold::Fold;
use super::fold_cache;

/// What one file's check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldCheck {
    /// The task folder.
    pub dir: PathBuf,
    /// The file.
    pub path: PathBuf,
    /// The seq it is bound to (for a file that does not decode, the seq it names, or 0).
    pub seq: u64,
    /// What does not match, if anything.
    pub problem: Option<String>,
}

/// The checks of a verify, one per task folder that has the file.
#[derive(Debug, Default)]
pub struct FoldChecks(Vec<(PathBuf, Arc<Mutex<Probe>>)>);

#[derive(Debug)]
struct Probe {
    /// The file, decoded or being decoded.
    cached: Cached,
    /// The fold of the lines read so far (its open and newest rounds).
    deriver: Deriver,
    /// The outcome at the file's line, once reached.
    outcome: Option<Result<(), String>>,
    /// Rounds held above which the fold is trimmed to its open and newest rounds.
    trim_at: usize,
}

/// The file's task and fold, or the seq it names (0: none) and why it does not decode.
type Decoded = Result<(String, Fold), (u64, String)>;

/// A file being decoded on its own thread, then decoded.
#[derive(Debug)]
struct Cached {
    /// The decoding thread, until it is joined.
    thread: Option<JoinHandle<Decoded>>,
    /// The task and seq the file's bytes name, when they can be read without decoding it.
    named: Option<(String, u64)>,
    /// The file, once the thread is joined.
    decoded: Decoded,
}

impl Cached {
    /// The file decoded (a file that cannot be read: `decoded`).
    fn done(decoded: Decoded) -> Self {
        Self {
            thread: None,
            named: None,
            decoded,
        }
    }

    /// Starts decoding the file's `bytes` on a thread (here, if none can be started).
    fn start(bytes: Vec<u8>) -> Self {
        let named = named_binding(&bytes);
        let bytes = Arc::new(bytes);
        let aside = Arc::clone(&bytes);
        match std::thread::Builder::new()
            .name("fold-decode".to_owned())
            .spawn(move || decode(&aside))
        {
            Ok(thread) => Self {
                thread: Some(thread),
                named,
                decoded: Err((0, String::new())),
            },
            Err(_) => Self::done(decode(&bytes)),
        }
    }

    /// The file decoded (waiting for its thread if need be).
    fn decoded(&mut self) -> &Decoded {
        if let Some(thread) = self.thread.take() {
            self.decoded = thread
                .join()
                .unwrap_or_else(|_| Err((0, "its decoding stopped unexpectedly".to_owned())));
        }
        &self.decoded
    }

    /// The task and the seq the file is bound to: read from its bytes while it is decoded,
    /// else decoded (waited for); `None` for a file that does not decode.
    fn binding(&mut self) -> Option<(&str, u64)> {
        if self
            .thread
            .as_ref()
            .is_some_and(|thread| self.named.is_none() || thread.is_finished())
        {
            self.decoded();
        }
        if self.thread.is_some() {
            return self.named.as_ref().map(|(task, seq)| (task.as_str(), *seq));
        }
        match &self.decoded {
            Ok((task, fold)) => Some((task.as_str(), seq_of(fold))),
            Err(_) => None,
        }
    }
}

/// The file's task and fold, or the seq it names and why it does not decode.
fn decode(bytes: &[u8]) -> Decoded {
    fold_cache::decode_any(bytes).map_err(|reason| (named_seq(bytes), reason))
}

/// The task and seq a canonical file names, found in its bytes (see the module's doc):
/// `None` unless each key occurs once, the seq is digits and the task has no escape.
fn named_binding(bytes: &[u8]) -> Option<(String, u64)> {
    let text = std::str::from_utf8(bytes).ok()?;
    let once = |key: &str| {
        let at = text.find(key)?;
        (text.rfind(key) == Some(at)).then(|| &text[at + key.len()..])
    };
    let after_seq = once("\"seq\":")?;
    let digits = after_seq
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(after_seq.len());
    let seq = after_seq[..digits].parse().ok()?;
    let after_task = once("\"task_id\":\"")?;
    let task = &after_task[..after_task.find('"')?];
    (!task.contains('\\')).then(|| (task.to_owned(), seq))
}

/// Rounds held before the first trim (the newest [`fold_cache::NEWEST_ROUNDS`], and half as
/// many more).
const TRIM_AT_LEAST: usize = 1536;

impl FoldChecks {
    /// The observer of the task journal in `dir` (`None` when the folder has no file).
    pub fn observer(&mut self, dir: &Path) -> Option<LineObserver> {
        let path = fold_cache::path(dir);
        let cached = match std::fs::read(&path) {
            Ok(bytes) => Cached::start(bytes),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
            Err(error) => Cached::done(Err((0, format!("cannot be read: {error}")))),
        };
        let probe = Arc::new(Mutex::new(Probe {
            cached,
            deriver: Deriver::new(),
            outcome: None,
            trim_at: TRIM_AT_LEAST,
        }));
        self.0.push((dir.to_owned(), Arc::clone(&probe)));
        Some(Box::new(move |line, entry| {
            if let Ok(mut probe) = probe.lock() {
                probe.observe(line, entry);
            }
        }))
    }

    /// One result per file; `verified(dir)` says whether the task journal in `dir` verified (a
    /// file of a journal that does not is not checked: `None`).
    pub fn results(self, verified: impl Fn(&Path) -> bool) -> Vec<Option<FoldCheck>> {
        self.0
            .into_iter()
            .map(|(dir, probe)| {
                let path = fold_cache::path(&dir);
                let mut probe = probe.lock().ok()?;
                let probe = &mut *probe;
                let (seq, problem) = match (probe.cached.decoded(), &probe.outcome) {
                    (Err((seq, reason)), _) => (*seq, Some(reason.clone())),
                    (Ok((_, fold)), Some(outcome)) => (seq_of(fold), outcome.clone().err()),
                    (Ok(_), None) if !verified(&dir) => return None,
                    (Ok((_, fold)), None) => (
                        seq_of(fold),
                        Some(format!(
                            "it is bound to line {} (seq {}), which the verified journal does \
                             not reach",
                            seq_of(fold) + 1,
                            seq_of(fold)
                        )),
                    ),
                };
                Some(FoldCheck {
                    dir,
                    path,
                    seq,
                    problem,
                })
            })
            .collect()
    }
}

/// The `seq` a file that does not decode names, to show with its problem (0: none).
fn named_seq(bytes: &[u8]) -> u64 {
    serde_json::from_slice::<serde_json::Value>(bytes)
        .ok()
        .and_then(|value| value.get("seq")?.as_u64())
        .unwrap_or(0)
}

fn seq_of(fold: &Fold) -> u64 {
    fold.at().map_or(0, |at| at.seq)
}

impl Probe {
    fn observe(&mut self, line: &ChainLine, entry: &CompactEntry) {
        if self.outcome.is_some() {
            return;
        }
        let Some((task, seq)) = self.cached.binding() else {
            return;
        };
        if line.seq > seq {
            return;
        }
        if entry.event.task_id.value() != task {
            self.outcome = Some(Err(format!(
                "it is the fold of task {task:?}, the journal's is {:?}",
                entry.event.task_id.value()
            )));
            return;
        }
        self.deriver
            .push_event(line.seq, line.recorded_at, &entry.event);
        // Only the open and the newest rounds are compared: holding every round of a long
        // history (~2.4 KB each) would make verify's memory grow with it.
        // Trimmed when it has grown by half since the last trim, so trimming stays linear.
        if self.deriver.rounds().len() > self.trim_at {
            self.deriver.keep(fold_cache::NEWEST_ROUNDS);
            let held = self.deriver.rounds().len();
            self.trim_at = held + held.max(TRIM_AT_LEAST) / 2;
        }
        if line.seq < seq {
            return;
        }
        let Ok((_, fold)) = self.cached.decoded() else {
            return;
        };
        let Some(at) = fold.at() else {
            return;
        };
        let rebuilt = self.deriver.kept(fold_cache::NEWEST_ROUNDS);
        self.outcome = Some(if line.digest != at.entry_digest || line.end != at.length {
            Err(format!(
                "it is bound to line {} (seq {}) with entry_digest {} ending at byte {}, the \
                 journal's line there has {} ending at byte {}",
                at.seq + 1,
                at.seq,
                at.entry_digest,
                at.length,
                line.digest,
                line.end
            ))
        } else if &rebuilt != fold.deriver() {
            Err(
                "its fold (rounds, opened, unfixed) differs from the fold from the genesis at \
                 that line"
                    .to_owned(),
            )
        } else {
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::derive::Fact;
    use valp_store::journal::LineBinding;

    /// The file of a fold of `task` bound to seq 42, with rounds.
    fn file_of(task: &str) -> Vec<u8> {
        let mut deriver = Deriver::new();
        for (revision, kind) in [(40, "verification_failed"), (41, "attempt_failed")] {
            deriver.push(&Fact {
                revision,
                recorded_at: None,
                kind: kind.to_owned(),
                work_item: Some("t:w".to_owned()),
                attempt: None,
                control_reason: None,
                superseded: Vec::new(),
            });
        }
        let at = LineBinding {
            seq: 42,
            entry_digest: format!("sha256:{}", "a".repeat(64)),
            length: 4200,
        };
        fold_cache::encode(task, &Fold::resumed(deriver, at)).expect("a fold with a line")
    }

    #[test]
    fn the_binding_read_from_the_bytes_is_the_decoded_one_or_none() {
        let bytes = file_of("t:task-1");
        let (task, fold) = fold_cache::decode_any(&bytes).expect("it decodes");
        assert_eq!(task, "t:task-1");
        assert_eq!(named_binding(&bytes), Some((task, seq_of(&fold))));
        // A task id written with escapes is not read from the bytes: decoding decides.
        let escaped = file_of("t:\"quoted\"");
        assert!(fold_cache::decode_any(&escaped).is_ok());
        assert_eq!(named_binding(&escaped), None);
        // Nor is a seq that is not once in the file.
        let text = String::from_utf8(bytes).expect("UTF-8");
        let twice = text.replacen('{', "{\"seq\":7,", 1);
        assert_eq!(named_binding(twice.as_bytes()), None);
    }

    #[test]
    fn a_file_decoded_aside_gives_its_binding_and_decoding() {
        let bytes = file_of("t:task-1");
        let mut cached = Cached::start(bytes.clone());
        assert_eq!(cached.binding(), Some(("t:task-1", 42)));
        assert_eq!(cached.decoded(), &decode(&bytes));
        let mut broken = Cached::start(b"{\"seq\":9}".to_vec());
        assert_eq!(broken.binding(), None, "it does not decode");
        assert!(matches!(broken.decoded(), Err((9, _))));
    }
}
