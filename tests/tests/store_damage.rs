//! Damaged journals: torn tails of every kind (a partial last line cut anywhere, partial JSON,
//! runs of NUL bytes) are reported by readers without touching the file, and repaired by
//! writers, which quarantine exactly the cut bytes, after which appending works and the journal
//! verifies again; a flipped bit anywhere before the last line refuses the journal with
//! `VALP-E-KERNEL-STORE-CORRUPT` naming the file, line and byte, and rewrites nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ops::Range;
use std::path::PathBuf;

use valp_store::{Access, ControlRoot, StoreError, Warning};
use valp_tests::store::{
    History, Rng, assert_repaired, clear_quarantine, corrupt_location, create_journal, init_root,
    journal_path, line_ranges, open_task, quarantine_files, write_anchored,
};

/// Entries in the journal under test (its last line is entry `ENTRIES`).
const ENTRIES: usize = 8;
const WORK_ITEMS: usize = 4;

/// A journal of `ENTRIES` entries, plus the bytes of the line that would follow them.
struct Fixture {
    _temp: tempfile::TempDir,
    root: ControlRoot,
    history: History,
    path: PathBuf,
    /// The journal with one entry more than the one under test.
    full: Vec<u8>,
    /// The lines of `full` (genesis first).
    lines: Vec<Range<usize>>,
}

impl Fixture {
    fn new(seed: u64, entries: usize) -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = init_root(temp.path());
        let mut history = History::new(seed, WORK_ITEMS);
        drop(create_journal(&root, &mut history, entries + 1));
        let path = journal_path(&root);
        let full = std::fs::read(&path).unwrap();
        let lines = line_ranges(&full);
        assert_eq!(lines.len(), entries + 2);
        assert_eq!(lines[entries + 1].end, full.len());
        Self {
            _temp: temp,
            root,
            history,
            path,
            full,
            lines,
        }
    }

    /// The journal holding the first `entries` entries.
    fn journal(&self, entries: usize) -> &[u8] {
        &self.full[..self.lines[entries].end]
    }

    /// The last line of the journal under test (entry `ENTRIES`, with its LF).
    fn last_line(&self) -> &[u8] {
        &self.full[self.lines[ENTRIES].clone()]
    }

    /// Writes the first `entries` entries followed by `torn`, then checks that a reader reports
    /// the torn bytes and changes nothing, that a writer quarantines exactly them and cuts them
    /// off, and that the next append lands where it should and verifies.
    fn check_torn_tail(&mut self, entries: usize, torn: &[u8], what: &str) {
        clear_quarantine(&self.root);
        let good = self.journal(entries).to_vec();
        let damaged = [good.as_slice(), torn].concat();
        write_anchored(&self.path, &good, torn);
        let offset = good.len() as u64;
        let len = torn.len() as u64;

        let reader = open_task(&self.root, Access::ReadOnly)
            .unwrap_or_else(|error| panic!("{what}: a reader refuses the journal: {error}"));
        assert_eq!(
            reader.warnings(),
            [Warning::IncompleteTail { offset, len }],
            "{what}"
        );
        assert_eq!(reader.len(), entries as u64, "{what}");
        assert_eq!(reader.live().to_state(), self.history.state_after(entries));
        drop(reader);
        assert!(
            std::fs::read(&self.path).unwrap() == damaged,
            "{what}: a reader changed the file"
        );
        assert_eq!(
            quarantine_files(&self.root),
            Vec::<PathBuf>::new(),
            "{what}"
        );

        let mut writer = open_task(&self.root, Access::Write)
            .unwrap_or_else(|error| panic!("{what}: a writer refuses the journal: {error}"));
        assert_repaired(&self.root, writer.warnings(), offset, torn, what);
        assert!(
            std::fs::read(&self.path).unwrap() == good,
            "{what}: the journal ends at its last good line"
        );
        assert_eq!(writer.len(), entries as u64, "{what}");

        let step = self.history.step(entries).clone();
        let appended = writer.append(&step.event, &step.evidence_set).unwrap();
        assert!(
            matches!(appended, valp_store::Appended::Accepted { seq, .. } if seq == entries as u64 + 1),
            "{what}: {appended:?}"
        );
        drop(writer);
        let again = open_task(&self.root, Access::ReadOnly).unwrap();
        assert_eq!(again.warnings(), [], "{what}");
        assert_eq!(again.len(), entries as u64 + 1, "{what}");
        assert_eq!(
            again.live().to_state(),
            self.history.state_after(entries + 1)
        );
        assert!(
            std::fs::read(&self.path).unwrap() == self.journal(entries + 1),
            "{what}: the appended line is the one an undamaged journal gets"
        );
    }
}

