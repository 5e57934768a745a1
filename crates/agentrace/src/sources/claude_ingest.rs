//! Claude Code input on disk: finding transcripts (a session file, a project
//! folder, a `projects` folder, or `$CLAUDE_CONFIG_DIR`) with their
//! subagents' files, dating a session and finding its working folder, and
//! feeding a session's files to a recorder in the one order every reading
//! uses ([`crate::sources::session_feed`]). I/O only; attribution is the
//! core's, and a run is written by the recording shell, never here.

use crate::sources::dirs::{DirCache, Kind};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};

use agentrace_core::decode;
use agentrace_core::model::{Provider, RunId, Timestamp};
use agentrace_core::recorder::SourcePart;
use agentrace_core::Recorder;
use agentrace_store::Home;
use serde::{Deserialize, Serialize};
use anyhow::{bail, Context as _};
use serde_json::Value;

use crate::clock::now;
use crate::sources::session_feed::{feed_whole, ReadMark, Sink, TornLines};
use crate::sources::stamps::FileStamp;

/// The Claude config dir: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|dir| !dir.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(|home| PathBuf::from(home).join(".claude"))
}

pub(crate) fn first_line(path: &Path) -> Option<Value> {
    let mut file = File::open(path).ok()?;
    let mut buffer = vec![0; 64 * 1024];
    let read = file.read(&mut buffer).ok()?;
    let text = String::from_utf8_lossy(&buffer[..read]);
    text.lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| serde_json::from_str(line).ok())
}

/// One session's transcript files, in the order they are read.
#[derive(Debug, Clone)]
pub struct SessionFiles {
    /// The session id (the main file's name).
    pub session_id: String,
    /// `(part, file)`: the session file first, then each subagent's
    /// metadata and file.
    pub parts: Vec<(SourcePart, PathBuf)>,
}

/// A session found in a listing, its subagent folder not yet walked.
#[derive(Debug, Clone)]
pub struct FoundSession {
    main: PathBuf,
    /// The 2.0.77 `agent-*.jsonl` files beside it that name it.
    siblings: Vec<PathBuf>,
    /// A `<session>/` folder (2.1.x subagents) is beside it.
    has_folder: bool,
    /// Its project folder, open: the session's file and folders are
    /// stat'ed through it by their names, none of them opened (an open and
    /// a close of two folders per session were a third of the system calls
    /// of a repeated import). `None` where the folder is reached by path.
    project: Option<std::sync::Arc<File>>,
}

/// A found session as it is written to a sorting file (paths as bytes:
/// they need not be UTF-8).
#[derive(Serialize, Deserialize)]
struct FoundWire {
    main: Vec<u8>,
    siblings: Vec<Vec<u8>>,
    has_folder: bool,
}

impl Serialize for FoundSession {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes = |path: &PathBuf| path.as_os_str().as_encoded_bytes().to_vec();
        FoundWire {
            main: bytes(&self.main),
            siblings: self.siblings.iter().map(bytes).collect(),
            has_folder: self.has_folder,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for FoundSession {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use std::os::unix::ffi::OsStringExt as _;
        let path = |bytes: Vec<u8>| PathBuf::from(std::ffi::OsString::from_vec(bytes));
        let wire = FoundWire::deserialize(deserializer)?;
        Ok(FoundSession {
            main: path(wire.main),
            siblings: wire.siblings.into_iter().map(path).collect(),
            has_folder: wire.has_folder,
            project: None,
        })
    }
}

impl FoundSession {
    /// The session id (the main file's name).
    pub fn session_id(&self) -> &str {
        session_id_of(&self.main)
    }

    /// Its main transcript.
    pub fn main(&self) -> &Path {
        &self.main
    }

    /// Its files: the subagent folder is walked now, so callers can spread
    /// that over their workers.
    pub fn files(&self) -> anyhow::Result<SessionFiles> {
        Ok(session_files(self, false, None)?.0)
    }

