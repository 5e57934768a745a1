//! Where runs live: the append-only run log (format v2, see
//! [`agentrace_core::model`], and the leaner v3 line on disk an import
//! writes, see [`lean`]), the run record beside it, and the agentrace
//! home. This crate owns every file under the home: it names each one
//! ([`Home`]'s `*_path` methods) and is the only code that writes, renames,
//! removes or locks one; commands ask it. It does no attribution and keeps
//! no run semantics of its own (that is the core's
//! [`RunState`](agentrace_core::RunState)).
//!
//! Layout, where `<home>` is `$AGENTRACE_HOME` or the platform data
//! directory's `agentrace`:
//!
//! - `<home>/runs/<run-id>.jsonl`: the log; `<run-id>.json`: the record;
//!   `<run-id>.snapshot`, for long logs: a cache of the log's fold;
//!   `<run-id>.raw.gz`, for an import that keeps them: compressed copies of
//!   its frames ([`raw_ref`]); `<run-id>.lock`: the claim of the process
//!   appending ([`RunLock`]); and, unnamed, the tap's spill
//!   ([`Home::create_spill`]).
//! - `<home>/hooks/<run-id>.jsonl`: Claude Code hook inputs waiting for the
//!   run's log ([`Home::spool_hook_input`]).
//! - `<home>/catalog.sqlite`: the catalog ([`catalog`]), derived from the
//!   logs; `<home>/import/lock`: the import's lock ([`ImportLock`]).
//! - `<home>/statusline/<session>.json`: `agentrace statusline`'s state
//!   between calls; `<home>/top.log`: `agentrace top`'s stderr while its
//!   screen is up; `<home>/warnings.json`: the user's warning
//!   configuration (read, never written).

pub mod catalog;
mod error;
mod files;
mod full_line;
pub mod fold;
mod home;
pub mod lean;
pub mod prices;
mod lock;
mod packed;
pub mod raw_ref;
pub mod warning_file;
mod readable;
mod reader;
mod run_id;
mod scratch;
mod spool;
pub mod watching;
pub mod zone;
mod writer;

pub use catalog::Catalog;

/// A hash map of keys read from the user's disk and the catalog (paths,
/// run ids), by the thousand on every import: `foldhash` hashes one in a
/// few instructions, where std's SipHash (with `Path`'s own hashing, which
/// parses the path) was a sixth of a repeated import's. Seeded per process,
/// as std's is.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The set of [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
pub use error::StoreError;
pub use fold::{waterfall_of, WaterfallSource, Followed, RunFold, SnapshotMiss, INDEX_STRIDE, SNAPSHOT_VERSION};
pub use lean::Dictionary;
pub use home::{run_files_named, Home, LoadedRun, RunFiles, RunsFolder, HOME_ENV, PRICE_DATABASE_FILE, PRICE_FILE, WARNING_CONFIG_FILE};
pub use lock::{FollowerLease, FollowerState, ImportLock, RunLock};
pub use packed::Packed;
pub use reader::{
    read_log, read_log_line, LineAt, LineDecoder, LogLine, LogReader, SkippedLine, LEGACY_ACTOR_REASON, LEGACY_RUN_ID, LEGACY_VERSION,
};
pub use run_id::{validate_run_id, MAX_RUN_ID_LEN};
pub use spool::TakenSpool;
pub use writer::{
    BatchPolicy, RunWriter, Ticked, WriterClock, SNAPSHOT_EVERY_BYTES, SNAPSHOT_MIN_BYTES, WRITEBACK_EVERY_BYTES,
};
