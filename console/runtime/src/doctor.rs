//! The Doctor: observes the addressable Leader candidates on this machine (RFC 0002 §5.1).
//!
//! A first installation needs a Doctor observation of addressable candidates, then an explicit
//! selection of one of them by the user (D17). The Doctor only observes: it never selects,
//! never ranks by anything but a fixed display order, and never lets what a candidate shows
//! (title, focus, folder, window or session name, running command, product name) decide or
//! identify anything (D18).
//!
//! It looks at two kinds of surface:
//!
//! - **`local_user`**: the human operator's OS account: real uid from `/proc/self/status`, the
//!   login from `/etc/passwd` (`$USER` is only a display fallback, never identity), and the
//!   boot id. Candidate `human:uid-<uid>`, principal `user:<login>` (or `user:uid-<uid>`).
//! - **tmux**: every server socket in `$TMUX_TMPDIR/tmux-<uid>/` (or `/tmp/tmux-<uid>/`) plus
//!   any sockets the caller names. Each server is asked for all its panes (see [`tmux`] for the
//!   injection-proof framing); each pane is a candidate `tmux:<socket>:<pane id>` of principal
//!   `tmux:<login of the socket's owner>`, identified by the socket, the server's and the pane
//!   process's pid and start time (field 22 of `/proc/<pid>/stat`), the pane id and the boot id.
//!   A server that does not answer, a stale socket, or a missing tmux is reported as an
//!   unavailable surface, never as an error.
//!
//! Known agent CLIs running in a pane's process tree become labels (`agent:claude`), which are
//! display hints only.
//!
//! **Ranking** (display order only, it never selects): the human first, then panes ordered by
//! socket path (bytes), session id number, window index, pane index and pane id number. A pane
//! shown in several sessions (a window linked into more than one) appears once, at its first
//! position in that order.

pub mod agents;
pub mod model;
pub mod procfs;
pub mod report;
pub mod tmux;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use model::{
    Candidate, DecodeError, Display, Health, HealthStatus, Host, Observation, Presence,
    PrincipalKind, SCHEMA_VERSION, Session, Surface, SurfaceStatus,
};

use crate::clock::Clock;
use procfs::ProcessTable;
use tmux::{PaneRecord, Run};
use valp_view::sanitize::display_text;

/// Where `/proc` is.
const PROC: &str = "/proc";
/// The `local_user` surface's name.
pub const LOCAL_USER_SURFACE: &str = "local_user";
/// The name of the surface that reports on tmux itself (installed? which version?).
pub const TMUX_SURFACE: &str = "tmux";

/// What the Doctor looks at.
#[derive(Debug, Clone)]
pub struct ObserveOptions {
    /// Whether to look for the user's servers in the default socket folder.
    pub scan_default_sockets: bool,
    /// More server sockets to ask (e.g. `tmux -S <path>` servers).
    pub extra_sockets: Vec<PathBuf>,
    /// The tmux binary (default: `tmux`, found through `PATH`).
    pub tmux_binary: Option<PathBuf>,
    /// `TMUX_TMPDIR` to use instead of the environment's.
    pub tmux_tmpdir: Option<OsString>,
    /// How long one tmux command may take before its server counts as not answering.
    pub timeout: Duration,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        Self {
            scan_default_sockets: true,
            extra_sockets: Vec::new(),
            tmux_binary: None,
            tmux_tmpdir: None,
            timeout: Duration::from_secs(2),
        }
    }
}

impl ObserveOptions {
    /// Only the named sockets, not the default socket folder (what tests use).
    pub fn only_sockets(sockets: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            scan_default_sockets: false,
            extra_sockets: sockets.into_iter().collect(),
            ..Self::default()
        }
    }
}

/// The observer's OS account.
struct LocalUser {
    uid: u32,
    login: Option<String>,
}

