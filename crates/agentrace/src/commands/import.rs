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
use std::io::{BufRead as _, BufReader, IsTerminal as _, Read as _};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use agentrace_core::decode;
use agentrace_core::model::{RunId, SessionEndReason, Timestamp};
use agentrace_core::recorder::{Format, SourcePart};
use agentrace_core::state::RunView;
use agentrace_core::Recorder;
use agentrace_store::raw_ref::CopyWriter;
use agentrace_store::{Home, RunFiles};
use anyhow::Context as _;
use clap::Args;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::recording::{Cadence, Recording, Setup, TextsTo};
use crate::sources::claude_ingest::{claude_config_dir, FoundSession};
use crate::sources::codex_sessions::{CodexSessions, Packer, Rest};
use crate::clock::now;
use crate::sources::dirs::{DirCache, Kind};
use crate::sources::session_feed::{Reach, SessionFeed, TornLines};
use crate::commands::usage::{LogStamp, UsageIndex};
use agentrace_store::catalog::{HeadRow, ImportedFile, ImportedSession, ReadRow, TextRow};
use agentrace_store::Catalog;

/// Arguments of `agentrace import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Codex home to read (`sessions/` and `archived_sessions/`; default:
    /// `$CODEX_HOME`, else `~/.codex`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Claude Code config dir to read (`projects/`; default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// Only sessions started on or after this day (`YYYY-MM-DD`, UTC).
    #[arg(long, value_name = "DATE")]
    since: Option<String>,
    /// No progress bar and no summary on stderr.
    #[arg(long, short)]
    quiet: bool,
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
}

/// How long a session's files stay still before an import (or `watch`)
/// ends what is live in it, seconds.
pub const DEFAULT_IDLE_LIMIT: u64 = 600;

impl ImportArgs {
    /// The arguments of an import of these homes (each, when not given,
    /// found as `import` finds it), with nothing said on stderr.
    pub(crate) fn quiet_of(codex_home: Option<PathBuf>, claude_dir: Option<PathBuf>) -> Self {
        Self { codex_home, claude_dir, since: None, quiet: true, otlp: None, keep_raw: false, idle_limit: DEFAULT_IDLE_LIMIT }
    }

    /// These arguments, with another idle limit (`watch --idle-limit`).
    pub(crate) fn with_idle_limit(self, idle_limit: u64) -> Self {
        Self { idle_limit, ..self }
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
        self.claude_dir.clone().or_else(claude_config_dir)
    }
}

/// Size and modification time of one file, as last imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileStamp {
    size: u64,
    /// Nanoseconds since the Unix epoch (64 bits last until 2554; a head is
    /// kept per rollout, so its size counts).
    modified_ns: u64,
}

impl FileStamp {
    /// The stamp of a file's metadata.
    pub(crate) fn of(metadata: &fs::Metadata) -> FileStamp {
        let modified_ns = metadata
            .modified()
            .ok()
            .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
            .map(|elapsed| u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        FileStamp {
            size: metadata.len(),
            modified_ns,
        }
    }

    /// The stamp of file `name` in the open folder `dir`, stat'ed through
    /// the folder's handle (a link where it points); as [`FileStamp::of`]
    /// gives it. `None` when it cannot be.
    pub(crate) fn at(dir: &fs::File, name: &[u8]) -> Option<FileStamp> {
        let stat = nix::sys::stat::fstatat(dir, OsStr::from_bytes(name), nix::fcntl::AtFlags::empty()).ok()?;
        let modified_ns = match (u64::try_from(stat.st_mtime), u64::try_from(stat.st_mtime_nsec)) {
            (Ok(seconds), Ok(nanoseconds)) => seconds.saturating_mul(1_000_000_000).saturating_add(nanoseconds),
            // Before the epoch, as `of` has it.
            _ => 0,
        };
        Some(FileStamp {
            size: u64::try_from(stat.st_size).unwrap_or(0),
            modified_ns,
        })
    }

    /// The stamp of a listed file, stat'ed through its folder's handle
    /// (not by its whole path again: that was half the cost of each stat);
    /// a link is stat'ed where it points. `None` when it cannot be.
    pub(crate) fn of_entry(entry: &fs::DirEntry) -> Option<FileStamp> {
        let metadata = match entry.file_type() {
            Ok(kind) if !kind.is_symlink() => entry.metadata(),
            _ => fs::metadata(entry.path()),
        };
        metadata.ok().map(|metadata| FileStamp::of(&metadata))
    }
}

#[cfg(test)]
/// A path's bytes as they sort in path order: component by component,
/// which is byte by byte with the separator before any other byte.
pub(crate) fn path_sort_bytes(path: &[u8]) -> impl Iterator<Item = u8> + '_ {
    path.iter().map(|byte| if *byte == b'/' { 0 } else { *byte })
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

#[cfg(test)]
/// Paths in the order [`RolloutWalk`] lists them: byte by byte, a
/// separator before any other byte.
fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    path_sort_bytes(a.as_bytes()).cmp(path_sort_bytes(b.as_bytes()))
}

