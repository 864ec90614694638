//! Calendar dates without a date crate: strict `YYYY-MM-DD` parsing and "today" in UTC+14.

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A validated proleptic-Gregorian calendar date. Orders chronologically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date {
    year: i32,
    month: u8,
    day: u8,
}

/// Why a string is not a date.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DateError(pub String);

impl fmt::Display for DateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DateError {}

impl Date {
    /// A date from its parts, if it exists on the calendar.
    pub fn new(year: i32, month: u8, day: u8) -> Option<Date> {
        let valid = (1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month);
        valid.then_some(Date { year, month, day })
    }

    /// Parses exactly `YYYY-MM-DD` (four, two and two ASCII digits) naming a real day.
    pub fn parse(text: &str) -> Result<Date, DateError> {
        let bytes = text.as_bytes();
        let shaped = bytes.len() == 10
            && bytes[4] == b'-'
            && bytes[7] == b'-'
            && bytes
                .iter()
                .enumerate()
                .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit());
        if !shaped {
            return Err(DateError(format!(
                "{text:?} is not a date of the form YYYY-MM-DD"
            )));
        }
        let num = |range: std::ops::Range<usize>| -> u32 {
            text[range]
                .bytes()
                .fold(0, |acc, b| acc * 10 + u32::from(b - b'0'))
        };
        let (year, month, day) = (num(0..4), num(5..7), num(8..10));
        // The shape check bounds these to four and two digits, so the casts cannot truncate.
        Date::new(year as i32, month as u8, day as u8)
            .ok_or_else(|| DateError(format!("{text} does not exist on the calendar")))
    }

    /// Today in UTC+14, the latest date in effect anywhere on Earth, so no author's local
    /// date is ever in the future.
    pub fn today() -> Date {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Date::from_days((secs + 14 * 3600).div_euclid(86_400))
    }

    /// Today in UTC (the default date of a new RFC).
    pub fn utc_today() -> Date {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Date::from_days(secs.div_euclid(86_400))
    }

    /// The date `days` days after 1970-01-01 (Howard Hinnant's civil-from-days).
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
        let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
        Date { year, month, day }
    }

    /// The year.
    pub fn year(self) -> i32 {
        self.year
    }

    /// The month, 1 to 12.
    pub fn month(self) -> u8 {
        self.month
    }

    /// The day of the month, from 1.
    pub fn day(self) -> u8 {
        self.day
    }
}

impl fmt::Display for Date {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

fn days_in_month(year: i32, month: u8) -> u8 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_real_dates_and_refuses_others() {
        assert_eq!(Date::parse("2024-02-29").unwrap().to_string(), "2024-02-29");
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-00-10",
            "2100-02-29",
            "2026-1-01",
            "26-01-01",
            "2026/01/01",
            "2026-01-01 ",
            "２026-01-01",
            "",
        ] {
            assert!(Date::parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(Date::parse("2000-02-29").is_ok());
    }

    #[test]
    fn civil_from_days_matches_known_points() {
        assert_eq!(Date::from_days(0).to_string(), "1970-01-01");
        assert_eq!(Date::from_days(-1).to_string(), "1969-12-31");
        assert_eq!(Date::from_days(11_016).to_string(), "2000-02-29");
        assert_eq!(Date::from_days(20_788).to_string(), "2026-12-01");
    }

    #[test]
    fn orders_chronologically() {
        let a = Date::parse("2026-11-30").unwrap();
        let b = Date::parse("2026-12-01").unwrap();
        assert!(a < b);
    }
}