#[test]
fn a_last_line_cut_anywhere_is_reported_then_repaired() {
    let mut fixture = Fixture::new(11, ENTRIES);
    let line_len = fixture.last_line().len();
    let mut rng = Rng::new(0x70A2);
    // Every 7th cut, the first and last possible ones (the whole line but its LF), and some
    // seeded random ones.
    let mut cuts: Vec<usize> = (1..line_len).step_by(7).collect();
    cuts.extend([1, 2, line_len - 2, line_len - 1]);
    cuts.extend((0..20).map(|_| 1 + rng.below(line_len - 1)));
    cuts.sort_unstable();
    cuts.dedup();
    assert!(
        cuts.len() > 50,
        "{} cuts of a {line_len}-byte line",
        cuts.len()
    );
    for cut in cuts {
        let torn = fixture.last_line()[..cut].to_vec();
        fixture.check_torn_tail(ENTRIES - 1, &torn, &format!("cut at {cut} of {line_len}"));
    }
}

#[test]
fn partial_json_tails_are_reported_then_repaired() {
    let mut fixture = Fixture::new(12, ENTRIES);
    let line = fixture.last_line().to_vec();
    // The last line cut just after each of its JSON separators: a well-formed JSON prefix.
    let boundaries: Vec<usize> = line
        .iter()
        .enumerate()
        .filter(|(_, byte)| matches!(byte, b',' | b':' | b'{' | b'['))
        .map(|(index, _)| index + 1)
        .collect();
    assert!(boundaries.len() > 20);
    for cut in boundaries {
        fixture.check_torn_tail(
            ENTRIES - 1,
            &line[..cut],
            &format!("JSON cut after byte {cut}"),
        );
    }
    // JSON fragments (and a whole JSON object) without LF after the last good line.
    for fragment in [
        r#"{"entry":{"event":"#,
        r#"{"entry_digest":"sha256:00"#,
        r#"{"entry":null,"seq":9}"#,
        "{}",
        "[",
        "\"",
    ] {
        fixture.check_torn_tail(ENTRIES, fragment.as_bytes(), fragment);
    }
}

#[test]
fn nul_runs_without_lf_are_reported_then_repaired() {
    let mut fixture = Fixture::new(13, ENTRIES);
    let line_len = fixture.last_line().len();
    // In place of the last line (what a crash leaves when the file grew but its data never
    // reached the disk), and after it.
    fixture.check_torn_tail(
        ENTRIES - 1,
        &vec![0; line_len],
        "NULs replacing the last line",
    );
    for run in [1, 2, 511, 4096, 5000] {
        fixture.check_torn_tail(
            ENTRIES,
            &vec![0; run],
            &format!("{run} NULs after the last line"),
        );
    }
}

#[test]
fn nul_runs_with_lf_are_reported_then_repaired() {
    let mut fixture = Fixture::new(14, ENTRIES);
    let line_len = fixture.last_line().len();
    let mut in_place = vec![0; line_len - 1];
    in_place.push(b'\n');
    fixture.check_torn_tail(
        ENTRIES - 1,
        &in_place,
        "NULs and LF replacing the last line",
    );
    for run in [1, 511, 4096] {
        let mut torn = vec![0; run];
        torn.push(b'\n');
        fixture.check_torn_tail(
            ENTRIES,
            &torn,
            &format!("{run} NULs and LF after the last line"),
        );
    }
}

