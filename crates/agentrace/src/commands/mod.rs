//! One module per command: its arguments and its `run`. What several
//! commands share lives beside `commands/` (the recording shell, the
//! catalog, the usage index, the warning configuration, the printers, the
//! clock, run ids); how a provider's files are found and fed lives in
//! `sources/`. A command uses another only when that one never uses it
//! back, directly or through others.

pub mod attach;
pub mod check;
pub mod claude_run;
pub mod diff;
pub mod events;
pub mod export;
pub mod hook;
pub mod host;
pub mod import;
pub mod ingest;
pub mod prices;
pub mod reindex;
pub mod run_codex;
pub mod run_codex_exec;
pub mod runs;
pub mod samples;
pub mod search;
pub mod serve;
pub mod show;
pub mod status;
pub mod statusline;
pub mod tap;
pub mod top;
pub mod usage;
pub mod watch;
