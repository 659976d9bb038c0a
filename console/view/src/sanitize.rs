//! Display text from untrusted sources, made safe to store and to print at ingest.
//!
//! Pane titles, window and session names, commands and folders are chosen by whatever runs in a
//! pane, so they can hold anything: terminal escape sequences that would repaint or retitle the
//! operator's terminal, line breaks that would forge extra report lines, or bidirectional
//! overrides that make one text look like another. [`display_text`] keeps only printable text:
//!
//! - ANSI escape sequences are removed whole: CSI (`ESC [` … final byte), OSC (`ESC ]` … BEL or
//!   ST), DCS/SOS/PM/APC strings (`ESC P|X|^|_` … ST), their 8-bit C1 forms, and two- or
//!   more-byte `ESC` sequences (`ESC` intermediates final). As in a terminal, `ESC` starts a new
//!   sequence inside one and CAN or SUB cancels one. An unterminated sequence removes the rest
//!   of the text.
//! - Every other C0 control (no exceptions), DEL and C1 control is removed; TAB, LF, VT, FF, CR
//!   and the Unicode line and paragraph separators become one space so words stay apart.
//! - Bidirectional and invisible format characters are **shown escaped**, as `\u{202e}`
//!   (lowercase hex, Rust's notation): the marks and embedding, override and isolate controls
//!   (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, the deprecated U+206A–U+206F), the
//!   zero-width and invisible characters (U+00AD, U+180E, U+200B–U+200D, U+2060–U+2064, U+FEFF).
//!   Dropping them silently would show two different ids as the same text, and an id holding one
//!   could not be typed back from what was shown; reordering them would make one text look like
//!   another. Escaped, the text stays in its logical order, the difference stays visible, and the
//!   id can be recognised. (A text that holds the six characters `\u{202e}` literally looks the
//!   same as one holding U+202E: the notation is for reading, not for round-tripping.)
//! - The result is cut to [`MAX_DISPLAY_CHARS`] characters (an ellipsis marks the cut; an
//!   escape counts as the characters it shows). [`display_message`] applies the same rules to
//!   each line of a message, keeping its line breaks and its length: the CLI prints every error
//!   through it, since errors echo what the operator typed (ids, `--root`, plan file names).

/// Longest display text kept, in characters.
pub const MAX_DISPLAY_CHARS: usize = 256;

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
/// Cancel and Substitute abort a sequence.
const CAN: char = '\u{18}';
const SUB: char = '\u{1a}';
/// C1 String Terminator.
const ST: char = '\u{9c}';

/// What the scanner is inside of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// After `ESC`.
    Escape,
    /// After `ESC` and intermediate bytes (0x20–0x2F).
    EscapeIntermediate,
    /// Inside a control sequence (CSI), until a final byte 0x40–0x7E.
    ControlSequence,
    /// Inside a control string (OSC, DCS, SOS, PM, APC), until BEL or ST.
    ControlString,
    /// Inside a control string right after `ESC` (an `ESC \` ends it).
    ControlStringEscape,
}

/// `text` with escape sequences and control characters removed and format characters escaped,
/// cut to [`MAX_DISPLAY_CHARS`] (see the module docs).
pub fn display_text(text: &str) -> String {
    clean(text, MAX_DISPLAY_CHARS)
}

