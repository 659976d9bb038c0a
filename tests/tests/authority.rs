//! The authority lane end to end against real tmux servers on private sockets (RFC 0002 §5.1,
//! D17, D18): no Leader without an explicit selection, the daily reopen that re-proves the bound
//! session without asking, every way the session can disappear ending read-only with the binding
//! untouched, display changes that never move the binding, and epochs that are never reused.
//!
//! Every "start of valp" here opens the control root from disk afresh, as a new process would.
//! Needs tmux (CI installs it); without it these tests fail, they do not skip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test helpers outside #[test]

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;

use valp_kernel::installation::{InstallationEvent, InstallationLive};
use valp_kernel::{Identity, IdentityKind, InstallationEventKind};
use valp_runtime::authority::binding::{self, FileCheck};
use valp_runtime::authority::{self, Approval, Confirmation, SessionCheck};
use valp_runtime::clock::{Clock, FixedClock, Timestamp};
use valp_runtime::doctor::{Observation, ObserveOptions, Session, observe};
use valp_runtime::system::SystemBackend;
use valp_store::io::OsStorage;
use valp_store::{Appended, ControlRoot, Journal};
use valp_tests::tmux::TmuxServer;
use valp_view::{Backend, Request};

const DAY_MS: i64 = 86_400_000;

/// A control root and one private tmux socket.
struct Lab {
    _temp: tempfile::TempDir,
    folder: PathBuf,
    socket: PathBuf,
    clock: FixedClock,
}

impl Lab {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let folder = temp.path().join(".valp");
        let socket = temp.path().join("tmux.sock");
        let id = Identity::new(IdentityKind::Installation, "inst-authority").unwrap();
        ControlRoot::init(&folder, id, Arc::new(OsStorage)).unwrap();
        Self {
            _temp: temp,
            folder,
            socket,
            clock: FixedClock::new(Timestamp::from_millis(1_796_042_096_789)),
        }
    }

    fn server(&self) -> TmuxServer {
        TmuxServer::start(&self.socket, "work", self.folder.parent().unwrap(), &["sh"])
    }

    fn options(&self) -> ObserveOptions {
        ObserveOptions::only_sockets([self.socket.clone()])
    }

    fn root(&self) -> ControlRoot {
        ControlRoot::open(&self.folder, Arc::new(OsStorage)).unwrap()
    }

    /// One start of the console.
    fn start(&self) -> SystemBackend<'_> {
        SystemBackend::open(self.root(), &self.clock, self.options()).unwrap()
    }

    fn observe(&self) -> Observation {
        observe(&self.clock, &self.options())
    }

    fn ledger(&self) -> Journal<InstallationLive> {
        self.root().ledger().unwrap()
    }

    /// The candidate id of `pane` (`%N`) on the lab's server, as the Doctor addresses it.
    fn pane(&self, pane: &str) -> String {
        self.observe()
            .candidates
            .iter()
            .find(|candidate| {
                matches!(&candidate.session, Session::TmuxPane { pane_id, .. } if pane_id == pane)
            })
            .unwrap_or_else(|| panic!("pane {pane} is not observed"))
            .candidate_id
            .clone()
    }

    fn human(&self) -> String {
        self.observe()
            .candidates
            .iter()
            .find(|candidate| matches!(candidate.session, Session::Human { .. }))
            .unwrap()
            .candidate_id
            .clone()
    }

    /// An explicit selection (or rotation) through the library, confirmed by flag.
    fn choose(&self, candidate_id: &str, rotate: bool) -> binding::LeaderBinding {
        let root = self.root();
        let mut ledger = root.ledger().unwrap();
        let observation = self.observe();
        authority::record_observation(&root, &mut ledger, &observation).unwrap();
        let approval = Approval {
            approved_by: authority::operator(&observation).unwrap(),
            confirmation: Confirmation::Flag,
            at: self.clock.now(),
        };
        if rotate {
            authority::rotate(&root, &mut ledger, candidate_id, &approval).unwrap()
        } else {
            authority::select(&root, &mut ledger, candidate_id, &approval).unwrap()
        }
    }

    fn binding_file(&self) -> Option<Vec<u8>> {
        std::fs::read(self.folder.join("leader/binding.json")).ok()
    }

    fn ledger_bytes(&self) -> Vec<u8> {
        std::fs::read(self.folder.join("installation/journal.jsonl")).unwrap()
    }
}

