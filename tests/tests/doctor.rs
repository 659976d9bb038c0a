//! The Doctor against real tmux servers on private sockets: which panes become candidates, what
//! their identity binds, and what must not change it (RFC 0002 §5.1, D18).
//!
//! Needs tmux (CI installs it); without it these tests fail, they do not skip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_runtime::clock::{FixedClock, Timestamp};
use valp_runtime::doctor::{
    Candidate, HealthStatus, Observation, ObserveOptions, PrincipalKind, Session, SurfaceStatus,
    observe,
};
use valp_tests::tmux::TmuxServer;

fn clock() -> FixedClock {
    FixedClock::new(Timestamp::from_millis(1_796_042_096_789))
}

fn observe_sockets(sockets: &[&Path]) -> Observation {
    observe(
        &clock(),
        &ObserveOptions::only_sockets(sockets.iter().map(|path| path.to_path_buf())),
    )
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned()
}

/// Field 22 of `/proc/<pid>/stat`, parsed independently of the Doctor.
fn start_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, after_comm) = stat.rsplit_once(')').unwrap();
    after_comm
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// Waits until process `parent` has a child whose command name is `comm`.
fn wait_for_child(parent: u32, comm: &str) {
    let deadline = std::time::Instant::now() + valp_tests::tmux::PATIENCE;
    let wanted = format!("({comm})");
    loop {
        let found = std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                stat.rsplit_once(')').is_some_and(|(head, rest)| {
                    format!("{head})").ends_with(&wanted)
                        && rest.split_whitespace().nth(1) == Some(parent.to_string().as_str())
                })
            })
        });
        if found {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no child {comm} of {parent}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .unwrap()
        .trim()
        .to_owned()
}

fn pane<'o>(observation: &'o Observation, socket: &Path, pane_id: &str) -> &'o Candidate {
    let id = format!("tmux:{}:{pane_id}", canonical(socket));
    observation
        .candidate(&id)
        .unwrap_or_else(|| panic!("no candidate {id} in {observation:#?}"))
}

fn panes(observation: &Observation) -> Vec<&Candidate> {
    observation
        .candidates
        .iter()
        .filter(|candidate| candidate.principal_kind == PrincipalKind::TmuxPane)
        .collect()
}

fn surface_of<'o>(observation: &'o Observation, name: &str) -> &'o valp_runtime::doctor::Surface {
    observation
        .surfaces
        .iter()
        .find(|surface| surface.surface == name)
        .unwrap_or_else(|| panic!("no surface {name} in {:#?}", observation.surfaces))
}

/// The real user id of this process, as `/proc/self/status` says it.
fn uid() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

fn login() -> String {
    let uid = uid();
    std::fs::read_to_string("/etc/passwd")
        .unwrap()
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.get(2) == Some(&uid.as_str())).then(|| fields[0].to_owned())
        })
        .unwrap_or(format!("uid-{uid}"))
}

#[test]
fn every_pane_is_a_candidate_with_its_runtime_identity() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "work", temp.path(), &["sleep", "600"]);
    server.run(&["split-window", "-t", "%0", "sleep", "601"]);
    let observation = observe_sockets(&[&socket]);

    assert_eq!(
        observation.candidates[0].principal_kind,
        PrincipalKind::Human,
        "the human is ranked first"
    );
    let surface = surface_of(&observation, &format!("tmux:{}", canonical(&socket)));
    assert_eq!(surface.status, SurfaceStatus::Available, "{surface:?}");
    assert_eq!(
        surface.detail,
        format!("server pid {}, 2 panes", server.pid())
    );
    let found = panes(&observation);
    assert_eq!(found.len(), 2);
    for (candidate, pane_id) in found.iter().zip(["%0", "%1"]) {
        let pane_pid: u32 = server.display(pane_id, "#{pane_pid}").parse().unwrap();
        assert_eq!(
            candidate.candidate_id,
            format!("tmux:{}:{pane_id}", canonical(&socket))
        );
        assert_eq!(candidate.principal_id, format!("tmux:{}", login()));
        assert_eq!(
            candidate.session,
            Session::TmuxPane {
                socket: canonical(&socket),
                server_pid: server.pid(),
                server_start_ticks: Some(start_ticks(server.pid())),
                pane_id: pane_id.to_owned(),
                pane_pid,
                pane_start_ticks: Some(start_ticks(pane_pid)),
                boot_id: Some(boot_id()),
            }
        );
        assert_eq!(
            candidate.fingerprint(),
            sha256_digest(&candidate.session.canonical_bytes())
        );
        assert_eq!(candidate.health.status, HealthStatus::Live);
        assert_eq!(
            candidate.health.observed_at.to_rfc3339(),
            "2026-11-30T12:34:56.789Z"
        );
        assert_eq!(candidate.display.current_command.as_deref(), Some("sleep"));
        assert_eq!(candidate.display.session_name.as_deref(), Some("work"));
        assert!(candidate.labels.is_empty(), "{:?}", candidate.labels);
        assert!(
            candidate
                .permission_boundary
                .contains("no approval authority unless selected")
        );
        assert!(!candidate.known_limitations.is_empty());
    }
    assert_ne!(found[0].fingerprint(), found[1].fingerprint());
    assert_eq!(
        observation.host.boot_id.as_deref(),
        Some(boot_id().as_str())
    );
}

