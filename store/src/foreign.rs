//! A task's foreign-observation journal, `tasks/<task>/foreign.jsonl` (+ `foreign.head`, lock
//! `foreign.lock`): what a neighbouring loop system (AgentOps, SuperLoop) said about the task,
//! recorded as observations and evidence, never as kernel events.
//!
//! **Format.** A [`Ledger`](crate::ledger) (the effect ledger's and the action journal's file,
//! head, lock, torn-tail, damage and append rules), each line's `entry` one
//! `valp-store-foreign-observation.v1` record ([`ForeignRecord`],
//! `schemas/store/foreign-line.schema.json`). A record binds: `observation_id` (unique in the
//! journal: the idempotency key, `<source>:<foreign id>`), `source` (closed: `agentops`,
//! `superloop`), `kind` (closed: [`ForeignKind`]), `work_item_id` (the VALP work item it speaks
//! for, or null for the whole task), the foreign file kept as evidence (`evidence_id`,
//! `content_digest`: the blob of its exact bytes), the descriptor (`descriptor_digest`: a blob
//! holding everything read from it, with scheme-tagged foreign digests and verification
//! levels), `claim_result` and `review_verdict` (a Claim and a Review observation), and a
//! sanitized `summary`.
//!
//! **The mapping is closed.** A claim and its review travel together, and only as
//! `pass`/`pass`, `fail`/`fail` or `unknown`/`blocked`: a foreign result that cannot be proven
//! is never recorded as a pass or a fail. `review` and `done_claim` records carry one;
//! `contract`, `state`, `run` and `attempt` records carry none. Nothing here is a kernel
//! `review_passed` or Done: a foreign pass is evidence the Leader can look at, and Done still
//! needs the kernel's Done gate.
//!
//! **Append** ([`ForeignJournal::append`]) is idempotent per `observation_id`: the same record
//! again is answered with `false` (nothing written), another record under the id is refused. A
//! missing file is the empty journal; older binaries never read it (no layout change).
//! `valp verify` checks the file (chain, head, every record's rules) as `foreign`.

use std::path::Path;
use std::sync::Arc;

use valp_kernel::canonical::{Canonical, is_digest};
use valp_kernel::json::Value;
use valp_kernel::json::write::Fields;

use crate::actions::{members, optional_text, text};
use crate::error::StoreError;
use crate::head::Head;
use crate::io::Storage;
use crate::journal::{Access, JOURNAL_FILE, Warning};
use crate::ledger::{Decision, Ledger, LedgerRecord, Records};
use crate::root::ControlRoot;

/// The foreign-observation journal in a task folder.
pub const FOREIGN_FILE: &str = "foreign.jsonl";
/// Its writers' lock file.
pub const FOREIGN_LOCK: &str = "foreign.lock";
/// `schema_version` of a record.
pub const FOREIGN_SCHEMA: &str = "valp-store-foreign-observation.v1";
/// Longest `summary`, in characters.
pub const MAX_SUMMARY_CHARS: usize = 200;
/// Longest `observation_id`, in characters.
pub const MAX_ID_CHARS: usize = 200;

macro_rules! wire_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in wire order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }

            /// Parses the wire name; the known ones listed otherwise.
            pub fn parse(text: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|known| known.as_str() == text).ok_or_else(|| {
                    let known: Vec<&str> = Self::ALL.iter().map(|known| known.as_str()).collect();
                    format!("{} {text:?} is not one of {}", stringify!($name), known.join(", "))
                })
            }
        }
    };
}

wire_enum! {
    /// The foreign system.
    Source {
        /// AgentOps verdicts.
        Agentops => "agentops",
        /// SuperLoop finite Work Plans.
        Superloop => "superloop",
    }
}

wire_enum! {
    /// What was observed.
    ForeignKind {
        /// A foreign contract frozen as evidence (SuperLoop loop.yaml).
        Contract => "contract",
        /// A foreign system's recorded state (SuperLoop state.json).
        State => "state",
        /// A recorded foreign run (its log).
        Run => "run",
        /// A foreign attempt at a work item (a Part result).
        Attempt => "attempt",
        /// A claim with a foreign review of it (an AgentOps verdict, a Part Gate).
        Review => "review",
        /// A foreign Done claim (a SuperLoop Goal Gate): still needs the kernel's Done gate.
        DoneClaim => "done_claim",
    }
}

