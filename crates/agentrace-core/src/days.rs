//! The days `--since` and `--until` name, read one way by every command and
//! the API: a calendar day (`2026-11-30`, or ccusage's `20261130`, so a
//! command line from ccusage works as it is), or a day counted back from
//! today (`today`, `yesterday`, `7d`, `2w`). And the day, week, month and
//! minute a time falls in, as the reports group and print them.
//!
//! Days are UTC unless the caller gives a time zone (`--tz`): a day is then
//! the zone's own, from its midnight to the next (23 or 25 hours across a
//! change of clocks). Today and the zone are the caller's: the core reads
//! no clock and no zone database.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::ToSpan as _;

pub use crate::model::DAY_MS;
use crate::model::Timestamp;

/// The forms a day may take, as an error names them.
pub const DAY_FORMS: &str = "a day like 2026-11-30 or 20261130, or today, yesterday, 7d (days ago) or 2w (weeks ago)";

/// A day as `--since`/`--until` name it, before a zone and a today make a
/// time of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Day {
    /// A calendar day.
    On(Date),
    /// So many days before today (`today` is 0, `yesterday` 1, `2w` 14).
    Back(i64),
}

impl Day {
    /// The day `text` names; `None` when it names none.
    pub fn parse(text: &str) -> Option<Day> {
        let text = text.trim();
        match text.to_ascii_lowercase().as_str() {
            "today" => return Some(Day::Back(0)),
            "yesterday" => return Some(Day::Back(1)),
            _ => {}
        }
        if let Some(days) = counted(text, 'd') {
            return Some(Day::Back(days));
        }
        if let Some(weeks) = counted(text, 'w') {
            return Some(Day::Back(weeks * 7));
        }
        let (year, month, day) = if text.len() == 8 && text.bytes().all(|byte| byte.is_ascii_digit()) {
            (text.get(..4)?, text.get(4..6)?, text.get(6..)?)
        } else {
            let mut parts = text.splitn(3, '-');
            (parts.next()?, parts.next()?, parts.next()?)
        };
        let number = |part: &str, most: usize| -> Option<i64> {
            (!part.is_empty() && part.len() <= most && part.bytes().all(|byte| byte.is_ascii_digit())).then(|| part.parse().ok()).flatten()
        };
        let date = Date::new(i16::try_from(number(year, 4)?).ok()?, i8::try_from(number(month, 2)?).ok()?, i8::try_from(number(day, 2)?).ok()?).ok()?;
        Some(Day::On(date))
    }

    /// The calendar day it is in `zone`, today being the day `now` falls on
    /// there.
    fn date(self, now: Timestamp, zone: &TimeZone) -> Option<Date> {
        match self {
            Day::On(date) => Some(date),
            Day::Back(days) => civil(now, zone)?.date().checked_sub(days.days()).ok(),
        }
    }

    /// Its start: its midnight in `zone` (where a change of clocks skips
    /// midnight, the first time the day has).
    pub fn start(self, now: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        start_of(self.date(now, zone)?, zone)
    }

    /// Its end: the next day's start, for an `--until` that keeps its day.
    pub fn end(self, now: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        start_of(self.date(now, zone)?.tomorrow().ok()?, zone)
    }

    /// The bound it makes of a range of days: its start for a `--since`,
    /// its end for an `--until` (`until`), which keeps its day.
    pub fn bound(self, until: bool, now: Timestamp, zone: &TimeZone) -> Option<Timestamp> {
        if until {
            self.end(now, zone)
        } else {
            self.start(now, zone)
        }
    }
}

/// The times a `since` and an `until` day leave in: from the start of
/// `since`'s day (included) to the end of `until`'s (excluded), each
/// unbounded when not given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// The start of `since`'s day.
    pub since: Option<Timestamp>,
    /// The start of the day after `until`'s.
    pub until: Option<Timestamp>,
}

/// Why a `since` and an `until` make no range: every command and the API
/// refuse them alike, rather than list nothing quietly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeError {
    /// `since`'s day has no time (out of the calendar's range).
    SinceOutOfRange,
    /// `until`'s day has no time.
    UntilOutOfRange,
    /// `until`'s day is before `since`'s, so no day is in the range.
    Backwards,
}

