//! The fast path of a reference import: each `replay.jsonl` line is checked by comparing its
//! bytes with the canonical bytes of the entry the kernel recomputes, instead of parsing the
//! whole line (~157 KB at 1,000 entries, almost all of it the embedded history) into a JSON
//! tree and typed values.
//!
//! For each line only the Event and the EvidenceSet, its first two members (~1 KB), are parsed
//! and decoded; the store's guard judges them, the kernel applies them, and the line must then
//! be, byte for byte, `{"event":…,"evidence_set":…,"result":<the accepted Result with the next
//! State>,"schema_version":…}` + LF as [`ReplayEntry`](valp_kernel::replay::ReplayEntry)'s
//! canonical writer gives it. The history inside that State is compared against one buffer that
//! grows by one encoded entry per line, so a line costs O(its bytes) in `memcmp` plus O(State
//! body) in encoding, never a parse of the history.
//!
//! **Contract.** The fast path accepts a line only if it equals the canonical encoding of the
//! accepted Result the kernel recomputed from the line's own Event and EvidenceSet, which is
//! exactly when the strict path (parse, canonical check, typed decoding, `Replayer::apply`)
//! accepts it, and it produces the same journal lines. Anything else (not canonical, a
//! different Result or history, a refusal by the guard or the kernel, a shape it does not
//! expect) makes it answer `None` and the caller runs the strict path from the first line,
//! whose errors name the line, byte and reason as before.

use std::cell::Cell;
use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{decode_event, decode_evidence_set};
use valp_kernel::json::parse;
use valp_kernel::json::write::Fields;
use valp_kernel::live::{LiveState, Verdict};
use valp_kernel::model::event::write_evidence_set;
use valp_kernel::replay::{CompactEntry, REPLAY_ENTRY_SCHEMA};
use valp_kernel::{Event, Evidence, StateBody};

use crate::chain::encode_line;
use crate::clock::Timestamp;
use crate::error::StoreError;
use crate::machine::{Guard, TaskGuard};
use crate::reference::ReplayLines;

/// The bytes every canonical State starts with (its history is its first member).
const STATE_HISTORY_OPEN: &[u8] = b"{\"accepted_events\":[";

/// The journal's lines: `genesis` (the genesis line and its entry digest) followed by one line
/// per `replay.jsonl` line, or `None` when a line must go through the strict path. `live` is
/// the verified genesis State.
pub(super) fn import_lines(
    replay_path: &Path,
    mut live: LiveState,
    mut guard: TaskGuard,
    recorded_at: Timestamp,
    genesis: (Vec<u8>, String),
) -> Result<Option<Vec<u8>>, StoreError> {
    let mut replay = ReplayLines::open(replay_path)?;
    let mut expected = Expected::default();
    let ((mut lines, mut prior), mut seq) = (genesis, 0_u64);
    loop {
        let raw = replay.next()?;
        if raw.is_empty() {
            return Ok(Some(lines));
        }
        seq += 1;
        let Some((event, evidence_set)) = inputs(raw) else {
            return Ok(None);
        };
        if guard.verify(&live, &event, &evidence_set).is_err() {
            return Ok(None);
        }
        let Verdict::Accepted(record) = live.apply(&event, &evidence_set) else {
            return Ok(None);
        };
        if !expected.matches(raw, &live, &event, &evidence_set, &record) {
            return Ok(None);
        }
        guard.observe(seq, &event, &evidence_set);
        let compact = CompactEntry {
            event,
            evidence_set,
            result: record,
        };
        let (encoded, digest) = encode_line(seq, Some(&prior), recorded_at, &compact);
        lines.extend_from_slice(&encoded);
        prior = digest;
    }
}

/// The canonical bytes a line must have, built from the live State after the kernel applied
/// the line's inputs.
#[derive(Default)]
struct Expected {
    /// `entry[,entry…]` of the State's history so far, each entry canonical.
    history: Vec<u8>,
    /// The line without the history: everything before and after it.
    around: Vec<u8>,
}

impl Expected {
    /// Adds the newest history entry of `live` and compares `raw` with the expected line.
    fn matches(
        &mut self,
        raw: &[u8],
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
        record: &valp_kernel::live::AcceptedRecord,
    ) -> bool {
        let Some(newest) = live.history().last() else {
            return false;
        };
        if !self.history.is_empty() {
            self.history.push(b',');
        }
        newest.write_canonical(&mut self.history);
        self.around.clear();
        let state = SplitState {
            body: live.body(),
            history_at: Cell::new(None),
        };
        let result = Verdict::Accepted(record.clone()).into_outcome(&state);
        let mut fields = Fields::begin(&mut self.around);
        fields.canonical("event", event);
        write_evidence_set(fields.key("evidence_set"), evidence_set);
        fields.canonical("result", &result);
        fields.str("schema_version", REPLAY_ENTRY_SCHEMA);
        fields.end();
        self.around.push(b'\n');
        let Some(at) = state.history_at.get() else {
            return false;
        };
        let (before, after) = self.around.split_at(at);
        raw.len() == before.len() + self.history.len() + after.len()
            && raw.starts_with(before)
            && raw[at..].starts_with(&self.history)
            && raw.ends_with(after)
    }
}

