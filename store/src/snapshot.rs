//! Task-journal snapshots (layout 4): the live State of a task journal at one of its lines, so
//! that an open replays only the lines after it.
//!
//! **Files.** `tasks/<task>/snapshots/<seq, 20 digits>-<entry digest, 16 hex>.json`, the canonical
//! JSON (+ LF) of `valp-store-snapshot.v1` (`schemas/store/snapshot.schema.json`):
//!
//! ```text
//! {"entry_digest","guard":{"correction_signals","frozen_policy","ungated_done"},
//!  "history":{"blocks","count","pending","state","well_formed"},"index":{"bytes","digest","keys"},
//!  "length","schema_version","seq","snapshot_digest","state"}
//! ```
//!
//! bound to the journal as the head anchor is, by the `seq`, `entry_digest` and `length` (end,
//! LF included) of one line; `state` is the State at that line without its history
//! (`accepted_events` empty), `history` the SHA-256 midstate of the history's canonical bytes
//! (chaining value and pending bytes in hex, whole blocks hashed), its length and
//! well-formedness, `guard` what the Done gate had observed, and `snapshot_digest` the SHA-256 of
//! the canonical object without that member (+ LF). Beside it, `<same name>.index` holds the
//! lean idempotency index as raw bytes (`keys` records of 16 bytes: 12-byte key, 4-byte
//! big-endian position, in key order; then `count` records of 64 bytes: the raw input and
//! result digests of each accepted event), bound by `index.bytes` and `index.digest`; it is
//! binary because it is ~84 bytes per entry and an open reads it whole.
//!
//! **Writing** ([`write`]): the index file, then the JSON, each written aside, `fsync`ed,
//! renamed and the folder `fsync`ed: the JSON names the index's digest, so a crash leaves either
//! no snapshot or a complete one (an orphan index file is removed by the next prune). Then all
//! but the newest [`KEEP`] snapshots are removed. A snapshot is written after the head anchor
//! names its line, never ahead of it. Policy (see `snapshot_open`): after an append when
//! [`due`] says so, when a writing handle is closed with entries since the last snapshot, when
//! an open by a writer replayed a long suffix, and by `valp upgrade` (layout 3 → 4).
//!
//! **Reading** ([`load`]) refuses, with a reason, anything that is not exactly such a file; the
//! open glue then checks the binding against the journal and the head. [`load_keys`] reads the
//! same and checks the same, but keeps only the index's keys (16 of the ~84 bytes per entry),
//! for a reader that recalls the digests from its journal instead of holding them;
//! [`read_for_check`] keeps neither of a large index: `valp verify` compares the index's key
//! records with its replay's one at a time as the file is read, so it holds one copy of the
//! index, its own. A small one (under the limit it is given) it reads ahead, before the replay
//! reaches its line, and then holds its keys until it compares them.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use valp_kernel::Evidence;
use valp_kernel::canonical::{Canonical, decode_canonical, digest_text, is_digest};
use valp_kernel::decode::{decode_evidence, decode_state};
use valp_kernel::json::write::{Fields, canonical_bytes, write_int};
use valp_kernel::json::{Number, Value};
use valp_kernel::live::{KEY_RECORD, LeanParts, LiveParts, Midstate};
use valp_kernel::model::State;

use crate::error::StoreError;
use crate::files::{create_dir_durably, write_atomically};
use crate::io::Storage;

/// `schema_version` of a snapshot.
pub const SNAPSHOT_SCHEMA: &str = "valp-store-snapshot.v1";
/// The folder of a task's snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// How many snapshots a task keeps.
pub const KEEP: usize = 2;
/// Entries between snapshots while a journal is short.
pub const EVERY: u64 = 1024;

const MEMBERS: [&str; 9] = [
    "entry_digest",
    "guard",
    "history",
    "index",
    "length",
    "schema_version",
    "seq",
    "snapshot_digest",
    "state",
];

/// What the Done gate had observed at the snapshot's line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GuardParts {
    /// The correction signals seen, each once, in order.
    pub correction_signals: Vec<String>,
    /// The frozen Done policy's evidence.
    pub frozen_policy: Vec<Evidence>,
    /// The revision of a `recording_completed` without a Done policy.
    pub ungated_done: Option<u64>,
}