/// The range `since` and `until` make in `zone`, today being the day `now`
/// falls on there.
pub fn range(since: Option<Day>, until: Option<Day>, now: Timestamp, zone: &TimeZone) -> Result<Range, RangeError> {
    let since = since.map(|day| day.bound(false, now, zone).ok_or(RangeError::SinceOutOfRange)).transpose()?;
    let until = until.map(|day| day.bound(true, now, zone).ok_or(RangeError::UntilOutOfRange)).transpose()?;
    if let (Some(start), Some(end)) = (since, until) {
        if start >= end {
            return Err(RangeError::Backwards);
        }
    }
    Ok(Range { since, until })
}

/// When `date` starts in `zone`.
fn start_of(date: Date, zone: &TimeZone) -> Option<Timestamp> {
    let at = zone.to_timestamp(date.to_datetime(jiff::civil::Time::midnight())).ok()?;
    Some(Timestamp(at.as_millisecond()))
}

/// `N` of `N<unit>` (`7d`), for a count of a few digits: a longer one is
/// a date in another form, or nothing.
fn counted(text: &str, unit: char) -> Option<i64> {
    let digits = text.strip_suffix(unit).or_else(|| text.strip_suffix(unit.to_ascii_uppercase()))?;
    if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The date and time `at` shows in `zone`.
fn civil(at: Timestamp, zone: &TimeZone) -> Option<jiff::civil::DateTime> {
    Some(zone.to_datetime(jiff::Timestamp::from_millisecond(at.0).ok()?))
}

/// `YYYY-MM-DD`, the day `at` falls on in `zone`.
pub fn day_of(at: Timestamp, zone: &TimeZone) -> String {
    civil(at, zone).map_or_else(unknown, |time| time.date().strftime("%Y-%m-%d").to_string())
}

/// `YYYY-MM`, the month `at` falls in in `zone`.
pub fn month_of(at: Timestamp, zone: &TimeZone) -> String {
    civil(at, zone).map_or_else(unknown, |time| time.date().strftime("%Y-%m").to_string())
}

/// `YYYY-Www`, the ISO week `at` falls in in `zone`.
pub fn week_of(at: Timestamp, zone: &TimeZone) -> String {
    civil(at, zone).map_or_else(unknown, |time| {
        let week = time.date().iso_week_date();
        format!("{:04}-W{:02}", week.year(), week.week())
    })
}

/// `YYYY-MM-DD HH:MM`, the minute `at` falls in in `zone`.
pub fn minute_of(at: Timestamp, zone: &TimeZone) -> String {
    civil(at, zone).map_or_else(unknown, |time| time.strftime("%Y-%m-%d %H:%M").to_string())
}

/// `at` as RFC 3339 in `zone`: as the log writes it (`…Z`) in UTC, else
/// with the zone's offset (`2026-11-30T08:03:28.437+09:00`), the same
/// instant either way.
pub fn rfc3339_in(at: Timestamp, zone: &TimeZone) -> String {
    if is_utc(zone) {
        return at.to_string();
    }
    jiff::Timestamp::from_millisecond(at.0)
        .map_or_else(|_| at.to_string(), |instant| instant.to_zoned_datetime(zone.clone()).strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string())
}

/// `HH:MM:SS.mmm`, the time of day `at` shows in `zone`.
pub fn clock_of(at: Timestamp, zone: &TimeZone) -> String {
    if is_utc(zone) {
        // The log's own text, cut: `events` prints one per event.
        let text = at.to_string();
        return text.get(11..23).map_or_else(|| text.clone(), str::to_owned);
    }
    civil(at, zone).map_or_else(unknown, |time| time.strftime("%H:%M:%S%.3f").to_string())
}

/// UTC itself, or a zone the database names so: times print as the log
/// writes them.
fn is_utc(zone: &TimeZone) -> bool {
    zone == &TimeZone::UTC || zone.iana_name() == Some("UTC")
}

fn unknown() -> String {
    "unknown".to_owned()
}
