//! The days `--since` and `--until` name, in every form, against one
//! fixed now.

use agentrace_core::days::{clock_of, day_of, minute_of, month_of, rfc3339_in, week_of, Day};
use agentrace_core::model::Timestamp;
use jiff::tz::TimeZone;

/// 2026-12-05T18:32:34.500Z.
fn now() -> Timestamp {
    Timestamp::parse("2026-12-05T18:32:34.500Z").unwrap_or_else(|| panic!("bad time"))
}

/// The start of the UTC day `text` names.
fn day_start(text: &str, now: Timestamp) -> Option<Timestamp> {
    Day::parse(text)?.start(now, &TimeZone::UTC)
}

/// The end of the UTC day `text` names (the next day's start).
fn day_end(text: &str, now: Timestamp) -> Option<Timestamp> {
    Day::parse(text)?.end(now, &TimeZone::UTC)
}

fn day(text: &str) -> Timestamp {
    Timestamp::parse(&format!("{text}T00:00:00Z")).unwrap_or_else(|| panic!("bad day {text}"))
}

#[test]
fn every_form_names_its_day() {
    let cases = [
        ("2026-11-30", Some(day("2026-11-30"))),
        ("20261130", Some(day("2026-11-30"))),
        (" 2026-11-30 ", Some(day("2026-11-30"))),
        ("today", Some(day("2026-12-05"))),
        ("Today", Some(day("2026-12-05"))),
        ("yesterday", Some(day("2026-12-04"))),
        ("0d", Some(day("2026-12-05"))),
        ("7d", Some(day("2026-11-28"))),
        ("30D", Some(day("2026-11-05"))),
        ("2w", Some(day("2026-11-21"))),
        ("400d", Some(day("2025-10-31"))),
        ("2024-02-29", Some(day("2024-02-29"))),
    ];
    let got: Vec<_> = cases.iter().map(|(text, _)| (*text, day_start(text, now()))).collect();
    assert_eq!(got, cases.to_vec());
}

#[test]
fn what_names_no_day_is_none() {
    let texts = ["", "d", "-3d", "3days", "3 d", "1.5d", "2026-13-01", "2025-02-29", "20261301", "2026113", "2026-11-30T00:00:00Z", "next week", "99999999999d"];
    let got: Vec<_> = texts.iter().map(|text| (*text, day_start(text, now()))).collect();
    assert_eq!(got, texts.iter().map(|text| (*text, None)).collect::<Vec<_>>());
}

#[test]
fn a_day_ends_where_the_next_begins() {
    assert_eq!(day_end("2026-11-30", now()), Some(day("2026-12-01")));
    assert_eq!(day_end("today", now()), Some(day("2026-12-06")));
    assert_eq!(day_end("nope", now()), None);
}

/// A zone `hours` east of UTC (no database needed).
fn east(hours: i8) -> TimeZone {
    TimeZone::fixed(jiff::tz::Offset::constant(hours))
}

/// New York's rule (a change of clocks twice a year), from its POSIX form.
fn new_york() -> TimeZone {
    TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap_or_else(|e| panic!("{e}"))
}

fn at(text: &str) -> Timestamp {
    Timestamp::parse(text).unwrap_or_else(|| panic!("bad time {text}"))
}

#[test]
fn in_a_zone_a_day_runs_from_its_own_midnight_to_the_next() {
    let parsed = |text: &str| Day::parse(text).unwrap_or_else(|| panic!("no day in {text}"));
    let bounds = |text: &str, zone: &TimeZone| (parsed(text).start(now(), zone), parsed(text).end(now(), zone));
    let got = [
        // Now is 18:32 UTC on the 5th: already the 6th in Tokyo, still
        // the 5th eight hours west.
        bounds("today", &east(9)),
        bounds("today", &east(-8)),
        bounds("yesterday", &east(9)),
        bounds("2026-11-30", &east(9)),
        // The day New York's clocks go forward has 23 hours, the day they
        // go back 25.
        bounds("2026-03-08", &new_york()),
        bounds("20261101", &new_york()),
        bounds("2026-11-30", &TimeZone::UTC),
    ];
    assert_eq!(
        got,
        [
            (Some(at("2026-12-05T15:00:00Z")), Some(at("2026-12-06T15:00:00Z"))),
            (Some(at("2026-12-05T08:00:00Z")), Some(at("2026-12-06T08:00:00Z"))),
            (Some(at("2026-12-04T15:00:00Z")), Some(at("2026-12-05T15:00:00Z"))),
            (Some(at("2026-11-29T15:00:00Z")), Some(at("2026-11-30T15:00:00Z"))),
            (Some(at("2026-03-08T05:00:00Z")), Some(at("2026-03-09T04:00:00Z"))),
            (Some(at("2026-11-01T04:00:00Z")), Some(at("2026-11-02T05:00:00Z"))),
            (Some(day("2026-11-30")), Some(day("2026-12-01"))),
        ]
    );
}

#[test]
fn a_time_is_grouped_by_the_day_week_and_month_of_the_zone() {
    let groups = |text: &str, zone: &TimeZone| {
        let time = at(text);
        (day_of(time, zone), week_of(time, zone), month_of(time, zone), minute_of(time, zone))
    };
    let owned = |day: &str, week: &str, month: &str, minute: &str| (day.to_owned(), week.to_owned(), month.to_owned(), minute.to_owned());
    assert_eq!(
        [
            groups("2026-12-31T20:00:00Z", &TimeZone::UTC),
            groups("2026-12-31T20:00:00Z", &east(9)),
            groups("2027-01-01T03:30:00Z", &new_york()),
            groups("2026-07-01T03:30:00Z", &new_york()),
        ],
        [
            owned("2026-12-31", "2026-W53", "2026-12", "2026-12-31 20:00"),
            owned("2027-01-01", "2026-W53", "2027-01", "2027-01-01 05:00"),
            owned("2026-12-31", "2026-W53", "2026-12", "2026-12-31 22:30"),
            owned("2026-06-30", "2026-W27", "2026-06", "2026-06-30 23:30"),
        ]
    );
}

#[test]
fn a_time_is_written_in_the_zone_with_its_offset_and_as_the_log_writes_it_in_utc() {
    let time = at("2026-11-29T23:03:28.437Z");
    assert_eq!(
        [
            rfc3339_in(time, &TimeZone::UTC),
            rfc3339_in(time, &east(9)),
            rfc3339_in(time, &new_york()),
            clock_of(time, &TimeZone::UTC),
            clock_of(time, &east(9)),
        ],
        [
            "2026-11-29T23:03:28.437Z".to_owned(),
            "2026-11-30T08:03:28.437+09:00".to_owned(),
            "2026-11-29T18:03:28.437-05:00".to_owned(),
            "23:03:28.437".to_owned(),
            "08:03:28.437".to_owned(),
        ]
    );
}
