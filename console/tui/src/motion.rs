//! Moving a cursor through a list: one row, a page, or to either end. Every list of the
//! console (the task panes, the candidate lists) moves the same way.

use super::action::Action;

/// Rows a page key moves: the panes do not know their height when keys arrive (drawing comes
/// after), and ten rows is less than any pane shows at 120x40 and about what one shows at
/// 80x24.
pub const PAGE: usize = 10;

/// Whether `action` moves a cursor.
pub const fn is_motion(action: Action) -> bool {
    matches!(
        action,
        Action::Up
            | Action::Down
            | Action::PageUp
            | Action::PageDown
            | Action::First
            | Action::Last
    )
}

/// Where a cursor at `cursor` in a list of `len` rows goes on `action` (anything else, or an
/// empty list, leaves it).
pub fn moved(cursor: usize, len: usize, action: Action) -> usize {
    let last = len.saturating_sub(1);
    match action {
        Action::Up => cursor.saturating_sub(1),
        Action::Down => cursor.saturating_add(1).min(last),
        Action::PageUp => cursor.saturating_sub(PAGE),
        Action::PageDown => cursor.saturating_add(PAGE).min(last),
        Action::First => 0,
        Action::Last => last,
        _ => cursor,
    }
}

#[cfg(test)]
mod tests {
    use super::{Action, PAGE, moved};

    #[test]
    fn cursors_move_by_a_row_a_page_or_to_an_end_and_stay_in_the_list() {
        assert_eq!(moved(0, 30, Action::Up), 0);
        assert_eq!(moved(29, 30, Action::Down), 29);
        assert_eq!(moved(3, 30, Action::PageDown), 3 + PAGE);
        assert_eq!(moved(25, 30, Action::PageDown), 29);
        assert_eq!(moved(5, 30, Action::PageUp), 0);
        assert_eq!(moved(15, 30, Action::PageUp), 15 - PAGE);
        assert_eq!(moved(15, 30, Action::First), 0);
        assert_eq!(moved(1, 30, Action::Last), 29);
        assert_eq!(moved(0, 0, Action::Last), 0);
        assert_eq!(moved(4, 30, Action::Help), 4);
    }
}
