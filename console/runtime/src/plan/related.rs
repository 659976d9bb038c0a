//! The `[related]` section of a plan: the explicit mapping of foreign loop evidence onto the
//! task and its work items, and the AgentOps folder the console may watch.
//!
//! ```toml
//! [related]
//! agentops_watch = ".agents/ao/verdicts/sha256"   # optional: a folder watched read-only
//!
//! [[related.agentops]]                             # one mapping per verdict or subject
//! subject = "c7cb66d7…"                            # subject_manifest_digest (64 hex), or
//! # verdict = "b4d8bd3b…"                          # artifact_digest (64 hex): exactly one
//! work_item = "review"                             # optional: absent = the task as a whole
//! ```
//!
//! Rules (checked at parse, so at publish): `related` has only `agentops` and
//! `agentops_watch`; a mapping has exactly one of `subject` or `verdict`, a bare 64
//! lowercase-hex digest; a `work_item` names a work item of the plan; a digest is mapped once;
//! `agentops_watch` is a safe relative path. The mapping is the only way a verdict finds its
//! work item when `valp ingest agentops` is not given `--item`: a verdict no entry names is
//! listed as unmapped and not recorded, and a verdict two entries name differently (its
//! `verdict` and its `subject` pointing at different targets) is refused as ambiguous. Nothing
//! is guessed from names, paths or text.

/// What a mapping entry matches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum MapKey {
    /// A verdict's `subject_manifest_digest`.
    Subject(String),
    /// A verdict's own `artifact_digest`.
    Verdict(String),
}

/// One `[[related.agentops]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentopsMapping {
    /// What it matches.
    pub key: MapKey,
    /// The work item it maps to (`None`: the task).
    pub work_item: Option<String>,
}

/// The `[related]` section.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Related {
    /// The AgentOps mappings, in plan order.
    pub agentops: Vec<AgentopsMapping>,
    /// An AgentOps verdict folder the console watches read-only, relative to the project.
    pub agentops_watch: Option<String>,
}

/// Where a verdict goes, by the plan's mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Mapped: the work item (`None`: the task).
    Mapped(Option<String>),
    /// No entry names it: not recorded.
    Unmapped,
    /// Its verdict and subject entries name different targets: not recorded.
    Ambiguous(Vec<Option<String>>),
}

impl Related {
    /// Where the verdict with `artifact_digest` about subject `subject_digest` goes.
    pub fn target(&self, artifact_digest: &str, subject_digest: &str) -> Target {
        let mut found: Vec<Option<String>> = Vec::new();
        for mapping in &self.agentops {
            let hit = match &mapping.key {
                MapKey::Subject(digest) => digest == subject_digest,
                MapKey::Verdict(digest) => digest == artifact_digest,
            };
            if hit && !found.contains(&mapping.work_item) {
                found.push(mapping.work_item.clone());
            }
        }
        match found.len() {
            0 => Target::Unmapped,
            1 => Target::Mapped(found.remove(0)),
            _ => Target::Ambiguous(found),
        }
    }
}

impl valp_kernel::canonical::Canonical for Related {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = valp_kernel::json::write::Fields::begin(out);
        fields.list("agentops", &self.agentops);
        if let Some(watch) = &self.agentops_watch {
            fields.str("agentops_watch", watch);
        }
        fields.end();
    }
}

impl valp_kernel::canonical::Canonical for AgentopsMapping {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = valp_kernel::json::write::Fields::begin(out);
        match &self.key {
            MapKey::Subject(digest) => fields.str("subject", digest),
            MapKey::Verdict(digest) => fields.str("verdict", digest),
        }
        if let Some(item) = &self.work_item {
            fields.str("work_item", item);
        }
        fields.end();
    }
}