/// A snapshot, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The bound line's sequence number (= the State's revision).
    pub seq: u64,
    /// Its `entry_digest`.
    pub entry_digest: String,
    /// The journal's length through that line's LF.
    pub length: u64,
    /// The live State there.
    pub parts: LiveParts,
    /// The Done gate there.
    pub guard: GuardParts,
}

/// Whether a journal at `seq` whose newest snapshot is at `last` (0: none) takes one now:
/// every [`EVERY`] entries, and every `last / 8` once that is more (the writes stay a bounded
/// share of the appends, since each copies the whole idempotency index).
pub fn due(last: u64, seq: u64) -> bool {
    seq.saturating_sub(last) >= EVERY.max(last / 8)
}

/// The snapshot file name for line `seq` with digest `entry_digest`.
pub fn file_name(seq: u64, entry_digest: &str) -> String {
    let hex = entry_digest.strip_prefix("sha256:").unwrap_or(entry_digest);
    format!("{seq:020}-{}.json", hex.get(..16).unwrap_or(hex))
}

/// The index file beside the snapshot `json`.
pub fn index_path(json: &Path) -> PathBuf {
    json.with_extension("index")
}

/// The snapshots of the task folder `dir`, newest (highest seq) first: `(seq, path of the JSON)`.
/// Names that are not snapshot names (temporary files, index files) are skipped.
pub fn list(dir: &Path) -> Result<Vec<(u64, PathBuf)>, StoreError> {
    let folder = dir.join(SNAPSHOTS_DIR);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(StoreError::io(&folder, "list", source)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|source| StoreError::io(&folder, "list", source))?
            .path();
        if let Some(seq) = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(parse_name)
        {
            found.push((seq, path));
        }
    }
    found.sort_by(|left, right| right.cmp(left));
    Ok(found)
}

fn parse_name(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".json")?;
    let (seq, hex) = stem.split_once('-')?;
    let hex_ok = hex.len() == 16
        && hex
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte));
    (seq.len() == 20 && seq.bytes().all(|byte| byte.is_ascii_digit()) && hex_ok)
        .then(|| seq.parse().ok())
        .flatten()
}

impl Snapshot {
    /// The JSON file's bytes and the index file's bytes.
    pub fn encode(&self) -> (Vec<u8>, Vec<u8>) {
        let LeanParts { keys, digests } = &self.parts.index;
        let mut index = Vec::with_capacity(keys.len() + digests.len());
        index.extend_from_slice(keys);
        index.extend_from_slice(digests);
        let index_digest = digest_text(&Sha256::digest(&index).into());
        let key_count = (keys.len() / KEY_RECORD) as u64;
        let mut unsigned = Vec::with_capacity(16 * 1024);
        self.write_json(
            &mut unsigned,
            &index_digest,
            index.len() as u64,
            key_count,
            None,
        );
        unsigned.push(b'\n');
        let digest = digest_text(&Sha256::digest(&unsigned).into());
        let mut json = Vec::with_capacity(unsigned.len() + 100);
        self.write_json(
            &mut json,
            &index_digest,
            index.len() as u64,
            key_count,
            Some(&digest),
        );
        json.push(b'\n');
        (json, index)
    }

    fn write_json(
        &self,
        out: &mut Vec<u8>,
        index_digest: &str,
        index_bytes: u64,
        key_count: u64,
        digest: Option<&str>,
    ) {
        let mut fields = Fields::begin(out);
        fields.str("entry_digest", &self.entry_digest);
        {
            let mut guard = Fields::begin(fields.key("guard"));
            guard.strs("correction_signals", &self.guard.correction_signals);
            let out = guard.key("frozen_policy");
            out.push(b'[');
            for (position, evidence) in self.guard.frozen_policy.iter().enumerate() {
                if position > 0 {
                    out.push(b',');
                }
                evidence.write_canonical(out);
            }
            out.push(b']');
            match self.guard.ungated_done {
                Some(seq) => guard.int("ungated_done", i128::from(seq)),
                None => guard.key("ungated_done").extend_from_slice(b"null"),
            }
            guard.end();
        }
        {
            let (state, blocks, pending) = self.parts.midstate.parts();
            let mut history = Fields::begin(fields.key("history"));
            history.int("blocks", i128::from(blocks));
            history.int("count", i128::from(self.parts.history_len));
            history.str("pending", &hex(pending));
            history.str("state", &hex(&state));
            history.bool("well_formed", self.parts.well_formed);
            history.end();
        }
        {
            let mut index = Fields::begin(fields.key("index"));
            index.int("bytes", i128::from(index_bytes));
            index.str("digest", index_digest);
            index.int("keys", i128::from(key_count));
            index.end();
        }
        fields.int("length", i128::from(self.length));
        fields.str("schema_version", SNAPSHOT_SCHEMA);
        write_int(fields.key("seq"), i128::from(self.seq));
        if let Some(digest) = digest {
            fields.str("snapshot_digest", digest);
        }
        State {
            body: self.parts.body.clone(),
            accepted_events: Vec::new(),
        }
        .write_canonical(fields.key("state"));
        fields.end();
    }
}

