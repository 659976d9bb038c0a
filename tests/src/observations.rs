//! Doctor observations shaped for tests: the local human operator, and a tmux pane added
//! without a tmux server (a second candidate to select or rotate to).

#![allow(clippy::expect_used, clippy::unwrap_used)] // test support: a machine without a human operator cannot run these tests

use valp_runtime::doctor::{
    Candidate, Health, HealthStatus, Observation, Session, Surface, SurfaceStatus,
};

/// The observation's local human operator.
pub fn human_of(observation: &Observation) -> &Candidate {
    observation
        .candidates
        .iter()
        .find(|candidate| matches!(candidate.session, Session::Human { .. }))
        .expect("the local human operator is observed")
}

/// The observation plus a tmux pane on a server at `socket`, observed at the same time.
pub fn with_pane(observation: &Observation, socket: &str) -> Observation {
    let human = human_of(observation);
    let account = human.principal_id.strip_prefix("user:").unwrap();
    let mut pane = Candidate::new(
        format!("tmux:{socket}:%3"),
        format!("tmux:{account}"),
        Session::TmuxPane {
            socket: socket.to_owned(),
            server_pid: 4242,
            server_start_ticks: Some(1_000),
            pane_id: "%3".to_owned(),
            pane_pid: 4343,
            pane_start_ticks: Some(1_200),
            boot_id: observation.host.boot_id.clone(),
        },
        Health {
            status: HealthStatus::Live,
            observed_at: observation.observed_at,
            reason: None,
        },
        "receives keystrokes in tmux pane %3; no approval authority unless selected".to_owned(),
    );
    pane.labels = vec!["agent:claude".to_owned()];
    let mut observation = observation.clone();
    observation.surfaces.push(Surface {
        surface: format!("tmux:{socket}"),
        status: SurfaceStatus::Available,
        detail: "1 pane".to_owned(),
    });
    observation.candidates.push(pane);
    observation
}