/// A State written without its history, remembering where the history's entries go.
struct SplitState<'a> {
    body: &'a StateBody,
    history_at: Cell<Option<usize>>,
}

impl Canonical for &SplitState<'_> {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(STATE_HISTORY_OPEN);
        self.history_at.set(Some(out.len()));
        out.push(b']');
        // The body's own canonical form is `{members}`; in the State its members follow the
        // history (`accepted_events` sorts first).
        let start = out.len();
        self.body.write_canonical(out);
        out[start] = b',';
    }
}

/// The Event and EvidenceSet of a line that starts as a canonical ReplayEntry does, decoded
/// from their own bytes; `None` for anything else.
fn inputs(raw: &[u8]) -> Option<(Event, Vec<Evidence>)> {
    let event_start = b"{\"event\":".len();
    if !raw.starts_with(b"{\"event\":") {
        return None;
    }
    let event_end = value_end(raw, event_start)?;
    let evidence_key = b",\"evidence_set\":";
    if !raw[event_end..].starts_with(evidence_key) {
        return None;
    }
    let evidence_start = event_end + evidence_key.len();
    let evidence_end = value_end(raw, evidence_start)?;
    let text = |start: usize, end: usize| std::str::from_utf8(raw.get(start..end)?).ok();
    let event = decode_event(&parse(text(event_start, event_end)?).ok()?).ok()?;
    let evidence_set =
        decode_evidence_set(&parse(text(evidence_start, evidence_end)?).ok()?).ok()?;
    Some((event, evidence_set))
}

