//! Runs as the server sees them: each log's fold resumed from the snapshot
//! its recorder keeps beside it (see [`agentrace_store::fold`]) or folded
//! from its start when there is none that matches (a long log then gets
//! one, so the next server resumes from it), then followed
//! incrementally (only bytes appended since the last look are read), with
//! a sparse index of byte offsets so a page of events is read from near its
//! start instead of from the top of the file. Memory per run grows with its
//! agents and with one index entry per [`INDEX_STRIDE`] envelopes, never
//! with its events. It must not hold envelopes.
//!
//! Each run is folded once, however many clients watch it: a [`SharedRun`]
//! holds the one fold, and every read of new lines (a request bringing it
//! up to date, or the stream's poller) hands what it read to every stream
//! client through one broadcast ([`Update`]). `/records` and the stream
//! read the same book, so they give the same records.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agentrace_core::childwork::{ChildWorkChange, ChildWorkRecord};
use agentrace_core::model::{Actor, Envelope, Role, RunId, RunStatus, Timestamp};
use agentrace_core::prices::PriceBook;
use agentrace_core::state::RunView;
use agentrace_core::warnings::WarningConfig;
use agentrace_store::raw_ref::Resolver;
use agentrace_store::{Home, LogReader, RunFold, SnapshotMiss, SNAPSHOT_MIN_BYTES};
use serde::Serialize;
use tokio::sync::broadcast;

use crate::error::ApiError;

pub use agentrace_store::{Followed, INDEX_STRIDE};

/// The most envelopes one events request scans (a filter that matches
/// little must not read a huge log in one request: the client continues
/// from `next`).
pub const SCAN_BUDGET: u64 = 50_000;

/// The most events one page returns.
pub const MAX_PAGE: usize = 1000;

/// The most agents an `actor=` refusal lists.
const LISTED_AGENTS: usize = 20;

