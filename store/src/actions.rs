//! A task's operator-action journal, `tasks/<task>/actions.jsonl` (+ `actions.head`, lock
//! `actions.lock`): the Leader's operations on agents that have no kernel event (a message to a
//! running agent, an interrupt, a cancel request, an approval decision, a submission), and the
//! adapters' proof that each was delivered.
//!
//! **Format.** A [`Ledger`](crate::ledger) (the effect ledger's file, head, lock, torn-tail,
//! damage and append rules, one implementation), each line's `entry` one
//! `valp-store-operator-action.v1` record ([`ActionRecord`], `schemas/store/operator-action.schema.json`),
//! each line with its `recorded_at`. A record binds: `action_id` (unique in the journal: the
//! idempotency key), `kind` (closed: [`ActionKind`]), `principal_id`, `leader_epoch`,
//! `task_revision` (the task journal's revision, = its last accepted seq, the action was decided
//! against), `attempt_id` and `work_item_id`, `answers` (the request it answers, e.g. an
//! agent's permission request or `tool_use_id`), `payload_digest` (of the full payload, kept
//! elsewhere, e.g. as evidence), `summary` (at most [`MAX_SUMMARY_CHARS`] characters, no
//! control characters: the caller cuts and sanitizes it; it is sanitized again wherever it is
//! shown), `decision` (`allow`/`deny`, exactly for `approval_decision`, which must name what it
//! `answers`) and `delivery` (exactly for `delivery` records).
//!
//! **Delivery proof.** The journal is append-only, so proof is a second record of kind
//! `delivery`, written by whatever delivered the action (the tmux adapter after its read-back,
//! the hook bridge after it answered the agent), whose `delivery` names the action
//! (`action_id`, an earlier non-delivery record), the `adapter`, the `outcome` (`delivered`,
//! `unconfirmed`: the adapter could not prove it, raise it to the Leader; `failed`) and the
//! proof (`proof_ref`, `proof_digest`: e.g. the evidence blob of the tmux read-back, or of the
//! hook's answer; both or neither). `unconfirmed` may be followed by a later delivery record;
//! after `delivered` or `failed` another is refused. [`ActionJournal::delivery_of`] gives the
//! latest.
//!
//! **Fence.** [`ActionJournal::of_task`] fences appends by the Leader epoch like task journal
//! appends ([`fence`](crate::fence)): when the installation's active epoch is ≥ 1 and is not the
//! record's `leader_epoch` (or not the task's), the append is refused with
//! [`StoreError::EpochFenced`] before anything is written; a record whose `leader_epoch` is not
//! the task's (from its genesis) is refused as invalid. Opening does not re-check the fence.
//! The store does not check `task_revision` against the task journal (that would replay it; the
//! hook bridge must answer within milliseconds): it records what the caller decided against.
//!
//! **Use** (the console's tmux adapter, the hook bridge): record the Leader's action before
//! carrying it out, then its delivery once proven (or not):
//!
//! ```no_run
//! # use valp_store::actions::{ActionJournal, ActionKind, ActionRecord, Delivery, Outcome};
//! # use valp_store::{Access, ControlRoot};
//! # fn run(root: &ControlRoot, digest: String, proof: String) -> Result<(), valp_store::StoreError> {
//! let mut actions = ActionJournal::of_task(root, "demo-build", Access::Write)?;
//! let message = ActionRecord {
//!     action_id: "msg-01J9".to_owned(),
//!     kind: ActionKind::Message,
//!     principal_id: "user:root".to_owned(),
//!     leader_epoch: 1,
//!     task_revision: 17,
//!     attempt_id: Some("demo-build:build:a1".to_owned()),
//!     work_item_id: Some("build".to_owned()),
//!     answers: None,
//!     payload_digest: digest.clone(),
//!     summary: "please also run the tests".to_owned(),
//!     allow: None,
//!     delivery: None,
//! };
//! actions.append(&message)?; // a retry with the same record writes nothing
//! // ... paste, read back, press Enter, observe ...
//! actions.append(&ActionRecord {
//!     action_id: "msg-01J9/delivery".to_owned(),
//!     kind: ActionKind::Delivery,
//!     principal_id: "adapter:tmux".to_owned(),
//!     summary: "submitted, input cleared".to_owned(),
//!     delivery: Some(Delivery {
//!         action_id: message.action_id.clone(),
//!         adapter: "tmux".to_owned(),
//!         outcome: Outcome::Delivered,
//!         proof: Some(("tmux-readback-0123456789abcdef".to_owned(), proof)),
//!     }),
//!     ..message.clone()
//! })?;
//! for recorded in actions.entries() {
//!     let _age_from = recorded.recorded_at; // None only for lines from before layout 3
//! }
//! # Ok(())
//! # }
//! ```
//!
//! **Append** ([`ActionJournal::append`]) is idempotent per `action_id`: the same record again
//! is answered with [`ActionAppended::AlreadyRecorded`], another record under the same id is
//! refused. Unknown kinds, in a line or from a caller ([`ActionKind::parse`]), are refused with
//! the list of known ones.

