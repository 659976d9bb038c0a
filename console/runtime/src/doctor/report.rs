//! The Doctor's observation as text for a person: the full report of `valp doctor` and the
//! one-line-per-candidate list.
//!
//! Every text printed goes through [`display_text`] again, so even an observation read back
//! from elsewhere cannot put escape sequences or forged lines on the operator's terminal.

use std::io::{self, Write};

use super::model::{Candidate, HealthStatus, Observation, Session, SurfaceStatus};
use valp_view::sanitize::display_text;

/// Writes the full report: surfaces, then every candidate with its identity, presence, health,
/// permission boundary, limitations, labels and what it shows.
pub fn write_report(observation: &Observation, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "Doctor observation at {} (boot {})",
        observation.observed_at,
        observation
            .host
            .boot_id
            .as_deref()
            .map_or_else(|| "unknown".to_owned(), display_text)
    )?;
    writeln!(out)?;
    writeln!(out, "Surfaces")?;
    for surface in &observation.surfaces {
        writeln!(
            out,
            "  {:<11}  {}  {}",
            match surface.status {
                SurfaceStatus::Available => "available",
                SurfaceStatus::Unavailable => "unavailable",
            },
            display_text(&surface.surface),
            display_text(&surface.detail)
        )?;
    }
    writeln!(out)?;
    if observation.candidates.is_empty() {
        writeln!(out, "No candidates were observed.")?;
    } else {
        writeln!(
            out,
            "Candidates (in display order; the order is not a recommendation)"
        )?;
    }
    for (index, candidate) in observation.candidates.iter().enumerate() {
        write_candidate(index + 1, candidate, out)?;
    }
    writeln!(out)?;
    writeln!(
        out,
        "Nothing was selected: the Doctor only observes. The Leader is one of these candidates, \
         chosen explicitly by you."
    )?;
    Ok(())
}

fn write_candidate(rank: usize, candidate: &Candidate, out: &mut dyn Write) -> io::Result<()> {
    let row = |out: &mut dyn Write, name: &str, value: &str| {
        writeln!(out, "     {name:<12} {}", display_text(value))
    };
    writeln!(
        out,
        "  {rank}. {}  ({})",
        display_text(&candidate.principal_id),
        candidate.principal_kind.as_str()
    )?;
    row(out, "candidate", &candidate.candidate_id)?;
    row(out, "identity", &identity(&candidate.session))?;
    row(out, "fingerprint", &candidate.fingerprint())?;
    row(out, "presence", "present")?;
    row(out, "health", &health(candidate))?;
    row(out, "boundary", &candidate.permission_boundary)?;
    for limitation in &candidate.known_limitations {
        row(out, "limitation", limitation)?;
    }
    row(out, "labels", &labels(candidate))?;
    let shows = shows(candidate);
    if !shows.is_empty() {
        row(out, "shows", &shows)?;
    }
    Ok(())
}

/// Writes one line per candidate: rank, candidate id, principal and kind, health, fingerprint,
/// labels and what it shows.
pub fn write_candidate_lines(observation: &Observation, out: &mut dyn Write) -> io::Result<()> {
    for (index, candidate) in observation.candidates.iter().enumerate() {
        let shows = shows(candidate);
        writeln!(
            out,
            "{}. {}  {} ({})  {}  {}  [{}]{}{}",
            index + 1,
            display_text(&candidate.candidate_id),
            display_text(&candidate.principal_id),
            candidate.principal_kind.as_str(),
            match candidate.health.status {
                HealthStatus::Live => "live",
                HealthStatus::Unreachable => "unreachable",
            },
            candidate.fingerprint(),
            display_text(&labels(candidate)),
            if shows.is_empty() { "" } else { "  " },
            display_text(&shows)
        )?;
    }
    Ok(())
}

/// A session's identity tuple as one line.
pub fn identity(session: &Session) -> String {
    let ticks = |ticks: Option<u64>| ticks.map_or_else(|| "unknown".to_owned(), |t| t.to_string());
    match session {
        Session::Human { uid, login } => match login {
            Some(login) => format!("uid {uid}, login {login}"),
            None => format!("uid {uid}, no login name"),
        },
        Session::TmuxPane {
            socket,
            server_pid,
            server_start_ticks,
            pane_id,
            pane_pid,
            pane_start_ticks,
            boot_id,
        } => format!(
            "socket {socket}, server pid {server_pid} (start tick {}), pane {pane_id} pid \
             {pane_pid} (start tick {}), boot {}",
            ticks(*server_start_ticks),
            ticks(*pane_start_ticks),
            boot_id.as_deref().unwrap_or("unknown")
        ),
    }
}

/// A candidate's health with its time (and reason when unreachable).
pub fn health(candidate: &Candidate) -> String {
    let health = &candidate.health;
    match (&health.status, &health.reason) {
        (HealthStatus::Live, _) => format!("live (observed {})", health.observed_at),
        (HealthStatus::Unreachable, reason) => format!(
            "unreachable: {} (observed {})",
            reason.as_deref().unwrap_or("no reason recorded"),
            health.observed_at
        ),
    }
}

