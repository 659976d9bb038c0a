//! The footer's words while the backend is still opening the control root
//! ([`valp_view::Opening`]): which task of how many, the entries verified so far, the size of
//! the journal being verified now and how long the open has taken.

use valp_view::Opening;

/// `opening task 2 of 5: demo-1 (23.4 MB) · 120,000 entries verified · 1.2 s`.
pub fn progress(opening: &Opening, elapsed_ms: u64) -> String {
    let seconds = format!("{}.{} s", elapsed_ms / 1000, elapsed_ms % 1000 / 100);
    if opening.next.is_empty() {
        return format!(
            "opening {} of {} tasks · {} entries verified · {seconds}",
            opening.tasks_open,
            opening.tasks_total,
            grouped(opening.entries)
        );
    }
    format!(
        "opening task {} of {}: {} ({}) · {} entries verified · {seconds}",
        opening.tasks_open + 1,
        opening.tasks_total,
        opening.next,
        size(opening.next_bytes),
        grouped(opening.entries)
    )
}

/// `1234567` as `1,234,567`.
fn grouped(number: u64) -> String {
    let digits = number.to_string();
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A file size in the largest unit that keeps it above 1 (one decimal).
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "kB", "MB", "GB"];
    let mut tenths = u128::from(bytes) * 10;
    let mut unit = 0;
    while tenths >= 10_000 && unit + 1 < UNITS.len() {
        tenths /= 1000;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_names_the_task_its_size_the_entries_and_the_time() {
        let opening = Opening {
            tasks_open: 1,
            tasks_total: 3,
            entries: 1_234_567,
            next: "demo-1".to_owned(),
            next_bytes: 23_456_789,
        };
        assert_eq!(
            progress(&opening, 1_250),
            "opening task 2 of 3: demo-1 (23.4 MB) · 1,234,567 entries verified · 1.2 s"
        );
        let listed = Opening {
            next: String::new(),
            ..opening
        };
        assert_eq!(
            progress(&listed, 80),
            "opening 1 of 3 tasks · 1,234,567 entries verified · 0.0 s"
        );
    }

    #[test]
    fn sizes_and_counts_read_as_a_person_writes_them() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(999), "999 B");
        assert_eq!(size(1_000), "1.0 kB");
        assert_eq!(size(1_049_000), "1.0 MB");
        assert_eq!(size(5_000_000_000_000), "5000.0 GB");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(100_000), "100,000");
    }
}