/// How many accepted events of `kind` the ledger holds (event ids are `<kind>-r<revision>`).
fn accepted(ledger: &Journal<InstallationLive>, kind: InstallationEventKind) -> usize {
    ledger
        .live()
        .state()
        .accepted_events
        .iter()
        .filter(|accepted| {
            accepted
                .event_id
                .value()
                .strip_prefix(kind.as_str())
                .is_some_and(|rest| rest.starts_with("-r"))
        })
        .count()
}

/// Asserts that a start found the session unproven for a reason containing `why`, and that
/// nothing about the binding moved: ledger binding, epoch, `binding.json` bytes, and no reopen
/// was recorded.
fn assert_unproven_and_untouched(lab: &Lab, why: &str) {
    let before_file = lab.binding_file().expect("a binding file");
    let before = lab.ledger();
    let leader = before.live().state().leader.clone().unwrap();
    let reopens = accepted(&before, InstallationEventKind::LeaderSessionReopened);
    drop(before);

    let mut backend = lab.start();
    let SessionCheck::Unproven { reason } = backend.session().clone() else {
        panic!("expected an unproven session, got {:?}", backend.session());
    };
    assert!(reason.contains(why), "{reason}");
    let view = backend.view();
    assert_eq!(view.lane.session, SessionCheck::Unproven { reason });
    assert!(
        view.lane.candidates.iter().all(|row| !row.bound),
        "no observed session is shown as the Leader's"
    );

    let after = lab.ledger();
    let state = after.live().state();
    assert_eq!(
        state.leader.as_ref(),
        Some(&leader),
        "the binding is unchanged"
    );
    assert_eq!(state.active_epoch, leader.epoch);
    assert_eq!(state.highest_epoch, leader.epoch);
    assert_eq!(
        accepted(&after, InstallationEventKind::LeaderSessionReopened),
        reopens
    );
    assert_eq!(
        lab.binding_file().unwrap(),
        before_file,
        "binding.json is unchanged"
    );
    assert_eq!(
        binding::check_file(&lab.root(), &after).unwrap(),
        FileCheck::Matches
    );
}

#[test]
fn no_leader_is_ever_active_without_an_explicit_selection() {
    let lab = Lab::new();
    let _server = lab.server();
    for _ in 0..2 {
        let mut backend = lab.start();
        assert_eq!(backend.session(), &SessionCheck::Unbound);
        let view = backend.view();
        assert_eq!(view.lane.status, "awaiting_leader_selection");
        assert_eq!(view.lane.leader, None);
        assert_eq!(view.lane.active_epoch, 0);
        assert_eq!(view.lane.candidates.len(), 2, "the human and the pane");
        assert!(view.lane.candidates.iter().all(|row| !row.bound));
        assert!(view.lane.epochs.is_empty());
        assert_eq!(lab.binding_file(), None);
    }
    let ledger = lab.ledger();
    assert_eq!(ledger.live().state().highest_epoch, 0);
    assert_eq!(accepted(&ledger, InstallationEventKind::LeaderActivated), 0);
    assert_eq!(
        binding::check_file(&lab.root(), &ledger).unwrap(),
        FileCheck::Absent
    );
    drop(ledger);

    let pane = lab.pane("%0");
    let bound = lab.choose(&pane, false);
    assert_eq!(bound.epoch, 1, "the first activation is epoch 1");
    assert_eq!(bound.candidate_id, pane);
    let ledger = lab.ledger();
    let state = ledger.live().state();
    assert_eq!(state.status.as_str(), "active");
    assert_eq!((state.active_epoch, state.highest_epoch), (1, 1));
    assert_eq!(
        binding::check_file(&lab.root(), &ledger).unwrap(),
        FileCheck::Matches
    );
}

