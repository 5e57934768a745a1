//! Runs as the server sees them: each log's fold resumed from the snapshot
//! its recorder keeps beside it (see [`agentrace_store::fold`]) or folded
//! from its start when there is none that matches (a long log then gets
//! one, so the next server resumes from it), then followed
//! incrementally (only bytes appended since the last look are read), with
//! a sparse index of byte offsets so a page of events is read from near its
//! start instead of from the top of the file. Memory per run grows with its
//! agents and with one index entry per [`INDEX_STRIDE`] envelopes, never
//! with its events. It must not hold envelopes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentrace_core::childwork::ChildWorkRecord;
use agentrace_core::model::{Actor, Envelope, Role, RunId, RunStatus, Timestamp};
use agentrace_core::state::RunView;
use agentrace_core::warnings::WarningConfig;
use agentrace_store::raw_ref::Resolver;
use agentrace_store::{Home, LogReader, RunFold, SnapshotMiss, SNAPSHOT_MIN_BYTES};
use serde::Serialize;

use crate::error::ApiError;

pub use agentrace_store::{Followed, INDEX_STRIDE};

/// The most envelopes one events request scans (a filter that matches
/// little must not read a huge log in one request: the client continues
/// from `next`).
pub const SCAN_BUDGET: u64 = 50_000;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1000;

/// The page size when none is asked for.
pub const DEFAULT_PAGE: usize = 200;

/// A run log followed: its fold and the file.
#[derive(Debug, Clone)]
pub struct LiveRun {
    path: PathBuf,
    fold: RunFold,
    /// Where to leave a snapshot of a long log folded from its start
    /// (none once one is written, or when the run had a usable one).
    snapshot_to_write: Option<PathBuf>,
}

impl LiveRun {
    /// A run not read yet: it will be folded from the start of its log.
    pub fn new(id: RunId, path: PathBuf) -> Self {
        Self {
            path,
            fold: RunFold::new(id),
            snapshot_to_write: None,
        }
    }

    /// A run resumed from the snapshot at `snapshot` when it matches the log
    /// at `path` (else, and with the reason, one not read yet, which writes
    /// the snapshot once it has folded a log of [`SNAPSHOT_MIN_BYTES`] or
    /// more: the next server need not fold it again).
    pub fn resume(id: RunId, path: PathBuf, snapshot: &Path) -> (Self, Option<SnapshotMiss>) {
        match RunFold::load_snapshot(snapshot, &path, &id) {
            Ok(fold) => (
                Self {
                    path,
                    fold,
                    snapshot_to_write: None,
                },
                None,
            ),
            Err(miss) => {
                let mut run = Self::new(id, path);
                run.snapshot_to_write = Some(snapshot.to_owned());
                (run, Some(miss))
            }
        }
    }

    /// Bytes of the log folded so far.
    pub fn offset(&self) -> u64 {
        self.fold.offset()
    }

    /// Reads the whole lines appended since the last call, folds them, and
    /// hands each new envelope (final actor of the moment applied) to
    /// `each`.
    pub fn follow(&mut self, each: impl FnMut(&Envelope)) -> io::Result<Followed> {
        let followed = self.fold.follow(&self.path, each)?;
        if self.fold.offset() >= SNAPSHOT_MIN_BYTES {
            if let Some(snapshot) = self.snapshot_to_write.take() {
                // Best effort: a home the server may not write to (or a
                // failed write) only leaves the next server to fold again.
                let _ = self.fold.save_snapshot(&snapshot, &self.path);
            }
        }
        Ok(followed)
    }

    /// `envelopes` (read from this run's log) with their imported frames
    /// read from their sources, as [`LiveRun::page`] gives them.
    pub fn show_frames(&self, envelopes: &mut [Envelope]) {
        let mut frames = Resolver::for_log(&self.path);
        for envelope in envelopes {
            frames.show(envelope);
        }
    }

    /// `{run, agents, warnings}` as `show --json` prints it: recorded
    /// warnings, the child-work reducer's and the detectors' at `now`.
    pub fn view(&self, config: &WarningConfig, now: Timestamp) -> (RunView, Option<u64>) {
        self.fold.checked_view(config, Some(now))
    }

