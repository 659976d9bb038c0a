//! `valp verify`: the store's verification, and each task folder's `correction-fold.json`
//! checked against the fold of the lines the store verified
//! ([`valp_runtime::audit::fold_check`]): a `snapshot <task>/correction-fold.json` row, a problem
//! (`VALP-E-STORE-SNAPSHOT-MISMATCH`) when it is not that fold.

use std::io::Write;
use std::process::ExitCode;

use valp_runtime::audit::fold_check::FoldChecks;
use valp_store::verify::{Check, Verification, verify_observed};
use valp_store::{ControlRoot, StoreError};

use super::CommandError;

pub(super) fn run(root: &ControlRoot, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    let mut folds = FoldChecks::default();
    let mut verification = verify_observed(root, &mut |dir| folds.observer(dir))?;
    let rows = fold_rows(&verification, folds);
    verification.checks.extend(rows);
    let width = verification
        .checks
        .iter()
        .map(|check| check.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    writeln!(
        out,
        "{:<8}  {:<width$}  {:>8}  status",
        "kind", "name", "entries"
    )?;
    for check in &verification.checks {
        let status = match &check.problem {
            Some(problem) => format!("PROBLEM {problem}"),
            None if check.warnings.is_empty() => "ok".to_owned(),
            None => format!("ok, warning: {}", check.warnings.join("; ")),
        };
        writeln!(
            out,
            "{:<8}  {:<width$}  {:>8}  {status}",
            check.kind, check.name, check.entries
        )?;
    }
    for check in &verification.checks {
        match (check.kind, &check.problem) {
            ("journal", Some(_)) => writeln!(
                out,
                "to see what can be kept of {}: valp recover {}",
                check.name, check.name
            )?,
            ("actions", Some(_)) => writeln!(
                out,
                "to see what can be kept of the operator actions of {}: valp recover {} --actions",
                check.name, check.name
            )?,
            ("ledger", Some(_)) => writeln!(
                out,
                "to see what can be kept of the ledger: valp recover --ledger"
            )?,
            ("effects", Some(StoreError::HeadMismatch { .. } | StoreError::HeadMissing { .. })) => {
                writeln!(
                    out,
                    "the effect ledger of {} does not match its head (`valp recover` does not \
                     cut effect ledgers): restore tasks/{}/effect-ledger.jsonl and \
                     effect-ledger.head from a backup of the task folder; a record lost from it \
                     would have its cancel carried out again",
                    check.name, check.name
                )?;
            }
            _ => {}
        }
    }
    writeln!(out, "{}", verification.summary_line())?;
    Ok(if verification.problems() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The rows of the task folders' `correction-fold.json` files (none for a task whose journal
/// did not verify: that is its journal's problem).
fn fold_rows(verification: &Verification, folds: FoldChecks) -> Vec<Check> {
    let folder = |dir: &std::path::Path| {
        dir.file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let verified = |dir: &std::path::Path| {
        let name = folder(dir);
        verification
            .checks
            .iter()
            .any(|check| check.kind == "journal" && check.name == name && check.problem.is_none())
    };
    folds
        .results(verified)
        .into_iter()
        .flatten()
        .map(|check| Check {
            kind: "snapshot",
            name: format!(
                "{}/{}",
                folder(&check.dir),
                valp_runtime::audit::fold_cache::FILE_NAME
            ),
            entries: check.seq,
            warnings: Vec::new(),
            problem: check.problem.map(|reason| StoreError::SnapshotMismatch {
                path: check.path,
                seq: check.seq,
                reason,
            }),
        })
        .collect()
}
