//! Wall time, for the store's `recorded_at` on every journal line and for the console.
//!
//! [`SystemClock`] is the only place in valp that reads the wall clock; everything else takes a
//! [`Clock`], so tests pass a [`FixedClock`] and get byte-identical output (a
//! [`ControlRoot`](crate::ControlRoot) takes one with
//! [`with_clock`](crate::ControlRoot::with_clock)). Timestamps are milliseconds since the Unix
//! epoch (UTC) and are shown and stored as RFC 3339 text with millisecond precision and a `Z`
//! suffix, e.g. `2026-11-30T12:34:56.789Z`: one fixed-width spelling per instant
//! ([`Timestamp::parse_rfc3339`] reads nothing else), which a hash-chained canonical line needs.

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since 1970-01-01T00:00:00Z (negative before it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

/// Days from 0000-03-01 to 1970-01-01 in the proleptic Gregorian calendar.
const EPOCH_SHIFT_DAYS: i64 = 719_468;
/// Days in a 400-year Gregorian era.
const DAYS_PER_ERA: i64 = 146_097;
const MILLIS_PER_DAY: i64 = 86_400_000;
/// 0000-01-01T00:00:00.000Z, the earliest time RFC 3339 can write.
const MIN_RFC3339_MILLIS: i64 = -62_167_219_200_000;
/// 9999-12-31T23:59:59.999Z, the latest time RFC 3339 can write.
const MAX_RFC3339_MILLIS: i64 = 253_402_300_799_999;

impl Timestamp {
    /// The time `millis` milliseconds after the Unix epoch.
    pub const fn from_millis(millis: i64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn millis(self) -> i64 {
        self.0
    }

    /// RFC 3339 text in UTC with exactly three fraction digits: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    ///
    /// RFC 3339 has four-digit years only, so times before year 0 or after year 9999 are
    /// written as the nearest of 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    pub fn to_rfc3339(self) -> String {
        let millis = self.0.clamp(MIN_RFC3339_MILLIS, MAX_RFC3339_MILLIS);
        let days = millis.div_euclid(MILLIS_PER_DAY);
        let of_day = millis.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        let (hour, minute) = (of_day / 3_600_000, of_day / 60_000 % 60);
        let (second, milli) = (of_day / 1000 % 60, of_day % 1000);
        // Written digit by digit, not through `format!`: a verify writes one per line it folds
        // (~3 K instructions each through the formatting machinery). Every field is within its
        // width after the clamp.
        let mut text = String::with_capacity(24);
        for (value, width, after) in [
            (year, 4, '-'),
            (month, 2, '-'),
            (day, 2, 'T'),
            (hour, 2, ':'),
            (minute, 2, ':'),
            (second, 2, '.'),
            (milli, 3, 'Z'),
        ] {
            for place in (0..width).rev() {
                let digit = u32::try_from(value / 10_i64.pow(place) % 10).unwrap_or(0);
                text.push(char::from_digit(digit, 10).unwrap_or('0'));
            }
            text.push(after);
        }
        text
    }

    /// Reads the exact form [`to_rfc3339`](Self::to_rfc3339) writes (and nothing else: no
    /// offsets other than `Z`, exactly three fraction digits, valid calendar dates).
    pub fn parse_rfc3339(text: &str) -> Option<Self> {
        let bytes = text.as_bytes();
        let shape = b"dddd-dd-ddTdd:dd:dd.dddZ";
        if bytes.len() != shape.len()
            || !bytes.iter().zip(shape).all(|(&byte, &expected)| {
                if expected == b'd' {
                    byte.is_ascii_digit()
                } else {
                    byte == expected
                }
            })
        {
            return None;
        }
        let number = |range: std::ops::Range<usize>| -> i64 {
            bytes[range]
                .iter()
                .fold(0, |total, digit| total * 10 + i64::from(digit - b'0'))
        };
        let (year, month, day) = (number(0..4), number(5..7), number(8..10));
        let (hour, minute, second, milli) = (
            number(11..13),
            number(14..16),
            number(17..19),
            number(20..23),
        );
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 59
        {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(Self(
            days * MILLIS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + milli,
        ))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.to_rfc3339())
    }
}

/// Whether `year` is a Gregorian leap year.
const fn is_leap_year(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

const fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// (year, month 1-12, day 1-31) of the day `days` after 1970-01-01 (Howard Hinnant's
/// `civil_from_days`: the year is counted from March so the leap day is the year's last day).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + EPOCH_SHIFT_DAYS;
    let era = shifted.div_euclid(DAYS_PER_ERA);
    let day_of_era = shifted.rem_euclid(DAYS_PER_ERA); // [0, 146096]
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153; // [0, 11], 0 = March
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days from 1970-01-01 to the given date (the inverse of [`civil_from_days`]).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = year - i64::from(month <= 2);
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * DAYS_PER_ERA + day_of_era - EPOCH_SHIFT_DAYS
}

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// The operating system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(after) => i64::try_from(after.as_millis()).unwrap_or(i64::MAX),
            Err(before) => i64::try_from(before.duration().as_millis()).map_or(i64::MIN, |m| -m),
        };
        Timestamp(millis)
    }
}

