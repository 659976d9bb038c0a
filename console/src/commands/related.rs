//! `valp ingest agentops`: AgentOps verdicts shown as foreign review evidence, read-only.
//!
//! Prints one block per verdict (origin, evidence content digest, the exact outcome mapping,
//! verification levels, declared independence, validation time, criteria, findings, unbound
//! references) and one `rejected:` line per file not taken. Every foreign string goes through
//! the sanitizer. Without `--record` nothing is written anywhere and no control root is opened.
//! With `--record --task TASK [--item ID]` each verdict taken is kept in that task's
//! foreign-observation journal (Evidence + Claim + Review observation,
//! [`valp_runtime::related::record`]); rejected files are not recorded. Without `--item`, a
//! task whose plan has a `[related]` AgentOps mapping places each verdict by it (a verdict it
//! does not name, or names twice differently, is listed and not recorded: never guessed);
//! without either, verdicts are recorded for the task as a whole. Never a kernel event:
//! a foreign PASS is never a `review_passed`, never Done. Exit code 3 when a file was rejected.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::CommandError;
use crate::cli::IngestCommand;
use valp_runtime::plan::related::Target;
use valp_runtime::related::agentops::{
    self, ClaimResult, Independence, Ingested, Outcome, ReviewVerdict,
};
use valp_runtime::related::record::{self, Kept};
use valp_view::sanitize::{display_line, display_text};

/// Runs `valp ingest …`.
pub(super) fn run(
    command: IngestCommand,
    root: Option<&Path>,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match command {
        IngestCommand::Agentops {
            dir,
            task,
            item,
            record,
        } => {
            let target = match (&task, record) {
                (Some(task), true) => Some((super::open_root(root)?, task.as_str())),
                _ => None,
            };
            agentops(
                dir.as_deref(),
                task.as_deref(),
                item.as_deref(),
                target,
                out,
            )
        }
    }
}

