//! Provider sources already on disk: finding Codex rollouts and Claude Code
//! transcripts (with their subagents' files), and feeding a session's files
//! to a recorder in the one order every reading uses. Nothing here writes a
//! run or uses a command or the recording shell: they use these.

pub mod claude_ingest;
pub mod codex_sessions;
pub(crate) mod dirs;
pub mod rollouts;
pub mod session_feed;
pub(crate) mod stamps;
