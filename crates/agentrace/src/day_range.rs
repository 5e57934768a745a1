//! `--since D` and `--until D` in the binary, for every command that takes
//! them (`runs`, `search`, `usage`, `import`): one parser of the day (clap's,
//! so a malformed one is a usage error, exit 2, in clap's words) and one
//! range of times made of them in a zone, which refuses a `--since` after
//! the `--until` the same way. The day forms and bounds are the core's
//! (`agentrace_core::days`); this module cuts no day of its own.

use agentrace_core::days::{self, Day, DAY_FORMS};

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
pub use agentrace_core::days::Range;

/// The range `since` and `until` make in `zone`, today being today there,
/// by the core's rule (`agentrace_core::days::range`, which the API's
/// `since=`/`until=` follow too). A usage error (exit 2, as clap's) when a
/// day is out of range or `--since` is after `--until`, which would leave
/// nothing in quietly.
pub fn range(since: Option<&DayArg>, until: Option<&DayArg>, zone: &Zone) -> Result<Range, clap::Error> {
    use agentrace_core::days::RangeError;
    days::range(since.map(|given| given.day), until.map(|given| given.day), crate::clock::now(), &zone.tz).map_err(|error| {
        let text = |given: Option<&DayArg>| given.map_or_else(String::new, |given| given.text.clone());
        match error {
            RangeError::SinceOutOfRange => invalid("--since", &text(since), "the day is out of range"),
            RangeError::UntilOutOfRange => invalid("--until", &text(until), "the day is out of range"),
            RangeError::Backwards => invalid("--until", &text(until), &format!("it is before --since {}, so no day is in the range", text(since))),
        }
    })
}

/// A usage error about `flag`'s value, worded as clap words its own.
fn invalid(flag: &str, text: &str, reason: &str) -> clap::Error {
    clap::Error::raw(
        clap::error::ErrorKind::ValueValidation,
        format!("invalid value '{text}' for '{flag} <D>': {reason}\n\nFor more information, try '--help'.\n"),
    )
}
