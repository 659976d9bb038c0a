//! `valp audit [TASK|DIR]...`: the gates of [`valp_runtime::audit`] over tasks of the control
//! root ([`audit_task`]; every task when no argument is given) and reference-layout task
//! folders (an argument naming an existing folder, [`audit_folder`]), printed one line per gate
//! (sanitized, since every reason can hold text from the folder) or as one JSON document; exit
//! code 1 when any gate fails. The control root is opened only when a task is named (or none
//! is).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::CommandError;
use valp_runtime::audit::task::{audit_task, audit_task_dir};
use valp_runtime::audit::{FolderAudit, audit_folder};
use valp_store::ControlRoot;
use valp_view::sanitize::display_line;

pub(super) fn run(
    root: Option<&Path>,
    targets: &[PathBuf],
    as_json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let mut opened: Option<ControlRoot> = None;
    let mut control = || -> Result<ControlRoot, CommandError> {
        if let Some(root) = &opened {
            return Ok(root.clone());
        }
        let root = super::open_root(root)?;
        opened = Some(root.clone());
        Ok(root)
    };
    let mut audits = Vec::with_capacity(targets.len());
    if targets.is_empty() {
        let root = control()?;
        for dir in root.task_dirs()? {
            audits.push(audit_task_dir(&root, &dir));
        }
    }
    for target in targets {
        if target.is_dir() {
            audits.push(audit_folder(target));
            continue;
        }
        let task = target.to_string_lossy();
        if task.contains(['/', '\\']) {
            // A task id holds no path separator: this names a folder that is not there.
            return Err(CommandError::Usage(format!(
                "audit: {} is not a task folder",
                display_line(&task)
            )));
        }
        let root = control()?;
        if !root
            .layout()
            .task_dir(&task)
            .join("journal.jsonl")
            .is_file()
        {
            return Err(CommandError::Usage(format!(
                "audit: {} is neither a task of the control root nor a task folder",
                display_line(&task)
            )));
        }
        audits.push(audit_task(&root, &task));
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
