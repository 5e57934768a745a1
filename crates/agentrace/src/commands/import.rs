//! `agentrace import`: turns the sessions already on disk into attributed
//! runs: Codex rollouts (a root's file and its children's, joined through
//! `session_meta…thread_spawn.parent_thread_id`) and Claude Code transcripts
//! (a session and its subagents' files). Incremental: a session whose files
//! did not change (size and modification time) is not read again; one whose
//! files only grew is read on from where the last import stopped, in the one
//! order every reading of a session uses ([`crate::sources::session_feed`]), so it
//! ends as an import of the finished files would make it; any other change
//! reads it again whole (a file that shrank is said so). What an
//! import keeps between runs (each session's files, stamps and offsets,
//! each rollout's head, each run's usage and text) is in the catalog
//! ([`agentrace_store::catalog`]), written in transactions.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::IsTerminal as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentrace_core::model::{Event, EventBody, RunId, SessionEndReason, Timestamp};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::RunView;
use agentrace_core::{Envelope, Recorder};
use agentrace_store::raw_ref::CopyWriter;
use agentrace_store::{Home, RunFiles};
use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::recording::{Cadence, Finished, Recording, Setup, TextsTo};
use crate::sources::claude_ingest::{claude_config_dir, claude_cwd, claude_first_time, claude_start, first_time, FoundSession};
use crate::sources::codex_sessions::{CodexSessions, Packer, Rest, HEADS_CHUNK};
use crate::clock::now;
use crate::sources::dirs::DirCache;
use crate::sources::rollouts::{codex_start, rollout_head_or_why, rollout_parts, RolloutHead, RolloutWalk};
use crate::sources::session_feed::{fed_whole, FeedPosition, Reach, ReadMark, SessionFeed, Sink, TornLines};
use crate::sources::stamps::FileStamp;
use crate::usage_index::{Kept, LogStamp, UsageIndex};
use agentrace_store::catalog::{files_digest, FilesDigest, HeadRow, ImportedFile, ImportedSession, ReadRow, TextRow};
use agentrace_store::Catalog;

/// Arguments of `agentrace import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Codex home to read (`sessions/` and `archived_sessions/`; default:
    /// `$CODEX_HOME`, else `~/.codex`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Claude Code config dir to read (`projects/`; default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Only sessions started on or after this day (of `--tz`):
    /// `YYYY-MM-DD`, `YYYYMMDD`, `today`, `yesterday`, `7d` (days ago) or
    /// `2w` (weeks ago).
    #[arg(long, value_name = "D", value_parser = crate::day_range::parse_day)]
    since: Option<crate::day_range::DayArg>,
    /// The time zone of `--since`'s day: `UTC`, `local` (this machine's), a
    /// name like `Europe/Paris`, or an offset like `+05:30`. Default:
    /// `$AGENTRACE_TZ`, else UTC.
    #[arg(long, value_name = "ZONE", value_parser = crate::zone::parse_zone)]
    tz: Option<crate::zone::Zone>,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
    /// Print what the import did as JSON on stdout (`{"new", "changed",
    /// "readOn", "unchanged", "runs", "codexHome", "claudeDir"}`), not the
    /// summary line on stderr.
    #[arg(long)]
    json: bool,
    /// Also export each run this import records or rebuilds to an
    /// OpenTelemetry collector (OTLP over HTTP; the base endpoint, as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, `/v1/traces` is appended).
    #[arg(long, value_name = "ENDPOINT", num_args = 0..=1, default_missing_value = "")]
    otlp: Option<String>,
    /// Also keep a compressed copy of every line read (`<run>.raw.gz`
    /// beside each run), so `events --raw` shows the frames after the
    /// sources are gone. By default an imported run only references its
    /// sources (`rawRef`).
    #[arg(long)]
    keep_raw: bool,
    /// A session whose files have all been still this long, yet not over by
    /// its own signals (its root's turn, or a child, still open: a crash, a
    /// killed agent), is over: its log gets `session_ended` (reason
    /// `importFinished`) at its last line's time, and what was live settles
    /// `unknown`. As `watch --idle-limit`.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_LIMIT)]
    idle_limit: u64,
    /// The moment the idle limit is judged at (none: the clock's, at each
    /// session). `watch`'s first pass judges at the moment the watch
    /// began: a session reaching the limit after that is the watch's to
    /// end and tell, however late the pass comes.
    #[arg(skip)]
    idle_judged_at: Option<Timestamp>,
}

/// How long a session's files stay still before an import (or `watch`)
/// ends what is live in it, seconds.
pub const DEFAULT_IDLE_LIMIT: u64 = 600;

impl ImportArgs {
    /// The arguments of an import of these homes (each, when not given,
    /// found as `import` finds it), with nothing said on stderr.
    pub(crate) fn quiet_of(codex_home: Option<PathBuf>, claude_dir: Option<PathBuf>) -> Self {
        Self { codex_home, claude_dir, since: None, tz: Some(crate::zone::Zone::utc()), quiet: true, json: false, otlp: None, keep_raw: false, idle_limit: DEFAULT_IDLE_LIMIT, idle_judged_at: None }
    }

    /// These arguments, with another idle limit (`watch --idle-limit`).
    pub(crate) fn with_idle_limit(self, idle_limit: u64) -> Self {
        Self { idle_limit, ..self }
    }

    /// How long, in seconds, a session's files must be still for an
    /// import to end what it leaves open.
    pub(crate) fn idle_limit(&self) -> u64 {
        self.idle_limit
    }

    /// These arguments, judging the idle limit at `at` rather than at the
    /// clock's now (`watch`'s first pass: at the moment the watch began).
    pub(crate) fn with_idle_judged_at(self, at: Timestamp) -> Self {
        Self { idle_judged_at: Some(at), ..self }
    }

    /// The moment a session's files are judged still at: the one given,
    /// else now.
    fn idle_judged_at(&self) -> Timestamp {
        self.idle_judged_at.unwrap_or_else(now)
    }

    /// Whether files stamped `stamps` are still for the idle limit, judged
    /// at [`ImportArgs::idle_judged_at`] ([`still_for`]).
    fn still(&self, stamps: &BTreeMap<String, FileStamp>) -> bool {
        still_for(stamps, self.idle_limit, self.idle_judged_at())
    }

    /// True when the import prints what it did as JSON (`--json`).
    pub(crate) fn json(&self) -> bool {
        self.json
    }

    /// These arguments, with the progress bar and summary as `quiet` says.
    pub(crate) fn with_quiet(self, quiet: bool) -> Self {
        Self { quiet, ..self }
    }

    /// The Codex home this import reads, if any.
    pub(crate) fn codex_home(&self) -> Option<PathBuf> {
        codex_home(self)
    }

    /// The Claude config dir this import reads, if any.
    pub(crate) fn claude_dir(&self) -> Option<PathBuf> {
        claude_dir(self)
    }

    /// Where this import reads from, as its summary says it: `Codex from
    /// DIR, Claude from DIR` (`nowhere` for a home there is none of).
    fn read_from(&self) -> String {
        // A home that is not there is said so: a user of one agent read
        // "Codex from ~/.codex" of a folder they never had, as if it had
        // been read (one named on the command line is also warned of).
        let shown = |dir: Option<PathBuf>| match dir {
            Some(dir) if dir.is_dir() => dir.display().to_string(),
            Some(dir) => format!("{} (not there)", dir.display()),
            None => "nowhere".to_owned(),
        };
        format!("Codex from {}, Claude from {}", shown(self.codex_home()), shown(self.claude_dir()))
    }

    /// What a follower importing with these arguments follows, in the
    /// words its lease keeps and an import compares; `None` for an import a
    /// follower does not do (from a day, keeping copies, exporting).
    pub(crate) fn followed_as(&self) -> Option<String> {
        if self.since.is_some() || self.keep_raw || self.otlp.is_some() {
            return None;
        }
        let shown = |dir: Option<PathBuf>| dir.map(|dir| dir.display().to_string()).unwrap_or_default();
        // The folders watched too: an archive folder made after the follower
        // began is one it does not watch.
        let folders: String = self.followed_folders().iter().map(|folder| format!("\nfollows {}", folder.display())).collect();
        Some(format!("codex {}\nclaude {}\nidle {}{folders}", shown(self.codex_home()), shown(self.claude_dir()), self.idle_limit))
    }

    /// The folders a follower of these arguments watches (recursively):
    /// each home's sessions folder (and Codex's archived sessions, when
    /// there), or the home itself while that folder is not there yet (so
    /// it is seen when it comes).
    pub(crate) fn followed_folders(&self) -> Vec<PathBuf> {
        let mut folders = Vec::new();
        for (home, inner) in [(self.codex_home(), "sessions"), (self.claude_dir(), "projects")] {
            let Some(home) = home else { continue };
            let inside = home.join(inner);
            if inside.is_dir() {
                folders.push(inside);
                let archived = home.join("archived_sessions");
                if inner == "sessions" && archived.is_dir() {
                    folders.push(archived);
                }
            } else if home.is_dir() {
                folders.push(home);
            }
        }
        folders
    }
}

/// One imported session: its run and its files.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Imported {
    run_id: String,
    files: BTreeMap<String, FileRecord>,
    /// The length of the run's log when this was written: a log that is
    /// not that long any more was written by an import whose state was
    /// lost (interrupted before its last save), and reading on from these
    /// marks would append lines it already has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    log: Option<u64>,
    /// The run's lines were fed merged in time order, as every import now
    /// feeds them ([`crate::sources::session_feed`]): the run of an older import,
    /// fed file after file, is rebuilt when its session grows, not read
    /// on (its log would not begin as the replay of its files does).
    #[serde(default)]
    merged: bool,
    /// Read while its files were young and left without its end (see
    /// [`ImportedSession::open`]).
    #[serde(default)]
    open: bool,
}

/// One file of an imported session: its stamp then, and where its reading
/// stopped (none for a run recorded live, or by an older import: its
/// session is then read again whole when it changes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileRecord {
    size: u64,
    modified_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    read: Option<ReadMark>,
}

impl FileRecord {
    fn is(&self, stamp: &FileStamp) -> bool {
        self.size == stamp.size && self.modified_ns == stamp.modified_ns
    }
}

impl Imported {
    /// As the catalog keeps it.
    fn to_row(&self) -> ImportedSession {
        ImportedSession {
            run_id: self.run_id.clone(),
            log: self.log,
            merged: self.merged,
            open: self.open,
            files: self
                .files
                .iter()
                .map(|(path, file)| {
                    let read = file.read.map(|mark| ReadRow { offset: mark.offset, lines: mark.lines, torn: mark.torn, number: mark.number });
                    (path.clone(), ImportedFile { size: file.size, modified_ns: file.modified_ns, read })
                })
                .collect(),
        }
    }

    /// As the catalog kept it.
    fn of_row(row: ImportedSession) -> Self {
        Self {
            run_id: row.run_id,
            log: row.log,
            merged: row.merged,
            open: row.open,
            files: row
                .files
                .into_iter()
                .map(|(path, file)| {
                    let read = file.read.map(|read| ReadMark { offset: read.offset, lines: read.lines, torn: read.torn, number: read.number });
                    (path, FileRecord { size: file.size, modified_ns: file.modified_ns, read })
                })
                .collect(),
        }
    }
}

/// The catalog, shared by the import's threads, locked.
fn locked(catalog: &std::sync::Mutex<Catalog>) -> anyhow::Result<std::sync::MutexGuard<'_, Catalog>> {
    catalog.lock().map_err(|_| anyhow::anyhow!("the catalog's lock was poisoned"))
}

/// The catalog's name for a provider's sessions.
const CODEX: &str = "codex";
const CLAUDE: &str = "claude";

/// The rollouts `walk` lists, grouped as
/// [`codex_sessions`](crate::sources::codex_sessions::codex_sessions) does,
/// reading a rollout's head (on every core) only when its stamp differs
/// from the one the catalog keeps. The catalog is updated as the walk goes:
/// a head read anew is put, one of a rollout no longer there removed (an
/// import that found nothing changed writes nothing).
/// `whole`: the walk is of the whole Codex home, so a kept head it did not
/// list is of a rollout gone, and is forgotten (not so for the rollouts of
/// the sessions a watcher saw written).
/// Also returns why each rollout left out had no head (unreadable, a first
/// line that is no `session_meta`): a root left out so made its children
/// runs of their own, with no word of it.
fn codex_sessions_known(walk: impl Iterator<Item = (PathBuf, Option<FileStamp>)>, catalog: &std::sync::Mutex<Catalog>, whole: bool) -> anyhow::Result<(CodexSessions, Vec<String>)> {
    /// A listed rollout and the head the catalog keeps for it (if any).
    struct Listed {
        path: PathBuf,
        key: String,
        stamp: FileStamp,
        known: Option<HeadRow>,
    }
    impl Listed {
        fn is_known(&self) -> bool {
            self.known.as_ref().is_some_and(|head| head.size == self.stamp.size && head.modified_ns == self.stamp.modified_ns)
        }
    }
    let lock = || locked(catalog);
    // The whole walk reads every kept head at once; a few rollouts, theirs.
    let mut known = if whole { lock()?.rollout_heads()? } else { agentrace_store::FastMap::default() };
    let mut packer = Packer::default();
    // One that vanished since the listing (no stamp) is left out.
    let mut walk = walk.filter_map(|(path, stamp)| Some((path, stamp?)));
    let mut window: Vec<Listed> = Vec::new();
    let mut new_heads: Vec<(String, HeadRow)> = Vec::new();
    let mut headless: Vec<String> = Vec::new();
    loop {
        // The heads to read are read together; the window is bounded.
        let mut unknown: Vec<PathBuf> = Vec::new();
        while unknown.len() < HEADS_CHUNK && window.len() < 4 * HEADS_CHUNK {
            let Some((path, stamp)) = walk.next() else { break };
            let key = path.to_string_lossy().into_owned();
            let head = if whole { known.remove(&key) } else { lock()?.rollout_head(&key)? };
            let listed = Listed { path, key, stamp, known: head };
            if !listed.is_known() {
                unknown.push(listed.path.clone());
            }
            window.push(listed);
        }
        if window.is_empty() {
            break;
        }
        let mut read = crate::parallel::map(&unknown, |path| Ok(rollout_head_or_why(path)))?.into_iter();
        for listed in window.drain(..) {
            if listed.is_known() {
                let Some(head) = &listed.known else { continue };
                let rest = Rest {
                    depth: head.depth,
                    started: head.started,
                    stamp: Some(listed.stamp),
                };
                packer.push(&listed.path, &head.thread, head.parent.as_deref(), &rest)?;
            } else if let Some(head) = read.next().and_then(|head| head.map_err(|why| headless.push(why)).ok()).flatten() {
                new_heads.push((
                    listed.key.clone(),
                    HeadRow {
                        size: listed.stamp.size,
                        modified_ns: listed.stamp.modified_ns,
                        thread: head.thread.clone(),
                        parent: head.parent.clone(),
                        depth: head.depth,
                        started: head.started,
                    },
                ));
                packer.push_head(&RolloutHead { stamp: Some(listed.stamp), ..head })?;
            } else if listed.known.is_some() {
                // Known once, unreadable now.
                known.insert(listed.key, HeadRow { size: 0, modified_ns: 0, thread: String::new(), parent: None, depth: 0, started: None });
            }
        }
    }
    if !new_heads.is_empty() || !known.is_empty() {
        let catalog = lock()?;
        catalog.begin()?;
        for (path, head) in &new_heads {
            catalog.put_rollout_head(path, head)?;
        }
        // What is left of the kept heads are rollouts gone.
        for path in known.keys() {
            catalog.remove_rollout_head(path)?;
        }
        catalog.commit()?;
    }
    Ok((packer.group()?, headless))
}

