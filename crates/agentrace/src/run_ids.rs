//! Run ids the shell mints: sortable by time, so a listing by id is a
//! listing by start.

use agentrace_core::model::RunId;

/// A fresh run id: `run-<ulid>`.
pub fn new_run_id() -> RunId {
    RunId::from(format!("run-{}", ulid::Ulid::new()))
}
