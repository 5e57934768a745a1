//! The wall clock, read only here: the core never reads it (the shell
//! stamps time on each line it reads), and every command that needs the
//! time now (a recorder's stamps, the time-based detectors of live runs)
//! asks this one function.

use agentrace_core::model::Timestamp;

/// Unix milliseconds now.
pub fn now() -> Timestamp {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Timestamp::from_millis(millis)
}
