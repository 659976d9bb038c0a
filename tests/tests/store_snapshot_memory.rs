//! What an open from a snapshot holds (issue 20: the console's read-only task handles at 10^5
//! entries and beyond): a reader keeps the lean index's keys only, 16 bytes per entry, and
//! reads the digests of an event seen again back from the journal; a writer, which writes the
//! next snapshot, keeps the digests too (80 bytes per entry).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use valp_store::Access;
use valp_tests::store::{History, create_journal, init_root, open_task};

const ENTRIES: usize = 3_000;

#[test]
fn a_reader_opened_from_a_snapshot_holds_16_bytes_per_entry_a_writer_80() {
    let temp = tempfile::tempdir().unwrap();
    let root = init_root(temp.path());
    let mut history = History::new(20, 4);
    let mut journal = create_journal(&root, &mut history, ENTRIES);
    journal.write_snapshot().unwrap().unwrap();
    drop(journal);

    let reader = open_task(&root, Access::ReadOnly).unwrap();
    assert_eq!(reader.len(), ENTRIES as u64);
    assert!(reader.warnings().is_empty(), "{:?}", reader.warnings());
    assert_eq!(
        reader.live().lean_index_bytes(),
        Some(16 * ENTRIES),
        "a reader holds the keys (12 bytes and a 4-byte position per entry), no digests"
    );
    drop(reader);
    let writer = open_task(&root, Access::Write).unwrap();
    assert_eq!(writer.len(), ENTRIES as u64);
    assert_eq!(
        writer.live().lean_index_bytes(),
        Some(16 * ENTRIES + 64 * ENTRIES),
        "a writer holds the input and result digests of every entry too"
    );
}
