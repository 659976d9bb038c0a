//! Verifying a whole control root: every task journal (full replay, against its head anchor),
//! every effect ledger (its chain, its records, that each answers an obligation of its task
//! journal, and against its head anchor like a journal), every operator-action journal (its
//! chain, its records' rules, against its head) and every evidence blob. A head that
//! lags its journal or ledger (a crash between an append's line and its head; the next append
//! catches it up) is a warning, not a problem; a file shorter than its head, or with another
//! line at the anchored seq, is a problem naming the file and the anchored seq.

use std::path::Path;
use std::sync::Arc;

use crate::actions::{ACTIONS_FILE, ActionJournal};
use crate::effects::{EFFECT_LEDGER_FILE, EffectLedger, LAYOUT1_EFFECTS_FILE, verify_against};
use crate::error::StoreError;
use crate::foreign::{FOREIGN_FILE, ForeignJournal};
use crate::journal::Access;
use crate::root::ControlRoot;

/// One line of the verification table.
#[derive(Debug)]
pub struct Check {
    /// `ledger`, `journal`, `snapshot`, `effects`, `actions`, `foreign`, `blobs` or `blob`.
    pub kind: &'static str,
    /// The task folder or blob name.
    pub name: String,
    /// Entries verified (journals) or bytes-equal-digest (blobs: 1).
    pub entries: u64,
    /// Warnings that did not fail the check.
    pub warnings: Vec<String>,
    /// The failure, if the check failed.
    pub problem: Option<StoreError>,
}

/// Everything [`verify`] found.
#[derive(Debug, Default)]
pub struct Verification {
    /// One row per journal, plus one per problem blob and one summary row for good blobs.
    pub checks: Vec<Check>,
}

impl Verification {
    /// Journals (task journals, effect ledgers and the authority ledger) that verified.
    pub fn journals_ok(&self) -> usize {
        self.checks
            .iter()
            .filter(|check| {
                matches!(
                    check.kind,
                    "journal" | "ledger" | "effects" | "actions" | "foreign"
                ) && check.problem.is_none()
            })
            .count()
    }

    /// Checks that failed.
    pub fn problems(&self) -> usize {
        self.checks
            .iter()
            .filter(|check| check.problem.is_some())
            .count()
    }

    /// `verify: N journals ok, M problems`.
    pub fn summary_line(&self) -> String {
        format!(
            "verify: {} journals ok, {} problems",
            self.journals_ok(),
            self.problems()
        )
    }
}

/// A chained file's warnings, and whether its head lags: it names `unit` number `anchored`
/// of `count`.
fn with_lag(
    warnings: &[crate::journal::Warning],
    anchored: Option<u64>,
    count: u64,
    unit: &str,
) -> Vec<String> {
    let mut warnings: Vec<String> = warnings.iter().map(ToString::to_string).collect();
    if let Some(anchored) = anchored.filter(|&anchored| anchored < count) {
        warnings.push(format!(
            "the head anchor names {unit} {anchored} of {count} (it lags after a crash; the \
             next append catches it up)"
        ));
    }
    warnings
}

/// A journal's warnings, and whether its head lags.
fn journal_warnings<M: crate::machine::Machine>(journal: &crate::Journal<M>) -> Vec<String> {
    with_lag(
        journal.warnings(),
        journal.head().map(|head| head.seq),
        journal.len(),
        "entry",
    )
}

