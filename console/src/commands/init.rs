//! `valp init`.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use valp_kernel::{Identity, IdentityKind};
use valp_store::ControlRoot;
use valp_store::io::OsStorage;

use super::CommandError;
use valp_view::sanitize::display_text;

/// `inst-` and 20 hex digits from the operating system's random source.
pub(super) fn fresh_installation_id() -> Result<String, CommandError> {
    let mut bytes = [0_u8; 10];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut bytes))
        .map_err(|error| {
            CommandError::Usage(format!("cannot read /dev/urandom for a fresh id: {error}"))
        })?;
    let mut id = String::from("inst-");
    for byte in bytes {
        let _ = write!(id, "{byte:02x}");
    }
    Ok(id)
}

/// Creates the control root at `root`.
pub(super) fn create(
    root: &Path,
    installation_id: Option<String>,
) -> Result<ControlRoot, CommandError> {
    let value = match installation_id {
        Some(value) => value,
        None => fresh_installation_id()?,
    };
    let id = Identity::new(IdentityKind::Installation, value)
        .map_err(|_| CommandError::Usage("--installation-id must not be empty".to_owned()))?;
    Ok(ControlRoot::init(root, id, Arc::new(OsStorage))?)
}

pub(super) fn run(
    root: &Path,
    installation_id: Option<String>,
    out: &mut dyn Write,
) -> Result<std::process::ExitCode, CommandError> {
    let created = create(root, installation_id)?;
    writeln!(
        out,
        "initialised installation {} at {}",
        display_text(created.installation().installation_id.value()),
        super::shown(root)
    )?;
    Ok(ExitCode::SUCCESS)
}