fn stamp(path: &Path) -> anyhow::Result<FileStamp> {
    let metadata = fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(FileStamp::of(&metadata))
}

/// How to read on a session whose files grew.
#[derive(Debug, Clone)]
struct ReadOn {
    /// Where the last import stopped in each file known then.
    marks: BTreeMap<String, ReadMark>,
    /// The files unchanged since.
    unchanged: std::collections::BTreeSet<String>,
    /// Every file as the last import left it: read on only to end the
    /// session, its files still for the idle limit (no line is new).
    only_to_end: bool,
}

/// What changed in a session's files since the last import.
enum Change {
    Same,
    New,
    /// Files only grew (or were added) since a reading that stopped at
    /// their ends: read on from the marks (a file not in them, whole).
    Grew(ReadOn),
    /// Read again whole (`shrank` names the files that got shorter,
    /// `gone` those read before and now gone).
    Changed { shrank: Vec<String>, gone: Vec<String> },
    /// Files read before are gone (deleted, as Claude Code's cleanup
    /// deletes old transcripts one file at a time), and the rest is as the
    /// last import left it: the run keeps what it had, rather than being
    /// read again without them.
    Gone(Vec<String>),
}

/// `still`: whether the files `now` are still for the idle limit.
fn compare(previous: Option<&Imported>, now: &BTreeMap<String, FileStamp>, still: bool) -> Change {
    let Some(previous) = previous else {
        return Change::New;
    };
    let same = |path: &String, stamp: &FileStamp| previous.files.get(path).is_some_and(|old| old.is(stamp));
    // Every file as the last import left it.
    let as_left = previous.files.len() == now.len() && now.iter().all(|(path, stamp)| same(path, stamp));
    // A session read young and left open is read on (from its ends: no
    // line more) once its files are still, to be ended: unchanged files
    // alone never would have.
    if as_left && !(previous.open && still) {
        return Change::Same;
    }
    // A file moved (a rollout archived keeps its name) is read again
    // where it is now: only a file with no namesake left is gone.
    let names: std::collections::BTreeSet<&std::ffi::OsStr> = now.keys().filter_map(|path| Path::new(path).file_name()).collect();
    let gone: Vec<String> = previous
        .files
        .keys()
        .filter(|path| !now.contains_key(*path) && Path::new(path).file_name().is_none_or(|name| !names.contains(name)))
        .cloned()
        .collect();
    if !gone.is_empty() && now.iter().all(|(path, stamp)| same(path, stamp)) {
        return Change::Gone(gone);
    }
    let shrank: Vec<String> = now
        .iter()
        .filter(|(path, stamp)| previous.files.get(*path).is_some_and(|old| stamp.size < old.size))
        .map(|(path, _)| path.clone())
        .collect();
    // Reading on is right only when every file known before is still there,
    // was read up to a line's end (no torn line fed as it was), and has only
    // grown since, past where the reading stopped. That is not always the
    // stamp's size: lines appended between the stat and the read are read
    // too (the mark is past the stamp), and a follower leaves a line still
    // being written for the next pass (the mark is short of it). Either
    // made the next pass of a live session rebuild it whole.
    let grew = shrank.is_empty()
        && previous.merged
        && previous.files.iter().all(|(path, old)| {
            let (Some(stamp), Some(mark)) = (now.get(path), old.read) else {
                return false;
            };
            old.is(stamp) || (stamp.size > old.size && stamp.size >= mark.offset && !mark.torn)
        });
    if grew {
        Change::Grew(ReadOn {
            marks: previous.files.iter().filter_map(|(path, old)| Some((path.clone(), old.read?))).collect(),
            unchanged: previous.files.iter().filter(|(path, old)| now.get(*path).is_some_and(|stamp| old.is(stamp))).map(|(path, _)| path.clone()).collect(),
            only_to_end: as_left,
        })
    } else {
        Change::Changed { shrank, gone }
    }
}

fn codex_home(args: &ImportArgs) -> Option<PathBuf> {
    let dir = args.codex_home.clone().or_else(|| {
        std::env::var_os("CODEX_HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs_home().map(|home| home.join(".codex")))
    });
    dir.map(crate::sources::from_the_root)
}

fn claude_dir(args: &ImportArgs) -> Option<PathBuf> {
    args.claude_dir.clone().or_else(claude_config_dir).map(crate::sources::from_the_root)
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The start of `--since`'s day, in `--tz` (else `AGENTRACE_TZ`'s zone).
fn since(args: &ImportArgs) -> anyhow::Result<Option<Timestamp>> {
    let zone = crate::zone::given_or_env(args.tz.as_ref());
    Ok(crate::day_range::range(args.since.as_ref(), None, zone)?.since)
}

/// The import's progress on stderr: until every session is counted (Codex's
/// are listed while Claude's are imported) a count alone, `importing
/// sessions: 3 done, counting the rest`, and a bar with its total only
/// once that total is final ([`whole_progress`]): a bar drawn at 5/5
/// that fell back to 5/10 when Codex's sessions were added went backwards.
fn progress(args: &ImportArgs, counted: u64) -> indicatif::ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(counted);
    if let Ok(style) = indicatif::ProgressStyle::with_template("{prefix} sessions: {pos} done, counting the rest {msg}") {
        bar.set_style(style);
    }
    bar.set_prefix("importing");
    bar
}

/// Adds the sessions counted last to `bar`'s total, now final, and shows
/// it as a bar.
fn whole_progress(bar: &indicatif::ProgressBar, more: u64) {
    bar.inc_length(more);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} sessions {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
}

/// Sessions rebuilt together on every core.
const BATCH: usize = 64;

/// How often an import's progress is saved (an interrupted import resumes
/// from the last save): the tables' new lines are flushed and kept as
/// their saved parts. By time, not by count, from when the state was one
/// file rewritten whole (every 64 sessions, that made a large import
/// quadratic); a save is cheap now, but a few seconds of work is all an
/// interruption costs.
const SAVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// A session whose run is to be rebuilt, or continued.
struct Job {
    /// Its key in the import state.
    key: String,
    id: RunId,
    /// The run's files when the import started.
    files: RunFiles,
    stamps: BTreeMap<String, FileStamp>,
    source: JobSource,
    /// Where the last import stopped, to continue the run from there;
    /// `None` rebuilds it whole.
    read_on: Option<ReadOn>,
    /// Its files have all been still for the idle limit (decided once, so
    /// the run and the import state agree on it).
    still: bool,
    /// Counted as a new session (else as a changed one): what to take back
    /// from the tally when it is left out.
    new: bool,
    /// The reading the last import left the session open at, when it is
    /// read on ([`KeptReading`], as the catalog keeps it).
    kept: Option<String>,
}

impl Job {
    /// How to read on after `change`, if it allows.
    fn read_on(change: Change) -> Option<ReadOn> {
        match change {
            Change::Grew(read_on) => Some(read_on),
            _ => None,
        }
    }
}

/// How an import left a session's run: its log's length, and whether it
/// was left open (read young, see [`ImportedSession::open`]).
struct Left {
    log: Option<u64>,
    open: bool,
}

/// Where a rebuilt run's lines come from.
enum JobSource {
    Codex(Vec<RolloutHead>),
    Claude(crate::sources::claude_ingest::SessionFiles),
}

/// True when every one of a session's files had been still for
/// `idle_limit` seconds at `at` (by their modification times): nothing
/// more is coming, so what its log leaves open is over.
fn still_for(stamps: &BTreeMap<String, FileStamp>, idle_limit: u64, at: Timestamp) -> bool {
    let at_ns = u64::try_from(at.millis()).unwrap_or(0).saturating_mul(1_000_000);
    let limit_ns = idle_limit.saturating_mul(1_000_000_000);
    !stamps.is_empty() && stamps.values().all(|stamp| at_ns.saturating_sub(stamp.modified_ns) >= limit_ns)
}

/// How an import records a run: batch by batch, never synced, its text
/// handed back for the catalog, and no trace context (it is the
/// importing process's, not the session's).
fn imported_setup(format: Format) -> Setup {
    Setup::new(format).cadence(Cadence::Import).texts(TextsTo::Caller).without_traceparent()
}

/// A run written: its view, where the reading of each file stopped, its
/// searchable text, and how many lines of each file this reading could not
/// decode.
type Written = (RunView, BTreeMap<String, ReadMark>, Vec<TextRow>, Undecodable, Option<String>);

/// The lines of each file a reading could not decode (kept as
/// `undecodable` events), by the name the events give the file.
type Undecodable = BTreeMap<String, std::collections::BTreeSet<u64>>;

/// `sink`, noting on the way the `undecodable` events of each file (as
/// the feed names it) into `undecodable`.
fn counting<'s>(sink: Sink<'s>, undecodable: &'s mut Undecodable) -> impl FnMut(Vec<Envelope>) -> anyhow::Result<()> + 's {
    move |batch| {
        for envelope in &batch {
            if let EventBody::Known(Event::Unknown { kind, file: Some(file), line_number, .. }) = &envelope.event {
                if kind == agentrace_core::model::UNDECODABLE {
                    undecodable.entry(file.clone()).or_default().insert(line_number.unwrap_or_default());
                }
            }
        }
        sink(batch)
    }
}

/// `undecodable` without the last line of a file still being written (its
/// session's files younger than the idle limit): a line with no newline
/// yet is read as it is, and read again whole once its newline comes, so
/// it is no damage to warn of (an `import` while Claude Code or Codex was
/// writing said "1 line … could not be read"). The torn last line of a
/// session still for the idle limit is damage, and is said.
fn without_lines_being_written(mut undecodable: Undecodable, marks: &BTreeMap<String, ReadMark>, still: bool) -> Undecodable {
    if still {
        return undecodable;
    }
    for (path, mark) in marks.iter().filter(|(_, mark)| mark.torn) {
        let name = agentrace_store::raw_ref::source_name(Path::new(path));
        if let Some(lines) = undecodable.get_mut(&name) {
            // A torn mark's line count ends at the torn line.
            lines.remove(&mark.lines);
        }
    }
    undecodable.retain(|_, lines| !lines.is_empty());
    undecodable
}

/// What the catalog indexes of an imported run: its view, with the run as
/// its record has it (its warnings counted as `show` counts them, by the
/// home's config), not the recorder's state alone, which knows only the
/// warnings raised while recording: the list said 0 for a run `show`
/// gave warnings.
fn indexed_view(finished: &crate::recording::Finished) -> RunView {
    RunView { run: finished.summary.clone(), ..finished.recorder.state().view() }
}

/// A job done: its run's view, marks, whether it was read on (not
/// rebuilt), and its text.
type JobRead = (RunView, BTreeMap<String, ReadMark>, bool, Vec<TextRow>, Undecodable, Option<String>);

/// A session read on the pool (its run written), with what noting it in
/// the catalog takes made there too.
struct JobDone {
    view: RunView,
    /// Where the reading of each of its files stopped.
    marks: BTreeMap<String, ReadMark>,
    /// Read on from where the last import stopped (not rebuilt).
    read_on: bool,
    texts: Vec<TextRow>,
    /// How many lines of each file this reading could not decode.
    undecodable: Undecodable,
    /// Its log's stamp as written, and its usage as the catalog keeps it
    /// (`None`: the log could not be stat'ed).
    usage: Option<(LogStamp, Kept)>,
    /// The reading it was left open at, for the next import to go on from
    /// ([`KeptReading`]); `None` for a session ended (or read by a
    /// follower, which keeps its readings itself).
    reading: Option<String>,
}

/// What became of a job: its run read, or its session left out of this
/// import because one of its files cannot be opened now (unreadable,
/// gone since it was listed), its run as the last import left it.
enum JobOutcome {
    Read(Box<JobDone>),
    Unreadable(anyhow::Error),
    /// A Claude session to read whole whose main file names no time yet:
    /// left, unsaid, for an import that finds one (its run's start would
    /// be the clock's, so a session read in pieces would not end as one
    /// read whole).
    NotYet,
}

/// Counts of one import.
#[derive(Debug, Default)]
struct Tally {
    recorded: u64,
    updated: u64,
    /// Of the updated, those read on from where the last import stopped.
    read_on: u64,
    /// Of those read on, the ones read only to be ended: no file changed,
    /// all still for the idle limit (the user changed nothing of them).
    only_ended: u64,
    unchanged: u64,
    /// Of the recorded, those whose run was there already: imported
    /// before and read again whole (under another attribution, or with the
    /// import's state lost), not new to the user.
    read_again: u64,
    /// Sessions left out because a file of theirs could not be opened.
    left_out: u64,
    /// Lines read that could not be decoded (kept as `undecodable` events).
    undecodable: u64,
}

/// True for the id of a run an import makes (`codex-<root>`,
/// `claude-<session>`), not one recorded live.
fn made_by_import(id: &str) -> bool {
    imported_session_of(id).is_some()
}

/// The runs folder as the import found it: the files of each run, by id
/// (one listing, not a stat per session; a few dozen bytes per run); or,
/// for an import of a few sessions, each run's files looked at when asked
/// (not a listing of thousands).
enum RunsListing<'a> {
    Listed(agentrace_store::FastMap<String, RunFiles>),
    Asked(&'a Home),
}

impl<'a> RunsListing<'a> {
    /// Lists `home`'s runs folder (empty when it is not there): as the
    /// last import kept the listing, when the folder is as it was then
    /// (listing thousands of runs was a tenth of a repeated import).
    fn of(home: &Home, dirs: &DirCache) -> anyhow::Result<Self> {
        let runs_dir = home.runs_dir();
        let kept = nix::sys::stat::stat(&runs_dir).ok().and_then(|folder| dirs.entries(&runs_dir, &folder).ok());
        Ok(Self::Listed(match kept {
            Some(entries) => agentrace_store::run_files_named(entries.iter().map(|(name, _)| name)),
            None => home.list_run_files(),
        }))
    }

    /// The files run `id` had.
    fn files_of(&mut self, id: &RunId) -> anyhow::Result<RunFiles> {
        Ok(match self {
            Self::Listed(runs) => runs.get(id.as_str()).copied().unwrap_or_default(),
            Self::Asked(home) => home.run_files(id),
        })
    }

