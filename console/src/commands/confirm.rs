//! The typed confirmation of authority changes: the person at the keyboard types the id of
//! what they approve (a mistyped or empty answer approves nothing).

use std::io::{BufRead, Write};

use super::CommandError;

/// Asks `question`, reads one line from `input`, and succeeds only if it is exactly `expected`.
pub(super) fn typed(
    input: &mut dyn BufRead,
    out: &mut dyn Write,
    question: &str,
    expected: &str,
    refused: &str,
) -> Result<(), CommandError> {
    write!(out, "{question}: ")?;
    out.flush()?;
    let mut typed = String::new();
    input.read_line(&mut typed)?;
    if typed.trim_end_matches(['\n', '\r']) == expected {
        Ok(())
    } else {
        writeln!(out)?;
        Err(CommandError::Usage(format!(
            "not confirmed (the typed text was not {expected:?}); {refused}"
        )))
    }
}
