//! Where runs live: the append-only run log (format v2, see
//! [`agentrace_core::model`]), the run record beside it, and the agentrace
//! home. This crate owns every file agentrace writes or reads back; it does
//! no attribution and keeps no run semantics of its own (that is the core's
//! [`RunState`](agentrace_core::RunState)).
//!
//! Layout: `<home>/runs/<run-id>.jsonl` (the log),
//! `<home>/runs/<run-id>.json` (the record) and, for long logs,
//! `<home>/runs/<run-id>.snapshot` (a cache of the log's fold), where
//! `<home>` is `$AGENTRACE_HOME` or the platform data directory's
//! `agentrace`. An imported run may keep compressed copies of its frames
//! in `<home>/runs/<run-id>.raw.gz` ([`raw_ref`]).

pub mod catalog;
mod error;
pub mod fold;
mod home;
pub mod raw_ref;
mod reader;
mod run_id;
mod writer;

pub use catalog::Catalog;
pub use error::StoreError;
pub use fold::{waterfall_of, WaterfallSource, Followed, RunFold, SnapshotMiss, INDEX_STRIDE, SNAPSHOT_VERSION};
pub use home::{Home, LoadedRun, HOME_ENV};
pub use reader::{
    read_log, LogReader, SkippedLine, LEGACY_ACTOR_REASON, LEGACY_RUN_ID, LEGACY_VERSION,
};
pub use run_id::{validate_run_id, MAX_RUN_ID_LEN};
pub use writer::{
    BatchPolicy, RunWriter, Ticked, WriterClock, SNAPSHOT_EVERY_BYTES, SNAPSHOT_MIN_BYTES,
};