/// Writes `snapshot` into the task folder `dir` (see the module documentation), then prunes all
/// but the newest [`KEEP`]. Returns the JSON file's path.
pub fn write(
    storage: &dyn Storage,
    dir: &Path,
    snapshot: &Snapshot,
) -> Result<PathBuf, StoreError> {
    let folder = dir.join(SNAPSHOTS_DIR);
    if !folder.is_dir() {
        create_dir_durably(storage, &folder)?;
    }
    let path = folder.join(file_name(snapshot.seq, &snapshot.entry_digest));
    let (json, index) = snapshot.encode();
    write_atomically(storage, &folder, &index_path(&path), &index)?;
    write_atomically(storage, &folder, &path, &json)?;
    prune(dir)?;
    Ok(path)
}

/// Removes all but the newest [`KEEP`] snapshots of `dir`, and index files without their
/// snapshot.
pub fn prune(dir: &Path) -> Result<(), StoreError> {
    let kept = list(dir)?;
    for (_, path) in kept.iter().skip(KEEP) {
        remove(path)?;
        remove(&index_path(path))?;
    }
    let folder = dir.join(SNAPSHOTS_DIR);
    let entries =
        std::fs::read_dir(&folder).map_err(|source| StoreError::io(&folder, "list", source))?;
    for entry in entries {
        let path = entry
            .map_err(|source| StoreError::io(&folder, "list", source))?
            .path();
        if path
            .extension()
            .is_some_and(|extension| extension == "index")
            && !path.with_extension("json").exists()
        {
            remove(&path)?;
        }
    }
    Ok(())
}

/// Moves the snapshots of the task folder `dir` bound to a line after `kept` (the last seq a
/// `valp recover` cut keeps), with their index files, to `quarantine` (as
/// `<folder>.<file>.beyond-recover`), durably. Returns where the snapshots went.
pub fn quarantine_beyond(
    storage: &dyn Storage,
    dir: &Path,
    quarantine: &Path,
    kept: u64,
) -> Result<Vec<PathBuf>, StoreError> {
    let folder = dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut moved = Vec::new();
    for (seq, path) in list(dir)? {
        if seq <= kept {
            continue;
        }
        create_dir_durably(storage, quarantine)?;
        for file in [path.clone(), index_path(&path)] {
            let Some(name) = file.file_name() else {
                continue;
            };
            let target = quarantine.join(format!(
                "{folder}.{}.beyond-recover",
                name.to_string_lossy()
            ));
            match storage.rename(&file, &target) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(StoreError::io(&file, "rename", error));
                }
                _ => {}
            }
            if file == path {
                moved.push(target);
            }
        }
        for synced in [quarantine, &dir.join(SNAPSHOTS_DIR)] {
            storage
                .sync_dir(synced)
                .map_err(|source| StoreError::io(synced, "sync directory", source))?;
        }
    }
    Ok(moved)
}

fn remove(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
            Err(StoreError::io(path, "remove", error))
        }
        _ => Ok(()),
    }
}

/// Reads and decodes the snapshot at `path` (its JSON and its index file); the reason it is not
/// one otherwise.
pub fn load(path: &Path) -> Result<Snapshot, String> {
    load_reading(path, Reading::Whole).map(|(snapshot, _)| snapshot)
}

