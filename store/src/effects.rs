//! A task's effect ledger, `tasks/<task>/effect-ledger.jsonl`: how each `adapter_cancel:`
//! obligation the task journal raised was carried out, one record per obligation, append-only.
//!
//! **Format.** A [`Ledger`] (the file, head, lock, torn-tail and append rules every ledger
//! shares): [`chain`](crate::chain) lines (the task journal's line format, each with its
//! `recorded_at`; records converted from layout 1 keep none), line `N` holding the `N + 1`-th record as its `entry`. The
//! record is `valp-kernel-effect-record.v1` byte for byte as layout 1 stored it alone on a line
//! of `effects.jsonl` (obligation, effect id, status `fulfilled` with a proof reference and
//! digest or `blocked` with a reason, its own `ledger_revision`/`prior_record_digest`/
//! `record_digest` chain), so converting a layout-1 ledger ([`convert_layout1`]) keeps every
//! record and its digest unchanged. Both chains are checked; the line's chain is the one the
//! store's torn-tail rule, quarantine and fault injection work on. There is no genesis line:
//! a missing file is the empty ledger, and each record names its task inside its obligation.
//!
//! **Head anchor.** Like a task journal, the ledger has a head anchor, `effect-ledger.head`
//! ([`head`](crate::head)): the seq, `entry_digest` and end of the last line known durable.
//! Open reads it first and checks it with [`Anchor`](crate::head::Anchor) exactly as a journal does: a ledger with
//! lines and no head ([`StoreError::HeadMissing`]), shorter than its head, or with another line
//! at the anchored seq ([`StoreError::HeadMismatch`]) is refused, so a ledger cut at a line
//! boundary or replaced by an older copy cannot make reconciliation carry a cancel out a second
//! time; bytes at or before the anchored line are never a torn tail. A missing or empty ledger
//! has no line to anchor; its head may name only the first line (the one window a crash can
//! leave: the first line's head is written before the file, see **Append**), and a head
//! naming a later one refuses it (the ledger was cut or removed).
//!
//! **Open = verify.** Every line is verified ([`ChainReader`](crate::chain::ChainReader)) and every record decoded
//! strictly (exact members, types, the status rules of `schemas/console/effect-record.schema.json`,
//! both chains, the effect id, at most one record per obligation); anything else refuses the
//! ledger with `VALP-E-KERNEL-STORE-CORRUPT`, file, line and byte, and nothing is rewritten. A
//! torn tail (bytes without a final LF, or NUL residue: the chain reader's rule, the same as
//! for task journals) is reported by readers and, under the lock, copied to `quarantine/` and
//! cut off by a writer. A complete line that fails its digest is damage, never quarantined.
//!
//! **Append** ([`EffectLedger::append`]): take the ledger's lock (`effect-ledger.lock`), read
//! and verify what other writers appended, and if the obligation has a record already answer
//! it ([`EffectAppended::AlreadyRecorded`]) without writing; else write one line and
//! `sync_data` it, then rewrite the head after it (a head that cannot be rewritten lags, with
//! [`Warning::HeadNotUpdated`], until the next append). The first line is created as a journal
//! is: its head durably first, then the file holding it atomically (with a folder sync). A
//! record is therefore
//! never duplicated, whatever the number of concurrent writers. A write that failed after it
//! began poisons the handle (`VALP-E-DURABILITY-UNKNOWN-OR-COMMITTED`) until it is reopened, as
//! for journals.
//!
//! **Layout 1.** A folder holding the layout-1 `effects.jsonl` and no ledger is refused until
//! [`convert_layout1`] (called by `valp upgrade`) has converted it: read as empty, it would have
//! every obligation carried out again.
//!
//! Which obligations exist is the task journal's business: [`obligations`] reads them from it
//! (chain-verified, not replayed), and [`verify_against`] checks that every record answers one.
//! Carrying an obligation out (asking an adapter) is the console's (`runtime::effects`).

mod layout1;
mod record;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use valp_kernel::json::Value;
use valp_kernel::reduce::ADAPTER_CANCEL_PREFIX;
use valp_kernel::replay::CompactEntry;

use crate::clock::Clock;
use crate::error::StoreError;
use crate::head::Head;
use crate::io::Storage;
use crate::journal::{Access, JOURNAL_FILE, Recorded, Warning};
use crate::ledger::{Decision, Ledger, LedgerRecord, Records};
use crate::root::ControlRoot;

pub use layout1::{Conversion, convert_layout1};
pub use record::{EFFECT_SCHEMA, EffectRecord, Outcome, effect_id, empty_ledger_digest};

/// The effect ledger in a task folder (layout 2 on).
pub const EFFECT_LEDGER_FILE: &str = "effect-ledger.jsonl";
/// Its writers' lock file (never renamed or deleted).
pub const EFFECT_LEDGER_LOCK: &str = "effect-ledger.lock";
/// The layout-1 effect ledger: one bare record per line, written outside the store.
pub const LAYOUT1_EFFECTS_FILE: &str = "effects.jsonl";

/// What [`EffectLedger::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EffectAppended {
    /// The record is durable.
    Recorded(EffectRecord),
    /// The obligation had a record already (perhaps another writer's); nothing was written.
    AlreadyRecorded(EffectRecord),
}

impl LedgerRecord for EffectRecord {
    const NOUN: &'static str = "effect record";
    const KEY: &'static str = "obligation";

    fn decode(value: &Value) -> Result<Self, String> {
        Self::decode(value)
    }

    fn key(&self) -> &str {
        &self.obligation
    }

    fn check(&self, earlier: &Records<Self>) -> Result<(), String> {
        Self::check(self, earlier.all().last())
    }
}

