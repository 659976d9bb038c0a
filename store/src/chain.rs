//! Hash-chained canonical JSONL: the line format of every journal.
//!
//! Each line is the canonical JSON (RFC 0002 §5.3) of
//!
//! ```text
//! {"entry": <payload>, "entry_digest": D, "prior_entry_digest": P, "schema_version":
//!  "valp-store-journal.v1", "seq": N}
//! ```
//!
//! followed by one LF, where `N` counts lines from 0, `P` is the previous line's `entry_digest`
//! (`null` on line 0) and `D = digest(line object without entry_digest)`. Because the line is
//! canonical and `entry_digest` is its second member, `D`'s preimage is the line's own bytes with
//! that one member cut out, so verifying a line hashes it once.
//!
//! [`ChainReader`] reads and verifies lines one at a time (streaming: memory does not grow with
//! the file) and classifies what it cannot verify: a *torn tail*, what an interrupted append can
//! leave after the last good line (bytes without an LF; or NUL bytes, from blocks the file grew
//! by but whose data never reached the disk: only NUL bytes and LFs to the end, or a last line
//! holding NUL bytes), or *damage*: anything else, including a complete, LF-terminated last line
//! without NUL bytes that is not JSON or whose digest or chain is wrong (an append writes its
//! line with one `write`, so a crash cannot leave such a line), which is refused with the line
//! and byte. Whether a torn tail may be repaired also depends on the journal's head anchor
//! ([`head`](crate::head)): bytes at or before the anchored line are never a torn tail.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::{Canonical, decode_canonical, digest_text};
use valp_kernel::json::Value;
use valp_kernel::json::write::{Fields, write_int, write_str};

use crate::error::StoreError;

/// `schema_version` of a journal line.
pub const LINE_SCHEMA: &str = "valp-store-journal.v1";

/// Bytes of `,"entry_digest":"sha256:<64 hex>"`.
const DIGEST_MEMBER_LEN: usize = r#","entry_digest":""#.len() + 71 + 1;

/// The members after `entry_digest`, and the closing brace.
fn write_rest(out: &mut Vec<u8>, prior: Option<&str>, seq: u64) {
    let mut fields = Fields::resume(out, "entry_digest");
    match prior {
        Some(digest) => fields.str("prior_entry_digest", digest),
        None => fields.key("prior_entry_digest").extend_from_slice(b"null"),
    }
    fields.str("schema_version", LINE_SCHEMA);
    write_int(fields.key("seq"), i128::from(seq));
    fields.end();
}

