//! Obvious secrets out of what valp keeps of an agent: API keys and tokens of well-known shapes
//! (`sk-…`, `ghp_…`, `github_pat_…`, `AKIA…`, `xox?-…`, `AIza…`), bearer tokens, and
//! `key = value` pairs whose key names a secret. Screen captures and tails
//! ([`crate::adapter::tmux::screen`]), hook summaries and permission details
//! ([`crate::agent::channel`]) pass here before they are stored. A false positive hides a few
//! characters; a miss stores a secret.

use std::sync::LazyLock;

use regex::Regex;

/// What a redacted secret reads as.
pub const REDACTED: &str = "[redacted]";

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

/// What every match of [`SECRETS`] contains, lower-cased: an ASCII text with none of these is
/// kept as it is without building the pattern (its Unicode case folding costs a hook process
/// about as much as the rest of its work). A non-ASCII text always goes through the pattern
/// (`(?i)` folds the Kelvin sign to `k`, `ſ` to `s`).
const NEEDLES: &[&str] = &[
    "sk-",
    "gh",
    "github_pat_",
    "akia",
    "xox",
    "aiza",
    "bearer",
    "api",
    "token",
    "secret",
    "passw",
];

/// `text` with every obvious secret replaced by [`REDACTED`] (the whole text is replaced if
/// the pattern could not be built, which a test rules out).
pub fn redact(text: &str) -> String {
    if text.is_ascii() {
        let lower = text.to_ascii_lowercase();
        if !NEEDLES.iter().any(|needle| lower.contains(needle)) {
            return text.to_owned();
        }
    }
    match SECRETS.as_ref() {
        Some(secrets) => secrets.replace_all(text, REDACTED).into_owned(),
        None => REDACTED.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_tokens_and_bearer_tokens_are_redacted_and_the_rest_kept() {
        assert!(SECRETS.is_some());
        for (text, kept) in [
            (
                "curl -H 'Authorization: Bearer abcdefghijklmnop1234' x",
                "curl -H 'Authorization: [redacted]' x",
            ),
            (
                "key sk-ant-api03-abcdefghijklmnopqrstu end",
                "key [redacted] end",
            ),
            (
                "push ghp_0123456789abcdefghijABCDEFGHIJ now",
                "push [redacted] now",
            ),
            (
                "export OPENAI_API_KEY=sk-proj-x",
                "export OPENAI_[redacted]",
            ),
            ("ls -la src/", "ls -la src/"),
            // Past the needles: the pattern's case folding still applies.
            ("Push GHP_0123456789abcdefghijABCDEFGHIJ", "Push [redacted]"),
            (
                "\u{212A}ey s\u{212A}-0123456789abcdefgh",
                "\u{212A}ey [redacted]",
            ),
            (
                "turn complete: wrote hello.txt",
                "turn complete: wrote hello.txt",
            ),
        ] {
            assert_eq!(redact(text), kept, "{text}");
        }
    }
}
