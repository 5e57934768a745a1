//! Watching files for changes, as every follower does (`watch`, `top`,
//! `attach`, the server's event stream): one way to ask the kernel, so none
//! of them wakes on reads.

/// The native watcher (inotify on Linux), asked for changes only: files
/// and folders made, removed, renamed, written. Not opens and closes, which
/// `notify` otherwise asks the kernel for: every file an import, `usage`,
/// an editor or the agent itself opened in a watched folder was then an
/// event, costing whoever opened it (a repeated import took half as long
/// again while `top` ran) and waking the watcher for nothing; a follower
/// that reads on each event woke itself by reading (`attach` spun).
pub fn changes_watcher<F: notify::EventHandler>(handler: F) -> notify::Result<notify::RecommendedWatcher> {
    use notify::Watcher as _;
    notify::RecommendedWatcher::new(handler, notify::Config::default().with_event_kinds(notify::EventKindMask::CORE))
}

/// Whether an event is a change worth a look: an access (an open, a read, a
/// close after reading) is not, should a backend report one anyway; an
/// error of the backend may hide a change, so it is one.
pub fn is_change(event: &notify::Result<notify::Event>) -> bool {
    !matches!(event, Ok(notify::Event { kind: notify::EventKind::Access(_), .. }))
}

/// Whether `event` may be a change to the file at `path`: it names it, or
/// names nothing (an overflow of the kernel's queue, an error).
pub fn may_change(event: &notify::Result<notify::Event>, path: &std::path::Path) -> bool {
    is_change(event)
        && event
            .as_ref()
            .map_or(true, |event| event.paths.is_empty() || event.paths.iter().any(|changed| changed == path))
}

/// What a follower that polls (no inotify) learns of the records other
/// processes write in a home's runs folder: the runs whose record is new
/// or changed since the last look. A record is always renamed into place,
/// which changes the folder's own stamp, so a look costs one stat of the
/// folder while nothing was recorded; the folder is listed, and its
/// records stat'ed, only when its stamp moved (or is too young to trust).
#[derive(Debug)]
pub struct RecordsPoll {
    runs: std::path::PathBuf,
    folder: Option<FolderStamp>,
    records: std::collections::HashMap<agentrace_core::model::RunId, RecordStamp>,
}

/// A folder's modification and change times.
type FolderStamp = (std::time::SystemTime, std::time::SystemTime);

/// A record's length and modification time.
type RecordStamp = (u64, Option<std::time::SystemTime>);

/// How long after a folder's mtime a look that found it unchanged still
/// lists it: a rename in the same tick of a coarse clock leaves the mtime
/// as it was (git's "racy" rule, as the import's folder cache has it).
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

impl RecordsPoll {
    /// Starts from the records `runs` (a home's runs folder) holds now:
    /// they are no news.
    pub fn new(runs: &std::path::Path) -> Self {
        let mut poll = Self {
            runs: runs.to_owned(),
            folder: None,
            records: std::collections::HashMap::new(),
        };
        poll.folder = poll.folder_stamp();
        poll.records = poll.listed();
        poll
    }

    /// The runs whose record was made or rewritten since the last look, in
    /// id order (a record removed is no news).
    pub fn changed(&mut self) -> Vec<agentrace_core::model::RunId> {
        let folder = self.folder_stamp();
        let young = folder.is_some_and(|(modified, _)| modified.elapsed().map_or(true, |age| age < RACY));
        if folder == self.folder && !young {
            return Vec::new();
        }
        self.folder = folder;
        let listed = self.listed();
        let mut changed: Vec<agentrace_core::model::RunId> =
            listed.iter().filter(|(id, stamp)| self.records.get(*id) != Some(stamp)).map(|(id, _)| id.clone()).collect();
        changed.sort();
        self.records = listed;
        changed
    }

    fn folder_stamp(&self) -> Option<FolderStamp> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(&self.runs).ok()?;
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(u64::try_from(metadata.ctime()).unwrap_or(0), u32::try_from(metadata.ctime_nsec()).unwrap_or(0));
        Some((metadata.modified().ok()?, changed))
    }

    /// Every record of the folder (`<id>.json`, a valid run id) with its
    /// stamp; one that vanished while listed is left out.
    fn listed(&self) -> std::collections::HashMap<agentrace_core::model::RunId, RecordStamp> {
        let Ok(entries) = std::fs::read_dir(&self.runs) else {
            return std::collections::HashMap::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name();
                let id = crate::validate_run_id(name.to_str()?.strip_suffix(".json")?).ok()?;
                let metadata = entry.metadata().ok()?;
                Some((id, (metadata.len(), metadata.modified().ok())))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::RecordsPoll;

    /// A record made or rewritten by another process is news once; one
    /// looked at again, a log appended to, a record's temporary file and a
    /// record removed are none.
    #[test]
    fn a_poll_of_the_runs_folder_tells_each_record_made_or_rewritten_once() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let runs = dir.path();
        let write = |name: &str, text: &str| {
            // As the store writes a record: beside it, then renamed over it.
            let temporary = runs.join(format!("{name}.tmp-1"));
            std::fs::write(&temporary, text).unwrap_or_else(|e| panic!("{e}"));
            std::fs::rename(&temporary, runs.join(name)).unwrap_or_else(|e| panic!("{e}"));
        };
        write("cx-a.json", "{}");
        let mut poll = RecordsPoll::new(runs);
        let first = poll.changed();
        write("cx-b.json", "{}");
        std::fs::write(runs.join("cx-a.jsonl"), "{}\n").unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(runs.join("cx-c.json.tmp-9"), "{").unwrap_or_else(|e| panic!("{e}"));
        let made = poll.changed();
        let again = poll.changed();
        write("cx-a.json", "{\"status\":\"done\"}");
        let rewritten = poll.changed();
        std::fs::remove_file(runs.join("cx-b.json")).unwrap_or_else(|e| panic!("{e}"));
        let removed = poll.changed();
        let ids = |ids: Vec<agentrace_core::model::RunId>| ids.iter().map(|id| id.as_str().to_owned()).collect::<Vec<_>>();
        assert_eq!(
            [ids(first), ids(made), ids(again), ids(rewritten), ids(removed)],
            [vec![], vec!["cx-b".to_owned()], vec![], vec!["cx-a".to_owned()], vec![]]
        );
    }
}