#[test]
fn what_a_pane_shows_never_changes_its_identity() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "main", temp.path(), &["sh"]);
    let before = observe_sockets(&[&socket]);
    let first = pane(&before, &socket, "%0").clone();
    assert_eq!(
        first.display.cwd.as_deref(),
        Some(canonical(temp.path()).as_str())
    );

    server.run(&["select-pane", "-t", "%0", "-T", "Leader? pick me"]);
    server.run(&["rename-window", "-t", "%0", "claude"]);
    server.run(&["rename-session", "-t", "main", "leader"]);
    server.run(&["send-keys", "-t", "%0", "cd /tmp", "Enter"]);
    server.wait_for("%0", "#{pane_current_path}", "/tmp");
    // A second pane running the same command takes the focus.
    server.run(&["split-window", "-t", "%0", "sh"]);
    server.wait_for("%1", "#{pane_active}", "1");
    // Until tmux's child has exec'd the command, the pane reports the shell that starts it.
    server.wait_for("%1", "#{pane_current_command}", "sh");
    let after = observe_sockets(&[&socket]);
    let moved = pane(&after, &socket, "%0");
    assert_eq!(moved.display.title.as_deref(), Some("Leader? pick me"));
    assert_eq!(moved.display.window_name.as_deref(), Some("claude"));
    assert_eq!(moved.display.session_name.as_deref(), Some("leader"));
    assert_eq!(moved.display.cwd.as_deref(), Some("/tmp"));
    assert_eq!(moved.display.pane_active, Some(false));
    assert_eq!(first.display.pane_active, Some(true));
    assert_eq!(moved.candidate_id, first.candidate_id);
    assert_eq!(moved.principal_id, first.principal_id);
    assert_eq!(moved.session, first.session);
    assert_eq!(moved.fingerprint(), first.fingerprint());

    let twin = pane(&after, &socket, "%1");
    assert_eq!(twin.display.current_command, moved.display.current_command);
    assert_eq!(twin.display.pane_active, Some(true));
    assert_eq!(
        twin.principal_id, moved.principal_id,
        "one OS user, one principal"
    );
    assert_ne!(twin.fingerprint(), moved.fingerprint());

    // Focus back: still nothing changes but the display.
    server.run(&["select-pane", "-t", "%0"]);
    server.wait_for("%0", "#{pane_active}", "1");
    let again = observe_sockets(&[&socket]);
    assert_eq!(
        pane(&again, &socket, "%0").fingerprint(),
        first.fingerprint()
    );
    assert_eq!(
        pane(&again, &socket, "%1").fingerprint(),
        twin.fingerprint()
    );
}

#[test]
fn a_new_process_in_the_same_pane_is_a_new_identity() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    let before = observe_sockets(&[&socket]);
    let old_pid = server.display("%0", "#{pane_pid}");
    server.run(&["respawn-pane", "-k", "-t", "%0", "sleep", "602"]);
    let new_pid = server.display("%0", "#{pane_pid}");
    assert_ne!(old_pid, new_pid);
    let after = observe_sockets(&[&socket]);
    let (old, new) = (pane(&before, &socket, "%0"), pane(&after, &socket, "%0"));
    assert_eq!(
        old.candidate_id, new.candidate_id,
        "the pane keeps its address"
    );
    assert_ne!(old.fingerprint(), new.fingerprint(), "but not its identity");
}

#[test]
fn a_restarted_server_reuses_pane_ids_but_not_fingerprints() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    let before = observe_sockets(&[&socket]);
    server.kill();
    let restarted = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    let after = observe_sockets(&[&socket]);
    let (old, new) = (pane(&before, &socket, "%0"), pane(&after, &socket, "%0"));
    assert_eq!(old.candidate_id, new.candidate_id);
    assert_ne!(old.fingerprint(), new.fingerprint());
    let Session::TmuxPane { server_pid, .. } = &new.session else {
        panic!("a pane")
    };
    assert_eq!(*server_pid, restarted.pid());
}