/// Facts shared by every candidate of one observation.
struct Context<'a> {
    clock: &'a dyn Clock,
    boot_id: Option<String>,
    passwd: String,
    observer_uid: Option<u32>,
    processes: Option<ProcessTable>,
}

impl Context<'_> {
    fn login_of(&self, uid: u32) -> Option<String> {
        procfs::login_of(&self.passwd, uid)
    }

    fn processes(&mut self) -> &ProcessTable {
        self.processes
            .get_or_insert_with(|| ProcessTable::scan(Path::new(PROC)))
    }
}

/// Observes every candidate this machine offers (see the module docs). Never fails: what could
/// not be observed is reported as an unavailable surface.
pub fn observe(clock: &dyn Clock, options: &ObserveOptions) -> Observation {
    let observed_at = clock.now();
    let boot_id = std::fs::read_to_string(Path::new(PROC).join("sys/kernel/random/boot_id"))
        .ok()
        .and_then(|text| procfs::parse_boot_id(&text));
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let mut surfaces = Vec::new();
    let mut candidates = Vec::new();

    let local_user = observe_local_user(&passwd, &mut surfaces);
    let mut context = Context {
        clock,
        boot_id: boot_id.clone(),
        passwd,
        observer_uid: local_user.as_ref().map(|user| user.uid),
        processes: None,
    };
    if let Some(user) = &local_user {
        candidates.push(human_candidate(&context, user));
    }
    candidates.extend(observe_tmux(&mut context, options, &mut surfaces));
    Observation::new(observed_at, Host { boot_id }, surfaces, candidates)
}

fn observe_local_user(passwd: &str, surfaces: &mut Vec<Surface>) -> Option<LocalUser> {
    let status_path = Path::new(PROC).join("self/status");
    let uid = match std::fs::read_to_string(&status_path) {
        Ok(text) => procfs::parse_status_real_uid(&text),
        Err(error) => {
            surfaces.push(unavailable(
                LOCAL_USER_SURFACE,
                format!("cannot read {}: {error}", status_path.display()),
            ));
            return None;
        }
    };
    let Some(uid) = uid else {
        surfaces.push(unavailable(
            LOCAL_USER_SURFACE,
            format!("no Uid line in {}", status_path.display()),
        ));
        return None;
    };
    let login = procfs::login_of(passwd, uid);
    surfaces.push(Surface {
        surface: LOCAL_USER_SURFACE.to_owned(),
        status: SurfaceStatus::Available,
        detail: match &login {
            Some(login) => format!("uid {uid}, login {login}"),
            None => format!("uid {uid}, no /etc/passwd entry"),
        },
    });
    Some(LocalUser { uid, login })
}

fn human_candidate(context: &Context<'_>, user: &LocalUser) -> Candidate {
    let uid = user.uid;
    let account = user.login.clone().unwrap_or_else(|| format!("uid-{uid}"));
    let mut candidate = Candidate::new(
        format!("human:uid-{uid}"),
        format!("user:{account}"),
        Session::Human {
            uid,
            login: user.login.clone(),
        },
        Health {
            status: HealthStatus::Live,
            observed_at: context.clock.now(),
            reason: None,
        },
        format!(
            "can approve and redirect; OS account {}",
            user.login.as_deref().unwrap_or(&format!("uid {uid}"))
        ),
    );
    candidate.known_limitations = vec![
        "identity is the OS account running valp, not a proof of who is at the keyboard".to_owned(),
        "reached only through this console: approvals are asked for at its terminal".to_owned(),
    ];
    if user.login.is_none() {
        candidate
            .known_limitations
            .push("the uid has no /etc/passwd entry; $USER is shown as a label only".to_owned());
    }
    candidate.display.user_label = Some(match &user.login {
        Some(login) => login.clone(),
        None => std::env::var("USER")
            .ok()
            .map(|user| display_text(&user))
            .filter(|user| !user.is_empty())
            .unwrap_or_else(|| format!("uid {uid}")),
    });
    candidate
}

