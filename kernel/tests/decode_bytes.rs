//! `decode_compact_entry_canonical` (typed decoding straight from a compact entry's canonical
//! bytes) answers exactly when the general path (parse, then `decode_compact_entry`) accepts the
//! text as canonical and decodes it, and then with the same entry; where it does not answer, the
//! general path names the error (its refusals are unchanged).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{
    DecodeError, decode_compact_entry, decode_compact_entry_canonical, decode_compact_entry_prefix,
};
use valp_kernel::json::strict::parse_canonical_bytes;
use valp_kernel::replay::CompactEntry;
use valp_kernel::walk::{Walk, WalkConfig};

fn entries(seed: u64, work_items: usize, steps: usize) -> Vec<CompactEntry> {
    Walk::new(WalkConfig {
        seed,
        work_items,
        // Odd seeds may end the task (the terminal kinds), even ones run the whole way.
        may_terminate: seed % 2 == 1,
    })
    .take(steps)
    .map(valp_kernel::walk::WalkStep::into_compact)
    .collect()
}

/// The general path: `None` if the text is not canonical.
fn general(bytes: &[u8]) -> Option<Result<CompactEntry, DecodeError>> {
    parse_canonical_bytes(bytes).map(|value| decode_compact_entry(&value))
}

/// The fast path's answer, checked against the general path's; whether it answered.
fn agrees(bytes: &[u8]) -> bool {
    let fast = decode_compact_entry_canonical(bytes);
    if let Some(fast) = &fast {
        assert_eq!(
            general(bytes),
            Some(Ok(fast.clone())),
            "{}",
            String::from_utf8_lossy(bytes)
        );
    }
    fast.is_some()
}

fn text(entry: &CompactEntry) -> Vec<u8> {
    let mut bytes = Vec::new();
    entry.write_canonical(&mut bytes);
    bytes
}

#[test]
fn every_entry_of_seeded_walks_decodes_straight_from_its_bytes() {
    let mut count = 0;
    for (seed, work_items) in [(1, 0), (2, 3), (3, 20), (4, 5), (5, 1), (6, 20)] {
        for entry in entries(seed, work_items, 300) {
            let bytes = text(&entry);
            assert!(agrees(&bytes));
            // Read as the start of a journal line's text, it says where it ends.
            let line = format!(
                "{},\"entry_digest\":\"x\"}}",
                String::from_utf8(bytes.clone()).unwrap()
            );
            assert_eq!(
                decode_compact_entry_prefix(&line),
                Some((entry.clone(), bytes.len()))
            );
            assert_eq!(decode_compact_entry_canonical(&bytes), Some(entry));
            count += 1;
        }
    }
    assert!(count > 900, "{count}");
}

#[test]
fn agrees_with_the_general_path_on_every_one_byte_change_and_cut() {
    // Entries with evidence, optional slots and lists.
    let picked: Vec<CompactEntry> = entries(7, 4, 200)
        .into_iter()
        .filter(|entry| !entry.evidence_set.is_empty() || entry.event.work_item_id.is_some())
        .take(4)
        .collect();
    assert!(!picked.is_empty());
    let mut answered = 0;
    for entry in &picked {
        let bytes = text(entry);
        for index in 0..bytes.len() {
            for replacement in [
                b' ', b'"', b'\\', b'0', b'1', b'-', b'a', b'z', b'{', b'}', b'[', b']', b',',
                b':', b'n', 0xC3,
            ] {
                let mut changed = bytes.clone();
                changed[index] = replacement;
                answered += usize::from(agrees(&changed));
            }
            let mut cut = bytes.clone();
            cut.remove(index);
            answered += usize::from(agrees(&cut));
        }
    }
    // Some changes keep a decodable entry (another id, another digest text).
    assert!(answered > 0);
}

#[test]
fn shapes_the_general_path_judges_are_left_to_it() {
    let entry = entries(8, 2, 30).pop().unwrap();
    let bytes = String::from_utf8(text(&entry)).unwrap();
    // A `null` optional slot is absent for the general decoder: not answered here, same entry.
    let with_null = bytes.replacen("{\"event\":{", "{\"event\":{\"attempt_id\":null,", 1);
    assert_eq!(decode_compact_entry_canonical(with_null.as_bytes()), None);
    if entry.event.attempt_id.is_none() {
        assert_eq!(general(with_null.as_bytes()), Some(Ok(entry.clone())));
    }
    // An unknown member: refused by the general path with its exact error.
    let unknown = format!("{},\"sz\":1}}", &bytes[..bytes.len() - 1]);
    assert_eq!(decode_compact_entry_canonical(unknown.as_bytes()), None);
    let refused = general(unknown.as_bytes());
    assert!(
        matches!(&refused, Some(Err(error)) if error.to_string() == "entry: unknown member \"sz\""),
        "{refused:?}"
    );
    // An unknown event kind is kept as text, as the general decoder keeps it.
    let kind = format!("\"kind\":\"{}\"", entry.event.kind.as_str());
    let other = bytes.replacen(&kind, "\"kind\":\"zz_unknown\"", 1);
    assert!(agrees(other.as_bytes()));
    // A key written with an escape the writer would not use: not canonical, left to the
    // general path; a key repeated or out of order likewise.
    let escaped = bytes.replacen("\"kind\":", "\"\\u006bind\":", 1);
    assert_ne!(escaped, bytes);
    assert!(!agrees(escaped.as_bytes()));
    assert_eq!(general(escaped.as_bytes()), None);
    let repeated = bytes.replacen("{\"kind\":", "{\"kind\":\"event\",\"kind\":", 1);
    assert_ne!(repeated, bytes);
    assert!(!agrees(repeated.as_bytes()));
    let swapped = bytes.replacen("\"evidence_set\":[", "\"evidence_sea\":[", 1);
    assert!(!agrees(swapped.as_bytes()));
}
