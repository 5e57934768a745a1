//! The hook spool: `<home>/hooks/<run-id>.jsonl`, where each Claude Code
//! hook input waits until a process holding the run's lock moves it into
//! the run's log. It owns the spool's files and the shape of a line
//! (`{"t": <unix ms>, "input": <the input>}`); what a line means is the
//! core's (`Format::ClaudeHook`), and when to drain is the caller's.

use std::fs::{self, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use agentrace_core::model::Timestamp;
use agentrace_core::RunId;
use serde_json::Value;

use crate::error::StoreError;
use crate::home::{ends_with_newline, Home};
use crate::run_id::validate_run_id;

impl Home {
    /// Appends one hook input to run `id`'s spool as one line
    /// `{"t": <at>, "input": <input>}`, in one write, so hooks spooling at
    /// once never interleave. Input that is JSON is kept as it is (its line
    /// breaks, white space between tokens, become spaces); anything else
    /// is kept as a JSON string, so the line stays JSON. A spool whose last
    /// line was torn (a hook that died while writing) gets a newline first:
    /// the torn line stays one bad line of its own, this one whole.
    pub fn spool_hook_input(&self, id: &RunId, at: Timestamp, input: &[u8]) -> Result<(), StoreError> {
        let id = validate_run_id(id.as_str())?;
        let path = self.hook_spool_path(&id);
        let mut line = spool_line(at, input).map_err(|source| StoreError::Encode {
            what: String::from("hook input"),
            path: path.clone(),
            source,
        })?;
        let open = || OpenOptions::new().create(true).read(true).append(true).open(&path);
        let opened = match open() {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let dir = path.parent().unwrap_or(self.root());
                fs::create_dir_all(dir)
                    .map_err(|source| StoreError::io("create hook spool directory", dir, source))?;
                open()
            }
            opened => opened,
        };
        let mut file = opened.map_err(|source| StoreError::io("open hook spool", &path, source))?;
        if !ends_with_newline(&mut file).map_err(|source| StoreError::io("read hook spool", &path, source))? {
            line.insert(0, b'\n');
        }
        file.write_all(&line)
            .map_err(|source| StoreError::io("append to hook spool", &path, source))
    }

    /// Takes run `id`'s spool away to be drained: renamed first, so a hook
    /// spooling meanwhile starts a new spool, and every line is either in
    /// what is taken or left for the next drain. `None` when nothing is
    /// spooled. The caller holds the run's lock
    /// ([`RunLock`](crate::RunLock)).
    pub fn take_hook_spool(&self, id: &RunId) -> Result<Option<TakenSpool>, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let path = self.hook_spool_path(&id);
        if !path.exists() {
            return Ok(None);
        }
        let taken = free_name(&path, &format!("draining-{}", std::process::id()));
        fs::rename(&path, &taken).map_err(|source| StoreError::io("take hook spool", &path, source))?;
        let bytes = fs::read(&taken).map_err(|source| StoreError::io("read hook spool", &taken, source))?;
        Ok(Some(TakenSpool { path: taken, bytes }))
    }
}

/// A spool taken to be drained ([`Home::take_hook_spool`]): its lines, and
/// its file, removed by [`TakenSpool::finish`] once they are in the log. A
/// drain that fails before that leaves the file where it is, never drained
/// again (some of its lines may be in the log already) nor overwritten.
#[derive(Debug)]
pub struct TakenSpool {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl TakenSpool {
    /// The spooled lines, as written.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where the taken spool is until it is finished.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the taken spool: its lines are in the run's log.
    pub fn finish(self) -> Result<(), StoreError> {
        fs::remove_file(&self.path).map_err(|source| StoreError::io("remove hook spool", &self.path, source))
    }
}

/// `path` with the extension `extension`, or, when a file has that name
/// already (the lines of a drain that failed, kept on disk, or of an
/// earlier process with this pid), the first free `<extension>-<n>`: a
/// rename over it would lose them.
fn free_name(path: &Path, extension: &str) -> PathBuf {
    let first = path.with_extension(extension);
    if !first.exists() {
        return first;
    }
    (1_u64..)
        .map(|n| path.with_extension(format!("{extension}-{n}")))
        .find(|candidate| !candidate.exists())
        .unwrap_or(first)
}

/// One spool line, newline included.
fn spool_line(at: Timestamp, input: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let mut line = format!("{{\"t\":{},\"input\":", at.millis()).into_bytes();
    let body = input.trim_ascii();
    if serde_json::from_slice::<Value>(body).is_ok() {
        // Line breaks in valid JSON are white space between tokens.
        line.extend(body.iter().map(|byte| match byte {
            b'\n' | b'\r' => b' ',
            other => *other,
        }));
    } else {
        line.extend(serde_json::to_vec(&String::from_utf8_lossy(body))?);
    }
    line.extend_from_slice(b"}\n");
    Ok(line)
}