/// The rollouts `walk` lists, grouped as [`codex_sessions`] does,
/// reading a rollout's head (on every core) only when its stamp differs
/// from the one the catalog keeps. The catalog is updated as the walk goes:
/// a head read anew is put, one of a rollout no longer there removed (an
/// import that found nothing changed writes nothing).
fn codex_sessions_known(walk: impl Iterator<Item = (PathBuf, Option<FileStamp>)>, catalog: &std::sync::Mutex<Catalog>) -> anyhow::Result<CodexSessions> {
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
    let mut known = lock()?.rollout_heads()?;
    let mut packer = Packer::default();
    // One that vanished since the listing (no stamp) is left out.
    let mut walk = walk.filter_map(|(path, stamp)| Some((path, stamp?)));
    let mut window: Vec<Listed> = Vec::new();
    let mut new_heads: Vec<(String, HeadRow)> = Vec::new();
    loop {
        // The heads to read are read together; the window is bounded.
        let mut unknown: Vec<PathBuf> = Vec::new();
        while unknown.len() < HEADS_CHUNK && window.len() < 4 * HEADS_CHUNK {
            let Some((path, stamp)) = walk.next() else { break };
            let key = path.to_string_lossy().into_owned();
            let head = known.remove(&key);
            let listed = Listed { path, key, stamp, known: head };
            if !listed.is_known() {
                unknown.push(listed.path.clone());
            }
            window.push(listed);
        }
        if window.is_empty() {
            break;
        }
        let mut read = crate::parallel::map(&unknown, |path| Ok(rollout_head(path)))?.into_iter();
        for listed in window.drain(..) {
            if listed.is_known() {
                let Some(head) = &listed.known else { continue };
                let rest = Rest {
                    depth: head.depth,
                    started: head.started,
                    stamp: Some(listed.stamp),
                };
                packer.push(&listed.path, &head.thread, head.parent.as_deref(), &rest)?;
            } else if let Some(head) = read.next().flatten() {
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
    packer.group()
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
}

/// What changed in a session's files since the last import.
enum Change {
    Same,
    New,
    /// Files only grew (or were added) since a reading that stopped at
    /// their ends: read on from the marks (a file not in them, whole).
    Grew(ReadOn),
    /// Read again whole (`shrank` names the files that got shorter).
    Changed { shrank: Vec<String> },
}

fn compare(previous: Option<&Imported>, now: &BTreeMap<String, FileStamp>, idle_limit: u64) -> Change {
    let Some(previous) = previous else {
        return Change::New;
    };
    let same = |path: &String, stamp: &FileStamp| previous.files.get(path).is_some_and(|old| old.is(stamp));
    // A session read young and left open is read on (from its ends: no
    // line more) once its files are still, to be ended: unchanged files
    // alone never would have.
    if previous.files.len() == now.len()
        && now.iter().all(|(path, stamp)| same(path, stamp))
        && !(previous.open && still_for(now, idle_limit))
    {
        return Change::Same;
    }
    let shrank: Vec<String> = now
        .iter()
        .filter(|(path, stamp)| previous.files.get(*path).is_some_and(|old| stamp.size < old.size))
        .map(|(path, _)| path.clone())
        .collect();
    // Reading on is right only when every file known before is still there
    // and was read to its end, on a line's end, and has only grown since.
    let grew = shrank.is_empty()
        && previous.merged
        && previous.files.iter().all(|(path, old)| {
            let (Some(stamp), Some(mark)) = (now.get(path), old.read) else {
                return false;
            };
            old.is(stamp) || (stamp.size > old.size && mark.offset == old.size && !mark.torn)
        });
    if grew {
        Change::Grew(ReadOn {
            marks: previous.files.iter().filter_map(|(path, old)| Some((path.clone(), old.read?))).collect(),
            unchanged: previous.files.iter().filter(|(path, old)| now.get(*path).is_some_and(|stamp| old.is(stamp))).map(|(path, _)| path.clone()).collect(),
        })
    } else {
        Change::Changed { shrank }
    }
}

/// The head of a Codex rollout.
#[derive(Debug, Clone)]
pub struct RolloutHead {
    /// The file.
    pub path: PathBuf,
    /// Its thread.
    pub thread: String,
    /// Its parent, for a child.
    pub parent: Option<String>,
    /// Spawn depth (0 for a root).
    pub depth: u64,
    /// When the session started.
    pub started: Option<Timestamp>,
    /// The file's stamp, when listed with one.
    pub(crate) stamp: Option<FileStamp>,
}

/// The rollouts of a Codex home in path order (byte by byte, a separator
/// before any other byte: see [`path_sort_bytes`]), each with its stamp
/// when `stamped` (`None` for one that cannot be stat'ed; see
/// [`FileStamp::at`]: the stats are most of a repeated import). Each
/// folder is listed and sorted as the walk enters it, so only the folders
/// on the way are held, never the whole listing, and of each entry only
/// its name and kind (a day's folder may hold thousands).
pub(crate) struct RolloutWalk {
    /// The folders entered, innermost last.
    folders: Vec<Folder>,
    /// The top folders not yet entered, the next last.
    tops: Vec<PathBuf>,
    stamped: bool,
    /// The listings kept by the last import: a folder unchanged since is
    /// not listed again.
    dirs: Option<std::sync::Arc<DirCache>>,
}

/// A folder being walked.
struct Folder {
    path: PathBuf,
    /// Open when stamping: its files are stat'ed through it, by name.
    handle: Option<fs::File>,
    /// Its entries not yet visited (name and kind), the next last.
    entries: Vec<(Box<[u8]>, Kind)>,
}

impl RolloutWalk {
    pub(crate) fn new(codex_home: &Path, stamped: bool) -> Self {
        Self {
            folders: Vec::new(),
            // `archived_sessions` sorts before `sessions`.
            tops: vec![codex_home.join("sessions"), codex_home.join("archived_sessions")],
            stamped,
            dirs: None,
        }
    }

    /// The walk, taking folders' entries from `dirs` where it can.
    pub(crate) fn with_dirs(self, dirs: std::sync::Arc<DirCache>) -> Self {
        Self { dirs: Some(dirs), ..self }
    }

    /// Lists `dir`, sorted so that the walk goes on in path order: names
    /// byte by byte, as no name holds a separator.
    fn enter(&mut self, dir: PathBuf) {
        let (mut entries, handle) = if let Some(dirs) = &self.dirs {
            // The handle's stat is the folder's stamp; the handle stats
            // its files.
            let Some((handle, stat)) = crate::sources::dirs::open(&dir) else {
                return;
            };
            let Some(entries) = dirs.entries(&dir, &stat) else {
                return;
            };
            (entries, self.stamped.then_some(handle))
        } else {
            let Ok(listing) = fs::read_dir(&dir) else {
                return;
            };
            let entries: Vec<(Box<[u8]>, Kind)> = listing
                .flatten()
                .map(|entry| (entry.file_name().into_encoded_bytes().into_boxed_slice(), Kind::of(entry.file_type().ok())))
                .collect();
            (entries, if self.stamped { fs::File::open(&dir).ok() } else { None })
        };
        entries.sort_unstable_by(|(a, _), (b, _)| b.cmp(a));
        self.folders.push(Folder { path: dir, handle, entries });
    }
}

impl Iterator for RolloutWalk {
    type Item = (PathBuf, Option<FileStamp>);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(folder) = self.folders.last_mut() else {
                let top = self.tops.pop()?;
                self.enter(top);
                continue;
            };
            let Some((name, kind)) = folder.entries.pop() else {
                self.folders.pop();
                continue;
            };
            // The listing's own kind: a stat per rollout was a good part
            // of a repeated import.
            let is_dir = crate::sources::dirs::is_dir(&folder.path, &name, kind);
            let path = folder.path.join(OsStr::from_bytes(&name));
            if is_dir {
                // A bound keeps a folder that links back to itself from
                // being walked for ever.
                if self.folders.len() <= WALK_DEPTH {
                    self.enter(path);
                }
                continue;
            }
            if name.starts_with(b"rollout-") && name.ends_with(b".jsonl") {
                let stamp = folder.handle.as_ref().and_then(|handle| FileStamp::at(handle, &name));
                return Some((path, stamp));
            }
        }
    }
}

/// How deep a Codex home's folders are walked.
const WALK_DEPTH: usize = 16;

/// Reads a rollout's head: its first line (its `session_meta`), skimmed
/// into its lean form (without the base instructions, often tens of KB,
/// never built), which alone is parsed. Only the file's first
/// [`HEAD_PREFIX`] bytes are read when they hold every member before the
/// base instructions (see [`head_before_instructions`]).
pub fn rollout_head(path: &Path) -> Option<RolloutHead> {
    rollout_head_within(path, HEAD_PREFIX)
}

/// How much of a rollout [`rollout_head`] reads first.
const HEAD_PREFIX: usize = 8 * 1024;

fn rollout_head_within(path: &Path, prefix: usize) -> Option<RolloutHead> {
    let file = fs::File::open(path).ok()?;
    // A session_meta carries the base instructions: allow it a few MiB.
    let mut reader = BufReader::with_capacity(prefix, file.take(16 * 1024 * 1024));
    let first = reader.fill_buf().ok()?;
    if memchr::memchr(b'\n', first).is_none() && first.len() == prefix {
        if let Some(head) = head_before_instructions(first).and_then(|lean| head_of(path, &lean, true)) {
            return Some(head);
        }
    }
    let mut line = Vec::new();
    reader.read_until(b'\n', &mut line).ok()?;
    head_of(path, &agentrace_core::rollout::lean_line(&line)?, false)
}

/// The lean form of a `session_meta` line cut inside its base
/// instructions: its members before them, closed. Codex writes a thread's
/// id, parent, spawn and start before the base instructions (and after them
/// only the history mode, agent version and context window), so these
/// bytes tell the head without the rest of the line. `None` when the cut
/// is elsewhere (the line is then read whole).
fn head_before_instructions(prefix: &[u8]) -> Option<String> {
    // `,"` cannot occur inside a JSON string (its quote would be escaped):
    // this is a member's key, and the object it ends must be the payload,
    // the only one closed after it.
    let at = memchr::memmem::find(prefix, b",\"base_instructions\":")?;
    let mut closed = prefix[..at].to_vec();
    closed.extend_from_slice(b"}}");
    agentrace_core::rollout::lean_line(&closed)
}

/// A rollout's head from its lean first line, or from its members before
/// the base instructions when `cut`.
fn head_of(path: &Path, lean: &str, cut: bool) -> Option<RolloutHead> {
    let head: Value = serde_json::from_str(lean).ok()?;
    if head.get("type").and_then(Value::as_str) != Some("session_meta") {
        return None;
    }
    let payload = head.get("payload")?;
    if cut && payload.get("source").is_none() {
        // Not the members Codex writes first: read the whole line.
        return None;
    }
    let spawn = payload.get("source").and_then(|source| {
        source
            .pointer("/subagent/thread_spawn")
            .or_else(|| source.pointer("/subAgent/thread_spawn"))
    });
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    Some(RolloutHead {
        path: path.to_path_buf(),
        thread: text(payload.get("id"))?,
        parent: text(spawn.and_then(|spawn| spawn.get("parent_thread_id"))).or_else(|| text(payload.get("parent_thread_id"))),
        depth: spawn
            .and_then(|spawn| spawn.get("depth"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        started: head.get("timestamp").and_then(Value::as_str).and_then(Timestamp::parse),
        stamp: None,
    })
}

/// Rollouts grouped into sessions: top-most known ancestor → files,
/// parents before children (see [`Packer::group`]); rollouts are set aside
/// in the system's temporary folder past the packer's budget.
pub fn codex_sessions(codex_home: &Path) -> anyhow::Result<CodexSessions> {
    let mut packer = Packer::default();
    let mut walk = RolloutWalk::new(codex_home, false).map(|(path, _)| path);
    loop {
        let chunk: Vec<PathBuf> = walk.by_ref().take(HEADS_CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        for head in crate::parallel::map(&chunk, |path| Ok(rollout_head(path)))?.into_iter().flatten() {
            packer.push_head(&head)?;
        }
    }
    packer.group()
}

/// How many rollout heads are read together on every core (each is a
/// first line of tens of KB to read and check); the heads of all
/// rollouts are never held unpacked at once.
const HEADS_CHUNK: usize = 1024;

/// Where the reading of one source file stopped (kept per file in the
/// import state, so the next import reads on from there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadMark {
    /// Bytes read, up to the end of the last whole line.
    pub offset: u64,
    /// Lines read (numbering goes on from here).
    pub lines: u64,
    /// A last line with no newline was read as it was: the file cannot be
    /// read on from `offset` without reading that line twice.
    #[serde(default)]
    pub torn: bool,
    /// The file's number among its session's rollouts, in feeding order.
    #[serde(default)]
    pub number: u32,
}

pub use crate::sources::session_feed::Sink;

/// How much of a file one read asks for.
const READ_SIZE: usize = 256 * 1024;

thread_local! {
    /// The buffer files are read through, one per thread for all the files
    /// it reads: one per session (allocated, zeroed and faulted in each
    /// time) was a tenth of reading usage straight from folders.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; READ_SIZE]);
}

/// A small file whole (`fs::read` asks for the size first and reads once
/// more to see the end: two system calls more per subagent's metadata).
pub(crate) fn read_small(path: &Path) -> anyhow::Result<Vec<u8>> {
    let mut file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut bytes = Vec::new();
    read_chunks(&mut file, path, |chunk| {
        bytes.extend_from_slice(chunk);
        Ok(())
    })?;
    Ok(bytes)
}

/// Reads `file` (`path`) to its end through this thread's read buffer (a
/// fresh one, were it in use), handing `each` every chunk; returns the
/// bytes read. A read that comes back short is the end (as the file is now:
/// what an agent appends later is read by the next import, from the offset
/// returned): asking again only to be told so was a system call per file.
fn read_chunks(
    file: &mut fs::File,
    path: &Path,
    mut each: impl FnMut(&[u8]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut chunks = |buffer: &mut [u8]| {
        let mut total = 0u64;
        loop {
            let read = file.read(buffer).with_context(|| format!("cannot read {}", path.display()))?;
            total += read as u64;
            if read > 0 {
                each(&buffer[..read])?;
            }
            if read < buffer.len() {
                return Ok(total);
            }
        }
    };
    READ_BUFFER.with(|buffer| match buffer.try_borrow_mut() {
        Ok(mut buffer) => chunks(&mut buffer),
        Err(_) => chunks(&mut vec![0u8; READ_SIZE]),
    })
}

/// A Codex session's rollouts as the parts of one source: each a `File`
/// numbered in the listed order (parents before children).
pub(crate) fn rollout_parts(files: &[RolloutHead]) -> Vec<(SourcePart, PathBuf)> {
    files
        .iter()
        .enumerate()
        .map(|(number, head)| (SourcePart::File { number: u32::try_from(number).unwrap_or(u32::MAX) }, head.path.clone()))
        .collect()
}

/// Feeds one session's rollout files to `recorder`, merged in time order
/// (see [`crate::sources::session_feed`]); `sink` gets each batch. Returns where the
/// reading of each file stopped, by path.
pub fn feed_rollouts(recorder: &mut Recorder, files: &[RolloutHead], sink: Sink<'_>) -> anyhow::Result<BTreeMap<String, ReadMark>> {
    feed_whole(recorder, &rollout_parts(files), codex_start(files), TornLines::Feed, sink)
}

/// Feeds one Claude session's files to `recorder`, merged in time order (a
/// metadata document is one line, just before its subagent's first line);
/// `sink` gets each batch. Returns where the reading of each file stopped,
/// by path.
pub fn feed_claude(
    recorder: &mut Recorder,
    session: &crate::sources::claude_ingest::SessionFiles,
    sink: Sink<'_>,
) -> anyhow::Result<BTreeMap<String, ReadMark>> {
    feed_whole(recorder, &session.parts, claude_start(session), TornLines::Feed, sink)
}

/// Feeds `parts` whole from their start (lines that name no time get
/// `start` until one does).
fn feed_whole(
    recorder: &mut Recorder,
    parts: &[(SourcePart, PathBuf)],
    start: Timestamp,
    torn_lines: TornLines,
    sink: Sink<'_>,
) -> anyhow::Result<BTreeMap<String, ReadMark>> {
    let mut feed = SessionFeed::new(parts, start, torn_lines).referencing();
    match feed.feed(recorder, Reach::Ends, sink)? {
        Ok(()) => Ok(feed.marks()),
        // Nothing was fed before this pass, so nothing can come too late.
        Err(diverged) => anyhow::bail!("{} could not be read in order", diverged.path.display()),
    }
}

/// The first `timestamp` of a transcript (read line by line until one is
/// found, each line's other members skimmed over, never built).
fn first_time(path: &Path) -> Option<Timestamp> {
    let file = fs::File::open(path).ok()?;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let mut found = None;
        decode::visit_members(&line, &mut |key, raw| {
            if key == "timestamp" {
                found = decode::raw_string(raw).and_then(|text| Timestamp::parse(&text));
            }
            found.is_none()
        });
        if found.is_some() {
            return found;
        }
    }
}

fn codex_home(args: &ImportArgs) -> Option<PathBuf> {
    args.codex_home.clone().or_else(|| {
        std::env::var_os("CODEX_HOME")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from)
            .or_else(|| dirs_home().map(|home| home.join(".codex")))
    })
}

fn dirs_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

fn since(args: &ImportArgs) -> anyhow::Result<Option<Timestamp>> {
    args.since
        .as_ref()
        .map(|day| {
            Timestamp::parse(&format!("{day}T00:00:00Z"))
                .with_context(|| format!("--since {day}: expected a day like 2026-11-30"))
        })
        .transpose()
}

fn progress(args: &ImportArgs, total: u64) -> indicatif::ProgressBar {
    if args.quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} sessions {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix("importing");
    bar
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

/// True when every one of a session's files has been still for
/// `idle_limit` seconds (by their modification times): nothing more is
/// coming, so what its log leaves open is over.
fn still_for(stamps: &BTreeMap<String, FileStamp>, idle_limit: u64) -> bool {
    let now_ns = u64::try_from(now().millis()).unwrap_or(0).saturating_mul(1_000_000);
    let limit_ns = idle_limit.saturating_mul(1_000_000_000);
    !stamps.is_empty() && stamps.values().all(|stamp| now_ns.saturating_sub(stamp.modified_ns) >= limit_ns)
}

/// When a Codex session started: its earliest rollout's time, else now.
pub fn codex_start(files: &[RolloutHead]) -> Timestamp {
    files.iter().filter_map(|head| head.started).min().unwrap_or_else(now)
}

/// When a Claude session started: the first time its main file names,
/// else now (`import` and `usage` date a session alike).
pub fn claude_start(session: &crate::sources::claude_ingest::SessionFiles) -> Timestamp {
    session
        .parts
        .first()
        .and_then(|(_, path)| first_time(path))
        .unwrap_or_else(now)
}

/// A Claude session's working folder: the first `cwd` its main file's
/// lines name (each transcript line carries it; the first few are
/// enough, and a file without one is not read to its end).
pub fn claude_cwd(session: &crate::sources::claude_ingest::SessionFiles) -> Option<String> {
    let (_, path) = session.parts.first()?;
    let mut reader = BufReader::new(fs::File::open(path).ok()?);
    let mut line = Vec::new();
    for _ in 0..CWD_LINES {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let mut found = None;
        decode::visit_members(&line, &mut |key, raw| {
            if key == "cwd" {
                found = decode::raw_string(raw).map(std::borrow::Cow::into_owned);
            }
            found.is_none()
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// How many lines of a transcript [`claude_cwd`] looks at.
const CWD_LINES: usize = 64;

/// How an import records a run: batch by batch, never synced, its text
/// handed back for the catalog, and no trace context (it is the
/// importing process's, not the session's).
fn imported_setup(format: Format) -> Setup {
    Setup::new(format).cadence(Cadence::Import).texts(TextsTo::Caller).without_traceparent()
}

/// A run written: its view, where the reading of each file stopped, and
/// its searchable text.
type Written = (RunView, BTreeMap<String, ReadMark>, Vec<TextRow>);

/// A job done: its run's view, marks, whether it was read on (not
/// rebuilt), and its text.
type JobDone = (RunView, BTreeMap<String, ReadMark>, bool, Vec<TextRow>);

/// Counts of one import.
#[derive(Debug, Default)]
struct Tally {
    recorded: u64,
    updated: u64,
    /// Of the updated, those read on from where the last import stopped.
    read_on: u64,
    unchanged: u64,
}

/// True for the id of a run an import makes (`codex-<root>`,
/// `claude-<session>`), not one recorded live.
fn made_by_import(id: &str) -> bool {
    id.starts_with("codex-") || id.starts_with("claude-")
}

/// The runs folder as the import found it: the files of each run, by id
/// (one listing, not a stat per session; a few dozen bytes per run).
struct RunsListing {
    runs: HashMap<String, RunFiles>,
}

impl RunsListing {
    /// Lists `home`'s runs folder (empty when it is not there).
    fn of(home: &Home) -> anyhow::Result<Self> {
        Ok(Self { runs: home.list_run_files() })
    }

    /// The files run `id` had.
    fn files_of(&mut self, id: &RunId) -> anyhow::Result<RunFiles> {
        Ok(self.runs.get(id.as_str()).copied().unwrap_or_default())
    }

    /// The ids of the runs not made by an import that have a log.
    fn live_ids(&self) -> impl Iterator<Item = &str> {
        self.runs.iter().filter(|(id, files)| files.log && !made_by_import(id)).map(|(id, _)| id.as_str())
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
    runs: RunsListing,
    /// What becomes of a last line with no newline yet.
    torn_lines: TornLines,
    /// The runs recorded or changed, in the order they were noted.
    changed: Vec<RunId>,
    /// The last import's sessions, read a page at a time.
    pages: KnownPages,
}

/// How many of the last import's sessions are read at a time.
const KNOWN_PAGE: usize = 256;

/// The last import's sessions of one provider, a page at a time: the
/// import asks for them in key order, and a key on the page read last is
/// answered from it. The page stands for every key from the one it was
/// read from up to its last (to the end, when it was not full), so a key
/// it lacks was not kept. A key asked out of order, or a second time (its
/// row may have been written since), is read on its own.
#[derive(Debug, Default)]
struct KnownPages {
    provider: &'static str,
    from: String,
    /// The page's last key, when it was full (`None`: it reaches the end).
    to: Option<String>,
    page: Vec<(String, Option<ImportedSession>)>,
}

impl KnownPages {
    fn get(&mut self, catalog: &Catalog, provider: &'static str, key: &str) -> anyhow::Result<Option<ImportedSession>> {
        let covered = self.provider == provider && self.from.as_str() <= key && self.to.as_deref().is_none_or(|to| key <= to);
        if !covered {
            let page = catalog.import_sessions_from(provider, key, KNOWN_PAGE)?;
            self.provider = provider;
            self.from = key.to_owned();
            self.to = (page.len() >= KNOWN_PAGE).then(|| page.last().map(|(last, _)| last.clone())).flatten();
            self.page = page.into_iter().map(|(key, session)| (key, Some(session))).collect();
        }
        match self.page.binary_search_by(|(kept, _)| kept.as_str().cmp(key)) {
            Ok(at) => match self.page[at].1.take() {
                Some(session) => Ok(Some(session)),
                None => Ok(catalog.import_session(provider, key)?),
            },
            Err(_) => Ok(None),
        }
    }
}

impl Importer<'_> {
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
            Change::Changed { shrank: Vec::new() }
        }
    }

    /// Counts a session whose run has `files` and says whether it must be
    /// read.
    fn wanted(&mut self, change: &Change, files: RunFiles) -> bool {
        self.bar.inc(1);
        match change {
            Change::Same if files.log => {
                self.tally.unchanged += 1;
                return false;
            }
            // Counted as read on once it was (see `run_jobs`).
            Change::Grew(_) => self.tally.updated += 1,
            Change::Changed { shrank } => {
                for path in shrank {
                    self.bar.suspend(|| {
                        eprintln!("warning: {path} shrank since the last import; reading its session again whole");
                    });
                }
                self.tally.updated += 1;
            }
            Change::Same | Change::New => self.tally.recorded += 1,
        }
        true
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
        let marks = recording.feed_with(|recorder, sink| feed_whole(recorder, parts, start, self.torn_lines, sink))?;
        // A still session is ended, unless what was read already ends it.
        let ended = (still && !recording.session_over()).then_some(SessionEndReason::ImportFinished);
        let finished = recording.finish(ended)?;
        Ok((finished.recorder.state().view(), marks, finished.texts))
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
        still: bool,
    ) -> anyhow::Result<Option<Written>> {
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
        let mut recorder = Recorder::new(id.clone(), format);
        let _ = recorder.start_in(start, cwd);
        let mut feed = SessionFeed::new(parts, start, self.torn_lines).referencing();
        if feed.feed(&mut recorder, Reach::Marks(marks), &mut |_| Ok(()))?.is_err() || !feed.stopped_at(marks) {
            return Ok(None);
        }
        // The recorder keeps the run state alone here (it was replayed from
        // the sources); the writer's own fold, resumed from the log, has the
        // rest.
        let Some(mut recording) = Recording::continue_with(self.home, id, &imported_setup(format), recorder)? else {
            return Ok(None);
        };
        if let Some(copies) = self.copies(id, true)? {
            recording.keep_copies(copies);
        }
        if recording.feed_with(|recorder, sink| feed.feed(recorder, Reach::Ends, sink))?.is_err() {
            return Ok(None);
        }
        // A still session is ended, unless what was read already ends it.
        let ended = (still && !recording.session_over()).then_some(SessionEndReason::ImportFinished);
        let finished = recording.finish(ended)?;
        Ok(Some((finished.recorder.state().view(), feed.marks(), finished.texts)))
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

    /// The Claude runs recorded live (not by an import), by session: of the
    /// runs there when the import started, those whose ids no import gives
    /// (reading the record of every imported run was a good part of a
    /// first import).
    fn live_claude_runs(&self) -> anyhow::Result<HashMap<String, RunId>> {
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
    fn queue(&mut self, pending: &mut Vec<Job>, job: Job) -> anyhow::Result<()> {
        pending.push(job);
        if pending.len() >= BATCH {
            self.run_jobs(pending)?;
        }
        Ok(())
    }

    /// Rebuilds the runs of `jobs` on every core, then notes each as
    /// imported in order; `jobs` is left empty.
    fn run_jobs(&mut self, jobs: &mut Vec<Job>) -> anyhow::Result<()> {
        let this = &*self;
        let mut results = crate::parallel::map(jobs, |job| this.run_job(job))?;
        for (job, (view, _, _, _)) in jobs.iter().zip(results.iter_mut()) {
            if let (JobSource::Claude(session), None) = (&job.source, &view.usage.cwd) {
                view.usage.cwd = claude_cwd(session);
            }
        }
        if jobs.is_empty() {
            return Ok(());
        }
        let home = self.home;
        let mut logs = Vec::with_capacity(jobs.len());
        {
            let catalog = self.catalog()?;
            catalog.begin()?;
            for (job, (view, _, read_on, texts)) in jobs.iter().zip(&results) {
                let log = agentrace_store::catalog::log_stamp(&home.log_path(&job.id)).unwrap_or_default();
                // Its session: the root thread (Codex) or session id (Claude).
                let agents = agentrace_store::catalog::agent_rows(&view.agents);
                catalog.put_run(&view.run, view.usage.cwd.as_deref(), Some(&job.key), &agents, log, None)?;
                catalog.add_texts(&job.id, texts, log.bytes, !*read_on)?;
                logs.push(UsageIndex::insert(&catalog, home, &job.id, view)?);
            }
        }
        self.tally.read_on += results.iter().filter(|(_, _, read_on, _)| *read_on).count() as u64;
        for ((job, (_, marks, _, _)), log) in jobs.drain(..).zip(results).zip(logs) {
            let claude = matches!(job.source, JobSource::Claude(_));
            self.imported(claude, &job.key, &job.id, job.stamps, marks, Left { log, open: !job.still })?;
        }
        Ok(())
    }

    /// The catalog, locked.
    fn catalog(&self) -> anyhow::Result<std::sync::MutexGuard<'_, Catalog>> {
        locked(self.catalog)
    }

    /// What the last import kept of session `key`.
    /// The lookups of a repeated import share one read transaction (see
    /// [`Catalog::begin_read`]), ended by the next write.
    fn known(&mut self, provider: &'static str, key: &str) -> anyhow::Result<Option<Imported>> {
        // Locked through the shared reference, not `self`: the pages are
        // borrowed mutably beside the guard.
        let catalog = locked(self.catalog)?;
        catalog.begin_read()?;
        Ok(self.pages.get(&catalog, provider, key)?.map(Imported::of_row))
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

    /// Rebuilds or continues one job's run; returns its view, the marks of
    /// all its files, and whether it was read on (not rebuilt).
    fn run_job(&self, job: &Job) -> anyhow::Result<JobDone> {
        // A Codex session's folder comes with its rollout's `session_meta`.
        // A Claude session's is looked up in its transcript for the usage
        // index alone (`run_jobs`): put in the log, it would depend on how
        // much of the transcript the first import saw, and a session read
        // in pieces would not end as one read whole.
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
                if let Some((view, marks, texts)) = self.continue_run(&job.id, format, &parts, &read_on.marks, still)? {
                    return Ok((view, marks, true, texts));
                }
            }
        }
        let (view, marks, texts) = self.rebuild(&job.id, job.files, format, start, &parts, still)?;
        Ok((view, marks, false, texts))
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
        }
        self.unsaved = true;
        self.save(false)
    }
}

/// The Claude sessions under `dir` (none when it holds no projects), not
/// yet walked, sorted by session id, and how many.
fn claude_found(dir: Option<&Path>, dirs: &std::sync::Arc<DirCache>) -> anyhow::Result<(usize, impl Iterator<Item = anyhow::Result<FoundSession>>)> {
    let mut found = Vec::new();
    match dir {
        Some(dir) if dir.join("projects").is_dir() || dir.is_dir() && dir.ends_with("projects") => {
            for project in crate::sources::claude_ingest::sessions_by_project_in(dir, Some(dirs.clone()))? {
                for session in project? {
                    found.push(session);
                }
            }
        }
        _ => {}
    }
    found.sort_by(|a, b| a.session_id().cmp(b.session_id()));
    Ok((found.len(), found.into_iter().map(Ok)))
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
            Ok((path.to_string_lossy().into_owned(), stamp))
        })
        .collect()
}

/// Runs `agentrace import`.
pub fn run(home: &Home, args: &ImportArgs) -> anyhow::Result<()> {
    import(home, args, TornLines::Feed).map(|_| ())
}

/// Imports what changed since the last import (see the module's
/// documentation); a last line with no newline yet is fed or waited for as
/// `torn_lines` says. Returns the runs it recorded or changed.
pub(crate) fn import(home: &Home, args: &ImportArgs, torn_lines: TornLines) -> anyhow::Result<Vec<RunId>> {
    crate::memory::prefer_small_pages();
    let since = since(args)?;
    let claude_dir = args.claude_dir.clone().or_else(claude_config_dir);
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
    let catalog = crate::commands::catalog::synced(home)?;
    crate::commands::usage::reprice_kept_usage(home, &catalog, args.quiet)?;
    let dirs = std::sync::Arc::new(DirCache::new(catalog.import_dirs()?));
    let catalog = std::sync::Mutex::new(catalog);
    // Finding what is on disk is thousands of small system calls: the Codex
    // home is listed and grouped (reading only the heads the last import
    // did not keep) while Claude's sessions are imported.
    std::thread::scope(|scope| {
        let rollouts = scope.spawn(|| {
            let walk = codex_home(args).map(|dir| RolloutWalk::new(&dir, true).with_dirs(dirs.clone()));
            codex_sessions_known(walk.into_iter().flatten(), &catalog)
        });
        let codex = || {
            rollouts
                .join()
                .map_err(|_| anyhow::anyhow!("walking the Codex home failed (a thread panicked)"))?
        };
        import_sessions(home, args, since, claude_dir.as_deref(), &catalog, (torn_lines, &dirs), codex)
    })
    .and_then(|changed| {
        keep_dirs(&catalog, &dirs)?;
        Ok(changed)
    })
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
    args: &ImportArgs,
    since: Option<Timestamp>,
    claude_dir: Option<&Path>,
    catalog: &std::sync::Mutex<Catalog>,
    (torn_lines, dirs): (TornLines, &std::sync::Arc<DirCache>),
    codex: impl FnOnce() -> anyhow::Result<CodexSessions>,
) -> anyhow::Result<Vec<RunId>> {
    let runs = RunsListing::of(home)?;
    // In the order of their table, which is read in step.
    let (found, claude) = claude_found(claude_dir, dirs)?;
    let mut importer = Importer {
        home,
        args,
        catalog,
        tally: Tally::default(),
        bar: progress(args, found as u64),
        last_save: std::time::Instant::now(),
        unsaved: false,
        runs,
        torn_lines,
        changed: Vec::new(),
        pages: KnownPages::default(),
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
        let previous = importer.known(CLAUDE, &session.session_id)?;
        let change = compare(previous.as_ref(), &stamps, args.idle_limit);
        let log = previous.as_ref().and_then(|previous| previous.log);
        let previous_run = previous.map(|previous| RunId::from(previous.run_id));
        // A run import made itself is rebuilt; a run recorded live (`run
        // claude`) is continued, never deleted.
        let id = match previous_run {
            Some(id) => id,
            None => {
                if live_claude.is_none() {
                    live_claude = Some(importer.live_claude_runs()?);
                }
                live_claude
                    .as_ref()
                    .and_then(|live| live.get(&session.session_id))
                    .cloned()
                    .unwrap_or_else(|| RunId::from(format!("claude-{}", session.session_id)))
            }
        };
        let change = importer.unless_log_moved(change, &id, log);
        let files = importer.runs.files_of(&id)?;
        if !importer.wanted(&change, files) {
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
                still: still_for(&stamps, args.idle_limit),
                stamps,
                source: JobSource::Claude(session),
                read_on: Job::read_on(change),
            };
            importer.queue(&mut pending, job)?;
        } else {
            // The sessions before it are noted first: the table is written
            // in order.
            importer.run_jobs(&mut pending)?;
            crate::sources::claude_ingest::record_transcripts(home, &id, &session)?.finish(None)?;
            // Fed whole at every import: nothing to end later.
            importer.imported(true, &session.session_id, &id, stamps, BTreeMap::new(), Left { log: None, open: false })?;
        }
        Ok(())
    })?;
    let codex = codex()?;
    importer.bar.inc_length(codex.len() as u64);
    // Each session's rollouts are unpacked (or merged) as its turn comes.
    for session in codex {
        let (root, files) = session?;
        if since.is_some_and(|since| {
            files
                .iter()
                .all(|head| head.started.is_some_and(|t| t < since))
        }) {
            importer.bar.inc(1);
            continue;
        }
        let stamps = stamps(files.iter().map(|head| (head.path.as_path(), head.stamp)))?;
        let id = RunId::from(format!("codex-{root}"));
        let previous = importer.known(CODEX, &root)?;
        let change = compare(previous.as_ref(), &stamps, args.idle_limit);
        let change = importer.unless_log_moved(change, &id, previous.and_then(|previous| previous.log));
        let run_files = importer.runs.files_of(&id)?;
        if !importer.wanted(&change, run_files) {
            continue;
        }
        let job = Job {
            key: root,
            id,
            files: run_files,
            still: still_for(&stamps, args.idle_limit),
            stamps,
            source: JobSource::Codex(files),
            read_on: Job::read_on(change),
        };
        importer.queue(&mut pending, job)?;
    }
    importer.run_jobs(&mut pending)?;
    // A repeated import that found nothing changed writes nothing.
    importer.save(true)?;
    importer.catalog()?.commit()?;
    importer.bar.finish_and_clear();
    if !args.quiet {
        let tally = &importer.tally;
        let read_on = match tally.read_on {
            0 => String::new(),
            count => format!("; {count} of the changed read on from where the last import stopped"),
        };
        eprintln!(
            "imported {} new session{}, {} changed, {} unchanged (Codex from {}, Claude from {}){read_on}",
            tally.recorded,
            if tally.recorded == 1 { "" } else { "s" },
            tally.updated,
            tally.unchanged,
            codex_home(args)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "nowhere".to_owned()),
            claude_dir
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "nowhere".to_owned()),
        );
    }
    Ok(importer.changed)
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "the tests make the folders and files they list")]
mod tests {
    use super::*;