/// `1 pane`, `2 panes`.
fn count(number: usize, noun: &str) -> String {
    if number == 1 {
        format!("1 {noun}")
    } else {
        format!("{number} {noun}s")
    }
}

fn unavailable(surface: &str, detail: String) -> Surface {
    Surface {
        surface: surface.to_owned(),
        status: SurfaceStatus::Unavailable,
        detail,
    }
}

fn tmux_surface(socket: &str) -> String {
    format!("{TMUX_SURFACE}:{socket}")
}

/// A socket to ask: its canonical path (when it resolved) and how the caller named it.
struct SocketTarget {
    resolved: Result<String, String>,
    named: PathBuf,
}

fn resolve_socket(path: &Path) -> SocketTarget {
    let named = path.to_path_buf();
    let resolved = (|| {
        let metadata =
            std::fs::metadata(path).map_err(|error| format!("cannot use the socket: {error}"))?;
        if !metadata.file_type().is_socket() {
            return Err("not a socket".to_owned());
        }
        let canonical = std::fs::canonicalize(path)
            .map_err(|error| format!("cannot resolve the socket path: {error}"))?;
        let text = canonical
            .to_str()
            .ok_or_else(|| "the socket path is not UTF-8; it cannot be addressed".to_owned())?;
        if !valp_view::sanitize::is_plain(text) {
            return Err("the socket path holds control characters; it cannot be addressed".into());
        }
        Ok(text.to_owned())
    })();
    SocketTarget { resolved, named }
}

/// `tmux -V`, or why tmux cannot be used.
fn tmux_version(binary: &Path, timeout: Duration) -> Result<String, String> {
    match tmux::run(binary, &["-V".as_ref()], timeout) {
        Run::NotFound => Err(format!(
            "tmux not found ({})",
            display_text(&binary.to_string_lossy())
        )),
        Run::CannotStart(error) => Err(format!("tmux cannot be started: {error}")),
        Run::TimedOut => Err(format!("`tmux -V` did not finish within {timeout:?}")),
        Run::Finished { status, stderr, .. } if !status.success() => Err(format!(
            "`tmux -V` failed: {}",
            tmux::complaint(&stderr, status)
        )),
        Run::Finished { stdout, .. } => Ok(display_text(&String::from_utf8_lossy(&stdout))),
    }
}

