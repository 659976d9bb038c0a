//! `correction-fold.json`: a task's correction-cycle [`Fold`] written down in its task folder,
//! so that a process that starts (`valp task status`, the console, the driver) folds only the
//! lines after it instead of the whole journal. A derived cache, never trusted: canonical JSON
//! + LF of `valp-correction-fold.v1` (`schemas/console/correction-fold.schema.json`)
//!
//! ```text
//! {"entry_digest","fold_digest","length","opened","rounds":[{"ended_at","evidence_refs",
//!  "reason","receipt_refs","rejected_refs","required_actions","round","started_at","status",
//!  "trigger","work_item"}],"schema_version","seq","task_id","unfixed":null|{"round","status"}}
//! ```
//!
//! bound to the journal line it was folded up to as a snapshot is (`seq`, `entry_digest`,
//! `length`: the line's end, LF included), with the number of rounds `opened`, the newest round
//! that ended blocked or cancelled (`unfixed`), the open rounds and the newest
//! [`NEWEST_ROUNDS`] (a long history has hundreds of thousands of rounds: 277,189 in a
//! 10^6-entry demo; the file stays small, and holds every round of a task with fewer), owners
//! not named (they are named from the plan when the cycle is shown), and `fold_digest`, the
//! SHA-256 of the canonical object without that member (+ LF). [`load`] uses it only if it decodes exactly
//! (members, types, statuses, rounds numbered in increasing order, canonical bytes), its digest matches
//! and it names the task; [`Fold::advance`] then checks that the journal's line at its binding
//! has its entry digest, else folds from the genesis. Absent or refused, the fold starts from
//! the genesis and a writer ([`write`]: atomically, replacing) writes it again; an older valp
//! ignores the file.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use valp_kernel::canonical::{decode_canonical, digest_text, is_digest};
use valp_kernel::json::write::{canonical_bytes, write_object};
use valp_kernel::json::{Number, Value};
use valp_store::journal::LineBinding;

use super::derive::{Deriver, Round};
use super::fold::Fold;
use crate::adapter::files::write_replacing;

/// The file, in the task folder.
pub const FILE_NAME: &str = "correction-fold.json";
/// Its `schema_version`.
pub const SCHEMA_VERSION: &str = "valp-correction-fold.v1";

const MEMBERS: [&str; 9] = [
    "entry_digest",
    "fold_digest",
    "length",
    "opened",
    "rounds",
    "schema_version",
    "seq",
    "task_id",
    "unfixed",
];

/// Rounds the file holds besides the open ones: the newest (a task that has had no more has
/// them all, so a process that needs the whole cycle can resume from it).
pub const NEWEST_ROUNDS: u64 = 1024;

const ROUND_MEMBERS: [&str; 11] = [
    "ended_at",
    "evidence_refs",
    "reason",
    "receipt_refs",
    "rejected_refs",
    "required_actions",
    "round",
    "started_at",
    "status",
    "trigger",
    "work_item",
];

/// The statuses a round can have.
const STATUSES: [&str; 5] = ["open", "fixing", "fixed", "blocked", "cancelled"];

type Members = std::collections::BTreeMap<String, Value>;

/// The cache file of the task folder `task_dir`.
pub fn path(task_dir: &Path) -> PathBuf {
    task_dir.join(FILE_NAME)
}

/// The file's bytes for `fold` of the task `task_id`; `None` for a fold that has read no line.
pub fn encode(task_id: &str, fold: &Fold) -> Option<Vec<u8>> {
    let at = fold.at()?;
    let deriver = fold.deriver().kept(NEWEST_ROUNDS);
    let mut members = Members::new();
    members.insert("entry_digest".into(), text(&at.entry_digest));
    members.insert("length".into(), int(at.length));
    members.insert("opened".into(), int(deriver.opened()));
    members.insert(
        "rounds".into(),
        Value::Array(deriver.rounds().iter().map(round_value).collect()),
    );
    let unfixed = deriver.unfixed().map_or(Value::Null, |(round, status)| {
        Value::Object(Members::from([
            ("round".to_owned(), int(round)),
            ("status".to_owned(), text(status)),
        ]))
    });
    members.insert("unfixed".into(), unfixed);
    members.insert("schema_version".into(), text(SCHEMA_VERSION));
    members.insert("seq".into(), int(at.seq));
    members.insert("task_id".into(), text(task_id));
    let digest = signed(&members).ok()?;
    members.insert("fold_digest".into(), text(&digest));
    canonical_bytes(&Value::Object(members)).ok()
}

