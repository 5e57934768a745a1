//! Provider sources already on disk: finding Codex rollouts and Claude Code
//! transcripts (with their subagents' files), and feeding a session's files
//! to a recorder in the one order every reading uses.

pub mod claude_ingest;
pub mod codex_sessions;
pub(crate) mod dirs;
pub mod session_feed;