#[test]
fn stale_and_bogus_sockets_are_unavailable_surfaces_not_errors() {
    let temp = tempfile::tempdir().unwrap();
    let stale = temp.path().join("stale");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists(), "the socket file outlives its listener");
    let plain = temp.path().join("plain-file");
    std::fs::write(&plain, b"not a socket").unwrap();
    let missing = temp.path().join("missing");
    let live_socket = temp.path().join("live");
    let _server = TmuxServer::start(&live_socket, "s", temp.path(), &["sleep", "600"]);

    let observation = observe_sockets(&[&stale, &plain, &missing, &live_socket]);
    let stale_surface = surface_of(&observation, &format!("tmux:{}", canonical(&stale)));
    assert_eq!(stale_surface.status, SurfaceStatus::Unavailable);
    assert!(
        stale_surface.detail.starts_with("no server answered"),
        "{stale_surface:?}"
    );
    let plain_surface = surface_of(&observation, &format!("tmux:{}", plain.display()));
    assert_eq!(
        (plain_surface.status, plain_surface.detail.as_str()),
        (SurfaceStatus::Unavailable, "not a socket")
    );
    let missing_surface = surface_of(&observation, &format!("tmux:{}", missing.display()));
    assert_eq!(missing_surface.status, SurfaceStatus::Unavailable);
    // The live server is still observed.
    assert_eq!(panes(&observation).len(), 1);
    assert_eq!(
        surface_of(&observation, "tmux").status,
        SurfaceStatus::Available
    );
}

#[test]
fn missing_tmux_is_one_unavailable_surface() {
    let temp = tempfile::tempdir().unwrap();
    let options = ObserveOptions {
        tmux_binary: Some(PathBuf::from("/nonexistent/bin/tmux")),
        tmux_tmpdir: Some(temp.path().into()),
        scan_default_sockets: true,
        ..ObserveOptions::only_sockets([temp.path().join("sock")])
    };
    let observation = observe(&clock(), &options);
    let tmux: Vec<_> = observation
        .surfaces
        .iter()
        .filter(|surface| surface.surface.starts_with("tmux"))
        .collect();
    assert_eq!(tmux.len(), 1, "{tmux:?}");
    assert_eq!(tmux[0].surface, "tmux");
    assert_eq!(tmux[0].status, SurfaceStatus::Unavailable);
    assert!(
        tmux[0].detail.starts_with("tmux not found"),
        "{:?}",
        tmux[0]
    );
    assert!(panes(&observation).is_empty());
    assert_eq!(observation.candidates.len(), 1, "the human is still there");
    assert_eq!(
        surface_of(&observation, "local_user").status,
        SurfaceStatus::Available
    );
}

#[test]
fn a_server_that_does_not_answer_is_unavailable() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    server.signal("STOP");
    let options = ObserveOptions {
        timeout: Duration::from_millis(500),
        ..ObserveOptions::only_sockets([socket.clone()])
    };
    let observation = observe(&clock(), &options);
    server.signal("CONT");
    let surface = surface_of(&observation, &format!("tmux:{}", canonical(&socket)));
    assert_eq!(surface.status, SurfaceStatus::Unavailable);
    assert!(surface.detail.contains("did not answer"), "{surface:?}");
    assert!(panes(&observation).is_empty());
}

#[test]
fn agent_clis_are_labels_only() {
    let temp = tempfile::tempdir().unwrap();
    let claude = temp.path().join("claude");
    std::fs::copy("/bin/sleep", &claude).unwrap();
    let socket = temp.path().join("sock");
    // The agent runs as a child of the pane's shell, not as the pane's own process.
    let script = format!("'{}' 600; exit", claude.display());
    let server = TmuxServer::start(&socket, "s", temp.path(), &["sh", "-c", &script]);
    server.run(&["split-window", "-t", "%0", "sleep", "600"]);
    let shell: u32 = server.display("%0", "#{pane_pid}").parse().unwrap();
    wait_for_child(shell, "claude");
    let observation = observe_sockets(&[&socket]);
    let agent = pane(&observation, &socket, "%0");
    assert_eq!(agent.labels, ["agent:claude"]);
    assert!(!agent.candidate_id.contains("claude"));
    assert!(!agent.principal_id.contains("claude"));
    let tuple = String::from_utf8(agent.session.canonical_bytes()).unwrap();
    assert!(!tuple.contains("claude"), "{tuple}");
    assert!(pane(&observation, &socket, "%1").labels.is_empty());
}

