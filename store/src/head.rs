//! The head anchor of a journal: `<stem>.head` beside `<stem>.jsonl` (`journal.head` for
//! `journal.jsonl`), the canonical JSON of
//!
//! ```text
//! {"entry_digest": D, "length": L, "schema_version": "valp-store-head.v1", "seq": N}
//! ```
//!
//! plus LF: line `N` of the journal has `entry_digest` `D` and ends (after its LF) at byte `L`.
//!
//! **Why.** A journal's lines chain backwards, so a journal cut after any line, or replaced by
//! an older copy of itself, is still a valid chain. The head records how far the journal is
//! known to have been durable; a journal shorter than its head, or whose line `N` has another
//! digest, was truncated or rolled back and is refused (see [`HeadMismatch`]).
//!
//! **When it is written.** Every journal is created with its head (written before the journal
//! file, see [`create_journal`](crate::journal::create_journal)); every append rewrites it
//! after the journal line is durable, under the journal lock, through a temporary file that is
//! `fdatasync`ed before it is renamed over the head ([`write`]). A crash can therefore leave the
//! head behind the journal (the rename or its write was lost), never ahead of it: a head that
//! lags is caught up by the next append, and until then it still anchors the prefix it names.
//! The directory is not synced after the rename on an append; losing that rename in a crash is
//! only such a lag.
//!
//! **What it cannot see.** Rolling back the journal *and* its head together (restoring a whole
//! task folder, or the whole control root, from an older copy) leaves a consistent older
//! journal, which nothing local can tell from the real one.

use std::path::{Path, PathBuf};

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::json::write::Fields;
use valp_kernel::json::{Number, Value};

use crate::chain::{ChainLine, Tail};
use crate::error::StoreError;
use crate::files::replace_under_lock;
use crate::io::Storage;
use crate::journal::Warning;

/// `schema_version` of a head record.
pub const HEAD_SCHEMA: &str = "valp-store-head.v1";

/// Extension of a journal's head file (`journal.jsonl` → `journal.head`).
pub const HEAD_EXTENSION: &str = "head";

/// Where a journal is anchored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Sequence number of the anchored line (0 = the genesis line).
    pub seq: u64,
    /// Its `entry_digest`.
    pub entry_digest: String,
    /// Byte length of the journal through that line's LF.
    pub length: u64,
}

impl Canonical for Head {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("entry_digest", &self.entry_digest);
        fields.int("length", i128::from(self.length));
        fields.str("schema_version", HEAD_SCHEMA);
        fields.int("seq", i128::from(self.seq));
        fields.end();
    }
}

/// The head file of the journal at `journal`.
pub fn head_path(journal: &Path) -> PathBuf {
    journal.with_extension(HEAD_EXTENSION)
}

/// Reads the head at `path`; `None` when there is none.
pub fn read(path: &Path) -> Result<Option<Head>, StoreError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(StoreError::io(path, "read", source)),
    };
    decode(&bytes)
        .map(Some)
        .map_err(|reason| StoreError::Corrupt {
            path: path.to_owned(),
            line: 1,
            byte: 0,
            reason: format!("not a head record ({HEAD_SCHEMA}): {reason}"),
        })
}

fn decode(bytes: &[u8]) -> Result<Head, String> {
    let value = decode_canonical(bytes).map_err(|error| error.to_string())?;
    let Value::Object(members) = value else {
        return Err("a head record is a JSON object".to_owned());
    };
    let keys: Vec<&str> = members.keys().map(String::as_str).collect();
    if keys != ["entry_digest", "length", "schema_version", "seq"] {
        return Err(format!("unexpected members {keys:?}"));
    }
    if members["schema_version"].as_str() != Some(HEAD_SCHEMA) {
        return Err(format!("schema_version must be {HEAD_SCHEMA:?}"));
    }
    let count = |key: &str| match &members[key] {
        Value::Number(Number::Int(value)) => u64::try_from(*value).ok(),
        _ => None,
    };
    let (Some(seq), Some(length)) = (count("seq"), count("length")) else {
        return Err("seq and length must be integers >= 0".to_owned());
    };
    let entry_digest = members["entry_digest"]
        .as_str()
        .filter(|digest| is_digest(digest))
        .ok_or_else(|| "entry_digest must be a sha256 digest".to_owned())?
        .to_owned();
    Ok(Head {
        seq,
        entry_digest,
        length,
    })
}

fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
    })
}

/// Replaces the head at `path` with `head` (the caller holds the journal lock). The record is
/// durable before it is renamed into place; with `sync_dir` the rename is made durable too
/// (journal creation; an append leaves it to the file system, see the module documentation).
pub fn write(
    storage: &dyn Storage,
    path: &Path,
    head: &Head,
    sync_dir: bool,
) -> Result<(), StoreError> {
    replace_under_lock(storage, path, &head.canonical_bytes(), sync_dir)
}

/// The head anchor of one chained file, as its reader and writer use it: [`Anchor::read`] before
/// reading the file, [`Anchor::check_line`] on every verified line, [`Anchor::check_end`] once
/// the verified lines end, [`Anchor::advance`] after a durable append. Any chained file of the
/// store (task journals and the ledger through [`Journal`](crate::Journal), effect ledgers
/// through [`EffectLedger`](crate::effects::EffectLedger), and any other file of
/// [`chain`](crate::chain) lines) gets truncation and rollback detection from these four calls
/// (and the helpers both readers share: [`Anchor::check_tail`], [`Anchor::check_not_shortened`],
/// `Anchor::advance_after_append`).
#[derive(Debug, Clone)]
pub struct Anchor {
    file: PathBuf,
    path: PathBuf,
    head: Option<Head>,
}

impl Anchor {
    /// Reads the head of the chained file `file`. With `required`, a file that holds bytes but
    /// has no head is refused ([`StoreError::HeadMissing`]); a missing or empty file has no
    /// line to anchor. Without `required` (a layout-1 file) a missing head anchors nothing.
    pub fn read(file: &Path, required: bool) -> Result<Self, StoreError> {
        let path = head_path(file);
        let head = read(&path)?;
        let holds_bytes = std::fs::metadata(file).is_ok_and(|metadata| metadata.len() > 0);
        if head.is_none() && required && holds_bytes {
            return Err(StoreError::HeadMissing {
                path: file.to_owned(),
                head: path,
            });
        }
        Ok(Self {
            file: file.to_owned(),
            path,
            head,
        })
    }

    /// An anchor that checks nothing (for reading as far as the lines verify).
    pub fn ignored(file: &Path) -> Self {
        Self {
            file: file.to_owned(),
            path: head_path(file),
            head: None,
        }
    }

