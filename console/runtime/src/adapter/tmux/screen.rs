//! What of an agent's screen valp keeps: its last lines, sanitized (no escape sequences, OSC
//! titles or clipboard writes, control or bidi characters: [`screen_lines`] cleans each line as
//! every display does), obvious secrets redacted, capped in lines and characters. Screen text is
//! untrusted: nothing of it is stored in an attempt folder or shown without passing here.

use std::sync::LazyLock;

use regex::Regex;

use crate::agent::classify::screen_lines;

/// Lines kept from the bottom of the screen.
pub const TAIL_LINES: usize = 40;
/// Characters kept per line.
pub const LINE_CHARS: usize = 400;
/// What a redacted secret reads as.
pub const REDACTED: &str = "[redacted]";

/// Obvious secrets: API keys and tokens of well-known shapes, and `key = value` pairs whose key
/// names a secret. A false positive hides a few characters of a screen; a miss stores a secret.
static SECRETS: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}",
        r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}",
        r"|AKIA[0-9A-Z]{16}|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{30,}",
        r"|bearer\s+[A-Za-z0-9._~+/=-]{12,}",
        r"|(?:api[_-]?key|token|secret|password|passwd)\s*[:=]\s*\S+)"
    ))
    .ok()
});

/// `line` with every obvious secret replaced by [`REDACTED`] (a line is dropped whole if the
/// pattern could not be built, which a test rules out).
pub fn redact(line: &str) -> String {
    match SECRETS.as_ref() {
        Some(secrets) => secrets.replace_all(line, REDACTED).into_owned(),
        None => REDACTED.to_owned(),
    }
}

/// The last [`TAIL_LINES`] lines of `screen`, each sanitized, redacted and cut to
/// [`LINE_CHARS`] characters.
pub fn tail(screen: &str) -> Vec<String> {
    let lines = screen_lines(screen);
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..]
        .iter()
        .map(|line| redact(line).chars().take(LINE_CHARS).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_sequences_never_survive_and_secrets_are_redacted() {
        let screen = "\x1b]0;evil title\x07\x1b]52;c;ZWNobyBwd25lZA==\x07ok \u{202e}txt.exe\x1b[31m red\n\
                      export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx\n\
                      token: ghp_0123456789abcdefghijABCDEFGHIJ\n";
        let kept = tail(screen);
        let all = kept.join("\n");
        for bad in [
            "\x1b",
            "\x07",
            "evil title",
            "ZWNobyBwd25lZA",
            "\u{202e}",
            "sk-proj",
            "ghp_",
        ] {
            assert!(!all.contains(bad), "{bad:?} survived in {all:?}");
        }
        assert!(kept[0].starts_with("ok "), "{kept:?}");
        assert!(kept[0].ends_with(" red"), "{kept:?}");
        assert_eq!(kept[1], format!("export OPENAI_{REDACTED}"));
        assert_eq!(kept[2], REDACTED);
    }

    #[test]
    fn the_tail_is_capped_in_lines_and_characters() {
        let line = "x".repeat(1000);
        let screen: Vec<String> = (0..100).map(|n| format!("{n} {line}")).collect();
        let screen = screen.join("\n");
        let kept = tail(&screen);
        assert_eq!(kept.len(), TAIL_LINES);
        assert!(kept[0].starts_with("60 "));
        assert!(kept.iter().all(|line| line.chars().count() == LINE_CHARS));
        assert!(SECRETS.is_some());
    }
}
