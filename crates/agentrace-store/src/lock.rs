//! The home's locks: a run's ([`RunLock`], so two processes never append to
//! one log at once) and the import's ([`ImportLock`], so two imports never
//! rewrite one home at once). It owns their files; what each lock guards is
//! the caller's to respect.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentrace_core::RunId;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::error::StoreError;
use crate::home::Home;
use crate::run_id::validate_run_id;

/// How often a wait for a run's lock tries again.
const RETRY: Duration = Duration::from_millis(50);

/// How old an empty run lock must be to be taken for one whose owner died
/// between making it and writing its pid (a younger one is being written).
const EMPTY_LOCK_AGE: Duration = Duration::from_secs(60);

/// An exclusive claim on one run's log, so two agentrace processes (a live
/// `run claude` and a hook, say) never append to it at once: the file
/// [`Home::run_lock_path`], made with `create_new`, holding the owner's
/// pid, removed on drop. A lock whose owner is gone is taken over.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl RunLock {
    /// Tries for up to `wait`; `None` when another live process holds it.
    pub fn acquire(home: &Home, id: &RunId, wait: Duration) -> Result<Option<RunLock>, StoreError> {
        let id = validate_run_id(id.as_str())?;
        let dir = home.runs_dir();
        fs::create_dir_all(&dir).map_err(|source| StoreError::io("create runs directory", &dir, source))?;
        let path = home.run_lock_path(&id);
        let deadline = Instant::now() + wait;
        loop {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    // Best effort: the pid only helps to take over a stale lock.
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(Some(RunLock { path }));
                }
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    if owner_is_gone(&path) {
                        let _ = fs::remove_file(&path);
                        continue;
                    }
                }
                Err(source) => return Err(StoreError::io("create run lock", &path, source)),
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(RETRY);
        }
    }

    /// The lock's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// True when the lock names a pid that no longer runs (Linux `/proc`);
/// elsewhere a lock is never taken over.
fn owner_is_gone(path: &Path) -> bool {
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return false;
    }
    match fs::read_to_string(path) {
        Ok(text) => match text.trim().parse::<u32>() {
            Ok(pid) => !proc_root.join(pid.to_string()).exists(),
            // Being written right now (wait for it), or left empty by a
            // process that died between creating and writing it.
            Err(_) => fs::metadata(path)
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > EMPTY_LOCK_AGE),
        },
        Err(_) => false,
    }
}

/// The home's import lock, held while it lives: an advisory `flock` on
/// [`Home::import_lock_path`], which the kernel lets go of when the process
/// ends, however it ends (so no lock is ever stale). Two imports of one
/// home at once would each rewrite the tables the other reads, and write
/// the same runs: the second waits for the first.
#[derive(Debug)]
pub struct ImportLock {
    _lock: Flock<File>,
}

impl ImportLock {
    /// Takes the lock, making the import's folder when needed; when another
    /// process holds it, calls `waiting` once, then waits for as long as it
    /// takes.
    pub fn acquire(home: &Home, waiting: impl FnOnce()) -> Result<ImportLock, StoreError> {
        let path = home.import_lock_path();
        let file = open_in_import_dir(home, &path, "open import lock")?;
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(ImportLock { _lock: lock }),
            Err((file, Errno::EWOULDBLOCK)) => file,
            Err((_, errno)) => return Err(StoreError::io("lock", &path, io::Error::from(errno))),
        };
        waiting();
        Flock::lock(file, FlockArg::LockExclusive)
            .map(|lock| ImportLock { _lock: lock })
            .map_err(|(_, errno)| StoreError::io("lock", &path, io::Error::from(errno)))
    }

    /// Takes the lock when no other process holds it; `None` when one
    /// does (an import at work, in the background say), without waiting.
    pub fn try_acquire(home: &Home) -> Result<Option<ImportLock>, StoreError> {
        let path = home.import_lock_path();
        let file = open_in_import_dir(home, &path, "open import lock")?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(ImportLock { _lock: lock })),
            Err((_, Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, errno)) => Err(StoreError::io("lock", &path, io::Error::from(errno))),
        }
    }

    /// True while another process imports into this home.
    pub fn held_elsewhere(home: &Home) -> bool {
        matches!(Self::try_acquire(home), Ok(None))
    }
}

/// The file `path` of the import's folder, opened to read and write (made,
/// with the folder, when it is not there; never truncated): the import's
/// lock and the follower's lease.
fn open_in_import_dir(home: &Home, path: &Path, what: &'static str) -> Result<File, StoreError> {
    let dir = home.import_dir();
    fs::create_dir_all(&dir).map_err(|source| StoreError::io("create import directory", &dir, source))?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .map_err(|source| StoreError::io(what, path, source))
}

/// True when process `pid` is stopped (by a signal or a tracer), or its
/// state cannot be read: it may have missed changes.
fn is_stopped(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // The state follows the command's name, in parentheses that may hold anything.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    !matches!(state, Some(state) if state != "T" && state != "t")
}

