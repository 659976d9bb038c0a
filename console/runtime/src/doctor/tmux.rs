//! tmux: finding the user's servers, asking each for its panes, and reading the answer.
//!
//! Pane titles, window and session names, the current command and the current folder are
//! untrusted text: a program in a pane can set its title to anything, and paths and command
//! names may hold tabs and line breaks (tmux prints them raw). No separator is safe, so every
//! field of the `list-panes` format is length-prefixed: `#{n:x}` is the byte length tmux is
//! about to print for `#{x}`, and a record is `valp1` followed by `<len>:<bytes>` for each
//! field in [`FIELDS`] order, then LF. The parser takes exactly `<len>` bytes, so no value can
//! forge a field or a record; an answer that does not follow this framing exactly (a tmux too
//! old for `#{n:}`, say) is refused as a whole.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use valp_view::sanitize::display_text;

/// The `list-panes` format variables, in record order.
pub const FIELDS: [&str; 17] = [
    "pid",
    "session_id",
    "session_name",
    "window_id",
    "window_index",
    "window_name",
    "window_active",
    "pane_id",
    "pane_index",
    "pane_pid",
    "pane_dead",
    "pane_active",
    "pane_width",
    "pane_height",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
];

/// The tag that starts every record.
const RECORD_TAG: &[u8] = b"valp1";

/// The `-F` argument of `tmux list-panes`.
pub fn list_panes_format() -> String {
    let mut format = String::from_utf8_lossy(RECORD_TAG).into_owned();
    for field in FIELDS {
        let _ = write!(format, "#{{n:{field}}}:#{{{field}}}");
    }
    format
}

/// The arguments of `tmux … list-panes` for the server at `socket`.
///
/// `-u` declares this client UTF-8 capable: tmux otherwise replaces every non-ASCII character
/// of its output with `_` when the client's locale is not UTF-8, and the values would no longer
/// match their byte lengths.
pub fn list_panes_args(socket: &str) -> Vec<String> {
    ["-u", "-S", socket, "list-panes", "-a", "-F"]
        .into_iter()
        .map(str::to_owned)
        .chain([list_panes_format()])
        .collect()
}

/// One pane as tmux reported it. Display text is already sanitized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneRecord {
    /// The server's process id (`#{pid}`).
    pub server_pid: u32,
    /// `#{session_id}` (`$N`).
    pub session_id: String,
    /// `#{session_name}` (display only).
    pub session_name: String,
    /// `#{window_id}` (`@N`).
    pub window_id: String,
    /// `#{window_index}`.
    pub window_index: u32,
    /// `#{window_name}` (display only).
    pub window_name: String,
    /// `#{window_active}` (display only).
    pub window_active: bool,
    /// `#{pane_id}` (`%N`).
    pub pane_id: String,
    /// `#{pane_index}`.
    pub pane_index: u32,
    /// `#{pane_pid}`: the process tmux started in the pane.
    pub pane_pid: u32,
    /// `#{pane_dead}`: the pane's process exited (the pane stays with remain-on-exit).
    pub pane_dead: bool,
    /// `#{pane_active}` (display only).
    pub pane_active: bool,
    /// `#{pane_width}`.
    pub width: u32,
    /// `#{pane_height}`.
    pub height: u32,
    /// `#{pane_current_command}` (display only).
    pub current_command: String,
    /// `#{pane_current_path}` (display only).
    pub current_path: String,
    /// `#{pane_title}` (display only).
    pub title: String,
}

impl PaneRecord {
    /// The number of `session_id` (`$3` → 3).
    pub fn session_number(&self) -> u32 {
        id_number(&self.session_id, '$').unwrap_or(u32::MAX)
    }

    /// The number of `pane_id` (`%3` → 3).
    pub fn pane_number(&self) -> u32 {
        id_number(&self.pane_id, '%').unwrap_or(u32::MAX)
    }
}

fn id_number(id: &str, sigil: char) -> Option<u32> {
    id.strip_prefix(sigil)?.parse().ok()
}

/// Why a `list-panes` answer was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable tmux list-panes output (record {record}, byte {offset}): {reason}")]
pub struct ParseError {
    /// Zero-based record number.
    pub record: usize,
    /// Byte offset in the output.
    pub offset: usize,
    /// What was wrong.
    pub reason: String,
}

/// Parses the output of `tmux list-panes -F` with [`list_panes_format`].
pub fn parse_list_panes(output: &[u8]) -> Result<Vec<PaneRecord>, ParseError> {
    let mut cursor = Cursor {
        bytes: output,
        offset: 0,
        record: 0,
    };
    let mut records = Vec::new();
    while cursor.offset < output.len() {
        records.push(cursor.record()?);
        cursor.record += 1;
    }
    Ok(records)
}

