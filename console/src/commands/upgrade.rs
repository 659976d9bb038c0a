//! `valp upgrade`: a control root of layout 1 or 2 to layout 3 (see `valp_store::upgrade`).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use valp_store::ControlRoot;
use valp_store::io::OsStorage;
use valp_store::upgrade::{plan, upgrade};

use super::{CommandError, confirm};

pub(super) fn run(
    root: &Path,
    yes: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let planned = plan(root, Arc::new(OsStorage))?;
    let Some(backup) = &planned.backup else {
        writeln!(
            out,
            "{} is at layout {}: nothing to upgrade",
            root.display(),
            planned.layout_version
        )?;
        return Ok(ExitCode::SUCCESS);
    };
    writeln!(
        out,
        "{} has layout {}; valp upgrade will:",
        root.display(),
        planned.layout_version
    )?;
    writeln!(out, "  1. copy it byte for byte to {}", backup.display())?;
    writeln!(
        out,
        "  2. verify the installation ledger and {} task journals by replay{}{}, and write a \
         snapshot of each task journal",
        planned.task_dirs.len(),
        if planned.layout_version == 1 {
            " and write their head anchors"
        } else {
            ""
        },
        if planned.layout_version < 3 {
            "; the lines written so far keep no time (shown as unknown)"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  3. set layout_version {}",
        valp_store::installation::LAYOUT_VERSION
    )?;
    if !yes {
        confirm::typed(
            input,
            out,
            "type upgrade to go on",
            "upgrade",
            "the control root was not changed",
        )?;
    }
    let storage: Arc<dyn valp_store::io::Storage> = Arc::new(OsStorage);
    let upgraded = upgrade(root, &storage)?;
    if let Some(backup) = &upgraded.backup {
        writeln!(out, "backup: {}", backup.display())?;
    }
    for step in &upgraded.steps {
        writeln!(out, "{step}")?;
    }
    writeln!(
        out,
        "upgraded {} to layout {}",
        root.display(),
        valp_store::installation::LAYOUT_VERSION
    )?;
    super::verify::run(&ControlRoot::open(root, Arc::new(OsStorage))?, out)
}
