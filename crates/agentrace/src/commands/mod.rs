//! One module per command: its arguments and its `run`. What several
//! commands share lives beside `commands/` (the recording shell, the
//! printers, the clock, run ids); how a provider's files are found and fed
//! lives in `sources/`.

pub mod attach;
pub mod catalog;
pub mod check;
pub mod claude_run;
pub mod diff;
pub mod export;
pub mod hook;
pub mod host;
pub mod import;
pub mod ingest;
pub mod prices;
pub mod run_codex;
pub mod run_codex_exec;
pub mod runs;
pub mod samples;
pub mod serve;
pub mod status;
pub mod statusline;
pub mod tap;
pub mod top;
pub mod usage;
pub mod watch;
