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

use std::path::PathBuf;

/// `path` named from the root (as it is, when that fails). A reference an
/// import writes must hold wherever it is read, and a folder named from the
/// root makes every path found under it so too: a relative one made a
/// `getcwd` per line read, and a key made of it depended on where the
/// import ran.
pub(crate) fn from_the_root(path: PathBuf) -> PathBuf {
    match path.is_relative() {
        true => std::path::absolute(&path).unwrap_or(path),
        false => path,
    }
}