    /// The ids of the runs not made by an import that have a log (the
    /// folder is listed now, if it was not).
    fn live_ids(&mut self) -> impl Iterator<Item = &str> {
        if let Self::Asked(home) = self {
            *self = Self::Listed(home.list_run_files());
        }
        let runs = match self {
            Self::Listed(runs) => Some(runs),
            Self::Asked(_) => None,
        };
        runs.into_iter().flatten().filter(|(id, files)| files.log && !made_by_import(id)).map(|(id, _)| id.as_str())
    }
}

/// The bookkeeping of one import: what changed, what was done, the bar.
struct Importer<'a> {
    home: &'a Home,
    args: &'a ImportArgs,
    /// The catalog: the last import's sessions, and where this one's go
    /// (shared with the walk of the Codex home).
    catalog: &'a std::sync::Mutex<Catalog>,
    tally: Tally,
    bar: indicatif::ProgressBar,
    /// When the state was last saved, and whether it changed since.
    last_save: std::time::Instant,
    unsaved: bool,
    /// The runs folder when the import started (one listing, not a stat
    /// per session).
    runs: RunsListing<'a>,
    /// What becomes of a last line with no newline yet, and the follower's
    /// readings kept between its passes.
    how: Pass<'a>,
    /// The runs recorded or changed, in the order they were noted.
    changed: Vec<RunId>,
    /// The last import's sessions, read a page at a time.
    pages: KnownPages,
    /// The batch the pool last read, noted while the pool reads the next
    /// (see [`Importer::run_jobs`]).
    read: Option<(Vec<Job>, Vec<JobOutcome>)>,
    /// Digests of unchanged sessions' files to keep, for rows kept without
    /// the right one (by an older agentrace), written with the last save.
    digests: Vec<(&'static str, String, FilesDigest)>,
    /// How much of a session must have been read for its reading to be
    /// kept ([`keep_readings_from`]).
    keep_readings_from: u64,
}

/// What reading a session's files into its run takes, and nothing of the
/// import's bookkeeping: the pool reads one batch with it while the
/// import's thread notes the batch before.
#[derive(Clone, Copy)]
struct Reading<'a> {
    home: &'a Home,
    args: &'a ImportArgs,
    /// What becomes of a last line with no newline yet, and the follower's
    /// readings kept between its passes.
    how: Pass<'a>,
    /// See [`Importer::keep_readings_from`].
    keep_readings_from: u64,
}

/// How one import reads: what becomes of a last line with no newline yet,
/// and, in a follower, the readings its last pass left to go on with.
#[derive(Clone, Copy)]
struct Pass<'a> {
    torn_lines: TornLines,
    resumes: Option<&'a Resumes>,
}

impl Pass<'_> {
    fn of(torn_lines: TornLines) -> Self {
        Self { torn_lines, resumes: None }
    }
}

/// The readings a follower (`watch`, `top`, `serve --watch`) keeps between
/// its passes: each session a pass read on and left open, with its
/// recorder and its files' readers where the pass stopped. The next pass
/// of that session goes on from them instead of feeding the session's
/// files again from their start up to the marks (see
/// [`Reading::continue_run`]): that replay made every pass of a long live
/// session cost its whole size (a 59 MB transcript gaining a line every
/// 100 ms kept both cores busy). Only a reading that stopped exactly at the
/// marks the catalog now holds is gone on from, so a run another process
/// read on or rebuilt meanwhile is replayed as before.
#[derive(Default)]
pub(crate) struct Resumes {
    kept: std::sync::Mutex<Vec<(RunId, Resume)>>,
    /// Readings gone on from (what a test counts).
    gone_on: std::sync::atomic::AtomicU64,
}

/// Where a one-shot import left a session open, kept in the catalog
/// (`import_readings`) for the next import to go on from: the files'
/// marks it stopped at, the feed's position there and the recorder's
/// state. Feeding the files again up to the marks made every import of a
/// long live session cost its whole size (a second for 60 MB); a reading
/// whose marks are not the ones the session is read on from, or that
/// cannot be restored, is not used, and the files are fed again.
#[derive(serde::Serialize, serde::Deserialize)]
struct KeptReading {
    marks: BTreeMap<String, ReadMark>,
    feed: FeedPosition,
    recorder: Box<serde_json::value::RawValue>,
}

/// One session's reading kept by [`Resumes`].
struct Resume {
    recorder: Recorder,
    feed: SessionFeed,
    /// The session's parts as the reading was given them.
    parts: Vec<(SourcePart, PathBuf)>,
    /// Where the reading stopped.
    marks: BTreeMap<String, ReadMark>,
}

/// How many sessions' readings a follower keeps (the most recently read
/// on): each holds its recorder's state and a reader per file.
const RESUMES_KEPT: usize = 16;