/// The fold the file's `bytes` hold for the task `task_id`; why it is not one otherwise.
pub fn decode(bytes: &[u8], task_id: &str) -> Result<Fold, String> {
    let (owner, fold) = decode_any(bytes)?;
    if owner != task_id {
        return Err(format!(
            "it is the fold of task {owner:?}, not of task {task_id:?}"
        ));
    }
    Ok(fold)
}

/// The task and the fold the file's `bytes` hold; why they are not one otherwise.
pub fn decode_any(bytes: &[u8]) -> Result<(String, Fold), String> {
    let value = decode_canonical(bytes).map_err(|error| format!("not canonical JSON: {error}"))?;
    let Value::Object(mut members) = value else {
        return Err("it is not a JSON object".to_owned());
    };
    exact_members(&members, &MEMBERS, "")?;
    if members["schema_version"].as_str() != Some(SCHEMA_VERSION) {
        return Err(format!("schema_version must be {SCHEMA_VERSION:?}"));
    }
    let claimed = string(&members, "fold_digest")?;
    members.remove("fold_digest");
    if !is_digest(&claimed) || signed(&members)? != claimed {
        return Err("fold_digest does not match its contents".to_owned());
    }
    let task_id = string(&members, "task_id")?;
    let entry_digest = string(&members, "entry_digest")?;
    if !is_digest(&entry_digest) {
        return Err("entry_digest must be a sha256 digest".to_owned());
    }
    let seq = count(&members, "seq")?;
    let length = count(&members, "length")?;
    if seq == 0 || length == 0 {
        return Err("seq and length must be at least 1".to_owned());
    }
    let Value::Array(list) = &members["rounds"] else {
        return Err("rounds must be a list".to_owned());
    };
    let rounds = list
        .iter()
        .enumerate()
        .map(|(index, value)| decode_round(index, value))
        .collect::<Result<Vec<Round>, String>>()?;
    let unfixed = match &members["unfixed"] {
        Value::Null => None,
        Value::Object(unfixed) => {
            exact_members(unfixed, &["round", "status"], "unfixed")?;
            let status = known_status(&string(unfixed, "status")?, "unfixed")?;
            Some((count(unfixed, "round")?, status))
        }
        _ => return Err("unfixed must be null or an object".to_owned()),
    };
    let deriver = Deriver::resume(rounds, count(&members, "opened")?, unfixed)?;
    let at = LineBinding {
        seq,
        entry_digest,
        length,
    };
    Ok((task_id, Fold::resumed(deriver, at)))
}

/// The fold in the task folder `task_dir` for the task `task_id`; why it cannot be used
/// otherwise (including that there is none).
pub fn load(task_dir: &Path, task_id: &str) -> Result<Fold, String> {
    let bytes =
        std::fs::read(path(task_dir)).map_err(|error| format!("cannot be read: {error}"))?;
    decode(&bytes, task_id)
}

/// Writes `fold` of the task `task_id` into the task folder `task_dir`, atomically replacing
/// the file there; nothing for a fold that has read no line.
pub fn write(task_dir: &Path, task_id: &str, fold: &Fold) -> std::io::Result<()> {
    match encode(task_id, fold) {
        Some(bytes) => write_replacing(&path(task_dir), &bytes),
        None => Ok(()),
    }
}

/// After `valp recover` kept the first `kept` entries of the task journal in `task_dir`: moves
/// the folder's file, when it is bound to a line after them, to `quarantine` as
/// `<folder>.correction-fold.json.beyond-recover` (as recover moves such snapshots), so that
/// `valp verify` does not list it; returns where it went. A file that does not decode stays
/// (verify names it).
pub fn set_aside_beyond(
    task_dir: &Path,
    kept: u64,
    quarantine: &Path,
) -> std::io::Result<Option<PathBuf>> {
    let Ok(bytes) = std::fs::read(path(task_dir)) else {
        return Ok(None);
    };
    let beyond = decode_any(&bytes)
        .ok()
        .and_then(|(_, fold)| Some(fold.at()?.seq))
        .is_some_and(|seq| seq > kept);
    if !beyond {
        return Ok(None);
    }
    let folder = task_dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let target = quarantine.join(format!("{folder}.{FILE_NAME}.beyond-recover"));
    std::fs::create_dir_all(quarantine)?;
    std::fs::rename(path(task_dir), &target)?;
    crate::adapter::files::sync_dir(task_dir)?;
    Ok(Some(target))
}

