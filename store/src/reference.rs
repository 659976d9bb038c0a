//! Interop with the VALP reference kernel store's layout: `runtime/kernel/genesis.json` (the
//! canonical GenesisRoot + LF) and `runtime/kernel/replay.jsonl` (one canonical ReplayEntry per
//! line, each embedding the full next State with its history).
//!
//! Export replays our journal and writes those files exactly as the reference store does;
//! import reads them, verifies every entry by replay (full Results, history included), and
//! creates our journal in one atomic step. Both are deterministic, so export then import (and
//! import then export) reproduce the original bytes.
//!
//! Both also run the store's Done gate ([`done`](crate::done)) over every entry, as opening a
//! journal does: an import whose Done would not verify is refused before anything is written.
//! A reference store whose task reached `done` without a Done policy (the reference enforces
//! none) imports under the reference's rule, as every journal without a frozen policy is read.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::decode::{decode_compact_entry, decode_genesis_root, decode_replay_entry};
use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::replay::{CompactEntry, GenesisRoot, ReplayEntry, Replayer};

use crate::chain::{ChainReader, encode_line};
use crate::error::StoreError;
use crate::files::temporary_path;
use crate::journal::Journal;
use crate::machine::{Guard, Refusal};
use crate::root::ControlRoot;

mod expected;

/// Where the reference store keeps a task's kernel files, relative to its task folder.
pub const KERNEL_DIR: &str = "runtime/kernel";
/// The GenesisRoot file.
pub const GENESIS_FILE: &str = "genesis.json";
/// The ReplayEntry file.
pub const REPLAY_FILE: &str = "replay.jsonl";

/// What an export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The `runtime/kernel` folder written.
    pub dir: PathBuf,
    /// Entries written to `replay.jsonl`.
    pub entries: u64,
    /// Size of `genesis.json`.
    pub genesis_bytes: u64,
    /// Size of `replay.jsonl`.
    pub replay_bytes: u64,
}

/// Writes `journal` in the reference layout under `out/runtime/kernel/`. The journal file is
/// re-read and re-verified while exporting.
pub fn export(journal: &Journal, out: &Path) -> Result<Exported, StoreError> {
    let dir = out.join(KERNEL_DIR);
    std::fs::create_dir_all(&dir)
        .map_err(|source| StoreError::io(&dir, "create directory", source))?;
    let genesis = journal.genesis();
    let genesis_bytes = genesis.canonical_bytes();
    write_file(&dir.join(GENESIS_FILE), |writer| {
        writer.write_all(&genesis_bytes)
    })?;
    let mut reader = ChainReader::open(journal.path())?;
    reader.next_line()?;
    let mut live = LiveState::new(genesis.state.clone());
    let mut guard = journal.guard().restart();
    let mut entries = 0;
    let mut replay_bytes = 0;
    write_file(&dir.join(REPLAY_FILE), |writer| {
        let mut encoded = Vec::new();
        while let Some(chain_line) = reader.next_line().map_err(std::io::Error::other)? {
            let entry = decode_compact_entry(&chain_line.entry()).map_err(std::io::Error::other)?;
            guard
                .verify(&live, &entry.event, &entry.evidence_set)
                .map_err(|refusal| std::io::Error::other(refusal_text(&refusal)))?;
            let record = live.apply_recorded(&entry).map_err(std::io::Error::other)?;
            guard.observe(chain_line.seq, &entry.event, &entry.evidence_set);
            let result = Verdict::Accepted(record).into_outcome(live.to_state());
            let reference = ReplayEntry {
                event: entry.event,
                evidence_set: entry.evidence_set,
                result,
            };
            encoded.clear();
            reference.write_canonical(&mut encoded);
            encoded.push(b'\n');
            writer.write_all(&encoded)?;
            entries += 1;
            replay_bytes += encoded.len() as u64;
        }
        Ok(())
    })?;
    Ok(Exported {
        dir,
        entries,
        genesis_bytes: genesis_bytes.len() as u64,
        replay_bytes,
    })
}

/// Writes a file through a temporary file renamed into place.
fn write_file(
    target: &Path,
    write_contents: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> Result<(), StoreError> {
    let dir = target.parent().unwrap_or(Path::new("."));
    let stem = target
        .file_name()
        .map_or_else(|| "file".into(), |name| name.to_string_lossy());
    let temp = temporary_path(dir, &stem);
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        let mut writer = BufWriter::new(file);
        write_contents(&mut writer)?;
        writer.flush()?;
        writer.get_ref().sync_data()?;
        std::fs::rename(&temp, target)?;
        File::open(dir)?.sync_all()
    })();
    result.map_err(|source| {
        let _ = std::fs::remove_file(&temp);
        StoreError::io(target, "write", source)
    })
}

/// The `runtime/kernel` folder of an export: `dir` itself if it holds `genesis.json`, else
/// `dir/runtime/kernel`.
pub fn kernel_dir(dir: &Path) -> PathBuf {
    if dir.join(GENESIS_FILE).is_file() {
        dir.to_owned()
    } else {
        dir.join(KERNEL_DIR)
    }
}

