//! The real `valp` console in a pseudo-terminal, driven and timed from outside the process: the
//! whole path a person's key takes (the terminal, crossterm's input, the event loop, the app,
//! ratatui's diff, the bytes written back), which no in-process benchmark sees.
//!
//! - [`Fixture`]: a project (`valp init`, the local OS account selected as the Leader) with
//!   `tasks` published tasks of `items` work items each: in every task, `root` runs and the rest
//!   wait on it (hard dependencies). The first `agents` tasks run their root with the process
//!   adapter (`sleep`, a running agent with its supervisor), the others with the external
//!   adapter (an attempt in flight that no process serves), so the runtime has 10,000 items to
//!   read while only a few processes exist.
//! - [`Console`]: `valp` started on a new pty of a given size (`setsid --ctty`, so the pty is
//!   its controlling terminal and crossterm measures it, not the caller's). A thread reads
//!   everything the console writes and stamps each chunk with the time it arrived.
//!
//! A frame is recognised by its end: ratatui finishes every frame that has no text cursor by
//! hiding the cursor (`ESC [ ? 25 l`), after the cells. [`Console::key_to_frame`] waits until
//! the console has been quiet for a moment (so a frame already on its way is not taken for the
//! answer), writes the key and times the arrival of the next frame end. [`Console::idle_cpu`]
//! reads the process's `utime + stime` from `/proc/<pid>/stat` before and after a period.
//!
//! `VALP_PTY_BINARY` names another `valp` to run as the console (the fixture is still written
//! by this workspace's). Used by the `console_pty` benchmark (the long run, figures in ARCHITECTURE.md) and by the
//! `console_pty` test (a short smoke run that asserts that every key is answered, never how
//! fast).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test support: a failure is a test failure

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
use rustix::termios::{Winsize, tcsetwinsize};

use crate::project::{Project, plan, work_item};
use crate::valp_binary;

/// What ends every frame drawn without a text cursor.
pub const FRAME_END: &[u8] = b"\x1b[?25l";
/// A cursor position query (answered, in case a terminal library asks).
const POSITION_QUERY: &[u8] = b"\x1b[6n";
/// How long the console must have written nothing before a key is sent.
const QUIET: Duration = Duration::from_millis(30);
/// How long a key may wait for its frame before the harness gives up on it.
const FRAME_PATIENCE: Duration = Duration::from_secs(5);

/// A project with published tasks for the console to show and run. Dropping it cancels the
/// running agents (`valp cancel`), so their processes do not outlive the project folder.
pub struct Fixture {
    /// The project (its folder holds `.valp/`).
    pub project: Project,
    agents: usize,
}

