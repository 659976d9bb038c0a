//! The `[dimensions]` section of a plan: the four dimension gates (RFC 0002 §10.1) and the
//! closed vocabulary of measures their rules may compare.
//!
//! ```toml
//! [dimensions]
//! version = 1                                  # the only supported version
//! [dimensions.quality]                         # quality | experience | cost | stability
//! required = true                              # Done needs this gate to pass; default false
//! rules = [{ rule_id = "checks-pass", measure = "quality.verification_failed", operator = "eq", threshold = 0 }]
//! ```
//!
//! A plan with a `[dimensions]` section freezes its dimension policy in the Done policy
//! (`valp-kernel-done-policy.v3` now, `.v2` for tasks published before the correction cycle;
//! the dimension policy, `valp-kernel-dimension-policy.v1`, is scoped to the plan's task);
//! a plan without one freezes no dimension gates. The rules checked at parse (and so at
//! publish): `version` is 1, else `VALP-E-DIMENSION-POLICY-UNSUPPORTED-VERSION`; `operator` is
//! one of `eq ne lt le gt ge`, else `VALP-E-DIMENSION-POLICY-UNSUPPORTED-OPERATOR`; `measure`
//! is one of [`MEASURES`] and belongs to the gate's dimension; `rule_id`s are unique across the
//! section; a required gate has at least one rule.
//!
//! The System measures at closure what the task's journal and its final verification round
//! show ([`crate::runtime`]); a measure it cannot take is absent from the measurement, so a rule
//! over it makes its gate `unverifiable`, never `pass`.

use valp_kernel::dimension::{Dimension, DimensionGates, DimensionPolicy, POLICY_VERSION};

/// The only `[dimensions] version` this valp reads.
pub const SUPPORTED_VERSION: u32 = 1;

/// A measure a rule may compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Its name, `<dimension>.<what>`.
    pub name: &'static str,
    /// The dimension whose rules may use it.
    pub dimension: Dimension,
    /// What it counts, or why valp cannot measure it yet.
    pub meaning: &'static str,
}

/// Every measure, by dimension.
pub const MEASURES: &[Measure] = &[
    Measure {
        name: "quality.verification_passed",
        dimension: Dimension::Quality,
        meaning: "verification checks (plan and criterion commands) that passed in the final round",
    },
    Measure {
        name: "quality.verification_failed",
        dimension: Dimension::Quality,
        meaning: "verification checks that did not pass in the final round",
    },
    Measure {
        name: "quality.verification_percent",
        dimension: Dimension::Quality,
        meaning: "percent of the final round's checks that passed (not measured without checks)",
    },
    Measure {
        name: "quality.review_rejections",
        dimension: Dimension::Quality,
        meaning: "Leader reviews that rejected the work (review_rejected events)",
    },
    Measure {
        name: "experience.review_passed",
        dimension: Dimension::Experience,
        meaning: "Leader reviews that accepted the work (review_passed events)",
    },
    Measure {
        name: "cost.tokens",
        dimension: Dimension::Cost,
        meaning: "not measured: no agent channel reports token usage yet",
    },
    Measure {
        name: "cost.usd_micros",
        dimension: Dimension::Cost,
        meaning: "not measured: no agent channel reports cost yet",
    },
    Measure {
        name: "stability.retries",
        dimension: Dimension::Stability,
        meaning: "attempts beyond each work item's first",
    },
    Measure {
        name: "stability.attempts_failed",
        dimension: Dimension::Stability,
        meaning: "attempts that failed, timed out or were lost (attempt_failed and attempt_fenced)",
    },
    Measure {
        name: "stability.timeouts",
        dimension: Dimension::Stability,
        meaning: "failed attempts whose supervisor reported a timeout",
    },
    Measure {
        name: "stability.verification_failures",
        dimension: Dimension::Stability,
        meaning: "verification rounds that failed before the last (verification_failed events)",
    },
];

/// The measure named `name`.
pub fn measure(name: &str) -> Option<&'static Measure> {
    MEASURES.iter().find(|measure| measure.name == name)
}

/// A plan's `[dimensions]` section, defaults filled in (a gate left out has no rules and is
/// not required).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dimensions {
    /// The section's version ([`SUPPORTED_VERSION`] once parsed).
    pub version: u32,
    /// The four gates.
    pub gates: DimensionGates,
}

impl Dimensions {
    /// The frozen dimension policy of task `task_id`.
    pub fn policy(&self, task_id: &str) -> DimensionPolicy {
        DimensionPolicy {
            policy_id: format!("{task_id}:dimensions"),
            version: POLICY_VERSION.to_owned(),
            scope_task_id: task_id.to_owned(),
            gates: self.gates.clone(),
        }
    }
}
