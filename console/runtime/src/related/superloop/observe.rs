//! What a SuperLoop state says about people and Runners, kept as observations only: the human
//! resolutions (`partResolutions`, `goalResolutions`) and the Runner lease
//! (`locks/active-run.json`).
//!
//! - A **resolution** is an audited reopen (a `blocked`/`needs-human` Part or Goal verdict sent
//!   back to work) with an `actor` string, a reason and the run it rests on. It is shown with
//!   whether that run is bound (a `recordedRuns` entry with the same run id, artifact and JCS
//!   digest); it is never authority: `actor` is a local string, not an identity, so it never
//!   becomes a Leader, an approval or a review, and it changes no Part's status (the state's
//!   items alone say where a Part stands).
//! - The **lease** is a liveness hint: "a Runner holds a lease for run X until T". It is read
//!   without taking any SuperLoop lock, its `token` is never copied, it is never an attempt
//!   `running`, and its `pid`/`hostname` are a lock owner, never a process or submission proof.
//!   A lease of another generation or contract is shown as such (stale).
//!
//! A malformed resolution or lease is listed as a problem, never repaired.

use serde::Deserialize;
use serde_json::Value;

use super::{Loop, read_file};

/// Where a Runner's lease is, relative to the loop folder.
pub const LEASE_FILE: &str = "locks/active-run.json";

/// One human resolution record, as written (unauthenticated).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Resolution {
    /// Its id.
    pub id: String,
    /// The Part reopened (Part resolutions only).
    #[serde(default)]
    pub part_id: Option<String>,
    /// The status it reopened from (Part resolutions).
    #[serde(default)]
    pub from_status: Option<String>,
    /// The Goal verdict it resolved (Goal resolutions).
    #[serde(default)]
    pub from_verdict: Option<String>,
    /// Who, as a local string (never an identity).
    pub actor: String,
    /// Why.
    pub reason: String,
    /// The run it rests on.
    pub evidence_run_id: String,
    /// That run's log.
    pub evidence_run_artifact: String,
    /// That run log's JCS digest.
    pub evidence_run_sha256: String,
    /// When.
    pub resolved_at: String,
}

/// A Runner lease, without its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The run it is for.
    pub run_id: String,
    /// Whether it is this state's generation.
    pub same_generation: bool,
    /// Whether it is this contract's.
    pub same_contract: bool,
    /// The lock owner (`pid` on `hostname`): not a process proof.
    pub holder: String,
    /// When it started, as written.
    pub started_at: String,
    /// The last heartbeat, as written.
    pub heartbeat_at: String,
    /// Until when, as written.
    pub expires_at: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "the token is decoded for the exact shape and never kept"
)]
struct LeaseFile {
    token: String,
    run_id: String,
    generation: String,
    contract_sha256: String,
    pid: u64,
    hostname: String,
    started_at: String,
    heartbeat_at: String,
    expires_at: String,
}

/// The resolutions of `found`'s state (Part ones, then Goal ones), and what was not read.
pub fn resolutions(found: &Loop) -> (Vec<Resolution>, Vec<String>) {
    let mut taken = Vec::new();
    let mut problems = Vec::new();
    let lists = [
        ("partResolutions", &found.state.part_resolutions),
        ("goalResolutions", &found.state.goal_resolutions),
    ];
    for (name, list) in lists {
        for (index, value) in list.iter().enumerate() {
            match serde_json::from_value::<Resolution>(value.clone()) {
                Ok(resolution) => taken.push(resolution),
                Err(error) => problems.push(format!("state.json {name}[{index}]: {error}")),
            }
        }
    }
    (taken, problems)
}

/// Whether `resolution`'s run is a recorded run with that artifact and digest.
pub fn run_bound(found: &Loop, resolution: &Resolution) -> bool {
    found.state.recorded_runs.iter().any(|run| {
        run.run_id == resolution.evidence_run_id
            && run.artifact == resolution.evidence_run_artifact
            && run.sha256 == resolution.evidence_run_sha256
    })
}

/// The Runner lease, if there is one (read-only, no lock taken).
pub fn lease(found: &Loop) -> Result<Option<Lease>, String> {
    if !found.dir.join(LEASE_FILE).exists() {
        return Ok(None);
    }
    let bytes = read_file(&found.dir, LEASE_FILE).map_err(|error| error.to_string())?;
    let file: LeaseFile = serde_json::from_slice(&bytes)
        .map_err(|error| format!("{LEASE_FILE}: malformed: {error}"))?;
    Ok(Some(Lease {
        run_id: file.run_id,
        same_generation: file.generation == found.generation,
        same_contract: file.contract_sha256 == found.contract.digest,
        holder: format!("pid {} on {}", file.pid, file.hostname),
        started_at: file.started_at,
        heartbeat_at: file.heartbeat_at,
        expires_at: file.expires_at,
    }))
}

/// The resolutions and the lease as the state descriptor carries them, with the problems.
pub fn described(found: &Loop) -> (Value, Value, Vec<String>) {
    let (taken, mut problems) = resolutions(found);
    let resolutions = taken
        .iter()
        .map(|resolution| {
            serde_json::json!({
                "id": resolution.id,
                "part": resolution.part_id,
                "from": resolution.from_status.as_ref().or(resolution.from_verdict.as_ref()),
                "actor": {"text": resolution.actor, "authenticated": false},
                "reason": resolution.reason,
                "evidence_run": resolution.evidence_run_id,
                "run_bound": run_bound(found, resolution),
                "resolved_at": resolution.resolved_at,
            })
        })
        .collect();
    let lease = match lease(found) {
        Ok(Some(lease)) => serde_json::json!({
            "run_id": lease.run_id,
            "same_generation": lease.same_generation,
            "same_contract": lease.same_contract,
            "holder": lease.holder,
            "started_at": lease.started_at,
            "heartbeat_at": lease.heartbeat_at,
            "expires_at": lease.expires_at,
            "meaning": "liveness hint only: not an attempt, not a process proof",
        }),
        Ok(None) => Value::Null,
        Err(why) => {
            problems.push(why);
            Value::Null
        }
    };
    (Value::Array(resolutions), lease, problems)
}