wire_enum! {
    /// A claim's result, as the foreign review supports it.
    ClaimResult {
        /// Supported by a foreign review (not a VALP review, not Done).
        Pass => "pass",
        /// Rejected by a foreign review.
        Fail => "fail",
        /// Cannot be proven: neither pass nor fail.
        Unknown => "unknown",
    }
}

wire_enum! {
    /// The foreign review's verdict.
    ReviewVerdict {
        /// Passed.
        Pass => "pass",
        /// Failed.
        Fail => "fail",
        /// Could not be proven.
        Blocked => "blocked",
    }
}

/// One record (see the module documentation for each member).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignRecord {
    /// Unique in the journal.
    pub observation_id: String,
    /// The foreign system.
    pub source: Source,
    /// What was observed.
    pub kind: ForeignKind,
    /// The work item it speaks for (`None`: the task).
    pub work_item_id: Option<String>,
    /// The evidence id of the foreign file's bytes.
    pub evidence_id: String,
    /// `sha256:` of the foreign file's bytes.
    pub content_digest: String,
    /// `sha256:` of the descriptor blob.
    pub descriptor_digest: String,
    /// The claim and review, together or not at all.
    pub claim: Option<(ClaimResult, ReviewVerdict)>,
    /// Short, sanitized description.
    pub summary: String,
}

const MEMBERS: [&str; 11] = [
    "claim_result",
    "content_digest",
    "descriptor_digest",
    "evidence_id",
    "kind",
    "observation_id",
    "review_verdict",
    "schema_version",
    "source",
    "summary",
    "work_item_id",
];

impl Canonical for ForeignRecord {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let optional = |fields: &mut Fields<'_>, key: &'static str, value: Option<&str>| match value
        {
            Some(text) => fields.str(key, text),
            None => fields.key(key).extend_from_slice(b"null"),
        };
        let mut fields = Fields::begin(out);
        optional(
            &mut fields,
            "claim_result",
            self.claim.map(|(claim, _)| claim.as_str()),
        );
        fields.str("content_digest", &self.content_digest);
        fields.str("descriptor_digest", &self.descriptor_digest);
        fields.str("evidence_id", &self.evidence_id);
        fields.str("kind", self.kind.as_str());
        fields.str("observation_id", &self.observation_id);
        optional(
            &mut fields,
            "review_verdict",
            self.claim.map(|(_, review)| review.as_str()),
        );
        fields.str("schema_version", FOREIGN_SCHEMA);
        fields.str("source", self.source.as_str());
        fields.str("summary", &self.summary);
        optional(&mut fields, "work_item_id", self.work_item_id.as_deref());
        fields.end();
    }
}

impl ForeignRecord {
    /// Decodes a record strictly (exact members and types, known vocabularies); its rules are
    /// [`ForeignRecord::check`]'s.
    pub fn decode(value: &Value) -> Result<Self, String> {
        let members = members(value, "a foreign observation", &MEMBERS)?;
        if text(members, "schema_version")? != FOREIGN_SCHEMA {
            return Err(format!("schema_version must be {FOREIGN_SCHEMA:?}"));
        }
        let claim = optional_text(members, "claim_result")?
            .map(|text| ClaimResult::parse(&text))
            .transpose()?;
        let review = optional_text(members, "review_verdict")?
            .map(|text| ReviewVerdict::parse(&text))
            .transpose()?;
        let claim = match (claim, review) {
            (Some(claim), Some(review)) => Some((claim, review)),
            (None, None) => None,
            _ => return Err("claim_result and review_verdict are both set or both null".to_owned()),
        };
        Ok(Self {
            observation_id: text(members, "observation_id")?,
            source: Source::parse(&text(members, "source")?)?,
            kind: ForeignKind::parse(&text(members, "kind")?)?,
            work_item_id: optional_text(members, "work_item_id")?,
            evidence_id: text(members, "evidence_id")?,
            content_digest: text(members, "content_digest")?,
            descriptor_digest: text(members, "descriptor_digest")?,
            claim,
            summary: text(members, "summary")?,
        })
    }

