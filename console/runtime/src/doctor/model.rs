//! What the Doctor observed: surfaces, candidates and their identity, in canonical JSON
//! (`valp-doctor-observation.v1`, `schemas/console/doctor-observation.schema.json`).
//!
//! A candidate's identity is its [`Session`] tuple, built only from allowlisted runtime facts
//! (user id and login; tmux socket, server and pane process ids and start times, pane id, boot
//! id). Its `fingerprint` is the digest of that tuple's canonical JSON and is computed from it,
//! never stored separately. Titles, focus, folders, names, commands and labels live in
//! [`Display`] and in `labels`, which are outside the tuple, so changing them cannot change who
//! a candidate is (RFC D18).

use serde::Deserialize;
use valp_kernel::canonical::{Canonical, sha256_digest};
use valp_kernel::json::write::{Fields, write_str};

use crate::clock::Timestamp;

/// The `schema_version` of an observation.
pub const SCHEMA_VERSION: &str = "valp-doctor-observation.v1";

/// One run of the Doctor.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observation {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: SchemaVersion,
    /// When the observation started.
    #[serde(deserialize_with = "timestamp")]
    pub observed_at: Timestamp,
    /// The machine.
    pub host: Host,
    /// One explicit result per surface looked at.
    pub surfaces: Vec<Surface>,
    /// Every candidate found, in ranking order (ranking orders; it never selects).
    pub candidates: Vec<Candidate>,
}

/// The `schema_version` member (only [`SCHEMA_VERSION`] decodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum SchemaVersion {
    /// `valp-doctor-observation.v1`.
    #[serde(rename = "valp-doctor-observation.v1")]
    V1,
}

/// The machine the observation was made on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// `/proc/sys/kernel/random/boot_id` (absent when it could not be read).
    pub boot_id: Option<String>,
}

/// The result for one surface.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    /// `local_user`, `tmux` (tmux itself) or `tmux:<socket path>` (one server).
    pub surface: String,
    /// Whether candidates could be observed on it.
    pub status: SurfaceStatus,
    /// What was found, or why nothing could be.
    pub detail: String,
}

/// Whether a surface could be observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurfaceStatus {
    /// It answered.
    Available,
    /// It is missing or did not answer (the detail says which); not an error.
    Unavailable,
}

/// Someone or something that could be selected as the Leader.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Candidate {
    /// The stable address: `human:uid-<uid>` or `tmux:<socket path>:<pane id>`.
    pub candidate_id: String,
    /// `user:<login>` for the person; `tmux:<login>` for every pane of that OS account.
    pub principal_id: String,
    /// What kind of principal.
    pub principal_kind: PrincipalKind,
    /// The identity tuple the fingerprint is computed from.
    pub session: Session,
    /// `sha256:` of the session's canonical JSON; always equal to `session.fingerprint()`
    /// (decoding refuses anything else).
    #[serde(rename = "fingerprint")]
    stored_fingerprint: String,
    /// Whether it exists now.
    pub presence: Presence,
    /// Whether it can be reached, and when that was observed.
    pub health: Health,
    /// What it can do (text for the person choosing).
    pub permission_boundary: String,
    /// What the observation cannot tell.
    pub known_limitations: Vec<String>,
    /// Display hints such as `agent:claude`; never identity, never authority.
    pub labels: Vec<String>,
    /// Display-only facts (sanitized text); never identity.
    pub display: Display,
}

/// The principal kinds the Doctor observes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// The local human operator.
    Human,
    /// A tmux pane (addressable by keystrokes).
    TmuxPane,
}

impl PrincipalKind {
    /// `human` or `tmux_pane`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::TmuxPane => "tmux_pane",
        }
    }
}

/// A candidate's identity tuple (allowlisted runtime facts only).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Session {
    /// The local human operator's OS account.
    Human {
        /// Real user id.
        uid: u32,
        /// Login name from `/etc/passwd` (absent when the uid has no entry).
        login: Option<String>,
    },
    /// One tmux pane.
    TmuxPane {
        /// The server's socket (canonical absolute path).
        socket: String,
        /// The server's process id.
        server_pid: u32,
        /// The server's start time, clock ticks since boot (absent when unreadable).
        server_start_ticks: Option<u64>,
        /// The pane id (`%N`; unique within one server's lifetime, reused by the next).
        pane_id: String,
        /// The process tmux started in the pane.
        pane_pid: u32,
        /// That process's start time, clock ticks since boot (absent when unreadable).
        pane_start_ticks: Option<u64>,
        /// The boot the start times count from (absent when unreadable).
        boot_id: Option<String>,
    },
}

impl Session {
    /// `sha256:` + hex of this tuple's canonical JSON.
    pub fn fingerprint(&self) -> String {
        sha256_digest(&self.canonical_bytes())
    }
}