/// The rows of a task's snapshots (`valp verify` compares each with the State its replay
/// rebuilt at its line).
fn snapshot_rows(name: &str, snapshots: Vec<crate::snapshot_open::SnapshotCheck>) -> Vec<Check> {
    snapshots
        .into_iter()
        .map(|(path, seq, problem, warning)| Check {
            kind: "snapshot",
            name: format!(
                "{name}/{}",
                path.file_name()
                    .map(|file| file.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ),
            entries: seq,
            warnings: warning.into_iter().collect(),
            problem,
        })
        .collect()
}

/// Called with every line of a task journal that [`verify_observed`] verifies, in order, and its
/// entry as the verify decoded it (what derives files from a task's history checks them with, in
/// the same pass).
pub type LineObserver =
    Box<dyn FnMut(&crate::chain::ChainLine, &valp_kernel::replay::CompactEntry) + Send + Sync>;

/// Verifies the authority ledger and every task journal (read-only: nothing is repaired or
/// rewritten) and every blob.
pub fn verify(root: &ControlRoot) -> Result<Verification, StoreError> {
    verify_observed(root, &mut |_| None)
}

/// [`verify`], with the lines of the task journal in each task folder shown to the observer
/// `observe` gives for that folder, if any.
pub fn verify_observed(
    root: &ControlRoot,
    observe: &mut dyn FnMut(&Path) -> Option<LineObserver>,
) -> Result<Verification, StoreError> {
    let mut verification = Verification::default();
    if root
        .layout()
        .installation_dir()
        .join(crate::journal::JOURNAL_FILE)
        .is_file()
    {
        verification.checks.push(match root.ledger_read_only() {
            Ok(ledger) => Check {
                kind: "ledger",
                name: "installation".to_owned(),
                entries: ledger.len(),
                warnings: journal_warnings(&ledger),
                problem: None,
            },
            Err(problem) => Check {
                kind: "ledger",
                name: "installation".to_owned(),
                entries: 0,
                warnings: Vec::new(),
                problem: Some(problem),
            },
        });
    }
    for dir in root.task_dirs()? {
        let name = dir
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let effects = verify_effects(root, &dir, &name);
        let actions = verify_actions(root, &dir, &name);
        let foreign = verify_foreign(root, &dir, &name);
        let (opened, snapshots) =
            crate::snapshot_open::verify_with_snapshots(root, &dir, observe(&dir));
        let snapshot_rows = snapshot_rows(&name, snapshots);
        let check = match opened {
            Ok(journal) => {
                let mut warnings = journal_warnings(&journal);
                if let Some(revision) = journal.guard().done().ungated_done() {
                    warnings.push(format!(
                        "entry {revision}: recording_completed without a Done policy (accepted under \
                         the reference's rule, e.g. an imported reference store): no Done gate \
                         was evaluated"
                    ));
                }
                Check {
                    kind: "journal",
                    name,
                    entries: journal.len(),
                    warnings,
                    problem: None,
                }
            }
            Err(problem) => Check {
                kind: "journal",
                name,
                entries: 0,
                warnings: Vec::new(),
                problem: Some(problem),
            },
        };
        verification.checks.push(check);
        verification.checks.extend(snapshot_rows);
        verification.checks.extend(effects);
        verification.checks.extend(actions);
        verification.checks.extend(foreign);
    }
    let (good, problems) = root.blobs().verify_all()?;
    verification.checks.push(Check {
        kind: "blobs",
        name: "evidence/sha256".to_owned(),
        entries: good as u64,
        warnings: Vec::new(),
        problem: None,
    });
    for problem in problems {
        let name = match &problem {
            StoreError::Corrupt { path, .. } | StoreError::Io { path, .. } => path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default(),
            _ => String::new(),
        };
        verification.checks.push(Check {
            kind: "blob",
            name,
            entries: 0,
            warnings: Vec::new(),
            problem: Some(problem),
        });
    }
    Ok(verification)
}

/// The check of a task folder's effect ledger, when it has one (a layout-1 `effects.jsonl`
/// left unconverted is a problem: valp no longer reads it).
fn verify_effects(root: &ControlRoot, dir: &Path, name: &str) -> Option<Check> {
    let check = |entries, warnings, problem| Check {
        kind: "effects",
        name: name.to_owned(),
        entries,
        warnings,
        problem,
    };
    if !dir.join(EFFECT_LEDGER_FILE).exists() && !dir.join(LAYOUT1_EFFECTS_FILE).exists() {
        return None;
    }
    let opened = EffectLedger::open(
        dir,
        &root.layout().quarantine_dir(),
        Arc::clone(root.storage()),
        Access::ReadOnly,
    );
    Some(match opened {
        Ok(ledger) => {
            let warnings = with_lag(
                ledger.warnings(),
                ledger.head().map(|head| head.seq + 1),
                ledger.records().len() as u64,
                "record",
            );
            match verify_against(&ledger) {
                Ok(()) => check(ledger.records().len() as u64, warnings, None),
                Err(problem) => check(0, warnings, Some(problem)),
            }
        }
        Err(problem) => check(0, Vec::new(), Some(problem)),
    })
}

/// The check of a task folder's operator-action journal, when it has one.
fn verify_actions(root: &ControlRoot, dir: &Path, name: &str) -> Option<Check> {
    verify_records(dir, name, "actions", ACTIONS_FILE, || {
        let actions = ActionJournal::open(
            dir,
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            Access::ReadOnly,
        )?;
        let count = actions.len() as u64;
        let anchored = actions.head().map(|head| head.seq + 1);
        Ok((
            count,
            with_lag(actions.warnings(), anchored, count, "record"),
        ))
    })
}

/// The check of a task folder's foreign-observation journal, when it has one.
fn verify_foreign(root: &ControlRoot, dir: &Path, name: &str) -> Option<Check> {
    verify_records(dir, name, "foreign", FOREIGN_FILE, || {
        let foreign = ForeignJournal::open(
            dir,
            &root.layout().quarantine_dir(),
            Arc::clone(root.storage()),
            Access::ReadOnly,
        )?;
        let count = foreign.records().len() as u64;
        let anchored = foreign.head().map(|head| head.seq + 1);
        Ok((
            count,
            with_lag(foreign.warnings(), anchored, count, "record"),
        ))
    })
}

/// The check (`kind`) of the chained file `file` of a task folder, when it has one: `open`
/// verifies it and gives its record count and warnings.
fn verify_records(
    dir: &Path,
    name: &str,
    kind: &'static str,
    file: &str,
    open: impl FnOnce() -> Result<(u64, Vec<String>), StoreError>,
) -> Option<Check> {
    if !dir.join(file).exists() {
        return None;
    }
    let (entries, warnings, problem) = match open() {
        Ok((entries, warnings)) => (entries, warnings, None),
        Err(problem) => (0, Vec::new(), Some(problem)),
    };
    Some(Check {
        kind,
        name: name.to_owned(),
        entries,
        warnings,
        problem,
    })
}