    /// The record's own rules; the first broken one, named.
    pub fn check(&self) -> Result<(), String> {
        for (name, value, limit) in [
            ("observation_id", &self.observation_id, MAX_ID_CHARS),
            ("evidence_id", &self.evidence_id, MAX_ID_CHARS),
        ] {
            if value.is_empty() || value.chars().count() > limit {
                return Err(format!("{name} must have 1 to {limit} characters"));
            }
            if value.chars().any(char::is_control) {
                return Err(format!("{name} must not hold control characters"));
            }
        }
        if self.summary.chars().count() > MAX_SUMMARY_CHARS
            || self.summary.chars().any(char::is_control)
        {
            return Err(format!(
                "summary must have at most {MAX_SUMMARY_CHARS} characters and no control \
                 characters (sanitize it first)"
            ));
        }
        if !is_digest(&self.content_digest) || !is_digest(&self.descriptor_digest) {
            return Err("content_digest and descriptor_digest must be sha256 digests".to_owned());
        }
        let claims = matches!(self.kind, ForeignKind::Review | ForeignKind::DoneClaim);
        match self.claim {
            None if claims => Err(format!(
                "a {} record carries a claim_result and a review_verdict",
                self.kind.as_str()
            )),
            Some(_) if !claims => Err(format!(
                "a {} record carries no claim_result or review_verdict",
                self.kind.as_str()
            )),
            Some(
                (ClaimResult::Pass, ReviewVerdict::Pass)
                | (ClaimResult::Fail, ReviewVerdict::Fail)
                | (ClaimResult::Unknown, ReviewVerdict::Blocked),
            )
            | None => Ok(()),
            Some((claim, review)) => Err(format!(
                "claim_result {} with review_verdict {}: only pass/pass, fail/fail and \
                 unknown/blocked",
                claim.as_str(),
                review.as_str()
            )),
        }
    }
}

impl LedgerRecord for ForeignRecord {
    const NOUN: &'static str = "foreign observation";
    const KEY: &'static str = "observation_id";

    fn decode(value: &Value) -> Result<Self, String> {
        Self::decode(value)
    }

    fn key(&self) -> &str {
        &self.observation_id
    }

    fn check(&self, _earlier: &Records<Self>) -> Result<(), String> {
        Self::check(self)
    }
}

/// An open, verified foreign-observation journal.
#[derive(Debug)]
pub struct ForeignJournal {
    ledger: Ledger<ForeignRecord>,
}

impl ForeignJournal {
    /// Opens and verifies the foreign-observation journal of `task_id` in `root` (missing =
    /// empty), with the root's clock. The task must exist.
    pub fn of_task(root: &ControlRoot, task_id: &str, access: Access) -> Result<Self, StoreError> {
        let dir = root.layout().task_dir(task_id);
        if !dir.join(JOURNAL_FILE).is_file() {
            return Err(StoreError::Invalid(format!(
                "task {task_id} does not exist ({} has no journal)",
                dir.display()
            )));
        }
        let mut journal = Self::open(
            &dir,
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            access,
        )?;
        journal.ledger.set_clock(Arc::clone(root.clock()));
        Ok(journal)
    }

    /// Opens and verifies the journal in the task folder `dir`; the system clock.
    pub fn open(
        dir: &Path,
        quarantine: &Path,
        storage: Arc<dyn Storage>,
        access: Access,
    ) -> Result<Self, StoreError> {
        Ok(Self {
            ledger: Ledger::open(
                &dir.join(FOREIGN_FILE),
                &dir.join(FOREIGN_LOCK),
                quarantine,
                storage,
                access,
            )?,
        })
    }

    /// Records `record`: `true` when written, `false` when the same record was there already.
    /// Another record under the same id, or one breaking a rule, is refused.
    pub fn append(&mut self, record: &ForeignRecord) -> Result<bool, StoreError> {
        let path = self.ledger.path().to_owned();
        let decided = self
            .ledger
            .append(|records| match records.get(&record.observation_id) {
                Some((_, existing)) if existing == record => Ok(Decision::Existing(record.clone())),
                Some((index, _)) => Err(StoreError::Invalid(format!(
                    "{}: observation {:?} was already recorded with other content (line {})",
                    path.display(),
                    record.observation_id,
                    index + 1
                ))),
                None => Ok(Decision::Write(record.clone())),
            })?;
        Ok(matches!(decided, Decision::Write(_)))
    }

    /// Every record, in order.
    pub fn records(&self) -> &[ForeignRecord] {
        self.ledger.records().all()
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        self.ledger.path()
    }

    /// Warnings raised while opening.
    pub fn warnings(&self) -> &[Warning] {
        self.ledger.warnings()
    }

    /// The head anchor (`None`: no record yet).
    pub fn head(&self) -> Option<&Head> {
        self.ledger.head()
    }
}