use std::path::Path;
use std::sync::Arc;

use valp_kernel::Int;
use valp_kernel::canonical::{Canonical, is_digest};
use valp_kernel::json::write::Fields;
use valp_kernel::json::{Number, Value};
use valp_kernel::live::LiveState;

use crate::chain::ChainReader;
use crate::clock::Timestamp;
use crate::error::StoreError;
use crate::fence::EpochFence;
use crate::head::Head;
use crate::io::Storage;
use crate::journal::{Access, JOURNAL_FILE, Recorded, Warning, read_genesis};
use crate::ledger::{Decision, Ledger, LedgerRecord, Records};
use crate::root::ControlRoot;

/// The operator-action journal in a task folder.
pub const ACTIONS_FILE: &str = "actions.jsonl";
/// Its writers' lock file.
pub const ACTIONS_LOCK: &str = "actions.lock";
/// `schema_version` of a record.
pub const ACTION_SCHEMA: &str = "valp-store-operator-action.v1";
/// Longest `summary`, in characters.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// Longest `action_id`, in characters.
pub const MAX_ID_CHARS: usize = 128;

/// What the Leader (or an adapter, for `delivery`) did. Closed: anything else is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// A message to a running agent.
    Message,
    /// An interrupt (stop the agent's turn).
    Interrupt,
    /// A request to cancel an agent's work.
    CancelRequest,
    /// An approval decision on an agent's permission request.
    ApprovalDecision,
    /// A prompt submitted to an agent.
    Submission,
    /// An adapter's proof that an earlier action was delivered (or not).
    Delivery,
}

impl ActionKind {
    /// Every kind, in wire order.
    pub const ALL: [Self; 6] = [
        Self::Message,
        Self::Interrupt,
        Self::CancelRequest,
        Self::ApprovalDecision,
        Self::Submission,
        Self::Delivery,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Interrupt => "interrupt",
            Self::CancelRequest => "cancel_request",
            Self::ApprovalDecision => "approval_decision",
            Self::Submission => "submission",
            Self::Delivery => "delivery",
        }
    }

    /// The kind named `text`; an unknown one is refused with the known ones.
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| StoreError::Invalid(unknown_kind(text)))
    }
}

fn unknown_kind(text: &str) -> String {
    let known: Vec<&str> = ActionKind::ALL.iter().map(|kind| kind.as_str()).collect();
    format!(
        "unknown operator action kind {text:?} (known: {})",
        known.join(", ")
    )
}

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Proven delivered.
    Delivered,
    /// Not proven: raise it to the Leader; a later delivery record may follow.
    Unconfirmed,
    /// Not delivered.
    Failed,
}

impl Outcome {
    const ALL: [Self; 3] = [Self::Delivered, Self::Unconfirmed, Self::Failed];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Delivered => "delivered",
            Self::Unconfirmed => "unconfirmed",
            Self::Failed => "failed",
        }
    }
}

