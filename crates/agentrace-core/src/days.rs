//! The days `--since` and `--until` name, read one way by every command and
//! the API: a calendar day (`2026-11-30`, or ccusage's `20261130`, so a
//! command line from ccusage works as it is), or a day counted back from
//! today (`today`, `yesterday`, `7d`, `2w`). Days are UTC, as every day the
//! reports group by. Today is the caller's: the core reads no clock.

use crate::model::Timestamp;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// The forms a day may take, as an error names them.
pub const DAY_FORMS: &str = "a day like 2026-11-30 or 20261130, or today, yesterday, 7d (days ago) or 2w (weeks ago)";

/// The start (UTC midnight) of the day `text` names, `now` being the time
/// today is told from; `None` when it names no day.
pub fn day_start(text: &str, now: Timestamp) -> Option<Timestamp> {
    let text = text.trim();
    let today = now.0.div_euclid(DAY_MS) * DAY_MS;
    let back = |days: i64| today.checked_sub(days.checked_mul(DAY_MS)?).map(Timestamp);
    match text.to_ascii_lowercase().as_str() {
        "today" => return Some(Timestamp(today)),
        "yesterday" => return back(1),
        _ => {}
    }
    if let Some(days) = counted(text, 'd') {
        return back(days);
    }
    if let Some(weeks) = counted(text, 'w') {
        return back(weeks.checked_mul(7)?);
    }
    let format = if text.len() == 8 && text.bytes().all(|byte| byte.is_ascii_digit()) { "%Y%m%d" } else { "%Y-%m-%d" };
    let day = chrono::NaiveDate::parse_from_str(text, format).ok()?;
    Some(Timestamp(day.and_time(chrono::NaiveTime::MIN).and_utc().timestamp_millis()))
}

/// The end of the day `text` names (the next day's start), for an `--until`
/// that keeps its own day.
pub fn day_end(text: &str, now: Timestamp) -> Option<Timestamp> {
    day_start(text, now).and_then(|start| start.0.checked_add(DAY_MS)).map(Timestamp)
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