struct Cursor<'b> {
    bytes: &'b [u8],
    offset: usize,
    record: usize,
}

impl<'b> Cursor<'b> {
    fn fail(&self, reason: impl Into<String>) -> ParseError {
        ParseError {
            record: self.record,
            offset: self.offset,
            reason: reason.into(),
        }
    }

    fn expect(&mut self, literal: &[u8], what: &str) -> Result<(), ParseError> {
        if self.bytes[self.offset..].starts_with(literal) {
            self.offset += literal.len();
            Ok(())
        } else {
            Err(self.fail(format!("expected {what}")))
        }
    }

    /// One `<len>:<bytes>` field.
    fn field(&mut self, name: &str) -> Result<&'b [u8], ParseError> {
        let digits = self.bytes[self.offset..]
            .iter()
            .take_while(|byte| byte.is_ascii_digit())
            .count();
        if digits == 0 || digits > 9 {
            return Err(self.fail(format!("expected the length of {name}")));
        }
        let length: usize = std::str::from_utf8(&self.bytes[self.offset..self.offset + digits])
            .ok()
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| self.fail(format!("bad length of {name}")))?;
        self.offset += digits;
        self.expect(b":", &format!("':' after the length of {name}"))?;
        let end = self
            .offset
            .checked_add(length)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| self.fail(format!("{name} runs past the end")))?;
        let value = &self.bytes[self.offset..end];
        self.offset = end;
        Ok(value)
    }

    fn number(&mut self, name: &str) -> Result<u32, ParseError> {
        let value = self.field(name)?;
        std::str::from_utf8(value)
            .ok()
            .filter(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
            .and_then(|text| text.parse().ok())
            .ok_or_else(|| self.fail(format!("{name} is not a number")))
    }

    fn flag(&mut self, name: &str) -> Result<bool, ParseError> {
        match self.field(name)? {
            b"1" => Ok(true),
            b"0" => Ok(false),
            _ => Err(self.fail(format!("{name} is not 0 or 1"))),
        }
    }

    /// An id like `$3`, `@4`, `%5`.
    fn id(&mut self, name: &str, sigil: char) -> Result<String, ParseError> {
        let value = self.field(name)?;
        std::str::from_utf8(value)
            .ok()
            .filter(|text| id_number(text, sigil).is_some())
            .map(str::to_owned)
            .ok_or_else(|| self.fail(format!("{name} is not {sigil}<number>")))
    }

    fn text(&mut self, name: &str) -> Result<String, ParseError> {
        let value = self.field(name)?;
        Ok(display_text(&String::from_utf8_lossy(value)))
    }

    fn record(&mut self) -> Result<PaneRecord, ParseError> {
        self.expect(RECORD_TAG, "a record to start with valp1")?;
        let record = PaneRecord {
            server_pid: self.number("pid")?,
            session_id: self.id("session_id", '$')?,
            session_name: self.text("session_name")?,
            window_id: self.id("window_id", '@')?,
            window_index: self.number("window_index")?,
            window_name: self.text("window_name")?,
            window_active: self.flag("window_active")?,
            pane_id: self.id("pane_id", '%')?,
            pane_index: self.number("pane_index")?,
            pane_pid: self.number("pane_pid")?,
            pane_dead: self.flag("pane_dead")?,
            pane_active: self.flag("pane_active")?,
            width: self.number("pane_width")?,
            height: self.number("pane_height")?,
            current_command: self.text("pane_current_command")?,
            current_path: self.text("pane_current_path")?,
            title: self.text("pane_title")?,
        };
        self.expect(b"\n", "LF at the end of the record")?;
        Ok(record)
    }
}

/// The folder where tmux puts the sockets of user `uid`: `$TMUX_TMPDIR/tmux-<uid>` (when
/// `TMUX_TMPDIR` is set and not empty) or `/tmp/tmux-<uid>`.
pub fn default_socket_dir(tmux_tmpdir: Option<&OsStr>, uid: u32) -> PathBuf {
    let base = tmux_tmpdir
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
    base.join(format!("tmux-{uid}"))
}

/// Every socket in `dir`, sorted by path (other files are ignored).
pub fn sockets_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut sockets = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type().is_ok_and(|kind| kind.is_socket()) {
            sockets.push(entry.path());
        }
    }
    sockets.sort();
    Ok(sockets)
}