/// A clock that shows a set time (for tests); [`advance`](Self::advance) moves it.
#[derive(Debug, Default)]
pub struct FixedClock(AtomicI64);

impl FixedClock {
    /// A clock stopped at `at`.
    pub fn new(at: Timestamp) -> Self {
        Self(AtomicI64::new(at.0))
    }

    /// Moves the clock forward by `millis` milliseconds (backwards if negative).
    pub fn advance(&self, millis: i64) {
        self.0.fetch_add(millis, Ordering::SeqCst);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: Timestamp) {
        self.0.store(at.0, Ordering::SeqCst);
    }
}

impl Clock for FixedClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(millis: i64) -> String {
        Timestamp::from_millis(millis).to_rfc3339()
    }

    #[test]
    fn known_instants_format_as_rfc3339() {
        let cases = [
            (0, "1970-01-01T00:00:00.000Z"),
            (1, "1970-01-01T00:00:00.001Z"),
            (-1, "1969-12-31T23:59:59.999Z"),
            (951_782_400_000, "2000-02-29T00:00:00.000Z"), // leap day of a 400-year leap year
            (951_868_800_000, "2000-03-01T00:00:00.000Z"),
            (1_709_164_800_000, "2024-02-29T00:00:00.000Z"),
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (1_709_251_200_000, "2024-03-01T00:00:00.000Z"),
            (4_107_456_000_000, "2100-02-28T00:00:00.000Z"), // 2100 is not a leap year
            (4_107_542_400_000, "2100-03-01T00:00:00.000Z"),
            (1_735_689_599_999, "2024-12-31T23:59:59.999Z"), // day 366 of a leap year
            (1_735_689_600_000, "2025-01-01T00:00:00.000Z"),
            (1_796_042_096_789, "2026-11-30T12:34:56.789Z"),
            (2_147_483_647_000, "2038-01-19T03:14:07.000Z"),
            (-2_208_988_800_000, "1900-01-01T00:00:00.000Z"),
            (-5_364_662_400_000, "1800-01-01T00:00:00.000Z"),
            (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
            (MIN_RFC3339_MILLIS, "0000-01-01T00:00:00.000Z"),
            (MAX_RFC3339_MILLIS, "9999-12-31T23:59:59.999Z"),
        ];
        for (millis, expected) in cases {
            assert_eq!(text(millis), expected, "{millis}");
            assert_eq!(
                Timestamp::parse_rfc3339(expected),
                Some(Timestamp::from_millis(millis)),
                "{expected}"
            );
        }
    }

    #[test]
    fn out_of_range_times_saturate() {
        assert_eq!(text(i64::MIN), "0000-01-01T00:00:00.000Z");
        assert_eq!(text(i64::MAX), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn every_day_for_eight_centuries_round_trips() {
        // 1600-01-01 .. 2400-12-31: covers leap, non-leap century and 400-year leap years.
        let first = days_from_civil(1600, 1, 1);
        let last = days_from_civil(2400, 12, 31);
        let (mut year, mut month, mut day) = (1600, 1, 1);
        for days in first..=last {
            assert_eq!(civil_from_days(days), (year, month, day));
            assert_eq!(days_from_civil(year, month, day), days);
            day += 1;
            if day > days_in_month(year, month) {
                day = 1;
                month += 1;
                if month > 12 {
                    month = 1;
                    year += 1;
                }
            }
        }
        assert_eq!((year, month, day), (2401, 1, 1));
    }

    #[test]
    fn parsing_refuses_other_forms() {
        for bad in [
            "2024-02-29T00:00:00Z",
            "2024-02-29T00:00:00.000+00:00",
            "2024-02-29 00:00:00.000Z",
            "2023-02-29T00:00:00.000Z",
            "2100-02-29T00:00:00.000Z",
            "2024-13-01T00:00:00.000Z",
            "2024-00-01T00:00:00.000Z",
            "2024-04-31T00:00:00.000Z",
            "2024-01-01T24:00:00.000Z",
            "2024-01-01T00:60:00.000Z",
            "2024-01-01T00:00:60.000Z",
            "2024-01-01t00:00:00.000Z",
            "+024-01-01T00:00:00.000Z",
            "2024-01-01T00:00:00.000Z\n",
            "",
        ] {
            assert_eq!(Timestamp::parse_rfc3339(bad), None, "{bad:?}");
        }
        assert!(Timestamp::parse_rfc3339("2000-02-29T23:59:59.999Z").is_some());
    }

    #[test]
    fn clocks() {
        let clock = FixedClock::new(Timestamp::from_millis(1000));
        assert_eq!(clock.now().to_rfc3339(), "1970-01-01T00:00:01.000Z");
        clock.advance(500);
        assert_eq!(clock.now(), Timestamp::from_millis(1500));
        clock.set(Timestamp::from_millis(7));
        assert_eq!(clock.now().millis(), 7);
        let shared: &dyn Clock = &SystemClock;
        // After 2020-01-01 and before 9999: a sanity bound, not a time check.
        assert!(shared.now().millis() > 1_577_836_800_000);
        assert!(shared.now().to_rfc3339().ends_with('Z'));
    }
}
