//! The days `--since` and `--until` name, in every form, against one
//! fixed now.

use agentrace_core::days::{day_end, day_start};
use agentrace_core::model::Timestamp;

/// 2026-12-05T18:32:34.500Z.
fn now() -> Timestamp {
    Timestamp::parse("2026-12-05T18:32:34.500Z").unwrap_or_else(|| panic!("bad time"))
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