/// [`load`], keeping of the index only its keys (`parts.index.digests` empty), for a reader
/// that recalls the digests from its journal instead of holding them: the whole index file is
/// still read and checked against its digest, and refused for the same reasons.
pub fn load_keys(path: &Path) -> Result<Snapshot, String> {
    load_reading(path, Reading::Keys).map(|(snapshot, _)| snapshot)
}

/// [`load_keys`] reading only the keys of the index file, and not checking the file against
/// its digest (only its length): for a reader that applies no line before the check is made
/// ([`snapshot_open`](crate::snapshot_open)'s deferred index), 16 bytes per entry read
/// instead of 80 read and hashed.
pub fn load_keys_unchecked(path: &Path) -> Result<Snapshot, String> {
    load_reading(path, Reading::KeysUnchecked).map(|(snapshot, _)| snapshot)
}

/// Index files shorter than this are read ahead by `valp verify` (see [`read_for_check`]); a
/// longer one is read when the replay reaches its line, its keys compared as they pass. At 16
/// MiB (~200 K entries) a snapshot read ahead holds at most ~3.4 MB of keys until its line (a
/// 10^5 verify peaks ~3 MB higher), and the 10^6 journals' ~80 MB index files, whose verify
/// must stay under 64 MiB, are never held.
pub const READ_AHEAD_BELOW: u64 = 16 << 20;

thread_local! {
    static READ_AHEAD_LIMIT: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Sets, for the calling thread only, below how many bytes a snapshot's index file is read
/// ahead by `valp verify` (`None`: the default, [`READ_AHEAD_BELOW`]; `Some(0)`: never;
/// `Some(u64::MAX)`: always). For tests that compare the two ways; what a verify finds is the
/// same either way.
#[doc(hidden)]
pub fn set_read_ahead_limit(bytes: Option<u64>) {
    READ_AHEAD_LIMIT.with(|limit| limit.set(bytes));
}

/// Below how many bytes the calling thread's `valp verify` reads an index file ahead.
pub(crate) fn read_ahead_limit() -> u64 {
    READ_AHEAD_LIMIT
        .with(std::cell::Cell::get)
        .unwrap_or(READ_AHEAD_BELOW)
}

/// The first half of [`load`] for a check against a replay that holds its own index, which
/// can run before the replay reaches the snapshot's line (`valp verify` runs it on another
/// thread): the JSON read and decoded, refused for the same reasons as by [`load`]; its index
/// file also read now when it is shorter than `read_index_below` bytes (its key records then
/// held, 16 bytes per entry, until [`ForCheck::check`]), later by [`ForCheck::check`]
/// otherwise.
pub fn read_for_check(path: &Path, read_index_below: u64) -> Result<ForCheck, String> {
    let (snapshot, member) = read_json(path)?;
    let index = (member.bytes < read_index_below).then(|| read_index(path, &member, Reading::Keys));
    Ok(ForCheck {
        path: path.to_owned(),
        snapshot,
        member,
        index,
    })
}

/// A snapshot [`read_for_check`] read, to be compared with a replay that holds its own index.
pub struct ForCheck {
    path: PathBuf,
    snapshot: Snapshot,
    member: IndexMember,
    /// The index file with its keys, when it was read ahead (or why it is refused).
    index: Option<Result<(LeanParts, IndexSeen), String>>,
}

impl ForCheck {
    /// The snapshot with its index file checked: its key records compared with `expected`
    /// (the replay's, in key order) and its digest records hashed, neither kept
    /// (`parts.index` is empty). When the file was not read ahead it is read now in chunks,
    /// the keys compared one at a time as they pass, so checking a large snapshot holds no
    /// copy of the index (16 bytes per entry of keys, 64 of digest records). Refused for the
    /// same reasons as [`load`]; otherwise also says what the index held.
    pub fn check(
        self,
        expected: &mut dyn Iterator<Item = [u8; KEY_RECORD]>,
    ) -> Result<(Snapshot, IndexSeen), String> {
        let Self {
            path,
            snapshot,
            member,
            index,
        } = self;
        let seen = match index {
            None => read_index(&path, &member, Reading::Check(expected))?.1,
            Some(read) => {
                let (held, seen) = read?;
                let mut comparison = KeyComparison::new(expected);
                comparison.feed(&held.keys);
                IndexSeen {
                    keys_match: comparison.finish(),
                    ..seen
                }
            }
        };
        Ok((snapshot, seen))
    }
}

fn load_reading(path: &Path, reading: Reading<'_>) -> Result<(Snapshot, IndexSeen), String> {
    let (mut snapshot, member) = read_json(path)?;
    let (index, seen) = read_index(path, &member, reading)?;
    snapshot.parts.index = index;
    Ok((snapshot, seen))
}

/// The snapshot JSON at `path`, decoded and checked against its name, and what it names of
/// its index file.
fn read_json(path: &Path) -> Result<(Snapshot, IndexMember), String> {
    let bytes = std::fs::read(path).map_err(|error| format!("cannot be read: {error}"))?;
    let (snapshot, member) = decode(&bytes)?;
    check_name(path, &snapshot)?;
    Ok((snapshot, member))
}

/// What [`ForCheck::check`] found in an index file without keeping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexSeen {
    /// Whether its key records are exactly the expected ones, in order (`false` when they
    /// were kept instead of compared).
    pub keys_match: bool,
    /// Its digest records, hashed.
    pub digest_records: DigestRecordsSeen,
}