/// How running a tmux command went.
#[derive(Debug)]
pub enum Run {
    /// The binary does not exist.
    NotFound,
    /// The binary exists but could not be started.
    CannotStart(std::io::Error),
    /// It did not finish within the time limit and was killed.
    TimedOut,
    /// It finished.
    Finished {
        /// Exit status.
        status: ExitStatus,
        /// Standard output.
        stdout: Vec<u8>,
        /// Standard error.
        stderr: Vec<u8>,
    },
}

/// Runs `binary args…` (no shell, no standard input) and waits at most `timeout`; a server
/// that accepts the connection but never answers (stopped, wedged) cannot hang the Doctor.
pub fn run(binary: &Path, args: &[&OsStr], timeout: Duration) -> Run {
    let spawned = Command::new(binary)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Run::NotFound,
        Err(error) => return Run::CannotStart(error),
    };
    let readers = [
        child.stdout.take().map(|pipe| drain(Box::new(pipe))),
        child.stderr.take().map(|pipe| drain(Box::new(pipe))),
    ];
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            Ok(None) | Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let Some(status) = status else {
        // The readers are left to finish on their own: a process the killed one started may
        // still hold the pipes open.
        return Run::TimedOut;
    };
    let [stdout, stderr] = readers.map(|reader| {
        reader
            .and_then(|handle| handle.join().ok())
            .unwrap_or_default()
    });
    Run::Finished {
        status,
        stdout,
        stderr,
    }
}

