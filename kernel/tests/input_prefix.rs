//! The input digest from an entry's own canonical bytes (`EntrySpans::input`, `InputPrefix`,
//! `LiveState::apply_recorded_from`): hashing `{"event":…,"evidence_set":[…]` as the text holds
//! it gives the digest encoding gives, and a text whose bytes encoding would not give back is
//! never used (the kernel encodes the input instead).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{
    InputPrefix, decode_compact_entry_canonical, decode_compact_entry_spans,
};
use valp_kernel::json::strict::parse_canonical_bytes;
use valp_kernel::live::LiveState;
use valp_kernel::replay::{CompactEntry, Replayer};
use valp_kernel::walk::{Walk, WalkConfig};
use valp_kernel::{Evidence, Identity, IdentityKind};

fn walk(seed: u64, work_items: usize) -> Walk {
    Walk::new(WalkConfig {
        seed,
        work_items,
        may_terminate: seed % 2 == 1,
    })
}

fn text(entry: &CompactEntry) -> String {
    String::from_utf8(
        entry.canonical_bytes()[..]
            .strip_suffix(b"\n")
            .unwrap()
            .to_vec(),
    )
    .unwrap()
}

/// The entry decoded from `text` with its spans; the decoding agrees with the general path.
fn decoded(text: &str) -> (CompactEntry, valp_kernel::decode::EntrySpans) {
    let (entry, spans) = decode_compact_entry_spans(text).expect("decodes straight from bytes");
    assert_eq!(spans.len(), text.len());
    let general = parse_canonical_bytes(text.as_bytes())
        .map(|value| valp_kernel::decode::decode_compact_entry(&value));
    assert_eq!(general, Some(Ok(entry.clone())));
    (entry, spans)
}

#[test]
fn every_walk_entry_hashes_its_own_bytes_to_the_digest_encoding_gives() {
    let mut reused = 0;
    for (seed, work_items) in [(1, 0), (2, 3), (3, 20), (4, 5), (5, 1), (6, 20)] {
        let mut walk = walk(seed, work_items);
        let genesis = walk.genesis().clone();
        let mut encoded = Replayer::from_genesis(&genesis).unwrap().into_live();
        let mut from_bytes = encoded.clone();
        for step in walk.by_ref().take(300) {
            let entry = step.into_compact();
            let text = text(&entry);
            let (entry, spans) = decoded(&text);
            let end = spans
                .input()
                .expect("the kernel's own text is as encoding gives it");
            assert!(text[..end].starts_with("{\"event\":{"), "{text}");
            assert!(text[end..].starts_with(",\"result\":{"), "{text}");
            let prefix = InputPrefix::of(text.as_bytes(), &spans);
            assert!(prefix.is_some());
            let expected = encoded.apply_recorded(&entry).unwrap();
            assert_eq!(
                from_bytes.apply_recorded_from(&entry, prefix).unwrap(),
                expected
            );
            assert_eq!(from_bytes.state_digest(), encoded.state_digest());
            reused += 1;
        }
    }
    assert!(reused > 900, "{reused}");
}

/// An entry of a walk with at least one piece of evidence.
fn entry_with_evidence() -> CompactEntry {
    walk(7, 4)
        .take(400)
        .map(valp_kernel::walk::WalkStep::into_compact)
        .find(|entry| !entry.evidence_set.is_empty())
        .expect("the walk authorises some event with evidence")
}

#[test]
fn evidence_out_of_canonical_order_is_not_hashed_as_it_stands() {
    let mut entry = entry_with_evidence();
    // A second piece of evidence whose canonical text sorts after the first one's.
    let extra = Evidence {
        evidence_id: Identity::new(IdentityKind::Evidence, "zz-later").unwrap(),
        content_digest: format!("sha256:{}", "f".repeat(64)),
    };
    entry.evidence_set.push(extra);
    let sorted = text(&entry);
    let (_, spans) = decoded(&sorted);
    assert!(spans.input().is_some());
    // The same two written in the other order: canonical JSON, the same entry, but encoding
    // would sort them, so the line's bytes are not the input digest's preimage.
    let first = String::from_utf8(entry.evidence_set[0].canonical_bytes()).unwrap();
    let second = String::from_utf8(entry.evidence_set[1].canonical_bytes()).unwrap();
    let (first, second) = (first.trim_end(), second.trim_end());
    let swapped = sorted.replacen(
        &format!("[{first},{second}]"),
        &format!("[{second},{first}]"),
        1,
    );
    assert_ne!(swapped, sorted);
    let (decoded_entry, spans) = decoded(&swapped);
    assert_eq!(spans.input(), None);
    assert!(InputPrefix::of(swapped.as_bytes(), &spans).is_none());
    // Without the prefix the kernel encodes the input: the same answer as for the sorted text.
    assert_eq!(decoded_entry.evidence_set.len(), 2);
    assert_eq!(
        decode_compact_entry_canonical(swapped.as_bytes()).map(|entry| entry.evidence_set.len()),
        Some(2)
    );
}

#[test]
fn an_empty_id_list_written_out_is_not_hashed_as_it_stands() {
    let entry = walk(8, 2).take(30).last().unwrap().into_compact();
    assert!(entry.event.required_work_item_ids.is_empty());
    let plain = text(&entry);
    let marker = "\"schema_version\":\"valp-kernel-event.v1\"";
    for list in ["required_work_item_ids", "superseded_work_item_ids"] {
        // `superseded_…` sorts after `schema_version`: written after it.
        let written = if list.starts_with('r') {
            plain.replacen(marker, &format!("\"{list}\":[],{marker}"), 1)
        } else {
            plain.replacen(marker, &format!("{marker},\"{list}\":[]"), 1)
        };
        assert_ne!(written, plain);
        let (decoded_entry, spans) = decoded(&written);
        assert_eq!(decoded_entry, entry, "{list}");
        assert_eq!(spans.input(), None, "{list}");
        assert!(InputPrefix::of(written.as_bytes(), &spans).is_none());
    }
}

#[test]
fn a_prefix_is_taken_only_from_the_very_text_of_the_entry() {
    let entry = walk(2, 3).take(5).last().unwrap().into_compact();
    let plain = text(&entry);
    let (_, spans) = decoded(&plain);
    assert!(InputPrefix::of(plain.as_bytes(), &spans).is_some());
    let longer = format!("{plain},");
    assert!(InputPrefix::of(longer.as_bytes(), &spans).is_none());
    assert!(InputPrefix::of(&plain.as_bytes()[..plain.len() - 1], &spans).is_none());
}

#[test]
fn a_wrong_prefix_is_caught_by_the_recorded_input_digest() {
    // The prefix of another entry (what a caller pairing spans with the wrong text would hand
    // over) gives another input digest: replay refuses the entry instead of accepting it.
    let mut walk = walk(2, 3);
    let genesis = walk.genesis().clone();
    let entries: Vec<CompactEntry> = walk
        .by_ref()
        .take(3)
        .map(valp_kernel::walk::WalkStep::into_compact)
        .collect();
    let mut live: LiveState = Replayer::from_genesis(&genesis).unwrap().into_live();
    live.apply_recorded(&entries[0]).unwrap();
    let other = text(&entries[2]);
    let (_, spans) = decoded(&other);
    let error = live
        .apply_recorded_from(&entries[1], InputPrefix::of(other.as_bytes(), &spans))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "entry 1: recorded Result does not match recomputed Result (input_digest differs)"
    );
}
