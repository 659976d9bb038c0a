//! The property shared by every text meant for a terminal.

/// Panics unless `text` is safe to print: no C0 or C1 control, no DEL (so no escape sequence
/// can start), no line or paragraph separator, and no raw bidirectional embedding, override or
/// isolate control (the sanitizer may drop or visibly escape those, but never pass them on).
pub fn assert_display_safe(text: &str, what: &str) {
    if let Some(bad) = text.chars().find(|&ch| {
        ch.is_control()
            || matches!(
                ch,
                '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            )
    }) {
        panic!("{what} holds U+{:04X}: {text:?}", u32::from(bad));
    }
}