#[test]
fn a_flipped_bit_before_the_last_line_is_refused_where_it_is() {
    const FLIPS: usize = 1_000;
    let fixture = Fixture::new(15, 16);
    let original = fixture.full.clone();
    let lines = &fixture.lines;
    let last = lines.last().unwrap().start;
    let mut rng = Rng::new(0xB17F_11B5);
    for flip in 0..FLIPS {
        let position = rng.below(last);
        let bit = rng.below(8);
        let mut damaged = original.clone();
        damaged[position] ^= 1 << bit;
        std::fs::write(&fixture.path, &damaged).unwrap();
        let index = lines
            .iter()
            .position(|line| line.contains(&position))
            .unwrap();
        let what = format!(
            "flip {flip}: bit {bit} of byte {position} (line {})",
            index + 1
        );
        for access in [Access::ReadOnly, Access::Write] {
            let (path, line, byte) = corrupt_location(open_task(&fixture.root, access));
            assert_eq!(path, fixture.path, "{what}, {access:?}");
            assert_eq!(line, index as u64 + 1, "{what}, {access:?}");
            let start = lines[index].start as u64;
            assert!(
                (start..=position as u64).contains(&byte),
                "{what}, {access:?}: byte {byte} is not in {start}..={position}"
            );
        }
        assert!(
            std::fs::read(&fixture.path).unwrap() == damaged,
            "{what}: the damaged journal was rewritten"
        );
        std::fs::write(&fixture.path, &original).unwrap();
        let restored = open_task(&fixture.root, Access::ReadOnly)
            .unwrap_or_else(|error| panic!("{what}: the restored journal: {error}"));
        assert_eq!(restored.len(), 17, "{what}");
        assert_eq!(restored.warnings(), [], "{what}");
    }
    assert_eq!(quarantine_files(&fixture.root), Vec::<PathBuf>::new());
}

#[test]
fn a_forged_line_appended_under_a_writer_poisons_its_handle() {
    let mut fixture = Fixture::new(21, ENTRIES);
    write_anchored(&fixture.path, fixture.journal(ENTRIES), b"");
    let mut writer = open_task(&fixture.root, Access::Write).unwrap();

    // Another process appends a line whose chain is intact but whose Result was forged.
    let step = fixture.history.step(ENTRIES).clone();
    let mut forged = step.record.clone();
    forged.result_digest = format!("sha256:{}", "0".repeat(64));
    let entry = <valp_kernel::live::LiveState as valp_store::machine::Machine>::entry(
        &step.event,
        &step.evidence_set,
        forged,
    );
    let last = &fixture.full[fixture.lines[ENTRIES].clone()];
    let prior: serde_json::Value = serde_json::from_slice(last).unwrap();
    let (line, _) = valp_store::chain::encode_line(
        ENTRIES as u64 + 1,
        Some(prior["entry_digest"].as_str().unwrap()),
        valp_store::clock::Timestamp::from_millis(1_796_042_096_789),
        &entry,
    );
    let mut damaged = fixture.journal(ENTRIES).to_vec();
    damaged.extend_from_slice(&line);
    std::fs::write(&fixture.path, &damaged).unwrap();

    let refused = writer.refresh().unwrap_err();
    assert_eq!(
        refused.code().as_str(),
        "VALP-E-KERNEL-STORE-CORRUPT",
        "{refused}"
    );
    // The handle may hold a half-advanced State: it never appends again.
    let appended = writer.append(&step.event, &step.evidence_set).unwrap_err();
    assert!(
        matches!(&appended, StoreError::Poisoned { path, .. } if path == &fixture.path),
        "{appended}"
    );
    assert!(
        std::fs::read(&fixture.path).unwrap() == damaged,
        "nothing was written"
    );
}