    /// [`FoundSession::files`], with the size and modification time of
    /// each part the walk found in the session's folder (stat'ed through
    /// the folder's handle, not by the whole path again; `None` for the
    /// others), its folders' entries taken from `dirs` where they are
    /// unchanged.
    pub(crate) fn files_with_stamps_in(&self, dirs: &DirCache) -> anyhow::Result<(SessionFiles, Vec<Option<FileStamp>>)> {
        session_files(self, true, Some(dirs))
    }
}

/// Every session under `path`: a session file, a project folder, a
/// `projects` folder, or a config dir holding `projects`.
pub fn find_sessions(path: &Path) -> anyhow::Result<Vec<SessionFiles>> {
    list_sessions(path)?
        .iter()
        .map(FoundSession::files)
        .collect()
}

/// [`find_sessions`] without walking each session's subagent folder.
pub fn list_sessions(path: &Path) -> anyhow::Result<Vec<FoundSession>> {
    let mut sessions = Vec::new();
    for project in sessions_by_project(path)? {
        sessions.extend(project?);
    }
    Ok(sessions)
}

/// The sessions [`list_sessions`] finds, a project folder at a time (each
/// listed as its turn comes): only one project's listing is held.
pub fn sessions_by_project(path: &Path) -> anyhow::Result<Box<dyn Iterator<Item = anyhow::Result<Vec<FoundSession>>>>> {
    sessions_by_project_in(path, None)
}

/// [`sessions_by_project`], the folders' entries taken from `dirs` where
/// they are unchanged.
pub(crate) fn sessions_by_project_in(
    path: &Path,
    dirs: Option<std::sync::Arc<DirCache>>,
) -> anyhow::Result<Box<dyn Iterator<Item = anyhow::Result<Vec<FoundSession>>>>> {
    if path.is_file() {
        let siblings = match project_of(path) {
            Some(project) => loose_agent_files(&sorted_entries(project, false, dirs.as_deref())?),
            None => Vec::new(),
        };
        let has_folder = path.with_extension("").is_dir();
        return Ok(Box::new(std::iter::once(Ok(vec![found(path, &siblings, has_folder, None)]))));
    }
    if !path.is_dir() {
        bail!(
            "{} is neither a transcript file nor a folder",
            path.display()
        );
    }
    let projects = path.join("projects");
    let root = if projects.is_dir() {
        projects
    } else {
        path.to_owned()
    };
    let mut sessions = Vec::new();
    let (root_entries, handle) = sorted_entries_held(&root, dirs.as_deref())?;
    if project_sessions(&root_entries, &mut sessions, handle) {
        return Ok(Box::new(std::iter::once(Ok(sessions))));
    }
    let projects = root_entries.into_iter().filter(|entry| entry.is_dir).map(|entry| entry.path);
    Ok(Box::new(projects.collect::<Vec<_>>().into_iter().enumerate().map(move |(at, project)| {
        let mut sessions = Vec::new();
        let (entries, handle) = sorted_entries_held(&project, dirs.as_deref())?;
        // The sessions found may all be held before any is read: a bound
        // on the folders kept open keeps a history of thousands of
        // projects under the limit of open files (the rest are reached by
        // path, as before).
        project_sessions(&entries, &mut sessions, handle.filter(|_| at < HELD_PROJECTS));
        Ok(sessions)
    })))
}

/// The session whose main file is `main`, found as the listing of its
/// project folder finds it (with the 2.0.77 agent files beside it that name
/// it, and whether its own folder is there): for an import of the sessions
/// a watcher saw written, which walks nothing else. `None` when it is not
/// there now.
pub(crate) fn session_at(main: &Path, dirs: Option<&DirCache>) -> anyhow::Result<Option<FoundSession>> {
    let Some(project) = project_of(main) else {
        return Ok(None);
    };
    let mut sessions = Vec::new();
    let (entries, handle) = sorted_entries_held(project, dirs)?;
    project_sessions(&entries, &mut sessions, handle);
    Ok(sessions.into_iter().find(|found| found.main == main))
}

/// The folder a session file is in: a bare file name's is the current
/// one (its parent is an empty path, which cannot be listed).
fn project_of(main: &Path) -> Option<&Path> {
    main.parent().map(|parent| if parent.as_os_str().is_empty() { Path::new(".") } else { parent })
}

/// How many project folders a listing keeps open for its sessions.
pub(crate) const HELD_PROJECTS: usize = 256;

/// Adds the sessions of one project folder, given its entries (and the
/// folder, open, when it is); false when it holds none.
fn project_sessions(entries: &[Entry], sessions: &mut Vec<FoundSession>, handle: Option<std::sync::Arc<File>>) -> bool {
    // The folder is listed and its loose agent files read once, not once
    // per session: that was quadratic in the sessions of a project.
    let siblings = loose_agent_files(entries);
    // By name: the entries are one folder's.
    let folders: agentrace_store::FastSet<&str> = entries
        .iter()
        .filter(|entry| entry.is_dir)
        .map(|entry| file_name(&entry.path))
        .collect();
    let mut any = false;
    for file in entries
        .iter()
        .filter(|entry| entry.is_file && is_session_name(&entry.path))
    {
        let has_folder = folders.contains(session_id_of(&file.path));
        sessions.push(found(&file.path, &siblings, has_folder, handle.clone()));
        any = true;
    }
    any
}

/// The session id a session file's name gives.
fn session_id_of(main: &Path) -> &str {
    let name = file_name(main);
    name.strip_suffix(".jsonl").unwrap_or(name)
}

fn found(main: &Path, siblings: &[(PathBuf, Option<String>)], has_folder: bool, project: Option<std::sync::Arc<File>>) -> FoundSession {
    let session_id = session_id_of(main);
    FoundSession {
        main: main.to_owned(),
        siblings: siblings
            .iter()
            .filter(|(_, session)| session.as_deref() == Some(session_id))
            .map(|(file, _)| file.clone())
            .collect(),
        has_folder,
        project,
    }
}

/// A folder entry, with its kind as the listing gave it: a stat per file
/// (thousands of them) was most of a repeated import's time.
struct Entry {
    path: PathBuf,
    /// A folder (a symbolic link to one counts).
    is_dir: bool,
    /// A file (a symbolic link to one counts).
    is_file: bool,
    /// A file's stamp, when the listing was asked for it.
    stamp: Option<FileStamp>,
}

/// A folder's entries in path order. They share their parent, so
/// comparing their paths' bytes compares their names (no name is copied
/// to sort by, and no path is split into components).
fn sorted_entries(dir: &Path, stat: bool, dirs: Option<&DirCache>) -> anyhow::Result<Vec<Entry>> {
    if let Some(dirs) = dirs {
        return sorted_entries_in(dir, None, stat, dirs).map(|(entries, _)| entries);
    }
    let mut entries: Vec<Entry> = fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| {
            let path = entry.path();
            let kind = entry.file_type().ok().filter(|kind| !kind.is_symlink());
            let (is_dir, is_file) = match kind {
                Some(kind) => (kind.is_dir(), kind.is_file()),
                None => (path.is_dir(), path.is_file()),
            };
            let stamp = (stat && is_file).then(|| FileStamp::of_entry(&entry)).flatten();
            Entry {
                path,
                is_dir,
                is_file,
                stamp,
            }
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.path.as_os_str().as_encoded_bytes().cmp(b.path.as_os_str().as_encoded_bytes()));
    Ok(entries)
}

/// A folder [`sorted_entries`] need not open: `rel` below the open folder
/// `base`. It is stat'ed, and its files are, through `base` by that path.
#[derive(Clone, Copy)]
struct Via<'a> {
    base: &'a File,
    rel: &'a Path,
}