fn drain(mut pipe: Box<dyn Read + Send>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// The first line of a command's complaint, sanitized, for a surface's detail.
pub fn complaint(stderr: &[u8], status: ExitStatus) -> String {
    let text = display_text(
        String::from_utf8_lossy(stderr)
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or(""),
    );
    if text.is_empty() {
        format!("tmux exited with {status}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds one record the way tmux prints it.
    fn record(values: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = RECORD_TAG.to_vec();
        for field in FIELDS {
            let value = values
                .iter()
                .find(|(name, _)| *name == field)
                .map_or(default_value(field), |(_, value)| value);
            out.extend_from_slice(format!("{}:", value.len()).as_bytes());
            out.extend_from_slice(value);
        }
        out.push(b'\n');
        out
    }

    fn default_value(field: &str) -> &'static [u8] {
        match field {
            "pid" => b"4000",
            "session_id" => b"$0",
            "session_name" => b"main",
            "window_id" => b"@1",
            "window_index" | "pane_index" | "pane_dead" => b"0",
            "window_name" | "pane_current_command" => b"bash",
            "window_active" | "pane_active" => b"1",
            "pane_id" => b"%2",
            "pane_pid" => b"4001",
            "pane_width" => b"80",
            "pane_height" => b"24",
            "pane_current_path" => b"/home/ann",
            _ => b"ann@host",
        }
    }

    #[test]
    fn the_format_asks_for_every_field_with_its_length() {
        let format = list_panes_format();
        assert!(format.starts_with("valp1#{n:pid}:#{pid}#{n:session_id}:#{session_id}"));
        assert!(format.ends_with("#{n:pane_title}:#{pane_title}"));
        assert_eq!(format.matches("#{n:").count(), FIELDS.len());
    }

    #[test]
    fn a_plain_record_parses() {
        let parsed = parse_list_panes(&record(&[])).unwrap();
        assert_eq!(
            parsed,
            [PaneRecord {
                server_pid: 4000,
                session_id: "$0".into(),
                session_name: "main".into(),
                window_id: "@1".into(),
                window_index: 0,
                window_name: "bash".into(),
                window_active: true,
                pane_id: "%2".into(),
                pane_index: 0,
                pane_pid: 4001,
                pane_dead: false,
                pane_active: true,
                width: 80,
                height: 24,
                current_command: "bash".into(),
                current_path: "/home/ann".into(),
                title: "ann@host".into(),
            }]
        );
        assert_eq!(parsed[0].pane_number(), 2);
        assert_eq!(parsed[0].session_number(), 0);
        assert!(parse_list_panes(b"").unwrap().is_empty());
    }

    #[test]
    fn hostile_titles_and_names_cannot_forge_fields_or_records() {
        // A title that imitates the rest of a record and a whole second record.
        let forged = record(&[("pane_id", b"%666"), ("pane_pid", b"1")]);
        let mut title = b"evil\t5:%9999\n".to_vec();
        title.extend_from_slice(&forged);
        title.extend_from_slice(b"\x1b]2;retitle\x07\x1b[31mred\x1b[0m\ttab\r\n");
        let mut output = record(&[
            ("pane_title", &title),
            ("window_name", b"win\ndow\t\x1b[2J"),
            ("session_name", b"s\x00e\x7fss\xc2\x9b31mion"),
            ("pane_current_path", "/tmp/dir\twith\nnl é".as_bytes()),
            ("pane_current_command", b"sl\tp\ny"),
        ]);
        output.extend_from_slice(&record(&[("pane_id", b"%3"), ("pane_title", b"")]));
        let parsed = parse_list_panes(&output).unwrap();
        assert_eq!(parsed.len(), 2);
        let first = &parsed[0];
        assert_eq!(first.pane_id, "%2");
        assert_eq!(first.pane_pid, 4001);
        assert!(
            first.title.starts_with("evil 5:%9999 valp1"),
            "{}",
            first.title
        );
        assert!(first.title.ends_with("red tab"), "{}", first.title);
        assert!(!first.title.contains("retitle"));
        assert_eq!(first.window_name, "win dow");
        assert_eq!(first.session_name, "session");
        assert_eq!(first.current_path, "/tmp/dir with nl é");
        assert_eq!(first.current_command, "sl p y");
        for text in [&first.title, &first.window_name, &first.session_name] {
            assert!(!text.chars().any(char::is_control), "{text:?}");
        }
        assert_eq!(parsed[1].pane_id, "%3");
    }

    #[test]
    fn invalid_utf8_in_text_fields_is_replaced() {
        let parsed = parse_list_panes(&record(&[("pane_title", b"a\xffb")])).unwrap();
        assert_eq!(parsed[0].title, "a\u{fffd}b");
    }

    #[test]
    fn broken_framing_is_refused() {
        let good = record(&[]);
        let mut wrong_length = good.clone();
        // "4:4000" → "5:4000" swallows the next field's first byte.
        wrong_length[5] = b'5';
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("truncated", good[..good.len() - 3].to_vec()),
            ("missing LF", good[..good.len() - 1].to_vec()),
            ("wrong length", wrong_length),
            ("old tmux without #{n:}", b"valp1:4000:$0:main\n".to_vec()),
            ("no tag", good[5..].to_vec()),
            ("trailing garbage", [good.clone(), b"x".to_vec()].concat()),
            ("bad pane id", record(&[("pane_id", b"2")])),
            ("bad session id", record(&[("session_id", b"%0")])),
            ("bad flag", record(&[("pane_active", b"yes")])),
            ("negative pid", record(&[("pane_pid", b"-1")])),
            ("huge length", b"valp199999999999:".to_vec()),
            ("length past the end", b"valp19:12".to_vec()),
        ];
        for (name, output) in cases {
            assert!(parse_list_panes(&output).is_err(), "{name} must be refused");
        }
    }

    #[test]
    fn socket_dirs() {
        assert_eq!(
            default_socket_dir(None, 1000),
            PathBuf::from("/tmp/tmux-1000")
        );
        assert_eq!(
            default_socket_dir(Some(OsStr::new("")), 0),
            PathBuf::from("/tmp/tmux-0")
        );
        assert_eq!(
            default_socket_dir(Some(OsStr::new("/run/user/7")), 7),
            PathBuf::from("/run/user/7/tmux-7")
        );
    }

    #[test]
    fn only_sockets_are_listed() {
        let dir = std::env::temp_dir().join(format!("valp-doctor-sockets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _b = std::os::unix::net::UnixListener::bind(dir.join("b")).unwrap();
        let _a = std::os::unix::net::UnixListener::bind(dir.join("a")).unwrap();
        std::fs::write(dir.join("not-a-socket"), b"").unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let found = sockets_in(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(found.unwrap(), [dir.join("a"), dir.join("b")]);
        assert!(sockets_in(Path::new("/nonexistent-valp-dir")).is_err());
    }

    #[test]
    fn commands_run_with_a_time_limit() {
        let missing = run(Path::new("/nonexistent/tmux"), &[], Duration::from_secs(1));
        assert!(matches!(missing, Run::NotFound), "{missing:?}");
        let Run::Finished { status, stdout, .. } = run(
            Path::new("/bin/sh"),
            &[OsStr::new("-c"), OsStr::new("printf 'a\\tb'")],
            Duration::from_secs(5),
        ) else {
            panic!("sh must run")
        };
        assert!(status.success());
        assert_eq!(stdout, b"a\tb");
        let started = Instant::now();
        let hung = run(
            Path::new("/bin/sh"),
            &[OsStr::new("-c"), OsStr::new("exec sleep 30")],
            Duration::from_millis(100),
        );
        assert!(matches!(hung, Run::TimedOut), "{hung:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
