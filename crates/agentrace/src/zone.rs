//! `--tz` and `AGENTRACE_TZ` in the binary: the store looks the zone up
//! (`agentrace_store::zone`); a command without `--tz` reads the variable
//! here, and the printers of times (`show`, `events`, `attach`, `top`'s
//! events) take the zone it names once per process.

use std::sync::OnceLock;

pub use agentrace_store::zone::{parse_zone, Zone};

/// The zone `AGENTRACE_TZ` names, for a command without `--tz` (`agentrace`
/// alone); UTC when it is not set.
pub fn from_env() -> anyhow::Result<Zone> {
    // Set but blank is UTC too: the parser reads a blank zone so.
    match std::env::var("AGENTRACE_TZ") {
        Ok(text) => parse_zone(&text).map_err(|error| anyhow::anyhow!("AGENTRACE_TZ: {error}")),
        Err(_) => Ok(Zone::utc()),
    }
}

/// The zone times are printed in: `AGENTRACE_TZ`'s, read once; UTC when it
/// is not set, or (said once on stderr) when it names no zone.
pub fn shown() -> &'static Zone {
    static SHOWN: OnceLock<Zone> = OnceLock::new();
    SHOWN.get_or_init(|| {
        from_env().unwrap_or_else(|error| {
            eprintln!("warning: {error:#}; times are shown in UTC");
            Zone::utc()
        })
    })
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