/// The digest records of an index file that were hashed instead of kept: their length and the
/// SHA-256 of their bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestRecordsSeen {
    /// How many bytes they are (64 per accepted event).
    pub len: u64,
    /// The SHA-256 of those bytes.
    pub sha256: [u8; 32],
}

/// What reading an index file keeps of it.
enum Reading<'a> {
    /// Its keys and its digest records.
    Whole,
    /// Its keys; the digest records are only hashed.
    Keys,
    /// Its keys, the rest of the file neither read nor checked against its digest (what was
    /// seen is then not known: zero).
    KeysUnchecked,
    /// Nothing: the keys are compared with these, the digest records hashed.
    Check(&'a mut dyn Iterator<Item = [u8; KEY_RECORD]>),
}

/// Key records compared, as their bytes pass in chunks of any size, with the expected ones.
struct KeyComparison<'a> {
    expected: &'a mut dyn Iterator<Item = [u8; KEY_RECORD]>,
    record: [u8; KEY_RECORD],
    filled: usize,
    matches: bool,
}

impl<'a> KeyComparison<'a> {
    fn new(expected: &'a mut dyn Iterator<Item = [u8; KEY_RECORD]>) -> Self {
        Self {
            expected,
            record: [0; KEY_RECORD],
            filled: 0,
            matches: true,
        }
    }

    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = (KEY_RECORD - self.filled).min(bytes.len());
            self.record[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled == KEY_RECORD {
                self.filled = 0;
                if self.matches && self.expected.next() != Some(self.record) {
                    self.matches = false;
                }
            }
        }
    }

    /// Whether every record matched and none is left expected or half read.
    fn finish(self) -> bool {
        self.matches && self.filled == 0 && self.expected.next().is_none()
    }
}

/// Whether the file at `path` has the name its seq and entry digest give.
fn check_name(path: &Path, snapshot: &Snapshot) -> Result<(), String> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("");
    if name == file_name(snapshot.seq, &snapshot.entry_digest) {
        Ok(())
    } else {
        Err(format!(
            "its name does not match its seq {} and entry_digest {}",
            snapshot.seq, snapshot.entry_digest
        ))
    }
}