/// Runs `valp ingest agentops [DIR] [--task TASK]`.
fn agentops(
    dir: Option<&Path>,
    task: Option<&str>,
    item: Option<&str>,
    record: Option<(valp_store::ControlRoot, &str)>,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let dir = dir.unwrap_or_else(|| Path::new(agentops::DEFAULT_DIR));
    let report = agentops::ingest_dir(dir).map_err(|error| {
        CommandError::Usage(format!("agentops folder {}: {error}", super::shown(dir)))
    })?;
    writeln!(out, "agentops: {} (read-only)", super::shown(dir))?;
    match task {
        Some(task) => writeln!(
            out,
            "task: {} (named on the command line)",
            display_text(task)
        )?,
        None => writeln!(out, "task: none named (give --task; never guessed)")?,
    }
    for verdict in &report.verdicts {
        write_verdict(verdict, out)?;
    }
    for rejection in &report.rejections {
        writeln!(
            out,
            "rejected: {}: {}",
            display_text(&rejection.file),
            display_line(&rejection.reason.to_string())
        )?;
    }
    writeln!(
        out,
        "agentops: {} verdicts, {} manifests, {} intents, {} rejected",
        report.verdicts.len(),
        report.manifests.len(),
        report.intents.len(),
        report.rejections.len()
    )?;
    if let Some((root, task)) = record {
        let kept = record_verdicts(&root, task, item, &report, out)?;
        write_kept(&kept, out)?;
    }
    Ok(if report.rejections.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

/// Records the verdicts for `task`: all on `item` when the command line names one, else where
/// the task plan's `[related]` mapping places them (the others listed, not recorded), else on
/// the task as a whole.
fn record_verdicts(
    root: &valp_store::ControlRoot,
    task: &str,
    item: Option<&str>,
    report: &agentops::Report,
    out: &mut dyn Write,
) -> Result<Vec<Kept>, CommandError> {
    let refused = |error: &dyn std::fmt::Display| {
        CommandError::Usage(format!("recording in task {task}: {error}"))
    };
    let related = match item {
        Some(_) => None,
        None => valp_runtime::plan::of_task(root, task)
            .map_err(|error| refused(&error))?
            .0
            .related
            .filter(|related| !related.agentops.is_empty()),
    };
    let Some(related) = related else {
        return record::record_agentops(root, task, item, report).map_err(|error| refused(&error));
    };
    writeln!(out, "mapping: the plan's [related] section")?;
    let (kept, unplaced) = record::record_agentops_by_plan(root, task, &related, report)
        .map_err(|error| refused(&error))?;
    for verdict in unplaced {
        let why = match verdict.target {
            Target::Ambiguous(targets) => format!(
                "ambiguous: mapped to {}",
                targets
                    .iter()
                    .map(|target| target.as_deref().map_or_else(
                        || "the task".to_owned(),
                        |item| format!("item {}", display_text(item))
                    ))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ),
            Target::Unmapped | Target::Mapped(_) => {
                "no [related.agentops] entry names its verdict or subject".to_owned()
            }
        };
        writeln!(
            out,
            "not recorded: {}: {why} (never guessed)",
            display_text(&verdict.file)
        )?;
    }
    Ok(kept)
}

fn write_kept(kept: &[Kept], out: &mut dyn Write) -> std::io::Result<()> {
    for kept in kept {
        writeln!(
            out,
            "recorded: {} {} evidence {} claim {} review {}{}",
            display_text(&kept.record.observation_id),
            kept.record.work_item_id.as_deref().map_or_else(
                || "task".to_owned(),
                |item| format!("item {}", display_text(item))
            ),
            kept.evidence.evidence_id.value(),
            kept.record.claim.map_or("-", |(claim, _)| claim.as_str()),
            kept.record.claim.map_or("-", |(_, review)| review.as_str()),
            if kept.written {
                ""
            } else {
                " (already recorded)"
            }
        )?;
    }
    Ok(())
}

fn write_verdict(ingested: &Ingested, out: &mut dyn Write) -> std::io::Result<()> {
    let verdict = &ingested.verdict;
    let claim = match ingested.mapped.claim {
        ClaimResult::Pass => "pass (supported by a foreign review; not a VALP review, not Done)",
        ClaimResult::Fail => "fail",
        ClaimResult::Unknown => "unknown (not proven: neither pass nor fail)",
    };
    let review = match ingested.mapped.review {
        ReviewVerdict::Pass => "pass",
        ReviewVerdict::Fail => "fail",
        ReviewVerdict::Blocked => "blocked",
    };
    writeln!(out, "verdict {}", display_text(&ingested.file))?;
    writeln!(
        out,
        "  origin: agentops {}, artifact_digest agentops-c14n-nolf:{}",
        display_text(&verdict.schema_version),
        verdict.artifact_digest
    )?;
    writeln!(
        out,
        "  evidence content digest: {}",
        ingested.content_digest
    )?;
    writeln!(
        out,
        "  outcome: {} -> claim {claim}; review {review}",
        outcome_text(verdict.verdict)
    )?;
    writeln!(out, "  levels: {}", ingested.levels.names().join(", "))?;
    if !ingested.byte_canonical {
        writeln!(out, "  note: file bytes are not the canonical form plus LF")?;
    }
    writeln!(out, "  subject: {}", verdict.subject_manifest_digest)?;
    writeln!(out, "  acceptance: {}", verdict.acceptance_digest)?;
    match &ingested.independence {
        Independence::Declared { author, validator } => writeln!(
            out,
            "  independence: declared (author {}, validator {})",
            display_text(author),
            display_text(validator)
        )?,
        Independence::NotEstablished(why) => {
            writeln!(out, "  independence: not established ({why})")?;
        }
    }
    match &verdict.freshness_attestation {
        Some(fresh) => writeln!(
            out,
            "  freshness: declared by {:?} attester {}",
            fresh.source,
            display_text(&fresh.attester_identity)
        )?,
        None => writeln!(out, "  freshness: none declared")?,
    }
    writeln!(
        out,
        "  validated_at: {}",
        display_text(&verdict.validated_at)
    )?;
    for criterion in &verdict.criteria {
        writeln!(
            out,
            "  criterion {}: {}",
            display_text(&criterion.id),
            outcome_text(criterion.result)
        )?;
    }
    for finding in &verdict.findings {
        writeln!(
            out,
            "  finding {}{}: {}",
            display_text(&finding.id),
            finding
                .class
                .as_deref()
                .map(|class| format!(" [{}]", display_text(class)))
                .unwrap_or_default(),
            display_line(&finding.summary)
        )?;
    }
    writeln!(
        out,
        "  checked {}, not_checked {}, evidence_refs {} (unbound labels, not resolved)",
        verdict.checked.len(),
        verdict.not_checked.len(),
        verdict.evidence_refs.len()
    )
}

/// A foreign outcome with its VALP claim result, as one word pair.
const fn outcome_text(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::NotProven => "NOT_PROVEN",
    }
}
