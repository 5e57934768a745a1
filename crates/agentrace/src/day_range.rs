//! `--since D` and `--until D` in the binary, for every command that takes
//! them (`runs`, `search`, `usage`, `import`): one parser of the day (clap's,
//! so a malformed one is a usage error, exit 2, in clap's words) and one
//! range of times made of them in a zone, which refuses a `--since` after
//! the `--until` the same way. The day forms and bounds are the core's
//! (`agentrace_core::days`); this module cuts no day of its own.

use agentrace_core::days::{Day, DAY_FORMS};
use agentrace_core::model::Timestamp;

use crate::zone::Zone;

/// A day as `--since` or `--until` was given: what it names and the text,
/// for an error to quote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayArg {
    /// The day it names (a time once a zone and today make one of it).
    pub day: Day,
    /// As the user wrote it.
    pub text: String,
}

/// Clap's parser of `--since` and `--until`.
pub fn parse_day(text: &str) -> Result<DayArg, String> {
    Day::parse(text).map(|day| DayArg { day, text: text.to_owned() }).ok_or_else(|| format!("expected {DAY_FORMS}"))
}

/// The times `--since` and `--until` leave in: from the start of
/// `--since`'s day (included) to the end of `--until`'s (excluded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    /// The start of `--since`'s day.
    pub since: Option<Timestamp>,
    /// The start of the day after `--until`'s.
    pub until: Option<Timestamp>,
}

/// The range `since` and `until` make in `zone`, today being today there.
/// A usage error (exit 2, as clap's) when a day is out of range or
/// `--since` is after `--until`, which would leave nothing in quietly.
pub fn range(since: Option<&DayArg>, until: Option<&DayArg>, zone: &Zone) -> Result<Range, clap::Error> {
    let now = crate::clock::now();
    let bound = |given: Option<&DayArg>, is_until: bool, flag: &str| {
        given
            .map(|given| given.day.bound(is_until, now, &zone.tz).ok_or_else(|| invalid(flag, &given.text, "the day is out of range")))
            .transpose()
    };
    let range = Range { since: bound(since, false, "--since")?, until: bound(until, true, "--until")? };
    if let (Some(start), Some(end), Some(since), Some(until)) = (range.since, range.until, since, until) {
        if start >= end {
            return Err(invalid("--until", &until.text, &format!("it is before --since {}, so no day is in the range", since.text)));
        }
    }
    Ok(range)
}

/// A usage error about `flag`'s value, worded as clap words its own.
fn invalid(flag: &str, text: &str, reason: &str) -> clap::Error {
    clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!("invalid value '{text}' for '{flag} <D>': {reason}\n\nFor more information, try '--help'.\n"),
    )
}