/// Encodes line `seq` holding `entry`, chained to `prior`. Returns the line (with its LF) and
/// its `entry_digest`.
pub fn encode_line(seq: u64, prior: Option<&str>, entry: &impl Canonical) -> (Vec<u8>, String) {
    let mut head = Vec::with_capacity(1024);
    head.extend_from_slice(br#"{"entry":"#);
    entry.write_canonical(&mut head);
    let mut rest = Vec::with_capacity(128);
    write_rest(&mut rest, prior, seq);
    let mut hasher = Sha256::new();
    hasher.update(&head);
    hasher.update(&rest);
    hasher.update(b"\n");
    let digest = digest_text(&hasher.finalize().into());
    let mut line = head;
    line.extend_from_slice(br#","entry_digest":"#);
    write_str(&mut line, &digest);
    line.extend_from_slice(&rest);
    line.push(b'\n');
    (line, digest)
}

/// One verified line.
#[derive(Debug, Clone)]
pub struct ChainLine {
    /// Its sequence number (0 for the first line).
    pub seq: u64,
    /// The payload.
    pub entry: Value,
    /// Its `entry_digest`.
    pub digest: String,
    /// Byte offset of the line's first byte.
    pub start: u64,
    /// Byte offset just after its LF.
    pub end: u64,
}

/// What the reader found after the last verified line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tail {
    /// The file ends right after the last verified line.
    Clean,
    /// The remaining bytes are the remnant of an interrupted append: no LF, or only NUL bytes.
    Torn {
        /// Where the torn bytes start (the end of the last verified line).
        offset: u64,
        /// The torn bytes.
        bytes: Vec<u8>,
    },
}

/// Reads and verifies a chained journal line by line.
#[derive(Debug)]
pub struct ChainReader {
    path: PathBuf,
    reader: BufReader<File>,
    offset: u64,
    next_seq: u64,
    prior: Option<String>,
    buffer: Vec<u8>,
    /// Set once the end of the verifiable lines is reached.
    tail: Option<Tail>,
}

impl ChainReader {
    /// Starts reading `path` from the beginning.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let file = File::open(path).map_err(|source| StoreError::io(path, "open", source))?;
        Ok(Self {
            path: path.to_owned(),
            reader: BufReader::with_capacity(1 << 16, file),
            offset: 0,
            next_seq: 0,
            prior: None,
            buffer: Vec::with_capacity(4096),
            tail: None,
        })
    }

    /// Continues reading `path` after a line already verified: the next line must be
    /// `next_seq`, start at `offset` and chain to `prior`.
    pub fn resume(
        path: &Path,
        offset: u64,
        next_seq: u64,
        prior: &str,
    ) -> Result<Self, StoreError> {
        let mut reader = Self::open(path)?;
        reader
            .reader
            .seek(SeekFrom::Start(offset))
            .map_err(|source| StoreError::io(path, "seek", source))?;
        reader.offset = offset;
        reader.next_seq = next_seq;
        reader.prior = Some(prior.to_owned());
        Ok(reader)
    }

    /// Byte offset after the last verified line.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next verified line, `Ok(None)` at the end (see [`ChainReader::tail`] for what
    /// follows), or the damage found.
    pub fn next_line(&mut self) -> Result<Option<ChainLine>, StoreError> {
        if self.tail.is_some() {
            return Ok(None);
        }
        self.buffer.clear();
        let read = self
            .reader
            .read_until(b'\n', &mut self.buffer)
            .map_err(|source| StoreError::io(&self.path, "read", source))?;
        let start = self.offset;
        if read == 0 {
            self.tail = Some(Tail::Clean);
            return Ok(None);
        }
        if self.buffer.last() != Some(&b'\n') {
            // The bytes seen so far, without an LF: an append in flight or a torn tail. They are
            // classified from what was read, never re-read, so a concurrent append that
            // completes meanwhile cannot turn them into "damage".
            self.tail = Some(Tail::Torn {
                offset: start,
                bytes: std::mem::take(&mut self.buffer),
            });
            return Ok(None);
        }
        let line = match self.verify(start) {
            Ok(line) => line,
            Err(damage) => return self.torn_or_damaged(start, damage),
        };
        self.offset += read as u64;
        self.next_seq += 1;
        self.prior = Some(line.digest.clone());
        Ok(Some(line))
    }

    /// A complete line failed verification. It is the torn remnant of an interrupted append
    /// only when NUL bytes explain it: everything from it to the end is NUL bytes and LFs, or it
    /// is the last line and holds NUL bytes (blocks the file grew by but whose data never reached
    /// the disk, with the line's LF in a block that did). Anything else is damage: a complete
    /// line without NUL bytes is written by one `write`, and a crash cannot leave it half right.
    fn torn_or_damaged(
        &mut self,
        start: u64,
        damage: StoreError,
    ) -> Result<Option<ChainLine>, StoreError> {
        let mut rest = Vec::new();
        self.reader
            .read_to_end(&mut rest)
            .map_err(|source| StoreError::io(&self.path, "read", source))?;
        let line = &self.buffer;
        let only_nul_and_lf = line
            .iter()
            .chain(&rest)
            .all(|&byte| byte == 0 || byte == b'\n');
        if only_nul_and_lf || (rest.is_empty() && line.contains(&0)) {
            let mut bytes = std::mem::take(&mut self.buffer);
            bytes.extend_from_slice(&rest);
            self.tail = Some(Tail::Torn {
                offset: start,
                bytes,
            });
            return Ok(None);
        }
        Err(damage)
    }

    /// What follows the last verified line. Call after [`ChainReader::next_line`] returned
    /// `Ok(None)`.
    pub fn tail(&mut self) -> Result<Tail, StoreError> {
        Ok(self.tail.take().unwrap_or(Tail::Clean))
    }

    fn corrupt(&self, byte: u64, reason: String) -> StoreError {
        StoreError::Corrupt {
            path: self.path.clone(),
            line: self.next_seq + 1,
            byte,
            reason,
        }
    }

    fn verify(&self, start: u64) -> Result<ChainLine, StoreError> {
        let bytes = &self.buffer;
        let value = decode_canonical(bytes)
            .map_err(|error| self.corrupt(start, format!("not a canonical JSON line: {error}")))?;
        let Value::Object(mut members) = value else {
            return Err(self.corrupt(start, "a journal line is a JSON object".to_owned()));
        };
        let expected = [
            "entry",
            "entry_digest",
            "prior_entry_digest",
            "schema_version",
            "seq",
        ];
        if members.len() != expected.len() || !expected.iter().all(|key| members.contains_key(*key))
        {
            let keys: Vec<&str> = members.keys().map(String::as_str).collect();
            return Err(self.corrupt(
                start,
                format!("members must be {expected:?}, found {keys:?}"),
            ));
        }
        if members.get("schema_version").and_then(Value::as_str) != Some(LINE_SCHEMA) {
            return Err(self.corrupt(start, format!("schema_version must be {LINE_SCHEMA:?}")));
        }
        let seq = match members.get("seq") {
            Some(Value::Number(valp_kernel::json::Number::Int(seq))) => *seq,
            _ => return Err(self.corrupt(start, "seq must be an integer".to_owned())),
        };
        if seq != i128::from(self.next_seq) {
            return Err(self.corrupt(start, format!("seq is {seq}, expected {}", self.next_seq)));
        }
        let prior = match members.get("prior_entry_digest") {
            Some(Value::Null) => None,
            Some(Value::String(digest)) => Some(digest.clone()),
            _ => {
                return Err(self.corrupt(
                    start,
                    "prior_entry_digest must be a string or null".to_owned(),
                ));
            }
        };
        let prior = prior.as_deref();
        if prior != self.prior.as_deref() {
            return Err(self.corrupt(
                start,
                format!(
                    "prior_entry_digest {prior:?} does not chain to {:?}",
                    self.prior
                ),
            ));
        }
        let Some(Value::String(digest)) = members.remove("entry_digest") else {
            return Err(self.corrupt(start, "entry_digest must be a string".to_owned()));
        };
        let mut rest = Vec::with_capacity(128);
        write_rest(&mut rest, prior, self.next_seq);
        let mut member = br#","entry_digest":"#.to_vec();
        write_str(&mut member, &digest);
        let cut_end = (bytes.len() - 1).saturating_sub(rest.len());
        let cut_start = cut_end.saturating_sub(DIGEST_MEMBER_LEN);
        if member.len() != DIGEST_MEMBER_LEN
            || bytes.get(cut_start..cut_end) != Some(member.as_slice())
            || bytes.get(cut_end..bytes.len() - 1) != Some(rest.as_slice())
        {
            return Err(self.corrupt(start, "entry_digest is not a sha256 digest".to_owned()));
        }
        let mut hasher = Sha256::new();
        hasher.update(&bytes[..cut_start]);
        hasher.update(&bytes[cut_end..]);
        let computed = digest_text(&hasher.finalize().into());
        if computed != digest {
            return Err(self.corrupt(
                start,
                format!("entry_digest {digest} does not match the line ({computed})"),
            ));
        }
        let entry = members.remove("entry").unwrap_or(Value::Null);
        Ok(ChainLine {
            seq: self.next_seq,
            entry,
            digest,
            start,
            end: start + bytes.len() as u64,
        })
    }
}