fn labels(candidate: &Candidate) -> String {
    if candidate.labels.is_empty() {
        "none".to_owned()
    } else {
        candidate.labels.join(", ")
    }
}

/// What a candidate shows (display-only facts), in one phrase.
pub fn shows(candidate: &Candidate) -> String {
    let display = &candidate.display;
    let mut parts = Vec::new();
    let active = |flag: Option<bool>| if flag == Some(true) { " (active)" } else { "" };
    if let Some(label) = &display.user_label {
        parts.push(format!("user {}", display_text(label)));
    }
    if let Some(name) = &display.session_name {
        parts.push(format!(
            "session {} \"{}\"",
            display_text(display.session_id.as_deref().unwrap_or("?")),
            display_text(name)
        ));
    }
    if let Some(name) = &display.window_name {
        parts.push(format!(
            "window {} \"{}\"{}",
            display
                .window_index
                .map_or_else(|| "?".to_owned(), |index| index.to_string()),
            display_text(name),
            active(display.window_active)
        ));
    }
    if let Some(index) = display.pane_index {
        parts.push(format!("pane {index}{}", active(display.pane_active)));
    }
    if let (Some(width), Some(height)) = (display.width, display.height) {
        parts.push(format!("{width}x{height}"));
    }
    if let Some(command) = &display.current_command {
        parts.push(format!("running \"{}\"", display_text(command)));
    }
    if let Some(cwd) = &display.cwd {
        parts.push(format!("in \"{}\"", display_text(cwd)));
    }
    if let Some(title) = &display.title {
        parts.push(format!("title \"{}\"", display_text(title)));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::doctor::model::{Display, Health, Host, Surface};

    fn observation() -> Observation {
        let at = Timestamp::from_millis(1_796_042_096_789);
        let mut pane = Candidate::new(
            "tmux:/tmp/s:%1".into(),
            "tmux:ann".into(),
            Session::TmuxPane {
                socket: "/tmp/s".into(),
                server_pid: 10,
                server_start_ticks: Some(100),
                pane_id: "%1".into(),
                pane_pid: 11,
                pane_start_ticks: None,
                boot_id: None,
            },
            Health {
                status: HealthStatus::Unreachable,
                observed_at: at,
                reason: Some("the pane's process 11 has exited".into()),
            },
            "receives keystrokes in tmux pane %1".into(),
        );
        pane.labels = vec!["agent:claude".into()];
        pane.display = Display {
            session_id: Some("$0".into()),
            session_name: Some("main".into()),
            window_index: Some(2),
            window_name: Some("w".into()),
            window_active: Some(true),
            pane_index: Some(0),
            pane_active: Some(false),
            // Decoded from elsewhere, so not sanitized at ingest: the report must clean it.
            title: Some("x\u{1b}]2;evil\u{7}y\nforged line".into()),
            width: Some(80),
            height: Some(24),
            ..Display::default()
        };
        Observation::new(
            at,
            Host { boot_id: None },
            vec![Surface {
                surface: "tmux:/tmp/stale".into(),
                status: SurfaceStatus::Unavailable,
                detail: "no server answered: error connecting to /tmp/stale".into(),
            }],
            vec![pane],
        )
    }

    #[test]
    fn the_report_names_everything_and_stays_clean() {
        let mut out = Vec::new();
        write_report(&observation(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        for expected in [
            "Doctor observation at 2026-11-30T12:34:56.789Z (boot unknown)",
            "  unavailable  tmux:/tmp/stale  no server answered: error connecting to /tmp/stale",
            "  1. tmux:ann  (tmux_pane)",
            "     candidate    tmux:/tmp/s:%1",
            "     identity     socket /tmp/s, server pid 10 (start tick 100), pane %1 pid 11 \
             (start tick unknown), boot unknown",
            "     health       unreachable: the pane's process 11 has exited (observed \
             2026-11-30T12:34:56.789Z)",
            "     labels       agent:claude",
            "     shows        session $0 \"main\", window 2 \"w\" (active), pane 0, 80x24, \
             title \"xy forged line\"",
            "Nothing was selected",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
        assert!(!text.contains('\u{1b}'));
        assert!(!text.contains("evil"));
        assert!(text.lines().all(|line| !line.starts_with("forged")));
    }

    #[test]
    fn candidate_lines_are_one_per_candidate() {
        let observation = observation();
        let mut out = Vec::new();
        write_candidate_lines(&observation, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        let fingerprint = observation.candidates[0].fingerprint();
        assert!(text.starts_with(&format!(
            "1. tmux:/tmp/s:%1  tmux:ann (tmux_pane)  unreachable  {fingerprint}  [agent:claude]  \
             session $0 \"main\""
        )));
    }
}
