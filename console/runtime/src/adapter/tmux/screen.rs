//! What of an agent's screen valp keeps: its last lines, sanitized (no escape sequences, OSC
//! titles or clipboard writes, control or bidi characters: [`screen_lines`] cleans each line as
//! every display does), obvious secrets redacted, capped in lines and characters. Screen text is
//! untrusted: nothing of it is stored in an attempt folder or shown without passing here.

use crate::agent::classify::screen_lines;
pub use crate::agent::redact::{REDACTED, redact};

/// Lines kept from the bottom of the screen.
pub const TAIL_LINES: usize = 40;
/// Characters kept per line.
pub const LINE_CHARS: usize = 400;

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
    }
}