/// A message (an error, several lines) made safe to print: every line as [`display_text`]
/// cleans it, line breaks and indentation kept, nothing cut.
pub fn display_message(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let body = line.trim_start_matches(' ');
            format!(
                "{}{}",
                &line[..line.len() - body.len()],
                clean(body, usize::MAX)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line of output (a path, an error) made safe to print: as [`display_text`] cleans it
/// (line breaks become spaces), nothing cut.
pub fn display_line(text: &str) -> String {
    clean(text, usize::MAX)
}

fn clean(text: &str, limit: usize) -> String {
    let mut out = String::with_capacity(text.len().min(limit.saturating_mul(4)));
    let mut kept = Kept {
        limit,
        ..Kept::default()
    };
    let mut mode = Mode::Text;
    for ch in text.chars() {
        mode = match mode {
            Mode::Text => match ch {
                ESC => Mode::Escape,
                '\u{9b}' => Mode::ControlSequence,
                '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => Mode::ControlString,
                '\t' | '\n' | '\u{0b}' | '\u{0c}' | '\r' | '\u{2028}' | '\u{2029}' => {
                    if !out.is_empty() && !out.ends_with(' ') {
                        kept.push(&mut out, ' ');
                    }
                    Mode::Text
                }
                _ if is_format(ch) => {
                    for shown in ch.escape_unicode() {
                        kept.push(&mut out, shown);
                    }
                    Mode::Text
                }
                _ if ch.is_control() => Mode::Text,
                ' ' if out.is_empty() => Mode::Text,
                _ => {
                    kept.push(&mut out, ch);
                    Mode::Text
                }
            },
            Mode::Escape => match ch {
                ESC => Mode::Escape,
                '[' => Mode::ControlSequence,
                ']' | 'P' | 'X' | '^' | '_' => Mode::ControlString,
                '\u{20}'..='\u{2f}' => Mode::EscapeIntermediate,
                // Any other byte ends a two-byte escape (a stray ESC before a control or a
                // non-ASCII character swallows just that character).
                _ => Mode::Text,
            },
            Mode::EscapeIntermediate => match ch {
                ESC => Mode::Escape,
                '\u{20}'..='\u{2f}' => Mode::EscapeIntermediate,
                _ => Mode::Text,
            },
            Mode::ControlSequence => match ch {
                '\u{40}'..='\u{7e}' | CAN | SUB => Mode::Text,
                ESC => Mode::Escape,
                // Parameter and intermediate bytes continue; anything else is malformed and
                // is swallowed with the sequence.
                _ => Mode::ControlSequence,
            },
            Mode::ControlString => match ch {
                BEL | ST | CAN | SUB => Mode::Text,
                ESC => Mode::ControlStringEscape,
                _ => Mode::ControlString,
            },
            Mode::ControlStringEscape => match ch {
                '\\' => Mode::Text,
                ESC => Mode::ControlStringEscape,
                _ => Mode::ControlString,
            },
        };
    }
    let trimmed = out.trim_matches(' ');
    if !kept.overflow && trimmed.chars().count() <= limit {
        return if trimmed.len() == out.len() {
            out
        } else {
            trimmed.to_owned()
        };
    }
    let mut cut: String = trimmed.chars().take(limit - 1).collect();
    cut.push('…');
    cut
}

/// Bidirectional and invisible format characters: shown escaped (see the module docs).
fn is_format(ch: char) -> bool {
    matches!(
        ch,
        '\u{ad}'
            | '\u{61c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
    )
}

/// How much display text was collected.
#[derive(Default)]
struct Kept {
    /// The most characters kept.
    limit: usize,
    chars: usize,
    /// A character other than a space came after the text grew past the limit.
    overflow: bool,
}

impl Kept {
    /// Appends `ch` while the text is within the limit (plus one character, so a cut is
    /// visible); later characters are only scanned for escape state, so memory stays bounded.
    fn push(&mut self, out: &mut String, ch: char) {
        if self.chars <= self.limit {
            out.push(ch);
            self.chars += 1;
        } else if ch != ' ' {
            self.overflow = true;
        }
    }
}

/// Whether `text` holds no character [`display_text`] would change (identity text that is
/// printed verbatim must pass this).
pub fn is_plain(text: &str) -> bool {
    !text.chars().any(|ch| {
        ch.is_control()
            || is_format(ch)
            || matches!(ch, '\u{2028}' | '\u{2029}' | '\u{9b}' | '\u{90}' | ST)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_kept() {
        for text in [
            "",
            "main",
            "vim src/lib.rs",
            "häppy 🦀 título",
            "a  b",
            "100%",
        ] {
            assert_eq!(display_text(text), text);
            assert!(is_plain(text));
        }
    }

    #[test]
    fn every_c0_del_and_c1_control_is_removed() {
        for code in (0_u32..0x20).chain(0x7f..0xa0) {
            let ch = char::from_u32(code).unwrap();
            let cleaned = display_text(&format!("a{ch}b"));
            assert!(
                !cleaned.chars().any(char::is_control),
                "{code:#x} survived: {cleaned:?}"
            );
            assert!(!is_plain(&format!("a{ch}b")), "{code:#x}");
        }
        assert_eq!(display_text("a\u{0}b\u{7}c\u{7f}d\u{85}e"), "abcde");
    }

    #[test]
    fn line_breaks_and_tabs_become_one_space() {
        assert_eq!(display_text("a\tb\nc\r\nd"), "a b c d");
        assert_eq!(display_text("line\u{2028}sep"), "line sep");
        assert_eq!(display_text("\n\tpadded\n"), "padded");
    }

    #[test]
    fn escape_sequences_are_removed_whole() {
        let cases = [
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[1;32;48;5;200mbold", "bold"),
            ("\u{1b}[?1049hscreen", "screen"),
            ("\u{1b}]0;fake title\u{7}real", "real"),
            ("\u{1b}]2;fake title\u{1b}\\real", "real"),
            (
                "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
                "link",
            ),
            ("\u{1b}Pq#0;2;0;0;0\u{1b}\\after", "after"),
            ("\u{1b}_apc payload\u{1b}\\x", "x"),
            ("\u{1b}(Bcharset", "charset"),
            ("\u{1b}#8align", "align"),
            ("\u{1b}7save\u{1b}8", "save"),
            ("\u{1b}cReset", "Reset"),
            ("\u{9b}31mc1 csi", "c1 csi"),
            ("\u{9d}0;c1 osc\u{9c}after", "after"),
            ("before\u{1b}]0;never terminated", "before"),
            ("before\u{1b}[12;", "before"),
            ("trailing escape\u{1b}", "trailing escape"),
            ("\u{1b}\u{1b}[31mx", "x"),
            ("\u{1b}[31\u{1b}[1mx", "x"),
            ("\u{1b}[31\u{18}x", "x"),
            ("\u{1b}]0;t\u{1a}x", "x"),
        ];
        for (input, expected) in cases {
            assert_eq!(display_text(input), expected, "{input:?}");
        }
    }

    #[test]
    fn bidi_and_invisible_format_characters_are_shown_escaped() {
        assert_eq!(
            display_text("abc\u{202e}fed\u{202c}"),
            "abc\\u{202e}fed\\u{202c}"
        );
        assert_eq!(display_text("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(
            display_text("l\u{200e}r\u{200f}a\u{61c}z\u{200b}j\u{200d}b\u{feff}"),
            "l\\u{200e}r\\u{200f}a\\u{61c}z\\u{200b}j\\u{200d}b\\u{feff}"
        );
        for ch in ['\u{ad}', '\u{180e}', '\u{2060}', '\u{2064}', '\u{206f}'] {
            assert_eq!(
                display_text(&ch.to_string()),
                ch.escape_unicode().to_string()
            );
            assert!(!is_plain(&ch.to_string()), "{ch:?}");
        }
        for text in ["a\u{202e}b", "a\u{200e}b", "a\u{200f}b", "a\u{61c}b"] {
            assert!(!is_plain(text), "{text:?}");
        }
        // Escapes count as what they show.
        let long = "\u{202e}".repeat(100);
        let shown = display_text(&long);
        assert_eq!(shown.chars().count(), MAX_DISPLAY_CHARS);
        assert!(shown.starts_with("\\u{202e}\\u{202e}"));
    }

    #[test]
    fn a_message_keeps_its_lines_and_length() {
        assert_eq!(
            display_message("plan \u{1b}]0;t\u{7}x.toml: bad\n  a\u{202e}b\tc"),
            "plan x.toml: bad\n  a\\u{202e}b c"
        );
        let long = "z".repeat(1000);
        assert_eq!(display_message(&long), long);
        assert_eq!(
            display_line("/tmp/a\nb\u{1b}[2J\u{2067}c"),
            "/tmp/a b\\u{2067}c"
        );
        assert_eq!(display_line(&long), long);
    }

    #[test]
    fn long_text_is_cut() {
        let long = "x".repeat(1000);
        let cleaned = display_text(&long);
        assert_eq!(cleaned.chars().count(), MAX_DISPLAY_CHARS);
        assert!(cleaned.ends_with('…'));
        let exact = "y".repeat(MAX_DISPLAY_CHARS);
        assert_eq!(display_text(&exact), exact);
        assert_eq!(display_text(&format!("   {exact}    ")), exact);
        let spaced = format!("{exact}      z");
        assert!(display_text(&spaced).ends_with('…'));
    }
}