#[test]
fn hostile_folder_names_cannot_break_the_listing() {
    let temp = tempfile::tempdir().unwrap();
    let hostile = temp
        .path()
        .join("x\t7:%9999\nvalp1\u{1b}]2;owned\u{7}\u{1b}[31mred\u{202e}dir");
    std::fs::create_dir(&hostile).unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "s\tt", &hostile, &["sleep", "600"]);
    server.run(&["split-window", "-t", "%0", "sleep", "601"]);
    let observation = observe_sockets(&[&socket]);
    let found = panes(&observation);
    assert_eq!(found.len(), 2, "{observation:#?}");
    let cwd = found[0].display.cwd.as_deref().unwrap();
    // Escape sequences and controls go; the bidi override is shown, escaped.
    assert!(cwd.ends_with("x 7:%9999 valp1red\\u{202e}dir"), "{cwd:?}");
    assert!(!cwd.chars().any(char::is_control));
    assert_eq!(found[1].display.current_command.as_deref(), Some("sleep"));
    let Session::TmuxPane { pane_id, .. } = &found[0].session else {
        panic!("a pane")
    };
    assert_eq!(pane_id, "%0");
}

#[test]
fn a_dead_pane_is_unreachable() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    server.run(&["set-option", "-g", "remain-on-exit", "on"]);
    server.run(&["split-window", "-t", "%0", "true"]);
    server.wait_for("%1", "#{pane_dead}", "1");
    let observation = observe_sockets(&[&socket]);
    let dead = pane(&observation, &socket, "%1");
    assert_eq!(dead.health.status, HealthStatus::Unreachable);
    assert!(
        dead.health
            .reason
            .as_deref()
            .unwrap()
            .contains("has exited")
    );
    let Session::TmuxPane {
        pane_start_ticks, ..
    } = &dead.session
    else {
        panic!("a pane")
    };
    assert_eq!(*pane_start_ticks, None);
    assert_eq!(
        pane(&observation, &socket, "%0").health.status,
        HealthStatus::Live
    );
}

#[test]
fn the_default_socket_folder_is_scanned() {
    let temp = tempfile::tempdir().unwrap();
    let uid = uid();
    let folder = temp.path().join(format!("tmux-{uid}"));
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), b"not a socket").unwrap();
    let socket = folder.join("default");
    let _server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    let options = ObserveOptions {
        scan_default_sockets: true,
        tmux_tmpdir: Some(temp.path().into()),
        // Named again: still one server.
        ..ObserveOptions::only_sockets([socket.clone()])
    };
    let observation = observe(&clock(), &options);
    assert_eq!(panes(&observation).len(), 1, "{observation:#?}");
    let tmux = surface_of(&observation, "tmux");
    assert!(tmux.detail.contains("; 1 socket in "), "{tmux:?}");
    assert!(tmux.detail.ends_with("; 1 server socket"), "{tmux:?}");
    let servers = observation
        .surfaces
        .iter()
        .filter(|surface| surface.surface.starts_with("tmux:"))
        .count();
    assert_eq!(servers, 1);
}

#[test]
fn observations_are_canonical_evidence() {
    let temp = tempfile::tempdir().unwrap();
    let socket = temp.path().join("sock");
    let _server = TmuxServer::start(&socket, "s", temp.path(), &["sleep", "600"]);
    let observation = observe_sockets(&[&socket]);
    let bytes = observation.canonical_bytes();
    valp_kernel::canonical::decode_canonical(&bytes).unwrap();
    assert_eq!(Observation::decode(&bytes).unwrap(), observation);
    assert_eq!(observe_sockets(&[&socket]).canonical_bytes(), bytes);
}

#[test]
fn non_ascii_text_survives_a_client_in_a_non_utf8_locale() {
    let temp = tempfile::tempdir().unwrap();
    // A tmux whose client runs in the C locale.
    let wrapper = temp.path().join("tmux-in-c-locale");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nLC_ALL=C LANG=C LC_CTYPE=C exec tmux \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let folder = temp.path().join("dossier-été-日本");
    std::fs::create_dir(&folder).unwrap();
    let socket = temp.path().join("sock");
    let server = TmuxServer::start(&socket, "sesión", &folder, &["sleep", "600"]);
    server.run(&["select-pane", "-t", "%0", "-T", "título 🦀"]);
    let options = ObserveOptions {
        tmux_binary: Some(wrapper),
        ..ObserveOptions::only_sockets([socket.clone()])
    };
    let observation = observe(&clock(), &options);
    let found = pane(&observation, &socket, "%0");
    assert_eq!(found.display.title.as_deref(), Some("título 🦀"));
    assert_eq!(found.display.session_name.as_deref(), Some("sesión"));
    assert_eq!(
        found.display.cwd.as_deref(),
        Some(canonical(&folder).as_str())
    );
}
