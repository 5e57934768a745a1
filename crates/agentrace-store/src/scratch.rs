//! The home's files that belong to no run: `agentrace statusline`'s state
//! between calls, `agentrace top`'s log, and the tap's spill. It owns where they are and how they are written;
//! what they hold is the command's.

use std::fs::{self, File};
use std::io;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::StoreError;
use crate::home::Home;

impl Home {
    /// The state `agentrace statusline` kept for Claude Code session
    /// `session_id` ([`Home::statusline_state_path`]); `None` when there is
    /// none, or what is there does not read as a `T` (a cache: any doubt
    /// means reading the transcripts again). Refuses a session id that is
    /// not a plain file name.
    pub fn statusline_state<T: DeserializeOwned>(&self, session_id: &str) -> Result<Option<T>, StoreError> {
        let path = self.statusline_state_path(session_id)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::io("read statusline state", &path, source)),
        }
    }

    /// Keeps `state` for session `session_id`: written whole into a
    /// temporary file beside it, then renamed over the old one, so a call
    /// that reads it meanwhile sees the old state or the new one.
    pub fn save_statusline_state<T: Serialize>(&self, session_id: &str, state: &T) -> Result<(), StoreError> {
        let path = self.statusline_state_path(session_id)?;
        let dir = path.parent().unwrap_or(self.root());
        fs::create_dir_all(dir).map_err(|source| StoreError::io("create statusline directory", dir, source))?;
        let mut temporary = tempfile::NamedTempFile::new_in(dir)
            .map_err(|source| StoreError::io("create statusline state in", dir, source))?;
        serde_json::to_writer(&mut temporary, state).map_err(|source| StoreError::Encode {
            what: String::from("statusline state"),
            path: path.clone(),
            source,
        })?;
        temporary
            .persist(&path)
            .map_err(|error| StoreError::io("replace statusline state", &path, error.error))?;
        Ok(())
    }

    /// Creates `agentrace top`'s log ([`Home::top_log_path`]) empty, over the
    /// last one. The home is not made for it: a home that is not there yet
    /// has nothing to log.
    pub fn create_top_log(&self) -> Result<File, StoreError> {
        let path = self.top_log_path();
        File::create(&path).map_err(|source| StoreError::io("create", &path, source))
    }

    /// A new spill file for copies a recorder cannot hold in memory: in the
    /// runs folder (the disk the logs are on, not a small `/tmp`), and
    /// removed from it as it is made, so it is gone with the process
    /// however the process ends.
    pub fn create_spill(&self) -> Result<File, StoreError> {
        let dir = self.runs_dir();
        match tempfile::tempfile_in(&dir) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                fs::create_dir_all(&dir).map_err(|source| StoreError::io("create runs directory", &dir, source))?;
                tempfile::tempfile_in(&dir)
            }
            made => made,
        }
        .map_err(|source| StoreError::io("create a spill file in", &dir, source))
    }
}