#[test]
fn the_daily_reopen_re_proves_the_same_pane_without_asking() {
    let lab = Lab::new();
    let _server = lab.server();
    lab.start();
    let pane = lab.pane("%0");
    let bound = lab.choose(&pane, false);
    let file = lab.binding_file().unwrap();

    // The first start after the selection records the reopen; a later start that finds the
    // same session proves it again without writing (nothing changed).
    let mut first_reopen = None;
    for day in 1..=2 {
        lab.clock.advance(DAY_MS);
        let reopened_at = first_reopen.get_or_insert_with(|| lab.clock.now().to_rfc3339());
        let mut backend = lab.start();
        assert_eq!(
            backend.session(),
            &SessionCheck::Reopened {
                at: lab.clock.now().to_rfc3339(),
                epoch: 1
            },
            "day {day}"
        );
        let view = backend.view();
        let leader = view.lane.leader.unwrap();
        assert_eq!(
            (leader.candidate_id.as_str(), leader.epoch),
            (pane.as_str(), 1)
        );
        let row = view
            .lane
            .candidates
            .iter()
            .find(|row| row.candidate_id == pane)
            .unwrap();
        assert!(row.bound);
        drop(backend);

        let ledger = lab.ledger();
        let state = ledger.live().state();
        assert_eq!(
            accepted(&ledger, InstallationEventKind::LeaderSessionReopened),
            1,
            "day {day}"
        );
        let reopen = state.reopened.as_ref().unwrap();
        assert_eq!(reopen.epoch, 1);
        assert_eq!(&reopen.observed_at, reopened_at);
        assert_eq!(state.highest_epoch, 1, "a reopen never allocates an epoch");
        assert_eq!(
            state.leader.as_ref().unwrap().candidate.session_fingerprint,
            bound.session_fingerprint
        );
        assert_eq!(lab.binding_file().unwrap(), file);
    }
}

#[test]
fn a_killed_pane_leaves_the_console_read_only_until_an_explicit_rebind() {
    let lab = Lab::new();
    let server = lab.server();
    server.run(&["split-window", "-t", "%0", "sh"]);
    lab.start();
    let first = lab.pane("%0");
    let second = lab.pane("%1");
    lab.choose(&first, false);
    server.run(&["kill-pane", "-t", "%0"]);

    assert_unproven_and_untouched(&lab, "was not observed");
    // Starting again does not wear the refusal down.
    assert_unproven_and_untouched(&lab, "was not observed");

    // The explicit way out: rebind the same principal to its other session (epoch + 1).
    let mut backend = lab.start();
    let confirmed = backend
        .request(&Request::Rotate {
            candidate_id: second.clone(),
        })
        .unwrap();
    assert_eq!(confirmed, format!("Leader rotated: {second}, epoch 2"));
    assert!(matches!(
        backend.session(),
        SessionCheck::Reopened { epoch: 2, .. }
    ));
    let view = backend.view();
    assert_eq!(view.lane.epochs.len(), 2);
    assert!(view.lane.epochs[0].fenced && !view.lane.epochs[1].fenced);
    assert_eq!(view.lane.epochs[0].candidate_id, first);
    drop(backend);
    let ledger = lab.ledger();
    let state = ledger.live().state();
    assert_eq!((state.active_epoch, state.highest_epoch), (2, 2));
    assert_eq!(state.fenced.len(), 1);
    assert_eq!(state.fenced[0].epoch, 1);
}

#[test]
fn a_restarted_tmux_server_is_a_different_session() {
    let lab = Lab::new();
    let server = lab.server();
    lab.start();
    let pane = lab.pane("%0");
    lab.choose(&pane, false);
    server.kill();

    assert_unproven_and_untouched(&lab, "was not observed");

    // Same socket, same pane id `%0`: the same address, but not the same identity.
    let _restarted = lab.server();
    assert_eq!(lab.pane("%0"), pane);
    assert_unproven_and_untouched(&lab, "different identity");
}

