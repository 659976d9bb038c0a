//! Tallying cases and rendering the per-category table and summary line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// How one vector ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseVerdict {
    /// Our kernel produced exactly the expected outcome.
    Passed,
    /// Our kernel produced the outcome declared by this deviation.
    Deviated(String),
    /// Anything else, with an explanation.
    Failed(String),
}

/// The result of one vector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseResult {
    /// The vector's name.
    pub name: String,
    /// `file:line` of the vector.
    pub location: String,
    /// How it ended.
    pub verdict: CaseVerdict,
}

/// Counts for one category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Passed cases.
    pub passed: usize,
    /// Cases matching a declared deviation.
    pub deviations: usize,
    /// Failed cases.
    pub failed: usize,
}

/// A failed case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The vector's name.
    pub name: String,
    /// `file:line`.
    pub location: String,
    /// What differed.
    pub message: String,
}

/// Everything a run found.
#[derive(Debug, Clone, Default)]
pub struct Report {
    categories: BTreeMap<String, Counts>,
    deviations: BTreeMap<String, usize>,
    failures: Vec<Failure>,
}

/// The category of a vector: the first two `/`-separated parts of its name.
pub(super) fn category(name: &str) -> String {
    name.splitn(3, '/').take(2).collect::<Vec<_>>().join("/")
}

impl Report {
    /// Adds one case.
    pub fn record(&mut self, case: CaseResult) {
        let counts = self.categories.entry(category(&case.name)).or_default();
        match case.verdict {
            CaseVerdict::Passed => counts.passed += 1,
            CaseVerdict::Deviated(id) => {
                counts.deviations += 1;
                *self.deviations.entry(id).or_default() += 1;
            }
            CaseVerdict::Failed(message) => {
                counts.failed += 1;
                self.failures.push(Failure {
                    name: case.name,
                    location: case.location,
                    message,
                });
            }
        }
    }

    fn sum(&self, field: fn(&Counts) -> usize) -> usize {
        self.categories.values().map(field).sum()
    }

    /// Passed cases.
    pub fn passed(&self) -> usize {
        self.sum(|counts| counts.passed)
    }

    /// Cases that matched a declared deviation.
    pub fn deviations(&self) -> usize {
        self.sum(|counts| counts.deviations)
    }

    /// Failed cases.
    pub fn failed(&self) -> usize {
        self.sum(|counts| counts.failed)
    }

    /// All cases.
    pub fn total(&self) -> usize {
        self.passed() + self.deviations() + self.failed()
    }

    /// Counts per category.
    pub fn categories(&self) -> &BTreeMap<String, Counts> {
        &self.categories
    }

    /// Cases per declared deviation id.
    pub fn deviation_counts(&self) -> &BTreeMap<String, usize> {
        &self.deviations
    }

    /// Every failed case, in the order run.
    pub fn failures(&self) -> &[Failure] {
        &self.failures
    }

    /// The per-category table.
    pub fn table(&self) -> String {
        let width = self
            .categories
            .keys()
            .map(String::len)
            .max()
            .unwrap_or(0)
            .max(8);
        let mut out = format!(
            "{:<width$}  {:>7}  {:>10}  {:>6}\n",
            "category", "passed", "deviations", "failed"
        );
        for (name, counts) in &self.categories {
            let _ = writeln!(
                out,
                "{name:<width$}  {:>7}  {:>10}  {:>6}",
                counts.passed, counts.deviations, counts.failed
            );
        }
        out
    }

    /// `conformance: N passed, D deviations, F failed`.
    pub fn summary_line(&self) -> String {
        format!(
            "conformance: {} passed, {} deviations, {} failed",
            self.passed(),
            self.deviations(),
            self.failed()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, verdict: CaseVerdict) -> CaseResult {
        CaseResult {
            name: name.to_owned(),
            location: "f:1".to_owned(),
            verdict,
        }
    }

    #[test]
    fn counts_by_category_and_renders_the_summary() {
        let mut report = Report::default();
        report.record(case("walk/seed-0001/step-003", CaseVerdict::Passed));
        report.record(case(
            "walk/seed-0001/step-004",
            CaseVerdict::Failed("x".to_owned()),
        ));
        report.record(case(
            "malformed_types/event/a",
            CaseVerdict::Deviated("D1".to_owned()),
        ));
        report.record(case("genesis", CaseVerdict::Passed));
        assert_eq!(
            report.summary_line(),
            "conformance: 2 passed, 1 deviations, 1 failed"
        );
        assert_eq!(
            report.categories()["walk/seed-0001"],
            Counts {
                passed: 1,
                deviations: 0,
                failed: 1
            }
        );
        assert_eq!(report.categories()["genesis"].passed, 1);
        assert_eq!(report.deviation_counts()["D1"], 1);
        assert_eq!(report.failures()[0].name, "walk/seed-0001/step-004");
        let table = report.table();
        assert!(
            table
                .lines()
                .any(|line| line.starts_with("walk/seed-0001") && line.ends_with('1'))
        );
    }
}
