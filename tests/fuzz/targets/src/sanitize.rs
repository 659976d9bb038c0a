//! The display sanitizer ([`display_text`]).

use valp_view::sanitize::display_text;

use crate::display::assert_display_safe;

/// Its output holds no control character or escape sequence, and sanitizing it again changes
/// nothing.
pub fn sanitize(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let once = display_text(&text);
    assert_display_safe(&once, "display_text output");
    assert_eq!(display_text(&once), once, "display_text is not idempotent");
}
