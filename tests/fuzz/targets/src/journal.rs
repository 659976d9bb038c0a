//! Journal files: the chain reader ([`ChainReader`]) and opening a task journal and an
//! installation ledger ([`Journal::open`]) over arbitrary bytes.

use std::path::Path;
use std::sync::Arc;

use valp_kernel::installation::InstallationLive;
use valp_kernel::live::LiveState;
use valp_store::chain::{ChainReader, Tail};
use valp_store::io::OsStorage;
use valp_store::journal::JOURNAL_FILE;
use valp_store::machine::Machine;
use valp_store::{Access, Journal, StoreError};

/// What the chain reader verified: the number of lines and the offset after the last one, or
/// `None` when it found damage.
type Verified = Option<(u64, u64)>;

/// The chain reader verifies contiguous lines numbered from 0 and accounts for every byte after
/// them (a clean end or a torn tail holding exactly the rest); damage names the next line and a
/// byte inside the file. Opening the file as a task journal and as an installation ledger
/// agrees with the reader: read-only never changes the file; a writer cuts a torn tail and
/// nothing else.
pub fn journal(data: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(JOURNAL_FILE);
    std::fs::write(&path, data).unwrap();
    let verified = read_chain(&path, data);
    anchor_verified_prefix(&path, data);
    open_as::<LiveState>(dir.path(), data, verified);
    open_as::<InstallationLive>(dir.path(), data, verified);
}

/// Every journal has a head anchor (`store::head`); the fuzzed bytes get the one a writer would
/// have left at the last complete line that chains from line 0 (none when there is no such
/// line), so that opening judges the bytes, not a missing head.
fn anchor_verified_prefix(path: &Path, data: &[u8]) {
    let mut reader = ChainReader::open(path).unwrap();
    let mut end = 0;
    while let Ok(Some(line)) = reader.next_line() {
        end = usize::try_from(line.end).unwrap();
    }
    if let Some(head) = valp_store::head::of_lines(&data[..end]) {
        std::fs::write(
            valp_store::head::head_path(path),
            valp_kernel::canonical::Canonical::canonical_bytes(&head),
        )
        .unwrap();
    }
}

fn read_chain(path: &Path, data: &[u8]) -> Verified {
    let len = data.len() as u64;
    let mut reader = ChainReader::open(path).unwrap();
    let (mut lines, mut end) = (0, 0);
    loop {
        match reader.next_line() {
            Ok(Some(line)) => {
                assert_eq!(
                    (line.seq, line.start),
                    (lines, end),
                    "lines are not contiguous"
                );
                assert!(
                    line.end > line.start && line.end <= len,
                    "line end {}",
                    line.end
                );
                assert_eq!(data[usize::try_from(line.end - 1).unwrap()], b'\n');
                (lines, end) = (lines + 1, line.end);
            }
            Ok(None) => {
                match reader.tail().unwrap() {
                    Tail::Clean => assert_eq!(end, len, "clean tail before the end"),
                    Tail::Torn { offset, bytes } => {
                        assert_eq!(offset, end, "torn tail elsewhere than after the last line");
                        assert_eq!(bytes, &data[usize::try_from(end).unwrap()..], "torn bytes");
                    }
                }
                return Some((lines, end));
            }
            Err(StoreError::Corrupt { line, byte, .. }) => {
                assert_eq!(line, lines + 1, "damage names the wrong line");
                assert!(byte >= end && byte <= len, "damage at byte {byte}");
                return None;
            }
            Err(other) => panic!("reading a journal failed with {other}"),
        }
    }
}

/// Opens the journal in `dir` as machine `M`, read-only then as a writer, on a copy each time.
fn open_as<M: Machine>(dir: &Path, data: &[u8], verified: Verified) {
    let path = dir.join(JOURNAL_FILE);
    let quarantine = dir.join("quarantine");
    let open = |access| Journal::<M>::open(dir, &quarantine, Arc::new(OsStorage), access);
    let reader = open(Access::ReadOnly);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        data,
        "a read-only open changed the file"
    );
    match (&reader, verified) {
        (Ok(journal), Some((lines, end))) => {
            assert_eq!((journal.len() + 1, journal.verified_bytes()), (lines, end));
        }
        (Ok(_), None) => panic!("a journal with damage opened"),
        // Damage; or no complete first line, so no head was written.
        (Err(StoreError::Corrupt { .. }), _)
        | (Err(StoreError::HeadMissing { .. }), Some((0, _)) | None) => {}
        (Err(other), _) => panic!("opening a journal failed with {other}"),
    }
    let writer = open(Access::Write);
    let after = std::fs::read(&path).unwrap();
    match writer {
        Ok(journal) => {
            assert!(reader.is_ok(), "a writer opened what a reader refused");
            let kept = usize::try_from(journal.verified_bytes()).unwrap();
            assert_eq!(
                after,
                &data[..kept],
                "a writer changed more than the torn tail"
            );
        }
        Err(error) => {
            assert!(
                reader.is_err(),
                "a writer refused what a reader opened: {error}"
            );
            assert_eq!(after, data, "a refused journal was changed");
        }
    }
    std::fs::write(&path, data).unwrap();
}
