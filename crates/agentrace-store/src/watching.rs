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
