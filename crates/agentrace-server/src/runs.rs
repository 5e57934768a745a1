//! Runs as the server sees them: each log folded once and then followed
//! incrementally (only bytes appended since the last look are read), with a
//! sparse index of byte offsets so a page of events is read from near its
//! start instead of from the top of the file. Memory per run grows with its
//! agents and with one index entry per [`INDEX_STRIDE`] envelopes, never
//! with its events. It must not hold envelopes.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agentrace_core::childwork::{ChildWork, ChildWorkChange, ChildWorkRecord};
use agentrace_core::model::{Actor, Envelope, Role, RunId, RunStatus, Timestamp, Warning};
use agentrace_core::state::{FinalActors, RunState, RunView};
use agentrace_core::warnings::{with_detected, Evidence, WarningConfig};
use agentrace_store::{Home, LogReader};
use serde::Serialize;

use crate::error::ApiError;

/// One index entry every this many envelopes.
pub const INDEX_STRIDE: u64 = 1024;

/// The most envelopes one events request scans (a filter that matches
/// little must not read a huge log in one request: the client continues
/// from `next`).
pub const SCAN_BUDGET: u64 = 50_000;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1000;

/// The page size when none is asked for.
pub const DEFAULT_PAGE: usize = 200;

/// A run log followed from its start: the folded state and where reading
/// stopped.
#[derive(Debug, Clone)]
pub struct LiveRun {
    path: PathBuf,
    state: RunState,
    finals: FinalActors,
    evidence: Evidence,
    child_work: ChildWork,
    /// Bytes folded so far (always the end of a whole line).
    offset: u64,
    /// Lines skipped by the reader so far.
    skipped: u64,
    /// `(first sequence of a stride, byte offset of its line)`, ascending.
    index: Vec<(u64, u64)>,
    envelopes: u64,
}

/// What one [`LiveRun::follow`] read: the new envelopes' count and the
/// record changes they made (the envelopes themselves are streamed to the
/// caller's closure, never kept).
#[derive(Debug, Default)]
pub struct Followed {
    /// Envelopes read.
    pub envelopes: u64,
    /// Child-work record changes, in order.
    pub changes: Vec<ChildWorkChange>,
}

impl LiveRun {
    /// A run not read yet.
    pub fn new(id: RunId, path: PathBuf) -> Self {
        Self {
            path,
            state: RunState::new(id),
            finals: FinalActors::default(),
            evidence: Evidence::default(),
            child_work: ChildWork::new(),
            offset: 0,
            skipped: 0,
            index: Vec::new(),
            envelopes: 0,
        }
    }

    /// Reads the whole lines appended since the last call, folds them, and
    /// hands each new envelope (final actor of the moment applied) to
    /// `each`.
    pub fn follow(&mut self, mut each: impl FnMut(&Envelope)) -> io::Result<Followed> {
        let mut file = File::open(&self.path)?;
        let length = file.metadata()?.len();
        if length < self.offset {
            // The log only grows; a shorter file is another file: start over.
            *self = LiveRun::new(self.state.summary().id, self.path.clone());
        }
        let end = last_line_end(&mut file, self.offset, length)?;
        let mut followed = Followed::default();
        if end <= self.offset {
            return Ok(followed);
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let counter = Counting::new(BufReader::with_capacity(
            64 * 1024,
            file.take(end - self.offset),
        ));
        let position = counter.position.clone();
        let base = self.offset;
        let mut reader = LogReader::new(counter).with_run_id(self.state.summary().id);
        let mut line_start = base;
        for envelope in reader.by_ref() {
            let mut envelope = envelope.map_err(io::Error::other)?;
            if self.envelopes.checked_rem(INDEX_STRIDE) == Some(0) {
                self.index.push((envelope.sequence, line_start));
            }
            self.envelopes += 1;
            line_start = base + position.get();
            self.finals.observe(&envelope);
            self.state.apply(&envelope);
            self.evidence.apply(&envelope);
            followed.changes.extend(self.child_work.apply(&envelope));
            self.finals.apply(&mut envelope);
            each(&envelope);
            followed.envelopes += 1;
        }
        self.skipped += reader.skipped().len() as u64;
        self.offset = end;
        Ok(followed)
    }

    /// `{run, agents, warnings}` as `show --json` prints it: recorded
    /// warnings, the child-work reducer's and the detectors' at `now`.
    pub fn view(&self, config: &WarningConfig, now: Timestamp) -> (RunView, Option<u64>) {
        let mut view = self.state.view();
        view.run.counts.skipped_log_lines = self.skipped;
        for warning in self.child_work.warnings() {
            if !view
                .warnings
                .iter()
                .any(|w: &Warning| w.code == warning.code && w.thread_id == warning.thread_id)
            {
                view.warnings.push(warning.clone());
            }
        }
        with_detected(view, &self.evidence, Some(now), config)
    }

    /// The child-work records; a run that ended has its live records
    /// settled, as at a session end (§6 rule 9).
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        if self.state.status() == RunStatus::Running {
            return self.child_work.records();
        }
        let mut settled = self.child_work.clone();
        let at = self.state.summary().updated_at.unwrap_or_default();
        settled.end_session(at);
        settled.records()
    }