#[test]
fn another_os_user_cannot_reopen_the_binding() {
    let lab = Lab::new();
    let _server = lab.server();
    lab.start();
    let human = lab.human();
    lab.choose(&human, false);

    // Reopened as ourselves.
    assert!(matches!(
        lab.start().session(),
        SessionCheck::Reopened { epoch: 1, .. }
    ));

    // What the Doctor observes for another OS account: its own uid and none of our panes (our
    // tmux sockets refuse other users).
    let mut other = lab.observe();
    other
        .candidates
        .retain(|candidate| matches!(candidate.session, Session::Human { .. }));
    let Session::Human { uid, .. } = other.candidates[0].session else {
        unreachable!()
    };
    other.candidates[0].session = Session::Human {
        uid: uid + 1,
        login: None,
    };
    other.candidates[0].candidate_id = format!("human:uid-{}", uid + 1);
    other.candidates[0].principal_id = format!("user:uid-{}", uid + 1);

    let root = lab.root();
    let mut ledger = root.ledger().unwrap();
    let file = lab.binding_file().unwrap();
    let reopens = accepted(&ledger, InstallationEventKind::LeaderSessionReopened);
    let check = authority::open_session(&root, &mut ledger, &other).unwrap();
    let SessionCheck::Unproven { reason } = check else {
        panic!("{check:?}")
    };
    assert!(reason.contains("another OS user"), "{reason}");
    assert_eq!(
        accepted(&ledger, InstallationEventKind::LeaderSessionReopened),
        reopens
    );
    assert_eq!(
        ledger
            .live()
            .state()
            .leader
            .as_ref()
            .unwrap()
            .candidate
            .candidate_id,
        human
    );
    assert_eq!(lab.binding_file().unwrap(), file);

    // Another account whose uid happens to reuse our candidate id but not our identity tuple
    // (e.g. a recreated account with another login) is not the Leader either.
    let mut impostor = lab.observe();
    let human_row = impostor
        .candidates
        .iter_mut()
        .find(|candidate| matches!(candidate.session, Session::Human { .. }))
        .unwrap();
    human_row.session = Session::Human {
        uid,
        login: Some("someone-else".to_owned()),
    };
    let check = authority::open_session(&root, &mut ledger, &impostor).unwrap();
    assert!(
        matches!(&check, SessionCheck::Unproven { reason } if reason.contains("different identity")),
        "{check:?}"
    );
    assert_eq!(lab.binding_file().unwrap(), file);
}

#[test]
fn what_a_pane_shows_never_moves_the_binding_or_the_epoch() {
    let lab = Lab::new();
    let server = lab.server();
    lab.start();
    let pane = lab.pane("%0");
    let bound = lab.choose(&pane, false);
    let file = lab.binding_file().unwrap();

    server.run(&["select-pane", "-t", "%0", "-T", "LEADER: pick me"]);
    server.run(&["rename-window", "-t", "%0", "leader"]);
    server.run(&["rename-session", "-t", "work", "the-leader"]);
    server.run(&["send-keys", "-t", "%0", "cd /tmp", "Enter"]);
    server.wait_for("%0", "#{pane_current_path}", "/tmp");
    // A second "agent" running the same command takes the focus, in a new window too.
    server.run(&["split-window", "-t", "%0", "sh"]);
    server.run(&["new-window", "-t", "the-leader", "sh"]);
    server.wait_for("%2", "#{window_active}", "1");

    let mut backend = lab.start();
    assert!(matches!(
        backend.session(),
        SessionCheck::Reopened { epoch: 1, .. }
    ));
    let view = backend.view();
    assert_eq!(view.lane.candidates.len(), 4, "the human and three panes");
    let bound_rows: Vec<_> = view
        .lane
        .candidates
        .iter()
        .filter(|row| row.bound)
        .map(|row| row.candidate_id.clone())
        .collect();
    assert_eq!(bound_rows, vec![pane.clone()]);
    let leader = view.lane.leader.unwrap();
    assert!(
        leader.session_summary.contains("LEADER: pick me"),
        "{}",
        leader.session_summary
    );
    drop(backend);

    let ledger = lab.ledger();
    let state = ledger.live().state();
    assert_eq!((state.active_epoch, state.highest_epoch), (1, 1));
    let now = binding::current(&lab.root(), &ledger).unwrap().unwrap();
    assert_eq!(now, bound);
    assert_eq!(lab.binding_file().unwrap(), file);
}