/// The proof part of a `delivery` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The action delivered (an earlier record's `action_id`).
    pub action_id: String,
    /// Who delivered it (`tmux`, `hook:claude`, …).
    pub adapter: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Where the proof is kept (e.g. an evidence id), with its digest; both or neither.
    pub proof: Option<(String, String)>,
}

/// One record (see the module documentation for each member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRecord {
    /// Unique in the journal.
    pub action_id: String,
    /// What was done.
    pub kind: ActionKind,
    /// Who decided it.
    pub principal_id: String,
    /// The Leader epoch it was decided in.
    pub leader_epoch: Int,
    /// The task revision it was decided against.
    pub task_revision: Int,
    /// The attempt it is about.
    pub attempt_id: Option<String>,
    /// The work item it is about.
    pub work_item_id: Option<String>,
    /// The request it answers.
    pub answers: Option<String>,
    /// Digest of the full payload.
    pub payload_digest: String,
    /// Short, plain description.
    pub summary: String,
    /// `approval_decision` only: allowed (`true`) or denied.
    pub allow: Option<bool>,
    /// `delivery` only.
    pub delivery: Option<Delivery>,
}

impl Canonical for ActionRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let optional =
            |fields: &mut Fields<'_>, key: &'static str, value: &Option<String>| match value {
                Some(text) => fields.str(key, text),
                None => fields.key(key).extend_from_slice(b"null"),
            };
        let mut fields = Fields::begin(out);
        fields.str("action_id", &self.action_id);
        optional(&mut fields, "answers", &self.answers);
        optional(&mut fields, "attempt_id", &self.attempt_id);
        optional(
            &mut fields,
            "decision",
            &self
                .allow
                .map(|allow| if allow { "allow" } else { "deny" }.to_owned()),
        );
        match &self.delivery {
            None => fields.key("delivery").extend_from_slice(b"null"),
            Some(delivery) => {
                let out = fields.key("delivery");
                let mut inner = Fields::begin(out);
                inner.str("action_id", &delivery.action_id);
                inner.str("adapter", &delivery.adapter);
                inner.str("outcome", delivery.outcome.as_str());
                let (proof_ref, proof_digest) = delivery.proof.clone().unzip();
                optional(&mut inner, "proof_digest", &proof_digest);
                optional(&mut inner, "proof_ref", &proof_ref);
                inner.end();
            }
        }
        fields.str("kind", self.kind.as_str());
        fields.int("leader_epoch", self.leader_epoch);
        fields.str("payload_digest", &self.payload_digest);
        fields.str("principal_id", &self.principal_id);
        fields.str("schema_version", ACTION_SCHEMA);
        fields.str("summary", &self.summary);
        fields.int("task_revision", self.task_revision);
        optional(&mut fields, "work_item_id", &self.work_item_id);
        fields.end();
    }
}

/// The members of a record, in canonical order.
const MEMBERS: [&str; 13] = [
    "action_id",
    "answers",
    "attempt_id",
    "decision",
    "delivery",
    "kind",
    "leader_epoch",
    "payload_digest",
    "principal_id",
    "schema_version",
    "summary",
    "task_revision",
    "work_item_id",
];

/// Reads the members of `value` (an object with exactly `names`).
pub(crate) fn members<'v>(
    value: &'v Value,
    what: &str,
    names: &[&str],
) -> Result<&'v std::collections::BTreeMap<String, Value>, String> {
    let Value::Object(members) = value else {
        return Err(format!(
            "{what} is a JSON object, found {}",
            value.type_name()
        ));
    };
    let keys: Vec<&str> = members.keys().map(String::as_str).collect();
    if keys != names {
        return Err(format!("{what} members must be {names:?}, found {keys:?}"));
    }
    Ok(members)
}

pub(crate) fn text(
    members: &std::collections::BTreeMap<String, Value>,
    name: &str,
) -> Result<String, String> {
    match members.get(name) {
        Some(Value::String(text)) => Ok(text.clone()),
        _ => Err(format!("{name} must be a string")),
    }
}