impl Fixture {
    /// `tasks` tasks `task-NNN` of `items` work items each (`items` >= 1), the first `agents`
    /// with a running process root (`sleep 3600`), the others with an external root.
    pub fn new(tasks: usize, items: usize, agents: usize) -> Self {
        let project = Project::new();
        for task in 0..tasks {
            let task_id = format!("task-{task:03}");
            let run = if task < agents {
                "[work_items.run]\nadapter = \"process\"\nargv = [\"sleep\", \"3600\"]\n\
                 timeout_seconds = 7200\n"
            } else {
                "run = { adapter = \"external\" }\n"
            };
            let mut body = work_item("root", "required", &[], &[], run);
            for item in 1..items {
                body.push('\n');
                body.push_str(&work_item(
                    &format!("item-{item:03}"),
                    "required",
                    &[("root", "hard")],
                    &[],
                    "run = { adapter = \"external\" }\n",
                ));
            }
            project.publish(&task_id, &plan(&task_id, &body));
        }
        Self {
            project,
            agents: agents.min(tasks),
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        for task in 0..self.agents {
            let task_id = format!("task-{task:03}");
            // A task whose agent already ended answers with a refusal: nothing to stop then.
            let _ = self.project.valp(&["cancel", &task_id, "--item", "root"]);
        }
    }
}

/// The `valp` console on a pty.
pub struct Console {
    master: File,
    child: Child,
    output: Receiver<(Instant, Vec<u8>)>,
    /// Bytes received and not yet looked at by a wait.
    seen: Vec<u8>,
    /// When the process was started.
    started: Instant,
}

impl Console {
    /// Starts `valp --no-default-sockets` in `folder` on a `columns` x `rows` pty, without tmux
    /// servers to observe.
    pub fn start(folder: &std::path::Path, columns: u16, rows: u16) -> Self {
        let master =
            openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        tcsetwinsize(
            &master,
            Winsize {
                ws_row: rows,
                ws_col: columns,
                ws_xpixel: 0,
                ws_ypixel: 0,
            },
        )
        .unwrap();
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = File::options()
            .read(true)
            .write(true)
            .open(name.to_str().unwrap())
            .unwrap();
        let started = Instant::now();
        let child = Command::new("setsid")
            .arg("--ctty")
            .arg(console_binary())
            .arg("--no-default-sockets")
            .current_dir(folder)
            .env_remove("TMUX")
            .env("TMUX_TMPDIR", folder.join("no-tmux"))
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave))
            .spawn()
            .unwrap();
        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let (sender, output) = channel();
        std::thread::spawn(move || {
            let mut buffer = vec![0_u8; 64 * 1024];
            // Ends when the console is gone (EIO on the master) or the harness is.
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0
                    || sender
                        .send((Instant::now(), buffer[..read].to_vec()))
                        .is_err()
                {
                    return;
                }
            }
        });
        Self {
            master,
            child,
            output,
            seen: Vec::new(),
            started,
        }
    }

    /// How long after its start the console finished its first frame (whole process: exec,
    /// opening the control root, the terminal set up, the frame written), or `None` if none came
    /// within `patience`. Call it first, before any other wait.
    pub fn first_frame(&mut self, patience: Duration) -> Option<Duration> {
        let deadline = self.started + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, chunk) = self.receive(left)?;
            self.seen.extend_from_slice(&chunk);
            if contains(&self.seen, FRAME_END) {
                return Some(at.duration_since(self.started));
            }
        }
    }

    /// The console's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `bytes` to the console's terminal input.
    pub fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).unwrap();
    }

    /// Takes in one chunk of output (at most `patience`); `None` when nothing came.
    fn receive(&mut self, patience: Duration) -> Option<(Instant, Vec<u8>)> {
        match self.output.recv_timeout(patience) {
            Ok((at, chunk)) => {
                if contains(&chunk, POSITION_QUERY) {
                    self.send(b"\x1b[1;1R");
                }
                Some((at, chunk))
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the console's terminal closed"),
        }
    }

    /// Waits until the console has written `text` (as one run of bytes) since the last wait.
    pub fn wait_for(&mut self, text: &str, patience: Duration) {
        let deadline = Instant::now() + patience;
        while !contains(&self.seen, text.as_bytes()) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "the console never wrote {text:?}");
            if let Some((_, chunk)) = self.receive(left) {
                self.seen.extend_from_slice(&chunk);
            }
        }
        self.seen.clear();
    }

    /// Waits until nothing has come for [`QUIET`] (at most `patience`).
    fn settle(&mut self, patience: Duration) {
        let deadline = Instant::now() + patience;
        while Instant::now() < deadline && self.receive(QUIET).is_some() {}
    }

    /// Sends `key` once the console is quiet and returns how long its frame took to arrive
    /// (from the write to the chunk holding the frame's end), or `None` if no frame came within
    /// five seconds.
    pub fn key_to_frame(&mut self, key: &[u8]) -> Option<Duration> {
        self.settle(Duration::from_secs(1));
        let sent = Instant::now();
        self.send(key);
        let deadline = sent + FRAME_PATIENCE;
        // The end marker may be split over two chunks.
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, chunk) = self.receive(left)?;
            tail.extend_from_slice(&chunk);
            if contains(&tail, FRAME_END) {
                return Some(at.duration_since(sent));
            }
            let keep = tail.len().saturating_sub(FRAME_END.len());
            tail.drain(..keep);
        }
    }

    /// The console's CPU time (user + system, with the children it waited for) over `period`, as a fraction of one core, and the
    /// frames it drew meanwhile.
    pub fn idle_cpu(&mut self, period: Duration) -> (f64, usize) {
        self.settle(Duration::from_secs(1));
        let before = cpu_ticks(self.pid());
        let started = Instant::now();
        let mut frames = 0;
        while started.elapsed() < period {
            let left = period.saturating_sub(started.elapsed());
            if let Some((_, chunk)) = self.receive(left) {
                frames += count(&chunk, FRAME_END);
            }
        }
        let ticks = cpu_ticks(self.pid()) - before;
        let per_second = rustix::param::clock_ticks_per_second();
        #[allow(clippy::cast_precision_loss)] // ticks over a minute: far below 2^52
        let share = ticks as f64 / per_second as f64 / started.elapsed().as_secs_f64();
        (share, frames)
    }

    /// Sends `q` and waits (at most `patience`) for the console to end; its exit code.
    pub fn quit(mut self, patience: Duration) -> Option<i32> {
        self.send(b"q");
        let deadline = Instant::now() + patience;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the console did not end after q");
            // Keep reading, so a console writing its last frame is never blocked on the pty
            // (the terminal closes when the console is gone).
            let _ = self.output.recv_timeout(Duration::from_millis(20));
        }
    }
}

impl Drop for Console {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `valp` that runs the console: `VALP_PTY_BINARY` if set (to time another build, e.g. an
/// older commit's, on the same fixture), else this workspace's.
fn console_binary() -> PathBuf {
    std::env::var_os("VALP_PTY_BINARY").map_or_else(|| valp_binary().unwrap(), PathBuf::from)
}

/// `utime + stime + cutime + cstime` of process `pid`, in clock ticks: its own CPU time and
/// that of the children it waited for (the `tmux` commands of the Doctor's observations).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (in parentheses) may hold spaces: fields are counted after it.
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 14 to 17 of proc(5); the first field after the name is field 3.
    fields[11..15]
        .iter()
        .map(|field| field.parse::<u64>().unwrap())
        .sum()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|window| *window == needle)
        .count()
}
