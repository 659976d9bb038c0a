//! `valp audit DIR...`: the gates of [`valp_runtime::audit`] over reference-layout task folders,
//! printed one line per gate (sanitized, since every reason can hold text from the folder) or
//! as one JSON document; exit code 1 when any gate fails.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::CommandError;
use valp_runtime::audit::{FolderAudit, audit_folder};
use valp_view::sanitize::display_line;

pub(super) fn run(
    dirs: &[PathBuf],
    as_json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let mut audits = Vec::with_capacity(dirs.len());
    for dir in dirs {
        if !dir.is_dir() {
            return Err(CommandError::Usage(format!(
                "audit: {} is not a task folder",
                display_line(&dir.display().to_string())
            )));
        }
        audits.push(audit_folder(dir));
    }
    if as_json {
        let document = json!({
            "schema_version": "valp-audit.v1",
            "tasks": audits.iter().map(to_json).collect::<Vec<Value>>(),
        });
        writeln!(out, "{document}")?;
    } else {
        for audit in &audits {
            write_lines(audit, out)?;
        }
    }
    Ok(if audits.iter().any(FolderAudit::failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn write_lines(audit: &FolderAudit, out: &mut dyn Write) -> Result<(), CommandError> {
    let verdict = if audit.failed() { "fail" } else { "pass" };
    writeln!(
        out,
        "audit {}: {verdict}",
        display_line(&audit.dir.display().to_string())
    )?;
    for gate in &audit.gates {
        writeln!(
            out,
            "  {:<17}  {:<4}  {}: {}",
            gate.gate,
            gate.verdict.as_str(),
            gate.category,
            display_line(&gate.detail)
        )?;
    }
    Ok(())
}

fn to_json(audit: &FolderAudit) -> Value {
    json!({
        "dir": audit.dir.display().to_string(),
        "status": if audit.failed() { "fail" } else { "pass" },
        "gates": audit.gates.iter().map(|gate| json!({
            "gate": gate.gate,
            "status": gate.verdict.as_str(),
            "category": gate.category,
            "reason": gate.detail,
        })).collect::<Vec<Value>>(),
    })
}
