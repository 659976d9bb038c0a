//! `installation.json`: the identity of an installation (`valp-installation.v1`, canonical JSON)
//! and the control-root layout it is stored in.
//!
//! **Layouts.** 1: the journals without head anchors. 2: every journal has its head anchor
//! (`<stem>.head`, see [`head`](crate::head)). 3: every line written has its `recorded_at`
//! (`valp-store-journal.v2`, see [`chain`](crate::chain); lines written before keep none), and a
//! task folder may hold its operator-action journal (`actions.jsonl`, see
//! [`actions`](crate::actions)). 4: task journals have snapshots (`tasks/<task>/snapshots/`, see
//! [`snapshot`](crate::snapshot)) that opens start from; a layout-3 valp would not keep them in
//! step (it appends without moving a snapshot past a `valp recover` cut). This valp reads
//! layout 4 only; a root of layout 1, 2 or 3 is refused with `VALP-E-STORE-UPGRADE-REQUIRED` until `valp upgrade` converts it (see
//! [`upgrade`](crate::upgrade)), and any other `layout_version` (a later layout, 0, a string)
//! with `VALP-E-MIGRATION-UNSUPPORTED`, before anything else in the file is judged.

use std::path::Path;

use valp_kernel::canonical::{Canonical, decode_canonical};
use valp_kernel::json::Value;
use valp_kernel::json::write::Fields;
use valp_kernel::{Identity, IdentityKind, PROTOCOL_VERSION};

use crate::error::StoreError;

/// `schema_version` of `installation.json`.
pub const INSTALLATION_SCHEMA: &str = "valp-installation.v1";
/// The control-root layout this code reads and writes.
pub const LAYOUT_VERSION: i128 = 4;
/// The layouts `valp upgrade` converts from.
pub const PREVIOUS_LAYOUT_VERSIONS: [i128; 3] = [1, 2, 3];

/// The installation's identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// The installation (kind `installation`).
    pub installation_id: Identity,
    /// The protocol version it runs.
    pub protocol_version: String,
    /// The control-root layout version.
    pub layout_version: i128,
}

impl Installation {
    /// A new installation of this protocol version and layout.
    pub fn new(installation_id: Identity) -> Self {
        Self {
            installation_id,
            protocol_version: PROTOCOL_VERSION.to_owned(),
            layout_version: LAYOUT_VERSION,
        }
    }

    /// Reads and checks `installation.json`, which must have the current layout.
    pub fn read(path: &Path) -> Result<Self, StoreError> {
        Self::read_layouts(path, &[LAYOUT_VERSION])
    }

    /// Reads and checks `installation.json` of one of the `accepted` layouts (any other is
    /// refused as the module documentation says).
    pub(crate) fn read_layouts(path: &Path, accepted: &[i128]) -> Result<Self, StoreError> {
        let bytes = std::fs::read(path).map_err(|source| StoreError::io(path, "read", source))?;
        let corrupt = |reason: String| StoreError::Corrupt {
            path: path.to_owned(),
            line: 1,
            byte: 0,
            reason,
        };
        let value = decode_canonical(&bytes).map_err(|error| corrupt(error.to_string()))?;
        let Value::Object(members) = value else {
            return Err(corrupt("installation.json is a JSON object".to_owned()));
        };
        check_layout(path, members.get("layout_version"), accepted)?;
        let keys: Vec<&str> = members.keys().map(String::as_str).collect();
        if keys
            != [
                "installation_id",
                "layout_version",
                "protocol_version",
                "schema_version",
            ]
        {
            return Err(corrupt(format!("unexpected members {keys:?}")));
        }
        if members["schema_version"].as_str() != Some(INSTALLATION_SCHEMA) {
            return Err(corrupt(format!(
                "schema_version must be {INSTALLATION_SCHEMA:?}"
            )));
        }
        let installation_id = identity(&members["installation_id"]).ok_or_else(|| {
            corrupt("installation_id must be an installation identity".to_owned())
        })?;
        let layout_version = match &members["layout_version"] {
            Value::Number(valp_kernel::json::Number::Int(version)) => *version,
            _ => return Err(corrupt("layout_version must be an integer".to_owned())),
        };
        let protocol_version = members["protocol_version"]
            .as_str()
            .ok_or_else(|| corrupt("protocol_version must be a string".to_owned()))?
            .to_owned();
        if protocol_version != PROTOCOL_VERSION {
            return Err(corrupt(format!(
                "protocol_version {protocol_version:?} is not supported (this valp runs {PROTOCOL_VERSION})"
            )));
        }
        Ok(Self {
            installation_id,
            protocol_version,
            layout_version,
        })
    }
}

/// Refuses a `layout_version` that is not one of `accepted` (a missing one is left to the
/// member check, which names it).
fn check_layout(path: &Path, found: Option<&Value>, accepted: &[i128]) -> Result<(), StoreError> {
    let Some(found) = found else {
        return Ok(());
    };
    match found {
        Value::Number(valp_kernel::json::Number::Int(version)) if accepted.contains(version) => {
            Ok(())
        }
        Value::Number(valp_kernel::json::Number::Int(found))
            if PREVIOUS_LAYOUT_VERSIONS.contains(found) =>
        {
            Err(StoreError::UpgradeRequired {
                path: path.to_owned(),
                found: *found,
                current: LAYOUT_VERSION,
            })
        }
        other => Err(StoreError::MigrationUnsupported {
            path: path.to_owned(),
            found: String::from_utf8_lossy(
                &valp_kernel::json::write::canonical_bytes(other).unwrap_or_default(),
            )
            .trim_end()
            .to_owned(),
            current: LAYOUT_VERSION,
        }),
    }
}

fn identity(value: &Value) -> Option<Identity> {
    let members = value.as_object()?;
    if members.len() != 2 || members.get("kind")?.as_str()? != IdentityKind::Installation.as_str() {
        return None;
    }
    Identity::new(IdentityKind::Installation, members.get("value")?.as_str()?).ok()
}

impl Canonical for Installation {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.canonical("installation_id", &self.installation_id);
        fields.int("layout_version", self.layout_version);
        fields.str("protocol_version", &self.protocol_version);
        fields.str("schema_version", INSTALLATION_SCHEMA);
        fields.end();
    }
}