impl Resumes {
    /// The reading of run `id` kept when it stopped at `marks` over
    /// `parts`; taken, so a reading that fails is never gone on from.
    fn take(&self, id: &RunId, parts: &[(SourcePart, PathBuf)], marks: &BTreeMap<String, ReadMark>) -> Option<(Recorder, SessionFeed)> {
        let mut kept = self.kept.lock().ok()?;
        let at = kept.iter().position(|(kept_id, _)| kept_id == id)?;
        let (_, resume) = kept.remove(at);
        let fits = resume.parts == parts && &resume.marks == marks;
        if fits {
            self.gone_on.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        fits.then_some((resume.recorder, resume.feed))
    }

    /// Keeps the reading of run `id` (the newest first).
    fn keep(&self, id: RunId, resume: Resume) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.retain(|(kept_id, _)| *kept_id != id);
            kept.insert(0, (id, resume));
            kept.truncate(RESUMES_KEPT);
        }
    }

    /// Forgets the reading of run `id` (rebuilt, or ended).
    fn forget(&self, id: &RunId) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.retain(|(kept_id, _)| kept_id != id);
        }
    }

    /// How many readings were gone on from.
    #[cfg(test)]
    pub(crate) fn gone_on(&self) -> u64 {
        self.gone_on.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// How many of the last import's sessions are read at a time.
const KNOWN_PAGE: usize = 256;

/// The last import's sessions of one provider, a page at a time, each
/// without its files but with their digest: the import asks for them in
/// key order, and a key on the page read last is answered from it. The
/// page stands for every key from the one it was read from up to its last
/// (to the end, when it was not full), so a key it lacks was not kept. A
/// key asked out of order, or a second time (its row may have been
/// written since), is read on its own.
#[derive(Debug, Default)]
struct KnownPages {
    provider: &'static str,
    from: String,
    /// The page's last key, when it was full (`None`: it reaches the end).
    to: Option<String>,
    page: Vec<(String, Option<KnownHead>)>,
}

/// A kept session's row without its files, and the digest of them kept.
type KnownHead = (ImportedSession, Option<FilesDigest>);

impl KnownPages {
    /// Session `key`'s row without its files, and the digest of them kept.
    fn get(&mut self, catalog: &Catalog, provider: &'static str, key: &str) -> anyhow::Result<Option<KnownHead>> {
        let covered = self.provider == provider && self.from.as_str() <= key && self.to.as_deref().is_none_or(|to| key <= to);
        if !covered {
            let page = catalog.import_session_heads_from(provider, key, KNOWN_PAGE)?;
            self.provider = provider;
            self.from = key.to_owned();
            self.to = (page.len() >= KNOWN_PAGE).then(|| page.last().map(|(last, _, _)| last.clone())).flatten();
            self.page = page.into_iter().map(|(key, session, digest)| (key, Some((session, digest)))).collect();
        }
        match self.page.binary_search_by(|(kept, _)| kept.as_str().cmp(key)) {
            Ok(at) => match self.page[at].1.take() {
                Some(head) => Ok(Some(head)),
                None => Ok(catalog.import_session(provider, key)?.map(|session| {
                    let digest = session.files_digest();
                    (ImportedSession { files: BTreeMap::new(), ..session }, Some(digest))
                })),
            },
            Err(_) => Ok(None),
        }
    }
}

/// What the last import kept of a session that a repeated import needs
/// beside what changed: its run, and its log's length then.
struct KnownRun {
    run_id: String,
    log: Option<u64>,
}

impl<'a> Importer<'a> {
    /// What the pool reads sessions with (borrowing the import's inputs,
    /// not the import: it is noting the batch before meanwhile).
    fn reading(&self) -> Reading<'a> {
        Reading { home: self.home, args: self.args, how: self.how, keep_readings_from: self.keep_readings_from }
    }

    /// `change`, unless it is to read on and run `id` (one an import made)
    /// does not have the log the last import left (`log` bytes): a log an
    /// import wrote after its last save, or one from before logs' lengths
    /// were kept, is rebuilt whole instead.
    fn unless_log_moved(&self, change: Change, id: &RunId, log: Option<u64>) -> Change {
        if !made_by_import(id.as_str()) || !matches!(change, Change::Grew(_)) {
            return change;
        }
        let now = LogStamp::of(self.home, id).map(|stamp| stamp.bytes);
        if now.is_some() && now == log {
            change
        } else {
            Change::Changed { shrank: Vec::new(), gone: Vec::new() }
        }
    }

    /// Counts a session whose run has `files` and says whether it must be
    /// read.
    fn wanted(&mut self, (provider, key): (&'static str, &str), change: &Change, files: RunFiles) -> anyhow::Result<bool> {
        self.bar.inc(1);
        match change {
            Change::Same if files.log => {
                self.tally.unchanged += 1;
                return Ok(false);
            }
            // Counted as read on once it was (see `run_jobs`).
            Change::Grew(_) => self.tally.updated += 1,
            Change::Gone(gone) if files.log => {
                // A subagent's metadata left beside its deleted transcript is
                // no longer its session's, but not gone.
                for path in gone.iter().filter(|path| !Path::new(path).exists()) {
                    self.bar.suspend(|| {
                        eprintln!("warning: {path}, read by an earlier import, is gone; its session's run keeps what it read of it");
                    });
                }
                // Said once: the session is kept as read without them, so
                // the next import finds it unchanged.
                let catalog = locked(self.catalog)?;
                if let Some(mut session) = catalog.import_session(provider, key)? {
                    session.files.retain(|path, _| !gone.contains(path));
                    catalog.begin()?;
                    catalog.put_import_session(provider, key, &session)?;
                    self.unsaved = true;
                }
                drop(catalog);
                self.tally.unchanged += 1;
                return Ok(false);
            }
            Change::Changed { shrank, gone } => {
                for path in shrank {
                    self.bar.suspend(|| {
                        eprintln!("warning: {path} shrank since the last import; reading its session again whole");
                    });
                }
                for path in gone {
                    self.bar.suspend(|| {
                        eprintln!("warning: {path}, read by an earlier import, is gone; its session changed too, so it is read again whole without it, and what its run held of it is dropped");
                    });
                }
                self.tally.updated += 1;
            }
            Change::Gone(_) => self.tally.updated += 1,
            Change::Same | Change::New => {
                self.tally.recorded += 1;
                if files.log {
                    self.tally.read_again += 1;
                }
            }
        }
        Ok(true)
    }

    /// The Claude runs recorded live (not by an import), by session: of the
    /// runs there when the import started, those whose ids no import gives
    /// (reading the record of every imported run was a good part of a
    /// first import).
    fn live_claude_runs(&mut self) -> anyhow::Result<HashMap<String, RunId>> {
        let ids = self
            .runs
            .live_ids()
            .filter(|id| agentrace_store::validate_run_id(id).is_ok())
            .map(RunId::from);
        // Listed newest first, as `runs` lists them: of two runs of one
        // session, the oldest is continued.
        Ok(self
            .home
            .list_these_runs(ids)?
            .into_iter()
            .filter(|run| run.provider == agentrace_core::model::Provider::Claude)
            .filter_map(|run| run.root_thread_id.map(|root| (root.to_string(), run.id)))
            .collect())
    }

    /// Adds `job` to `pending`, running them once they make a batch.
    fn queue(&mut self, pending: &mut Vec<Job>, mut job: Job) -> anyhow::Result<()> {
        // Looked up here, not on the pool: the catalog is this thread's.
        if job.read_on.is_some() {
            job.kept = self.catalog()?.import_reading(job.id.as_str())?;
        }
        pending.push(job);
        if pending.len() >= BATCH {
            self.run_jobs(pending)?;
        }
        Ok(())
    }

    /// Reads the runs of `jobs` on every core while this thread notes the
    /// batch read before (its runs, text and usage in the catalog, each
    /// session as imported, in order); `jobs` is left empty, read, and
    /// noted by the next call or by [`Importer::finish_jobs`]. One after
    /// the other, the pool waited for the notes of every batch: a third of
    /// a cold import's time on both cores.
    fn run_jobs(&mut self, jobs: &mut Vec<Job>) -> anyhow::Result<()> {
        let batch = std::mem::take(jobs);
        let before = self.read.take();
        if batch.is_empty() && before.is_none() {
            return Ok(());
        }
        let reading = self.reading();
        let (read, noted) = crate::parallel::join(
            || crate::parallel::map(&batch, |job| reading.run_job(job)),
            || before.map_or(Ok(()), |(jobs, results)| self.note(jobs, results)),
        );
        noted?;
        let read = read?;
        if !batch.is_empty() {
            self.read = Some((batch, read));
        }
        Ok(())
    }

    /// Runs `jobs` as [`Importer::run_jobs`] does, then notes them: all
    /// that was read is noted.
    fn finish_jobs(&mut self, jobs: &mut Vec<Job>) -> anyhow::Result<()> {
        self.run_jobs(jobs)?;
        match self.read.take() {
            Some((jobs, results)) => self.note(jobs, results),
            None => Ok(()),
        }
    }

    /// Notes the runs of `jobs`, read as `results`, in order: each run,
    /// its text and usage in the catalog, each session as imported.
    fn note(&mut self, jobs: Vec<Job>, outcomes: Vec<JobOutcome>) -> anyhow::Result<()> {
        // A session left out is neither noted nor counted as imported: its
        // run stays as the last import left it, and the next import, which
        // finds it unimported, reads it again.
        let (jobs, results): (Vec<Job>, Vec<JobDone>) = jobs
            .into_iter()
            .zip(outcomes)
            .filter_map(|(job, outcome)| match outcome {
                JobOutcome::Read(done) => Some((job, *done)),
                JobOutcome::Unreadable(error) => {
                    self.left_out(&job, &error);
                    None
                }
                JobOutcome::NotYet => {
                    self.untallied(&job);
                    None
                }
            })
            .collect();
        {
            let catalog = self.catalog()?;
            catalog.begin()?;
            for (job, done) in jobs.iter().zip(&results) {
                let log = done.usage.as_ref().map(|(log, _)| agentrace_store::catalog::LogStampRow::from(*log)).unwrap_or_default();
                // Its session: the root thread (Codex) or session id (Claude).
                let agents = agentrace_store::catalog::agent_rows(&done.view.agents);
                catalog.put_run(&done.view.run, done.view.usage.cwd.as_deref(), Some(&job.key), &agents, log, None)?;
                catalog.add_texts(&job.id, &done.texts, log.bytes, !done.read_on)?;
                if let Some((_, kept)) = &done.usage {
                    kept.put(&catalog, &job.id)?;
                }
                match &done.reading {
                    Some(reading) => catalog.put_import_reading(job.id.as_str(), reading)?,
                    // Only a run made before can have one kept.
                    None if job.files.log => catalog.remove_import_reading(job.id.as_str())?,
                    None => {}
                }
            }
        }
        self.tally.read_on += results.iter().filter(|done| done.read_on).count() as u64;
        self.tally.only_ended += jobs
            .iter()
            .zip(&results)
            .filter(|(job, done)| done.read_on && job.read_on.as_ref().is_some_and(|read_on| read_on.only_to_end))
            .count() as u64;
        for (job, done) in jobs.iter().zip(&results) {
            self.undecodable(job, &done.undecodable);
        }
        for (job, done) in jobs.into_iter().zip(results) {
            let claude = matches!(job.source, JobSource::Claude(_));
            let log = done.usage.as_ref().map(|(log, _)| log.bytes);
            self.imported(claude, &job.key, &job.id, job.stamps, done.marks, Left { log, open: !job.still })?;
        }
        Ok(())
    }

    /// Forgets the Codex sessions whose every rollout Codex session `key`
    /// (of `files`) now holds, and their runs when an import made them: a
    /// child read as a session of its own while its root's head could not
    /// be read (unreadable, a byte order mark) stayed an orphan `running`
    /// run once the root was read with it, and `usage` counted its tokens
    /// twice. A session that holds only part of this one's rollouts (a root
    /// whose child is now read on its own) is left as it is.
    fn forget_held(&self, catalog: &Catalog, key: &str, files: &BTreeMap<String, FileRecord>) -> anyhow::Result<()> {
        let mut others = std::collections::BTreeSet::new();
        for path in files.keys() {
            others.extend(catalog.import_sessions_of(path)?.into_iter().filter(|(provider, other)| provider == CODEX && other != key).map(|(_, other)| other));
        }
        for other in others {
            let Some(session) = catalog.import_session(CODEX, &other)? else { continue };
            if !session.files.keys().all(|path| files.contains_key(path)) {
                continue;
            }
            catalog.remove_import_session(CODEX, &other)?;
            let id = RunId::from(session.run_id);
            if made_by_import(id.as_str()) {
                catalog.remove_run(id.as_str())?;
                self.home.remove_run(&id)?;
            }
        }
        Ok(())
    }

    /// Says on stderr that `job`'s session is left out, and why, and takes
    /// it back from the tally.
    fn left_out(&mut self, job: &Job, error: &anyhow::Error) {
        let provider = if matches!(job.source, JobSource::Claude(_)) { "Claude" } else { "Codex" };
        let kept = if job.files.log { format!(" (its run {} keeps what it had)", job.id) } else { String::new() };
        self.bar.suspend(|| {
            eprintln!("warning: {error:#}; the {provider} session {} is left out of this import{kept} and read again by the next one", job.key);
        });
        self.untallied(job);
        self.tally.left_out += 1;
    }

    /// Takes `job`'s session back from the tally: this import did not
    /// read it.
    fn untallied(&mut self, job: &Job) {
        if job.new {
            self.tally.recorded = self.tally.recorded.saturating_sub(1);
            if job.files.log {
                self.tally.read_again = self.tally.read_again.saturating_sub(1);
            }
        } else {
            self.tally.updated = self.tally.updated.saturating_sub(1);
        }
    }

    /// Says on stderr, once per session, which of `job`'s files held lines
    /// this reading could not decode and how many (`show`'s counts alone
    /// said so, and only of the whole run), and counts them. A follower's
    /// import (quiet: `top` draws on the terminal) counts them unsaid.
    fn undecodable(&mut self, job: &Job, by_file: &Undecodable) {
        let lines: u64 = by_file.values().map(|lines| lines.len() as u64).sum();
        if lines == 0 {
            return;
        }
        self.tally.undecodable += lines;
        if self.args.quiet {
            return;
        }
        let plural = |count: u64| if count == 1 { "" } else { "s" };
        let files = match by_file.iter().collect::<Vec<_>>()[..] {
            [(file, _)] => file.clone(),
            ref several => several.iter().map(|(file, lines)| format!("{file} ({})", lines.len())).collect::<Vec<_>>().join(", "),
        };
        let (they, events) = if lines == 1 { ("it is", "an `undecodable` event") } else { ("they are", "`undecodable` events") };
        self.bar.suspend(|| {
            eprintln!("warning: {lines} line{} of {files} could not be read; {they} kept as {events} in run {}", plural(lines), job.id);
        });
    }

    /// The catalog, locked.
    fn catalog(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Catalog>> {
        locked(self.catalog)
    }

    /// What changed in session `key`'s files, stamped `now`, since the last
    /// import, and what it kept of the session. A session whose files are
    /// as that import left them (the digest of their stamps is the one it
    /// kept) is told so from its row alone: its files' rows are read only
    /// when something changed.
    /// The lookups of a repeated import share one read transaction (see
    /// [`Catalog::begin_read`]), ended by the next write.
    fn change(&mut self, provider: &'static str, key: &str, now: &BTreeMap<String, FileStamp>) -> anyhow::Result<(Option<KnownRun>, Change)> {
        // Locked through the shared reference, not `self`: the pages are
        // borrowed mutably beside the guard.
        let catalog = locked(self.catalog)?;
        catalog.begin_read()?;
        let Some((head, kept)) = self.pages.get(&catalog, provider, key)? else {
            return Ok((None, Change::New));
        };
        let digest = files_digest(now.iter().map(|(path, stamp)| (path.as_str(), stamp.size, stamp.modified_ns)));
        let known = KnownRun { run_id: head.run_id.clone(), log: head.log };
        // Files as the last import left them are the same session, unless
        // it was left open and they are now still for the idle limit: then
        // it is read on, to be ended (`compare` works out from where). Their
        // modification times tell that, so an open session that is not yet
        // still is told unchanged from its row alone too (every session of
        // a history written in the last minutes is open).
        let still = self.args.still(now);
        if kept == Some(digest) && !(head.open && still) {
            return Ok((Some(known), Change::Same));
        }
        let Some(previous) = catalog.import_session(provider, key)?.map(Imported::of_row) else {
            return Ok((None, Change::New));
        };
        let change = compare(Some(&previous), now, still);
        // A row kept without a digest (by an older agentrace), or with one
        // that does not read, gets the right one.
        if kept != Some(digest) && matches!(change, Change::Same) {
            self.digests.push((provider, key.to_owned(), digest));
        }
        Ok((Some(known), change))
    }

    /// Keeps the digests [`Importer::change`] worked out for rows kept
    /// without the right one: once per row, at the first import after an
    /// upgrade.
    fn keep_digests(&mut self) -> anyhow::Result<()> {
        if self.digests.is_empty() {
            return Ok(());
        }
        let catalog = locked(self.catalog)?;
        catalog.begin()?;
        for (provider, key, digest) in &self.digests {
            catalog.keep_import_files_digest(provider, key, digest)?;
        }
        drop(catalog);
        self.digests.clear();
        self.unsaved = true;
        Ok(())
    }

    /// Saves the usage index and then the state (a run the state calls done
    /// always has its usage kept, or folds), when something changed and,
    /// unless `now`, the last save is old enough.
    fn save(&mut self, now: bool) -> anyhow::Result<()> {
        if !self.unsaved || !now && self.last_save.elapsed() < SAVE_INTERVAL {
            return Ok(());
        }
        let catalog = self.catalog()?;
        catalog.commit()?;
        catalog.begin()?;
        drop(catalog);
        self.last_save = std::time::Instant::now();
        self.unsaved = false;
        Ok(())
    }

    /// Notes a session as imported (and exports it when asked).
    fn imported(
        &mut self,
        claude: bool,
        key: &str,
        id: &RunId,
        files: BTreeMap<String, FileStamp>,
        read: BTreeMap<String, ReadMark>,
        Left { log, open }: Left,
    ) -> anyhow::Result<()> {
        if let Some(endpoint) = &self.args.otlp {
            let home = self.home;
            self.bar
                .suspend(|| crate::commands::export::export_after_run(home, id, endpoint));
        }
        self.changed.push(id.clone());
        let entry = Imported {
            run_id: id.to_string(),
            files: files
                .into_iter()
                .map(|(path, stamp)| {
                    let read = read.get(&path).copied();
                    // A reading that stopped before a last line still being
                    // written counts the file only as far as it read: the
                    // next import then finds it grown, and reads on.
                    let size = match read {
                        Some(mark) if !mark.torn && mark.offset < stamp.size => mark.offset,
                        _ => stamp.size,
                    };
                    (path, FileRecord { size, modified_ns: stamp.modified_ns, read })
                })
                .collect(),
            log,
            merged: true,
            open,
        };
        {
            let catalog = self.catalog()?;
            catalog.begin()?;
            catalog.put_import_session(if claude { CLAUDE } else { CODEX }, key, &entry.to_row())?;
            // Only a session of several rollouts can hold another whole.
            if !claude && entry.files.len() > 1 {
                self.forget_held(&catalog, key, &entry.files)?;
            }
        }
        self.unsaved = true;
        self.save(false)
    }
}

impl Reading<'_> {
    /// Rebuilds or continues one job's run; returns its view, the marks of
    /// all its files, and whether it was read on (not rebuilt).
    fn read_job(&self, job: &Job) -> anyhow::Result<JobRead> {
        // A Codex session's folder comes with its rollout's `session_meta`,
        // a Claude session's with its root's first line that names one (the
        // attributor's `thread_started`, where that line falls): never in
        // the run's start, which would depend on how much of the transcript
        // the first import saw, so a session read in pieces would not end
        // as one read whole.
        let (format, parts, start) = match &job.source {
            JobSource::Codex(files) => (Format::CodexRollout, rollout_parts(files), (codex_start(files), None)),
            JobSource::Claude(session) => (Format::ClaudeTranscript, session.parts.clone(), (claude_start(session), None)),
        };
        let still = job.still;
        if let Some(read_on) = &job.read_on {
            // A metadata document is one line: one that changed cannot be
            // read on.
            let document_changed = parts.iter().any(|(part, path)| {
                let key = path.to_string_lossy();
                matches!(part, SourcePart::AgentMeta { .. })
                    && read_on.marks.contains_key(key.as_ref())
                    && !read_on.unchanged.contains(key.as_ref())
            });
            if !document_changed {
                if let Some((view, marks, texts, undecodable, reading)) = self.continue_run(&job.id, format, &parts, &read_on.marks, (still, job.kept.as_deref()))? {
                    return Ok((view, marks, true, texts, undecodable, reading));
                }
            }
        }
        if let Some(resumes) = self.how.resumes {
            resumes.forget(&job.id);
        }
        let (view, marks, texts, undecodable, reading) = self.rebuild(&job.id, job.files, format, start, &parts, still)?;
        Ok((view, marks, false, texts, undecodable, reading))
    }

    /// [`Reading::read_job`], with a Claude session's working folder
    /// looked up in its first lines when none of its root's lines named one
    /// (for the usage index alone; see `read_job`), as `usage` straight
    /// does, and its usage made ready for the catalog: here, on the pool,
    /// not on the thread that notes it.
    fn run_job(&self, job: &Job) -> anyhow::Result<JobOutcome> {
        // Every file is opened before the run is touched: one that cannot
        // be (unreadable, gone since it was listed) aborted the whole import
        // after the run was emptied, leaving a run of no agent started at
        // the clock's time.
        let mut paths = match &job.source {
            JobSource::Codex(files) => Box::new(files.iter().map(|head| head.path.as_path())) as Box<dyn Iterator<Item = &Path>>,
            JobSource::Claude(session) => Box::new(session.parts.iter().map(|(_, path)| path.as_path())),
        };
        if let Some(error) = paths.find_map(|path| fs::File::open(path).err().map(|error| anyhow::Error::new(error).context(format!("cannot read {}", path.display())))) {
            return Ok(JobOutcome::Unreadable(error));
        }
        if let (JobSource::Claude(session), None) = (&job.source, &job.read_on) {
            if claude_first_time(session).is_none() {
                return Ok(JobOutcome::NotYet);
            }
        }
        let (mut view, marks, read_on, texts, undecodable, reading) = self.read_job(job)?;
        if let (JobSource::Claude(session), None) = (&job.source, &view.usage.cwd) {
            view.usage.cwd = claude_cwd(session);
        }
        let usage = UsageIndex::of(self.home, &job.id, &view)?;
        Ok(JobOutcome::Read(Box::new(JobDone { view, marks, read_on, texts, undecodable, usage, reading })))
    }

    /// Writes run `id` anew from its session's `parts`, fed whole; returns
    /// the run's view and where the reading of each file stopped.
    fn rebuild(
        &self,
        id: &RunId,
        files: RunFiles,
        format: Format,
        (start, cwd): (Timestamp, Option<String>),
        parts: &[(SourcePart, PathBuf)],
        still: bool,
    ) -> anyhow::Result<Written> {
        self.home.remove_listed_run(id, files)?;
        // Imported runs are written as v3 lines: their `rawRef` paths and
        // repeated actors were most of a v2 log's bytes. No fsync per
        // session (an import is rebuilt from its sources, and a thousand
        // fsyncs would cost more than the reading); `remove_listed_run`
        // above left no record: it is written in place.
        let writer = self.home.create_run_unsynced(id, files.snapshot)?.with_book_lent().with_lean_lines();
        let mut recording = Recording::create_with(self.home, &imported_setup(format), writer, start, cwd)?;
        if let Some(copies) = self.copies(id, false)? {
            recording.keep_copies(copies);
        }
        let mut undecodable = Undecodable::new();
        let feed = recording.feed_with(|recorder, sink| fed_whole(recorder, parts, start, self.how.torn_lines, &mut counting(sink, &mut undecodable)))?;
        let marks = feed.marks();
        // A still session is ended, unless what was read already ends it.
        let ended = (still && !recording.session_over()).then_some(SessionEndReason::ImportFinished);
        let finished = recording.finish(ended)?;
        let reading = self.kept_reading(ended.is_none(), &finished.recorder, &feed, &marks);
        let undecodable = without_lines_being_written(undecodable, &marks, still);
        Ok((indexed_view(&finished), marks, finished.texts, undecodable, reading))
    }

    /// Continues run `id` with what its session's `parts` gained since the
    /// last import stopped at `marks`, appending to the log (never
    /// rewriting it); `None` when it cannot be continued and must be
    /// rebuilt.
    ///
    /// The recorder is brought to where the last import left it by feeding
    /// it the sources again up to the marks, in the one order every reading
    /// uses (see [`crate::sources::session_feed`]), its envelopes dropped: relearning
    /// from the log could not tell which file each line came from once the
    /// files' lines are interleaved, and a recorder that misplaced one
    /// attributed the rest differently (a root's answer lost, a child's end
    /// missed). The log is continued only when the replay numbers its
    /// envelopes exactly up to the log's end, and only when the lines the
    /// files gained sort after the last one fed.
    fn continue_run(
        &self,
        id: &RunId,
        format: Format,
        parts: &[(SourcePart, PathBuf)],
        marks: &BTreeMap<String, ReadMark>,
        (still, kept_reading): (bool, Option<&str>),
    ) -> anyhow::Result<Option<Written>> {
        // A follower goes on from its last pass's reading when that stopped
        // where the catalog says this session was read to; an import, from
        // the reading the last one kept there; else the sources are fed
        // again up to the marks.
        let kept = self.how.resumes.and_then(|resumes| resumes.take(id, parts, marks));
        let (recorder, mut feed) = match kept.or_else(|| kept_reading.and_then(|kept| self.restored_to(id, format, parts, marks, kept))) {
            Some(kept) => kept,
            None => match self.replayed_to(id, format, parts, marks)? {
                Some(replayed) => replayed,
                None => return Ok(None),
            },
        };
        // The recorder keeps the run state alone here (it was replayed from
        // the sources); the writer's own fold, resumed from the log, has the
        // rest.
        let Some(mut recording) = Recording::continue_with(self.home, id, &imported_setup(format), recorder)? else {
            return Ok(None);
        };
        if let Some(copies) = self.copies(id, true)? {
            recording.keep_copies(copies);
        }
        // Only what this reading adds is counted: the lines replayed up to
        // the marks were said by the import that read them.
        let mut undecodable = Undecodable::new();
        if recording.feed_with(|recorder, sink| feed.feed(recorder, Reach::Ends, &mut counting(sink, &mut undecodable)))?.is_err() {
            return Ok(None);
        }
        // A still session is ended, unless what was read already ends it.
        let ended = (still && !recording.session_over()).then_some(SessionEndReason::ImportFinished);
        let finished = recording.finish(ended)?;
        let marks = feed.marks();
        let undecodable = without_lines_being_written(undecodable, &marks, still);
        let view = indexed_view(&finished);
        let reading = self.kept_reading(ended.is_none(), &finished.recorder, &feed, &marks);
        let Finished { recorder, texts, .. } = finished;
        // An import's recorder is never told its input ended (see
        // `Recording::finish`): as it is now, it is where a replay up to
        // these marks would bring it, unless this reading ended the
        // session (a replay never feeds the `session_ended` it wrote).
        if let (Some(resumes), None) = (self.how.resumes, ended) {
            resumes.keep(id.clone(), Resume { recorder, feed, parts: parts.to_vec(), marks: marks.clone() });
        }
        Ok(Some((view, marks, texts, undecodable, reading)))
    }

    /// The reading a one-shot import leaves a session open at, for the
    /// next to go on from ([`KeptReading`]): none for a session ended (read
    /// again whole if it grows), nor in a follower, which keeps its
    /// readings itself between passes and would write one at every pass.
    fn kept_reading(&self, open: bool, recorder: &Recorder, feed: &SessionFeed, marks: &BTreeMap<String, ReadMark>) -> Option<String> {
        if !open || self.how.resumes.is_some() {
            return None;
        }
        // A small session is cheaper to read again than its reading is to
        // keep (see `KEEP_READINGS_FROM`).
        let read: u64 = marks.values().map(|mark| mark.offset).sum();
        if read < self.keep_readings_from {
            return None;
        }
        serde_json::to_string(&KeptReading { marks: marks.clone(), feed: feed.position(), recorder: recorder.saved()? }).ok()
    }

    /// A recorder and a feed of run `id`'s session where the last import
    /// left them at `marks`, restored from the reading it kept (`kept`);
    /// `None` when that reading stopped elsewhere or cannot be restored
    /// (another build's, another price book's): the caller feeds the
    /// sources again.
    fn restored_to(
        &self,
        id: &RunId,
        format: Format,
        parts: &[(SourcePart, PathBuf)],
        marks: &BTreeMap<String, ReadMark>,
        kept: &str,
    ) -> Option<(Recorder, SessionFeed)> {
        let kept: KeptReading = serde_json::from_str(kept).ok()?;
        if &kept.marks != marks {
            return None;
        }
        let recorder = Recorder::restored(id.clone(), format, kept.recorder.get().as_bytes(), self.home.prices())?;
        let feed = SessionFeed::new(parts, Timestamp::default(), self.how.torn_lines).referencing().resumed_at(&kept.feed, marks)?;
        Some((recorder, feed))
    }

    /// A recorder and a feed of run `id`'s session brought to where the
    /// last import stopped at `marks`, by feeding the sources again up to
    /// them, the envelopes dropped (see [`Reading::continue_run`]); `None`
    /// when the log names no start or the files no longer reach the marks.
    fn replayed_to(
        &self,
        id: &RunId,
        format: Format,
        parts: &[(SourcePart, PathBuf)],
        marks: &BTreeMap<String, ReadMark>,
    ) -> anyhow::Result<Option<(Recorder, SessionFeed)>> {
        // The run's own start, as its log has it.
        let first = agentrace_store::LogReader::open(&self.home.log_path(id))?.next().transpose()?;
        // The run's start and working folder, as its log has them.
        let Some((start, cwd)) = first.and_then(|envelope| match envelope.event {
            agentrace_core::model::EventBody::Known(agentrace_core::model::Event::RunStarted { cwd, .. }) => {
                Some((envelope.timestamp, cwd))
            }
            _ => None,
        }) else {
            return Ok(None);
        };
        let mut recorder = Recorder::new(id.clone(), format).with_prices(self.home.prices());
        let _ = recorder.start_in(start, cwd);
        let mut feed = SessionFeed::new(parts, start, self.how.torn_lines).referencing();
        if feed.feed(&mut recorder, Reach::Marks(marks), &mut |_| Ok(()))?.is_err() || !feed.stopped_at(marks) {
            return Ok(None);
        }
        Ok(Some((recorder, feed)))
    }

    /// The kept copies of run `id`'s frames when the import keeps them
    /// (`--keep-raw`): added to when it is read on, else started anew.
    fn copies(&self, id: &RunId, read_on: bool) -> anyhow::Result<Option<CopyWriter>> {
        if !self.args.keep_raw {
            return Ok(None);
        }
        let log = self.home.log_path(id);
        Ok(Some(if read_on { CopyWriter::append(&log)? } else { CopyWriter::create(&log)? }))
    }
}

/// The Claude sessions under `dir` (none when it holds no projects), not
/// yet walked, sorted by session id, and how many.
fn claude_found(dir: Option<&Path>, dirs: &std::sync::Arc<DirCache>) -> anyhow::Result<(usize, impl Iterator<Item = anyhow::Result<FoundSession>>)> {
    let mut found = Vec::new();
    match dir {
        Some(dir) if holds_projects(dir) => {
            for project in crate::sources::claude_ingest::sessions_by_project_in(dir, Some(dirs.clone()))? {
                for session in project? {
                    found.push(session);
                }
            }
        }
        _ => {}
    }
    Ok(in_key_order(found))
}

/// True for a Claude config dir holding `projects`, or a `projects` folder.
fn holds_projects(dir: &Path) -> bool {
    dir.join("projects").is_dir() || dir.is_dir() && dir.ends_with("projects")
}

/// Found sessions in the order of their table (which is read in step), with
/// how many there are.
fn in_key_order(mut found: Vec<FoundSession>) -> (usize, impl Iterator<Item = anyhow::Result<FoundSession>>) {
    found.sort_by(|a, b| a.session_id().cmp(b.session_id()));
    (found.len(), found.into_iter().map(Ok))
}

/// How many Claude sessions are walked together.
const CLAUDE_CHUNK: usize = 256;

/// A Claude session's files, with their stamps keyed by path.
fn claude_session_files(
    found: &FoundSession,
    dirs: &DirCache,
) -> anyhow::Result<(crate::sources::claude_ingest::SessionFiles, BTreeMap<String, FileStamp>)> {
    let (session, listed) = found.files_with_stamps_in(dirs)?;
    let stamps = stamps(session.parts.iter().map(|(_, path)| path.as_path()).zip(listed))?;
    Ok((session, stamps))
}

/// A session's files' stamps keyed by path: the stamp each was listed
/// with, else one stat'ed now.
fn stamps<'p>(files: impl Iterator<Item = (&'p Path, Option<FileStamp>)>) -> anyhow::Result<BTreeMap<String, FileStamp>> {
    files
        .map(|(path, listed)| {
            let stamp = match listed {
                Some(listed) => listed,
                None => stamp(path)?,
            };
            // `to_str` checks UTF-8 a word at a time; `to_string_lossy` a
            // byte at a time, 5 % of a repeated import's instructions.
            Ok((path.to_str().map_or_else(|| path.to_string_lossy().into_owned(), str::to_owned), stamp))
        })
        .collect()
}