    /// The head as read, or as last advanced.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_ref()
    }

    /// The head file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses `line` when it is the anchored one but has another digest or end (a rollback or
    /// a replaced file).
    pub fn check_line(&self, line: &ChainLine) -> Result<(), StoreError> {
        match &self.head {
            Some(head)
                if head.seq == line.seq
                    && (head.entry_digest != line.digest || head.length != line.end) =>
            {
                Err(self.mismatch(format!(
                    "line {} has entry_digest {} and ends at byte {}, the anchor names {} ending \
                     at byte {}: rolled back or replaced",
                    line.seq + 1,
                    line.digest,
                    line.end,
                    head.entry_digest,
                    head.length
                )))
            }
            _ => Ok(()),
        }
    }

    /// Refuses a file whose verified lines end (at `next_seq`, byte `offset`, followed by
    /// `unverified` bytes that are not a line) before the anchored line: truncated or rolled
    /// back. Call before deciding anything about those bytes (a torn tail at or before the
    /// anchored line is not one).
    pub fn check_end(&self, next_seq: u64, offset: u64, unverified: u64) -> Result<(), StoreError> {
        let Some(head) = self.head.as_ref().filter(|head| head.seq >= next_seq) else {
            return Ok(());
        };
        let after = if unverified == 0 {
            String::new()
        } else {
            format!(", followed by {unverified} bytes that are not a line")
        };
        let last = match next_seq.checked_sub(1) {
            Some(seq) => format!("line {next_seq} (seq {seq})"),
            None => "no line".to_owned(),
        };
        Err(self.mismatch(format!(
            "the file's lines end with {last} at byte {offset}{after}, the anchor names seq {} \
             ending at byte {}: truncated or rolled back",
            head.seq, head.length
        )))
    }

    /// Rewrites the head after line `seq` (digest `entry_digest`, ending at byte `length`) was
    /// made durable, under the file's lock (see [`write`] for `sync_dir`).
    pub fn advance(
        &mut self,
        storage: &dyn Storage,
        seq: u64,
        entry_digest: &str,
        length: u64,
        sync_dir: bool,
    ) -> Result<(), StoreError> {
        let head = Head {
            seq,
            entry_digest: entry_digest.to_owned(),
            length,
        };
        write(storage, &self.path, &head, sync_dir)?;
        self.head = Some(head);
        Ok(())
    }

    /// [`Anchor::check_end`] for the verified lines ending at `next_seq`, byte `offset`, with
    /// `tail` after them.
    pub fn check_tail(&self, next_seq: u64, offset: u64, tail: &Tail) -> Result<(), StoreError> {
        let unverified = match tail {
            Tail::Clean => 0,
            Tail::Torn { bytes, .. } => bytes.len() as u64,
        };
        self.check_end(next_seq, offset, unverified)
    }

    /// Refuses to append to the file when it is shorter than the `verified` bytes a handle read
    /// (through seq `last_seq`): it was cut under the handle, and a line appended now would not
    /// chain to what is left. Call under the file's lock, before following it.
    pub fn check_not_shortened(&self, verified: u64, last_seq: u64) -> Result<(), StoreError> {
        if verified == 0 {
            return Ok(());
        }
        let length = std::fs::metadata(&self.file)
            .map_err(|source| StoreError::io(&self.file, "stat", source))?
            .len();
        if length >= verified {
            return Ok(());
        }
        Err(self.mismatch(format!(
            "the file is {length} bytes, shorter than the {verified} bytes verified through seq \
             {last_seq}: truncated under an open writer"
        )))
    }

    /// [`Anchor::advance`] after an append made line `seq` durable (without syncing the
    /// folder): the line is acknowledged whatever happens to the head, so a head that cannot be
    /// rewritten only lags, as after a crash, until the next append. That is recorded in
    /// `warnings` as [`Warning::HeadNotUpdated`] (replacing an earlier one).
    pub(crate) fn advance_after_append(
        &mut self,
        storage: &dyn Storage,
        seq: u64,
        entry_digest: &str,
        length: u64,
        warnings: &mut Vec<Warning>,
    ) {
        let written = self.advance(storage, seq, entry_digest, length, false);
        warnings.retain(|warning| !matches!(warning, Warning::HeadNotUpdated { .. }));
        if let Err(error) = written {
            warnings.push(Warning::HeadNotUpdated {
                seq,
                error: error.to_string(),
            });
        }
    }

    /// A refusal naming the file, its head and the anchored seq.
    pub fn mismatch(&self, reason: String) -> StoreError {
        StoreError::HeadMismatch {
            path: self.file.clone(),
            head: self.path.clone(),
            seq: self.head.as_ref().map_or(0, |head| head.seq),
            reason,
        }
    }
}