    fn head_fields(head: Option<RolloutHead>) -> Option<(String, Option<String>, u64, Option<Timestamp>)> {
        head.map(|head| (head.thread, head.parent, head.depth, head.started))
    }

    /// Kept sessions read a page at a time answer as point lookups do:
    /// keys in order across pages, a key not kept, one asked out of order,
    /// and one asked again after its row was written anew.
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
            looked_up.push(catalog.import_session(provider, &key).unwrap_or_else(|e| panic!("{e}")));
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

    /// Rollouts come in path order (component by component), whatever
    /// bytes their folders' names hold around the separator.
    #[test]
    fn rollouts_are_listed_in_path_order_which_path_order_gives() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let names = [
            "sessions/2026/1/rollout-a.jsonl",
            "sessions/2026/10/rollout-a.jsonl",
            "sessions/2026-old/rollout-b.jsonl",
            "sessions/2026/rollout-c.jsonl",
            "sessions/2026 x/rollout-d.jsonl",
            "sessions/2026.5/rollout-e.jsonl",
            "archived_sessions/rollout-f.jsonl",
            "archived_sessions/a/rollout-g.jsonl",
            "archived_sessions/a-b/rollout-h.jsonl",
        ];
        for (at, name) in names.iter().enumerate() {
            let path = home.path().join(name);
            fs::create_dir_all(path.parent().unwrap_or(home.path())).unwrap_or_else(|e| panic!("{e}"));
            fs::write(&path, "x".repeat(at)).unwrap_or_else(|e| panic!("{e}"));
        }
        // A link is stamped as what it points to.
        let target = home.path().join("elsewhere.jsonl");
        fs::write(&target, "linked").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&target, home.path().join("sessions/rollout-link.jsonl")).unwrap_or_else(|e| panic!("{e}"));
        let mut expected: Vec<PathBuf> = names.iter().chain(&["sessions/rollout-link.jsonl"]).map(|name| home.path().join(name)).collect();
        expected.sort();
        let listed: Vec<_> = RolloutWalk::new(home.path(), true).collect();
        assert_eq!(listed.iter().map(|(path, _)| path.clone()).collect::<Vec<_>>(), expected);
        // Stat'ed through the folder as a path's own metadata gives it.
        let stamps: Vec<Option<FileStamp>> = listed.iter().map(|(_, stamp)| *stamp).collect();
        let of_paths: Vec<Option<FileStamp>> = listed
            .iter()
            .map(|(path, _)| fs::metadata(path).ok().map(|metadata| FileStamp::of(&metadata)))
            .collect();
        assert_eq!(stamps, of_paths);
        assert!(stamps.iter().all(|stamp| stamp.is_some()));
        // The heads table is read in step with the listing: same order.
        let keys: Vec<String> = listed.iter().map(|(path, _)| path.to_string_lossy().into_owned()).collect();
        let mut by_path_order = keys.clone();
        by_path_order.sort_by(|a, b| path_order(a, b));
        assert_eq!(keys, by_path_order);
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
        let mut runs = RunsListing::of(&home).unwrap_or_else(|e| panic!("{e}"));
        let files = |log, record, snapshot| RunFiles { log, record, snapshot };
        let mut asked = |id: &str| runs.files_of(&RunId::from(id)).unwrap_or_else(|e| panic!("{e}"));
        // `claude-a-b` is a run of its own, not a file of `claude-a`.
        assert_eq!(asked("claude-a"), files(true, true, true));
        assert_eq!(asked("claude-a-b"), files(true, false, false));
        assert_eq!(asked("claude-aa"), files(false, false, false));
        assert_eq!(asked("claude-b"), files(true, false, false));
        assert_eq!(asked("codex-x"), files(false, true, false));
        assert_eq!(asked("codex-z"), files(false, false, false));
        assert_eq!(asked("live1"), files(true, true, false));
        assert_eq!(runs.live_ids().collect::<Vec<_>>(), vec!["live1"]);
    }

    #[test]
    fn a_folder_that_links_back_to_itself_ends_the_walk() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let folder = home.path().join("sessions/a");
        fs::create_dir_all(&folder).unwrap_or_else(|e| panic!("{e}"));
        fs::write(folder.join("rollout-x.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&folder, folder.join("loop")).unwrap_or_else(|e| panic!("{e}"));
        let listed: Vec<_> = RolloutWalk::new(home.path(), false).collect();
        assert!(listed.iter().any(|(path, _)| *path == folder.join("rollout-x.jsonl")));
        assert!(listed.len() <= WALK_DEPTH, "{}", listed.len());
    }

    /// A head read from a rollout's first bytes is the head read from its
    /// whole first line, for every captured rollout (their base
    /// instructions are longer than the first read), and a line cut
    /// elsewhere is read whole.
    #[test]
    fn a_head_cut_before_the_base_instructions_is_the_whole_lines_head() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex");
        let mut cut = 0;
        let mut files = Vec::new();
        let mut folders = vec![root];
        while let Some(folder) = folders.pop() {
            for entry in fs::read_dir(&folder).unwrap_or_else(|e| panic!("{e}")) {
                let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.file_name().is_some_and(|name| name.to_string_lossy().starts_with("rollout-")) {
                    files.push(path);
                }
            }
        }
        let odd = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let filler = "x".repeat(HEAD_PREFIX);
        for (name, line) in [
            // The key inside a nested object: not the payload's.
            ("nested", format!(r#"{{"timestamp":"2026-11-29T23:03:28.490Z","type":"session_meta","payload":{{"id":"t1","source":{{"subagent":{{"thread_spawn":{{"parent_thread_id":"p1","depth":1}}}},"base_instructions":"{filler}"}}}}}}"#)),
            // No source before the base instructions: the rest may name the parent.
            ("late", format!(r#"{{"timestamp":"2026-11-29T23:03:28.490Z","type":"session_meta","payload":{{"id":"t2","base_instructions":"{filler}","source":{{"subagent":{{"thread_spawn":{{"parent_thread_id":"p2","depth":1}}}}}}}}}}"#)),
        ] {
            let path = odd.path().join(format!("rollout-{name}.jsonl"));
            fs::write(&path, format!("{line}\n")).unwrap_or_else(|e| panic!("{e}"));
            files.push(path);
        }
        for path in &files {
            let whole = rollout_head_within(path, 64 * 1024 * 1024);
            let quick = rollout_head(path);
            let bytes = fs::read(path).unwrap_or_else(|e| panic!("{e}"));
            let prefix = &bytes[..bytes.len().min(HEAD_PREFIX)];
            cut += usize::from(head_before_instructions(prefix).and_then(|lean| head_of(path, &lean, true)).is_some());
            assert_eq!(head_fields(quick), head_fields(whole), "{}", path.display());
        }
        assert_eq!(
            head_fields(rollout_head(&odd.path().join("rollout-late.jsonl"))).map(|head| head.1),
            Some(Some("p2".to_owned()))
        );
        // Every capture's head was read from its first bytes.
        assert_eq!(cut, files.len() - 2);
    }

    /// Sets every folder under (and including) `dir` last modified an hour
    /// ago, so their listings are old enough to be kept.
    fn age_folders(dir: &Path) {
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let mut folders = vec![dir.to_path_buf()];
        while let Some(folder) = folders.pop() {
            for entry in fs::read_dir(&folder).unwrap_or_else(|e| panic!("{e}")).flatten() {
                if entry.path().is_dir() {
                    folders.push(entry.path());
                }
            }
            fs::File::open(&folder).and_then(|handle| handle.set_modified(hour_ago)).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The listings a walk took, as the next import finds them kept.
    fn kept(dirs: &DirCache, before: HashMap<Vec<u8>, agentrace_store::catalog::DirRow>) -> HashMap<Vec<u8>, agentrace_store::catalog::DirRow> {
        let mut known = before;
        for (path, row) in dirs.take_changes() {
            match row {
                Some(row) => known.insert(path, row),
                None => known.remove(&path),
            };
        }
        known
    }

    /// Walks `home` with the listings `known`; returns the rollouts, how
    /// many folders were listed, and the listings kept after.
    fn walk_with(home: &Path, known: HashMap<Vec<u8>, agentrace_store::catalog::DirRow>) -> (Vec<PathBuf>, u64, HashMap<Vec<u8>, agentrace_store::catalog::DirRow>) {
        let dirs = std::sync::Arc::new(DirCache::new(known.clone()));
        let listed: Vec<PathBuf> = RolloutWalk::new(home, true).with_dirs(dirs.clone()).map(|(path, _)| path).collect();
        (listed, dirs.listed(), kept(&dirs, known))
    }

    #[test]
    fn a_repeated_walk_lists_no_unchanged_folder_yet_finds_new_day_folders_and_forgets_deleted_ones() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let day = home.path().join("sessions/2026/01/02");
        fs::create_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
        fs::write(day.join("rollout-a.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        age_folders(home.path());
        // sessions, 2026, 01, 02 (no archived_sessions).
        let (first, listed, known) = walk_with(home.path(), HashMap::new());
        assert_eq!((first.clone(), listed, known.len()), (vec![day.join("rollout-a.jsonl")], 4, 4));
        let (again, listed, known) = walk_with(home.path(), known);
        assert_eq!((again, listed), (first, 0));

        // A new day folder changes its month's folder: the month is listed
        // again, and the new day; the others are not.
        let next = home.path().join("sessions/2026/01/03");
        fs::create_dir_all(&next).unwrap_or_else(|e| panic!("{e}"));
        fs::write(next.join("rollout-b.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        let (grown, listed, known) = walk_with(home.path(), known);
        assert_eq!((grown, listed), (vec![day.join("rollout-a.jsonl"), next.join("rollout-b.jsonl")], 2));

        // A deleted day folder: its rollouts are gone from the walk.
        fs::remove_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
        let (left, _, _) = walk_with(home.path(), known);
        assert_eq!(left, vec![next.join("rollout-b.jsonl")]);
    }

    #[test]
    fn a_file_added_to_a_folder_listed_within_the_racy_window_is_found_by_the_next_walk() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let day = home.path().join("sessions/2026/01/02");
        fs::create_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
        fs::write(day.join("rollout-a.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        let modified = fs::metadata(&day).and_then(|metadata| metadata.modified()).unwrap_or_else(|e| panic!("{e}"));
        // Listed in the same tick as its last change: not kept.
        let (_, _, known) = walk_with(home.path(), HashMap::new());
        assert!(!known.contains_key(day.as_os_str().as_bytes()));
        // A file added in that tick leaves a coarse mtime as it was.
        fs::write(day.join("rollout-b.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        fs::File::open(&day).and_then(|handle| handle.set_modified(modified)).unwrap_or_else(|e| panic!("{e}"));
        let (listed, _, _) = walk_with(home.path(), known);
        assert_eq!(listed, vec![day.join("rollout-a.jsonl"), day.join("rollout-b.jsonl")]);
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
        let list = |known: HashMap<Vec<u8>, agentrace_store::catalog::DirRow>| {
            let dirs = std::sync::Arc::new(DirCache::new(known.clone()));
            let (_, found) = claude_found(Some(claude.path()), &dirs).unwrap_or_else(|e| panic!("{e}"));
            let mut nested_stamp = None;
            let files: Vec<Vec<PathBuf>> = found
                .map(|session| {
                    let session = session.unwrap_or_else(|e| panic!("{e}"));
                    let (files, stamps) = claude_session_files(&session, &dirs).unwrap_or_else(|e| panic!("{e}"));
                    nested_stamp = nested_stamp.or(stamps.get(nested.join("agent-c.jsonl").to_string_lossy().as_ref()).map(|stamp| stamp.size));
                    files.parts.into_iter().map(|(_, path)| path).collect()
                })
                .collect();
            assert_eq!(nested_stamp, Some(3), "the nested helper's file is stat'ed");
            (files, dirs.listed(), kept(&dirs, known))
        };
        // projects, p, s1, subagents, workflows, w1.
        let (first, listed, known) = list(HashMap::new());
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