/// Runs `agentrace import`.
pub fn run(home: &Home, args: &ImportArgs) -> anyhow::Result<ImportReport> {
    import_reported(home, args, Pass::of(TornLines::Feed), &Scope::Everything)
}

/// [`run`], unless a follower (`watch`, `top`, `serve --watch`) of the same
/// folders holds its lease and has imported every change it was told of:
/// then the catalog is as current as an import would make it, and nothing
/// is stat'ed (a repeated import of 5,000 sessions stats 16,000 files).
pub fn run_unless_followed(home: &Home, args: &ImportArgs) -> anyhow::Result<ImportReport> {
    let follower = home.follower();
    match (args.followed_as(), follower) {
        (Some(about), Some(follower)) if follower.current && follower.about == about => {
            if !args.quiet && !args.json {
                eprintln!(
                    "imported nothing new: the follower running as pid {} has imported every change to these folders ({})",
                    follower.pid,
                    args.read_from(),
                );
            }
            Ok(ImportReport { codex_home: args.codex_home(), claude_dir: args.claude_dir(), follower: Some(follower.pid), ..ImportReport::default() })
        }
        _ => run(home, args),
    }
}

/// What one import reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// Every session under the homes (what `import` does).
    Everything,
    /// The sessions of these files, which a watcher saw written to (and
    /// nothing else changed): when each is a file an import read before,
    /// only their sessions are looked at, read on as a whole import would
    /// read them; otherwise everything is. A pass of `watch` stat'ed every
    /// file of the history (16,000 for 5,000 sessions) for each few lines
    /// an agent wrote.
    Written(std::collections::BTreeSet<PathBuf>),
    /// Only the sessions one of these files belongs to (the newest written,
    /// which a first `agentrace` lists before the rest is imported in the
    /// background); the others are left for a later import.
    Newest(std::collections::BTreeSet<PathBuf>),
}

/// How many bytes of a session's files an import must have read for the
/// reading it leaves the session open at to be kept ([`KeptReading`]),
/// unless `AGENTRACE_KEEP_READINGS_FROM` says otherwise. Feeding the files
/// again costs about 15 ms a MiB (a grown 60 MB transcript: 1.1 s fed
/// again, 0.2 s gone on from its reading), so below a MiB reading again
/// costs little; keeping a reading for every session an import leaves
/// open made a cold import of a freshly written 1 GB history (every
/// session of it open) write 230 MB, not 212 MB.
const KEEP_READINGS_FROM: u64 = 1 << 20;

/// [`KEEP_READINGS_FROM`], or `AGENTRACE_KEEP_READINGS_FROM` (bytes).
fn keep_readings_from() -> anyhow::Result<u64> {
    match std::env::var("AGENTRACE_KEEP_READINGS_FROM") {
        Ok(text) => text.trim().parse::<u64>().with_context(|| format!("AGENTRACE_KEEP_READINGS_FROM={text}: expected a number of bytes")),
        Err(_) => Ok(KEEP_READINGS_FROM),
    }
}

/// How many sessions a first import reads before `agentrace` lists runs,
/// unless `AGENTRACE_BACKGROUND_IMPORT_AFTER` says otherwise: above it, the
/// newest are imported and listed first, the rest in the background.
const BACKGROUND_IMPORT_AFTER: usize = 400;

/// The newest written session files of the homes `args` reads (Codex
/// rollouts, Claude main transcripts), at most `newest` of them (and no
/// more than a first import reads at once), when the
/// history holds more sessions than a first import reads at once
/// ([`BACKGROUND_IMPORT_AFTER`], or `AGENTRACE_BACKGROUND_IMPORT_AFTER`:
/// a number, or `never`); `None` when it holds no more (it is imported
/// whole), with how many session files there are.
pub(crate) fn newest_when_large(args: &ImportArgs, newest: usize) -> anyhow::Result<(usize, Option<std::collections::BTreeSet<PathBuf>>)> {
    let after = match std::env::var("AGENTRACE_BACKGROUND_IMPORT_AFTER") {
        Ok(text) if text.trim() == "never" => return Ok((0, None)),
        Ok(text) => text.trim().parse::<usize>().with_context(|| format!("AGENTRACE_BACKGROUND_IMPORT_AFTER={text}: expected a number of sessions, or `never`"))?,
        Err(_) => BACKGROUND_IMPORT_AFTER,
    };
    let mut files: Vec<(u64, PathBuf)> = Vec::new();
    if let Some(dir) = codex_home(args) {
        for (path, stamp) in RolloutWalk::new(&dir, true) {
            files.push((stamp.map_or(0, |stamp| stamp.modified_ns), path));
        }
    }
    if let Some(dir) = claude_dir(args).filter(|dir| holds_projects(dir)) {
        for project in crate::sources::claude_ingest::sessions_by_project_in(&dir, None)? {
            for session in project? {
                let main = session.main().to_path_buf();
                let modified = stamp(&main).map_or(0, |stamp| stamp.modified_ns);
                files.push((modified, main));
            }
        }
    }
    let count = files.len();
    if count <= after {
        return Ok((count, None));
    }
    files.sort_by_key(|(modified, _)| std::cmp::Reverse(*modified));
    Ok((count, Some(files.into_iter().take(newest.min(after)).map(|(_, path)| path).collect())))
}

/// How long a first command waits for the import it started in the
/// background to take the import lock (a loaded machine takes a while to
/// start a process); past it, the command goes on without.
const BACKGROUND_LOCKS_WITHIN: Duration = Duration::from_secs(10);