/// The lease of a follower (`watch`, `top`, `serve --watch`) that keeps
/// the catalog current as the agents write: an advisory `flock` on
/// [`Home::follower_path`], held while it lives (the kernel lets go of it
/// however the process ends), and in the file what it follows and whether
/// every change it was told of is imported. An import of the same folders
/// can then trust the catalog instead of stat'ing every file. One follower
/// holds it at a time; others follow without one.
#[derive(Debug)]
pub struct FollowerLease {
    lock: Flock<File>,
    /// Its file, for what an error says.
    path: PathBuf,
}

/// What a live follower's lease says ([`Home::follower`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerState {
    /// Every change the follower was told of is imported.
    pub current: bool,
    /// The follower's process id.
    pub pid: u32,
    /// What it follows, as it wrote it.
    pub about: String,
}

impl FollowerLease {
    /// Takes the lease for a follower of `about` (what it follows, in the
    /// words an import compares), marked not current; `None` while another
    /// process holds it.
    pub fn take(home: &Home, about: &str) -> Result<Option<FollowerLease>, StoreError> {
        let path = home.follower_path();
        let file = open_in_import_dir(home, &path, "open the follower's lease")?;
        let lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((_, Errno::EWOULDBLOCK)) => return Ok(None),
            Err((_, errno)) => return Err(StoreError::io("lock", &path, io::Error::from(errno))),
        };
        lock.set_len(0).map_err(|source| StoreError::io("write the follower's lease", &path, source))?;
        (&*lock)
            .write_all(format!("-{}\n{about}", std::process::id()).as_bytes())
            .map_err(|source| StoreError::io("write the follower's lease", &path, source))?;
        Ok(Some(FollowerLease { lock, path }))
    }

    /// Says whether every change the follower was told of is imported
    /// (its first byte: `+` or `-`).
    pub fn mark(&self, current: bool) -> Result<(), StoreError> {
        use std::os::unix::fs::FileExt as _;
        let byte = if current { b"+" } else { b"-" };
        self.lock.write_all_at(byte, 0).map_err(|source| StoreError::io("write the follower's lease", &self.path, source))
    }
}

impl Home {
    /// What the live follower's lease says; `None` when no follower holds
    /// it (or it cannot be read).
    pub fn follower(&self) -> Option<FollowerState> {
        let path = self.follower_path();
        let file = OpenOptions::new().read(true).open(&path).ok()?;
        // A shared lock taken means no follower holds the lease.
        let file = match Flock::lock(file, FlockArg::LockSharedNonblock) {
            Ok(_free) => return None,
            Err((file, Errno::EWOULDBLOCK)) => file,
            Err(_) => return None,
        };
        let text = io::read_to_string(file).ok()?;
        let (head, about) = text.split_once('\n')?;
        let current = match head.as_bytes().first()? {
            b'+' => true,
            b'-' => false,
            _ => return None,
        };
        let pid: u32 = head[1..].parse().ok()?;
        // A follower stopped (Ctrl-Z) is told of nothing while it is, and
        // its lease would say current all the while.
        let current = current && !is_stopped(pid);
        Some(FollowerState { current, pid, about: about.to_owned() })
    }

    /// Removes the files older versions kept what the catalog now holds in
    /// ([`Home::retired_import_tables`]); their sessions are imported again
    /// once. Call it holding the [`ImportLock`]. What cannot be removed is
    /// left: it is read by nothing.
    pub fn remove_retired_import_tables(&self) {
        for path in self.retired_import_tables() {
            let _ = fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lease says what its follower follows, and whether it is current,
    /// while it is held; once let go (however the follower ended), nothing.
    #[test]
    fn a_follower_lease_is_read_while_held_and_not_once_let_go() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::at(dir.path());
        assert_eq!(home.follower(), None);
        let about = "codex /a\nclaude /b\nidle 600";
        let lease = FollowerLease::take(&home, about).unwrap_or_else(|e| panic!("{e}")).unwrap_or_else(|| panic!("not taken"));
        assert!(FollowerLease::take(&home, "another").unwrap_or_else(|e| panic!("{e}")).is_none(), "one follower at a time");
        let state = |current| Some(FollowerState { current, pid: std::process::id(), about: about.to_owned() });
        assert_eq!(home.follower(), state(false));
        lease.mark(true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(home.follower(), state(true));
        lease.mark(false).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(home.follower(), state(false));
        drop(lease);
        assert_eq!(home.follower(), None);
    }

    /// A follower stopped by a signal is told of nothing: its lease is
    /// never read as current while it is stopped.
    #[test]
    fn a_stopped_process_is_told_from_a_running_one() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap_or_else(|e| panic!("{e}"));
        let pid = child.id();
        let running = is_stopped(pid);
        let sent = std::process::Command::new("kill").args(["-STOP", &pid.to_string()]).status().unwrap_or_else(|e| panic!("{e}"));
        assert!(sent.success());
        // The signal is delivered asynchronously.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !is_stopped(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stopped = is_stopped(pid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!((running, stopped, is_stopped(u32::MAX)), (false, true, true));
    }
}