#[test]
fn old_epochs_are_refused_and_never_reused_across_restarts() {
    let lab = Lab::new();
    let server = lab.server();
    server.run(&["split-window", "-t", "%0", "sh"]);
    lab.start();
    let (first, second) = (lab.pane("%0"), lab.pane("%1"));
    lab.choose(&first, false);
    lab.choose(&lab.human(), true);
    // A restart between rotations: the next epoch comes from the ledger, not from memory.
    assert!(matches!(
        lab.start().session(),
        SessionCheck::Reopened { epoch: 2, .. }
    ));
    let third = lab.choose(&second, true);
    assert_eq!(third.epoch, 3);
    let fourth = lab.choose(&first, true);
    assert_eq!(
        fourth.epoch, 4,
        "rebinding an earlier session still takes a new epoch"
    );

    let mut ledger = lab.ledger();
    let state = ledger.live().state().clone();
    assert_eq!((state.active_epoch, state.highest_epoch), (4, 4));
    let fenced: Vec<_> = state.fenced.iter().map(|binding| binding.epoch).collect();
    assert_eq!(fenced, vec![1, 2, 3]);
    let history = binding::history(&lab.root(), &ledger).unwrap();
    assert_eq!(
        history
            .iter()
            .map(|entry| entry.candidate_id.clone())
            .collect::<Vec<_>>(),
        vec![first.clone(), lab.human(), second]
    );

    // An event carrying a fenced epoch, or one not allocated yet, is refused and not written.
    let before = lab.ledger_bytes();
    for epoch in [0, 1, 3, 5] {
        let event = InstallationEvent::new(
            Identity::new(IdentityKind::Event, format!("stale-{epoch}")).unwrap(),
            state.installation_id.clone(),
            epoch,
            InstallationEventKind::LeaderCandidatesObserved,
            state.revision,
        );
        match ledger.append(&event, &[]).unwrap() {
            Appended::Rejected { error_code, .. } => {
                assert_eq!(error_code.as_str(), "VALP-E-LEADER-EPOCH", "epoch {epoch}");
            }
            other => panic!("epoch {epoch}: {other:?}"),
        }
    }
    assert_eq!(
        lab.ledger_bytes(),
        before,
        "refusals never touch the ledger"
    );
}

#[test]
fn selecting_an_unobserved_candidate_is_refused_by_the_kernel() {
    let lab = Lab::new();
    let _server = lab.server();
    let mut backend = lab.start();
    let refusal = backend
        .request(&Request::Select {
            candidate_id: "tmux:/nowhere:%9".to_owned(),
        })
        .unwrap_err();
    assert_eq!(refusal.code, "VALP-E-PERMISSION-DENIED");
    assert_eq!(backend.view().lane.leader, None);
    drop(backend);
    let ledger = lab.ledger();
    assert_eq!(
        ledger.live().state().status.as_str(),
        "awaiting_leader_selection"
    );
    assert_eq!(lab.binding_file(), None);
}

#[test]
fn a_first_selection_cannot_replace_an_active_leader() {
    let lab = Lab::new();
    let server = lab.server();
    server.run(&["split-window", "-t", "%0", "sh"]);
    let mut backend = lab.start();
    let first = lab.pane("%0");
    assert_eq!(
        backend
            .request(&Request::Select {
                candidate_id: first.clone()
            })
            .unwrap(),
        format!("Leader selected: {first}, epoch 1")
    );
    let refusal = backend
        .request(&Request::Select {
            candidate_id: lab.pane("%1"),
        })
        .unwrap_err();
    assert!(
        refusal.message.contains("valp leader rotate"),
        "{refusal:?}"
    );
    assert_eq!(backend.view().lane.leader.unwrap().candidate_id, first);
}

#[test]
fn the_binding_file_is_checked_against_the_ledger() {
    let lab = Lab::new();
    let _server = lab.server();
    lab.start();
    lab.choose(&lab.pane("%0"), false);
    let path = lab.folder.join("leader/binding.json");
    let good = std::fs::read(&path).unwrap();
    let edited = String::from_utf8(good.clone())
        .unwrap()
        .replace("\"epoch\":1", "\"epoch\":7");
    std::fs::write(&path, &edited).unwrap();
    let ledger = lab.ledger();
    let check = binding::check_file(&lab.root(), &ledger).unwrap();
    let expected_at = good
        .iter()
        .zip(edited.as_bytes())
        .position(|(left, right)| left != right)
        .unwrap();
    assert_eq!(check, FileCheck::Differs(expected_at));
    // The ledger stays authoritative: the console still reopens epoch 1.
    drop(ledger);
    assert!(matches!(
        lab.start().session(),
        SessionCheck::Reopened { epoch: 1, .. }
    ));
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        binding::check_file(&lab.root(), &lab.ledger()).unwrap(),
        FileCheck::Missing
    );
    binding::write(&lab.root(), &lab.ledger()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), good);
}