/// Whether a candidate exists now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Observed in this run.
    Present,
}

/// A health observation.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Health {
    /// Live or unreachable.
    pub status: HealthStatus,
    /// When.
    #[serde(deserialize_with = "timestamp")]
    pub observed_at: Timestamp,
    /// Why it is unreachable (absent when live).
    pub reason: Option<String>,
}

/// Whether a candidate can be reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// Its process runs and its identity could be read in full.
    Live,
    /// It exists but cannot be reached or fully identified now.
    Unreachable,
}

/// Display-only facts about a candidate (sanitized at ingest; never identity).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Display {
    /// Human: the login, or `$USER` when the uid has no passwd entry.
    pub user_label: Option<String>,
    /// tmux session id (`$N`).
    pub session_id: Option<String>,
    /// tmux session name.
    pub session_name: Option<String>,
    /// tmux window id (`@N`).
    pub window_id: Option<String>,
    /// tmux window index.
    pub window_index: Option<u32>,
    /// tmux window name.
    pub window_name: Option<String>,
    /// Whether the window is its session's current window.
    pub window_active: Option<bool>,
    /// tmux pane index in its window.
    pub pane_index: Option<u32>,
    /// Whether the pane is its window's current pane.
    pub pane_active: Option<bool>,
    /// Pane title.
    pub title: Option<String>,
    /// The pane's foreground command.
    pub current_command: Option<String>,
    /// The pane's current folder.
    pub cwd: Option<String>,
    /// Pane width in cells.
    pub width: Option<u32>,
    /// Pane height in cells.
    pub height: Option<u32>,
}

impl Candidate {
    /// A present candidate; its fingerprint is computed from `session`.
    pub fn new(
        candidate_id: String,
        principal_id: String,
        session: Session,
        health: Health,
        permission_boundary: String,
    ) -> Self {
        let principal_kind = match session {
            Session::Human { .. } => PrincipalKind::Human,
            Session::TmuxPane { .. } => PrincipalKind::TmuxPane,
        };
        let stored_fingerprint = session.fingerprint();
        Self {
            candidate_id,
            principal_id,
            principal_kind,
            session,
            stored_fingerprint,
            presence: Presence::Present,
            health,
            permission_boundary,
            known_limitations: Vec::new(),
            labels: Vec::new(),
            display: Display::default(),
        }
    }

    /// `sha256:` of the identity tuple (see [`Session::fingerprint`]).
    pub fn fingerprint(&self) -> String {
        self.session.fingerprint()
    }
}

/// Why stored bytes are not an observation.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON of the observation's shape.
    #[error("not a doctor observation: {0}")]
    Shape(#[from] serde_json::Error),
    /// Valid shape, but the bytes are not exactly its canonical encoding (whitespace, key order,
    /// an explicit null, or a fingerprint that does not match its session).
    #[error("not the canonical encoding of a doctor observation (first difference at byte {0})")]
    NotCanonical(usize),
}

impl Observation {
    /// An observation with the current schema version.
    pub fn new(
        observed_at: Timestamp,
        host: Host,
        surfaces: Vec<Surface>,
        candidates: Vec<Candidate>,
    ) -> Self {
        Self {
            schema_version: SchemaVersion::V1,
            observed_at,
            host,
            surfaces,
            candidates,
        }
    }

    /// The candidate with this id.
    pub fn candidate(&self, candidate_id: &str) -> Option<&Candidate> {
        self.candidates
            .iter()
            .find(|candidate| candidate.candidate_id == candidate_id)
    }

    /// Reads stored canonical bytes back, refusing anything that is not byte for byte the
    /// canonical encoding of the observation it decodes to.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let observation: Self = serde_json::from_slice(bytes)?;
        let canonical = observation.canonical_bytes();
        if canonical != bytes {
            return Err(DecodeError::NotCanonical(
                valp_kernel::canonical::first_difference(&canonical, bytes),
            ));
        }
        Ok(observation)
    }
}

fn timestamp<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Timestamp, D::Error> {
    let text = String::deserialize(deserializer)?;
    Timestamp::parse_rfc3339(&text)
        .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not an RFC 3339 UTC time")))
}

fn write_bool(out: &mut Vec<u8>, value: bool) {
    out.extend_from_slice(if value { b"true" } else { b"false" });
}

fn write_strings(out: &mut Vec<u8>, values: &[String]) {
    out.push(b'[');
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write_str(out, value);
    }
    out.push(b']');
}

impl Canonical for Observation {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.list("candidates", &self.candidates);
        fields.canonical("host", &self.host);
        fields.str("observed_at", &self.observed_at.to_rfc3339());
        fields.str("schema_version", SCHEMA_VERSION);
        fields.list("surfaces", &self.surfaces);
        fields.end();
    }
}