    /// The run status.
    pub fn status(&self) -> RunStatus {
        self.state.status()
    }

    /// The byte offset to start reading at for events after `after`.
    fn seek_point(&self, after: u64) -> u64 {
        let wanted = after.saturating_add(1);
        match self
            .index
            .partition_point(|(sequence, _)| *sequence <= wanted)
        {
            0 => 0,
            at => self.index[at - 1].1,
        }
    }

    /// A page of events after sequence `after` (final actors applied),
    /// filtered. Reads from the index entry before `after`, at most
    /// [`SCAN_BUDGET`] envelopes.
    pub fn page(&self, query: &PageQuery) -> io::Result<Page> {
        let mut file = File::open(&self.path)?;
        let start = self.seek_point(query.after);
        file.seek(SeekFrom::Start(start))?;
        let reader = BufReader::with_capacity(64 * 1024, file.take(self.offset - start));
        let limit = query.limit.clamp(1, MAX_PAGE);
        let needle = query.q.as_ref().map(|q| q.to_lowercase());
        let mut events = Vec::new();
        let mut scanned = 0;
        let mut last_seen = query.after;
        let mut more = false;
        for envelope in LogReader::new(reader).with_run_id(self.state.summary().id) {
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
            self.finals.apply(&mut envelope);
            if !query.actor.keeps(&envelope.actor) {
                continue;
            }
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
            last_sequence: self.state.last_sequence(),
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
                    Arc::new(Mutex::new(LiveRun::new(id.clone(), home.log_path(id))))
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

/// The end of the last whole line at or after `from` (a writer may be in
/// the middle of the last one): scans backwards from the end of the file.
fn last_line_end(file: &mut File, from: u64, length: u64) -> io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = length;
    let mut buffer = vec![0_u8; BLOCK as usize];
    while end > from {
        let start = end.saturating_sub(BLOCK).max(from);
        let size = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buffer[..size])?;
        if let Some(at) = buffer[..size].iter().rposition(|byte| *byte == b'\n') {
            return Ok(start + at as u64 + 1);
        }
        end = start;
    }
    Ok(from)
}

/// A `BufRead` that counts the bytes consumed, so the offset of each line
/// the log reader finishes is known.
struct Counting<R> {
    inner: R,
    position: Rc64,
}

/// A shared counter (the reader owns the adapter; the caller reads it).
#[derive(Debug, Clone, Default)]
struct Rc64(std::rc::Rc<std::cell::Cell<u64>>);

impl Rc64 {
    fn get(&self) -> u64 {
        self.0.get()
    }
}

impl<R> Counting<R> {
    fn new(inner: R) -> Self {
        Self {
            inner,
            position: Rc64::default(),
        }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.position.0.set(self.position.get() + read as u64);
        Ok(read)
    }
}

impl<R: BufRead> BufRead for Counting<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.position.0.set(self.position.get() + amount as u64);
        self.inner.consume(amount);
    }
}
