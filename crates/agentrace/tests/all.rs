//! Integration tests of the `agentrace` binary: the CLI contract, run end to
//! end against real captures in a temporary `AGENTRACE_HOME`.

// The tests make the homes, folders and files they run the binary on; the
// binary's own sources ask the store (see `crates/agentrace/clippy.toml`).
#![expect(clippy::disallowed_methods, reason = "tests make the files they read")]

mod all {
    pub mod catalog;
    pub mod check;
    pub mod secrets;
    pub mod serve;
    pub mod claude_cli;
    pub mod codex_exec;
    pub mod contract;
    pub mod costs;
    pub mod damaged_input;
    pub mod export;
    pub mod host;
    pub mod live_claude;
    pub mod import_usage;
    pub mod live_codex;
    pub mod one_book;
    pub mod phoenix;
    pub mod raw_ref;
    pub mod status_attach;
    pub mod statusline;
    pub mod following;
    pub mod support;
    pub mod tap_burst;
    pub mod viewer;
}