/// The sockets to ask (each resolved socket once, in path order; unresolvable ones after
/// them, as named) and notes on the default socket folder.
fn socket_targets(
    context: &Context<'_>,
    options: &ObserveOptions,
) -> (Vec<SocketTarget>, Vec<String>) {
    let mut notes = Vec::new();
    let mut paths = Vec::new();
    if options.scan_default_sockets {
        match context.observer_uid {
            Some(uid) => {
                let tmpdir = options
                    .tmux_tmpdir
                    .clone()
                    .or_else(|| std::env::var_os("TMUX_TMPDIR"));
                let dir = tmux::default_socket_dir(tmpdir.as_deref(), uid);
                let shown = display_text(&dir.to_string_lossy());
                match tmux::sockets_in(&dir) {
                    Ok(found) => {
                        notes.push(format!("{} in {shown}", count(found.len(), "socket")));
                        paths.extend(found);
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                        notes.push(format!("no socket folder {shown}"));
                    }
                    Err(error) => notes.push(format!("cannot list {shown}: {error}")),
                }
            }
            None => notes.push("uid unknown: default socket folder not scanned".to_owned()),
        }
    }
    paths.extend(options.extra_sockets.iter().cloned());

    let mut targets: Vec<SocketTarget> = paths.iter().map(|path| resolve_socket(path)).collect();
    targets.sort_by(|a, b| match (&a.resolved, &b.resolved) {
        (Ok(a), Ok(b)) => a.cmp(b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Less,
        (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
        (Err(_), Err(_)) => a.named.cmp(&b.named),
    });
    targets.dedup_by(|a, b| match (&a.resolved, &b.resolved) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.named == b.named,
    });
    (targets, notes)
}

fn observe_tmux(
    context: &mut Context<'_>,
    options: &ObserveOptions,
    surfaces: &mut Vec<Surface>,
) -> Vec<Candidate> {
    let binary = options
        .tmux_binary
        .clone()
        .unwrap_or_else(|| PathBuf::from("tmux"));
    let version = match tmux_version(&binary, options.timeout) {
        Ok(version) => version,
        Err(problem) => {
            surfaces.push(unavailable(TMUX_SURFACE, problem));
            return Vec::new();
        }
    };
    let (targets, notes) = socket_targets(context, options);
    let servers = targets
        .iter()
        .filter(|target| target.resolved.is_ok())
        .count();
    let servers_text = count(servers, "server socket");
    let summary = if notes.is_empty() {
        format!("{version}; {servers_text}")
    } else {
        format!("{version}; {}; {servers_text}", notes.join("; "))
    };
    surfaces.push(Surface {
        surface: TMUX_SURFACE.to_owned(),
        status: if servers == 0 {
            SurfaceStatus::Unavailable
        } else {
            SurfaceStatus::Available
        },
        detail: if targets.is_empty() {
            format!("{summary}: no tmux server to observe")
        } else {
            summary
        },
    });

    let mut candidates = Vec::new();
    for target in &targets {
        match &target.resolved {
            Err(problem) => surfaces.push(unavailable(
                &tmux_surface(&display_text(&target.named.to_string_lossy())),
                problem.clone(),
            )),
            Ok(socket) => {
                candidates.extend(observe_server(context, &binary, socket, options, surfaces));
            }
        }
    }
    candidates
}

fn observe_server(
    context: &mut Context<'_>,
    binary: &Path,
    socket: &str,
    options: &ObserveOptions,
    surfaces: &mut Vec<Surface>,
) -> Vec<Candidate> {
    let args = tmux::list_panes_args(socket);
    let args: Vec<&std::ffi::OsStr> = args.iter().map(AsRef::as_ref).collect();
    let surface = tmux_surface(socket);
    let records = match tmux::run(binary, &args, options.timeout) {
        Run::Finished {
            status,
            stdout,
            stderr,
        } => {
            if !status.success() {
                surfaces.push(unavailable(
                    &surface,
                    format!("no server answered: {}", tmux::complaint(&stderr, status)),
                ));
                return Vec::new();
            }
            match tmux::parse_list_panes(&stdout) {
                Ok(records) => records,
                Err(error) => {
                    surfaces.push(unavailable(&surface, error.to_string()));
                    return Vec::new();
                }
            }
        }
        Run::TimedOut => {
            surfaces.push(unavailable(
                &surface,
                format!("the server did not answer within {:?}", options.timeout),
            ));
            return Vec::new();
        }
        Run::NotFound => {
            surfaces.push(unavailable(&surface, "tmux not found".to_owned()));
            return Vec::new();
        }
        Run::CannotStart(error) => {
            surfaces.push(unavailable(
                &surface,
                format!("tmux cannot be started: {error}"),
            ));
            return Vec::new();
        }
    };
    // The processes of this server's panes started before this point; a table scanned for
    // an earlier server may not hold them.
    context.processes = None;
    let mut records = records;
    records.sort_by_key(|record| {
        (
            record.session_number(),
            record.window_index,
            record.pane_index,
            record.pane_number(),
        )
    });
    let mut seen = BTreeSet::new();
    records.retain(|record| seen.insert(record.pane_id.clone()));
    let server_pids: BTreeSet<u32> = records.iter().map(|record| record.server_pid).collect();
    surfaces.push(Surface {
        surface,
        status: SurfaceStatus::Available,
        detail: format!(
            "server pid {}, {}",
            server_pids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            count(records.len(), "pane")
        ),
    });
    let owner = std::fs::metadata(socket)
        .ok()
        .map(|metadata| metadata.uid());
    records
        .iter()
        .map(|record| pane_candidate(context, socket, owner, record))
        .collect()
}

fn pane_candidate(
    context: &mut Context<'_>,
    socket: &str,
    owner: Option<u32>,
    record: &PaneRecord,
) -> Candidate {
    let observed_at = context.clock.now();
    let start_of = |context: &mut Context<'_>, pid: u32| {
        context
            .processes()
            .get(pid)
            .map(|stat| stat.start_ticks)
            .or_else(|| procfs::read_stat(Path::new(PROC), pid).map(|stat| stat.start_ticks))
    };
    let server_start_ticks = start_of(context, record.server_pid);
    let pane_start_ticks = if record.pane_dead {
        None
    } else {
        start_of(context, record.pane_pid)
    };
    let reason = if record.pane_dead {
        Some(format!(
            "the pane's process {} has exited (the pane remains)",
            record.pane_pid
        ))
    } else if pane_start_ticks.is_none() {
        Some(format!(
            "the pane's process {} is not visible in /proc",
            record.pane_pid
        ))
    } else if server_start_ticks.is_none() {
        Some(format!(
            "the server's process {} is not visible in /proc",
            record.server_pid
        ))
    } else {
        None
    };
    let account = owner.map_or_else(
        || "unknown".to_owned(),
        |uid| {
            context
                .login_of(uid)
                .unwrap_or_else(|| format!("uid-{uid}"))
        },
    );
    let pane_id = &record.pane_id;
    let mut candidate = Candidate::new(
        format!("tmux:{socket}:{pane_id}"),
        format!("tmux:{account}"),
        Session::TmuxPane {
            socket: socket.to_owned(),
            server_pid: record.server_pid,
            server_start_ticks,
            pane_id: pane_id.clone(),
            pane_pid: record.pane_pid,
            pane_start_ticks,
            boot_id: context.boot_id.clone(),
        },
        Health {
            status: if reason.is_none() {
                HealthStatus::Live
            } else {
                HealthStatus::Unreachable
            },
            observed_at,
            reason,
        },
        format!(
            "receives keystrokes in tmux pane {pane_id}; no approval authority unless selected"
        ),
    );
    candidate.known_limitations = pane_limitations(context, owner, &account);
    candidate.labels = if record.pane_dead {
        Vec::new()
    } else {
        agents::labels(context.processes(), Path::new(PROC), record.pane_pid)
    };
    candidate.display = pane_display(record);
    candidate
}