/// The most of an `actor=` value a refusal repeats.
const ACTOR_NAME_CHARS: usize = 80;

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
    /// A run not read yet: it will be folded from the start of its log,
    /// priced by `prices` (the home's, [`Home::prices`]).
    pub fn new(id: RunId, path: PathBuf, prices: Arc<PriceBook>) -> Self {
        Self {
            path,
            fold: RunFold::priced(id, prices),
            snapshot_to_write: None,
        }
    }

    /// A run resumed from the snapshot at `snapshot` when it matches the log
    /// at `path` (else, and with the reason, one not read yet, which writes
    /// the snapshot once it has folded a log of [`SNAPSHOT_MIN_BYTES`] or
    /// more: the next server need not fold it again).
    pub fn resume(id: RunId, path: PathBuf, snapshot: &Path, prices: Arc<PriceBook>) -> (Self, Option<SnapshotMiss>) {
        match RunFold::load_snapshot(snapshot, &path, &id, &prices) {
            Ok(fold) => (
                Self {
                    path,
                    fold,
                    snapshot_to_write: None,
                },
                None,
            ),
            Err(miss) => {
                let mut run = Self::new(id, path, prices);
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

    /// The child-work records as every reader shows them (the run book's
    /// session rule, [`agentrace_core::book`]).
    pub fn records(&self) -> Vec<ChildWorkRecord> {
        self.fold.records()
    }

    /// What the waterfall of the log as read so far is read with (its
    /// lanes from the view's tree), and the log: read it without holding
    /// the run, so pages of events are not kept waiting.
    pub fn waterfall_source(&self, config: &WarningConfig, now: Timestamp) -> (agentrace_store::WaterfallSource, PathBuf) {
        let view = self.view(config, now).0;
        (agentrace_store::WaterfallSource::of(&self.fold, &view.agents), self.path.clone())
    }

    /// The run book: the one fold of the log as read so far.
    pub fn book(&self) -> &agentrace_core::book::RunBook {
        self.fold.book()
    }

    /// The run status.
    pub fn status(&self) -> RunStatus {
        self.fold.state().status()
    }

    /// Why `actor` keeps no event of this run, when it names an agent
    /// neither of the tree (`view`'s agents) nor of any event read so far
    /// (an actor outside the tree): a 400 that lists the agents, as `events
    /// --actor` refuses it. None when it may keep some, or when the first
    /// [`SCAN_BUDGET`] events cannot tell.
    pub fn names_nothing(&self, actor: &ActorFilter, view: &RunView) -> io::Result<Option<String>> {
        let ActorFilter::Agent(name) = actor else {
            return Ok(None);
        };
        if agentrace_core::state::names_an_agent(&view.agents, name) {
            return Ok(None);
        }
        let probe = self.page(&PageQuery { after: 0, limit: 1, actor: actor.clone(), q: None })?;
        if !probe.events.is_empty() || probe.next.is_some() {
            return Ok(None);
        }
        let agents = agentrace_core::state::every_agent(&view.agents);
        let listed: Vec<String> = agents.iter().take(LISTED_AGENTS).map(|agent| format!("{} ({})", agent.label, agent.thread_id.as_str())).collect();
        let more = agents.len().saturating_sub(LISTED_AGENTS);
        let more = if more > 0 { format!(" and {more} more") } else { String::new() };
        let name: String = name.chars().take(ACTOR_NAME_CHARS).collect();
        Ok(Some(format!(
            "actor={name}: no agent of run {} has this thread id or label; its agents (label, thread id): {}{more}; actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id",
            view.run.id,
            listed.join(", ")
        )))
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
        // The fold's definitions are of the whole log read so far: they
        // decode the v3 lines after any seek point.
        let lines = LogReader::new(reader)
            .with_run_id(self.fold.state().summary().id)
            .with_dictionary(self.fold.dictionary().clone());
        for envelope in lines {
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

/// Which events a page keeps by actor (`actor=` of the API), as `events
/// --actor` keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ActorFilter {
    /// Every event.
    #[default]
    All,
    /// Events of one role (`main`, `helpers`, `unknown`).
    Role(Role),
    /// Events of one agent, by its thread id or its label (final, as
    /// `show` prints it).
    Agent(String),
}

impl ActorFilter {
    /// Parses `all`, `main`/`root`, `helpers`/`helper`, `unknown`, or an
    /// agent's thread id or label.
    pub fn parse(text: Option<&str>) -> Self {
        match text {
            None | Some("" | "all") => ActorFilter::All,
            Some("main" | "root") => ActorFilter::Role(Role::Root),
            Some("helpers" | "helper") => ActorFilter::Role(Role::Helper),
            Some("unknown") => ActorFilter::Role(Role::Unknown),
            Some(agent) => ActorFilter::Agent(agent.to_owned()),
        }
    }

    fn keeps(&self, actor: &Actor) -> bool {
        match self {
            ActorFilter::All => true,
            ActorFilter::Role(role) => actor.role == *role,
            ActorFilter::Agent(agent) => {
                actor.label == *agent || actor.thread_id.as_ref().is_some_and(|id| id.as_str() == agent)
            }
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

/// Updates queued per run for its stream clients before a slow one is
/// told it fell behind.
pub const UPDATES_QUEUED: usize = 1024;

/// What one read of a run's new lines gave, sent to every stream client.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// The new envelopes, final actor of the moment applied.
    pub envelopes: Vec<Envelope>,
    /// The record changes they made, in order.
    pub changes: Vec<ChildWorkChange>,
    /// The read failed: why.
    pub error: Option<String>,
    /// `{run, agents, warnings}` and its warnings as JSON, when the poller
    /// judged the run (each tick: a time-based detector may fire with no
    /// new line); clients send them when they changed.
    pub view: Option<(String, String)>,
}

/// One run's fold, shared by every request and stream client, and the
/// broadcast its new lines go out on.
#[derive(Debug)]
pub struct SharedRun {
    run: Mutex<LiveRun>,
    updates: broadcast::Sender<Arc<Update>>,
    /// A poller follows the log for the stream clients.
    polled: AtomicBool,
    /// The run's log (what the poller watches).
    log: PathBuf,
}

impl SharedRun {
    fn new(run: LiveRun) -> Self {
        Self {
            log: run.path.clone(),
            run: Mutex::new(run),
            updates: broadcast::channel(UPDATES_QUEUED).0,
            polled: AtomicBool::new(false),
        }
    }

    /// The run's log.
    pub fn log_path(&self) -> &std::path::Path {
        &self.log
    }

    /// The id of the price book its fold prices with.
    pub fn prices_id(&self) -> String {
        self.run.lock().map(|run| run.fold.book().prices_id().to_owned()).unwrap_or_default()
    }

    /// The fold, locked.
    pub fn lock(&self) -> Result<std::sync::MutexGuard<'_, LiveRun>, ApiError> {
        self.run.lock().map_err(|_| ApiError::Poisoned)
    }

    /// Reads the lines appended since the last read, folds them, and sends
    /// what they changed to the stream clients (when there are any), with
    /// the run judged by `judge` (the configuration and the time) when
    /// given. Blocking.
    pub fn refresh(&self, judge: Option<(&WarningConfig, Timestamp)>) -> io::Result<()> {
        let mut run = self.run.lock().map_err(|_| io::Error::other("a poisoned lock"))?;
        let watched = self.updates.receiver_count() > 0;
        let mut envelopes = Vec::new();
        let followed = run.follow(|envelope| {
            if watched {
                envelopes.push(envelope.clone());
            }
        });
        // Imported envelopes go out with their frames, as the events page
        // shows them.
        run.show_frames(&mut envelopes);
        match followed {
            Ok(followed) => {
                let view = judge.map(|(config, now)| view_texts(&run.view(config, now).0));
                if watched && (followed.envelopes > 0 || !followed.changes.is_empty() || view.is_some()) {
                    let _ = self.updates.send(Arc::new(Update {
                        envelopes,
                        changes: followed.changes,
                        error: None,
                        view,
                    }));
                }
                Ok(())
            }
            Err(error) => {
                if watched {
                    let _ = self.updates.send(Arc::new(Update {
                        // Its kind, never its text: an error of the store
                        // names the log's path, which is the server's own.
                        error: Some(format!("cannot read the run's log: {}", error.kind())),
                        ..Update::default()
                    }));
                }
                Err(error)
            }
        }
    }

    /// A new stream client: its receiver, and what `start` makes of the
    /// fold as it stands (its catch-up, records and view), taken together
    /// so no update falls between them. Blocking.
    pub fn subscribe<T>(
        &self,
        start: impl FnOnce(&LiveRun) -> T,
    ) -> Result<(broadcast::Receiver<Arc<Update>>, T), ApiError> {
        let run = self.lock()?;
        let receiver = self.updates.subscribe();
        Ok((receiver, start(&run)))
    }

    /// How many stream clients listen.
    pub fn clients(&self) -> usize {
        self.updates.receiver_count()
    }

    /// Claims the poller's job; false when a poller already has it.
    pub fn claim_poller(&self) -> bool {
        self.polled
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The poller stops (no clients left).
    pub fn release_poller(&self) {
        self.polled.store(false, Ordering::Release);
    }
}

/// Every run the server has looked at, followed.
#[derive(Debug, Default)]
pub struct RunCache {
    runs: Mutex<HashMap<RunId, Arc<SharedRun>>>,
}

impl RunCache {
    /// The run, brought up to date with its log, priced by `home`'s price
    /// book (a fold priced by another, the file as it was, is folded
    /// again). Blocking: call from a blocking task.
    pub fn get(&self, home: &Home, id: &RunId) -> Result<Arc<SharedRun>, ApiError> {
        let prices = home.prices();
        let entry = {
            let mut runs = self.runs.lock().map_err(|_| ApiError::Poisoned)?;
            let stale = runs.get(id).is_some_and(|run| run.prices_id() != prices.id());
            if stale {
                runs.remove(id);
            }
            runs.entry(id.clone())
                .or_insert_with(|| {
                    // A miss only costs time: the run is folded from its start.
                    let (run, _miss) =
                        LiveRun::resume(id.clone(), home.log_path(id), &home.snapshot_path(id), Arc::clone(&prices));
                    Arc::new(SharedRun::new(run))
                })
                .clone()
        };
        entry
            .refresh(None)
            .map_err(|error| read_error(id, error))?;
        Ok(entry)
    }
}

/// `{run, agents, warnings}` and its warnings, as JSON.
pub fn view_texts(view: &RunView) -> (String, String) {
    (
        serde_json::to_string(view).unwrap_or_default(),
        serde_json::to_string(&view.warnings).unwrap_or_default(),
    )
}

/// An I/O error of a run's log: a missing file is a missing run. It names
/// the run, never the log's path (the server's folders are its own).
pub fn read_error(id: &RunId, error: io::Error) -> ApiError {
    if error.kind() == io::ErrorKind::NotFound {
        ApiError::NotFound(format!("run {id} has no log"))
    } else {
        ApiError::Internal(format!("cannot read the log of run {id}: {}", error.kind()))
    }
}