/// `fold_digest` of the object `members` (without it).
fn signed(members: &Members) -> Result<String, String> {
    // Written from the members as they are (a verify checks a file of ~1 MB: no copy of its
    // tree to wrap it in a value).
    let mut unsigned = Vec::new();
    write_object(&mut unsigned, members).map_err(|error| format!("not canonical JSON: {error}"))?;
    unsigned.push(b'\n');
    Ok(digest_text(&Sha256::digest(&unsigned).into()))
}

fn round_value(round: &Round) -> Value {
    let optional = |value: &Option<String>| value.as_deref().map_or(Value::Null, text);
    let list = |values: &[String]| Value::Array(values.iter().map(|value| text(value)).collect());
    let members: Members = [
        ("ended_at", optional(&round.ended_at)),
        ("evidence_refs", list(&round.evidence_refs)),
        ("reason", text(&round.reason)),
        ("receipt_refs", list(&round.receipt_refs)),
        ("rejected_refs", list(&round.rejected_refs)),
        ("required_actions", list(&round.required_actions)),
        ("round", int(round.round)),
        ("started_at", optional(&round.started_at)),
        ("status", text(round.status)),
        ("trigger", text(&round.trigger)),
        ("work_item", optional(&round.work_item)),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    Value::Object(members)
}

fn decode_round(index: usize, value: &Value) -> Result<Round, String> {
    let at = format!("rounds[{index}]");
    let members = value
        .as_object()
        .ok_or_else(|| format!("{at} must be an object"))?;
    exact_members(members, &ROUND_MEMBERS, &at)?;
    let within = |error: String| format!("{at}.{error}");
    let number = count(members, "round").map_err(within)?;
    let status = known_status(&string(members, "status").map_err(within)?, &at)?;
    Ok(Round {
        round: number,
        trigger: string(members, "trigger").map_err(within)?,
        owner: "unknown".to_owned(),
        status,
        started_at: optional(members, "started_at").map_err(within)?,
        ended_at: optional(members, "ended_at").map_err(within)?,
        reason: string(members, "reason").map_err(within)?,
        rejected_refs: strings(members, "rejected_refs").map_err(within)?,
        required_actions: strings(members, "required_actions").map_err(within)?,
        evidence_refs: strings(members, "evidence_refs").map_err(within)?,
        receipt_refs: strings(members, "receipt_refs").map_err(within)?,
        work_item: optional(members, "work_item").map_err(within)?,
    })
}

fn known_status(status: &str, at: &str) -> Result<&'static str, String> {
    STATUSES
        .into_iter()
        .find(|known| *known == status)
        .ok_or_else(|| format!("{at}.status {status:?} is not one of {STATUSES:?}"))
}

fn exact_members(members: &Members, expected: &[&str], at: &str) -> Result<(), String> {
    let keys: Vec<&str> = members.keys().map(String::as_str).collect();
    if keys == expected {
        Ok(())
    } else {
        let at = if at.is_empty() { "it" } else { at };
        Err(format!("{at} has members {keys:?}, expected {expected:?}"))
    }
}

fn text(value: &str) -> Value {
    Value::String(value.to_owned())
}

fn int(value: u64) -> Value {
    Value::Number(Number::Int(i128::from(value)))
}

fn string(members: &Members, key: &str) -> Result<String, String> {
    members[key]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("{key} must be a string"))
}

fn optional(members: &Members, key: &str) -> Result<Option<String>, String> {
    match &members[key] {
        Value::Null => Ok(None),
        Value::String(value) => Ok(Some(value.clone())),
        _ => Err(format!("{key} must be a string or null")),
    }
}

fn strings(members: &Members, key: &str) -> Result<Vec<String>, String> {
    let Value::Array(list) = &members[key] else {
        return Err(format!("{key} must be a list of strings"));
    };
    list.iter()
        .map(|value| value.as_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| format!("{key} must be a list of strings"))
}

fn count(members: &Members, key: &str) -> Result<u64, String> {
    match &members[key] {
        Value::Number(Number::Int(value)) => {
            u64::try_from(*value).map_err(|_| format!("{key} must be a count"))
        }
        _ => Err(format!("{key} must be an integer")),
    }
}
