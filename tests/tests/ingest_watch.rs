//! Observation ingest: the watcher against real files (inotify and the polling fallback), the
//! soak that compares what was ingested with what is on disk, and the strict decoding stage.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_runtime::abi::{
    ABI_VERSION, AdapterObservation, AdapterRequest, ObservationStatus, Operation, ProofKind,
    ProvenanceSegment,
};
use valp_runtime::ingest::{
    Ingested, Limits, Mode, Reason, Rejection, Sequencer, WatchConfig, Watcher, decode_observation,
};

/// How long a test waits for something that should happen within milliseconds.
const PATIENCE: Duration = Duration::from_secs(10);

struct Root {
    _dir: tempfile::TempDir,
    base: PathBuf,
}

fn root() -> Root {
    let dir = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir(base.join("runtime")).unwrap();
    fs::create_dir(base.join("inbox")).unwrap();
    Root { _dir: dir, base }
}

fn config(base: &Path, polling: bool) -> WatchConfig {
    WatchConfig {
        // Only events (or polls) bring changes in: periodic rescans must not hide a miss.
        rescan_every: if polling {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(3600)
        },
        poll_interval: Duration::from_millis(100),
        force_polling: polling,
        ..WatchConfig::control_root(base)
    }
}

struct Session {
    watcher: Watcher,
    items: Receiver<Ingested>,
}

impl Session {
    fn start(config: WatchConfig) -> Self {
        let polling = config.force_polling;
        let (watcher, items) = Watcher::start(config).unwrap();
        if polling {
            assert_eq!(
                watcher.mode(),
                &Mode::Polling {
                    reason: "forced".into()
                }
            );
        } else {
            assert_eq!(watcher.mode(), &Mode::Native);
        }
        let mut session = Self { watcher, items };
        // The scan at start answers generation 0.
        session.until_rescanned(0);
        session
    }

    /// Items up to the [`Ingested::Rescanned`] answering `ticket` (not included).
    fn until_rescanned(&mut self, ticket: u64) -> Vec<Ingested> {
        let deadline = Instant::now() + PATIENCE;
        let mut items = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.items.recv_timeout(left) {
                Ok(Ingested::Rescanned { generation }) if generation >= ticket => return items,
                Ok(Ingested::Rescanned { .. }) => {}
                Ok(item) => items.push(item),
                Err(error) => panic!("no rescan {ticket} ({error:?}); got {items:?}"),
            }
        }
    }

    /// Everything not yet received that a full rescan would find.
    fn settle(&mut self) -> Vec<Ingested> {
        let ticket = self.watcher.rescan();
        self.until_rescanned(ticket)
    }

    /// The next `count` items (rescan answers skipped).
    fn next(&mut self, count: usize) -> Vec<Ingested> {
        let deadline = Instant::now() + PATIENCE;
        let mut items = Vec::new();
        while items.len() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.items.recv_timeout(left) {
                Ok(Ingested::Rescanned { .. }) => {}
                Ok(item) => items.push(item),
                Err(error) => panic!("{error:?} after {items:?}"),
            }
        }
        items
    }

    /// Asserts nothing but rescan answers arrives for `quiet`.
    fn nothing_for(&mut self, quiet: Duration) {
        let deadline = Instant::now() + quiet;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.items.recv_timeout(left) {
                Ok(Ingested::Rescanned { .. }) => {}
                Ok(item) => panic!("unexpected {item:?}"),
                Err(RecvTimeoutError::Timeout) => return,
                Err(error) => panic!("{error:?}"),
            }
        }
    }
}

/// Writes `bytes` to `path` the way adapters must: a temporary name, then a rename.
fn write_atomic(path: &Path, bytes: &[u8]) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let temp = path.with_file_name(format!(".{name}.tmp"));
    fs::write(&temp, bytes).unwrap();
    fs::rename(&temp, path).unwrap();
}

