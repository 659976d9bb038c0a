//! Hash-chained canonical JSONL: the line format of every journal.
//!
//! Each line is the canonical JSON (RFC 0002 §5.3) of
//!
//! ```text
//! {"entry": <payload>, "entry_digest": D, "prior_entry_digest": P, "recorded_at": T,
//!  "schema_version": "valp-store-journal.v2", "seq": N}
//! ```
//!
//! followed by one LF, where `N` counts lines from 0, `P` is the previous line's `entry_digest`
//! (`null` on line 0), `T` is when the store wrote the line (RFC 3339 UTC with milliseconds,
//! `YYYY-MM-DDTHH:MM:SS.mmmZ`, from the injected [`Clock`](crate::clock::Clock)) and
//! `D = digest(line object without entry_digest)`. Because the line is canonical and
//! `entry_digest` is its second member, `D`'s preimage is the line's own bytes with that one
//! member cut out, so verifying a line hashes it once.
//!
//! **`recorded_at` is the store's, not the kernel's.** It sits beside the payload, never in it:
//! the kernel's Event, Result and State digests (and replay) never see it, so they stay
//! byte-identical to the reference's. It is bound by `D` like every member of the line, so
//! editing it breaks the chain at that line (and the head anchor at the last one). It says when
//! this store wrote the line, as the writer's clock said: nothing orders lines but `seq` (a
//! clock stepped back gives a later line an earlier time, which is recorded as it is).
//!
//! **Lines without a time.** Lines written before layout 3 are `valp-store-journal.v1`: the
//! same members without `recorded_at`. `valp upgrade` keeps them as they are (their time was
//! never recorded and is not invented); a reader gets `recorded_at` `None` for them
//! ([`ChainLine::recorded_at`]), which is shown as "unknown" ([`shown`]). Every line a layout-3
//! store writes is v2, so a v1 line after a v2 line is damage.
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
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::{Canonical, CanonicalError, decode_canonical, digest_text, is_digest};
use valp_kernel::json::Value;
use valp_kernel::json::strict::{ReadMember, parse_canonical_bytes, parse_canonical_lazy};
use valp_kernel::json::write::{Fields, canonical_bytes, write_int, write_str};

use crate::clock::Timestamp;
use crate::error::StoreError;

mod frame;
mod pieces;

use frame::{DIGEST_MEMBER_LEN, Expected, read_frame};
use pieces::Pieces;

/// `schema_version` of a journal line (layout 3: with `recorded_at`).
pub const LINE_SCHEMA: &str = "valp-store-journal.v2";
/// `schema_version` of a line written before layout 3, without `recorded_at`.
pub const UNTIMED_LINE_SCHEMA: &str = "valp-store-journal.v1";
/// How a line without `recorded_at` shows its time.
pub const UNKNOWN_TIME: &str = "unknown";

/// A line's `recorded_at` as it is shown: the RFC 3339 time, or [`UNKNOWN_TIME`] for a line
/// written before layout 3 (never a made-up time).
pub fn shown(recorded_at: Option<Timestamp>) -> String {
    recorded_at.map_or_else(|| UNKNOWN_TIME.to_owned(), Timestamp::to_rfc3339)
}

/// The members after `entry_digest`, and the closing brace (`recorded_at` `None`: a v1 line).
fn write_rest(out: &mut Vec<u8>, prior: Option<&str>, recorded_at: Option<&str>, seq: u64) {
    let mut fields = Fields::resume(out, "entry_digest");
    match prior {
        Some(digest) => fields.str("prior_entry_digest", digest),
        None => fields.key("prior_entry_digest").extend_from_slice(b"null"),
    }
    match recorded_at {
        Some(at) => {
            fields.str("recorded_at", at);
            fields.str("schema_version", LINE_SCHEMA);
        }
        None => fields.str("schema_version", UNTIMED_LINE_SCHEMA),
    }
    write_int(fields.key("seq"), i128::from(seq));
    fields.end();
}

/// Encodes line `seq` holding `entry`, chained to `prior`, recorded at `recorded_at`. Returns
/// the line (with its LF) and its `entry_digest`.
pub fn encode_line(
    seq: u64,
    prior: Option<&str>,
    recorded_at: Timestamp,
    entry: &impl Canonical,
) -> (Vec<u8>, String) {
    encode_line_at(seq, prior, Some(recorded_at), entry)
}

