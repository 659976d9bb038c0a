//! `valp verify`.

use std::io::Write;
use std::process::ExitCode;

use valp_store::verify::verify;
use valp_store::{ControlRoot, StoreError};

use super::CommandError;

pub(super) fn run(root: &ControlRoot, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    let verification = verify(root)?;
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