/// Starts `agentrace import --quiet` in the background, on its own (it
/// outlives this process; its stderr goes to the home's background import
/// log); returns its pid once it holds the import lock, or has ended.
/// Returned at once, it had not taken the lock yet when the note that it
/// was at work was read: an `import` run next did its work itself rather
/// than wait for it, and `runs` did not say its figures were partial.
pub(crate) fn import_in_background(home: &Home) -> anyhow::Result<u32> {
    use std::os::unix::process::CommandExt as _;
    let log = home.create_background_import_log()?;
    let exe = std::env::current_exe().context("cannot find this program to import in the background")?;
    let mut child = std::process::Command::new(exe)
        .args(["import", "--quiet"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        // Its own process group: a Ctrl-C meant for the shell's next
        // command does not stop it.
        .process_group(0)
        .spawn()
        .context("cannot start the background import")?;
    let deadline = Instant::now() + BACKGROUND_LOCKS_WITHIN;
    while !agentrace_store::ImportLock::held_elsewhere(home) && Instant::now() < deadline {
        if child.try_wait().context("cannot tell whether the background import started")?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(child.id())
}

/// Imports what changed since the last import (see the module's
/// documentation); a last line with no newline yet is fed or waited for as
/// `torn_lines` says. Returns the runs it recorded or changed.
pub(crate) fn import(home: &Home, args: &ImportArgs, torn_lines: TornLines) -> anyhow::Result<Vec<RunId>> {
    import_in(home, args, torn_lines, &Scope::Everything)
}

/// [`import`] of what `scope` says.
pub(crate) fn import_in(home: &Home, args: &ImportArgs, torn_lines: TornLines, scope: &Scope) -> anyhow::Result<Vec<RunId>> {
    import_reported(home, args, Pass::of(torn_lines), scope).map(|report| report.runs)
}

/// [`import_in`] by a follower: a last line still being written is left
/// for the next pass, and a session the last pass read on goes on from
/// `resumes` (see [`Resumes`]).
pub(crate) fn import_following(home: &Home, args: &ImportArgs, scope: &Scope, resumes: &Resumes) -> anyhow::Result<Vec<RunId>> {
    import_reported(home, args, Pass { torn_lines: TornLines::Wait, resumes: Some(resumes) }, scope).map(|report| report.runs)
}

/// Notes that run `id`'s session was ended outside an import (a watch's
/// idle end): the catalog no longer calls it open, and no reading of it is
/// kept, in the catalog or in `resumes`. Left open, the next whole import
/// found it open and still, read it on to end it, found the log moved (the
/// end appended) and rebuilt it as `importFinished`, the idle end gone.
/// The log's length the import kept stays as it was: should the session's
/// files grow again, the moved log makes the run be read again whole, as
/// `watch --idle-limit` says.
pub(crate) fn ended_outside_an_import(home: &Home, id: &RunId, resumes: &Resumes) -> anyhow::Result<()> {
    resumes.forget(id);
    let Some((provider, key)) = imported_session_of(id.as_str()) else {
        return Ok(());
    };
    let catalog = crate::catalog::open(home)?;
    catalog.begin()?;
    catalog.close_import_session(provider, key, id.as_str())?;
    catalog.remove_import_reading(id.as_str())?;
    catalog.commit()?;
    Ok(())
}

/// The provider and key of the session an import makes run `id` of
/// (`codex-<root>`, `claude-<session>`); `None` for a run recorded live.
/// The one place those prefixes are read back ([`made_by_import`] too).
fn imported_session_of(id: &str) -> Option<(&'static str, &str)> {
    id.strip_prefix("codex-").map(|root| (CODEX, root)).or_else(|| id.strip_prefix("claude-").map(|session| (CLAUDE, session)))
}

/// What an import did: `import --json` prints it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// Sessions imported for the first time.
    pub new: u64,
    /// Sessions imported before that had grown or changed.
    pub changed: u64,
    /// Of the changed, those read on from where the last import stopped.
    pub read_on: u64,
    /// Sessions found as the last import left them.
    pub unchanged: u64,
    /// Of the new, those imported before and read again whole (after an
    /// upgrade that reads sessions otherwise, or with the import's state
    /// lost): their runs were made anew; there only when some were.
    #[serde(skip_serializing_if = "crate::usage_index::is_zero")]
    pub read_again: u64,
    /// Sessions left out because a file of theirs could not be opened (read
    /// again by the next import); there only when some were.
    #[serde(skip_serializing_if = "crate::usage_index::is_zero")]
    pub left_out: u64,
    /// Lines read that could not be decoded, kept as `undecodable` events
    /// (as `show`'s `counts.undecodedLines` names them); there only when
    /// some were.
    #[serde(skip_serializing_if = "crate::usage_index::is_zero")]
    pub undecoded_lines: u64,
    /// The runs recorded or changed, by id.
    pub runs: Vec<RunId>,
    /// The Codex home read (`null`: none).
    pub codex_home: Option<PathBuf>,
    /// The Claude Code config dir read (`null`: none).
    pub claude_dir: Option<PathBuf>,
    /// The pid of the follower (`watch`, `top`, `serve --watch`) that had
    /// imported every change already, when one had and nothing was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follower: Option<u32>,
}

/// The catalog's meta key of the [`agentrace_core::ATTRIBUTION`] its
/// imported runs were made under.
const ATTRIBUTION_KEY: &str = "attribution";

/// Forgets what earlier imports read when they attributed sessions
/// otherwise than this agentrace does (another
/// [`agentrace_core::ATTRIBUTION`], or none kept: an import before the
/// number was), so this import reads every session again and makes its
/// run anew, and says so: an import reads only what grew, and a run
/// imported before an upgrade kept the older reading for good (a Codex
/// helper whose model call failed read `completed`) unless the user knew
/// to `reindex`. Said once; the number is kept with the forgetting.
pub(crate) fn read_again_when_attributed_otherwise(catalog: &Catalog, quiet: bool) -> anyhow::Result<()> {
    let now = agentrace_core::ATTRIBUTION.to_string();
    let kept = catalog.meta(ATTRIBUTION_KEY)?;
    if kept.as_deref() == Some(now.as_str()) {
        return Ok(());
    }
    let older = kept.is_some() || catalog.has_imports()?;
    if older && !quiet {
        eprintln!(
            "note: this agentrace reads sessions otherwise than the one that imported them (attribution {now}, was {}); every session is read again, once",
            kept.as_deref().unwrap_or("1")
        );
    }
    catalog.forget_imports(ATTRIBUTION_KEY, &now)?;
    Ok(())
}

/// [`import_in`], with what it did.
fn import_reported(home: &Home, args: &ImportArgs, how: Pass<'_>, scope: &Scope) -> anyhow::Result<ImportReport> {
    crate::memory::prefer_small_pages();
    let since = since(args)?;
    let claude_dir = claude_dir(args);
    // A folder named on the command line that is not there is most likely
    // a typo: said, not silently read as empty.
    for dir in [&args.codex_home, &args.claude_dir].into_iter().flatten() {
        if !dir.is_dir() && !args.quiet {
            eprintln!("warning: {} is not a folder; nothing is imported from it", dir.display());
        }
    }
    let _lock = agentrace_store::ImportLock::acquire(home, || {
        if !args.quiet {
            eprintln!("another import of {} is running; waiting for it to end", home.root().display());
        }
    })?;
    // The tables the catalog replaced: removed, their sessions are imported
    // again once.
    home.remove_retired_import_tables();
    let catalog = crate::catalog::open(home)?;
    read_again_when_attributed_otherwise(&catalog, args.quiet)?;
    let written = match scope {
        Scope::Everything | Scope::Newest(_) => None,
        Scope::Written(paths) => written_sessions(&catalog, paths)?,
    };
    let only = match scope {
        Scope::Newest(paths) => Some(paths),
        Scope::Everything | Scope::Written(_) => None,
    };
    // Runs recorded beside the import (`run`, `tap`) are brought into the
    // catalog by a whole import, and by any command that lists runs.
    if written.is_none() {
        catalog.sync(home)?;
    }
    crate::usage_index::reprice_kept_usage(home, &catalog, args.quiet)?;
    if let Some(written) = written {
        // The only folders listed are the written Claude sessions' projects
        // and their own folders (a workflow's, deeper, is listed anew).
        let folders: Vec<PathBuf> = written
            .claude
            .iter()
            .flat_map(|main| {
                let own = main.with_extension("");
                [main.parent().map(Path::to_path_buf), Some(own.join("subagents")), Some(own)]
            })
            .flatten()
            .collect();
        let folders: Vec<&[u8]> = folders.iter().map(|folder| folder.as_os_str().as_bytes()).collect();
        let dirs = std::sync::Arc::new(DirCache::new(catalog.import_dirs_of(&folders)?));
        let catalog = std::sync::Mutex::new(catalog);
        let changed = import_written(home, args, since, &written, &catalog, (how, &dirs))?;
        keep_dirs(&catalog, &dirs)?;
        return Ok(changed);
    }
    let dirs = std::sync::Arc::new(DirCache::new(catalog.import_dirs()?));
    let catalog = std::sync::Mutex::new(catalog);
    // Finding what is on disk is thousands of small system calls: the Codex
    // home is listed and grouped (reading only the heads the last import
    // did not keep) while Claude's sessions are imported.
    std::thread::scope(|scope| {
        let rollouts = scope.spawn(|| {
            let mut walk = codex_home(args).map(|dir| RolloutWalk::new(&dir, true).with_dirs(dirs.clone()));
            let (sessions, headless) = codex_sessions_known(walk.iter_mut().flatten(), &catalog, true)?;
            Ok((sessions, headless, walk.map(|mut walk| walk.take_unreadable()).unwrap_or_default()))
        });
        let codex = || {
            rollouts
                .join()
                .map_err(|_| anyhow::anyhow!("walking the Codex home failed (a thread panicked)"))?
        };
        let claude = claude_found(claude_dir.as_deref(), &dirs)?;
        import_sessions(home, (args, since, only), claude, &catalog, (how, &dirs), (RunsListing::of(home, &dirs)?, codex))
    })
    .and_then(|changed| {
        keep_dirs(&catalog, &dirs)?;
        Ok(changed)
    })
}

/// The sessions the files `paths` were imported into: `None` when one of
/// them is no file an import read (a new session, a new subagent's or
/// child's file: only a whole import finds where it goes).
fn written_sessions(catalog: &Catalog, paths: &std::collections::BTreeSet<PathBuf>) -> anyhow::Result<Option<WrittenSessions>> {
    if paths.is_empty() {
        return Ok(None);
    }
    let mut sessions = std::collections::BTreeSet::new();
    for path in paths {
        let of = catalog.import_sessions_of(&path.to_string_lossy())?;
        if of.is_empty() {
            return Ok(None);
        }
        sessions.extend(of);
    }
    let mut written = WrittenSessions::default();
    for (provider, key) in sessions {
        let Some(session) = catalog.import_session(&provider, &key)? else {
            return Ok(None);
        };
        let files = session.files.into_keys().map(PathBuf::from);
        match provider.as_str() {
            CLAUDE => {
                // The session's main file is named by its key.
                let name = format!("{key}.jsonl");
                let Some(main) = files.into_iter().find(|path| path.file_name().is_some_and(|file| file == name.as_str())) else {
                    return Ok(None);
                };
                written.claude.insert(main);
            }
            CODEX => written.codex.extend(files),
            _ => return Ok(None),
        }
    }
    Ok(Some(written))
}

/// The sessions an import of [`Scope::Written`] reads: each Claude
/// session's main file, and every rollout of each Codex session.
#[derive(Debug, Default)]
struct WrittenSessions {
    claude: std::collections::BTreeSet<PathBuf>,
    codex: std::collections::BTreeSet<PathBuf>,
}

/// Imports the sessions of `written` as a whole import would (the same
/// steps, given these sessions instead of the walk's).
fn import_written(
    home: &Home,
    args: &ImportArgs,
    since: Option<Timestamp>,
    written: &WrittenSessions,
    catalog: &std::sync::Mutex<Catalog>,
    (how, dirs): (Pass<'_>, &std::sync::Arc<DirCache>),
) -> anyhow::Result<ImportReport> {
    let mut found = Vec::new();
    for main in &written.claude {
        found.extend(crate::sources::claude_ingest::session_at(main, Some(dirs))?);
    }
    let codex = || {
        // Stat'ed now; one gone since is left out, as the walk leaves it.
        let walk = written.codex.iter().map(|path| (path.clone(), fs::metadata(path).ok().map(|metadata| FileStamp::of(&metadata))));
        // No folder is walked.
        codex_sessions_known(walk, catalog, false).map(|(sessions, headless)| (sessions, headless, Vec::new()))
    };
    import_sessions(home, (args, since, None), in_key_order(found), catalog, (how, dirs), (RunsListing::Asked(home), codex))
}

/// Keeps the folder listings this import took (and forgets those it could
/// not trust); writes nothing when every folder was as kept.
fn keep_dirs(catalog: &std::sync::Mutex<Catalog>, dirs: &DirCache) -> anyhow::Result<()> {
    let changes = dirs.take_changes();
    if changes.is_empty() {
        return Ok(());
    }
    let catalog = locked(catalog)?;
    catalog.begin()?;
    for (path, row) in &changes {
        match row {
            Some(row) => catalog.put_import_dir(path, row)?,
            None => catalog.remove_import_dir(path)?,
        }
    }
    catalog.commit()?;
    Ok(())
}

/// Imports Claude's sessions under `claude_dir`, then Codex's (`codex`
/// gives them once listed); says what was done.
fn import_sessions(
    home: &Home,
    (args, since, only): (&ImportArgs, Option<Timestamp>, Option<&std::collections::BTreeSet<PathBuf>>),
    (found, claude): (usize, impl Iterator<Item = anyhow::Result<FoundSession>> + Send),
    catalog: &std::sync::Mutex<Catalog>,
    (how, dirs): (Pass<'_>, &std::sync::Arc<DirCache>),
    (runs, codex): (RunsListing<'_>, impl FnOnce() -> anyhow::Result<(CodexSessions, Vec<String>, Vec<String>)>),
) -> anyhow::Result<ImportReport> {
    let mut importer = Importer {
        home,
        args,
        catalog,
        tally: Tally::default(),
        bar: progress(args, found as u64),
        last_save: std::time::Instant::now(),
        unsaved: false,
        runs,
        how,
        changed: Vec::new(),
        pages: KnownPages::default(),
        read: None,
        digests: Vec::new(),
        keep_readings_from: keep_readings_from()?,
    };
    // Claude runs recorded live, by session: looked up once, and only when
    // a session is new (reading every run's record costs more than a
    // repeated import otherwise does).
    let mut live_claude: Option<HashMap<String, RunId>> = None;
    let mut pending: Vec<Job> = Vec::new();
    // Claude's sessions, then Codex's: the usage index is kept in the
    // order of the run ids (`claude-…` before `codex-…`).
    // A session's files are walked and stat'ed only when its turn comes,
    // a chunk at a time on the pool while this thread looks the chunk
    // before up in the catalog and queues it: the listing keeps only where
    // each session is.
    crate::parallel::map_streamed(claude, CLAUDE_CHUNK, |found| claude_session_files(found, dirs), |session| -> anyhow::Result<()> {
        let (session, stamps) = session?;
        // A session with no time of its own is imported whatever the day.
        let main = session.parts.first().map(|(_, path)| path.as_path());
        if since.is_some_and(|since| main.and_then(first_time).is_some_and(|started| started < since)) {
            importer.bar.inc(1);
            return Ok(());
        }
        if only.is_some_and(|only| !session.parts.iter().any(|(_, path)| only.contains(path))) {
            importer.bar.inc(1);
            return Ok(());
        }
        let (previous, change) = importer.change(CLAUDE, &session.session_id, &stamps)?;
        // A session whose files are all empty has nothing to attribute yet,
        // and no time of its own: its run would start at the import, hold
        // no agent, and read `running`. It is left until it grows, as a
        // rollout is until its first line.
        if previous.is_none() && stamps.values().all(|stamp| stamp.size == 0) {
            importer.bar.inc(1);
            return Ok(());
        }
        let log = previous.as_ref().and_then(|previous| previous.log);
        let previous_run = previous.map(|previous| RunId::from(previous.run_id));
        // A run import made itself is rebuilt; a run recorded live (`run
        // claude`) is continued, never deleted.
        let id = match previous_run {
            Some(id) => id,
            None => {
                // A session an import already made a run of keeps it when
                // the import's state is lost (`reindex`): continuing a live
                // run of it instead put the session in two runs, the
                // transcript copied into the live one again at every
                // `reindex`.
                let own = RunId::from(format!("claude-{}", session.session_id));
                if importer.runs.files_of(&own)?.log {
                    own
                } else {
                    if live_claude.is_none() {
                        live_claude = Some(importer.live_claude_runs()?);
                    }
                    live_claude.as_ref().and_then(|live| live.get(&session.session_id)).cloned().unwrap_or(own)
                }
            }
        };
        let change = importer.unless_log_moved(change, &id, log);
        let files = importer.runs.files_of(&id)?;
        if !importer.wanted((CLAUDE, &session.session_id), &change, files)? {
            return Ok(());
        }
        // Only a run import made itself (its id says so) is rebuilt: a live
        // run continued by an earlier import is continued again, whatever
        // changed, or the lines only its stream had would be lost.
        if id.as_str().starts_with("claude-") {
            let job = Job {
                key: session.session_id.clone(),
                id,
                files,
                still: args.still(&stamps),
                new: matches!(change, Change::Same | Change::New),
                stamps,
                source: JobSource::Claude(session),
                read_on: Job::read_on(change),
                kept: None,
            };
            importer.queue(&mut pending, job)?;
        } else {
            // The sessions before it are noted first: the table is written
            // in order.
            importer.finish_jobs(&mut pending)?;
            crate::commands::ingest::record_transcripts(home, &id, &session)?.finish(None)?;
            // Fed whole at every import: nothing to end later.
            importer.imported(true, &session.session_id, &id, stamps, BTreeMap::new(), Left { log: None, open: false })?;
        }
        Ok(())
    })?;
    let (codex, headless, unreadable) = codex()?;
    for why in &headless {
        importer.bar.suspend(|| eprintln!("warning: {why}; the rollout is left out of this import (a child of it is read as a session of its own)"));
    }
    for why in &unreadable {
        importer.bar.suspend(|| eprintln!("warning: {why}; the rollouts in it are left out of this import"));
    }
    whole_progress(&importer.bar, codex.len() as u64);
    // Each session's rollouts are unpacked (or merged) as its turn comes.
    for session in codex {
        let (root, files) = session?;
        if since.is_some_and(|since| {
            files
                .iter()
                .all(|head| head.started.is_some_and(|t| t < since))
        }) || only.is_some_and(|only| !files.iter().any(|head| only.contains(&head.path)))
        {
            importer.bar.inc(1);
            continue;
        }
        let stamps = stamps(files.iter().map(|head| (head.path.as_path(), head.stamp)))?;
        let id = RunId::from(format!("codex-{root}"));
        let (previous, change) = importer.change(CODEX, &root, &stamps)?;
        let change = importer.unless_log_moved(change, &id, previous.and_then(|previous| previous.log));
        let run_files = importer.runs.files_of(&id)?;
        if !importer.wanted((CODEX, &root), &change, run_files)? {
            continue;
        }
        let job = Job {
            key: root,
            id,
            files: run_files,
            still: args.still(&stamps),
            new: matches!(change, Change::Same | Change::New),
            stamps,
            source: JobSource::Codex(files),
            read_on: Job::read_on(change),
            kept: None,
        };
        importer.queue(&mut pending, job)?;
    }
    importer.finish_jobs(&mut pending)?;
    importer.keep_digests()?;
    // A repeated import that found nothing changed writes nothing.
    importer.save(true)?;
    importer.catalog()?.commit()?;
    importer.bar.finish_and_clear();
    if !args.quiet && !args.json {
        let tally = &importer.tally;
        let read_on = match tally.read_on {
            0 => String::new(),
            count => format!("; {count} of the changed read on from where the last import stopped"),
        };
        // Sessions the user did not touch, counted as changed: why.
        let only_ended = match tally.only_ended {
            0 => String::new(),
            count => format!(
                "; {count} of them only ended, no line new: their files were still for the idle limit ({} s)",
                args.idle_limit
            ),
        };
        // Counted as new (the import had no state of them), though the
        // user had them before: said, so they are not taken for new ones.
        let read_again = match tally.read_again {
            0 => String::new(),
            1 => "; 1 of the new was imported before: read again, its run made anew".to_owned(),
            count => format!("; {count} of the new were imported before: read again, their runs made anew"),
        };
        let left_out = match tally.left_out {
            0 => String::new(),
            1 => "; 1 session left out, a file of it unreadable (see the warning above)".to_owned(),
            count => format!("; {count} sessions left out, a file of each unreadable (see the warnings above)"),
        };
        let undecodable = match tally.undecodable {
            0 => String::new(),
            1 => "; 1 line could not be read (see the warning above)".to_owned(),
            count => format!("; {count} lines could not be read (see the warnings above)"),
        };
        eprintln!(
            "imported {} new session{}, {} changed, {} unchanged ({}){read_on}{only_ended}{read_again}{left_out}{undecodable}",
            tally.recorded,
            if tally.recorded == 1 { "" } else { "s" },
            tally.updated,
            tally.unchanged,
            args.read_from(),
        );
    }
    let tally = &importer.tally;
    Ok(ImportReport {
        new: tally.recorded,
        changed: tally.updated,
        read_on: tally.read_on,
        unchanged: tally.unchanged,
        read_again: tally.read_again,
        left_out: tally.left_out,
        undecoded_lines: tally.undecodable,
        runs: importer.changed,
        codex_home: args.codex_home(),
        claude_dir: args.claude_dir(),
        follower: None,
    })
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "the tests make the folders and files they list")]
mod tests {
    use super::*;
    use crate::sources::rollouts::tests::{age_folders, kept};

    /// A file that grew is read on from where the last reading stopped,
    /// wherever that was against the stamp taken before it: past it (lines
    /// appended between the stat and the read were read too) or short of it
    /// (a follower left a line still being written). Both were read again
    /// whole, so a follower rebuilt a live session at nearly every pass.
    /// A file shorter than the mark, or read with a torn line fed as it
    /// was, is still read again whole.
    #[test]
    fn a_file_that_grew_is_read_on_from_its_mark_wherever_the_stamp_was() {
        let path = "/s/a.jsonl".to_owned();
        let previous = |size: u64, offset: u64, torn: bool| Imported {
            run_id: "claude-a".to_owned(),
            files: BTreeMap::from([(path.clone(), FileRecord { size, modified_ns: 1, read: Some(ReadMark { offset, lines: 3, torn, number: 0 }) })]),
            log: Some(10),
            merged: true,
            open: false,
        };
        let now = |size: u64| BTreeMap::from([(path.clone(), FileStamp { size, modified_ns: 2 })]);
        let how = |previous: Imported, size: u64| match compare(Some(&previous), &now(size), still_for(&now(size), DEFAULT_IDLE_LIMIT, crate::clock::now())) {
            Change::Grew(read_on) => format!("read on from {}", read_on.marks[&path].offset),
            Change::Changed { .. } => "read again".to_owned(),
            Change::Same | Change::New | Change::Gone(_) => "other".to_owned(),
        };
        assert_eq!(
            [
                how(previous(100, 100, false), 150),
                how(previous(100, 120, false), 150),
                how(previous(100, 120, false), 120),
                how(previous(100, 90, false), 150),
                how(previous(100, 120, false), 110),
                how(previous(100, 100, true), 150),
            ],
            ["read on from 100", "read on from 120", "read on from 120", "read on from 90", "read again", "read again"].map(str::to_owned)
        );
    }

    /// Kept sessions read a page at a time answer as point lookups do,
    /// with the digest of the files a point lookup gives: keys in order
    /// across pages, a key not kept, one asked out of order, and one asked
    /// again after its row was written anew.
    #[test]
    fn kept_sessions_read_by_pages_answer_as_point_lookups() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let catalog = Catalog::open_at(&dir.path().join("catalog.sqlite")).unwrap_or_else(|e| panic!("{e}"));
        let session = |n: usize| ImportedSession {
            run_id: format!("codex-{n:04}"),
            log: Some(n as u64),
            merged: n.is_multiple_of(3),
            open: n.is_multiple_of(5),
            files: BTreeMap::from([(format!("/s/{n}"), ImportedFile { size: n as u64, modified_ns: 1, read: None })]),
        };
        catalog.begin().unwrap_or_else(|e| panic!("{e}"));
        // Every other key of 0..2.5 pages is kept (the odd ones are not).
        for n in (0..KNOWN_PAGE * 5 / 2).step_by(2) {
            catalog.put_import_session(CODEX, &format!("k{n:04}"), &session(n)).unwrap_or_else(|e| panic!("{e}"));
        }
        catalog.put_import_session(CLAUDE, "k0002", &session(9999)).unwrap_or_else(|e| panic!("{e}"));
        catalog.commit().unwrap_or_else(|e| panic!("{e}"));
        let mut pages = KnownPages::default();
        let mut asked = Vec::new();
        let mut looked_up = Vec::new();
        let mut ask = |pages: &mut KnownPages, provider: &'static str, key: String| {
            asked.push(pages.get(&catalog, provider, &key).unwrap_or_else(|e| panic!("{e}")));
            looked_up.push(catalog.import_session(provider, &key).unwrap_or_else(|e| panic!("{e}")).map(|session| {
                let digest = session.files_digest();
                (ImportedSession { files: BTreeMap::new(), ..session }, Some(digest))
            }));
        };
        for n in 0..KNOWN_PAGE * 5 / 2 + 3 {
            ask(&mut pages, CODEX, format!("k{n:04}"));
        }
        ask(&mut pages, CODEX, "k0010".to_owned());
        catalog.put_import_session(CODEX, "k0600", &session(7)).unwrap_or_else(|e| panic!("{e}"));
        ask(&mut pages, CODEX, "k0600".to_owned());
        ask(&mut pages, CLAUDE, "k0002".to_owned());
        assert_eq!(asked, looked_up);
        assert_eq!(asked.iter().filter(|found| found.is_some()).count(), KNOWN_PAGE * 5 / 4 + 3);
    }

    #[test]
    fn the_runs_folder_lists_each_runs_files_by_id() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        fs::create_dir_all(home.runs_dir()).unwrap_or_else(|e| panic!("{e}"));
        let names = ["claude-a.jsonl", "claude-a.json", "claude-a.snapshot", "claude-a-b.jsonl", "claude-b.jsonl", "codex-x.json", "live1.jsonl", "live1.json", "notes.txt"];
        for name in names {
            fs::write(home.runs_dir().join(name), "").unwrap_or_else(|e| panic!("{e}"));
        }
        age_folders(dir.path());
        let files = |log, record, snapshot| RunFiles { log, record, snapshot };
        let ids = ["claude-a", "claude-a-b", "claude-aa", "claude-b", "codex-x", "codex-z", "live1"];
        // Each run's files, its live runs, and how many folders were listed.
        let list = |known: agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>| {
            let dirs = DirCache::new(known.clone());
            let mut runs = RunsListing::of(&home, &dirs).unwrap_or_else(|e| panic!("{e}"));
            let asked: Vec<RunFiles> = ids.iter().map(|id| runs.files_of(&RunId::from(*id)).unwrap_or_else(|e| panic!("{e}"))).collect();
            let live: Vec<String> = runs.live_ids().map(str::to_owned).collect();
            ((asked, live), dirs.listed(), kept(&dirs, known))
        };
        let expected = (
            vec![
                files(true, true, true),
                // `claude-a-b` is a run of its own, not a file of `claude-a`.
                files(true, false, false),
                files(false, false, false),
                files(true, false, false),
                files(false, true, false),
                files(false, false, false),
                files(true, true, false),
            ],
            vec!["live1".to_owned()],
        );
        let (first, listed, known) = list(agentrace_store::FastMap::default());
        assert_eq!((&first, listed), (&expected, 1));
        // The folder as it was: its kept listing, not listed again.
        let (again, listed, known) = list(known);
        assert_eq!((&again, listed), (&expected, 0));
        // A run's log gone: listed again.
        fs::remove_file(home.runs_dir().join("claude-b.jsonl")).unwrap_or_else(|e| panic!("{e}"));
        let (changed, listed, _) = list(known);
        let mut without = expected;
        without.0[3] = files(false, false, false);
        assert_eq!((changed, listed), (without, 1));
    }

    /// A history of more project folders than a listing holds open: the
    /// sessions of the first `HELD_PROJECTS` are stat'ed through their
    /// open project folder, the others by path, and both give every file
    /// the stamp its metadata gives, a repeated listing included.
    #[test]
    fn sessions_past_the_project_folders_held_open_are_stamped_by_path_alike() {
        let claude = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let projects = 260;
        for n in 0..projects {
            let project = claude.path().join(format!("projects/p{n:03}"));
            let subagents = project.join(format!("s{n:03}/subagents"));
            fs::create_dir_all(&subagents).unwrap_or_else(|e| panic!("{e}"));
            fs::write(project.join(format!("s{n:03}.jsonl")), "{}\n".repeat(n + 1)).unwrap_or_else(|e| panic!("{e}"));
            fs::write(subagents.join("agent-a.jsonl"), "{}\n").unwrap_or_else(|e| panic!("{e}"));
            fs::write(subagents.join("agent-a.meta.json"), "{}").unwrap_or_else(|e| panic!("{e}"));
        }
        age_folders(claude.path());
        let list = |known: agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>| {
            let dirs = std::sync::Arc::new(DirCache::new(known.clone()));
            let (found, sessions) = claude_found(Some(claude.path()), &dirs).unwrap_or_else(|e| panic!("{e}"));
            // Sessions whose files were all stamped by the walk (through
            // their project folder), and whether every stamp is right.
            let mut walked = 0;
            for session in sessions {
                let session = session.unwrap_or_else(|e| panic!("{e}"));
                let (files, listed) = session.files_with_stamps_in(&dirs).unwrap_or_else(|e| panic!("{e}"));
                let (_, stamps) = claude_session_files(&session, &dirs).unwrap_or_else(|e| panic!("{e}"));
                let by_path: BTreeMap<String, FileStamp> = files
                    .parts
                    .iter()
                    .map(|(_, path)| (path.to_string_lossy().into_owned(), FileStamp::of(&fs::metadata(path).unwrap_or_else(|e| panic!("{e}")))))
                    .collect();
                assert_eq!((files.parts.len(), &stamps), (3, &by_path));
                walked += usize::from(listed.iter().all(Option::is_some));
            }
            ((found, walked), kept(&dirs, known))
        };
        let (first, known) = list(agentrace_store::FastMap::default());
        assert_eq!(first, (projects, crate::sources::claude_ingest::HELD_PROJECTS));
        let (again, _) = list(known);
        assert_eq!(again, first);
    }

    #[test]
    fn a_repeated_claude_listing_lists_no_unchanged_folder_yet_finds_a_new_subagent_file_and_a_new_session() {
        let claude = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let project = claude.path().join("projects/p");
        let subagents = project.join("s1/subagents");
        fs::create_dir_all(&subagents).unwrap_or_else(|e| panic!("{e}"));
        fs::write(project.join("s1.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        fs::write(subagents.join("agent-a.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        // A workflow's helpers, two folders deeper (each opened through
        // its parent's handle).
        let nested = subagents.join("workflows/w1");
        fs::create_dir_all(&nested).unwrap_or_else(|e| panic!("{e}"));
        fs::write(nested.join("agent-c.jsonl"), "{}\n").unwrap_or_else(|e| panic!("{e}"));
        age_folders(claude.path());
        let list = |known: agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>| {
            let dirs = std::sync::Arc::new(DirCache::new(known.clone()));
            let (_, found) = claude_found(Some(claude.path()), &dirs).unwrap_or_else(|e| panic!("{e}"));
            let mut nested_stamp = None;
            let files: Vec<Vec<PathBuf>> = found
                .map(|session| {
                    let session = session.unwrap_or_else(|e| panic!("{e}"));
                    let (files, stamps) = claude_session_files(&session, &dirs).unwrap_or_else(|e| panic!("{e}"));
                    nested_stamp = nested_stamp.or(stamps.get(nested.join("agent-c.jsonl").to_string_lossy().as_ref()).map(|stamp| stamp.size));
                    // Each file stat'ed through its project folder, by the
                    // path below it, has the stamp its metadata gives; so
                    // has each reached by its path (a session read back
                    // from a sorting file has no folder open).
                    let by_path: BTreeMap<String, FileStamp> = files
                        .parts
                        .iter()
                        .map(|(_, path)| (path.to_string_lossy().into_owned(), FileStamp::of(&fs::metadata(path).unwrap_or_else(|e| panic!("{e}")))))
                        .collect();
                    assert_eq!(stamps, by_path);
                    let (_, listed) = session.files_with_stamps_in(&DirCache::new(known.clone())).unwrap_or_else(|e| panic!("{e}"));
                    assert!(listed.iter().all(Option::is_some), "every file stamped by the walk, none by its path afterwards: {listed:?}");
                    let unheld: FoundSession = serde_json::from_value(serde_json::to_value(&session).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"));
                    let (unheld_files, unheld_stamps) = claude_session_files(&unheld, &DirCache::new(known.clone())).unwrap_or_else(|e| panic!("{e}"));
                    assert_eq!((unheld_files.parts, unheld_stamps), (files.parts.clone(), by_path));
                    files.parts.into_iter().map(|(_, path)| path).collect()
                })
                .collect();
            assert_eq!(nested_stamp, Some(3), "the nested helper's file is stat'ed");
            (files, dirs.listed(), kept(&dirs, known))
        };
        // projects, p, s1, subagents, workflows, w1.
        let (first, listed, known) = list(agentrace_store::FastMap::default());
        assert_eq!((first.clone(), listed), (vec![vec![project.join("s1.jsonl"), subagents.join("agent-a.jsonl"), nested.join("agent-c.jsonl")]], 6));
        let (again, listed, known) = list(known);
        assert_eq!((again, listed), (first, 0));

        fs::write(subagents.join("agent-b.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(project.join("s2")).unwrap_or_else(|e| panic!("{e}"));
        fs::write(project.join("s2.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        let (grown, listed, _) = list(known);
        assert_eq!(
            (grown, listed),
            (
                vec![
                    vec![project.join("s1.jsonl"), subagents.join("agent-a.jsonl"), subagents.join("agent-b.jsonl"), nested.join("agent-c.jsonl")],
                    vec![project.join("s2.jsonl")]
                ],
                // p, subagents, and the new s2.
                3
            )
        );
    }
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "the test writes the sources and copies a home")]
mod written_tests {
    use agentrace_testkit::files::{copy_dir, fixtures};

    use super::*;

    const PARALLEL: &str = "fd58dc89-e115-4779-9069-40516d4c7e70";
    const NESTED: &str = "d882d213-4da9-4bcb-bd05-cb557061dd59";

    /// A follower's pass goes on from the reading its last pass left (the
    /// session is not fed again from its start), through a line caught half
    /// written, and the run ends as one import of the finished file makes
    /// it: the same envelopes, the same view.
    #[test]
    fn a_follower_goes_on_from_its_last_pass_and_ends_as_a_whole_import() {
        let session = "8beed115-2652-4f2b-897f-f3849f761b78";
        let main = fixtures().join(format!("claude/single_fg/home_claude/projects/-home-dev-agents-work-single-fg/{session}.jsonl"));
        let bytes = fs::read(&main).unwrap_or_else(|e| panic!("{e}"));
        let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let project = sources.path().join("claude/projects/-work");
        fs::create_dir_all(&project).unwrap_or_else(|e| panic!("{e}"));
        let path = project.join(format!("{session}.jsonl"));
        let args = ImportArgs::quiet_of(None, Some(sources.path().join("claude")));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let resumes = Resumes::default();
        // Cut at line ends, and once in the middle of a line (its rest
        // comes with the next piece).
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, byte)| **byte == b'\n').map(|(at, _)| at + 1).collect();
        let cuts = [ends[2], ends[5], ends[6] + 40, ends[9], ends[12], ends[20], bytes.len()];
        let mut written = 0;
        for cut in cuts {
            let mut file = fs::OpenOptions::new().create(true).append(true).open(&path).unwrap_or_else(|e| panic!("{e}"));
            std::io::Write::write_all(&mut file, &bytes[written..cut]).unwrap_or_else(|e| panic!("{e}"));
            written = cut;
            import_following(&home, &args, &Scope::Everything, &resumes).unwrap_or_else(|e| panic!("{e}"));
        }
        // The first pass made the run, the second replayed it to go on; each
        // later one went on from the reading the one before left.
        assert_eq!(resumes.gone_on(), cuts.len() as u64 - 2);

        let whole_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let whole = Home::at(whole_dir.path());
        import(&whole, &args, TornLines::Feed).unwrap_or_else(|e| panic!("{e}"));
        let id = RunId::from(format!("claude-{session}"));
        let read = |home: &Home| {
            let envelopes: Vec<serde_json::Value> = agentrace_store::LogReader::open(&home.log_path(&id))
                .unwrap_or_else(|e| panic!("{e}"))
                .map(|envelope| serde_json::to_value(envelope.unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}")))
                .collect();
            let view = serde_json::to_value(home.load_run(&id).unwrap_or_else(|e| panic!("{e}")).view()).unwrap_or_else(|e| panic!("{e}"));
            (envelopes, view)
        };
        let (followed, made_whole) = (read(&home), read(&whole));
        assert!(followed.0.len() > 20, "{}", followed.0.len());
        assert_eq!(followed, made_whole);
    }

    /// A repeated import tells a session whose files are as it left them
    /// from the digest of their stamps its row keeps (it read every file's
    /// row, the largest part of its work in the catalog). A row kept
    /// without a digest (by schema 7) or with a wrong one is answered from
    /// its files' rows and gets the right digest; a file changed since is
    /// found changed, its digest no longer the kept one.
    #[test]
    fn an_unchanged_session_is_told_by_the_digest_of_its_files_which_an_older_row_gets_at_the_next_import() {
        let fixtures = fixtures();
        let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        copy_dir(&fixtures.join("codex/v1_parallel/rollouts"), &sources.path().join("codex/sessions"));
        for capture in ["parallel_fg", "nested_fg"] {
            copy_dir(&fixtures.join("claude").join(capture).join("home_claude"), &sources.path().join("claude"));
        }
        // Every file still for the idle limit: no session is left open.
        let args = ImportArgs::quiet_of(Some(sources.path().join("codex")), Some(sources.path().join("claude"))).with_idle_limit(0);
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let counts = |report: ImportReport| (report.new, report.changed, report.unchanged);
        assert_eq!(counts(run(&home, &args).unwrap_or_else(|e| panic!("{e}"))), (3, 0, 0));
        // Each session's kept digest, and the one of its kept files.
        let digests = || {
            let catalog = crate::catalog::open(&home).unwrap_or_else(|e| panic!("{e}"));
            let keys: Vec<(String, String, Option<Vec<u8>>)> = catalog
                .connection()
                .prepare("SELECT provider, key, files_digest FROM import_sessions ORDER BY provider, key")
                .and_then(|mut rows| rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect())
                .unwrap_or_else(|e| panic!("{e}"));
            keys.into_iter()
                .map(|(provider, key, kept)| {
                    let session = catalog.import_session(&provider, &key).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("{key}"));
                    (format!("{provider} {key}"), kept, Some(session.files_digest().to_vec()))
                })
                .collect::<Vec<_>>()
        };
        let made = digests();
        assert_eq!(made.len(), 3);
        assert!(made.iter().all(|(_, kept, digest)| kept == digest), "{made:?}");
        let catalog = crate::catalog::open(&home).unwrap_or_else(|e| panic!("{e}"));
        catalog
            .connection()
            .execute_batch("UPDATE import_sessions SET files_digest = NULL WHERE provider = 'claude'; UPDATE import_sessions SET files_digest = zeroblob(16) WHERE provider = 'codex';")
            .unwrap_or_else(|e| panic!("{e}"));
        drop(catalog);
        assert_eq!(counts(run(&home, &args).unwrap_or_else(|e| panic!("{e}"))), (0, 0, 3));
        assert_eq!(digests(), made);
        // A Claude session's main file touched (its size as it was).
        let main = fs::read_dir(sources.path().join("claude/projects"))
            .and_then(|mut projects| projects.next().unwrap_or_else(|| panic!("no project")))
            .and_then(|project| fs::read_dir(project.path()))
            .map(|files| files.flatten().map(|file| file.path()).find(|path| path.extension().is_some_and(|ext| ext == "jsonl")))
            .unwrap_or_else(|e| panic!("{e}"))
            .unwrap_or_else(|| panic!("no transcript"));
        let touched = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        fs::File::options().append(true).open(&main).and_then(|file| file.set_modified(touched)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(counts(run(&home, &args).unwrap_or_else(|e| panic!("{e}"))), (0, 1, 2));
        let after = digests();
        assert!(after.iter().all(|(_, kept, digest)| kept == digest), "{after:?}");
        assert_eq!(after.iter().filter(|found| !made.contains(found)).count(), 1);
    }

    /// Appends a file's last line to it once more.
    fn grow(path: &Path) {
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
        let last = text.lines().last().unwrap_or_else(|| panic!("{} is empty", path.display()));
        let mut file = fs::OpenOptions::new().append(true).open(path).unwrap_or_else(|e| panic!("{e}"));
        std::io::Write::write_all(&mut file, format!("{last}\n").as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    }

    fn sorted(mut ids: Vec<RunId>) -> Vec<String> {
        let mut ids: Vec<String> = ids.drain(..).map(|id| id.as_str().to_owned()).collect();
        ids.sort();
        ids
    }

    /// An import of the files a watcher saw written reads their sessions
    /// and no other (a session grown but not named waits for a whole
    /// import), and leaves each run as one whole import of the same files
    /// makes it, byte for byte. A file no import read (a new session's)
    /// makes it a whole import.
    #[test]
    fn an_import_of_written_files_reads_only_their_sessions_and_ends_them_as_a_whole_import() {
        let fixtures = fixtures();
        let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for capture in ["v1_basic", "v2_basic"] {
            copy_dir(&fixtures.join("codex").join(capture).join("rollouts"), &sources.path().join("codex/sessions"));
        }
        for capture in ["parallel_fg", "nested_fg"] {
            copy_dir(&fixtures.join("claude").join(capture).join("home_claude"), &sources.path().join("claude"));
        }
        let args = ImportArgs::quiet_of(Some(sources.path().join("codex")), Some(sources.path().join("claude")));
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        let first = import(&home, &args, TornLines::Feed).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(first.len(), 4, "{first:?}");

        let projects = sources.path().join("claude/projects");
        let parallel = projects.join("-home-dev-agents-work-parallel-fg").join(format!("{PARALLEL}.jsonl"));
        let nested = projects.join("-home-dev-agents-work-nested-fg").join(format!("{NESTED}.jsonl"));
        // The child's rollout of v1: its session is its root's.
        let child = sources.path().join("codex/sessions/2026/11/29/rollout-2026-11-29T23-03-28-01a2298c-947a-75b0-8b49-6a2e1016272b.jsonl");
        for path in [&parallel, &nested, &child] {
            grow(path);
        }
        // The same home, to import whole.
        let twin_dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        copy_dir(dir.path(), twin_dir.path());
        let twin = Home::at(twin_dir.path());

        let written = Scope::Written([parallel.clone(), child.clone()].into());
        let scoped = import_in(&home, &args, TornLines::Feed, &written).unwrap_or_else(|e| panic!("{e}"));
        let rest = import(&home, &args, TornLines::Feed).unwrap_or_else(|e| panic!("{e}"));
        let whole = import(&twin, &args, TornLines::Feed).unwrap_or_else(|e| panic!("{e}"));
        let codex = whole.iter().find(|id| id.as_str().starts_with("codex-")).cloned().unwrap_or_else(|| panic!("{whole:?}"));
        assert_eq!(
            (sorted(scoped), sorted(rest), sorted(whole.clone())),
            (
                sorted(vec![RunId::from(format!("claude-{PARALLEL}")), codex.clone()]),
                vec![format!("claude-{NESTED}")],
                sorted(vec![RunId::from(format!("claude-{PARALLEL}")), RunId::from(format!("claude-{NESTED}")), codex]),
            )
        );
        for id in &whole {
            let log = |home: &Home| fs::read(home.log_path(id)).unwrap_or_else(|e| panic!("{e}"));
            assert!(log(&home) == log(&twin), "{id}: the scoped import's log differs from the whole import's");
        }

        // A file no import read: everything is looked at.
        grow(&nested);
        let unknown = Scope::Written([projects.join("-home-dev-agents-work-nested-fg/new-session.jsonl")].into());
        let everything = import_in(&home, &args, TornLines::Feed, &unknown).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sorted(everything), vec![format!("claude-{NESTED}")]);
    }
}
