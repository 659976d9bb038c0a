//! A journal line read by position: the one shape every good line has, checked without building
//! a map of its members.
//!
//! A good line is canonical, so its members are in one order and its frame (everything but the
//! entry) is spelled one way, given the reader's state:
//!
//! ```text
//! {"entry":E,"entry_digest":"sha256:<64 hex>","prior_entry_digest":P,"recorded_at":"T",
//!  "schema_version":"valp-store-journal.v2","seq":N}
//! ```
//!
//! with `P` the prior line's digest (`null` on line 0), `N` the expected seq in its one decimal
//! spelling, `T` read by [`Timestamp::parse_rfc3339`] (which takes only the one spelling the
//! store writes), or the v1 form without `recorded_at` where one may still come. [`read_frame`]
//! takes a line only when it is exactly that, `E` is a canonical value (read by the caller's
//! `read`, or checked) and the digest matches; it answers `None` for everything else, *without
//! saying why*: the caller then takes the general path ([`ChainReader`](super::ChainReader)'s
//! parse into members), which names the error. So every line this accepts is one the general
//! path accepts, with the same seq, entry, digest and time, and every refusal is worded as
//! before. It accepts every line the store writes.

use std::ops::Range;

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::{DIGEST_LEN, raw_digest};
use valp_kernel::json::strict::{ReadMember, member_value_len};

use super::{LINE_SCHEMA, UNTIMED_LINE_SCHEMA};
use crate::clock::Timestamp;

/// What the line must chain to: the reader's state before it.
pub(super) struct Expected<'a> {
    /// The seq the line must have.
    pub seq: u64,
    /// The prior line's `entry_digest` (`None` before line 0): a digest text (`sha256:` and 64
    /// lowercase hex digits), which needs no escape, so its canonical string is the text in
    /// quotes. The caller makes sure.
    pub prior: Option<&'a str>,
    /// Whether a line with `recorded_at` was read (a v1 line may not follow one).
    pub timed: bool,
}

/// A line read by position.
pub(super) struct Frame<'a> {
    /// The entry's bytes in the line.
    pub entry: Range<usize>,
    /// Its `entry_digest`, as written (and as computed).
    pub digest: &'a str,
    /// Its `recorded_at` (`None` for a v1 line).
    pub recorded_at: Option<Timestamp>,
}

/// The line (with its LF) if it is exactly a good line after `expected`; `None` for anything
/// else (see the module docs). `read` is handed the text from the entry on, as
/// [`parse_canonical_lazy`](valp_kernel::json::strict::parse_canonical_lazy) hands it.
pub(super) fn read_frame<'a>(
    line: &'a [u8],
    expected: &Expected<'_>,
    read: ReadMember<'_>,
) -> Option<Frame<'a>> {
    let body = line.strip_suffix(b"\n")?;
    let text = std::str::from_utf8(body).ok()?;
    let from_entry = text.strip_prefix(r#"{"entry":"#)?;
    let entry_start = text.len() - from_entry.len();
    let entry_len = read(from_entry)
        .filter(|&taken| from_entry.is_char_boundary(taken))
        .or_else(|| member_value_len(from_entry))?;
    let entry = entry_start..entry_start + entry_len;
    let digest_member = entry.end..entry.end + DIGEST_MEMBER_LEN;
    let member = text.get(digest_member.clone())?;
    let digest = member
        .strip_prefix(r#","entry_digest":""#)?
        .strip_suffix('"')?;
    let raw = raw_digest(digest)?;
    let rest = after_prior(text.get(digest_member.end..)?.as_bytes(), expected.prior)?;
    let (recorded_at, rest) = time_and_schema(rest, expected.timed)?;
    let digits = rest.strip_prefix(br#","seq":"#)?.strip_suffix(b"}")?;
    is_seq(digits, expected.seq).then_some(())?;
    let mut hasher = Sha256::new();
    hasher.update(&line[..digest_member.start]);
    hasher.update(&line[digest_member.end..]);
    (<[u8; 32]>::from(hasher.finalize()) == raw).then_some(Frame {
        entry,
        digest,
        recorded_at,
    })
}

/// Bytes of `,"entry_digest":"sha256:<64 hex>"`.
pub(super) const DIGEST_MEMBER_LEN: usize = r#","entry_digest":""#.len() + DIGEST_LEN + 1;

/// What follows `prior_entry_digest` as the store writes it after `prior`.
fn after_prior<'a>(rest: &'a [u8], prior: Option<&str>) -> Option<&'a [u8]> {
    let rest = rest.strip_prefix(br#","prior_entry_digest":"#)?;
    match prior {
        None => rest.strip_prefix(b"null"),
        Some(prior) => rest
            .strip_prefix(b"\"")?
            .strip_prefix(prior.as_bytes())?
            .strip_prefix(b"\""),
    }
}

/// The line's `recorded_at` (`None` for a v1 line, which may come only before any timed
/// line) and what follows its `schema_version`, as the store writes them.
fn time_and_schema(rest: &[u8], timed: bool) -> Option<(Option<Timestamp>, &[u8])> {
    match rest.strip_prefix(br#","recorded_at":""#) {
        Some(rest) => {
            let (time, rest) = rest.split_at_checked(TIME_LEN)?;
            // Digits and `-T:.Z` only: its canonical string is the text in quotes.
            let time = Timestamp::parse_rfc3339(std::str::from_utf8(time).ok()?)?;
            let rest = rest
                .strip_prefix(br#"","schema_version":""#)?
                .strip_prefix(LINE_SCHEMA.as_bytes())?;
            Some((Some(time), rest.strip_prefix(b"\"")?))
        }
        None if !timed => {
            let rest = rest
                .strip_prefix(br#","schema_version":""#)?
                .strip_prefix(UNTIMED_LINE_SCHEMA.as_bytes())?;
            Some((None, rest.strip_prefix(b"\"")?))
        }
        None => None,
    }
}

/// Bytes of `YYYY-MM-DDTHH:MM:SS.mmmZ`.
const TIME_LEN: usize = "YYYY-MM-DDTHH:MM:SS.mmmZ".len();

/// Whether `digits` is the one decimal spelling of `seq` (no sign, no leading zero).
fn is_seq(digits: &[u8], seq: u64) -> bool {
    let canonical = match digits {
        [] | [b'0', _, ..] => false,
        _ => digits.iter().all(u8::is_ascii_digit),
    };
    canonical
        && digits
            .iter()
            .try_fold(0u64, |total, digit| {
                total.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            })
            .is_some_and(|value| value == seq)
}