#[test]
fn the_periodic_refresh_writes_only_what_changed() {
    let lab = Lab::new();
    let server = lab.server();
    server.run(&["split-window", "-t", "%0", "sh"]);
    lab.start();
    let pane = lab.pane("%0");
    lab.choose(&pane, false);
    let mut backend = lab.start();
    let reopened = backend.session().clone();
    assert!(matches!(reopened, SessionCheck::Reopened { epoch: 1, .. }));

    // Nothing changed on the machine: refreshing all day writes nothing.
    let quiet = lab.ledger_bytes();
    let quiet_len = lab.ledger().len();
    for _ in 0..3 {
        lab.clock.advance(5_000);
        let said = backend.request(&Request::Refresh).unwrap();
        assert_eq!(said, "observed: Leader session re-proven, epoch 1");
        assert_eq!(backend.session(), &reopened, "the reopen is not repeated");
    }
    assert_eq!(lab.ledger_bytes(), quiet);

    // A new pane appears: the new candidate set is recorded once, the session stays proven.
    server.run(&["split-window", "-t", "%1", "sh"]);
    backend.request(&Request::Refresh).unwrap();
    backend.request(&Request::Refresh).unwrap();
    let grown = lab.ledger();
    assert_eq!(grown.len(), quiet_len + 1, "one observation recorded");
    assert_eq!(
        grown
            .live()
            .state()
            .observation
            .as_ref()
            .unwrap()
            .candidates
            .len(),
        4
    );
    drop(grown);
    assert_eq!(backend.session(), &reopened);

    // The bound pane dies while the console runs: read-only at once, nothing about the
    // binding written (the shrunken candidate set is recorded as an observation).
    server.run(&["kill-pane", "-t", "%0"]);
    let said = backend.request(&Request::Refresh).unwrap();
    assert!(said.starts_with("observed: the bound session "), "{said}");
    assert!(matches!(backend.session(), SessionCheck::Unproven { .. }));
    let ledger = lab.ledger();
    assert_eq!(ledger.live().state().leader.as_ref().unwrap().epoch, 1);
    assert_eq!(
        accepted(&ledger, InstallationEventKind::LeaderSessionReopened),
        1,
        "only the start's: refreshes never repeat it"
    );
}

/// The console's periodic look (`Backend::tick`) asks tmux only when something on screen lives
/// there: with a proven human Leader and no tmux agent it starts no `tmux` process and writes
/// nothing; an explicit refresh still observes everything; a tmux pane as the Leader, or a
/// ledger moved by another console, is observed again on the tick.
#[test]
fn the_periodic_look_asks_tmux_only_when_the_screen_needs_it() {
    let lab = Lab::new();
    let _server = lab.server();
    let calls = lab.folder.parent().unwrap().join("tmux-calls");
    let counting = lab.folder.parent().unwrap().join("counting-tmux");
    std::fs::write(
        &counting,
        format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nexec tmux \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&counting, std::fs::Permissions::from_mode(0o755)).unwrap();
    let options = ObserveOptions {
        tmux_binary: Some(counting),
        ..lab.options()
    };
    let asked = || {
        std::fs::read_to_string(&calls)
            .unwrap_or_default()
            .lines()
            .count()
    };
    lab.start();
    let human = lab.human();
    lab.choose(&human, false);
    let mut backend = SystemBackend::open(lab.root(), &lab.clock, options.clone()).unwrap();
    assert!(matches!(
        backend.session(),
        SessionCheck::Reopened { epoch: 1, .. }
    ));
    let started = asked();
    assert!(started > 0, "the start observes tmux");
    let quiet = lab.ledger_bytes();
    for _ in 0..3 {
        lab.clock.advance(5_000);
        assert_eq!(
            backend.tick().unwrap(),
            "nothing on screen lives in tmux: not observed again"
        );
    }
    assert_eq!(asked(), started, "no tmux process on the tick");
    assert_eq!(lab.ledger_bytes(), quiet);
    assert!(matches!(
        backend.session(),
        SessionCheck::Reopened { epoch: 1, .. }
    ));
    // Asked for: everything is observed.
    backend.request(&Request::Refresh).unwrap();
    let refreshed = asked();
    assert!(refreshed > started);

    // Another console rotates the Leader to a pane: the next tick sees the ledger move and
    // observes; from then on the Leader lives in tmux and every tick observes.
    let pane = lab.pane("%0");
    lab.choose(&pane, true);
    assert!(backend.tick().unwrap().starts_with("observed: "));
    let rotated = asked();
    assert!(rotated > refreshed);
    let mut backend = SystemBackend::open(lab.root(), &lab.clock, options).unwrap();
    assert!(matches!(
        backend.session(),
        SessionCheck::Reopened { epoch: 2, .. }
    ));
    let reopened = asked();
    assert_eq!(
        backend.tick().unwrap(),
        "observed: Leader session re-proven, epoch 2"
    );
    assert!(asked() > reopened, "a tmux Leader is observed on the tick");
}