/// [`sorted_entries`] of a folder whose files are not stat'ed, with the
/// folder itself, open, when it was read through `dirs` (its sessions'
/// files and folders are then reached through it).
fn sorted_entries_held(dir: &Path, dirs: Option<&DirCache>) -> anyhow::Result<(Vec<Entry>, Option<std::sync::Arc<File>>)> {
    match dirs {
        Some(dirs) => sorted_entries_in(dir, None, false, dirs).map(|(entries, handle)| (entries, handle.map(std::sync::Arc::new))),
        None => Ok((sorted_entries(dir, false, None)?, None)),
    }
}

/// [`sorted_entries`], taken from `dirs` when the folder is unchanged
/// (its files still stat'ed: growth changes a file's stamp, not its
/// folder's). Reached `via` an open folder above it, it is stat'ed and its
/// files are through that folder, and it is not opened; else it is opened
/// and returned, for what is below it.
fn sorted_entries_in(dir: &Path, via: Option<Via<'_>>, stat: bool, dirs: &DirCache) -> anyhow::Result<(Vec<Entry>, Option<File>)> {
    use std::os::unix::ffi::OsStrExt as _;
    let (handle, folder) = match via {
        Some(via) => (None, FileStamp::stat_at(via.base, via.rel.as_os_str().as_bytes())),
        None => match crate::sources::dirs::open(dir) {
            Ok((handle, folder)) => (Some(handle), Ok(folder)),
            Err(error) => (None, Err(error)),
        },
    };
    // Why it cannot be read is said: out of file handles (a low `ulimit
    // -n`), the folder reads like any other that cannot be.
    let listed = match folder.and_then(|folder| dirs.entries(dir, &folder)) {
        Ok(listed) => listed,
        Err(error) if error.raw_os_error() == Some(nix::libc::EMFILE) => bail!(
            "cannot read {}: {error}; this process may open no more files (`ulimit -n` is too low: raise it, e.g. `ulimit -n 4096`, and run the command again)",
            dir.display()
        ),
        Err(error) => bail!("cannot read {}: {error}", dir.display()),
    };
    let stamp_of = |name: &[u8]| match (&handle, via) {
        (Some(handle), _) => FileStamp::at(handle, name),
        (None, Some(via)) => FileStamp::at(via.base, via.rel.join(std::ffi::OsStr::from_bytes(name)).as_os_str().as_bytes()),
        (None, None) => None,
    };
    let mut entries: Vec<Entry> = listed
        .into_iter()
        .map(|(name, kind)| {
            let path = dir.join(std::ffi::OsStr::from_bytes(&name));
            let (is_dir, is_file) = match kind {
                Kind::Dir => (true, false),
                Kind::File => (false, true),
                Kind::Other => (false, false),
                Kind::Link => (path.is_dir(), path.is_file()),
            };
            let stamp = (stat && is_file).then(|| stamp_of(&name)).flatten();
            Entry { path, is_dir, is_file, stamp }
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.path.as_os_str().as_encoded_bytes().cmp(b.path.as_os_str().as_encoded_bytes()));
    Ok((entries, handle))
}

/// The name of a listed file: what follows its path's last `/` (a listing
/// joins each name to its folder). `Path::file_name` parses the path's
/// components from the back, and with the hashing of whole paths that was
/// a fifth of a repeated import's instructions.
fn file_name(path: &Path) -> &str {
    use std::os::unix::ffi::OsStrExt as _;
    let bytes = path.as_os_str().as_bytes();
    let name = memchr::memrchr(b'/', bytes).map_or(bytes, |slash| &bytes[slash + 1..]);
    std::str::from_utf8(name).unwrap_or_default()
}

/// The name of a session file of a project folder (not an `agent-*` file).
fn is_session_name(path: &Path) -> bool {
    let name = file_name(path);
    name.ends_with(".jsonl") && !name.starts_with("agent-")
}

/// The 2.0.77 layout's `agent-*.jsonl` files beside the sessions, each
/// with the session its first line names.
fn loose_agent_files(entries: &[Entry]) -> Vec<(PathBuf, Option<String>)> {
    entries
        .iter()
        .map(|entry| &entry.path)
        .filter(|path| {
            let name = file_name(path);
            name.starts_with("agent-") && name.ends_with(".jsonl")
        })
        .map(|path| {
            let session = first_line(path).and_then(|line| {
                line.get("sessionId")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            (path.clone(), session)
        })
        .collect()
}

/// The part of its session a Claude Code file is, by its name, as
/// [`session_files`] feeds it: a subagent's transcript
/// (`agent-<id>.jsonl`) or metadata (`agent-<id>.meta.json`), else the
/// session's own transcript. A replayed run log tells its frames' files
/// by their `rawRef` paths this way.
pub(crate) fn part_of_file(path: &Path) -> SourcePart {
    let name = file_name(path);
    match name.strip_prefix("agent-") {
        Some(rest) if rest.ends_with(".meta.json") => SourcePart::AgentMeta { agent_id: agent_id_of(path) },
        Some(rest) if rest.ends_with(".jsonl") => SourcePart::AgentFile { agent_id: agent_id_of(path) },
        Some(_) | None => SourcePart::Main,
    }
}

fn agent_id_of(path: &Path) -> String {
    let name = file_name(path);
    let name = name.strip_prefix("agent-").unwrap_or(name);
    let name = name.strip_suffix(".meta.json").or_else(|| name.strip_suffix(".jsonl")).unwrap_or(name);
    name.to_owned()
}

/// The files of the session whose main file is `main`: 2.1.x subagents in
/// `<session>/…/agent-<id>.jsonl` (+ `.meta.json`, any depth), 2.0.77
/// `agent-<id>.jsonl` beside it whose lines name this session.
fn session_files(found: &FoundSession, stat: bool, dirs: Option<&DirCache>) -> anyhow::Result<(SessionFiles, Vec<Option<FileStamp>>)> {
    let FoundSession { main, siblings, has_folder, project } = found;
    let session_id = session_id_of(main).to_owned();
    let mut parts = vec![(SourcePart::Main, main.to_owned())];
    // Stat'ed through its project folder, by its name (else later, by its
    // path). A session has its folder open only when it was found through
    // `dirs`.
    let project = project.as_deref();
    let main_stamp = project.filter(|_| stat).and_then(|project| FileStamp::at(project, file_name(main).as_bytes()));
    let mut stamps = vec![main_stamp];
    let folder = main.with_extension("");
    let mut agent_files = Vec::new();
    let mut files = agentrace_store::FastMap::default();
    if *has_folder {
        let via = project.map(|base| Via { base, rel: Path::new(&session_id) });
        collect_agent_files((&folder, via), &mut agent_files, &mut files, (0, stat), dirs)?;
    }
    agent_files.sort_by(|a, b| a.0.cmp(&b.0));
    for (file, file_stamp) in agent_files {
        let agent_id = agent_id_of(&file);
        let meta = file.with_file_name(format!("agent-{agent_id}.meta.json"));
        if let Some(meta_stamp) = files.remove(meta.as_os_str()) {
            parts.push((
                SourcePart::AgentMeta {
                    agent_id: agent_id.clone(),
                },
                meta,
            ));
            stamps.push(meta_stamp);
        }
        parts.push((SourcePart::AgentFile { agent_id }, file));
        stamps.push(file_stamp);
    }
    for file in siblings {
        let agent_id = agent_id_of(file);
        parts.push((SourcePart::AgentFile { agent_id }, file.clone()));
        stamps.push(None);
    }
    Ok((SessionFiles { session_id, parts }, stamps))
}

/// The `agent-*.jsonl` files under `dir` into `out`, and every other file
/// seen into `files` (for the metadata documents beside them), each with
/// its stamp when `stat`. With `dirs`, a folder is reached `via` the open
/// folder above it (not opened), or opened once for the folders below it:
/// by its whole path, each open walked every folder above it again.
fn collect_agent_files(
    (dir, via): (&Path, Option<Via<'_>>),
    out: &mut Vec<(PathBuf, Option<FileStamp>)>,
    files: &mut agentrace_store::FastMap<std::ffi::OsString, Option<FileStamp>>,
    (depth, stat): (u32, bool),
    dirs: Option<&DirCache>,
) -> anyhow::Result<()> {
    // Workflows nest folders; a bound keeps a symlink loop finite.
    if depth > 8 {
        return Ok(());
    }
    let (entries, handle) = match dirs {
        Some(dirs) => sorted_entries_in(dir, via, stat, dirs)?,
        None => (sorted_entries(dir, stat, None)?, None),
    };
    for entry in entries {
        let name = file_name(&entry.path);
        if entry.is_dir {
            let rel;
            let below = match (&handle, via) {
                (Some(base), _) => Some(Via { base, rel: Path::new(name) }),
                (None, Some(via)) => {
                    rel = via.rel.join(name);
                    Some(Via { base: via.base, rel: &rel })
                }
                (None, None) => None,
            };
            collect_agent_files((&entry.path, below), out, files, (depth + 1, stat), dirs)?;
        } else if name.starts_with("agent-") && name.ends_with(".jsonl") {
            out.push((entry.path, entry.stamp));
        } else if entry.is_file {
            // Keyed by the path's bytes: hashing a `Path` parses it.
            files.insert(entry.path.into_os_string(), entry.stamp);
        }
    }
    Ok(())
}

/// The first `timestamp` of a transcript (read line by line until one is
/// found, each line's members read where they stand, never built:
/// [`decode::visit_named`]).
pub(crate) fn first_time(path: &Path) -> Option<Timestamp> {
    first_named(path, "timestamp", usize::MAX, Timestamp::parse)
}

/// The first member `name` of the first `lines` lines of `path` that
/// `read` makes something of (a line's members read where they stand,
/// [`decode::visit_named`]).
fn first_named<T>(path: &Path, name: &str, lines: usize, read: impl Fn(&str) -> Option<T>) -> Option<T> {
    let mut reader = BufReader::new(fs::File::open(path).ok()?);
    let mut line = Vec::new();
    for _ in 0..lines {
        line.clear();
        if reader.read_until(b'\n', &mut line).ok()? == 0 {
            return None;
        }
        let mut found = None;
        decode::visit_named(&line, &[name], &mut |_, raw| {
            found = decode::raw_string(raw).and_then(|text| read(&text));
            found.is_none()
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// When a Claude session started: the first time its main file names,
/// else now (`import` and `usage` date a session alike).
pub fn claude_start(session: &SessionFiles) -> Timestamp {
    claude_first_time(session).unwrap_or_else(now)
}

/// The first time a Claude session's main file names, if any line does
/// yet: an interactive session writes lines that name none (`mode`,
/// `permission-mode`, `file-history-snapshot`) before its first prompt.
pub(crate) fn claude_first_time(session: &SessionFiles) -> Option<Timestamp> {
    session.parts.first().and_then(|(_, path)| first_time(path))
}

/// A Claude session's working folder: the first `cwd` its main file's
/// lines name (each transcript line carries it; the first few are
/// enough, and a file without one is not read to its end).
pub fn claude_cwd(session: &SessionFiles) -> Option<String> {
    let (_, path) = session.parts.first()?;
    // A transcript line names its folder after its bulk: read from the
    // end, not skimmed over from the front.
    first_named(path, "cwd", CWD_LINES, |text| Some(text.to_owned()))
}

/// How many lines of a transcript [`claude_cwd`] looks at.
const CWD_LINES: usize = 64;

/// Feeds one Claude session's files to `recorder`, merged in time order (a
/// metadata document is one line, just before its subagent's first line;
/// a line that names no time gets `start`, the session's, until one does);
/// `sink` gets each batch. Returns where the reading of each file stopped,
/// by path.
pub fn feed_claude(
    recorder: &mut Recorder,
    session: &SessionFiles,
    start: Timestamp,
    sink: Sink<'_>,
) -> anyhow::Result<BTreeMap<String, ReadMark>> {
    feed_whole(recorder, &session.parts, start, TornLines::Feed, sink)
}

/// The newest Claude run whose root is `session`.
pub fn run_of_session(home: &Home, session: &str) -> anyhow::Result<Option<RunId>> {
    Ok(home
        .list_runs()?
        .into_iter()
        .find(|run| {
            run.provider == Provider::Claude
                && run.root_thread_id.as_ref().map(|id| id.as_str()) == Some(session)
        })
        .map(|run| run.id))
}