impl Canonical for Host {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        if let Some(boot_id) = &self.boot_id {
            fields.str("boot_id", boot_id);
        }
        fields.end();
    }
}

impl Canonical for Surface {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("detail", &self.detail);
        fields.str(
            "status",
            match self.status {
                SurfaceStatus::Available => "available",
                SurfaceStatus::Unavailable => "unavailable",
            },
        );
        fields.str("surface", &self.surface);
        fields.end();
    }
}

impl Canonical for Candidate {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("candidate_id", &self.candidate_id);
        fields.canonical("display", &self.display);
        fields.str("fingerprint", &self.fingerprint());
        fields.canonical("health", &self.health);
        write_strings(fields.key("known_limitations"), &self.known_limitations);
        write_strings(fields.key("labels"), &self.labels);
        fields.str("permission_boundary", &self.permission_boundary);
        fields.str("presence", "present");
        fields.str("principal_id", &self.principal_id);
        fields.str("principal_kind", self.principal_kind.as_str());
        fields.canonical("session", &self.session);
        fields.end();
    }
}

impl Canonical for Session {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        match self {
            Self::Human { uid, login } => {
                fields.str("kind", "human");
                if let Some(login) = login {
                    fields.str("login", login);
                }
                fields.int("uid", i128::from(*uid));
            }
            Self::TmuxPane {
                socket,
                server_pid,
                server_start_ticks,
                pane_id,
                pane_pid,
                pane_start_ticks,
                boot_id,
            } => {
                if let Some(boot_id) = boot_id {
                    fields.str("boot_id", boot_id);
                }
                fields.str("kind", "tmux_pane");
                fields.str("pane_id", pane_id);
                fields.int("pane_pid", i128::from(*pane_pid));
                if let Some(ticks) = pane_start_ticks {
                    fields.int("pane_start_ticks", i128::from(*ticks));
                }
                fields.int("server_pid", i128::from(*server_pid));
                if let Some(ticks) = server_start_ticks {
                    fields.int("server_start_ticks", i128::from(*ticks));
                }
                fields.str("socket", socket);
            }
        }
        fields.end();
    }
}

impl Canonical for Health {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        fields.str("observed_at", &self.observed_at.to_rfc3339());
        if let Some(reason) = &self.reason {
            fields.str("reason", reason);
        }
        fields.str(
            "status",
            match self.status {
                HealthStatus::Live => "live",
                HealthStatus::Unreachable => "unreachable",
            },
        );
        fields.end();
    }
}

