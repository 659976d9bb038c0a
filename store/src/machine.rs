//! What a journal needs from the kernel: how to read its lines, replay them, and propose new
//! events. A task journal replays the task kernel ([`LiveState`]); the installation ledger the
//! authority lane ([`InstallationLive`]). Both use the same file format, lock, verification and
//! recovery.
//!
//! A machine's [`Guard`] holds the store's own rules for its journals, checked before an
//! accepted proposal is written and, where they judge history, again for every recorded entry
//! on open: for task journals the epoch fence and the Done gate ([`TaskGuard`]), nothing for the
//! ledger ([`NoGuard`]).

use std::path::Path;

use valp_kernel::canonical::Canonical;
use valp_kernel::decode::{
    DecodeError, EntrySpans, InputPrefix, decode_compact_entry, decode_compact_entry_spans,
    decode_genesis_root,
};
use valp_kernel::installation::{
    InstallationEntry, InstallationEvent, InstallationGenesis, InstallationLive,
    decode_installation_entry, decode_installation_genesis,
};
use valp_kernel::json::Value;
use valp_kernel::live::{AcceptedRecord, DigestChain, DigestCheck, LiveState, Verdict};
use valp_kernel::replay::{CompactEntry, GenesisRoot, ReplayError, Replayer};
use valp_kernel::{Event, Evidence, Identity, Int};

use crate::done::DoneGuard;
use crate::error::StoreError;
use crate::fence::EpochFence;
use crate::journal::Journal;

/// A kernel state machine a journal can replay and extend.
pub trait Machine: Sized + std::fmt::Debug {
    /// Line 0's payload.
    type Genesis: Canonical + Clone + std::fmt::Debug;
    /// Line N's payload (decoded on the thread that reads a journal ahead, see
    /// [`Journal`](crate::Journal)'s follow).
    type Entry: Canonical + Send;
    /// What is proposed.
    type Event: Canonical + Clone + std::fmt::Debug;
    /// The store's rules for this machine's journals, beyond the kernel.
    type Guard: Guard<Self> + Default;

