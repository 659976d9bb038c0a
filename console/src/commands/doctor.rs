//! `valp doctor` and `valp candidates`: observe the Leader candidates on this machine.
//!
//! Both only observe (RFC 0002 §5.1): they never select a Leader, and the order they print is
//! not a recommendation.

use std::io::Write;
use std::process::ExitCode;

use valp_kernel::canonical::Canonical as _;
use valp_store::ControlRoot;

use super::CommandError;
use valp_runtime::clock::Clock;
use valp_runtime::doctor::{self, ObserveOptions, report};

/// Observes, prints the full report and, given a control root, stores the observation as
/// content-addressed evidence and prints its digest.
pub(super) fn run_doctor(
    root: Option<&ControlRoot>,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let observation = doctor::observe(clock, options);
    report::write_report(&observation, out)?;
    for line in valp_runtime::userfiles::UserFiles::locate().describe() {
        writeln!(out, "{line}")?;
    }
    match root {
        Some(root) => {
            let stored = root.blobs().put(&observation.canonical_bytes())?;
            writeln!(
                out,
                "observation stored as evidence {} ({})",
                stored.digest,
                if stored.existed {
                    "identical bytes were already stored"
                } else {
                    "new"
                }
            )?;
        }
        None => writeln!(out, "observation not stored: no control root")?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Observes and prints one line per candidate or, with `json`, the observation's canonical
/// JSON (`valp-doctor-observation.v1`).
pub(super) fn run_candidates(
    json: bool,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let observation = doctor::observe(clock, options);
    if json {
        out.write_all(&observation.canonical_bytes())?;
    } else {
        report::write_candidate_lines(&observation, out)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;

    use valp_kernel::{Identity, IdentityKind};
    use valp_store::io::OsStorage;

    use super::*;
    use valp_runtime::clock::{FixedClock, Timestamp};
    use valp_runtime::doctor::Observation;

    fn options() -> ObserveOptions {
        ObserveOptions {
            tmux_binary: Some(PathBuf::from("/nonexistent/tmux")),
            ..ObserveOptions::only_sockets([])
        }
    }

    fn clock() -> FixedClock {
        FixedClock::new(Timestamp::from_millis(1_796_042_096_789))
    }

    #[test]
    fn doctor_stores_the_observation_as_evidence() {
        let temp = std::env::temp_dir().join(format!("valp-doctor-cmd-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&temp);
        let id = Identity::new(IdentityKind::Installation, "inst-1").unwrap();
        let root = ControlRoot::init(&temp.join(".valp"), id, Arc::new(OsStorage)).unwrap();
        let mut out = Vec::new();
        let code = run_doctor(Some(&root), &clock(), &options(), &mut out).unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("unavailable  tmux  tmux not found"), "{text}");
        let digest = text
            .lines()
            .find_map(|line| line.strip_prefix("observation stored as evidence "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap()
            .to_owned();
        let stored = root.blobs().get(&digest).unwrap();
        let observation = Observation::decode(&stored).unwrap();
        assert_eq!(
            observation.candidates[0].candidate_id.split(':').next(),
            Some("human")
        );

        let mut again = Vec::new();
        run_doctor(Some(&root), &clock(), &options(), &mut again).unwrap();
        assert!(String::from_utf8(again).unwrap().contains("already stored"));
        std::fs::remove_dir_all(&temp).unwrap();

        let mut unstored = Vec::new();
        run_doctor(None, &clock(), &options(), &mut unstored).unwrap();
        let unstored = String::from_utf8(unstored).unwrap();
        assert!(unstored.ends_with("no control root\n"), "{unstored}");
        // Where the operator's own files are, whether or not they exist.
        assert!(unstored.contains("\nuser config: "), "{unstored}");
        assert!(unstored.contains("\nconsole log: "), "{unstored}");
    }

    #[test]
    fn candidates_as_lines_or_json() {
        let mut lines = Vec::new();
        run_candidates(false, &clock(), &options(), &mut lines).unwrap();
        let lines = String::from_utf8(lines).unwrap();
        assert_eq!(lines.lines().count(), 1, "{lines}");
        assert!(lines.starts_with("1. human:uid-"), "{lines}");
        let mut json = Vec::new();
        run_candidates(true, &clock(), &options(), &mut json).unwrap();
        assert_eq!(
            Observation::decode(&json).unwrap(),
            doctor::observe(&clock(), &options())
        );
    }
}
