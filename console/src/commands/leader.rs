//! `valp leader select | rotate | show`: the explicit Leader selection, rotation, and the
//! binding with its verification status and epoch history.
//!
//! Selection and rotation observe afresh, record the observation in the installation ledger,
//! and ask the person at the keyboard to type the candidate id (or take `--yes`). Only then is
//! the approval recorded and proposed; what the kernel refuses is printed with its code.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use valp_kernel::installation::{InstallationLive, InstallationState};
use valp_store::{Access, ControlRoot, Journal};

use super::CommandError;
use valp_runtime::authority::binding::{self, LeaderBinding};
use valp_runtime::authority::{self, Approval, AuthorityError, Confirmation};
use valp_runtime::clock::Clock;
use valp_runtime::doctor::report::{identity, write_candidate_lines};
use valp_runtime::doctor::{self, Observation, ObserveOptions};
use valp_view::sanitize::display_text;

/// What `select` and `rotate` share.
pub(super) struct Choice<'a> {
    /// The candidate id.
    pub candidate_id: &'a str,
    /// `--yes`: skip the typed confirmation.
    pub yes: bool,
    /// Rotation (an active Leader exists) rather than the first selection.
    pub rotate: bool,
}

/// `valp leader select` / `valp leader rotate`.
pub(super) fn choose(
    root: &ControlRoot,
    choice: &Choice<'_>,
    clock: &dyn Clock,
    options: &ObserveOptions,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let mut ledger = root.ledger()?;
    let observation = doctor::observe(clock, options);
    authority::record_observation(root, &mut ledger, &observation)?;
    let approved_by = authority::operator(&observation)?;
    let confirmation = if choice.yes {
        Confirmation::Flag
    } else if let Some(candidate) = observation.candidate(choice.candidate_id) {
        writeln!(out, "You are about to make this candidate the Leader:")?;
        let single = Observation {
            candidates: vec![candidate.clone()],
            ..observation.clone()
        };
        write_candidate_lines(&single, out)?;
        if let Some(active) = &ledger.live().state().leader {
            writeln!(
                out,
                "This fences epoch {} ({}); the new binding gets epoch {}.",
                active.epoch,
                display_text(&active.candidate.candidate_id),
                ledger.live().state().highest_epoch + 1
            )?;
        }
        super::confirm::typed(
            input,
            out,
            "Type the candidate id to confirm",
            choice.candidate_id,
            "no Leader was bound",
        )?;
        Confirmation::TypedId
    } else {
        // Not observed: no question to ask. The proposal still goes to the kernel, which
        // refuses it with its own code; that refusal is the answer.
        Confirmation::Flag
    };
    let approval = Approval {
        approved_by,
        confirmation,
        at: clock.now(),
    };
    let proposed = if choice.rotate {
        authority::rotate(root, &mut ledger, choice.candidate_id, &approval)
    } else {
        authority::select(root, &mut ledger, choice.candidate_id, &approval)
    };
    let bound = proposed.map_err(|error| match error {
        AuthorityError::Refused { code, reason }
            if observation.candidate(choice.candidate_id).is_none() =>
        {
            AuthorityError::Refused {
                code,
                reason: format!(
                    "{reason}: {} was not among the candidates just observed (`valp leader \
                     candidates` lists them)",
                    display_text(choice.candidate_id)
                ),
            }
        }
        other => other,
    })?;
    writeln!(
        out,
        "Leader {}: {} ({}), epoch {}",
        if choice.rotate { "rotated" } else { "selected" },
        display_text(&bound.candidate_id),
        display_text(&bound.principal_id),
        bound.epoch
    )?;
    writeln!(
        out,
        "binding written to {}",
        super::shown(&root.layout().binding_file())
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `valp leader show`: the binding, whether a fresh observation proves it now, whether the
/// binding file matches the ledger, the epoch history, handoffs and tasks on fenced epochs.
/// Changes nothing.
pub(super) fn show(
    root: &ControlRoot,
    clock: &dyn Clock,
    options: &ObserveOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let ledger = root.ledger_read_only()?;
    let state = ledger.live().state();
    writeln!(out, "installation  {}", state.installation_id.value())?;
    writeln!(
        out,
        "status        {} (revision {})",
        state.status.as_str(),
        state.revision
    )?;
    let Some(active) = binding::current(root, &ledger)? else {
        writeln!(out, "leader        none selected")?;
        writeln!(
            out,
            "              see `valp leader candidates`, then `valp leader select ID`"
        )?;
        write_file_check(root, &ledger, out)?;
        return Ok(ExitCode::SUCCESS);
    };
    write_binding(&active, out)?;
    writeln!(
        out,
        "epochs        active {}, highest allocated {}",
        state.active_epoch, state.highest_epoch
    )?;
    match &state.reopened {
        Some(reopen) => writeln!(
            out,
            "last reopen   {} at epoch {}",
            reopen.observed_at, reopen.epoch
        )?,
        None => writeln!(out, "last reopen   never")?,
    }
    let observation = doctor::observe(clock, options);
    writeln!(
        out,
        "proof now     {}",
        proof_now(&active, &observation).unwrap_or_else(|| format!(
            "proven: {} observed with the same fingerprint at {}",
            display_text(&active.candidate_id),
            observation.observed_at
        ))
    )?;
    write_file_check(root, &ledger, out)?;
    writeln!(out)?;
    writeln!(out, "Epoch history")?;
    for fenced in binding::history(root, &ledger)? {
        write_epoch(&fenced, "fenced", out)?;
    }
    write_epoch(&active, "active", out)?;
    if !state.handoffs.is_empty() {
        writeln!(out)?;
        writeln!(out, "Handoffs")?;
        for handoff in &state.handoffs {
            writeln!(
                out,
                "  task {} -> {}  (epoch {} -> {})",
                handoff.task_id.value(),
                handoff.successor_task_id.value(),
                handoff.from_epoch,
                handoff.to_epoch
            )?;
        }
    }
    write_fenced_tasks(root, state, out)?;
    Ok(ExitCode::SUCCESS)
}

/// Why a fresh observation does not prove the binding, or `None` when it does.
fn proof_now(active: &LeaderBinding, observation: &Observation) -> Option<String> {
    match observation.candidate(&active.candidate_id) {
        None => Some(format!(
            "NOT proven: {} is not observed now",
            display_text(&active.candidate_id)
        )),
        Some(candidate) if candidate.fingerprint() != active.session_fingerprint => Some(format!(
            "NOT proven: {} now has a different identity ({})",
            display_text(&active.candidate_id),
            candidate.fingerprint()
        )),
        Some(_) => None,
    }
}

fn write_binding(active: &LeaderBinding, out: &mut dyn Write) -> Result<(), CommandError> {
    writeln!(
        out,
        "leader        {}  (principal {}, {})",
        display_text(&active.candidate_id),
        display_text(&active.principal_id),
        active.principal_kind.as_str()
    )?;
    writeln!(out, "epoch         {}", active.epoch)?;
    writeln!(
        out,
        "selected      {} by {} ({})",
        active.selected_at,
        display_text(&active.selected_by),
        active.selection_id
    )?;
    writeln!(
        out,
        "session       {}",
        display_text(&identity(&active.session))
    )?;
    writeln!(out, "fingerprint   {}", active.session_fingerprint)?;
    writeln!(
        out,
        "evidence      observation {}, approval {}",
        active.observation.evidence_id.value(),
        active.approval.evidence_id.value()
    )?;
    Ok(())
}

fn write_file_check(
    root: &ControlRoot,
    ledger: &Journal<InstallationLive>,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    writeln!(
        out,
        "binding file  {} {}",
        super::shown(&root.layout().binding_file()),
        binding::check_file(root, ledger)?
    )?;
    Ok(())
}

fn write_epoch(
    bound: &LeaderBinding,
    status: &str,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    writeln!(
        out,
        "  epoch {:<3} {:<7} {}  selected {} by {}",
        bound.epoch,
        status,
        display_text(&bound.candidate_id),
        bound.selected_at,
        display_text(&bound.selected_by)
    )?;
    Ok(())
}

/// Lists the tasks whose journals are bound to an epoch other than the active one, and what
/// became of each.
fn write_fenced_tasks(
    root: &ControlRoot,
    state: &InstallationState,
    out: &mut dyn Write,
) -> Result<(), CommandError> {
    let mut fenced = Vec::new();
    for dir in root.task_dirs()? {
        let journal = root.open_task_dir(&dir, Access::ReadOnly)?;
        let body = journal.live().body();
        if body.leader_epoch != state.active_epoch {
            let fate = state
                .handoffs
                .iter()
                .find(|handoff| handoff.task_id == body.task_id)
                .map_or_else(
                    || "needs `valp task handoff` to continue".to_owned(),
                    |handoff| format!("handed over to {}", handoff.successor_task_id.value()),
                );
            fenced.push((body.task_id.value().to_owned(), body.leader_epoch, fate));
        }
    }
    if !fenced.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "Tasks on fenced epochs (continue them only through a handoff)"
        )?;
        for (task, epoch, fate) in fenced {
            writeln!(out, "  {task}  epoch {epoch}  {fate}")?;
        }
    }
    Ok(())
}

impl From<AuthorityError> for CommandError {
    fn from(error: AuthorityError) -> Self {
        match error {
            AuthorityError::Store(error) => Self::Store(error),
            other => Self::Authority(other),
        }
    }
}