    /// Decodes line 0's payload.
    fn decode_genesis(value: &Value) -> Result<Self::Genesis, DecodeError>;
    /// Decodes line N's payload.
    fn decode_entry(value: &Value) -> Result<Self::Entry, DecodeError>;
    /// Decodes line N's payload straight from the text that starts with its canonical form,
    /// returning it and where things are in that text (how many bytes it took, where its input
    /// digest's preimage starts), in the pass that checks the line; `None` for anything
    /// [`Machine::decode_entry`] must judge (which then names the error). By default nothing is
    /// decoded this way.
    fn decode_entry_prefix(text: &str) -> Option<(Self::Entry, EntrySpans)> {
        let _ = text;
        None
    }
    /// Starts from a genesis, refusing anything but the legal empty state.
    fn start(genesis: &Self::Genesis) -> Result<Self, ReplayError>;
    /// Applies a recorded entry with replay semantics; `prefix` is the start of its input
    /// digest's preimage as the line holds it, when it was decoded from the line's text.
    fn apply_recorded(
        &mut self,
        entry: &Self::Entry,
        prefix: Option<InputPrefix<'_>>,
    ) -> Result<AcceptedRecord, ReplayError>;
    /// A chain to check, in entry order, the digests that
    /// [`Machine::apply_recorded_deferring`] leaves for later (task journals: the result and
    /// State digests, the two passes over the State body); `None` (the default): this machine
    /// checks its digests as it applies, and `apply_recorded_deferring` is not called.
    fn digest_chain(&self) -> Option<DigestChain> {
        None
    }
    /// [`Machine::apply_recorded`] leaving the digest work to `check`, for the chain
    /// [`Machine::digest_chain`] gave (the kernel's contract: `check`, when filled, goes to the
    /// chain in entry order, also when this fails; the earliest failure is the entry's error).
    fn apply_recorded_deferring(
        &mut self,
        entry: &Self::Entry,
        prefix: Option<InputPrefix<'_>>,
        check: &mut DigestCheck,
    ) -> Result<(), ReplayError> {
        let _ = check;
        self.apply_recorded(entry, prefix).map(drop)
    }
    /// Keeps from now on only what verifying further entries needs, not the history (a journal
    /// opened only to be verified, the one at `journal`, which it may read back); machines whose
    /// history is small keep it.
    fn forget_history(&mut self, journal: &Path) {
        let _ = journal;
    }
    /// Proposes an event; the state advances only if it is accepted.
    fn apply(&mut self, event: &Self::Event, evidence_set: &[Evidence]) -> Verdict;
    /// The entry that records an accepted proposal.
    fn entry(event: &Self::Event, evidence_set: &[Evidence], record: AcceptedRecord)
    -> Self::Entry;
    /// An entry's event and EvidenceSet.
    fn parts(entry: &Self::Entry) -> (&Self::Event, &[Evidence]);
    /// The current revision.
    fn revision(&self) -> Int;
    /// The revision an event expects.
    fn expected_revision(event: &Self::Event) -> Int;
    /// The event's id.
    fn event_id(event: &Self::Event) -> &Identity;
    /// Called by an open once line 0 is verified: starts `journal` from its newest matching
    /// snapshot instead of the genesis, returning whether it did (task journals, see
    /// [`snapshot`](crate::snapshot)); nothing by default.
    fn resume(_journal: &mut Journal<Self>) -> Result<bool, StoreError> {
        Ok(false)
    }
    /// Called after an open verified every line and after an append's lines are durable and
    /// anchored: writes a snapshot when one is due (task journals); nothing by default.
    fn settled(_journal: &mut Journal<Self>) {}
    /// Called when a handle is dropped (task journals: a writer leaves a snapshot of where it
    /// got to); nothing by default.
    fn closing(_journal: &mut Journal<Self>) {}
    /// Called before each line is applied (task journals: a snapshot index whose check was
    /// deferred is checked first); nothing by default.
    fn before_apply(_journal: &mut Journal<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Machine for LiveState {
    type Genesis = GenesisRoot;
    type Entry = CompactEntry;
    type Event = Event;
    type Guard = TaskGuard;

    fn decode_genesis(value: &Value) -> Result<GenesisRoot, DecodeError> {
        decode_genesis_root(value)
    }

    fn decode_entry(value: &Value) -> Result<CompactEntry, DecodeError> {
        decode_compact_entry(value)
    }

    fn decode_entry_prefix(text: &str) -> Option<(CompactEntry, EntrySpans)> {
        decode_compact_entry_spans(text)
    }

    fn start(genesis: &GenesisRoot) -> Result<Self, ReplayError> {
        Ok(Replayer::from_genesis(genesis)?.into_live())
    }

    fn apply_recorded(
        &mut self,
        entry: &CompactEntry,
        prefix: Option<InputPrefix<'_>>,
    ) -> Result<AcceptedRecord, ReplayError> {
        Self::apply_recorded_from(self, entry, prefix)
    }

    fn digest_chain(&self) -> Option<DigestChain> {
        Some(Self::digest_chain(self))
    }

    fn apply_recorded_deferring(
        &mut self,
        entry: &CompactEntry,
        prefix: Option<InputPrefix<'_>>,
        check: &mut DigestCheck,
    ) -> Result<(), ReplayError> {
        Self::apply_recorded_deferring(self, entry, prefix, check)
    }

    fn forget_history(&mut self, journal: &Path) {
        crate::journal::recall::forget_recalling(self, journal.to_owned());
    }

    fn apply(&mut self, event: &Event, evidence_set: &[Evidence]) -> Verdict {
        Self::apply(self, event, evidence_set)
    }

    fn entry(event: &Event, evidence_set: &[Evidence], record: AcceptedRecord) -> CompactEntry {
        CompactEntry {
            event: event.clone(),
            evidence_set: evidence_set.to_vec(),
            result: record,
        }
    }

    fn parts(entry: &CompactEntry) -> (&Event, &[Evidence]) {
        (&entry.event, &entry.evidence_set)
    }

    fn revision(&self) -> Int {
        Self::revision(self)
    }

    fn expected_revision(event: &Event) -> Int {
        event.expected_revision
    }

    fn event_id(event: &Event) -> &Identity {
        &event.event_id
    }

    fn resume(journal: &mut Journal<Self>) -> Result<bool, StoreError> {
        crate::snapshot_open::resume(journal)
    }

    fn settled(journal: &mut Journal<Self>) {
        crate::snapshot_open::settled(journal);
    }

    fn closing(journal: &mut Journal<Self>) {
        crate::snapshot_open::closing(journal);
    }

    fn before_apply(journal: &mut Journal<Self>) -> Result<(), StoreError> {
        crate::snapshot_open::check_deferred(journal)
    }
}

impl Machine for InstallationLive {
    type Genesis = InstallationGenesis;
    type Entry = InstallationEntry;
    type Event = InstallationEvent;
    type Guard = NoGuard;

    fn decode_genesis(value: &Value) -> Result<InstallationGenesis, DecodeError> {
        decode_installation_genesis(value)
    }

    fn decode_entry(value: &Value) -> Result<InstallationEntry, DecodeError> {
        decode_installation_entry(value)
    }

    fn start(genesis: &InstallationGenesis) -> Result<Self, ReplayError> {
        Self::from_genesis(genesis)
    }

    fn apply_recorded(
        &mut self,
        entry: &InstallationEntry,
        _prefix: Option<InputPrefix<'_>>,
    ) -> Result<AcceptedRecord, ReplayError> {
        Self::apply_recorded(self, entry)
    }

    fn apply(&mut self, event: &InstallationEvent, evidence_set: &[Evidence]) -> Verdict {
        Self::apply(self, event, evidence_set)
    }

    fn entry(
        event: &InstallationEvent,
        evidence_set: &[Evidence],
        record: AcceptedRecord,
    ) -> InstallationEntry {
        InstallationEntry {
            event: event.clone(),
            evidence_set: evidence_set.to_vec(),
            result: record,
        }
    }

    fn parts(entry: &InstallationEntry) -> (&InstallationEvent, &[Evidence]) {
        (&entry.event, &entry.evidence_set)
    }

    fn revision(&self) -> Int {
        Self::revision(self)
    }

    fn expected_revision(event: &InstallationEvent) -> Int {
        event.expected_revision
    }

    fn event_id(event: &InstallationEvent) -> &Identity {
        &event.event_id
    }
}

/// Why a [`Guard`] refuses an entry the kernel accepts.
#[derive(Debug)]
pub enum Refusal {
    /// The Done gate does not pass; the blocking reasons (see [`valp_kernel::done`]).
    DoneGate(Vec<String>),
    /// The task's Leader epoch is fenced (see [`fence`](crate::fence)).
    EpochFenced {
        /// The Leader epoch of the task's genesis.
        task_epoch: Int,
        /// The installation ledger's active epoch.
        active_epoch: Int,
    },
    /// The rule could not be checked: an I/O failure other than a missing or damaged blob.
    Store(StoreError),
}

/// Store rules a journal enforces beyond the kernel. `live` is always the State *before* the
/// entry; a guard only judges events the kernel accepts (it answers `Ok` for the rest and lets
/// the kernel refuse or deduplicate them).
pub trait Guard<M: Machine>: std::fmt::Debug {
    /// Called under the journal's lock before the proposals of one append (a batch, or a batch
    /// of one) are admitted: reads once what every `admit` of the batch judges against (the
    /// task guard: the ledger's active epoch). Nothing by default.
    fn start_batch(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Called when that batch ends, however it ends: forgets what
    /// [`start_batch`](Guard::start_batch) read. Nothing by default.
    fn end_batch(&mut self) {}
    /// Checks a proposal before the kernel's acceptance would be written.
    fn admit(&self, live: &M, event: &M::Event, evidence_set: &[Evidence]) -> Result<(), Refusal>;
    /// Re-checks a recorded entry while the journal is verified.
    fn verify(&self, live: &M, event: &M::Event, evidence_set: &[Evidence]) -> Result<(), Refusal>;
    /// Takes note of the entry the journal now holds at line `seq` (= its revision).
    fn observe(&mut self, seq: u64, event: &M::Event, evidence_set: &[Evidence]);
}

/// No rules beyond the kernel (the installation ledger).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoGuard;

impl<M: Machine> Guard<M> for NoGuard {
    fn admit(&self, _: &M, _: &M::Event, _: &[Evidence]) -> Result<(), Refusal> {
        Ok(())
    }

    fn verify(&self, _: &M, _: &M::Event, _: &[Evidence]) -> Result<(), Refusal> {
        Ok(())
    }

    fn observe(&mut self, _: u64, _: &M::Event, _: &[Evidence]) {}
}

/// The task journal's guard: the epoch fence ([`EpochFence`]) then the Done gate
/// ([`DoneGuard`]) on append; only the Done gate on open (the fence judges the present, not
/// history). [`Default`] has neither a fence nor an evidence store: it fences nothing and
/// refuses every gated Done; [`ControlRoot::task_guard`](crate::ControlRoot::task_guard) gives
/// both.
#[derive(Debug, Clone, Default)]
pub struct TaskGuard {
    fence: Option<EpochFence>,
    done: DoneGuard,
    /// The ledger's active epoch, read once for the batch being admitted (`None` outside one).
    batch_epoch: Option<Int>,
}

impl TaskGuard {
    /// A guard enforcing `fence` and `done` (which must not have observed any entry yet).
    pub fn new(fence: EpochFence, done: DoneGuard) -> Self {
        Self {
            fence: Some(fence),
            done,
            batch_epoch: None,
        }
    }

    /// The Done gate, as it stands after the verified entries (the frozen Done policy and
    /// whether a Done was recorded without one).
    pub fn done(&self) -> &DoneGuard {
        &self.done
    }

    /// The same guard, looking a correction cycle's refs up in `dir` (the task's folder; see
    /// [`DoneGuard::in_task`]).
    #[must_use]
    pub fn in_task(mut self, dir: &std::path::Path) -> Self {
        self.done = self.done.in_task(dir);
        self
    }

    /// The same guard as it stood after the entries a snapshot stands for.
    #[must_use]
    pub(crate) fn restored(mut self, parts: &crate::snapshot::GuardParts) -> Self {
        self.done = self.done.restored(parts);
        self
    }

    /// The epoch fence, if this guard has one.
    pub fn fence(&self) -> Option<&EpochFence> {
        self.fence.as_ref()
    }

    /// The same fence and evidence store, nothing observed yet (to re-verify a journal from its
    /// start).
    #[must_use]
    pub fn restart(&self) -> Self {
        Self {
            fence: self.fence.clone(),
            done: self.done.restart(),
            batch_epoch: None,
        }
    }
}

impl Guard<LiveState> for TaskGuard {
    fn start_batch(&mut self) -> Result<(), StoreError> {
        self.batch_epoch = match &self.fence {
            Some(fence) => Some(fence.active_epoch()?),
            None => None,
        };
        Ok(())
    }

    fn end_batch(&mut self) {
        self.batch_epoch = None;
    }

    fn admit(
        &self,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        // The fence first: nothing is written to a fenced task, whatever the Done gate says.
        match (&self.fence, self.batch_epoch) {
            (Some(_), Some(active_epoch)) => {
                EpochFence::admit_at(active_epoch, live, event, evidence_set)?;
            }
            (Some(fence), None) => fence.admit(live, event, evidence_set)?,
            (None, _) => {}
        }
        self.done.admit(live, event, evidence_set)
    }

    fn verify(
        &self,
        live: &LiveState,
        event: &Event,
        evidence_set: &[Evidence],
    ) -> Result<(), Refusal> {
        // Not the fence: a journal's history holds entries of epochs that were active when
        // they were written.
        self.done.verify(live, event, evidence_set)
    }

    fn observe(&mut self, seq: u64, event: &Event, evidence_set: &[Evidence]) {
        self.done.observe(seq, event, evidence_set);
    }
}