/// The end (exclusive) of the JSON object or array that starts at `start`: brackets counted
/// outside strings, escapes skipped inside them. `None` if there is none or it never closes.
fn value_end(bytes: &[u8], start: usize) -> Option<usize> {
    if !matches!(bytes.get(start), Some(b'{' | b'[')) {
        return None;
    }
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut index = start;
    while let Some(&byte) = bytes.get(index) {
        if in_string {
            match byte {
                b'\\' => index += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match byte {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(index + 1);
                    }
                }
                _ => {}
            }
        }
        index += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::path::PathBuf;
    use std::sync::Arc;

    use super::*;
    use crate::io::OsStorage;
    use crate::reference::{REPLAY_FILE, export, import, kernel_dir, strict_lines};
    use crate::root::ControlRoot;
    use valp_kernel::replay::Replayer;
    use valp_kernel::walk::{Walk, WalkConfig};

    /// A task of `entries` walk steps over `work_items` items exported in the reference layout,
    /// and a fresh root of the same installation to import it into.
    fn exported(temp: &Path, entries: usize, work_items: usize) -> (ControlRoot, PathBuf) {
        let mut walk = Walk::new(WalkConfig {
            seed: 11,
            work_items,
            may_terminate: false,
        });
        let installation = walk.genesis().state.body.installation_id.clone();
        let root = |name: &str| {
            ControlRoot::init(&temp.join(name), installation.clone(), Arc::new(OsStorage)).unwrap()
        };
        let mut journal = root("source").create_task(walk.genesis()).unwrap();
        let steps: Vec<_> = walk.by_ref().take(entries).collect();
        journal
            .append_batch(
                steps
                    .iter()
                    .map(|step| (&step.event, step.evidence_set.as_slice())),
            )
            .unwrap();
        let out = temp.join("export");
        export(&journal, &out).unwrap();
        (root("target"), out)
    }

    /// The fast path's answer and the strict path's lines for the export in `out`.
    fn both_paths(
        root: &ControlRoot,
        out: &Path,
    ) -> (Option<Vec<u8>>, Result<Vec<u8>, StoreError>) {
        let dir = kernel_dir(out);
        let genesis_bytes = std::fs::read(dir.join(crate::reference::GENESIS_FILE)).unwrap();
        let value = valp_kernel::canonical::decode_canonical(&genesis_bytes).unwrap();
        let genesis = valp_kernel::decode::decode_genesis_root(&value).unwrap();
        let replayer = Replayer::from_genesis(&genesis).unwrap();
        let at = Timestamp::from_millis(1_796_042_096_789);
        let genesis_line = encode_line(0, None, at, &genesis);
        let replay = dir.join(REPLAY_FILE);
        let fast = import_lines(
            &replay,
            replayer.live().clone(),
            root.task_guard(),
            at,
            genesis_line.clone(),
        )
        .unwrap();
        let strict = strict_lines(root, &replay, replayer, at, genesis_line);
        (fast, strict)
    }

    #[test]
    fn an_export_takes_the_fast_path_and_gives_the_strict_paths_lines() {
        for work_items in [0, 6] {
            let temp = tempfile::tempdir().unwrap();
            let (root, out) = exported(temp.path(), 40, work_items);
            let (fast, strict) = both_paths(&root, &out);
            assert_eq!(
                fast.expect("every line of an export is taken by the fast path"),
                strict.unwrap(),
                "{work_items} work items"
            );
        }
    }

    /// Imports `out` after `tamper` changed `replay.jsonl`; the error in words.
    fn refusal(tamper: impl FnOnce(String) -> String) -> String {
        let temp = tempfile::tempdir().unwrap();
        let (root, out) = exported(temp.path(), 8, 3);
        let replay = kernel_dir(&out).join(REPLAY_FILE);
        let text = std::fs::read_to_string(&replay).unwrap();
        let tampered = tamper(text.clone());
        assert_ne!(tampered, text, "the tamper changed nothing");
        std::fs::write(&replay, tampered).unwrap();
        let (fast, strict) = both_paths(&root, &out);
        assert_eq!(
            fast, None,
            "the fast path leaves a bad line to the strict path"
        );
        let error = import(&root, &out).expect_err("a tampered export is refused");
        assert_eq!(error.code(), crate::error::StoreCode::Corrupt);
        assert_eq!(
            error.to_string(),
            strict.expect_err("the strict path refuses it").to_string()
        );
        error
            .to_string()
            .replace(&replay.display().to_string(), "replay.jsonl")
    }

    /// `text` with line `line` (1-based) changed by `change`.
    fn on_line(text: &str, line: usize, change: impl FnOnce(&str) -> String) -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines[line - 1] = change(&lines[line - 1]);
        lines
            .iter()
            .flat_map(|line| [line.as_str(), "\n"])
            .collect()
    }

    #[test]
    fn a_tampered_line_is_refused_by_the_strict_path_with_its_exact_error() {
        type Tamper = fn(&str) -> String;
        let cases: [(&str, Tamper); 6] = [
            ("whitespace", |line| line.replacen('{', "{ ", 1)),
            ("body", |line| {
                line.replacen("\"revision\":3", "\"revision\":4", 1)
            }),
            ("history", |line| {
                let history = line.find("\"accepted_events\":[").unwrap();
                let at = history + line[history..].find("\"result_digest\":\"sha").unwrap() + 25;
                let flipped = if &line[at..=at] == "0" { "1" } else { "0" };
                format!("{}{flipped}{}", &line[..at], &line[at + 1..])
            }),
            ("event", |line| {
                line.replacen("\"expected_revision\":2", "\"expected_revision\":1", 1)
            }),
            ("truncated", |line| line[..line.len() / 2].to_owned()),
            ("not json", |_| "[]".to_owned()),
        ];
        let mut found = Vec::new();
        for (name, change) in cases {
            found.push(format!(
                "{name}: {}",
                refusal(|text| on_line(&text, 3, change))
            ));
        }
        let at = "VALP-E-KERNEL-STORE-CORRUPT: replay.jsonl:3: byte 4266:";
        assert_eq!(
            found,
            [
                format!("whitespace: {at} not canonical: first difference at byte 1"),
                format!(
                    "body: {at} entry 2: recorded Result does not match recomputed Result \
                     (state differs)"
                ),
                format!(
                    "history: {at} entry 2: recorded Result does not match recomputed Result \
                     (state.accepted_events differs)"
                ),
                format!(
                    "event: {at} entry 2: its inputs do not produce an accepted Result \
                     (VALP-E-STATE-CONFLICT)"
                ),
                format!("truncated: {at} invalid JSON: unexpected end of input at byte 1266"),
                format!("not json: {at} entry: expected object, found array"),
            ]
        );
    }

    #[test]
    fn a_json_value_ends_after_its_closing_bracket_whatever_its_strings_hold() {
        let text = br#"{"a":"}\"]\\","b":[1,{"c":"["}]},"rest""#;
        assert_eq!(value_end(text, 0), Some(text.len() - 7));
        assert_eq!(value_end(b"[[],{}]x", 0), Some(7));
        assert_eq!(value_end(br#"{"a":"#, 0), None, "never closes");
        assert_eq!(value_end(br#""a""#, 0), None, "not an object or array");
        assert_eq!(value_end(b"", 0), None);
    }

    #[test]
    fn a_split_state_is_the_state_without_its_history() {
        let mut walk = Walk::new(WalkConfig {
            seed: 7,
            work_items: 3,
            may_terminate: false,
        });
        let mut live = LiveState::new(walk.genesis().state.clone());
        for step in walk.by_ref().take(5) {
            assert!(matches!(
                live.apply(&step.event, &step.evidence_set),
                Verdict::Accepted(_)
            ));
        }
        let state = live.to_state();
        let split = SplitState {
            body: live.body(),
            history_at: Cell::new(None),
        };
        let mut without = Vec::new();
        (&split).write_canonical(&mut without);
        let at = split.history_at.get().unwrap();
        let mut history = Vec::new();
        for (index, entry) in state.accepted_events.iter().enumerate() {
            if index > 0 {
                history.push(b',');
            }
            entry.write_canonical(&mut history);
        }
        without.splice(at..at, history);
        let mut whole = Vec::new();
        state.write_canonical(&mut whole);
        assert_eq!(String::from_utf8(without), String::from_utf8(whole));
    }
}
