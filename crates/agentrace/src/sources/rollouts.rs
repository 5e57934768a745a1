//! A Codex home's rollouts on disk: walked in path order (each with its
//! stamp, folders' listings kept between imports), each one's head read
//! from its first line, and a session's rollouts fed to a recorder in the
//! one order every reading uses ([`crate::sources::session_feed`]). It
//! never groups rollouts into sessions (`codex_sessions` does) nor writes a
//! run (the recording shell does).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use agentrace_core::model::Timestamp;
use agentrace_core::recorder::SourcePart;
use agentrace_core::Recorder;
use serde_json::Value;

use crate::clock::now;
use crate::sources::dirs::{DirCache, Kind};
use crate::sources::session_feed::{feed_whole, ReadMark, Sink, TornLines};
use crate::sources::stamps::FileStamp;

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

#[cfg(test)]
/// A path's bytes as they sort in path order: component by component,
/// which is byte by byte with the separator before any other byte.
pub(crate) fn path_sort_bytes(path: &[u8]) -> impl Iterator<Item = u8> + '_ {
    path.iter().map(|byte| if *byte == b'/' { 0 } else { *byte })
}

#[cfg(test)]
/// Paths in the order [`RolloutWalk`] lists them: byte by byte, a
/// separator before any other byte.
fn path_order(a: &str, b: &str) -> std::cmp::Ordering {
    path_sort_bytes(a.as_bytes()).cmp(path_sort_bytes(b.as_bytes()))
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
    /// The folders that could not be read, each as `cannot read FOLDER:
    /// REASON` (see [`RolloutWalk::take_unreadable`]).
    unreadable: Vec<String>,
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
            unreadable: Vec::new(),
        }
    }

    /// The folders the walk could not open or list so far, each as
    /// `cannot read FOLDER: REASON`, for its caller to say: the rollouts
    /// in them are left out. A folder that is not there (no
    /// `archived_sessions`, one deleted during the walk) is not among them.
    pub(crate) fn take_unreadable(&mut self) -> Vec<String> {
        std::mem::take(&mut self.unreadable)
    }

    /// Notes that `dir` could not be read, unless it is not there.
    fn unreadable(&mut self, dir: &Path, error: &std::io::Error) {
        if error.kind() != std::io::ErrorKind::NotFound {
            self.unreadable.push(format!("cannot read {}: {error}", dir.display()));
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
            let listed = crate::sources::dirs::open(&dir).and_then(|(handle, stat)| Ok((dirs.entries(&dir, &stat)?, handle)));
            match listed {
                Ok((entries, handle)) => (entries, self.stamped.then_some(handle)),
                Err(error) => {
                    self.unreadable(&dir, &error);
                    return;
                }
            }
        } else {
            let listing = match fs::read_dir(&dir) {
                Ok(listing) => listing,
                Err(error) => {
                    self.unreadable(&dir, &error);
                    return;
                }
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

/// [`rollout_head`], or why a rollout that is more than the start of one
/// has none: it cannot be opened, or its first line is whole but no
/// `session_meta` naming its thread. `Ok(None)` is a rollout without its
/// first line yet (empty, or its first line still being written): no run
/// yet, read once it has one.
pub(crate) fn rollout_head_or_why(path: &Path) -> Result<Option<RolloutHead>, String> {
    // A head read is the answer for every rollout but a damaged one: it
    // alone is opened again, to say why (the check first opened each
    // rollout once more, thousands of opens in a cold import).
    if let Some(head) = rollout_head(path) {
        return Ok(Some(head));
    }
    if let Err(error) = fs::File::open(path) {
        return Err(format!("cannot read {}: {error}", path.display()));
    }
    let whole = fs::File::open(path).ok().is_some_and(|file| {
        let mut line = Vec::new();
        BufReader::new(file.take(16 * 1024 * 1024)).read_until(b'\n', &mut line).is_ok() && line.ends_with(b"\n")
    });
    if whole {
        Err(format!("{}: its first line is not a Codex `session_meta` naming its thread", path.display()))
    } else {
        Ok(None)
    }
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

/// When a Codex session started: its earliest rollout's time, else now.
pub fn codex_start(files: &[RolloutHead]) -> Timestamp {
    files.iter().filter_map(|head| head.started).min().unwrap_or_else(now)
}

#[cfg(test)]
#[expect(clippy::disallowed_methods, reason = "the tests make the folders and files they list")]
pub(crate) mod tests {

    use super::*;

    fn head_fields(head: Option<RolloutHead>) -> Option<(String, Option<String>, u64, Option<Timestamp>)> {
        head.map(|head| (head.thread, head.parent, head.depth, head.started))
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
    pub(crate) fn age_folders(dir: &Path) {
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
    pub(crate) fn kept(dirs: &DirCache, before: agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>) -> agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow> {
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
    fn walk_with(home: &Path, known: agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>) -> (Vec<PathBuf>, u64, agentrace_store::FastMap<Vec<u8>, agentrace_store::catalog::DirRow>) {
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
        let (first, listed, known) = walk_with(home.path(), agentrace_store::FastMap::default());
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

        // A deleted day folder: its rollouts are gone from the walk, and
        // its kept listing from the catalog.
        fs::remove_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
        age_folders(home.path());
        let (left, _, known) = walk_with(home.path(), known);
        assert_eq!(left, vec![next.join("rollout-b.jsonl")]);
        let key = |path: &Path| path.as_os_str().as_encoded_bytes().to_vec();
        assert_eq!((known.contains_key(&key(&day)), known.contains_key(&key(&next))), (false, true));

        // A deleted month: its listing and its days' go with it.
        fs::remove_dir_all(home.path().join("sessions/2026/01")).unwrap_or_else(|e| panic!("{e}"));
        age_folders(home.path());
        let (left, _, known) = walk_with(home.path(), known);
        let mut kept: Vec<String> = known.keys().map(|path| String::from_utf8_lossy(path).into_owned()).collect();
        kept.sort();
        let root = home.path().to_string_lossy().into_owned();
        assert_eq!((left, kept), (Vec::<PathBuf>::new(), vec![format!("{root}/sessions"), format!("{root}/sessions/2026")]));
    }

    #[test]
    fn a_file_added_to_a_folder_listed_within_the_racy_window_is_found_by_the_next_walk() {
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let day = home.path().join("sessions/2026/01/02");
        fs::create_dir_all(&day).unwrap_or_else(|e| panic!("{e}"));
        fs::write(day.join("rollout-a.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        let modified = fs::metadata(&day).and_then(|metadata| metadata.modified()).unwrap_or_else(|e| panic!("{e}"));
        // Listed in the same tick as its last change: not kept.
        let (_, _, known) = walk_with(home.path(), agentrace_store::FastMap::default());
        assert!(!known.contains_key(day.as_os_str().as_bytes()));
        // A file added in that tick leaves a coarse mtime as it was.
        fs::write(day.join("rollout-b.jsonl"), "").unwrap_or_else(|e| panic!("{e}"));
        fs::File::open(&day).and_then(|handle| handle.set_modified(modified)).unwrap_or_else(|e| panic!("{e}"));
        let (listed, _, _) = walk_with(home.path(), known);
        assert_eq!(listed, vec![day.join("rollout-a.jsonl"), day.join("rollout-b.jsonl")]);
    }
}
