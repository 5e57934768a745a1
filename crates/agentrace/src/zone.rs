//! `--tz` and `AGENTRACE_TZ` in the binary: the store looks the zone up
//! (`agentrace_store::zone`); a command without `--tz` reads the variable
//! here.

pub use agentrace_store::zone::{parse_zone, Zone};

/// The zone `AGENTRACE_TZ` names, for a command without `--tz` (`agentrace`
/// alone); UTC when it is not set.
pub fn from_env() -> anyhow::Result<Zone> {
    match std::env::var("AGENTRACE_TZ") {
        Ok(text) if !text.trim().is_empty() => parse_zone(&text).map_err(|error| anyhow::anyhow!("AGENTRACE_TZ: {error}")),
        _ => Ok(Zone::utc()),
    }
}
