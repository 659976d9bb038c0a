//! `valp report ATTEMPT STATUS`: an external attempt's report, appended to the inbox on a
//! tool's behalf ([`valp_runtime::adapter::report`]); prints the sequence and the file.

use std::io::Write;
use std::process::ExitCode;

use valp_store::ControlRoot;

use super::CommandError;
use crate::cli::ReportArgs;
use valp_runtime::abi::ObservationStatus;
use valp_view::sanitize::display_text;

pub(super) fn run(
    root: &ControlRoot,
    args: &ReportArgs,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let status = match args.status.as_str() {
        "accepted" => ObservationStatus::Accepted,
        "waiting" => ObservationStatus::Waiting,
        "completed" => ObservationStatus::Completed,
        "blocked" => ObservationStatus::Blocked,
        "cancelled" => ObservationStatus::Cancelled,
        "unsupported" => ObservationStatus::Unsupported,
        other => return Err(CommandError::Usage(format!("unknown status {other:?}"))),
    };
    let appended = valp_runtime::adapter::report::report(
        root.layout().root(),
        &args.attempt,
        status,
        args.reason.as_deref(),
        &args.reporter,
    )?;
    writeln!(
        out,
        "reported {} for {} as sequence {}: {}",
        status.as_str(),
        display_text(&args.attempt),
        appended.sequence,
        appended.file
    )?;
    Ok(ExitCode::SUCCESS)
}