/// The index file's bytes checked against the JSON's `index` member, read in chunks; split
/// into the parts, each kept, hashed or compared as `reading` says.
fn read_index(
    path: &Path,
    member: &IndexMember,
    reading: Reading<'_>,
) -> Result<(LeanParts, IndexSeen), String> {
    use std::io::Read as _;
    let IndexMember {
        bytes,
        digest,
        keys,
    } = member;
    let (bytes, keys) = (*bytes, *keys);
    let cannot = |error: std::io::Error| format!("its index file cannot be read: {error}");
    let mut file = std::fs::File::open(index_path(path)).map_err(cannot)?;
    let held = file.metadata().map_err(cannot)?.len();
    if held != bytes {
        return Err(format!(
            "its index file holds {held} bytes, the snapshot names {bytes}"
        ));
    }
    let split = keys
        .checked_mul(KEY_RECORD as u64)
        .filter(|&split| split <= bytes)
        .ok_or_else(|| "its index names more keys than it holds".to_owned())?;
    let capacity =
        |len: u64| usize::try_from(len).map_err(|_| "its index file is too large".to_owned());
    let unchecked = matches!(reading, Reading::KeysUnchecked);
    let (keep_digests, mut compared) = match reading {
        Reading::Whole => (true, None),
        Reading::Keys | Reading::KeysUnchecked => (false, None),
        Reading::Check(expected) => (false, Some(KeyComparison::new(expected))),
    };
    let mut parts = LeanParts {
        keys: if compared.is_none() {
            Vec::with_capacity(capacity(split)?)
        } else {
            Vec::new()
        },
        digests: if keep_digests {
            Vec::with_capacity(capacity(bytes - split)?)
        } else {
            Vec::new()
        },
    };
    if unchecked {
        return read_keys_unchecked(file, split, bytes, parts);
    }
    let (mut whole, mut records) = (Sha256::new(), Sha256::new());
    // No larger than the file: a fresh 1 MiB buffer costs its page faults (and, with huge
    // pages, the zeroing of 2 MiB) for an index of ~80 KB at 1,000 entries.
    let (mut read, mut chunk) = (0u64, vec![0u8; capacity(bytes.min(1 << 20))?]);
    loop {
        let n = file.read(&mut chunk).map_err(cannot)?;
        if n == 0 {
            break;
        }
        let got = &chunk[..n];
        whole.update(got);
        // The part of this chunk that is keys, then the part that is digest records.
        let in_keys = usize::try_from(split.saturating_sub(read)).map_or(n, |left| left.min(n));
        match &mut compared {
            Some(comparison) => comparison.feed(&got[..in_keys]),
            None => parts.keys.extend_from_slice(&got[..in_keys]),
        }
        records.update(&got[in_keys..]);
        if keep_digests {
            parts.digests.extend_from_slice(&got[in_keys..]);
        }
        read += n as u64;
    }
    if read != bytes {
        return Err(format!(
            "its index file holds {read} bytes, the snapshot names {bytes}"
        ));
    }
    if digest_text(&whole.finalize().into()) != *digest {
        return Err("its index file does not have the digest the snapshot names".to_owned());
    }
    let seen = IndexSeen {
        keys_match: compared.is_some_and(KeyComparison::finish),
        digest_records: DigestRecordsSeen {
            len: bytes - split,
            sha256: records.finalize().into(),
        },
    };
    Ok((parts, seen))
}

/// The keys of an index file whose check is deferred: the first `split` bytes of `file` into
/// `parts.keys`, the rest neither read nor hashed (what was seen is then not known: zero).
fn read_keys_unchecked(
    file: std::fs::File,
    split: u64,
    bytes: u64,
    mut parts: LeanParts,
) -> Result<(LeanParts, IndexSeen), String> {
    use std::io::Read as _;
    let read = file
        .take(split)
        .read_to_end(&mut parts.keys)
        .map_err(|error| format!("its index file cannot be read: {error}"))?;
    if read as u64 != split {
        return Err(format!(
            "its index file holds {read} bytes of keys, the snapshot names {split}"
        ));
    }
    let seen = IndexSeen {
        keys_match: false,
        digest_records: DigestRecordsSeen {
            len: bytes - split,
            sha256: [0; 32],
        },
    };
    Ok((parts, seen))
}

