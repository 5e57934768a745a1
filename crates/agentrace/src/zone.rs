//! `--tz` and `AGENTRACE_TZ` in the binary: the store looks the zone up
//! (`agentrace_store::zone`); here a command's `--tz`, when not given,
//! falls back on the variable, and the printers of times (`show`,
//! `events`, `attach`, `top`'s events) take the zone it names, read once
//! per process. Clap never reads the variable: a zone it cannot find there
//! is a warning and UTC, where a mistyped `--tz` is a usage error.

use std::sync::OnceLock;

pub use agentrace_store::zone::{parse_zone, Zone};

/// The zone `AGENTRACE_TZ` names, read once per process: UTC when it is
/// unset or blank, and UTC said once on stderr (the variable and its
/// value) when it names no zone: a variable set long ago must not break
/// every command, as a flag the user never passed.
pub fn from_env() -> &'static Zone {
    static NAMED: OnceLock<Zone> = OnceLock::new();
    NAMED.get_or_init(|| {
        // Set but blank is UTC too: the parser reads a blank zone so.
        let Some(text) = std::env::var_os("AGENTRACE_TZ") else {
            return Zone::utc();
        };
        parse_zone(&text.to_string_lossy()).unwrap_or_else(|error| {
            eprintln!("warning: AGENTRACE_TZ: {error}; days and times are UTC");
            Zone::utc()
        })
    })
}

/// The zone of a command's `--tz`: the one given on the command line,
/// else `AGENTRACE_TZ`'s ([`from_env`]).
pub fn given_or_env(given: Option<&Zone>) -> &Zone {
    given.unwrap_or_else(|| from_env())
}

/// This machine's zone, by name, when it is not UTC now and no zone is
/// named (`AGENTRACE_TZ` unset): what a hint offers the user, whose times
/// are otherwise UTC without their knowing.
pub fn unnamed_local_zone() -> Option<String> {
    if std::env::var("AGENTRACE_TZ").is_ok_and(|text| !text.trim().is_empty()) {
        return None;
    }
    let local = parse_zone("local").ok()?;
    (!local.reads_utc_at(crate::clock::now())).then_some(local.name)
}