/// [`encode_line`], or with `recorded_at` `None` the v1 line a store before layout 3 wrote:
/// for records converted from layout 1, whose time was never recorded, and for tests that stand
/// for an older store.
pub fn encode_line_at(
    seq: u64,
    prior: Option<&str>,
    recorded_at: Option<Timestamp>,
    entry: &impl Canonical,
) -> (Vec<u8>, String) {
    let mut line = Vec::with_capacity(1024);
    let digest = encode_line_into(&mut line, seq, prior, recorded_at, entry);
    (line, digest)
}

/// [`encode_line_at`] appending the line to `out` (a batch's buffer: the line is encoded once,
/// in place, and its digest hashed from there). Returns its `entry_digest`.
pub fn encode_line_into(
    out: &mut Vec<u8>,
    seq: u64,
    prior: Option<&str>,
    recorded_at: Option<Timestamp>,
    entry: &impl Canonical,
) -> String {
    let start = out.len();
    out.extend_from_slice(br#"{"entry":"#);
    entry.write_canonical(out);
    let mut rest = Vec::with_capacity(192);
    let at = recorded_at.map(Timestamp::to_rfc3339);
    write_rest(&mut rest, prior, at.as_deref(), seq);
    let mut hasher = Sha256::new();
    hasher.update(&out[start..]);
    hasher.update(&rest);
    hasher.update(b"\n");
    let digest = digest_text(&hasher.finalize().into());
    out.extend_from_slice(br#","entry_digest":"#);
    write_str(out, &digest);
    out.extend_from_slice(&rest);
    out.push(b'\n');
    digest
}

/// One verified line.
#[derive(Debug, Clone)]
pub struct ChainLine {
    /// Its sequence number (0 for the first line).
    pub seq: u64,
    /// The payload's canonical bytes (checked canonical with the rest of the line; decoded
    /// only by whoever reads it, see [`ChainLine::entry`]).
    entry: Vec<u8>,
    /// Its `entry_digest`.
    pub digest: String,
    /// When the store wrote it; `None` for a line written before layout 3 (shown as
    /// [`UNKNOWN_TIME`], see [`shown`]).
    pub recorded_at: Option<Timestamp>,
    /// Byte offset of the line's first byte.
    pub start: u64,
    /// Byte offset just after its LF.
    pub end: u64,
}

impl ChainLine {
    /// The payload, parsed.
    pub fn entry(&self) -> Value {
        // The bytes were checked canonical when the line was read, so they parse; `null` (which
        // no decoder of a payload accepts) only if that were ever not so.
        parse_canonical_bytes(&self.entry).unwrap_or(Value::Null)
    }

    /// The payload's canonical bytes, for decoders that read it straight from them.
    pub fn entry_bytes(&self) -> &[u8] {
        &self.entry
    }
}

/// The line's members, `entry` (if there) as a `null` placeholder, and the entry's canonical
/// bytes; or why the line is not canonical JSON. The entry's text is handed to `read` in the
/// same pass (see [`ChainReader::next_line_reading`]).
fn split_line(bytes: &[u8], read: ReadMember<'_>) -> Result<(Value, Vec<u8>), CanonicalError> {
    if let Some((&b'\n', body)) = bytes.split_last()
        && let Some((mut value, range)) = parse_canonical_lazy(body, "entry", read)
    {
        let entry = match (&mut value, range) {
            (Value::Object(members), Some(range)) => {
                members.insert("entry".to_owned(), Value::Null);
                body.get(range).unwrap_or_default().to_vec()
            }
            _ => Vec::new(),
        };
        return Ok((value, entry));
    }
    // Not canonical (the general path names why), or, were the two paths ever to disagree, the
    // canonical bytes of what the general path read.
    let mut value = decode_canonical(bytes)?;
    let mut entry = Vec::new();
    if let Value::Object(members) = &mut value
        && let Some(payload) = members.insert("entry".to_owned(), Value::Null)
    {
        entry = canonical_bytes(&payload)?;
        entry.pop();
    }
    Ok((value, entry))
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
    pieces: Pieces,
    offset: u64,
    next_seq: u64,
    prior: Option<String>,
    /// Whether `prior` is known to be a digest text (`sha256:` and 64 lowercase hex digits),
    /// which [`frame`] needs to read a line by position: always after a verified line; after
    /// [`ChainReader::resume`] only if the prior given is one.
    prior_is_digest: bool,
    /// Whether a line with `recorded_at` was read (a v1 line may not follow one).
    timed: bool,
    /// A line copied out of the file's pieces: one that is not read by position where it lies.
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
            pieces: Pieces::new(file),
            offset: 0,
            next_seq: 0,
            prior: None,
            prior_is_digest: true,
            timed: false,
            buffer: Vec::with_capacity(4096),
            tail: None,
        })
    }

    /// Continues reading `path` after a line already verified: the next line must be
    /// `next_seq`, start at `offset` and chain to `prior`; `prior_timed` says whether that line
    /// had a `recorded_at` (then every later one must).
    pub fn resume(
        path: &Path,
        offset: u64,
        next_seq: u64,
        prior: &str,
        prior_timed: bool,
    ) -> Result<Self, StoreError> {
        let mut reader = Self::open(path)?;
        reader
            .pieces
            .seek(offset)
            .map_err(|source| StoreError::io(path, "seek", source))?;
        reader.offset = offset;
        reader.next_seq = next_seq;
        reader.prior = Some(prior.to_owned());
        reader.prior_is_digest = is_digest(prior);
        reader.timed = prior_timed;
        Ok(reader)
    }

    /// Byte offset after the last verified line.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The next verified line, `Ok(None)` at the end (see [`ChainReader::tail`] for what
    /// follows), or the damage found.
    pub fn next_line(&mut self) -> Result<Option<ChainLine>, StoreError> {
        self.next_line_reading(&mut |_| None)
    }

    /// [`ChainReader::next_line`], handing the text from the line's `entry` on to `read_entry` in the
    /// pass that checks the line: a reader that decodes the entry from it answers how many
    /// bytes the entry took (the entry's canonical check is then its own), or `None` to leave the
    /// entry to the usual check (and decode it from [`ChainLine::entry`]). What `read_entry` kept is
    /// the line's entry only if the line is returned.
    pub fn next_line_reading(
        &mut self,
        read_entry: ReadMember<'_>,
    ) -> Result<Option<ChainLine>, StoreError> {
        if self.tail.is_some() {
            return Ok(None);
        }
        let start = self.offset;
        // A good line lying whole in the piece read is taken where it lies; any other is copied
        // out and verified as before (which words what is wrong with it).
        let whole = self
            .pieces
            .whole_line()
            .map_err(|source| StoreError::io(&self.path, "read", source))?;
        if let Some(len) = whole
            && let Some(line) = self.by_position_of(self.pieces.ahead(len), start, &mut *read_entry)
        {
            self.pieces.consume(len);
            return Ok(Some(self.accept(line)));
        }
        self.buffer.clear();
        let read = self
            .pieces
            .read_line(&mut self.buffer)
            .map_err(|source| StoreError::io(&self.path, "read", source))?;
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
        match self.verify(start, read_entry) {
            Ok(line) => Ok(Some(self.accept(line))),
            Err(damage) => self.torn_or_damaged(start, damage),
        }
    }

    /// Moves past `line`, verified: the next one must chain to it.
    fn accept(&mut self, line: ChainLine) -> ChainLine {
        self.offset = line.end;
        self.next_seq += 1;
        // The prior's text is kept in place: no allocation per line.
        match &mut self.prior {
            Some(prior) => prior.clone_from(&line.digest),
            None => self.prior = Some(line.digest.clone()),
        }
        // A verified line's digest is one: the members path checks it against the computed one.
        self.prior_is_digest = true;
        self.timed = line.recorded_at.is_some();
        line
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
        self.pieces
            .read_rest(&mut rest)
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

    /// The line in the buffer, verified: read by position when it has the one shape of a good
    /// line ([`frame`]), else through its members, which word what is wrong exactly.
    fn verify(&self, start: u64, read: ReadMember<'_>) -> Result<ChainLine, StoreError> {
        match self.by_position(start, &mut *read) {
            Some(line) => Ok(line),
            None => self.verify_members(start, read),
        }
    }

    /// The line in the buffer if it has the one shape of a good line ([`frame`]).
    fn by_position(&self, start: u64, read: ReadMember<'_>) -> Option<ChainLine> {
        self.by_position_of(&self.buffer, start, read)
    }

    /// The line `bytes` (with its LF), starting at `start`, if it has the one shape of a good
    /// line ([`frame`]).
    fn by_position_of(&self, bytes: &[u8], start: u64, read: ReadMember<'_>) -> Option<ChainLine> {
        self.prior_is_digest.then_some(())?;
        let expected = Expected {
            seq: self.next_seq,
            prior: self.prior.as_deref(),
            timed: self.timed,
        };
        let frame = read_frame(bytes, &expected, read)?;
        Some(ChainLine {
            seq: self.next_seq,
            entry: bytes[frame.entry].to_vec(),
            digest: frame.digest.to_owned(),
            recorded_at: frame.recorded_at,
            start,
            end: start + bytes.len() as u64,
        })
    }

    /// [`ChainReader::verify`] through the line's members: any line, and the exact wording of
    /// what is wrong with it.
    fn verify_members(&self, start: u64, read: ReadMember<'_>) -> Result<ChainLine, StoreError> {
        let bytes = &self.buffer;
        let (value, entry) = split_line(bytes, read)
            .map_err(|error| self.corrupt(start, format!("not a canonical JSON line: {error}")))?;
        let Value::Object(mut members) = value else {
            return Err(self.corrupt(start, "a journal line is a JSON object".to_owned()));
        };
        let recorded_at = self.recorded_at(start, &members)?;
        let expected: &[&str] = if recorded_at.is_some() {
            &[
                "entry",
                "entry_digest",
                "prior_entry_digest",
                "recorded_at",
                "schema_version",
                "seq",
            ]
        } else {
            &[
                "entry",
                "entry_digest",
                "prior_entry_digest",
                "schema_version",
                "seq",
            ]
        };
        if members.len() != expected.len() || !expected.iter().all(|key| members.contains_key(*key))
        {
            let keys: Vec<&str> = members.keys().map(String::as_str).collect();
            return Err(self.corrupt(
                start,
                format!("members must be {expected:?}, found {keys:?}"),
            ));
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
        // The text as read: `recorded_at` accepted it only in the one spelling the store writes.
        let at = recorded_at.and(members.get("recorded_at").and_then(Value::as_str));
        write_rest(&mut rest, prior, at, self.next_seq);
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
        Ok(ChainLine {
            seq: self.next_seq,
            entry,
            digest,
            recorded_at,
            start,
            end: start + bytes.len() as u64,
        })
    }

    /// The line's `recorded_at` as its `schema_version` says: v2 must carry one in the exact
    /// RFC 3339 form the store writes, v1 (before layout 3) none, and only before any v2 line.
    fn recorded_at(
        &self,
        start: u64,
        members: &std::collections::BTreeMap<String, Value>,
    ) -> Result<Option<Timestamp>, StoreError> {
        match members.get("schema_version").and_then(Value::as_str) {
            Some(LINE_SCHEMA) => match members.get("recorded_at") {
                Some(Value::String(text)) => {
                    Timestamp::parse_rfc3339(text).map(Some).ok_or_else(|| {
                        self.corrupt(
                            start,
                            format!(
                                "recorded_at {text:?} is not an RFC 3339 UTC time with \
                                 milliseconds (YYYY-MM-DDTHH:MM:SS.mmmZ)"
                            ),
                        )
                    })
                }
                Some(_) => Err(self.corrupt(start, "recorded_at must be a string".to_owned())),
                None => {
                    Err(self.corrupt(start, format!("a {LINE_SCHEMA} line must have recorded_at")))
                }
            },
            Some(UNTIMED_LINE_SCHEMA) if self.timed => Err(self.corrupt(
                start,
                format!(
                    "a {UNTIMED_LINE_SCHEMA} line (no recorded_at) after a {LINE_SCHEMA} line: \
                     every line written since layout 3 has its time"
                ),
            )),
            Some(UNTIMED_LINE_SCHEMA) => Ok(None),
            _ => Err(self.corrupt(
                start,
                format!("schema_version must be {LINE_SCHEMA:?} (or {UNTIMED_LINE_SCHEMA:?})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use valp_kernel::json::strict::member_value_len;

    use super::*;

    /// An entry with a nested object, an array, an escape and a non-ASCII character.
    struct Entry;

    impl Canonical for Entry {
        fn write_canonical(&self, out: &mut Vec<u8>) {
            out.extend_from_slice(r#"{"a":[1,-2,"x\ty"],"b":{"c":null},"d":"é"}"#.as_bytes());
        }
    }

    /// A reader positioned before `line`, as after the line before it.
    fn reader_before(
        file: &Path,
        line: &[u8],
        seq: u64,
        prior: Option<&str>,
        timed: bool,
    ) -> ChainReader {
        let mut reader = ChainReader::open(file).unwrap();
        reader.buffer = line.to_vec();
        reader.next_seq = seq;
        reader.prior = prior.map(str::to_owned);
        reader.prior_is_digest = prior.is_none_or(is_digest);
        reader.timed = timed;
        reader
    }

    /// Reading `line` by position gives a line only where reading it through its members gives
    /// the same line, with the reader's entry `read` (or none).
    fn agrees(reader: &ChainReader) -> bool {
        let mut by_reader = |text: &str| member_value_len(text);
        let mut unread = |_: &str| None;
        let reads: [ReadMember<'_>; 2] = [&mut by_reader, &mut unread];
        let mut taken = false;
        for read in reads {
            let Some(line) = reader.by_position(7, read) else {
                continue;
            };
            taken = true;
            let expected = reader.verify_members(7, &mut |_| None).unwrap();
            assert_eq!(
                (line.seq, &line.entry, &line.digest, line.recorded_at),
                (
                    expected.seq,
                    &expected.entry,
                    &expected.digest,
                    expected.recorded_at
                )
            );
            assert_eq!((line.start, line.end), (expected.start, expected.end));
        }
        taken
    }

    /// `preimage` (a line without its `entry_digest` member) with that member put back at `cut`,
    /// holding the preimage's digest: a line whose digest is right whatever else is wrong.
    fn with_digest(preimage: &[u8], cut: usize) -> Vec<u8> {
        let digest = valp_kernel::canonical::sha256_digest(preimage);
        let mut line = preimage.to_vec();
        let member = format!(r#","entry_digest":"{digest}""#);
        line.splice(cut..cut, member.bytes());
        line
    }

    /// Every line made from `line` by changing, inserting or removing one byte: of the line
    /// itself, and of its preimage with the digest then made right again.
    fn changed(line: &[u8]) -> Vec<Vec<u8>> {
        let cut = line
            .windows(16)
            .position(|window| window == br#","entry_digest":"#)
            .unwrap();
        let mut preimage = line.to_vec();
        preimage.drain(cut..cut + DIGEST_MEMBER_LEN);
        let mut lines = Vec::new();
        for (bytes, redigest) in [(line, false), (preimage.as_slice(), true)] {
            for index in 0..bytes.len() {
                let moved = |by: isize| {
                    if index < cut {
                        cut.saturating_add_signed(by)
                    } else {
                        cut
                    }
                };
                let mut each = |changed: Vec<u8>, by: isize| {
                    lines.push(if redigest {
                        with_digest(&changed, moved(by).min(changed.len()))
                    } else {
                        changed
                    });
                };
                for byte in [
                    0, b'\n', b' ', b'"', b'\\', b'0', b'1', b'9', b'-', b'a', b'f', b'g', b'z',
                    b'{', b'}', b'[', b']', b',', b':', b'n', b'.', 0xc3, 0x80,
                ] {
                    let mut replaced = bytes.to_vec();
                    replaced[index] = byte;
                    each(replaced, 0);
                    let mut inserted = bytes.to_vec();
                    inserted.insert(index, byte);
                    each(inserted, 1);
                }
                let mut cut_out = bytes.to_vec();
                cut_out.remove(index);
                each(cut_out, -1);
            }
        }
        lines
    }

    #[test]
    fn a_line_read_by_position_is_the_line_read_through_its_members() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("journal");
        std::fs::write(&file, b"").unwrap();
        let at = Timestamp::from_millis(1_764_000_000_123);
        let (first, digest) = encode_line(0, None, at, &Entry);
        let (later, _) = encode_line(10, Some(&digest), at, &Entry);
        let (untimed, _) = encode_line_at(3, Some(&digest), None, &Entry);
        let cases = [
            (first, 0, None, false),
            (later, 10, Some(digest.as_str()), true),
            (untimed.clone(), 3, Some(digest.as_str()), false),
        ];
        let mut taken = 0;
        for (line, seq, prior, timed) in cases {
            // Every line the store writes is read by position.
            assert!(agrees(&reader_before(&file, &line, seq, prior, timed)));
            // Not after another line than the one it chains to.
            let other =
                Some("sha256:0000000000000000000000000000000000000000000000000000000000000000");
            for (other_seq, other_prior) in [(seq + 1, prior), (seq, other)] {
                assert!(!agrees(&reader_before(
                    &file,
                    &line,
                    other_seq,
                    other_prior,
                    timed
                )));
            }
            for changed in changed(&line) {
                taken += usize::from(agrees(&reader_before(&file, &changed, seq, prior, timed)));
            }
        }
        // A v1 line where one may no longer come.
        assert!(!agrees(&reader_before(
            &file,
            &untimed,
            3,
            Some(&digest),
            true
        )));
        // After a resumed prior that is not a digest text: through the members only.
        let (after_odd_prior, _) = encode_line(4, Some("not a digest"), at, &Entry);
        let reader = reader_before(&file, &after_odd_prior, 4, Some("not a digest"), true);
        assert!(!agrees(&reader));
        assert!(reader.verify_members(7, &mut |_| None).is_ok());
        // Some changes still give a good line (a digit of the entry or of the time, with the
        // digest made right): those were read by position too.
        assert!(taken > 0);
    }
}