pub(crate) fn optional_text(
    members: &std::collections::BTreeMap<String, Value>,
    name: &str,
) -> Result<Option<String>, String> {
    match members.get(name) {
        Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        _ => Err(format!("{name} must be a string or null")),
    }
}

fn count(members: &std::collections::BTreeMap<String, Value>, name: &str) -> Result<Int, String> {
    match members.get(name) {
        Some(Value::Number(Number::Int(number))) if *number >= 0 => Ok(*number),
        _ => Err(format!("{name} must be an integer >= 0")),
    }
}

fn decode_delivery(value: &Value) -> Result<Delivery, String> {
    let members = members(
        value,
        "delivery",
        &[
            "action_id",
            "adapter",
            "outcome",
            "proof_digest",
            "proof_ref",
        ],
    )?;
    let outcome = text(members, "outcome")?;
    let outcome = Outcome::ALL
        .into_iter()
        .find(|known| known.as_str() == outcome)
        .ok_or_else(|| {
            format!("delivery outcome {outcome:?} is not one of delivered, unconfirmed, failed")
        })?;
    let proof = match (
        optional_text(members, "proof_ref")?,
        optional_text(members, "proof_digest")?,
    ) {
        (Some(reference), Some(digest)) => Some((reference, digest)),
        (None, None) => None,
        _ => {
            return Err("delivery proof_ref and proof_digest are both set or both null".to_owned());
        }
    };
    Ok(Delivery {
        action_id: text(members, "action_id")?,
        adapter: text(members, "adapter")?,
        outcome,
        proof,
    })
}

impl ActionRecord {
    /// Decodes a record strictly (exact members and types, a known kind); its rules are
    /// [`ActionRecord::check`]'s.
    pub fn decode(value: &Value) -> Result<Self, String> {
        let members = members(value, "an operator action", &MEMBERS)?;
        let schema = text(members, "schema_version")?;
        if schema != ACTION_SCHEMA {
            return Err(format!("schema_version must be {ACTION_SCHEMA:?}"));
        }
        let kind = text(members, "kind")?;
        let kind = ActionKind::ALL
            .into_iter()
            .find(|known| known.as_str() == kind)
            .ok_or_else(|| unknown_kind(&kind))?;
        let allow = match optional_text(members, "decision")?.as_deref() {
            None => None,
            Some("allow") => Some(true),
            Some("deny") => Some(false),
            Some(other) => return Err(format!("decision {other:?} is not allow or deny")),
        };
        let delivery = match &members["delivery"] {
            Value::Null => None,
            value => Some(decode_delivery(value)?),
        };
        Ok(Self {
            action_id: text(members, "action_id")?,
            kind,
            principal_id: text(members, "principal_id")?,
            leader_epoch: count(members, "leader_epoch")?,
            task_revision: count(members, "task_revision")?,
            attempt_id: optional_text(members, "attempt_id")?,
            work_item_id: optional_text(members, "work_item_id")?,
            answers: optional_text(members, "answers")?,
            payload_digest: text(members, "payload_digest")?,
            summary: text(members, "summary")?,
            allow,
            delivery,
        })
    }