fn pane_limitations(context: &Context<'_>, owner: Option<u32>, account: &str) -> Vec<String> {
    let mut limitations = vec![
        "pane ids are reused after the server restarts; identity also binds the pane's process \
         id and start time and the server's"
            .to_owned(),
        "keystrokes reach whatever runs in the pane; the Doctor cannot tell who reads them"
            .to_owned(),
        "title, folder, names, focus and labels are set by programs in the pane: display only"
            .to_owned(),
    ];
    if owner.is_some() && owner != context.observer_uid {
        limitations.push(format!(
            "the server belongs to another OS account ({account})"
        ));
    }
    if context.boot_id.is_none() {
        limitations.push("boot id unreadable: start times are not tied to a boot".to_owned());
    }
    limitations
}

fn pane_display(record: &PaneRecord) -> Display {
    Display {
        session_id: Some(record.session_id.clone()),
        session_name: Some(record.session_name.clone()),
        window_id: Some(record.window_id.clone()),
        window_index: Some(record.window_index),
        window_name: Some(record.window_name.clone()),
        window_active: Some(record.window_active),
        pane_index: Some(record.pane_index),
        pane_active: Some(record.pane_active),
        title: Some(record.title.clone()),
        current_command: Some(record.current_command.clone()),
        cwd: Some(record.current_path.clone()),
        width: Some(record.width),
        height: Some(record.height),
        user_label: None,
    }
}