impl Canonical for Display {
    fn write_canonical(&self, out: &mut Vec<u8>) {
        let mut fields = Fields::begin(out);
        let text = |fields: &mut Fields<'_>, key, value: &Option<String>| {
            if let Some(value) = value {
                fields.str(key, value);
            }
        };
        let number = |fields: &mut Fields<'_>, key, value: Option<u32>| {
            if let Some(value) = value {
                fields.int(key, i128::from(value));
            }
        };
        let flag = |fields: &mut Fields<'_>, key, value: Option<bool>| {
            if let Some(value) = value {
                write_bool(fields.key(key), value);
            }
        };
        text(&mut fields, "current_command", &self.current_command);
        text(&mut fields, "cwd", &self.cwd);
        number(&mut fields, "height", self.height);
        flag(&mut fields, "pane_active", self.pane_active);
        number(&mut fields, "pane_index", self.pane_index);
        text(&mut fields, "session_id", &self.session_id);
        text(&mut fields, "session_name", &self.session_name);
        text(&mut fields, "title", &self.title);
        text(&mut fields, "user_label", &self.user_label);
        number(&mut fields, "width", self.width);
        flag(&mut fields, "window_active", self.window_active);
        text(&mut fields, "window_id", &self.window_id);
        number(&mut fields, "window_index", self.window_index);
        text(&mut fields, "window_name", &self.window_name);
        fields.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: i64) -> Timestamp {
        Timestamp::from_millis(millis)
    }

    fn pane_session(title_free_pid: u32) -> Session {
        Session::TmuxPane {
            socket: "/tmp/tmux-1000/default".into(),
            server_pid: 10,
            server_start_ticks: Some(100),
            pane_id: "%0".into(),
            pane_pid: title_free_pid,
            pane_start_ticks: Some(200),
            boot_id: Some("028c6801-0bd8-45b6-9640-55274fd592c0".into()),
        }
    }

    fn sample() -> Observation {
        let health = Health {
            status: HealthStatus::Live,
            observed_at: at(1_796_042_096_789),
            reason: None,
        };
        let mut human = Candidate::new(
            "human:uid-1000".into(),
            "user:ann".into(),
            Session::Human {
                uid: 1000,
                login: Some("ann".into()),
            },
            health.clone(),
            "can approve and redirect; OS account ann".into(),
        );
        human.display.user_label = Some("ann".into());
        let mut pane = Candidate::new(
            "tmux:/tmp/tmux-1000/default:%0".into(),
            "tmux:ann".into(),
            pane_session(11),
            Health {
                status: HealthStatus::Unreachable,
                reason: Some("pane process exited".into()),
                ..health
            },
            "receives keystrokes in tmux pane %0".into(),
        );
        pane.labels = vec!["agent:claude".into()];
        pane.known_limitations = vec!["pane ids are reused".into()];
        pane.display = Display {
            session_id: Some("$0".into()),
            session_name: Some("main".into()),
            window_id: Some("@0".into()),
            window_index: Some(0),
            window_name: Some("claude \"quoted\"".into()),
            window_active: Some(true),
            pane_index: Some(0),
            pane_active: Some(false),
            title: Some("é 🦀".into()),
            current_command: Some("claude".into()),
            cwd: Some("/home/ann".into()),
            width: Some(80),
            height: Some(24),
            user_label: None,
        };
        Observation::new(
            at(1_796_042_096_789),
            Host {
                boot_id: Some("028c6801-0bd8-45b6-9640-55274fd592c0".into()),
            },
            vec![Surface {
                surface: "local_user".into(),
                status: SurfaceStatus::Available,
                detail: "uid 1000".into(),
            }],
            vec![human, pane],
        )
    }

    #[test]
    fn observations_are_canonical_and_round_trip() {
        let observation = sample();
        let bytes = observation.canonical_bytes();
        let value = valp_kernel::canonical::decode_canonical(&bytes).unwrap();
        assert!(matches!(value, valp_kernel::json::Value::Object(_)));
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(text.starts_with(r#"{"candidates":[{"candidate_id":"human:uid-1000","#));
        assert!(text.contains(r#""observed_at":"2026-11-30T12:34:56.789Z""#));
        assert!(text.contains(r#""pane_active":false"#));
        let decoded = Observation::decode(&bytes).unwrap();
        assert_eq!(decoded, observation);
        assert_eq!(decoded.canonical_bytes(), bytes);
        assert_eq!(
            observation
                .candidate("tmux:/tmp/tmux-1000/default:%0")
                .map(|c| c.principal_kind),
            Some(PrincipalKind::TmuxPane)
        );
    }

    #[test]
    fn decoding_refuses_non_canonical_or_inconsistent_bytes() {
        let bytes = sample().canonical_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let fingerprint = sample().candidates[1].fingerprint();
        let cases = [
            text.replacen(&fingerprint, &sample().candidates[0].fingerprint(), 1),
            text.replacen("{\"candidates\"", "{ \"candidates\"", 1),
            text.replacen("\"reason\":\"pane process exited\",", "\"reason\":null,", 1),
            text.replacen(
                "\"schema_version\":\"valp-doctor-observation.v1\"",
                "\"schema_version\":\"v2\"",
                1,
            ),
            text.replacen("\"presence\":\"present\"", "\"presence\":\"absent\"", 1),
            text.replacen("2026-11-30T12:34:56.789Z", "2026-11-30T12:34:56Z", 1),
            text.replacen("\"kind\":\"human\",", "\"kind\":\"human\",\"extra\":1,", 1),
            text.trim_end().to_owned(),
        ];
        for (index, case) in cases.iter().enumerate() {
            assert_ne!(case, &text, "case {index} must change the text");
            assert!(
                Observation::decode(case.as_bytes()).is_err(),
                "case {index}"
            );
        }
    }

    #[test]
    fn the_fingerprint_covers_exactly_the_session_tuple() {
        let observation = sample();
        let pane = &observation.candidates[1];
        let tuple = String::from_utf8(pane.session.canonical_bytes()).unwrap();
        assert_eq!(
            tuple,
            "{\"boot_id\":\"028c6801-0bd8-45b6-9640-55274fd592c0\",\"kind\":\"tmux_pane\",\
             \"pane_id\":\"%0\",\"pane_pid\":11,\"pane_start_ticks\":200,\"server_pid\":10,\
             \"server_start_ticks\":100,\"socket\":\"/tmp/tmux-1000/default\"}\n"
        );
        assert_eq!(pane.fingerprint(), sha256_digest(tuple.as_bytes()));
        let mut renamed = pane.clone();
        renamed.display.title = Some("something else".into());
        renamed.display.cwd = Some("/".into());
        renamed.labels.clear();
        assert_eq!(renamed.fingerprint(), pane.fingerprint());
        assert_ne!(pane_session(12).fingerprint(), pane.fingerprint());
    }
}