    /// The record's own rules, and those relative to `earlier` (the journal's records before
    /// it); the first broken one, named.
    pub fn check(&self, earlier: &Records<Self>) -> Result<(), String> {
        let plain = |name: &str, text: &str, limit: usize| {
            if text.is_empty() || text.chars().count() > limit {
                Err(format!("{name} must have 1 to {limit} characters"))
            } else if text.chars().any(char::is_control) {
                Err(format!("{name} must not hold control characters"))
            } else {
                Ok(())
            }
        };
        plain("action_id", &self.action_id, MAX_ID_CHARS)?;
        plain("principal_id", &self.principal_id, MAX_ID_CHARS)?;
        if self.summary.chars().count() > MAX_SUMMARY_CHARS {
            return Err(format!(
                "summary has {} characters, more than {MAX_SUMMARY_CHARS}",
                self.summary.chars().count()
            ));
        }
        if self.summary.chars().any(char::is_control) {
            return Err("summary must not hold control characters (sanitize it first)".to_owned());
        }
        if !is_digest(&self.payload_digest) {
            return Err("payload_digest must be a sha256 digest".to_owned());
        }
        let approval = self.kind == ActionKind::ApprovalDecision;
        if approval != self.allow.is_some() {
            return Err("decision is set exactly on an approval_decision".to_owned());
        }
        if approval && self.answers.is_none() {
            return Err("an approval_decision names the request it answers".to_owned());
        }
        match (&self.delivery, self.kind == ActionKind::Delivery) {
            (None, false) => Ok(()),
            (Some(delivery), true) => check_delivery(delivery, earlier),
            _ => Err("delivery is set exactly on a delivery record".to_owned()),
        }
    }
}

/// A delivery names an earlier action that is not a delivery, and none after a final one.
fn check_delivery(delivery: &Delivery, earlier: &Records<ActionRecord>) -> Result<(), String> {
    if delivery.adapter.is_empty() || delivery.adapter.chars().any(char::is_control) {
        return Err("delivery adapter must be plain, non-empty text".to_owned());
    }
    if let Some((_, digest)) = &delivery.proof
        && !is_digest(digest)
    {
        return Err("delivery proof_digest must be a sha256 digest".to_owned());
    }
    match earlier.get(&delivery.action_id) {
        None => {
            return Err(format!(
                "the delivery names action {:?}, which is not an earlier record",
                delivery.action_id
            ));
        }
        Some((_, action)) if action.kind == ActionKind::Delivery => {
            return Err("a delivery names an action, not another delivery".to_owned());
        }
        Some(_) => {}
    }
    let last = last_delivery(earlier.all(), &delivery.action_id);
    match last.map(|record| record.delivery.as_ref().map(|d| d.outcome)) {
        Some(Some(outcome @ (Outcome::Delivered | Outcome::Failed))) => Err(format!(
            "action {:?} already has a final delivery ({})",
            delivery.action_id,
            outcome.as_str()
        )),
        _ => Ok(()),
    }
}

/// The latest delivery record of `action_id` among `records`.
fn last_delivery<'r>(records: &'r [ActionRecord], action_id: &str) -> Option<&'r ActionRecord> {
    records.iter().rev().find(|record| {
        record
            .delivery
            .as_ref()
            .is_some_and(|delivery| delivery.action_id == action_id)
    })
}

impl LedgerRecord for ActionRecord {
    const NOUN: &'static str = "operator action";
    const KEY: &'static str = "action_id";

    fn decode(value: &Value) -> Result<Self, String> {
        Self::decode(value)
    }

    fn key(&self) -> &str {
        &self.action_id
    }

    fn check(&self, earlier: &Records<Self>) -> Result<(), String> {
        Self::check(self, earlier)
    }
}

/// What [`ActionJournal::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionAppended {
    /// The record is durable at line `seq`, written at `recorded_at`.
    Recorded {
        /// Its line.
        seq: u64,
        /// When the store wrote it.
        recorded_at: Option<Timestamp>,
    },
    /// The same record was there already (a retry); nothing was written.
    AlreadyRecorded,
}

/// An open, verified operator-action journal.
#[derive(Debug)]
pub struct ActionJournal {
    ledger: Ledger<ActionRecord>,
    /// The Leader epoch the task is bound to (from its genesis).
    task_epoch: Int,
    /// The installation's epoch fence (appends through [`ActionJournal::of_task`]).
    fence: Option<EpochFence>,
}

impl ActionJournal {
    /// Opens and verifies the action journal of `task_id` in `root` (missing = empty), with
    /// the root's epoch fence and clock.
    pub fn of_task(root: &ControlRoot, task_id: &str, access: Access) -> Result<Self, StoreError> {
        let mut journal = Self::open(
            &root.layout().task_dir(task_id),
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            access,
        )?;
        journal.fence = Some(root.epoch_fence().clone());
        journal.ledger.set_clock(Arc::clone(root.clock()));
        Ok(journal)
    }