fn decode(bytes: &[u8]) -> Result<(Snapshot, IndexMember), String> {
    let value = decode_canonical(bytes).map_err(|error| format!("not canonical JSON: {error}"))?;
    let Value::Object(mut members) = value else {
        return Err("a snapshot is a JSON object".to_owned());
    };
    let keys: Vec<&str> = members.keys().map(String::as_str).collect();
    if keys != MEMBERS {
        return Err(format!("unexpected members {keys:?}"));
    }
    if members["schema_version"].as_str() != Some(SNAPSHOT_SCHEMA) {
        return Err(format!("schema_version must be {SNAPSHOT_SCHEMA:?}"));
    }
    let claimed = text(&members, "snapshot_digest")?;
    if !is_digest(&claimed) {
        return Err("snapshot_digest must be a sha256 digest".to_owned());
    }
    members.remove("snapshot_digest");
    let unsigned = canonical_bytes(&Value::Object(members.clone()))
        .map_err(|error| format!("not canonical JSON: {error}"))?;
    if digest_text(&Sha256::digest(&unsigned).into()) != claimed {
        return Err("snapshot_digest does not match its contents".to_owned());
    }
    let entry_digest = text(&members, "entry_digest")?;
    if !is_digest(&entry_digest) {
        return Err("entry_digest must be a sha256 digest".to_owned());
    }
    let state = decode_state(&members["state"]).map_err(|error| format!("state: {error}"))?;
    if !state.accepted_events.is_empty() {
        return Err("state.accepted_events must be empty".to_owned());
    }
    let history = object(
        &members,
        "history",
        &["blocks", "count", "pending", "state", "well_formed"],
    )?;
    let midstate = Midstate::from_parts(
        &unhex(&text(history, "state")?)?,
        count(history, "blocks")?,
        &unhex(&text(history, "pending")?)?,
    )
    .map_err(|error| format!("history: {error}"))?;
    let Value::Bool(well_formed) = history["well_formed"] else {
        return Err("history.well_formed must be true or false".to_owned());
    };
    let guard = decode_guard(object(
        &members,
        "guard",
        &["correction_signals", "frozen_policy", "ungated_done"],
    )?)?;
    let index = object(&members, "index", &["bytes", "digest", "keys"])?;
    let member = IndexMember {
        bytes: count(index, "bytes")?,
        digest: text(index, "digest")?,
        keys: count(index, "keys")?,
    };
    let snapshot = Snapshot {
        seq: count(&members, "seq")?,
        entry_digest,
        length: count(&members, "length")?,
        parts: LiveParts {
            body: state.body,
            history_len: count(history, "count")?,
            well_formed,
            midstate,
            index: LeanParts::default(),
        },
        guard,
    };
    Ok((snapshot, member))
}

/// The `index` member: what the index file must be.
struct IndexMember {
    bytes: u64,
    digest: String,
    keys: u64,
}

fn decode_guard(guard: &std::collections::BTreeMap<String, Value>) -> Result<GuardParts, String> {
    let Value::Array(signals) = &guard["correction_signals"] else {
        return Err("guard.correction_signals must be an array".to_owned());
    };
    let correction_signals = signals
        .iter()
        .map(|signal| signal.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| "guard.correction_signals must hold strings".to_owned())?;
    let Value::Array(policy) = &guard["frozen_policy"] else {
        return Err("guard.frozen_policy must be an array".to_owned());
    };
    let frozen_policy = policy
        .iter()
        .map(decode_evidence)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("guard.frozen_policy: {error}"))?;
    let ungated_done = match &guard["ungated_done"] {
        Value::Null => None,
        _ => Some(count(guard, "ungated_done")?),
    };
    Ok(GuardParts {
        correction_signals,
        frozen_policy,
        ungated_done,
    })
}

fn object<'a>(
    members: &'a std::collections::BTreeMap<String, Value>,
    key: &str,
    expected: &[&str],
) -> Result<&'a std::collections::BTreeMap<String, Value>, String> {
    let inner = members[key]
        .as_object()
        .ok_or_else(|| format!("{key} must be an object"))?;
    let keys: Vec<&str> = inner.keys().map(String::as_str).collect();
    if keys != expected {
        return Err(format!("{key}: unexpected members {keys:?}"));
    }
    Ok(inner)
}

fn text(members: &std::collections::BTreeMap<String, Value>, key: &str) -> Result<String, String> {
    members[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{key} must be a string"))
}

fn count(members: &std::collections::BTreeMap<String, Value>, key: &str) -> Result<u64, String> {
    match &members[key] {
        Value::Number(Number::Int(value)) => u64::try_from(*value).ok(),
        _ => None,
    }
    .ok_or_else(|| format!("{key} must be an integer >= 0"))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    text
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let nibble = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err("a hex string has an odd length".to_owned());
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some((nibble(pair[0])? << 4) | nibble(pair[1])?))
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(|| "not lowercase hex".to_owned())
}
