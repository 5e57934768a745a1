//! The time zone a user names (`--tz`, `AGENTRACE_TZ`, the API's `tz=`):
//! whose days `usage` groups by and `--since`/`--until` name, and in which
//! times are shown. UTC unless told, so that output does not change with
//! the machine it runs on. Looking a zone up reads the zone database (the
//! system's, else the copy built in), which the core never does: it is
//! handed the zone.

use jiff::tz::{Offset, TimeZone};

/// The forms `--tz` takes, as an error names them.
pub const ZONE_FORMS: &str = "UTC, local (this machine's zone), a name like Europe/Paris, or an offset like +05:30";

/// A time zone and the name output gives it.
#[derive(Debug, Clone)]
pub struct Zone {
    /// The zone.
    pub tz: TimeZone,
    /// `UTC`, its IANA name, or its offset.
    pub name: String,
}

impl Zone {
    /// UTC.
    pub fn utc() -> Self {
        Self { tz: TimeZone::UTC, name: "UTC".to_owned() }
    }

    /// Whether its clocks read as UTC's at `at`.
    pub fn reads_utc_at(&self, at: agentrace_core::model::Timestamp) -> bool {
        jiff::Timestamp::from_millisecond(at.millis()).is_ok_and(|instant| self.tz.to_offset(instant).seconds() == 0)
    }
}

impl Default for Zone {
    fn default() -> Self {
        Self::utc()
    }
}

/// The zone `text` names (clap's parser of `--tz`, the API's of `tz=`).
pub fn parse_zone(text: &str) -> Result<Zone, String> {
    let text = text.trim();
    // Blank is no zone named: `AGENTRACE_TZ=` in a shell means unset.
    if text.is_empty() || text.eq_ignore_ascii_case("utc") || text == "Z" {
        return Ok(Zone::utc());
    }
    if text.eq_ignore_ascii_case("local") {
        let tz = TimeZone::try_system().map_err(|error| format!("this machine's time zone is unknown ({error}): pass --tz with a name like Europe/Paris"))?;
        let name = tz.iana_name().unwrap_or("local").to_owned();
        return Ok(Zone { tz, name });
    }
    if let Some(offset) = offset(text) {
        let seconds = offset.seconds();
        let name = format!("{}{:02}:{:02}", if seconds < 0 { '-' } else { '+' }, seconds.abs() / 3600, seconds.abs() / 60 % 60);
        return Ok(Zone { tz: TimeZone::fixed(offset), name });
    }
    match TimeZone::get(text) {
        Ok(tz) => Ok(Zone { name: tz.iana_name().unwrap_or(text).to_owned(), tz }),
        Err(_) => Err(format!("no time zone {text:?}: expected {ZONE_FORMS}")),
    }
}

/// `+05:30`, `-08:00`, `+9`, `-0330`: an offset from UTC of at most 25
/// hours.
fn offset(text: &str) -> Option<Offset> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, text.get(1..)?),
        b'-' => (-1, text.get(1..)?),
        _ => return None,
    };
    let (hours, minutes) = match rest.split_once(':') {
        Some((hours, minutes)) => (hours, minutes),
        None if rest.len() == 4 => (rest.get(..2)?, rest.get(2..)?),
        None => (rest, "0"),
    };
    let digits = |part: &str| (!part.is_empty() && part.len() <= 2 && part.bytes().all(|byte| byte.is_ascii_digit())).then(|| part.parse::<i32>().ok()).flatten();
    let (hours, minutes) = (digits(hours)?, digits(minutes)?);
    if hours > 25 || minutes > 59 {
        return None;
    }
    Offset::from_seconds(sign * (hours * 3600 + minutes * 60)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_form_names_its_zone_and_what_names_none_is_refused() {
        let named = |text: &str| parse_zone(text).map(|zone| zone.name);
        assert_eq!(
            ["UTC", "utc", "Z", "+05:30", "-08:00", "+9", "-0330", "Asia/Tokyo", "+26", "+05:60", "Mars/Olympus", ""].map(named),
            [
                Ok("UTC".to_owned()),
                Ok("UTC".to_owned()),
                Ok("UTC".to_owned()),
                Ok("+05:30".to_owned()),
                Ok("-08:00".to_owned()),
                Ok("+09:00".to_owned()),
                Ok("-03:30".to_owned()),
                Ok("Asia/Tokyo".to_owned()),
                Err(format!("no time zone \"+26\": expected {ZONE_FORMS}")),
                Err(format!("no time zone \"+05:60\": expected {ZONE_FORMS}")),
                Err(format!("no time zone \"Mars/Olympus\": expected {ZONE_FORMS}")),
                Ok("UTC".to_owned()),
            ]
        );
    }
}
