//! The hook bridge's short way in. Agents run `valp hook claude|codex …` and `valp notify codex
//! …` at every event and wait for them, so `main` tries these first with a parser of their own
//! arguments only ([`HookArgs`], [`NotifyArgs`]: the very definitions the full command line
//! uses), before it installs color-eyre and builds the whole command line (dozens of
//! subcommands) for one hook. A command line this parser does not take whole (a global
//! option, `--help`, a mistake, any other command) returns `None` and goes the usual way, so
//! what valp does with it, and says about it, is the full parser's.
//!
//! `valp verify` has a short way in too ([`verify`]): it takes only the global options, so
//! [`Globals`] alone parses it, without the ~30 other subcommands' shells and the global
//! options copied into each (-330 K of the 1.39 M instructions of an empty-root verify).
//!
//! A hook process also turns transparent huge pages off for itself
//! ([`small_pages`](crate::small_pages::small_pages)): zeroing 2 MiB pages was most of a hook's
//! CPU time after process start.

use std::ffi::OsString;

use clap::{Args, FromArgMatches};

use crate::cli::{Cli, Command, Globals, HookArgs, NotifyArgs};

/// A hook command, parsed.
#[derive(Debug, Clone)]
pub enum FastHook {
    /// `valp hook AGENT …`
    Hook(HookArgs),
    /// `valp notify codex …`
    Notify(NotifyArgs),
}

/// The hook command `args` (the whole argv, program name first) names, if the hook parsers
/// take it whole.
pub fn parse(args: &[OsString]) -> Option<FastHook> {
    let rest = args.get(1..)?;
    match rest.first()?.to_str()? {
        "hook" => arguments("hook", rest).map(FastHook::Hook),
        "notify" => arguments("notify", rest).map(FastHook::Notify),
        _ => None,
    }
}

/// `valp verify` and its global options (`args` is the whole argv, program name first), parsed
/// as the full command line parses them, if [`Globals`] takes them whole.
pub fn verify(args: &[OsString]) -> Option<Cli> {
    let rest = args.get(1..)?;
    if rest.first()? != "verify" {
        return None;
    }
    arguments::<Globals>("verify", rest).map(|globals| Cli {
        globals,
        command: Some(Command::Verify),
    })
}

/// `rest` (the subcommand's name first) parsed as the arguments `T` of subcommand `name`.
fn arguments<T: Args + FromArgMatches>(name: &'static str, rest: &[OsString]) -> Option<T> {
    let matches = T::augment_args(clap::Command::new(name))
        .try_get_matches_from(rest)
        .ok()?;
    T::from_arg_matches(&matches).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use valp_runtime::agent::channel::approval::TimeoutAnswer;
    use valp_runtime::agent::channel::setup::Agent;

    fn argv(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_hook_command_lines_agents_run_are_taken_whole() {
        let Some(FastHook::Hook(hook)) = parse(&argv(&["valp", "hook", "claude"])) else {
            panic!("not taken")
        };
        assert_eq!(
            (hook.agent, hook.wait_ms, hook.on_timeout, hook.payload),
            (Agent::Claude, 45_000, TimeoutAnswer::Deny, None)
        );
        let Some(FastHook::Hook(hook)) = parse(&argv(&[
            "/v",
            "hook",
            "codex",
            "--wait-ms",
            "5",
            "--on-timeout",
            "ask",
            "{}",
        ])) else {
            panic!("not taken")
        };
        assert_eq!(
            (hook.agent, hook.wait_ms, hook.on_timeout),
            (Agent::Codex, 5, TimeoutAnswer::Ask)
        );
        assert_eq!(hook.payload.as_deref(), Some("{}"));
        let Some(FastHook::Notify(notify)) =
            parse(&argv(&["valp", "notify", "codex", "{\"type\":\"x\"}"]))
        else {
            panic!("not taken")
        };
        assert_eq!(notify.agent, "codex");
        assert_eq!(notify.payload.as_deref(), Some("{\"type\":\"x\"}"));
    }

    #[test]
    fn a_verify_is_parsed_as_the_full_command_line_parses_it() {
        use clap::Parser as _;
        for words in [
            &["valp", "verify"][..],
            &["valp", "verify", "--no-default-sockets"],
            &[
                "/v",
                "verify",
                "--root",
                "/r",
                "--tmux-socket",
                "a",
                "--tmux-socket=b",
            ],
            &[
                "valp", "verify", "--color", "never", "--theme", "dark", "--config", "c",
            ],
        ] {
            let fast = verify(&argv(words)).expect("taken");
            let full = Cli::try_parse_from(words).unwrap();
            assert_eq!(format!("{fast:?}"), format!("{full:?}"), "{words:?}");
        }
        for words in [
            &["valp"][..],
            &["valp", "--root", "/r", "verify"],
            &["valp", "verify", "--help"],
            &["valp", "verify", "-h"],
            &["valp", "verify", "--version"],
            &["valp", "verify", "extra"],
            &["valp", "verify", "--color", "pink"],
            &["valp", "verify", "--root"],
            &["valp", "verifyx"],
            &["valp", "doctor"],
        ] {
            assert!(verify(&argv(words)).is_none(), "{words:?}");
        }
    }

    #[test]
    fn anything_else_goes_to_the_full_command_line() {
        for words in [
            &["valp"][..],
            &["valp", "doctor"],
            &["valp", "--root", "/r", "hook", "claude"],
            &["valp", "hook", "claude", "--root", "/r"],
            &["valp", "hook", "claude", "--help"],
            &["valp", "hook", "gemini"],
            &["valp", "hook"],
            &["valp", "hook", "claude", "--wait-ms", "soon"],
            &["valp", "notify", "claude"],
            &["valp", "hook", "claude", "a", "b"],
        ] {
            assert!(parse(&argv(words)).is_none(), "{words:?}");
        }
    }
}
