//! The Doctor's parser of length-framed `tmux list-panes` output.

use valp_runtime::doctor::tmux::{PaneRecord, parse_list_panes};

use crate::display::assert_display_safe;

/// Accepted output yields records whose display texts are safe to print and which, framed
/// again, parse to the same records; refused output names a byte inside it.
pub fn tmux_records(data: &[u8]) {
    let records = match parse_list_panes(data) {
        Ok(records) => records,
        Err(error) => {
            assert!(error.offset <= data.len(), "offset past the end: {error}");
            return;
        }
    };
    for record in &records {
        for (name, text) in [
            ("session_name", &record.session_name),
            ("window_name", &record.window_name),
            ("pane_current_command", &record.current_command),
            ("pane_current_path", &record.current_path),
            ("pane_title", &record.title),
        ] {
            assert_display_safe(text, name);
        }
    }
    let framed: Vec<u8> = records.iter().flat_map(frame).collect();
    assert_eq!(
        parse_list_panes(&framed),
        Ok(records),
        "records framed again differ"
    );
}

/// `record` in the `list-panes` framing: `valp1`, then `<len>:<bytes>` per field, then LF.
fn frame(record: &PaneRecord) -> Vec<u8> {
    let flag = |value: bool| if value { "1" } else { "0" }.to_owned();
    let fields = [
        record.server_pid.to_string(),
        record.session_id.clone(),
        record.session_name.clone(),
        record.window_id.clone(),
        record.window_index.to_string(),
        record.window_name.clone(),
        flag(record.window_active),
        record.pane_id.clone(),
        record.pane_index.to_string(),
        record.pane_pid.to_string(),
        flag(record.pane_dead),
        flag(record.pane_active),
        record.width.to_string(),
        record.height.to_string(),
        record.current_command.clone(),
        record.current_path.clone(),
        record.title.clone(),
    ];
    let mut out = b"valp1".to_vec();
    for field in fields {
        out.extend_from_slice(format!("{}:{field}", field.len()).as_bytes());
    }
    out.push(b'\n');
    out
}