/// The head of already encoded journal `lines` (complete lines, each with its LF): the last
/// line's `seq` and `entry_digest` and the length of `lines`. `None` when the last line does not
/// carry them (the journal is then refused when it is opened anyway).
pub fn of_lines(lines: &[u8]) -> Option<Head> {
    let body = lines.strip_suffix(b"\n")?;
    let start = body
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |at| at + 1);
    let Ok(Value::Object(members)) = decode_canonical(&lines[start..]) else {
        return None;
    };
    let seq = match members.get("seq")? {
        Value::Number(Number::Int(seq)) => u64::try_from(*seq).ok()?,
        _ => return None,
    };
    Some(Head {
        seq,
        entry_digest: members.get("entry_digest")?.as_str()?.to_owned(),
        length: lines.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_round_trips_through_its_canonical_bytes() {
        let head = Head {
            seq: 7,
            entry_digest: format!("sha256:{}", "ab".repeat(32)),
            length: 1234,
        };
        let bytes = head.canonical_bytes();
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            format!(
                "{{\"entry_digest\":\"sha256:{}\",\"length\":1234,\"schema_version\":\
                 \"valp-store-head.v1\",\"seq\":7}}\n",
                "ab".repeat(32)
            )
        );
        assert_eq!(decode(&bytes), Ok(head));
    }

    #[test]
    fn malformed_heads_are_refused_with_the_reason() {
        let digest = format!("sha256:{}", "0".repeat(64));
        for (text, reason) in [
            ("[]\n", "a head record is a JSON object"),
            (
                r#"{"entry_digest":"x","length":1,"schema_version":"valp-store-head.v1","seq":0}"#,
                "entry_digest must be a sha256 digest",
            ),
            (
                &format!(
                    r#"{{"entry_digest":"{digest}","length":-1,"schema_version":"valp-store-head.v1","seq":0}}"#
                ),
                "seq and length must be integers >= 0",
            ),
            (
                &format!(
                    r#"{{"entry_digest":"{digest}","length":1,"schema_version":"valp-store-head.v2","seq":0}}"#
                ),
                "schema_version must be \"valp-store-head.v1\"",
            ),
            (
                &format!(r#"{{"entry_digest":"{digest}","length":1,"seq":0}}"#),
                "unexpected members [\"entry_digest\", \"length\", \"seq\"]",
            ),
        ] {
            let mut bytes = text.as_bytes().to_vec();
            if !bytes.ends_with(b"\n") {
                bytes.push(b'\n');
            }
            assert_eq!(decode(&bytes), Err(reason.to_owned()), "{text}");
        }
    }

    #[test]
    fn an_anchor_refuses_a_file_without_its_head_or_short_of_it() {
        let temp = tempfile::tempdir().unwrap();
        let file = temp.path().join("ledger.jsonl");
        assert!(
            Anchor::read(&file, true).unwrap().head().is_none(),
            "no file"
        );
        std::fs::write(&file, b"").unwrap();
        assert!(Anchor::read(&file, true).unwrap().head().is_none(), "empty");
        std::fs::write(&file, b"x\n").unwrap();
        assert!(matches!(
            Anchor::read(&file, true),
            Err(StoreError::HeadMissing { path, head }) if path == file
                && head == temp.path().join("ledger.head")
        ));
        let mut anchor = Anchor::read(&file, false).unwrap();
        anchor
            .advance(
                &crate::io::OsStorage,
                3,
                &format!("sha256:{}", "0".repeat(64)),
                400,
                true,
            )
            .unwrap();
        assert_eq!(Anchor::read(&file, true).unwrap().head(), anchor.head());
        assert!(anchor.check_end(4, 400, 0).is_ok());
        let error = anchor.check_end(3, 300, 7).unwrap_err();
        assert!(matches!(&error, StoreError::HeadMismatch { seq: 3, .. }));
        assert!(
            error.to_string().contains(
                "the file's lines end with line 3 (seq 2) at byte 300, followed by 7 bytes that \
                 are not a line, the anchor names seq 3 ending at byte 400: truncated or rolled \
                 back"
            ),
            "{error}"
        );
        assert!(
            anchor
                .check_end(0, 0, 0)
                .unwrap_err()
                .to_string()
                .contains("end with no line at byte 0")
        );
    }

    #[test]
    fn the_head_of_encoded_lines_is_their_last_line() {
        let at = crate::clock::Timestamp::from_millis(0);
        let (first, digest0) = crate::chain::encode_line(
            0,
            None,
            at,
            &Head {
                seq: 0,
                entry_digest: String::new(),
                length: 0,
            },
        );
        assert_eq!(
            of_lines(&first),
            Some(Head {
                seq: 0,
                entry_digest: digest0.clone(),
                length: first.len() as u64,
            })
        );
        let (second, digest1) = crate::chain::encode_line(
            1,
            Some(&digest0),
            at,
            &Head {
                seq: 1,
                entry_digest: String::new(),
                length: 0,
            },
        );
        let both = [first, second].concat();
        assert_eq!(
            of_lines(&both),
            Some(Head {
                seq: 1,
                entry_digest: digest1,
                length: both.len() as u64,
            })
        );
        assert_eq!(of_lines(b"no line"), None);
    }
}