    /// Opens and verifies the action journal in the task folder `dir`, which must hold a task
    /// journal (its genesis gives the task's Leader epoch); no fence, the system clock.
    pub fn open(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            task_epoch: task_epoch(dir)?,
            ledger: Ledger::open(
                &dir.join(ACTIONS_FILE),
                &dir.join(ACTIONS_LOCK),
                quarantine,
                storage,
                access,
            )?,
            fence: None,
        })
    }

    /// Records `record` (see the module documentation for the rules and the fence).
    pub fn append(&mut self, record: &ActionRecord) -> Result<ActionAppended, StoreError> {
        let path = self.ledger.path().to_owned();
        if record.leader_epoch != self.task_epoch {
            return Err(StoreError::Invalid(format!(
                "{}: the action names Leader epoch {}, the task is bound to epoch {}",
                path.display(),
                record.leader_epoch,
                self.task_epoch
            )));
        }
        let fence = self.fence.clone();
        let task_epoch = self.task_epoch;
        let decided = self.ledger.append(|records| {
            if let Some(fence) = &fence {
                // Under the journal's lock, against the ledger as it stands now.
                let active_epoch = fence.active_epoch()?;
                if active_epoch >= 1 && active_epoch != task_epoch {
                    return Err(StoreError::EpochFenced {
                        path: path.clone(),
                        task_epoch,
                        active_epoch,
                    });
                }
            }
            match records.get(&record.action_id) {
                Some((_, existing)) if existing == record => Ok(Decision::Existing(record.clone())),
                Some((index, _)) => Err(StoreError::Invalid(format!(
                    "{}: action {:?} was already recorded with other content (line {})",
                    path.display(),
                    record.action_id,
                    index + 1
                ))),
                None => Ok(Decision::Write(record.clone())),
            }
        })?;
        Ok(match decided {
            Decision::Existing(_) => ActionAppended::AlreadyRecorded,
            Decision::Write(_) => {
                let index = self.ledger.records().all().len() - 1;
                ActionAppended::Recorded {
                    seq: index as u64,
                    recorded_at: self
                        .ledger
                        .records()
                        .recorded(index)
                        .and_then(|recorded| recorded.recorded_at),
                }
            }
        })
    }

    /// Every record, in order, with its line and the time the store wrote it.
    pub fn entries(&self) -> impl Iterator<Item = Recorded<&ActionRecord>> {
        (0..self.ledger.records().all().len())
            .filter_map(|index| self.ledger.records().recorded(index))
    }

    /// The record of `action_id`.
    pub fn get(&self, action_id: &str) -> Option<&ActionRecord> {
        self.ledger
            .records()
            .get(action_id)
            .map(|(_, record)| record)
    }

    /// The latest `delivery` record of `action_id` (`None`: no delivery recorded yet).
    pub fn delivery_of(&self, action_id: &str) -> Option<&ActionRecord> {
        last_delivery(self.ledger.records().all(), action_id)
    }

    /// Reads and verifies the records appended since the last read. Returns how many.
    pub fn refresh(&mut self) -> Result<usize, StoreError> {
        self.ledger.refresh()
    }

    /// Warnings raised while opening or following.
    pub fn warnings(&self) -> &[Warning] {
        self.ledger.warnings()
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        self.ledger.path()
    }

    /// The head anchor (`None`: no record yet).
    pub fn head(&self) -> Option<&Head> {
        self.ledger.head()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.ledger.records().all().len()
    }

    /// Whether the journal holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The Leader epoch of the task whose journal is in `dir` (from its genesis line).
fn task_epoch(dir: &Path) -> Result<Int, StoreError> {
    let path = dir.join(JOURNAL_FILE);
    let mut reader = ChainReader::open(&path)?;
    let (_, genesis) = read_genesis::<LiveState>(&mut reader, &path)?;
    Ok(genesis.state.body.leader_epoch)
}
