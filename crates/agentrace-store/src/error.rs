//! The store's error type. Each message names the file (and line, where one
//! applies) and what was being done; the underlying cause is the `source`,
//! so `{:#}` prints the whole chain without repeating it.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use agentrace_core::RunId;

/// Everything that can go wrong while finding, writing or reading runs.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Neither `$AGENTRACE_HOME` nor a platform data directory is available.
    #[error(
        "cannot find the agentrace home: AGENTRACE_HOME is not set and this platform has no data directory"
    )]
    NoHome,

    /// A run id that is not safe to use as a file name.
    #[error("invalid run id {id:?}: {reason}")]
    InvalidRunId {
        /// The rejected text (shortened when very long).
        id: String,
        /// Which rule it breaks.
        reason: &'static str,
    },

    /// `create_run` found a log for this id already.
    #[error("run {id} already exists: {}", path.display())]
    AlreadyExists {
        /// The run id.
        id: RunId,
        /// Its existing log.
        path: PathBuf,
    },

    /// No run has this id (or, for `resolve`, starts with it).
    #[error("no run matches {query:?} in {}", runs_dir.display())]
    NotFound {
        /// What was looked for.
        query: String,
        /// Where.
        runs_dir: PathBuf,
    },

    /// A prefix given to `resolve` names more than one run.
    #[error(
        "{query:?} matches {} runs in {}: {}; give more of the id",
        candidates.len(),
        runs_dir.display(),
        list_ids(candidates)
    )]
    Ambiguous {
        /// The prefix.
        query: String,
        /// Where.
        runs_dir: PathBuf,
        /// Every run id it matches, sorted.
        candidates: Vec<RunId>,
    },

    /// A price file that is not the table it must be.
    #[error("{}: {cause}", path.display())]
    PriceFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        cause: String,
    },

    /// A warning config that is not the config it must be.
    #[error("{}: {cause}", path.display())]
    WarningFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, and what was expected.
        cause: String,
    },

    /// A filesystem operation on a path failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done, e.g. `create run log`.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },

    /// Reading a log failed part way (not a bad line: those are skipped).
    #[error("cannot read run log {} at line {line}", path_or_stream(path.as_deref()))]
    Read {
        /// The log, when the reader was opened from a file.
        path: Option<PathBuf>,
        /// The 1-based line being read.
        line: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },

    /// An envelope handed to `append` does not continue the sequence.
    #[error(
        "refusing to append to {}: envelope has sequence {found}, expected {expected} (sequences run 1, 2, … without gaps or repeats)",
        path.display()
    )]
    SequenceGap {
        /// The log.
        path: PathBuf,
        /// The writer's next sequence.
        expected: u64,
        /// The envelope's.
        found: u64,
    },

    /// An envelope or record of another run handed to a run's writer.
    #[error("refusing to write run {found} into {}: that file belongs to run {expected}", path.display())]
    WrongRun {
        /// The file.
        path: PathBuf,
        /// The writer's run.
        expected: RunId,
        /// The envelope's or record's run.
        found: RunId,
    },

    /// An envelope or record could not be encoded as JSON.
    #[error("cannot encode {what} for {}", path.display())]
    Encode {
        /// What, e.g. `envelope 7`.
        what: String,
        /// The file it was meant for.
        path: PathBuf,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },

    /// The catalog's database failed.
    #[error("catalog {}: {source}", path.display())]
    Catalog {
        /// The catalog's file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },

    /// A value the catalog keeps packed does not unpack.
    #[error("a {what} kept in the catalog is damaged: {reason}")]
    Damaged {
        /// What it is, e.g. `usage tree`.
        what: &'static str,
        /// Why it does not unpack.
        reason: String,
    },

    /// The catalog could not be made anew.
    #[error("cannot make the catalog {}: {cause}", path.display())]
    CatalogBroken {
        /// The catalog's file.
        path: PathBuf,
        /// Why.
        cause: String,
    },
}

impl StoreError {
    /// An [`StoreError::Io`] for `action` on `path`.
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        StoreError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }
}

fn path_or_stream(path: Option<&Path>) -> String {
    match path {
        Some(path) => path.display().to_string(),
        None => String::from("<stream>"),
    }
}

/// The candidates of an ambiguous prefix, at most a screenful.
fn list_ids(ids: &[RunId]) -> String {
    const SHOWN: usize = 10;
    let mut text = ids
        .iter()
        .take(SHOWN)
        .map(RunId::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if ids.len() > SHOWN {
        let _ = write!(text, " and {} more", ids.len() - SHOWN);
    }
    text
}