/// Reads a reference layout, verifies it by replay, and creates the task's journal in `root`.
///
/// Every line is first checked by [`expected`] (its bytes against the canonical bytes of the
/// Result the kernel recomputes, without parsing the embedded history); a line that path does
/// not take sends the whole file through the strict path ([`strict_lines`]), whose refusals
/// name the line, byte and reason.
pub fn import(root: &ControlRoot, dir: &Path) -> Result<Journal, StoreError> {
    let dir = kernel_dir(dir);
    let genesis_path = dir.join(GENESIS_FILE);
    let bytes = std::fs::read(&genesis_path)
        .map_err(|source| StoreError::io(&genesis_path, "read", source))?;
    let genesis: GenesisRoot = decode_canonical(&bytes)
        .map_err(|error| error.to_string())
        .and_then(|value| decode_genesis_root(&value).map_err(|error| error.to_string()))
        .map_err(|reason| corrupt(&genesis_path, 1, 0, reason))?;
    let replayer = Replayer::from_genesis(&genesis)
        .map_err(|error| corrupt(&genesis_path, 1, 0, error.to_string()))?;
    // Every line is recorded now, when this store writes it (the reference records no time).
    let recorded_at = root.clock().now();
    let replay_path = dir.join(REPLAY_FILE);
    let genesis_line = encode_line(0, None, recorded_at, &genesis);
    let fast = expected::import_lines(
        &replay_path,
        replayer.live().clone(),
        root.task_guard(),
        recorded_at,
        genesis_line.clone(),
    )?;
    let lines = match fast {
        Some(lines) => lines,
        None => strict_lines(root, &replay_path, replayer, recorded_at, genesis_line)?,
    };
    root.create_task_with_lines(&genesis, &lines)
}

/// A refusal of the file `path` at `line` (1-based), `byte` (its offset in the file).
fn corrupt(path: &Path, line: u64, byte: u64, reason: String) -> StoreError {
    StoreError::Corrupt {
        path: path.to_owned(),
        line,
        byte,
        reason,
    }
}

/// The journal's lines after `genesis` (the genesis line and its entry digest), each
/// `replay.jsonl` line parsed whole, checked canonical, decoded and replayed with its full
/// recorded Result.
fn strict_lines(
    root: &ControlRoot,
    replay_path: &Path,
    mut replayer: Replayer,
    recorded_at: crate::clock::Timestamp,
    genesis: (Vec<u8>, String),
) -> Result<Vec<u8>, StoreError> {
    let mut guard = root.task_guard();
    let (mut lines, mut prior) = genesis;
    let mut replay = ReplayLines::open(replay_path)?;
    let (mut seq, mut offset) = (0_u64, 0_u64);
    loop {
        let raw = replay.next()?;
        if raw.is_empty() {
            break;
        }
        let read = raw.len();
        seq += 1;
        let entry = decode_canonical(raw)
            .map_err(|error| error.to_string())
            .and_then(|value| decode_replay_entry(&value).map_err(|error| error.to_string()))
            .map_err(|reason| corrupt(replay_path, seq, offset, reason))?;
        match guard.verify(replayer.live(), &entry.event, &entry.evidence_set) {
            Ok(()) => {}
            Err(Refusal::Store(error)) => return Err(error),
            Err(refusal) => return Err(corrupt(replay_path, seq, offset, refusal_text(&refusal))),
        }
        replayer
            .apply(&entry)
            .map_err(|error| corrupt(replay_path, seq, offset, error.to_string()))?;
        guard.observe(seq, &entry.event, &entry.evidence_set);
        let valp_kernel::Outcome::Accepted(accepted) = entry.result else {
            return Err(corrupt(
                replay_path,
                seq,
                offset,
                "not an accepted Result".to_owned(),
            ));
        };
        let compact = CompactEntry {
            event: entry.event,
            evidence_set: entry.evidence_set,
            result: accepted.record(),
        };
        let (line, digest) = encode_line(seq, Some(&prior), recorded_at, &compact);
        lines.extend_from_slice(&line);
        prior = digest;
        offset += read as u64;
    }
    Ok(lines)
}

/// The lines of a `replay.jsonl`, read one at a time into one reused buffer.
struct ReplayLines<'p> {
    path: &'p Path,
    reader: BufReader<File>,
    raw: Vec<u8>,
}

impl<'p> ReplayLines<'p> {
    fn open(path: &'p Path) -> Result<Self, StoreError> {
        let file = File::open(path).map_err(|source| StoreError::io(path, "open", source))?;
        Ok(Self {
            path,
            reader: BufReader::with_capacity(1 << 20, file),
            raw: Vec::new(),
        })
    }

    /// The next line with its LF (without one when the file ends without it); empty at the
    /// end of the file.
    fn next(&mut self) -> Result<&[u8], StoreError> {
        self.raw.clear();
        self.reader
            .read_until(b'\n', &mut self.raw)
            .map_err(|source| StoreError::io(self.path, "read", source))?;
        Ok(&self.raw)
    }
}

/// A guard's refusal, in words.
fn refusal_text(refusal: &Refusal) -> String {
    match refusal {
        Refusal::DoneGate(reasons) => format!(
            "done gate: the recorded recording_completed does not pass: {}",
            reasons.join("; ")
        ),
        // Verification never checks the fence; named for completeness.
        Refusal::EpochFenced {
            task_epoch,
            active_epoch,
        } => format!(
            "epoch fence: the task is bound to Leader epoch {task_epoch}, the active epoch is \
             {active_epoch}"
        ),
        Refusal::Store(error) => error.to_string(),
    }
}