    /// The child-work records; a run that ended has its live records
    /// settled, as at a session end (§6 rule 9).
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        let state = self.fold.state();
        if state.status() == RunStatus::Running {
            return self.fold.child_work().records();
        }
        let mut settled = self.fold.child_work().clone();
        let at = state.summary().updated_at.unwrap_or_default();
        settled.end_session(at);
        settled.records()
    }

    /// The run status.
    pub fn status(&self) -> RunStatus {
        self.fold.state().status()
    }

    /// A page of events after sequence `after` (final actors applied),
    /// filtered. Reads from the index entry before `after`, at most
    /// [`SCAN_BUDGET`] envelopes.
    pub fn page(&self, query: &PageQuery) -> io::Result<Page> {
        let mut file = File::open(&self.path)?;
        let start = self.fold.seek_point(query.after);
        file.seek(SeekFrom::Start(start))?;
        let reader = BufReader::with_capacity(64 * 1024, file.take(self.fold.offset() - start));
        let limit = query.limit.clamp(1, MAX_PAGE);
        let needle = query.q.as_ref().map(|q| q.to_lowercase());
        // The viewer's raw view shows an imported frame read from its
        // source (or `raw: null` and why not).
        let mut frames = Resolver::for_log(&self.path);
        let mut events = Vec::new();
        let mut scanned = 0;
        let mut last_seen = query.after;
        let mut more = false;
        for envelope in LogReader::new(reader).with_run_id(self.fold.state().summary().id) {
            let mut envelope = envelope.map_err(io::Error::other)?;
            if envelope.sequence <= query.after {
                continue;
            }
            if events.len() == limit || scanned == SCAN_BUDGET {
                more = true;
                break;
            }
            scanned += 1;
            last_seen = envelope.sequence;
            self.fold.finals().apply(&mut envelope);
            if !query.actor.keeps(&envelope.actor) {
                continue;
            }
            // A search looks in the frame too, as when frames were copied.
            frames.show(&mut envelope);
            if let Some(needle) = &needle {
                let text = serde_json::to_string(&envelope)
                    .unwrap_or_default()
                    .to_lowercase();
                if !text.contains(needle.as_str()) {
                    continue;
                }
            }
            events.push(envelope);
        }
        Ok(Page {
            events,
            next: more.then_some(last_seen),
            last_sequence: self.fold.state().last_sequence(),
        })
    }
}

/// Which events a page keeps by actor (`actor=` of the API).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ActorFilter {
    /// Every event.
    #[default]
    All,
    /// Events of one role (`main`, `helpers`, `unknown`).
    Role(Role),
    /// Events of one thread.
    Thread(String),
}

impl ActorFilter {
    /// Parses `all`, `main`/`root`, `helpers`/`helper`, `unknown`, or a thread id.
    pub fn parse(text: Option<&str>) -> Self {
        match text {
            None | Some("" | "all") => ActorFilter::All,
            Some("main" | "root") => ActorFilter::Role(Role::Root),
            Some("helpers" | "helper") => ActorFilter::Role(Role::Helper),
            Some("unknown") => ActorFilter::Role(Role::Unknown),
            Some(thread) => ActorFilter::Thread(thread.to_owned()),
        }
    }

    fn keeps(&self, actor: &Actor) -> bool {
        match self {
            ActorFilter::All => true,
            ActorFilter::Role(role) => actor.role == *role,
            ActorFilter::Thread(thread) => actor
                .thread_id
                .as_ref()
                .is_some_and(|id| id.as_str() == thread),
        }
    }
}

/// What a page asks for.
#[derive(Debug, Clone, Default)]
pub struct PageQuery {
    /// Only events with a greater sequence.
    pub after: u64,
    /// At most this many events.
    pub limit: usize,
    /// Actor filter.
    pub actor: ActorFilter,
    /// Case-insensitive text the envelope's JSON must contain.
    pub q: Option<String>,
}

/// A page of events: `{events, next, lastSequence}`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    /// Envelopes, final actors applied, in sequence order.
    pub events: Vec<Envelope>,
    /// Pass as `after` for the next page; null when the log (as read so
    /// far) has no more.
    pub next: Option<u64>,
    /// The last sequence of the run so far.
    pub last_sequence: u64,
}

/// Every run the server has looked at, followed.
#[derive(Debug, Default)]
pub struct RunCache {
    runs: Mutex<HashMap<RunId, Arc<Mutex<LiveRun>>>>,
}

impl RunCache {
    /// The run, brought up to date with its log. Blocking: call from a
    /// blocking task.
    pub fn get(&self, home: &Home, id: &RunId) -> Result<Arc<Mutex<LiveRun>>, ApiError> {
        let entry = {
            let mut runs = self.runs.lock().map_err(|_| ApiError::Poisoned)?;
            runs.entry(id.clone())
                .or_insert_with(|| {
                    // A miss only costs time: the run is folded from its start.
                    let (run, _miss) =
                        LiveRun::resume(id.clone(), home.log_path(id), &home.snapshot_path(id));
                    Arc::new(Mutex::new(run))
                })
                .clone()
        };
        {
            let mut run = entry.lock().map_err(|_| ApiError::Poisoned)?;
            run.follow(|_| {})
                .map_err(|error| read_error(&home.log_path(id), error))?;
        }
        Ok(entry)
    }
}

/// An I/O error of a log: a missing file is a missing run.
pub fn read_error(path: &Path, error: io::Error) -> ApiError {
    if error.kind() == io::ErrorKind::NotFound {
        ApiError::NotFound(format!("no run log at {}", path.display()))
    } else {
        ApiError::Internal(format!("cannot read {}: {error}", path.display()))
    }
}