fn append(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

fn file(path: &str, bytes: &[u8]) -> Ingested {
    Ingested::File {
        path: PathBuf::from(path),
        bytes: bytes.to_vec(),
        digest: sha256_digest(bytes),
    }
}

fn line(path: &str, offset: u64, bytes: &[u8]) -> Ingested {
    Ingested::Line {
        path: PathBuf::from(path),
        offset,
        bytes: bytes.to_vec(),
    }
}

fn rejected(path: &str, reason: Reason) -> Ingested {
    Ingested::Rejected(Rejection::new(path, reason))
}

fn both_modes(scenario: fn(bool)) {
    scenario(false);
    scenario(true);
}

#[test]
fn new_files_and_new_folders_are_picked_up() {
    both_modes(|polling| {
        let root = root();
        fs::write(root.base.join("inbox/early.json"), b"{}").unwrap();
        let (watcher, items) = Watcher::start(config(&root.base, polling)).unwrap();
        let mut session = Session { watcher, items };
        // The scan at start emits what was already there.
        assert_eq!(
            session.until_rescanned(0),
            [file("inbox/early.json", b"{}")]
        );
        // A new adapter folder with a file written at once: the folder's event walks it.
        fs::create_dir_all(root.base.join("runtime/process/attempts/ab")).unwrap();
        write_atomic(
            &root
                .base
                .join("runtime/process/attempts/ab/abi-submit-accepted.json"),
            b"{\"a\":1}",
        );
        assert_eq!(
            session.next(1),
            [file(
                "runtime/process/attempts/ab/abi-submit-accepted.json",
                b"{\"a\":1}"
            )]
        );
        assert_eq!(session.settle(), []);
    });
}

#[test]
fn an_atomic_replace_is_emitted_once_and_only_when_the_content_changed() {
    both_modes(|polling| {
        let root = root();
        let mut session = Session::start(config(&root.base, polling));
        let path = root.base.join("inbox/state.json");
        write_atomic(&path, b"{\"v\":1}");
        assert_eq!(session.next(1), [file("inbox/state.json", b"{\"v\":1}")]);
        write_atomic(&path, b"{\"v\":2}");
        assert_eq!(session.next(1), [file("inbox/state.json", b"{\"v\":2}")]);
        // Same content, new inode: nothing, even after a full rescan.
        write_atomic(&path, b"{\"v\":2}");
        session.nothing_for(Duration::from_millis(300));
        assert_eq!(session.settle(), []);
    });
}

#[test]
fn jsonl_lines_are_emitted_one_by_one_and_a_partial_line_waits_for_its_lf() {
    both_modes(|polling| {
        let root = root();
        let mut session = Session::start(config(&root.base, polling));
        let path = root.base.join("inbox/log.jsonl");
        append(&path, b"{\"n\":1}\n{\"n\":2}\n{\"n\"");
        assert_eq!(
            session.next(2),
            [
                line("inbox/log.jsonl", 0, b"{\"n\":1}"),
                line("inbox/log.jsonl", 8, b"{\"n\":2}"),
            ]
        );
        session.nothing_for(Duration::from_millis(300));
        append(&path, b":3}\n{\"n\":4}\n");
        assert_eq!(
            session.next(2),
            [
                line("inbox/log.jsonl", 16, b"{\"n\":3}"),
                line("inbox/log.jsonl", 24, b"{\"n\":4}"),
            ]
        );
        assert_eq!(session.settle(), []);
    });
}

#[test]
fn truncated_replaced_and_continued_logs() {
    both_modes(|polling| {
        let root = root();
        let mut session = Session::start(config(&root.base, polling));
        let path = root.base.join("inbox/log.jsonl");
        append(&path, b"aaaa\nbbbb\ncccc\n");
        assert_eq!(session.next(3).len(), 3);

        // Shrunk: reported once with both sizes, then read again from byte 0.
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        append(&path, b"dddd\n");
        let items = session.next(2);
        // Seen empty or already with the new line, depending on when the watcher looked.
        assert!(
            matches!(
                &items[0],
                Ingested::Rejected(Rejection {
                    reason: Reason::Truncated {
                        from: 15,
                        to: 0 | 5
                    },
                    ..
                })
            ),
            "{items:?}"
        );
        assert_eq!(items[1], line("inbox/log.jsonl", 0, b"dddd"));

        // Replaced by a file that continues it (a tool that rewrites the log with a line
        // added): only the new line.
        write_atomic(&path, b"dddd\neeee\n");
        assert_eq!(session.next(1), [line("inbox/log.jsonl", 5, b"eeee")]);

        // Replaced by a different file: reported, then read from byte 0.
        write_atomic(&path, b"ffff\ngggg\nhhhh\n");
        assert_eq!(
            session.next(4),
            [
                rejected("inbox/log.jsonl", Reason::Replaced { from: 10 }),
                line("inbox/log.jsonl", 0, b"ffff"),
                line("inbox/log.jsonl", 5, b"gggg"),
                line("inbox/log.jsonl", 10, b"hhhh"),
            ]
        );

        // Rewritten in place, same inode, longer: the bytes before the read position changed.
        // (A read racing the write may let the new last line through before the report; what
        // follows the last report is the file as it is.)
        assert_eq!(session.settle(), []);
        let mut rewrite = OpenOptions::new().write(true).open(&path).unwrap();
        rewrite.write_all(b"iiii\njjjj\nkkkk\nllll\n").unwrap();
        drop(rewrite);
        let mut items = session.next(1);
        items.extend(session.settle());
        let last = items
            .iter()
            .rposition(|item| matches!(item, Ingested::Rejected(_)))
            .unwrap();
        assert!(matches!(
            &items[last],
            Ingested::Rejected(Rejection {
                reason: Reason::Rewritten { .. },
                ..
            })
        ));
        assert_eq!(
            items[last + 1..],
            [
                line("inbox/log.jsonl", 0, b"iiii"),
                line("inbox/log.jsonl", 5, b"jjjj"),
                line("inbox/log.jsonl", 10, b"kkkk"),
                line("inbox/log.jsonl", 15, b"llll"),
            ]
        );
        assert_eq!(session.settle(), []);
    });
}

#[test]
fn oversized_files_and_lines_are_rejected_with_the_reason() {
    both_modes(|polling| {
        let root = root();
        let mut session = Session::start(WatchConfig {
            limits: Limits {
                max_file_bytes: 64,
                max_line_bytes: 16,
            },
            ..config(&root.base, polling)
        });
        write_atomic(&root.base.join("inbox/big.json"), &[b' '; 65]);
        assert_eq!(
            session.next(1),
            [rejected(
                "inbox/big.json",
                Reason::TooLarge {
                    size: 65,
                    limit: 64
                }
            )]
        );
        append(
            &root.base.join("inbox/log.jsonl"),
            b"short\nthis line is far too long\nfine\n",
        );
        assert_eq!(
            session.next(3),
            [
                line("inbox/log.jsonl", 0, b"short"),
                Ingested::Rejected(
                    Rejection::new("inbox/log.jsonl", Reason::LineTooLong { limit: 16 })
                        .at_offset(6)
                ),
                line("inbox/log.jsonl", 32, b"fine"),
            ]
        );
        // Reported once per state of the file, not on every rescan.
        assert_eq!(session.settle(), []);
        // Replaced by a small one: read.
        write_atomic(&root.base.join("inbox/big.json"), b"{}");
        assert_eq!(session.next(1), [file("inbox/big.json", b"{}")]);
    });
}

#[test]
fn links_are_not_followed_and_temporary_files_are_ignored() {
    both_modes(|polling| {
        let root = root();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.json"), b"{\"secret\":1}").unwrap();
        let mut session = Session::start(config(&root.base, polling));
        fs::create_dir(root.base.join("runtime/process")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.json"),
            root.base.join("runtime/process/link.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.base.join("inbox/folder")).unwrap();
        // Temporary and hidden names, lock files, hidden folders.
        fs::write(root.base.join("inbox/.x.json.tmp"), b"{}").unwrap();
        fs::write(root.base.join("inbox/y.json.tmp"), b"{}").unwrap();
        fs::write(root.base.join("inbox/.hidden.json"), b"{}").unwrap();
        fs::write(root.base.join("inbox/log.jsonl.lock"), b"").unwrap();
        fs::create_dir(root.base.join("inbox/.staging")).unwrap();
        fs::write(root.base.join("inbox/.staging/z.json"), b"{}").unwrap();
        let mut items = session.next(2);
        items.sort_by_key(|item| item.path().unwrap().to_path_buf());
        assert_eq!(
            items,
            [
                rejected("inbox/folder", Reason::Symlink),
                rejected("runtime/process/link.json", Reason::Symlink),
            ]
        );
        assert_eq!(session.settle(), []);
    });
}

#[test]
fn other_entries_are_rejected_once_and_adapter_files_are_skipped() {
    let root = root();
    let mut session = Session::start(config(&root.base, false));
    fs::write(root.base.join("inbox/notes.txt"), b"hello").unwrap();
    let fifo = root.base.join("inbox/pipe.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // Under runtime/, an adapter's own files of other kinds are skipped without a word.
    fs::create_dir(root.base.join("runtime/process")).unwrap();
    fs::write(root.base.join("runtime/process/stdout"), b"output").unwrap();
    fs::write(root.base.join("runtime/process/supervisor.log"), b"log").unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"odd-\xff.json");
    fs::write(root.base.join("inbox").join(odd), b"{}").unwrap();
    let mut items = session.next(3);
    items.sort_by_key(|item| item.path().unwrap().to_path_buf());
    let reasons: Vec<_> = items
        .iter()
        .map(|item| match item {
            Ingested::Rejected(rejection) => rejection.reason.code(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(reasons, ["unknown_kind", "non_utf8_name", "not_a_file"]);
    // The name shown is printable.
    let shown = match &items[1] {
        Ingested::Rejected(rejection) => rejection.to_string(),
        _ => unreachable!(),
    };
    assert_eq!(shown, "inbox/odd-\u{fffd}.json: the name is not UTF-8");
    assert_eq!(session.settle(), []);
}

#[test]
fn dropping_the_watcher_with_a_full_channel_returns() {
    let root = root();
    for n in 0..20 {
        fs::write(root.base.join(format!("inbox/{n}.json")), b"{}").unwrap();
    }
    let (watcher, items) = Watcher::start(WatchConfig {
        capacity: 1,
        ..config(&root.base, false)
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    drop(watcher);
    assert!(started.elapsed() < Duration::from_secs(2));
    // What was sent stays readable; then the channel ends.
    let received: Vec<_> = items.iter().collect();
    assert!(!received.is_empty() && received.len() < 20);
}

#[test]
fn a_missing_root_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = Watcher::start(WatchConfig::control_root(dir.path())).unwrap_err();
    assert!(error.to_string().contains("runtime"), "{error}");
}

// ---------------------------------------------------------------------------------------------
// The soak.

/// SplitMix64: a seeded, reproducible sequence of operations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Per file: the items received, checked against the file on disk.
#[derive(Default)]
struct Seen {
    /// `*.json`: digests emitted, in order, and the last bytes.
    digests: Vec<String>,
    last: Option<Vec<u8>>,
    /// `*.jsonl`: lines since the last truncation/replacement/rewrite report.
    lines: Vec<(u64, Vec<u8>)>,
    restarts: usize,
}

fn is_json(name: &str) -> bool {
    Path::new(name).extension().is_some_and(|ext| ext == "json")
}

/// What the soak received, per file.
#[derive(Default)]
struct Received(BTreeMap<String, Seen>);

impl Received {
    fn entry(&mut self, path: &Path) -> &mut Seen {
        self.0.entry(path.to_str().unwrap().to_owned()).or_default()
    }

    fn record(&mut self, items: impl IntoIterator<Item = Ingested>) {
        for item in items {
            match item {
                Ingested::File {
                    path,
                    bytes,
                    digest,
                } => {
                    let entry = self.entry(&path);
                    let repeated = entry.digests.last() == Some(&digest);
                    assert!(!repeated, "duplicate {}", path.display());
                    entry.digests.push(digest);
                    entry.last = Some(bytes);
                }
                Ingested::Line {
                    path,
                    offset,
                    bytes,
                } => {
                    let entry = self.entry(&path);
                    let expected = entry
                        .lines
                        .last()
                        .map_or(0, |(offset, bytes)| offset + bytes.len() as u64 + 1);
                    assert_eq!(offset, expected, "{}: missed or repeated", path.display());
                    entry.lines.push((offset, bytes));
                }
                Ingested::Rejected(Rejection { file, reason, .. }) => {
                    assert!(
                        matches!(reason, Reason::Truncated { .. } | Reason::Rewritten { .. }),
                        "{}: {reason}",
                        file.display()
                    );
                    let entry = self.entry(&file);
                    entry.lines.clear();
                    entry.restarts += 1;
                }
                Ingested::Rescanned { .. } => {}
            }
        }
    }

    /// Asserts the ingested set is what is on disk: 0 missed, 0 duplicated. Returns how many
    /// times a log was read again from the start.
    fn check(mut self, base: &Path, files: &[String]) -> usize {
        let mut restarts = 0;
        for name in files {
            let disk = fs::read(base.join(name)).unwrap_or_default();
            let entry = self.0.remove(name).unwrap_or_default();
            restarts += entry.restarts;
            if is_json(name) {
                assert_eq!(entry.last.as_deref(), Some(&disk[..]), "{name}");
                assert!(entry.digests.windows(2).all(|w| w[0] != w[1]), "{name}");
            } else {
                let mut lines = Vec::new();
                let mut offset = 0;
                for text in disk.split_inclusive(|&b| b == b'\n') {
                    assert!(text.ends_with(b"\n"));
                    lines.push((offset, text[..text.len() - 1].to_vec()));
                    offset += text.len() as u64;
                }
                assert_eq!(entry.lines, lines, "{name}");
            }
        }
        assert!(self.0.is_empty(), "{:?}", self.0.keys());
        restarts
    }
}

/// One step of the soak on `path`: an atomic replace (`*.json`; one in four keeps the
/// content), a truncation that starts the log over (1 in 40), or an append of a whole line or
/// of a line in two writes. Lines end with their generation and step, so a rewrite is seen.
/// Returns whether it truncated.
fn soak_step(rng: &mut Rng, path: &Path, step: u64, generation: &mut u64) -> bool {
    if is_json(path.to_str().unwrap()) {
        let version = if rng.below(4) == 0 { 0 } else { step };
        write_atomic(path, format!("{{\"v\":{version}}}").as_bytes());
        false
    } else if rng.below(40) == 0 && path.exists() {
        *generation += 1;
        fs::write(path, format!("{{\"g\":{generation},\"n\":0}}\n")).unwrap();
        true
    } else {
        let text = format!(
            "{{\"pad\":\"{}\",\"g\":{generation},\"s\":{step}}}\n",
            "x".repeat(usize::try_from(rng.below(40)).unwrap())
        );
        if rng.below(3) == 0 {
            let (head, tail) = text.as_bytes().split_at(text.len() / 2);
            append(path, head);
            append(path, tail);
        } else {
            append(path, text.as_bytes());
        }
        false
    }
}

fn soak(polling: bool) {
    let root = root();
    let mut session = Session::start(WatchConfig {
        capacity: 64,
        ..config(&root.base, polling)
    });
    let files: Vec<String> = (0..50)
        .map(|n| {
            let folder = if n % 2 == 0 { "inbox" } else { "runtime/a" };
            let kind = if n % 5 < 2 { "json" } else { "jsonl" };
            format!("{folder}/f{n:02}.{kind}")
        })
        .collect();
    fs::create_dir(root.base.join("runtime/a")).unwrap();
    let started = Instant::now();
    let mut rng = Rng(5);
    let mut received = Received::default();
    let (mut truncations, mut generation) = (0, 0);
    for step in 0..3000 {
        let name = &files[usize::try_from(rng.below(50)).unwrap()];
        truncations += usize::from(soak_step(
            &mut rng,
            &root.base.join(name),
            step,
            &mut generation,
        ));
        // Drain as we go, and once force a rescan mid-way.
        received.record(session.items.try_iter());
        if step == 1500 {
            received.record(session.settle());
        }
        if step % 100 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    received.record(session.settle());
    // Quiescent: nothing more arrives (rescans included).
    session.nothing_for(Duration::from_millis(300));
    let restarts = received.check(&root.base, &files);
    assert!(restarts <= truncations, "{restarts} > {truncations}");
    assert!(truncations > 0 && restarts > 0);
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn soak_50_files_inotify() {
    soak(false);
}

#[test]
fn soak_50_files_polling() {
    soak(true);
}

// ---------------------------------------------------------------------------------------------
// The decoding stage.

fn request(attempt: &str) -> AdapterRequest {
    AdapterRequest::new(
        Operation::Submit,
        "inst-1",
        1,
        "TASK-1",
        "build",
        attempt,
        "TASK-1:build:1",
        1,
        &sha256_digest(b"payload"),
        vec!["out/report.txt".to_owned()],
    )
}

fn observation(adapter: &str, attempt: &str, sequence: u64) -> AdapterObservation {
    let request = request(attempt);
    let segment = ProvenanceSegment {
        segment_id: "seg-0".to_owned(),
        sequence: 0,
        adapter_id: adapter.to_owned(),
        abi_version: ABI_VERSION.to_owned(),
        input_identity: request.request_id.clone(),
        input_digest: request.payload_digest.clone(),
        output_identity: format!("process:{sequence}"),
        output_digest: sha256_digest(b"output"),
        proof_kind: ProofKind::ProcessBound,
        evidence_refs: vec!["proofs/0.json".to_owned()],
        acknowledged: true,
        failure_code: None,
    };
    AdapterObservation::new(
        request,
        sequence,
        ObservationStatus::Accepted,
        vec![segment],
        vec![],
        Some(format!("process:42:{sequence}")),
        None,
    )
}

fn reason(path: &str, bytes: &[u8]) -> Reason {
    decode_observation(Path::new(path), bytes, &Limits::default())
        .unwrap_err()
        .reason
}

#[test]
fn decoding_accepts_well_formed_observations_where_they_belong() {
    let observation = observation("process", "attempt-1", 1);
    let bytes = observation.canonical_bytes();
    let path = "runtime/process/attempts/ab/abi-submit-accepted.json";
    assert_eq!(
        decode_observation(Path::new(path), &bytes, &Limits::default()).unwrap(),
        observation
    );
    // Pretty formatting is fine; the inbox takes any adapter.
    let pretty =
        serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&bytes).unwrap())
            .unwrap();
    assert_eq!(
        decode_observation(Path::new("inbox/x.json"), &pretty, &Limits::default()).unwrap(),
        observation
    );
}

#[test]
fn decoding_rejects_with_the_exact_reason() {
    let good = observation("process", "attempt-1", 1);
    let path = "runtime/process/o.json";
    // Malformed: not JSON, an unknown member, a wrong type.
    assert!(matches!(reason(path, b"{not json"), Reason::Malformed(_)));
    let mut value: serde_json::Value = serde_json::from_slice(&good.canonical_bytes()).unwrap();
    value["extra"] = serde_json::json!(true);
    match reason(path, &serde_json::to_vec(&value).unwrap()) {
        Reason::Malformed(text) => assert!(text.starts_with("unknown field `extra`"), "{text}"),
        other => panic!("{other:?}"),
    }
    // Oversized.
    let limits = Limits {
        max_file_bytes: 100,
        ..Limits::default()
    };
    let bytes = good.canonical_bytes();
    assert_eq!(
        decode_observation(Path::new(path), &bytes, &limits)
            .unwrap_err()
            .reason,
        Reason::TooLarge {
            size: bytes.len() as u64,
            limit: 100
        }
    );
    // Foreign: the queue adapter's folder holds the process adapter's observation.
    assert_eq!(
        reason("runtime/queue/o.json", &bytes),
        Reason::Foreign {
            observer: "queue".into(),
            claimed: "process".into()
        }
    );
    // Tampered: the content changed, the id did not.
    let mut tampered = good.clone();
    tampered.sequence = 7;
    assert_eq!(
        reason(path, &tampered.canonical_bytes()),
        Reason::Invalid {
            field: "observation_id".into(),
            rule: "is not the digest of the observation's content".into()
        }
    );
    // A tampered request id is named as such.
    let mut tampered = good.clone();
    tampered.request.attempt_id = "attempt-2".into();
    tampered.observation_id = tampered.content_digest();
    assert_eq!(
        reason(path, &tampered.canonical_bytes()),
        Reason::Invalid {
            field: "request.request_id".into(),
            rule: "is not the digest of the request's content".into()
        }
    );
    // Misplaced.
    assert_eq!(reason("tasks/T/o.json", &bytes), Reason::Misplaced);
    assert_eq!(reason("runtime/o.json", &bytes), Reason::Misplaced);
    // A rejection names the file and its reason in one printable line.
    let rejection = decode_observation(Path::new("runtime/queue/o.json"), &bytes, &limits)
        .unwrap_err()
        .at_offset(3);
    assert_eq!(
        rejection.to_string(),
        format!(
            "runtime/queue/o.json (line at byte 3): too large: {} bytes, the limit is 100",
            bytes.len()
        )
    );
}

#[test]
fn the_sequencer_refuses_out_of_order_and_duplicate_observations() {
    let path = Path::new("inbox/x.jsonl");
    let mut sequencer = Sequencer::new();
    let first = observation("process", "attempt-1", 1);
    let second = observation("process", "attempt-1", 2);
    let other = observation("process", "attempt-2", 1);
    sequencer.admit(path, &first).unwrap();
    sequencer.admit(path, &other).unwrap();
    sequencer.check(path, &second).unwrap();
    sequencer.admit(path, &second).unwrap();
    let request_id = second.request.request_id.clone();
    assert_eq!(
        sequencer.admit(path, &second).unwrap_err().reason,
        Reason::Duplicate {
            request_id: request_id.clone(),
            sequence: 2
        }
    );
    assert_eq!(
        sequencer.admit(path, &first).unwrap_err().reason,
        Reason::OutOfOrder {
            request_id: request_id.clone(),
            sequence: 1,
            last: 2
        }
    );
    // Same sequence, different content: out of order, not a duplicate.
    let mut rival = second.clone();
    rival.runtime_identity = Some("process:43:2".into());
    rival.observation_id = rival.content_digest();
    assert_eq!(
        sequencer.admit(path, &rival).unwrap_err().reason.code(),
        "out_of_order"
    );
    // Gaps are fine.
    sequencer
        .admit(path, &observation("process", "attempt-1", 5))
        .unwrap();
    assert_eq!(sequencer.last(&request_id), Some(5));
    sequencer.forget(&request_id);
    assert_eq!(sequencer.len(), 1);
}

#[test]
fn inbox_lines_are_decoded_end_to_end() {
    let root = root();
    let mut session = Session::start(config(&root.base, false));
    let log = root.base.join("inbox/ci.jsonl");
    let mut bytes = observation("ci-runner", "attempt-1", 1).canonical_bytes();
    bytes.extend_from_slice(b"{\"broken\":true}\n");
    bytes.extend_from_slice(&observation("ci-runner", "attempt-1", 2).canonical_bytes());
    append(&log, &bytes);
    let limits = Limits::default();
    let mut sequencer = Sequencer::new();
    let outcomes: Vec<_> = session
        .next(3)
        .iter()
        .map(|item| {
            item.decode(&limits)
                .unwrap()
                .and_then(|observation| {
                    sequencer.admit(item.path().unwrap(), &observation)?;
                    Ok(observation.sequence)
                })
                .map_err(|rejection| (rejection.offset, rejection.reason.code()))
        })
        .collect();
    let broken_at = observation("ci-runner", "attempt-1", 1)
        .canonical_bytes()
        .len() as u64;
    assert_eq!(
        outcomes,
        [Ok(1), Err((Some(broken_at), "malformed")), Ok(2)]
    );
}

/// Rows the console feed shows once it has `observations` rows, or its state at the deadline.
fn feed_rows(
    feed: &valp_runtime::system::feed::Feed,
    observations: usize,
) -> (Vec<valp_view::ObservationRow>, Vec<valp_view::RejectionRow>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = feed.rows();
        if rows.0.len() >= observations || Instant::now() > deadline {
            return rows;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_feed_leaves_the_order_of_inbox_reports_to_the_runtime() {
    let root = root();
    let inbox = root.base.join("inbox");
    // Found together at start, in name order: sequence 2 before sequence 1.
    fs::write(
        inbox.join("a.json"),
        observation("ci-bot", "att-1", 2).canonical_bytes(),
    )
    .unwrap();
    fs::write(
        inbox.join("b.json"),
        observation("ci-bot", "att-1", 1).canonical_bytes(),
    )
    .unwrap();
    // An adapter's own folder is written in order, so there the feed does judge it.
    let folder = root.base.join("runtime/process/attempts/x/observations");
    fs::create_dir_all(&folder).unwrap();
    fs::write(
        folder.join("000001.json"),
        observation("process", "att-2", 2).canonical_bytes(),
    )
    .unwrap();
    fs::write(
        folder.join("000002.json"),
        observation("process", "att-2", 2).canonical_bytes(),
    )
    .unwrap();
    let feed = valp_runtime::system::feed::Feed::start(root.base.as_path(), || true).unwrap();
    let (observations, rejections) = feed_rows(&feed, 3);
    assert_eq!(observations.len(), 3, "{observations:?}");
    assert_eq!(rejections.len(), 1, "{rejections:?}");
    assert!(
        rejections[0]
            .path
            .starts_with("runtime/process/attempts/x/observations/"),
        "{rejections:?}"
    );
}