/// An open, verified effect ledger (a [`Ledger`] of [`EffectRecord`]s).
#[derive(Debug)]
pub struct EffectLedger {
    dir: std::path::PathBuf,
    ledger: Ledger<EffectRecord>,
}

impl EffectLedger {
    /// Opens and verifies the effect ledger of `task_id` in `root` (missing = empty), stamping
    /// what it appends with the root's clock.
    pub fn of_task(root: &ControlRoot, task_id: &str, access: Access) -> Result<Self, StoreError> {
        let mut ledger = Self::open(
            &root.layout().task_dir(task_id),
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            access,
        )?;
        ledger.set_clock(Arc::clone(root.clock()));
        Ok(ledger)
    }

    /// Opens and verifies the effect ledger in the task folder `dir` (missing = empty). A
    /// writer repairs a torn tail under the lock, copying it to `quarantine`; a reader reports
    /// it. A folder holding a layout-1 `effects.jsonl` and no effect ledger is refused: its
    /// records are unknown to this ledger, and an empty one would have every obligation
    /// carried out again.
    pub fn open(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        let old = dir.join(LAYOUT1_EFFECTS_FILE);
        if old.exists() && !dir.join(EFFECT_LEDGER_FILE).exists() {
            return Err(StoreError::Invalid(format!(
                "{}: a layout-1 effect ledger that was not converted (`valp upgrade` converts \
                 it); valp neither reads it nor records effects beside it",
                old.display()
            )));
        }
        Ok(Self {
            dir: dir.to_owned(),
            ledger: Ledger::open(
                &dir.join(EFFECT_LEDGER_FILE),
                &dir.join(EFFECT_LEDGER_LOCK),
                quarantine,
                storage,
                access,
            )?,
        })
    }

    /// Reads and verifies the records appended since the last read. Returns how many.
    pub fn refresh(&mut self) -> Result<usize, StoreError> {
        self.ledger.refresh()
    }

    /// The verified records, in ledger order.
    pub fn records(&self) -> &[EffectRecord] {
        self.ledger.records().all()
    }

    /// Record `index` with the time the store wrote it.
    pub fn recorded(&self, index: usize) -> Option<Recorded<&EffectRecord>> {
        self.ledger.records().recorded(index)
    }

    /// The record of `obligation`, if it has one.
    pub fn record_of(&self, obligation: &str) -> Option<&EffectRecord> {
        self.ledger
            .records()
            .get(obligation)
            .map(|(_, record)| record)
    }

    /// Warnings raised while opening or following (a torn tail reported or repaired).
    pub fn warnings(&self) -> &[Warning] {
        self.ledger.warnings()
    }

    /// The ledger file.
    pub fn path(&self) -> &Path {
        self.ledger.path()
    }

    /// The head anchor as read on open or last written by this handle (`None`: the ledger
    /// has no line yet).
    pub fn head(&self) -> Option<&Head> {
        self.ledger.head()
    }

    /// Byte length of the verified part of the file.
    pub fn verified_bytes(&self) -> u64 {
        self.ledger.verified_bytes()
    }

    /// How long an append waits for the lock.
    pub fn set_lock_timeout(&mut self, timeout: Duration) {
        self.ledger.set_lock_timeout(timeout);
    }

    /// The clock that stamps the lines this handle appends.
    pub fn set_clock(&mut self, clock: Arc<dyn Clock>) {
        self.ledger.set_clock(clock);
    }

    /// Records how `obligation` ended, once: see the module documentation.
    pub fn append(
        &mut self,
        obligation: &str,
        outcome: &Outcome,
    ) -> Result<EffectAppended, StoreError> {
        let decided = self.ledger.append(|records| {
            Ok(match records.get(obligation) {
                Some((_, record)) => Decision::Existing(record.clone()),
                None => {
                    Decision::Write(EffectRecord::new(obligation, outcome, records.all().last()))
                }
            })
        })?;
        Ok(match decided {
            Decision::Write(record) => EffectAppended::Recorded(record),
            Decision::Existing(record) => EffectAppended::AlreadyRecorded(record),
        })
    }
}

/// Calls `each` with every entry (revision 1 on) of the task journal in `task_dir`, in order.
/// The lines are chain-verified and decoded, not replayed (opening the journal replays it).
pub fn journal_entries(
    task_dir: &Path,
    mut each: impl FnMut(CompactEntry),
) -> Result<(), StoreError> {
    crate::journal::read_entries::<valp_kernel::live::LiveState>(
        &task_dir.join(JOURNAL_FILE),
        |recorded| each(recorded.entry),
    )
}

/// Every `adapter_cancel:` obligation the task journal in `task_dir` raised, in order.
pub fn obligations(task_dir: &Path) -> Result<Vec<String>, StoreError> {
    let mut found = Vec::new();
    journal_entries(task_dir, |entry| {
        found.extend(
            entry
                .result
                .obligations
                .into_iter()
                .filter(|obligation| obligation.starts_with(ADAPTER_CANCEL_PREFIX)),
        );
    })?;
    Ok(found)
}

/// Checks that every record of `ledger` answers an obligation of the task journal in its
/// folder: the first record that answers none is refused with its line and byte.
pub fn verify_against(ledger: &EffectLedger) -> Result<(), StoreError> {
    let raised: std::collections::BTreeSet<String> =
        obligations(&ledger.dir)?.into_iter().collect();
    match ledger
        .records()
        .iter()
        .position(|record| !raised.contains(&record.obligation))
    {
        None => Ok(()),
        Some(index) => Err(StoreError::Corrupt {
            path: ledger.path().to_owned(),
            line: index as u64 + 1,
            byte: ledger.ledger.records().start(index).unwrap_or(0),
            reason: "the record answers no obligation of the task journal".to_owned(),
        }),
    }
}
